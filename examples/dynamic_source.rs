//! A dynamic source in front of a cached chain: the case incremental
//! caching exists for, written as a [`DynamicProvider`] mounted with
//! [`axle::Server::builder`].
//!
//! `GET /dynamic/article.xml` generates its source on every request: a
//! document of the site (by default the bundled article) with a
//! `<volatile n="…"/>` element carrying a request counter right after the
//! root element's start tag, and a first stage
//! (`/stylesheets/dynamic/strip-volatile.xsl`, inserted before the
//! document's first `<?xml-stylesheet?>` PI) that drops it before the
//! document's own chain (for the article: content → layout). The source
//! says it is not cacheable, so all-or-nothing caching renders the whole
//! chain each time (`X-Axle-Cache: uncacheable`); incremental caching
//! recomputes only stage 1, finds its output unchanged, and reuses the
//! later stages (`miss`, then `partial 2/3` for the article). Everything
//! else is served as `axle serve` serves it (`axle.toml` in the root
//! loaded). This is the server of the load benchmark's `dynamic` scenario
//! (`benches/load/run.sh`).
//!
//! Usage: `cargo run --release --example dynamic_source -- [--root DIR]
//! [--listen ADDR] [--cache off|all|incremental] [--document URL-PATH]`;
//! `--document` names the document under the root to generate the source
//! from (default `/articles/xml-pipelines.xml`; it must have
//! `<?xml-stylesheet?>` PIs). It prints the address like `axle serve` does
//! (`--listen 127.0.0.1:0` picks a free port) and serves on one
//! single-threaded runtime with Axle's connection loop
//! ([`axle::Server::serve_on`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axle::CacheMode;
use axle::cache::{ContentHash, Fingerprints};
use axle::dynamic::{BoxFuture, DynamicProvider, Produced, SourceError, SourceRequest};
use axle::provider::{FileProvider, Provider};

/// The allocator `axle serve` uses (see src/main.rs), so this server is
/// measured on the same footing.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The document whose text the dynamic source carries, by default.
const ARTICLE: &str = "/articles/xml-pipelines.xml";
/// The first stage, which drops the volatile part.
const STRIP: &str = "/stylesheets/dynamic/strip-volatile.xsl";
/// Where the source is mounted, and the one document it serves there.
const PREFIX: &str = "/dynamic";
/// Where the dynamic document is served.
pub const DYNAMIC_PATH: &str = "/dynamic/article.xml";

/// The source: a document of the site with a request counter in it.
struct VolatileCopy {
    /// The document's file, located (its hash memoized by stat) and read
    /// through a provider of its own over the same root.
    files: FileProvider,
    /// Its URL path.
    document: String,
    counter: AtomicU64,
    /// The document's text as last read, under its content hash: read
    /// again only when the file changed (as a real generator would keep
    /// its template), so the source's own cost is the generation.
    template: Mutex<Option<(ContentHash, Arc<str>)>>,
}

impl VolatileCopy {
    /// A source of copies of `document` (a URL path under `root`);
    /// refused now, not per request, when it cannot be made dynamic.
    fn new(root: &Path, document: &str) -> std::io::Result<VolatileCopy> {
        let copy = VolatileCopy {
            files: FileProvider::new(root, Fingerprints::new(16))?,
            document: document.to_string(),
            counter: AtomicU64::new(0),
            template: Mutex::new(None),
        };
        let text = copy.template().map_err(|e| e.to_string());
        text.and_then(|t| source(&t, 0))
            .map_err(|e| std::io::Error::other(format!("{document}: {e}")))?;
        Ok(copy)
    }

    /// The document's text: the remembered one while its hash is
    /// unchanged, else read afresh.
    fn template(&self) -> Result<Arc<str>, axle::provider::ProviderError> {
        let located = self.files.locate(&self.document)?;
        let mut memo = self.template.lock().unwrap_or_else(|p| p.into_inner());
        match memo.as_ref() {
            Some((hash, text)) if Some(*hash) == located.hash => Ok(Arc::clone(text)),
            _ => {
                let read = self.files.read(&located)?;
                let text: Arc<str> = Arc::from(String::from_utf8_lossy(&read.bytes).as_ref());
                *memo = Some((read.hash, Arc::clone(&text)));
                Ok(text)
            }
        }
    }

    fn produce_now(&self, request: &SourceRequest) -> Result<Produced, SourceError> {
        if request.path != DYNAMIC_PATH {
            return Err(SourceError::NotFound(request.path.clone()));
        }
        let text = self
            .template()
            .map_err(|e| SourceError::Failed(e.to_string()))?;
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let bytes = source(&text, n).map_err(SourceError::Failed)?;
        Ok(Produced {
            bytes: bytes.into(),
            cacheable: false,
            status: None,
        })
    }
}

impl DynamicProvider for VolatileCopy {
    fn describe(&self) -> String {
        format!("a volatile copy of {}", self.document)
    }

    fn produce<'a>(
        &'a self,
        request: &'a SourceRequest,
    ) -> BoxFuture<'a, Result<Produced, SourceError>> {
        let produced = self.produce_now(request);
        Box::pin(async move { produced })
    }
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
    let served = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .and_then(|runtime| {
            runtime.block_on(async {
                let server = axle::Server::builder(&root)
                    .cache_mode(cache)
                    .provider(PREFIX, VolatileCopy::new(&root, &document)?)
                    .build()?;
                let listener = tokio::net::TcpListener::bind(listen).await?;
                println!(
                    "axle: serving {} on http://{}/ (cache: {cache})",
                    root.display(),
                    listener.local_addr()?
                );
                server.serve_on(listener, std::future::pending()).await
            })
        });
    match served {
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

    async fn get(router: &axum::Router, path: &str) -> (u16, String, Vec<u8>) {
        use tower::ServiceExt;
        let request = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let cache = response
            .headers()
            .get(axle::http::CACHE_HEADER)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, cache, body.to_vec())
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn incremental_reuses_the_chain_after_a_volatile_first_stage() {
        let samples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
        let mut bodies = Vec::new();
        for (mode, want, expected_runs) in [
            (CacheMode::Off, ["miss", "miss", "miss"], 9),
            (CacheMode::All, ["uncacheable"; 3], 9),
            (
                CacheMode::Incremental,
                ["miss", "partial 2/3", "partial 2/3"],
                3 + 1 + 1,
            ),
        ] {
            let server = axle::Server::builder(&samples)
                .cache_mode(mode)
                .provider(PREFIX, VolatileCopy::new(&samples, ARTICLE).unwrap())
                .build()
                .unwrap();
            let router = axle::http::router(Arc::clone(server.app()));
            let mut seen = Vec::new();
            for _ in 0..3 {
                let (status, cache, body) = get(&router, DYNAMIC_PATH).await;
                assert_eq!(status, 200, "{mode}");
                seen.push(cache);
                bodies.push(body);
            }
            assert_eq!(seen, want, "{mode}");
            let runs = server
                .app()
                .pipeline()
                .stats()
                .stage_runs
                .load(Ordering::SeqCst);
            assert_eq!(runs, expected_runs, "{mode}: stage runs");
            let (_, _, file) = get(&router, ARTICLE).await;
            assert!(
                bodies.last() == Some(&file),
                "{mode}: the page of the file itself"
            );
            let (status, _, _) = get(&router, "/dynamic/other.xml").await;
            assert_eq!(status, 404, "{mode}: the source has one document");
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
    fn a_document_without_a_chain_is_refused_at_start_up() {
        let samples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
        let refused = VolatileCopy::new(&samples, "/stylesheets/numbering.xml").err();
        assert!(refused.is_some_and(|e| e.to_string().contains("no <?xml-stylesheet?> PI")),);
        assert!(VolatileCopy::new(&samples, "/no/such.xml").is_err());
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
