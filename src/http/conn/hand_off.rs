//! The hand-over to hyper: a connection this loop does not serve (a
//! request body, HTTP/1.0, an upgrade, an unparsable or oversized head) is
//! served by hyper for the rest of its life, replaying the bytes already
//! read, and shut down gracefully with the server.

use std::io::{self, IoSlice};
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tower::ServiceExt;

use super::{HttpService, stopping};

/// Serves the rest of the connection with hyper, replaying `read` (the
/// bytes this loop read and did not answer) first.
pub(super) async fn hand_off<S>(
    stream: TcpStream,
    read: Bytes,
    service: S,
    stopped: watch::Receiver<bool>,
) where
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
