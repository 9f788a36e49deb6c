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
//!
//! Layout: this file has the accept loop, the per-connection loop and
//! shutdown; `fast` the fast path's interface ([`Head`], [`Fast`],
//! [`Wire`]); `parse` request heads; `write` response framing and
//! writing; `hand_off` the hand-over to hyper.

mod fast;
mod hand_off;
mod parse;
mod write;

pub use fast::{Fast, FastMissed, Head, Headers, Wire};

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::time::Duration;

use axum::extract::Request;
use axum::http::Method;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tower::{Service, ServiceExt};

use hand_off::hand_off;
use parse::{Parsed, parse};
use write::{wire_head, write_response, write_wire};

/// Most header fields a request may have here; more go to hyper (which
/// answers 431 above its own limit).
pub(super) const MAX_HEADERS: usize = 64;

/// Largest request head read here; a longer one goes to hyper.
const MAX_HEAD: usize = 64 * 1024;

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
    match parse(&mut unread, fast) {
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
