//! The HTTP client behind the `upstream` source provider (issue #24): a
//! source fetched from one configured backend, never from anywhere a
//! client could name.
//!
//! It exists apart from the providers and the server so that what can be
//! contacted is decided in one small place: [`Upstream::new`] parses the
//! URL template when the configuration loads and fixes the scheme (`http`
//! only: there is no TLS client), the host and the port. At request time
//! only the path and query put into the template vary, and
//! [`Upstream::fetch`] refuses (`BadPath`) every path that could name
//! another authority or climb out of the template's prefix, then checks
//! the URL it built still names the configured authority. A name is
//! resolved when a fetch connects; an IP literal is connected to as is.
//!
//! One fetch is one `GET` over HTTP/1.1 keep-alive (hyper 1's client over
//! a `tokio` socket): a connection whose last answer was read whole is kept
//! in a small idle pool ([`IDLE_CONNECTIONS`]) and used again (a new
//! connection per fetch was a third of an upstream hit's CPU: connect and
//! shutdown); a connection that answered `Connection: close`, failed, or
//! whose fetch was dropped or cut short is never reused. A reused
//! connection the upstream closed meanwhile is retried once on a new one
//! (a `GET` is safe to repeat). The
//! request carries `Host` (the configured authority), `User-Agent:
//! axle/<version>`, `Accept-Encoding: identity` (a body is taken as it
//! comes, never decompressed; an encoded one is refused), the configured
//! forwarded headers (never hop-by-hop ones, nor one the client's
//! `Connection` header names) and `If-None-Match` when revalidating.
//!
//! Limits: `timeout` bounds the whole fetch (connecting, redirects, the
//! head and the last byte of the body: a body trickled slower than that is
//! a timeout), `connect_timeout` each connect within it; a body over
//! `max_size` is refused by its `Content-Length` before it is read, or
//! cut at the limit when streamed. Redirects (301, 302, 303, 307, 308) are
//! followed only to the same scheme, host and port, at most
//! `max_redirects` times.
//!
//! Reuse (`memo.rs`): an answer with an `ETag` or a `max-age` is
//! remembered, keyed by its URL and the forwarded headers, in a memo
//! bounded in bytes; within its max-age it is answered from memory
//! ([`Freshness::Fresh`]), past it revalidated with `If-None-Match`
//! ([`Freshness::Revalidated`] on a 304). Concurrent misses of one key are
//! not coalesced: each fetches.
//!
//! Errors map to statuses once, in [`UpstreamError::status`]; their
//! messages never hold the upstream's body or address (they may reach a
//! client): the address is in the `tracing` events.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{
    ACCEPT_ENCODING, CONNECTION, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, ETAG, HOST,
    IF_NONE_MATCH, LOCATION, USER_AGENT, VIA,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::time::Instant;

mod memo;
mod target;
#[cfg(test)]
mod tests;

use memo::{Memo, Policy, Remembered};
use target::{Host, Target};

/// The whole-fetch deadline when none is configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest default connect timeout (the default is the least of this
/// and the whole-fetch deadline).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest body accepted by default: 16 MiB.
pub const DEFAULT_MAX_SIZE: u64 = 16 << 20;
/// Redirects followed by default.
pub const DEFAULT_MAX_REDIRECTS: usize = 3;
/// The memo's default budget: 64 MiB.
pub const DEFAULT_MEMO_SIZE: u64 = 64 << 20;
/// Axle upstream hops a request may already have made by default.
pub const DEFAULT_MAX_HOPS: u32 = 4;
/// The received-by name Axle adds to `Via` on every upstream request, and
/// counts in the request it is fetching for.
const VIA_NAME: &str = "axle";

/// Request headers never forwarded: hop-by-hop ones, and the ones this
/// client sets itself (the connection, the encoding, conditional and range
/// requests, which would break the memo).
const NEVER_FORWARDED: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "expect",
    "user-agent",
    "accept-encoding",
    "if-none-match",
    "if-match",
    "if-modified-since",
    "if-unmodified-since",
    "if-range",
    "range",
    "via",
];

/// How to reach one upstream; checked by [`Upstream::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamConfig {
    /// The URL template: `http://host[:port][/prefix]{path}[suffix][?query]`.
    /// `http` only; `{path}` at most once, in the path (without it, every
    /// request path fetches the same URL).
    pub url: String,
    /// The whole fetch's deadline: connect, redirects, head and body.
    pub timeout: Duration,
    /// Each connect's deadline (within `timeout`); `None`: the least of
    /// `timeout` and [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Option<Duration>,
    /// The largest body accepted, in bytes.
    pub max_size: u64,
    /// Names of the client's request headers forwarded to the upstream
    /// (and part of the memo's key). Hop-by-hop headers, `Host` and those
    /// this client sets itself are refused.
    pub headers: Vec<String>,
    /// Same-authority redirects followed before giving up.
    pub max_redirects: usize,
    /// The memo's budget in bytes (bodies, keys and bookkeeping); 0
    /// remembers nothing.
    pub memo_size: u64,
    /// How many Axle upstream hops the request being served may already
    /// have made (counted in its `Via`) before a fetch is refused as a
    /// loop: two locations fetching each other, or a server fetching
    /// itself, would otherwise nest requests until it ran out of sockets.
    pub max_hops: u32,
}

impl UpstreamConfig {
    /// The defaults for `url`: 10 s, connect 5 s, 16 MiB, `accept-language`
    /// forwarded, 3 redirects, a 64 MiB memo.
    pub fn new(url: impl Into<String>) -> UpstreamConfig {
        UpstreamConfig {
            url: url.into(),
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: None,
            max_size: DEFAULT_MAX_SIZE,
            headers: vec!["accept-language".to_string()],
            max_redirects: DEFAULT_MAX_REDIRECTS,
            memo_size: DEFAULT_MEMO_SIZE,
            max_hops: DEFAULT_MAX_HOPS,
        }
    }
}

/// How a fetch got its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// From the upstream, in full.
    Fetched,
    /// From memory, within the upstream's max-age; the upstream was not
    /// contacted.
    Fresh,
    /// From memory, after the upstream answered 304 to `If-None-Match`.
    Revalidated,
}

/// A fetched source.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The body, as the upstream sent it.
    pub body: Bytes,
    /// The upstream's `Content-Type`.
    pub content_type: Option<String>,
    /// The upstream's `ETag`.
    pub etag: Option<String>,
    /// How long from now the body may be reused without asking the
    /// upstream: `None` when it gave no max-age, zero when it must be
    /// revalidated first (`max-age=0`, `no-cache`).
    pub max_age: Option<Duration>,
    /// Where the body came from.
    pub how: Freshness,
    /// Whether the upstream allows reuse: an ETag, or a max-age > 0
    /// without `no-cache`; never with `no-store` or `private`.
    pub cacheable: bool,
}

/// Why a fetch failed; [`UpstreamError::status`] is the response status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The configuration is unusable (at load, from [`Upstream::new`]).
    #[error("upstream configuration: {0}")]
    Config(String),
    /// The request path could change the host or leave the prefix (400).
    #[error("refused upstream path: {0}")]
    BadPath(&'static str),
    /// Refused, unreachable or unresolvable (502).
    #[error("cannot connect to the upstream: {0}")]
    Connect(String),
    /// Connecting or the whole fetch took longer than allowed (504).
    #[error("the upstream did not answer in time")]
    Timeout,
    /// The upstream answered with an error status (404 for its 404 and
    /// 410, else 502).
    #[error("the upstream answered {0}")]
    Status(u16),
    /// The body is over the size limit (502).
    #[error("the upstream's body is over the {limit}-byte limit")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// A redirect to another scheme, host or port, or too many (502).
    #[error("upstream redirect not followed: {0}")]
    Redirect(&'static str),
    /// The upstream broke HTTP or this client's terms (502).
    #[error("upstream protocol error: {0}")]
    Protocol(String),
    /// The request being served has passed through Axle's upstream
    /// sources this many times already (`max-hops`): a loop (508).
    #[error("a loop: this request has already been fetched through Axle {0} times (max-hops)")]
    Loop(u32),
}

impl UpstreamError {
    /// The status a response for this error carries: the one mapping.
    pub fn status(&self) -> StatusCode {
        match self {
            UpstreamError::Config(_) => StatusCode::INTERNAL_SERVER_ERROR,
            UpstreamError::BadPath(_) => StatusCode::BAD_REQUEST,
            UpstreamError::Timeout => StatusCode::GATEWAY_TIMEOUT,
            UpstreamError::Status(404 | 410) => StatusCode::NOT_FOUND,
            // A loop further on is this request's loop too.
            UpstreamError::Status(508) | UpstreamError::Loop(_) => StatusCode::LOOP_DETECTED,
            UpstreamError::Connect(_)
            | UpstreamError::Status(_)
            | UpstreamError::TooLarge { .. }
            | UpstreamError::Redirect(_)
            | UpstreamError::Protocol(_) => StatusCode::BAD_GATEWAY,
        }
    }
}

/// How many times the request behind `headers` has passed through an
/// Axle upstream source: the `Via` entries received by Axle.
fn axle_hops(headers: &HeaderMap) -> u32 {
    let entries = headers
        .get_all(VIA)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter(|entry| entry.split_whitespace().nth(1) == Some(VIA_NAME))
        .count();
    u32::try_from(entries).unwrap_or(u32::MAX)
}

/// The `Via` an upstream request carries: the request's own entries (when
/// readable), then this hop's.
fn via(headers: &HeaderMap) -> HeaderValue {
    let own = format!("1.1 {VIA_NAME}");
    let before: Vec<&str> = headers
        .get_all(VIA)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let value = if before.is_empty() {
        own
    } else {
        format!("{}, {own}", before.join(", "))
    };
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("1.1 axle"))
}

/// Idle keep-alive connections kept per upstream.
pub const IDLE_CONNECTIONS: usize = 32;

/// A connection's request half (its connection task runs on the runtime
/// that opened it).
type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

/// One configured upstream: its fixed address, its limits and its memo.
pub struct Upstream {
    config: UpstreamConfig,
    target: Target,
    connect_timeout: Duration,
    forwarded: Vec<HeaderName>,
    memo: Memo,
    /// Keep-alive connections whose last answer was read whole.
    idle: std::sync::Mutex<Vec<Sender>>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What one exchange (one hop) gave.
struct Exchange {
    status: StatusCode,
    headers: HeaderMap,
    /// Read for a 2xx only.
    body: Option<Bytes>,
}

impl Upstream {
    /// Checks `config` (the template, the limits, the forwarded headers).
    pub fn new(config: UpstreamConfig) -> Result<Upstream, UpstreamError> {
        let target = Target::parse(&config.url).map_err(UpstreamError::Config)?;
        if config.timeout.is_zero() {
            return Err(UpstreamError::Config("the timeout is zero".to_string()));
        }
        if config.max_size == 0 {
            return Err(UpstreamError::Config("the size limit is zero".to_string()));
        }
        let connect_timeout = config
            .connect_timeout
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT)
            .min(config.timeout);
        if connect_timeout.is_zero() {
            return Err(UpstreamError::Config(
                "the connect timeout is zero".to_string(),
            ));
        }
        let mut forwarded: Vec<HeaderName> = Vec::new();
        for name in &config.headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| UpstreamError::Config(format!("`{name}` is not a header name")))?;
            if NEVER_FORWARDED.contains(&header.as_str()) {
                return Err(UpstreamError::Config(format!(
                    "the `{header}` header is never forwarded to an upstream"
                )));
            }
            if !forwarded.contains(&header) {
                forwarded.push(header);
            }
        }
        let memo = Memo::new(config.memo_size);
        Ok(Upstream {
            config,
            target,
            connect_timeout,
            forwarded,
            memo,
            idle: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &UpstreamConfig {
        &self.config
    }

    /// The URL [`Upstream::fetch`] would request for `path` and `query`
    /// (its checks, without I/O): reachable for the `upstream_path` fuzz
    /// target (`fuzz/`); not an API.
    #[doc(hidden)]
    pub fn request_url(&self, path: &str, query: Option<&str>) -> Result<Uri, UpstreamError> {
        self.target.url(path, query).map_err(UpstreamError::BadPath)
    }

    /// Fetches the source for `path`, the request path below the
    /// location's prefix (`""` or starting with `/`, normalized and
    /// percent-encoded as received), with the request's `query` appended
    /// and the configured `headers` forwarded.
    ///
    /// Refused with `BadPath`: a path not starting with `/`, starting with
    /// `//`, holding `\`, `@`, `#`, `?`, a space, a control character, a
    /// raw non-ASCII byte or a malformed `%` escape, or a segment that is
    /// `.` or `..` (before any `;`), or holds `/`, `\`, a control
    /// character or an overlong UTF-8 sequence (`%c0%ae`), in any of three
    /// rounds of percent-decoding, or could
    /// still be decoded after those three; a query with
    /// `#`, `\`, a space, a control character or a raw non-ASCII byte.
    pub async fn fetch(
        &self,
        path: &str,
        query: Option<&str>,
        headers: &HeaderMap,
    ) -> Result<Fetched, UpstreamError> {
        let started = Instant::now();
        let url = self.request_url(path, query)?;
        let hops = axle_hops(headers);
        if hops >= self.config.max_hops {
            return Err(UpstreamError::Loop(hops));
        }
        let forwarded = self.forwarded(headers);
        let key = memo::key(&url.to_string(), &forwarded);
        // Sent, not part of the memo's key: the client's Via with this hop.
        let mut sent = forwarded.clone();
        sent.push((VIA, via(headers)));
        let remembered = self.memo.get(&key);
        if let Some(remembered) = &remembered {
            if let Some(left) = remembered.fresh_for(std::time::Instant::now()) {
                tracing::debug!(%url, how = "fresh", "upstream source from memory");
                return Ok(answer(remembered, Freshness::Fresh, Some(left)));
            }
        }
        let validator = remembered.as_ref().and_then(|r| r.etag.as_deref());
        let deadline = started + self.config.timeout;
        let result = match tokio::time::timeout_at(
            deadline,
            self.follow(url.clone(), &sent, validator, deadline),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(UpstreamError::Timeout),
        };
        let elapsed_ms = started.elapsed().as_millis();
        let exchange = match result {
            Ok(exchange) => exchange,
            Err(error) => {
                tracing::debug!(%url, elapsed_ms, %error, "upstream fetch failed");
                return Err(error);
            }
        };
        if exchange.status == StatusCode::NOT_MODIFIED {
            // Only an answer to If-None-Match may be a 304.
            let Some(remembered) = remembered.filter(|r| r.etag.is_some()) else {
                return Err(UpstreamError::Protocol(
                    "304 to a request that was not conditional".to_string(),
                ));
            };
            tracing::debug!(%url, elapsed_ms, how = "revalidated", "upstream source");
            return Ok(self.revalidated(key, &remembered, &exchange.headers));
        }
        let body = exchange.body.unwrap_or_default();
        tracing::debug!(%url, elapsed_ms, bytes = body.len(), how = "fetched", "upstream source");
        let policy = Policy::of(&exchange.headers);
        let remembered = Remembered {
            body,
            content_type: header_text(&exchange.headers, &CONTENT_TYPE),
            etag: header_text(&exchange.headers, &ETAG),
            policy,
            stored_at: std::time::Instant::now(),
        };
        let fetched = answer(&remembered, Freshness::Fetched, policy.ttl);
        if policy.storable(remembered.etag.is_some()) {
            self.memo.put(key, remembered);
        } else {
            self.memo.forget(&key);
        }
        Ok(fetched)
    }

    /// The remembered answer after a 304: its headers refresh the ETag and
    /// the reuse policy (when it has `Cache-Control`), and the clock.
    fn revalidated(&self, key: Box<[u8]>, old: &Remembered, headers: &HeaderMap) -> Fetched {
        let policy = if headers.contains_key(http::header::CACHE_CONTROL) {
            Policy::of(headers)
        } else {
            old.policy
        };
        let renewed = Remembered {
            body: old.body.clone(),
            content_type: old.content_type.clone(),
            etag: header_text(headers, &ETAG).or_else(|| old.etag.clone()),
            policy,
            stored_at: std::time::Instant::now(),
        };
        let fetched = answer(&renewed, Freshness::Revalidated, policy.ttl);
        if policy.storable(renewed.etag.is_some()) {
            self.memo.put(key, renewed);
        } else {
            self.memo.forget(&key);
        }
        fetched
    }

    /// The client's values of the forwarded headers, in configured order,
    /// skipping any its `Connection` header names (hop-by-hop by that).
    fn forwarded(&self, headers: &HeaderMap) -> Vec<(HeaderName, HeaderValue)> {
        let named_by_connection = |name: &HeaderName| {
            headers
                .get_all(CONNECTION)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .any(|token| token.trim().eq_ignore_ascii_case(name.as_str()))
        };
        let mut out = Vec::new();
        for name in &self.forwarded {
            if named_by_connection(name) {
                continue;
            }
            for value in headers.get_all(name) {
                out.push((name.clone(), value.clone()));
            }
        }
        out
    }

    /// Exchanges, following same-authority redirects.
    async fn follow(
        &self,
        mut url: Uri,
        forwarded: &[(HeaderName, HeaderValue)],
        validator: Option<&str>,
        deadline: Instant,
    ) -> Result<Exchange, UpstreamError> {
        for hop in 0..=self.config.max_redirects {
            let exchange = self.exchange(&url, forwarded, validator, deadline).await?;
            if !is_redirect(exchange.status) {
                return Ok(exchange);
            }
            let location = exchange
                .headers
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    UpstreamError::Protocol(format!(
                        "a {} redirect without a readable Location",
                        exchange.status.as_u16()
                    ))
                })?;
            let next = self.target.redirect(&url, location).map_err(|reason| {
                tracing::debug!(%url, location, "upstream redirect refused");
                UpstreamError::Redirect(reason)
            })?;
            tracing::debug!(from = %url, to = %next, hop, "following an upstream redirect");
            url = next;
        }
        Err(UpstreamError::Redirect("too many redirects"))
    }

    /// One request, on an idle keep-alive connection or a new one: the
    /// head, and the body of a 2xx. A reused connection that fails before
    /// it answers is retried once on a new one.
    async fn exchange(
        &self,
        url: &Uri,
        forwarded: &[(HeaderName, HeaderValue)],
        validator: Option<&str>,
        deadline: Instant,
    ) -> Result<Exchange, UpstreamError> {
        if let Some(sender) = self.idle_sender() {
            let request = self.request(url, forwarded, validator)?;
            match self.exchange_on(sender, request).await {
                Err(Attempt::Unanswered(error)) => {
                    tracing::debug!(%error, "a kept upstream connection failed; trying a new one");
                }
                Err(Attempt::Failed(e)) => return Err(e),
                Ok(exchange) => return Ok(exchange),
            }
        }
        let request = self.request(url, forwarded, validator)?;
        let stream = self.connect(deadline).await?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| UpstreamError::Protocol(e.to_string()))?;
        // The connection runs on its own, so it can outlive this fetch in
        // the idle pool; it ends when its last sender is dropped.
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "upstream connection ended");
            }
        });
        self.exchange_on(sender, request)
            .await
            .map_err(|a| match a {
                Attempt::Unanswered(e) => UpstreamError::Protocol(e),
                Attempt::Failed(e) => e,
            })
    }

    /// An idle connection that is still open, if there is one.
    fn idle_sender(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(sender) = idle.pop() {
            if !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    /// Puts a connection whose answer was read whole back in the pool.
    fn keep(&self, sender: Sender) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE_CONNECTIONS && !sender.is_closed() {
            idle.push(sender);
        }
    }

    /// `request` on `sender`'s connection; the connection goes back to the
    /// pool when the answer was read whole and the upstream keeps it open.
    async fn exchange_on(
        &self,
        mut sender: Sender,
        request: Request<Empty<Bytes>>,
    ) -> Result<Exchange, Attempt> {
        sender
            .ready()
            .await
            .map_err(|e| Attempt::Unanswered(e.to_string()))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| Attempt::Unanswered(e.to_string()))?;
        let max_size = self.config.max_size;
        let (head, body) = response.into_parts();
        let status = head.status;
        let closes = head
            .headers
            .get_all(CONNECTION)
            .iter()
            .any(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
        let wants_body = status.is_success() && status != StatusCode::PARTIAL_CONTENT;
        if !wants_body {
            if status.is_client_error()
                || status.is_server_error()
                || status.is_informational()
                || status == StatusCode::PARTIAL_CONTENT
                || (status.is_redirection()
                    && status != StatusCode::NOT_MODIFIED
                    && !is_redirect(status))
            {
                return Err(Attempt::Failed(UpstreamError::Status(status.as_u16())));
            }
            // A 304 has no body; a redirect's may, unread: not reused.
            if status == StatusCode::NOT_MODIFIED && !closes {
                self.keep(sender);
            }
            return Ok(Exchange {
                status,
                headers: head.headers,
                body: None,
            });
        }
        if let Some(encoding) = head
            .headers
            .get(CONTENT_ENCODING)
            .filter(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"))
        {
            return Err(Attempt::Failed(UpstreamError::Protocol(format!(
                "a {}-encoded body, though identity was asked for",
                String::from_utf8_lossy(encoding.as_bytes())
            ))));
        }
        let declared = head
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|length| length > max_size) {
            return Err(Attempt::Failed(UpstreamError::TooLarge { limit: max_size }));
        }
        let body = read_body(body, declared, max_size)
            .await
            .map_err(Attempt::Failed)?;
        if !closes {
            self.keep(sender);
        }
        Ok(Exchange {
            status,
            headers: head.headers,
            body: Some(body),
        })
    }

    /// The request for one hop.
    fn request(
        &self,
        url: &Uri,
        forwarded: &[(HeaderName, HeaderValue)],
        validator: Option<&str>,
    ) -> Result<Request<Empty<Bytes>>, UpstreamError> {
        let target = url.path_and_query().map_or("/", |pq| pq.as_str());
        let mut request = Request::builder()
            .method(Method::GET)
            .uri(target)
            .header(HOST, self.target.authority.as_str())
            .header(USER_AGENT, concat!("axle/", env!("CARGO_PKG_VERSION")))
            .header(ACCEPT_ENCODING, "identity");
        for (name, value) in forwarded {
            request = request.header(name, value);
        }
        if let Some(etag) = validator {
            request = request.header(IF_NONE_MATCH, etag);
        }
        request
            .body(Empty::new())
            .map_err(|e| UpstreamError::Protocol(format!("building the request: {e}")))
    }

    /// A connection to the configured host and port, resolving a name now.
    async fn connect(&self, deadline: Instant) -> Result<TcpStream, UpstreamError> {
        let connect_deadline = deadline.min(Instant::now() + self.connect_timeout);
        let port = self.target.port;
        let attempt = async {
            match &self.target.host {
                Host::Ip(ip) => TcpStream::connect(SocketAddr::new(*ip, port)).await,
                Host::Name(name) => {
                    let mut last = None;
                    for address in tokio::net::lookup_host((name.as_str(), port)).await? {
                        match TcpStream::connect(address).await {
                            Ok(stream) => return Ok(stream),
                            Err(error) => last = Some(error),
                        }
                    }
                    Err(last.unwrap_or_else(|| {
                        std::io::Error::new(std::io::ErrorKind::NotFound, "the name has no address")
                    }))
                }
            }
        };
        match tokio::time::timeout_at(connect_deadline, attempt).await {
            Err(_) => Err(UpstreamError::Timeout),
            Ok(Err(error)) => Err(UpstreamError::Connect(error.to_string())),
            Ok(Ok(stream)) => {
                // Latency over packet count: one small request, then reads.
                let _ = stream.set_nodelay(true);
                Ok(stream)
            }
        }
    }
}

/// A remembered answer as a [`Fetched`].
fn answer(remembered: &Remembered, how: Freshness, max_age: Option<Duration>) -> Fetched {
    let policy = remembered.policy;
    let etag = remembered.etag.is_some();
    Fetched {
        body: remembered.body.clone(),
        content_type: remembered.content_type.clone(),
        etag: remembered.etag.clone(),
        max_age: if policy.no_cache {
            Some(Duration::ZERO)
        } else {
            max_age
        },
        how,
        cacheable: policy.cacheable(etag),
    }
}

/// A header's value as text, if it is text.
fn header_text(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The statuses followed as redirects.
fn is_redirect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

/// Reads a body, refusing it past `max_size` bytes.
async fn read_body(
    mut body: hyper::body::Incoming,
    declared: Option<u64>,
    max_size: u64,
) -> Result<Bytes, UpstreamError> {
    let capacity = declared.unwrap_or(0).min(max_size).min(1 << 20);
    let mut buffer = BytesMut::with_capacity(usize::try_from(capacity).unwrap_or(0));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| UpstreamError::Protocol(format!("reading the body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if (buffer.len() + data.len()) as u64 > max_size {
                return Err(UpstreamError::TooLarge { limit: max_size });
            }
            buffer.extend_from_slice(&data);
        }
    }
    Ok(buffer.freeze())
}

/// How one attempt at an exchange failed.
enum Attempt {
    /// The connection failed before an answer came (a kept connection the
    /// upstream closed meanwhile): worth one try on a new connection.
    Unanswered(String),
    /// Anything else.
    Failed(UpstreamError),
}
