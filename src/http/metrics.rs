//! Prometheus metrics (`GET /metrics` on the admin listener): requests by
//! method and status, latency histograms (hits and renders apart), stage
//! time by Language, the cache's counters per tier, the transform pool's
//! load and the compiled stylesheets. Counting stays cheap where it runs on
//! every hit (sharded counters; a hit's latency sampled one request in
//! [`HIT_SAMPLE`]); the exposition is built at scrape time with the
//! `prometheus` crate from those counters, never hand-formatted.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::http::Method;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use super::App;
use crate::pipeline::Sharded;

/// One hot-path hit in this many has its latency measured.
pub const HIT_SAMPLE: u32 = 16;

/// Latency buckets, in seconds: 50 µs to 10 s.
const BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];

/// What a response was, for the latency histograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Nothing computed (`X-Axle-Cache: hit…`).
    Hit,
    /// Something rendered (`miss`, `partial`, `uncacheable`).
    Render,
    /// Anything else (static files, untransformed documents, errors,
    /// redirects).
    Other,
}

impl Kind {
    /// The kind of a response by its `X-Axle-Cache` value.
    pub(super) fn of(cache: Option<&[u8]>) -> Kind {
        match cache {
            Some(v) if v.starts_with(b"hit") => Kind::Hit,
            Some(v) if v.starts_with(b"miss") || v.starts_with(b"partial") => Kind::Render,
            Some(b"uncacheable") => Kind::Render,
            _ => Kind::Other,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Kind::Hit => "hit",
            Kind::Render => "render",
            Kind::Other => "other",
        }
    }
}

/// Request counters and latency histograms.
pub struct RequestMetrics {
    /// Hits answered in wire form: GET 200, GET 304, HEAD 200, HEAD 304.
    wire: [Sharded; 4],
    /// Every other response, by method and status.
    other: Mutex<BTreeMap<(&'static str, u16), u64>>,
    latency: HistogramVec,
    registry: Registry,
}

impl std::fmt::Debug for RequestMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestMetrics").finish_non_exhaustive()
    }
}

thread_local! {
    static HIT_COUNT: Cell<u32> = const { Cell::new(0) };
}

impl RequestMetrics {
    /// Empty counters (an error only if the metric names were invalid).
    pub fn new() -> Result<RequestMetrics, prometheus::Error> {
        let registry = Registry::new();
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "axle_request_duration_seconds",
                "Time to answer a request, by kind (hit: sampled one in 16)",
            )
            .buckets(BUCKETS.to_vec()),
            &["kind"],
        )?;
        registry.register(Box::new(latency.clone()))?;
        Ok(RequestMetrics {
            wire: Default::default(),
            other: Mutex::new(BTreeMap::new()),
            latency,
            registry,
        })
    }

    /// Whether this hot-path hit's latency is measured (one in
    /// [`HIT_SAMPLE`] per thread).
    #[inline]
    pub(super) fn sample_hit() -> bool {
        HIT_COUNT.with(|c| {
            let n = c.get().wrapping_add(1);
            c.set(n);
            n % HIT_SAMPLE == 0
        })
    }

    /// Counts a hit answered in wire form.
    #[inline]
    pub(super) fn wire_hit(&self, head: bool, not_modified: bool, took: Option<Duration>) {
        let i = usize::from(head) * 2 + usize::from(not_modified);
        self.wire[i].incr();
        if let Some(t) = took {
            self.latency
                .with_label_values(&[Kind::Hit.label()])
                .observe(t.as_secs_f64());
        }
    }

    /// Counts a response of the ordinary path.
    pub(super) fn response(&self, method: &Method, status: u16, kind: Kind, took: Duration) {
        let method = match *method {
            Method::GET => "GET",
            Method::HEAD => "HEAD",
            Method::POST => "POST",
            _ => "other",
        };
        if let Ok(mut map) = self.other.lock() {
            *map.entry((method, status)).or_default() += 1;
        }
        self.latency
            .with_label_values(&[kind.label()])
            .observe(took.as_secs_f64());
    }

    /// Requests by method and status so far.
    fn requests(&self) -> BTreeMap<(&'static str, u16), u64> {
        let mut all = self.other.lock().map(|m| m.clone()).unwrap_or_default();
        for (i, (method, status)) in [("GET", 200), ("GET", 304), ("HEAD", 200), ("HEAD", 304)]
            .into_iter()
            .enumerate()
        {
            let n = self.wire[i].get();
            if n > 0 {
                *all.entry((method, status)).or_default() += n;
            }
        }
        all
    }
}

/// The exposition of every metric of `app`, in Prometheus' text format.
pub async fn exposition(app: &App) -> Result<String, prometheus::Error> {
    let compiled = app.pipeline().compiled_stages().await;
    let scrape = Registry::new();
    let pipeline = app.pipeline();
    let stats = pipeline.stats();

    let requests = IntCounterVec::new(
        Opts::new(
            "axle_requests_total",
            "Requests answered, by method and status",
        ),
        &["method", "status"],
    )?;
    for ((method, status), n) in app.metrics.requests() {
        requests
            .with_label_values(&[method, &status.to_string()])
            .inc_by(n);
    }
    scrape.register(Box::new(requests))?;

    let counter = |name: &str, help: &str, value: u64| -> Result<(), prometheus::Error> {
        let c = IntCounter::new(name, help)?;
        c.inc_by(value);
        scrape.register(Box::new(c))
    };
    counter(
        "axle_cache_hits_total",
        "Responses that computed nothing (hot memo, memory and lower tiers)",
        stats.all_hits(),
    )?;
    counter(
        "axle_cache_misses_total",
        "Responses computed in full",
        stats.misses.load(Ordering::Relaxed),
    )?;
    counter(
        "axle_cache_partials_total",
        "Incremental responses that reused some stages",
        stats.partials.load(Ordering::Relaxed),
    )?;
    counter(
        "axle_cache_early_cutoffs_total",
        "Responses reached through a trace (early cut-off)",
        stats.cutoffs.load(Ordering::Relaxed),
    )?;
    counter(
        "axle_cache_uncacheable_total",
        "Responses computed and never stored",
        stats.uncacheable.load(Ordering::Relaxed),
    )?;
    counter(
        "axle_stage_runs_total",
        "Stage executions",
        stats.stage_runs.load(Ordering::Relaxed),
    )?;
    counter(
        "axle_compiles_total",
        "Stage compilations",
        stats.compiles.load(Ordering::Relaxed),
    )?;
    let variants = stats.variants.counts();
    let made = IntCounterVec::new(
        Opts::new(
            "axle_compressed_variants_total",
            "Compressed variants made, by encoding",
        ),
        &["encoding"],
    )?;
    made.with_label_values(&["gzip"]).inc_by(variants.gzip);
    made.with_label_values(&["br"]).inc_by(variants.br);
    scrape.register(Box::new(made))?;
    counter(
        "axle_compressed_responses_total",
        "Responses sent compressed",
        variants.served,
    )?;

    let tier_hits = IntCounterVec::new(
        Opts::new(
            "axle_tier_hits_total",
            "Rendered hits answered, by tier (the hot memo's are in axle_cache_hits_total only)",
        ),
        &["tier"],
    )?;
    let tier_evictions = IntCounterVec::new(
        Opts::new("axle_tier_evictions_total", "Entries evicted, by tier"),
        &["tier"],
    )?;
    let tier_rejected = IntCounterVec::new(
        Opts::new(
            "axle_tier_rejected_total",
            "Entries found corrupt or stale when read, by tier",
        ),
        &["tier"],
    )?;
    let tier_bytes = IntGaugeVec::new(
        Opts::new("axle_tier_bytes", "Bytes held, by tier"),
        &["tier"],
    )?;
    let tier_entries = IntGaugeVec::new(
        Opts::new("axle_tier_entries", "Entries held, by tier"),
        &["tier"],
    )?;
    let tier_errors = IntCounterVec::new(
        Opts::new(
            "axle_tier_errors_total",
            "Operations that failed talking to a tier's server (timeouts, lost connections, refusals), by tier",
        ),
        &["tier"],
    )?;
    let tier_unavailable = IntCounterVec::new(
        Opts::new(
            "axle_tier_unavailable_total",
            "Operations not tried because a tier's server was down, by tier",
        ),
        &["tier"],
    )?;
    let tier_write_errors = IntCounterVec::new(
        Opts::new(
            "axle_tier_write_errors_total",
            "Writes that failed, by tier",
        ),
        &["tier"],
    )?;
    let tier_dropped = IntCounterVec::new(
        Opts::new(
            "axle_tier_dropped_total",
            "Writes not attempted (a full queue, a tier not writable, an entry too large), by tier",
        ),
        &["tier"],
    )?;
    let tier_available = IntGaugeVec::new(
        Opts::new(
            "axle_tier_available",
            "1 while a tier's server is reachable (always 1 for a tier with none), by tier",
        ),
        &["tier"],
    )?;
    for t in super::admin::tiers_of(app) {
        let name = t.name.as_str();
        tier_errors
            .with_label_values(&[name])
            .inc_by(t.stats.errors);
        tier_unavailable
            .with_label_values(&[name])
            .inc_by(t.stats.unavailable);
        tier_write_errors
            .with_label_values(&[name])
            .inc_by(t.stats.write_errors);
        tier_dropped
            .with_label_values(&[name])
            .inc_by(t.stats.dropped);
        tier_available
            .with_label_values(&[name])
            .set(i64::from(t.stats.available));
        tier_hits.with_label_values(&[name]).inc_by(t.hits);
        tier_evictions
            .with_label_values(&[name])
            .inc_by(t.stats.evictions);
        tier_rejected
            .with_label_values(&[name])
            .inc_by(t.stats.rejected);
        tier_bytes
            .with_label_values(&[name])
            .set(i64::try_from(t.stats.bytes).unwrap_or(i64::MAX));
        tier_entries
            .with_label_values(&[name])
            .set(i64::try_from(t.stats.entries).unwrap_or(i64::MAX));
    }
    scrape.register(Box::new(tier_hits))?;
    scrape.register(Box::new(tier_evictions))?;
    scrape.register(Box::new(tier_rejected))?;
    scrape.register(Box::new(tier_bytes))?;
    scrape.register(Box::new(tier_entries))?;
    scrape.register(Box::new(tier_errors))?;
    scrape.register(Box::new(tier_unavailable))?;
    scrape.register(Box::new(tier_write_errors))?;
    scrape.register(Box::new(tier_dropped))?;
    scrape.register(Box::new(tier_available))?;

    let stage_seconds = prometheus::CounterVec::new(
        Opts::new(
            "axle_stage_seconds_total",
            "Time spent in stages, by Language",
        ),
        &["language"],
    )?;
    let stage_runs = IntCounterVec::new(
        Opts::new("axle_language_runs_total", "Stage runs, by Language"),
        &["language"],
    )?;
    for (language, t) in stats.stage_times() {
        stage_seconds
            .with_label_values(&[&language])
            .inc_by(t.micros as f64 / 1e6);
        stage_runs.with_label_values(&[&language]).inc_by(t.runs);
    }
    scrape.register(Box::new(stage_seconds))?;
    scrape.register(Box::new(stage_runs))?;

    let gauge = |name: &str, help: &str, value: u64| -> Result<(), prometheus::Error> {
        let g = IntGauge::new(name, help)?;
        g.set(i64::try_from(value).unwrap_or(i64::MAX));
        scrape.register(Box::new(g))
    };
    let (threads, queued, busy) = pipeline.pool_load();
    gauge("axle_pool_threads", "Transform threads", threads as u64)?;
    gauge(
        "axle_pool_queue_depth",
        "Transform jobs waiting for a thread",
        queued as u64,
    )?;
    gauge(
        "axle_pool_busy_threads",
        "Transform threads running a job",
        busy as u64,
    )?;
    let held = IntCounter::new(
        "axle_pool_results_batched_total",
        "Render results handed back in a batch (the hand-off window) rather than at once",
    )?;
    held.inc_by(pipeline.pool_batched());
    scrape.register(Box::new(held))?;
    gauge(
        "axle_compiled_stages",
        "Compiled stages held (stylesheets and other Languages' resources)",
        compiled,
    )?;
    gauge(
        "axle_stylesheet_instances",
        "Compiled stylesheet instances alive (one per transform running at once)",
        crate::ffi::Stylesheet::live_instances() as u64,
    )?;

    let mut families = scrape.gather();
    families.extend(app.metrics.registry.gather());
    let mut out = Vec::new();
    TextEncoder::new().encode(&families, &mut out)?;
    String::from_utf8(out).map_err(|e| prometheus::Error::Msg(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_cache_header() {
        assert_eq!(Kind::of(Some(b"hit")), Kind::Hit);
        assert_eq!(Kind::of(Some(b"hit; tier=disk")), Kind::Hit);
        assert_eq!(Kind::of(Some(b"miss")), Kind::Render);
        assert_eq!(Kind::of(Some(b"partial 1/2")), Kind::Render);
        assert_eq!(Kind::of(Some(b"uncacheable")), Kind::Render);
        assert_eq!(Kind::of(Some(b"none")), Kind::Other);
        assert_eq!(Kind::of(None), Kind::Other);
    }

    #[test]
    fn one_hit_in_sixteen_is_sampled_per_thread() {
        let sampled = (0..160).filter(|_| RequestMetrics::sample_hit()).count();
        assert_eq!(sampled, 10);
    }

    #[test]
    fn wire_hits_and_other_responses_are_counted_by_method_and_status() {
        let m = RequestMetrics::new().unwrap();
        m.wire_hit(false, false, None);
        m.wire_hit(false, false, Some(Duration::from_micros(3)));
        m.wire_hit(true, true, None);
        m.response(&Method::GET, 200, Kind::Render, Duration::from_millis(2));
        m.response(&Method::POST, 413, Kind::Other, Duration::from_millis(1));
        let r = m.requests();
        assert_eq!(r[&("GET", 200)], 3);
        assert_eq!(r[&("HEAD", 304)], 1);
        assert_eq!(r[&("POST", 413)], 1);
        let hits = m.latency.with_label_values(&["hit"]).get_sample_count();
        assert_eq!(hits, 1);
    }
}
