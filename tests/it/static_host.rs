//! Issue #37 item 7: what `axle build` writes works on a plain static
//! host. The bundled samples and a fixture site full of awkward links
//! (`tests/fixtures/static-host`) are exported, the output is served by a
//! real static file server on a loopback ephemeral port (Python's
//! `http.server`; nginx with its own `mime.types` and otherwise default
//! settings), and a crawler starting at `/` fetches every internal
//! `href`/`src`/`action` of every page it reaches: each answers 200 with
//! the content type the server sends for it (XML types count as one
//! family: a static host labels any `.xml` file with one of them), except
//! the links the build's summary lists as left as written.
//!
//! The crawler reads links with its own small tag scan (comments dropped,
//! attributes of tags only) and resolves them with the `url` crate, so it
//! does not share the export's code.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{axle, copy_dir};

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A temporary directory other users can enter (nginx's workers run as
/// `nobody` when the test runs as root).
fn open_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// `root` copied into `dir` and exported to `dir/out`: the output folder
/// and the build's stdout.
fn export(dir: &Path, root: &Path) -> (PathBuf, String) {
    let copy = dir.join("root");
    copy_dir(root, &copy);
    let out = dir.join("out");
    let output = axle()
        .arg("build")
        .arg("--root")
        .arg(&copy)
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (out, stdout)
}

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("samples")
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/static-host")
}

/// The URLs the summary lists as left as written (`POST ` dropped).
fn left_as_written(stdout: &str) -> BTreeSet<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("link "))
        .filter_map(|l| l.split_once(" left as written: "))
        .map(|(url, _)| url.trim_start_matches("POST ").to_string())
        .collect()
}

/// File (relative to the output folder) → the content type the server
/// sent for it, from the manifest.
fn types(out: &Path) -> BTreeMap<String, String> {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("axle-manifest.json")).unwrap()).unwrap();
    manifest
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["file"].as_str().unwrap().to_string(),
                e["content_type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap()
        .trim()
        .to_ascii_lowercase()
}

fn is_xml(essence: &str) -> bool {
    essence == "text/xml" || essence == "application/xml" || essence.ends_with("+xml")
}

/// The host's type is the server's: the same essence, or both XML (a
/// static host has one type for every `.xml` file). An SVG or XHTML file
/// must keep its own type: browsers render them by it.
fn same_type(host: &str, server: &str) -> bool {
    let (h, s) = (essence(host), essence(server));
    h == s
        || (is_xml(&h)
            && is_xml(&s)
            && !["image/svg+xml", "application/xhtml+xml"].contains(&s.as_str()))
}

/// The links of a page, by a scan of its tags (comments dropped): every
/// `href`, `src` and `action` value, and each `srcset` candidate, with
/// `&amp;` decoded.
fn page_links(text: &str) -> Vec<String> {
    let comments = regex::Regex::new(r"(?s)<!--.*?-->").unwrap();
    let text = comments.replace_all(text, "");
    let tag = regex::Regex::new(r"<[A-Za-z][^>]*>").unwrap();
    let attr = regex::Regex::new(
        r#"(?i)\s(href|src|action|srcset)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))"#,
    )
    .unwrap();
    let mut links = Vec::new();
    for t in tag.find_iter(&text) {
        for c in attr.captures_iter(t.as_str()) {
            let value = c
                .get(2)
                .or(c.get(3))
                .or(c.get(4))
                .map_or("", |m| m.as_str())
                .replace("&amp;", "&");
            if c[1].eq_ignore_ascii_case("srcset") {
                links.extend(
                    value
                        .split(',')
                        .filter_map(|cand| cand.split_whitespace().next())
                        .map(str::to_string),
                );
            } else {
                links.push(value);
            }
        }
    }
    links
}

/// What a crawl found.
#[derive(Debug, Default)]
struct Crawl {
    /// URLs fetched with 200 and the right type.
    ok: BTreeSet<String>,
    /// Links not fetched because the summary lists them (as written).
    listed: BTreeSet<String>,
    /// What went wrong: (URL, found on page, what).
    problems: Vec<(String, String, String)>,
}

/// Crawls the static host at `base` from `/`: every internal link of every
/// HTML or XML page reached is fetched once.
async fn crawl(base: &str, out: &Path, listed: &BTreeSet<String>) -> Crawl {
    let types = types(out);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let origin = url::Url::parse(base).unwrap();
    let mut crawl = Crawl::default();
    let mut seen = BTreeSet::from([String::from("/")]);
    let mut queue = VecDeque::from([(origin.join("/").unwrap(), String::from("(start)"))]);
    while let Some((url, from)) = queue.pop_front() {
        let path = url.path().to_string();
        let response = client.get(url.as_str()).send().await.unwrap();
        let status = response.status().as_u16();
        let host_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let body = response.bytes().await.unwrap();
        if status != 200 {
            crawl
                .problems
                .push((path, from, format!("status {status}")));
            continue;
        }
        // The file the host served, and the type the server sends for it.
        let mut file = percent_encoding::percent_decode_str(path.trim_start_matches('/'))
            .decode_utf8()
            .unwrap()
            .into_owned();
        if file.is_empty() || file.ends_with('/') {
            file.push_str("index.html");
        }
        let Some(server_type) = types.get(&file) else {
            crawl
                .problems
                .push((path, from, format!("{file} is in no manifest entry")));
            continue;
        };
        if !same_type(&host_type, server_type) {
            crawl.problems.push((
                path,
                from,
                format!("host type {host_type}, server type {server_type}"),
            ));
            continue;
        }
        crawl.ok.insert(path.clone());
        let e = essence(server_type);
        if e != "text/html" && !is_xml(&e) {
            continue;
        }
        for link in page_links(&String::from_utf8_lossy(&body)) {
            let Ok(target) = url.join(&link) else {
                continue;
            };
            if target.origin() != origin.origin() {
                continue;
            }
            let key = match target.query() {
                Some(q) => format!("{}?{q}", target.path()),
                None => target.path().to_string(),
            };
            if listed.contains(&key) {
                crawl.listed.insert(key);
                continue;
            }
            if key != target.path() {
                crawl
                    .problems
                    .push((key.clone(), path.clone(), String::from("a query left")));
            }
            if seen.insert(target.path().to_string()) {
                let mut next = target.clone();
                next.set_fragment(None);
                next.set_query(None);
                queue.push_back((next, path.clone()));
            }
        }
    }
    crawl
}

fn wait_for_port(proc: &mut Proc, port: u16, log: &Path) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if proc.0.try_wait().unwrap().is_some() || start.elapsed() > Duration::from_secs(15) {
            panic!(
                "nothing accepts on 127.0.0.1:{port}: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `python3 -m http.server` on an ephemeral loopback port over `out`.
fn python_server(out: &Path) -> (Proc, String) {
    let mut child = Proc(
        Command::new("python3")
            .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
            .arg("--directory")
            .arg(out)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 (the samples need it too)"),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
    let port = line
        .split_whitespace()
        .skip_while(|w| *w != "port")
        .nth(1)
        .unwrap_or_else(|| panic!("http.server said {line:?}"))
        .to_string();
    (child, format!("http://127.0.0.1:{port}"))
}

/// nginx, when installed: `None` skips (loudly; a failure under
/// `CI=true`, where `.ci/run` installs it).
fn nginx_binary() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but nginx is not installed (.ci/run installs it)"
        );
        eprintln!("SKIPPED: nginx not installed: the export was not served by nginx");
    }
    found
}

/// The `mime.types` beside nginx's own configuration file (`nginx -V`).
fn nginx_mime_types(nginx: &Path) -> PathBuf {
    let v = Command::new(nginx).arg("-V").output().unwrap();
    let text = String::from_utf8_lossy(&v.stderr);
    let conf = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("--conf-path="))
        .unwrap_or("/etc/nginx/nginx.conf");
    let types = Path::new(conf).with_file_name("mime.types");
    assert!(types.is_file(), "{} missing", types.display());
    types
}

/// nginx serving `out` as its default configuration does (`include
/// mime.types; default_type application/octet-stream;`, `index
/// index.html`), everything else under `dir`.
fn nginx_server(nginx: &Path, dir: &Path, out: &Path) -> (Proc, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let d = dir.display();
    let config = format!(
        "daemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n  include {types};\n  default_type application/octet-stream;\n\
           access_log {d}/access.log;\n  client_body_temp_path {d}/body;\n\
           proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
           uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
           server {{\n    listen 127.0.0.1:{port};\n    root {out};\n  }}\n}}\n",
        types = nginx_mime_types(nginx).display(),
        out = out.display(),
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, config).unwrap();
    let mut proc = Proc(
        Command::new(nginx)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_port(&mut proc, port, &dir.join("error.log"));
    (proc, format!("http://127.0.0.1:{port}"))
}

fn assert_clean(crawl: &Crawl, host: &str) {
    assert!(
        crawl.problems.is_empty(),
        "{host}: {} problem(s):\n{}",
        crawl.problems.len(),
        crawl
            .problems
            .iter()
            .map(|(url, from, what)| format!("  {url} (linked from {from}): {what}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_exported_samples_work_on_python_http_server_and_nginx() {
    let dir = open_tempdir();
    let (out, stdout) = export(dir.path(), &samples());
    let listed = left_as_written(&stdout);
    // What cannot be exported is listed: per-request pages and dynamic
    // locations.
    for url in ["/xsp/guestbook.xml", "/live/table?n=7", "/mirror/page.xml"] {
        assert!(listed.contains(url), "{url} not listed:\n{stdout}");
    }
    let (_python, base) = python_server(&out);
    let by_python = crawl(&base, &out, &listed).await;
    assert_clean(&by_python, "python3 -m http.server");
    // The crawl reached the site, its styles and formats.
    for path in [
        "/index.html",
        "/articles/xml-pipelines.xml.html",
        "/styles/index.xml.print.html",
        "/formats/feed.xml",
        "/formats/notes.xml.txt",
        "/css/site.css",
        "/images/logo.svg",
    ] {
        assert!(
            by_python.ok.contains(path),
            "{path} not reached: {:?}",
            by_python.ok
        );
    }
    assert!(by_python.ok.len() > 20, "{:?}", by_python.ok);
    assert!(
        by_python.listed.contains("/xsp/guestbook.xml"),
        "{by_python:?}"
    );

    let Some(nginx) = nginx_binary() else {
        return;
    };
    let (_nginx, base) = nginx_server(&nginx, dir.path(), &out);
    let by_nginx = crawl(&base, &out, &listed).await;
    assert_clean(&by_nginx, "nginx");
    assert_eq!(by_nginx.ok, by_python.ok);
}

#[tokio::test(flavor = "multi_thread")]
async fn awkward_links_of_a_fixture_site_work_on_python_http_server_and_nginx() {
    let dir = open_tempdir();
    let (out, stdout) = export(dir.path(), &fixture());
    let listed = left_as_written(&stdout);
    assert_eq!(
        listed,
        BTreeSet::from(["/missing.xml", "/post/form", "/post/sign"].map(str::to_string)),
        "{stdout}"
    );
    assert!(
        stdout.contains("link POST /post/sign left as written: a form's POST target"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("link /styled.xml?style=nope -> styled.xml.html: its query changes the page"),
        "{stdout}"
    );
    // Text that looks like a link is text: not rewritten, not listed.
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        index.contains("&lt;a href=\"/in-text.xml\"&gt; is text"),
        "{index}"
    );
    // Aliases the server answers with an exported file's bytes point at it.
    for (alias, file) in [
        ("no slash (the server redirects)", "docs/index.html"),
        ("PRINT", "styled.xml.print.html"),
        ("a parameter", "styled.xml.html"),
        ("café (a query the page ignores)", "docs/caf%C3%A9.xml.html"),
    ] {
        assert!(
            index.contains(&format!("<a href=\"{file}\">{alias}</a>")),
            "{alias} -> {file}:\n{index}"
        );
    }
    let feed = std::fs::read_to_string(out.join("feed.xml")).unwrap();
    assert!(feed.contains("href=\"docs/a%20page.xml.html\""), "{feed}");

    let (_python, base) = python_server(&out);
    let by_python = crawl(&base, &out, &listed).await;
    assert_clean(&by_python, "python3 -m http.server");
    for path in [
        "/docs/index.html",
        "/docs/a%20page.xml.html",
        "/docs/caf%C3%A9.xml.html",
        "/styled.xml.print.html",
        "/styled.xml.screen.html",
        "/feed.xml",
        "/logo.svg",
        "/site.css",
        "/files/index.html",
        "/files/sub/index.html",
        "/files/a.txt",
        "/files/sub/b.txt",
    ] {
        assert!(
            by_python.ok.contains(path),
            "{path} not reached: {:?}",
            by_python.ok
        );
    }

    let Some(nginx) = nginx_binary() else {
        return;
    };
    let (_nginx, base) = nginx_server(&nginx, dir.path(), &out);
    let by_nginx = crawl(&base, &out, &listed).await;
    assert_clean(&by_nginx, "nginx");
    assert_eq!(by_nginx.ok, by_python.ok);
}
