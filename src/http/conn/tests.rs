//! Tests of the connection loop over real sockets: framing (lengths,
//! chunked, bodyless statuses, HEAD), request heads reaching the service
//! intact, the fast path's wire responses, and the pure helpers.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri, header};
use http_body::Frame;

use super::parse::plain_target;
use super::write::decimal;
use super::*;

/// A body of several pieces whose length is not known up front.
struct Pieces(VecDeque<&'static str>);

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|p| Ok(Frame::data(Bytes::from(p)))))
    }
}

/// Serves `respond` for every request on a loopback port.
async fn served(respond: fn(&Request) -> Response) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service =
        tower::service_fn(
            move |request: Request| async move { Ok::<_, Infallible>(respond(&request)) },
        );
    tokio::spawn(serve(
        listener,
        service,
        wired,
        ConnLimits::new(HttpLimits::default()),
        std::future::pending(),
    ));
    addr
}

/// The fast path: answers `/wire` and `/wire-304` in wire form.
fn wired(head: &Head<'_>) -> Fast {
    let not_modified = match head.path {
        "/wire" => false,
        "/wire-304" => true,
        "/missed" => return Fast::Missed,
        _ => return Fast::Pass,
    };
    Fast::Answer(Wire {
        not_modified,
        fields: Bytes::from_static(b"etag: \"e\"\r\n"),
        more: b"x-more: 1\r\n",
        body: Bytes::from_static(b"wired"),
    })
}

/// Sends `requests` on one connection and returns everything the
/// server wrote until it closed, without the `date` lines.
async fn exchange(addr: SocketAddr, requests: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(requests.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    String::from_utf8(out)
        .unwrap()
        .split_inclusive("\r\n")
        .filter(|line| !line.starts_with("date: "))
        .collect()
}

fn pieces(_: &Request) -> Response {
    let mut r = Response::new(Body::new(Pieces(VecDeque::from([
        "ab",
        "",
        "cdefghijklmnopq",
    ]))));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

#[tokio::test]
async fn unknown_lengths_are_chunked_and_head_gets_no_body() {
    let addr = served(pieces).await;
    let wire = exchange(
        addr,
        "GET / HTTP/1.1\r\nHost: x\r\n\r\nHEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    )
    .await;
    let chunked = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n\
                   2\r\nab\r\nf\r\ncdefghijklmnopq\r\n0\r\n\r\n";
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n";
    let last = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n\
                2\r\nab\r\nf\r\ncdefghijklmnopq\r\n0\r\n\r\n";
    assert_eq!(wire, format!("{chunked}{head}{last}"));
}

#[tokio::test]
async fn known_lengths_are_declared_and_bodyless_statuses_send_none() {
    fn by_path(request: &Request) -> Response {
        let mut r = Response::new(Body::from("hello"));
        *r.status_mut() = match request.uri().path() {
            "/204" => StatusCode::NO_CONTENT,
            "/304" => StatusCode::NOT_MODIFIED,
            "/teapot" => StatusCode::IM_A_TEAPOT,
            _ => StatusCode::OK,
        };
        r
    }
    let addr = served(by_path).await;
    let wire = exchange(
        addr,
        "GET /204 HTTP/1.1\r\nHost: h\r\n\r\nGET /304 HTTP/1.1\r\nHost: h\r\n\r\nGET /teapot HTTP/1.1\r\nHost: h\r\n\r\n\
         HEAD / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(
        wire,
        "HTTP/1.1 204 No Content\r\n\r\n\
         HTTP/1.1 304 Not Modified\r\n\r\n\
         HTTP/1.1 418 I'm a teapot\r\ncontent-length: 5\r\n\r\nhello\
         HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n\
         HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello"
    );
}

#[tokio::test]
async fn a_body_shorter_than_its_declared_length_ends_the_connection() {
    fn short(_: &Request) -> Response {
        let mut r = Response::new(Body::from("abc"));
        r.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from_static("10"));
        r
    }
    let addr = served(short).await;
    // The second request is never answered: the client sees the
    // connection end instead of a response it would misread.
    let wire = exchange(
        addr,
        "GET / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
    )
    .await;
    assert_eq!(wire, "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc");
}

#[tokio::test]
async fn request_heads_reach_the_service_intact() {
    fn echo(request: &Request) -> Response {
        let mut text = format!("{} {}\n", request.method(), request.uri());
        for (name, value) in request.headers() {
            text.push_str(&format!("{name}={}\n", value.to_str().unwrap_or("?")));
        }
        if request.extensions().get::<FastMissed>().is_some() {
            text.push_str("(missed)\n");
        }
        Response::new(Body::from(text))
    }
    let addr = served(echo).await;
    let wire = exchange(
        addr,
        "OPTIONS /a%20b?x=1&y HTTP/1.1\r\nHost: h\r\nAccept: a\r\naccept: b\r\nX-Empty:\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .await;
    let body = "OPTIONS /a%20b?x=1&y\nhost=h\naccept=a\naccept=b\nx-empty=\ncontent-length=0\nconnection=close\n";
    assert_eq!(
        wire,
        format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    );
    // Looked up by the fast path and missed: the service is told.
    let wire = exchange(
        addr,
        "GET /missed?q HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(
        wire.ends_with("\r\n\r\nGET /missed?q\nhost=h\nconnection=close\n(missed)\n"),
        "{wire}"
    );
}

#[test]
fn plain_targets_split_as_a_parsed_uri_does() {
    for target in [
        "/",
        "/a/b.xml",
        "/a.xml?style=x&b=%20;c",
        "/a?",
        "/a?b?c",
        "/~u/(x)*+,;=:@!$'",
    ] {
        assert!(plain_target(target), "{target}");
        let uri: Uri = target.parse().unwrap();
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        assert_eq!((uri.path(), uri.query().unwrap_or("")), (path, query));
    }
    for target in [
        "*",
        "http://h/a",
        "a",
        "/a#f",
        "/a b",
        "/\"q\"",
        "/{x}",
        "/\u{e9}",
        "/a|b",
        "",
    ] {
        assert!(!plain_target(target), "{target}");
    }
}

#[test]
fn a_head_and_a_header_map_give_the_same_values() {
    let text = b"GET / HTTP/1.1\r\nHost: h\r\nCookie: a=1\r\nX-Bin: caf\xc3\xa9\r\ncookie: b=2\r\nAccept:  x \r\n\r\n";
    let mut storage = [httparse::EMPTY_HEADER; 8];
    let mut req = httparse::Request::new(&mut storage);
    req.parse(text).unwrap();
    let head = Head {
        method: &Method::GET,
        path: "/",
        query: "",
        fields: req.headers,
        peer: None,
    };
    let mut map = HeaderMap::new();
    for h in head.fields {
        map.append(
            HeaderName::from_bytes(h.name.as_bytes()).unwrap(),
            HeaderValue::from_bytes(h.value).unwrap(),
        );
    }
    for name in [
        header::COOKIE,
        header::ACCEPT,
        header::USER_AGENT,
        HeaderName::from_static("x-bin"),
    ] {
        assert_eq!(head.first(&name), map.first(&name), "{name}");
        assert_eq!(
            head.each(&name).collect::<Vec<_>>(),
            map.each(&name).collect::<Vec<_>>(),
            "{name}"
        );
    }
    assert_eq!(
        head.each(&header::COOKIE).collect::<Vec<_>>(),
        ["a=1", "b=2"]
    );
}

#[tokio::test]
async fn wire_responses_are_framed_like_any_other() {
    let addr = served(pieces).await;
    let wire = exchange(
        addr,
        "GET /wire HTTP/1.1\r\nHost: h\r\n\r\nHEAD /wire HTTP/1.1\r\nHost: h\r\n\r\nGET /wire-304 HTTP/1.1\r\nHost: h\r\n\r\n\
         GET /wire HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(
        wire,
        "HTTP/1.1 200 OK\r\netag: \"e\"\r\nx-more: 1\r\ncontent-length: 5\r\n\r\nwired\
         HTTP/1.1 200 OK\r\netag: \"e\"\r\nx-more: 1\r\ncontent-length: 5\r\n\r\n\
         HTTP/1.1 304 Not Modified\r\netag: \"e\"\r\nx-more: 1\r\n\r\n\
         HTTP/1.1 200 OK\r\netag: \"e\"\r\nx-more: 1\r\ncontent-length: 5\r\nconnection: close\r\n\r\nwired"
    );
}

#[test]
fn fast_answer_gives_what_the_loop_writes() {
    let mut head = Vec::new();
    let body = fast_answer(
        Bytes::from_static(b"GET /wire HTTP/1.1\r\nHost: h\r\n\r\n"),
        &wired,
        &mut head,
    );
    assert_eq!(body.as_deref(), Some(&b"wired"[..]));
    let text = String::from_utf8(head.clone()).unwrap();
    assert!(
        text.starts_with(
            "HTTP/1.1 200 OK\r\netag: \"e\"\r\nx-more: 1\r\ncontent-length: 5\r\ndate: "
        ),
        "{text}"
    );
    let body = fast_answer(
        Bytes::from_static(b"HEAD /wire HTTP/1.1\r\nHost: h\r\n\r\n"),
        &wired,
        &mut head,
    );
    assert_eq!(body.as_deref(), Some(&b""[..]));
    for passed in [
        &b"GET /other HTTP/1.1\r\nHost: h\r\n\r\n"[..],
        b"GET /wire HTTP/1.0\r\n\r\n",
        b"GET /wi",
    ] {
        assert_eq!(
            fast_answer(Bytes::copy_from_slice(passed), &wired, &mut head),
            None
        );
    }
}

#[test]
fn decimals() {
    for n in [0u64, 7, 10, 11_719, u64::MAX] {
        let mut out = Vec::new();
        decimal(&mut out, n);
        assert_eq!(out, n.to_string().as_bytes());
    }
}

#[test]
fn wire_rules_want_one_host_in_http_1_1_and_no_authority_form() {
    use super::parse::wire_rules;
    let path: Uri = "/a".parse().unwrap();
    let authority: Uri = "example.com:80".parse().unwrap();
    let absolute: Uri = "http://example.com/a".parse().unwrap();
    let v11 = axum::http::Version::HTTP_11;
    let v10 = axum::http::Version::HTTP_10;
    assert!(wire_rules(&Method::GET, v11, &path, 1).is_ok());
    assert!(wire_rules(&Method::GET, v11, &absolute, 1).is_ok());
    assert!(wire_rules(&Method::GET, v10, &path, 0).is_ok());
    for (method, version, uri, hosts) in [
        (Method::GET, v11, &path, 0),
        (Method::GET, v11, &path, 2),
        (Method::GET, v10, &path, 2),
        (Method::GET, v11, &authority, 1),
        (Method::POST, v10, &authority, 0),
    ] {
        let e = wire_rules(&method, version, uri, hosts).unwrap_err();
        assert_eq!(
            e.status(),
            StatusCode::BAD_REQUEST,
            "{method} {uri} {hosts}"
        );
    }
    assert!(wire_rules(&Method::CONNECT, v11, &authority, 1).is_ok());
}
