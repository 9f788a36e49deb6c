//! The hand-over to hyper: a connection this loop does not serve (a
//! request body, HTTP/1.0, an upgrade, an unparsable or oversized head) is
//! served by hyper for the rest of its life, replaying the bytes already
//! read, and shut down gracefully with the server.
//!
//! The same limits hold here as on Axle's own loop. hyper enforces the
//! head's size and field count (431); a client that closes its side while
//! its request is answered is gone, as on the own loop (`half_close(false)`:
//! hyper drops the response future, which cancels its render); the timeouts are kept by a watchdog beside the
//! connection, because hyper's `header_read_timeout` starts when hyper
//! waits for a head, idle time included, and hyper has no keep-alive idle
//! or write timeout. The watchdog sees what the connection does (bytes
//! read, writes that cannot progress, requests taken and answered) and
//! cuts the connection by the rules of the own loop: a head must be whole
//! `header_timeout` after its first byte, an idle connection gets
//! `keepalive_timeout`, a blocked write `write_timeout`. A request body
//! the handler waits for must also make progress within `header_timeout`
//! (nginx's `client_body_timeout` rule), so a client trickling a body
//! cannot hold the connection. hyper's own header timeout stays on (the
//! sum of the header and keep-alive timeouts) as a backstop.
//!
//! With an access log, what hyper answers on its own (400, 414 or 431 for
//! a head it cannot parse or that is too large) is logged too: the bytes
//! of the head being read are kept (at most `max-header-size`, only while
//! no request is in flight) and logged with the status hyper's parse
//! error stands for when the connection ends with one.

use std::io::{self, IoSlice};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use std::convert::Infallible;

use axum::body::Body;
use axum::extract::Request;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::{Buf, Bytes};
use http_body::Frame;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tower::ServiceExt;

use super::super::access_log::{AccessLog, Pending};
use super::parse::wire_rules;
use super::{Held, HttpService, stopping};
use crate::config::HttpLimits;

/// Serves the rest of the connection with hyper, replaying `read` (the
/// bytes this loop read and did not answer, a head begun at `head_since`)
/// first. `_held` keeps the connection counted until it closes. What
/// hyper or the wire rules refuse is logged to `log`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn hand_off<S>(
    stream: TcpStream,
    peer: std::net::SocketAddr,
    read: Bytes,
    service: S,
    limits: HttpLimits,
    log: Option<AccessLog>,
    head_since: Instant,
    stopped: watch::Receiver<bool>,
    _held: Held,
) where
    S: HttpService,
{
    let capture = log.as_ref().map(|_| limits.max_header_bytes);
    let activity = Arc::new(Activity::new(head_since, capture));
    let io = hyper_util::rt::TokioIo::new(Replay {
        read,
        stream,
        activity: Arc::clone(&activity),
    });
    let started = Arc::clone(&activity);
    let answered = Arc::clone(&activity);
    // HTTP/1.1's rules on Host and the target's form, as the own loop
    // applies them.
    let refusals = log.clone();
    let checked = tower::service_fn(move |mut r: Request| {
        let service = service.clone();
        let log = refusals.clone();
        r.extensions_mut().insert(super::Peer(peer));
        async move {
            let started = std::time::Instant::now();
            let hosts = r.headers().get_all(header::HOST).iter().count();
            if let Err(e) = wire_rules(r.method(), r.version(), r.uri(), hosts) {
                let response = e.into_response();
                if let Some(log) = &log {
                    Pending::of(&r).log(log, &response, started.elapsed());
                }
                return Ok::<_, Infallible>(response);
            }
            service.oneshot(r).await
        }
    });
    let service = hyper_util::service::TowerToHyperService::new(
        checked
            .map_request(move |r: http::Request<hyper::body::Incoming>| {
                started.request_started();
                let activity = Arc::clone(&started);
                r.map(|inner| Body::new(Receiving { inner, activity }))
            })
            .map_response(move |r: Response| {
                let done = Done(Arc::clone(&answered));
                r.map(|inner| Body::new(Answering { inner, _done: done }))
            }),
    );
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_timeout + limits.keepalive_timeout)
        .half_close(false)
        .max_headers(limits.max_header_count)
        .max_header_size(limits.max_header_bytes);
    let mut served = pin!(builder.serve_connection(io, service).with_upgrades());
    let mut watchdog = pin!(watchdog(&activity, &limits));
    let ended = |result| ended(result, &activity, log.as_ref(), peer);
    tokio::select! {
        result = served.as_mut() => ended(result),
        waiting_for = watchdog.as_mut() => timed_out(waiting_for),
        () = stopping(stopped) => {
            served.as_mut().graceful_shutdown();
            tokio::select! {
                result = served.as_mut() => ended(result),
                waiting_for = watchdog.as_mut() => timed_out(waiting_for),
            }
        }
    }
}

/// The connection is over: a parse error hyper answered is logged, with
/// the head it could not take.
fn ended(
    result: Result<(), hyper::Error>,
    activity: &Activity,
    log: Option<&AccessLog>,
    peer: std::net::SocketAddr,
) {
    let Err(e) = result else { return };
    tracing::debug!(error = %e, "connection ended");
    if let (Some(log), Some(status)) = (log, answered_status(&e)) {
        // The head is empty when it came in with the request before it
        // (pipelined): the line is then `-`.
        let mut s = activity.state();
        let took = s.head_since.map_or(Duration::ZERO, |t| t.elapsed());
        let head = std::mem::take(&mut s.head);
        drop(s);
        log.log_raw(Some(peer), &head, status, 0, took);
    }
}

/// The status of the answer hyper writes for a parse error `e` before it
/// closes the connection (its `on_error`: 431 for a head too large, 414
/// for a URI too long, 400 for the rest), None for errors it answers with
/// nothing (an HTTP/2 preface, an internal error).
fn answered_status(e: &hyper::Error) -> Option<u16> {
    if !e.is_parse() || e.is_parse_version_h2() || e.is_parse_status() {
        return None;
    }
    let text = e.to_string();
    if e.is_parse_too_large() {
        return Some(if text.starts_with("URI too long") {
            414
        } else {
            431
        });
    }
    (!text.contains("internal error")).then_some(400)
}

fn timed_out(waiting_for: &'static str) {
    tracing::debug!(waiting_for, "connection timed out");
}

/// Completes when the connection has broken a timeout, saying what it was
/// waiting for.
async fn watchdog(activity: &Activity, limits: &HttpLimits) -> &'static str {
    loop {
        let next = activity.state().deadline(limits);
        match next {
            Some((at, why)) if at <= Instant::now() => return why,
            Some((at, _)) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = activity.changed.notified() => {}
                }
            }
            None => activity.changed.notified().await,
        }
    }
}

/// What a handed-over connection is doing, as the watchdog needs it.
#[derive(Debug)]
struct State {
    /// Requests hyper took and has not finished answering.
    in_flight: usize,
    /// When the connection last became idle.
    idle_since: Instant,
    /// When the first byte of the next head arrived (while idle).
    head_since: Option<Instant>,
    /// Since when a write has been waiting for the client to take bytes.
    blocked_since: Option<Instant>,
    /// Since when the handler has been waiting for request body bytes.
    body_since: Option<Instant>,
    /// The bytes read while no request is in flight (the head being read),
    /// when there is an access log.
    head: Vec<u8>,
}

impl State {
    /// The next deadline and what breaking it means, if any applies.
    fn deadline(&self, limits: &HttpLimits) -> Option<(Instant, &'static str)> {
        if let Some(since) = self.blocked_since {
            return Some((
                since + limits.write_timeout,
                "the client to take a response",
            ));
        }
        if let Some(since) = self.body_since {
            return Some((since + limits.header_timeout, "the request body"));
        }
        if self.in_flight > 0 {
            return None;
        }
        Some(match self.head_since {
            Some(since) => (since + limits.header_timeout, "a request head"),
            None => (self.idle_since + limits.keepalive_timeout, "a request"),
        })
    }
}

/// [`State`], shared by the socket, the service and the watchdog, which
/// is told of every change that can move a deadline.
#[derive(Debug)]
struct Activity {
    state: Mutex<State>,
    changed: Notify,
    /// With an access log: the most bytes of a head kept for its line.
    capture: Option<usize>,
}

impl Activity {
    fn new(head_since: Instant, capture: Option<usize>) -> Activity {
        Activity {
            state: Mutex::new(State {
                in_flight: 0,
                idle_since: head_since,
                head_since: Some(head_since),
                blocked_since: None,
                body_since: None,
                head: Vec::new(),
            }),
            changed: Notify::new(),
            capture,
        }
    }

    /// Keeps `bytes` (read while no request is in flight) for the line of
    /// a head hyper refuses.
    fn keep(&self, s: &mut State, bytes: &[u8]) {
        if let Some(max) = self.capture
            && s.in_flight == 0
        {
            let room = max.saturating_sub(s.head.len());
            s.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `bytes` arrived.
    fn read(&self, bytes: &[u8]) {
        let mut s = self.state();
        self.keep(&mut s, bytes);
        if s.in_flight == 0 && s.head_since.is_none() {
            s.head_since = Some(Instant::now());
            drop(s);
            self.changed.notify_one();
        }
    }

    /// A write could not proceed (`blocked`) or did.
    fn write(&self, blocked: bool) {
        self.stalled(blocked, |s| &mut s.blocked_since);
    }

    /// The handler waits for body bytes (`waiting`), or got some.
    fn body(&self, waiting: bool) {
        self.stalled(waiting, |s| &mut s.body_since);
    }

    /// Starts the clock in `since` when something stalls (and wakes the
    /// watchdog), stops it when it moves.
    fn stalled(&self, stalled: bool, since: fn(&mut State) -> &mut Option<Instant>) {
        let mut s = self.state();
        let slot = since(&mut s);
        match (stalled, slot.is_some()) {
            (true, false) => {
                *slot = Some(Instant::now());
                drop(s);
                self.changed.notify_one();
            }
            (false, true) => *slot = None,
            _ => {}
        }
    }

    /// hyper has a whole head and calls the service.
    fn request_started(&self) {
        let mut s = self.state();
        s.in_flight += 1;
        s.head_since = None;
        s.head.clear();
        drop(s);
        self.changed.notify_one();
    }

    /// hyper is done with a response's body.
    fn request_done(&self) {
        let mut s = self.state();
        s.in_flight = s.in_flight.saturating_sub(1);
        s.idle_since = Instant::now();
        s.body_since = None;
        s.head.clear();
        drop(s);
        self.changed.notify_one();
    }
}

/// Marks a request answered when dropped (with the body hyper wrote).
struct Done(Arc<Activity>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.request_done();
    }
}

/// A response body that tells the watchdog when hyper is done with it.
struct Answering {
    inner: Body,
    _done: Done,
}

impl http_body::Body for Answering {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A request body that tells the watchdog while the handler waits for it.
struct Receiving {
    inner: hyper::body::Incoming,
    activity: Arc<Activity>,
}

impl http_body::Body for Receiving {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let poll = Pin::new(&mut self.inner).poll_frame(cx);
        self.activity.body(poll.is_pending());
        poll
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Receiving {
    fn drop(&mut self) {
        self.activity.body(false);
    }
}

/// A socket whose first reads return bytes already read from it, and that
/// reports reads and blocked writes to the watchdog.
struct Replay {
    read: Bytes,
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl Replay {
    fn wrote<T>(&self, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        self.activity.write(poll.is_pending());
        poll
    }
}

impl AsyncRead for Replay {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.read.is_empty() {
            let before = buf.filled().len();
            let poll = Pin::new(&mut self.stream).poll_read(cx, buf);
            if buf.filled().len() > before {
                self.activity.read(&buf.filled()[before..]);
            }
            return poll;
        }
        let n = self.read.len().min(buf.remaining());
        if self.activity.capture.is_some() {
            let mut s = self.activity.state();
            self.activity.keep(&mut s, &self.read[..n]);
        }
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
        let poll = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.wrote(poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.wrote(poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.stream).poll_flush(cx);
        self.wrote(poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn deadlines_follow_what_the_connection_does() {
        let limits = HttpLimits {
            header_timeout: Duration::from_secs(1),
            keepalive_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(3),
            ..HttpLimits::default()
        };
        let t = Instant::now();
        let mut s = State {
            in_flight: 0,
            idle_since: t,
            head_since: Some(t),
            blocked_since: None,
            body_since: None,
            head: Vec::new(),
        };
        assert_eq!(
            s.deadline(&limits),
            Some((t + limits.header_timeout, "a request head"))
        );
        s.head_since = None;
        assert_eq!(
            s.deadline(&limits),
            Some((t + limits.keepalive_timeout, "a request"))
        );
        s.in_flight = 1;
        assert_eq!(s.deadline(&limits), None);
        s.body_since = Some(t);
        assert_eq!(
            s.deadline(&limits),
            Some((t + limits.header_timeout, "the request body"))
        );
        s.blocked_since = Some(t);
        assert_eq!(
            s.deadline(&limits),
            Some((t + limits.write_timeout, "the client to take a response"))
        );
    }
}
