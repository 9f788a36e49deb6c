//! The HTTP/1.1 connection loop, byte by byte over raw sockets: pipelining,
//! HEAD, 304, `Connection: close`, heads split across packets, and the
//! hand-over to hyper for requests with bodies, HTTP/1.0 and bad heads.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{TestServer, TestSite};
use axle::CacheMode;

/// One response read off a connection.
#[derive(Debug)]
struct Wire {
    version: u8,
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Wire {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A raw client connection with a read buffer that keeps what follows a
/// response (so pipelined responses can be read one by one).
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    async fn connect(server: &TestServer) -> Client {
        Client {
            stream: TcpStream::connect(server.addr).await.unwrap(),
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    async fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 16 * 1024];
        let n = tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut chunk))
            .await
            .expect("the server answers within 10 s")
            .unwrap();
        self.buf.extend_from_slice(&chunk[..n]);
        n
    }

    /// Reads one response; `head_only` for the answer to a HEAD.
    async fn response(&mut self, head_only: bool) -> Wire {
        let (len, version, status, headers) = loop {
            let mut storage = [httparse::EMPTY_HEADER; 64];
            let mut parsed = httparse::Response::new(&mut storage);
            match parsed.parse(&self.buf).unwrap() {
                httparse::Status::Complete(len) => {
                    let headers = parsed
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_string(),
                                String::from_utf8_lossy(h.value).into_owned(),
                            )
                        })
                        .collect::<Vec<_>>();
                    break (len, parsed.version.unwrap(), parsed.code.unwrap(), headers);
                }
                httparse::Status::Partial => {
                    assert!(self.fill().await > 0, "connection closed inside a head");
                }
            }
        };
        self.buf.drain(..len);
        let mut wire = Wire {
            version,
            status,
            headers,
            body: Vec::new(),
        };
        let no_body = head_only || status == 304 || status == 204;
        if no_body {
            return wire;
        }
        if let Some(length) = wire.header("content-length") {
            let length: usize = length.parse().unwrap();
            while self.buf.len() < length {
                assert!(self.fill().await > 0, "connection closed inside a body");
            }
            wire.body = self.buf.drain(..length).collect();
        } else if wire.header("transfer-encoding") == Some("chunked") {
            wire.body = self.chunked().await;
        } else {
            while self.fill().await > 0 {}
            wire.body = std::mem::take(&mut self.buf);
        }
        wire
    }

    async fn line(&mut self) -> Vec<u8> {
        loop {
            if let Some(at) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = self.buf[..at].to_vec();
                self.buf.drain(..at + 2);
                return line;
            }
            assert!(self.fill().await > 0, "connection closed inside a chunk");
        }
    }

    async fn chunked(&mut self) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            let size = self.line().await;
            let size =
                usize::from_str_radix(std::str::from_utf8(&size).unwrap().trim(), 16).unwrap();
            while self.buf.len() < size + 2 {
                assert!(self.fill().await > 0, "connection closed inside a chunk");
            }
            body.extend(self.buf.drain(..size));
            assert_eq!(self.buf.drain(..2).collect::<Vec<_>>(), b"\r\n");
            if size == 0 {
                return body;
            }
        }
    }

    /// Whether the server has closed the connection (EOF with nothing
    /// further sent).
    async fn closed(&mut self) -> bool {
        self.buf.is_empty() && self.fill().await == 0
    }
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").into_bytes()
}

#[tokio::test(flavor = "multi_thread")]
async fn pipelined_requests_are_answered_in_order_on_one_connection() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;
    let one = server.get("/one.xml").await;
    let two = server.get("/two.xml").await;
    let style = server.get("/style.css").await;

    let mut client = Client::connect(&server).await;
    let mut batch = get("/one.xml");
    batch.extend(get("/two.xml"));
    batch.extend(get("/style.css"));
    batch.extend(get("/one.xml"));
    client.send(&batch).await;
    for expected in [&one, &two, &style, &one] {
        let wire = client.response(false).await;
        assert_eq!(wire.status, 200);
        assert_eq!(wire.body, expected.body);
        assert_eq!(
            wire.header("content-length"),
            Some(expected.body.len().to_string().as_str())
        );
        assert!(wire.header("date").is_some(), "{wire:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn head_has_the_length_and_no_body_and_304_has_no_body() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::All).await;
    let full = server.get("/two.xml").await;
    let etag = full.headers["etag"].to_str().unwrap().to_string();

    let mut client = Client::connect(&server).await;
    client
        .send(b"HEAD /two.xml HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await;
    let head = client.response(true).await;
    assert_eq!(head.status, 200);
    assert_eq!(
        head.header("content-length"),
        Some(full.body.len().to_string().as_str())
    );
    // Nothing but the next response may follow on the connection.
    client
        .send(
            format!("GET /two.xml HTTP/1.1\r\nHost: x\r\nIf-None-Match: {etag}\r\n\r\n").as_bytes(),
        )
        .await;
    let not_modified = client.response(false).await;
    assert_eq!(not_modified.status, 304);
    assert_eq!(not_modified.header("etag"), Some(etag.as_str()));
    client.send(&get("/two.xml")).await;
    let again = client.response(false).await;
    assert_eq!((again.status, again.body), (200, full.body));
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_close_is_honoured_and_announced() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;
    let mut client = Client::connect(&server).await;
    client
        .send(b"GET /one.xml HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, close\r\n\r\n")
        .await;
    let wire = client.response(false).await;
    assert_eq!(wire.status, 200);
    assert_eq!(wire.header("connection"), Some("close"));
    assert!(client.closed().await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_head_split_across_packets_is_read_whole() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;
    let expected = server.get("/one.xml").await;
    let mut client = Client::connect(&server).await;
    for piece in [
        &b"GE"[..],
        b"T /one.x",
        b"ml HTTP/1.1\r\nHo",
        b"st: x\r\n",
        b"\r\n",
    ] {
        client.send(piece).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let wire = client.response(false).await;
    assert_eq!((wire.status, wire.body), (200, expected.body));
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_with_bodies_and_http_1_0_are_served_by_the_hand_over() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;
    let expected = server.get("/two.xml").await;
    let posted = server.request(reqwest::Method::POST, "/two.xml", &[]).await;

    // A GET, then a POST with a body on the same connection: the POST and
    // everything after it go to hyper, with no byte lost in between.
    let mut client = Client::connect(&server).await;
    let mut batch = get("/two.xml");
    batch.extend_from_slice(
        b"POST /two.xml HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=1",
    );
    batch.extend(get("/two.xml"));
    client.send(&batch).await;
    let first = client.response(false).await;
    assert_eq!((first.status, &first.body), (200, &expected.body));
    let post = client.response(false).await;
    assert_eq!(post.status, posted.status);
    let after = client.response(false).await;
    assert_eq!((after.status, &after.body), (200, &expected.body));

    // HTTP/1.0 (no keep-alive unless asked): answered, then closed.
    let mut old = Client::connect(&server).await;
    old.send(b"GET /two.xml HTTP/1.0\r\n\r\n").await;
    let wire = old.response(false).await;
    assert_eq!((wire.version, wire.status), (0, 200));
    assert_eq!(wire.body, expected.body);
    assert!(old.closed().await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_head_gets_400_and_the_server_keeps_serving() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;
    let mut client = Client::connect(&server).await;
    client
        .send(b"GET /one.xml HTTP/1.1\r\nBad Header\r\n\r\n")
        .await;
    let wire = client.response(false).await;
    assert_eq!(wire.status, 400);

    let mut huge = Client::connect(&server).await;
    let mut request = b"GET /one.xml HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..200 {
        request.extend(format!("X-Filler-{i}: {}\r\n", "v".repeat(2000)).into_bytes());
    }
    request.extend_from_slice(b"\r\n");
    // The server may answer and close before reading it all.
    let _ = huge.stream.write_all(&request).await;
    let wire = huge.response(false).await;
    assert_eq!(wire.status, 431);

    assert_eq!(server.get("/one.xml").await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_finishes_and_closes_connections_then_returns() {
    let site = TestSite::new();
    let config = axle::ServeConfig::new(&site.root);
    let app = axle::http::App::new(&config, axle::Registry::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(axle::http::serve_on(listener, app, async move {
        let _ = stopped.await;
    }));

    let mut client = Client {
        stream: TcpStream::connect(addr).await.unwrap(),
        buf: Vec::new(),
    };
    client.send(&get("/one.xml")).await;
    assert_eq!(client.response(false).await.status, 200);
    stop.send(()).unwrap();
    // The idle keep-alive connection is closed and the server returns.
    assert!(client.closed().await);
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("serve_on returns after shutdown")
        .unwrap()
        .unwrap();
    assert!(TcpStream::connect(addr).await.is_err());
}

/// Header names of a response, sorted, without `date`.
fn names(wire: &Wire) -> Vec<String> {
    let mut names: Vec<String> = wire
        .headers
        .iter()
        .map(|(n, _)| n.to_ascii_lowercase())
        .filter(|n| n != "date")
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn hits_answered_in_wire_form_carry_what_the_ordinary_path_sends() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;
    let off = TestServer::start(&site.root, CacheMode::Off).await;
    let mut client = Client::connect(&server).await;
    let mut uncached = Client::connect(&off).await;
    client.send(&get("/two.xml")).await;
    let miss = client.response(false).await;
    client.send(&get("/two.xml")).await;
    let hit = client.response(false).await;
    assert_eq!(miss.header("x-axle-cache"), Some("miss"));
    assert_eq!(hit.header("x-axle-cache"), Some("hit"));
    assert_eq!(names(&miss), names(&hit));
    for name in ["content-type", "etag", "content-length"] {
        assert_eq!(miss.header(name), hit.header(name), "{name}");
    }
    assert_eq!(miss.body, hit.body);

    // 304: from the memo in wire form, and from the ordinary path (off).
    let etag = hit.header("etag").unwrap().to_string();
    let conditional =
        format!("GET /two.xml HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"x\", {etag}\r\n\r\n");
    client.send(conditional.as_bytes()).await;
    let hit_304 = client.response(false).await;
    uncached.send(conditional.as_bytes()).await;
    let off_304 = uncached.response(false).await;
    assert_eq!((hit_304.status, off_304.status), (304, 304));
    assert_eq!(names(&hit_304), names(&off_304));
    assert_eq!(hit_304.header("etag"), Some(etag.as_str()));
    assert_eq!(hit_304.header("content-type"), None);

    // HEAD of a hit: the length, no body; the connection stays usable.
    client
        .send(b"HEAD /two.xml HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    let head = client.response(true).await;
    assert_eq!(head.header("content-length"), hit.header("content-length"));
    assert_eq!(head.header("x-axle-cache"), Some("hit"));
    client.send(&get("/two.xml")).await;
    assert_eq!(client.response(false).await.body, hit.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transcoding_locations_hits_are_transcoded() {
    let site = TestSite::new();
    let registry = axle::Registry::default();
    let config = axle::site::SiteConfig::parse(
        "[location.\"/\"]\noutput-charset = \"accept\"\n",
        &site.root.join("axle.toml"),
        registry.clone(),
    )
    .unwrap();
    let server = TestServer::start_full(axle::ServeConfig::new(&site.root), registry, config).await;
    let mut client = Client::connect(&server).await;
    let request = b"GET /two.xml HTTP/1.1\r\nHost: x\r\nAccept-Charset: iso-8859-1\r\n\r\n";
    client.send(request).await;
    let miss = client.response(false).await;
    client.send(request).await;
    let hit = client.response(false).await;
    assert_eq!(hit.header("x-axle-cache"), Some("hit"));
    assert_eq!(hit.header("vary"), Some("accept-charset"));
    assert_eq!(
        hit.header("content-type"),
        Some("text/html; charset=windows-1252")
    );
    assert_eq!(hit.body, miss.body);
    assert_eq!(names(&hit), names(&miss));
}
