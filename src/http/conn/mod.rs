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
//! the accept loop and graceful shutdown for `axle serve`, and the
//! connection limits of [`HttpLimits`] on both paths: the header, keep-alive
//! and write timeouts, the head's size and field count (431), and the
//! number of connections served at once (past it the loop stops accepting,
//! so new connections wait in the listen backlog).
//!
//! Layout: this file has the accept loop, the per-connection loop and
//! shutdown; `fast` the fast path's interface ([`Head`], [`Fast`],
//! [`Wire`]); `parse` request heads; `write` response framing and
//! writing; `hand_off` the hand-over to hyper.

mod fast;
mod hand_off;
mod parse;
mod write;

pub use fast::{Fast, FastMissed, Head, Headers, Peer, Wire};

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::Method;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use tower::{Service, ServiceExt};

use crate::config::HttpLimits;

use axum::response::IntoResponse;

use super::HttpError;
use super::access_log::AccessLog;
use hand_off::hand_off;
use parse::{Parsed, parse};
use write::{wire_head, write_response, write_wire};

/// Most header fields a request may have here; more go to hyper (which
/// answers 431 past `max_header_count`).
pub(super) const MAX_HEADERS: usize = 64;

/// Room kept free in the read buffer before each read.
const READ_RESERVE: usize = 4096;

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

/// The limits one server's connections share: [`HttpLimits`], and the
/// connections served at once, counted over every listener (every I/O
/// thread) of the server; and the access log, for the requests the loop
/// (or hyper, after a hand-off) answers without the service.
#[derive(Debug, Clone)]
pub struct ConnLimits {
    /// The configured limits.
    pub http: HttpLimits,
    /// One permit per connection being served.
    pub connections: Arc<Semaphore>,
    /// Where requests refused before the service are logged.
    access_log: Option<AccessLog>,
}

impl ConnLimits {
    /// `http`'s limits, with a fresh connection count.
    pub fn new(http: HttpLimits) -> ConnLimits {
        let permits = http.max_connections.clamp(1, Semaphore::MAX_PERMITS);
        ConnLimits {
            http,
            connections: Arc::new(Semaphore::new(permits)),
            access_log: None,
        }
    }

    /// The same, logging the requests the connection loop refuses to
    /// `log` (the service logs the others).
    pub(in crate::http) fn with_access_log(mut self, log: Option<AccessLog>) -> ConnLimits {
        self.access_log = log;
        self
    }
}

/// Serves every connection `listener` accepts until `shutdown` completes;
/// then stops accepting, lets each connection finish the request it is
/// answering, closes idle ones, and returns once all are closed or
/// `shutdown_timeout` has passed (whatever is still open then is cut).
/// Each GET or HEAD with a plain target goes to `fast` first, as a
/// [`Head`], before any `http::Request` is built; what it does not answer
/// goes to `service`.
///
/// A connection is accepted only with a permit of `limits.connections`:
/// with `max_connections` being served, the loop waits for one to close
/// and new connections wait in the kernel's listen backlog (the ones being
/// served are never starved to make room).
pub async fn serve<S, F>(
    listener: TcpListener,
    service: S,
    fast: F,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()>
where
    S: HttpService,
    F: Fn(&Head<'_>) -> Fast + Clone + Send + 'static,
{
    let (stop, stopped) = watch::channel(false);
    // Every connection is a task of this set: reaped as they end, and
    // aborted (cut) when the shutdown timeout passes.
    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = pin!(shutdown);
    let mut failures = AcceptFailures::default();
    'serving: loop {
        let permit = loop {
            tokio::select! {
                biased;
                () = &mut shutdown => break 'serving,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                permit = Arc::clone(&limits.connections).acquire_owned() => match permit {
                    Ok(permit) => break permit,
                    Err(_) => break 'serving, // closed: never happens, the server owns it
                },
            }
        };
        let accepted = loop {
            tokio::select! {
                biased;
                () = &mut shutdown => break 'serving,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                accepted = listener.accept() => break accepted,
            }
        };
        match accepted {
            Ok((stream, peer)) => {
                failures.accepted();
                connections.spawn(connection(
                    stream,
                    peer,
                    service.clone(),
                    fast.clone(),
                    limits.http,
                    limits.access_log.clone(),
                    stopped.clone(),
                    permit,
                ));
            }
            Err(e) => failures.failed(e).await,
        }
    }
    drop(listener);
    let _ = stop.send(true);
    let deadline = limits.http.shutdown_timeout;
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(deadline, drained).await.is_err() {
        tracing::warn!(
            timeout = ?deadline,
            open = connections.len(),
            "connections still open after the shutdown timeout are cut"
        );
        connections.shutdown().await;
    }
    Ok(())
}

/// How long accepting pauses after a failure that is not the client's
/// (out of file descriptors, most often).
const ACCEPT_PAUSE: Duration = Duration::from_millis(500);

/// Time without a failed `accept` that ends a burst of them.
const ACCEPT_QUIET: Duration = Duration::from_secs(5);

/// A burst of failed `accept`s (running out of file descriptors fails
/// every accept until connections close, and then again as soon as the
/// freed descriptors are taken): logged once when it starts and once when
/// it ends, `ACCEPT_QUIET` after its last failure, rather than once per
/// failure.
#[derive(Debug, Default)]
struct AcceptFailures {
    /// Failures in the current burst (0: none).
    count: u64,
    /// When the last one happened.
    last: Option<Instant>,
}

impl AcceptFailures {
    /// After a failed `accept`: a connection that died in the queue is only
    /// logged; anything else also pauses accepting for a moment, as hyper's
    /// servers do, rather than spinning on a listener that stays readable.
    async fn failed(&mut self, e: io::Error) {
        use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
        if matches!(
            e.kind(),
            ConnectionAborted | ConnectionRefused | ConnectionReset
        ) {
            tracing::debug!(error = %e, "a connection failed before it was accepted");
            return;
        }
        self.end_if_quiet();
        self.count += 1;
        self.last = Some(Instant::now());
        if self.count == 1 {
            tracing::error!(
                error = %e,
                pause = ?ACCEPT_PAUSE,
                "accept failed; pausing between attempts (logged once per burst)"
            );
        } else {
            tracing::debug!(error = %e, failures = self.count, "accept failed again");
        }
        tokio::time::sleep(ACCEPT_PAUSE).await;
    }

    /// After an `accept` that succeeded.
    fn accepted(&mut self) {
        if self.count > 0 {
            self.end_if_quiet();
        }
    }

    /// Ends the burst if its last failure is `ACCEPT_QUIET` old.
    fn end_if_quiet(&mut self) {
        if self.last.is_some_and(|t| t.elapsed() >= ACCEPT_QUIET) {
            tracing::warn!(failures = self.count, "accept failures ended");
            self.count = 0;
            self.last = None;
        }
    }
}

/// One connection: answers requests in order until the client closes, asks
/// to close, the server stops, or a timeout passes; hands over to hyper
/// when a request needs it. Timeouts: a request head must be complete
/// `header_timeout` after its first byte (the first request's, after the
/// accept), an idle connection gets `keepalive_timeout` between requests,
/// and each write must make progress within `write_timeout`. A timed-out
/// connection is closed without an answer, as hyper does. `held` keeps
/// the connection counted in `max_connections` until it closes. A head
/// refused here is logged to `log`, as its bytes were sent.
#[allow(clippy::too_many_arguments)]
async fn connection<S, F>(
    mut stream: TcpStream,
    peer: std::net::SocketAddr,
    service: S,
    fast: F,
    limits: HttpLimits,
    log: Option<AccessLog>,
    stopped: watch::Receiver<bool>,
    held: Held,
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
    // When the head being read started (None: idle between requests, since
    // `idle_since`).
    let mut head_since = Some(Instant::now());
    let mut idle_since = Instant::now();
    let mut timer = pin!(tokio::time::sleep_until(idle_since + limits.header_timeout));
    let write_timeout = limits.write_timeout;
    loop {
        // Answer every complete request already read (pipelining).
        let mut answered = false;
        loop {
            let (close, written) = match parse(&mut unread, &fast, &limits, Some(peer)) {
                Parsed::Wire(wire, head_only, close) => {
                    let close = close || *stopped.borrow();
                    let written = write_wire(
                        &mut stream,
                        &mut head,
                        &wire,
                        head_only,
                        close,
                        write_timeout,
                    );
                    (close, written.await)
                }
                Parsed::Request(request, close) => {
                    let head_only = request.method() == Method::HEAD;
                    let close = close || *stopped.borrow();
                    // The whole response is made (rendered on the pool)
                    // before the first byte is written: a client that reads
                    // slowly holds this task, never a transform thread. A
                    // client that closes its side meanwhile is gone, as
                    // nginx has it ("client prematurely closed
                    // connection"): dropping the response future cancels
                    // its render.
                    let response = tokio::select! {
                        biased;
                        response = service.clone().oneshot(request) => response,
                        () = client_gone(&stream) => {
                            tracing::debug!("the client closed its connection; its render is cancelled");
                            return;
                        }
                    };
                    let Ok(response) = response;
                    let written = write_response(
                        &mut stream,
                        &mut head,
                        response,
                        head_only,
                        close,
                        write_timeout,
                    );
                    (close, written.await)
                }
                Parsed::Refused(error) => {
                    // The head broke a limit: answered, then closed, since
                    // where the next request starts is not known.
                    let response = error.into_response();
                    let refused = refused_line(&response);
                    let written = write_response(
                        &mut stream,
                        &mut head,
                        response,
                        false,
                        true,
                        write_timeout,
                    );
                    let written = written.await;
                    if let Some(log) = &log {
                        log_refused(log, peer, &unread, refused, head_since);
                    }
                    (true, written)
                }
                Parsed::Partial => break,
                Parsed::HandOff => {
                    let head_since = head_since.unwrap_or_else(Instant::now);
                    return hand_off(
                        stream, peer, unread, service, limits, log, head_since, stopped, held,
                    )
                    .await;
                }
            };
            answered = true;
            match written {
                Ok(()) if !close => {}
                Ok(()) => return shut(stream).await,
                Err(e) => {
                    tracing::debug!(error = %e, "connection ended while writing a response");
                    return;
                }
            }
        }
        if answered {
            // The next head's clock starts now if part of it is here.
            idle_since = Instant::now();
            head_since = (!unread.is_empty()).then_some(idle_since);
        }
        if unread.len() > limits.max_header_bytes {
            let response = too_large_head(&limits).into_response();
            let refused = refused_line(&response);
            let written =
                write_response(&mut stream, &mut head, response, false, true, write_timeout);
            let written = written.await;
            if let Some(log) = &log {
                log_refused(log, peer, &unread, refused, head_since);
            }
            if written.is_ok() {
                shut(stream).await;
            }
            return;
        }
        // A partial head (rare: split packets) is read on from a copy; the
        // buffer reclaims its space once no request holds on to it.
        buf.extend_from_slice(&std::mem::take(&mut unread));
        if buf.capacity() - buf.len() < READ_RESERVE {
            buf.reserve(READ_RESERVE);
        }
        let deadline = match head_since {
            Some(since) => since + limits.header_timeout,
            None => idle_since + limits.keepalive_timeout,
        };
        // One timer per connection, moved only when it fires before the
        // deadline (which moves on with every request) or when the deadline
        // comes earlier than it is set for: a wheel operation per timeout
        // period, not per read.
        if deadline < timer.deadline() {
            timer.as_mut().reset(deadline);
        }
        tokio::select! {
            biased;
            read = stream.read_buf(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if head_since.is_none() {
                        head_since = Some(Instant::now());
                    }
                }
            },
            () = timer.as_mut() => {
                if Instant::now() < deadline {
                    timer.as_mut().reset(deadline);
                    unread = buf.split().freeze();
                    continue;
                }
                tracing::debug!(
                    waiting_for = if head_since.is_some() { "a request head" } else { "a request" },
                    "connection timed out"
                );
                return;
            }
            () = &mut stop => return,
        }
        unread = buf.split().freeze();
    }
}

/// The status and body length of a refusal, for its log line.
fn refused_line(response: &Response) -> (u16, u64) {
    let bytes = http_body::Body::size_hint(response.body())
        .exact()
        .unwrap_or(0);
    (response.status().as_u16(), bytes)
}

/// Logs a head refused by the loop: its bytes as read (`unread`: the
/// refused head is still at its start), begun at `since`.
fn log_refused(
    log: &AccessLog,
    peer: std::net::SocketAddr,
    unread: &[u8],
    (status, bytes): (u16, u64),
    since: Option<Instant>,
) {
    let took = since.map_or(Duration::ZERO, |t| t.elapsed());
    log.log_raw(Some(peer), unread, status, bytes, took);
}

/// What keeps a connection counted in `max_connections` while it is open.
pub(super) type Held = tokio::sync::OwnedSemaphorePermit;

/// The answer to a request head longer than `max_header_bytes`.
pub(super) fn too_large_head(limits: &HttpLimits) -> HttpError {
    HttpError::HeadTooLarge(format!(
        "the request head is longer than {} bytes",
        limits.max_header_bytes
    ))
}

/// Completes when the client has closed its side of the connection (or
/// it broke) while its request is being answered; never, if it sends
/// more (a pipelined request: its bytes stay unread for the loop).
async fn client_gone(stream: &TcpStream) {
    let mut byte = [0u8; 1];
    match stream.peek(&mut byte).await {
        Ok(0) | Err(_) => {}
        Ok(_) => std::future::pending().await,
    }
}

/// Completes once the server is stopping.
pub(super) async fn stopping(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// Closes the sending side after a `Connection: close` response.
async fn shut(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
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
    match parse(&mut unread, fast, &HttpLimits::default(), None) {
        Parsed::Wire(wire, head_only, close) => {
            // `wire_head` gives back the whole body or none of it.
            let sent = wire_head(head, &wire, head_only, close).len();
            Some(wire.body.slice(..sent))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
