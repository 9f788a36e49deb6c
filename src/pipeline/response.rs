//! What a render returns: the [`Rendered`] response, what the cache did
//! for it ([`CacheStatus`]), its pre-built header values
//! ([`ResponseHead`]) and the content types used when no stage names one.

use std::sync::Arc;

use bytes::Bytes;
use http::HeaderValue;

use crate::cache::{ContentHash, Dep, Entry, Key};

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
    pub head: Option<ResponseHead>,
}

/// The header values every response of a memoized render carries, built
/// and validated once for all its hits.
#[derive(Debug, Clone)]
pub struct ResponseHead {
    /// `Content-Type`.
    pub content_type: HeaderValue,
    /// `ETag` (of `hash`).
    pub etag: HeaderValue,
    /// The same two as HTTP/1.1 header lines, `etag` first:
    /// `etag: …\r\ncontent-type: …\r\n` (a 304 sends `..etag_end`).
    pub lines: Bytes,
    /// Where the `etag` line ends in `lines`.
    pub etag_end: usize,
}

impl ResponseHead {
    /// The head of `rendered` (a content type that is not a valid header
    /// value is sent as `application/octet-stream`).
    pub fn of(rendered: &Rendered) -> ResponseHead {
        let etag = rendered.hash.etag_bytes();
        let content_type = HeaderValue::from_str(&rendered.content_type)
            .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
        let etag =
            HeaderValue::from_bytes(&etag).unwrap_or_else(|_| HeaderValue::from_static("\"\""));
        // Validated header values, so the lines cannot be split.
        let mut lines = Vec::with_capacity(64 + content_type.len());
        lines.extend_from_slice(b"etag: ");
        lines.extend_from_slice(etag.as_bytes());
        lines.extend_from_slice(b"\r\n");
        let etag_end = lines.len();
        lines.extend_from_slice(b"content-type: ");
        lines.extend_from_slice(content_type.as_bytes());
        lines.extend_from_slice(b"\r\n");
        ResponseHead {
            content_type,
            etag,
            lines: Bytes::from(lines),
            etag_end,
        }
    }
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
    }
}
