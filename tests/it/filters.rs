//! External filter Languages over HTTP: a command as a stage, first or
//! last in a chain, the same bytes in every cache mode, its script and
//! its resource's appearance in the key, and its failures as a gateway's
//! answers (502, 504, 503 with `Retry-After`) that name the stage and the
//! reason but never show the command's stderr.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axle::CacheMode;
use axle::config::Freshness;
use axle::language::{FilterConfig, FilterLanguage};

use crate::support::{MODES, TestServer, copy_dir, tick};

/// Printed to stderr by the failing filter; must never reach a page.
const STDERR_MARKER: &str = "SECRET-STDERR-7c1";

/// A fresh copy of `tests/fixtures/filters`.
struct FilterSite {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl FilterSite {
    fn new() -> FilterSite {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/filters"),
            &root,
        );
        FilterSite {
            root: root.canonicalize().unwrap(),
            _dir: dir,
        }
    }

    fn write(&self, rel: &str, content: &str) {
        std::fs::write(self.root.join(rel), content).unwrap();
    }

    /// The default registry plus the fixtures' filters, run in the root.
    fn registry(&self) -> axle::Registry {
        let mut registry = axle::Registry::default();
        let argv = |args: &[&str]| args.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut filters = vec![
            FilterConfig::new("application/x-shout", argv(&["python3", "shout.py"])),
            FilterConfig {
                content_type: Some("text/plain; charset=UTF-8".into()),
                ..FilterConfig::new("application/x-words", argv(&["python3", "words.py"]))
            },
            // The resource's content when there is one (request data only
            // through the environment, never argv).
            FilterConfig::new(
                "application/x-resource",
                argv(&[
                    "sh",
                    "-c",
                    r#"if [ -n "$AXLE_RESOURCE" ]; then cat "$AXLE_RESOURCE"; else echo '<none/>'; fi"#,
                ]),
            ),
            FilterConfig::new(
                "application/x-fail",
                argv(&["sh", "-c", &format!("echo {STDERR_MARKER} >&2; exit 3")]),
            ),
            FilterConfig {
                timeout: Duration::from_millis(500),
                ..FilterConfig::new("application/x-slow", argv(&["sleep", "30"]))
            },
            FilterConfig {
                max_output: 1000,
                ..FilterConfig::new(
                    "application/x-big",
                    argv(&["head", "-c", "100000", "/dev/zero"]),
                )
            },
            FilterConfig {
                max_concurrent: 1,
                max_queue: 0,
                ..FilterConfig::new("application/x-busy", argv(&["sh", "-c", "sleep 1; cat"]))
            },
        ];
        for config in filters.drain(..) {
            let filter = FilterLanguage::new(config, &self.root).unwrap();
            let mime = filter.mime().to_string();
            registry.register(&mime, Arc::new(filter)).unwrap();
        }
        registry
    }

    async fn serve(&self, mode: CacheMode) -> TestServer {
        TestServer::start_with(&self.root, mode, self.registry()).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn filter_chains_give_the_same_bytes_in_every_cache_mode() {
    let mut seen = Vec::new();
    // One site for every mode: its files' dates are part of the headers
    // compared (Last-Modified).
    let site = FilterSite::new();
    for mode in MODES {
        let server = site.serve(mode).await;
        let mut answers = Vec::new();
        for path in ["/first.xml", "/last.xml", "/nohref.xml"] {
            for _ in 0..2 {
                let r = server.get(path).await;
                assert_eq!(r.status, 200, "{mode:?} {path}: {}", r.text());
                answers.push((path, r.text(), r.comparable_headers()));
            }
        }
        // A filter then XSLT: the filter's XML parsed by the next stage.
        let first = &answers[0].1;
        assert!(
            first.contains("<p>HELLO</p>\n<p>FILTERED <b>WORLD</b></p>"),
            "{mode:?}: {first}"
        );
        // XSLT then a filter as the last stage, with its declared type.
        assert_eq!(answers[2].1, "3 words: one two three\n", "{mode:?}");
        let last = server.get("/last.xml").await;
        assert_eq!(last.header("content-type"), "text/plain; charset=UTF-8");
        // An href naming a directory: no resource, the XML type.
        assert_eq!(answers[4].1, "<doc>NO FILE NAMED</doc>", "{mode:?}");
        let nohref = server.get("/nohref.xml").await;
        assert!(
            nohref.header("content-type").starts_with("text/xml"),
            "{:?}",
            nohref.headers
        );
        if mode != CacheMode::Off {
            assert_ne!(server.get("/first.xml").await.cache(), "miss", "{mode:?}");
        }
        seen.push((mode, answers));
    }
    let (_, reference) = &seen[0];
    for (mode, answers) in &seen[1..] {
        assert_eq!(answers, reference, "{mode:?} differs from off");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edited_script_changes_the_output_in_every_mode() {
    let modes = MODES
        .into_iter()
        .flat_map(|m| [(m, Freshness::Watch), (m, Freshness::Check)]);
    for (mode, freshness) in modes {
        let site = FilterSite::new();
        let mut config = axle::ServeConfig::new(&site.root);
        config.cache_mode = mode;
        config.freshness = freshness;
        let server = TestServer::start_config(config, site.registry()).await;
        // Twice: the second answer may come from the hot memo.
        for _ in 0..2 {
            let before = server.get("/first.xml").await;
            assert!(
                before.text().contains("HELLO"),
                "{mode:?}: {}",
                before.text()
            );
        }
        tick().await;
        site.write(
            "shout.py",
            "import sys\nsys.stdout.write(sys.stdin.read().replace('hello', 'edited'))\n",
        );
        let after = server.get("/first.xml").await;
        assert_eq!(after.status, 200, "{mode:?}: {}", after.text());
        assert!(
            after.text().contains("<p>edited</p>"),
            "{mode:?} {freshness:?}: {}",
            after.text()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resource_that_appears_later_is_passed_to_the_filter() {
    for mode in MODES {
        let site = FilterSite::new();
        let server = site.serve(mode).await;
        let r = server.get("/resource.xml").await;
        assert_eq!(r.status, 200, "{mode:?}: {}", r.text());
        assert_eq!(r.text(), "<none/>\n", "{mode:?}");
        tick().await;
        site.write("data/late.xml", "<late/>");
        let r = server.get("/resource.xml").await;
        assert_eq!(r.text(), "<late/>", "{mode:?}");
        tick().await;
        site.write("data/late.xml", "<later/>");
        assert_eq!(server.get("/resource.xml").await.text(), "<later/>");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_filter_is_a_502_naming_the_stage_and_the_reason_but_not_its_stderr() {
    let site = FilterSite::new();
    for mode in MODES {
        let server = site.serve(mode).await;
        let r = server.get("/fail.xml").await;
        assert_eq!(r.status, 502, "{mode:?}: {}", r.text());
        let body = r.text();
        for shown in [
            "Filter failed",
            "stage 2",
            "filter application/x-fail (sh) exited with status 3",
        ] {
            assert!(body.contains(shown), "{mode:?}: {shown} not in {body}");
        }
        assert!(
            !body.contains(STDERR_MARKER),
            "{mode:?}: stderr shown: {body}"
        );
        assert!(!body.contains(site.root.to_str().unwrap()), "{body}");
        assert_eq!(r.header("cache-control"), "no-store");
        // Never cached: the same answer again, and the server still serves.
        assert_eq!(server.get("/fail.xml").await.status, 502);
        assert_eq!(server.get("/first.xml").await.status, 200);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_filter_past_its_timeout_is_a_504_at_about_the_timeout() {
    let site = FilterSite::new();
    let server = site.serve(CacheMode::All).await;
    let started = Instant::now();
    let r = server.get("/slow.xml").await;
    let took = started.elapsed();
    assert_eq!(r.status, 504, "{}", r.text());
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(5),
        "{took:?}"
    );
    let body = r.text();
    assert!(body.contains("Filter timed out"), "{body}");
    assert!(
        body.contains(
            "stage 1 (/) failed: filter application/x-slow (sleep) did not finish within 500ms"
        ),
        "{body}"
    );
    assert_eq!(server.get("/first.xml").await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_filter_writing_past_its_output_limit_is_a_502() {
    let site = FilterSite::new();
    let server = site.serve(CacheMode::Incremental).await;
    let r = server.get("/big.xml").await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(
        r.text().contains("wrote more than 1000 bytes of output"),
        "{}",
        r.text()
    );
    assert_eq!(server.get("/first.xml").await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_filter_with_every_run_taken_is_a_503_with_retry_after() {
    let site = FilterSite::new();
    // Off: nothing coalesced; two documents: no per-URL turn in the way.
    let server = site.serve(CacheMode::Off).await;
    let (a, b) = tokio::join!(server.get("/busy1.xml"), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.get("/busy2.xml").await
    });
    assert_eq!(a.status, 200, "{}", a.text());
    // The source's bytes, as they came in.
    assert!(a.text().ends_with("<doc>busy 1</doc>\n"), "{}", a.text());
    assert_eq!(b.status, 503, "{}", b.text());
    assert_eq!(b.header("retry-after"), "1");
    assert!(
        b.text().contains("filter application/x-busy (sh) is busy"),
        "{}",
        b.text()
    );
    // Afterwards, both are served.
    for path in ["/busy1.xml", "/busy2.xml"] {
        assert_eq!(server.get(path).await.status, 200, "{path}");
    }
}
