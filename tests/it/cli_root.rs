//! `axle serve` without `--root` (issue #37 item 8): one rule, however it
//! is started (`cargo run` sets CARGO_MANIFEST_DIR, an installed binary
//! does not): the current directory when it holds a site (`index.xml` or
//! `axle.toml`), `samples/` in an Axle checkout, else the current
//! directory; the start names the root, the rule and `--root`.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::Stdio;

use crate::support::axle;

/// `axle serve --listen 127.0.0.1:0` in `dir` (with CARGO_MANIFEST_DIR set
/// to `manifest_dir` when given, as `cargo run` does): its first stdout
/// line, the rest of its stdout, and what `/` answers.
async fn start_in(dir: &Path, manifest_dir: Option<&Path>) -> (String, String, u16) {
    let mut cmd = axle();
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .current_dir(dir)
        .env_remove("CARGO_MANIFEST_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(m) = manifest_dir {
        cmd.env("CARGO_MANIFEST_DIR", m);
    }
    let mut child = cmd.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_string();
    let status = reqwest::get(&url).await.unwrap().status().as_u16();
    child.kill().unwrap();
    child.wait().unwrap();
    // Printed with the first line, before any request was answered.
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    (first, rest, status)
}

/// A directory that looks like a checkout of Axle: its Cargo.toml is the
/// `axle` package's, with a sample site under samples/.
fn checkout(dir: &Path) {
    std::fs::create_dir_all(dir.join("samples")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"axle\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("samples/index.xml"),
        "<?xml version=\"1.0\"?>\n<page>samples home</page>\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_checkout_serves_its_samples_however_it_is_started() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    checkout(&top);
    // `./target/release/axle serve` (no CARGO_MANIFEST_DIR) and `cargo run`
    // (CARGO_MANIFEST_DIR is the checkout) agree.
    for manifest in [None, Some(top.as_path())] {
        let (first, second, status) = start_in(&top, manifest).await;
        assert!(
            first.contains(&format!("serving {}", top.join("samples").display())),
            "{first}"
        );
        assert!(
            second.contains("samples/, the sample site of the Axle checkout")
                && second.contains("--root DIR"),
            "{second}"
        );
        assert_eq!(status, 200, "{manifest:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_site_in_the_current_directory_is_served_and_otherwise_the_start_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    // A site: the current directory, even inside something checkout-like.
    let site = top.join("site");
    checkout(&site);
    std::fs::write(site.join("index.xml"), "<page>own</page>\n").unwrap();
    let (first, second, status) = start_in(&site, None).await;
    assert!(
        first.contains(&format!("serving {} ", site.display())),
        "{first}"
    );
    assert!(
        second.contains("which holds index.xml or axle.toml"),
        "{second}"
    );
    assert_eq!(status, 200);
    // An axle.toml alone marks a site too.
    let configured = top.join("configured");
    std::fs::create_dir_all(&configured).unwrap();
    std::fs::write(configured.join("axle.toml"), "").unwrap();
    let (first, _, _) = start_in(&configured, None).await;
    assert!(
        first.contains(&format!("serving {} ", configured.display())),
        "{first}"
    );
    // Nothing: the current directory, and the start says why / is 404.
    // `cargo run` from there (CARGO_MANIFEST_DIR naming a checkout) is no
    // different.
    let empty = top.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let elsewhere = top.join("elsewhere");
    checkout(&elsewhere);
    for manifest in [None, Some(elsewhere.as_path())] {
        let (first, second, status) = start_in(&empty, manifest).await;
        assert!(
            first.contains(&format!("serving {} ", empty.display())),
            "{first}"
        );
        assert!(
            second.contains("the current directory, which holds no index.xml or axle.toml")
                && second.contains("--root DIR"),
            "{second}"
        );
        assert_eq!(status, 404);
    }
}
