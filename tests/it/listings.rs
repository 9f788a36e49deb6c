//! Directory listings (`directories = true`): by default an HTML page in
//! the built-in look (`stylesheets/listing.xsl`), `?passthru=1` the
//! filelist; a listing names only what the server answers (never
//! `axle.toml`, private locations, `esql` databases, program files,
//! dynamic mounts, dot-files, links out of the root), and every link on
//! every listing answers 200.

use std::collections::{BTreeSet, VecDeque};

use crate::support::{TestServer, TestSite};

const TOML: &str = "[location.\"/\"]\ndirectories = true\n\
    [location.\"/secret\"]\nprivate = true\n\
    [location.\"/live\"]\nprovider = { type = \"command\", argv = [\"python3\", \"live.py\"] }\n\
    [esql.main]\nurl = \"sqlite:db/site.sqlite\"\n\
    [filter.\"application/x-shout\"]\nargv = [\"python3\", \"tools/shout.py\"]\n\
    [location.\"/plain\"]\ndirectories = false\n\
    [location.\"/indexed\"]\ndirectories = false\n";

/// A site with one of every kind of thing that is not served, beside
/// things that are.
fn site() -> TestSite {
    let site = TestSite::new();
    // The fixture site's broken documents (500 by design) are not what
    // this is about: keep a page, its stylesheet and a static file.
    for entry in std::fs::read_dir(&site.root).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if path.is_file() && !["one.xml", "style.css"].contains(&name.as_str()) {
            std::fs::remove_file(&path).unwrap();
        }
    }
    site.write("axle.toml", TOML);
    site.write("docs/a.xml", "<a/>");
    site.write("docs/b c#d.xml", "<a/>");
    site.write("docs/.hidden.xml", "<a/>");
    site.write("docs/.git/config", "x");
    site.write("docs/deep/more.xml", "<a/>");
    site.write("secret/inside.xml", "<a/>");
    site.write("live/x.xml", "<a/>");
    site.write("db/site.sqlite", "not a database");
    site.write("tools/shout.py", "print('x')\n");
    site.write("tools/readme.txt", "tools");
    site.write("plain/x.xml", "<a/>");
    site.write("indexed/index.xml", "<a/>");
    std::os::unix::fs::symlink(site.outside().join("secret.txt"), site.root.join("out.txt"))
        .unwrap();
    site
}

async fn server(site: &TestSite) -> TestServer {
    crate::sources::server(site, TOML, axle::config::CacheMode::Incremental).await
}

/// The `href` values of a page, in order.
fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(h, _)| h.replace("&amp;", "&")))
        .collect()
}

/// `href` resolved against the directory URL `base` (ends in `/`).
fn resolve(base: &str, href: &str) -> String {
    if href.starts_with('/') || href.starts_with('?') {
        return if href.starts_with('?') {
            format!("{base}{href}")
        } else {
            href.to_string()
        };
    }
    let mut parts: Vec<&str> = base.trim_end_matches('/').split('/').collect();
    let mut rest = href;
    while let Some(r) = rest.strip_prefix("../") {
        parts.pop();
        rest = r;
    }
    format!("{}/{rest}", parts.join("/"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listing_is_an_html_page_of_what_is_served_and_every_link_answers() {
    let site = site();
    let server = server(&site).await;
    let r = server.get("/").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let root = r.text();
    crate::pages::assert_own_page(&r, "listing-root", &site);
    assert!(root.contains("<h1>Index of /</h1>"), "{root}");
    for shown in [
        "href=\"docs/\"",
        "href=\"tools/\"",
        "href=\"one.xml\"",
        "href=\"indexed/\"",
        "href=\"style.css\"",
    ] {
        assert!(root.contains(shown), "{shown} missing: {root}");
    }
    for hidden in [
        "axle.toml",
        "secret/",
        "live/",
        "db/",
        "out.txt",
        "plain/",
        "href=\"../\"",
    ] {
        assert!(!root.contains(hidden), "{hidden} listed: {root}");
    }
    let docs = server.get("/docs/").await;
    assert_eq!(docs.status, 200);
    let docs = docs.text();
    assert!(docs.contains("href=\"b%20c%23d.xml\""), "{docs}");
    assert!(docs.contains(">b c#d.xml</a>"), "{docs}");
    assert!(docs.contains("href=\"../\""), "{docs}");
    assert!(!docs.contains("hidden"), "{docs}");
    assert!(!docs.contains(".git"), "{docs}");
    let tools = server.get("/tools/").await.text();
    assert!(tools.contains("readme.txt"), "{tools}");
    assert!(!tools.contains("shout.py"), "a program file: {tools}");
    let plain = server.get("/plain/").await;
    assert_eq!(plain.status, 404, "no index, no listing: not listed");
    // Every link of every listing answers 200 (listings followed).
    let mut seen = BTreeSet::new();
    let mut todo = VecDeque::from(["/".to_string()]);
    while let Some(url) = todo.pop_front() {
        if !seen.insert(url.clone()) {
            continue;
        }
        let r = server.get(&url).await;
        assert_eq!(r.status, 200, "{url}: {}", r.text());
        let is_listing = url.ends_with('/') && r.text().contains("<h1>Index of ");
        if is_listing {
            for href in hrefs(&r.text()) {
                todo.push_back(resolve(&url, &href));
            }
        }
    }
    assert!(seen.contains("/docs/deep/more.xml"), "{seen:?}");
    assert!(seen.contains("/?passthru=1"), "{seen:?}");
    assert!(seen.contains("/indexed/"), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn passthru_gives_the_filelist_with_the_same_entries() {
    let site = site();
    let server = server(&site).await;
    let r = server.get("/docs/?passthru=1").await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type").contains("xml"),
        "{}",
        r.header("content-type")
    );
    let xml = r.text();
    assert!(
        xml.contains("<filelist xmlns=\"http://axkit.org/2002/filelist\">"),
        "{xml}"
    );
    assert!(xml.contains("name=\"a.xml\""), "{xml}");
    assert!(xml.contains("<directory name=\"deep\""), "{xml}");
    assert!(!xml.contains("hidden"), "{xml}");
    let root = server.get("/?passthru=1").await.text();
    assert!(!root.contains("axle.toml"), "{root}");
    assert!(!root.contains("\"secret\""), "{root}");
    assert!(!root.contains("\"db\""), "{root}");
}
