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

use std::path::PathBuf;
use std::sync::Arc;

use super::{Key, Stamp};

/// One memoized response with its validators.
#[derive(Debug)]
pub struct HotEntry<T> {
    /// The response.
    pub value: T,
    /// Files and the stamps they must still have.
    pub checks: Vec<(PathBuf, Stamp)>,
}

/// The memo, bounded in entries.
pub struct HotMemo<T> {
    cache: moka::sync::Cache<Key, Arc<HotEntry<T>>>,
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
    /// [`Weight`], plus their checks).
    pub fn new(budget: u64) -> Self {
        let cache = moka::sync::Cache::builder()
            .max_capacity(budget)
            .weigher(|_k: &Key, v: &Arc<HotEntry<T>>| {
                let checks: usize = v.checks.iter().map(|(p, _)| p.as_os_str().len() + 64).sum();
                u32::try_from(v.value.weight() + checks + 96).unwrap_or(u32::MAX)
            })
            .build();
        HotMemo { cache }
    }

    /// The response under `key` if every file still has its stamp.
    pub fn get(&self, key: &Key) -> Option<T> {
        let entry = self.cache.get(key)?;
        let fresh = entry
            .checks
            .iter()
            .all(|(path, stamp)| Stamp::current(path).is_ok_and(|now| now == *stamp));
        if fresh {
            Some(entry.value.clone())
        } else {
            self.cache.invalidate(key);
            None
        }
    }

    /// Remembers `value` under `key`, valid while `checks` hold.
    pub fn put(&self, key: Key, value: T, checks: Vec<(PathBuf, Stamp)>) {
        self.cache.insert(key, Arc::new(HotEntry { value, checks }));
    }

    /// Forgets everything (on configuration reload).
    pub fn clear(&self) {
        self.cache.invalidate_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::KeyBuilder;

    #[test]
    fn a_changed_or_missing_file_invalidates() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, "1").unwrap();
        let memo = HotMemo::new(10_000);
        let key = KeyBuilder::new("t").finish();
        memo.put(key, 7u32, vec![(a.clone(), Stamp::current(&a).unwrap())]);
        assert_eq!(memo.get(&key), Some(7));
        std::fs::write(&a, "22").unwrap();
        assert_eq!(memo.get(&key), None);
        memo.put(key, 8u32, vec![(a.clone(), Stamp::current(&a).unwrap())]);
        std::fs::remove_file(&a).unwrap();
        assert_eq!(memo.get(&key), None);
    }
}
