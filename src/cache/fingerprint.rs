//! Memoized facts about files — content hashes and canonical paths — kept
//! fresh by `stat`, or by the watcher: the freshness check of every request.
//!
//! Salsa-style verification with a stat as the revision: a file's hash is
//! recomputed only when its `(mtime, ctime, size, inode)` stamp changes, so a
//! cache hit costs one `stat` per file it depends on and never re-reads or
//! re-hashes an unchanged file.
//!
//! In the `watch` freshness mode ([`Fingerprints::watch_with`]) an entry for
//! a canonical path under the root also records the watcher's token for it,
//! and is then checked with no `stat` at all: one non-blocking read of the
//! change queue ([`Watcher::sync`]) and a comparison of counters. The same
//! goes for canonicalization ([`Fingerprints::canonicalize`], which
//! confinement uses): a path found to be canonical is remembered as such
//! while nothing on its way from the root changes, which saves the
//! `readlink` per path component that `realpath` costs. Paths with a
//! symlink on the way are always checked the plain way: a link reached
//! through another link could change without an event on either path.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, Weak};

use super::key::ContentHash;
use super::watch::{Token, Watcher};

/// What a `stat` says about a file's identity and version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    mtime_ns: i128,
    ctime_ns: i128,
    size: u64,
    inode: u64,
    device: u64,
    links: u64,
}

impl Stamp {
    /// The current stamp of `path` (following symlinks).
    pub fn current(path: &Path) -> io::Result<Stamp> {
        Ok(Stamp::of(&std::fs::metadata(path)?))
    }

    /// The stamp of `meta`.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        Stamp {
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            size: meta.size(),
            inode: meta.ino(),
            device: meta.dev(),
            links: meta.nlink(),
        }
    }

    /// The modification time, as `Metadata::modified` gives it.
    pub fn modified(&self) -> Option<std::time::SystemTime> {
        let epoch = std::time::UNIX_EPOCH;
        let since = std::time::Duration::from_nanos(u64::try_from(self.mtime_ns.abs()).ok()?);
        if self.mtime_ns >= 0 {
            epoch.checked_add(since)
        } else {
            epoch.checked_sub(since)
        }
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether the file has more than one name (hard links). A write
    /// through another name raises an event only in that name's directory,
    /// so such a file is never vouched for by the watcher: it is checked by
    /// `stat`, which sees the inode's new times whatever name wrote it.
    pub fn hard_linked(&self) -> bool {
        self.links > 1
    }
}

/// A timestamp (seconds and nanoseconds, as `stat` gives them) in
/// nanoseconds: one number per instant, so equal stamps mean equal times.
fn nanos(secs: i64, nsec: i64) -> i128 {
    i128::from(secs) * 1_000_000_000 + i128::from(nsec)
}

/// The memos' hasher. A path hashes as one write per component, and an
/// uncached render looks paths up here about a dozen times (confinement's
/// canonical paths, the stamps of the files it read): with SipHash that
/// was ~10k instructions of a three-stage render (callgrind); foldhash,
/// seeded per process, costs a fraction of it.
type PathHasher = foldhash::quality::RandomState;

/// A bounded memo `path → (stamp, content hash)`, and of paths known to be
/// canonical.
#[derive(Clone)]
pub struct Fingerprints {
    memo: moka::sync::Cache<PathBuf, Seen, PathHasher>,
    /// What is known of paths' canonicity.
    canonical: moka::sync::Cache<PathBuf, Canon, PathHasher>,
    watch: Arc<OnceLock<Watch>>,
    /// `--freshness trust`: a remembered hash is believed with no `stat`
    /// until [`Fingerprints::clear`].
    trust: Arc<std::sync::atomic::AtomicBool>,
}

/// Whether a path is canonical (under the root), as far as known.
#[derive(Clone)]
enum Canon {
    /// Seen canonical once: watched when seen again.
    Once,
    /// Not canonical (a symlink on the way) or outside the root: always
    /// checked by `realpath`.
    Not,
    /// Canonical while this token is unchanged.
    Watched(Arc<Token>),
}

/// The watcher that may vouch for entries, and the root it watches from.
/// Weak: the watcher's change hook holds these fingerprints.
struct Watch {
    watcher: Weak<Watcher>,
    /// Replaced when the provider's root resolves elsewhere
    /// ([`Fingerprints::rewatch`]).
    root: std::sync::RwLock<Arc<Path>>,
}

impl Watch {
    fn root(&self) -> Arc<Path> {
        match self.root.read() {
            Ok(r) => Arc::clone(&r),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }
}

/// What is known about one file.
#[derive(Clone)]
struct Seen {
    stamp: Stamp,
    hash: ContentHash,
    watched: Watched,
}

impl Seen {
    /// The token this entry holds, vouching or not.
    fn token(&self) -> Option<Arc<Token>> {
        match &self.watched {
            Watched::Token(token) | Watched::Lapsed(token) | Watched::Forgotten(token) => {
                Some(Arc::clone(token))
            }
            Watched::Untried | Watched::Refused => None,
        }
    }

    /// Whether the change hook was told this file changed.
    fn forgotten(&self) -> bool {
        matches!(self.watched, Watched::Forgotten(_))
    }

    /// Whether the hash still holds for a file whose stamp is `stamp`.
    fn holds_under(&self, stamp: Stamp) -> bool {
        self.stamp == stamp && !self.forgotten()
    }

    /// What a new entry for the same path, with other contents, is watched
    /// by: the token this one held, lapsed.
    fn successor(seen: Option<&Seen>) -> Watched {
        seen.and_then(Seen::token)
            .map_or(Watched::Untried, Watched::Lapsed)
    }
}

/// Whether the watcher vouches for a [`Seen`].
#[derive(Clone)]
enum Watched {
    /// Not tried yet (or no watcher).
    Untried,
    /// Fresh while this token is unchanged.
    Token(Arc<Token>),
    /// Watched before, and the token saw a change: it vouches for nothing,
    /// but keeps the file's names watched (see [`Watcher`]'s pruning), so
    /// a change before the file is watched again still reaches the change
    /// hook and makes the next check re-read it, even a same-length
    /// write within one clock tick that its stamp would not show.
    Lapsed(Arc<Token>),
    /// The change hook was told of a change: whatever the stamp says, the
    /// next check re-reads the file (the token is kept, as for `Lapsed`).
    Forgotten(Arc<Token>),
    /// Not watchable (outside the root, a symlink on the way, too many
    /// directories, more than one hard link): checked by `stat`.
    Refused,
}

impl std::fmt::Debug for Fingerprints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fingerprints")
            .field("entries", &self.memo.entry_count())
            .field("watching", &self.watch.get().is_some())
            .finish()
    }
}

impl Default for Fingerprints {
    fn default() -> Self {
        Self::new(200_000)
    }
}

impl Fingerprints {
    /// A memo holding at most `capacity` files (and as many canonical
    /// paths).
    pub fn new(capacity: u64) -> Self {
        Fingerprints {
            memo: moka::sync::Cache::builder()
                .max_capacity(capacity)
                .build_with_hasher(PathHasher::default()),
            // Stylesheets, DTD files and documents asked for again: a
            // quarter of the files is plenty.
            canonical: moka::sync::Cache::builder()
                .max_capacity((capacity / 4).max(16))
                .build_with_hasher(PathHasher::default()),
            watch: Arc::new(OnceLock::new()),
            trust: Arc::default(),
        }
    }

    /// Believes remembered hashes with no `stat` from now on (in this memo
    /// and every clone of it): `--freshness trust`.
    pub fn trust(&self) {
        self.trust.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Forgets every remembered hash and canonical path: the files changed
    /// (a purge, or SIGHUP under `--freshness trust`).
    pub fn clear(&self) {
        self.memo.invalidate_all();
        self.canonical.invalidate_all();
    }

    /// Lets `watcher` vouch for files under `root` (canonical) from now on,
    /// in this memo and every clone of it. Only the first call counts.
    pub fn watch_with(&self, watcher: &Arc<Watcher>, root: &Path) {
        let _ = self.watch.set(Watch {
            watcher: Arc::downgrade(watcher),
            root: std::sync::RwLock::new(Arc::from(root)),
        });
    }

    /// The watcher vouches for files under `root` (canonical) instead of
    /// the root it was given (the document root resolved elsewhere); call
    /// [`Fingerprints::clear`] with it.
    pub fn rewatch(&self, root: &Path) {
        if let Some(watch) = self.watch.get() {
            match watch.root.write() {
                Ok(mut r) => *r = Arc::from(root),
                Err(poisoned) => *poisoned.into_inner() = Arc::from(root),
            }
        }
    }

    /// The watcher, synced (every change completed before now applied), if
    /// there is one.
    fn synced(&self) -> Option<(Arc<Watcher>, Arc<Path>)> {
        let watch = self.watch.get()?;
        let watcher = watch.watcher.upgrade()?;
        watcher.sync_for_request();
        Some((watcher, watch.root()))
    }

    /// The current content hash of `path`: one `stat` (none when watched),
    /// plus a read when the file changed since it was last hashed.
    pub fn hash(&self, path: &Path) -> io::Result<ContentHash> {
        Ok(self.stamped(path)?.1)
    }

    /// The stamp of `path` with the content hash it has under that stamp:
    /// from the memo when the watcher vouches for it or the stamp matches,
    /// else by reading the file (the stamp is taken before reading, so a
    /// write during the read shows as a different stamp later).
    pub fn stamped(&self, path: &Path) -> io::Result<(Stamp, ContentHash)> {
        let mut seen = self.memo.get(path);
        if let Some(s) = &seen {
            match self.vouches(s) {
                Some(true) => return Ok((s.stamp, s.hash)),
                // Changed: the change hook may have marked the entry
                // forgotten.
                Some(false) => seen = self.memo.get(path),
                None => {}
            }
        }
        let stamp = Stamp::current(path)?;
        if let Some(s) = seen.as_ref().filter(|s| s.holds_under(stamp)) {
            if !matches!(s.watched, Watched::Refused) {
                self.try_watch(path, stamp, s.hash);
            }
            return Ok((stamp, s.hash));
        }
        let watched = Seen::successor(seen.as_ref());
        let bytes = std::fs::read(path)?;
        let hash = ContentHash::of(&bytes);
        // Watched only when checked again: a file seen once (most documents
        // of a big site) costs no watch.
        self.memo.insert(
            path.to_path_buf(),
            Seen {
                stamp,
                hash,
                watched,
            },
        );
        Ok((stamp, hash))
    }

    /// Has the watcher vouch for `path` (seen with `stamp` and `hash`), if
    /// it can: the path must be canonical and under the root, and its stamp
    /// must still be `stamp` while its token is unchanged (a change in
    /// between is caught either way).
    fn try_watch(&self, path: &Path, stamp: Stamp, hash: ContentHash) {
        let Some((watcher, root)) = self.synced() else {
            return;
        };
        // The file is checked for the second time: watched now.
        let known = self.canonical.get(path);
        let token = if stamp.hard_linked() {
            None
        } else {
            self.token_for(known, &watcher, &root, path)
        };
        let watched = match token {
            Some(token) if Stamp::current(path).is_ok_and(|now| now == stamp) => {
                Watched::Token(token)
            }
            Some(_) => return, // changed meanwhile: the next check sees it
            None => Watched::Refused,
        };
        self.memo.insert(
            path.to_path_buf(),
            Seen {
                stamp,
                hash,
                watched,
            },
        );
    }

    /// Notes whether `path` (whose `realpath` is `canonical`) is canonical
    /// and under the root. Nothing is watched yet: a path seen once (most
    /// documents of a big site) costs no watch.
    fn first_sighting(&self, root: &Path, path: &Path, canonical: &Path) {
        let canon = if canonical == path && path.starts_with(root) {
            Canon::Once
        } else {
            Canon::Not
        };
        self.canonical.insert(path.to_path_buf(), canon);
    }

    /// The token for `path` given what is `known` of it: the remembered
    /// one while unchanged, else a new registration (for a path not known
    /// to be non-canonical or outside the root).
    fn token_for(
        &self,
        known: Option<Canon>,
        watcher: &Watcher,
        root: &Path,
        path: &Path,
    ) -> Option<Arc<Token>> {
        match known {
            Some(Canon::Watched(token)) if watcher.unchanged(&token) => Some(token),
            Some(Canon::Not) => None,
            _ if !path.starts_with(root) => None,
            _ => self.watch_canonical(watcher, root, path),
        }
    }

    /// Registers `path` (seen canonical before) with the watcher and
    /// verifies by one `realpath` that it still is (a change after
    /// registering shows in the token); the token is remembered and shared
    /// by both memos.
    fn watch_canonical(&self, watcher: &Watcher, root: &Path, path: &Path) -> Option<Arc<Token>> {
        let token = Arc::new(watcher.register(root, [path])?);
        if path.canonicalize().ok()? != path {
            self.canonical.insert(path.to_path_buf(), Canon::Not);
            return None;
        }
        self.canonical
            .insert(path.to_path_buf(), Canon::Watched(Arc::clone(&token)));
        Some(token)
    }

    /// `std::fs::canonicalize(path)`; for a canonical path under the
    /// watched root seen more than once, no `realpath` while the watcher
    /// sees no change on its way.
    pub fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let Some(watch) = self.watch.get() else {
            return path.canonicalize();
        };
        let known = match self.canonical.get(path) {
            Some(Canon::Not) => return path.canonicalize(),
            Some(known) => known,
            None => {
                // First sighting: no watch, no sync.
                let canonical = path.canonicalize()?;
                self.first_sighting(&watch.root(), path, &canonical);
                return Ok(canonical);
            }
        };
        let token = self
            .synced()
            .and_then(|(watcher, root)| self.token_for(Some(known), &watcher, &root, path));
        match token {
            Some(_) => Ok(path.to_path_buf()),
            None => path.canonicalize(),
        }
    }

    /// Whether the memo's `seen` is current with no I/O: `Some(true)` when
    /// believed (`--freshness trust`) or when the watcher, synced, vouches
    /// for its token; `Some(false)` when the watcher saw a change; `None`
    /// when nothing can tell without a `stat`.
    fn vouches(&self, seen: &Seen) -> Option<bool> {
        if !seen.forgotten() && self.trust.load(std::sync::atomic::Ordering::Relaxed) {
            return Some(true);
        }
        let Watched::Token(token) = &seen.watched else {
            return None;
        };
        let (watcher, _) = self.synced()?;
        Some(watcher.unchanged(token))
    }

    /// The current stamp of `path`: the memo's when it is vouched for (no
    /// I/O), else one `stat` ([`Stamp::current`]).
    pub fn current_stamp(&self, path: &Path) -> io::Result<Stamp> {
        match self.memo.get(path) {
            Some(seen) if self.vouches(&seen) == Some(true) => Ok(seen.stamp),
            _ => Stamp::current(path),
        }
    }

    /// The stamp under which `path` was last seen to have content `hash`,
    /// if the memo still says so.
    pub fn stamp_for(&self, path: &Path, hash: &ContentHash) -> Option<Stamp> {
        self.memo
            .get(path)
            .filter(|s| s.hash == *hash && !s.forgotten())
            .map(|s| s.stamp)
    }

    /// Forgets what is known about `path` (it changed): the next check
    /// re-reads it even if its stamp looks the same.
    pub fn forget(&self, path: &Path) {
        // An entry holding a token is kept, marked: the file's names stay
        // watched, so a second change before the next check is told here
        // too.
        let marked = self.memo.get(path).and_then(|seen| {
            let watched = Watched::Forgotten(seen.token()?);
            Some(Seen { watched, ..seen })
        });
        match marked {
            Some(seen) => self.memo.insert(path.to_path_buf(), seen),
            None => self.memo.invalidate(path),
        }
        self.canonical.invalidate(path);
    }

    /// Reads `path`, returning its bytes and their hash, and memoizes the
    /// hash under the stamp taken *before* reading (a write during the read
    /// changes the stamp, so the next check re-hashes).
    pub fn read(&self, path: &Path) -> io::Result<(Vec<u8>, ContentHash)> {
        let before = Stamp::current(path)?;
        let bytes = std::fs::read(path)?;
        let hash = ContentHash::of(&bytes);
        // What the watcher vouched for still holds if nothing changed.
        let watched = match self.memo.get(path) {
            Some(s) if s.holds_under(before) && s.hash == hash => s.watched,
            seen => Seen::successor(seen.as_ref()),
        };
        self.memo.insert(
            path.to_path_buf(),
            Seen {
                stamp: before,
                hash,
                watched,
            },
        );
        Ok((bytes, hash))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_change_the_hash_and_unchanged_files_are_not_reread() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.xml");
        std::fs::write(&p, "one").unwrap();
        let f = Fingerprints::default();
        let h1 = f.hash(&p).unwrap();
        assert_eq!(h1, ContentHash::of(b"one"));
        assert_eq!(f.hash(&p).unwrap(), h1);
        std::fs::write(&p, "two!").unwrap();
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"two!"));
        std::fs::remove_file(&p).unwrap();
        assert!(f.hash(&p).is_err());
    }

    #[test]
    fn stamped_works_with_and_without_the_memo() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.xml");
        std::fs::write(&p, "one").unwrap();
        let f = Fingerprints::new(10);
        let (stamp, hash) = f.stamped(&p).unwrap();
        assert_eq!(hash, ContentHash::of(b"one"));
        assert_eq!(stamp, Stamp::current(&p).unwrap());
        f.forget(&p);
        assert_eq!(f.stamp_for(&p, &hash), None);
        assert_eq!(f.stamped(&p).unwrap(), (stamp, hash));
        assert_eq!(f.stamp_for(&p, &hash), Some(stamp));
    }

    /// Fingerprints vouched for by a watcher on `root`, as the pipeline
    /// wires them (the watcher forgets changed names).
    fn watched(root: &Path) -> (Fingerprints, Arc<Watcher>) {
        let f = Fingerprints::new(100);
        let forget = f.clone();
        let watcher =
            Arc::new(Watcher::new(100, Some(Box::new(move |p: &Path| forget.forget(p)))).unwrap());
        f.watch_with(&watcher, root);
        (f, watcher)
    }

    fn vouched(f: &Fingerprints, p: &Path) -> bool {
        f.memo
            .get(p)
            .is_some_and(|s| matches!(s.watched, Watched::Token(_)))
    }

    #[test]
    fn the_current_stamp_comes_from_the_memo_only_while_the_watcher_vouches() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let p = root.join("a.xml");
        std::fs::write(&p, "one").unwrap();
        let (f, _w) = watched(&root);
        let vouched_now = |f: &Fingerprints| f.memo.get(&p).and_then(|s| f.vouches(&s));
        assert_eq!(vouched_now(&f), None, "never seen");
        assert_eq!(f.current_stamp(&p).unwrap(), Stamp::current(&p).unwrap());
        f.stamped(&p).unwrap();
        f.stamped(&p).unwrap(); // watched from the second check on
        assert_eq!(vouched_now(&f), Some(true));
        let now = Stamp::current(&p).unwrap();
        assert_eq!(f.current_stamp(&p).unwrap(), now);
        assert_eq!(
            now.modified(),
            Some(std::fs::metadata(&p).unwrap().modified().unwrap())
        );
        assert_eq!(now.size(), 3);
        // A new modification time with the same bytes (touch): the memo's
        // stamp is no longer vouched for, and the current one is read.
        let later =
            std::fs::metadata(&p).unwrap().modified().unwrap() + std::time::Duration::from_secs(7);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_ne!(vouched_now(&f), Some(true));
        assert_eq!(f.current_stamp(&p).unwrap().modified(), Some(later));
        f.stamped(&p).unwrap();
        f.stamped(&p).unwrap();
        assert_eq!(vouched_now(&f), Some(true));
        assert_eq!(f.current_stamp(&p).unwrap().modified(), Some(later));
        std::fs::remove_file(&p).unwrap();
        assert!(f.current_stamp(&p).is_err());
    }

    #[test]
    fn watched_entries_see_every_change_without_a_stat() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let p = root.join("sub/a.xml");
        std::fs::write(&p, "one").unwrap();
        let (f, _watcher) = watched(&root);
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"one"));
        assert!(!vouched(&f, &p), "seen once: not watched yet");
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"one"));
        assert!(vouched(&f, &p), "a canonical path seen again is watched");
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"one"));
        // Written in place, same length: seen at once.
        std::fs::write(&p, "two").unwrap();
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"two"));
        // Replaced by a rename.
        std::fs::write(root.join("sub/.tmp"), "three").unwrap();
        std::fs::rename(root.join("sub/.tmp"), &p).unwrap();
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"three"));
        // A directory on the way swapped for another.
        std::fs::create_dir(root.join("next")).unwrap();
        std::fs::write(root.join("next/a.xml"), "four").unwrap();
        std::fs::rename(root.join("sub"), root.join("old")).unwrap();
        std::fs::rename(root.join("next"), root.join("sub")).unwrap();
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"four"));
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"four"));
        assert!(vouched(&f, &p));
        std::fs::remove_file(&p).unwrap();
        assert!(f.hash(&p).is_err());
    }

    #[test]
    fn a_changed_file_stays_watched_until_it_is_watched_again() {
        // Between a change and the check that watches the file again, only
        // the change hook can tell a second same-length write within one
        // clock tick (same stamp) from no write: the file's names must stay
        // watched through the watcher's pruning of names no token holds.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let p = root.join("a.xml");
        std::fs::write(&p, "one").unwrap();
        let (f, watcher) = watched(&root);
        f.hash(&p).unwrap();
        f.hash(&p).unwrap();
        assert!(vouched(&f, &p));
        let state = |f: &Fingerprints| f.memo.get(&p).map(|s| s.watched);
        std::fs::write(&p, "two").unwrap();
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"two"));
        assert!(matches!(state(&f), Some(Watched::Lapsed(_))));
        // Enough other names registered and dropped to prune the map.
        for i in 0..3 * crate::cache::watch::PRUNE_FLOOR {
            watcher.register(&root, [root.join(format!("n{i}")).as_path()]);
        }
        std::fs::write(&p, "tre").unwrap();
        watcher.sync();
        assert!(
            matches!(state(&f), Some(Watched::Forgotten(_))),
            "the second change reached the hook"
        );
        assert_eq!(f.stamp_for(&p, &ContentHash::of(b"two")), None);
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"tre"));
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"tre"));
        assert!(vouched(&f, &p), "watched again");
    }

    #[test]
    fn timestamps_are_counted_in_nanoseconds() {
        assert_eq!(nanos(3, 7), 3_000_000_007);
        assert_eq!(nanos(0, 999_999_999), 999_999_999);
        assert_ne!(nanos(1, 0), nanos(0, 1));
        assert_ne!(nanos(2, 0), nanos(1, 0));
        assert_eq!(nanos(-1, 500_000_000), -500_000_000);
    }

    #[test]
    fn a_file_that_changed_between_its_read_and_its_watch_is_not_vouched_for() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let p = root.join("a.xml");
        std::fs::write(&p, "one").unwrap();
        let (f, _watcher) = watched(&root);
        let (read_at, hash) = f.stamped(&p).unwrap();
        std::fs::write(&p, "three").unwrap();
        // Watched now, with the stamp the read saw: the file has another.
        f.try_watch(&p, read_at, hash);
        assert!(!vouched(&f, &p));
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"three"));
    }

    #[test]
    fn hard_linked_files_are_checked_by_stat() {
        // A write through a second name raises an event only for that
        // name: the watcher cannot vouch for a file with two.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let p = root.join("a.xml");
        std::fs::write(&p, "one").unwrap();
        std::fs::hard_link(&p, root.join("b.xml")).unwrap();
        let (f, _watcher) = watched(&root);
        for _ in 0..3 {
            assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"one"));
        }
        assert!(!vouched(&f, &p));
        std::fs::write(root.join("b.xml"), "two").unwrap();
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"two"));
    }

    #[test]
    fn paths_through_symlinks_are_checked_by_stat() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (d, text) in [("real", "one"), ("other", "two")] {
            std::fs::create_dir(root.join(d)).unwrap();
            std::fs::write(root.join(d).join("a.xml"), text).unwrap();
        }
        std::os::unix::fs::symlink("real", root.join("link")).unwrap();
        let p = root.join("link/a.xml");
        let (f, _watcher) = watched(&root);
        // Checked twice, as a canonical path would need to be watched.
        for _ in 0..2 {
            assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"one"));
            assert_eq!(f.canonicalize(&p).unwrap(), root.join("real/a.xml"));
        }
        assert!(!vouched(&f, &p));
        assert!(matches!(f.canonical.get(&p), Some(Canon::Not)));
        std::fs::remove_file(root.join("link")).unwrap();
        std::os::unix::fs::symlink("other", root.join("link")).unwrap();
        assert_eq!(f.hash(&p).unwrap(), ContentHash::of(b"two"));
        assert_eq!(f.canonicalize(&p).unwrap(), root.join("other/a.xml"));
    }

    #[test]
    fn remembered_canonical_paths_follow_changes_on_their_way() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["sub", "elsewhere"] {
            std::fs::create_dir(root.join(d)).unwrap();
            std::fs::write(root.join(d).join("a.xml"), d).unwrap();
        }
        let p = root.join("sub/a.xml");
        let (f, _watcher) = watched(&root);
        let watched = |q: &Path| matches!(f.canonical.get(q), Some(Canon::Watched(_)));
        assert_eq!(f.canonicalize(&p).unwrap(), p);
        assert!(!watched(&p), "seen once");
        assert_eq!(f.canonicalize(&p).unwrap(), p);
        assert!(watched(&p), "seen again: remembered while watched");
        assert_eq!(f.canonicalize(&p).unwrap(), p);
        // The directory becomes a symlink: the path is no longer canonical.
        std::fs::rename(root.join("sub"), root.join("gone")).unwrap();
        std::os::unix::fs::symlink("elsewhere", root.join("sub")).unwrap();
        assert_eq!(f.canonicalize(&p).unwrap(), root.join("elsewhere/a.xml"));
        std::fs::remove_file(root.join("sub")).unwrap();
        assert!(f.canonicalize(&p).is_err());
        // Without a watcher nothing is remembered.
        let plain = Fingerprints::new(10);
        let q = root.join("elsewhere/a.xml");
        assert_eq!(plain.canonicalize(&q).unwrap(), q);
        assert_eq!(plain.canonicalize(&q).unwrap(), q);
        assert!(plain.canonical.get(&q).is_none());
    }
}
