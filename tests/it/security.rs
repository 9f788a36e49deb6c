//! Hostile and broken inputs: every one gets its status and a readable error
//! page that leaks neither the absolute root nor anything outside it, and the
//! server keeps serving afterwards.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{MODES, Resp, TestServer, TestSite, tick};
use axle::CacheMode;

const SECRET: &str = "TOP-SECRET-CONTENT";

/// What `/one.xml` renders to (`s/upper.xsl`, no params).
const ONE_BODY: &str = "<html><body>\n<h1>ONE STAGE</h1>\n<p>for nobody</p>\n</body></html>\n";

/// The server still answers a good request correctly.
async fn assert_still_serving(server: &TestServer, after: &str) {
    let r = server.get("/one.xml").await;
    assert_eq!(r.status, 200, "/one.xml after {after}: {}", r.text());
    assert_eq!(r.text(), ONE_BODY, "/one.xml after {after}");
}

/// An Axle error page: the status, HTML, `no-store`, no cache header, the
/// status and title in the heading, and no absolute path of the site.
fn assert_error_page(r: &Resp, status: u16, title: &str, site: &TestSite, what: &str) {
    let body = r.text();
    assert_eq!(r.status, status, "{what}: {body}");
    assert_eq!(
        r.header("content-type"),
        "text/html; charset=UTF-8",
        "{what}"
    );
    assert_eq!(r.header("cache-control"), "no-store", "{what}");
    assert!(
        !r.headers.contains_key("x-axle-cache"),
        "{what}: an error has no cache status: {:?}",
        r.headers
    );
    assert!(body.starts_with("<!DOCTYPE html>\n"), "{what}: {body}");
    assert!(
        body.contains(&format!("<h1>{status} {title}</h1>")),
        "{what}: {body}"
    );
    assert!(body.ends_with("</html>\n"), "{what}: {body}");
    let root = site.root.display().to_string();
    let outside = site.outside().display().to_string();
    assert!(!body.contains(&root), "{what} names the root: {body}");
    assert!(
        !body.contains(&outside),
        "{what} names the temp dir: {body}"
    );
    assert!(!body.contains(SECRET), "{what} leaks the secret: {body}");
}

/// Checks a raw HTTP/1.1 response (from `TestServer::raw`) is Axle's 404 page.
fn assert_raw_404(status: u16, text: &str, what: &str) {
    assert_eq!(status, 404, "{what}: {text}");
    assert!(!text.contains(SECRET), "{what} leaks the secret: {text}");
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{what}: no header/body separator: {text}"));
    assert!(
        head.to_ascii_lowercase()
            .contains("\r\ncontent-type: text/html; charset=utf-8"),
        "{what}: {head}"
    );
    assert!(body.contains("<h1>404 Not found</h1>"), "{what}: {body}");
    assert!(
        body.contains("There is no document at this address."),
        "{what}: {body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn traversal_attempts_in_any_spelling_are_404_and_never_leak_the_secret() {
    let paths = [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/s/..%2f..%2fsecret.txt",
        "/s/../../secret.txt",
        "/..%5csecret.txt",
        "/one.xml%00.txt",
        "//etc/passwd",
        "/%2fetc%2fpasswd",
        "/%ff%fe",
        // absolute-form request target
        "http://localhost/../secret.txt",
    ];
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        for path in paths {
            let (status, text) = server.raw(path).await;
            assert_raw_404(status, &text, &format!("{mode} {path}"));
            assert_still_serving(&server, path).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn symlinks_leading_out_of_the_root_are_404_but_symlinks_inside_are_served() {
    let site = TestSite::new();
    let outside = site.outside();
    std::fs::write(
        outside.join("evil.xml"),
        format!("<doc><title>{SECRET}</title></doc>"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), site.root.join("leak.txt")).unwrap();
    std::os::unix::fs::symlink(outside.join("evil.xml"), site.root.join("evil.xml")).unwrap();
    std::os::unix::fs::symlink(&outside, site.root.join("up")).unwrap();
    // Control: a symlink that stays inside the root is an ordinary file.
    std::os::unix::fs::symlink(site.root.join("one.xml"), site.root.join("alias.xml")).unwrap();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        for path in ["/leak.txt", "/evil.xml", "/up", "/up/", "/up/secret.txt"] {
            let (status, text) = server.raw(path).await;
            assert_raw_404(status, &text, &format!("{mode} {path}"));
            let r = server.get(path).await;
            assert_error_page(&r, 404, "Not found", &site, &format!("{mode} GET {path}"));
            assert_still_serving(&server, path).await;
        }
        let alias = server.get("/alias.xml").await;
        assert_eq!(alias.status, 200, "{mode}: {}", alias.text());
        assert_eq!(alias.text(), ONE_BODY, "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_source_is_500_naming_the_document_and_line_without_the_root() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let r = server.get("/malformed.xml").await;
        assert_error_page(&r, 500, "Malformed document", &site, &format!("{mode}"));
        let body = r.text();
        // libxml2 notices the mismatch at `</doc>` on line 5; `<title>` opened
        // on line 4.
        assert!(
            body.contains("/malformed.xml is not well-formed XML: /malformed.xml:5:7: Opening and ending tag mismatch: title line 4 and doc"),
            "{mode}: {body}"
        );
        assert_still_serving(&server, "/malformed.xml").await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_stylesheet_is_500_naming_its_href() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let r = server.get("/missing-style.xml").await;
        assert_error_page(&r, 500, "Missing stylesheet", &site, &format!("{mode}"));
        assert!(
            r.text()
                .contains("stylesheet s/nope.xsl (named by /missing-style.xml) was not found"),
            "{mode}: {}",
            r.text()
        );
        assert_still_serving(&server, "/missing-style.xml").await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_stylesheet_is_500_naming_the_stylesheet_and_line() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let r = server.get("/broken-style.xml").await;
        assert_error_page(&r, 500, "Broken stylesheet", &site, &format!("{mode}"));
        assert!(
            r.text().contains("/s/broken.xsl cannot be used: /s/broken.xsl:2:50: Opening and ending tag mismatch: unclosed line 2 and xsl:template"),
            "{mode}: {}",
            r.text()
        );
        assert_still_serving(&server, "/broken-style.xml").await;
    }
}

/// A directory served from, then replaced by a symlink out of the root: no
/// remembered path (canonical paths are remembered while watched) lets the
/// next request through.
#[tokio::test(flavor = "multi_thread")]
async fn a_directory_swapped_for_a_symlink_out_of_the_root_is_refused_at_once() {
    let site = TestSite::new();
    let outside = site.outside().join("d");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("plain.txt"), SECRET).unwrap();
    std::fs::write(
        outside.join("doc.xml"),
        site.read("one.xml")
            .replace("s/upper.xsl", "/s/upper.xsl")
            .replace("one stage", SECRET),
    )
    .unwrap();
    for mode in MODES {
        site.write("d/plain.txt", "inside");
        site.write(
            "d/doc.xml",
            &site.read("one.xml").replace("s/upper.xsl", "/s/upper.xsl"),
        );
        let server = TestServer::start(&site.root, mode).await;
        assert_eq!(server.get("/d/plain.txt").await.text(), "inside", "{mode}");
        assert_eq!(server.get("/d/doc.xml").await.text(), ONE_BODY, "{mode}");
        assert_eq!(server.get("/d/doc.xml").await.text(), ONE_BODY, "{mode}");
        std::fs::rename(site.root.join("d"), site.root.join("d-old")).unwrap();
        std::os::unix::fs::symlink(&outside, site.root.join("d")).unwrap();
        for path in ["/d/plain.txt", "/d/doc.xml"] {
            let r = server.get(path).await;
            assert_error_page(&r, 404, "Not found", &site, &format!("{mode} GET {path}"));
            assert!(!r.text().contains(SECRET), "{mode} {path}");
        }
        assert_still_serving(&server, "/d/doc.xml").await;
        std::fs::remove_file(site.root.join("d")).unwrap();
        std::fs::remove_dir_all(site.root.join("d-old")).unwrap();
    }
}

/// External entities and `document()` reach only files inside the root.
#[tokio::test(flavor = "multi_thread")]
async fn external_entities_and_document_reach_only_files_inside_the_root() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let r = server.get("/xxe.xml").await;
        assert_eq!(r.status, 200, "{mode}: {}", r.text());
        assert_eq!(r.header("content-type"), "text/plain; charset=UTF-8");
        let body = r.text();
        // a: file:///etc/passwd, b: ../secret.txt, c: data.xml (inside: its
        // string value, with the file's trailing newline), d/e: document() of
        // /etc/passwd and ../../secret.txt.
        assert_eq!(body, "a=[] b=[] c=[data v1\n] d= e=", "{mode}");
        assert!(!body.contains("root:"), "{mode}: {body}");
        assert!(!body.contains("TOP-SECRET"), "{mode}: {body}");
        assert_still_serving(&server, "/xxe.xml").await;
    }
}

/// Inside-looking names that are symlinks to outside files are refused to
/// entities and `document()` alike.
#[tokio::test(flavor = "multi_thread")]
async fn entities_and_document_do_not_follow_symlinks_out_of_the_root() {
    let site = TestSite::new();
    let outside = site.outside();
    std::fs::write(outside.join("evil.xml"), format!("<data>{SECRET}</data>")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), site.root.join("leak.txt")).unwrap();
    std::os::unix::fs::symlink(outside.join("evil.xml"), site.root.join("evil-link.xml")).unwrap();
    site.write(
        "xxe-link.xml",
        "<?xml version=\"1.0\"?>\n<!DOCTYPE doc [\n  <!ENTITY link SYSTEM \"leak.txt\">\n]>\n\
         <?xml-stylesheet href=\"s/linkdoc.xsl\" type=\"text/xsl\"?>\n<doc><a>[&link;]</a></doc>\n",
    );
    site.write(
        "s/linkdoc.xsl",
        "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\n\
         <xsl:output method=\"text\"/>\n\
         <xsl:template match=\"/\">a=<xsl:value-of select=\"doc/a\"/> \
         f=[<xsl:value-of select=\"document('../evil-link.xml')/data\"/>] \
         g=[<xsl:value-of select=\"document('../data.xml')/data\"/>]</xsl:template>\n</xsl:stylesheet>\n",
    );
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let r = server.get("/xxe-link.xml").await;
        assert_eq!(r.status, 200, "{mode}: {}", r.text());
        assert_eq!(r.text(), "a=[] f=[] g=[data v1]", "{mode}");
        assert_still_serving(&server, "/xxe-link.xml").await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn endless_template_recursion_is_500_at_the_depth_limit_and_the_server_survives() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        // Twice, so both pool workers (or one twice) take the deep stack.
        for round in 0..2 {
            let r = server.get("/recursion.xml").await;
            let what = format!("{mode} round {round}");
            assert_error_page(&r, 500, "Transformation failed", &site, &what);
            let body = r.text();
            assert!(
                body.contains("stage 1 (/s/recursion.xsl) failed"),
                "{what}: {body}"
            );
            assert!(
                body.contains(
                    "A potential infinite template recursion was detected: it reached the \
                     limit of 3000 nested template calls"
                ),
                "{what}: {body}"
            );
            // libxslt's advice names an xsltproc option Axle does not have.
            assert!(!body.contains("--maxdepth"), "{what}: {body}");
            assert_still_serving(&server, "/recursion.xml").await;
        }
    }
}

fn files_named(dir: &Path, name: &str, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if entry.file_name() == name {
            found.push(path.clone());
        }
        if entry.file_type().unwrap().is_dir() {
            files_named(&path, name, found);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn exsl_document_cannot_write_files() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let r = server.get("/write.xml").await;
        assert_error_page(&r, 500, "Transformation failed", &site, &format!("{mode}"));
        let body = r.text();
        assert!(
            body.contains("File write for written-by-xslt.txt refused"),
            "{mode}: {body}"
        );
        let mut found = Vec::new();
        files_named(&site.outside(), "written-by-xslt.txt", &mut found);
        assert!(found.is_empty(), "{mode}: files written: {found:?}");
        assert!(
            !Path::new("written-by-xslt.txt").exists(),
            "{mode}: written into the working directory"
        );
        assert_still_serving(&server, "/write.xml").await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn methods_other_than_get_head_and_post_are_405_with_allow() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let cases = [
            (reqwest::Method::PUT, "/one.xml"),
            (reqwest::Method::DELETE, "/one.xml"),
            (reqwest::Method::PATCH, "/one.xml"),
            (reqwest::Method::OPTIONS, "/one.xml"),
            // POST carries form parameters to documents only.
            (reqwest::Method::POST, "/style.css"),
        ];
        for (method, path) in cases {
            let r = server.request(method.clone(), path, &[]).await;
            let what = format!("{mode} {method} {path}");
            assert_error_page(&r, 405, "Method not allowed", &site, &what);
            assert_eq!(r.header("allow"), "GET, HEAD, POST", "{what}");
            assert_still_serving(&server, &what).await;
        }
        assert_eq!(
            site.read("one.xml"),
            std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/site/one.xml")
            )
            .unwrap(),
            "{mode}: nothing was written"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_source_error_is_never_cached_and_the_fixed_source_renders() {
    for mode in [CacheMode::All, CacheMode::Incremental] {
        let site = TestSite::new();
        let server = TestServer::start(&site.root, mode).await;
        for round in 0..2 {
            let r = server.get("/malformed.xml").await;
            assert_error_page(
                &r,
                500,
                "Malformed document",
                &site,
                &format!("{mode} round {round}"),
            );
        }
        tick().await;
        site.write(
            "malformed.xml",
            "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"s/upper.xsl\" type=\"text/xsl\"?>\n<doc>\n  <title>fixed</title>\n</doc>\n",
        );
        let fixed = server.get("/malformed.xml").await;
        assert_eq!(fixed.status, 200, "{mode}: {}", fixed.text());
        assert_eq!(
            fixed.text(),
            "<html><body>\n<h1>FIXED</h1>\n<p>for nobody</p>\n</body></html>\n",
            "{mode}"
        );
        assert_eq!(fixed.cache(), "miss", "{mode}");
        assert_eq!(server.get("/malformed.xml").await.cache(), "hit", "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stylesheet_errors_are_never_cached_and_fixed_stylesheets_are_used() {
    for mode in [CacheMode::All, CacheMode::Incremental] {
        let site = TestSite::new();
        let server = TestServer::start(&site.root, mode).await;
        let broken = server.get("/broken-style.xml").await;
        assert_error_page(&broken, 500, "Broken stylesheet", &site, &format!("{mode}"));
        let missing = server.get("/missing-style.xml").await;
        assert_error_page(
            &missing,
            500,
            "Missing stylesheet",
            &site,
            &format!("{mode}"),
        );
        tick().await;
        site.write(
            "s/broken.xsl",
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\n\
             <xsl:output method=\"text\"/>\n\
             <xsl:template match=\"/\">repaired</xsl:template>\n</xsl:stylesheet>\n",
        );
        site.write(
            "s/nope.xsl",
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\n\
             <xsl:output method=\"text\"/>\n\
             <xsl:template match=\"/\">created</xsl:template>\n</xsl:stylesheet>\n",
        );
        let r = server.get("/broken-style.xml").await;
        assert_eq!(r.status, 200, "{mode}: {}", r.text());
        assert_eq!(r.text(), "repaired", "{mode}");
        let r = server.get("/missing-style.xml").await;
        assert_eq!(r.status, 200, "{mode}: {}", r.text());
        assert_eq!(r.text(), "created", "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nul_byte_in_a_stylesheet_param_is_400() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        for path in ["/one.xml?who=%00", "/one.xml?who=a%00b", "/one.xml?w%00o=x"] {
            let r = server.get(path).await;
            let what = format!("{mode} {path}");
            assert_error_page(&r, 400, "Bad request", &site, &what);
            assert!(
                r.text().contains("a parameter contains a NUL byte"),
                "{what}: {}",
                r.text()
            );
            assert_still_serving(&server, path).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stylesheet_pi_pointing_off_the_root_is_500_outside_the_document_root() {
    let site = TestSite::new();
    let outside = site.outside();
    std::fs::write(
        outside.join("secret.xsl"),
        format!(
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\
             <xsl:template match=\"/\">{SECRET}</xsl:template></xsl:stylesheet>"
        ),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.join("secret.xsl"), site.root.join("s/out.xsl")).unwrap();
    let hrefs = [
        ("pi-http.xml", "http://127.0.0.1:9/x.xsl"),
        ("pi-dotdot.xml", "/../secret.xsl"),
        ("pi-relative.xml", "../secret.xsl"),
        ("pi-file.xml", "file:///etc/passwd"),
        ("pi-symlink.xml", "s/out.xsl"),
    ];
    for (doc, href) in hrefs {
        site.write(
            doc,
            &format!(
                "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"{href}\" type=\"text/xsl\"?>\n<doc/>\n"
            ),
        );
    }
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        for (doc, href) in hrefs {
            let r = server.get(&format!("/{doc}")).await;
            let what = format!("{mode} {href}");
            assert_error_page(&r, 500, "Unusable stylesheet", &site, &what);
            assert!(
                r.text().contains(&format!(
                    "stylesheet {href} (named by /{doc}) is outside the document root"
                )),
                "{what}: {}",
                r.text()
            );
            assert!(!r.text().contains("root:"), "{what}");
            assert_still_serving(&server, &what).await;
        }
    }
}

/// The classic ten-entity "billion laughs" document.
fn billion_laughs() -> String {
    let mut doc =
        String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE doc [\n  <!ENTITY lol \"lol\">\n");
    for level in 1..=9 {
        let inner = if level == 1 {
            "&lol;".to_string()
        } else {
            format!("&lol{};", level - 1)
        };
        doc.push_str(&format!(
            "  <!ENTITY lol{level} \"{}\">\n",
            inner.repeat(10)
        ));
    }
    doc.push_str(
        "]>\n<?xml-stylesheet href=\"s/upper.xsl\" type=\"text/xsl\"?>\n<doc><title>&lol9;</title></doc>\n",
    );
    doc
}

#[tokio::test(flavor = "multi_thread")]
async fn billion_laughs_is_refused_quickly_and_the_server_keeps_serving() {
    let site = TestSite::new();
    site.write("lolz.xml", &billion_laughs());
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let started = Instant::now();
        let r = server.get("/lolz.xml").await;
        let took = started.elapsed();
        assert_error_page(&r, 500, "Malformed document", &site, &format!("{mode}"));
        assert!(
            r.text()
                .contains("/lolz.xml is not well-formed XML: /lolz.xml:"),
            "{mode}: {}",
            r.text()
        );
        assert!(
            r.body.len() < 4096,
            "{mode}: no expansion in the page ({} bytes)",
            r.body.len()
        );
        assert!(
            took < Duration::from_secs(5),
            "{mode}: took {took:?} to refuse"
        );
        assert_still_serving(&server, "/lolz.xml").await;
    }
}
