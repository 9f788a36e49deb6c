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
    /// Change counters of every name on the way to the files the watcher
    /// can vouch for, and stamps for the rest (names through a symlink,
    /// files with several hard links), checked by `stat`.
    Watched(Token, Vec<(PathBuf, Stamp)>),
}

/// One file a memoized response came from: the path to check it through
/// (the name it was reached by), the stamp it had when it was read, and
/// whether that path is canonical (no symlink on the way), which the
/// watcher needs to vouch for it.
#[derive(Debug, Clone)]
pub struct Check {
    /// Where to look.
    pub path: PathBuf,
    /// What must still be there.
    pub stamp: Stamp,
    /// Whether `path` is canonical.
    pub canonical: bool,
}

fn stamps_weight(checks: &[(PathBuf, Stamp)]) -> usize {
    checks.iter().map(|(p, _)| p.as_os_str().len() + 64).sum()
}

fn stamps_hold(checks: &[(PathBuf, Stamp)]) -> bool {
    checks
        .iter()
        .all(|(path, stamp)| Stamp::current(path).is_ok_and(|now| now == *stamp))
}

impl Validity {
    fn weight(&self) -> usize {
        match self {
            Validity::Stamps(checks) => stamps_weight(checks),
            Validity::Watched(token, checks) => token.weight() + stamps_weight(checks),
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
    /// `--freshness trust`: an entry is valid until the memo is cleared.
    trust: bool,
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
        HotMemo {
            cache,
            watcher,
            trust: false,
        }
    }

    /// The same memo believing its entries valid with no check at all
    /// (`--freshness trust`), until [`HotMemo::clear`].
    #[must_use]
    pub fn trusting(mut self, trust: bool) -> Self {
        self.trust = trust;
        self
    }

    /// Whether entries are checked by watching rather than by `stat`.
    pub fn watching(&self) -> bool {
        self.watcher.is_some()
    }

    /// The response under `key` if nothing it came from has changed.
    pub fn get(&self, key: &FieldKey) -> Option<T> {
        let entry = self.cache.get(key)?;
        if self.trust {
            return Some(entry.value.clone());
        }
        let fresh = match &entry.validity {
            Validity::Stamps(checks) => stamps_hold(checks),
            Validity::Watched(token, checks) => {
                self.watcher.as_ref().is_some_and(|w| {
                    w.sync();
                    w.unchanged(token)
                }) && stamps_hold(checks)
            }
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
    /// watching, the files the watcher can vouch for (canonical paths with
    /// one link) are watched and their stamps verified once now (a file
    /// that already changed means nothing is remembered); the rest are
    /// checked by `stat` on every hit.
    pub fn put(&self, key: FieldKey, value: T, root: &Path, checks: Vec<Check>) {
        let (watchable, by_stat): (Vec<Check>, Vec<Check>) = checks
            .into_iter()
            .partition(|c| c.canonical && !c.stamp.hard_linked());
        let pairs = |checks: Vec<Check>| -> Vec<(PathBuf, Stamp)> {
            checks.into_iter().map(|c| (c.path, c.stamp)).collect()
        };
        let token = self
            .watcher
            .as_ref()
            .and_then(|w| w.register(root, watchable.iter().map(|c| c.path.as_path())));
        let validity = match token {
            Some(token) => {
                let watchable = pairs(watchable);
                if !stamps_hold(&watchable) {
                    return;
                }
                Validity::Watched(token, pairs(by_stat))
            }
            None => {
                let mut all = pairs(watchable);
                all.extend(pairs(by_stat));
                Validity::Stamps(all)
            }
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

    fn check(path: &Path, stamp: Stamp) -> Check {
        Check {
            path: path.to_path_buf(),
            stamp,
            canonical: true,
        }
    }

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
                vec![check(&a, Stamp::current(&a).unwrap())],
            );
            assert_eq!(memo.get(&key), Some(7));
            std::fs::write(&a, "22").unwrap();
            assert_eq!(memo.get(&key), None);
            memo.put(
                key.clone(),
                8u32,
                &root,
                vec![check(&a, Stamp::current(&a).unwrap())],
            );
            assert_eq!(memo.get(&key), Some(8));
            std::fs::remove_file(&a).unwrap();
            assert_eq!(memo.get(&key), None);
        }
    }

    #[test]
    fn names_through_links_and_hard_linked_files_are_checked_by_stat_while_watching() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink("real", root.join("link")).unwrap();
        let target = root.join("real/a");
        let shared = root.join("b");
        std::fs::write(&target, "1").unwrap();
        std::fs::write(&shared, "1").unwrap();
        std::fs::hard_link(&shared, root.join("b2")).unwrap();
        let memo = HotMemo::new(10_000, Some(Arc::new(Watcher::new(10, None).unwrap())));
        let key = FieldKeyBuilder::new("t").finish();
        let put = || {
            memo.put(
                key.clone(),
                7u32,
                &root,
                vec![
                    Check {
                        path: root.join("link/a"),
                        stamp: Stamp::current(&target).unwrap(),
                        canonical: false,
                    },
                    check(&shared, Stamp::current(&shared).unwrap()),
                ],
            );
            assert_eq!(memo.get(&key), Some(7));
        };
        // The link's target edited in a directory no name of the check is in.
        put();
        std::fs::write(&target, "22").unwrap();
        assert_eq!(memo.get(&key), None);
        // A write through the other hard link, in the same directory.
        put();
        std::fs::write(root.join("b2"), "333").unwrap();
        assert_eq!(memo.get(&key), None);
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
        memo.put(key.clone(), 7u32, &root, vec![check(&a, read_at)]);
        assert_eq!(memo.get(&key), None);
    }

    #[test]
    fn an_entry_weighs_its_key_value_and_every_check() {
        // The weigher is what keeps the memo in its budget: a response
        // depending on many files (long paths, each with its stamp) must
        // weigh them all. Spelled out: key bytes + value + per check the
        // path's bytes and 64 for its stamp + 96 for bookkeeping.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let checks: Vec<Check> = (0..20)
            .map(|i| {
                let path = root.join(format!("{i:03}-{}", "p".repeat(100)));
                std::fs::write(&path, "x").unwrap();
                check(&path, Stamp::current(&path).unwrap())
            })
            .collect();
        let stamp = Stamp::current(&root).unwrap();
        let paths: usize = checks.iter().map(|c| c.path.as_os_str().len()).sum();
        let key = FieldKeyBuilder::new("t").str("/a.xml").finish();
        let key_len = key.len();
        let memo = HotMemo::new(1 << 20, None);
        memo.put(key.clone(), 7u32, &root, checks.clone());
        assert_eq!(
            memo.cache.weight() as usize,
            key_len + 4 + paths + 20 * 64 + 96
        );
        // Watching: a token of 32 bytes and 24 per name (one name each,
        // the files being in the root), and the one check by stat.
        let linked = Check {
            path: root.join("link/x"),
            stamp,
            canonical: false,
        };
        let mut all = checks;
        all.push(linked.clone());
        let memo = HotMemo::new(1 << 20, Some(Arc::new(Watcher::new(10, None).unwrap())));
        memo.put(key, 7u32, &root, all);
        let stat = linked.path.as_os_str().len() + 64;
        assert_eq!(
            memo.cache.weight() as usize,
            key_len + 4 + (32 + 20 * 24) + stat + 96
        );
    }

    #[test]
    fn long_keys_count_against_the_budget() {
        // Keys hold the request's path and parameters, which clients
        // choose: 10 entries whose keys alone are 10 KB each cannot fit in
        // 64 KiB, whatever the weigher's other terms.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let memo = HotMemo::new(64 * 1024, None);
        let long = "q".repeat(10_000);
        for i in 0..10u32 {
            let key = FieldKeyBuilder::new("t")
                .bytes(&i.to_le_bytes())
                .str(&long)
                .finish();
            memo.put(key, i, &root, Vec::new());
        }
        let held = memo.cache.len();
        assert!(held <= 6, "{held} entries with 10 KB keys in 64 KiB");
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
