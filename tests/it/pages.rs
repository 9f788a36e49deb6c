//! The pages Axle makes itself, as a browser gets them: error pages (404,
//! 405, 500, 502) and directory listings have the built-in look, a link
//! home, and validate (`tidy`); a broken stylesheet's page shows the
//! expression and where; a 502 names what it tried to reach; a listing
//! names only what is served, and every link on it answers.

use std::path::Path;

use crate::support::{Resp, TestServer, TestSite, copy_dir};

/// A fixture site with `tests/fixtures/pages` over it.
fn site() -> TestSite {
    let site = TestSite::new();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pages"),
        &site.root,
    );
    site
}

/// A server for `site` with `toml` as its configuration (the default
/// cache mode).
async fn server(site: &TestSite, toml: &str) -> TestServer {
    crate::sources::server(site, toml, axle::config::CacheMode::Incremental).await
}

/// Checks `r` is one of Axle's own HTML pages: the built-in style (light
/// and dark), the link home, no absolute path of the site, valid HTML.
pub fn assert_own_page(r: &Resp, name: &str, site: &TestSite) -> String {
    let body = r.text();
    assert!(
        r.header("content-type").starts_with("text/html"),
        "{name}: {}",
        r.header("content-type")
    );
    assert!(body.starts_with("<!DOCTYPE html>\n"), "{name}: {body}");
    assert!(body.contains("<style>"), "{name}: no built-in style");
    assert!(
        body.contains("prefers-color-scheme: dark"),
        "{name}: no dark style"
    );
    assert!(body.contains("<a href=\"/\""), "{name}: no link home");
    let root = site.root.display().to_string();
    assert!(!body.contains(&root), "{name} names the root: {body}");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pages");
    std::fs::create_dir_all(&out).unwrap();
    let saved = out.join(format!("{name}.html"));
    std::fs::write(&saved, &body).unwrap();
    crate::status::validate(&saved);
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn error_pages_have_the_built_in_look_and_a_link_home() {
    let site = site();
    let server = server(&site, "[location.\"/\"]\n").await;
    let r = server.get("/nothing-here.xml").await;
    assert_eq!(r.status, 404);
    let body = assert_own_page(&r, "404", &site);
    assert!(body.contains("<h1>404 Not found</h1>"), "{body}");
    assert!(body.contains("Back to the home page"), "{body}");

    let r = server
        .request(reqwest::Method::DELETE, "/one.xml", &[])
        .await;
    assert_eq!(r.status, 405);
    assert_own_page(&r, "405", &site);

    let r = server.get("/recursion.xml").await;
    assert_eq!(r.status, 500);
    let body = assert_own_page(&r, "500", &site);
    assert!(body.contains("<pre class=\"error\">"), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_select_shows_its_expression_line_and_column_escaped() {
    let site = site();
    let server = server(&site, "[location.\"/\"]\n").await;
    let r = server.get("/bad-select.xml").await;
    assert_eq!(r.status, 500);
    let body = assert_own_page(&r, "500-select", &site);
    assert!(
        body.contains("at column 13 of the XPath expression &quot;count(//para&quot;"),
        "the expression and its column: {body}"
    );
    assert!(
        body.contains("file /s/bad-select.xsl line 5 element value-of"),
        "{body}"
    );
    let r = server.get("/bad-less.xml").await;
    assert_eq!(r.status, 500);
    let body = assert_own_page(&r, "500-less", &site);
    assert!(
        body.contains("&quot;1 &lt; &lt;b&gt;&quot;"),
        "the expression, escaped: {body}"
    );
    assert!(!body.contains("<b>"), "{body}");
    // A parse error has its column too.
    let body = server.get("/malformed.xml").await.text();
    assert!(body.contains("/malformed.xml:5:"), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_directory_without_index_or_listings_says_how_to_list_it() {
    let site = site();
    site.write("docs/a.xml", "<a/>");
    let server = server(&site, "[location.\"/\"]\n").await;
    let r = server.get("/docs/").await;
    assert_eq!(r.status, 404);
    let body = assert_own_page(&r, "404-docs", &site);
    assert!(body.contains("has no <code>index.xml</code>"), "{body}");
    assert!(
        body.contains("[location.&quot;/docs&quot;]\ndirectories = true")
            || body.contains("[location.\"/docs\"]\ndirectories = true"),
        "{body}"
    );
    assert!(!body.contains("--root"), "{body}");
    let r = server.get("/").await;
    assert_eq!(r.status, 404);
    let body = assert_own_page(&r, "404-root", &site);
    assert!(
        body.contains("The document root has no <code>index.xml</code>"),
        "{body}"
    );
    assert!(
        body.contains("<code>axle serve --root DIR</code>"),
        "{body}"
    );
    assert!(body.contains("directories = true"), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_502_names_the_upstream_url_or_the_program_it_tried() {
    let site = site();
    site.write("fail.py", "import sys\nsys.exit(3)\n");
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let toml = format!(
        "[location.\"/mirror\"]\nprovider = {{ type = \"upstream\", url = \"http://{down}/b{{path}}\", timeout = \"1s\" }}\n\
         [location.\"/live\"]\nprovider = {{ type = \"command\", argv = [\"python3\", \"fail.py\", \"--token=s3cret\"] }}\n"
    );
    let server = server(&site, &toml).await;
    let r = server.get("/mirror/page.xml?key=s3cret").await;
    assert_eq!(r.status, 502, "{}", r.text());
    let body = assert_own_page(&r, "502-upstream", &site);
    assert!(
        body.contains(&format!("upstream http://{down}/b/page.xml:")),
        "the URL it tried: {body}"
    );
    assert!(!body.contains("s3cret"), "no query: {body}");
    let r = server.get("/live/x.xml").await;
    assert_eq!(r.status, 502, "{}", r.text());
    let body = assert_own_page(&r, "502-command", &site);
    assert!(
        body.contains("command python3 exited with status 3"),
        "{body}"
    );
    assert!(!body.contains("s3cret"), "no arguments: {body}");
    assert!(!body.contains("fail.py"), "no arguments: {body}");
}
