//! Dynamic sources: Providers that produce a document for each request (a
//! request body, a program's output, an upstream's answer) in front of a
//! chain of static stylesheets. This is the case incremental caching
//! exists for: when the dynamic front gives the same bytes again, every
//! stage after it can be reused, while all-or-nothing caching has to
//! recompute the chain.
//!
//! A [`DynamicProvider`] is mounted at a location prefix (in `axle.toml`,
//! `provider = { type = "post" | "command" | "fastcgi" | "upstream", ... }`, or through
//! the server builder); every URL under the prefix is answered from what it
//! produces. It says, per answer, whether the bytes may be cached
//! ([`Produced::cacheable`]): an uncacheable source makes an `all`-mode
//! response uncacheable, while incremental mode keys the stages after it by
//! the bytes' hash as for a file. [`Memoized`] is a Provider that answers
//! from memory for a time-to-live (the "a cache is itself a Provider"
//! rule). Request data reaches a source only as data (a body, an
//! environment variable, a path substituted into a configured URL), never
//! as a program, an argument or a host.

mod command;
mod fastcgi;
mod memo;
mod post;
mod upstream;

pub use command::{
    CGI_VARIABLES, CommandConfig, CommandSource, header_problem as command_header_problem,
};
pub use fastcgi::{FastcgiConfig, FastcgiSource};
pub use memo::Memoized;
pub use post::{PostConfig, PostSource};
pub use upstream::UpstreamSource;

/// The `post` source's document check and the `command` source's
/// environment builder, reachable for the `post_document` and `cgi_env` fuzz
/// targets (`fuzz/`); not an API.
#[doc(hidden)]
pub mod checks {
    pub use super::command::environment as cgi_environment;
    pub use super::post::document as post_document;
}

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};

/// A boxed future, as [`DynamicProvider::produce`] returns (the trait stays
/// object-safe, so Providers of any type can be mounted side by side).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a dynamic source is told about the request it answers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SourceRequest {
    /// The method (`GET`, `HEAD`, `POST`).
    pub method: Method,
    /// The whole request path, normalized and percent-encoded
    /// (`/live/a%20b.xml`).
    pub path: String,
    /// The path below the mount's prefix, percent-encoded, starting with
    /// `/` (`/a%20b.xml`), or empty for the prefix itself.
    pub path_below: String,
    /// The same, percent-decoded (CGI's `PATH_INFO`: `/a b.xml`).
    pub path_info: String,
    /// The query string without `?`, when there is one.
    pub query: Option<String>,
    /// The request's header fields.
    pub headers: HeaderMap,
    /// The request body, when the Provider asked for it
    /// ([`DynamicProvider::body_limit`]): at most that many bytes, as sent
    /// (still content-encoded).
    pub body: Option<Bytes>,
    /// The address this server's public listener is bound to (a wildcard
    /// address, the port the system chose), when it is served on one:
    /// where an upstream source naming this same server fetches from.
    pub server: Option<std::net::SocketAddr>,
}

impl SourceRequest {
    /// A request for `path_below` under a mount at `prefix` (for tests and
    /// Providers composed by hand).
    pub fn new(method: Method, prefix: &str, path_below: &str) -> SourceRequest {
        let prefix = prefix.trim_end_matches('/');
        SourceRequest {
            method,
            path: format!("{prefix}{path_below}"),
            path_below: path_below.to_string(),
            path_info: percent_encoding::percent_decode_str(path_below)
                .decode_utf8_lossy()
                .into_owned(),
            query: None,
            headers: HeaderMap::new(),
            body: None,
            server: None,
        }
    }
}

/// A document a dynamic source produced.
#[derive(Debug, Clone)]
pub struct Produced {
    /// The document's bytes (XML: its own `<?xml-stylesheet?>` PIs, or the
    /// location's processors, give its chain).
    pub bytes: Bytes,
    /// May a response rendered from these bytes be stored and served again
    /// for the same URL (`all` mode)? `false` for a source that is
    /// computed per request (a request body, a program declared
    /// `cache = "none"`, an upstream answer without a validator).
    pub cacheable: bool,
    /// The status the page is answered with when it is not 200 (a
    /// FastCGI app's `Status: 404` with a document); such an answer is
    /// never stored (`cacheable` is then `false`).
    pub status: Option<StatusCode>,
}

/// A memo key made of `parts`, each length-prefixed (so no two lists of
/// parts give one key); `None` parts (a header not sent) are marked apart
/// from empty ones.
pub fn memo_key<'a>(parts: impl IntoIterator<Item = Option<&'a [u8]>>) -> Vec<u8> {
    let mut key = Vec::new();
    for part in parts {
        key.extend_from_slice(&part.map_or(u64::MAX, |p| p.len() as u64).to_le_bytes());
        key.extend_from_slice(part.unwrap_or_default());
    }
    key
}

/// A source of documents that produces one per request.
pub trait DynamicProvider: Send + Sync + 'static {
    /// A short description for logs and the status of errors
    /// (`command python3 live.py`).
    fn describe(&self) -> String;

    /// Produces the document for `request`.
    fn produce<'a>(
        &'a self,
        request: &'a SourceRequest,
    ) -> BoxFuture<'a, Result<Produced, SourceError>>;

    /// For a request with this method: `None` when the Provider answers it
    /// without a body, `Some(limit)` when it reads the body (at most
    /// `limit` bytes; more is 413). The default takes GET and HEAD
    /// without a body; [`SourceError::Method`] refuses the rest.
    fn body_limit(&self, method: &Method) -> Result<Option<u64>, SourceError> {
        if method == Method::GET || method == Method::HEAD {
            Ok(None)
        } else {
            Err(SourceError::Method {
                allowed: "GET, HEAD",
            })
        }
    }

    /// The identity of what [`DynamicProvider::produce`] would answer for
    /// `request`, when its answers may be remembered for a while by
    /// [`Memoized`]: everything of the request it reads. `None`: never
    /// remembered.
    fn memo_key(&self, request: &SourceRequest) -> Option<Vec<u8>> {
        let _ = request;
        None
    }
}

/// Why a dynamic source produced no document. Each maps to one status
/// ([`SourceError::status`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// 400: the request's document is not well-formed XML.
    #[error("the request body is not well-formed XML: line {line}, column {column}: {message}")]
    Malformed {
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
        /// The parser's message.
        message: String,
    },
    /// 400: a request the source cannot take (a path it refuses).
    #[error("{0}")]
    BadRequest(String),
    /// 404: the source has nothing there (an upstream's 404).
    #[error("not found: {0}")]
    NotFound(String),
    /// 405: a method the source does not answer.
    #[error("method not allowed here (allowed: {allowed})")]
    Method {
        /// The methods it answers.
        allowed: &'static str,
    },
    /// 413: the request body is larger than the source takes.
    #[error("{0}")]
    TooLarge(String),
    /// 415: the request body is not an XML media type.
    #[error("{0}")]
    UnsupportedType(String),
    /// 502: the program or upstream behind the source failed (what it
    /// wrote to stderr, or its body, is logged, never shown).
    #[error("{0}")]
    Failed(String),
    /// 503: the source's concurrency limit is reached (`Retry-After`).
    #[error("{0}")]
    Busy(String),
    /// 504: the program or upstream took longer than its timeout.
    #[error("{0}")]
    Timeout(String),
    /// 508: the request has gone round a loop of upstream fetches (an
    /// upstream's `max-hops`).
    #[error("{0}")]
    Loop(String),
}

impl SourceError {
    /// The HTTP status this error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            SourceError::Malformed { .. } | SourceError::BadRequest(_) => StatusCode::BAD_REQUEST,
            SourceError::NotFound(_) => StatusCode::NOT_FOUND,
            SourceError::Method { .. } => StatusCode::METHOD_NOT_ALLOWED,
            SourceError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            SourceError::UnsupportedType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            SourceError::Failed(_) => StatusCode::BAD_GATEWAY,
            SourceError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            SourceError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            SourceError::Loop(_) => StatusCode::LOOP_DETECTED,
        }
    }
}

/// How long a source's answers may be reused, as configured
/// (`cache = "none" | "10s" | "validated"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cacheability {
    /// Produced per request, never reused (`"none"`).
    Uncacheable,
    /// Reused for this long ([`Memoized`]).
    Ttl(Duration),
    /// As the upstream says: its `Cache-Control: max-age` as a
    /// time-to-live, its `ETag` revalidated (`"validated"`, the upstream
    /// default).
    Validated,
}

impl Cacheability {
    /// Parses a `cache` value: `none`, `validated`, or a duration
    /// (`"10s"`, `"2m"`).
    pub fn parse(text: &str) -> Result<Cacheability, String> {
        match text {
            "none" => Ok(Cacheability::Uncacheable),
            "validated" => Ok(Cacheability::Validated),
            other => match crate::config::parse_duration(other) {
                Ok(d) if d.is_zero() => Ok(Cacheability::Uncacheable),
                Ok(d) => Ok(Cacheability::Ttl(d)),
                Err(_) => Err(format!(
                    "{other:?} is not \"none\", \"validated\" or a duration like \"10s\""
                )),
            },
        }
    }
}

/// A dynamic source mounted at a location prefix: every URL under the
/// prefix is answered from what it produces.
#[derive(Clone)]
pub struct Mount {
    /// The prefix (`/live`), as the location names it.
    pub prefix: String,
    /// The source.
    pub provider: std::sync::Arc<dyn DynamicProvider>,
    /// Is the document the client's own (a request body)? Then a document
    /// the pipeline cannot parse is the client's error (400), not the
    /// source's (502).
    pub client_document: bool,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("prefix", &self.prefix)
            .field("provider", &self.provider.describe())
            .finish()
    }
}

impl Mount {
    /// The part of a request path (percent-encoded, normalized) below the
    /// prefix: `/live/x.xml` under `/live` is `/x.xml`; the prefix itself
    /// is `""`.
    pub fn below<'p>(&self, path: &'p str) -> &'p str {
        let prefix = self.prefix.trim_end_matches('/');
        path.strip_prefix(prefix).unwrap_or(path)
    }
}
