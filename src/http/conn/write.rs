//! Responses on the wire: the status line and header fields, framing
//! (`Content-Length`, chunked, or none for HEAD, 1xx, 204 and 304), the
//! `date` field, and writing head and body together with `writev`. Every
//! write must make progress within the write timeout (a client that reads
//! nothing is cut, as nginx's `send_timeout` does).

use std::io::{self, IoSlice, Write as _};
use std::time::Duration;

use axum::http::{StatusCode, header};
use axum::response::Response;
use http_body::Body as _;
use http_body_util::BodyExt as _;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::fast::Wire;

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
pub(super) async fn write_response(
    stream: &mut TcpStream,
    head: &mut Vec<u8>,
    response: Response,
    head_only: bool,
    close: bool,
    timeout: Duration,
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
                        timeout,
                    )
                    .await?;
                }
                _ => {
                    write_all(
                        stream,
                        &mut [IoSlice::new(pending), IoSlice::new(&data)],
                        timeout,
                    )
                    .await?;
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
                timeout,
            )
            .await
        }
        Framing::Length(n) if written != n => {
            Err(io::Error::other("response body shorter than its length"))
        }
        _ if !head_sent => write_all(stream, &mut [IoSlice::new(pending)], timeout).await,
        _ => Ok(()),
    }
}

/// Writes `wire` (head and body in one `writev`).
pub(super) async fn write_wire(
    stream: &mut TcpStream,
    head: &mut Vec<u8>,
    wire: &Wire,
    head_only: bool,
    close: bool,
    timeout: Duration,
) -> io::Result<()> {
    let body = wire_head(head, wire, head_only, close);
    write_all(
        stream,
        &mut [IoSlice::new(head), IoSlice::new(body)],
        timeout,
    )
    .await
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
pub(super) fn wire_head<'w>(
    head: &mut Vec<u8>,
    wire: &'w Wire,
    head_only: bool,
    close: bool,
) -> &'w [u8] {
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
pub(super) fn decimal(out: &mut Vec<u8>, mut n: u64) {
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

/// Writes every byte of `slices`, as few `writev`s as the socket allows;
/// fails with `TimedOut` when one of them makes no progress for `timeout`.
async fn write_all(
    stream: &mut TcpStream,
    slices: &mut [IoSlice<'_>],
    timeout: Duration,
) -> io::Result<()> {
    let mut slices = slices;
    IoSlice::advance_slices(&mut slices, 0);
    // First without a timer: a response usually fits the socket's buffer,
    // and arming a timer per response was a measurable part of a hit.
    match stream.try_write_vectored(slices) {
        Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
        Ok(n) => IoSlice::advance_slices(&mut slices, n),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    while !slices.is_empty() {
        let n = tokio::time::timeout(timeout, stream.write_vectored(slices))
            .await
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client took nothing within the write timeout",
                )
            })??;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}
