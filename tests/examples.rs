//! Runs every program in `examples/`, so that an example that compiles but
//! no longer works (a server that does not start, a flag that is gone, a
//! page that changed) fails a test. Each is run as the program Cargo
//! builds for it next to this test (`target/<profile>/examples/<name>`;
//! see [`build_examples`] for why the test asks Cargo for them); one that
//! is missing fails the test with its name. The list is the `examples/`
//! directory itself, so a new example without a run here fails too. The
//! servers are started on `--listen 127.0.0.1:0`, asked one or two real
//! requests on the port they print, and killed; the others are given the
//! smallest arguments that still check something.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a program may take to start, or the conformance run to end
/// (debug builds on a busy machine).
const PATIENCE: Duration = Duration::from_secs(120);

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn samples() -> PathBuf {
    manifest_dir().join("samples")
}

#[test]
fn every_example_runs() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(manifest_dir().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        let name = if path.is_dir() && path.join("main.rs").is_file() {
            path.file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string)
        } else if path.extension().is_some_and(|e| e == "rs") {
            path.file_stem()
                .and_then(|n| n.to_str())
                .map(str::to_string)
        } else {
            None
        };
        names.extend(name);
    }
    names.sort();
    assert!(!names.is_empty(), "no examples found");
    let dir = build_examples().unwrap_or_else(|why| panic!("{why}"));
    // All at once, each reporting for itself.
    let failures: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = names
            .iter()
            .map(|name| (name, scope.spawn(|| run(&dir, name))))
            .collect();
        runs.into_iter()
            .filter_map(|(name, handle)| match handle.join() {
                Ok(Ok(())) => None,
                Ok(Err(why)) => Some(format!("examples/{name}: {why}")),
                Err(_) => Some(format!("examples/{name}: its run panicked")),
            })
            .collect()
    });
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n\n"));
}

/// The run of the example `name`: every example has one.
fn run(dir: &Path, name: &str) -> Result<(), String> {
    let check: fn(&Path) -> Result<(), String> = match name {
        "cache_tier" => cache_tier,
        "conformance" => conformance,
        "custom_language" => custom_language,
        "dynamic_source" => dynamic_source,
        "hit_floor" => hit_floor,
        other => {
            return Err(format!(
                "no run for examples/{other} in tests/examples.rs: add one (start it with the \
                 smallest meaningful arguments and check what it does)"
            ));
        }
    };
    check(&binary(dir, name)?)
}

/// Two servers sharing the example's tier: a page rendered by the first
/// is a hit from the shared tier on the second, byte for byte, and then a
/// memory hit there.
fn cache_tier(bin: &Path) -> Result<(), String> {
    let samples = samples();
    let mut a = Server::start(bin, &["--root".as_ref(), samples.as_os_str()])?;
    let line = a
        .stdout
        .recv_timeout(PATIENCE)
        .map_err(|_| "no second \"on http://ADDR/\" line".to_string())?;
    let b_addr = line
        .split_once("on http://")
        .and_then(|(_, rest)| rest.split_once('/'))
        .map(|(addr, _)| addr.to_string())
        .ok_or_else(|| format!("not an address line: {line}"))?;
    let first = a.get("/")?;
    first.expect(200, "miss", "</html>")?;
    // The write to the tier happens after the response: give it a moment.
    let deadline = Instant::now() + PATIENCE;
    let a_addr = std::mem::replace(&mut a.addr, b_addr);
    loop {
        let got = a.get("/")?;
        if got.cache == "hit; tier=shared" {
            got.expect(200, "hit; tier=shared", &first.body)?;
            if got.body != first.body {
                return Err("the shared tier's body differs".into());
            }
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "instance b never hit the shared tier: {}",
                got.cache
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    a.get("/")?.expect(200, "hit", &first.body)?;
    a.addr = a_addr;
    Ok(())
}

/// The conformance suites' first three cases of each manifest, in every
/// mode; without the suites, the example's refusal (exit 2, the banner).
fn conformance(bin: &Path) -> Result<(), String> {
    let shared = match std::env::var_os("AXLE_SHARED") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => manifest_dir().join("../shared"),
    };
    let conf = shared.join("conformance");
    let present = ["libxslt", "xalan-conf"]
        .iter()
        .all(|suite| conf.join(suite).join("MANIFEST.tsv").is_file());
    let (status, stdout, stderr) = finish(Command::new(bin).args(["--limit", "3"]))?;
    let said = || format!("{status}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    if !present {
        eprintln!(
            "examples/conformance: no suites at {}: checking its refusal",
            conf.display()
        );
        return (status.code() == Some(2) && stderr.contains("NOT FOUND"))
            .then_some(())
            .ok_or_else(|| {
                format!(
                    "without the suites: exit 2 and the banner expected; {}",
                    said()
                )
            });
    }
    if !status.success() {
        return Err(format!("a failing run: {}", said()));
    }
    if !stdout.contains("Axle XSLT conformance: 6 cases from")
        || !stdout.contains("Mode mismatches: 0")
    {
        return Err(format!("not the report of 2 x 3 cases: {}", said()));
    }
    Ok(())
}

/// The numbered Language under the sample site's layout: the numbered
/// headings, then the same page from the cache.
fn custom_language(bin: &Path) -> Result<(), String> {
    let samples = samples();
    let mut server = Server::start(bin, &["--root".as_ref(), samples.as_os_str()])?;
    let first = server.get("/custom/numbered.xml")?;
    first.expect(
        200,
        "miss",
        "<span class=\"secnum\">2.1.1</span> Third level",
    )?;
    first.expect(200, "miss", "<h5>Fourth level</h5>")?; // past max-depth
    server
        .get("/custom/numbered.xml")?
        .expect(200, "hit", &first.body)
}

/// The generated article: rendered whole once, then its stages after the
/// volatile first one reused.
fn dynamic_source(bin: &Path) -> Result<(), String> {
    let mut server = Server::start(bin, &["--cache".as_ref(), "incremental".as_ref()])?;
    let title = "A short history of XML publishing pipelines";
    let first = server.get("/dynamic/article.xml")?;
    first.expect(200, "miss", title)?;
    server
        .get("/dynamic/article.xml")?
        .expect(200, "partial 2/3", &first.body)
}

/// A file's bytes from memory with an ETag; 404 for what is not there.
fn hit_floor(bin: &Path) -> Result<(), String> {
    let samples = samples();
    let mut server = Server::start(bin, &["--root".as_ref(), samples.as_os_str()])?;
    if !server.said.contains(" files, ") {
        return Err(format!("its line: {:?}", server.said));
    }
    let file = std::fs::read_to_string(samples.join("articles/xml-pipelines.xml"))
        .map_err(|e| e.to_string())?;
    let got = server.get("/articles/xml-pipelines.xml")?;
    got.expect(200, "", &file)?;
    if got.body != file || !got.etag.starts_with('"') {
        return Err(format!("not the file with a strong ETag: {got:?}"));
    }
    server.get("/no/such/file.xml")?.expect(404, "", "")
}

/// Where the example programs are: `target/<profile>/examples`, next to
/// this test's own `target/<profile>/deps`, once Cargo has built them.
///
/// `cargo test --all-targets` (and `--examples`) builds examples as test
/// harnesses only (their `#[test]`s), and plain `cargo test` builds the
/// programs of examples without `test = true` only; so Cargo is asked for
/// all of them here (`cargo build --examples`, in this test's profile; a
/// no-op when they are up to date), and a program still missing then is a
/// failure naming it.
fn build_examples() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("no target directory above {}", exe.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut build = Command::new(cargo);
    build
        .current_dir(manifest_dir())
        .args(["build", "--examples", "--quiet"]);
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            build.arg("--release");
        }
        Some(other) => {
            build.args(["--profile", other]);
        }
    }
    let (status, _, stderr) = finish(&mut build)?;
    if !status.success() {
        return Err(format!(
            "cargo build --examples failed ({status}):\n{stderr}"
        ));
    }
    Ok(profile_dir.join("examples"))
}

/// The program of the example `name`, built.
fn binary(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "its program {} is missing after cargo build --examples",
            bin.display()
        ))
    }
}

/// Runs a program to its end (within [`PATIENCE`]): status, stdout, stderr.
fn finish(command: &mut Command) -> Result<(ExitStatus, String, String), String> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break status,
            None if started.elapsed() > PATIENCE => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("still running after {PATIENCE:?}"));
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let text = |h: std::thread::JoinHandle<String>| h.join().unwrap_or_default();
    Ok((status, text(out), text(err)))
}

/// Reads a pipe to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}

/// An example server started on an ephemeral port; killed when dropped.
struct Server {
    child: Child,
    /// Its address, from the `... on http://ADDR/ ...` line.
    addr: String,
    /// That line.
    said: String,
    stderr: Arc<Mutex<String>>,
    /// Its stdout's lines (kept open, so a later line never meets a
    /// closed pipe).
    stdout: Receiver<String>,
}

impl Server {
    /// Starts `bin ARGS --listen 127.0.0.1:0` and reads the address it
    /// prints.
    fn start(bin: &Path, args: &[&std::ffi::OsStr]) -> Result<Server, String> {
        let mut child = Command::new(bin)
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start it: {e}"))?;
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(pipe) = child.stderr.take() {
            let stderr = Arc::clone(&stderr);
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut text = stderr.lock().unwrap_or_else(|p| p.into_inner());
                    text.push_str(&line);
                    text.push('\n');
                }
            });
        }
        let (send, lines) = channel();
        if let Some(pipe) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    if send.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut server = Server {
            child,
            addr: String::new(),
            said: String::new(),
            stderr,
            stdout: lines,
        };
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match server.stdout.recv_timeout(left) {
                Ok(line) => {
                    let addr = line
                        .split_once("on http://")
                        .and_then(|(_, rest)| rest.split_once('/'))
                        .map(|(addr, _)| addr.to_string());
                    if let Some(addr) = addr {
                        server.addr = addr;
                        server.said = line;
                        return Ok(server);
                    }
                }
                Err(_) => {
                    return Err(format!(
                        "no \"on http://ADDR/\" line on stdout (exited: {:?}); stderr:\n{}",
                        server.child.try_wait(),
                        server.stderr()
                    ));
                }
            }
        }
    }

    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// `GET path` on the server.
    fn get(&mut self, path: &str) -> Result<Got, String> {
        let url = format!("http://{}{path}", self.addr);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let got = runtime.block_on(async {
            let client = reqwest::Client::builder()
                .timeout(PATIENCE)
                .build()
                .map_err(|e| e.to_string())?;
            let response = client.get(&url).send().await.map_err(|e| e.to_string())?;
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string()
            };
            let (cache, etag) = (header("x-axle-cache"), header("etag"));
            let status = response.status().as_u16();
            let body = response.text().await.map_err(|e| e.to_string())?;
            Ok::<_, String>(Got {
                url: url.clone(),
                status,
                cache,
                etag,
                body,
            })
        });
        got.map_err(|e| format!("GET {url}: {e}; its stderr:\n{}", self.stderr()))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response.
#[derive(Debug)]
struct Got {
    url: String,
    status: u16,
    /// `X-Axle-Cache` ("" when absent).
    cache: String,
    etag: String,
    body: String,
}

impl Got {
    /// Has it this status, this `X-Axle-Cache` and `part` in its body?
    fn expect(&self, status: u16, cache: &str, part: &str) -> Result<(), String> {
        if self.status == status && self.cache == cache && self.body.contains(part) {
            return Ok(());
        }
        let shown: String = self.body.chars().take(600).collect();
        Err(format!(
            "GET {}: {} with X-Axle-Cache {:?} expected, and {:?} in the body; got {} with {:?}:\n{shown}",
            self.url,
            status,
            cache,
            part.chars().take(80).collect::<String>(),
            self.status,
            self.cache
        ))
    }
}

/// The examples in the crate's documentation (the builder, a Language
/// written with the roxmltree view, the plug-in API) compile and run:
/// `cargo test --all-targets`, the project's test command, does not run
/// doc tests, so this test asks Cargo for them.
#[test]
fn the_documentation_examples_run() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut doc = Command::new(cargo);
    doc.current_dir(manifest_dir())
        .args(["test", "--doc", "--quiet"]);
    let (status, stdout, stderr) = finish(&mut doc).unwrap_or_else(|why| panic!("{why}"));
    assert!(
        status.success(),
        "cargo test --doc failed ({status}):\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("test result: ok"), "{stdout}");
}
