//! The bundled site and stock stylesheets work: every sample page renders in
//! every mode with identical bytes, and the stock stylesheets do what their
//! README says.

use crate::support::{MODES, TestServer};
use axle::CacheMode;
use std::path::Path;

const PAGES: [&str; 23] = [
    "/",
    "/styles/",
    "/styles/?style=print",
    "/styles/index.xml/print",
    "/nested/",
    "/nested/inner/innermost/",
    "/nested/reset/",
    "/nested/inner/lang.xml?lang=fr",
    "/articles/",
    "/articles/xml-pipelines.xml",
    "/articles/layout-by-import.xml",
    "/trivial/",
    "/custom/numbered.xml",
    "/formats/",
    "/formats/feed.xml",
    "/formats/notes.xml",
    "/formats/latin1.xml",
    "/browser/",
    "/browser/feed.xml",
    "/browser/sitemap.xml",
    "/dynamic/",
    "/dynamic/posted.xml",
    "/dynamic/mirrored/page.xml",
];

fn samples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("samples")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_sample_page_renders_identically_in_every_mode() {
    let servers = [
        TestServer::start(&samples(), MODES[0]).await,
        TestServer::start(&samples(), MODES[1]).await,
        TestServer::start(&samples(), MODES[2]).await,
    ];
    for page in PAGES {
        let want = servers[0].get(page).await;
        assert_eq!(want.status, 200, "{page}: {}", want.text());
        assert!(!want.body.is_empty(), "{page}");
        for server in &servers[1..] {
            for _ in 0..2 {
                let got = server.get(page).await;
                assert_eq!(got.body, want.body, "{page}");
                assert_eq!(
                    got.comparable_headers(),
                    want.comparable_headers(),
                    "{page}"
                );
            }
        }
    }
    let css = servers[2].get("/css/site.css").await;
    assert_eq!(
        (css.status, css.header("content-type").as_str()),
        (200, "text/css")
    );
    let svg = servers[2].get("/images/logo.svg").await;
    assert_eq!(
        (svg.status, svg.header("content-type").as_str()),
        (200, "image/svg+xml")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_article_goes_through_content_and_layout() {
    let server = TestServer::start(&samples(), CacheMode::Incremental).await;
    let r = server.get("/articles/xml-pipelines.xml").await;
    assert_eq!(r.header("content-type"), "text/html; charset=UTF-8");
    let text = r.text();
    assert!(
        text.starts_with("<!DOCTYPE html>"),
        "{}",
        &text[..80.min(text.len())]
    );
    assert!(text.contains("A short history of XML publishing pipelines"));
    assert!(text.contains("/css/site.css"), "the layout stage ran");
    assert_eq!(
        server.get("/articles/xml-pipelines.xml").await.cache(),
        "hit"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stock_stylesheets_compile_and_transform() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let stock = Path::new(env!("CARGO_MANIFEST_DIR")).join("stylesheets");
    for name in ["identity.xsl", "strip-whitespace.xsl"] {
        std::fs::copy(stock.join(name), root.join(name)).unwrap();
    }
    let doc = "<?xml version=\"1.0\"?>\n<doc a=\"1\">\n  <!-- c --><?pi x?><b>text</b>\n</doc>";
    // Expected bytes are xsltproc's for the same stylesheet and document.
    for (name, expected) in [
        (
            "identity.xsl",
            "<doc a=\"1\">\n  <!-- c --><?pi x?><b>text</b>\n</doc>\n",
        ),
        (
            "strip-whitespace.xsl",
            "<doc a=\"1\"><!-- c --><?pi x?><b>text</b></doc>",
        ),
    ] {
        let expected = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<?xml-stylesheet href=\"{name}\" type=\"text/xsl\"?>{expected}"
        );
        let pi = format!("<?xml-stylesheet href=\"{name}\" type=\"text/xsl\"?>\n");
        std::fs::write(
            root.join("d.xml"),
            doc.replacen("\n", &format!("\n{pi}"), 1),
        )
        .unwrap();
        let server = TestServer::start(root, CacheMode::Off).await;
        let r = server.get("/d.xml").await;
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        assert_eq!(r.text(), expected, "{name}");
    }
}

/// The README's `axle render samples/articles/xml-pipelines.xml > out.html`,
/// run from a checkout (which has a `stylesheets/` of its own): it renders
/// the page the server serves.
#[tokio::test(flavor = "multi_thread")]
async fn the_readmes_render_command_works_from_a_checkout() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = crate::support::axle_ok(checkout, ["render", "samples/articles/xml-pipelines.xml"]);
    let server = TestServer::start(&samples(), CacheMode::Off).await;
    let served = server.get("/articles/xml-pipelines.xml").await;
    assert_eq!(out, served.body);
}

/// A GET of `path` whose `Accept` is `accept`.
async fn accepting(server: &TestServer, path: &str, accept: &str) -> crate::support::Resp {
    server
        .request(reqwest::Method::GET, path, &[("accept", accept)])
        .await
}

/// The dynamic sources of the bundled site, as `samples/axle.toml`
/// configures them, on an ephemeral port (the mirror's upstream is this
/// same server, named by a path: it follows the port): the program's page,
/// a POSTed document (the page's own curl line), the mirror, the filter.
#[tokio::test(flavor = "multi_thread")]
async fn the_dynamic_samples_work_as_their_pages_say() {
    let toml = std::fs::read_to_string(samples().join("axle.toml")).unwrap();
    assert!(
        !toml.contains("127.0.0.1:"),
        "samples/axle.toml names no address of its own"
    );
    let registry = axle::Registry::default();
    let site = axle::site::SiteConfig::parse_in(
        &toml,
        &samples().join("axle.toml"),
        registry.clone(),
        &samples(),
    )
    .unwrap();
    assert!(
        site.check_references(&samples()).is_empty(),
        "every program and stylesheet of the samples is there"
    );
    let mut config = axle::ServeConfig::new(samples());
    config.cache_mode = CacheMode::Incremental;
    let server = TestServer::start_full(config, registry, site).await;

    // /browser/ negotiates: a page for a browser, the feed for a feed
    // reader, as its page says.
    let chromium = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let page = accepting(&server, "/browser/feed.xml", chromium).await;
    assert_eq!(page.status, 200);
    assert!(page.header("content-type").starts_with("text/html"));
    assert!(
        page.text()
            .contains("curl -H 'Accept: application/atom+xml'"),
        "{}",
        page.text()
    );
    for (path, accept) in [
        ("browser/feed.xml", "application/atom+xml"),
        ("browser/sitemap.xml", "application/xml"),
    ] {
        let source = accepting(&server, &format!("/{path}"), accept).await;
        assert_eq!(source.header("content-type"), accept, "{path}");
        assert_eq!(
            source.body,
            std::fs::read(samples().join(path)).unwrap(),
            "{path}: not the file's bytes"
        );
    }
    let home = server.get("/").await;
    assert!(
        home.text().contains("href=\"/browser/\""),
        "linked from the index"
    );

    let index = server.get("/dynamic/").await;
    assert_eq!(index.status, 200, "{}", index.text());
    for link in [
        "/live/table?n=7",
        "/php/table?n=7",
        "/mirror/page.xml",
        "/dynamic/shout.xml",
        "/dynamic/posted.xml",
    ] {
        assert!(
            index.text().contains(&format!("href=\"{link}\"")),
            "{link} is linked"
        );
    }
    assert!(server.get("/").await.text().contains("href=\"/dynamic/\""));

    let live = server.get("/live/table?n=9").await;
    assert_eq!(live.status, 200, "{}", live.text());
    assert!(live.text().contains("9 times table"), "{}", live.text());
    assert!(live.text().contains("10 × 9 = 90"), "{}", live.text());
    assert_eq!(server.get("/live/table?n=9").await.cache(), "partial 2/2");

    // The FastCGI sample: php-cgi workers (CI installs php-cgi).
    let php = server.get("/php/table?n=9").await;
    assert_eq!(php.status, 200, "{}", php.text());
    assert!(php.text().contains("9 times table"), "{}", php.text());
    assert!(php.text().contains("10 × 9 = 90"), "{}", php.text());
    assert_eq!(server.get("/php/table?n=9").await.cache(), "partial 2/2");

    // The curl line of /dynamic/: POST the sample document.
    let body = std::fs::read(samples().join("dynamic/posted.xml")).unwrap();
    let posted = server
        .post("/post/posted.xml", "application/xml", body)
        .await;
    assert_eq!(posted.status, 200, "{}", posted.text());
    assert_eq!(
        posted.body,
        server.get("/dynamic/posted.xml").await.body,
        "a POSTed document renders as the same file does"
    );
    let broken = server
        .post("/post/x.xml", "application/xml", "<a><b></a>")
        .await;
    assert_eq!(broken.status, 400);
    assert_eq!(
        server
            .post("/post/x.xml", "text/plain", "<a/>")
            .await
            .status,
        415
    );

    let mirror = server.get("/mirror/page.xml").await;
    assert_eq!(mirror.status, 200, "{}", mirror.text());
    assert_eq!(
        mirror.body,
        server.get("/dynamic/mirrored/page.xml").await.body
    );
    assert_eq!(
        server.get("/mirror/page.xml").await.cache(),
        "hit",
        "revalidated by its ETag"
    );
    assert!(
        posted.text().contains("curl -s -X POST"),
        "the posted page carries its curl line"
    );

    let shout = server.get("/dynamic/shout.xml").await;
    assert_eq!(shout.status, 200, "{}", shout.text());
    assert!(
        shout.text().contains("<h1>A FILTER LANGUAGE</h1>"),
        "{}",
        shout.text()
    );
}

/// `axle serve --root samples` on a port the system chooses: the mirror
/// (an upstream named by a path) fetches from wherever the server listens,
/// so `/mirror/page.xml` is the mirrored page, not a 502.
#[tokio::test(flavor = "multi_thread")]
async fn the_sample_mirror_follows_the_port_the_server_listens_on() {
    let (mut child, url) = crate::support::serve_child(
        &["--listen", "127.0.0.1:0"],
        &samples(),
        std::process::Stdio::null(),
    );
    let fetch = |path: &str| {
        let url = format!("{url}{path}");
        async move {
            let r = reqwest::get(url).await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let mirror = fetch("/mirror/page.xml").await;
    let direct = fetch("/dynamic/mirrored/page.xml").await;
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(mirror.0, 200, "{}", mirror.1);
    assert_eq!(mirror, direct, "the mirror renders the mirrored page");
}

/// The guest book (`samples/xsp/guestbook.xml`) on a copy of the samples
/// (its own database): a signed POST inserts the entry and answers 303 See
/// Other to the page (`web:redirect`), not the page itself, so a reload
/// does not post again; the GET it leads to lists the new entry. A POST
/// that lacks a field inserts nothing and shows the page.
#[tokio::test(flavor = "multi_thread")]
async fn the_guestbook_redirects_after_a_post() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("samples");
    crate::support::copy_dir(&samples(), &root);
    for stale in [
        "guestbook.sqlite",
        "guestbook.sqlite-wal",
        "guestbook.sqlite-shm",
    ] {
        let _ = std::fs::remove_file(root.join("data").join(stale));
    }
    let registry = axle::Registry::default();
    let toml = std::fs::read_to_string(root.join("axle.toml")).unwrap();
    let site =
        axle::site::SiteConfig::parse_in(&toml, &root.join("axle.toml"), registry.clone(), &root)
            .unwrap();
    let server = TestServer::start_full(axle::ServeConfig::new(&root), registry, site).await;
    let form = "application/x-www-form-urlencoded";

    let signed = server
        .post("/xsp/guestbook.xml", form, "name=Ada&message=Signed+once")
        .await;
    assert_eq!(signed.status, 303, "{}", signed.text());
    assert_eq!(signed.header("location"), "/xsp/guestbook.xml#entries");
    assert_eq!(signed.header("cache-control"), "no-store");
    assert!(!signed.text().contains("Signed once"), "{}", signed.text());

    let page = server.get("/xsp/guestbook.xml").await;
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(
        page.text().matches("Signed once").count(),
        1,
        "{}",
        page.text()
    );
    assert!(
        page.text().contains("<strong>Ada</strong>"),
        "{}",
        page.text()
    );

    let unsigned = server
        .post("/xsp/guestbook.xml", form, "name=&message=Nobody")
        .await;
    assert_eq!(unsigned.status, 200, "{}", unsigned.text());
    assert!(unsigned.header("location").is_empty());
    assert!(
        !server
            .get("/xsp/guestbook.xml")
            .await
            .text()
            .contains("Nobody")
    );
}

/// The head a raw `GET path` gets from 127.0.0.1:`port` (as curl sends
/// it, keep-alive): the status line and the header lines, in order.
fn raw_head(port: &str, path: &str) -> Vec<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    while !response.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed before its head");
        response.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&response);
    let head = text.split("\r\n\r\n").next().unwrap();
    head.lines().map(str::to_string).collect()
}

/// README's "What you see" shows what `axle serve` sends today: its
/// first `console` block's response head (the status line, the header
/// names in their order, the content type, `x-axle-cache: miss`, an ETag
/// of the shape shown) is what the binary serving the samples answers, and
/// the second request is a hit. The values that follow a checkout (the
/// ETag, dates, length) are not compared.
#[test]
fn the_readme_shows_the_head_the_server_sends() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme.split("## What you see").nth(1).unwrap();
    let block = section
        .split("```console\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let mut lines = block.lines();
    let command = lines.next().unwrap();
    let url = command
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:8080/"))
        .unwrap();
    let path = url.trim_start_matches("http://127.0.0.1:8080");
    let shown: Vec<&str> = lines.by_ref().take_while(|l| !l.is_empty()).collect();
    let hit_command = lines.next().unwrap();
    assert!(hit_command.contains(url), "{hit_command}");
    assert_eq!(lines.next(), Some("x-axle-cache: hit"));

    let (mut child, base) = crate::support::serve_child(
        &["--listen", "127.0.0.1:0"],
        &samples(),
        std::process::Stdio::null(),
    );
    let port = base.rsplit(':').next().unwrap().to_string();
    let first = raw_head(&port, path);
    let second = raw_head(&port, path);
    let _ = child.kill();
    let _ = child.wait();

    let name = |line: &str| line.split(':').next().unwrap().to_string();
    assert_eq!(first[0], shown[0], "the status line");
    assert_eq!(
        first[1..].iter().map(|l| name(l)).collect::<Vec<_>>(),
        shown[1..].iter().map(|l| name(l)).collect::<Vec<_>>(),
        "README's header names and order: the server sent\n{}",
        first.join("\n")
    );
    for exact in ["content-type", "x-axle-cache", "vary"] {
        let of = |head: &[String]| {
            head.iter()
                .find(|l| name(l) == exact)
                .cloned()
                .unwrap_or_default()
        };
        let shown: Vec<String> = shown.iter().map(|l| l.to_string()).collect();
        assert_eq!(of(&first), of(&shown), "{exact}");
    }
    let etag = first.iter().find(|l| l.starts_with("etag: ")).unwrap();
    let shown_etag = shown.iter().find(|l| l.starts_with("etag: ")).unwrap();
    assert_eq!(etag.len(), shown_etag.len(), "{etag} vs {shown_etag}");
    assert!(
        second.iter().any(|l| l == "x-axle-cache: hit"),
        "{second:?}"
    );
    let mut names_hit: Vec<String> = second[1..].iter().map(|l| name(l)).collect();
    let mut names_shown: Vec<String> = shown[1..].iter().map(|l| name(l)).collect();
    names_hit.sort();
    names_shown.sort();
    assert_eq!(names_hit, names_shown, "a hit sends the same header fields");
}
