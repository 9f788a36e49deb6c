//! AxKit-compatible chain selection and site configuration (`axle.toml`):
//! nested locations and their processors, `axle check`, SIGHUP reloads,
//! PI selection by style and media, the style and media choosers,
//! conditional processors and their precedence over PIs, params, style
//! types, passthru, tracing, error stylesheets, directory listings, `axle:`
//! URIs, XInclude and output charsets.
//!
//! Most stages here are "tag" stylesheets (`t/NAME.xsl`, see [`tag_xsl`]):
//! each appends its name to the text of its input's root element, so a body
//! such as `<out>Curly...Moe...Larry</out>` shows which stages ran, and in
//! which order.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axle::CacheMode;
use axle::site::SiteConfig;

use crate::support::{MODES, Resp, TestServer, TestSite, axle, axle_ok, tick};

// ---------------------------------------------------------------------------
// Helpers

/// An in-process server with a site configuration (the TOML text): the
/// shared `TestServer`, plus the mode and a client with a timeout.
struct Server {
    inner: TestServer,
    mode: CacheMode,
    client: reqwest::Client,
}

impl Server {
    async fn start(root: &Path, mode: CacheMode, toml: &str) -> Server {
        let site = SiteConfig::parse(toml, Path::new("axle.toml"), axle::Registry::default())
            .unwrap_or_else(|e| panic!("bad test config: {e}\n{toml}"));
        let mut config = axle::ServeConfig::new(root);
        config.cache_mode = mode;
        let inner = TestServer::start_full(config, axle::Registry::default(), site).await;
        Server {
            inner,
            mode,
            client: client(),
        }
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Resp {
        send(&self.client, method, &self.inner.url(path), headers, body).await
    }

    async fn get(&self, path: &str) -> Resp {
        self.send(reqwest::Method::GET, path, &[], None).await
    }

    async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Resp {
        self.send(reqwest::Method::GET, path, headers, None).await
    }

    /// The body of a GET that must succeed.
    async fn body(&self, path: &str) -> String {
        self.body_with(path, &[]).await
    }

    async fn body_with(&self, path: &str, headers: &[(&str, &str)]) -> String {
        let r = self.get_with(path, headers).await;
        assert_eq!(
            r.status,
            200,
            "{} {path} {headers:?}: {}",
            self.mode,
            r.text()
        );
        r.text()
    }

    /// Entries in the output store, after moka's pending maintenance.
    async fn entries(&self) -> u64 {
        let store = self.inner.app.pipeline().store();
        store.sync().await;
        store.entry_count()
    }

    fn caches(&self) -> bool {
        self.mode != CacheMode::Off
    }

    /// Sends a raw request line (paths a client library would normalize);
    /// returns the status and the whole response text.
    async fn raw(&self, path: &str) -> (u16, String) {
        self.inner.raw(path).await
    }
}

/// Request headers of a test case.
type Headers<'a> = Vec<(&'a str, &'a str)>;

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

async fn send(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Resp {
    let mut req = client.request(method, url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.body(b.to_string());
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let body = r.bytes().await.unwrap().to_vec();
    Resp {
        status,
        headers,
        body,
    }
}

/// A stylesheet that appends `name` to the (normalized) text of its input's
/// root element: `<out>PREVIOUS...NAME</out>`, or `<out>NAME</out>` when the
/// input's root is empty.
fn tag_xsl(name: &str) -> String {
    format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" omit-xml-declaration="yes"/>
<xsl:template match="/"><out><xsl:if test="normalize-space(/*) != ''"><xsl:value-of select="normalize-space(/*)"/>...</xsl:if>{name}</out></xsl:template>
</xsl:stylesheet>
"#
    )
}

/// Writes `t/NAME.xsl` tag stylesheets.
fn tags(site: &TestSite, names: &[&str]) {
    for name in names {
        site.write(&format!("t/{name}.xsl"), &tag_xsl(name));
    }
}

/// The body a chain of tag stylesheets gives (`"Curly...Moe"`).
fn out(text: &str) -> String {
    format!("<out>{text}</out>\n")
}

/// An `<?xml-stylesheet?>` PI for `/t/NAME.xsl` with extra pseudo-attributes.
fn pi(name: &str, extra: &str) -> String {
    format!("<?xml-stylesheet type=\"text/xsl\" href=\"/t/{name}.xsl\"{extra}?>\n")
}

/// A processor entry (inline table) for `/t/NAME.xsl` with extra keys.
fn proc(name: &str, extra: &str) -> String {
    format!("{{ type = \"text/xsl\", href = \"/t/{name}.xsl\"{extra} }}")
}

/// Polls `check` until it holds or `secs` pass.
async fn eventually(secs: u64, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check()
}

/// The real `axle serve` binary with `--config`, killed (by its pid) when
/// dropped. Its log (stderr) is collected.
struct Binary {
    child: Child,
    base: String,
    log: Arc<Mutex<String>>,
    client: reqwest::Client,
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Binary {
    fn start(root: &Path, config: &Path, mode: CacheMode) -> Binary {
        let mut child = axle()
            .args(["serve", "--listen", "127.0.0.1:0", "--cache", mode.as_str()])
            .arg("--root")
            .arg(root)
            .arg("--config")
            .arg(config)
            .env("RUST_LOG", "axle=info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let mut stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "axle: serving ROOT on http://ADDR/ (cache: MODE)"
        let base = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| {
                panic!(
                    "no address in {line:?}; log: {}",
                    log.lock().unwrap().as_str()
                )
            })
            .trim_end_matches('/')
            .to_string();
        Binary {
            child,
            base,
            log,
            client: client(),
        }
    }

    async fn get(&self, path: &str) -> Resp {
        send(
            &self.client,
            reqwest::Method::GET,
            &format!("{}{path}", self.base),
            &[],
            None,
        )
        .await
    }

    fn log_count(&self, needle: &str) -> usize {
        self.log.lock().unwrap().matches(needle).count()
    }

    /// Sends SIGHUP and waits until the log says the reload was done
    /// (`reloaded`) or refused.
    async fn hup(&self, expect_success: bool) {
        let needle = if expect_success {
            "configuration reloaded"
        } else {
            "configuration not reloaded"
        };
        let before = self.log_count(needle);
        let status = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let log = Arc::clone(&self.log);
        let seen = eventually(10, || log.lock().unwrap().matches(needle).count() > before).await;
        assert!(
            seen,
            "no {needle:?} after SIGHUP; log:\n{}",
            self.log.lock().unwrap()
        );
    }
}

// ---------------------------------------------------------------------------
// 1. Configuration: nested locations, axle check, SIGHUP reload

const STOOGES: &str = r#"
[location."/"]
processor = [{ type = "text/xsl", href = "/t/Root.xsl" }]

[location."/larry"]
reset = true
processor = [{ type = "text/xsl", href = "/t/Larry.xsl" }]

[location."/larry/moe"]
processor = [{ type = "text/xsl", href = "/t/Moe.xsl" }]

[location."/larry/moe/curly"]
processor = [{ type = "text/xsl", href = "/t/Curly.xsl" }]

[location."/larry/moe/curly/shemp"]
reset = true
processor = [{ type = "text/xsl", href = "/t/Shemp.xsl" }]
"#;

/// AxKit's `02_processor_inheritance` (Larry, Moe, Curly): an inner
/// location's processors run before the inherited ones, so the innermost
/// stage runs first and each outer one appends its name after it; `reset`
/// drops everything inherited.
#[tokio::test(flavor = "multi_thread")]
async fn nested_locations_run_the_innermost_processors_first_and_reset_drops_inherited_ones() {
    let site = TestSite::new();
    tags(&site, &["Root", "Larry", "Moe", "Curly", "Shemp"]);
    for dir in [
        "",
        "larry/",
        "larry/moe/",
        "larry/moe/curly/",
        "larry/moe/curly/shemp/",
        "larryx/",
    ] {
        site.write(&format!("{dir}stooge.xml"), "<doc/>");
    }
    for mode in MODES {
        let server = Server::start(&site.root, mode, STOOGES).await;
        for (path, expected) in [
            ("/stooge.xml", "Root"),
            ("/larry/stooge.xml", "Larry"),
            ("/larry/moe/stooge.xml", "Moe...Larry"),
            ("/larry/moe/curly/stooge.xml", "Curly...Moe...Larry"),
            ("/larry/moe/curly/shemp/stooge.xml", "Shemp"),
            // Prefixes match on `/` boundaries only.
            ("/larryx/stooge.xml", "Root"),
        ] {
            let r = server.get(path).await;
            assert_eq!((r.status, r.text()), (200, out(expected)), "{mode} {path}");
            assert_eq!(r.header("content-type"), "text/xml; charset=UTF-8");
            let again = server.get(path).await;
            assert_eq!(again.body, r.body);
            if server.caches() {
                assert_eq!(again.cache(), "hit", "{mode} {path}");
            }
        }
    }
}

/// Runs `axle check --config FILE` on `text` (the root: FILE's directory,
/// which has the stylesheet `/s/upper.xsl`); returns (success, stdout,
/// stderr).
fn check(dir: &Path, name: &str, text: &str) -> (bool, String, String) {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    std::fs::create_dir_all(dir.join("s")).unwrap();
    std::fs::write(dir.join("s/upper.xsl"), "<stylesheet/>").unwrap();
    let out = axle()
        .arg("check")
        .arg("--config")
        .arg(&file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `axle check` finds the root's axle.toml without --config, and refuses a
/// configuration naming a stylesheet that is not under the root, with the
/// key and line of each.
#[test]
fn axle_check_finds_the_roots_file_and_refuses_missing_stylesheets() {
    let site = TestSite::new();
    let run = |args: &[&str]| {
        let out = axle()
            .args(["check", "--root"])
            .arg(&site.root)
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (ok, text) = run(&[]);
    assert!(!ok && text.contains("axle.toml does not exist"), "{text}");
    site.write(
        "axle.toml",
        "[location.\"/\"]\nerror-stylesheet = \"/s/upper.xsl\"\n\n\
         [[location.\"/docs\".processor]]\ntype = \"text/xsl\"\nhref = \"/s/missing.xsl\"\n\n\
         [[location.\"/docs\".processor]]\ntype = \"text/xsl\"\nhref = \"/../secret.txt\"\n",
    );
    let (ok, text) = run(&[]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("axle.toml:6: location.\"/docs\".processor[0].href"),
        "{text}"
    );
    assert!(
        text.contains("axle.toml:10: location.\"/docs\".processor[1].href"),
        "{text}"
    );
    assert!(text.contains("2 stylesheet(s)"), "{text}");
    assert!(!text.contains("error-stylesheet"), "it exists: {text}");
    site.write("s/missing.xsl", "<x/>");
    site.write(
        "axle.toml",
        "[[location.\"/docs\".processor]]\ntype = \"text/xsl\"\nhref = \"/s/missing.xsl\"\n",
    );
    let (ok, text) = run(&[]);
    assert!(ok && text.contains("is valid"), "{text}");
}

#[test]
fn axle_check_accepts_a_valid_file_and_names_the_key_and_line_of_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = check(
        dir.path(),
        "good.toml",
        r#"[location."/"]
style = "screen"
media = "screen"
order = "fallback"
params = ["a", "b"]
user-agent-styles = [{ pattern = "Lynx|w3m", style = "text" }]
media-rules = [{ user-agent = "^Noki", accept = "vnd.wap.wml", media = "handheld" }]
output-charset = "accept"

[location."/".types]
"application/x-identity" = "passthru"

[[location."/".processor]]
type = "text/xsl"
href = "/s/upper.xsl"
uri = "\\.xml$"
root = "{urn:x}feed"
"#,
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("good.toml is valid"), "{stdout}");

    // An unknown key: its name and line.
    let (ok, _, stderr) = check(
        dir.path(),
        "unknown.toml",
        "[location.\"/\"]\nstyle = \"x\"\nbogus = 1\n",
    );
    assert!(!ok);
    assert!(stderr.contains("unknown.toml:3:"), "{stderr}");
    assert!(stderr.contains("unknown field `bogus`"), "{stderr}");

    // A bad regex in a processor's `uri`.
    let (ok, _, stderr) = check(
        dir.path(),
        "regex.toml",
        "[location.\"/a\"]\nstyle = \"x\"\nprocessor = [{ type = \"text/xsl\", href = \"/a.xsl\", uri = \"a(\" }]\n",
    );
    assert!(!ok);
    assert!(
        stderr.contains("regex.toml:3: location.\"/a\".processor[0].uri: invalid regex"),
        "{stderr}"
    );

    // A bad regex in the User-Agent map (the second rule).
    let (ok, _, stderr) = check(
        dir.path(),
        "ua.toml",
        "[location.\"/\"]\nuser-agent-styles = [\n  { pattern = \"ok\", style = \"a\" },\n  { pattern = \"[\", style = \"b\" },\n]\n",
    );
    assert!(!ok);
    assert!(
        stderr.contains("ua.toml:4: location.\"/\".user-agent-styles[1].pattern: invalid regex"),
        "{stderr}"
    );

    // An unknown Language in the type map, and an unknown charset.
    let (ok, _, stderr) = check(
        dir.path(),
        "types.toml",
        "[location.\"/\"]\n\n[location.\"/\".types]\n\"text/x-mine\" = \"nope\"\n",
    );
    assert!(!ok);
    assert!(
        stderr.contains("types.toml:4: location.\"/\".types.\"text/x-mine\""),
        "{stderr}"
    );
    let (ok, _, stderr) = check(
        dir.path(),
        "charset.toml",
        "[location.\"/\"]\noutput-charset = \"klingon\"\n",
    );
    assert!(!ok);
    assert!(
        stderr.contains("charset.toml:2: location.\"/\".output-charset"),
        "{stderr}"
    );
}

/// Errors in a processor table name the full key and the line of that key:
/// in the `[[location."/".processor]]` table form the bad `uri` is on line
/// 7 (not the table header on line 4), and an unknown key inside a
/// processor is named with its path, like every other key.
#[test]
fn axle_check_names_the_full_key_of_an_error_and_the_line_it_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for (name, text, expected) in [
        (
            "table.toml",
            "[location.\"/\"]\nstyle = \"x\"\n\n[[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = \"/a.xsl\"\nuri = \"(\"\n",
            "table.toml:7: location.\"/\".processor[0].uri: invalid regex",
        ),
        (
            "unknown.toml",
            "[location.\"/\"]\n\n[[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = \"/a.xsl\"\nbogus = 2\n",
            "unknown.toml:6: location.\"/\".processor[0].bogus: ",
        ),
    ] {
        let (ok, _, stderr) = check(dir.path(), name, text);
        if ok || !stderr.contains(expected) {
            wrong.push(format!("expected {expected:?}, got: {stderr}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The real binary: a changed configuration takes effect on SIGHUP in every
/// cache mode, including settings that change the output of an unchanged
/// chain (`xinclude`); a broken file is refused and the old one keeps
/// serving.
#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_configuration_and_a_broken_file_keeps_the_old_one() {
    for mode in MODES {
        let site = TestSite::new();
        tags(&site, &["A", "B"]);
        site.write("t/copy.xsl", COPY_XSL);
        site.write("hup/doc.xml", "<doc/>");
        site.write(
            "hup/xi.xml",
            "<?xml-stylesheet type=\"text/xsl\" href=\"/t/copy.xsl\"?>\n<doc xmlns:xi=\"http://www.w3.org/2001/XInclude\"><xi:include href=\"part.xml\"/></doc>\n",
        );
        site.write("hup/part.xml", "<part>included</part>");
        let config = site.outside().join("site.toml");
        let v1 = format!("[location.\"/hup\"]\nprocessor = [{}]\n", proc("A", ""));
        std::fs::write(&config, &v1).unwrap();
        let server = Binary::start(&site.root, &config, mode);

        let a = server.get("/hup/doc.xml").await;
        assert_eq!((a.status, a.text()), (200, out("A")), "{mode}");
        let a2 = server.get("/hup/doc.xml").await;
        assert_eq!(a2.text(), out("A"));
        if mode != CacheMode::Off {
            assert_eq!(a2.cache(), "hit", "{mode}");
        }
        let untouched = "<doc xmlns:xi=\"http://www.w3.org/2001/XInclude\"><xi:include href=\"part.xml\"/></doc>\n";
        assert_eq!(server.get("/hup/xi.xml").await.text(), untouched, "{mode}");
        assert_eq!(server.get("/hup/xi.xml").await.text(), untouched, "{mode}");

        // A new processor.
        let v2 = format!("[location.\"/hup\"]\nprocessor = [{}]\n", proc("B", ""));
        std::fs::write(&config, &v2).unwrap();
        server.hup(true).await;
        let b = server.get("/hup/doc.xml").await;
        assert_eq!((b.status, b.text()), (200, out("B")), "{mode}");

        // Same chain, same files: only `xinclude` changes.
        std::fs::write(&config, format!("{v2}xinclude = true\n")).unwrap();
        server.hup(true).await;
        let included = server.get("/hup/xi.xml").await;
        assert_eq!(
            (included.status, included.text().as_str()),
            (
                200,
                "<doc xmlns:xi=\"http://www.w3.org/2001/XInclude\"><part>included</part></doc>\n"
            ),
            "{mode}"
        );

        // A broken file: refused, the previous configuration keeps serving.
        std::fs::write(&config, "[location.\"/hup\"]\nbogus = 1\n").unwrap();
        server.hup(false).await;
        assert_eq!(server.get("/hup/doc.xml").await.text(), out("B"), "{mode}");
        assert_eq!(
            server.get("/hup/xi.xml").await.text(),
            included.text(),
            "{mode}"
        );
        drop(server);
    }
}

/// A configuration file inside the root is never served, however its URL
/// is spelled.
#[tokio::test(flavor = "multi_thread")]
async fn the_configuration_file_in_the_root_is_not_served() {
    let site = TestSite::new();
    let config = site.root.join("axle.toml");
    std::fs::write(&config, "[location.\"/\"]\nstyle = \"screen\"\n").unwrap();
    let server = Binary::start(&site.root, &config, CacheMode::Incremental);
    let mut served = Vec::new();
    for path in [
        "/axle.toml",
        "/%61xle.toml",
        "/axle%2Etoml",
        "/axle.toml/",
        "//axle.toml",
        "/./axle.toml",
    ] {
        let r = server.get(path).await;
        if r.status != 404 {
            served.push(format!("{path} -> {} {:?}", r.status, r.text()));
        }
    }
    assert!(served.is_empty(), "{}", served.join("\n"));
    assert_eq!(server.get("/one.xml").await.status, 200);
}

/// A location's settings cover every spelling of a path under it: a
/// percent-encoded letter, an empty or a `.` segment reach the same file, so
/// they must get the same processors and the same `passthru = false`.
#[tokio::test(flavor = "multi_thread")]
async fn location_settings_apply_to_every_spelling_of_a_path() {
    let site = TestSite::new();
    tags(&site, &["Root", "Larry", "Moe", "Curly", "Shemp", "pi"]);
    site.write("larry/moe/curly/stooge.xml", "<doc/>");
    let source = format!("{}<doc/>\n", pi("pi", ""));
    site.write("sealed/doc.xml", &source);
    let config = format!(
        "{STOOGES}\n[location.\"/sealed\"]\nreset = true\npassthru = false\norder = \"instead\"\nprocessor = [{}]\n",
        proc("Shemp", "")
    );
    let cases = [
        ("/larry/moe/curly/stooge.xml", out("Curly...Moe...Larry")),
        ("/larry/moe/curl%79/stooge.xml", out("Curly...Moe...Larry")),
        ("/%6Carry/moe/curly/stooge.xml", out("Curly...Moe...Larry")),
        ("//larry/moe/curly/stooge.xml", out("Curly...Moe...Larry")),
        ("/./larry/moe/curly/stooge.xml", out("Curly...Moe...Larry")),
        ("/sealed/doc.xml?passthru=1", out("Shemp")),
        ("/seal%65d/doc.xml?passthru=1", out("Shemp")),
        ("//sealed/doc.xml?passthru=1", out("Shemp")),
        ("/./sealed/doc.xml?passthru=1", out("Shemp")),
    ];
    for mode in MODES {
        let server = Server::start(&site.root, mode, &config).await;
        let mut wrong = Vec::new();
        for (path, expected) in &cases {
            // The configured output, or a refusal; never another chain.
            let (status, text) = server.raw(path).await;
            let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            if !(status == 404 || (status == 200 && body == expected)) {
                wrong.push(format!("{path} -> {status} {body:?}"));
            }
        }
        assert!(wrong.is_empty(), "{mode}:\n{}", wrong.join("\n"));
    }
}

// ---------------------------------------------------------------------------
// 2. PI selection

/// A document with a titled preferred PI (`screen`) before a persistent
/// one, two titled alternates, and a CSS PI for browsers.
fn styles_doc() -> String {
    format!(
        "<?xml version=\"1.0\"?>\n{}{}{}{}<?xml-stylesheet type=\"text/css\" href=\"/style.css\"?>\n<doc/>\n",
        pi("screen", " title=\"screen\""),
        pi("persistent", ""),
        pi("print", " title=\"print\" alternate=\"yes\""),
        pi("handheld", " title=\"handheld\" alternate=\"yes\""),
    )
}

fn styles_site() -> TestSite {
    let site = TestSite::new();
    tags(
        &site,
        &[
            "persistent",
            "screen",
            "print",
            "handheld",
            "plain",
            "multi",
            "every",
        ],
    );
    site.write("sel/doc.xml", &styles_doc());
    site
}

#[tokio::test(flavor = "multi_thread")]
async fn the_style_picks_titled_pis_after_the_persistent_ones() {
    let site = styles_site();
    for mode in MODES {
        let server = Server::start(&site.root, mode, "").await;
        for (query, expected) in [
            ("", "persistent...screen"),
            ("?style=print", "persistent...print"),
            ("?style=PRINT", "persistent...print"),
            ("?style=Handheld", "persistent...handheld"),
            ("?style=screen", "persistent...screen"),
            ("?style=", "persistent...screen"),
            ("?style=nope", "persistent"),
        ] {
            let path = format!("/sel/doc.xml{query}");
            assert_eq!(server.body(&path).await, out(expected), "{mode} {query}");
        }
    }
}

/// AxKit's guard: a `?style=` that selects nothing gives the persistent
/// chain, is computed every time (`miss`) and adds no cache entry, so
/// random styles cannot fill the cache.
#[tokio::test(flavor = "multi_thread")]
async fn a_style_that_selects_nothing_is_never_cached() {
    let site = styles_site();
    for mode in MODES {
        let server = Server::start(&site.root, mode, "").await;
        assert_eq!(
            server.body("/sel/doc.xml").await,
            out("persistent...screen")
        );
        assert_eq!(
            server.body("/sel/doc.xml?style=print").await,
            out("persistent...print")
        );
        let before = server.entries().await;
        let mut seen = Vec::new();
        for style in ["nope", "zzz", "r4nd0m", "nope", "zzz"] {
            let r = server.get(&format!("/sel/doc.xml?style={style}")).await;
            assert_eq!(
                (r.status, r.text()),
                (200, out("persistent")),
                "{mode} {style}"
            );
            seen.push((format!("?style={style}"), r.cache()));
        }
        for cookie in ["axkit_preferred_style=bogus", "axkit_preferred_style=bogus"] {
            let r = server.get_with("/sel/doc.xml", &[("cookie", cookie)]).await;
            assert_eq!(r.text(), out("persistent"));
            seen.push((cookie.to_string(), r.cache()));
        }
        let after = server.entries().await;
        let all_miss: Vec<(String, String)> = seen
            .iter()
            .map(|(what, _)| (what.clone(), "miss".to_string()))
            .collect();
        assert_eq!(
            (seen, after - before),
            (all_miss, 0),
            "{mode}: (x-axle-cache of each request, new cache entries)"
        );
        // Real styles are still cached.
        let again = server.get("/sel/doc.xml?style=print").await;
        if server.caches() {
            assert_eq!(again.cache(), "hit", "{mode}");
        }
    }
}

const MEDIA_RULES: &str = r#"
[location."/"]
media-rules = [
  { user-agent = "^Printer", media = "print" },
  { user-agent = "^Braille", media = "braille" },
  { user-agent = "^(Noki|Eric)", accept = "vnd.wap.wml", media = "handheld" },
]
"#;

/// `media` filters PIs (a PI without `media` is for `screen`; a list
/// matches any of its media; `all` matches every media); when no PI is for
/// the chosen media, the `screen` PIs are used.
#[tokio::test(flavor = "multi_thread")]
async fn media_filters_pis_and_falls_back_to_screen() {
    let site = styles_site();
    site.write(
        "media/doc.xml",
        &format!(
            "{}{}{}{}{}<doc/>\n",
            pi("plain", ""),
            pi("screen", " media=\"screen\""),
            pi("handheld", " media=\"handheld\""),
            pi("print", " media=\"print\""),
            pi("multi", " media=\"tv, handheld\""),
        ),
    );
    site.write(
        "media/all.xml",
        &format!(
            "{}{}<doc/>\n",
            pi("every", " media=\"print, all\""),
            pi("screen", " media=\"screen\""),
        ),
    );
    for mode in MODES {
        let server = Server::start(&site.root, mode, MEDIA_RULES).await;
        for (headers, doc, expected) in [
            (vec![], "doc", "plain...screen"),
            (vec![("user-agent", "Printer/1.0")], "doc", "print"),
            (
                vec![("user-agent", "Nokia6230/2.0")],
                "doc",
                "handheld...multi",
            ),
            (
                vec![("accept", "text/vnd.wap.wml")],
                "doc",
                "handheld...multi",
            ),
            // Nothing for braille: the screen PIs.
            (vec![("user-agent", "Braille/1")], "doc", "plain...screen"),
            (vec![], "all", "every...screen"),
            (vec![("user-agent", "Printer/1.0")], "all", "every"),
            (vec![("user-agent", "Braille/1")], "all", "every"),
        ] {
            let path = format!("/media/{doc}.xml");
            assert_eq!(
                server.body_with(&path, &headers).await,
                out(expected),
                "{mode} {doc} {headers:?}"
            );
        }
    }
}

/// Only PIs before the root element count (also when the prolog is read by
/// libxml2, as for an ISO-8859-1 document).
#[tokio::test(flavor = "multi_thread")]
async fn pis_after_the_root_element_are_ignored() {
    let site = TestSite::new();
    tags(&site, &["before", "inside", "after"]);
    site.write(
        "late/doc.xml",
        &format!(
            "<?xml version=\"1.0\"?>\n{}<doc>{}</doc>\n{}",
            pi("before", ""),
            pi("inside", "").trim_end(),
            pi("after", ""),
        ),
    );
    let mut latin1 = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n".to_vec();
    latin1.extend_from_slice(pi("before", "").as_bytes());
    latin1.extend_from_slice(b"<doc>caf\xE9");
    latin1.extend_from_slice(pi("inside", "").trim_end().as_bytes());
    latin1.extend_from_slice(b"</doc>\n");
    latin1.extend_from_slice(pi("after", "").as_bytes());
    std::fs::write(site.root.join("late/latin1.xml"), &latin1).unwrap();
    let only_after = format!("<doc/>\n{}", pi("after", ""));
    site.write("late/none.xml", &only_after);
    for mode in MODES {
        let server = Server::start(&site.root, mode, "").await;
        assert_eq!(server.body("/late/doc.xml").await, out("before"), "{mode}");
        assert_eq!(
            server.body("/late/latin1.xml").await,
            out("café...before"),
            "{mode}"
        );
        let none = server.get("/late/none.xml").await;
        assert_eq!(
            (none.status, none.text(), none.cache()),
            (200, only_after.clone(), "none".to_string()),
            "{mode}"
        );
        assert_eq!(none.header("content-type"), "text/xml");
    }
}

// ---------------------------------------------------------------------------
// 3. Style and media choosers

const CHOOSERS: &str = r#"
[location."/"]
user-agent-styles = [{ pattern = "Lynx|w3m", style = "print" }]

[location."/custom"]
style-key = "look"
style-cookie = "theme"

[location."/def"]
style = "handheld"

[location."/defmedia"]
media = "handheld"

[location."/off"]
style-key = ""
style-cookie = ""
path-info = false
suffix = false
"#;

#[tokio::test(flavor = "multi_thread")]
async fn styles_are_chosen_by_query_cookie_path_info_suffix_user_agent_and_default() {
    let site = styles_site();
    for dir in ["c", "custom", "def", "off"] {
        site.write(&format!("{dir}/doc.xml"), &styles_doc());
    }
    let default = out("persistent...screen");
    let print = out("persistent...print");
    let handheld = out("persistent...handheld");
    for mode in MODES {
        let server = Server::start(&site.root, mode, CHOOSERS).await;
        let cases: Vec<(&str, Headers, &String)> = vec![
            ("/c/doc.xml", vec![], &default),
            ("/c/doc.xml?style=print", vec![], &print),
            (
                "/c/doc.xml",
                vec![("cookie", "axkit_preferred_style=print")],
                &print,
            ),
            (
                "/c/doc.xml",
                vec![("cookie", "a=1; axkit_preferred_style=handheld; b=2")],
                &handheld,
            ),
            ("/c/doc.xml/print", vec![], &print),
            ("/c/doc.xml.print", vec![], &print),
            ("/c/doc.xml/HANDHELD", vec![], &handheld),
            ("/c/doc.xml", vec![("user-agent", "Lynx/2.8.9")], &print),
            // The client's own choice beats the User-Agent map, and the URL
            // beats the query string, which beats the cookie.
            (
                "/c/doc.xml?style=handheld",
                vec![("user-agent", "Lynx/2.8.9")],
                &handheld,
            ),
            ("/c/doc.xml/handheld?style=print", vec![], &handheld),
            (
                "/c/doc.xml?style=print",
                vec![("cookie", "axkit_preferred_style=handheld")],
                &print,
            ),
            // A custom query key and cookie name.
            ("/custom/doc.xml?look=print", vec![], &print),
            ("/custom/doc.xml?style=print", vec![], &default),
            (
                "/custom/doc.xml",
                vec![("cookie", "theme=handheld")],
                &handheld,
            ),
            (
                "/custom/doc.xml",
                vec![("cookie", "axkit_preferred_style=print")],
                &default,
            ),
            // The location's default style (an alternate's title is fine).
            ("/def/doc.xml", vec![], &handheld),
            ("/def/doc.xml?style=print", vec![], &print),
            // Choosers turned off.
            ("/off/doc.xml?style=print", vec![], &default),
            (
                "/off/doc.xml",
                vec![("cookie", "axkit_preferred_style=print")],
                &default,
            ),
        ];
        for (path, headers, expected) in cases {
            let r = server.get_with(path, &headers).await;
            assert_eq!(
                (r.status, &r.text()),
                (200, expected),
                "{mode} {path} {headers:?}"
            );
            if server.caches() {
                let again = server.get_with(path, &headers).await;
                assert_eq!(again.body, r.body);
                assert_eq!(again.cache(), "hit", "{mode} {path} {headers:?}");
            }
        }
        assert_eq!(server.get("/off/doc.xml/print").await.status, 404, "{mode}");
        assert_eq!(server.get("/off/doc.xml.print").await.status, 404, "{mode}");
        assert_eq!(server.get("/c/nope.xml/print").await.status, 404, "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn media_is_chosen_by_wap_user_agent_accept_header_and_location_default() {
    let site = styles_site();
    let media = format!(
        "{}{}{}<doc/>\n",
        pi("screen", " media=\"screen\""),
        pi("handheld", " media=\"handheld\""),
        pi("print", " media=\"print\""),
    );
    site.write("c/media.xml", &media);
    site.write("defmedia/media.xml", &media);
    for mode in MODES {
        let server = Server::start(&site.root, mode, CHOOSERS).await;
        for (path, headers, expected) in [
            ("/c/media.xml", vec![], "screen"),
            (
                "/c/media.xml",
                vec![("user-agent", "Mozilla/5.0")],
                "screen",
            ),
            (
                "/c/media.xml",
                vec![("user-agent", "Nokia6230/2.0 (03.14)")],
                "handheld",
            ),
            (
                "/c/media.xml",
                vec![("user-agent", "UP.Browser/6.2")],
                "handheld",
            ),
            (
                "/c/media.xml",
                vec![("accept", "text/vnd.wap.wml, */*;q=0.1")],
                "handheld",
            ),
            ("/defmedia/media.xml", vec![], "handheld"),
            (
                "/defmedia/media.xml",
                vec![("user-agent", "Mozilla/5.0")],
                "handheld",
            ),
        ] {
            assert_eq!(
                server.body_with(path, &headers).await,
                out(expected),
                "{mode} {path} {headers:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// 4. Configured processors

fn when_config() -> String {
    format!(
        r#"
[location."/always"]
processor = [{}]

[location."/when"]
processor = [
  {},
  {},
  {},
  {},
  {},
  {},
  {},
]
"#,
        proc("conf", ""),
        proc("feed", ", root = \"{urn:x-feed}feed\""),
        proc("plainroot", ", root = \"plain\""),
        proc("book", ", doctype = \"-//AXLE//DTD Book//EN\""),
        proc("sysid", ", dtd = \"sys.dtd\""),
        proc("special", ", uri = \"^/when/special-[0-9]+\\\\.xml$\""),
        proc("printonly", ", style = \"print\""),
        proc("handheldonly", ", media = \"handheld\""),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn processors_apply_unconditionally_or_by_root_doctype_dtd_uri_style_and_media() {
    let site = TestSite::new();
    tags(
        &site,
        &[
            "conf",
            "feed",
            "plainroot",
            "book",
            "sysid",
            "special",
            "printonly",
            "handheldonly",
        ],
    );
    site.write("always/doc.xml", "<anything/>");
    site.write("when/feed.xml", "<f:feed xmlns:f=\"urn:x-feed\"/>");
    site.write("when/default-ns-feed.xml", "<feed xmlns=\"urn:x-feed\"/>");
    site.write("when/nsless-feed.xml", "<feed/>");
    site.write("when/plain.xml", "<plain/>");
    site.write("when/ns-plain.xml", "<plain xmlns=\"urn:other\"/>");
    site.write("when/book.dtd", "<!ELEMENT book EMPTY>");
    site.write("when/sys.dtd", "<!ELEMENT thing EMPTY>");
    site.write(
        "when/book.xml",
        "<!DOCTYPE book PUBLIC \"-//AXLE//DTD Book//EN\" \"book.dtd\">\n<book/>",
    );
    site.write(
        "when/otherbook.xml",
        "<!DOCTYPE book PUBLIC \"-//AXLE//DTD Other//EN\" \"book.dtd\">\n<book/>",
    );
    site.write(
        "when/sys.xml",
        "<!DOCTYPE thing SYSTEM \"sys.dtd\">\n<thing/>",
    );
    site.write("when/special-42.xml", "<x/>");
    site.write("when/special-x.xml", "<x/>");
    site.write("when/any.xml", "<any/>");
    let config = when_config();
    for mode in MODES {
        let server = Server::start(&site.root, mode, &config).await;
        for (path, headers, expected) in [
            ("/always/doc.xml", vec![], Some("conf")),
            ("/when/feed.xml", vec![], Some("feed")),
            ("/when/default-ns-feed.xml", vec![], Some("feed")),
            ("/when/nsless-feed.xml", vec![], None),
            ("/when/plain.xml", vec![], Some("plainroot")),
            ("/when/ns-plain.xml", vec![], None),
            ("/when/book.xml", vec![], Some("book")),
            ("/when/otherbook.xml", vec![], None),
            ("/when/sys.xml", vec![], Some("sysid")),
            ("/when/special-42.xml", vec![], Some("special")),
            ("/when/special-x.xml", vec![], None),
            ("/when/any.xml", vec![], None),
            ("/when/any.xml?style=print", vec![], Some("printonly")),
            ("/when/any.xml?style=PRINT", vec![], Some("printonly")),
            ("/when/any.xml?style=other", vec![], None),
            (
                "/when/any.xml",
                vec![("user-agent", "Nokia6230/2.0")],
                Some("handheldonly"),
            ),
            (
                "/when/any.xml?style=print",
                vec![("user-agent", "Nokia6230/2.0")],
                Some("printonly...handheldonly"),
            ),
        ] {
            let r = server.get_with(path, &headers).await;
            assert_eq!(r.status, 200, "{mode} {path}: {}", r.text());
            match expected {
                Some(chain) => {
                    assert_eq!(r.text(), out(chain), "{mode} {path} {headers:?}");
                    assert_eq!(r.header("content-type"), "text/xml; charset=UTF-8");
                }
                None => {
                    // No stage: the document as it is.
                    let file = path.split('?').next().unwrap();
                    assert_eq!(r.text(), site.read(&file[1..]), "{mode} {path}");
                    assert_eq!(
                        (r.header("content-type").as_str(), r.cache().as_str()),
                        ("text/xml", "none"),
                        "{mode} {path}"
                    );
                }
            }
        }
    }
}

const ORDERS: &str = r#"
[location."/order/fallback"]
processor = [{ type = "text/xsl", href = "/t/conf.xsl" }]

[location."/order/instead"]
order = "instead"
processor = [{ type = "text/xsl", href = "/t/conf.xsl" }]

[location."/order/before"]
order = "before"
processor = [{ type = "text/xsl", href = "/t/conf.xsl" }]

[location."/order/after"]
order = "after"
processor = [{ type = "text/xsl", href = "/t/conf.xsl" }]
"#;

/// `fallback` (AxKit: PIs win when any applies), `instead`
/// (AxIgnoreStylePI), `before` and `after` the PI chain.
#[tokio::test(flavor = "multi_thread")]
async fn processor_order_decides_how_processors_combine_with_pis() {
    let site = TestSite::new();
    tags(&site, &["conf", "pi", "alt"]);
    for order in ["fallback", "instead", "before", "after"] {
        site.write(
            &format!("order/{order}/pi.xml"),
            &format!("{}<doc/>", pi("pi", "")),
        );
        site.write(&format!("order/{order}/nopi.xml"), "<doc/>");
        site.write(
            &format!("order/{order}/alt.xml"),
            &format!("{}<doc/>", pi("alt", " title=\"alt\" alternate=\"yes\"")),
        );
    }
    for mode in MODES {
        let server = Server::start(&site.root, mode, ORDERS).await;
        for (path, expected) in [
            ("/order/fallback/pi.xml", "pi"),
            ("/order/fallback/nopi.xml", "conf"),
            ("/order/fallback/alt.xml", "conf"),
            ("/order/fallback/alt.xml?style=alt", "alt"),
            ("/order/instead/pi.xml", "conf"),
            ("/order/instead/nopi.xml", "conf"),
            ("/order/instead/alt.xml?style=alt", "conf"),
            ("/order/before/pi.xml", "conf...pi"),
            ("/order/before/nopi.xml", "conf"),
            ("/order/before/alt.xml?style=alt", "conf...alt"),
            ("/order/after/pi.xml", "pi...conf"),
            ("/order/after/nopi.xml", "conf"),
            ("/order/after/alt.xml?style=alt", "alt...conf"),
        ] {
            let r = server.get(path).await;
            assert_eq!((r.status, r.text()), (200, out(expected)), "{mode} {path}");
            if server.caches() {
                let again = server.get(path).await;
                assert_eq!(
                    (again.text(), again.cache()),
                    (out(expected), "hit".to_string()),
                    "{mode} {path}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 5. Params

const PARAMS_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text"/>
<xsl:param name="a" select="'-'"/>
<xsl:param name="b" select="'-'"/>
<xsl:param name="p" select="'-'"/>
<xsl:template match="/">a=<xsl:value-of select="$a"/> b=<xsl:value-of select="$b"/> p=<xsl:value-of select="$p"/></xsl:template>
</xsl:stylesheet>
"#;

const PARAMS: &str = r#"
[location."/none"]
params = "none"

[location."/only"]
params = ["a"]
"#;

fn params_site() -> TestSite {
    let site = TestSite::new();
    site.write("t/params.xsl", PARAMS_XSL);
    let doc = "<?xml-stylesheet type=\"text/xsl\" href=\"/t/params.xsl\"?>\n<doc/>\n";
    for dir in ["params", "none", "only"] {
        site.write(&format!("{dir}/doc.xml"), doc);
    }
    site
}

#[tokio::test(flavor = "multi_thread")]
async fn query_and_form_params_reach_the_stylesheet_and_vary_the_cache_key() {
    let site = params_site();
    const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");
    for mode in MODES {
        let server = Server::start(&site.root, mode, PARAMS).await;
        assert_eq!(server.body("/params/doc.xml").await, "a=- b=- p=-");
        assert_eq!(server.body("/params/doc.xml?a=1&b=2").await, "a=1 b=2 p=-");
        assert_eq!(
            server.body("/params/doc.xml?a=1;b=two%20words").await,
            "a=1 b=two words p=-"
        );
        assert_eq!(
            server
                .body("/params/doc.xml?a=x+y;b=%3Cb%3E&p=%27q%27")
                .await,
            "a=x y b=<b> p='q'"
        );

        let post = server
            .send(
                reqwest::Method::POST,
                "/params/doc.xml",
                &[FORM],
                Some("a=posted&b=da%20ta"),
            )
            .await;
        assert_eq!(
            (post.status, post.text()),
            (200, "a=posted b=da ta p=-".into()),
            "{mode}"
        );
        let both = server
            .send(
                reqwest::Method::POST,
                "/params/doc.xml?a=query;p=q",
                &[FORM],
                Some("a=form&b=f"),
            )
            .await;
        assert_eq!(both.text(), "a=form b=f p=q", "{mode}: form fields win");
        let not_form = server
            .send(
                reqwest::Method::POST,
                "/params/doc.xml",
                &[("content-type", "text/xml")],
                Some("<doc/>"),
            )
            .await;
        assert_eq!(not_form.status, 400, "{mode}");

        // The params are in the cache key.
        let p1 = server.get("/params/doc.xml?p=1").await;
        assert_eq!(
            (p1.text(), p1.cache()),
            ("a=- b=- p=1".into(), "miss".into())
        );
        let p2 = server.get("/params/doc.xml?p=2").await;
        assert_eq!(
            (p2.text(), p2.cache()),
            ("a=- b=- p=2".into(), "miss".into())
        );
        let p1_again = server.get("/params/doc.xml?p=1").await;
        assert_eq!(p1_again.body, p1.body);
        assert_ne!(p1.header("etag"), p2.header("etag"));
        if server.caches() {
            assert_eq!(p1_again.cache(), "hit", "{mode}");
        }

        // Allow-lists.
        assert_eq!(
            server.body("/none/doc.xml?a=1&b=2&p=3").await,
            "a=- b=- p=-",
            "{mode}"
        );
        let none_post = server
            .send(reqwest::Method::POST, "/none/doc.xml", &[FORM], Some("a=1"))
            .await;
        assert_eq!(none_post.text(), "a=- b=- p=-", "{mode}");
        assert_eq!(
            server.body("/only/doc.xml?a=1&b=2&p=3").await,
            "a=1 b=- p=-",
            "{mode}"
        );
        let only_post = server
            .send(
                reqwest::Method::POST,
                "/only/doc.xml",
                &[FORM],
                Some("a=x&b=y"),
            )
            .await;
        assert_eq!(only_post.text(), "a=x b=- p=-", "{mode}");
        // Params that do not reach the stylesheet do not split the cache.
        let n1 = server.get("/none/doc.xml?p=10").await;
        let n2 = server.get("/none/doc.xml?p=20").await;
        assert_eq!(n1.body, n2.body);
        if server.caches() {
            assert_eq!(n2.cache(), "hit", "{mode}");
            let o = server.get("/only/doc.xml?a=1&b=other").await;
            assert_eq!((o.text(), o.cache()), ("a=1 b=- p=-".into(), "hit".into()));
        }
    }
}

// ---------------------------------------------------------------------------
// 6. Style types

const TYPES: &str = r#"
[location."/typed".types]
"application/x-identity" = "passthru"
"text/x-my-xslt" = "xslt"
"#;

/// `[location."/x".types]` (AxAddStyleMap) maps a PI's MIME type to a
/// Language, only under that location.
#[tokio::test(flavor = "multi_thread")]
async fn a_location_type_map_runs_pis_of_custom_types() {
    let site = TestSite::new();
    tags(&site, &["A"]);
    let identity = "<?xml version=\"1.0\"?>\n<?xml-stylesheet type=\"application/x-identity\" href=\"/t/A.xsl\"?>\n<doc>identity</doc>\n";
    let custom =
        "<?xml-stylesheet type=\"text/x-my-xslt\" href=\"/t/A.xsl\"?>\n<doc>custom</doc>\n";
    for dir in ["typed", "untyped"] {
        site.write(&format!("{dir}/identity.xml"), identity);
        site.write(&format!("{dir}/custom.xml"), custom);
    }
    for mode in MODES {
        let server = Server::start(&site.root, mode, TYPES).await;
        let id = server.get("/typed/identity.xml").await;
        assert_eq!(
            (id.status, id.text()),
            (200, identity.to_string()),
            "{mode}"
        );
        assert_eq!(id.header("content-type"), "text/xml; charset=UTF-8");
        assert_ne!(id.cache(), "none", "{mode}: a passthru stage ran");
        assert_eq!(
            server.body("/typed/custom.xml").await,
            out("custom...A"),
            "{mode}"
        );
        // Elsewhere the types mean nothing: no stage, served as it is.
        for (path, text) in [
            ("/untyped/identity.xml", identity),
            ("/untyped/custom.xml", custom),
        ] {
            let r = server.get(path).await;
            assert_eq!(
                (r.status, r.text(), r.cache(), r.header("content-type")),
                (200, text.to_string(), "none".into(), "text/xml".into()),
                "{mode} {path}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// 7. Passthru and tracing

#[tokio::test(flavor = "multi_thread")]
async fn passthru_returns_the_source_unless_the_location_disables_it() {
    let site = TestSite::new();
    tags(&site, &["A"]);
    let doc = format!("<?xml version=\"1.0\"?>\n{}<doc>src</doc>\n", pi("A", ""));
    site.write("pass/doc.xml", &doc);
    site.write("nopass/doc.xml", &doc);
    let config = "[location.\"/nopass\"]\npassthru = false\n";
    for mode in MODES {
        let server = Server::start(&site.root, mode, config).await;
        let raw = server.get("/pass/doc.xml?passthru=1").await;
        assert_eq!((raw.status, raw.text()), (200, doc.clone()), "{mode}");
        assert_eq!(raw.header("content-type"), "text/xml");
        assert_eq!(
            server.body("/pass/doc.xml?passthru=0").await,
            out("src...A"),
            "{mode}"
        );
        assert_eq!(server.body("/pass/doc.xml").await, out("src...A"), "{mode}");
        assert_eq!(
            server.body("/nopass/doc.xml?passthru=1").await,
            out("src...A"),
            "{mode}"
        );
        let fixture = server.get("/one.xml?passthru=yes").await;
        assert_eq!(fixture.text(), site.read("one.xml"));
        // A browser would run the PIs itself and show the page, not the
        // source: it gets the same bytes as text, in the declared charset.
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        let shown = server
            .get_with("/pass/doc.xml?passthru=1", &[("accept", browser)])
            .await;
        assert_eq!((shown.status, shown.text()), (200, doc.clone()), "{mode}");
        assert_eq!(shown.header("content-type"), "text/plain; charset=UTF-8");
        assert_eq!(shown.header("x-content-type-options"), "nosniff");
        assert_eq!(shown.header("vary"), "accept");
        assert_eq!(raw.header("vary"), "accept", "{mode}: either answer varies");
    }
}

/// `trace` (AxTraceIntermediate): `<dir>/<URL path>.N` (the path's
/// directories mirrored under `<dir>`) holds the source (0) and each stage's
/// output; traced requests are computed in every mode.
#[tokio::test(flavor = "multi_thread")]
async fn trace_writes_the_source_and_every_stage_output() {
    let site = TestSite::new();
    tags(&site, &["A", "B"]);
    let doc = format!(
        "<?xml version=\"1.0\"?>\n{}{}<doc>src</doc>\n",
        pi("A", ""),
        pi("B", "")
    );
    site.write("traced/doc.xml", &doc);
    let dir = site.outside().join("trace");
    let config = format!(
        "[location.\"/traced\"]\ntrace = {:?}\n",
        dir.display().to_string()
    );
    let file = |n: usize| dir.join("traced").join(format!("doc.xml.{n}"));
    let stage1 = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<out>src...A</out>\n";
    for mode in MODES {
        let _ = std::fs::remove_dir_all(&dir);
        let server = Server::start(&site.root, mode, &config).await;
        for _ in 0..2 {
            let r = server.get("/traced/doc.xml").await;
            assert_eq!((r.status, r.text()), (200, out("src...A...B")), "{mode}");
            assert_eq!(std::fs::read_to_string(file(0)).unwrap(), doc, "{mode}");
            assert_eq!(std::fs::read_to_string(file(1)).unwrap(), stage1, "{mode}");
            assert_eq!(std::fs::read(file(2)).unwrap(), r.body, "{mode}");
            assert!(!file(3).exists());
            std::fs::remove_dir_all(&dir).unwrap();
        }
        // Elsewhere nothing is traced.
        assert!(!server.body("/one.xml").await.is_empty());
        assert!(!dir.exists(), "{mode}");
    }

    // `axle render --trace DIR` does the same.
    let cli_dir = site.outside().join("cli-trace");
    let stdout = axle_ok(
        &site.root,
        [
            std::ffi::OsStr::new("render"),
            "traced/doc.xml".as_ref(),
            "--trace".as_ref(),
            cli_dir.as_os_str(),
        ],
    );
    assert_eq!(
        String::from_utf8(stdout.clone()).unwrap(),
        out("src...A...B")
    );
    let cli = |n: usize| cli_dir.join("traced").join(format!("doc.xml.{n}"));
    assert_eq!(std::fs::read_to_string(cli(0)).unwrap(), doc);
    assert_eq!(std::fs::read_to_string(cli(1)).unwrap(), stage1);
    assert_eq!(std::fs::read(cli(2)).unwrap(), stdout);
    assert!(!cli(3).exists());
}

// ---------------------------------------------------------------------------
// 8. Error stylesheet

const ERROR_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="html"/>
<xsl:template match="/"><html><body><p class="file"><xsl:value-of select="/error/file"/></p><p class="msg"><xsl:value-of select="/error/msg"/></p></body></html></xsl:template>
</xsl:stylesheet>
"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_error_stylesheet_renders_errors_which_are_never_cached() {
    let site = TestSite::new();
    tags(&site, &["A"]);
    site.write("t/error.xsl", ERROR_XSL);
    let broken = format!(
        "<?xml version=\"1.0\"?>\n{}<doc><unclosed></doc>\n",
        pi("A", "")
    );
    let fixed = format!("<?xml version=\"1.0\"?>\n{}<doc>fixed</doc>\n", pi("A", ""));
    let config = "[location.\"/errs\"]\nerror-stylesheet = \"/t/error.xsl\"\n";
    for mode in MODES {
        site.write("errs/doc.xml", &broken);
        site.write("plainerrs/doc.xml", &broken);
        site.write(
            "errs/missing.xml",
            "<?xml-stylesheet type=\"text/xsl\" href=\"/t/nope.xsl\"?><doc/>",
        );
        tick().await;
        let server = Server::start(&site.root, mode, config).await;
        for _ in 0..2 {
            let r = server.get("/errs/doc.xml").await;
            assert_eq!(r.status, 500, "{mode}");
            assert_eq!(r.header("content-type"), "text/html; charset=UTF-8");
            assert_eq!(r.header("cache-control"), "no-store");
            let text = r.text();
            assert!(
                text.starts_with(
                    "<html><body>\n<p class=\"file\">/errs/doc.xml</p>\n<p class=\"msg\">/errs/doc.xml is not well-formed XML: /errs/doc.xml:3: "
                ),
                "{mode}: {text}"
            );
            assert!(text.ends_with("</p>\n</body></html>\n"), "{text}");
            assert!(!text.contains(&site.root.display().to_string()), "{text}");
        }
        let missing = server.get("/errs/missing.xml").await;
        assert_eq!(missing.status, 500);
        assert!(
            missing.text().starts_with("<html><body>\n<p class=\"file\">/errs/missing.xml</p>\n<p class=\"msg\">stylesheet /t/nope.xsl (named by /errs/missing.xml) was not found"),
            "{mode}: {}",
            missing.text()
        );
        // Without an error stylesheet: the standard page.
        let plain = server.get("/plainerrs/doc.xml").await;
        assert_eq!(plain.status, 500);
        assert!(
            plain.text().contains("500 Malformed document"),
            "{}",
            plain.text()
        );

        // Fixing the document fixes the response: nothing was cached.
        tick().await;
        site.write("errs/doc.xml", &fixed);
        let ok = server.get("/errs/doc.xml").await;
        assert_eq!((ok.status, ok.text()), (200, out("fixed...A")), "{mode}");
    }
}

// ---------------------------------------------------------------------------
// 9. Directories

const FILELIST_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform" xmlns:f="http://axkit.org/2002/filelist">
<xsl:output method="text"/>
<xsl:template match="/f:filelist"><xsl:for-each select="f:file|f:directory"><xsl:value-of select="local-name()"/><xsl:text> </xsl:text><xsl:value-of select="@name"/><xsl:if test="self::f:file"><xsl:text> </xsl:text><xsl:value-of select="@size"/></xsl:if><xsl:text>&#10;</xsl:text></xsl:for-each></xsl:template>
</xsl:stylesheet>
"#;

const DIRECTORIES: &str = r#"
[location."/listing"]
directories = true
processor = [{ type = "text/xsl", href = "/t/filelist.xsl", root = "{http://axkit.org/2002/filelist}filelist" }]

[location."/rawlist"]
directories = true

[location."/noindex"]
index = ""

[location."/home"]
index = "home.xml"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn directories_give_a_filelist_or_their_index() {
    let site = TestSite::new();
    tags(&site, &["A"]);
    site.write("t/filelist.xsl", FILELIST_XSL);
    site.write("listing/a.txt", "hello");
    site.write("listing/b.xml", "<b/>");
    site.write("listing/.hidden", "secret");
    site.write("listing/sub/index.xml", "<x/>");
    site.write("rawlist/a.txt", "hello");
    let index = format!("{}<doc>index</doc>", pi("A", ""));
    site.write("withindex/index.xml", &index);
    site.write("noindex/index.xml", &index);
    site.write("home/home.xml", &format!("{}<doc>home</doc>", pi("A", "")));
    site.write(
        "home/index.xml",
        &format!("{}<doc>index</doc>", pi("A", "")),
    );
    std::fs::create_dir_all(site.root.join("empty")).unwrap();
    for mode in MODES {
        let server = Server::start(&site.root, mode, DIRECTORIES).await;
        let list = server.get("/listing/").await;
        assert_eq!(
            (list.status, list.text()),
            (
                200,
                "file a.txt 5\nfile b.xml 4\ndirectory sub\n".to_string()
            ),
            "{mode}"
        );
        assert_eq!(list.header("content-type"), "text/plain; charset=UTF-8");
        for (from, to) in [("/listing", "/listing/"), ("/listing/sub", "/listing/sub/")] {
            let r = server.get(from).await;
            assert_eq!(
                (r.status, r.header("location")),
                (308, to.to_string()),
                "{mode}"
            );
        }
        // The listing replaces the index here.
        let sub = server.get("/listing/sub/").await;
        assert_eq!(sub.text(), "file index.xml 4\n", "{mode}");
        // A changed directory gives a changed listing.
        site.write("listing/c.txt", "abc");
        assert_eq!(
            server.body("/listing/").await,
            "file a.txt 5\nfile b.xml 4\nfile c.txt 3\ndirectory sub\n",
            "{mode}"
        );
        std::fs::remove_file(site.root.join("listing/c.txt")).unwrap();

        // Without a processor the filelist document itself.
        let raw = server.get("/rawlist/").await;
        assert_eq!(raw.status, 200);
        assert_eq!(raw.header("content-type"), "text/xml");
        let text = raw.text();
        assert!(
            text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<filelist xmlns=\"http://axkit.org/2002/filelist\">\n  <file name=\"a.txt\" size=\"5\" mtime=\""),
            "{text}"
        );
        assert!(
            text.contains(" type=\"text/plain\"/>\n</filelist>\n"),
            "{text}"
        );

        // Without `directories`: index.xml, else 404; `index = ""` turns it off.
        assert_eq!(server.body("/withindex/").await, out("index...A"), "{mode}");
        assert_eq!(server.get("/withindex").await.status, 308);
        assert_eq!(server.get("/empty/").await.status, 404, "{mode}");
        assert_eq!(server.get("/noindex/").await.status, 404, "{mode}");
        assert_eq!(server.body("/home/").await, out("home...A"), "{mode}");
    }
}

/// A listing names only what can be served: a symlink leading out of the
/// root (a 404 when requested) is left out, like a dotfile.
#[tokio::test(flavor = "multi_thread")]
async fn a_directory_listing_leaves_out_symlinks_leading_out_of_the_root() {
    let site = TestSite::new();
    site.write("t/filelist.xsl", FILELIST_XSL);
    site.write("listing/a.txt", "hello");
    std::os::unix::fs::symlink(
        site.outside().join("secret.txt"),
        site.root.join("listing/out.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(site.outside(), site.root.join("listing/up")).unwrap();
    std::os::unix::fs::symlink(
        site.root.join("listing/a.txt"),
        site.root.join("listing/in.txt"),
    )
    .unwrap();
    for mode in MODES {
        let server = Server::start(&site.root, mode, DIRECTORIES).await;
        assert_eq!(server.get("/listing/out.txt").await.status, 404);
        assert_eq!(server.get("/listing/up/").await.status, 404);
        assert_eq!(
            server.body("/listing/").await,
            "file a.txt 5\nfile in.txt 5\n",
            "{mode}"
        );
    }
}

// ---------------------------------------------------------------------------
// 10. axle: URIs

fn reader_xsl(uri: &str) -> String {
    format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" omit-xml-declaration="yes"/>
<xsl:template match="/"><outer><xsl:copy-of select="document('{uri}')"/></outer></xsl:template>
</xsl:stylesheet>
"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn axle_uris_read_the_transformed_output_of_another_document_and_track_it() {
    let site = TestSite::new();
    site.write("t/outer.xsl", &reader_xsl("axle:/ax/other.xml"));
    site.write("t/other.xsl", &tag_xsl("v1"));
    site.write(
        "ax/outer.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/outer.xsl\"?>\n<doc/>\n",
    );
    site.write(
        "ax/other.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/other.xsl\"?>\n<doc>other</doc>\n",
    );
    for mode in MODES {
        site.write("t/other.xsl", &tag_xsl("v1"));
        site.write(
            "ax/other.xml",
            "<?xml-stylesheet type=\"text/xsl\" href=\"/t/other.xsl\"?>\n<doc>other</doc>\n",
        );
        tick().await;
        let server = Server::start(&site.root, mode, "").await;
        let first = server.get("/ax/outer.xml").await;
        assert_eq!(
            (first.status, first.text()),
            (200, "<outer><out>other...v1</out></outer>\n".to_string()),
            "{mode}"
        );
        let again = server.get("/ax/outer.xml").await;
        assert_eq!(again.body, first.body);
        if server.caches() {
            assert_eq!(again.cache(), "hit", "{mode}");
        }
        // The inner document's stylesheet changes: so does the outer output.
        tick().await;
        site.write("t/other.xsl", &tag_xsl("v2"));
        assert_eq!(
            server.body("/ax/outer.xml").await,
            "<outer><out>other...v2</out></outer>\n",
            "{mode}"
        );
        // And its source.
        tick().await;
        site.write(
            "ax/other.xml",
            "<?xml-stylesheet type=\"text/xsl\" href=\"/t/other.xsl\"?>\n<doc>edited</doc>\n",
        );
        assert_eq!(
            server.body("/ax/outer.xml").await,
            "<outer><out>edited...v2</out></outer>\n",
            "{mode}"
        );
    }
}

/// `a.xml` reads `axle:/ax/b.xml`, which reads `axle:/ax/a.xml`: the loop
/// is cut and reported, without hanging or crashing the server.
#[tokio::test(flavor = "multi_thread")]
async fn an_axle_uri_loop_is_reported_not_followed() {
    let site = TestSite::new();
    site.write("t/reads-b.xsl", &reader_xsl("axle:/ax/b.xml"));
    site.write("t/reads-a.xsl", &reader_xsl("axle:/ax/a.xml"));
    site.write(
        "ax/a.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/reads-b.xsl\"?>\n<a/>\n",
    );
    site.write(
        "ax/b.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/reads-a.xsl\"?>\n<b/>\n",
    );
    site.write("t/self.xsl", &reader_xsl("axle:/ax/self.xml"));
    site.write(
        "ax/self.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/self.xsl\"?>\n<s/>\n",
    );
    for mode in MODES {
        let server = Server::start(&site.root, mode, "").await;
        for path in ["/ax/a.xml", "/ax/b.xml", "/ax/self.xml"] {
            let r = tokio::time::timeout(Duration::from_secs(10), server.get(path))
                .await
                .unwrap_or_else(|_| panic!("{mode} {path}: no answer in 10 s"));
            // Reported either way: a 500 page, or a message in the output.
            assert!(
                matches!(r.status, 200 | 500) && r.text().contains("URI loop"),
                "{mode} {path}: {} {}",
                r.status,
                r.text()
            );
        }
        // The server still serves.
        assert_eq!(server.get("/one.xml").await.status, 200, "{mode}");
    }
}

/// A document whose stylesheet reads another document rendered through
/// that same stylesheet: the nested transform runs inside the outer one,
/// on its thread, while the outer holds the only compiled instance; it
/// must get another instance, not wait for the outer's.
#[tokio::test(flavor = "multi_thread")]
async fn an_axle_uri_rendered_through_the_same_stylesheet_does_not_wait_for_itself() {
    let site = TestSite::new();
    site.write(
        "t/same.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" omit-xml-declaration="yes"/>
<xsl:template match="/outer"><o><xsl:copy-of select="document('axle:/ax/inner.xml')"/></o></xsl:template>
<xsl:template match="/inner"><i/></xsl:template>
</xsl:stylesheet>
"#,
    );
    site.write(
        "ax/outer.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/same.xsl\"?>\n<outer/>\n",
    );
    site.write(
        "ax/inner.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/same.xsl\"?>\n<inner/>\n",
    );
    for mode in MODES {
        let server = Server::start(&site.root, mode, "").await;
        let r = tokio::time::timeout(Duration::from_secs(10), server.get("/ax/outer.xml"))
            .await
            .unwrap_or_else(|_| panic!("{mode}: no answer in 10 s"));
        assert_eq!((r.status, r.text().trim()), (200, "<o><i/></o>"), "{mode}");
    }
}

// ---------------------------------------------------------------------------
// 11. XInclude

const COPY_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" omit-xml-declaration="yes"/>
<xsl:template match="/"><xsl:copy-of select="/*"/></xsl:template>
</xsl:stylesheet>
"#;

const XINCLUDE: &str = r#"
[location."/xi"]
xinclude = true
"#;

const XI_NS: &str = "http://www.w3.org/2001/XInclude";

fn xi_doc(body: &str) -> String {
    format!(
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/copy.xsl\"?>\n<doc xmlns:xi=\"{XI_NS}\">{body}</doc>\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn xinclude_includes_files_inside_the_root_and_tracks_them() {
    let site = TestSite::new();
    site.write("t/copy.xsl", COPY_XSL);
    let doc = xi_doc("<xi:include href=\"part.xml\"/>|<xi:include href=\"sub/more.xml\"/>");
    site.write("xi/doc.xml", &doc);
    site.write("noxi/doc.xml", &doc);
    site.write("noxi/part.xml", "<part>v1</part>");
    site.write("xi/sub/more.xml", "<more/>");
    for mode in MODES {
        site.write("xi/part.xml", "<part>v1</part>");
        tick().await;
        let server = Server::start(&site.root, mode, XINCLUDE).await;
        let expected = |v: &str| {
            format!(
                "<doc xmlns:xi=\"{XI_NS}\"><part>{v}</part>|<more xml:base=\"sub/more.xml\"/></doc>\n"
            )
        };
        let r = server.get("/xi/doc.xml").await;
        assert_eq!((r.status, r.text()), (200, expected("v1")), "{mode}");
        let again = server.get("/xi/doc.xml").await;
        assert_eq!(again.body, r.body);
        if server.caches() {
            assert_eq!(again.cache(), "hit", "{mode}");
        }
        // Editing an included file changes the response.
        tick().await;
        site.write("xi/part.xml", "<part>v2</part>");
        assert_eq!(server.body("/xi/doc.xml").await, expected("v2"), "{mode}");

        // With xinclude off (the default), the element passes through.
        assert_eq!(
            server.body("/noxi/doc.xml").await,
            format!(
                "<doc xmlns:xi=\"{XI_NS}\"><xi:include href=\"part.xml\"/>|<xi:include href=\"sub/more.xml\"/></doc>\n"
            ),
            "{mode}"
        );
    }
}

/// `parse="text"` includes the file's text (as `xmllint --xinclude` does).
#[tokio::test(flavor = "multi_thread")]
async fn xinclude_parse_text_includes_the_text_of_a_file_inside_the_root() {
    let site = TestSite::new();
    site.write("t/copy.xsl", COPY_XSL);
    site.write(
        "xi/text.xml",
        &xi_doc("[<xi:include href=\"note.txt\" parse=\"text\"/>]"),
    );
    for mode in MODES {
        site.write("xi/note.txt", "note 1 & <2>");
        tick().await;
        let server = Server::start(&site.root, mode, XINCLUDE).await;
        let r = server.get("/xi/text.xml").await;
        assert_eq!(
            (r.status, r.text()),
            (
                200,
                format!("<doc xmlns:xi=\"{XI_NS}\">[note 1 &amp; &lt;2&gt;]</doc>\n")
            ),
            "{mode}"
        );
        tick().await;
        site.write("xi/note.txt", "note 2");
        assert_eq!(
            server.body("/xi/text.xml").await,
            format!("<doc xmlns:xi=\"{XI_NS}\">[note 2]</doc>\n"),
            "{mode}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn xinclude_never_reads_outside_the_root() {
    let site = TestSite::new();
    site.write("t/copy.xsl", COPY_XSL);
    let secret = site.outside().join("secret.txt");
    std::fs::create_dir_all(site.root.join("xi")).unwrap();
    std::os::unix::fs::symlink(&secret, site.root.join("xi/link.txt")).unwrap();
    let secret_path = secret.display().to_string();
    let secret_url = format!("file://{secret_path}");
    let hrefs: [(&str, &str); 8] = [
        ("../../secret.txt", "text"),
        ("../../secret.txt", "xml"),
        ("/etc/passwd", "text"),
        ("file:///etc/passwd", "text"),
        (&secret_path, "text"),
        (&secret_url, "text"),
        ("link.txt", "text"),
        ("%2e%2e/%2e%2e/secret.txt", "text"),
    ];
    for mode in MODES {
        let server = Server::start(&site.root, mode, XINCLUDE).await;
        for (i, (href, parse)) in hrefs.iter().enumerate() {
            // With a fallback: the fallback, exactly.
            site.write(
                &format!("xi/fb{i}.xml"),
                &xi_doc(&format!(
                    "<xi:include href=\"{href}\" parse=\"{parse}\"><xi:fallback>refused</xi:fallback></xi:include>"
                )),
            );
            let r = server.get(&format!("/xi/fb{i}.xml")).await;
            assert_eq!(
                (r.status, r.text()),
                (200, format!("<doc xmlns:xi=\"{XI_NS}\">refused</doc>\n")),
                "{mode} {href} {parse}"
            );
            // Without: whatever the status, nothing of the file.
            site.write(
                &format!("xi/nofb{i}.xml"),
                &xi_doc(&format!("<xi:include href=\"{href}\" parse=\"{parse}\"/>")),
            );
            let r = server.get(&format!("/xi/nofb{i}.xml")).await;
            let text = r.text();
            assert!(
                !text.contains("TOP-SECRET-CONTENT") && !text.contains("root:"),
                "{mode} {href} {parse}: {text}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// 12. Output charset

const HTML_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="html" encoding="UTF-8"/>
<xsl:template match="/"><html><head><title>t</title></head><body><p><xsl:value-of select="/doc"/></p></body></html></xsl:template>
</xsl:stylesheet>
"#;

const XML_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" encoding="UTF-8"/>
<xsl:template match="/"><out><xsl:value-of select="/doc"/></out></xsl:template>
</xsl:stylesheet>
"#;

const CHARSETS: &str = r#"
[location."/latin"]
output-charset = "ISO-8859-1"

[location."/acc"]
output-charset = "accept"
"#;

/// The UTF-8 HTML page of `html.xsl` for "café € Ω", with `charset` in its
/// meta tag.
fn html_page(charset: &str) -> String {
    format!(
        "<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html; charset={charset}\">\n<title>t</title>\n</head>\n<body><p>café € Ω</p></body>\n</html>\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn output_charset_transcodes_with_character_references_for_missing_characters() {
    let site = TestSite::new();
    site.write("t/html.xsl", HTML_XSL);
    site.write("t/xml.xsl", XML_XSL);
    let html_doc =
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/html.xsl\"?>\n<doc>café € Ω</doc>\n";
    let xml_doc = "<?xml-stylesheet type=\"text/xsl\" href=\"/t/xml.xsl\"?>\n<doc>café € Ω</doc>\n";
    for dir in ["utf8", "latin", "acc"] {
        site.write(&format!("{dir}/page.xml"), html_doc);
        site.write(&format!("{dir}/data.xml"), xml_doc);
    }
    // windows-1252 (what the label ISO-8859-1 means): é and € exist, Ω not.
    let cp1252_html = {
        let mut b = html_page("windows-1252")
            .replace("café € Ω", "caf\u{1}")
            .into_bytes();
        let at = b.iter().position(|&c| c == 1).unwrap();
        b.splice(at..at + 1, b"\xE9 \x80 &#937;".iter().copied());
        b
    };
    let cp1252_xml =
        b"<?xml version=\"1.0\" encoding=\"windows-1252\"?>\n<out>caf\xE9 \x80 &#937;</out>\n"
            .to_vec();
    let koi8_html = html_page("KOI8-R")
        .replace("café € Ω", "caf&#233; &#8364; &#937;")
        .into_bytes();
    for mode in MODES {
        let server = Server::start(&site.root, mode, CHARSETS).await;
        let utf8 = server.get("/utf8/page.xml").await;
        assert_eq!(utf8.text(), html_page("UTF-8"), "{mode}");
        assert_eq!(utf8.header("content-type"), "text/html; charset=UTF-8");
        assert_eq!(utf8.header("vary"), "");

        for _ in 0..2 {
            let latin = server.get("/latin/page.xml").await;
            assert_eq!(latin.status, 200);
            assert_eq!(
                latin.header("content-type"),
                "text/html; charset=windows-1252"
            );
            assert_eq!(latin.body, cp1252_html, "{mode}: {}", latin.text());
            assert_eq!(
                latin.header("vary"),
                "",
                "{mode}: a fixed charset does not vary"
            );
            let xml = server.get("/latin/data.xml").await;
            assert_eq!(xml.header("content-type"), "text/xml; charset=windows-1252");
            assert_eq!(xml.body, cp1252_xml, "{mode}: {}", xml.text());
            // The source itself is never transcoded.
            let raw = server.get("/latin/page.xml?passthru=1").await;
            assert_eq!(raw.text(), html_doc);
        }

        // "accept": from Accept-Charset, always with Vary.
        for (accept, ct, body) in [
            (
                None,
                "text/html; charset=UTF-8",
                html_page("UTF-8").into_bytes(),
            ),
            (
                Some("utf-8"),
                "text/html; charset=UTF-8",
                html_page("UTF-8").into_bytes(),
            ),
            (
                Some("iso-8859-1"),
                "text/html; charset=windows-1252",
                cp1252_html.clone(),
            ),
            (
                Some("utf-8;q=0.5, iso-8859-1"),
                "text/html; charset=windows-1252",
                cp1252_html.clone(),
            ),
            (
                Some("iso-8859-1;q=0.5, utf-8"),
                "text/html; charset=UTF-8",
                html_page("UTF-8").into_bytes(),
            ),
            (
                Some("koi8-r"),
                "text/html; charset=KOI8-R",
                koi8_html.clone(),
            ),
            (
                Some("x-unknown"),
                "text/html; charset=UTF-8",
                html_page("UTF-8").into_bytes(),
            ),
        ] {
            let headers: Vec<(&str, &str)> =
                accept.iter().map(|a| ("accept-charset", *a)).collect();
            let r = server.get_with("/acc/page.xml", &headers).await;
            assert_eq!(r.status, 200);
            assert_eq!(r.header("content-type"), ct, "{mode} {accept:?}");
            assert_eq!(r.body, body, "{mode} {accept:?}: {}", r.text());
            assert_eq!(
                r.header("vary").to_ascii_lowercase(),
                "accept-charset",
                "{mode} {accept:?}"
            );
        }
        // Variants have their own ETags.
        let a = server
            .get_with("/acc/page.xml", &[("accept-charset", "koi8-r")])
            .await;
        let b = server.get("/acc/page.xml").await;
        assert_ne!(a.header("etag"), b.header("etag"));
    }
}
