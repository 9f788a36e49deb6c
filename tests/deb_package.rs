//! The Debian package (`scripts/build-deb`, docs/deploy.md "A Debian
//! package"), built, installed and removed for real: one test, because
//! every step needs the one before and they change the machine.
//!
//! It builds the package from the binary these tests built (a debug build:
//! packaging a release build would add minutes of compiling to CI), then
//! `dpkg -i`; checks the files, the conffile, the `axle` user, the unit
//! (the shipped `docs/deploy/axle.service` but for the binary's path;
//! `systemd-analyze verify` where installed); runs the unit's ExecStart as
//! systemd would (its User/Group, its working directory, its Cache/Logs/
//! RuntimeDirectory created for it, a clean environment) with its
//! addresses on free loopback ports; fetches the packaged site's page as
//! rendered HTML; stops it with SIGTERM (exit 0); then `dpkg -r` (conffile
//! kept) and `dpkg --purge` (everything gone).
//!
//! Installing a package needs root, so it runs only as root under
//! `CI=true` (`.ci/run`); anywhere else it passes with a loud `SKIPPED:`
//! line, so a developer's `cargo test --all-targets` never touches their
//! system. An `axle` package already installed is refused, never replaced.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const UNIT: &str = "/usr/lib/systemd/system/axle.service";
const CONFFILE: &str = "/etc/axle/axle.toml";

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

fn run_ok(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "{program} {args:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn installed() -> bool {
    let out = run("dpkg-query", &["-W", "-f=${Status}", "axle"]);
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains("installed")
}

/// The unit's `KEY=` value, `\`-continued lines joined; `None` if unset.
fn unit_value(unit: &str, key: &str) -> Option<String> {
    let mut lines = unit.lines();
    let prefix = format!("{key}=");
    while let Some(line) = lines.next() {
        if let Some(first) = line.strip_prefix(&prefix) {
            let mut value = first.to_string();
            while value.ends_with('\\') {
                value.pop();
                value.push(' ');
                value.push_str(lines.next().unwrap().trim());
            }
            return Some(value);
        }
    }
    None
}

fn uid_gid(user: &str) -> (u32, u32) {
    let id = |flag: &str| run_ok("id", &[flag, user]).trim().parse().unwrap();
    (id("-u"), id("-g"))
}

/// Purges the package if the test fails after installing it, so the next
/// run starts from a clean machine.
struct Installed {
    purged: bool,
}

impl Drop for Installed {
    fn drop(&mut self) {
        if !self.purged {
            let _ = run("dpkg", &["--purge", "axle"]);
        }
    }
}

/// A started process stopped with SIGKILL if the test fails first.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `GET path` on 127.0.0.1:`port`: status, head (lower-cased), body.
fn get(port: u16, path: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}

#[test]
fn deb_package_installs_serves_and_purges() {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let root = rustix::process::geteuid().is_root();
    if !(ci && root) {
        eprintln!(
            "SKIPPED: the Debian package test (build, dpkg -i, run the unit, dpkg --purge) \
             runs only as root with CI=true (ci={ci}, root={root}); nothing was installed"
        );
        return;
    }
    assert!(
        !installed(),
        "an axle package is already installed here; this test does not replace it"
    );
    let srv_axle_existed = Path::new("/srv/axle").exists();

    // Build (from the test binary, gzip -1: the package is thrown away).
    let out_dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let built = run_ok(
        manifest_dir().join("scripts/build-deb").to_str().unwrap(),
        &[
            "--binary",
            env!("CARGO_BIN_EXE_axle"),
            "--fast",
            "--out",
            out_dir.path().to_str().unwrap(),
        ],
    );
    let deb = built.lines().last().unwrap().to_string();
    eprintln!("built {deb} in {:?}", started.elapsed());
    let fields = run_ok("dpkg-deb", &["-f", &deb, "Package", "Depends"]);
    assert!(fields.contains("Package: axle"), "{fields}");
    for lib in ["libxml2", "libxslt1.1"] {
        assert!(fields.contains(lib), "Depends lacks {lib}: {fields}");
    }

    // Install.
    let mut guard = Installed { purged: false };
    run_ok("dpkg", &["-i", &deb]);
    assert!(installed());

    // The files.
    let copyright = std::fs::read_to_string("/usr/share/doc/axle/copyright").unwrap();
    assert!(copyright.contains("License: Apache-2.0"), "{copyright}");
    let version = run_ok("/usr/bin/axle", &["--version"]);
    assert!(version.starts_with("axle "), "{version}");
    let unit = std::fs::read_to_string(UNIT).unwrap();
    let shipped = std::fs::read_to_string(manifest_dir().join("docs/deploy/axle.service")).unwrap();
    assert_eq!(
        unit,
        shipped.replacen(
            "ExecStart=/usr/local/bin/axle ",
            "ExecStart=/usr/bin/axle ",
            1
        ),
        "the packaged unit is docs/deploy/axle.service but for the binary's path"
    );
    let conffiles = run_ok("dpkg-query", &["-W", "-f=${Conffiles}", "axle"]);
    assert!(conffiles.contains(CONFFILE), "conffiles: {conffiles}");
    assert_eq!(
        std::fs::read_link("/srv/axle/current").unwrap(),
        Path::new("releases/default")
    );
    assert_eq!(
        std::fs::read_link("/srv/axle/releases/default/axle.toml").unwrap(),
        Path::new(CONFFILE)
    );
    let (uid, gid) = uid_gid("axle");
    assert_ne!(uid, 0);
    let shell = run_ok("getent", &["passwd", "axle"]);
    assert!(shell.trim_end().ends_with("/usr/sbin/nologin"), "{shell}");
    // The site: root's, readable by the axle group, not by others.
    for path in [
        "/srv/axle/releases/default/index.xml",
        "/srv/axle/releases/default/stylesheets/welcome.xsl",
        CONFFILE,
    ] {
        let meta = std::fs::metadata(path).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (0, gid), "{path}'s owner");
        assert_eq!(meta.permissions().mode() & 0o777, 0o640, "{path}'s mode");
    }

    // The unit, as systemd reads it.
    if let Ok(analyze) = which("systemd-analyze") {
        let out = Command::new(analyze)
            .args(["verify", UNIT])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "systemd-analyze verify:\n{stderr}");
        let about_unit: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("axle.service"))
            .collect();
        assert!(
            about_unit.is_empty(),
            "systemd-analyze verify: {about_unit:?}"
        );
    } else {
        panic!("CI=true but systemd-analyze is not installed (.ci/run installs it)");
    }

    // The unit's ExecStart, run as systemd would run it.
    let exec = unit_value(&unit, "ExecStart").unwrap();
    assert!(
        !exec.contains(['"', '\'', '$', '%']),
        "ExecStart needs a shell: {exec}"
    );
    assert_eq!(unit_value(&unit, "User").as_deref(), Some("axle"));
    assert_eq!(unit_value(&unit, "Group").as_deref(), Some("axle"));
    let workdir = unit_value(&unit, "WorkingDirectory").unwrap_or_else(|| "/".into());
    // CacheDirectory=, LogsDirectory=, RuntimeDirectory=: made for the
    // service and owned by it.
    let mut made = Vec::new();
    for (key, base) in [
        ("CacheDirectory", "/var/cache"),
        ("LogsDirectory", "/var/log"),
        ("RuntimeDirectory", "/run"),
    ] {
        let name = unit_value(&unit, key).unwrap();
        let dir = Path::new(base).join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
        let mode = unit_value(&unit, &format!("{key}Mode"))
            .map_or(0o755, |m| u32::from_str_radix(&m, 8).unwrap());
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        made.push(dir);
    }
    let mut words = exec.split_whitespace();
    let program = words.next().unwrap();
    assert_eq!(program, "/usr/bin/axle");
    let mut args: Vec<String> = Vec::new();
    let mut words = words.peekable();
    while let Some(word) = words.next() {
        args.push(word.to_string());
        if matches!(word, "--listen" | "--admin") {
            words.next();
            args.push("127.0.0.1:0".into());
        }
    }
    // UMask= through a shell's `umask` (setting it in the child directly
    // would need `unsafe`), which then execs the command line unchanged.
    let umask = unit_value(&unit, "UMask").unwrap_or_else(|| "0022".into());
    let mut child = Command::new("/bin/sh")
        .args([
            "-c",
            "umask \"$1\"; shift; exec \"$@\"",
            "sh",
            &umask,
            program,
        ])
        .args(&args)
        .current_dir(&workdir)
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .uid(uid)
        .gid(gid)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut axle = Proc(child);
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    let mut port = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("axle: serving ") {
            assert!(rest.starts_with("/srv/axle/"), "{line}");
            let url = rest
                .split_whitespace()
                .find(|w| w.starts_with("http://"))
                .unwrap();
            port = Some(
                url.trim_end_matches('/')
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap(),
            );
            break;
        }
    }
    let Some(port) = port else {
        let _ = axle.0.wait();
        panic!(
            "the unit's ExecStart exited before serving:\n{}",
            errors.join().unwrap()
        );
    };
    let (status, head, body) = get(port, "/");
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(body.contains("<h1>Axle is running</h1>"), "{body}");
    let pid = std::fs::read_to_string("/run/axle/axle.pid").unwrap();
    assert_eq!(pid.trim(), axle.0.id().to_string());
    // KillSignal=SIGTERM: exit 0, pid file removed.
    assert_eq!(unit_value(&unit, "KillSignal").as_deref(), Some("SIGTERM"));
    run_ok("kill", &["-TERM", &axle.0.id().to_string()]);
    let status = axle.0.wait().unwrap();
    let errors = errors.join().unwrap();
    assert!(status.success(), "stopped with {status}:\n{errors}");
    assert!(!Path::new("/run/axle/axle.pid").exists());
    let log = std::fs::metadata("/var/log/axle/access.log").unwrap();
    assert_eq!(log.uid(), uid, "the access log is written as axle");
    assert!(
        std::fs::read_to_string("/var/log/axle/access.log")
            .unwrap()
            .contains("\"GET / HTTP/1.1\" 200")
    );
    // systemd removes RuntimeDirectory= when the service stops.
    std::fs::remove_dir_all("/run/axle").unwrap();

    // Remove: the files go, the conffile stays.
    run_ok("dpkg", &["-r", "axle"]);
    for gone in [
        "/usr/bin/axle",
        UNIT,
        "/srv/axle/releases/default",
        "/srv/axle/current",
    ] {
        assert!(
            std::fs::symlink_metadata(gone).is_err(),
            "{gone} is still there after dpkg -r"
        );
    }
    assert!(
        Path::new(CONFFILE).is_file(),
        "dpkg -r removed the conffile"
    );

    // Purge: the conffile and what the service wrote go too.
    run_ok("dpkg", &["--purge", "axle"]);
    guard.purged = true;
    assert!(!installed());
    let listed = run("dpkg", &["-L", "axle"]);
    assert!(
        !listed.status.success(),
        "dpkg still lists the package's files"
    );
    for gone in made
        .iter()
        .map(|p| p.as_path())
        .chain([Path::new("/etc/axle")])
    {
        assert!(
            !gone.exists(),
            "{} is still there after dpkg --purge",
            gone.display()
        );
    }
    if !srv_axle_existed {
        assert!(
            !Path::new("/srv/axle").exists(),
            "/srv/axle is still there after dpkg --purge"
        );
    }
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .ok_or(())
}

/// What the package installs as the site and its configuration loads as
/// the unit would load it (`axle check`, the conffile in the root as the
/// packaged symlink puts it): runs everywhere, root or not.
#[test]
fn packaged_site_and_config_check() {
    let root = tempfile::tempdir().unwrap();
    let site = manifest_dir().join("packaging/deb/site");
    let out = run_ok(
        "cp",
        &[
            "-r",
            &format!("{}/.", site.display()),
            root.path().to_str().unwrap(),
        ],
    );
    assert!(out.is_empty());
    std::fs::copy(
        manifest_dir().join("packaging/deb/axle.toml"),
        root.path().join("axle.toml"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_axle"))
        .arg("check")
        .arg("--root")
        .arg(root.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "axle check: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = Command::new(env!("CARGO_BIN_EXE_axle"))
        .arg("render")
        .arg("--root")
        .arg(root.path())
        .arg(root.path().join("index.xml"))
        .output()
        .unwrap();
    let html = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    assert!(html.contains("<h1>Axle is running</h1>"), "{html}");
}
