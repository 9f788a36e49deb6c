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
    cache: quick_cache::sync::Cache<
        FieldKey,
        Arc<HotEntry<T>>,
        EntryWeight,
        foldhash::quality::RandomState,
    >,
    watcher: Option<Arc<Watcher>>,
}

impl<T: Weight> std::fmt::Debug for HotMemo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotMemo")
            .field("entries", &self.cache.len())
            .finish()
    }
}

/// An entry's weight: its key, value and checks, plus bookkeeping.
#[derive(Clone, Copy, Debug)]
struct EntryWeight;

impl<T: Weight> quick_cache::Weighter<FieldKey, Arc<HotEntry<T>>> for EntryWeight {
    fn weight(&self, key: &FieldKey, entry: &Arc<HotEntry<T>>) -> u64 {
        (key.len() + entry.value.weight() + entry.validity.weight() + 96) as u64
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
        // quick_cache rather than moka: a hit here is on every cached
        // request, and moka's read (its access log and clock on top of the
        // table) was ~1.2k of a doc hit's 7.8k instructions (callgrind);
        // quick_cache's is a shard's read lock, a table probe and a
        // reference bit. Its policy (S3-FIFO: new entries on probation in
        // a small queue, promoted when read again, readmitted straight to
        // the main queue when remembered as recently evicted) keeps
        // responses read once from pushing out those read often; the
        // store behind the memo still decides what is kept at all.
        // Entries hold no body: a key, header lines and checks, under a
        // kilobyte; the item estimate only sizes the table.
        let items = usize::try_from(budget / 1024).unwrap_or(1 << 16).max(64);
        // Keys are ~150 bytes: SipHash over them was 580 of a hit's
        // 14.5k instructions (callgrind); foldhash, seeded per process,
        // costs a fraction of that.
        let cache = quick_cache::sync::Cache::with(
            items,
            budget,
            EntryWeight,
            foldhash::quality::RandomState::default(),
            Default::default(),
        );
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
            self.cache.remove(key);
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
        self.cache.clear();
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

    #[test]
    fn the_memo_stays_within_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let memo = HotMemo::new(64 * 1024, None);
        for i in 0..10_000u32 {
            let key = FieldKeyBuilder::new("t").bytes(&i.to_le_bytes()).finish();
            memo.put(key, i, &root, Vec::new());
        }
        let held = memo.cache.weight();
        assert!(held <= 64 * 1024, "{held} bytes held");
        assert!(memo.cache.len() > 100, "{} entries", memo.cache.len());
        // The last one put is there.
        let key = FieldKeyBuilder::new("t")
            .bytes(&9_999u32.to_le_bytes())
            .finish();
        assert_eq!(memo.get(&key), Some(9_999));
    }
}
