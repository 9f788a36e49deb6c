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
