//! Helpers shared by the tests that run real servers in front of Axle
//! (`deploy_configs.rs`, `browser_xslt.rs`): finding a tool (a loud skip
//! when absent, a failure under `CI=true`), free loopback ports, Axle
//! started and its ready line read, processes stopped when dropped, and
//! a raw HTTP/1.1 GET that shows the response as it came over the wire.
//! Each test crate uses a part of them.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to start or a condition to become true
/// (debug builds on a busy machine).
pub const PATIENCE: Duration = Duration::from_secs(15);

pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn shipped(name: &str) -> String {
    std::fs::read_to_string(manifest_dir().join("docs/deploy").join(name)).unwrap()
}

/// The tool `name` on `PATH` or in the sbin directories (nginx and
/// haproxy live there, which a user's `PATH` may lack). `None` skips the
/// test, loudly; under `CI=true` a missing tool fails it.
pub fn tool(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from));
    let found = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but `{name}` is not installed (.ci/run installs it)"
        );
        eprintln!("SKIPPED: {name} not installed: the deployment file it checks was not checked");
    }
    found
}

/// A loopback port nothing listens on (free when asked; the tools bind
/// it right after).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A temporary directory that other users can enter (nginx's workers run
/// as `nobody` when the test runs as root).
pub fn tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// `text` with `from` replaced by `to`, which must occur exactly once (a
/// shipped file that changed shape fails here, not silently).
pub fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "expected `{from}` once in the shipped file"
    );
    text.replacen(from, to, 1)
}

pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `proc` accepts on 127.0.0.1:`port`; if it exits first,
/// fails with what it wrote to `log`.
pub fn wait_for_port(proc: &mut Proc, port: u16, log: &Path) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        let exited = proc.0.try_wait().unwrap();
        if exited.is_some() || start.elapsed() > PATIENCE {
            panic!(
                "nothing accepts on 127.0.0.1:{port} ({}); its output:\n{}",
                exited.map_or("still running".to_string(), |s| s.to_string()),
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{sig} {pid}");
}

/// A child process stopped with SIGTERM (then SIGKILL) when dropped, so
/// nginx's master takes its workers with it.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = Command::new("kill")
                .args(["-TERM", &self.0.id().to_string()])
                .status();
            let start = Instant::now();
            while let Ok(None) = self.0.try_wait() {
                if start.elapsed() > Duration::from_secs(5) {
                    let _ = self.0.kill();
                    let _ = self.0.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// `axle serve ARGS` with stdout read up to its ready line; returns the
/// process and the public and admin ports it printed. Its stderr goes to
/// `stderr`.
pub fn start_axle(args: &[String], stderr: Stdio) -> (Proc, u16, Option<u16>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_axle"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let proc = Proc(child);
    let port_of = |line: &str| -> u16 {
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap();
        url.trim_start_matches("http://")
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (mut public, mut admin) = (None, None);
    let mut lines = BufReader::new(stdout).lines();
    while public.is_none() {
        let line = lines
            .next()
            .expect("axle exited before its ready line")
            .unwrap();
        if line.starts_with("axle: admin listener on ") {
            admin = Some(port_of(&line));
        } else if line.starts_with("axle: serving ") {
            public = Some(port_of(&line));
        }
    }
    // Keep reading stdout (an access log on `-` would write there).
    std::thread::spawn(move || for _ in lines {});
    (proc, public.unwrap(), admin)
}

/// `axle serve --root samples --listen 127.0.0.1:0 EXTRA...`.
pub fn start_sample_axle(extra: &[&str]) -> (Proc, u16) {
    let mut args: Vec<String> = vec![
        "serve".into(),
        "--root".into(),
        manifest_dir().join("samples").display().to_string(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let (proc, port, _) = start_axle(&args, Stdio::null());
    (proc, port)
}

/// A response as it came over the wire (no decoding of its body's
/// content coding).
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// GET `path` from 127.0.0.1:`port` over a fresh HTTP/1.1 connection,
/// with `headers`; reads to the end (chunked bodies decoded).
pub fn get(port: u16, path: &str, headers: &[(&str, &str)]) -> Resp {
    get_as(port, "www.example.org", path, headers)
}

/// The same under `Host: host` (the admin listener answers only its own
/// names, as Prometheus sends them: the target's address).
pub fn get_as(port: u16, host: &str, path: &str, headers: &[(&str, &str)]) -> Resp {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a whole response head");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut rest = raw[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    if chunked {
        let mut body = Vec::new();
        loop {
            let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size_text = String::from_utf8_lossy(&rest[..eol]).to_string();
            let size =
                usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
            rest.drain(..eol + 2 + size + 2);
        }
        rest = body;
    }
    Resp {
        status,
        headers,
        body: rest,
    }
}

/// The fenced blocks of the page `doc` (a path under the repository) in
/// the language `lang`.
pub fn doc_blocks(doc: &str, lang: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(manifest_dir().join(doc)).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (&mut current, line.trim_start().strip_prefix("```")) {
            (None, Some(tag)) if tag.trim() == lang => current = Some(String::new()),
            (Some(block), Some("")) => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// nginx (`nginx`, the binary) started in the foreground with prefix
/// `dir` and main file `config`, ready on 127.0.0.1:`port` (its log,
/// `dir/error.log`, shown if it fails to start).
pub fn start_nginx(nginx: &Path, dir: &Path, config: &Path, port: u16) -> Proc {
    let mut proc = Proc(
        Command::new(nginx)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_port(&mut proc, port, &dir.join("error.log"));
    proc
}

/// Every `toml` block of the page `doc` loads as a site's `axle.toml`
/// (`axle check`); there are at least `at_least` of them.
pub fn doc_toml_loads(doc: &str, at_least: usize) {
    let blocks = doc_blocks(doc, "toml");
    assert!(blocks.len() >= at_least, "toml blocks in {doc}");
    for block in blocks {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("axle.toml"), &block).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_axle"))
            .arg("check")
            .arg("--root")
            .arg(root.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{doc}'s block does not load:\n{block}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Every `axle ...` command in the `sh` blocks of the page `doc` parses:
/// its subcommand and flags exist (run with `--help` appended, so nothing
/// is served or changed); there are at least `at_least` of them.
pub fn doc_commands_parse(doc: &str, at_least: usize) {
    let mut checked = 0;
    for block in doc_blocks(doc, "sh") {
        let joined = block.replace("\\\n", " ");
        for line in joined.lines() {
            let line = line.split(" #").next().unwrap().trim();
            let Some(args) = line
                .strip_prefix("sudo -u axle axle ")
                .or_else(|| line.strip_prefix("axle "))
            else {
                continue;
            };
            let out = Command::new(env!("CARGO_BIN_EXE_axle"))
                .args(args.split_whitespace())
                .arg("--help")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{doc}: `axle {args}` does not parse:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            checked += 1;
        }
    }
    assert!(
        checked >= at_least,
        "only {checked} axle commands found in {doc}"
    );
}

/// `axle serve --root SITE --listen 127.0.0.1:0`: the process and its
/// port.
pub fn start_axle_on(site: &Path) -> (Proc, u16) {
    let args = [
        "serve".to_string(),
        "--root".into(),
        site.display().to_string(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ];
    let (proc, port, _) = start_axle(&args, Stdio::null());
    (proc, port)
}

/// `nginx -t` with prefix `dir` and main file `config` succeeds; its
/// stderr (for the caller's checks of warnings).
pub fn nginx_t(nginx: &Path, dir: &Path, config: &Path) -> String {
    let out = Command::new(nginx)
        .arg("-t")
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "nginx -t:\n{stderr}");
    stderr
}

/// A shipped nginx snippet with its upstream (`server 127.0.0.1:8080;`)
/// on `axle_port` and its listener (`listen 80;`, `listen [::]:80;`) on
/// 127.0.0.1:`port` only.
pub fn nginx_on_loopback(snippet: &str, axle_port: u16, port: u16) -> String {
    let snippet = replace_once(
        snippet,
        "server 127.0.0.1:8080;",
        &format!("server 127.0.0.1:{axle_port};"),
    );
    let snippet = replace_once(&snippet, "listen 80;", &format!("listen 127.0.0.1:{port};"));
    replace_once(&snippet, "listen [::]:80;", "")
}
