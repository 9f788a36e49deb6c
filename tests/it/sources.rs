//! Dynamic sources over HTTP (issue #24): a POSTed document, a program's
//! output and an upstream's answer as the source of a chain, in every
//! cache mode, and every way they can fail.

use axle::CacheMode;

use crate::support::{TestServer, TestSite};

/// A server for `site` with `toml` as its configuration, in `mode`.
pub async fn server(site: &TestSite, toml: &str, mode: CacheMode) -> TestServer {
    let registry = axle::Registry::default();
    let config = axle::site::SiteConfig::parse_in(
        toml,
        &site.root.join("axle.toml"),
        registry.clone(),
        &site.root,
    )
    .unwrap();
    let mut serve = axle::ServeConfig::new(&site.root);
    serve.cache_mode = mode;
    TestServer::start_full(serve, registry, config).await
}

const POST_TOML: &str =
    "[location.\"/post\"]\nprovider = { type = \"post\", max-body = \"1KiB\" }\n";

/// A document with the two-stage chain of `two.xml`, its title `title`.
fn article(title: &str) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"/s/content.xsl\" type=\"text/xsl\"?>\n\
         <?xml-stylesheet href=\"/s/layout.xsl\" type=\"text/xsl\"?>\n\
         <article><title>{title}</title><para>Posted.</para></article>"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_posted_document_is_rendered_through_its_chain_in_every_mode() {
    let site = TestSite::new();
    let mut bodies = Vec::new();
    for (mode, caches) in [
        (CacheMode::Off, ["miss", "miss", "miss"]),
        (
            CacheMode::All,
            ["uncacheable", "uncacheable", "uncacheable"],
        ),
        (CacheMode::Incremental, ["miss", "partial 2/2", "miss"]),
    ] {
        let server = server(&site, POST_TOML, mode).await;
        let mut seen = Vec::new();
        for title in ["One", "One", "Two"] {
            let r = server
                .post("/post/any/name.xml", "application/xml", article(title))
                .await;
            assert_eq!(r.status, 200, "{mode}: {}", r.text());
            assert!(
                r.text().contains(&format!("<h1>{title}</h1>")),
                "{}",
                r.text()
            );
            seen.push(r.cache());
            bodies.push((title, r.body));
        }
        assert_eq!(seen, caches, "{mode}");
        // The hot path never answers a posted document.
        let again = server
            .post("/post/any/name.xml", "application/xml", article("One"))
            .await;
        assert_ne!(again.cache(), "hit", "{mode}");
    }
    for (title, body) in &bodies {
        let first = bodies.iter().find(|(t, _)| t == title).unwrap();
        assert_eq!(
            body, &first.1,
            "every mode gives the same bytes for {title}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_location_refuses_what_it_cannot_take() {
    let site = TestSite::new();
    let server = server(&site, POST_TOML, CacheMode::Incremental).await;
    let r = server.post("/post/x.xml", "text/plain", "<a/>").await;
    assert_eq!(r.status, 415, "{}", r.text());
    let r = server
        .post("/post/x.xml", "application/xml", "<a>\n<b></a>")
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("line 2, column"), "{}", r.text());
    let big = format!("<a>{}</a>", "x".repeat(2000));
    let r = server.post("/post/x.xml", "application/xml", big).await;
    assert_eq!(r.status, 413, "{}", r.text());
    let r = server.get("/post/x.xml").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), "POST");
    // A document that names a stylesheet that is not there is a page
    // error as for a file (500), and the server goes on serving.
    let missing = "<?xml-stylesheet href=\"/s/none.xsl\" type=\"text/xsl\"?><a/>";
    let r = server.post("/post/x.xml", "application/xml", missing).await;
    assert_eq!(r.status, 500, "{}", r.text());
    let r = server
        .post("/post/x.xml", "application/xml", article("Still"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // Outside the location, POST is what it always was.
    assert_eq!(server.get("/two.xml").await.status, 200);
}

/// A backend on a loopback port for `upstream` sources: an article with an
/// ETag (answering `If-None-Match` with 304), one with `max-age`, one
/// without validators, a slow one, a large one, a redirect to another
/// port, a 404 and a 500. It counts requests by path.
mod backend {
    use std::collections::HashMap;
    use std::net::SocketAddr;
    use std::sync::{Arc, Mutex};

    use axum::extract::{Path, State};
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::{IntoResponse, Response};

    #[derive(Clone, Default)]
    pub struct Seen(pub Arc<Mutex<HashMap<String, Vec<Option<String>>>>>);

    impl Seen {
        /// The `If-None-Match` of each request for `name`.
        pub fn of(&self, name: &str) -> Vec<Option<String>> {
            self.0
                .lock()
                .unwrap()
                .get(name)
                .cloned()
                .unwrap_or_default()
        }
    }

    pub fn article(title: &str) -> String {
        super::article(title)
    }

    async fn serve(
        State(seen): State<Seen>,
        Path(name): Path<String>,
        headers: HeaderMap,
    ) -> Response {
        let inm = headers
            .get(header::IF_NONE_MATCH)
            .map(|v| v.to_str().unwrap().to_string());
        seen.0
            .lock()
            .unwrap()
            .entry(name.clone())
            .or_default()
            .push(inm.clone());
        let xml = [(header::CONTENT_TYPE, "application/xml")];
        match name.as_str() {
            "etag.xml" if inm.as_deref() == Some("\"v1\"") => {
                (StatusCode::NOT_MODIFIED, [(header::ETAG, "\"v1\"")]).into_response()
            }
            "etag.xml" => (xml, [(header::ETAG, "\"v1\"")], article("Validated")).into_response(),
            "maxage.xml" => (
                xml,
                [(header::CACHE_CONTROL, "max-age=60")],
                article("Fresh"),
            )
                .into_response(),
            "plain.xml" => (xml, article("Plain")).into_response(),
            "slow.xml" => {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                (xml, article("Slow")).into_response()
            }
            "big.xml" => (xml, format!("<a>{}</a>", "x".repeat(300_000))).into_response(),
            "away.xml" => (
                StatusCode::FOUND,
                [(header::LOCATION, "http://127.0.0.1:9/elsewhere.xml")],
            )
                .into_response(),
            "broken.xml" => {
                let doc =
                    "<?xml-stylesheet href=\"/s/content.xsl\" type=\"text/xsl\"?>\n<a><b></a>";
                (xml, doc).into_response()
            }
            "error.xml" => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
            _ => StatusCode::NOT_FOUND.into_response(),
        }
    }

    pub async fn start() -> (SocketAddr, Seen) {
        let seen = Seen::default();
        let app = axum::Router::new()
            .route("/b/{name}", axum::routing::get(serve))
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (addr, seen)
    }
}

fn upstream_toml(addr: std::net::SocketAddr, extra: &str) -> String {
    format!(
        "[location.\"/mirror\"]\nprovider = {{ type = \"upstream\", url = \"http://{addr}/b{{path}}\", timeout = \"1s\", max-size = \"100KiB\"{extra} }}\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_document_is_revalidated_and_reused_by_its_etag() {
    let site = TestSite::new();
    let (addr, seen) = backend::start().await;
    let server = server(&site, &upstream_toml(addr, ""), CacheMode::All).await;
    let first = server.get("/mirror/etag.xml").await;
    assert_eq!(first.status, 200, "{}", first.text());
    assert!(
        first.text().contains("<h1>Validated</h1>"),
        "{}",
        first.text()
    );
    assert_eq!(first.cache(), "miss");
    let second = server.get("/mirror/etag.xml").await;
    assert_eq!(
        second.cache(),
        "hit",
        "the same bytes (a 304) reuse the response"
    );
    assert_eq!(second.body, first.body);
    assert_eq!(
        seen.of("etag.xml"),
        vec![None, Some("\"v1\"".to_string())],
        "the second fetch was conditional"
    );
    // max-age: answered from memory, the upstream asked once.
    for _ in 0..3 {
        let r = server.get("/mirror/maxage.xml").await;
        assert!(r.text().contains("<h1>Fresh</h1>"));
    }
    assert_eq!(seen.of("maxage.xml").len(), 1);
    // No validator: fetched every time, and never a hit in all mode.
    for _ in 0..2 {
        let r = server.get("/mirror/plain.xml").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.cache(), "uncacheable");
    }
    assert_eq!(seen.of("plain.xml").len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_failures_have_their_statuses_and_the_server_serves_on() {
    let site = TestSite::new();
    let (addr, seen) = backend::start().await;
    let server = server(&site, &upstream_toml(addr, ""), CacheMode::Incremental).await;
    let started = std::time::Instant::now();
    let slow = server.get("/mirror/slow.xml").await;
    assert_eq!(slow.status, 504, "{}", slow.text());
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(server.get("/mirror/big.xml").await.status, 502);
    assert_eq!(server.get("/mirror/error.xml").await.status, 502);
    assert_eq!(server.get("/mirror/nothing.xml").await.status, 404);
    let away = server.get("/mirror/away.xml").await;
    assert_eq!(
        away.status, 502,
        "a redirect to another port is not followed"
    );
    let broken = server.get("/mirror/broken.xml").await;
    assert_eq!(
        broken.status,
        502,
        "a malformed upstream document is the upstream's fault: {}",
        broken.text()
    );
    // Nothing in the request changes the host: encoded slashes and
    // authorities in the path are refused before any connection.
    for path in [
        "/mirror//evil.example/x.xml",
        "/mirror/%2F%2Fevil/x.xml",
        "/mirror/a@b/x.xml",
    ] {
        let (status, _) = server.raw(path).await;
        assert!(matches!(status, 400 | 404), "{path}: {status}");
    }
    // The upstream down: 502.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let dead = server_for_dead(&site, down).await;
    assert_eq!(dead.get("/mirror/etag.xml").await.status, 502);
    // And the server serves on.
    let ok = server.get("/mirror/etag.xml").await;
    assert_eq!(ok.status, 200);
    assert!(seen.of("etag.xml").len() >= 1);
    assert_eq!(server.get("/two.xml").await.status, 200);
}

async fn server_for_dead(site: &TestSite, addr: std::net::SocketAddr) -> TestServer {
    server(site, &upstream_toml(addr, ""), CacheMode::All).await
}
