//! What error pages show (a one-line reason by default, libxslt's whole
//! report with `debug-errors`), and that the site configuration is never
//! readable through any path: as a page, a static file, a stylesheet, an
//! entity, an XInclude or a `document()`.

use crate::support::{TestServer, TestSite};

const MARKER: &str = "CONFIG-FILE-MARKER-7f3a";

async fn server(site: &TestSite, toml: &str) -> TestServer {
    let registry = axle::Registry::default();
    let config =
        axle::site::SiteConfig::parse(toml, &site.root.join("axle.toml"), registry.clone())
            .unwrap();
    TestServer::start_full(axle::ServeConfig::new(&site.root), registry, config).await
}

#[tokio::test(flavor = "multi_thread")]
async fn error_pages_give_a_one_line_reason_unless_debug_errors_is_on() {
    let site = TestSite::new();
    let quiet = server(&site, "[location.\"/\"]\n").await;
    let r = quiet.get("/recursion.xml").await;
    assert_eq!(r.status, 500);
    // What the page says (its inline style has colours such as `#0c1a28`).
    let text = r.text();
    let body = text.split_once("<main").map_or(text.as_str(), |(_, m)| m);
    assert!(body.contains("/s/recursion.xsl line 3"), "{body}");
    assert!(body.contains("infinite template recursion"), "{body}");
    for hidden in [
        "Templates:",
        "Variables:",
        "#0",
        "xsltApplySequenceConstructor",
    ] {
        assert!(!body.contains(hidden), "{hidden} shown: {body}");
    }
    let debug = server(&site, "[location.\"/\"]\ndebug-errors = true\n").await;
    let body = debug.get("/recursion.xml").await.text();
    assert!(body.contains("Templates:"), "{body}");
    assert!(body.contains("#0 name down"), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_site_configuration_is_never_readable_by_any_path() {
    let site = TestSite::new();
    site.write("axle.toml", &format!("# {MARKER}\n[location.\"/\"]\n"));
    site.write("sub/axle.toml", &format!("# {MARKER}\n"));
    std::os::unix::fs::symlink(site.root.join("axle.toml"), site.root.join("cfg.txt")).unwrap();
    let xsl = |body: &str| {
        format!(
            r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">{body}</xsl:stylesheet>"#
        )
    };
    site.write(
        "docfn.xsl",
        &xsl(r#"<xsl:template match="/"><o><xsl:copy-of select="document('axle.toml')"/><xsl:copy-of select="document('/cfg.txt')"/></o></xsl:template>"#),
    );
    site.write(
        "t1.xml",
        "<?xml-stylesheet href=\"docfn.xsl\" type=\"text/xsl\"?>\n<a/>",
    );
    site.write(
        "t2.xml",
        "<?xml-stylesheet href=\"axle.toml\" type=\"text/xsl\"?>\n<a/>",
    );
    site.write(
        "t3.xml",
        "<!DOCTYPE a [<!ENTITY e SYSTEM \"axle.toml\">]>\n<a>&e;</a>",
    );
    site.write(
        "t4.xml",
        "<a xmlns:xi=\"http://www.w3.org/2001/XInclude\"><xi:include href=\"axle.toml\" parse=\"text\"/><xi:include href=\"sub/axle.toml\" parse=\"text\"/></a>",
    );
    site.write(
        "t5.xml",
        "<?xml-stylesheet href=\"sub/axle.toml\" type=\"text/xsl\"?>\n<a/>",
    );
    let server = server(
        &site,
        "[location.\"/\"]\nxinclude = true\ndebug-errors = true\n",
    )
    .await;
    for path in [
        "/axle.toml",
        "/AXLE.TOML",
        "/sub/axle.toml",
        "/sub/../axle.toml",
        "/%61xle.toml",
        "/cfg.txt",
        "/axle.toml?passthru=1",
    ] {
        let (status, text) = server.raw(path).await;
        assert_eq!(status, 404, "{path}: {text}");
        assert!(!text.contains(MARKER), "{path}: {text}");
    }
    for path in ["/t1.xml", "/t2.xml", "/t3.xml", "/t4.xml", "/t5.xml"] {
        let r = server.get(path).await;
        assert!(!r.text().contains(MARKER), "{path}: {}", r.text());
        assert!(!r.text().contains("[location"), "{path}: {}", r.text());
    }
    // A page is still served.
    assert_eq!(server.get("/one.xml").await.status, 200);
}

#[test]
fn a_configuration_inside_the_root_under_another_name_is_refused_at_start() {
    let site = TestSite::new();
    site.write("site.toml", "[location.\"/\"]\n");
    let out = crate::support::axle()
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(&site.root)
        .arg("--config")
        .arg(site.root.join("site.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("inside the document root"), "{err}");
}

/// What the page leaves out is in the log, once per failed request.
#[tokio::test(flavor = "multi_thread")]
async fn the_whole_report_goes_to_the_log_once() {
    use std::io::Read;
    let site = TestSite::new();
    let (mut child, url) = crate::support::serve_child(
        &["--listen", "127.0.0.1:0"],
        &site.root,
        std::process::Stdio::piped(),
    );
    let page = reqwest::get(format!("{url}/recursion.xml"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!page.contains("Templates:"), "{page}");
    child.kill().unwrap();
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    child.wait().unwrap();
    assert!(log.contains("Templates:"), "{log}");
    assert!(log.contains("#0 name down"), "{log}");
    assert_eq!(log.matches("recursion.xsl line 3").count(), 1, "{log}");
}
