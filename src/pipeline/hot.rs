//! The hot memo: a request's whole response (without its body when the
//! output store holds that), answered with one `stat` per file it came
//! from, before any chain is selected or key hashed.

use std::path::Path;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use http::HeaderValue;

use crate::cache::{Check, Entry, FieldKey};
use crate::config::CacheMode;

use super::{CacheStatus, Pipeline, Rendered, ResponseHead};

impl Pipeline {
    /// The memoized response for `key`, if every file it came from is
    /// unchanged (one `stat` each). Never in `off` mode.
    pub fn hot_get(&self, key: &FieldKey) -> Option<Rendered> {
        if self.mode == CacheMode::Off {
            return None;
        }
        let HotResponse {
            rendered: mut r,
            entry,
        } = self.hot.get(key)?;
        if let Some(weak) = entry {
            // The body lives in the store: while the store holds that very
            // entry the weak reference reaches it (no second lookup); the
            // memo's own checks cover every file it came from.
            let entry = weak.upgrade()?;
            r.body = entry.bytes.clone();
            r.variants = Some(Arc::clone(&entry.variants));
        }
        r.cache = match r.cache {
            CacheStatus::Untransformed => CacheStatus::Untransformed,
            _ => CacheStatus::Hit,
        };
        self.stats.hot_hits.incr();
        Some(r)
    }

    /// Memoizes `rendered` for `key`; `request_path` is the document as the
    /// request named it (checked in place of the source's canonical path,
    /// so a re-pointed symlink is noticed). Skipped when a file changed
    /// since it was used, or the response is not cacheable.
    pub async fn hot_put(
        &self,
        key: FieldKey,
        request_path: &Path,
        rendered: &Rendered,
        cache_control: Option<&HeaderValue>,
    ) {
        if self.mode == CacheMode::Off {
            return;
        }
        let Some(validators) = &rendered.validators else {
            return;
        };
        let fingerprints = self.files.fingerprints();
        let mut checks: Vec<Check> = Vec::with_capacity(validators.len());
        for (i, dep) in validators.iter().enumerate() {
            // The memo usually knows the stamp; a file it has forgotten (a
            // big site) is stamped and hashed again, never skipped.
            let stamp = match fingerprints.stamp_for(&dep.path, &dep.hash) {
                Some(stamp) => stamp,
                None => match fingerprints.stamped(&dep.path) {
                    Ok((stamp, hash)) if hash == dep.hash => stamp,
                    _ => return,
                },
            };
            // Checked through the name it was reached by: a `stat` there
            // follows every link on the way, so a re-pointed link shows as
            // another file.
            let path = if i == 0 {
                request_path
            } else {
                dep.named_path()
            };
            if !checks.iter().any(|c| c.path == path) {
                checks.push(Check {
                    path: path.to_path_buf(),
                    stamp,
                    canonical: path == dep.path,
                });
            }
        }
        let mut memo = rendered.clone();
        memo.validators = None;
        memo.head = Some(Arc::new(ResponseHead::of(&memo, cache_control)));
        let mut entry = None;
        if let Some(stored) = &memo.stored {
            // A weak reference: the memo never keeps a body the store has
            // evicted (bodies are weighed once, by the store).
            let Some(found) = self.store.peek_final(stored).await else {
                return;
            };
            entry = Some(Arc::downgrade(&found));
            memo.body = Bytes::new();
            // Variants live with the store's entry, weighed there.
            memo.variants = None;
        }
        let hot = HotResponse {
            rendered: memo,
            entry,
        };
        self.hot.put(key, hot, self.files.root(), checks);
    }

    /// Forgets memoized responses (after a configuration reload).
    pub fn clear_hot(&self) {
        self.hot.clear();
    }
}

/// What the hot memo keeps for a request: the response without its body
/// when the store holds that, and a weak reference to the store's entry.
#[derive(Debug, Clone)]
pub(super) struct HotResponse {
    rendered: Rendered,
    entry: Option<Weak<Entry>>,
}

impl crate::cache::Weight for HotResponse {
    fn weight(&self) -> usize {
        let weak = if self.entry.is_some() { 128 } else { 0 };
        let head = self.rendered.head.as_ref().map_or(0, |h| {
            h.content_type.len() + h.etag.len() + 2 * std::mem::size_of::<HeaderValue>()
        });
        // An untransformed document's variants are made after this is
        // weighed; at most a fraction of its body more.
        self.rendered.body.len() + self.rendered.content_type.len() + weak + head
    }
}
