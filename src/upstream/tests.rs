//! The upstream client against real backends on 127.0.0.1, started here:
//! raw tokio listeners that play a script per request (answer, redirect,
//! stall, trickle, overflow) and record every request head they read.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::HeaderMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::time::Instant;

use super::*;

/// One step of a backend's answer.
enum Step {
    Send(Vec<u8>),
    Wait(Duration),
    /// Keep the connection open, saying nothing more.
    Hang,
}

/// A loopback backend; its listener stops when dropped.
struct Backend {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Backend {
    /// Requests read so far.
    fn hits(&self) -> usize {
        self.heads.lock().unwrap().len()
    }

    /// The `n`th request head (from 1), lowercased.
    fn head(&self, n: usize) -> String {
        self.heads.lock().unwrap()[n - 1].to_ascii_lowercase()
    }

    fn url(&self, rest: &str) -> String {
        format!("http://{}{rest}", self.addr)
    }
}

/// Starts a backend answering each request by `script(head, n)`, where
/// `n` counts requests from 1.
async fn backend(script: impl Fn(&str, usize) -> Vec<Step> + Send + Sync + 'static) -> Backend {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let script = Arc::new(script);
    let recorded = heads.clone();
    let task = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let heads = recorded.clone();
            let script = script.clone();
            tokio::spawn(async move {
                let mut read = Vec::new();
                let mut chunk = [0u8; 4096];
                while !read.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => read.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&read).into_owned();
                let n = {
                    let mut heads = heads.lock().unwrap();
                    heads.push(head.clone());
                    heads.len()
                };
                for step in script(&head, n) {
                    match step {
                        Step::Send(bytes) => {
                            if socket.write_all(&bytes).await.is_err() {
                                return;
                            }
                        }
                        Step::Wait(pause) => tokio::time::sleep(pause).await,
                        Step::Hang => std::future::pending::<()>().await,
                    }
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    Backend { addr, heads, task }
}

/// An answer with a Content-Length.
fn reply(status: &str, headers: &[&str], body: &str) -> Vec<Step> {
    let mut text = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    for header in headers {
        text.push_str(header);
        text.push_str("\r\n");
    }
    text.push_str("\r\n");
    text.push_str(body);
    vec![Step::Send(text.into_bytes())]
}

fn upstream(url: String, adjust: impl FnOnce(&mut UpstreamConfig)) -> Upstream {
    let mut config = UpstreamConfig::new(url);
    adjust(&mut config);
    Upstream::new(config).unwrap()
}

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_static(value));
    }
    map
}

fn none() -> HeaderMap {
    HeaderMap::new()
}

#[tokio::test]
async fn a_200_body_is_fetched_with_the_request_the_template_makes() {
    let backend = backend(|_, _| reply("200 OK", &["content-type: text/xml"], "<doc/>")).await;
    let upstream = upstream(backend.url("/base{path}.xml?v=1"), |_| {});
    let client = headers(&[
        ("accept-language", "fr"),
        ("cookie", "session=1"),
        ("host", "evil.example"),
    ]);
    let fetched = upstream
        .fetch("/a/b%20c", Some("x=1"), &client)
        .await
        .unwrap();
    assert_eq!(&fetched.body[..], b"<doc/>");
    assert_eq!(fetched.content_type.as_deref(), Some("text/xml"));
    assert_eq!(fetched.how, Freshness::Fetched);
    assert_eq!(
        (fetched.etag, fetched.max_age, fetched.cacheable),
        (None, None, false)
    );
    let head = backend.head(1);
    assert!(
        head.starts_with("get /base/a/b%20c.xml?v=1&x=1 http/1.1\r\n"),
        "{head}"
    );
    for line in [
        format!("host: {}\r\n", backend.addr),
        format!("user-agent: axle/{}\r\n", env!("CARGO_PKG_VERSION")),
        "accept-encoding: identity\r\n".to_string(),
        "accept-language: fr\r\n".to_string(),
    ] {
        assert!(head.contains(&line), "{line:?} not in {head}");
    }
    assert!(!head.contains("connection: close"), "keep-alive: {head}");
    assert!(!head.contains("cookie") && !head.contains("evil"), "{head}");
    assert_eq!(head.matches("host:").count(), 1, "{head}");

    // A header the client's Connection names is hop-by-hop: not forwarded.
    let client = headers(&[
        ("accept-language", "fr"),
        ("connection", "keep-alive, Accept-Language"),
    ]);
    upstream.fetch("/a", None, &client).await.unwrap();
    assert!(
        !backend.head(2).contains("accept-language"),
        "{}",
        backend.head(2)
    );
}

#[tokio::test]
async fn paths_that_could_escape_never_reach_the_upstream() {
    let backend = backend(|_, _| reply("200 OK", &[], "x")).await;
    let upstream = upstream(backend.url("{path}"), |_| {});
    for path in [
        "/../x",
        "/%2e%2e/x",
        "/a/%2E%2e",
        "//evil.example/x",
        "/x@y",
        "/x\\y",
        "x",
        "/x#y",
        "/a%2f..%2fb",
        "/..;/x",
    ] {
        let error = upstream.fetch(path, None, &none()).await.unwrap_err();
        assert!(
            matches!(error, UpstreamError::BadPath(_)),
            "{path}: {error}"
        );
        assert_eq!(error.status(), StatusCode::BAD_REQUEST, "{path}");
    }
    let error = upstream
        .fetch("/x", Some("a#b"), &none())
        .await
        .unwrap_err();
    assert!(matches!(error, UpstreamError::BadPath(_)), "{error}");
    assert_eq!(backend.hits(), 0);
}

#[tokio::test]
async fn a_refused_connection_is_a_502() {
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let upstream = upstream(format!("http://{addr}{{path}}"), |_| {});
    let error = upstream.fetch("/x", None, &none()).await.unwrap_err();
    assert!(matches!(error, UpstreamError::Connect(_)), "{error}");
    assert_eq!(error.status(), StatusCode::BAD_GATEWAY);
    assert!(!error.to_string().contains(&addr.to_string()), "{error}");
}

#[tokio::test]
async fn an_upstream_that_never_answers_times_out_at_the_deadline() {
    let backend = backend(|_, _| vec![Step::Hang]).await;
    let upstream = upstream(backend.url("{path}"), |c| {
        c.timeout = Duration::from_millis(300);
    });
    let started = Instant::now();
    let error = upstream.fetch("/x", None, &none()).await.unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(error, UpstreamError::Timeout);
    assert_eq!(error.status(), StatusCode::GATEWAY_TIMEOUT);
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(2),
        "{elapsed:?}"
    );
    assert_eq!(backend.hits(), 1);
}

#[tokio::test]
async fn a_body_trickled_past_the_deadline_times_out() {
    // Ten bytes, one every 100 ms: a second in all, against 400 ms.
    let backend = backend(|_, _| {
        let mut steps = vec![Step::Send(
            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n".to_vec(),
        )];
        for _ in 0..10 {
            steps.push(Step::Wait(Duration::from_millis(100)));
            steps.push(Step::Send(b"x".to_vec()));
        }
        steps
    })
    .await;
    let upstream = upstream(backend.url("{path}"), |c| {
        c.timeout = Duration::from_millis(400);
    });
    let started = Instant::now();
    let error = upstream.fetch("/x", None, &none()).await.unwrap_err();
    assert_eq!(error, UpstreamError::Timeout);
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_declared_or_streamed() {
    let backend = backend(|head, _| {
        if head.starts_with("GET /declared ") {
            // Refused on the head: the body never comes.
            vec![
                Step::Send(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n".to_vec()),
                Step::Hang,
            ]
        } else {
            let chunks = if head.starts_with("GET /streamed ") {
                4
            } else {
                2
            };
            let mut body = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
            for _ in 0..chunks {
                body.extend_from_slice(b"32\r\n");
                body.extend_from_slice(&[b'a'; 50]);
                body.extend_from_slice(b"\r\n");
            }
            body.extend_from_slice(b"0\r\n\r\n");
            vec![Step::Send(body)]
        }
    })
    .await;
    let upstream = upstream(backend.url("{path}"), |c| {
        c.max_size = 100;
        c.timeout = Duration::from_secs(5);
    });
    let started = Instant::now();
    let error = upstream
        .fetch("/declared", None, &none())
        .await
        .unwrap_err();
    assert_eq!(error, UpstreamError::TooLarge { limit: 100 });
    assert_eq!(error.status(), StatusCode::BAD_GATEWAY);
    assert!(started.elapsed() < Duration::from_secs(2));
    let error = upstream
        .fetch("/streamed", None, &none())
        .await
        .unwrap_err();
    assert_eq!(error, UpstreamError::TooLarge { limit: 100 });
    // Exactly the limit is accepted.
    let fetched = upstream.fetch("/at-limit", None, &none()).await.unwrap();
    assert_eq!(fetched.body.len(), 100);
}

#[tokio::test]
async fn upstream_errors_map_to_502_and_its_404_to_404() {
    let backend = backend(|head, _| match head.split(' ').nth(1) {
        Some("/missing") => reply("404 Not Found", &[], "secret body"),
        Some("/gone") => reply("410 Gone", &[], ""),
        Some("/gzip") => reply("200 OK", &["content-encoding: gzip"], "zz"),
        Some("/multiple") => reply("300 Multiple Choices", &["location: /x"], ""),
        _ => reply("500 Internal Server Error", &[], "secret body"),
    })
    .await;
    let upstream = upstream(backend.url("{path}"), |_| {});
    for (path, error, status) in [
        (
            "/broken",
            UpstreamError::Status(500),
            StatusCode::BAD_GATEWAY,
        ),
        (
            "/missing",
            UpstreamError::Status(404),
            StatusCode::NOT_FOUND,
        ),
        ("/gone", UpstreamError::Status(410), StatusCode::NOT_FOUND),
        (
            "/multiple",
            UpstreamError::Status(300),
            StatusCode::BAD_GATEWAY,
        ),
    ] {
        let got = upstream.fetch(path, None, &none()).await.unwrap_err();
        assert_eq!((&got, got.status()), (&error, status), "{path}");
        assert!(!got.to_string().contains("secret"), "{got}");
    }
    let got = upstream.fetch("/gzip", None, &none()).await.unwrap_err();
    assert!(matches!(got, UpstreamError::Protocol(_)), "{got}");
    assert_eq!(got.status(), StatusCode::BAD_GATEWAY);
}

#[tokio::test]
async fn a_redirect_to_another_port_is_never_followed() {
    let other = backend(|_, _| reply("200 OK", &[], "elsewhere")).await;
    let location = format!("location: {}", other.url("/x"));
    let backend = backend(move |_, _| reply("302 Found", &[&location], "")).await;
    let upstream = upstream(backend.url("{path}"), |_| {});
    let error = upstream.fetch("/x", None, &none()).await.unwrap_err();
    assert!(matches!(error, UpstreamError::Redirect(_)), "{error}");
    assert_eq!(error.status(), StatusCode::BAD_GATEWAY);
    assert_eq!((backend.hits(), other.hits()), (1, 0));
}

#[tokio::test]
async fn same_host_redirects_are_followed_up_to_the_limit() {
    let backend = backend(|head, _| match head.split(' ').nth(1) {
        Some("/start") => reply("301 Moved Permanently", &["location: next"], ""),
        Some("/next") => reply("307 Temporary Redirect", &["location: /end?q=1"], ""),
        Some("/end?q=1") => reply("200 OK", &[], "end"),
        _ => reply("302 Found", &["location: /loop"], ""),
    })
    .await;
    let upstream = upstream(backend.url("{path}"), |_| {});
    let fetched = upstream.fetch("/start", None, &none()).await.unwrap();
    assert_eq!(&fetched.body[..], b"end");
    assert_eq!(backend.hits(), 3);
    assert!(
        backend
            .head(3)
            .contains(&format!("host: {}\r\n", backend.addr))
    );
    let error = upstream.fetch("/loop", None, &none()).await.unwrap_err();
    assert_eq!(error, UpstreamError::Redirect("too many redirects"));
    // The first request and three redirects followed.
    assert_eq!(backend.hits(), 3 + 4);
}

#[tokio::test]
async fn within_max_age_the_answer_comes_from_memory() {
    let backend = backend(|_, n| {
        reply(
            "200 OK",
            &["cache-control: public, max-age=60"],
            &format!("answer {n}"),
        )
    })
    .await;
    let upstream = upstream(backend.url("{path}"), |_| {});
    let first = upstream.fetch("/x", None, &none()).await.unwrap();
    assert_eq!((first.how, first.cacheable), (Freshness::Fetched, true));
    assert_eq!(first.max_age, Some(Duration::from_secs(60)));
    let second = upstream.fetch("/x", None, &none()).await.unwrap();
    assert_eq!(second.how, Freshness::Fresh);
    assert_eq!(&second.body[..], b"answer 1");
    assert!(
        second
            .max_age
            .is_some_and(|left| left <= Duration::from_secs(60))
    );
    assert_eq!(backend.hits(), 1);
    // Another query, or another forwarded header value, is another key.
    upstream.fetch("/x", Some("a"), &none()).await.unwrap();
    let french = headers(&[("accept-language", "fr")]);
    let third = upstream.fetch("/x", None, &french).await.unwrap();
    assert_eq!(
        (third.how, &third.body[..]),
        (Freshness::Fetched, &b"answer 3"[..])
    );
    assert_eq!(backend.hits(), 3);

    // With no memo, nothing is remembered.
    let forgetful = self::upstream(backend.url("{path}"), |c| c.memo_size = 0);
    forgetful.fetch("/y", None, &none()).await.unwrap();
    let again = forgetful.fetch("/y", None, &none()).await.unwrap();
    assert_eq!(again.how, Freshness::Fetched);
    assert_eq!(backend.hits(), 5);
}

#[tokio::test]
async fn an_etag_is_revalidated_and_a_304_gives_the_remembered_body() {
    let backend = backend(|head, n| {
        if head
            .to_ascii_lowercase()
            .contains("if-none-match: \"v1\"\r\n")
        {
            // The second 304 grants a minute of freshness.
            let grant = if n >= 3 {
                "cache-control: max-age=60"
            } else {
                "x-none: 1"
            };
            reply("304 Not Modified", &["etag: \"v1\"", grant], "")
        } else {
            reply(
                "200 OK",
                &["etag: \"v1\"", "content-type: text/xml"],
                "<one/>",
            )
        }
    })
    .await;
    let upstream = upstream(backend.url("{path}"), |_| {});
    let first = upstream.fetch("/doc", None, &none()).await.unwrap();
    assert_eq!(first.how, Freshness::Fetched);
    assert_eq!(first.etag.as_deref(), Some("\"v1\""));
    assert_eq!((first.max_age, first.cacheable), (None, true));
    assert!(!backend.head(1).contains("if-none-match"));

    let second = upstream.fetch("/doc", None, &none()).await.unwrap();
    assert_eq!(second.how, Freshness::Revalidated);
    assert_eq!(&second.body[..], b"<one/>");
    assert_eq!(second.content_type.as_deref(), Some("text/xml"));
    assert!(
        backend.head(2).contains("if-none-match: \"v1\"\r\n"),
        "{}",
        backend.head(2)
    );

    let third = upstream.fetch("/doc", None, &none()).await.unwrap();
    assert_eq!(third.how, Freshness::Revalidated);
    assert_eq!(third.max_age, Some(Duration::from_secs(60)));
    // The 304's max-age now answers from memory.
    let fourth = upstream.fetch("/doc", None, &none()).await.unwrap();
    assert_eq!(
        (fourth.how, &fourth.body[..]),
        (Freshness::Fresh, &b"<one/>"[..])
    );
    assert_eq!(backend.hits(), 3);
}

#[tokio::test]
async fn no_store_is_not_remembered_and_no_cache_always_revalidates() {
    let backend = backend(|head, _| {
        let head = head.to_ascii_lowercase();
        if head.starts_with("get /no-cache ") && head.contains("if-none-match") {
            reply("304 Not Modified", &[], "")
        } else if head.starts_with("get /no-cache ") {
            reply(
                "200 OK",
                &["etag: \"c\"", "cache-control: no-cache, max-age=60"],
                "c",
            )
        } else {
            reply(
                "200 OK",
                &["etag: \"s\"", "cache-control: no-store, max-age=60"],
                "s",
            )
        }
    })
    .await;
    let upstream = upstream(backend.url("{path}"), |_| {});
    let first = upstream.fetch("/no-store", None, &none()).await.unwrap();
    assert!(!first.cacheable);
    let second = upstream.fetch("/no-store", None, &none()).await.unwrap();
    assert_eq!(second.how, Freshness::Fetched);
    assert!(!backend.head(2).contains("if-none-match"));

    let first = upstream.fetch("/no-cache", None, &none()).await.unwrap();
    assert_eq!(
        (first.cacheable, first.max_age),
        (true, Some(Duration::ZERO))
    );
    let second = upstream.fetch("/no-cache", None, &none()).await.unwrap();
    assert_eq!(second.how, Freshness::Revalidated);
    assert_eq!(backend.hits(), 4);
}

#[tokio::test]
async fn a_304_to_an_unconditional_request_is_refused() {
    let backend = backend(|_, _| reply("304 Not Modified", &[], "")).await;
    let upstream = upstream(backend.url("{path}"), |_| {});
    let error = upstream.fetch("/x", None, &none()).await.unwrap_err();
    assert!(matches!(error, UpstreamError::Protocol(_)), "{error}");
}

#[test]
fn the_configuration_is_checked_at_load() {
    let refused = |adjust: fn(&mut UpstreamConfig)| {
        let mut config = UpstreamConfig::new("http://127.0.0.1:8181{path}");
        adjust(&mut config);
        match Upstream::new(config) {
            Err(UpstreamError::Config(message)) => message,
            other => panic!("accepted: {other:?}"),
        }
    };
    assert!(refused(|c| c.url = "https://127.0.0.1/x".into()).contains("https"));
    assert!(refused(|c| c.headers = vec!["Host".into()]).contains("`host`"));
    assert!(refused(|c| c.headers = vec!["connection".into()]).contains("never forwarded"));
    assert!(refused(|c| c.headers = vec!["if-none-match".into()]).contains("never forwarded"));
    assert!(refused(|c| c.headers = vec!["a b".into()]).contains("not a header name"));
    assert!(refused(|c| c.timeout = Duration::ZERO).contains("timeout"));
    assert!(refused(|c| c.max_size = 0).contains("size"));

    let config = UpstreamConfig::new("http://127.0.0.1:8181{path}");
    assert_eq!(config.timeout, Duration::from_secs(10));
    assert_eq!((config.max_size, config.max_redirects), (16 << 20, 3));
    assert_eq!(config.headers, vec!["accept-language".to_string()]);
    let mut short = config.clone();
    short.timeout = Duration::from_secs(2);
    let upstream = Upstream::new(short).unwrap();
    assert_eq!(upstream.connect_timeout, Duration::from_secs(2));
    assert_eq!(
        Upstream::new(config).unwrap().connect_timeout,
        Duration::from_secs(5)
    );
}

#[test]
fn the_fetch_future_can_move_between_threads() {
    fn send<T: Send>(_: &T) {}
    let upstream = upstream("http://127.0.0.1:8181{path}".to_string(), |_| {});
    let headers = none();
    let future = upstream.fetch("/x", None, &headers);
    send(&future);
}

/// A keep-alive backend: answers every request on a connection with a
/// small document (`Connection: close` on the path `/close`), counting
/// connections.
async fn keep_alive_backend() -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut read = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while !read.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => read.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let end = read.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    let head = String::from_utf8_lossy(&read[..end]).into_owned();
                    read.drain(..end);
                    let close = head.starts_with("GET /close ");
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: 6\r\n{}\r\n<doc/>",
                        if close { "connection: close\r\n" } else { "" }
                    );
                    if socket.write_all(answer.as_bytes()).await.is_err() || close {
                        return;
                    }
                }
            });
        }
    });
    (addr, connections)
}

#[tokio::test]
async fn connections_are_kept_alive_and_used_again() {
    use std::sync::atomic::Ordering;
    let (addr, connections) = keep_alive_backend().await;
    let upstream = upstream(format!("http://{addr}{{path}}"), |c| c.memo_size = 0);
    for _ in 0..5 {
        let fetched = upstream.fetch("/a", None, &none()).await.unwrap();
        assert_eq!(&fetched.body[..], b"<doc/>");
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "one connection for five fetches"
    );
    // An answer with Connection: close is not kept: the first goes over
    // the kept connection, the second needs a new one, and so does the
    // next fetch.
    upstream.fetch("/close", None, &none()).await.unwrap();
    upstream.fetch("/close", None, &none()).await.unwrap();
    assert_eq!(connections.load(Ordering::SeqCst), 2);
    upstream.fetch("/a", None, &none()).await.unwrap();
    upstream.fetch("/a", None, &none()).await.unwrap();
    assert_eq!(connections.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_kept_connection_the_upstream_closed_is_replaced() {
    // The scripted backend closes every connection after one answer,
    // without saying so: the next fetch finds its kept connection gone
    // and uses a new one.
    let backend = backend(|_, _| reply("200 OK", &[], "<doc/>")).await;
    let upstream = upstream(backend.url("{path}"), |c| c.memo_size = 0);
    for _ in 0..4 {
        let fetched = upstream.fetch("/a", None, &none()).await.unwrap();
        assert_eq!(&fetched.body[..], b"<doc/>");
    }
    assert_eq!(backend.hits(), 4);
}

#[test]
fn via_counts_axle_hops_and_adds_this_one() {
    let mut headers = HeaderMap::new();
    assert_eq!(axle_hops(&headers), 0);
    assert_eq!(via(&headers), "1.1 axle");
    headers.append(VIA, HeaderValue::from_static("1.1 cdn, 1.1 axle"));
    headers.append(
        VIA,
        HeaderValue::from_static("HTTP/1.1 axle (Axle), 1.0 axle-not"),
    );
    assert_eq!(axle_hops(&headers), 2);
    assert_eq!(
        via(&headers),
        "1.1 cdn, 1.1 axle, HTTP/1.1 axle (Axle), 1.0 axle-not, 1.1 axle"
    );
}

#[tokio::test]
async fn a_request_past_max_hops_is_refused_as_a_loop_before_any_fetch() {
    // Port 9 answers nothing: a fetch would fail otherwise than as a loop.
    let mut config = UpstreamConfig::new("http://127.0.0.1:9{path}");
    config.max_hops = 2;
    let upstream = Upstream::new(config).unwrap();
    let mut headers = HeaderMap::new();
    headers.insert(VIA, HeaderValue::from_static("1.1 axle, 1.1 axle"));
    let e = upstream.fetch("/x", None, &headers).await.unwrap_err();
    assert!(matches!(e, UpstreamError::Loop(2)), "{e:?}");
    assert_eq!(e.status(), StatusCode::LOOP_DETECTED);
    assert!(e.to_string().contains("max-hops"), "{e}");
    // One hop fewer is fetched (and fails as port 9 does, not as a loop).
    headers.insert(VIA, HeaderValue::from_static("1.1 axle"));
    let e = upstream.fetch("/x", None, &headers).await.unwrap_err();
    assert!(!matches!(e, UpstreamError::Loop(_)), "{e:?}");
}
