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

pub use crate::config::{AccessLogConfig as Settings, AccessLogFormat as Format};

/// One request, as logged.
#[derive(Debug, Clone)]
pub struct Line<'a> {
    /// The client.
    pub peer: Option<SocketAddr>,
    /// The method.
    pub method: &'a str,
    /// The target as sent: path and query.
    pub path: &'a str,
    /// The query (without `?`; empty when none).
    pub query: &'a str,
    /// The status sent.
    pub status: u16,
    /// Body bytes sent.
    pub bytes: u64,
    /// `Referer`.
    pub referer: Option<&'a str>,
    /// `User-Agent`.
    pub user_agent: Option<&'a str>,
    /// `X-Axle-Cache` (empty when none).
    pub cache: &'a str,
    /// Time taken.
    pub took: Duration,
}

/// Bytes of lines waiting for the writer at most (past it, lines are
/// dropped and counted).
const MAX_PENDING: usize = 8 << 20;

/// How often the writer writes what has gathered.
const WRITE_EVERY: Duration = Duration::from_millis(50);

/// The log: lines gathered in one buffer, written by one thread every
/// [`WRITE_EVERY`] (no wake-up per line: a hit pays for formatting its
/// line and one uncontended lock).
#[derive(Debug)]
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
            match self.format {
                Format::Combined => combined(&mut buf, line),
                Format::Json => json(&mut buf, line),
            }
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

/// `text` as Apache writes a logged string: `"` and `\` escaped, bytes
/// outside printable ASCII as `\xHH`.
fn escaped(out: &mut String, text: &str) {
    for b in text.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
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
    escaped(s, l.method);
    s.push(' ');
    escaped(s, l.path);
    if !l.query.is_empty() {
        s.push('?');
        escaped(s, l.query);
    }
    let _ = write!(s, " HTTP/1.1\" {} ", l.status);
    if l.bytes == 0 {
        s.push('-');
    } else {
        let _ = write!(s, "{}", l.bytes);
    }
    for field in [l.referer, l.user_agent] {
        s.push_str(" \"");
        match field {
            Some(v) => escaped(s, v),
            None => s.push('-'),
        }
        s.push('"');
    }
    s.push_str(" \"");
    escaped(s, if l.cache.is_empty() { "-" } else { l.cache });
    let _ = writeln!(s, "\" {}", l.took.as_micros());
}

/// A JSON line, appended to `out`.
fn json(out: &mut String, l: &Line<'_>) {
    #[derive(serde::Serialize)]
    struct J<'a> {
        time: String,
        client: Option<String>,
        method: &'a str,
        path: &'a str,
        query: &'a str,
        status: u16,
        bytes: u64,
        referer: Option<&'a str>,
        user_agent: Option<&'a str>,
        cache: &'a str,
        micros: u128,
    }
    let j = J {
        time: httpdate::fmt_http_date(SystemTime::now()),
        client: l.peer.map(|p| p.ip().to_string()),
        method: l.method,
        path: l.path,
        query: l.query,
        status: l.status,
        bytes: l.bytes,
        referer: l.referer,
        user_agent: l.user_agent,
        cache: l.cache,
        micros: l.took.as_micros(),
    };
    if let Ok(text) = serde_json::to_string(&j) {
        out.push_str(&text);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line() -> Line<'static> {
        Line {
            peer: Some("127.0.0.1:5000".parse().unwrap()),
            method: "GET",
            path: "/a b\".xml",
            query: "style=print",
            status: 200,
            bytes: 1234,
            referer: None,
            user_agent: Some("curl/8 \u{e9}"),
            cache: "hit; tier=disk",
            took: Duration::from_micros(42),
        }
    }

    #[test]
    fn combined_lines_are_apaches_with_the_cache_and_time_after() {
        let mut text = String::new();
        combined(&mut text, &line());
        let re = regex::Regex::new(
            r#"^127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000\] "GET /a b\\"\.xml\?style=print HTTP/1\.1" 200 1234 "-" "curl/8 \\xc3\\xa9" "hit; tier=disk" 42\n$"#,
        )
        .unwrap();
        assert!(re.is_match(&text), "{text}");
    }

    #[test]
    fn json_lines_parse() {
        let mut text = String::new();
        json(&mut text, &line());
        let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(v["status"], 200);
        assert_eq!(v["cache"], "hit; tier=disk");
        assert_eq!(v["micros"], 42);
        assert_eq!(v["client"], "127.0.0.1");
        assert_eq!(v["path"], "/a b\".xml");
    }
}
