//! The HTTP surface: GET and HEAD for documents through their chains and
//! for static files, ETag/304, the `X-Axle-Cache` header, error pages.
//! Knows nothing of libxslt: it calls the pipeline and maps its errors once
//! (`error`).

mod access_log;
pub mod admin;
mod builtin;
mod charset;
mod choose;
mod conn;
mod directory;
mod document;
mod dynamic;
mod encoding;
mod error;
mod hot;
mod look;
mod metrics;
mod negotiate;
pub mod pages;
mod params;
mod passthru;
mod ranges;
mod request_limits;
mod root_watch;
mod serve;
mod statics;

pub use choose::{Chosen, choose};
pub use conn::{ConnLimits, HttpService};
pub use encoding::{Choice, negotiate};
pub use error::HttpError;
pub use serve::{CONFIG_FILE, serve_app, site_config_path};
pub(crate) use serve::{refuse_servable_config, warn_about_references};

use document::document_response;
use hot::{hot_key, hot_response, hot_stored_response, hot_wire};
use params::{form_body, pairs, params};

use std::sync::{Arc, RwLock};

use bytes::Bytes;

use axum::Router;
use axum::extract::{Request, State};
use axum::handler::Handler;
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use crate::config::ServeConfig;
use crate::language::Registry;
use crate::pipeline::{Pipeline, PipelineError, RenderRequest};
use crate::provider::{Located, Provider, ProviderError, ResourceKind, normalize_request_path};
use crate::site::{ConfigError, ConfigErrors, Location, SiteConfig};

pub use document::CACHE_HEADER;

/// Shared server state.
#[derive(Debug)]
pub struct App {
    pipeline: Pipeline,
    registry: Registry,
    site: RwLock<Arc<SiteConfig>>,
    /// Connection and request limits, and the count of connections served
    /// (shared by every I/O thread's listener).
    limits: ConnLimits,
    /// Dynamic sources mounted through the builder: mounted again on every
    /// reload of the configuration file.
    mounts: Vec<crate::dynamic::Mount>,
    /// Compressed variants of static files.
    statics: statics::StaticVariants,
    /// Requests by method and status, latency histograms.
    metrics: metrics::RequestMetrics,
    /// The access log, when configured.
    access_log: Option<access_log::AccessLog>,
    /// Requests and render times per page (the status page's rankings).
    pages: pages::Pages,
    /// Held by a reload (SIGHUP and the root watch may ask at once).
    reloading: std::sync::Mutex<()>,
    /// The memory budget (`--cache-size`), for the status page.
    cache_size: u64,
    /// The public listener's address as bound (the first one served on):
    /// where an upstream source naming this same server fetches from.
    listening: std::sync::OnceLock<std::net::SocketAddr>,
}

impl App {
    /// Builds the pipeline for `config` with `registry`'s Languages and no
    /// site configuration (every location has the defaults).
    pub fn new(config: &ServeConfig, registry: Registry) -> std::io::Result<Arc<App>> {
        let site = SiteConfig::defaults(registry.clone());
        Self::with_site(config, registry, site)
    }

    /// The same with a loaded site configuration.
    pub fn with_site(
        config: &ServeConfig,
        registry: Registry,
        site: SiteConfig,
    ) -> std::io::Result<Arc<App>> {
        Self::with_mounts(config, registry, site, Vec::new())
    }

    /// The same with dynamic sources mounted over the site configuration
    /// (kept across reloads).
    pub fn with_mounts(
        config: &ServeConfig,
        registry: Registry,
        mut site: SiteConfig,
        mounts: Vec<crate::dynamic::Mount>,
    ) -> std::io::Result<Arc<App>> {
        for mount in &mounts {
            site.mount(mount.clone());
        }
        let access_log = config
            .access_log
            .as_ref()
            .map(access_log::AccessLog::open)
            .transpose()?;
        let pipeline = Pipeline::new(config, registry.clone())?;
        // What the configuration makes private is refused by every read
        // from the first request on.
        let files = pipeline.provider();
        files.set_root(files.root().to_path_buf(), site.private_set());
        Ok(Arc::new(App {
            pipeline,
            registry,
            site: RwLock::new(Arc::new(site)),
            limits: ConnLimits::new(config.http).with_access_log(access_log.clone()),
            mounts,
            // A sixteenth of the memory budget for static files' variants.
            statics: statics::StaticVariants::new((config.cache_size / 16).max(1 << 20)),
            metrics: metrics::RequestMetrics::new().map_err(std::io::Error::other)?,
            access_log,
            pages: pages::Pages::default(),
            reloading: std::sync::Mutex::new(()),
            cache_size: config.cache_size,
            listening: std::sync::OnceLock::new(),
        }))
    }

    /// Writes the access log's gathered lines now (at shutdown).
    pub fn flush_access_log(&self) {
        if let Some(log) = &self.access_log {
            log.flush();
        }
    }

    /// Requests and render times per page.
    pub fn pages(&self) -> &pages::Pages {
        &self.pages
    }

    /// The memory budget it was made with (`--cache-size`).
    pub fn cache_size(&self) -> u64 {
        self.cache_size
    }

    /// The pipeline (for counters and tests).
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The site configuration in force.
    pub fn site(&self) -> Arc<SiteConfig> {
        match self.site.read() {
            Ok(s) => Arc::clone(&s),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Resolves the root again (a symlink a deploy re-pointed is followed
    /// to the release it names now) and loads the configuration file again
    /// from it: the configuration, its private set and the root are put
    /// in force together. On error the old ones stay.
    pub fn reload(&self) -> Result<(), ConfigErrors> {
        let _one_at_a_time = self.reloading.lock().unwrap_or_else(|p| p.into_inner());
        let files = self.pipeline.provider();
        let old_root = files.root().to_path_buf();
        let root =
            crate::provider::resolve_root(files.configured_root()).map_err(|e| ConfigError {
                file: files.configured_root().to_path_buf(),
                line: None,
                key: "(root)".into(),
                message: e.to_string(),
            })?;
        let current = self.site();
        let fresh = match current.source() {
            Some(path) => {
                // The root's own axle.toml is read from the root in force
                // now; a file outside the root stays where it is.
                let path = match path.strip_prefix(&old_root) {
                    Ok(rel) => root.join(rel),
                    Err(_) => path.to_path_buf(),
                };
                SiteConfig::load_in(&path, self.registry.clone(), &root)?
            }
            None if root == old_root => return Ok(()),
            None => SiteConfig::defaults(self.registry.clone()),
        };
        let mut fresh = fresh;
        for problem in fresh.problems() {
            tracing::warn!(%problem, "the configuration names a program that cannot be run");
        }
        for mount in &self.mounts {
            fresh.mount(mount.clone());
        }
        let private = fresh.private_set();
        match self.site.write() {
            Ok(mut s) => *s = Arc::new(fresh),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(fresh),
        }
        let changed = root != old_root;
        files.set_root(root, private);
        if changed {
            // The fields of the start line ("axle serving"): the root
            // served, the root as configured; and the one served before.
            tracing::info!(
                root = %files.root().display(),
                configured = %files.configured_root().display(),
                previous = %old_root.display(),
                "document root changed"
            );
            self.pipeline.root_changed();
        }
        self.pipeline.clear_hot();
        Ok(())
    }
}

/// The router: every path goes to one handler. For embedding Axle in a
/// larger axum application; [`serve_on`] serves the handler without it.
pub fn router(app: Arc<App>) -> Router {
    Router::new().fallback(handle).with_state(app)
}

/// The service `axle serve` runs for every connection: the one handler,
/// with no router in front (for a single catch-all route, the router's
/// matching, URL-parameter extension and content-length bookkeeping took
/// a doc hit from 15.8k to 19.2k instructions, callgrind).
pub fn service(app: Arc<App>) -> impl HttpService + Sync {
    handle.with_state(app)
}

/// Serves `app` on `listener` until `shutdown` completes ([`service`] for
/// every connection), with the limits of the configuration `app` was made
/// with (`max_connections` counted over every listener serving `app`).
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        let _ = app.listening.set(addr);
    }
    let fast = Arc::clone(&app);
    let limits = app.limits.clone();
    conn::serve(
        listener,
        service(app),
        move |head: &conn::Head<'_>| hot_wire(&fast, head),
        limits,
        shutdown,
    )
    .await
}

/// Serves any tower service (an axum `Router` that embeds Axle, say) on
/// `listener` with the connection loop `axle serve` uses, until `shutdown`
/// completes, with the default connection limits. Without the hot memo's
/// wire-form fast path: every request goes to `service`.
pub async fn serve_service(
    listener: tokio::net::TcpListener,
    service: impl HttpService,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_service_with(
        listener,
        service,
        ConnLimits::new(crate::config::HttpLimits::default()),
        shutdown,
    )
    .await
}

/// [`serve_service`] with the given connection limits.
pub async fn serve_service_with(
    listener: tokio::net::TcpListener,
    service: impl HttpService,
    limits: ConnLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    conn::serve(
        listener,
        service,
        |_: &conn::Head<'_>| conn::Fast::Pass,
        limits,
        shutdown,
    )
    .await
}

/// What `axle serve` writes for `request` (one complete request head)
/// when the hot memo answers it in wire form: the head into `head`, the
/// body returned; None when it would take the ordinary path. For
/// benchmarks (a hit end to end, parse to bytes, without sockets).
#[doc(hidden)]
pub fn hit_bytes(app: &App, request: Bytes, head: &mut Vec<u8>) -> Option<Bytes> {
    conn::fast_answer(request, &|h: &conn::Head<'_>| hot_wire(app, h), head)
}

/// The connection loop's head parsing and response framing, reachable for
/// the `http_head` fuzz target (`fuzz/`) with a fast path of its own, and
/// the access log's line for a refused head (the `access_log` target);
/// not an API.
#[doc(hidden)]
pub mod wire {
    pub use super::access_log::{Format as AccessLogFormat, raw_line as access_log_raw_line};
    pub use super::conn::{Fast, Head, Headers, Wire, fast_answer};
    pub use super::negotiate::{Representation, choose as choose_representation, surely_page};
}

async fn handle(State(app): State<Arc<App>>, mut request: Request) -> Response {
    // One debug line per request (no span, no clock: a hit is a few
    // microseconds, and a per-request span was a measurable share of it).
    let started = std::time::Instant::now();
    let method = request.method().clone();
    // What the access log needs of the request, taken before it is
    // consumed (only when there is a log).
    let for_log = app
        .access_log
        .as_ref()
        .map(|_| access_log::Pending::of(&request));
    let logged = tracing::enabled!(tracing::Level::DEBUG)
        .then(|| (request.method().clone(), request.uri().clone()));
    let uri = request.uri().clone();
    // The request's own shape (Host, target form and size, header count,
    // declared body size) before anything else looks at it: both
    // connection paths reach this, so both answer alike.
    if let Err(e) = request_limits::check(&request, &app.limits.http) {
        if let Some((method, uri)) = logged {
            tracing::debug!(%method, %uri, error = %e, "request refused");
        }
        let response = e.into_response();
        if let (Some(log), Some(pending)) = (&app.access_log, &for_log) {
            pending.log(log, &response, started.elapsed());
        }
        return response;
    }
    // A hit never builds the render path's future: it is large, and moving
    // it into the handler's box cost a doc hit 1.1k of 20.3k instructions.
    let extensions = request.extensions();
    let hot = if extensions.get::<conn::FastMissed>().is_some()
        || extensions.get::<ExportMedia>().is_some()
    {
        None
    } else if let Some(found) = request.extensions_mut().remove::<hot::HotStored>() {
        // The fast path found a memoized response whose body is on disk.
        hot_stored_response(&app, found, request.headers()).await
    } else {
        match hot_response(&app, &request) {
            hot::Hot::Answer(response) => Some(response),
            hot::Hot::Stored(found) => hot_stored_response(&app, found, request.headers()).await,
            hot::Hot::Miss => None,
        }
    };
    let response = match hot {
        Some(r) => r,
        // One drain of the file-change queue serves the whole request
        // (crate::cache::SyncedSince).
        // The render path's future is boxed before the scope takes it: one
        // copy of it, not one into the scope and another into a box.
        None => match crate::cache::SyncedSince::task(Box::pin(respond(&app, request))).await {
            Ok(r) => r,
            Err(e) => {
                // A failed render was logged where it failed, with the
                // whole report (the page may show one line of it).
                if e.status().is_server_error() && !e.logged() {
                    tracing::warn!(error = %e, "request failed");
                }
                e.into_response()
            }
        },
    };
    if let Some((method, uri)) = logged {
        tracing::debug!(%method, %uri, status = response.status().as_u16(), "request");
    }
    let kind = metrics::Kind::of(
        response
            .headers()
            .get(document::CACHE_HEADER)
            .map(HeaderValue::as_bytes),
    );
    let took = started.elapsed();
    let status = response.status().as_u16();
    app.metrics.response(&method, status, kind, took);
    if matches!(status, 200 | 304) && kind != metrics::Kind::Other {
        app.pages.record(
            uri.path(),
            1,
            (kind == metrics::Kind::Render).then_some(took),
        );
    }
    if let (Some(log), Some(pending)) = (&app.access_log, &for_log) {
        pending.log(log, &response, took);
    }
    response
}

/// The media an in-process request is rendered for, whatever its headers
/// would choose: `axle build` renders a media variant as a client whose
/// headers chose that media gets it. Request extensions never come from
/// the wire, so no client can set it.
#[derive(Debug, Clone)]
pub(crate) struct ExportMedia(pub(crate) String);

async fn respond(app: &App, request: Request) -> Result<Response, HttpError> {
    let method = request.method().clone();
    if method != Method::GET && method != Method::HEAD && method != Method::POST {
        return Err(HttpError::MethodNotAllowed);
    }
    let site = app.site();
    let provider = app.pipeline.provider();
    // One spelling per path: settings keyed by URL prefix must not be
    // sidestepped by `%6C`, `//` or `/./`.
    let normal = normalize_request_path(request.uri().path())
        .ok_or_else(|| HttpError::NotFound(request.uri().path().to_string()))?;
    let path = normal.url.to_string();
    let location = site.location(&normal.decoded);
    if location.private {
        // `private = true`: nothing under the prefix is answered (its files
        // are refused by confinement too, for every load).
        return Err(HttpError::NotFound(path));
    }
    let query: Vec<(String, String)> = pairs(request.uri().query().unwrap_or(""))?;
    if let Some(mount) = &location.source {
        let path = normal.url.into_owned();
        // Boxed: its future is twice the size of the rest of this one's,
        // and every request would otherwise carry (and copy) it.
        return Box::pin(dynamic::respond(
            app, request, &location, mount, path, &query,
        ))
        .await;
    }
    let passthru = passthru::wants_passthru(&location, &query);
    // The hot memo was asked already (`hot_response`); the key is built
    // again here, on a miss, to memoize the response this renders.
    let forced_media = request
        .extensions()
        .get::<ExportMedia>()
        .map(|m| m.0.clone());
    let forced = |mut chosen: Chosen| {
        if let Some(media) = &forced_media {
            chosen.selection.media.clone_from(media);
        }
        chosen
    };
    // `negotiate = true` and a client that may want the source: neither
    // the hot memo (pages only) nor a page before its type is known.
    let may_want_source =
        method != Method::POST && hot::may_want_source(&location, request.headers());
    let hot = match forced_media {
        Some(_) => None,
        None if may_want_source => None,
        None => hot_key(&method, &location, request.headers(), &query, &path),
    };

    let (located, url_style) = locate_document(provider, &path, &location)?;
    if site.is_private(located.path.as_path()) {
        // Confinement refused these already (the configuration file, the
        // private set): a second look at the one place a URL is served.
        return Err(HttpError::NotFound(path));
    }
    let located = match located.kind {
        ResourceKind::File if normal.trailing_slash => return Err(HttpError::NotFound(path)),
        ResourceKind::File => located,
        ResourceKind::Directory if !path.ends_with('/') => {
            let query = request
                .uri()
                .query()
                .map(|q| format!("?{q}"))
                .unwrap_or_default();
            return Ok(Redirect::permanent(&format!("{path}/{query}")).into_response());
        }
        ResourceKind::Directory if location.directories => {
            if method == Method::POST {
                return Err(HttpError::MethodNotAllowed);
            }
            let listing = directory::listing(&located.path, provider.root(), |name, is_dir| {
                directory::served(app, &site, &path, name, is_dir)
            })
            .map_err(|e| HttpError::NotFound(e.to_string()))?;
            if location.processors.is_empty() && !passthru {
                return directory::page(&path, listing, location.passthru).await;
            }
            let chosen = forced(choose::choose(&location, request.headers(), &query, None));
            let mut req = render_request(&location, &chosen, params(&location, &query, &[]));
            if passthru {
                // The filelist itself, as for a document's source.
                req.processors.clear();
            }
            let rendered = app
                .pipeline
                .render_generated(&located.path, listing, &req)
                .await
                .map_err(|e| {
                    let e = HttpError::from_pipeline(e, provider.root());
                    if e.status().is_server_error() {
                        tracing::warn!(error = %e, "render failed");
                    }
                    if location.debug_errors {
                        e
                    } else {
                        e.summarized()
                    }
                })?;
            return Ok(document_response(app, rendered, request.headers(), &location).await);
        }
        ResourceKind::Directory => {
            let no_index = || HttpError::NoIndex {
                path: path.clone(),
                index: location.index.clone(),
            };
            let index = location.index.as_deref().ok_or_else(no_index)?;
            match provider.locate(&format!("{path}{index}")) {
                Err(ProviderError::NotFound(_)) => return Err(no_index()),
                found => found.map_err(not_found)?,
            }
        }
    };
    if !is_document(&located) {
        if method == Method::POST {
            return Err(HttpError::MethodNotAllowed);
        }
        return statics::serve(app, &located, &location, request).await;
    }
    if passthru {
        let source = provider.read(&located).map_err(not_found)?;
        if passthru::shows(&location, &source) {
            return Ok(passthru::response(app, source, request.headers(), &location).await);
        }
    } else if may_want_source {
        // Read the source to know its type.
        let source = provider.read(&located).map_err(not_found)?;
        // Never an XSP page's source (its logic and SQL), as for passthru.
        if passthru::shows(&location, &source)
            && let Some(source_type) = negotiate::negotiated_type(&location, &source)
            && negotiate::choose(request.headers(), &source_type)
                == negotiate::Representation::Source
        {
            return Ok(negotiate::source_response(
                app,
                source,
                &source_type,
                request.headers(),
                &location,
            )
            .await);
        }
    }
    let headers = request.headers().clone();
    let peer = request.extensions().get::<conn::Peer>().map(|p| p.0.ip());
    let query_text = request.uri().query().unwrap_or("").to_string();
    let mut form = Vec::new();
    let (hot_key, mut req) = match (hot, &url_style) {
        (Some((key, chosen, params)), None) => {
            (Some(key), render_request(&location, &chosen, params))
        }
        _ => {
            if method == Method::POST {
                form = form_body(request, &app.limits.http).await?;
            }
            let chosen = forced(choose::choose(
                &location,
                &headers,
                &query,
                url_style.clone(),
            ));
            let req = render_request(&location, &chosen, params(&location, &query, &form));
            (None, req)
        }
    };
    let info = Arc::new(
        crate::language::RequestInfo::new(method.as_str(), &path, &query_text)
            .with_params(query.iter().chain(form.iter()).cloned().collect())
            .with_headers(header_pairs(&headers))
            .with_remote_addr(peer),
    );
    req.request = Some(Arc::clone(&info));
    match app.pipeline.render(&located, &req).await {
        Ok(rendered) => {
            let cookies = info.take_set_cookies();
            if let Some((status, location)) = info.take_redirect() {
                return Ok(document::redirect_response(status, &location, cookies));
            }
            if !cookies.is_empty() {
                let mut response = document_response(app, rendered, &headers, &location).await;
                for cookie in cookies {
                    if let Ok(value) = HeaderValue::try_from(cookie) {
                        response
                            .headers_mut()
                            .append(axum::http::header::SET_COOKIE, value);
                    }
                }
                return Ok(response);
            }
            // Memoized only where the hot path looks (a GET or HEAD named
            // by its own path, outside directory-listing and traced
            // locations).
            if let Some(key) = hot_key {
                let decoded = percent_encoding::percent_decode_str(&path).decode_utf8_lossy();
                let mut request_path = provider.root().join(decoded.trim_start_matches('/'));
                if path.ends_with('/') {
                    if let Some(index) = &location.index {
                        request_path.push(index);
                    }
                }
                app.pipeline
                    .hot_put(
                        key,
                        &request_path,
                        &rendered,
                        location.cache_control.as_ref(),
                    )
                    .await;
            }
            Ok(document_response(app, rendered, &headers, &location).await)
        }
        // Boxed: an error page's future is as large as a render's.
        Err(e) => Err(Box::pin(error_page(app, e, &located, &location, &req)).await),
    }
}

/// A request's header fields as (lower-case name, value) pairs, for
/// stages that read them; values that are not text are left out.
fn header_pairs(headers: &axum::http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            Some((name.as_str().to_string(), value.to_str().ok()?.to_string()))
        })
        .collect()
}

/// Finds the document for `path`, trying AxKit's path-info
/// (`/doc.xml/STYLE`) and suffix (`/doc.xml.STYLE`) style choosers when the
/// path itself does not exist.
fn locate_document(
    provider: &crate::provider::FileProvider,
    path: &str,
    location: &Location,
) -> Result<(Located, Option<String>), HttpError> {
    let err = match provider.locate(path) {
        Ok(l) => return Ok((l, None)),
        Err(e) => e,
    };
    if !matches!(err, ProviderError::NotFound(_)) {
        return Err(not_found(err));
    }
    let candidates = [
        (location.path_info, path.rsplit_once('/')),
        (
            location.suffix,
            path.rsplit_once('.').filter(|(_, ext)| !ext.contains('/')),
        ),
    ];
    for (enabled, split) in candidates {
        let Some((head, style)) = split.filter(|_| enabled) else {
            continue;
        };
        if style.is_empty() || !head.to_ascii_lowercase().ends_with(".xml") {
            continue;
        }
        if let Ok(l) = provider.locate(head) {
            if l.kind == ResourceKind::File {
                let style = percent_encoding::percent_decode_str(style)
                    .decode_utf8_lossy()
                    .into_owned();
                return Ok((l, Some(style)));
            }
        }
    }
    Err(not_found(err))
}

/// The render request for a document under `location` with a chosen
/// style/media and request params (filtered by the location's policy).
pub fn render_request_for(
    location: &Location,
    chosen: &Chosen,
    params_in: &[(String, String)],
) -> RenderRequest {
    render_request(location, chosen, params(location, params_in, &[]))
}

fn render_request(
    location: &Location,
    chosen: &choose::Chosen,
    params: Vec<(String, String)>,
) -> RenderRequest {
    let mut req = RenderRequest::with_params(params);
    req.selection = chosen.selection.clone();
    req.client_style = chosen.from_client;
    req.processors = location.processors.clone();
    req.processor_order = location.order;
    req.registry = Some(Arc::clone(&location.registry));
    req.location = Some(location.hash);
    req.xinclude = location.xinclude;
    req.unicode_sort = location.xsl_sort == crate::site::XslSort::Unicode;
    req.trace = location.trace.clone();
    req
}

/// Renders an error through the location's error stylesheet (AxKit's
/// AxErrorStylesheet) when there is one; the document has the shape
/// `<error><file/><msg/><stage/><stylesheet/></error>`. Never cached.
async fn error_page(
    app: &App,
    err: PipelineError,
    located: &Located,
    location: &Location,
    req: &RenderRequest,
) -> HttpError {
    let root = app.pipeline.provider().root();
    let mut plain = HttpError::from_pipeline(err.clone(), root);
    if plain.status().is_server_error() {
        tracing::warn!(document = %located.path.rel(), error = %plain, "render failed");
    }
    if !location.debug_errors {
        plain = plain.summarized();
    }
    let Some(sheet) = &location.error_stylesheet else {
        return plain;
    };
    // A refusal by a limit is answered plainly: rendering an error page
    // would need the very resources the limit protects.
    if !plain.status().is_server_error() || matches!(plain, HttpError::Limited { .. }) {
        return plain;
    }
    let (stage, stylesheet) = match &err {
        PipelineError::Stage {
            stage, stylesheet, ..
        } => (stage.to_string(), stylesheet.clone()),
        PipelineError::Compile { stylesheet, .. } => (String::new(), stylesheet.clone()),
        _ => (String::new(), String::new()),
    };
    let message = match &plain {
        HttpError::Render { detail, .. } => detail.clone(),
        other => other.to_string(),
    };
    let doc = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<error><file>{}</file><msg>{}</msg><stage>{}</stage><stylesheet>{}</stylesheet><status>500</status></error>\n",
        escape_markup(located.path.rel()),
        escape_markup(&message),
        escape_markup(&stage),
        escape_markup(&stylesheet),
    );
    let mut error_req = RenderRequest::with_params(req.params.clone());
    error_req.processors = vec![crate::chain::Processor {
        pi: sheet.clone(),
        when: crate::chain::When::default(),
    }];
    error_req.processor_order = crate::chain::ProcessorOrder::Instead;
    error_req.registry = req.registry.clone();
    error_req.no_cache = true;
    match app
        .pipeline
        .render_generated(&located.path, Bytes::from(doc), &error_req)
        .await
    {
        Ok(rendered) => HttpError::Styled {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            content_type: rendered.content_type.to_string(),
            body: rendered.body,
        },
        Err(e) => {
            tracing::warn!(error = %e, "the error stylesheet failed too");
            plain
        }
    }
}

/// `text` escaped for XML or HTML text and double-quoted attribute values
/// (the error page, the error document and directory listings).
pub(crate) fn escape_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

fn not_found(e: ProviderError) -> HttpError {
    match e {
        ProviderError::Unreadable { path, reason } => {
            let e = HttpError::Render {
                title: "Unreadable document",
                detail: format!("{path}: {reason}"),
            };
            tracing::warn!(error = %e, "request failed");
            e
        }
        other => HttpError::NotFound(other.to_string()),
    }
}

fn is_document(located: &Located) -> bool {
    located.kind == ResourceKind::File
        && located
            .path
            .as_path()
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("xml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_escaping_covers_text_and_quoted_attributes() {
        assert_eq!(escape_markup(r#"a<b>&"c'é"#), "a&lt;b&gt;&amp;&quot;c'é");
        assert_eq!(escape_markup("plain"), "plain");
    }

    #[test]
    fn params_take_both_separators_and_skip_non_names() {
        let site = SiteConfig::defaults(Registry::default());
        let location = site.location("/");
        let q = pairs("a=1;b=two%20words&c=%27%22&9x=no&=no&d&style=x&passthru=1").unwrap();
        let p = params(&location, &q, &[]);
        assert_eq!(
            p,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "two words".into()),
                ("c".into(), "'\"".into()),
                ("d".into(), "".into()),
            ]
        );
        assert!(pairs("a=%00").is_err());
    }
}
