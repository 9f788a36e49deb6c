//! Helpers for the cache-tier, compression and crash tests: a fresh copy
//! of `tests/fixtures/tiers`, the `axle` binary serving it on ephemeral
//! loopback ports (the public listener and, when asked, the admin one),
//! raw-byte requests, `/stats`, and the decoders.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Resp, axle, copy_dir};

/// A temporary copy of `tests/fixtures/tiers` at `<tmp>/root`.
pub struct TiersSite {
    dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl TiersSite {
    pub fn new() -> TiersSite {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiers"),
            &root,
        );
        TiersSite {
            root: root.canonicalize().unwrap(),
            dir,
        }
    }

    /// A path next to the root (not served), e.g. for a cache directory.
    pub fn beside(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }
}

/// `axle serve` as a child process on ephemeral loopback ports.
pub struct Axle {
    pub child: Child,
    /// `http://127.0.0.1:PORT` (no trailing `/`).
    pub url: String,
    /// The admin listener's `HOST:PORT`, when started with one.
    pub admin: Option<String>,
}

impl Axle {
    /// `axle serve --root ROOT --listen 127.0.0.1:0 [--admin 127.0.0.1:0] ARGS`.
    pub fn start(root: &Path, admin: bool, args: &[&str]) -> Axle {
        Axle::start_admin(root, admin.then_some("127.0.0.1:0"), args)
    }

    /// The same with the admin listener on `admin` (`[::1]:0`, ...).
    pub fn start_admin(root: &Path, admin_on: Option<&str>, args: &[&str]) -> Axle {
        let admin = admin_on.is_some();
        let mut cmd = axle();
        cmd.arg("serve")
            .arg("--root")
            .arg(root)
            .args(["--listen", "127.0.0.1:0"]);
        if let Some(addr) = admin_on {
            cmd.args(["--admin", addr]);
        }
        let mut child = cmd
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut url = None;
        let mut admin_addr = None;
        while url.is_none() || (admin && admin_addr.is_none()) {
            let mut line = String::new();
            let n = out.read_line(&mut line).unwrap();
            assert!(
                n > 0,
                "axle serve {args:?} exited before it printed its addresses"
            );
            let found = line
                .split_whitespace()
                .find(|w| w.starts_with("http://"))
                .map(|w| w.trim_end_matches('/').to_string());
            if line.contains("admin listener") {
                admin_addr = found.map(|u| u.trim_start_matches("http://").to_string());
            } else if line.contains("serving") {
                url = found;
            }
        }
        // Keep draining stdout so a later line never meets a closed pipe.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = out.read_to_end(&mut sink);
        });
        Axle {
            child,
            url: url.unwrap(),
            admin: admin_addr,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn admin(&self) -> &str {
        self.admin.as_deref().expect("started without --admin")
    }

    /// SIGKILL, and reaped.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Resp {
        request(
            reqwest::Method::GET,
            &format!("{}{path}", self.url),
            headers,
        )
        .await
    }

    pub async fn stats(&self) -> serde_json::Value {
        stats(self.admin()).await
    }
}

impl Drop for Axle {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A client that neither follows redirects nor decodes bodies (reqwest's
/// default features are off: no `Accept-Encoding` is added, and bodies
/// arrive as sent).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

pub async fn request(method: reqwest::Method, url: &str, headers: &[(&str, &str)]) -> Resp {
    let mut req = client().request(method, url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    Resp::of(req.send().await.unwrap()).await
}

/// `GET http://ADMIN/stats`, parsed.
pub async fn stats(admin: &str) -> serde_json::Value {
    let r = request(reqwest::Method::GET, &format!("http://{admin}/stats"), &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

/// The tier named `name` in a `/stats` document.
pub fn tier<'a>(stats: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    stats["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tier {name} in {stats}"))
}

/// A number in a `/stats` document.
pub fn num(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Polls `/stats` until `ok` holds of it (10 s at most), and returns it.
pub async fn wait_stats(
    admin: &str,
    what: &str,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let s = stats(admin).await;
        if ok(&s) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "waited for {what}: {s}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every cache file under `DIR/v2/<2 hex>/`.
pub fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(subs) = std::fs::read_dir(dir.join("v2")) else {
        return files;
    };
    for sub in subs.flatten() {
        let name = sub.file_name();
        let name = name.to_string_lossy();
        if name.len() != 2 || !sub.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(sub.path()).unwrap().flatten() {
            if f.file_name().len() == 64 {
                files.push(f.path());
            }
        }
    }
    files.sort();
    files
}

/// The cache file holding the response for URL path `url` (found by the
/// URL recorded inside it).
pub fn cache_file_of(dir: &Path, url: &str) -> PathBuf {
    let needle = url.as_bytes();
    let found: Vec<PathBuf> = cache_files(dir)
        .into_iter()
        .filter(|f| {
            let bytes = std::fs::read(f).unwrap();
            bytes.windows(needle.len()).any(|w| w == needle)
        })
        .collect();
    assert_eq!(found.len(), 1, "cache files of {url}: {found:?}");
    found.into_iter().next().unwrap()
}

pub fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("a gzip body");
    out
}

pub fn unbrotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 4096)
        .read_to_end(&mut out)
        .expect("a br body");
    out
}

/// The body of `r` decoded per its `Content-Encoding`.
pub fn decoded(r: &Resp) -> Vec<u8> {
    match r.header("content-encoding").as_str() {
        "" => r.body.clone(),
        "gzip" => gunzip(&r.body),
        "br" => unbrotli(&r.body),
        other => panic!("unexpected content-encoding {other}"),
    }
}

/// Is this process root (and so able to mount a tmpfs)?
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A tmpfs mounted on a directory for the test's length.
pub struct Mount(PathBuf);

impl Mount {
    pub fn new(dir: &Path, options: &str) -> Option<Mount> {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(dir.to_path_buf()))
    }

    pub fn remount(&self, options: &str) -> bool {
        std::process::Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Skips a test whose condition cannot be made here, loudly; under
/// `CI=true` that is a failure instead.
pub fn skip(why: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "cannot run under CI: {why}"
    );
    eprintln!("SKIPPED: {why}");
}
