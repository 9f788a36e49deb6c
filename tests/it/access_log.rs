//! `--access-log`: one line per request on both connection paths (a hit in
//! wire form, a render, a 404, a POST handed to hyper), in Apache's
//! combined format with the cache status and the time after it, or as JSON
//! lines; off by default.

use std::time::{Duration, Instant};

use crate::tiers_support::{Axle, TiersSite};

/// The log's lines once it holds `n` (the writer flushes within ~100 ms).
fn lines(path: &std::path::Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(String::from).collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_request_is_logged_in_the_combined_format() {
    let site = TiersSite::new();
    let log = site.beside("logs").join("access.log");
    let server = Axle::start(&site.root, false, &["--access-log", log.to_str().unwrap()]);
    let ua = [
        ("user-agent", "tester/1.0"),
        ("referer", "http://example.org/from"),
    ];
    assert_eq!(server.get("/big.xml", &ua).await.status, 200); // render
    let hit = server.get("/big.xml?x=1", &ua).await; // render (new params)
    assert_eq!(hit.status, 200);
    let hit = server.get("/big.xml", &ua).await; // wire-path hit
    assert_eq!(hit.header("x-axle-cache"), "hit");
    assert_eq!(server.get("/nowhere.xml", &[]).await.status, 404);
    let post = crate::tiers_support::request(
        reqwest::Method::POST,
        &format!("{}/big.xml", server.url),
        &[("content-type", "application/x-www-form-urlencoded")],
    )
    .await;
    let lines = lines(&log, 5);
    assert_eq!(lines.len(), 5, "{lines:#?}");
    let re = regex::Regex::new(
        r#"^127\.0\.0\.1 - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\] "(GET|POST) (\S+) HTTP/1\.1" (\d{3}) (\d+|-) "([^"]*)" "([^"]*)" "([^"]*)" (\d+)$"#,
    )
    .unwrap();
    let parsed: Vec<_> = lines
        .iter()
        .map(|l| {
            re.captures(l)
                .unwrap_or_else(|| panic!("not combined: {l}"))
        })
        .collect();
    let field = |i: usize, k: usize| parsed[i].get(k).unwrap().as_str().to_string();
    assert_eq!(field(0, 2), "/big.xml");
    assert_eq!(field(0, 3), "200");
    assert_eq!(field(0, 4), hit.body.len().to_string());
    assert_eq!(field(0, 5), "http://example.org/from");
    assert_eq!(field(0, 6), "tester/1.0");
    assert_eq!(field(0, 7), "miss");
    assert_eq!(field(1, 2), "/big.xml?x=1");
    assert_eq!(field(2, 7), "hit");
    assert_eq!(field(2, 4), hit.body.len().to_string());
    assert_eq!(field(3, 3), "404");
    assert_eq!(field(3, 6), "-");
    assert_eq!(field(4, 1), "POST");
    assert_eq!(field(4, 3), post.status.to_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn json_lines_and_no_log_by_default() {
    let site = TiersSite::new();
    let log = site.beside("logs").join("access.jsonl");
    let server = Axle::start(
        &site.root,
        false,
        &[
            "--access-log",
            log.to_str().unwrap(),
            "--access-log-format",
            "json",
        ],
    );
    server.get("/big.xml", &[]).await;
    server.get("/big.xml", &[]).await;
    let lines = lines(&log, 2);
    assert_eq!(lines.len(), 2);
    let second: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(second["path"], "/big.xml");
    assert_eq!(second["status"], 200);
    assert_eq!(second["cache"], "hit");
    assert_eq!(second["client"], "127.0.0.1");
    assert!(second["micros"].as_u64().is_some());
    // Without --access-log nothing is written anywhere near the site.
    let quiet = Axle::start(&site.root, false, &[]);
    quiet.get("/big.xml", &[]).await;
    assert!(!site.root.join("access.log").exists());
}
