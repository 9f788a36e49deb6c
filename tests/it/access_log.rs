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

/// Sends `bytes` on a fresh connection to `url`'s address and returns the
/// status of the first answer (0: closed without one).
fn send(url: &str, bytes: &[u8]) -> u16 {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // A peer that closes with unread bytes resets the connection; what was
    // answered before is still read.
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Sends `first`, reads its whole answer (`Content-Length` framed), then
/// sends `then` on the same connection: both statuses.
fn keep_alive(url: &str, first: &[u8], then: &[u8]) -> (u16, u16) {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(first).unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        assert_eq!(
            s.read(&mut byte).unwrap(),
            1,
            "the first answer ended early"
        );
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).unwrap();
    let status = |text: &str| {
        text.split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    };
    let first_status = status(&head);
    let _ = s.write_all(then);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    (first_status, status(&String::from_utf8_lossy(&out)))
}

/// The line whose status field is `status` (combined format), if any.
fn with_status(lines: &[String], status: u16) -> Vec<&String> {
    let needle = format!("\" {status} ");
    lines.iter().filter(|l| l.contains(&needle)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_requests_are_logged_with_their_status_and_line() {
    let site = TiersSite::new();
    let log = site.beside("logs").join("access.log");
    let server = Axle::start(
        &site.root,
        false,
        &[
            "--access-log",
            log.to_str().unwrap(),
            "--max-uri-size",
            "1KiB",
            "--max-header-count",
            "10",
            "--max-body-size",
            "1KiB",
            "--io-threads",
            "1",
        ],
    );
    let url = &server.url;
    // 400 from the connection loop: HTTP/1.1 without Host.
    assert_eq!(
        send(
            url,
            b"GET /no-host.xml HTTP/1.1\r\nUser-Agent: t400\r\n\r\n"
        ),
        400
    );
    // 400 from hyper: a head httparse cannot parse (handed off).
    assert_eq!(
        send(
            url,
            b"GET /bad-field.xml HTTP/1.1\r\nHost: a\r\nUser-Agent: t400h\r\nno colon here\r\n\r\n"
        ),
        400
    );
    // 413: a declared body over max-body-size.
    assert_eq!(
        send(url, b"POST /big.xml HTTP/1.1\r\nHost: a\r\nUser-Agent: t413\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n"),
        413
    );
    // 414: a 20 KB target (cut in the log).
    let long = format!(
        "GET /{} HTTP/1.1\r\nHost: a\r\nUser-Agent: t414\r\nConnection: close\r\n\r\n",
        "a".repeat(20_000)
    );
    assert_eq!(send(url, long.as_bytes()), 414);
    // 431: more fields than max-header-count.
    let mut many = String::from("GET /many.xml HTTP/1.1\r\nHost: a\r\nUser-Agent: t431\r\n");
    for i in 0..20 {
        many.push_str(&format!("X-{i}: y\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(send(url, many.as_bytes()), 431);
    // 431 from hyper: the same head after a POST on a handed-off connection.
    let post = b"POST /big.xml HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=b";
    let (first, then) = keep_alive(
        url,
        post,
        many.replace("/many.xml", "/many-hyper.xml").as_bytes(),
    );
    assert_ne!(first, 0);
    assert_eq!(then, 431);
    // A line with no request in it at all (a TLS ClientHello).
    assert_eq!(
        send(url, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"),
        400
    );

    let lines = lines(&log, 8);
    let text = lines.join("\n");
    assert!(text.is_ascii(), "{text}");
    let one = |status: u16, what: &str| -> String {
        let found: Vec<_> = with_status(&lines, status)
            .into_iter()
            .filter(|l| l.contains(what))
            .collect();
        assert_eq!(found.len(), 1, "one {status} line with {what}: {lines:#?}");
        found[0].clone()
    };
    let l = one(400, "t400\"");
    assert!(l.contains("\"GET /no-host.xml HTTP/1.1\" 400 "), "{l}");
    let l = one(400, "t400h");
    assert!(l.contains("\"GET /bad-field.xml HTTP/1.1\" 400 "), "{l}");
    let l = one(413, "t413");
    assert!(l.contains("\"POST /big.xml HTTP/1.1\" 413 "), "{l}");
    let l = one(414, "t414");
    assert!(
        l.contains(&format!(
            "\"GET /{}... HTTP/1.1\" 414 ",
            "a".repeat(8 * 1024 - 1)
        )),
        "cut at 8 KiB: {}",
        &l[..200]
    );
    assert!(l.len() < 9 * 1024, "{}", l.len());
    let l = one(431, "/many.xml");
    assert!(l.contains("\"GET /many.xml HTTP/1.1\" 431 "), "{l}");
    assert!(l.contains("\"t431\""), "{l}");
    let l = one(431, "/many-hyper.xml");
    assert!(l.contains("\"GET /many-hyper.xml HTTP/1.1\" 431 "), "{l}");
    assert_eq!(lines.len(), 8, "one line per answer: {lines:#?}");
    let l = one(400, "\\x16\\x03\\x01");
    assert!(l.contains("] \"\\x16\\x03\\x01\\x02\\x00"), "{l}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bytes_are_escaped_and_versions_logged_as_sent() {
    let site = TiersSite::new();
    for format in ["combined", "json"] {
        let log = site.beside(format).join("access.log");
        let server = Axle::start(
            &site.root,
            false,
            &[
                "--access-log",
                log.to_str().unwrap(),
                "--access-log-format",
                format,
                "--io-threads",
                "1",
            ],
        );
        let url = &server.url;
        // A User-Agent with every byte 0x80-0xFF, a quote and a backslash;
        // a render (own loop), then a wire-path hit, the same way.
        let mut ua = b"ua \"q\" \\ ".to_vec();
        ua.extend(0x80..=0xffu8);
        for _ in 0..2 {
            let mut req =
                b"GET /big.xml HTTP/1.1\r\nHost: a\r\nConnection: close\r\nUser-Agent: ".to_vec();
            req.extend_from_slice(&ua);
            req.extend_from_slice(b"\r\n\r\n");
            assert_eq!(send(url, &req), 200);
        }
        // HTTP/1.0 (handed to hyper).
        assert_eq!(
            send(url, b"GET /big.xml HTTP/1.0\r\nUser-Agent: old\r\n\r\n"),
            200
        );
        // A POST handed to hyper.
        let post = b"POST /big.xml HTTP/1.1\r\nHost: a\r\nUser-Agent: poster\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=b";
        let post_status = send(url, post);
        assert_ne!(post_status, 0);

        let lines = lines(&log, 4);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        let bytes = std::fs::read(&log).unwrap();
        assert!(bytes.is_ascii(), "{format}: the file is ASCII");
        let want_ua: String = {
            let mut s = String::from("ua \\x22q\\x22 \\x5C ");
            for b in 0x80..=0xffu8 {
                s.push_str(&format!("\\x{b:02X}"));
            }
            s
        };
        if format == "combined" {
            for l in &lines[..2] {
                assert!(l.contains(&format!("\"{want_ua}\"")), "{l}");
                assert!(l.contains("\"GET /big.xml HTTP/1.1\" 200 "), "{l}");
            }
            assert!(lines[0].contains("\"miss\""), "{}", lines[0]);
            assert!(lines[1].contains("\"hit\""), "{}", lines[1]);
            assert!(
                lines[2].contains("\"GET /big.xml HTTP/1.0\" 200 "),
                "{}",
                lines[2]
            );
            assert!(lines[2].contains("\"old\""), "{}", lines[2]);
            assert!(
                lines[3].contains(&format!("\"POST /big.xml HTTP/1.1\" {post_status} ")),
                "{}",
                lines[3]
            );
            assert!(lines[3].contains("\"poster\""), "{}", lines[3]);
        } else {
            let v: Vec<serde_json::Value> = lines
                .iter()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
            for j in &v[..2] {
                assert_eq!(j["user_agent"], want_ua.as_str(), "{j}");
                assert_eq!(j["protocol"], "HTTP/1.1");
            }
            assert_eq!(v[1]["cache"], "hit");
            assert_eq!(v[2]["protocol"], "HTTP/1.0");
            assert_eq!(v[2]["request"], "GET /big.xml HTTP/1.0");
            assert_eq!(v[3]["method"], "POST");
            assert_eq!(v[3]["status"], post_status);
        }
    }
}
