//! `axle build`: the samples exported to static files are what a running
//! `axle serve` sends for the same URLs, byte for byte but for the values
//! of their internal links (pointed at the exported files; byte for byte
//! with `Links::AsServed`); a re-run renders again exactly the pages an
//! edit touched, and the pages whose links now resolve otherwise; a
//! failing page fails the build. `static_host.rs` serves the output.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::support::{axle, copy_dir};

/// A copy of `samples/` at `<tmp>/root`, and `<tmp>/out` for the export.
fn samples() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("samples"),
        &root,
    );
    let out = dir.path().join("out");
    (dir, root, out)
}

fn build(root: &Path, out: &Path) -> Output {
    axle()
        .arg("build")
        .arg("--root")
        .arg(root)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn build_ok(root: &Path, out: &Path) -> String {
    let output = build(root, out);
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The URLs a build's plain output says it rendered.
fn rendered(stdout: &str) -> BTreeSet<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("rendered "))
        .filter_map(|l| l.split(" -> ").next())
        .map(str::to_string)
        .collect()
}

fn manifest(out: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read(out.join("axle-manifest.json")).unwrap();
    serde_json::from_slice::<serde_json::Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// `text` with the value of every link attribute emptied.
fn without_link_values(text: &[u8]) -> Vec<u8> {
    let attr =
        regex::bytes::Regex::new(r#"(\s(?:href|src|action|srcset)=)("[^"]*"|'[^']*')"#).unwrap();
    attr.replace_all(text, &b"$1\"\""[..]).into_owned()
}

/// Exported as a library caller may: links as the server sends them.
async fn build_as_served(root: &Path, out: &Path) {
    let server = axle::Server::builder(root).build().unwrap();
    axle::export::export_with(&server, out, false, axle::export::Links::AsServed)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn every_exported_file_is_what_the_server_sends() {
    let (dir, root, out) = samples();
    let stdout = build_ok(&root, &out);
    let as_served = dir.path().join("as-served");
    build_as_served(&root, &as_served).await;
    // Dynamic locations are request-time only: skipped, and said so.
    for prefix in ["/live", "/post", "/mirror"] {
        assert!(stdout.contains(&format!("skipped {prefix} ")), "{stdout}");
    }
    // Pages made per request (XSP) are listed, not written.
    for page in ["/xsp/hello.xml", "/xsp/guestbook.xml"] {
        assert!(
            stdout.contains(&format!("skipped {page}: made per request")),
            "{stdout}"
        );
    }
    let entries = manifest(&out);
    let urls: BTreeSet<&str> = entries.iter().map(|e| e["url"].as_str().unwrap()).collect();
    for expected in [
        "/",
        "/index.xml",
        "/articles/",
        "/articles/xml-pipelines.xml",
        "/styles/index.xml?style=print",
        "/css/site.css",
    ] {
        assert!(urls.contains(expected), "{expected} missing: {urls:?}");
    }
    assert!(!urls.iter().any(|u| u.starts_with("/live")
        || u.starts_with("/post")
        || u.starts_with("/mirror")
        || u.contains("axle.toml")));

    let (mut child, base) =
        crate::support::serve_child(&["--listen", "127.0.0.1:0"], &root, Stdio::null());
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for entry in &entries {
        let url = entry["url"].as_str().unwrap();
        let file = entry["file"].as_str().unwrap();
        let mut get = client.get(format!("{base}{url}"));
        match entry["media"].as_str() {
            // The samples' media rule is AxKit's WAP check.
            Some("handheld") => get = get.header("accept", "text/vnd.wap.wml"),
            Some(other) => panic!("no request chooses media {other} in the samples"),
            None => {}
        }
        let response = get.send().await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            entry["content_type"].as_str().unwrap(),
            "{url}"
        );
        let served = response.bytes().await.unwrap();
        let written = std::fs::read(out.join(file)).unwrap();
        // Byte for byte as served, with `Links::AsServed`.
        let exact = std::fs::read(as_served.join(file)).unwrap();
        assert!(served[..] == exact[..], "{url} differs from {file}");
        // By default, but for the values of link attributes; copies of the
        // root's files (CSS, stylesheets) exactly.
        assert_eq!(
            without_link_values(&served),
            without_link_values(&written),
            "{url}: {file} differs elsewhere than in a link"
        );
        if !file.ends_with(".html") && !file.ends_with(".xml") {
            assert!(served[..] == written[..], "{url} differs from {file}");
        }
        if url.starts_with("/stylesheets/") {
            assert!(served[..] == written[..], "a copy {url} was rewritten");
        }
    }
    // The links changed where the server's URL is not the file's.
    let index = String::from_utf8(std::fs::read(out.join("index.html")).unwrap()).unwrap();
    assert!(
        index.contains("href=\"custom/numbered.xml.html\""),
        "{index}"
    );
    let served_index =
        String::from_utf8(std::fs::read(as_served.join("index.html")).unwrap()).unwrap();
    assert!(
        served_index.contains("href=\"/custom/numbered.xml\""),
        "{served_index}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // Named predictably.
    let file_of = |url: &str| {
        entries
            .iter()
            .find(|e| e["url"] == url && e.get("media").is_none())
            .map(|e| e["file"].as_str().unwrap().to_string())
            .unwrap()
    };
    // The handheld media's variants (a PI names it, the WAP rule chooses
    // it): the page and each style; no other document has one.
    let media: BTreeSet<(&str, &str)> = entries
        .iter()
        .filter(|e| e["media"] == "handheld")
        .map(|e| (e["url"].as_str().unwrap(), e["file"].as_str().unwrap()))
        .collect();
    assert!(
        media.contains(&("/styles/index.xml", "styles/index.xml.media-handheld.html")),
        "{media:?}"
    );
    assert!(
        media.contains(&(
            "/styles/index.xml?style=handheld",
            "styles/index.xml.handheld.media-handheld.html"
        )),
        "{media:?}"
    );
    assert!(
        media
            .iter()
            .all(|(u, _)| u.starts_with("/styles/index.xml")),
        "{media:?}"
    );
    // `?style=handheld` names a PI for handheld only: a screen client gets
    // the screen fallback, a handheld client the handheld stylesheet.
    let handheld =
        std::fs::read(out.join("styles/index.xml.handheld.media-handheld.html")).unwrap();
    let screen = std::fs::read(out.join("styles/index.xml.handheld.xml")).unwrap();
    assert!(
        handheld != screen,
        "the handheld variant is the screen page"
    );
    assert_eq!(file_of("/"), "index.html");
    assert_eq!(
        file_of("/articles/xml-pipelines.xml"),
        "articles/xml-pipelines.xml.html"
    );
    assert_eq!(
        file_of("/styles/index.xml?style=print"),
        "styles/index.xml.print.html"
    );
}

#[test]
fn a_rerun_renders_exactly_the_pages_an_edit_touched() {
    let (_dir, root, out) = samples();
    let first = rendered(&build_ok(&root, &out));
    assert!(first.len() > 20, "{first:?}");
    // Nothing changed: nothing rendered.
    assert_eq!(rendered(&build_ok(&root, &out)), BTreeSet::new());

    // One document that nothing else reads.
    let doc = root.join("nested/outer.xml");
    let text = std::fs::read_to_string(&doc).unwrap();
    std::fs::write(&doc, text.replace("</", "<!-- edited --></")).unwrap();
    let again = build_ok(&root, &out);
    assert_eq!(
        rendered(&again),
        BTreeSet::from(["/nested/outer.xml".to_string()]),
        "{again}"
    );
    assert!(
        !std::fs::read(out.join("nested/outer.xml.html"))
            .unwrap()
            .is_empty()
    );

    // A stylesheet two documents use: both, and the stylesheet's own copy.
    let sheet = root.join("stylesheets/article.xsl");
    let mut text = std::fs::read_to_string(&sheet).unwrap();
    text.push_str("<!-- edited -->\n");
    std::fs::write(&sheet, text).unwrap();
    let again = build_ok(&root, &out);
    assert_eq!(
        rendered(&again),
        BTreeSet::from(
            [
                "/articles/layout-by-import.xml",
                "/articles/xml-pipelines.xml",
                "/stylesheets/article.xsl",
            ]
            .map(str::to_string)
        ),
        "{again}"
    );
    // The manifest still lists every page.
    assert_eq!(manifest(&out).len(), first.len());
}

/// A page whose sources did not change is rendered again when one of its
/// links resolves otherwise: a page it links to appears, then goes.
#[test]
fn a_rerun_relinks_the_pages_whose_link_targets_changed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/static-host"),
        &root,
    );
    // Without the listing (rendered on every run).
    std::fs::remove_dir_all(root.join("files")).unwrap();
    let out = dir.path().join("out");
    let first = build_ok(&root, &out);
    assert!(
        first.contains("link /missing.xml left as written: the server answers 404"),
        "{first}"
    );
    let index = || std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index().contains("href=\"/missing.xml\""));
    assert_eq!(rendered(&build_ok(&root, &out)), BTreeSet::new());

    // The page it links to appears: it, and the two URLs of the page that
    // links to it (`/` and `/index.xml`), nothing else.
    std::fs::write(
        root.join("missing.xml"),
        "<?xml-stylesheet type=\"text/xsl\" href=\"page.xsl\"?>\n<page title=\"Found\"/>\n",
    )
    .unwrap();
    let again = build_ok(&root, &out);
    assert_eq!(
        rendered(&again),
        BTreeSet::from(["/", "/index.xml", "/missing.xml"].map(str::to_string)),
        "{again}"
    );
    assert!(index().contains("href=\"missing.xml.html\""), "{}", index());
    assert!(!again.contains("link /missing.xml"), "{again}");
    assert_eq!(rendered(&build_ok(&root, &out)), BTreeSet::new());

    // It goes: the link is as written again, and listed.
    std::fs::remove_file(root.join("missing.xml")).unwrap();
    let gone = build_ok(&root, &out);
    assert_eq!(
        rendered(&gone),
        BTreeSet::from(["/", "/index.xml"].map(str::to_string)),
        "{gone}"
    );
    assert!(index().contains("href=\"/missing.xml\""), "{}", index());
    assert!(!out.join("missing.xml.html").exists());
}

#[test]
fn a_failing_page_fails_the_build_and_is_listed() {
    let (_dir, root, out) = samples();
    std::fs::write(
        root.join("broken.xml"),
        "<?xml-stylesheet type=\"text/xsl\" href=\"/stylesheets/missing.xsl\"?>\n<doc/>\n",
    )
    .unwrap();
    let output = build(&root, &out);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("page(s) failed"), "{stderr}");
    assert!(stderr.contains("/broken.xml"), "{stderr}");
    // The other pages were written all the same.
    assert!(out.join("index.html").is_file());
}

/// A location with `directories = true`: each directory's listing is
/// exported at its URL as `DIR/index.EXT`, what the server sends (its
/// links pointed at the exported files), asked again on every run (no
/// content hash covers a directory's entries) and kept when unchanged.
#[tokio::test(flavor = "multi_thread")]
async fn directory_listings_are_exported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let out = dir.path().join("out");
    std::fs::create_dir_all(root.join("files/sub")).unwrap();
    std::fs::write(
        root.join("axle.toml"),
        "[location.\"/files\"]\ndirectories = true\n",
    )
    .unwrap();
    std::fs::write(root.join("files/a.txt"), "a\n").unwrap();
    std::fs::write(root.join("files/sub/b.txt"), "b\n").unwrap();
    std::fs::write(root.join("index.xml"), "<page/>\n").unwrap();
    let stdout = build_ok(&root, &out);
    let entries = manifest(&out);
    let file_of = |url: &str| {
        entries
            .iter()
            .find(|e| e["url"] == url)
            .map(|e| e["file"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("{url} not exported: {entries:?}\n{stdout}"))
    };
    let listing = file_of("/files/");
    assert!(listing.starts_with("files/index."), "{listing}");
    let sub = file_of("/files/sub/");
    assert!(sub.starts_with("files/sub/index."), "{sub}");
    assert!(
        String::from_utf8(std::fs::read(out.join(&listing)).unwrap())
            .unwrap()
            .contains("a.txt")
    );
    let (mut child, base) =
        crate::support::serve_child(&["--listen", "127.0.0.1:0"], &root, Stdio::null());
    for (url, file) in [("/files/", &listing), ("/files/sub/", &sub)] {
        let served = reqwest::get(format!("{base}{url}"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        // As served but for its links (to the exported files).
        assert_eq!(
            without_link_values(&served),
            without_link_values(&std::fs::read(out.join(file)).unwrap()),
            "{url} differs from {file} elsewhere than in a link"
        );
    }
    let text = std::fs::read_to_string(out.join(&listing)).unwrap();
    if listing.ends_with(".html") {
        assert!(text.contains("href=\"sub/index.html\""), "{text}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // A listing is asked of the server again on every run (no content
    // hash covers a directory's entries) and kept when its bytes are
    // unchanged: nothing changed, nothing rendered.
    let again = build_ok(&root, &out);
    assert!(rendered(&again).is_empty(), "{again}");
    assert!(again.contains("kept /files/ -> "), "{again}");
    // A new entry changes the listing: it alone is rendered again.
    std::fs::write(root.join("files/c.txt"), "c\n").unwrap();
    let third = build_ok(&root, &out);
    assert_eq!(
        rendered(&third),
        BTreeSet::from([String::from("/files/"), String::from("/files/c.txt")]),
        "{third}"
    );
    assert!(
        std::fs::read_to_string(out.join(&listing))
            .unwrap()
            .contains("c.txt")
    );
}

/// Issue #36 row 14: an edited state file naming paths outside the output
/// folder makes a re-run delete nothing there; a symlink inside the
/// output folder is replaced, never written through.
#[test]
fn a_build_never_touches_anything_outside_its_output_folder() {
    let (dir, root, out) = samples();
    build_ok(&root, &out);
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "KEEP").unwrap();
    let absolute = dir.path().join("absolute-victim.txt");
    std::fs::write(&absolute, "KEEP").unwrap();
    // The state names the victims as files of the previous run.
    let state_path = out.join(".axle-build-state.json");
    let mut state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    let pages = state["pages"].as_object_mut().unwrap();
    let template = pages.values().next().unwrap().clone();
    for (url, file) in [
        ("/gone-1", "../victim.txt".to_string()),
        ("/gone-2", absolute.display().to_string()),
        ("/gone-3", "a/../../victim.txt".to_string()),
    ] {
        let mut page = template.clone();
        page["file"] = serde_json::Value::String(file);
        pages.insert(url.to_string(), page);
    }
    std::fs::write(&state_path, serde_json::to_vec(&state).unwrap()).unwrap();
    // A file of the export and a directory of it, each a link out.
    let outside = dir.path().join("outside.html");
    std::fs::write(&outside, "OUTSIDE").unwrap();
    let outside_dir = dir.path().join("outside-dir");
    std::fs::create_dir(&outside_dir).unwrap();
    let page = out.join("index.html");
    assert!(page.is_file(), "the samples export index.html");
    std::fs::remove_file(&page).unwrap();
    std::os::unix::fs::symlink(&outside, &page).unwrap();
    let articles = out.join("articles");
    assert!(articles.is_dir(), "the samples export articles/");
    std::fs::remove_dir_all(&articles).unwrap();
    std::os::unix::fs::symlink(&outside_dir, &articles).unwrap();
    // The manifest a link out too (the state stays the edited file; both
    // are written the same way).
    let manifest_outside = dir.path().join("outside-manifest.json");
    std::fs::write(&manifest_outside, "OUTSIDE").unwrap();
    std::fs::remove_file(out.join("axle-manifest.json")).unwrap();
    std::os::unix::fs::symlink(&manifest_outside, out.join("axle-manifest.json")).unwrap();

    build_ok(&root, &out);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "KEEP");
    assert_eq!(std::fs::read_to_string(&absolute).unwrap(), "KEEP");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "OUTSIDE");
    assert_eq!(std::fs::read_dir(&outside_dir).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_to_string(&manifest_outside).unwrap(),
        "OUTSIDE"
    );
    assert!(!out.join("axle-manifest.json").is_symlink());
    // The links were replaced by what the build writes.
    assert!(!page.is_symlink() && page.is_file());
    assert!(!articles.is_symlink() && articles.is_dir());
    assert!(std::fs::read_dir(&articles).unwrap().count() > 0);
}

/// Issue #36 row 15: the samples' esql database directory (`data/`) and
/// their programs are exported under no spelling of the root.
#[test]
fn a_build_exports_nothing_serve_refuses_however_the_root_is_spelled() {
    let (dir, root, _) = samples();
    std::os::unix::fs::symlink(&root, dir.path().join("link")).unwrap();
    for (n, spelling) in ["root", "./root", "root/", "link", "./link/"]
        .into_iter()
        .enumerate()
    {
        let out = dir.path().join(format!("out{n}"));
        let output = axle()
            .current_dir(dir.path())
            .arg("build")
            .arg("--root")
            .arg(spelling)
            .arg("--out")
            .arg(&out)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{spelling}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(out.join("index.html").is_file(), "{spelling}");
        for private in ["data", "programs/live.py", "programs/shout.py", "axle.toml"] {
            assert!(
                !out.join(private).exists(),
                "{spelling}: {private} exported"
            );
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            !stdout.contains(" /data/") && !stdout.contains(" /programs/"),
            "{spelling}: {stdout}"
        );
    }
}

/// A link's URL that is no exported page (`/b.xml?x=1`) is asked of the
/// server once; the answer is kept in the state with the files it came
/// from and reused while they are unchanged. When one changes (b.xsl now
/// reads `x`), the link is asked again and the page that holds it is
/// relinked, though its own sources did not change.
#[test]
fn a_link_answer_is_reused_until_a_file_it_came_from_changes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let out = dir.path().join("out");
    std::fs::create_dir_all(root.join("s")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(root.join(name), text).unwrap();
    let html = |body: &str| {
        format!(
            "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\n\
             <xsl:output method=\"html\"/>\n{body}\n</xsl:stylesheet>\n"
        )
    };
    write(
        "index.xml",
        "<?xml-stylesheet href=\"/s/page.xsl\" type=\"text/xsl\"?>\n<page><to>/b.xml?x=1</to></page>\n",
    );
    write(
        "s/page.xsl",
        &html("<xsl:template match=\"/\"><p><a href=\"{page/to}\">b</a></p></xsl:template>"),
    );
    write(
        "b.xml",
        "<?xml-stylesheet href=\"/s/b.xsl\" type=\"text/xsl\"?>\n<b/>\n",
    );
    write(
        "s/b.xsl",
        &html("<xsl:template match=\"/\"><p>b</p></xsl:template>"),
    );
    let answers = |out: &Path| -> Vec<String> {
        let state: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join(".axle-build-state.json")).unwrap())
                .unwrap();
        state["answers"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    // b.xsl ignores x: the link is the exported b page itself.
    let first = build_ok(&root, &out);
    assert!(!first.contains("link /b.xml?x=1"), "{first}");
    assert_eq!(answers(&out), ["/b.xml?x=1"]);
    // Nothing changed: nothing rendered, the answer kept.
    let second = build_ok(&root, &out);
    assert!(rendered(&second).is_empty(), "{second}");
    assert_eq!(answers(&out), ["/b.xml?x=1"]);
    // b.xsl reads x now: /b.xml?x=1 is another page, which is not
    // exported; the index, unchanged itself, is relinked and the link
    // listed.
    write(
        "s/b.xsl",
        &html(
            "<xsl:param name=\"x\"/><xsl:template match=\"/\"><p>b<xsl:value-of select=\"$x\"/></p></xsl:template>",
        ),
    );
    let third = build_ok(&root, &out);
    assert!(
        third.contains("rendered /index.xml -> index.xml.html (its links changed)")
            || third.contains("rendered / -> index.html (its links changed)"),
        "{third}"
    );
    assert!(third.contains("link /b.xml?x=1"), "{third}");
}
