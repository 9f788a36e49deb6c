//! The two front-server files `docs/browser-xslt.md` ships, run for real
//! on loopback: `docs/deploy/browser-xslt-nginx.conf` (`nginx -t`, then
//! nginx) and `docs/deploy/browser-xslt.Caddyfile` (`caddy validate`,
//! then Caddy), each in front of a real Axle serving the same folder (a
//! copy of `samples/`, whose `/browser/` location has `negotiate = true`).
//! Through each: a browser's `Accept` gets the rendered page, a feed
//! reader's the Atom feed as it is (its PI kept, `application/atom+xml`),
//! both with `Vary: Accept`; a directory's `index.xml` is rendered; an
//! XML document without a PI comes back as it is; the CSS and the
//! stylesheet are files the front server answers itself (no Axle header).
//!
//! A tool that is not installed skips its test with a loud `SKIPPED:`
//! line; under `CI=true` that is a failure (`.ci/run` installs them).
//! Traffic goes to 127.0.0.1 only.

mod deploy_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use deploy_support::*;

/// What Firefox sends for a page, and what a feed reader sends.
const BROWSER: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const FEED_READER: &str = "application/atom+xml, application/rss+xml;q=0.9, application/xml;q=0.8";

/// A copy of `samples/` in `dir` (readable by nginx's workers), the
/// folder both the front server and Axle serve.
fn site_copy(dir: &Path) -> PathBuf {
    let site = dir.join("www");
    let status = Command::new("cp")
        .arg("-r")
        .arg(manifest_dir().join("samples"))
        .arg(&site)
        .status()
        .unwrap();
    assert!(status.success(), "cp -r samples");
    let status = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(&site)
        .status()
        .unwrap();
    assert!(status.success(), "chmod");
    site
}

/// The checks every front server passes, on `port`.
fn a_browser_gets_the_page_and_a_reader_the_feed(front: &str, port: u16) {
    let page = get(port, "/browser/feed.xml", &[("Accept", BROWSER)]);
    assert_eq!(page.status, 200, "{front}: the page");
    assert!(
        page.header("content-type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{front}: a browser gets HTML: {} {:?}",
        page.status,
        page.headers
    );
    assert!(page.header("x-axle-cache").is_some(), "{front}: from Axle");
    let text = String::from_utf8_lossy(&page.body);
    assert!(!text.contains("<?xml-stylesheet"), "{front}: rendered");
    assert!(
        page.all("vary")
            .iter()
            .any(|v| v.eq_ignore_ascii_case("accept")),
        "{front}: Vary: Accept on the page: {:?}",
        page.headers
    );

    let feed = get(port, "/browser/feed.xml", &[("Accept", FEED_READER)]);
    assert_eq!(feed.status, 200, "{front}: the feed");
    assert_eq!(
        feed.header("content-type"),
        Some("application/atom+xml"),
        "{front}: a feed reader gets the feed"
    );
    let source = std::fs::read(manifest_dir().join("samples/browser/feed.xml")).unwrap();
    assert_eq!(feed.body, source, "{front}: the feed as it is, PI kept");
    assert!(
        feed.all("vary")
            .iter()
            .any(|v| v.eq_ignore_ascii_case("accept")),
        "{front}: Vary: Accept on the feed"
    );
    assert_ne!(
        feed.header("etag"),
        page.header("etag"),
        "{front}: each representation its own ETag"
    );

    // A directory's index.xml, rendered.
    let index = get(port, "/browser/", &[("Accept", BROWSER)]);
    assert_eq!(index.status, 200, "{front}: /browser/");
    assert!(
        index
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{front}: the index rendered: {:?}",
        index.headers
    );
    assert!(index.header("x-axle-cache").is_some(), "{front}: from Axle");

    // The stylesheet and the CSS: files from the front server.
    for path in ["/stylesheets/browser/feed.xsl", "/css/site.css"] {
        let file = get(port, path, &[]);
        assert_eq!(file.status, 200, "{front}: {path}");
        assert!(
            file.header("x-axle-cache").is_none(),
            "{front}: {path} is the front server's"
        );
        let on_disk = std::fs::read(manifest_dir().join("samples").join(&path[1..])).unwrap();
        assert_eq!(file.body, on_disk, "{front}: {path} as it is");
    }
}

#[test]
fn nginx_config_checks_and_fronts_axle() {
    let Some(nginx) = tool("nginx") else {
        return;
    };
    let dir = tempdir();
    let site = site_copy(dir.path());
    let (_axle, axle_port) = start_axle_on(&site);
    let port = free_port();
    let snippet = nginx_on_loopback(&shipped("browser-xslt-nginx.conf"), axle_port, port);
    let snippet = replace_once(
        &snippet,
        "root /srv/www;",
        &format!("root {};", site.display()),
    );
    let d = dir.path().display();
    std::fs::write(dir.path().join("site.conf"), snippet).unwrap();
    let main = format!(
        "daemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n  access_log {d}/access.log;\n  client_body_temp_path {d}/body;\n  \
         proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  \
         uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
         types {{ text/css css; application/xml xsl; }}\n  \
         gzip on;\n  include {d}/site.conf;\n}}\n"
    );
    let config = dir.path().join("nginx-main.conf");
    std::fs::write(&config, main).unwrap();
    let stderr = nginx_t(&nginx, dir.path(), &config);
    assert!(
        !stderr.contains("[warn]") && !stderr.contains("[emerg]"),
        "nginx -t:\n{stderr}"
    );
    let _nginx = start_nginx(&nginx, dir.path(), &config, port);
    a_browser_gets_the_page_and_a_reader_the_feed("nginx", port);
}

#[test]
fn caddy_config_validates_and_fronts_axle() {
    let Some(caddy) = tool("caddy") else {
        return;
    };
    let dir = tempdir();
    let site = site_copy(dir.path());
    let (_axle, axle_port) = start_axle_on(&site);
    let port = free_port();
    let file = shipped("browser-xslt.Caddyfile");
    // Plain HTTP on a loopback port, no certificate, no admin endpoint.
    let file = replace_once(
        &file,
        "www.example.org {",
        &format!("{{\n\tadmin off\n\tauto_https off\n}}\n\nhttp://:{port} {{\n\tbind 127.0.0.1"),
    );
    let file = replace_once(
        &file,
        "reverse_proxy @xml 127.0.0.1:8080",
        &format!("reverse_proxy @xml 127.0.0.1:{axle_port}"),
    );
    let file = replace_once(
        &file,
        "root * /srv/www",
        &format!("root * {}", site.display()),
    );
    let config = dir.path().join("Caddyfile");
    std::fs::write(&config, file).unwrap();
    let env = [
        ("HOME", dir.path().to_path_buf()),
        ("XDG_DATA_HOME", dir.path().join("data")),
        ("XDG_CONFIG_HOME", dir.path().join("config")),
    ];
    let out = Command::new(&caddy)
        .args(["validate", "--adapter", "caddyfile", "--config"])
        .arg(&config)
        .envs(env.clone())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "caddy validate:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let log = dir.path().join("caddy.log");
    let mut caddy = Proc(
        Command::new(&caddy)
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&config)
            .envs(env)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    wait_for_port(&mut caddy, port, &log);
    a_browser_gets_the_page_and_a_reader_the_feed("Caddy", port);
}

/// The guide's `toml` blocks load (`axle check`), and its `axle`
/// commands parse.
#[test]
fn the_guide_s_configuration_loads_and_its_commands_parse() {
    doc_toml_loads("docs/browser-xslt.md", 2);
    doc_commands_parse("docs/browser-xslt.md", 2);
}

/// The guide's nginx and Caddy excerpts are the shipped files' own
/// lines (a change to a file shows in the page, or fails here).
#[test]
fn the_guide_quotes_the_shipped_files() {
    let shipped_lines = |name: &str| -> Vec<String> {
        shipped(name)
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    for (lang, file) in [
        ("nginx", "browser-xslt-nginx.conf"),
        ("caddy", "browser-xslt.Caddyfile"),
    ] {
        let lines = shipped_lines(file);
        let blocks = doc_blocks("docs/browser-xslt.md", lang);
        assert_eq!(blocks.len(), 1, "one {lang} block");
        for line in blocks[0].lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if !line.is_empty() {
                assert!(
                    lines.iter().any(|l| l == line),
                    "docs/browser-xslt.md quotes `{line}`, which {file} does not have"
                );
            }
        }
    }
}
