//! What an upstream allowed about reusing its answer, and the bounded
//! memory of the answers it allowed to be reused.
//!
//! The subset of RFC 9111 a gateway in front of one backend needs:
//! `Cache-Control` `max-age` (or `s-maxage`, which wins: Axle is a shared
//! cache), less the `Age` the answer already had, is how long a body is
//! reused without asking; `no-cache` means always ask first; `no-store`
//! and `private` mean never remember (Axle serves many clients); an
//! `ETag` is what the asking is done with (`If-None-Match`). `Vary: *`
//! is never remembered. `Expires` and `Last-Modified` are not used.
//!
//! The memo is keyed by the full upstream URL and every forwarded header's
//! name and values (length-prefixed, so no two requests share a key by
//! concatenation), and bounded in bytes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{AGE, CACHE_CONTROL, VARY};
use http::{HeaderMap, HeaderName, HeaderValue};

/// Bytes charged per remembered answer beyond its key and body: the
/// strings it keeps and moka's own bookkeeping, roughly.
const OVERHEAD: usize = 256;

/// What an answer's headers allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Policy {
    /// How long from its arrival the answer may be reused unasked
    /// (`s-maxage` or `max-age`, less `Age`); `None` when not given.
    pub(super) ttl: Option<Duration>,
    /// Reused only after asking the upstream (`no-cache`).
    pub(super) no_cache: bool,
    /// Never remembered (`no-store`, `private`).
    pub(super) no_store: bool,
    /// `Vary: *`: no later request is the same request.
    pub(super) vary_any: bool,
}

impl Policy {
    /// Reads `Cache-Control`, `Age` and `Vary`.
    pub(super) fn of(headers: &HeaderMap) -> Policy {
        let mut policy = Policy::default();
        let mut max_age: Option<u64> = None;
        let mut s_maxage: Option<u64> = None;
        for value in headers.get_all(CACHE_CONTROL) {
            let Ok(value) = value.to_str() else {
                continue;
            };
            for directive in value.split(',') {
                let (name, argument) = match directive.split_once('=') {
                    Some((name, argument)) => {
                        (name.trim(), Some(argument.trim().trim_matches('"')))
                    }
                    None => (directive.trim(), None),
                };
                // An unreadable or repeated age counts as its least: stale.
                let seconds = || argument.map_or(Some(0), |a| Some(a.parse::<u64>().unwrap_or(0)));
                let least = |old: Option<u64>, new: Option<u64>| match (old, new) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                if name.eq_ignore_ascii_case("max-age") {
                    max_age = least(max_age, seconds());
                } else if name.eq_ignore_ascii_case("s-maxage") {
                    s_maxage = least(s_maxage, seconds());
                } else if name.eq_ignore_ascii_case("no-cache") {
                    policy.no_cache = true;
                } else if name.eq_ignore_ascii_case("no-store")
                    || name.eq_ignore_ascii_case("private")
                {
                    policy.no_store = true;
                }
            }
        }
        let age = headers
            .get(AGE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        policy.ttl = s_maxage
            .or(max_age)
            .map(|seconds| Duration::from_secs(seconds.saturating_sub(age)));
        policy.vary_any = headers
            .get_all(VARY)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|token| token.trim() == "*");
        policy
    }

    /// Whether the body may be reused at all: an ETag to revalidate with,
    /// or a time-to-live without `no-cache`; never with `no-store`.
    pub(super) fn cacheable(&self, etag: bool) -> bool {
        !self.no_store && (etag || (!self.no_cache && self.ttl.is_some_and(|t| !t.is_zero())))
    }

    /// Whether the memo keeps the answer.
    pub(super) fn storable(&self, etag: bool) -> bool {
        self.cacheable(etag) && !self.vary_any
    }
}

/// An answer the upstream allowed to be reused.
#[derive(Debug)]
pub(super) struct Remembered {
    pub(super) body: Bytes,
    pub(super) content_type: Option<String>,
    pub(super) etag: Option<String>,
    pub(super) policy: Policy,
    /// When it arrived or was last revalidated.
    pub(super) stored_at: Instant,
}

impl Remembered {
    /// How long from `now` it may still be reused unasked; `None` when it
    /// must be revalidated first.
    pub(super) fn fresh_for(&self, now: Instant) -> Option<Duration> {
        if self.policy.no_cache {
            return None;
        }
        let age = now.saturating_duration_since(self.stored_at);
        self.policy
            .ttl
            .and_then(|ttl| ttl.checked_sub(age))
            .filter(|left| !left.is_zero())
    }
}

/// The bounded memory of remembered answers.
pub(super) struct Memo {
    /// `None` when the budget is 0.
    cache: Option<moka::sync::Cache<Box<[u8]>, Arc<Remembered>>>,
}

impl Memo {
    /// A memo holding at most `budget` bytes.
    pub(super) fn new(budget: u64) -> Memo {
        let cache = (budget > 0).then(|| {
            moka::sync::Cache::<Box<[u8]>, Arc<Remembered>>::builder()
                .max_capacity(budget)
                .weigher(|key, value| {
                    let strings = value.content_type.as_ref().map_or(0, String::len)
                        + value.etag.as_ref().map_or(0, String::len);
                    let weight = key.len() + value.body.len() + strings + OVERHEAD;
                    u32::try_from(weight).unwrap_or(u32::MAX)
                })
                .build()
        });
        Memo { cache }
    }

    pub(super) fn get(&self, key: &[u8]) -> Option<Arc<Remembered>> {
        self.cache.as_ref()?.get(key)
    }

    pub(super) fn put(&self, key: Box<[u8]>, value: Remembered) {
        if let Some(cache) = &self.cache {
            cache.insert(key, Arc::new(value));
        }
    }

    pub(super) fn forget(&self, key: &[u8]) {
        if let Some(cache) = &self.cache {
            cache.invalidate(key);
        }
    }
}

/// The memo key: the URL and every forwarded header, each field
/// length-prefixed.
pub(super) fn key(url: &str, forwarded: &[(HeaderName, HeaderValue)]) -> Box<[u8]> {
    let mut key = Vec::with_capacity(
        8 + url.len()
            + forwarded
                .iter()
                .map(|(n, v)| 16 + n.as_str().len() + v.len())
                .sum::<usize>(),
    );
    let mut field = |bytes: &[u8]| {
        key.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        key.extend_from_slice(bytes);
    };
    field(url.as_bytes());
    for (name, value) in forwarded {
        field(name.as_str().as_bytes());
        field(value.as_bytes());
    }
    key.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(pairs: &[(&str, &str)]) -> Policy {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        Policy::of(&headers)
    }

    fn secs(n: u64) -> Option<Duration> {
        Some(Duration::from_secs(n))
    }

    #[test]
    fn cache_control_is_read_as_a_shared_cache_reads_it() {
        assert_eq!(policy(&[]), Policy::default());
        assert_eq!(policy(&[("cache-control", "max-age=60")]).ttl, secs(60));
        assert_eq!(
            policy(&[("cache-control", "Max-Age=\"60\", public")]).ttl,
            secs(60)
        );
        assert_eq!(
            policy(&[("cache-control", "max-age=60, s-maxage=5")]).ttl,
            secs(5)
        );
        assert_eq!(
            policy(&[("cache-control", "max-age=60"), ("age", "50")]).ttl,
            secs(10)
        );
        assert_eq!(
            policy(&[("cache-control", "max-age=60"), ("age", "90")]).ttl,
            secs(0)
        );
        // Repeated: the least; unreadable: stale.
        assert_eq!(
            policy(&[
                ("cache-control", "max-age=60"),
                ("cache-control", "max-age=7")
            ])
            .ttl,
            secs(7)
        );
        assert_eq!(policy(&[("cache-control", "max-age=soon")]).ttl, secs(0));
        assert!(policy(&[("cache-control", "no-cache")]).no_cache);
        assert!(policy(&[("cache-control", "public, NO-STORE")]).no_store);
        assert!(policy(&[("cache-control", "private=\"x\"")]).no_store);
        assert!(policy(&[("vary", "accept, *")]).vary_any);
        assert!(!policy(&[("vary", "accept-language")]).vary_any);
    }

    #[test]
    fn what_may_be_reused_and_remembered() {
        let p = |cc: &str| policy(&[("cache-control", cc)]);
        assert!(p("max-age=60").cacheable(false));
        assert!(!p("max-age=0").cacheable(false));
        assert!(p("max-age=0").cacheable(true));
        assert!(!p("no-cache, max-age=60").cacheable(false));
        assert!(p("no-cache").cacheable(true));
        assert!(!p("no-store, max-age=60").cacheable(true));
        assert!(!p("private, max-age=60").cacheable(true));
        assert!(!policy(&[]).cacheable(false));
        let vary = policy(&[("cache-control", "max-age=60"), ("vary", "*")]);
        assert!(vary.cacheable(true) && !vary.storable(true));
    }

    #[test]
    fn freshness_counts_from_arrival() {
        let stored_at = Instant::now();
        let remembered = |cc: &str| Remembered {
            body: Bytes::new(),
            content_type: None,
            etag: None,
            policy: policy(&[("cache-control", cc)]),
            stored_at,
        };
        let at = |s: u64| stored_at + Duration::from_secs(s);
        assert_eq!(remembered("max-age=60").fresh_for(at(0)), secs(60));
        assert_eq!(remembered("max-age=60").fresh_for(at(59)), secs(1));
        assert_eq!(remembered("max-age=60").fresh_for(at(60)), None);
        assert_eq!(remembered("max-age=0").fresh_for(at(0)), None);
        assert_eq!(remembered("no-cache, max-age=60").fresh_for(at(0)), None);
        assert_eq!(remembered("public").fresh_for(at(0)), None);
    }

    #[test]
    fn keys_are_length_prefixed() {
        let header = |v: &str| {
            (
                HeaderName::from_static("accept-language"),
                HeaderValue::from_str(v).unwrap(),
            )
        };
        assert_ne!(key("http://h/a", &[]), key("http://h/a", &[header("")]));
        assert_ne!(
            key("http://h/a", &[header("en")]),
            key("http://h/a", &[header("fr")])
        );
        assert_ne!(
            key("http://h/a", &[header("en"), header("fr")]),
            key("http://h/a", &[header("enfr")])
        );
        assert_eq!(
            key("http://h/a", &[header("en")]),
            key("http://h/a", &[header("en")])
        );
    }
}
