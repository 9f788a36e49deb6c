//! The access log (`--access-log FILE|-`, off by default): one line per
//! request in Apache's combined format (as AxKit's sites logged) followed
//! by what the cache did and the time taken (Apache's
//! `%{X-Axle-Cache}o %D`), or JSON lines. Lines are formatted on the
//! thread that answered and written by one writer thread behind a bounded
//! queue, so a hit never waits for the disk; a full queue drops the line
//! (counted, reported once a minute at most).

use std::cell::RefCell;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderValue, Method, Uri, Version, header};
use axum::response::Response;

pub use crate::config::{AccessLogConfig as Settings, AccessLogFormat as Format};

/// One request, as logged.
#[derive(Debug, Clone)]
pub struct Line<'a> {
    /// The client.
    pub peer: Option<SocketAddr>,
    /// The request line.
    pub request: Request<'a>,
    /// The status sent.
    pub status: u16,
    /// Body bytes sent.
    pub bytes: u64,
    /// `Referer`, its bytes as sent.
    pub referer: Option<&'a [u8]>,
    /// `User-Agent`, its bytes as sent.
    pub user_agent: Option<&'a [u8]>,
    /// `X-Axle-Cache` (empty when none).
    pub cache: &'a str,
    /// Time taken.
    pub took: Duration,
}

/// A logged request line.
#[derive(Debug, Clone, Copy)]
pub enum Request<'a> {
    /// A parsed request: its method, path, query (without `?`; empty when
    /// none) and protocol version as the client sent them.
    Parsed {
        /// The method.
        method: &'a str,
        /// The path as sent.
        path: &'a str,
        /// The query without its `?`.
        query: &'a str,
        /// The protocol version.
        version: Version,
    },
    /// A request refused before it was parsed: its request line's bytes as
    /// sent (before the line break), None when there is none to show.
    Raw(Option<&'a [u8]>),
}

/// The most bytes of a request target (or of a raw request line) logged;
/// past it the text is cut and `...` follows. A 414's target can be as
/// long as the head may be (`max-header-size`).
pub const MAX_LOGGED_TARGET: usize = 8 << 10;

/// The most bytes of a refused request's head searched for its
/// `Referer` and `User-Agent`.
const MAX_SCANNED_HEAD: usize = 64 << 10;

/// Bytes of lines waiting for the writer at most (past it, lines are
/// dropped and counted).
const MAX_PENDING: usize = 8 << 20;

/// How often the writer writes what has gathered.
const WRITE_EVERY: Duration = Duration::from_millis(50);

/// The log: lines gathered in one buffer, written by one thread every
/// [`WRITE_EVERY`] (no wake-up per line: a hit pays for formatting its
/// line and one uncontended lock).
#[derive(Debug, Clone)]
pub struct AccessLog {
    format: Format,
    shared: Arc<Shared>,
}

struct Shared {
    pending: Mutex<Vec<u8>>,
    out: Mutex<Box<dyn std::io::Write + Send>>,
    dropped: AtomicU64,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Shared {
    /// Writes what has gathered.
    fn write_pending(&self) {
        let lines = match self.pending.lock() {
            Ok(mut p) => std::mem::take(&mut *p),
            Err(_) => return,
        };
        if lines.is_empty() {
            return;
        }
        if let Ok(mut out) = self.out.lock()
            && out.write_all(&lines).and_then(|()| out.flush()).is_err()
        {
            tracing::error!("the access log cannot be written; lines are lost");
        }
    }
}

impl AccessLog {
    /// Opens the log (the file is created or appended to now, so a path
    /// that cannot be written stops the server at start).
    pub fn open(settings: &Settings) -> std::io::Result<AccessLog> {
        let out: Box<dyn std::io::Write + Send> = match settings.path.to_str() {
            Some("-") => Box::new(std::io::stdout()),
            _ => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&settings.path)
                    .map_err(|e| {
                        std::io::Error::new(
                            e.kind(),
                            format!("cannot open --access-log {}: {e}", settings.path.display()),
                        )
                    })?,
            ),
        };
        let shared = Arc::new(Shared {
            pending: Mutex::new(Vec::with_capacity(64 << 10)),
            out: Mutex::new(out),
            dropped: AtomicU64::new(0),
        });
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("axle-access-log".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(WRITE_EVERY);
                    let Some(shared) = weak.upgrade() else { return };
                    shared.write_pending();
                }
            })?;
        Ok(AccessLog {
            format: settings.format,
            shared,
        })
    }

    /// Logs `line` (dropped, and counted, when the writer is behind by
    /// [`MAX_PENDING`] bytes).
    pub fn log(&self, line: &Line<'_>) {
        LINE.with(|buf| {
            let Ok(mut buf) = buf.try_borrow_mut() else {
                return;
            };
            buf.clear();
            format_line(&mut buf, self.format, line);
            let Ok(mut pending) = self.shared.pending.lock() else {
                return;
            };
            if pending.len() + buf.len() > MAX_PENDING {
                drop(pending);
                let n = self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                if n.is_power_of_two() {
                    tracing::warn!(
                        dropped = n + 1,
                        "the access log's writer is behind: lines dropped"
                    );
                }
                return;
            }
            pending.extend_from_slice(buf.as_bytes());
        });
    }

    /// Writes every line gathered so far (at shutdown).
    pub fn flush(&self) {
        self.shared.write_pending();
    }

    /// Logs a request refused before it was parsed (by the connection
    /// loop, or by hyper after a hand-off): `head` is the bytes read of it
    /// (its request line, and its `Referer` and `User-Agent` when they are
    /// among them), `bytes` the body sent.
    pub fn log_raw(
        &self,
        peer: Option<SocketAddr>,
        head: &[u8],
        status: u16,
        bytes: u64,
        took: Duration,
    ) {
        let (line, referer, user_agent) = raw_head(head);
        self.log(&Line {
            peer,
            request: Request::Raw(line),
            status,
            bytes,
            referer,
            user_agent,
            cache: "",
            took,
        });
    }
}

/// `line` as `format` writes it, appended to `out`.
fn format_line(out: &mut String, format: Format, line: &Line<'_>) {
    match format {
        Format::Combined => combined(out, line),
        Format::Json => json(out, line),
    }
}

/// The line `format` writes for a request refused with `head` (its bytes
/// as read), as [`AccessLog::log_raw`] writes it: for the `access_log`
/// fuzz target (`fuzz/`); not an API.
#[doc(hidden)]
pub fn raw_line(format: Format, head: &[u8], status: u16) -> String {
    let (line, referer, user_agent) = raw_head(head);
    let mut out = String::new();
    format_line(
        &mut out,
        format,
        &Line {
            peer: None,
            request: Request::Raw(line),
            status,
            bytes: 0,
            referer,
            user_agent,
            cache: "",
            took: Duration::ZERO,
        },
    );
    out
}

/// What the access log needs of a request that reached a service, taken
/// before the request is consumed (only when there is a log).
#[derive(Debug)]
pub struct Pending {
    peer: Option<SocketAddr>,
    method: Method,
    uri: Uri,
    version: Version,
    referer: Option<HeaderValue>,
    user_agent: Option<HeaderValue>,
}

impl Pending {
    /// What `request` says (its `Peer` extension is the client).
    pub fn of<B>(request: &http::Request<B>) -> Pending {
        let h = request.headers();
        Pending {
            peer: request.extensions().get::<super::conn::Peer>().map(|p| p.0),
            method: request.method().clone(),
            uri: request.uri().clone(),
            version: request.version(),
            referer: h.get(header::REFERER).cloned(),
            user_agent: h.get(header::USER_AGENT).cloned(),
        }
    }

    /// Logs the answer `response` to it, `took` after it started.
    pub fn log(&self, log: &AccessLog, response: &Response, took: Duration) {
        let cache = response
            .headers()
            .get(super::document::CACHE_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let bytes = http_body::Body::size_hint(response.body())
            .exact()
            .unwrap_or(0);
        log.log(&Line {
            peer: self.peer,
            request: Request::Parsed {
                method: self.method.as_str(),
                path: self.uri.path(),
                query: self.uri.query().unwrap_or(""),
                version: self.version,
            },
            status: response.status().as_u16(),
            bytes: if self.method == Method::HEAD {
                0
            } else {
                bytes
            },
            referer: self.referer.as_ref().map(HeaderValue::as_bytes),
            user_agent: self.user_agent.as_ref().map(HeaderValue::as_bytes),
            cache,
            took,
        });
    }
}

/// A raw head's request line, `Referer` and `User-Agent`.
type RawHead<'a> = (Option<&'a [u8]>, Option<&'a [u8]>, Option<&'a [u8]>);

/// The request line of a raw head (up to its first line break, None when
/// it has no byte), and its first `Referer` and `User-Agent` fields among
/// the first [`MAX_SCANNED_HEAD`] bytes.
fn raw_head(head: &[u8]) -> RawHead<'_> {
    let head = &head[..head.len().min(MAX_SCANNED_HEAD)];
    let mut lines = head
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let line = lines.next().filter(|l| !l.is_empty());
    let (mut referer, mut user_agent) = (None, None);
    for l in lines {
        if l.is_empty() {
            break;
        }
        let Some(colon) = l.iter().position(|b| *b == b':') else {
            continue;
        };
        let (name, value) = (&l[..colon], l[colon + 1..].trim_ascii());
        if referer.is_none() && name.eq_ignore_ascii_case(b"referer") {
            referer = Some(value);
        } else if user_agent.is_none() && name.eq_ignore_ascii_case(b"user-agent") {
            user_agent = Some(value);
        }
    }
    (line, referer, user_agent)
}

/// A protocol version as a request line has it.
fn protocol(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_11 => "HTTP/1.1",
        Version::HTTP_2 => "HTTP/2.0",
        Version::HTTP_3 => "HTTP/3.0",
        _ => "-",
    }
}

thread_local! {
    /// The line being formatted, reused.
    static LINE: RefCell<String> = const { RefCell::new(String::new()) };
}

thread_local! {
    /// The second last formatted and its text, per thread (a date is
    /// formatted once a second, not per line).
    static NOW: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// Appends now as Apache's `%t` has it (`02/Dec/2026:17:49:40 +0000`).
fn push_now(out: &mut String) {
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    NOW.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.0 != secs {
            // "Wed, 02 Dec 2026 17:49:40 GMT" → "02/Dec/2026:17:49:40 +0000"
            let http = httpdate::fmt_http_date(now);
            let p: Vec<&str> = http.split(' ').collect();
            cell.1 = match p.as_slice() {
                [_, day, month, year, time, _] => format!("{day}/{month}/{year}:{time} +0000"),
                _ => http.clone(),
            };
            cell.0 = secs;
        }
        out.push_str(&cell.1);
    })
}

/// `text` as nginx writes a logged string: printable ASCII as it is,
/// `"`, `\` and every byte outside printable ASCII as `\xHH`; so a line
/// is always ASCII, and the text a consumer reads back is unambiguous
/// (every `\x` in it is an escape).
fn escaped(out: &mut String, text: &[u8]) {
    escaped_with(out, text, "\\x");
}

/// The same text inside a JSON string, whose own escaping doubles each
/// backslash (a JSON parser reads back exactly the combined format's text).
fn escaped_json(out: &mut String, text: &[u8]) {
    escaped_with(out, text, "\\\\x");
}

fn escaped_with(out: &mut String, text: &[u8], esc: &str) {
    for &b in text {
        match b {
            b'"' | b'\\' => {}
            0x20..=0x7e => {
                out.push(char::from(b));
                continue;
            }
            _ => {}
        }
        out.push_str(esc);
        let _ = write!(out, "{b:02X}");
    }
}

/// `text` escaped by `escape`, cut at [`MAX_LOGGED_TARGET`] bytes (then
/// `...`).
fn escaped_cut(out: &mut String, text: &[u8], escape: fn(&mut String, &[u8])) {
    if text.len() > MAX_LOGGED_TARGET {
        escape(out, &text[..MAX_LOGGED_TARGET]);
        out.push_str("...");
    } else {
        escape(out, text);
    }
}

/// The request line as logged (`%r`), without quotes.
fn request_line(s: &mut String, r: &Request<'_>, escape: fn(&mut String, &[u8])) {
    match *r {
        Request::Parsed {
            method,
            path,
            query,
            version,
        } => {
            escape(s, method.as_bytes());
            s.push(' ');
            if query.is_empty() {
                escaped_cut(s, path.as_bytes(), escape);
            } else if path.len() + 1 + query.len() > MAX_LOGGED_TARGET {
                let mut target = Vec::with_capacity(MAX_LOGGED_TARGET + 1);
                target.extend_from_slice(path.as_bytes());
                target.push(b'?');
                target.extend_from_slice(query.as_bytes());
                escaped_cut(s, &target, escape);
            } else {
                escape(s, path.as_bytes());
                s.push('?');
                escape(s, query.as_bytes());
            }
            s.push(' ');
            s.push_str(protocol(version));
        }
        Request::Raw(Some(line)) => escaped_cut(s, line, escape),
        Request::Raw(None) => s.push('-'),
    }
}

/// A combined-format line, then `"CACHE" MICROSECONDS`, appended to `s`.
fn combined(s: &mut String, l: &Line<'_>) {
    match l.peer {
        Some(p) => {
            let _ = write!(s, "{}", p.ip());
        }
        None => s.push('-'),
    }
    s.push_str(" - - [");
    push_now(s);
    s.push_str("] \"");
    request_line(s, &l.request, escaped);
    let _ = write!(s, "\" {} ", l.status);
    if l.bytes == 0 {
        s.push('-');
    } else {
        let _ = write!(s, "{}", l.bytes);
    }
    for field in [l.referer, l.user_agent] {
        s.push_str(" \"");
        match field {
            Some(v) => escaped_cut(s, v, escaped),
            None => s.push('-'),
        }
        s.push('"');
    }
    s.push_str(" \"");
    escaped(
        s,
        if l.cache.is_empty() {
            b"-"
        } else {
            l.cache.as_bytes()
        },
    );
    let _ = writeln!(s, "\" {}", l.took.as_micros());
}

/// Appends `,"key":` and `value` as a JSON string of its escaped text,
/// or `null`.
fn json_field(out: &mut String, key: &str, value: Option<&[u8]>, cut: bool) {
    let _ = write!(out, ",\"{key}\":");
    match value {
        Some(v) => {
            out.push('"');
            if cut {
                escaped_cut(out, v, escaped_json);
            } else {
                escaped_json(out, v);
            }
            out.push('"');
        }
        None => out.push_str("null"),
    }
}

/// A JSON line, appended to `out`: the same escaped text as the combined
/// format in every string that comes from the client, so the file is
/// ASCII and valid JSON whatever was sent.
fn json(out: &mut String, l: &Line<'_>) {
    out.push_str("{\"time\":\"");
    out.push_str(&httpdate::fmt_http_date(SystemTime::now()));
    out.push('"');
    let client = l.peer.map(|p| p.ip().to_string());
    json_field(out, "client", client.as_deref().map(str::as_bytes), false);
    out.push_str(",\"request\":\"");
    request_line(out, &l.request, escaped_json);
    out.push('"');
    // The line's parts: a parsed request's, or a raw line's three
    // space-separated tokens when it has them.
    let (method, path, query, proto) = match l.request {
        Request::Parsed {
            method,
            path,
            query,
            version,
        } => (
            Some(method.as_bytes()),
            Some(path.as_bytes()),
            Some(query.as_bytes()),
            Some(protocol(version).as_bytes()),
        ),
        Request::Raw(Some(raw)) => {
            let parts: Vec<&[u8]> = raw.split(|b| *b == b' ').collect();
            match parts.as_slice() {
                [m, t, p] if p.starts_with(b"HTTP/") => {
                    let (path, query) = match t.iter().position(|b| *b == b'?') {
                        Some(i) => (&t[..i], &t[i + 1..]),
                        None => (*t, &b""[..]),
                    };
                    (Some(*m), Some(path), Some(query), Some(*p))
                }
                _ => (None, None, None, None),
            }
        }
        Request::Raw(None) => (None, None, None, None),
    };
    json_field(out, "method", method, true);
    json_field(out, "path", path, true);
    json_field(out, "query", query, true);
    json_field(out, "protocol", proto, true);
    let _ = write!(out, ",\"status\":{},\"bytes\":{}", l.status, l.bytes);
    json_field(out, "referer", l.referer, true);
    json_field(out, "user_agent", l.user_agent, true);
    json_field(out, "cache", Some(l.cache.as_bytes()), false);
    let _ = writeln!(out, ",\"micros\":{}}}", l.took.as_micros());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line() -> Line<'static> {
        Line {
            peer: Some("127.0.0.1:5000".parse().unwrap()),
            request: Request::Parsed {
                method: "GET",
                path: "/a b\".xml",
                query: "style=print",
                version: Version::HTTP_11,
            },
            status: 200,
            bytes: 1234,
            referer: None,
            user_agent: Some("curl/8 \u{e9} \"q\" \\ \u{1}".as_bytes()),
            cache: "hit; tier=disk",
            took: Duration::from_micros(42),
        }
    }

    #[test]
    fn combined_lines_are_nginxs_with_the_cache_and_time_after() {
        let mut text = String::new();
        combined(&mut text, &line());
        let re = regex::Regex::new(
            r#"^127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000\] "GET /a b\\x22\.xml\?style=print HTTP/1\.1" 200 1234 "-" "curl/8 \\xC3\\xA9 \\x22q\\x22 \\x5C \\x01" "hit; tier=disk" 42\n$"#,
        )
        .unwrap();
        assert!(re.is_match(&text), "{text}");
        assert!(text.is_ascii());
    }

    #[test]
    fn json_lines_parse_to_the_same_escaped_text() {
        let mut text = String::new();
        json(&mut text, &line());
        assert!(text.is_ascii());
        let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(v["status"], 200);
        assert_eq!(v["cache"], "hit; tier=disk");
        assert_eq!(v["micros"], 42);
        assert_eq!(v["client"], "127.0.0.1");
        assert_eq!(v["path"], "/a b\\x22.xml");
        assert_eq!(v["protocol"], "HTTP/1.1");
        assert_eq!(v["request"], "GET /a b\\x22.xml?style=print HTTP/1.1");
        assert_eq!(v["user_agent"], "curl/8 \\xC3\\xA9 \\x22q\\x22 \\x5C \\x01");
        assert_eq!(v["referer"], serde_json::Value::Null);
        // Bytes that are not UTF-8 at all.
        let bytes: Vec<u8> = (0x80..=0xff).collect();
        let mut raw = line();
        raw.user_agent = Some(&bytes);
        raw.request = Request::Raw(Some(b"GET /\xff HTTP/1.0"));
        let mut text = String::new();
        json(&mut text, &raw);
        let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        let ua = v["user_agent"].as_str().unwrap();
        assert!(
            ua.starts_with("\\x80\\x81") && ua.ends_with("\\xFE\\xFF"),
            "{ua}"
        );
        assert_eq!(v["request"], "GET /\\xFF HTTP/1.0");
        assert_eq!(v["protocol"], "HTTP/1.0");
        assert_eq!(v["method"], "GET");
    }

    #[test]
    fn versions_and_raw_lines() {
        let mut l = line();
        l.request = Request::Parsed {
            method: "GET",
            path: "/",
            query: "",
            version: Version::HTTP_10,
        };
        let mut text = String::new();
        combined(&mut text, &l);
        assert!(text.contains("\"GET / HTTP/1.0\""), "{text}");
        l.request = Request::Raw(None);
        text.clear();
        combined(&mut text, &l);
        assert!(text.contains("] \"-\" 200"), "{text}");
        // A long target is cut.
        let long = format!("GET /{} HTTP/1.1", "a".repeat(20_000));
        l.request = Request::Raw(Some(long.as_bytes()));
        text.clear();
        combined(&mut text, &l);
        assert!(
            text.contains(&format!(
                "\"GET /{}...\"",
                "a".repeat(MAX_LOGGED_TARGET - 5)
            )),
            "{}",
            text.len()
        );
        assert!(text.len() < MAX_LOGGED_TARGET + 200);
    }

    #[test]
    fn raw_heads_give_their_line_and_fields() {
        let head =
            b"GET /x\xff HTTP/1.1\r\nHost: a\r\nuser-agent: ua \xe9\r\nReferer: r\r\n\r\nBODY";
        assert_eq!(
            raw_head(head),
            (
                Some(&b"GET /x\xff HTTP/1.1"[..]),
                Some(&b"r"[..]),
                Some(&b"ua \xe9"[..])
            )
        );
        assert_eq!(raw_head(b""), (None, None, None));
        assert_eq!(raw_head(b"\r\n"), (None, None, None));
        // A line with no end yet (a head cut by its size limit).
        assert_eq!(
            raw_head(b"GET /aaaa"),
            (Some(&b"GET /aaaa"[..]), None, None)
        );
    }
}
