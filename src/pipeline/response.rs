//! What a render returns: the [`Rendered`] response, what the cache did
//! for it ([`CacheStatus`]), its pre-built header values
//! ([`ResponseHead`]) and the content types used when no stage names one.

use std::sync::Arc;

use bytes::Bytes;
use http::HeaderValue;

use std::time::SystemTime;

use crate::cache::{ContentHash, Dep, Entry, Key, Variants};

/// Content-Type of a document served without any stage.
pub const RAW_XML_TYPE: &str = "text/xml";

/// Content-Type when the last stage names none.
pub const DEFAULT_TYPE: &str = "text/html; charset=UTF-8";

/// How much of a response came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    /// Nothing computed: the memory tier (or the hot memo) had it.
    Hit,
    /// Nothing computed: a tier below memory had it (by name: `disk`, or a
    /// registered tier's), and it was promoted into memory.
    TierHit(&'static str),
    /// Everything computed.
    Miss,
    /// Incremental mode: `reused` of `total` stages came from the cache.
    Partial {
        /// Stages reused.
        reused: usize,
        /// Stages in the chain.
        total: usize,
    },
    /// The document has no stages: served as it is.
    Untransformed,
    /// `all` mode, and the source or a stage may not be cached: computed,
    /// not stored (AxKit's `no_cache`).
    Uncacheable,
}

impl CacheStatus {
    /// What the cache did for a chain of `total` stages of which `reused`
    /// were found rather than run.
    pub(super) fn of_reused(reused: usize, total: usize) -> CacheStatus {
        match reused {
            0 => CacheStatus::Miss,
            n if n == total => CacheStatus::Hit,
            n => CacheStatus::Partial { reused: n, total },
        }
    }

    /// Whether nothing was computed (a hit in any tier).
    pub fn is_hit(&self) -> bool {
        matches!(self, CacheStatus::Hit | CacheStatus::TierHit(_))
    }

    /// What the cache did when an entry was `found` (memory, a lower
    /// tier) or computed.
    pub(super) fn of_found(found: crate::cache::Found) -> CacheStatus {
        match found {
            crate::cache::Found::Memory => CacheStatus::Hit,
            crate::cache::Found::Lower(tier) => CacheStatus::TierHit(tier),
            crate::cache::Found::Computed => CacheStatus::Miss,
        }
    }

    /// The `X-Axle-Cache` header value.
    pub fn header_value(&self) -> String {
        match self {
            CacheStatus::Hit => "hit".into(),
            CacheStatus::TierHit(tier) => format!("hit; tier={tier}"),
            CacheStatus::Miss => "miss".into(),
            CacheStatus::Partial { reused, total } => format!("partial {reused}/{total}"),
            CacheStatus::Untransformed => "none".into(),
            CacheStatus::Uncacheable => "uncacheable".into(),
        }
    }
}

/// A rendered document.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The response body.
    pub body: Bytes,
    /// Its hash (the ETag).
    pub hash: ContentHash,
    /// The Content-Type.
    pub content_type: Arc<str>,
    /// What the cache did.
    pub cache: CacheStatus,
    /// Every file the response was computed from, with the hash used (the
    /// source first); None when the response must not be memoized.
    pub validators: Option<Arc<[Dep]>>,
    /// The output-store key that holds `body`, when one does: the hot memo
    /// then keeps only this key, so a body is weighed once, by the store.
    pub stored: Option<Key>,
    /// Header values built once when the response was memoized (a hot-memo
    /// hit has them; a fresh render has none).
    pub head: Option<Arc<ResponseHead>>,
    /// Compressed variants of `body` (the store entry's, shared by every
    /// request for it); None: made per request if a client insists.
    pub variants: Option<Arc<Variants>>,
    /// The response is produced per request (an uncacheable source or
    /// stage): `Cache-Control: no-store`, no `Last-Modified`.
    pub uncacheable: bool,
    /// When the newest file it came from was last modified (the
    /// `Last-Modified` header), when it came from files only.
    pub last_modified: Option<SystemTime>,
    /// The files besides the source it came from (stage closures and what
    /// they read), for `last_modified`; emptied before it is returned.
    pub(super) sources: Option<Arc<[Dep]>>,
    /// Its files do not date it (a stage keyed by a time slice or request
    /// values, `Stage::varies`): no `Last-Modified`.
    pub(super) undated: bool,
}

impl Rendered {
    /// A response of `body` (with hash `hash`) that no store holds: not
    /// memoized, no variants kept, no dates.
    pub fn new(body: Bytes, hash: ContentHash, content_type: Arc<str>, cache: CacheStatus) -> Self {
        Rendered {
            body,
            hash,
            content_type,
            cache,
            validators: None,
            stored: None,
            head: None,
            variants: None,
            uncacheable: false,
            last_modified: None,
            sources: None,
            undated: false,
        }
    }
}

/// The header values every response of a memoized render carries, built
/// and validated once for all its hits.
#[derive(Debug, Clone)]
pub struct ResponseHead {
    /// `Content-Type`.
    pub content_type: HeaderValue,
    /// `ETag` (of `hash`).
    pub etag: HeaderValue,
    /// `Last-Modified`, when it means something.
    pub last_modified: Option<HeaderValue>,
    /// The same as the instant, for `If-Modified-Since`.
    pub modified: Option<SystemTime>,
    /// `Cache-Control`, when the location or the response sets one.
    pub cache_control: Option<HeaderValue>,
    /// Whether the body is worth compressing (so the response varies by
    /// `Accept-Encoding`, and says so).
    pub compressible: bool,
    /// Every header as HTTP/1.1 lines: `etag`, then what a 304 repeats
    /// (`vary`, `cache-control`, `last-modified`), then `content-type`.
    pub lines: Bytes,
    /// Where the `etag` line ends in `lines` (an encoded variant replaces
    /// it with its own).
    pub etag_end: usize,
    /// Where the part a 304 sends ends in `lines`.
    pub not_modified_end: usize,
}

impl ResponseHead {
    /// The head of `rendered` with the location's `Cache-Control` (a
    /// content type that is not a valid header value is sent as
    /// `application/octet-stream`). An uncacheable response says
    /// `no-store` whatever the location says.
    pub fn of(rendered: &Rendered, cache_control: Option<&HeaderValue>) -> ResponseHead {
        let etag = rendered.hash.etag_bytes();
        let content_type = HeaderValue::from_str(&rendered.content_type)
            .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
        let etag =
            HeaderValue::from_bytes(&etag).unwrap_or_else(|_| HeaderValue::from_static("\"\""));
        let cache_control = if rendered.uncacheable {
            Some(HeaderValue::from_static("no-store"))
        } else {
            cache_control.cloned()
        };
        let modified = rendered.last_modified.filter(|_| !rendered.uncacheable);
        let last_modified = modified
            .map(httpdate::fmt_http_date)
            .and_then(|d| HeaderValue::from_str(&d).ok());
        let compressible =
            crate::cache::worth_compressing(&rendered.content_type, rendered.body.len());
        // Validated header values, so the lines cannot be split.
        let mut lines = Vec::with_capacity(160 + content_type.len());
        push_line(&mut lines, b"etag", etag.as_bytes());
        let etag_end = lines.len();
        if compressible {
            push_line(&mut lines, b"vary", b"accept-encoding");
        }
        if let Some(v) = &cache_control {
            push_line(&mut lines, b"cache-control", v.as_bytes());
        }
        if let Some(v) = &last_modified {
            push_line(&mut lines, b"last-modified", v.as_bytes());
        }
        let not_modified_end = lines.len();
        push_line(&mut lines, b"content-type", content_type.as_bytes());
        ResponseHead {
            content_type,
            etag,
            last_modified,
            modified,
            cache_control,
            compressible,
            lines: Bytes::from(lines),
            etag_end,
            not_modified_end,
        }
    }
}

/// Appends the header line `name: value\r\n`.
fn push_line(lines: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    lines.extend_from_slice(name);
    lines.extend_from_slice(b": ");
    lines.extend_from_slice(value);
    lines.extend_from_slice(b"\r\n");
}

/// The response an output-store entry holds.
pub(super) fn rendered(entry: &Entry, cache: CacheStatus, stored: Option<Key>) -> Rendered {
    Rendered {
        validators: None,
        stored,
        body: entry.bytes.clone(),
        hash: entry.hash,
        content_type: entry
            .content_type
            .clone()
            .unwrap_or_else(|| Arc::from(DEFAULT_TYPE)),
        cache,
        head: None,
        variants: Some(Arc::clone(&entry.variants)),
        uncacheable: false,
        last_modified: None,
        sources: None,
        undated: false,
    }
}
