//! One FastCGI request over one connection, blocking, every read and
//! write bounded by the request's deadline. A connection made with
//! `keep_conn` stays open for the next request (a spawned worker's
//! connection is reused; an external server gets a connection per
//! request).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::record::{self, End, RecordError, ResponseDecoder};

/// Where a FastCGI server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A TCP address (`127.0.0.1:9000`).
    Tcp(SocketAddr),
    /// A Unix socket path (`unix:/run/php/fpm.sock`).
    Unix(PathBuf),
}

impl Address {
    /// Parses `host:port` (an IP address) or `unix:/path`.
    pub fn parse(text: &str) -> Result<Address, String> {
        if let Some(path) = text.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("\"unix:\" needs a socket path after it".into());
            }
            return Ok(Address::Unix(PathBuf::from(path)));
        }
        text.parse::<SocketAddr>().map(Address::Tcp).map_err(|_| {
            format!(
                "{text:?} is not an IP address with a port (\"127.0.0.1:9000\") or \"unix:/path\""
            )
        })
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Tcp(a) => write!(f, "{a}"),
            Address::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// Why a FastCGI request gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FcgiError {
    /// No connection could be made.
    #[error("cannot be reached at {0}")]
    Connect(String),
    /// Reading or writing failed, or the server closed the connection
    /// before its END_REQUEST.
    #[error("failed while answering: {0}")]
    Io(String),
    /// The deadline passed.
    #[error("did not answer within {}", crate::exec::show_duration(*.0))]
    Timeout(Duration),
    /// The answer broke the protocol or a limit.
    #[error("sent a broken answer: {0}")]
    Protocol(#[from] RecordError),
    /// END_REQUEST said the request was not served (overloaded, …).
    #[error("refused the request (protocol status {0})")]
    Refused(u8),
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn set_timeouts(&self, t: Duration) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
            Stream::Unix(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What an application answered to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Its STDOUT (a CGI response: headers, empty line, body).
    pub stdout: Vec<u8>,
    /// Its STDERR, cut at the limit given.
    pub stderr: Vec<u8>,
    /// Its END_REQUEST.
    pub end: End,
}

/// A connection to a FastCGI server.
pub struct Connection {
    stream: Stream,
    /// Requests sent on it so far.
    pub requests: u64,
    /// The read buffer, kept for the connection's life.
    buf: Vec<u8>,
    /// The read and write timeouts the socket has now.
    armed: Option<Duration>,
}

/// How far a socket's timeout may be from the time left before it is set
/// again: a blocked read or write may end this much before or after the
/// deadline, and a connection whose requests each take far less than this
/// never pays a `setsockopt` (two or more per read and per write when
/// armed before each).
const ARM_SLACK: Duration = Duration::from_millis(5);

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("requests", &self.requests)
            .finish()
    }
}

/// The time left before `deadline`, or the timeout error.
fn left(deadline: Instant, timeout: Duration) -> Result<Duration, FcgiError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(FcgiError::Timeout(timeout));
    }
    Ok(left)
}

fn io_error(e: std::io::Error, timeout: Duration) -> FcgiError {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => FcgiError::Timeout(timeout),
        _ => FcgiError::Io(e.to_string()),
    }
}

impl Connection {
    /// Connects to `address` before `deadline` (`timeout` is named in the
    /// error past it).
    pub fn connect(
        address: &Address,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Connection, FcgiError> {
        let wait = left(deadline, timeout)?;
        let stream = match address {
            Address::Tcp(a) => TcpStream::connect_timeout(a, wait)
                .map(|s| {
                    let _ = s.set_nodelay(true);
                    Stream::Tcp(s)
                })
                .map_err(|e| FcgiError::Connect(format!("{address}: {e}")))?,
            Address::Unix(p) => UnixStream::connect(p)
                .map(Stream::Unix)
                .map_err(|e| FcgiError::Connect(format!("{address}: {e}")))?,
        };
        Ok(Connection {
            stream,
            requests: 0,
            buf: vec![0; 64 * 1024],
            armed: None,
        })
    }

    /// Gives the socket's reads and writes `left` to wait (when they have
    /// that within [`ARM_SLACK`]: no system call).
    fn arm(&mut self, left: Duration) -> Result<(), FcgiError> {
        if let Some(armed) = self.armed
            && armed.abs_diff(left) <= ARM_SLACK
        {
            return Ok(());
        }
        self.stream
            .set_timeouts(left)
            .map_err(|e| FcgiError::Io(e.to_string()))?;
        self.armed = Some(left);
        Ok(())
    }

    /// Sends one responder request (`params`: the PARAMS stream's content,
    /// [`record::encode_pairs`]; `stdin`: the body) and reads its answer,
    /// keeping at most `max_stdout` bytes of STDOUT and `max_stderr` of
    /// STDERR, all before `deadline`. With `keep_conn` the server is asked
    /// to keep the connection open for the next request.
    #[allow(clippy::too_many_arguments)]
    pub fn request(
        &mut self,
        params: &[u8],
        stdin: &[u8],
        keep_conn: bool,
        deadline: Instant,
        timeout: Duration,
        max_stdout: u64,
        max_stderr: usize,
    ) -> Result<Answer, FcgiError> {
        self.requests += 1;
        let id = 1;
        let bytes = record::encode_request(id, params, stdin, keep_conn);
        let mut written = 0;
        while written < bytes.len() {
            self.arm(left(deadline, timeout)?)?;
            match self.stream.write(&bytes[written..]) {
                Ok(0) => return Err(FcgiError::Io("the connection was closed".into())),
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(e, timeout)),
            }
        }
        let mut decoder = ResponseDecoder::new(id, max_stdout, max_stderr);
        loop {
            self.arm(left(deadline, timeout)?)?;
            let n = match self.stream.read(&mut self.buf) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(e, timeout)),
            };
            if n == 0 {
                return match decoder.finish() {
                    Ok(end) => answer(decoder, end),
                    Err(RecordError::Truncated(_)) => Err(FcgiError::Io(
                        "the connection was closed before the answer ended".into(),
                    )),
                    Err(e) => Err(e.into()),
                };
            }
            if let Some(end) = decoder.push(&self.buf[..n])? {
                return answer(decoder, end);
            }
        }
    }
}

fn answer(decoder: ResponseDecoder, end: End) -> Result<Answer, FcgiError> {
    if end.protocol_status != 0 {
        return Err(FcgiError::Refused(end.protocol_status));
    }
    Ok(Answer {
        stdout: decoder.stdout,
        stderr: decoder.stderr,
        end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_as_tcp_or_unix() {
        assert_eq!(
            Address::parse("127.0.0.1:9000").unwrap(),
            Address::Tcp("127.0.0.1:9000".parse().unwrap())
        );
        assert_eq!(
            Address::parse("unix:/run/a.sock").unwrap(),
            Address::Unix("/run/a.sock".into())
        );
        assert!(Address::parse("localhost:9000").is_err());
        assert!(Address::parse("unix:").is_err());
        assert_eq!(Address::parse("unix:/x").unwrap().to_string(), "unix:/x");
    }
}
