//! The `axle` binary itself: `render` to stdout, and `serve` as a user starts
//! it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::support::{TestServer, TestSite, axle, axle_ok};
use axle::CacheMode;

#[tokio::test(flavor = "multi_thread")]
async fn render_prints_what_the_server_serves() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::Off).await;
    for (doc, args) in [
        ("two.xml", vec![]),
        ("one.xml", vec!["--param", "who=cli"]),
        ("latin1.xml", vec![]),
    ] {
        let stdout = axle_ok(&site.root, ["render", doc].into_iter().chain(args.clone()));
        let query = if args.is_empty() {
            String::new()
        } else {
            "?who=cli".to_string()
        };
        let served = server.get(&format!("/{doc}{query}")).await;
        assert_eq!(stdout, served.body, "{doc}");
    }
}

#[test]
fn render_stylesheet_options_replace_the_documents_pis() {
    let site = TestSite::new();
    // text.xml names s/text.xsl by PI; --stylesheet replaces it, as in
    // xsltproc; plain.xml has no PI.
    for doc in ["text.xml", "plain.xml"] {
        let out = axle_ok(
            &site.root,
            [
                "render",
                doc,
                "--stylesheet",
                "s/upper.xsl",
                "--param",
                "who=me",
            ],
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<html><body>\n<h1></h1>\n<p>for me</p>\n</body></html>\n",
            "{doc}"
        );
    }
}

#[test]
fn render_reports_errors_on_stderr_with_a_failing_status() {
    let site = TestSite::new();
    let out = axle()
        .args(["render", "malformed.xml"])
        .current_dir(&site.root)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("/malformed.xml:5"), "{err}");
    assert!(
        !err.contains(site.root.to_str().unwrap()),
        "no absolute paths: {err}"
    );
}

/// Starts `axle serve ARGS --root SITE` and returns it with the base URL
/// from its first line.
fn serve(args: &[&str], site: &TestSite) -> (std::process::Child, String) {
    crate::support::serve_child(args, &site.root, Stdio::null())
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_starts_on_the_given_address_and_serves_the_root() {
    let site = TestSite::new();
    let (mut child, url) = serve(
        &[
            "--listen",
            "127.0.0.1:0",
            "--cache",
            "all",
            "--cache-size",
            "16MiB",
        ],
        &site,
    );
    let first = reqwest::get(format!("{url}/two.xml")).await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["x-axle-cache"], "miss");
    let second = reqwest::get(format!("{url}/two.xml")).await.unwrap();
    assert_eq!(second.headers()["x-axle-cache"], "hit");
    assert!(second.text().await.unwrap().contains("<h1>Two stages</h1>"));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn several_io_threads_share_the_port_and_stop_together_on_sigterm() {
    let site = TestSite::new();
    let (mut child, url) = serve(
        &[
            "--listen",
            "127.0.0.1:0",
            "--io-threads",
            "3",
            "--freshness",
            "check",
        ],
        &site,
    );
    // Each request on its own connection: the kernel spreads them over
    // the three listeners; every one must be answered the same.
    let mut tasks = Vec::new();
    for _ in 0..60 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .unwrap();
            let r = client.get(format!("{url}/two.xml")).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }));
    }
    let mut bodies = std::collections::HashSet::new();
    for t in tasks {
        let (status, body) = t.await.unwrap();
        assert_eq!(status, 200);
        bodies.insert(body);
    }
    assert_eq!(bodies.len(), 1);
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running 10 s after SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn bad_flags_are_refused_with_a_message() {
    let out = axle()
        .args(["serve", "--cache", "sometimes"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("off, all, incremental"));
    let out = axle()
        .args(["serve", "--cache-size", "lots"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a size"));
}

/// A document with an external DTD (defaulted attributes, an entity from a
/// parameter-entity file) renders to the same bytes with the DTD shared
/// (the default) or parsed per document (`--no-shared-dtds`).
#[test]
fn render_gives_the_same_bytes_with_and_without_shared_dtds() {
    let site = TestSite::new();
    let dir = site.root.join("dtd-doc");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("book.dtd"),
        "<!ENTITY % names SYSTEM \"names.ent\"> %names;\n\
         <!ELEMENT book (para)*> <!ATTLIST book status (draft|final) \"draft\">\n\
         <!ELEMENT para (#PCDATA)> <!ATTLIST para id ID #IMPLIED role NMTOKEN \"body\">\n",
    )
    .unwrap();
    std::fs::write(dir.join("names.ent"), "<!ENTITY product \"Axle\">").unwrap();
    std::fs::write(
        dir.join("show.xsl"),
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="text"/>
  <xsl:template match="/book"><xsl:value-of select="@status"/>:<xsl:for-each select="para"><xsl:value-of
    select="concat(@role, '/', ., '/', count(id(@id)), ';')"/></xsl:for-each></xsl:template>
</xsl:stylesheet>"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("a.xml"),
        "<?xml-stylesheet href=\"show.xsl\" type=\"text/xsl\"?>\n\
         <!DOCTYPE book SYSTEM \"book.dtd\">\n\
         <book><para id=\" p1 \">&product; one</para><para role=\"note\">two</para></book>\n",
    )
    .unwrap();
    let render = |extra: &[&str]| {
        let args = ["render"].iter().chain(extra).chain(&["dtd-doc/a.xml"]);
        String::from_utf8(axle_ok(&site.root, args)).unwrap()
    };
    let shared = render(&[]);
    let full = render(&["--no-shared-dtds"]);
    assert_eq!(shared, "draft:body/Axle one/1;note/two/0;");
    assert_eq!(shared, full);
}

/// The README's `render samples/…` from a directory that has a
/// `stylesheets/` of its own: the root is the nearest directory above the
/// document with an `axle.toml`, not the current directory. Without one,
/// a missing stylesheet's error names the root in use and `--root`.
#[test]
fn render_finds_the_sites_root_and_names_it_when_a_stylesheet_is_missing() {
    let site = TestSite::new();
    let outer = site.outside();
    // A decoy at the working directory: /s/upper.xsl there is not the site's.
    std::fs::create_dir_all(outer.join("s")).unwrap();
    std::fs::write(outer.join("s/upper.xsl"), "not a stylesheet").unwrap();
    let rel = format!(
        "{}/two.xml",
        site.root.file_name().unwrap().to_str().unwrap()
    );
    // No axle.toml: the current directory is the root, and the error says so.
    let out = axle()
        .args(["render", &rel])
        .current_dir(&outer)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("was not found"), "{err}");
    assert!(
        err.contains(&format!("the document root is {}", outer.display()))
            && err.contains("--root"),
        "{err}"
    );
    // With the site's axle.toml, the same command renders what the site serves.
    site.write("axle.toml", "");
    let from_outside = axle_ok(&outer, ["render", &rel]);
    assert_eq!(from_outside, axle_ok(&site.root, ["render", "two.xml"]));
    assert!(
        String::from_utf8(from_outside)
            .unwrap()
            .contains("<h1>Two stages</h1>")
    );
}

/// `axle render doc.xml | head -c 1`: a reader that stops early is not an
/// error, and nothing is printed about it.
#[test]
fn render_into_a_closed_pipe_is_quiet() {
    let site = TestSite::new();
    // A body larger than the pipe buffer, so the write meets the closed end.
    let big = "<p>x</p>".repeat(40_000);
    site.write(
        "big.xml",
        &format!("<?xml-stylesheet href=\"s/upper.xsl\" type=\"text/xsl\"?>\n<doc><title>{big}</title></doc>"),
    );
    let mut child = axle()
        .args(["render", "big.xml"])
        .current_dir(&site.root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    assert!(!err.to_lowercase().contains("broken pipe"), "{err}");
}

/// A second server on an address in use is refused, naming the address;
/// servers that both ask to share the port with `--reuse-port` may.
#[tokio::test(flavor = "multi_thread")]
async fn a_port_in_use_is_refused_unless_sharing_is_asked_for() {
    let site = TestSite::new();
    let (mut first, url) = serve(&["--listen", "0", "--reuse-port"], &site);
    let addr = url.trim_start_matches("http://").to_string();
    let out = axle()
        .args(["serve", "--listen", &addr, "--root"])
        .arg(&site.root)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&format!("cannot listen on {addr}")) && err.contains("--reuse-port"),
        "{err}"
    );
    let (mut second, url2) = serve(&["--listen", &addr, "--reuse-port"], &site);
    assert_eq!(url, url2);
    assert_eq!(
        reqwest::get(format!("{url}/two.xml"))
            .await
            .unwrap()
            .status(),
        200
    );
    for child in [&mut first, &mut second] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn serve_errors_name_the_root_and_help_names_no_build_paths() {
    let out = axle()
        .args(["serve", "--root", "/nonexistent/axle-root", "--listen", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("document root /nonexistent/axle-root"),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "no colour codes off a terminal: {err:?}"
    );
    let help = axle().args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(!help.contains(env!("CARGO_MANIFEST_DIR")), "{help}");
    assert!(help.contains("[default: 256MiB]"), "{help}");
    let check = axle().args(["check", "--help"]).output().unwrap();
    assert!(
        !String::from_utf8(check.stdout)
            .unwrap()
            .contains("shared-dtds")
    );
}

/// Logs written to a pipe carry no ANSI colour codes.
#[test]
fn logs_off_a_terminal_have_no_colour_codes() {
    let site = TestSite::new();
    let mut child = axle()
        .args(["serve", "--listen", "0", "--root"])
        .arg(&site.root)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(line.contains("axle serving"), "{line}");
    assert!(!line.contains('\u{1b}'), "{line:?}");
}

#[test]
fn version_names_the_xml_libraries_it_runs_with() {
    let out = axle().arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let v = axle::ffi::library_versions();
    assert!(
        text.starts_with(&format!("axle {}", env!("CARGO_PKG_VERSION")))
            && text.contains(&format!("libxml2 {}", v.libxml2))
            && text.contains(&format!("libxslt {}", v.libxslt)),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_come_from_the_configuration_file_and_flags_win() {
    let site = TestSite::new();
    site.write("axle.toml", "[limits]\nmax-chain = 1\n");
    // two.xml has a chain of two stages.
    let (mut child, url) = serve(&["--listen", "127.0.0.1:0"], &site);
    let r = reqwest::get(format!("{url}/two.xml")).await.unwrap();
    assert_eq!(r.status(), 500);
    assert!(r.text().await.unwrap().contains("max-chain (1)"));
    child.kill().unwrap();
    child.wait().unwrap();
    let (mut child, url) = serve(&["--listen", "127.0.0.1:0", "--max-chain", "2"], &site);
    let r = reqwest::get(format!("{url}/two.xml")).await.unwrap();
    assert_eq!(r.status(), 200);
    child.kill().unwrap();
    child.wait().unwrap();
}
