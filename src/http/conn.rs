//! Axle's own HTTP/1.1 connection loop.
//!
//! Why it exists: on a cache hit the response is already bytes in memory,
//! and hyper's per-request machinery (its connection state machine, body
//! plumbing and header encoding) cost more CPU than the rest of the hit.
//! This loop parses each request head with `httparse` (hyper's own
//! parser) and offers a GET or HEAD to a fast path first, as a borrowed
//! [`Head`] (for `axle serve`, the hot memo): what it answers as a [`Wire`]
//! goes out with no `http::Request` or `Response` ever built. Anything
//! else becomes an `http::Request` for the tower service. Either way the
//! response head and body leave in one `writev`.
//!
//! It serves only the plain case: an HTTP/1.1 request with no body and no
//! `Upgrade` or `Expect`. Anything else (a request body, HTTP/1.0, an
//! upgrade, a head it cannot parse or that is too large) hands the
//! connection, with every byte read so far, to hyper for the rest of its
//! life, so the edge cases of HTTP keep hyper's behaviour and its error
//! responses. Responses are framed here: `Content-Length` when the body's
//! length is known, chunked otherwise, none for HEAD, 1xx, 204 and 304.
//!
//! Boundaries: knows HTTP/1.1 framing and nothing of Axle's handler; owns
//! the accept loop and graceful shutdown for `axle serve`.

use std::convert::Infallible;
use std::future::Future;
use std::io::{self, IoSlice, Write as _};
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use bytes::{Buf, Bytes, BytesMut};
use http_body::Body as _;
use http_body_util::BodyExt as _;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tower::{Service, ServiceExt};

/// Most header fields a request may have here; more go to hyper (which
/// answers 431 above its own limit).
const MAX_HEADERS: usize = 64;

/// Largest request head read here; a longer one goes to hyper.
const MAX_HEAD: usize = 64 * 1024;

/// Room kept free in the read buffer before each read.
const READ_RESERVE: usize = 4096;

/// A response already in wire form, as a cache hit answers: no
/// `http::Response` is built and no header map walked.
#[derive(Debug)]
pub struct Wire {
    /// 304 Not Modified (no body, no length) rather than 200 OK.
    pub not_modified: bool,
    /// Header lines, each ending in CRLF, from a validated source (the
    /// status line, framing, `date` and `connection` are added here).
    pub fields: Bytes,
    /// More header lines, likewise.
    pub more: &'static [u8],
    /// The body of a 200.
    pub body: Bytes,
}

/// A tower service the loop can serve: the bound every function here (and
/// `axle::http::service`, `serve_service`) shares.
pub trait HttpService:
    Service<Request, Response = Response, Error = Infallible, Future: Send + 'static>
    + Clone
    + Send
    + 'static
{
}

impl<S> HttpService for S where
    S: Service<Request, Response = Response, Error = Infallible, Future: Send + 'static>
        + Clone
        + Send
        + 'static
{
}

/// A parsed request head as the fast path sees it: nothing is built for
/// it (the `http::Request` is built only if the fast path passes).
pub struct Head<'a> {
    /// GET or HEAD (the fast path sees no other method).
    pub method: &'a Method,
    /// The path, as sent (origin form, only characters an `http::Uri`
    /// keeps as they are).
    pub path: &'a str,
    /// The query string without its `?` (empty when there is none).
    pub query: &'a str,
    fields: &'a [httparse::Header<'a>],
}

/// What the fast path did with a request.
#[derive(Debug)]
pub enum Fast {
    /// Answered it.
    Answer(Wire),
    /// Left it to the service.
    Pass,
    /// Looked it up, found nothing, and left it to the service, which
    /// finds [`FastMissed`] in the request's extensions (so it need not
    /// look again).
    Missed,
}

/// Marks a request the fast path looked up and missed ([`Fast::Missed`]).
#[derive(Debug, Clone, Copy)]
pub struct FastMissed;

/// Request header lookup, over an `http::HeaderMap` or a [`Head`] alike.
pub trait Headers {
    /// The first `name` field's value, if it is visible ASCII text (as
    /// `HeaderValue::to_str` has it).
    fn first(&self, name: &HeaderName) -> Option<&str>;

    /// Every `name` field's value that is visible ASCII text, in order.
    fn each<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a str> + 'a;
}

impl Headers for HeaderMap {
    fn first(&self, name: &HeaderName) -> Option<&str> {
        self.get(name).and_then(|v| v.to_str().ok())
    }

    fn each<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a str> + 'a {
        self.get_all(name).iter().filter_map(|v| v.to_str().ok())
    }
}

impl Headers for Head<'_> {
    fn first(&self, name: &HeaderName) -> Option<&str> {
        self.fields
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name.as_str()))
            .and_then(|h| visible(h.value))
    }

    fn each<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a str> + 'a {
        self.fields
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name.as_str()))
            .filter_map(|h| visible(h.value))
    }
}

/// `value` as text if it is all visible ASCII or tabs (the rule of
/// `HeaderValue::to_str`).
fn visible(value: &[u8]) -> Option<&str> {
    if value
        .iter()
        .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        std::str::from_utf8(value).ok()
    } else {
        None
    }
}

/// Whether `target` is an origin-form path and query made only of
/// characters `http::Uri` keeps as they are (unreserved, sub-delims, `:`,
/// `@`, `/`, `?`, `%`): such a target splits at its first `?` into exactly
/// the `path()` and `query()` a parsed `Uri` gives. Anything else goes
/// through the `Uri` parser and the service.
fn plain_target(target: &str) -> bool {
    target.starts_with('/') && target.bytes().all(|b| PLAIN[usize::from(b)])
}

/// The bytes [`plain_target`] allows, as a table (this runs on every
/// request).
const PLAIN: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        table[i] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'/'
                    | b'?'
                    | b'%'
            );
        i += 1;
    }
    table
};

/// Serves every connection `listener` accepts until `shutdown` completes;
/// then stops accepting, lets each connection finish the request it is
/// answering, closes idle ones, and returns once all are closed. Each GET
/// or HEAD with a plain target goes to `fast` first, as a [`Head`], before
/// any `http::Request` is built; what it does not answer goes to `service`.
pub async fn serve<S, F>(
    listener: TcpListener,
    service: S,
    fast: F,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()>
where
    S: HttpService,
    F: Fn(&Head<'_>) -> Fast + Clone + Send + 'static,
{
    let (stop, stopped) = watch::channel(false);
    // Every connection holds a sender; `recv` returns None once all are gone.
    let (alive, mut all_closed) = mpsc::channel::<()>(1);
    let mut shutdown = pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(connection(
                        stream,
                        service.clone(),
                        fast.clone(),
                        stopped.clone(),
                        alive.clone(),
                    ));
                }
                Err(e) => accept_failed(e).await,
            },
        }
    }
    drop(listener);
    let _ = stop.send(true);
    drop(alive);
    let _ = all_closed.recv().await;
    Ok(())
}

/// After a failed `accept`: a connection that died in the queue is only
/// logged; anything else (out of file descriptors, most often) also pauses
/// accepting for a moment, as hyper's servers do, rather than spinning.
async fn accept_failed(e: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        tracing::debug!(error = %e, "a connection failed before it was accepted");
        return;
    }
    tracing::error!(error = %e, "accept failed; pausing for a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// One connection: answers requests in order until the client closes, asks
/// to close, or the server stops; hands over to hyper when a request needs
/// it.
async fn connection<S, F>(
    mut stream: TcpStream,
    service: S,
    fast: F,
    stopped: watch::Receiver<bool>,
    _alive: mpsc::Sender<()>,
) where
    S: HttpService,
    F: Fn(&Head<'_>) -> Fast,
{
    let mut buf = BytesMut::with_capacity(8 * 1024);
    // Read and not yet parsed. Requests are parsed from frozen bytes so
    // that their URI and header values share them instead of copying.
    let mut unread = Bytes::new();
    let mut head = Vec::with_capacity(512);
    let mut stop = pin!(stopping(stopped.clone()));
    loop {
        // Answer every complete request already read (pipelining).
        loop {
            let (close, written) = match parse(&mut unread, &fast) {
                Parsed::Wire(wire, head_only, close) => {
                    let close = close || *stopped.borrow();
                    let written = write_wire(&mut stream, &mut head, &wire, head_only, close);
                    (close, written.await)
                }
                Parsed::Request(request, close) => {
                    let head_only = request.method() == Method::HEAD;
                    let close = close || *stopped.borrow();
                    let Ok(response) = service.clone().oneshot(request).await;
                    let written =
                        write_response(&mut stream, &mut head, response, head_only, close);
                    (close, written.await)
                }
                Parsed::Partial => break,
                Parsed::HandOff => return hand_off(stream, unread, service, stopped).await,
            };
            match written {
                Ok(()) if !close => {}
                Ok(()) => return shut(stream).await,
                Err(e) => {
                    tracing::debug!(error = %e, "connection ended while writing a response");
                    return;
                }
            }
        }
        if unread.len() >= MAX_HEAD {
            return hand_off(stream, unread, service, stopped).await;
        }
        // A partial head (rare: split packets) is read on from a copy; the
        // buffer reclaims its space once no request holds on to it.
        buf.extend_from_slice(&std::mem::take(&mut unread));
        if buf.capacity() - buf.len() < READ_RESERVE {
            buf.reserve(READ_RESERVE);
        }
        tokio::select! {
            biased;
            read = stream.read_buf(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            () = &mut stop => return,
        }
        unread = buf.split().freeze();
    }
}

/// Completes once the server is stopping.
async fn stopping(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// Closes the sending side after a `Connection: close` response.
async fn shut(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
}

/// What the bytes read so far hold.
// Returned and matched at once; boxing the request would cost an
// allocation per request.
#[allow(clippy::large_enum_variant)]
enum Parsed {
    /// A request the fast path answered (its head is consumed), whether it
    /// was a HEAD, and whether the client asked to close after it.
    Wire(Wire, bool, bool),
    /// A complete request for the service (its head is consumed), and
    /// whether the client asked to close the connection after it.
    Request(Request, bool),
    /// Not a whole head yet.
    Partial,
    /// A request for hyper (body, HTTP/1.0, upgrade, unparsable, ...).
    HandOff,
}

/// Parses the request at the start of `unread`. A complete one this loop
/// serves is consumed from `unread`: answered by `fast`, or built into a
/// request whose URI and header values share its bytes.
fn parse<F>(unread: &mut Bytes, fast: &F) -> Parsed
where
    F: Fn(&Head<'_>) -> Fast,
{
    if unread.is_empty() {
        return Parsed::Partial;
    }
    let data: &Bytes = unread;
    let mut storage =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(data, &mut storage) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::HandOff,
    };
    let (Some(method), Some(path), Some(1)) = (req.method, req.path, req.version) else {
        return Parsed::HandOff;
    };
    let method = match method {
        "GET" => Method::GET,
        "HEAD" => Method::HEAD,
        "CONNECT" => return Parsed::HandOff,
        other => match Method::from_bytes(other.as_bytes()) {
            Ok(m) => m,
            Err(_) => return Parsed::HandOff,
        },
    };
    let mut close = false;
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            if h.value.trim_ascii() != b"0" {
                return Parsed::HandOff;
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding")
            || name.eq_ignore_ascii_case(b"upgrade")
            || name.eq_ignore_ascii_case(b"expect")
        {
            return Parsed::HandOff;
        } else if name.eq_ignore_ascii_case(b"connection") {
            close |= h
                .value
                .split(|b| *b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
    }
    let mut missed = false;
    if (method == Method::GET || method == Method::HEAD) && plain_target(path) {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let head = Head {
            method: &method,
            path,
            query,
            fields: req.headers,
        };
        match fast(&head) {
            Fast::Answer(wire) => {
                let head_only = method == Method::HEAD;
                unread.advance(len);
                return Parsed::Wire(wire, head_only, close);
            }
            Fast::Missed => missed = true,
            Fast::Pass => {}
        }
    }
    let Ok(uri) = Uri::from_maybe_shared(data.slice_ref(path.as_bytes())) else {
        return Parsed::HandOff;
    };
    let mut headers = HeaderMap::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(h.name.as_bytes()),
            HeaderValue::from_maybe_shared(data.slice_ref(h.value)),
        ) else {
            return Parsed::HandOff;
        };
        headers.append(name, value);
    }
    let mut request = Request::new(Body::empty());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.headers_mut() = headers;
    if missed {
        request.extensions_mut().insert(FastMissed);
    }
    unread.advance(len);
    Parsed::Request(request, close)
}

/// How a response body is delimited on the wire.
#[derive(Clone, Copy)]
enum Framing {
    /// No body may follow (HEAD, 1xx, 204, 304).
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding (length unknown up front).
    Chunked,
}

/// Writes `response`, its head in `head` (reused between responses), its
/// body framed as [`Framing`] says; the head goes out with the first piece
/// of the body in one `writev`.
async fn write_response(
    stream: &mut TcpStream,
    head: &mut Vec<u8>,
    response: Response,
    head_only: bool,
    close: bool,
) -> io::Result<()> {
    let (parts, mut body) = response.into_parts();
    let status = parts.status;
    head.clear();
    head.extend_from_slice(b"HTTP/1.1 ");
    head.extend_from_slice(status.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    head.extend_from_slice(b"\r\n");
    let no_body = status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    let mut declared = None;
    let (mut has_date, mut has_connection) = (false, false);
    for (name, value) in &parts.headers {
        if name == header::TRANSFER_ENCODING {
            continue; // framed here
        }
        if name == header::CONTENT_LENGTH {
            match value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
            {
                Some(n) if declared.is_none() => declared = Some(n),
                _ => continue, // a second or unreadable length: ours wins
            }
        }
        has_date |= name == header::DATE;
        has_connection |= name == header::CONNECTION;
        field(head, name.as_str().as_bytes(), value.as_bytes());
    }
    let framing = if no_body {
        Framing::None
    } else if let Some(n) = declared {
        Framing::Length(n)
    } else if let Some(n) = body.size_hint().exact() {
        content_length(head, n);
        Framing::Length(n)
    } else if head_only {
        Framing::None
    } else {
        field(head, b"transfer-encoding", b"chunked");
        Framing::Chunked
    };
    if !has_date {
        date(head);
    }
    if close && !has_connection {
        field(head, b"connection", b"close");
    }
    head.extend_from_slice(b"\r\n");
    let framing = if head_only { Framing::None } else { framing };
    let mut head_sent = false;
    let mut nodelay = false;
    let mut written = 0u64;
    if !matches!(framing, Framing::None) {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(io::Error::other)?;
            let Ok(data) = frame.into_data() else {
                continue; // trailers are not sent
            };
            if data.is_empty() {
                continue;
            }
            if head_sent {
                more_writes(stream, &mut nodelay);
            }
            written += data.len() as u64;
            let pending: &[u8] = if head_sent { &[] } else { head };
            match framing {
                Framing::Length(n) if written > n => {
                    return Err(io::Error::other("response body longer than its length"));
                }
                Framing::Chunked => {
                    let mut size = [0u8; 18];
                    let size = {
                        let mut w = &mut size[..];
                        let _ = write!(w, "{:x}\r\n", data.len());
                        let left = w.len();
                        &size[..18 - left]
                    };
                    write_all(
                        stream,
                        &mut [
                            IoSlice::new(pending),
                            IoSlice::new(size),
                            IoSlice::new(&data),
                            IoSlice::new(b"\r\n"),
                        ],
                    )
                    .await?;
                }
                _ => {
                    write_all(stream, &mut [IoSlice::new(pending), IoSlice::new(&data)]).await?;
                }
            }
            head_sent = true;
        }
    }
    let pending: &[u8] = if head_sent { &[] } else { head };
    match framing {
        Framing::Chunked => {
            if head_sent {
                more_writes(stream, &mut nodelay);
            }
            write_all(
                stream,
                &mut [IoSlice::new(pending), IoSlice::new(b"0\r\n\r\n")],
            )
            .await
        }
        Framing::Length(n) if written != n => {
            Err(io::Error::other("response body shorter than its length"))
        }
        _ if !head_sent => write_all(stream, &mut [IoSlice::new(pending)]).await,
        _ => Ok(()),
    }
}

/// Writes `wire` (head and body in one `writev`).
async fn write_wire(
    stream: &mut TcpStream,
    head: &mut Vec<u8>,
    wire: &Wire,
    head_only: bool,
    close: bool,
) -> io::Result<()> {
    let body = wire_head(head, wire, head_only, close);
    write_all(stream, &mut [IoSlice::new(head), IoSlice::new(body)]).await
}

/// Before a response's second and later writes: turns Nagle's algorithm
/// off (once), so the pieces of a streamed body do not wait for the
/// client's delayed ACK. A response written at once (every hit, nearly
/// every response) spares the connection that system call.
fn more_writes(stream: &TcpStream, nodelay: &mut bool) {
    if !*nodelay {
        *nodelay = true;
        let _ = stream.set_nodelay(true);
    }
}

/// Puts `wire`'s head in `head`; returns the body to send after it.
fn wire_head<'w>(head: &mut Vec<u8>, wire: &'w Wire, head_only: bool, close: bool) -> &'w [u8] {
    head.clear();
    head.extend_from_slice(if wire.not_modified {
        b"HTTP/1.1 304 Not Modified\r\n"
    } else {
        b"HTTP/1.1 200 OK\r\n"
    });
    head.extend_from_slice(&wire.fields);
    head.extend_from_slice(wire.more);
    if !wire.not_modified {
        content_length(head, wire.body.len() as u64);
    }
    date(head);
    if close {
        field(head, b"connection", b"close");
    }
    head.extend_from_slice(b"\r\n");
    if head_only || wire.not_modified {
        &[]
    } else {
        &wire.body
    }
}

/// What the loop writes for `request` (one request head, as read) when the
/// fast path answers it: the head into `head`, the body returned; None
/// when the request would go to the service (or to hyper). For
/// benchmarks: a hit end to end, parse to bytes, without sockets.
#[doc(hidden)]
pub fn fast_answer<F>(request: Bytes, fast: &F, head: &mut Vec<u8>) -> Option<Bytes>
where
    F: Fn(&Head<'_>) -> Fast,
{
    let mut unread = request;
    match parse(&mut unread, fast) {
        Parsed::Wire(wire, head_only, close) => {
            // `wire_head` gives back the whole body or none of it.
            let sent = wire_head(head, &wire, head_only, close).len();
            Some(wire.body.slice(..sent))
        }
        _ => None,
    }
}

/// Appends `name: value` and a line break.
fn field(head: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    head.extend_from_slice(name);
    head.extend_from_slice(b": ");
    head.extend_from_slice(value);
    head.extend_from_slice(b"\r\n");
}

/// Appends a `content-length: n` line.
fn content_length(head: &mut Vec<u8>, n: u64) {
    head.extend_from_slice(b"content-length: ");
    decimal(head, n);
    head.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal.
fn decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends a `date` field for now, formatted once a second per thread.
fn date(head: &mut Vec<u8>) {
    use std::cell::RefCell;
    use std::time::{SystemTime, UNIX_EPOCH};
    thread_local! {
        static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with_borrow_mut(|(at, text)| {
        if *at != second {
            *at = second;
            *text = httpdate::fmt_http_date(now);
        }
        field(head, b"date", text.as_bytes());
    });
}

/// Writes every byte of `slices`, as few `writev`s as the socket allows.
async fn write_all(stream: &mut TcpStream, slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    let mut slices = slices;
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        let n = stream.write_vectored(slices).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

/// Serves the rest of the connection with hyper, replaying `read` (the
/// bytes this loop read and did not answer) first.
async fn hand_off<S>(stream: TcpStream, read: Bytes, service: S, stopped: watch::Receiver<bool>)
where
    S: HttpService,
{
    let io = hyper_util::rt::TokioIo::new(Replay { read, stream });
    let service = hyper_util::service::TowerToHyperService::new(
        service.map_request(|r: http::Request<hyper::body::Incoming>| r.map(Body::new)),
    );
    let mut served = pin!(
        hyper::server::conn::http1::Builder::new()
            .serve_connection(io, service)
            .with_upgrades()
    );
    tokio::select! {
        result = served.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended");
            }
        }
        () = stopping(stopped) => {
            served.as_mut().graceful_shutdown();
            if let Err(e) = served.await {
                tracing::debug!(error = %e, "connection ended");
            }
        }
    }
}

/// A socket whose first reads return bytes already read from it.
struct Replay {
    read: Bytes,
    stream: TcpStream,
}

impl AsyncRead for Replay {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.read.is_empty() {
            return Pin::new(&mut self.stream).poll_read(cx, buf);
        }
        let n = self.read.len().min(buf.remaining());
        buf.put_slice(&self.read[..n]);
        self.read.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Replay {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::net::SocketAddr;

    use http_body::Frame;

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
        let service = tower::service_fn(move |request: Request| async move {
            Ok::<_, Infallible>(respond(&request))
        });
        tokio::spawn(serve(listener, service, wired, std::future::pending()));
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
            "GET / HTTP/1.1\r\nHost: x\r\n\r\nHEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nConnection: close\r\n\r\n",
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
            "GET /204 HTTP/1.1\r\n\r\nGET /304 HTTP/1.1\r\n\r\nGET /teapot HTTP/1.1\r\n\r\n\
             HEAD / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nconnection: close\r\n\r\n",
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
        let wire = exchange(addr, "GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n").await;
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
        let wire = exchange(addr, "GET /missed?q HTTP/1.1\r\nConnection: close\r\n\r\n").await;
        assert!(
            wire.ends_with("\r\n\r\nGET /missed?q\nconnection=close\n(missed)\n"),
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
        let text = b"GET / HTTP/1.1\r\nCookie: a=1\r\nX-Bin: caf\xc3\xa9\r\ncookie: b=2\r\nAccept:  x \r\n\r\n";
        let mut storage = [httparse::EMPTY_HEADER; 8];
        let mut req = httparse::Request::new(&mut storage);
        req.parse(text).unwrap();
        let head = Head {
            method: &Method::GET,
            path: "/",
            query: "",
            fields: req.headers,
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
            "GET /wire HTTP/1.1\r\n\r\nHEAD /wire HTTP/1.1\r\n\r\nGET /wire-304 HTTP/1.1\r\n\r\n\
             GET /wire HTTP/1.1\r\nConnection: close\r\n\r\n",
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
            Bytes::from_static(b"GET /wire HTTP/1.1\r\n\r\n"),
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
            Bytes::from_static(b"HEAD /wire HTTP/1.1\r\n\r\n"),
            &wired,
            &mut head,
        );
        assert_eq!(body.as_deref(), Some(&b""[..]));
        for passed in [
            &b"GET /other HTTP/1.1\r\n\r\n"[..],
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
}
