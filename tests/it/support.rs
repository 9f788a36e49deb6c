//! Shared test helpers: a fresh copy of the fixture site per test, and a real
//! server on an ephemeral loopback port.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axle::CacheMode;
use axle::http::App;

pub const MODES: [CacheMode; 3] = [CacheMode::Off, CacheMode::All, CacheMode::Incremental];

/// The `axle` binary built for these tests.
pub fn axle() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_axle"))
}

/// Runs `axle ARGS…`: whether it exited successfully, its stdout and its
/// stderr.
pub fn axle_output(args: &[&str]) -> (bool, String, String) {
    let out = axle().args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `axle ARGS…` in `dir`, asserts it succeeded (showing its stderr
/// if not) and returns its stdout.
pub fn axle_ok<I, S>(dir: &Path, args: I) -> Vec<u8>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = axle().args(args).current_dir(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `axle serve ARGS --root ROOT` as a child process, its stderr to
/// `stderr`; returns it and the base URL it printed (no trailing `/`).
pub fn serve_child(
    args: &[&str],
    root: &Path,
    stderr: std::process::Stdio,
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = axle()
        .arg("serve")
        .args(args)
        .arg("--root")
        .arg(root)
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    (child, url)
}

/// A temporary copy of `tests/fixtures/site` at `<tmp>/root`, with
/// `<tmp>/secret.txt` outside the root.
pub struct TestSite {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl TestSite {
    pub fn new() -> TestSite {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/site"),
            &root,
        );
        std::fs::write(dir.path().join("secret.txt"), "TOP-SECRET-CONTENT").unwrap();
        TestSite {
            root: root.canonicalize().unwrap(),
            _dir: dir,
        }
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    pub fn outside(&self) -> PathBuf {
        self.root.parent().unwrap().to_path_buf()
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A response, fully read.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn cache(&self) -> String {
        self.header("x-axle-cache")
    }

    /// Headers that must agree across cache modes (everything but
    /// `x-axle-cache` and `date`).
    pub fn comparable_headers(&self) -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = self
            .headers
            .iter()
            .filter(|(k, _)| *k != "x-axle-cache" && *k != "date")
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        h.sort();
        h
    }
}

impl Resp {
    /// A response read whole.
    pub async fn of(r: reqwest::Response) -> Resp {
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let body = r.bytes().await.unwrap().to_vec();
        Resp {
            status,
            headers,
            body,
        }
    }
}

/// A running server.
pub struct TestServer {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    client: reqwest::Client,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    pub async fn start(root: &Path, mode: CacheMode) -> TestServer {
        Self::start_with(root, mode, axle::Registry::default()).await
    }

    pub async fn start_with(root: &Path, mode: CacheMode, registry: axle::Registry) -> TestServer {
        let mut config = axle::ServeConfig::new(root);
        config.cache_mode = mode;
        Self::start_config(config, registry).await
    }

    /// Off mode, serializing and re-parsing at every stage boundary.
    pub async fn start_bytes_handoff(root: &Path) -> TestServer {
        let mut config = axle::ServeConfig::new(root);
        config.cache_mode = CacheMode::Off;
        config.force_byte_handoff = true;
        Self::start_config(config, axle::Registry::default()).await
    }

    pub async fn start_config(config: axle::ServeConfig, registry: axle::Registry) -> TestServer {
        let site = axle::site::SiteConfig::defaults(registry.clone());
        Self::start_full(config, registry, site).await
    }

    /// A server for `root` with `toml` written as its `axle.toml` and
    /// loaded, in `mode`.
    pub async fn start_with_toml(root: &Path, toml: &str, mode: CacheMode) -> TestServer {
        let config_path = root.join("axle.toml");
        std::fs::write(&config_path, toml).unwrap();
        let registry = axle::Registry::default();
        let site = axle::site::SiteConfig::load(&config_path, registry.clone()).unwrap();
        let mut serve = axle::ServeConfig::new(root);
        serve.cache_mode = mode;
        Self::start_full(serve, registry, site).await
    }

    /// A server with a loaded site configuration.
    pub async fn start_full(
        config: axle::ServeConfig,
        registry: axle::Registry,
        site: axle::site::SiteConfig,
    ) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::start_full_on(listener, config, registry, site).await
    }

    /// [`TestServer::start_full`] on a listener bound already (for a
    /// configuration that names the server's own address).
    pub async fn start_full_on(
        listener: tokio::net::TcpListener,
        mut config: axle::ServeConfig,
        registry: axle::Registry,
        site: axle::site::SiteConfig,
    ) -> TestServer {
        if config.workers == 0 {
            config.workers = 2;
        }
        let app = App::with_site(&config, registry, site).unwrap();
        let addr = listener.local_addr().unwrap();
        let served = app.clone();
        let task = tokio::spawn(async move {
            axle::http::serve_on(listener, served, std::future::pending())
                .await
                .unwrap();
        });
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        TestServer {
            addr,
            app,
            client,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Resp {
        let mut req = self.client.request(method, self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Resp::of(req.send().await.unwrap()).await
    }

    /// A request with a body.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<reqwest::Body>,
    ) -> Resp {
        let mut req = self.client.request(method, self.url(path)).body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Resp::of(req.send().await.unwrap()).await
    }

    /// POSTs `body` as `content_type`.
    pub async fn post(
        &self,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> Resp {
        self.send(
            reqwest::Method::POST,
            path,
            &[("content-type", content_type)],
            body,
        )
        .await
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.request(reqwest::Method::GET, path, &[]).await
    }

    /// Sends a raw request line (for paths a client library would normalize).
    pub async fn raw(&self, path: &str) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        stream.read_to_end(&mut buf).await.unwrap();
        let text = String::from_utf8_lossy(&buf).into_owned();
        let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, text)
    }

    pub fn stage_runs(&self) -> u64 {
        self.app
            .pipeline()
            .stats()
            .stage_runs
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Sleeps long enough that a rewritten file gets a new mtime on coarse
/// filesystems (the stamp also covers size, inode and ctime).
pub async fn tick() {
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
}
