//! The hot-response memo: the last rendered response for a request, checked
//! by `stat` alone.
//!
//! A hit through the full pipeline confines the path (a `realpath`),
//! resolves the chain (another per stylesheet), hashes keys and looks them
//! up. When nothing changed, all of that gives the same response again; the
//! memo keeps it under the request's inputs together with the stat stamp of
//! every file it was computed from (the document as the request path names
//! it, each stylesheet's closure, each `document()`/entity dependency). A
//! memo hit costs one `stat` per file and compares stamps: any difference
//! (or a file gone) falls back to the full path, which then refreshes the
//! memo. The document is stat'ed through the request path, so a symlink
//! re-pointed to another file is noticed too.
//!
//! With a [`Watcher`] (the `watch` freshness mode) an entry records the
//! change counters of those same paths instead, and a hit costs no `stat`
//! at all: one non-blocking read of the change queue per request.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::watch::{Token, Watcher};
use super::{FieldKey, Stamp};

/// How a memoized response is known to be still valid.
#[derive(Debug)]
pub enum Validity {
    /// Files and the stamps they must still have (one `stat` each).
    Stamps(Vec<(PathBuf, Stamp)>),
    /// Change counters of every name on the way to those files.
    Watched(Token),
}

impl Validity {
    fn weight(&self) -> usize {
        match self {
            Validity::Stamps(checks) => checks.iter().map(|(p, _)| p.as_os_str().len() + 64).sum(),
            Validity::Watched(token) => token.weight(),
        }
    }
}

/// One memoized response with its validators.
#[derive(Debug)]
pub struct HotEntry<T> {
    /// The response.
    pub value: T,
    /// What must still hold for it to be served.
    pub validity: Validity,
}

/// The memo, bounded in bytes.
pub struct HotMemo<T> {
    cache: moka::sync::Cache<FieldKey, Arc<HotEntry<T>>, foldhash::quality::RandomState>,
    watcher: Option<Arc<Watcher>>,
}

impl<T> std::fmt::Debug for HotMemo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotMemo")
            .field("entries", &self.cache.entry_count())
            .finish()
    }
}

/// What a memoized value costs in memory.
pub trait Weight {
    /// Approximate bytes held.
    fn weight(&self) -> usize;
}

impl Weight for u32 {
    fn weight(&self) -> usize {
        4
    }
}

impl<T: Clone + Weight + Send + Sync + 'static> HotMemo<T> {
    /// A memo holding at most `budget` bytes (values weighed by
    /// [`Weight`], plus their checks), checking entries by `stat`, or by
    /// `watcher` when there is one.
    pub fn new(budget: u64, watcher: Option<Arc<Watcher>>) -> Self {
        // Plain LRU: the memo is a recency shortcut in front of the store,
        // whose TinyLFU admission already decides what is worth keeping;
        // a second admission filter here turned most newly memoized
        // responses away once the memo was full.
        let cache = moka::sync::Cache::builder()
            .max_capacity(budget)
            .eviction_policy(moka::policy::EvictionPolicy::lru())
            .weigher(|k: &FieldKey, v: &Arc<HotEntry<T>>| {
                u32::try_from(k.len() + v.value.weight() + v.validity.weight() + 96)
                    .unwrap_or(u32::MAX)
            })
            // Keys are ~150 bytes: SipHash over them was 580 of a hit's
            // 14.5k instructions (callgrind); foldhash, seeded per process,
            // costs a fraction of that.
            .build_with_hasher(foldhash::quality::RandomState::default());
        HotMemo { cache, watcher }
    }

    /// Whether entries are checked by watching rather than by `stat`.
    pub fn watching(&self) -> bool {
        self.watcher.is_some()
    }

    /// The response under `key` if nothing it came from has changed.
    pub fn get(&self, key: &FieldKey) -> Option<T> {
        let entry = self.cache.get(key)?;
        let fresh = match &entry.validity {
            Validity::Stamps(checks) => checks
                .iter()
                .all(|(path, stamp)| Stamp::current(path).is_ok_and(|now| now == *stamp)),
            Validity::Watched(token) => self.watcher.as_ref().is_some_and(|w| {
                w.sync();
                w.unchanged(token)
            }),
        };
        if fresh {
            Some(entry.value.clone())
        } else {
            self.cache.invalidate(key);
            None
        }
    }

    /// Remembers `value` under `key`, valid while `checks` hold (files
    /// under `root`, with the stamps they had when they were read). When
    /// watching, the files are watched and their stamps verified once now;
    /// a file that already changed means nothing is remembered.
    pub fn put(&self, key: FieldKey, value: T, root: &Path, checks: Vec<(PathBuf, Stamp)>) {
        let validity = match self
            .watcher
            .as_ref()
            .and_then(|w| w.register(root, checks.iter().map(|(p, _)| p.as_path())))
        {
            Some(token) => {
                let unchanged = checks
                    .iter()
                    .all(|(path, stamp)| Stamp::current(path).is_ok_and(|now| now == *stamp));
                if !unchanged {
                    return;
                }
                Validity::Watched(token)
            }
            None => Validity::Stamps(checks),
        };
        self.cache
            .insert(key, Arc::new(HotEntry { value, validity }));
    }

    /// Forgets everything (on configuration reload).
    pub fn clear(&self) {
        self.cache.invalidate_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::FieldKeyBuilder;

    #[test]
    fn a_changed_or_missing_file_invalidates() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let a = root.join("a");
        for watcher in [None, Some(Arc::new(Watcher::new(10, None).unwrap()))] {
            std::fs::write(&a, "1").unwrap();
            let memo = HotMemo::new(10_000, watcher);
            let key = FieldKeyBuilder::new("t").finish();
            memo.put(
                key.clone(),
                7u32,
                &root,
                vec![(a.clone(), Stamp::current(&a).unwrap())],
            );
            assert_eq!(memo.get(&key), Some(7));
            std::fs::write(&a, "22").unwrap();
            assert_eq!(memo.get(&key), None);
            memo.put(
                key.clone(),
                8u32,
                &root,
                vec![(a.clone(), Stamp::current(&a).unwrap())],
            );
            assert_eq!(memo.get(&key), Some(8));
            std::fs::remove_file(&a).unwrap();
            assert_eq!(memo.get(&key), None);
        }
    }

    #[test]
    fn watching_refuses_a_file_that_changed_before_it_was_watched() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let a = root.join("a");
        std::fs::write(&a, "1").unwrap();
        let read_at = Stamp::current(&a).unwrap();
        std::fs::write(&a, "two").unwrap();
        let memo = HotMemo::new(10_000, Some(Arc::new(Watcher::new(10, None).unwrap())));
        let key = FieldKeyBuilder::new("t").finish();
        memo.put(key.clone(), 7u32, &root, vec![(a.clone(), read_at)]);
        assert_eq!(memo.get(&key), None);
    }
}
