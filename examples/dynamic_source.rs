//! A dynamic source in front of a cached chain: the case incremental
//! caching exists for.
//!
//! `GET /dynamic/article.xml` generates its source on every request: a
//! document of the site (by default the bundled article) with a
//! `<volatile n="…"/>` element carrying a request counter right after the
//! root element's start tag, and a first stage
//! (`/stylesheets/dynamic/strip-volatile.xsl`, inserted before the
//! document's first `<?xml-stylesheet?>` PI) that drops it before the
//! document's own chain (for the article: content → layout). Every source
//! is new, so all-or-nothing caching recomputes the whole chain each time;
//! incremental caching recomputes only stage 1, finds its output unchanged,
//! and reuses the later stages (`X-Axle-Cache: partial 2/3` for the
//! article). Everything else is served by the normal Axle router. Until
//! dynamic Providers land, this is the "test Provider" of the load
//! benchmark's `dynamic` scenario (`benches/load/run.sh`).
//!
//! Usage: `cargo run --release --example dynamic_source -- [--root DIR]
//! [--listen ADDR] [--cache off|all|incremental] [--document URL-PATH]`;
//! `--document` names the document under the root to generate the source
//! from (default `/articles/xml-pipelines.xml`; it must have
//! `<?xml-stylesheet?>` PIs). It prints the address like `axle serve` does
//! and serves on a single-threaded runtime with Axle's connection loop
//! (`axle::http::serve_service`), as `axle serve` does.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use axle::cache::ContentHash;
use axle::http::{App, CACHE_HEADER, HttpError};
use axle::pipeline::RenderRequest;
use axle::provider::{Located, Provider};
use axle::{CacheMode, Registry, ServeConfig};

/// The allocator `axle serve` uses (see src/main.rs), so this server is
/// measured on the same footing.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The document whose text the dynamic source carries, by default.
const ARTICLE: &str = "/articles/xml-pipelines.xml";
/// The first stage, which drops the volatile part.
const STRIP: &str = "/stylesheets/dynamic/strip-volatile.xsl";
/// Where the dynamic document is served.
pub const DYNAMIC_PATH: &str = "/dynamic/article.xml";

/// Shared state: the Axle app, the document (URL path) and the request
/// counter.
struct Dynamic {
    app: Arc<App>,
    document: String,
    counter: AtomicU64,
    /// The document's text as last read, under its content hash: read
    /// again only when the file changed (as a real generator would keep
    /// its template), so the source's own cost is the generation.
    template: Mutex<Option<(ContentHash, Arc<str>)>>,
}

/// The end (the index after `>`) of the markup starting at `start` (a start
/// tag or a `<!DOCTYPE`): the first `>` outside quotes, brackets (the
/// internal subset) and comments.
fn markup_end(doc: &str, start: usize) -> Result<usize, String> {
    let b = doc.as_bytes();
    let (mut i, mut quote, mut depth) = (start + 1, None, 0usize);
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if b[i..].starts_with(b"<!--") => {
                i += doc[i..].find("-->").ok_or("unterminated comment")? + 2;
            }
            None if c == b'"' || c == b'\'' => quote = Some(c),
            None if c == b'[' => depth += 1,
            None if c == b']' => depth = depth.saturating_sub(1),
            None if c == b'>' && depth == 0 => return Ok(i + 1),
            None => {}
        }
        i += 1;
    }
    Err("unterminated markup in the prolog".into())
}

/// The end (the index after `>`) of the root element's start tag: the
/// prolog (XML declaration, PIs, comments, DOCTYPE) is skipped.
fn root_start_end(doc: &str) -> Result<usize, String> {
    let mut i = 0;
    loop {
        i += doc[i..].find('<').ok_or("no root element")?;
        let rest = &doc[i..];
        if rest.starts_with("<?") {
            i += rest
                .find("?>")
                .ok_or("unterminated processing instruction")?
                + 2;
        } else if rest.starts_with("<!--") {
            i += rest.find("-->").ok_or("unterminated comment")? + 3;
        } else {
            // <!DOCTYPE ...> or the root start tag
            let end = markup_end(doc, i)?;
            if !rest.starts_with("<!") {
                return Ok(end);
            }
            i = end;
        }
    }
}

/// The source for request `n`: the document with a first PI for the strip
/// stage (before its first `<?xml-stylesheet?>` PI) and a `<volatile>`
/// element right after the root element's start tag.
fn source(doc: &str, n: u64) -> Result<String, String> {
    let root_end = root_start_end(doc)?;
    let first_pi = doc[..root_end]
        .find("<?xml-stylesheet")
        .ok_or("the document has no <?xml-stylesheet?> PI in its prolog")?;
    Ok(format!(
        "{}<?xml-stylesheet href=\"{STRIP}\" type=\"text/xsl\"?>\n{}<volatile n=\"{n}\"/>{}",
        &doc[..first_pi],
        &doc[first_pi..root_end],
        &doc[root_end..],
    ))
}

/// The document's text: the remembered one while its hash (known from
/// `locate`, which checks the file) is unchanged, else read afresh.
fn template(
    state: &Dynamic,
    provider: &axle::provider::FileProvider,
    located: &Located,
) -> Result<Arc<str>, axle::provider::ProviderError> {
    let remembered = |memo: &Option<(ContentHash, Arc<str>)>| {
        memo.as_ref()
            .filter(|(hash, _)| Some(*hash) == located.hash)
            .map(|(_, text)| Arc::clone(text))
    };
    if let Some(text) = remembered(&state.template.lock().unwrap_or_else(|p| p.into_inner())) {
        return Ok(text);
    }
    let read = provider.read(located)?;
    let text: Arc<str> = match std::str::from_utf8(&read.bytes) {
        Ok(t) => Arc::from(t),
        Err(_) => Arc::from(String::from_utf8_lossy(&read.bytes).as_ref()),
    };
    *state.template.lock().unwrap_or_else(|p| p.into_inner()) =
        Some((read.hash, Arc::clone(&text)));
    Ok(text)
}

async fn dynamic(State(state): State<Arc<Dynamic>>) -> Response {
    let pipeline = state.app.pipeline();
    let provider = pipeline.provider();
    let located = match provider.locate(&state.document) {
        Ok(l) => l,
        Err(e) => return HttpError::NotFound(e.to_string()).into_response(),
    };
    let text = match template(&state, provider, &located) {
        Ok(t) => t,
        Err(e) => return HttpError::NotFound(e.to_string()).into_response(),
    };
    let n = state.counter.fetch_add(1, Ordering::Relaxed);
    let bytes = match source(&text, n) {
        Ok(s) => Bytes::from(s),
        Err(e) => {
            return HttpError::Render {
                title: "Internal error",
                detail: e,
            }
            .into_response();
        }
    };
    match pipeline
        .render_generated(&located.path, bytes, &RenderRequest::default())
        .await
    {
        Ok(r) => {
            let mut response = (StatusCode::OK, r.body).into_response();
            let headers = response.headers_mut();
            if let Ok(v) = HeaderValue::from_str(&r.content_type) {
                headers.insert(header::CONTENT_TYPE, v);
            }
            if let Ok(v) = HeaderValue::from_str(&r.cache.header_value()) {
                headers.insert(CACHE_HEADER, v);
            }
            response
        }
        Err(e) => HttpError::from_pipeline(e, provider.root()).into_response(),
    }
}

/// The router: the dynamic document (generated from `document`) plus
/// everything Axle serves.
fn router(app: Arc<App>, document: &str) -> axum::Router {
    let state = Arc::new(Dynamic {
        app: Arc::clone(&app),
        document: document.to_string(),
        counter: AtomicU64::new(0),
        template: Mutex::new(None),
    });
    axum::Router::new()
        .route(DYNAMIC_PATH, axum::routing::get(dynamic))
        .with_state(state)
        .merge(axle::http::router(app))
}

fn main() -> ExitCode {
    let mut root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut listen: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 8080));
    let mut cache = CacheMode::Incremental;
    let mut document = ARTICLE.to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next();
        match (arg.as_str(), value) {
            ("--root", Some(v)) => root = PathBuf::from(v),
            ("--listen", Some(v)) => match v.parse() {
                Ok(a) => listen = a,
                Err(e) => {
                    eprintln!("dynamic_source: --listen {v}: {e}");
                    return ExitCode::from(2);
                }
            },
            ("--cache", Some(v)) => {
                cache = match v.as_str() {
                    "off" => CacheMode::Off,
                    "all" => CacheMode::All,
                    "incremental" => CacheMode::Incremental,
                    other => {
                        eprintln!("dynamic_source: unknown cache mode {other}");
                        return ExitCode::from(2);
                    }
                }
            }
            ("--document", Some(v)) if v.starts_with('/') => document = v,
            (other, _) => {
                eprintln!(
                    "usage: dynamic_source [--root DIR] [--listen ADDR] [--cache MODE] [--document /URL-PATH] ({other}?)"
                );
                return ExitCode::from(2);
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("dynamic_source: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result: std::io::Result<()> = runtime.block_on(async {
        let mut config = ServeConfig::new(&root);
        config.cache_mode = cache;
        let app = App::new(&config, Registry::default())?;
        // Fail at start-up, not per request, when the document cannot be
        // made dynamic.
        let provider = app.pipeline().provider();
        let text = provider
            .locate(&document)
            .and_then(|l| provider.read(&l))
            .map_err(|e| std::io::Error::other(format!("{document}: {e}")))?;
        source(&String::from_utf8_lossy(&text.bytes), 0)
            .map_err(|e| std::io::Error::other(format!("{document}: {e}")))?;
        let listener = tokio::net::TcpListener::bind(listen).await?;
        println!(
            "axle: serving {} on http://{}/ (cache: {cache})",
            root.display(),
            listener.local_addr()?
        );
        axle::http::serve_service(listener, router(app, &document), std::future::pending()).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dynamic_source: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(router: &axum::Router) -> (String, Vec<u8>) {
        use tower::ServiceExt;
        let request = axum::http::Request::get(DYNAMIC_PATH)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let cache = response.headers()[CACHE_HEADER]
            .to_str()
            .unwrap()
            .to_string();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (cache, body.to_vec())
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn incremental_reuses_the_chain_after_a_volatile_first_stage() {
        let samples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
        let mut bodies = Vec::new();
        for (mode, want) in [
            (CacheMode::Off, ["miss", "miss", "miss"]),
            (CacheMode::All, ["miss", "miss", "miss"]),
            (
                CacheMode::Incremental,
                ["miss", "partial 2/3", "partial 2/3"],
            ),
        ] {
            let mut config = ServeConfig::new(&samples);
            config.cache_mode = mode;
            let app = App::new(&config, Registry::default()).unwrap();
            let router = router(Arc::clone(&app), ARTICLE);
            let mut seen = Vec::new();
            for _ in 0..3 {
                let (cache, body) = get(&router).await;
                seen.push(cache);
                bodies.push(body);
            }
            assert_eq!(seen, want, "{mode}");
            let runs = app.pipeline().stats().stage_runs.load(Ordering::SeqCst);
            let expected_runs = if mode == CacheMode::Incremental {
                3 + 1 + 1
            } else {
                9
            };
            assert_eq!(runs, expected_runs, "{mode}: stage runs");
        }
        assert!(
            bodies.windows(2).all(|w| w[0] == w[1]),
            "every mode and request gives the same page"
        );
        assert!(
            String::from_utf8_lossy(&bodies[0])
                .contains("A short history of XML publishing pipelines")
        );
    }

    #[test]
    fn the_source_keeps_the_article_and_adds_a_first_stage() {
        let s = source("<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"/a.xsl\" type=\"text/xsl\"?>\n<article lang=\"en\"><t/></article>", 7).unwrap();
        assert_eq!(
            s,
            format!(
                "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"{STRIP}\" type=\"text/xsl\"?>\n<?xml-stylesheet href=\"/a.xsl\" type=\"text/xsl\"?>\n<article lang=\"en\"><volatile n=\"7\"/><t/></article>"
            )
        );
    }

    #[test]
    fn the_root_start_tag_is_found_after_a_doctype_with_an_internal_subset() {
        let doc = "<?xml version=\"1.0\"?>\n<!-- a <book> -->\n<!DOCTYPE book PUBLIC \"-//X//EN\" \"x.dtd\" [\n  <!-- it's > here -->\n  <!ENTITY e \"a > b\">\n]>\n<?xml-stylesheet href=\"/d.xsl\" type=\"text/xsl\"?>\n<?xml-stylesheet href=\"/l.xsl\" type=\"text/xsl\"?>\n<book id='x>y'><title>&e;</title></book>";
        let s = source(doc, 3).unwrap();
        assert_eq!(
            s,
            format!(
                "<?xml version=\"1.0\"?>\n<!-- a <book> -->\n<!DOCTYPE book PUBLIC \"-//X//EN\" \"x.dtd\" [\n  <!-- it's > here -->\n  <!ENTITY e \"a > b\">\n]>\n<?xml-stylesheet href=\"{STRIP}\" type=\"text/xsl\"?>\n<?xml-stylesheet href=\"/d.xsl\" type=\"text/xsl\"?>\n<?xml-stylesheet href=\"/l.xsl\" type=\"text/xsl\"?>\n<book id='x>y'><volatile n=\"3\"/><title>&e;</title></book>"
            )
        );
        assert!(
            source("<?xml version=\"1.0\"?>\n<doc/>", 0).is_err(),
            "no PI"
        );
    }
}
