//! AxKit-compatible chain selection and site configuration (`axle.toml`),
//! one file per AxKit feature area:
//!
//! - `config`: nested locations and their processors, `axle check`, SIGHUP
//!   reloads, the configuration file never served, every spelling of a path;
//! - `pi_selection`: PI selection by style and media;
//! - `choosers`: the style and media choosers;
//! - `processors`: conditional processors and their precedence over PIs;
//! - `params`, `style_types`, `passthru_trace`, `error_stylesheet`,
//!   `directories`, `axle_uris`, `xinclude`, `charset`: one directive (or
//!   provider) each.
//!
//! This file holds what they share: the in-process [`Server`], the real
//! [`Binary`], the request helpers and the tag stylesheets below.
//!
//! Most stages here are "tag" stylesheets (`t/NAME.xsl`, see [`tag_xsl`]):
//! each appends its name to the text of its input's root element, so a body
//! such as `<out>Curly...Moe...Larry</out>` shows which stages ran, and in
//! which order.

mod axle_uris;
mod charset;
mod choosers;
mod config;
mod directories;
mod error_stylesheet;
mod params;
mod passthru_trace;
mod pi_selection;
mod processors;
mod style_types;
mod xinclude;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axle::CacheMode;
use axle::site::SiteConfig;

use crate::support::{Resp, TestServer, TestSite, axle};

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
    Resp::of(req.send().await.unwrap()).await
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
// Fixtures shared by more than one feature area

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

/// A site with [`styles_doc`] at `/sel/doc.xml` and a tag stylesheet for
/// every style it or the choosers' tests name (`pi_selection`, `choosers`).
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

/// A stylesheet that copies its input's root element: the identity stage
/// of the XInclude tests (`xinclude`, and the SIGHUP test in `config`).
const COPY_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" omit-xml-declaration="yes"/>
<xsl:template match="/"><xsl:copy-of select="/*"/></xsl:template>
</xsl:stylesheet>
"#;
