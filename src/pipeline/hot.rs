//! The hot memo: a request's whole response (without its body when the
//! output store holds that), answered with one `stat` per file it came
//! from, before any chain is selected or key hashed.

use std::path::Path;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use http::HeaderValue;

use crate::cache::{Check, Entry, FieldKey, Found, Key};
use crate::config::CacheMode;

use super::{CacheStatus, Pipeline, Rendered, ResponseHead};

/// A hot-memo hit: a response ready to send, or one whose body the memo
/// no longer reaches (the store's memory tier evicted it: with a disk
/// tier, it is likely on disk), to be read by its store key with
/// [`Pipeline::hot_fill`].
#[derive(Debug, Clone)]
pub enum HotHit {
    /// The whole response.
    Ready(Rendered),
    /// The response without its body, and the store key of the body.
    Stored(Rendered, Key),
}

impl Pipeline {
    /// The memoized response for `key`, if every file it came from is
    /// unchanged (one `stat` each): whole when its body is still in
    /// memory, else without it, to be read by [`Pipeline::hot_fill`].
    /// Never in `off` mode.
    pub fn hot_find(&self, key: &FieldKey) -> Option<HotHit> {
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
            let Some(entry) = weak.upgrade() else {
                let stored = r.stored?;
                return Some(HotHit::Stored(r, stored));
            };
            r.body = entry.bytes.clone();
            r.variants = Some(Arc::clone(&entry.variants));
        }
        r.cache = match r.cache {
            CacheStatus::Untransformed => CacheStatus::Untransformed,
            _ => CacheStatus::Hit,
        };
        self.stats.hot_hits.incr();
        Some(HotHit::Ready(r))
    }

    /// The body of a memoized response whose store entry the memo no
    /// longer reaches, read by `stored` from memory or a lower tier (the
    /// disk tier: nothing is hashed, selected or rendered, and the files
    /// were checked by the memo). None, for the full path to answer, when
    /// no tier has it or the entry found is not the one memoized (another
    /// hash: bytes the memo never answered with).
    pub async fn hot_fill(&self, mut r: Rendered, stored: Key) -> Option<Rendered> {
        let (entry, found) = self.store.get_final_vouched(&stored).await?;
        if entry.hash != r.hash {
            return None;
        }
        r.body = entry.bytes.clone();
        r.variants = Some(Arc::clone(&entry.variants));
        if r.cache != CacheStatus::Untransformed {
            r.cache = match found {
                Found::Lower(tier) => CacheStatus::TierHit(tier),
                Found::Memory | Found::Computed => CacheStatus::Hit,
            };
        }
        match r.cache {
            CacheStatus::TierHit(_) => self.stats.count(r.cache),
            _ => self.stats.hot_hits.incr(),
        }
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
            entry = match self.store.peek_final(stored).await {
                Some(found) => Some(Arc::downgrade(&found)),
                // Not in memory (a memory tier too small for it) but
                // written to a lower tier: a reference that never reaches
                // anything, so every hit reads the body by its key.
                None if !self.store.lower().is_empty() => Some(Weak::new()),
                None => return,
            };
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
