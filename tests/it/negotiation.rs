//! `negotiate = true` (issue #39): a document with a stylesheet chain is
//! the rendered page or the source as it is, by `Accept`, in every cache
//! mode, with `Vary: Accept`, ETags of their own, HEAD and 304, and the
//! hot memo never handing one client the other's representation.

use std::path::{Path, PathBuf};

use axle::CacheMode;
use reqwest::Method;

use crate::support::{MODES, Resp, TestServer, copy_dir};

const CONFIG: &str = r#"
[location."/"]
negotiate = true

[location."/opml"]
source-type = "text/x-opml"
"#;

const CHROMIUM: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
const FIREFOX: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const FEED_READER: &str = "application/atom+xml, application/rss+xml;q=0.9, application/xml;q=0.8";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/negotiation")
}

async fn server(mode: CacheMode) -> (tempfile::TempDir, PathBuf, TestServer) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_dir(&fixtures(), &root);
    let root = root.canonicalize().unwrap();
    let server = TestServer::start_with_toml(&root, CONFIG, mode).await;
    (dir, root, server)
}

async fn ask(server: &TestServer, method: Method, path: &str, accept: Option<&str>) -> Resp {
    let headers: Vec<(&str, &str)> = accept.map(|a| ("accept", a)).into_iter().collect();
    server.request(method, path, &headers).await
}

/// `Vary` names `Accept`, once.
fn varies_on_accept(r: &Resp) -> bool {
    r.headers
        .get_all("vary")
        .iter()
        .flat_map(|v| v.to_str().unwrap().split(','))
        .filter(|v| v.trim().eq_ignore_ascii_case("accept"))
        .count()
        == 1
}

fn assert_page(r: &Resp, what: &str) {
    assert_eq!(r.status, 200, "{what}: {}", r.text());
    assert!(
        r.header("content-type").starts_with("text/html"),
        "{what}: {:?}",
        r.headers
    );
    assert!(
        r.text().contains("<h1>rendered</h1>"),
        "{what}: {}",
        r.text()
    );
    assert!(
        varies_on_accept(r),
        "{what}: no Vary: Accept in {:?}",
        r.headers
    );
}

fn assert_source(r: &Resp, root: &Path, file: &str, media: &str, what: &str) {
    assert_eq!(r.status, 200, "{what}: {}", r.text());
    assert_eq!(r.header("content-type"), media, "{what}");
    assert_eq!(
        r.body,
        std::fs::read(root.join(file)).unwrap(),
        "{what}: not the exact bytes"
    );
    assert!(
        varies_on_accept(r),
        "{what}: no Vary: Accept in {:?}",
        r.headers
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn browsers_get_the_page_and_feed_readers_the_feed_in_every_mode() {
    for mode in MODES {
        let (_dir, root, s) = server(mode).await;
        let what = |who: &str| format!("{mode:?}, {who}");
        // Twice each, alternating, so the second round meets whatever the
        // first left in the caches and the hot memo.
        for round in 0..2 {
            for (accept, who) in [
                (Some(CHROMIUM), "Chromium"),
                (Some(FIREFOX), "Firefox"),
                (Some("*/*"), "*/*"),
                (None, "no Accept"),
            ] {
                let r = ask(&s, Method::GET, "/feed.xml", accept).await;
                assert_page(&r, &what(&format!("{who}, round {round}")));
            }
            let r = ask(&s, Method::GET, "/feed.xml", Some(FEED_READER)).await;
            assert_source(
                &r,
                &root,
                "feed.xml",
                "application/atom+xml",
                &what("feed reader"),
            );
            assert_eq!(r.header("x-content-type-options"), "nosniff");
        }
        let r = ask(&s, Method::GET, "/rss.xml", Some(FEED_READER)).await;
        assert_source(&r, &root, "rss.xml", "application/rss+xml", &what("RSS"));
        let r = ask(&s, Method::GET, "/sitemap.xml", Some("application/xml")).await;
        assert_source(
            &r,
            &root,
            "sitemap.xml",
            "application/xml",
            &what("a crawler"),
        );
        let r = ask(&s, Method::GET, "/sitemap.xml", Some(CHROMIUM)).await;
        assert_page(&r, &what("a sitemap in Chromium"));
        let r = ask(&s, Method::GET, "/opml/outline.xml", Some("text/x-opml")).await;
        assert_source(
            &r,
            &root,
            "opml/outline.xml",
            "text/x-opml",
            &what("source-type"),
        );
        // Asking for RSS gets an Atom document's page: the feed is not RSS.
        let r = ask(&s, Method::GET, "/feed.xml", Some("application/rss+xml")).await;
        assert_page(&r, &what("RSS asked of Atom"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn quality_values_and_ties_decide() {
    let (_dir, root, s) = server(CacheMode::Incremental).await;
    for (accept, source) in [
        ("text/html;q=0.5, application/atom+xml;q=0.5", false),
        ("text/html;q=0.5, application/atom+xml;q=0.6", true),
        ("text/html;q=0, */*", true),
        ("application/xml", true),
        ("application/xml;q=0.5, text/html;q=0.6", false),
        ("text/html;q=0, application/atom+xml", true),
        ("application/*", true),
        ("application/atom+xml;q=0, */*", false),
        ("application/xhtml+xml, application/atom+xml;q=0.9", true),
        ("text/*, application/atom+xml;q=0.9", false),
        ("garbage, ;;, application/atom+xml", true),
    ] {
        let r = ask(&s, Method::GET, "/feed.xml", Some(accept)).await;
        if source {
            assert_source(&r, &root, "feed.xml", "application/atom+xml", accept);
        } else {
            assert_page(&r, accept);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn head_etags_and_304s_belong_to_each_representation() {
    for mode in MODES {
        let (_dir, root, s) = server(mode).await;
        let page = ask(&s, Method::GET, "/feed.xml", Some(CHROMIUM)).await;
        let feed = ask(&s, Method::GET, "/feed.xml", Some(FEED_READER)).await;
        let (page_tag, feed_tag) = (page.header("etag"), feed.header("etag"));
        assert!(!page_tag.is_empty() && !feed_tag.is_empty(), "{mode:?}");
        assert_ne!(
            page_tag, feed_tag,
            "{mode:?}: one ETag for two representations"
        );

        let head = ask(&s, Method::HEAD, "/feed.xml", Some(FEED_READER)).await;
        assert_eq!(head.status, 200);
        assert!(head.body.is_empty());
        assert_eq!(head.header("content-type"), "application/atom+xml");
        assert_eq!(
            head.header("etag"),
            feed_tag,
            "{mode:?}: HEAD and GET differ"
        );
        let head = ask(&s, Method::HEAD, "/feed.xml", Some(CHROMIUM)).await;
        assert_eq!(head.header("etag"), page_tag, "{mode:?}");
        assert!(varies_on_accept(&head));

        let r = conditional(&s, FEED_READER, &feed_tag).await;
        assert_eq!(r.status, 304, "{mode:?}: the feed's own ETag");
        let r = conditional(&s, CHROMIUM, &page_tag).await;
        assert_eq!(r.status, 304, "{mode:?}: the page's own ETag");
        // The other representation's ETag does not validate this one.
        let r = conditional(&s, FEED_READER, &page_tag).await;
        assert_source(
            &r,
            &root,
            "feed.xml",
            "application/atom+xml",
            "page ETag, feed asked",
        );
        let r = conditional(&s, CHROMIUM, &feed_tag).await;
        assert_page(&r, "feed ETag, page asked");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn passthru_a_single_representation_and_other_locations_are_unchanged() {
    let (_dir, _root, s) = server(CacheMode::Incremental).await;
    // ?passthru=1 is still the source as before: text/plain for a browser.
    let r = ask(&s, Method::GET, "/feed.xml?passthru=1", Some(CHROMIUM)).await;
    assert_eq!(r.status, 200);
    assert!(varies_on_accept(&r), "{:?}", r.headers);
    assert!(
        r.header("content-type").starts_with("text/plain"),
        "{:?}",
        r.headers
    );
    // A document without a chain has one representation, whoever asks.
    let browser = ask(&s, Method::GET, "/plain.xml", Some(CHROMIUM)).await;
    let reader = ask(&s, Method::GET, "/plain.xml", Some(FEED_READER)).await;
    assert_eq!(browser.status, 200);
    assert_eq!(browser.body, reader.body);
    assert_eq!(
        browser.header("content-type"),
        reader.header("content-type")
    );

    // An XSP page's source is its logic: never sent, as for passthru.
    let r = ask(&s, Method::GET, "/secret.xml", Some("application/xml")).await;
    assert!(!r.text().contains("never shown"), "{}", r.text());
    assert!(!r.header("content-type").starts_with("application/xml"));

    // Without negotiate, a feed reader gets the page, as before.
    let (_dir2, _root2, plain) = {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        copy_dir(&fixtures(), &root);
        let s = TestServer::start(&root, CacheMode::Incremental).await;
        (dir, root, s)
    };
    let r = ask(&plain, Method::GET, "/feed.xml", Some(FEED_READER)).await;
    assert_page_without_vary(&r);
}

async fn conditional(s: &TestServer, accept: &str, tag: &str) -> Resp {
    s.request(
        Method::GET,
        "/feed.xml",
        &[("accept", accept), ("if-none-match", tag)],
    )
    .await
}

fn assert_page_without_vary(r: &Resp) {
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<h1>rendered</h1>"), "{}", r.text());
    assert!(!varies_on_accept(r), "{:?}", r.headers);
}

#[tokio::test(flavor = "multi_thread")]
async fn many_clients_at_once_never_get_each_others_representation() {
    let (_dir, root, s) = server(CacheMode::Incremental).await;
    let s = std::sync::Arc::new(s);
    let source = std::fs::read(root.join("feed.xml")).unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..64 {
        let s = std::sync::Arc::clone(&s);
        tasks.spawn(async move {
            let reader = i % 2 == 0;
            let accept = if reader { FEED_READER } else { CHROMIUM };
            (
                reader,
                ask(&s, Method::GET, "/feed.xml", Some(accept)).await,
            )
        });
    }
    while let Some(done) = tasks.join_next().await {
        let (reader, r) = done.unwrap();
        if reader {
            assert_eq!(r.body, source);
            assert_eq!(r.header("content-type"), "application/atom+xml");
        } else {
            assert!(r.text().contains("<h1>rendered</h1>"));
        }
    }
}
