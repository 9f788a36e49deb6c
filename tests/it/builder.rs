//! The public extension API end to end: a Language and a dynamic source
//! written in Rust, registered through `axle::Server::builder` and served
//! by `Server::serve_on` on a loopback port; per-stage cacheability
//! declared through the API (`Stage::cacheable`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axle::CacheMode;
use axle::dynamic::{BoxFuture, DynamicProvider, Produced, SourceError, SourceRequest};
use axle::language::{
    Language, LanguageError, Resource, Stage, StageContext, StageData, StageOutput, XmlOut,
};

use crate::support::TestSite;

/// A stage that asks "the outside world" (here, a counter) on every run,
/// so it declares itself uncacheable. It renames the root's child
/// `heading` to carry a `seen` attribute: constant unless `?vary` is set.
struct Stamp(Arc<AtomicU64>);
struct StampStage(Arc<AtomicU64>);

impl Language for Stamp {
    fn name(&self) -> &str {
        "test-stamp"
    }
    fn resource_optional(&self) -> bool {
        true
    }
    fn compile(&self, _: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
        Ok(Arc::new(StampStage(Arc::clone(&self.0))))
    }
}

impl Stage for StampStage {
    fn cacheable(&self) -> bool {
        false
    }
    fn run(&self, input: StageData, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        let vary = ctx.params.iter().any(|(k, _)| k == "vary");
        input.with_view(ctx, |doc| {
            let mut out = XmlOut::new();
            out.copy_with(doc.root_element(), |node, attrs| {
                if node.has_tag_name("page") {
                    attrs.set(
                        "seen",
                        if vary {
                            n.to_string()
                        } else {
                            "yes".to_string()
                        },
                    );
                }
            });
            out.finish(ctx)
        })
    }
}

/// A source that makes an article titled by the query's `t`.
struct Articles(Arc<AtomicU64>);

impl DynamicProvider for Articles {
    fn describe(&self) -> String {
        "test articles".into()
    }
    fn produce<'a>(
        &'a self,
        request: &'a SourceRequest,
    ) -> BoxFuture<'a, Result<Produced, SourceError>> {
        Box::pin(async move {
            self.0.fetch_add(1, Ordering::SeqCst);
            let query = request.query.clone().unwrap_or_default();
            let title: String = query
                .strip_prefix("t=")
                .unwrap_or("none")
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .collect();
            if title == "fail" {
                return Err(SourceError::Failed("the articles are down".into()));
            }
            let doc = format!(
                "<?xml-stylesheet href=\"/s/content.xsl\" type=\"text/xsl\"?>\n\
                 <?xml-stylesheet href=\"/\" type=\"application/x-stamp\"?>\n\
                 <?xml-stylesheet href=\"/s/layout.xsl\" type=\"text/xsl\"?>\n\
                 <article><title>{title}</title><para>Made in Rust.</para></article>"
            );
            Ok(Produced {
                bytes: doc.into(),
                cacheable: true,
                status: None,
            })
        })
    }
}

struct Running {
    base: String,
    stamps: Arc<AtomicU64>,
    produced: Arc<AtomicU64>,
    _task: tokio::task::JoinHandle<()>,
}

async fn start(site: &TestSite, mode: CacheMode) -> Running {
    let stamps = Arc::new(AtomicU64::new(0));
    let produced = Arc::new(AtomicU64::new(0));
    let server = axle::Server::builder(&site.root)
        .no_site_file()
        .cache_mode(mode)
        .language("application/x-stamp", Stamp(Arc::clone(&stamps)))
        .provider("/gen", Articles(Arc::clone(&produced)))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        server
            .serve_on(listener, std::future::pending())
            .await
            .unwrap();
    });
    Running {
        base,
        stamps,
        produced,
        _task: task,
    }
}

async fn get(base: &str, path: &str) -> (u16, String, String) {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    let status = r.status().as_u16();
    let cache = r
        .headers()
        .get(axle::http::CACHE_HEADER)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, cache, r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rust_language_and_source_serve_through_the_builder_in_every_mode() {
    let site = TestSite::new();
    let mut pages = Vec::new();
    for (mode, caches) in [
        (CacheMode::Off, ["miss", "miss", "miss"]),
        (
            CacheMode::All,
            ["uncacheable", "uncacheable", "uncacheable"],
        ),
        // Stage 1 is found; the stamp runs every time; its output is the
        // same, so layout is found after it.
        (
            CacheMode::Incremental,
            ["miss", "partial 2/3", "partial 2/3"],
        ),
    ] {
        let server = start(&site, mode).await;
        let mut seen: Vec<String> = Vec::new();
        for _ in 0..3 {
            let (status, cache, body) = get(&server.base, "/gen/a.xml?t=Hello").await;
            assert_eq!(status, 200, "{mode}: {body}");
            assert!(body.contains("<h1>Hello</h1>"), "{body}");
            seen.push(cache);
            pages.push(body);
        }
        assert_eq!(seen, caches, "{mode}");
        assert_eq!(
            server.stamps.load(Ordering::SeqCst),
            3,
            "{mode}: the stamp ran every time"
        );
        assert_eq!(server.produced.load(Ordering::SeqCst), 3, "{mode}");
    }
    assert!(
        pages.windows(2).all(|w| w[0] == w[1]),
        "every mode, the same bytes"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_uncacheable_stage_whose_output_changes_reruns_what_follows() {
    let site = TestSite::new();
    let server = start(&site, CacheMode::Incremental).await;
    let (_, first, _) = get(&server.base, "/gen/a.xml?t=Hi&vary=1").await;
    let (_, second, _) = get(&server.base, "/gen/a.xml?t=Hi&vary=1").await;
    assert_eq!(first, "miss");
    assert_eq!(
        second, "partial 1/3",
        "stage 1 found, the stamp and layout ran"
    );
    let (status, cache, body) = get(&server.base, "/gen/a.xml?t=fail").await;
    assert_eq!((status, cache.as_str()), (502, ""), "{body}");
    assert!(body.contains("the articles are down"), "{body}");
    // Outside the mount, the files.
    let (status, _, _) = get(&server.base, "/two.xml").await;
    assert_eq!(status, 200);
}

#[test]
fn the_builder_refuses_what_cannot_work() {
    let site = TestSite::new();
    let clash = axle::Server::builder(&site.root)
        .language("application/x-a", Stamp(Arc::default()))
        .language("application/x-b", Stamp(Arc::default()))
        .build();
    assert!(
        matches!(clash, Err(axle::server::BuildError::Language { .. })),
        "two Languages with one name: {clash:?}"
    );
    let prefix = axle::Server::builder(&site.root)
        .provider("gen", Articles(Arc::default()))
        .build();
    assert!(matches!(
        prefix,
        Err(axle::server::BuildError::Prefix { .. })
    ));
    site.write("bad.toml", "[location.\"/\"]\nnot-a-key = 1\n");
    let file = axle::Server::builder(&site.root)
        .site_file(site.root.join("bad.toml"))
        .build();
    assert!(
        file.is_err(),
        "a configuration inside the root under another name, or a broken one"
    );
}
