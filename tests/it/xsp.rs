//! XSP pages (issue #28): every core element, the built-in taglibs
//! (`request`, `param`, `cookie`, `util`, `web`), the errors (page, line, tag),
//! and how the cache treats an XSP front (never stored; in incremental
//! mode the stages after it hit when it repeats itself), in every mode.

use std::path::{Path, PathBuf};

use axle::CacheMode;
use reqwest::Method;

use crate::support::{MODES, Resp, TestServer, copy_dir};

/// A copy of `tests/fixtures/xsp` (the esql and PostgreSQL tests use it
/// too).
pub fn site() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/xsp"),
        &root,
    );
    let root = root.canonicalize().unwrap();
    (dir, root)
}

/// [`site`] with `config` as its `axle.toml`, served in `mode`.
pub async fn configured(config: &str, mode: CacheMode) -> (tempfile::TempDir, PathBuf, TestServer) {
    let (dir, root) = site();
    let server = TestServer::start_with_toml(&root, config, mode).await;
    (dir, root, server)
}

async fn get(server: &TestServer, path: &str, headers: &[(&str, &str)]) -> Resp {
    server.request(Method::GET, path, headers).await
}

/// The texts of every `name` element of a response (the esql tests read
/// rows this way).
pub fn texts(r: &Resp, name: &str) -> Vec<String> {
    let text = r.text();
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    doc.descendants()
        .filter(|n| n.has_tag_name(name))
        .map(|n| n.text().unwrap_or("").to_string())
        .collect()
}

/// `s` form-encoded, for a query string.
pub fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Every `Set-Cookie` value of a response, in order.
fn set_cookies(r: &Resp) -> Vec<String> {
    r.headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

/// The body without its XML declaration.
fn body(r: &Resp) -> String {
    let text = r.text();
    match text.find("?>\n") {
        Some(at) if text.starts_with("<?xml") => text[at + 3..].trim_end().to_string(),
        _ => text.trim_end().to_string(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_core_elements_compile_to_the_expected_document() {
    let (_dir, root) = site();
    let server = TestServer::start(&root, CacheMode::Incremental).await;
    let r = get(&server, "/core.xml", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), "text/xml; charset=UTF-8");
    assert_eq!(
        body(&r),
        concat!(
            "<page xmlns:x=\"urn:x\" x:a=\"1\" b=\"{kept}\">",
            "<sum>3</sum>",
            "<text>  spaced  </text>",
            "<made k=\"v6\">body</made>",
            "<n2>named</n2>",
            "<inner/>",
            "<?note hi?>",
            "<!--c-->",
            "<x:q>ns</x:q>",
            "<yes/>",
            "<quote>it's \"q\"</quote>",
            "<spaced xml:space=\"preserve\">1 2</spaced>",
            "<tight>12</tight>",
            "</page>"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_request_and_param_taglibs_read_the_request() {
    let (_dir, root) = site();
    let server = TestServer::start(&root, CacheMode::Incremental).await;
    let r = get(
        &server,
        "/request.xml?name=Ann%20%3Cb%3E&v=1&v=2",
        &[("x-test", "header value")],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let b = body(&r);
    for expected in [
        "<p>Ann &lt;b&gt;</p>",
        "<d>fallback</d>",
        "<e>Ann &lt;b&gt;</e>",
        "<pv><xsp-request:parameter-values xmlns:xsp-request=\"http://apache.org/xsp/request/2.0\" name=\"v\"><xsp-request:value>1</xsp-request:value><xsp-request:value>2</xsp-request:value></xsp-request:parameter-values></pv>",
        "<xsp-request:name>name</xsp-request:name><xsp-request:name>v</xsp-request:name>",
        "<h>header value</h>",
        "<m>GET</m>",
        "<u>/request.xml</u>",
        "<q>name=Ann%20%3Cb%3E&amp;v=1&amp;v=2</q>",
        "<a>127.0.0.1</a>",
        "<s>127.0.0.1</s>",
        "<ax>Ann &lt;b&gt;</ax>",
        "<dyn>Ann &lt;b&gt;</dyn>",
    ] {
        assert!(b.contains(expected), "{expected} missing from {b}");
    }
    // A POSTed form's fields are parameters too.
    let posted = reqwest::Client::new()
        .post(server.url("/request.xml"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("name=Bo&v=9")
        .send()
        .await
        .unwrap();
    let posted = Resp::of(posted).await;
    assert_eq!(posted.status, 200, "{}", posted.text());
    assert!(body(&posted).contains("<p>Bo</p>"), "{}", posted.text());
    assert!(body(&posted).contains("<m>POST</m>"), "{}", posted.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cookie_taglib_reads_and_sets_cookies() {
    let (_dir, root) = site();
    let server = TestServer::start(&root, CacheMode::Incremental).await;
    let r = get(&server, "/cookie.xml", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(body(&r).contains("<seen/>"), "{}", r.text());
    let set = set_cookies(&r);
    assert_eq!(set.len(), 1, "{set:?}");
    assert!(set[0].starts_with("seen=yes; Path=/; Expires="), "{set:?}");
    assert!(set[0].ends_with(" GMT"), "{set:?}");
    assert_eq!(r.header("cache-control"), "no-store");

    // A request value is a cookie's value, encoded; never its attributes.
    let r = get(
        &server,
        "/cookie.xml?who=a%3B%20Domain%3Devil.example",
        &[("cookie", "seen=before")],
    )
    .await;
    assert!(body(&r).contains("<seen>before</seen>"), "{}", r.text());
    let set = set_cookies(&r);
    assert_eq!(set.len(), 2, "{set:?}");
    assert_eq!(
        set[1], "who=a%3B%20Domain%3Devil.example; Path=/x",
        "{set:?}"
    );

    // A cookie name from the request that is not a token: an error page
    // naming the place; the server goes on.
    let r = get(&server, "/badcookie.xml?n=a%3Bb", &[]).await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("badcookie.xml, line 5"), "{}", r.text());
    assert!(r.text().contains("is not a cookie name"), "{}", r.text());
    assert!(r.header("set-cookie").is_empty());
    assert_eq!(get(&server, "/cookie.xml", &[]).await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_util_taglib_gives_the_time_a_file_and_another_url() {
    let (_dir, root) = site();
    let server = TestServer::start(&root, CacheMode::Incremental).await;
    let r = get(&server, "/util.xml", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let b = body(&r);
    let year = chrono_year();
    assert!(b.contains(&format!("<year>{year}</year>")), "{b}");
    assert!(b.contains("<file><part>included</part></file>"), "{b}");
    assert!(b.contains("<uri><wrapped>inner</wrapped></uri>"), "{b}");
    // An included file is a dependency: an edit shows at once.
    std::fs::write(root.join("inc/part.xml"), "<part>edited</part>\n").unwrap();
    let r = get(&server, "/util.xml", &[]).await;
    assert!(body(&r).contains("<part>edited</part>"), "{}", r.text());
}

/// The current year, by the system clock.
fn chrono_year() -> i64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Civil year from days since the epoch (Howard Hinnant's algorithm).
    let days = secs.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(month <= 2)
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_name_the_page_line_and_tag_and_the_server_goes_on() {
    let (_dir, root) = site();
    let server = TestServer::start(&root, CacheMode::Incremental).await;
    for (path, expected) in [
        (
            "/logic.xml",
            "XSP page /logic.xml, line 5, &lt;xsp:logic&gt;: xsp:logic is not supported",
        ),
        (
            "/badexpr.xml",
            "XSP page /badexpr.xml, line 5, &lt;xsp:expr&gt;: `1 +* 2` is not an XPath 1.0 expression",
        ),
        (
            "/runtime.xml",
            "XSP page /runtime.xml, line 5, &lt;xsp:expr&gt;: runtime error: Variable 'nope' has not been declared",
        ),
    ] {
        let r = get(&server, path, &[]).await;
        assert_eq!(r.status, 500, "{path}: {}", r.text());
        assert!(r.text().contains(expected), "{path}: {}", r.text());
        assert_eq!(get(&server, "/core.xml", &[]).await.status, 200);
    }
}

/// An XSP front is never stored; in incremental mode the stages after it
/// are keyed by its output, so a repeated output hits them; every mode
/// gives the same bytes.
#[tokio::test(flavor = "multi_thread")]
async fn an_xsp_front_is_never_cached_and_its_repeated_output_lets_later_stages_hit() {
    let (_dir, root) = site();
    let mut bodies = Vec::new();
    for mode in MODES {
        let server = TestServer::start(&root, mode).await;
        let first = get(&server, "/chain.xml?who=A", &[]).await;
        let second = get(&server, "/chain.xml?who=A", &[]).await;
        let other = get(&server, "/chain.xml?who=B", &[]).await;
        assert_eq!(first.status, 200, "{}", first.text());
        assert!(
            first.text().contains("<h1>Hello A</h1>"),
            "{}",
            first.text()
        );
        assert!(
            other.text().contains("<h1>Hello B</h1>"),
            "{}",
            other.text()
        );
        assert_eq!(first.body, second.body);
        let expected = match mode {
            CacheMode::Off => ["miss", "miss", "miss"],
            CacheMode::All => ["uncacheable", "uncacheable", "uncacheable"],
            CacheMode::Incremental => ["miss", "partial 1/2", "miss"],
        };
        assert_eq!(
            [first.cache(), second.cache(), other.cache()],
            expected.map(String::from),
            "{mode:?}"
        );
        assert_eq!(first.header("cache-control"), "no-store", "{mode:?}");
        bodies.push((first.body.clone(), first.comparable_headers()));
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "modes differ");
}

/// Two requests at once with different parameters each get their own
/// page: an XSP render is never shared between requests.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_requests_never_share_an_xsp_render() {
    let (_dir, root) = site();
    let server = TestServer::start(&root, CacheMode::Incremental).await;
    let mut set = tokio::task::JoinSet::new();
    let server = std::sync::Arc::new(server);
    for i in 0..40 {
        let server = std::sync::Arc::clone(&server);
        set.spawn(async move {
            let r = get(&server, &format!("/chain.xml?who=n{}", i % 4), &[]).await;
            (i % 4, r)
        });
    }
    while let Some(done) = set.join_next().await {
        let (n, r) = done.unwrap();
        assert!(
            r.text().contains(&format!("<h1>Hello n{n}</h1>")),
            "{n}: {}",
            r.text()
        );
    }
}

/// A page that declares `axsp:cache-params` is cached, keyed by those
/// parameters too; `axsp:ttl` slices its key by time; neither gets a
/// `Last-Modified` or the URL memo; a page that sets cookies cannot
/// declare either.
#[tokio::test(flavor = "multi_thread")]
async fn a_page_may_declare_its_cache_params_and_ttl() {
    let (_dir, root) = site();
    for mode in [CacheMode::All, CacheMode::Incremental] {
        let server = TestServer::start(&root, mode).await;
        let first = get(&server, "/cached.xml?who=A&other=1", &[]).await;
        assert_eq!(first.status, 200, "{}", first.text());
        assert_eq!(first.cache(), "miss", "{mode:?}");
        assert!(first.header("last-modified").is_empty(), "{mode:?}");
        assert_ne!(first.header("cache-control"), "no-store");
        // The same request: the cached page, as it was.
        let again = get(&server, "/cached.xml?who=A&other=1", &[]).await;
        assert_eq!(again.cache(), "hit", "{mode:?}");
        assert_eq!(again.body, first.body, "{mode:?}");
        assert_eq!(again.header("etag"), first.header("etag"));
        // `who` is: another page.
        let other = get(&server, "/cached.xml?who=B", &[]).await;
        assert_eq!(other.cache(), "miss", "{mode:?}");
        assert!(other.text().contains("Hello B"), "{}", other.text());

        // A time-to-live of 1 s: a second later, computed again.
        let t1 = get(&server, "/ttl.xml", &[]).await;
        assert_eq!(t1.status, 200, "{}", t1.text());
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        let t2 = get(&server, "/ttl.xml", &[]).await;
        assert_eq!(t2.cache(), "miss", "{mode:?}");
        assert_ne!(t1.body, t2.body, "{mode:?}");

        let r = get(&server, "/cachedcookie.xml", &[]).await;
        assert_eq!(r.status, 500, "{}", r.text());
        assert!(
            r.text()
                .contains("a page that sets cookies is never cached"),
            "{}",
            r.text()
        );
    }
}

/// Where request parameters are not stylesheet parameters (`params =
/// "none"`), they are in no key: a cached page that reads one declares it
/// in `axsp:cache-params`, and each value is its own page; one it does not
/// declare it does not see (issue #36 row 7: else the first client's value
/// would be served to everyone).
#[tokio::test(flavor = "multi_thread")]
async fn declared_cache_params_key_the_page_where_no_other_key_holds_them() {
    let (_dir, _root, server) =
        configured("[location.\"/\"]\nparams = \"none\"\n", CacheMode::All).await;
    let a = get(&server, "/cached.xml?who=A&other=1", &[]).await;
    let a2 = get(&server, "/cached.xml?who=A&other=2", &[]).await;
    let b = get(&server, "/cached.xml?who=B&other=1", &[]).await;
    assert_eq!([a.cache(), a2.cache(), b.cache()], ["miss", "hit", "miss"]);
    // "Hello " who other epoch (whitespace between elements is dropped):
    // `other` reads as nothing, so the epoch (17…) follows who at once.
    assert!(a.text().contains("Hello A17"), "{}", a.text());
    // `other` is not declared: the page cached for who=A answers.
    assert_eq!(a2.body, a.body);
    assert!(b.text().contains("Hello B17"), "{}", b.text());
}

/// A taglib of one's own, added through the registry as the builder does
/// (`Server::builder(..).taglib(..)`), and an XSP page named by a
/// location's processor instead of a PI.
#[tokio::test(flavor = "multi_thread")]
async fn a_rust_taglib_and_a_configured_xsp_processor() {
    use axle::language::xsp::{TagCompiler, Taglib, TaskCall, TaskError, XspError, escape};

    /// `<shout:upper>` (a value in XPath) and `<shout:reverse>` (a task).
    struct Shout;
    impl Taglib for Shout {
        fn namespace(&self) -> &str {
            "urn:example:shout"
        }
        fn expression(
            &self,
            tag: roxmltree::Node<'_, '_>,
            cx: &mut TagCompiler<'_>,
        ) -> Result<Option<String>, XspError> {
            if tag.tag_name().name() != "upper" {
                return Ok(None);
            }
            let value = cx.value_expr(tag)?;
            Ok(Some(format!(
                "translate({value}, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')"
            )))
        }
        fn compile(
            &self,
            tag: roxmltree::Node<'_, '_>,
            cx: &mut TagCompiler<'_>,
        ) -> Result<(), XspError> {
            if tag.tag_name().name() == "reverse" {
                let value = cx.value_expr(tag)?;
                let result = cx.task(tag, vec![("text".into(), value)], std::sync::Arc::new(()));
                cx.copy_of(tag, &format!("{result}/node()"));
                return Ok(());
            }
            match self.expression(tag, cx)? {
                Some(e) => {
                    cx.value_of(tag, &e);
                    Ok(())
                }
                None => Err(cx.error(tag, "unknown shout tag")),
            }
        }
        fn run(&self, task: &TaskCall<'_>) -> Result<String, TaskError> {
            let reversed: String = task.arg("text").chars().rev().collect();
            Ok(format!("<rev>{}</rev>", escape(&reversed)))
        }
    }

    let (_dir, root) = site();
    std::fs::create_dir_all(root.join("plain")).unwrap();
    std::fs::write(
        root.join("plain/page.xml"),
        concat!(
            "<xsp:page xmlns:xsp=\"http://apache.org/xsp/core/v1\" xmlns:shout=\"urn:example:shout\"",
            " xmlns:xsp-request=\"http://apache.org/xsp/request/2.0\">",
            "<p><u><shout:upper>hi <xsp-request:get-parameter name=\"n\"/></shout:upper></u>",
            "<r><shout:reverse><xsp-request:get-parameter name=\"n\"/></shout:reverse></r></p>",
            "</xsp:page>\n"
        ),
    )
    .unwrap();
    let config_path = root.join("axle.toml");
    std::fs::write(
        &config_path,
        "[[location.\"/plain\".processor]]\ntype = \"application/x-xsp\"\nhref = \".\"\n",
    )
    .unwrap();
    let mut registry = axle::Registry::default();
    registry.add_taglib(std::sync::Arc::new(Shout));
    let config = axle::site::SiteConfig::load(&config_path, registry.clone()).unwrap();
    let server = TestServer::start_full(axle::ServeConfig::new(&root), registry, config).await;
    let r = get(&server, "/plain/page.xml?n=abc%3C", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(body(&r), "<p><u>HIABC&lt;</u><r><rev>&lt;cba</rev></r></p>");
}

/// Issue #36 row 7: a cacheable page cannot read what its key does not
/// hold. A read the compiler sees (a header, a cookie, the method, the
/// query string, the client's address, the context as a whole) is a
/// compile error naming page and line; one it cannot see (any other
/// XPath over the context) finds nothing there, so `Host: evil.example`
/// never reaches the page stored for everyone.
#[tokio::test(flavor = "multi_thread")]
async fn a_cacheable_page_cannot_read_what_its_key_does_not_hold() {
    let (_dir, root) = site();
    let page = |body: &str| {
        format!(
            "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\".\" type=\"application/x-xsp\"?>\n\
             <xsp:page xmlns:xsp=\"http://apache.org/xsp/core/v1\" xmlns:axsp=\"urn:axle:xsp\"\n\
             xmlns:xsp-request=\"http://apache.org/xsp/request/2.0\" axsp:cache-params=\"who\">\n\
             <page>{body}</page>\n</xsp:page>"
        )
    };
    let reads = [
        (
            "host",
            "<xsp-request:get-header name=\"host\"/>",
            "request headers",
        ),
        (
            "server",
            "<xsp-request:get-server-name/>",
            "request headers",
        ),
        ("cookie", "<xsp:expr>$cookies[1]</xsp:expr>", "cookies"),
        ("method", "<xsp-request:get-method/>", "request method"),
        (
            "addr",
            "<xsp-request:get-remote-address/>",
            "client's address",
        ),
        (
            "ctx",
            "<xsp:expr>/xsp-context/request/@query</xsp:expr>",
            "request context",
        ),
    ];
    for (name, body, _) in reads {
        std::fs::write(root.join(format!("{name}.xml")), page(body)).unwrap();
    }
    std::fs::write(
        root.join("sly.xml"),
        page("<h><xsp:expr>string(/*/*[1]/*[@name='host'])</xsp:expr></h><w><xsp-request:get-parameter name=\"who\"/></w>"),
    )
    .unwrap();
    for mode in [CacheMode::All, CacheMode::Incremental] {
        let server = TestServer::start(&root, mode).await;
        for (name, _, what) in reads {
            let r = get(&server, &format!("/{name}.xml?who=a"), &[]).await;
            assert_eq!(r.status, 500, "{name}: {}", r.text());
            let text = r.text();
            assert!(text.contains("a cacheable page"), "{name}: {text}");
            assert!(text.contains(what), "{name}: {text}");
            assert!(text.contains(&format!("{name}.xml")), "{name}: {text}");
            assert!(text.contains("line 5"), "{name}: {text}");
        }
        let evil = get(&server, "/sly.xml?who=a", &[("host", "evil.example")]).await;
        assert_eq!(evil.status, 200, "{}", evil.text());
        assert!(!evil.text().contains("evil.example"), "{}", evil.text());
        assert!(evil.text().contains("<w>a</w>"), "{}", evil.text());
        let next = get(&server, "/sly.xml?who=a", &[]).await;
        assert_eq!(next.cache(), "hit", "{mode:?}");
        assert!(!next.text().contains("evil"), "{}", next.text());
    }
}

/// Issue #36 row 8: `?passthru=1` does not show an XSP page's source (its
/// logic, its SQL) unless a location sets `passthru` itself; the page is
/// rendered instead.
#[tokio::test(flavor = "multi_thread")]
async fn passthru_shows_no_xsp_source_unless_a_location_says_so() {
    let (_dir, root) = site();
    let server = TestServer::start(&root, CacheMode::Incremental).await;
    let r = get(&server, "/request.xml?passthru=1", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!r.text().contains("xsp:page"), "{}", r.text());
    assert!(!r.text().contains("<?xml-stylesheet"), "{}", r.text());
    let plain = get(&server, "/request.xml", &[]).await;
    assert_eq!(r.header("content-type"), plain.header("content-type"));
    // A location that sets passthru itself shows it.
    let (_dir2, _root2, open) = configured(
        "[location.\"/\"]\npassthru = true\n",
        CacheMode::Incremental,
    )
    .await;
    let r = get(&open, "/request.xml?passthru=1", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("xsp:page"), "{}", r.text());
    // An ordinary document still shows its source by default.
    let files_site = crate::support::TestSite::new();
    let files = TestServer::start(&files_site.root, CacheMode::Incremental).await;
    let r = get(&files, "/two.xml?passthru=1", &[]).await;
    assert!(r.text().contains("<?xml-stylesheet"), "{}", r.text());
}

/// AxKit's WebUtils `web:redirect`: the page answers with the status and
/// `Location` (relative references resolved against the page, the page's
/// cookies kept, never stored) instead of its document, only when the
/// condition around it holds; a target off this site, a status that is
/// not a redirect, `host`, or a cacheable page that redirects are errors.
#[tokio::test(flavor = "multi_thread")]
async fn the_webutils_taglib_redirects() {
    let (_dir, root) = site();
    let page = |attributes: &str, body: &str| {
        format!(
            "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\".\" type=\"application/x-xsp\"?>\n\
             <xsp:page xmlns:xsp=\"http://apache.org/xsp/core/v1\" xmlns:axsp=\"urn:axle:xsp\"\n\
             xmlns:xsp-request=\"http://apache.org/xsp/request/2.0\"\n\
             xmlns:cookie=\"http://axkit.org/NS/xsp/cookie/v1\"\n\
             xmlns:web=\"http://axkit.org/NS/xsp/webutils/v1\"{attributes}>\n<p>{body}</p>\n</xsp:page>\n"
        )
    };
    std::fs::create_dir_all(root.join("r")).unwrap();
    std::fs::write(
        root.join("r/go.xml"),
        page(
            "",
            "<axsp:if test=\"$params[@name = 'to']\"><cookie:create name=\"went\" value=\"1\"/>\
             <web:redirect><web:uri><xsp-request:get-parameter name=\"to\"/></web:uri>\
             <web:status><xsp-request:get-parameter name=\"s\" default=\"302\"/></web:status></web:redirect></axsp:if>stayed",
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("r/host.xml"),
        page("", "<web:redirect uri=\"/\" host=\"evil.example\"/>"),
    )
    .unwrap();
    std::fs::write(
        root.join("r/cached.xml"),
        page(" axsp:ttl=\"60s\"", "<web:redirect uri=\"/\"/>"),
    )
    .unwrap();
    for mode in MODES {
        let server = TestServer::start(&root, mode).await;
        let r = get(&server, "/r/go.xml?to=next.xml%3Fa%3Db%20c&s=307", &[]).await;
        assert_eq!(r.status, 307, "{mode:?}: {}", r.text());
        assert_eq!(r.header("location"), "/r/next.xml?a=b%20c");
        assert_eq!(r.header("cache-control"), "no-store");
        assert_eq!(set_cookies(&r), ["went=1; Path=/"]);
        assert!(!r.text().contains("stayed"), "{}", r.text());
        let r = get(&server, "/r/go.xml?to=/x.xml", &[]).await;
        assert_eq!((r.status, r.header("location").as_str()), (302, "/x.xml"));
        let r = get(&server, "/r/go.xml", &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.text().contains("stayed"), "{}", r.text());
        for (path, why) in [
            ("/r/go.xml?to=http://evil.example/", "a path on this site"),
            ("/r/go.xml?to=//evil.example/", "a path on this site"),
            ("/r/go.xml?to=/x&s=200", "one of 301, 302, 303, 307, 308"),
            ("/r/host.xml", "host is not supported"),
            ("/r/cached.xml", "never cached"),
        ] {
            let r = get(&server, path, &[]).await;
            assert_eq!(r.status, 500, "{path}: {}", r.text());
            assert!(r.text().contains(why), "{path}: {}", r.text());
            assert!(r.header("location").is_empty(), "{path}");
        }
    }
}
