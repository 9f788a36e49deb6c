//! The client side of the admin listener, for `axle cache stats` and
//! `axle cache purge`: one HTTP/1.1 request over a fresh connection, the
//! answer's status and body. Tiny on purpose: it talks only to Axle's own
//! admin listener, on an address the operator names. It sends `Host:
//! HOST:PORT` (as the operator wrote it, `127.0.0.1:PORT` for a bare
//! port: what the admin answers when it is one of its names) and
//! `X-Axle-Admin: 1`, the header a state-changing admin request must carry
//! (`guard`).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long the whole exchange may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The most a response may hold (stats are a few kilobytes).
const MAX_RESPONSE: usize = 16 << 20;

/// Sends `METHOD path` to the admin listener at `admin` (any of the forms
/// of [`crate::config::Address`]; a host name is resolved here, each of
/// its addresses tried) and returns the status and body, or a message
/// saying what went wrong.
pub async fn request(
    admin: &crate::config::Address,
    method: &str,
    path: &str,
) -> Result<(u16, String), String> {
    let addr = admin.authority();
    let addr = addr.as_str();
    tokio::time::timeout(TIMEOUT, exchange(addr, method, path))
        .await
        .map_err(|_| format!("the admin listener at {addr} did not answer within {TIMEOUT:?}"))?
}

async fn exchange(addr: &str, method: &str, path: &str) -> Result<(u16, String), String> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot reach the admin listener at {addr}: {e} (is the server running with --admin {addr}?)"))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\n{}: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        super::ADMIN_HEADER
    );
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| format!("cannot send to {addr}: {e}"))?;
    let mut raw = Vec::new();
    (&mut stream)
        .take(MAX_RESPONSE as u64 + 1)
        .read_to_end(&mut raw)
        .await
        .map_err(|e| format!("cannot read the answer from {addr}: {e}"))?;
    if raw.len() > MAX_RESPONSE {
        return Err(format!(
            "the answer from {addr} is larger than {MAX_RESPONSE} bytes"
        ));
    }
    parse(&raw).ok_or_else(|| format!("{addr} did not answer in HTTP/1.1"))
}

/// Status and body of a whole response (`Content-Length` framed, or read
/// to the end of the connection).
fn parse(raw: &[u8]) -> Option<(u16, String)> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let httparse::Status::Complete(end) = response.parse(raw).ok()? else {
        return None;
    };
    let status = response.code?;
    let length = response
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| {
            std::str::from_utf8(h.value)
                .ok()?
                .trim()
                .parse::<usize>()
                .ok()
        });
    let body = &raw[end..];
    let body = match length {
        Some(n) => body.get(..n)?,
        None => body,
    };
    Some((status, String::from_utf8_lossy(body).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_parse_by_length_or_to_the_end() {
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}extra";
        assert_eq!(parse(raw), Some((200, "{}".into())));
        let raw = b"HTTP/1.1 400 Bad Request\r\n\r\nwhy";
        assert_eq!(parse(raw), Some((400, "why".into())));
        assert_eq!(parse(b"HTTP/1.1 200"), None);
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nshort"),
            None
        );
    }
}
