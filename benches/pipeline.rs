//! Per-request cost of rendering, in each cache mode, on the bundled samples.
//!
//! `request/<mode>/<url>`: a full request through the service `axle serve`
//! runs, without sockets (`service(app).oneshot(request)`, body
//! collected), after one warm-up request, so `all` and `incremental` measure cache hits and `off` measures
//! running the chain (compiled stylesheets are reused in every mode).
//! Before measuring, every mode's body is checked to be byte-identical and
//! the `X-Axle-Cache` header to say what is being measured.
//!
//! `hit/<mode>/<url>`: a hit the way `axle serve` answers it, without
//! sockets: the request head parsed, the hot memo asked, the response head
//! written (`axle::http::hit_bytes`, the connection loop's fast path);
//! checked first to give the body the service gives.
//!
//! `hot_path/*`: the pieces every request pays even on a hit: the prolog
//! scanner, a cache key, the hot memo's key (the request's fields, no
//! hashing) and locating the source (one `stat`, memoized hash).
//!
//! `serialize/html/*`: the article's final HTML result tree written out,
//! by Axle's serializer (`csrc/html.c`) and by libxslt's, which must give
//! the same bytes (checked first); the transform that makes each tree is
//! set-up, not measured.
//!
//! `posted/*`: a posted document parsed into the first stage's tree, by
//! the one libxml2 parse under limits and by the two parsers it replaced.
//!
//! Run with `cargo bench --bench pipeline`; `-- --test` runs each once.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode};
use criterion::{Criterion, criterion_group, criterion_main};
use tower::ServiceExt;

use axle::cache::{ContentHash, Fingerprints, KeyBuilder};
use axle::http::{App, CACHE_HEADER};
use axle::provider::{FileProvider, Provider};
use axle::{CacheMode, Registry, ServeConfig};

/// The article: a two-stage chain over ~10 KB of XML.
const ARTICLE: &str = "/articles/xml-pipelines.xml";
/// A three-stage chain of near-identity stylesheets over a tiny document.
const TRIVIAL: &str = "/trivial/";
const URLS: [(&str, &str); 2] = [("article", ARTICLE), ("trivial", TRIVIAL)];
const MODES: [CacheMode; 3] = [CacheMode::Off, CacheMode::All, CacheMode::Incremental];

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("samples")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn app(mode: CacheMode) -> Arc<App> {
    let mut config = ServeConfig::new(samples());
    config.cache_mode = mode;
    App::new(&config, Registry::default()).expect("app over samples/")
}

/// One GET through the service `axle serve` runs; returns the cache
/// header and the body.
async fn get(app: &Arc<App>, path: &str) -> (String, Bytes) {
    let request = Request::get(path).body(Body::empty()).expect("request");
    let response = axle::http::service(app.clone())
        .oneshot(request)
        .await
        .expect("infallible");
    assert_eq!(response.status(), StatusCode::OK, "GET {path}");
    let cache = response
        .headers()
        .get(CACHE_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (cache, body)
}

fn requests(c: &mut Criterion) {
    let rt = runtime();
    let apps: Vec<(CacheMode, Arc<App>)> = MODES.iter().map(|&m| (m, app(m))).collect();

    // Warm every mode (stylesheets compiled; outputs cached where the mode
    // caches), then check that the modes agree and that the next request is
    // what this benchmark claims to measure.
    for (name, url) in URLS {
        let mut reference: Option<(CacheMode, Bytes)> = None;
        for (mode, app) in &apps {
            rt.block_on(get(app, url));
            let (cache, body) = rt.block_on(get(app, url));
            let expected = match mode {
                CacheMode::Off => "miss",
                CacheMode::All | CacheMode::Incremental => "hit",
            };
            assert_eq!(
                cache, expected,
                "{mode} {name}: warm request was not a {expected}"
            );
            match &reference {
                None => reference = Some((*mode, body)),
                Some((first, bytes)) => assert!(
                    *bytes == body,
                    "{name}: mode {mode} returned {} bytes, mode {first} {} bytes, and they differ",
                    body.len(),
                    bytes.len()
                ),
            }
        }
    }

    let mut group = c.benchmark_group("request");
    for (mode, app) in &apps {
        for (name, url) in URLS {
            group.bench_function(format!("{mode}/{name}"), |b| {
                b.iter(|| black_box(rt.block_on(get(app, black_box(url)))))
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("hit");
    for (mode, app) in &apps {
        if *mode == CacheMode::Off {
            continue;
        }
        for (name, url) in URLS {
            let request = Bytes::from(format!("GET {url} HTTP/1.1\r\nHost: bench\r\n\r\n"));
            let mut head = Vec::new();
            let body = axle::http::hit_bytes(app, request.clone(), &mut head)
                .unwrap_or_else(|| panic!("{mode} {name}: not answered in wire form"));
            let (_, expected) = rt.block_on(get(app, url));
            assert!(
                body == expected,
                "{mode} {name}: the fast path's body differs"
            );
            group.bench_function(format!("{mode}/{name}"), |b| {
                b.iter(|| {
                    black_box(axle::http::hit_bytes(
                        app,
                        black_box(request.clone()),
                        &mut head,
                    ))
                })
            });
        }
    }
    group.finish();
}

fn hot_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("hot_path");

    let article = std::fs::read(samples().join(&ARTICLE[1..])).expect("read the article");
    axle::prolog::scan(&article).expect("the article's prolog scans");
    group.bench_function("prolog_scan/article", |b| {
        b.iter(|| axle::prolog::scan(black_box(&article)))
    });

    // Five fields, shaped like an incremental stage key with one parameter.
    let closure = ContentHash::of(b"closure");
    let input = ContentHash::of(&article);
    group.bench_function("key_builder/5_fields", |b| {
        b.iter(|| {
            KeyBuilder::new("stage")
                .hash(black_box(&closure))
                .u64(black_box(1))
                .hash(black_box(&input))
                .str(black_box("style"))
                .str(black_box("print"))
                .finish()
        })
    });

    // The hot memo's key of a plain GET: what every hit builds first.
    let selection = axle::chain::Selection {
        style: None,
        media: "screen".to_string(),
    };
    let location = Some(ContentHash::of(b"location"));
    group.bench_function("hot_key/article", |b| {
        b.iter(|| {
            axle::pipeline::Pipeline::hot_key(
                black_box(ARTICLE),
                location,
                black_box(&selection),
                false,
                false,
                &[],
            )
        })
    });

    let files = FileProvider::new(&samples(), Fingerprints::default()).expect("provider");
    files.locate(ARTICLE).expect("locate the article"); // memoize its hash
    group.bench_function("locate/article", |b| {
        b.iter(|| files.locate(black_box(ARTICLE)))
    });

    group.finish();
}

/// Reads root-relative URLs from `samples/` (the article's stylesheets
/// include and import each other).
struct SampleFiles;

impl axle::ffi::Resolver for SampleFiles {
    fn load(&self, url: &str) -> Result<axle::ffi::Loaded, String> {
        let rel = url.trim_start_matches("file://").trim_start_matches('/');
        std::fs::read(samples().join(rel))
            .map(|bytes| axle::ffi::Loaded {
                url: url.to_string(),
                bytes,
            })
            .map_err(|e| format!("{url}: {e}"))
    }
}

fn serialize(c: &mut Criterion) {
    use axle::ffi::{Limits, ResultDoc, Stylesheet, XmlDoc};
    let files: Arc<dyn axle::ffi::Resolver> = Arc::new(SampleFiles);
    let compile = |url: &str| {
        let bytes = std::fs::read(samples().join(&url[1..])).expect("read a stylesheet");
        Arc::new(Stylesheet::compile(&bytes, url, files.clone()).expect("compile"))
    };
    let article = compile("/stylesheets/article.xsl");
    let layout = compile("/stylesheets/layout.xsl");
    let source = std::fs::read(samples().join(&ARTICLE[1..])).expect("read the article");
    let page = || -> ResultDoc {
        let limits = Limits::default();
        let doc = XmlDoc::parse(&source, ARTICLE, files.clone()).expect("parse the article");
        let content = article
            .transform(doc, ARTICLE, &[], &limits, files.clone())
            .expect("article.xsl");
        layout
            .transform(content.into_doc(), ARTICLE, &[], &limits, files.clone())
            .expect("layout.xsl")
    };
    let ours = page().serialize().expect("serialize");
    let theirs = page()
        .serialize_with_libxslt()
        .expect("serialize with libxslt");
    assert!(ours == theirs, "the two HTML serializers disagree");
    assert!(ours.starts_with(b"<!DOCTYPE html>"), "an HTML page");

    let mut group = c.benchmark_group("serialize");
    group.bench_function("html/axle", |b| {
        b.iter_batched(page, |r| r.serialize(), criterion::BatchSize::SmallInput)
    });
    group.bench_function("html/libxslt", |b| {
        b.iter_batched(
            page,
            |r| r.serialize_with_libxslt(),
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// `posted/*`: a client's document made into the first stage's tree. The
/// sample article (10 KB, no DTD) by the one parse issue #36 put in
/// (`untrusted`: libxml2 under the posted-document limits, the attributes
/// counted on the bytes first), against what it replaced (`two_parsers`:
/// roxmltree's well-formedness check, as `dynamic/post.rs` ran it, then
/// libxml2's served-document parse), each to a tree.
fn posted(c: &mut Criterion) {
    use axle::ffi::{RefuseAll, UntrustedLimits, XmlDoc};
    let source = std::fs::read(samples().join(&ARTICLE[1..])).expect("read the article");
    let limits = UntrustedLimits::default();
    let refuse: Arc<dyn axle::ffi::Resolver> = Arc::new(RefuseAll);
    let untrusted = XmlDoc::parse_untrusted(&source, ARTICLE, &limits).expect("parse");
    let plain = XmlDoc::parse(&source, ARTICLE, refuse.clone()).expect("parse");
    assert!(
        untrusted.to_xml_bytes().ok() == plain.to_xml_bytes().ok(),
        "the two parses give one tree"
    );
    let mut group = c.benchmark_group("posted");
    group.bench_function("untrusted/article", |b| {
        b.iter(|| XmlDoc::parse_untrusted(black_box(&source), ARTICLE, &limits))
    });
    group.bench_function("two_parsers/article", |b| {
        b.iter(|| {
            let text = std::str::from_utf8(black_box(&source)).expect("UTF-8");
            let options = roxmltree::ParsingOptions {
                allow_dtd: true,
                nodes_limit: 1 << 20,
            };
            roxmltree::Document::parse_with_options(text, options).expect("well-formed");
            XmlDoc::parse(&source, ARTICLE, refuse.clone())
        })
    });
    group.finish();
}

fn config() -> Criterion {
    // 16 benchmarks × (2 s warm-up + 5 s measurement) plus set-up: ~2 min.
    Criterion::default()
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
        .sample_size(60)
}

criterion_group! {
    name = benches;
    config = config();
    targets = requests, hot_path, serialize, posted
}
criterion_main!(benches);
