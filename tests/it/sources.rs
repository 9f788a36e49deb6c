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
            // Produced per request: nothing in front may keep it, and no
            // file dates it.
            assert_eq!(r.header("cache-control"), "no-store", "{mode}");
            assert_eq!(r.header("last-modified"), "", "{mode}");
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
    // libxml2's report: the document and line, then its message.
    assert!(
        r.text()
            .contains("/post/x.xml:2:8: Opening and ending tag mismatch"),
        "{}",
        r.text()
    );
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
    assert!(!seen.of("etag.xml").is_empty());
    assert_eq!(server.get("/two.xml").await.status, 200);
}

/// An upstream url that is a path names this same server, at the address
/// its listener was bound to (here a port the system chose): the mirror
/// of a page is that page's source, rendered through its chain.
#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_named_by_a_path_is_this_server_wherever_it_listens() {
    let site = TestSite::new();
    site.write("d/page.xml", &article("Mirrored"));
    let toml =
        "[location.\"/m\"]\nprovider = { type = \"upstream\", url = \"/d{path}?passthru=1\" }\n";
    for mode in crate::support::MODES {
        let server = server(&site, toml, mode).await;
        let mirror = server.get("/m/page.xml").await;
        assert_eq!(mirror.status, 200, "{mode:?}: {}", mirror.text());
        assert!(mirror.text().contains("Mirrored"), "{}", mirror.text());
        assert_eq!(
            mirror.body,
            server.get("/d/page.xml").await.body,
            "{mode:?}"
        );
        assert_eq!(server.get("/m/none.xml").await.status, 404, "{mode:?}");
    }
}

async fn server_for_dead(site: &TestSite, addr: std::net::SocketAddr) -> TestServer {
    server(site, &upstream_toml(addr, ""), CacheMode::All).await
}

/// A program for `command` sources: prints an article whose title is made
/// of what it was given (the query's `t`, or PATH_INFO), counts its runs
/// in `runs.log`, and behaves as `?do=` asks (fail, sleep, flood, env,
/// stdin, argv).
const PROGRAM: &str = r#"import os, sys, time
from urllib.parse import parse_qs
from xml.sax.saxutils import escape
with open("runs.log", "a") as log:
    log.write("run\n")
q = parse_qs(os.environ.get("QUERY_STRING", ""))
do = q.get("do", [""])[0]
if do == "fail":
    sys.stderr.write("SECRET-STDERR-TEXT\n")
    sys.exit(3)
if do == "sleep":
    time.sleep(float(q.get("s", ["5"])[0]))
if do == "flood":
    sys.stdout.write("<a>" + "x" * 200000 + "</a>")
    sys.exit(0)
if do == "env":
    names = " ".join(sorted(os.environ))
    fields = "".join(
        f"<{k}>{escape(os.environ.get(k, ''))}</{k}>"
        for k in ["REQUEST_METHOD", "QUERY_STRING", "PATH_INFO", "SCRIPT_NAME", "HTTP_ACCEPT_LANGUAGE", "CONTENT_TYPE", "CONTENT_LENGTH"]
    )
    sys.stdout.write(f"<env><names>{names}</names>{fields}<argv>{escape(' '.join(sys.argv[1:]))}</argv><stdin>{escape(sys.stdin.read())}</stdin></env>")
    sys.exit(0)
title = q.get("t", [os.environ.get("PATH_INFO", "")])[0]
sys.stdout.write(f"""<?xml version="1.0"?>
<?xml-stylesheet href="/s/content.xsl" type="text/xsl"?>
<?xml-stylesheet href="/s/layout.xsl" type="text/xsl"?>
<article><title>{title}</title><para>From a program.</para></article>""")
"#;

fn command_toml(extra: &str) -> String {
    format!(
        "[location.\"/live\"]\nprovider = {{ type = \"command\", argv = [\"python3\", \"program.py\", \"$HOME;ls\"], timeout = \"1s\", max-size = \"100KiB\"{extra} }}\n"
    )
}

fn runs(site: &TestSite) -> usize {
    std::fs::read_to_string(site.root.join("runs.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_source_is_rendered_through_its_chain_in_every_mode() {
    let site = TestSite::new();
    site.write("program.py", PROGRAM);
    let mut bodies = Vec::new();
    for (mode, caches) in [
        (CacheMode::Off, ["miss", "miss", "miss"]),
        (
            CacheMode::All,
            ["uncacheable", "uncacheable", "uncacheable"],
        ),
        (CacheMode::Incremental, ["miss", "partial 2/2", "miss"]),
    ] {
        let server = server(&site, &command_toml(""), mode).await;
        let before = runs(&site);
        let mut seen = Vec::new();
        for t in ["One", "One", "Two"] {
            let r = server.get(&format!("/live/page.xml?t={t}")).await;
            assert_eq!(r.status, 200, "{mode}: {}", r.text());
            assert!(r.text().contains(&format!("<h1>{t}</h1>")), "{}", r.text());
            seen.push(r.cache());
            bodies.push((t, r.body));
        }
        assert_eq!(seen, caches, "{mode}");
        assert_eq!(
            runs(&site) - before,
            3,
            "{mode}: the program runs for every request"
        );
    }
    for (t, body) in &bodies {
        let first = bodies.iter().find(|(f, _)| f == t).unwrap();
        assert_eq!(body, &first.1, "every mode gives the same bytes for {t}");
    }
    // PATH_INFO is the path below the prefix.
    let server = server(&site, &command_toml(""), CacheMode::Off).await;
    let r = server.get("/live/x.xml").await;
    assert!(r.text().contains("<h1>/x.xml</h1>"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_gets_the_request_only_through_its_environment_and_stdin() {
    let site = TestSite::new();
    site.write("program.py", PROGRAM);
    let server = server(&site, &command_toml(""), CacheMode::Incremental).await;
    let r = server
        .request(
            reqwest::Method::GET,
            "/live/a%20b/c.xml?do=env&x=%24(touch%20pwned)",
            &[("accept-language", "fr"), ("x-secret", "no")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let field = |name: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name(name))
            .and_then(|n| n.text())
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(field("REQUEST_METHOD"), "GET");
    assert_eq!(field("QUERY_STRING"), "do=env&x=%24%28touch+pwned%29");
    assert_eq!(field("PATH_INFO"), "/a b/c.xml");
    assert_eq!(field("SCRIPT_NAME"), "/live");
    assert_eq!(field("HTTP_ACCEPT_LANGUAGE"), "fr");
    // The argv is the configured one, word for word (no shell expanded it).
    assert_eq!(field("argv"), "$HOME;ls");
    assert!(
        !site.root.join("pwned").exists(),
        "nothing was run from the query"
    );
    // A cleared environment: the allow-list and the CGI variables only,
    // as `env` prints it under `sh` (an interpreter's launcher, such as a
    // version manager's shim, may add its own).
    let env = server_env(&site).await;
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k)
        .collect();
    for name in &names {
        let allowed = ["PATH", "LANG", "LC_ALL", "TZ", "PWD"].contains(name)
            || *name == axle::exec::MARKER_VARIABLE
            || name.starts_with("HTTP_")
            || axle::dynamic::CGI_VARIABLES.contains(name);
        assert!(allowed, "{name} reached the program: {env}");
    }
    assert!(names.contains(&"HTTP_ACCEPT_LANGUAGE"), "{env}");
    assert!(
        !names.contains(&"HTTP_X_SECRET"),
        "only the configured headers: {env}"
    );
    // A POST body reaches it on stdin, with its type and length.
    let r = server
        .send(
            reqwest::Method::POST,
            "/live/p.xml?do=env",
            &[("content-type", "text/plain")],
            "hello stdin",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(text.contains("<stdin>hello stdin</stdin>"), "{text}");
    assert!(
        text.contains("<CONTENT_LENGTH>11</CONTENT_LENGTH>"),
        "{text}"
    );
    assert!(
        text.contains("<CONTENT_TYPE>text/plain</CONTENT_TYPE>"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn command_failures_have_their_statuses_and_the_server_serves_on() {
    let site = TestSite::new();
    site.write("program.py", PROGRAM);
    // A 2 s timeout: time for Python to start on a busy machine, well
    // short of the 5 s sleep.
    let toml = command_toml(", max-concurrent = 1, max-queue = 0").replace("\"1s\"", "\"2s\"");
    let server = std::sync::Arc::new(server(&site, &toml, CacheMode::Incremental).await);
    let r = server.get("/live/x.xml?do=fail").await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("exited with status 3"), "{}", r.text());
    assert!(
        !r.text().contains("SECRET-STDERR-TEXT"),
        "stderr is logged, never shown"
    );
    let started = std::time::Instant::now();
    let r = server.get("/live/x.xml?do=sleep&s=5").await;
    assert_eq!(r.status, 504, "{}", r.text());
    assert!(started.elapsed() < std::time::Duration::from_millis(4500));
    let r = server.get("/live/x.xml?do=flood").await;
    assert_eq!(r.status, 502, "{}", r.text());
    // One run at a time, none waiting: a second request meanwhile is 503.
    let slow = {
        let server = std::sync::Arc::clone(&server);
        tokio::spawn(async move { server.get("/live/x.xml?do=sleep&s=0.6").await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let busy = server.get("/live/x.xml?t=busy").await;
    assert_eq!(busy.status, 503, "{}", busy.text());
    assert_eq!(busy.header("retry-after"), "1");
    assert_eq!(slow.await.unwrap().status, 200);
    let r = server.get("/live/x.xml?t=after").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(server.get("/two.xml").await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_with_a_time_to_live_runs_once_for_repeated_requests() {
    let site = TestSite::new();
    site.write("program.py", PROGRAM);
    let server = server(&site, &command_toml(", cache = \"30s\""), CacheMode::All).await;
    let first = server.get("/live/x.xml?t=Kept").await;
    assert_eq!(first.cache(), "miss");
    let second = server.get("/live/x.xml?t=Kept").await;
    assert_eq!(second.cache(), "hit");
    assert_eq!(second.body, first.body);
    assert_eq!(runs(&site), 1);
    server.get("/live/x.xml?t=Other").await;
    assert_eq!(runs(&site), 2, "another query is another answer");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_that_cannot_be_run_is_a_502_and_axle_check_says_why() {
    let site = TestSite::new();
    let toml = "[location.\"/live\"]\nprovider = { type = \"command\", argv = [\"no-such-program-axle\"] }\n\
                [filter.\"application/x-none\"]\nargv = [\"no-such-filter-axle\"]\n";
    let server = server(&site, toml, CacheMode::All).await;
    let r = server.get("/live/x.xml").await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("no-such-program-axle"), "{}", r.text());
    site.write(
        "f.xml",
        "<?xml-stylesheet type=\"application/x-none\" href=\"/\"?><a/>",
    );
    let r = server.get("/f.xml").await;
    assert_eq!(r.status, 502, "{}", r.text());
    let config = axle::site::SiteConfig::parse_in(
        toml,
        &site.root.join("axle.toml"),
        axle::Registry::default(),
        &site.root,
    )
    .unwrap();
    let problems: Vec<String> = config
        .check_references(&site.root)
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems.iter().any(|p| p.contains("provider.argv")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("filter.\"application/x-none\".argv")),
        "{problems:?}"
    );
}

#[test]
fn provider_keys_are_checked_by_type() {
    let parse = |toml: &str| {
        axle::site::SiteConfig::parse(
            toml,
            std::path::Path::new("axle.toml"),
            axle::Registry::default(),
        )
    };
    for (toml, key, why) in [
        (
            "[location.\"/p\"]\nprovider = { type = \"post\", argv = [\"x\"] }",
            "provider.argv",
            "has no key",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"ftp\" }",
            "provider.type",
            "unknown provider type",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"command\" }",
            "provider.argv",
            "needs argv",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"upstream\" }",
            "provider.url",
            "needs a url",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"upstream\", url = \"https://x/{path}\" }",
            "provider.url",
            "http",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"post\", cache = \"10s\" }",
            "provider.cache",
            "\"none\"",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"command\", argv = [\"sh\"], cache = \"validated\" }",
            "provider.cache",
            "no validator",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"post\", max-body = \"lots\" }",
            "provider.max-body",
            "",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"command\", argv = [\"sh\"], headers = [\"accept\", \"PROXY\"] }",
            "provider.headers",
            "httpoxy",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"command\", argv = [\"sh\"], headers = [\"x_real_ip\"] }",
            "provider.headers",
            "'_'",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"upstream\", url = \"/p/x{path}\" }",
            "provider.url",
            "fetch itself",
        ),
        (
            "[location.\"/\"]\nprovider = { type = \"upstream\", url = \"/d{path}\" }",
            "provider.url",
            "fetch itself",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"upstream\", url = \"//x/{path}\" }",
            "provider.url",
            "one leading /",
        ),
        (
            "[location.\"/p\"]\nprovider = { type = \"upstream\", url = \"/d{path}{path}\" }",
            "provider.url",
            "at most once",
        ),
        ("[filter.\"a/b\"]\nargv = []", "argv", "needs argv"),
        (
            "[filter.\"a/b\"]\nargv = [\"sh\"]\ncache = \"10s\"",
            "cache",
            "\"none\"",
        ),
    ] {
        let e = parse(toml).unwrap_err();
        assert!(e.key.ends_with(key), "{toml}: {e}");
        assert!(e.message.contains(why), "{toml}: {e}");
        assert!(e.line.is_some(), "{toml}: {e}");
    }
}

/// What `env` prints when run as a `command` source for a request with a
/// header that is passed and one that is not.
async fn server_env(site: &TestSite) -> String {
    // sh adds PWD to what it runs; everything else is what Axle gave it.
    let toml = "[location.\"/env\"]\nprovider = { type = \"command\", argv = [\"sh\", \"-c\", \"printf '<e><![CDATA[\\\\n'; env; printf ']]></e>'\"] }\n";
    let server = server(site, toml, CacheMode::Off).await;
    let r = server
        .request(
            reqwest::Method::GET,
            "/env/x?a=1",
            &[("accept-language", "fr"), ("x-secret", "no")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.text()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_posted_document_reads_no_file_through_xinclude() {
    let site = TestSite::new();
    let toml =
        "[location.\"/\"]\nxinclude = true\n[location.\"/post\"]\nprovider = { type = \"post\" }\n";
    let server = server(&site, toml, CacheMode::Off).await;
    let body = "<?xml-stylesheet href=\"/s/identity.xsl\" type=\"text/xsl\"?>\
                <a xmlns:xi=\"http://www.w3.org/2001/XInclude\"><xi:include href=\"/two.xml\" parse=\"text\"/></a>";
    let r = server.post("/post/x.xml", "application/xml", body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        !r.text().contains("Two stages"),
        "the include was not processed: {}",
        r.text()
    );
    // The same document as a file of the location is included.
    site.write("inc.xml", body);
    let r = server.get("/inc.xml").await;
    assert!(r.text().contains("Two stages"), "{}", r.text());
}

/// Issue #36 row 11: repeated `Cookie` and `User-Agent` lines reach a
/// program as one variable each, joined as CGI/1.1 says (`"; "` for
/// cookies, `", "` for every other field).
#[tokio::test(flavor = "multi_thread")]
async fn repeated_header_lines_reach_a_command_joined() {
    let site = TestSite::new();
    let toml = "[location.\"/h\"]\nprovider = { type = \"command\", headers = [\"cookie\", \"user-agent\", \"x-trace\"], argv = [\"sh\", \"-c\", \"printf '<e><c><![CDATA[%s]]></c><u><![CDATA[%s]]></u><t><![CDATA[%s]]></t></e>' \\\"$HTTP_COOKIE\\\" \\\"$HTTP_USER_AGENT\\\" \\\"$HTTP_X_TRACE\\\"\"] }\n";
    let server = server(&site, toml, CacheMode::Off).await;
    let r = server
        .request(
            reqwest::Method::GET,
            "/h/x",
            &[
                ("cookie", "a=1"),
                ("user-agent", "first/1.0"),
                ("cookie", "b=2"),
                ("user-agent", "second/2.0"),
                ("x-trace", "one"),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(text.contains("a=1; b=2"), "both Cookie lines: {text}");
    assert!(
        text.contains("first/1.0, second/2.0"),
        "both User-Agent lines: {text}"
    );
    assert!(text.contains("one"), "{text}");
}
