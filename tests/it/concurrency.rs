//! Many requests at once: single flight on a cold key, mixed documents and
//! params, and a stylesheet edited while requests are in flight.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::{MODES, TestServer, TestSite, copy_dir, tick};
use axle::CacheMode;

/// What `/three.xml` renders to.
const THREE_BODY: &str = "<html><body><p class=\"yes\">kept</p></body></html>\n";

/// Long enough for any of these tests on a slow machine; a hang fails.
const DEADLINE: Duration = Duration::from_secs(60);

/// (status, content-type, x-axle-cache, body) of one GET.
type Answer = (u16, String, String, String);

async fn fetch(client: &reqwest::Client, url: &str) -> Answer {
    let r = client.get(url).send().await.unwrap();
    let status = r.status().as_u16();
    let header = |name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let (content_type, cache) = (header("content-type"), header("x-axle-cache"));
    let body = r.text().await.unwrap();
    (status, content_type, cache, body)
}

/// GETs every url in `urls` at once; answers in the order of `urls`.
async fn fetch_all(server: &TestServer, urls: &[String]) -> Vec<Answer> {
    let client = reqwest::Client::new();
    let tasks: Vec<_> = urls
        .iter()
        .map(|path| {
            let (client, url) = (client.clone(), server.url(path));
            tokio::spawn(async move { fetch(&client, &url).await })
        })
        .collect();
    let mut answers = Vec::with_capacity(tasks.len());
    for task in tasks {
        answers.push(tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap());
    }
    answers
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_concurrent_requests_on_a_cold_key_run_each_stage_once() {
    let urls = vec!["/three.xml".to_string(); 200];
    for mode in MODES {
        let site = TestSite::new();
        let server = TestServer::start(&site.root, mode).await;
        assert_eq!(server.stage_runs(), 0);
        let answers = fetch_all(&server, &urls).await;
        for (i, (status, content_type, cache, body)) in answers.iter().enumerate() {
            assert_eq!(*status, 200, "{mode} request {i}: {body}");
            assert_eq!(body, THREE_BODY, "{mode} request {i}");
            assert_eq!(
                content_type, "text/html; charset=UTF-8",
                "{mode} request {i}"
            );
            let cache_ok = match mode {
                CacheMode::Off => cache == "miss",
                CacheMode::All => cache == "miss" || cache == "hit",
                CacheMode::Incremental => {
                    cache == "miss" || cache == "hit" || cache.starts_with("partial ")
                }
            };
            assert!(cache_ok, "{mode} request {i}: x-axle-cache {cache:?}");
        }
        let expected_runs = match mode {
            CacheMode::Off => 600,
            CacheMode::All | CacheMode::Incremental => 3,
        };
        assert_eq!(
            server.stage_runs(),
            expected_runs,
            "{mode}: three stages, each run {}",
            if mode == CacheMode::Off {
                "for every request"
            } else {
                "once"
            }
        );
        if mode != CacheMode::Off {
            let again = server.get("/three.xml").await;
            assert_eq!(again.cache(), "hit", "{mode}");
            assert_eq!(server.stage_runs(), 3, "{mode}");
        }
    }
}

fn mixed_urls() -> Vec<String> {
    let mut distinct: Vec<String> = ('a'..='j')
        .map(|who| format!("/one.xml?who={who}"))
        .collect();
    distinct.push("/two.xml".into());
    distinct.push("/three.xml".into());
    distinct.push("/one.xml".into());
    distinct.push("/text.xml".into());
    distinct
        .iter()
        .cycle()
        .take(100)
        .cloned()
        .collect::<Vec<_>>()
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_requests_for_different_documents_and_params_get_their_own_bodies() {
    let urls = mixed_urls();
    // Reference answers: each URL fetched alone, sequentially, in off mode.
    let site = TestSite::new();
    let reference = TestServer::start(&site.root, CacheMode::Off).await;
    let mut expected: BTreeMap<String, (String, String)> = BTreeMap::new();
    for url in &urls {
        if expected.contains_key(url) {
            continue;
        }
        let r = reference.get(url).await;
        assert_eq!(r.status, 200, "{url}: {}", r.text());
        expected.insert(url.clone(), (r.header("content-type"), r.text()));
    }
    assert_eq!(expected.len(), 14);
    assert!(expected["/one.xml?who=c"].1.contains("<p>for c</p>"));
    assert!(expected["/two.xml"].1.contains("<footer>base v1</footer>"));
    assert_eq!(expected["/three.xml"].1, THREE_BODY);
    drop(reference);

    for mode in MODES {
        let site = TestSite::new();
        let server = TestServer::start(&site.root, mode).await;
        // Twice: cold, then (in the caching modes) warm.
        for round in 0..2 {
            let answers = fetch_all(&server, &urls).await;
            for (url, (status, content_type, _, body)) in urls.iter().zip(&answers) {
                let what = format!("{mode} round {round} {url}");
                assert_eq!(*status, 200, "{what}: {body}");
                let (want_type, want_body) = &expected[url];
                assert_eq!(body, want_body, "{what}");
                assert_eq!(content_type, want_type, "{what}");
            }
        }
    }
}

/// Replaces `s/base.xsl` atomically (write elsewhere, then rename), as an
/// editor's safe save does, so no request can see a half-written file.
fn write_base(site: &TestSite, version: &str) {
    let tmp = site.outside().join("base.xsl.tmp");
    std::fs::write(
        &tmp,
        format!(
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\n\
             <xsl:template name=\"footer\"><footer>base {version}</footer></xsl:template>\n\
             </xsl:stylesheet>\n"
        ),
    )
    .unwrap();
    std::fs::rename(&tmp, site.root.join("s/base.xsl")).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stylesheet_edited_while_requests_are_in_flight_gives_one_version_or_the_other() {
    edits_during_requests(write_base).await;
}

async fn edits_during_requests(write: fn(&TestSite, &str)) {
    for mode in MODES {
        let site = std::sync::Arc::new(TestSite::new());
        let server = TestServer::start(&site.root, mode).await;
        let before = server.get("/two.xml").await;
        assert!(before.text().contains("<footer>base v1</footer>"));

        let writer = {
            let site = std::sync::Arc::clone(&site);
            tokio::spawn(async move {
                for i in 0..20 {
                    let version = if i % 2 == 0 { "v1" } else { "v2" };
                    let site = std::sync::Arc::clone(&site);
                    tokio::task::spawn_blocking(move || write(&site, version))
                        .await
                        .unwrap();
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
        };
        // 100 requests spread over the writer's ~200 ms.
        let client = reqwest::Client::new();
        let requests: Vec<_> = (0..100u64)
            .map(|i| {
                let (client, url) = (client.clone(), server.url("/two.xml"));
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(i * 2)).await;
                    fetch(&client, &url).await
                })
            })
            .collect();
        let mut seen = BTreeMap::new();
        for (i, task) in requests.into_iter().enumerate() {
            let (status, _, _, body) = tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap();
            assert_eq!(status, 200, "{mode} request {i}: {body}");
            let footer = if body.contains("<footer>base v1</footer>") {
                "v1"
            } else if body.contains("<footer>base v2</footer>") {
                "v2"
            } else {
                panic!("{mode} request {i}: no known footer in {body}")
            };
            assert_eq!(
                body.replace("base v2", "base v1"),
                before.text(),
                "{mode} request {i}: only the footer may differ"
            );
            *seen.entry(footer).or_insert(0) += 1;
        }
        tokio::time::timeout(DEADLINE, writer)
            .await
            .unwrap()
            .unwrap();

        tick().await;
        let after = server.get("/two.xml").await;
        assert_eq!(after.status, 200, "{mode}: {}", after.text());
        assert!(
            after.text().contains("<footer>base v2</footer>"),
            "{mode}: the final version is served (seen during edits: {seen:?}): {}",
            after.text()
        );
        assert_eq!(
            after.text().replace("base v2", "base v1"),
            before.text(),
            "{mode}"
        );
    }
}

/// The stylesheet race: libxml2 reorders a union's branches inside a
/// compiled XPath expression while evaluating it, so transforms sharing
/// one compiled instance gave wrong bytes (see `ffi::Stylesheet`, which
/// now gives each transform an instance of its own). The libxslt suite's
/// DocBook test documents through the html, xhtml and fo stylesheets at
/// once, four transform threads, `off`, 12 requests in flight, every body
/// compared with that document's render alone. With one shared instance,
/// 1 render in 4,500 to 18,000 gave a section its parent's title (the
/// unit test `concurrent_transforms_of_one_stylesheet_give_the_bytes_of_one_alone`
/// shows the same race in a fraction of a second). Long
/// (`AXLE_STRESS_ROUNDS` rounds of 180 renders, default 40; 100 rounds
/// took 5 minutes on 2 cores), so ignored: `cargo test --test it --
/// --ignored concurrent_docbook`. Needs the shared folder (`AXLE_SHARED`).
#[tokio::test(flavor = "multi_thread")]
#[ignore]
async fn concurrent_docbook_renders_match_renders_alone() {
    let shared = std::env::var_os("AXLE_SHARED").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
        std::path::PathBuf::from,
    );
    let suite = shared.join("conformance/libxslt/docbook");
    if !suite.is_dir() {
        eprintln!(
            "\n#####\n# concurrent_docbook_renders_match_renders_alone: NOTHING CHECKED,\n# no {} (set AXLE_SHARED)\n#####\n",
            suite.display()
        );
        return;
    }
    let site = TestSite::new();
    let docbook = site.root.join("docbook");
    copy_dir(&suite, &docbook);
    let mut toml = String::new();
    let mut paths = Vec::new();
    for (dir, style) in [("x", "xhtml"), ("h", "html"), ("f", "fo")] {
        copy_dir(&docbook.join("test"), &docbook.join(dir));
        toml.push_str(&format!(
            "[[location.\"/docbook/{dir}\".processor]]\ntype = \"text/xsl\"\nhref = \"/docbook/{style}/docbook.xsl\"\n"
        ));
        for entry in std::fs::read_dir(docbook.join("test")).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".xml") {
                paths.push(format!("/docbook/{dir}/{name}"));
            }
        }
    }
    let config_path = site.root.join("axle.toml");
    std::fs::write(&config_path, toml).unwrap();
    // Four transform threads: the race showed more often with more.
    let mut config = axle::ServeConfig::new(&site.root);
    config.cache_mode = CacheMode::Off;
    config.workers = 4;
    let registry = axle::Registry::default();
    let site_config = axle::site::SiteConfig::load(&config_path, registry.clone()).unwrap();
    let server = TestServer::start_full(config, registry, site_config).await;
    let client = reqwest::Client::new();
    let mut alone = BTreeMap::new();
    for path in &paths {
        let r = client.get(server.url(path)).send().await.unwrap();
        if r.status() == 200 {
            alone.insert(path.clone(), r.bytes().await.unwrap());
        }
    }
    assert!(alone.len() > 60, "only {} documents render", alone.len());
    let rounds: usize = std::env::var("AXLE_STRESS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(12));
    let mut bad = Vec::new();
    for round in 0..rounds {
        let mut tasks = Vec::new();
        for path in alone.keys().chain(alone.keys()) {
            let (client, gate, path) = (client.clone(), gate.clone(), path.clone());
            let url = server.url(&path);
            tasks.push(tokio::spawn(async move {
                let _permit = gate.acquire_owned().await.unwrap();
                let body = client.get(url).send().await.unwrap().bytes().await.unwrap();
                (path, body)
            }));
        }
        for t in tasks {
            let (path, body) = t.await.unwrap();
            if body != alone[&path] {
                bad.push(format!(
                    "round {round}: {path}: {} bytes, alone {}",
                    body.len(),
                    alone[&path].len()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} renders differ from the render alone:\n{}",
        bad.len(),
        rounds * 2 * alone.len(),
        bad.join("\n")
    );
}
