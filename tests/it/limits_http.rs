//! Connection and request limits over real sockets, on both connection
//! paths: Axle's own loop (a plain GET) and the hand-off to hyper (a POST
//! with a body, or HTTP/1.0). Timeouts are set short (about a second) so
//! each test takes a few seconds at most; every timing assertion has a
//! wide margin.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{TestServer, TestSite};
use axle::CacheMode;
use axle::config::HttpLimits;

async fn server(limits: HttpLimits) -> (TestSite, TestServer) {
    let site = TestSite::new();
    let mut config = axle::ServeConfig::new(&site.root);
    config.cache_mode = CacheMode::All;
    config.http = limits;
    let server = TestServer::start_config(config, axle::Registry::default()).await;
    (site, server)
}

/// Reads until the server closes (EOF or reset) or `within` passes;
/// returns what was read and whether it closed.
async fn until_closed(stream: &mut TcpStream, within: Duration) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Err(_) => return (out, false),
            Ok(Ok(0)) | Ok(Err(_)) => return (out, true),
            Ok(Ok(n)) => out.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Reads one whole response with a `content-length` (or none, for 304
/// and HEAD); returns its status.
async fn one_response(stream: &mut TcpStream) -> u16 {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(len) = parsed.parse(&buf).unwrap() {
            let length: usize = parsed
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .map_or(0, |h| {
                    std::str::from_utf8(h.value).unwrap().parse().unwrap()
                });
            let status = parsed.code.unwrap();
            while buf.len() < len + length {
                let n = stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "closed inside a body");
                buf.extend_from_slice(&chunk[..n]);
            }
            return status;
        }
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        assert!(n > 0, "closed before an answer");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Sends `request` on a new connection and returns the status of the
/// answer and the whole text the server wrote before closing.
async fn status(server: &TestServer, request: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let _ = stream.write_all(request).await;
    let (out, closed) = until_closed(&mut stream, Duration::from_secs(10)).await;
    assert!(closed, "the server closes after answering");
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    (code, text)
}

/// A form POST (handed to hyper) with `body`.
fn post(target: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A plain GET (Axle's own loop).
fn get(target: &str, extra: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n").into_bytes()
}

/// The same GET in HTTP/1.0 (handed to hyper).
fn get10(target: &str, extra: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.0\r\nHost: x\r\n{extra}\r\n").into_bytes()
}

/// Sends a head one byte every 100 ms after its first `keep` bytes;
/// returns how long after its first byte the server closed.
async fn slowloris(stream: &mut TcpStream, head: &[u8]) -> Duration {
    let started = Instant::now();
    for b in head {
        if stream.write_all(&[*b]).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut probe = [0u8; 1];
        if let Ok(r) = tokio::time::timeout(Duration::from_millis(1), stream.read(&mut probe)).await
        {
            assert!(matches!(r, Ok(0) | Err(_)), "no answer to a partial head");
            return started.elapsed();
        }
    }
    let (_, closed) = until_closed(stream, Duration::from_secs(10)).await;
    assert!(closed);
    started.elapsed()
}

/// Writes `slow.xml`, whose render takes about `n`³ steps of work (n =
/// 200: a fraction of a second; n = 2000: far longer than any test).
fn slow_document(site: &TestSite, n: usize) {
    let items: String = (0..n).map(|i| format!("<i>{i}</i>")).collect();
    site.write(
        "slow.xml",
        &format!(
            "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"s/slow.xsl\" type=\"text/xsl\"?>\n<doc>{items}</doc>\n"
        ),
    );
    site.write(
        "s/slow.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:template match="/"><out><xsl:for-each select="//i"><xsl:for-each select="//i"><xsl:if test="count(//i) = -1">x</xsl:if></xsl:for-each></xsl:for-each>done</out></xsl:template>
</xsl:stylesheet>"#,
    );
}

const SLOW_HEAD: &[u8] = b"GET /one.xml HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";

#[tokio::test]
async fn a_slowloris_head_is_cut_at_the_header_timeout_on_both_paths() {
    let (_site, server) = server(HttpLimits {
        header_timeout: Duration::from_secs(1),
        keepalive_timeout: Duration::from_secs(30),
        ..HttpLimits::default()
    })
    .await;
    // Own loop: from the first byte.
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let cut = slowloris(&mut stream, SLOW_HEAD).await;
    assert!(
        cut >= Duration::from_millis(900) && cut < Duration::from_secs(3),
        "own loop: cut after {cut:?}"
    );
    // hyper: a POST hands the connection over; the next head is slow.
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let first = post("/one.xml", "", "a=1");
    let first = String::from_utf8(first)
        .unwrap()
        .replace("Connection: close\r\n", "");
    stream.write_all(first.as_bytes()).await.unwrap();
    assert_eq!(one_response(&mut stream).await, 200);
    let cut = slowloris(&mut stream, SLOW_HEAD).await;
    assert!(
        cut >= Duration::from_millis(900) && cut < Duration::from_secs(3),
        "hyper: cut after {cut:?}"
    );
    // A connection that sends nothing at all is cut too (from the accept).
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let started = Instant::now();
    let (out, closed) = until_closed(&mut stream, Duration::from_secs(5)).await;
    assert!(closed && out.is_empty());
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn idle_keepalive_connections_get_the_keepalive_timeout_on_both_paths() {
    let (_site, server) = server(HttpLimits {
        header_timeout: Duration::from_millis(500),
        keepalive_timeout: Duration::from_millis(1500),
        ..HttpLimits::default()
    })
    .await;
    let plain = b"GET /one.xml HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    let handed = String::from_utf8(post("/one.xml", "", "a=1"))
        .unwrap()
        .replace("Connection: close\r\n", "")
        .into_bytes();
    for (path, request) in [("own loop", &plain), ("hyper", &handed)] {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        assert_eq!(one_response(&mut stream).await, 200, "{path}");
        // Idle longer than the header timeout: still open.
        tokio::time::sleep(Duration::from_millis(900)).await;
        stream.write_all(request).await.unwrap();
        assert_eq!(one_response(&mut stream).await, 200, "{path}: still open");
        let idle = Instant::now();
        let (out, closed) = until_closed(&mut stream, Duration::from_secs(5)).await;
        let after = idle.elapsed();
        assert!(closed && out.is_empty(), "{path}");
        assert!(
            after >= Duration::from_millis(1300) && after < Duration::from_secs(3),
            "{path}: idle connection closed after {after:?}"
        );
    }
}

#[tokio::test]
async fn a_client_that_reads_nothing_is_cut_at_the_write_timeout_on_both_paths() {
    let (site, server) = server(HttpLimits {
        write_timeout: Duration::from_secs(1),
        ..HttpLimits::default()
    })
    .await;
    const SIZE: usize = 64 << 20;
    std::fs::write(site.root.join("big.bin"), vec![b'x'; SIZE]).unwrap();
    for (path, request) in [
        ("own loop", get("/big.bin", "")),
        ("hyper", get10("/big.bin", "")),
    ] {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        stream.write_all(&request).await.unwrap();
        // Read nothing for three write timeouts.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let (out, closed) = until_closed(&mut stream, Duration::from_secs(10)).await;
        assert!(closed, "{path}");
        assert!(!out.is_empty(), "{path}: the response started");
        assert!(
            out.len() < SIZE,
            "{path}: cut before the end ({} bytes)",
            out.len()
        );
    }
    assert_eq!(server.get("/one.xml").await.status, 200);
}

#[tokio::test]
async fn past_max_connections_new_ones_wait_until_one_closes() {
    let (_site, server) = server(HttpLimits {
        max_connections: 2,
        ..HttpLimits::default()
    })
    .await;
    let keep = b"GET /one.xml HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut first = TcpStream::connect(server.addr).await.unwrap();
    first.write_all(keep).await.unwrap();
    assert_eq!(one_response(&mut first).await, 200);
    let mut second = TcpStream::connect(server.addr).await.unwrap();
    second.write_all(keep).await.unwrap();
    assert_eq!(one_response(&mut second).await, 200);
    // The third connects (the backlog) but is not served...
    let mut third = TcpStream::connect(server.addr).await.unwrap();
    third.write_all(keep).await.unwrap();
    let mut byte = [0u8; 1];
    assert!(
        tokio::time::timeout(Duration::from_millis(500), third.read(&mut byte))
            .await
            .is_err(),
        "a third connection is not served while two are open"
    );
    // ...while the ones being served still are...
    first.write_all(keep).await.unwrap();
    assert_eq!(one_response(&mut first).await, 200);
    // ...and is served once one closes.
    drop(second);
    assert_eq!(one_response(&mut third).await, 200);
}

/// A client that closes its side of the connection (fully, or only its
/// sending half) while its page renders is gone, on both paths, as nginx
/// has it ("client prematurely closed connection"): no answer, and its
/// render is cancelled (see `limits_render`). One that half-closes after
/// asking for something ready (a cached page) gets it on the own loop.
#[tokio::test]
async fn a_client_that_closes_its_side_during_a_render_is_gone_on_both_paths() {
    let site = TestSite::new();
    let mut config = axle::ServeConfig::new(&site.root);
    config.cache_mode = CacheMode::Off;
    let server = TestServer::start_config(config, axle::Registry::default()).await;
    slow_document(&site, 120);
    for (path, request) in [
        (
            "own loop",
            b"GET /slow.xml HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        (
            "hyper",
            String::from_utf8(post("/slow.xml", "", "a=1"))
                .unwrap()
                .replace("Connection: close\r\n", "")
                .into_bytes(),
        ),
        ("hyper, HTTP/1.0", get10("/slow.xml", "")),
    ] {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        stream.write_all(&request).await.unwrap();
        stream.shutdown().await.unwrap();
        let (out, closed) = until_closed(&mut stream, Duration::from_secs(10)).await;
        assert!(closed, "{path}");
        assert!(out.is_empty(), "{path}: {}", String::from_utf8_lossy(&out));
    }
    // Something ready (a cached page, on the own loop) is answered to a
    // half-closed client.
    let mut config = axle::ServeConfig::new(&site.root);
    config.cache_mode = CacheMode::All;
    let server = TestServer::start_config(config, axle::Registry::default()).await;
    assert_eq!(server.get("/one.xml").await.status, 200);
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(b"GET /one.xml HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    stream.shutdown().await.unwrap();
    let (out, closed) = until_closed(&mut stream, Duration::from_secs(10)).await;
    let text = String::from_utf8_lossy(&out);
    assert!(closed);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
}

#[tokio::test]
async fn heads_past_their_limits_are_431_on_both_paths() {
    let (_site, server) = server(HttpLimits {
        max_header_count: 10,
        max_header_bytes: 2048,
        ..HttpLimits::default()
    })
    .await;
    let many: String = (0..12).map(|i| format!("X-Field-{i}: v\r\n")).collect();
    let long = format!("X-Long: {}\r\n", "v".repeat(3000));
    for extra in [&many, &long] {
        let (own, text) = status(&server, &get("/one.xml", extra)).await;
        assert_eq!(own, 431, "own loop: {text}");
        let (hyper, text) = status(&server, &post("/one.xml", extra, "a=1")).await;
        assert_eq!(hyper, 431, "hyper: {text}");
        let (hyper, text) = status(&server, &get10("/one.xml", extra)).await;
        assert_eq!(hyper, 431, "hyper, HTTP/1.0: {text}");
    }
    // A head that never ends is cut at the limit too.
    let mut endless = b"GET /one.xml HTTP/1.1\r\nHost: x\r\nX-Endless: ".to_vec();
    endless.extend(std::iter::repeat_n(b'v', 4000));
    let (own, _) = status(&server, &endless).await;
    assert_eq!(own, 431);
    // Within the limits: served.
    let few: String = (0..5).map(|i| format!("X-Field-{i}: v\r\n")).collect();
    assert_eq!(status(&server, &get("/one.xml", &few)).await.0, 200);
    assert_eq!(status(&server, &post("/one.xml", &few, "a=1")).await.0, 200);
}

#[tokio::test]
async fn targets_and_queries_past_their_limits_are_414_on_both_paths() {
    let (_site, server) = server(HttpLimits {
        max_uri_bytes: 100,
        max_query_params: 5,
        ..HttpLimits::default()
    })
    .await;
    let long = format!("/one.xml?x={}", "a".repeat(120));
    let many = "/one.xml?a=1&b=2;c=3&d=4&e=5&f=6";
    for target in [long.as_str(), many] {
        let (own, text) = status(&server, &get(target, "")).await;
        assert_eq!(own, 414, "own loop: {text}");
        let (hyper, text) = status(&server, &get10(target, "")).await;
        assert_eq!(hyper, 414, "hyper: {text}");
        let (hyper, _) = status(&server, &post(target, "", "a=1")).await;
        assert_eq!(hyper, 414, "hyper, POST");
    }
    let (_, text) = status(&server, &get(many, "")).await;
    assert!(text.contains("more than 5 parameters"), "{text}");
    assert_eq!(status(&server, &get("/one.xml?a=1&b=2", "")).await.0, 200);
}

#[tokio::test]
async fn bodies_and_forms_past_their_limits_are_413_and_broken_bodies_400() {
    let (_site, server) = server(HttpLimits {
        max_body_bytes: 400_000,
        max_form_fields: 5,
        ..HttpLimits::default()
    })
    .await;
    let (code, text) = status(&server, &post("/one.xml", "", "a=1&b=2&c=3&d=4&e=5&f=6")).await;
    assert_eq!(code, 413);
    assert!(text.contains("more than 5 fields"), "{text}");
    // 170,000 fields are counted, not built.
    let huge = "a&".repeat(170_000);
    let started = Instant::now();
    let (code, _) = status(&server, &post("/one.xml", "", &huge)).await;
    assert_eq!(code, 413);
    assert!(started.elapsed() < Duration::from_secs(2));
    // Declared too long: refused before reading.
    let big = "a".repeat(400_001);
    let (code, text) = status(&server, &post("/one.xml", "", &big)).await;
    assert_eq!(code, 413);
    assert!(text.contains("longer than 400000 bytes"), "{text}");
    // Chunked, too long.
    let mut chunked = b"POST /one.xml HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    let head_len = chunked.len();
    for _ in 0..5 {
        chunked
            .extend_from_slice(format!("{:x}\r\n{}\r\n", 100_000, "a".repeat(100_000)).as_bytes());
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let (code, _) = status(&server, &chunked).await;
    assert_eq!(code, 413);
    // Chunked, broken: said to be broken, not too large.
    let mut broken = chunked[..head_len].to_vec();
    broken.extend_from_slice(b"zz\r\nabc\r\n0\r\n\r\n");
    let (code, text) = status(&server, &broken).await;
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("could not be read"), "{text}");
    assert!(!text.contains("longer than"), "{text}");
    assert_eq!(
        status(&server, &post("/one.xml", "", "a=1&b=2")).await.0,
        200
    );
}

#[tokio::test]
async fn host_and_target_form_are_checked_on_both_paths() {
    let (_site, server) = server(HttpLimits::default()).await;
    let no_host = b"GET /one.xml HTTP/1.1\r\nConnection: close\r\n\r\n";
    let (code, text) = status(&server, no_host).await;
    assert_eq!(code, 400, "own loop, no Host");
    assert!(text.contains("must have a Host"), "{text}");
    let no_host_post =
        b"POST /one.xml HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=1";
    assert_eq!(status(&server, no_host_post).await.0, 400, "hyper, no Host");
    let (code, text) = status(&server, &get("/one.xml", "Host: y\r\n")).await;
    assert_eq!(code, 400, "own loop, two Hosts");
    assert!(text.contains("more than one Host"), "{text}");
    assert_eq!(
        status(&server, &post("/one.xml", "Host: y\r\n", "a=1"))
            .await
            .0,
        400,
        "hyper, two Hosts"
    );
    // HTTP/1.0 needs no Host.
    let old = b"GET /one.xml HTTP/1.0\r\n\r\n";
    assert_eq!(status(&server, old).await.0, 200);
    // Authority form is CONNECT's only.
    let authority =
        b"GET example.com:80 HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n";
    let (code, text) = status(&server, authority).await;
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("authority form"), "{text}");
    let authority_post =
        b"POST example.com:80 HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=1";
    assert_eq!(status(&server, authority_post).await.0, 400);
}

/// `axle serve --listen 127.0.0.1:0 --root SITE ARGS`, through `sh -c`
/// with `shell` run first (ulimits); returns the child, its address and
/// the file its stderr goes to.
fn serve_child(
    site: &TestSite,
    shell: &str,
    args: &[&str],
) -> (
    std::process::Child,
    std::net::SocketAddr,
    std::path::PathBuf,
) {
    use std::io::BufRead;
    let log = site.outside().join(format!("stderr-{}.log", args.len()));
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{shell} exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_axle"))
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(&site.root)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .trim_end_matches('/')
        .parse()
        .unwrap();
    (child, addr, log)
}

/// Waits up to `within` for `child` to exit; returns its status and how
/// long it took.
fn exited(
    child: &mut std::process::Child,
    within: Duration,
) -> Option<(std::process::ExitStatus, Duration)> {
    let started = Instant::now();
    while started.elapsed() < within {
        if let Some(status) = child.try_wait().unwrap() {
            return Some((status, started.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn signal(child: &std::process::Child, name: &str) {
    let sent = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_closes_every_listener_at_once_and_exits_0_past_a_running_transform() {
    let site = TestSite::new();
    // A render that would run for minutes.
    slow_document(&site, 2000);
    for name in ["TERM", "INT"] {
        let (mut child, addr, _log) = serve_child(
            &site,
            "",
            &[
                "--io-threads",
                "3",
                "--shutdown-timeout",
                "1s",
                "--cache",
                "off",
            ],
        );
        let mut busy = TcpStream::connect(addr).await.unwrap();
        busy.write_all(&get("/slow.xml", "")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        signal(&child, name);
        let signalled = Instant::now();
        tokio::time::sleep(Duration::from_millis(200)).await;
        // No listener on any I/O thread accepts any more (the kernel
        // spreads connections over the three; each attempt would reach one
        // of them).
        for _ in 0..20 {
            assert!(
                TcpStream::connect(addr).await.is_err(),
                "SIG{name}: a listener still accepts"
            );
        }
        let (status, _) =
            exited(&mut child, Duration::from_secs(5)).expect("exits after the signal");
        let took = signalled.elapsed();
        assert!(status.success(), "SIG{name}: {status}");
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(4),
            "SIG{name}: exited {took:?} after it with a 1 s shutdown timeout"
        );
        // The request in flight was cut, not answered.
        let (out, closed) = until_closed(&mut busy, Duration::from_secs(2)).await;
        assert!(closed && out.is_empty());
    }
}

#[test]
fn the_open_files_limit_is_raised_to_the_hard_limit() {
    let site = TestSite::new();
    let (mut child, _addr, _log) = serve_child(&site, "ulimit -S -n 256;", &[]);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers[0], numbers[1], "soft = hard: {line}");
    assert_ne!(numbers[0], "256", "{line}");
}

#[tokio::test(flavor = "multi_thread")]
async fn running_out_of_descriptors_pauses_accepting_and_logs_once() {
    let site = TestSite::new();
    let (mut child, addr, log) = serve_child(
        &site,
        "ulimit -n 64;",
        &["--io-threads", "1", "--workers", "1"],
    );
    // More connections than descriptors: the server accepts what it can.
    let mut held = Vec::new();
    for _ in 0..120 {
        if let Ok(s) = TcpStream::connect(addr).await {
            held.push(s);
        }
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    drop(held);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Serving again.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(&get("/one.xml", "")).await.unwrap();
    let (out, _) = until_closed(&mut stream, Duration::from_secs(10)).await;
    assert!(
        String::from_utf8_lossy(&out).starts_with("HTTP/1.1 200 OK"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(log).unwrap();
    assert_eq!(text.matches("accept failed;").count(), 1, "{text}");
    assert!(text.contains("Too many open files"), "{text}");
}

#[tokio::test]
async fn static_file_ranges_and_conditions_follow_rfc_9110() {
    let (site, server) = server(HttpLimits::default()).await;
    site.write("file.txt", "0123456789");
    let get = |headers: &[(&str, &str)]| {
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let server = &server;
        async move {
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            server
                .request(reqwest::Method::GET, "/file.txt", &headers)
                .await
        }
    };
    let whole = get(&[]).await;
    assert_eq!((whole.status, whole.text().as_str()), (200, "0123456789"));
    let modified = whole.header("last-modified");
    let modified = modified.as_str();
    // One satisfiable bytes range: 206 with Content-Range.
    let r = get(&[("range", "bytes=2-4")]).await;
    assert_eq!((r.status, r.text().as_str()), (206, "234"));
    assert_eq!(r.header("content-range"), "bytes 2-4/10");
    // Unsatisfiable: 416 with the length.
    let r = get(&[("range", "bytes=20-30")]).await;
    assert_eq!(r.status, 416);
    assert_eq!(r.header("content-range"), "bytes */10");
    // Several ranges, an unknown unit, bad syntax: the whole file.
    for range in ["bytes=0-1,4-5", "items=0-3", "bytes=x-y"] {
        let r = get(&[("range", range)]).await;
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "0123456789"),
            "{range}"
        );
    }
    // If-Range: a matching date keeps the range, anything else is 200.
    let r = get(&[("range", "bytes=0-1"), ("if-range", modified)]).await;
    assert_eq!((r.status, r.text().as_str()), (206, "01"));
    for validator in ["Sun, 06 Nov 1994 08:49:37 GMT", "\"an-etag\""] {
        let r = get(&[("range", "bytes=0-1"), ("if-range", validator)]).await;
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "0123456789"),
            "{validator}"
        );
    }
    // If-None-Match: * on an existing file.
    for method in [reqwest::Method::GET, reqwest::Method::HEAD] {
        let r = server
            .request(method.clone(), "/file.txt", &[("if-none-match", "*")])
            .await;
        assert_eq!(r.status, 304, "{method}");
    }
    // If-None-Match overrides If-Modified-Since.
    let r = get(&[
        ("if-none-match", "\"other\""),
        ("if-modified-since", modified),
    ])
    .await;
    assert_eq!(r.status, 200);
    let r = get(&[("if-modified-since", modified)]).await;
    assert_eq!(r.status, 304);
    // Both paths alike: HTTP/1.0 goes to hyper.
    let (code, text) = status(
        &server,
        b"GET /file.txt HTTP/1.0\r\nRange: bytes=0-1,4-5\r\n\r\n",
    )
    .await;
    assert_eq!(code, 200);
    assert!(text.ends_with("0123456789"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_on_cuts_what_is_still_open_after_the_shutdown_timeout() {
    let site = TestSite::new();
    slow_document(&site, 2000);
    let mut config = axle::ServeConfig::new(&site.root);
    config.cache_mode = CacheMode::Off;
    config.workers = 1;
    config.http.shutdown_timeout = Duration::from_secs(1);
    let app = axle::http::App::new(&config, axle::Registry::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(axle::http::serve_on(listener, app, async move {
        let _ = stopped.await;
    }));
    let mut busy = TcpStream::connect(addr).await.unwrap();
    busy.write_all(&get("/slow.xml", "")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopping = Instant::now();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), served)
        .await
        .expect("serve_on returns after the shutdown timeout")
        .unwrap()
        .unwrap();
    let took = stopping.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    let (out, closed) = until_closed(&mut busy, Duration::from_secs(2)).await;
    assert!(closed && out.is_empty(), "the request in flight is cut");
}

#[tokio::test]
async fn a_request_body_that_stops_coming_is_cut_at_the_header_timeout() {
    let (_site, server) = server(HttpLimits {
        header_timeout: Duration::from_secs(1),
        keepalive_timeout: Duration::from_secs(30),
        ..HttpLimits::default()
    })
    .await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(
            b"POST /one.xml HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
              Content-Length: 10\r\n\r\na=",
        )
        .await
        .unwrap();
    let started = Instant::now();
    let (out, closed) = until_closed(&mut stream, Duration::from_secs(5)).await;
    let took = started.elapsed();
    assert!(
        closed && out.is_empty(),
        "{}",
        String::from_utf8_lossy(&out)
    );
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "cut after {took:?}"
    );
}

/// `--pid-file`: the process ID is there once the server accepts, and gone
/// after SIGTERM (exit 0); a pid file another process wrote meanwhile is
/// left alone.
#[tokio::test(flavor = "multi_thread")]
async fn the_pid_file_names_the_ready_server_and_goes_with_it() {
    let site = TestSite::new();
    let pid_file = site.outside().join("axle.pid");
    let pid_arg = pid_file.to_str().unwrap().to_string();
    let (mut child, addr, _log) = serve_child(&site, "", &["--pid-file", &pid_arg]);
    // Ready when the address is printed: the file is written before it.
    let written = std::fs::read_to_string(&pid_file).expect("the pid file is written");
    assert_eq!(written, format!("{}\n", child.id()));
    assert!(TcpStream::connect(addr).await.is_ok());
    signal(&child, "TERM");
    let (status, _) = exited(&mut child, Duration::from_secs(15)).expect("exits after SIGTERM");
    assert!(status.success(), "{status}");
    assert!(!pid_file.exists(), "the pid file is removed on exit");
    // Another server's file (a restart raced this one) is not removed.
    let (mut child, _, _log) = serve_child(&site, "", &["--pid-file", &pid_arg]);
    std::fs::write(&pid_file, "424242\n").unwrap();
    signal(&child, "TERM");
    let (status, _) = exited(&mut child, Duration::from_secs(15)).expect("exits after SIGTERM");
    assert!(status.success(), "{status}");
    assert_eq!(std::fs::read_to_string(&pid_file).unwrap(), "424242\n");
}
