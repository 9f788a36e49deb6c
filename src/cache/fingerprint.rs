//! Memoized content hashes of files: the freshness check of every request.
//!
//! Salsa-style verification with a stat as the revision: a file's hash is
//! recomputed only when its `(mtime, ctime, size, inode)` stamp changes, so a
//! cache hit costs one `stat` per file it depends on and never re-reads or
//! re-hashes an unchanged file.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::key::ContentHash;

/// What a `stat` says about a file's identity and version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    mtime_ns: i128,
    ctime_ns: i128,
    size: u64,
    inode: u64,
    device: u64,
}

impl Stamp {
    /// The current stamp of `path` (following symlinks).
    pub fn current(path: &Path) -> io::Result<Stamp> {
        Ok(Stamp::of(&std::fs::metadata(path)?))
    }

    /// The stamp of `meta`.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        Stamp {
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            size: meta.size(),
            inode: meta.ino(),
            device: meta.dev(),
        }
    }
}

/// A bounded memo `path → (stamp, content hash)`.
#[derive(Clone)]
pub struct Fingerprints {
    memo: moka::sync::Cache<PathBuf, (Stamp, ContentHash)>,
}

impl std::fmt::Debug for Fingerprints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fingerprints")
            .field("entries", &self.memo.entry_count())
            .finish()
    }
}

impl Default for Fingerprints {
    fn default() -> Self {
        Self::new(200_000)
    }
}

impl Fingerprints {
    /// A memo holding at most `capacity` files.
    pub fn new(capacity: u64) -> Self {
        Fingerprints {
            memo: moka::sync::Cache::new(capacity),
        }
    }

    /// The current content hash of `path`: one `stat`, plus a read when the
    /// file changed since it was last hashed.
    pub fn hash(&self, path: &Path) -> io::Result<ContentHash> {
        Ok(self.stamped(path)?.1)
    }

    /// The stamp of `path` with the content hash it has under that stamp:
    /// from the memo when the stamp matches, else by reading the file (the
    /// stamp is taken before reading, so a write during the read shows as a
    /// different stamp later).
    pub fn stamped(&self, path: &Path) -> io::Result<(Stamp, ContentHash)> {
        let stamp = Stamp::of(&std::fs::metadata(path)?);
        if let Some((seen, hash)) = self.memo.get(path) {
            if seen == stamp {
                return Ok((stamp, hash));
            }
        }
        let bytes = std::fs::read(path)?;
        let hash = ContentHash::of(&bytes);
        self.memo.insert(path.to_path_buf(), (stamp, hash));
        Ok((stamp, hash))
    }

    /// The stamp under which `path` was last seen to have content `hash`,
    /// if the memo still says so.
    pub fn stamp_for(&self, path: &Path, hash: &ContentHash) -> Option<Stamp> {
        self.memo
            .get(path)
            .filter(|(_, h)| h == hash)
            .map(|(stamp, _)| stamp)
    }

    /// Forgets what is known about `path` (it changed): the next check
    /// re-reads it even if its stamp looks the same.
    pub fn forget(&self, path: &Path) {
        self.memo.invalidate(path);
    }

    /// Reads `path`, returning its bytes and their hash, and memoizes the
    /// hash under the stamp taken *before* reading (a write during the read
    /// changes the stamp, so the next check re-hashes).
    pub fn read(&self, path: &Path) -> io::Result<(Vec<u8>, ContentHash)> {
        let before = Stamp::of(&std::fs::metadata(path)?);
        let bytes = std::fs::read(path)?;
        let hash = ContentHash::of(&bytes);
        self.memo.insert(path.to_path_buf(), (before, hash));
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
}
