//! The deployment files `docs/deploy.md` ships (`docs/deploy/`), checked
//! by the programs that read them and, where that can be done on
//! loopback, run for real:
//!
//! - `axle.service`: `systemd-analyze verify` (and its offline security
//!   score), then its ExecStart run as written (paths moved into a
//!   temporary directory, addresses onto free loopback ports): ready, pid
//!   file, a page, its ExecReload (SIGHUP reloads), the access log, its
//!   KillSignal (exit 0, pid file removed); the admin listener's
//!   `/metrics` through `promtool check metrics`.
//! - `nginx.conf`: `nginx -t`, then a real nginx with the file in front of
//!   a real Axle: the same bytes, ETag, Vary and Last-Modified as direct,
//!   and Axle's own gzip and br variants (not nginx's), 304s included.
//! - `haproxy.cfg`: `haproxy -c`, then a real HAProxy with the file in
//!   front of two Axle instances: round robin, health checks, an instance
//!   stopped.
//! - `prometheus.yml`: `promtool check config`.
//! - The files agree with each other (ports).
//! - `docs/deploy.md` itself: every `axle` command in its `sh` blocks
//!   parses, every `toml` block loads (`axle check`). Examples of the
//!   shared Redis tier (issue #27) are noted, not failed, while the build
//!   lacks it.
//!
//! A tool that is not installed skips its test with a loud `SKIPPED:`
//! line; under `CI=true` that is a failure (`.ci/run` installs them).
//! Traffic goes to 127.0.0.1 only.

mod deploy_support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use deploy_support::*;

// ---------------------------------------------------------------- systemd

/// The unit's `KEY=` value, with `\`-continued lines joined.
fn unit_value(unit: &str, key: &str) -> String {
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
            return value;
        }
    }
    panic!("the unit has no {key}=");
}

/// `axle.service` passes `systemd-analyze verify` (with ExecStart pointing
/// at the binary these tests built: verify needs it to exist) without a
/// warning about the unit, and its offline security score is "OK" or
/// better.
#[test]
fn systemd_unit_verifies() {
    let Some(analyze) = tool("systemd-analyze") else {
        return;
    };
    let dir = tempdir();
    let unit = replace_once(
        &shipped("axle.service"),
        "ExecStart=/usr/local/bin/axle ",
        &format!("ExecStart={} ", env!("CARGO_BIN_EXE_axle")),
    );
    let path = dir.path().join("axle.service");
    std::fs::write(&path, unit).unwrap();
    let out = Command::new(&analyze)
        .args(["verify", "--man=no"])
        .arg(&path)
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
        "systemd-analyze verify warns about the unit:\n{}",
        about_unit.join("\n")
    );

    // The exposure score (systemd 250 and later read a unit file offline).
    let out = Command::new(&analyze)
        .args(["security", "--offline=true", "--no-pager"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    match text.lines().find(|l| l.contains("Overall exposure level")) {
        Some(line) => {
            let score: f64 = line
                .split(':')
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("no score in {line:?}"));
            eprintln!("axle.service: {}", line.trim());
            assert!(score <= 2.5, "the unit's exposure grew: {line}");
        }
        None => eprintln!(
            "note: systemd-analyze security --offline is not supported here; score not checked"
        ),
    }
}

/// The unit's ExecStart, run as written with its paths moved under a
/// temporary directory and its addresses onto free loopback ports: it
/// gets ready on a root that is a symlink, writes its pid file, serves a
/// page, reloads on the unit's ExecReload, logs the request, exports
/// metrics Prometheus parses, and stops on the unit's KillSignal with
/// status 0, removing its pid file.
#[test]
fn systemd_unit_command_line_runs() {
    let unit = shipped("axle.service");
    let exec = unit_value(&unit, "ExecStart");
    assert!(!exec.contains(['"', '\'']), "quoting in ExecStart: {exec}");
    let mut words = exec.split_whitespace();
    assert_eq!(words.next(), Some("/usr/local/bin/axle"));
    let dir = tempdir();
    let current = dir.path().join("current");
    std::os::unix::fs::symlink(manifest_dir().join("samples"), &current).unwrap();
    let pid_file = dir.path().join("run/axle.pid");
    let access_log = dir.path().join("log/access.log");
    std::fs::create_dir_all(pid_file.parent().unwrap()).unwrap();
    std::fs::create_dir_all(access_log.parent().unwrap()).unwrap();
    let mut args: Vec<String> = Vec::new();
    let mut words = words.peekable();
    while let Some(word) = words.next() {
        args.push(word.to_string());
        let value = match word {
            "--root" => current.display().to_string(),
            "--listen" | "--admin" => "127.0.0.1:0".to_string(),
            "--cache-dir" => dir.path().join("cache").display().to_string(),
            "--access-log" => access_log.display().to_string(),
            "--pid-file" => pid_file.display().to_string(),
            _ => {
                if let Some(next) = words.peek() {
                    assert!(
                        !next.starts_with('/'),
                        "{word} {next}: a path this test does not move; teach it"
                    );
                }
                continue;
            }
        };
        words.next();
        args.push(value);
    }
    let stderr_path = dir.path().join("stderr.txt");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let (mut axle, port, admin) = start_axle(&args, Stdio::from(stderr));
    let pid = axle.0.id();

    // Ready: the pid file holds the process ID (written once listening).
    let written = std::fs::read_to_string(&pid_file).unwrap();
    assert_eq!(written.trim(), pid.to_string());
    let page = get(port, "/articles/xml-pipelines.xml", &[]);
    assert_eq!(page.status, 200);

    // ExecReload, as systemd runs it.
    let reload = unit_value(&unit, "ExecReload").replace("$MAINPID", &pid.to_string());
    let mut words = reload.split_whitespace();
    let status = Command::new(words.next().unwrap())
        .args(words)
        .status()
        .unwrap();
    assert!(status.success(), "{reload}");
    wait_for("the reload's log line", || {
        std::fs::read_to_string(&stderr_path)
            .unwrap()
            .contains("configuration reloaded")
    });
    let again = get(port, "/articles/xml-pipelines.xml", &[]);
    assert_eq!((again.status, &again.body), (200, &page.body));

    // Metrics on the admin listener, as Prometheus would scrape them.
    let admin = admin.expect("the unit turns the admin listener on");
    let metrics = get_as(admin, &format!("127.0.0.1:{admin}"), "/metrics", &[]);
    assert_eq!(metrics.status, 200);
    assert!(String::from_utf8_lossy(&metrics.body).contains("axle_requests_total"));
    if let Some(promtool) = tool("promtool") {
        let mut check = Command::new(promtool)
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        check
            .stdin
            .take()
            .unwrap()
            .write_all(&metrics.body)
            .unwrap();
        let out = check.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "promtool check metrics:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // KillSignal: exit 0, the pid file removed, the log flushed.
    let kill = unit_value(&unit, "KillSignal");
    signal(pid, kill.trim_start_matches("SIG"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = axle.0.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < PATIENCE, "axle did not stop on {kill}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "axle exited with {status} on {kill}");
    assert!(!pid_file.exists(), "the pid file outlived the server");
    let log = std::fs::read_to_string(&access_log).unwrap();
    assert_eq!(
        log.matches("\"GET /articles/xml-pipelines.xml HTTP/1.1\" 200")
            .count(),
        2,
        "{log}"
    );
}

// ------------------------------------------------------------------ nginx

/// The shipped nginx file (an http-context snippet) with its upstream on
/// `axle_port` and its listener on 127.0.0.1:`port`, inside a minimal main
/// context whose paths are all under `dir`. The http context turns gzip
/// on, as Debian's nginx.conf does: the snippet must turn it off itself.
fn nginx_config(dir: &Path, axle_port: u16, port: u16, foreground: bool) -> PathBuf {
    let snippet = nginx_on_loopback(&shipped("nginx.conf"), axle_port, port);
    std::fs::write(dir.join("axle.conf"), snippet).unwrap();
    let d = dir.display();
    let main = format!(
        "{daemon}pid {d}/nginx.pid;\n\
         error_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n\
           access_log {d}/access.log;\n\
           client_body_temp_path {d}/body;\n\
           proxy_temp_path {d}/proxy;\n\
           fastcgi_temp_path {d}/fastcgi;\n\
           uwsgi_temp_path {d}/uwsgi;\n\
           scgi_temp_path {d}/scgi;\n\
           gzip on;\n\
           gzip_types text/css text/xml application/xml;\n\
           include {d}/axle.conf;\n\
         }}\n",
        daemon = if foreground { "daemon off;\n" } else { "" },
    );
    let path = dir.join("nginx-main.conf");
    std::fs::write(&path, main).unwrap();
    path
}

/// `nginx -t` accepts the shipped file, without a warning about it.
#[test]
fn nginx_config_checks() {
    let Some(nginx) = tool("nginx") else {
        return;
    };
    let dir = tempdir();
    let config = nginx_config(dir.path(), 8080, free_port(), false);
    let stderr = nginx_t(&nginx, dir.path(), &config);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("axle.conf") || l.contains("[warn]") || l.contains("[emerg]"))
        .collect();
    assert!(warnings.is_empty(), "nginx -t:\n{}", warnings.join("\n"));
}

/// A real nginx with the shipped file in front of a real Axle: a page,
/// its gzip and br variants and a static file come through with the same
/// bytes and validators as from Axle directly (nginx compresses nothing
/// again, even with gzip on in its http context), and conditional
/// requests get Axle's 304s.
#[test]
fn nginx_passes_axle_through() {
    let Some(nginx) = tool("nginx") else {
        return;
    };
    let (_axle, axle_port) = start_sample_axle(&[]);
    let dir = tempdir();
    let port = free_port();
    let config = nginx_config(dir.path(), axle_port, port, true);
    let _nginx = start_nginx(&nginx, dir.path(), &config, port);

    let compare = |path: &str, encoding: Option<&str>| -> Resp {
        let headers: Vec<(&str, &str)> = encoding
            .map(|e| ("Accept-Encoding", e))
            .into_iter()
            .collect();
        let direct = get(axle_port, path, &headers);
        let proxied = get(port, path, &headers);
        assert_eq!(direct.status, 200, "{path} direct");
        assert_eq!(proxied.status, 200, "{path} through nginx");
        assert!(
            direct.body == proxied.body,
            "{path} {encoding:?}: bodies differ"
        );
        for name in [
            "etag",
            "vary",
            "last-modified",
            "content-type",
            "content-encoding",
            "cache-control",
        ] {
            assert_eq!(
                direct.all(name),
                proxied.all(name),
                "{path} {encoding:?}: {name} differs through nginx"
            );
        }
        proxied
    };

    let page = "/articles/xml-pipelines.xml";
    let plain = compare(page, None);
    let etag = plain.header("etag").unwrap().to_string();
    assert!(etag.starts_with('"') && !etag.starts_with("W/"), "{etag}");
    assert_eq!(plain.header("vary"), Some("accept-encoding"));
    assert_eq!(plain.header("content-encoding"), None);
    assert!(plain.header("x-axle-cache").is_some());

    let hash = etag.trim_matches('"');
    for (asked, coding, suffix) in [("gzip", "gzip", "-gz"), ("br", "br", "-br")] {
        let encoded = compare(page, Some(asked));
        assert_eq!(encoded.header("content-encoding"), Some(coding));
        assert_eq!(
            encoded.header("etag"),
            Some(format!("\"{hash}{suffix}\"").as_str()),
            "{asked}: not Axle's own variant"
        );
        assert!(encoded.body.len() < plain.body.len());
        // A conditional request through nginx: Axle's 304 for that variant.
        let tag = encoded.header("etag").unwrap().to_string();
        let not_modified = get(
            port,
            page,
            &[("Accept-Encoding", asked), ("If-None-Match", &tag)],
        );
        assert_eq!(not_modified.status, 304, "{asked}");
    }
    let gz = compare(page, Some("gzip"));
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..])
        .read_to_end(&mut decoded)
        .unwrap();
    assert!(
        decoded == plain.body,
        "the gzip variant decodes to the page"
    );

    // A page too small for Axle to compress leaves nginx as it came:
    // without the file's `gzip off`, nginx (gzip on in its http context)
    // would compress it and weaken its ETag.
    let small = compare("/trivial/", Some("gzip"));
    assert_eq!(small.header("content-encoding"), None);
    assert!(small.header("etag").unwrap().starts_with('"'));

    // A static file goes through Axle as well, compressed by Axle.
    let css = compare("/css/site.css", Some("gzip"));
    assert!(css.header("etag").unwrap().ends_with("-gz\""));
    let since = plain.header("last-modified").unwrap().to_string();
    let unchanged = get(port, page, &[("If-Modified-Since", &since)]);
    assert_eq!(unchanged.status, 304);
}

// ---------------------------------------------------------------- HAProxy

/// The shipped haproxy.cfg for a test: listening on 127.0.0.1:`port`,
/// its servers replaced by `servers` (loopback ports), in the foreground,
/// without switching user or logging to syslog.
fn haproxy_config(dir: &Path, port: u16, servers: &[u16]) -> PathBuf {
    let mut text = shipped("haproxy.cfg");
    for line in [
        "    log /dev/log local0\n",
        "    user haproxy\n",
        "    group haproxy\n",
        "    daemon\n",
    ] {
        text = replace_once(&text, line, "");
    }
    text = replace_once(&text, "bind :80", &format!("bind 127.0.0.1:{port}"));
    let server_lines: Vec<String> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("server "))
        .map(str::to_string)
        .collect();
    assert!(
        server_lines.len() >= 2,
        "the shipped file lists several instances"
    );
    for line in &server_lines {
        text = replace_once(&text, &format!("{line}\n"), "");
    }
    for (i, port) in servers.iter().enumerate() {
        text.push_str(&format!("    server test{i} 127.0.0.1:{port}\n"));
    }
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, text).unwrap();
    path
}

/// `haproxy -c` accepts the shipped file as it is, without a warning.
#[test]
fn haproxy_config_checks() {
    let Some(haproxy) = tool("haproxy") else {
        return;
    };
    let out = Command::new(haproxy)
        .arg("-c")
        .arg("-f")
        .arg(manifest_dir().join("docs/deploy/haproxy.cfg"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "haproxy -c:\n{text}");
    assert!(
        !text.contains("[WARNING]") && !text.contains("[ALERT]"),
        "haproxy -c:\n{text}"
    );
}

/// A real HAProxy with the shipped file in front of two Axle instances:
/// each passes the health check (a GET of `/`), requests alternate
/// between them, and with one stopped every request is still answered.
#[test]
fn haproxy_balances_axle_instances() {
    let Some(haproxy) = tool("haproxy") else {
        return;
    };
    let dir = tempdir();
    let logs: Vec<PathBuf> = (0..2)
        .map(|i| dir.path().join(format!("access{i}.log")))
        .collect();
    let mut instances = Vec::new();
    let mut ports = Vec::new();
    for log in &logs {
        let (proc, port) = start_sample_axle(&["--access-log", log.to_str().unwrap()]);
        instances.push(proc);
        ports.push(port);
    }
    let port = free_port();
    let config = haproxy_config(dir.path(), port, &ports);
    let output = dir.path().join("haproxy.out");
    let mut haproxy = Proc(
        Command::new(haproxy)
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&output).unwrap())
            .spawn()
            .unwrap(),
    );
    wait_for_port(&mut haproxy, port, &output);

    let count = |log: &Path, needle: &str| -> usize {
        std::fs::read_to_string(log)
            .map(|t| t.matches(needle).count())
            .unwrap_or(0)
    };
    // Health checks reach both instances (the access log is written every 50 ms).
    for log in &logs {
        wait_for("a health check in each instance's log", || {
            count(log, "\"GET / HTTP/1.1\" 200") > 0
        });
    }

    let page = "/articles/xml-pipelines.xml";
    for _ in 0..6 {
        assert_eq!(get(port, page, &[]).status, 200);
    }
    let needle = format!("\"GET {page} HTTP/1.1\" 200");
    wait_for("six requests logged", || {
        logs.iter().map(|l| count(l, &needle)).sum::<usize>() == 6
    });
    let per_instance: Vec<usize> = logs.iter().map(|l| count(l, &needle)).collect();
    assert_eq!(per_instance, vec![3, 3], "round robin over two instances");

    // One instance stops: every request is still answered (a failed
    // connection is retried on the other).
    drop(instances.remove(0));
    for _ in 0..6 {
        assert_eq!(get(port, page, &[]).status, 200);
    }
}

// ------------------------------------------------------------- Prometheus

/// `promtool check config` accepts the shipped scrape configuration.
#[test]
fn prometheus_config_checks() {
    let Some(promtool) = tool("promtool") else {
        return;
    };
    let out = Command::new(promtool)
        .args(["check", "config"])
        .arg(manifest_dir().join("docs/deploy/prometheus.yml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool check config:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// --------------------------------------------------------- the files agree

/// The unit's --listen is nginx's upstream and its --admin is
/// Prometheus' target, so the files work together as shipped.
#[test]
fn shipped_files_agree() {
    let exec = unit_value(&shipped("axle.service"), "ExecStart");
    let flag = |name: &str| -> String {
        let mut words = exec.split_whitespace();
        words.find(|w| *w == name).unwrap();
        words.next().unwrap().to_string()
    };
    let listen = flag("--listen");
    let admin = flag("--admin");
    assert!(
        shipped("nginx.conf").contains(&format!("server {listen};")),
        "nginx.conf's upstream is not the unit's --listen {listen}"
    );
    assert!(
        shipped("prometheus.yml").contains(&format!("targets: [\"{admin}\"]")),
        "prometheus.yml does not scrape the unit's --admin {admin}"
    );
    assert!(
        admin.starts_with("127.0.0.1:"),
        "the admin listener stays on loopback"
    );
}

// ------------------------------------------------------ docs/deploy.md itself

/// Every `axle ...` command in the page's `sh` blocks parses: its
/// subcommand and flags exist (run with `--help` appended, so nothing is
/// served or changed).
#[test]
fn deploy_doc_commands_parse() {
    doc_commands_parse("docs/deploy.md", 6);
}

/// Every `toml` block of the page loads as a site's `axle.toml`
/// (`axle check`).
#[test]
fn deploy_doc_toml_loads() {
    doc_toml_loads("docs/deploy.md", 2);
}
