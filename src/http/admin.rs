//! The admin listener (`--admin ADDR`, off by default): what the cache is
//! doing (`GET /stats`, JSON) and how a deployment tells it files changed
//! (`POST /purge?prefix=/PATH`), and a status page for people
//! (`GET /status`, HTML: see `status`). A listener of its own, bound only where
//! configured, so nothing here is ever reachable through the public one;
//! `axle cache stats|purge` are its clients (`client`). Every request is
//! checked by `guard` first: only the admin's own Host names are answered,
//! and a state-changing request from another origin is refused (a browser
//! on the operator's machine, DNS rebinding).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};

use super::App;

pub mod client;
pub mod guard;
pub mod status;

pub use guard::{ADMIN_HEADER, Guard, parse_admin_host};

/// What the admin routes share.
#[derive(Clone)]
struct Admin {
    app: Arc<App>,
    started: Instant,
    /// The status page's chart samples.
    history: Arc<status::History>,
}

/// The admin router over `app`, every route behind `guard`.
pub fn router(app: Arc<App>, guard: Guard) -> Router {
    let started = Instant::now();
    let history = Arc::new(status::History::default());
    history.spawn_sampler(Arc::downgrade(&app), started);
    let admin = Admin {
        app,
        started,
        history,
    };
    Router::new()
        .route("/", get(index))
        .route("/stats", get(stats))
        .route("/metrics", get(metrics))
        .route("/status", get(status_page))
        .route("/purge", post(purge))
        .with_state(admin)
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(guard),
            guard::guard,
        ))
}

async fn index() -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "axle admin\n  GET  /stats                 the cache's counters (JSON)\n  GET  /metrics               Prometheus metrics (text format)\n  GET  /status                the status page (HTML)\n  POST /purge[?prefix=/PATH]   drop stored responses under PATH (all without it;\n                              send the header X-Axle-Admin: 1, as axle cache purge does)\n",
    )
        .into_response()
}

/// The `/stats` document. The top level's `hits` and `misses` are the
/// contract; the rest may grow.
#[derive(Debug, Serialize)]
pub struct StatsDoc {
    /// Responses that computed nothing (hot memo, memory, lower tiers).
    pub hits: u64,
    /// Responses computed in full.
    pub misses: u64,
    /// Incremental responses that reused some stages.
    pub partials: u64,
    /// Of those, how many reached a stored response by early cut-off.
    pub early_cutoffs: u64,
    /// Responses computed and never stored (uncacheable).
    pub uncacheable: u64,
    /// Documents served with no stage.
    pub untransformed: u64,
    /// Hits answered by the hot memo.
    pub hot_hits: u64,
    /// Rendered hits from the memory tier.
    pub memory_hits: u64,
    /// Stage runs, compilations and renders.
    pub stage_runs: u64,
    /// Stylesheet compilations.
    pub compiles: u64,
    /// Requests that reached the render path.
    pub renders: u64,
    /// Entries evicted, over every tier.
    pub evictions: u64,
    /// The cache mode.
    pub mode: String,
    /// The freshness mode.
    pub freshness: String,
    /// Seconds since the admin listener started.
    pub uptime_seconds: u64,
    /// Every tier, memory first.
    pub tiers: Vec<TierDoc>,
    /// Compressed variants made and held.
    pub compressed: crate::pipeline::VariantCounts,
    /// Time spent per Language.
    pub stages: std::collections::BTreeMap<String, crate::pipeline::StageTime>,
    /// The most requested pages (hot-path hits counted by sample).
    pub hottest: Vec<super::pages::PageDoc>,
    /// The pages whose renders took longest on average.
    pub slowest: Vec<super::pages::PageDoc>,
    /// The compiled stylesheets (and other compiled stages) held.
    pub stylesheets: Vec<crate::pipeline::CompiledSummary>,
}

/// Pages in each of `/stats`' rankings.
pub const RANKED: usize = 10;

/// One tier in `/stats`.
#[derive(Debug, Serialize)]
pub struct TierDoc {
    /// Its name.
    pub name: String,
    /// Hits it answered (for memory: rendered hits, the hot memo's apart).
    pub hits: u64,
    /// Its own counters.
    #[serde(flatten)]
    pub stats: crate::cache::TierStats,
}

/// Every tier of `app`'s store, memory first, with the hits it answered
/// (memory: rendered hits; the hot memo's are counted apart) and the
/// entries rejected on load (the store's count for lower tiers, or the
/// tier's own when larger). `/stats` and `/metrics` both read this.
pub fn tiers_of(app: &App) -> Vec<TierDoc> {
    let pipeline = app.pipeline();
    let store = pipeline.store();
    let lower = store.lower_counts();
    let counts = |name: &str| {
        lower
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, h, r)| (*h, *r))
    };
    store
        .tier_stats()
        .into_iter()
        .map(|(name, stats)| {
            let (hits, rejected) = match name {
                "memory" => (pipeline.stats().hits.load(Ordering::Relaxed), 0),
                _ => counts(name).unwrap_or((0, 0)),
            };
            TierDoc {
                name: name.to_string(),
                hits,
                stats: crate::cache::TierStats {
                    rejected: stats.rejected.max(rejected),
                    ..stats
                },
            }
        })
        .collect()
}

/// The stats of `app` now.
pub fn stats_of(app: &App, uptime: std::time::Duration) -> StatsDoc {
    let pipeline = app.pipeline();
    let s = pipeline.stats();
    let memory_hits = s.hits.load(Ordering::Relaxed);
    let tiers = tiers_of(app);
    StatsDoc {
        hits: s.all_hits(),
        misses: s.misses.load(Ordering::Relaxed),
        partials: s.partials.load(Ordering::Relaxed),
        early_cutoffs: s.cutoffs.load(Ordering::Relaxed),
        uncacheable: s.uncacheable.load(Ordering::Relaxed),
        untransformed: s.untransformed.load(Ordering::Relaxed),
        hot_hits: s.hot_hits.get(),
        memory_hits,
        stage_runs: s.stage_runs.load(Ordering::Relaxed),
        compiles: s.compiles.load(Ordering::Relaxed),
        renders: s.renders.load(Ordering::Relaxed),
        evictions: tiers.iter().map(|t| t.stats.evictions).sum(),
        mode: pipeline.mode().to_string(),
        freshness: pipeline.freshness().to_string(),
        uptime_seconds: uptime.as_secs(),
        tiers,
        compressed: s.variants.counts(),
        stages: s.stage_times(),
        hottest: app.pages().hottest(RANKED),
        slowest: app.pages().slowest(RANKED),
        stylesheets: pipeline.compiled_list(),
    }
}

async fn metrics(State(admin): State<Admin>) -> Response {
    admin.app.pipeline().store().sync().await;
    match super::metrics::exposition(&admin.app).await {
        Ok(text) => (
            [
                (
                    header::CONTENT_TYPE,
                    "text/plain; version=0.0.4; charset=utf-8",
                ),
                (header::CACHE_CONTROL, "no-store"),
            ],
            text,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn stats(State(admin): State<Admin>) -> Response {
    admin.app.pipeline().store().sync().await;
    let doc = stats_of(&admin.app, admin.started.elapsed());
    json(StatusCode::OK, &doc)
}

async fn status_page(State(admin): State<Admin>) -> Response {
    status::page(admin.app, admin.history, admin.started).await
}

/// `POST /purge` parameters.
#[derive(Debug, Deserialize)]
struct PurgeQuery {
    /// A URL path prefix (`/docs/`); absent: everything.
    prefix: Option<String>,
}

/// What `POST /purge` answers.
#[derive(Debug, Serialize)]
pub struct PurgeDoc {
    /// The prefix purged (None: everything).
    pub prefix: Option<String>,
    /// Entries dropped per tier (as far as each tier knows).
    pub purged: std::collections::BTreeMap<String, u64>,
}

async fn purge(State(admin): State<Admin>, Query(q): Query<PurgeQuery>) -> Response {
    let prefix = q.prefix.filter(|p| !p.is_empty());
    if let Some(p) = &prefix
        && !p.starts_with('/')
    {
        return json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({ "error": format!("a prefix is a URL path starting with '/': '{p}'") }),
        );
    }
    let purged = admin.app.pipeline().purge(prefix.as_deref()).await;
    tracing::info!(
        prefix = prefix.as_deref().unwrap_or("(all)"),
        ?purged,
        "cache purged"
    );
    json(
        StatusCode::OK,
        &PurgeDoc {
            prefix,
            purged: purged.tiers.into_iter().collect(),
        },
    )
}

fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => (
            status,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            body,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Binds the admin listener on `addr` and serves it until `stop` says so.
/// An address in use is an error at start (never shared).
pub async fn bind(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot listen on {addr} for --admin: {e}"),
        )
    })
}

/// Serves the admin router for `app` on `listener` until `shutdown`,
/// answering the names `guard` allows ([`Guard::new`] with the bound
/// address and `--admin-host`).
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    guard: Guard,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        tracing::warn!(%addr, "the admin listener is not on a loopback address: anyone who can reach it can purge the cache");
    }
    tracing::info!(names = ?guard.names(None), "the admin listener answers these Host names");
    axum::serve(
        listener,
        router(app, guard).into_make_service_with_connect_info::<guard::LocalAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}
