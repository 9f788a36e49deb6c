//! The browser's own test of a page moved off client-side XSLT (issue
//! #39): Chromium's DOM of the raw XML, which it transforms itself (its
//! client-side XSLT, still in Debian's Chromium, behind a deprecation
//! banner), must equal Chromium's DOM of the page Axle rendered from the
//! same files. Both come from `chromium --headless --dump-dom`: the raw
//! side from a plain static file server on loopback (XML and XSL as
//! `application/xml`, as sites serve them), the rendered side from Axle
//! on the same folder.
//!
//! The DOMs are compared as Chromium serializes them, after three
//! normalizations, each of something that is not the page's:
//! - Chromium's `<xslt-warning-banner>` element is removed: the browser
//!   inserts it into every client-side XSLT result to announce the
//!   feature's removal;
//! - the encoding declaration is removed from both: Chromium's XSLT
//!   result carries a `<meta charset="UTF-8">` it adds itself, Axle's
//!   page the `<meta http-equiv="Content-Type" …>` libxslt's HTML output
//!   writes; both pages are UTF-8 and the element has no other effect;
//! - outside `<pre>` and `<textarea>`, every run of whitespace counts as
//!   one space: HTML renders it so, and libxslt's HTML output puts a line
//!   break after some end tags that the browser's own result tree does
//!   not have (one more whitespace text node before `</body>`).
//!
//! The corpus today: the samples' styled Atom feed and sitemap, and two
//! cases written for this test in `tests/fixtures/browser-dom/` (an RSS
//! 2.0 feed with `disable-output-escaping` descriptions and a sorted list,
//! an OPML blogroll as XHTML sorted by name, served with
//! `xsl-sort = "unicode"`; without it the OPML page differs, which the
//! second test shows). The real-world stylesheets the issue asks for
//! (feeds, sitemaps, OPML, a TEI Boilerplate page, a report; each with
//! its source and licence) are not in yet.
//!
//! Skips loudly without Chromium; under `CI=true` that is a failure
//! (`.ci/run` installs it). Traffic goes to 127.0.0.1 only.

mod deploy_support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use deploy_support::*;

/// Serves the files under `root` on a loopback port, one thread, until
/// the process ends: `.xml` and `.xsl` as `application/xml` (a browser
/// applies a stylesheet only to a document served as XML), `.css` as
/// `text/css`; anything else, or a path leaving `root`, 404.
fn static_server(root: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            // The rest of the head.
            loop {
                let mut header = String::new();
                match reader.read_line(&mut header) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header == "\r\n" => break,
                    Ok(_) => {}
                }
            }
            let path = line.split(' ').nth(1).unwrap_or("/");
            let path = path.split('?').next().unwrap_or("/");
            let file = (!path.contains(".."))
                .then(|| root.join(path.trim_start_matches('/')))
                .filter(|f| f.is_file());
            let kind = match Path::new(path).extension().and_then(|e| e.to_str()) {
                Some("xml" | "xsl") => "application/xml",
                Some("css") => "text/css",
                _ => "application/octet-stream",
            };
            let response = match file.and_then(|f| std::fs::read(f).ok()) {
                Some(body) => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend_from_slice(&body);
                    r
                }
                None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = stream.write_all(&response);
        }
    });
    port
}

/// Chromium's DOM of `url`, serialized (`--dump-dom`).
fn dump_dom(chromium: &Path, profile: &Path, url: &str) -> String {
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium --dump-dom {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The DOM with the three normalizations of this file's opening comment.
fn normalized(dom: &str) -> String {
    let banner = regex::Regex::new(r"(?s)<xslt-warning-banner\b.*?</xslt-warning-banner>").unwrap();
    let charset = regex::Regex::new(
        r#"(?i)<meta (charset="[^"]*"|http-equiv="Content-Type" content="[^"]*")>"#,
    )
    .unwrap();
    let dom = banner.replace_all(dom, "");
    let dom = charset.replace_all(&dom, "");
    // Whitespace runs outside <pre> and <textarea> as one space.
    let keep = regex::Regex::new(r"(?is)<(pre|textarea)\b.*?</(pre|textarea)>").unwrap();
    let space = regex::Regex::new(r"\s+").unwrap();
    let mut out = String::new();
    let mut last = 0;
    for m in keep.find_iter(&dom) {
        out.push_str(&space.replace_all(&dom[last..m.start()], " "));
        out.push_str(m.as_str());
        last = m.end();
    }
    out.push_str(&space.replace_all(&dom[last..], " "));
    out
}

/// Chromium's DOM of `path` as raw XML from `raw_port` and as Axle's page
/// from `axle_port`, normalized.
fn both_doms(
    chromium: &Path,
    profile: &Path,
    raw_port: u16,
    axle_port: u16,
    path: &str,
) -> (String, String) {
    let raw = dump_dom(
        chromium,
        profile,
        &format!("http://127.0.0.1:{raw_port}{path}"),
    );
    // The browser really transformed it: not its view of XML as text.
    assert!(
        !raw.contains("&lt;?xml-stylesheet") && raw.contains("<body"),
        "{path}: Chromium did not apply the stylesheet (has this Chromium \
         lost client-side XSLT?):\n{raw}"
    );
    let page = dump_dom(
        chromium,
        profile,
        &format!("http://127.0.0.1:{axle_port}{path}"),
    );
    (normalized(&raw), normalized(&page))
}

#[test]
fn chromium_s_dom_of_the_raw_xml_is_its_dom_of_axle_s_page() {
    let Some(chromium) = tool("chromium") else {
        return;
    };
    let profile = tempdir();
    let corpus = manifest_dir().join("tests/fixtures/browser-dom");
    let mut identical = 0;
    // The samples (their own axle.toml), and the cases written for this
    // test (`xsl-sort = "unicode"`, as a migrated site would set it).
    for (root, paths) in [
        (
            manifest_dir().join("samples"),
            &["/browser/feed.xml", "/browser/sitemap.xml"][..],
        ),
        (corpus.clone(), &["/rss.xml", "/opml.xml"][..]),
    ] {
        let raw_port = static_server(root.clone());
        let (_axle, axle_port) = start_axle_on(&root);
        for path in paths {
            let (raw, page) = both_doms(&chromium, profile.path(), raw_port, axle_port, path);
            assert!(
                raw == page,
                "{path}: the DOMs differ\n--- Chromium's own XSLT\n{raw}\n--- Axle's page\n{page}"
            );
            identical += 1;
        }
    }
    assert_eq!(identical, 4);
}

/// Without `xsl-sort = "unicode"` the OPML case sorts by code point and
/// its DOM is not Chromium's: the key is what makes it identical.
#[test]
fn code_point_order_is_not_chromium_s() {
    let Some(chromium) = tool("chromium") else {
        return;
    };
    let profile = tempdir();
    let dir = tempdir();
    let root = dir.path().join("corpus");
    let status = Command::new("cp")
        .arg("-r")
        .arg(manifest_dir().join("tests/fixtures/browser-dom"))
        .arg(&root)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::remove_file(root.join("axle.toml")).unwrap();
    let raw_port = static_server(root.clone());
    let (_axle, axle_port) = start_axle_on(&root);
    let (raw, page) = both_doms(&chromium, profile.path(), raw_port, axle_port, "/opml.xml");
    assert_ne!(raw, page, "code point order should differ from Chromium's");
    let first = |dom: &str, a: &str, b: &str| dom.find(a).unwrap() < dom.find(b).unwrap();
    assert!(first(&raw, "Älvsjö", "Ann") && first(&raw, "_drafts", "Zed"));
    assert!(first(&page, "Ann", "Älvsjö") && first(&page, "Zed", "_drafts"));
}

#[test]
fn the_normalizations_remove_only_what_they_name() {
    let chromium = "<html><head><meta charset=\"UTF-8\"><title>t</title></head><body><xslt-warning-banner style=\"x\" popover=\"manual\">XSLT is going away</xslt-warning-banner><p>a  b</p>\n<pre>x\n  y</pre>\n</body></html>";
    let axle = "<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\"><title>t</title></head><body><p>a b</p> <pre>x\n  y</pre>\n\n</body></html>";
    assert_eq!(normalized(chromium), normalized(axle));
    // A page's own text, a real difference, stays one.
    assert_ne!(normalized("<p>a b</p>"), normalized("<p>ab</p>"));
    // Whitespace inside <pre> is kept as it is.
    assert_ne!(normalized("<pre>x  y</pre>"), normalized("<pre>x y</pre>"));
    // Other meta elements stay.
    assert!(normalized("<meta name=\"viewport\" content=\"w\">").contains("viewport"));
}
