//! Issue #36 row 16: `--root current` where `current -> releases/N` is
//! swapped by a deploy (`ln -sfn releases/N+1 current.tmp && mv -T
//! current.tmp current`). SIGHUP re-resolves the root; under `--freshness
//! watch` the swap alone does; the old release may be deleted once
//! swapped; the log names the release served.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::serve_child;

/// `<tmp>/releases/{1,2,3}` (each with a document and a static file
/// naming its release) and `<tmp>/current -> releases/1`.
fn releases() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    for (n, word) in [(1, "ONE"), (2, "TWO"), (3, "THREE")] {
        let release = base.join(format!("releases/{n}"));
        std::fs::create_dir_all(&release).unwrap();
        std::fs::write(release.join("page.xml"), format!("<doc>{word}</doc>")).unwrap();
        std::fs::write(release.join("v.txt"), word).unwrap();
    }
    std::os::unix::fs::symlink("releases/1", base.join("current")).unwrap();
    (dir, base)
}

/// The deploy's swap: a new link renamed over the old name.
fn swap(base: &Path, n: u32) {
    let tmp = base.join("current.tmp");
    std::os::unix::fs::symlink(format!("releases/{n}"), &tmp).unwrap();
    std::fs::rename(&tmp, base.join("current")).unwrap();
}

async fn get(url: &str) -> (u16, String) {
    let r = reqwest::get(url).await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// Polls `url` until its body holds `word` (at most 10 s).
async fn wait_for(url: &str, word: &str) -> Duration {
    let start = Instant::now();
    loop {
        let (status, body) = get(url).await;
        if status == 200 && body.contains(word) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{url} never said {word}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn start(base: &Path, freshness: &str) -> (std::process::Child, String, PathBuf) {
    let log = base.join("server.log");
    let file = std::fs::File::create(&log).unwrap();
    let (child, url) = serve_child(
        &["--listen", "127.0.0.1:0", "--freshness", freshness],
        &base.join("current"),
        Stdio::from(file),
    );
    (child, url, log)
}

fn hup(child: &std::process::Child) {
    let sent = std::process::Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_follows_a_swapped_root_and_the_old_release_may_go() {
    let (_dir, base) = releases();
    let (mut child, url, log) = start(&base, "check");
    let page = format!("{url}/page.xml");
    let file = format!("{url}/v.txt");
    assert!(get(&page).await.1.contains("ONE"));
    assert!(get(&page).await.1.contains("ONE"), "a hit");
    assert_eq!(get(&file).await.1, "ONE");

    swap(&base, 2);
    hup(&child);
    wait_for(&page, "TWO").await;
    wait_for(&file, "TWO").await;
    // Nothing of the old release is served afterwards, even once it is
    // deleted.
    std::fs::remove_dir_all(base.join("releases/1")).unwrap();
    for _ in 0..3 {
        assert_eq!(get(&page).await, (200, "<doc>TWO</doc>".to_string()));
        assert_eq!(get(&file).await, (200, "TWO".to_string()));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let one = base.join("releases/1").display().to_string();
    let two = base.join("releases/2").display().to_string();
    let start_line = text.lines().find(|l| l.contains("axle serving")).unwrap();
    assert!(start_line.contains(&one), "{text}");
    assert!(
        start_line.contains(&base.join("current").display().to_string()),
        "the configured root: {start_line}"
    );
    let changed = text
        .lines()
        .find(|l| l.contains("document root changed"))
        .unwrap_or_else(|| panic!("no change logged: {text}"));
    assert!(changed.contains(&two), "{changed}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn in_watch_mode_the_swap_alone_is_followed() {
    let (_dir, base) = releases();
    let (mut child, url, log) = start(&base, "watch");
    let page = format!("{url}/page.xml");
    for _ in 0..3 {
        assert!(get(&page).await.1.contains("ONE"));
    }
    swap(&base, 2);
    let took = wait_for(&page, "TWO").await;
    assert!(took < Duration::from_secs(5), "{took:?}");
    swap(&base, 3);
    std::fs::remove_dir_all(base.join("releases/2")).unwrap();
    wait_for(&page, "THREE").await;
    for _ in 0..3 {
        assert_eq!(get(&page).await, (200, "<doc>THREE</doc>".to_string()));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let three = base.join("releases/3").display().to_string();
    assert!(
        text.lines()
            .any(|l| l.contains("document root changed") && l.contains(&three)),
        "{text}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}
