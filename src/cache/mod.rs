//! Caching: content hashes and keys (`key`), the stat-memoized file hashes
//! that make freshness checks cheap (`fingerprint`), and the bounded,
//! byte-weighed output store (`store`) that coalesces concurrent misses
//! and keeps incremental mode's traces,
//! the hot-response memo (`hot`) and the directory watches that let it
//! skip even the `stat`s (`watch`), and the precompressed gzip/brotli
//! variants of a cached body (`variants`), and the shared tier in Redis
//! that several instances use together (`redis`).
//!
//! The cache never decides *what* a key covers for a stage; the pipeline
//! builds keys here from content hashes only.

mod disk;
mod fingerprint;
mod hot;
mod key;
mod redis;
mod store;
mod tier;
mod variants;
mod watch;

pub use self::redis::{
    DEFAULT_LOCK_WAIT, DEFAULT_MAX_ENTRY, DEFAULT_PREFIX, DEFAULT_TIMEOUT, DEFAULT_TTL, RedisTier,
    SharedCacheError, SharedCacheSettings,
};
pub use disk::DiskTier;
pub use fingerprint::{Fingerprints, Stamp};
pub use hot::{Check, HotEntry, HotMemo, Validity, Weight};
pub use key::{
    Collecting, ContentHash, FieldKey, FieldKeyBuilder, Fields, Hashing, KEY_CONTEXT, Key,
    KeyBuilder, Sink,
};
pub use store::{Entry, Found, Purged, Store, Tier};
pub use tier::{BoxFuture, Cache, TierStats, Tiers};
pub use variants::{
    BROTLI_QUALITY, BROTLI_WINDOW, Encoding, GZIP_LEVEL, MIN_COMPRESS_LEN, MIN_SAVING_DIVISOR,
    Variant, Variants, compress, worth_compressing,
};
pub use watch::{SyncedSince, Token, Watcher};

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A file an output was computed from, beyond those in its key (a
/// `document()` target, an external entity, a DTD), with the content hash it
/// had, or [`ContentHash::ABSENT`] when a load found no file there (so the
/// output changes when one appears). An entry whose dependency changed is
/// stale.
///
/// A file reached through a symlink is also a dependency on every link on
/// the way: `via` keeps the name it was reached by, and the dependency
/// holds only while that name still resolves to `path` (a re-pointed link,
/// a link replaced by a file or a file by a link, a swapped directory link
/// all change that).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Dep {
    /// Absolute canonical path (under the root).
    pub path: PathBuf,
    /// Content hash when read, or [`ContentHash::ABSENT`].
    pub hash: ContentHash,
    /// The absolute path the file was named by, when symlinks made it
    /// differ from `path`.
    pub via: Option<Arc<Path>>,
}

impl Dep {
    /// A dependency on the file at canonical `path` with content `hash`,
    /// named by that path itself.
    pub fn new(path: PathBuf, hash: ContentHash) -> Dep {
        Dep {
            path,
            hash,
            via: None,
        }
    }

    /// A load that found nothing at `path`.
    pub fn absent(path: PathBuf) -> Dep {
        Dep::new(path, ContentHash::ABSENT)
    }

    /// The path to check the file's identity and stamp through: the name it
    /// was reached by (a `stat` follows the links on it).
    pub fn named_path(&self) -> &Path {
        self.via.as_deref().unwrap_or(&self.path)
    }

    /// Is the file as it was when the output was computed: the same hash,
    /// or still no file where there was none, and, for a file reached
    /// through symlinks, does its name still lead to it?
    pub fn unchanged(&self, fingerprints: &Fingerprints) -> bool {
        if self.hash == ContentHash::ABSENT {
            // A stat, every time: absent files are not memoized or watched.
            return std::fs::metadata(&self.path).is_err();
        }
        if let Some(via) = &self.via {
            // A name through a link is never vouched for by the watcher
            // (a link reached through another could change without an
            // event on either path): resolved again, every time.
            if !fingerprints
                .canonicalize(via)
                .is_ok_and(|now| now == self.path)
            {
                return false;
            }
        }
        fingerprints.hash(&self.path).is_ok_and(|h| h == self.hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependency_through_a_link_holds_only_while_the_link_leads_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (name, text) in [("one.xml", "same"), ("two.xml", "same")] {
            std::fs::write(root.join(name), text).unwrap();
        }
        std::os::unix::fs::symlink("one.xml", root.join("data.xml")).unwrap();
        let f = Fingerprints::default();
        let hash = f.hash(&root.join("one.xml")).unwrap();
        let dep = Dep {
            path: root.join("one.xml"),
            hash,
            via: Some(Arc::from(root.join("data.xml"))),
        };
        assert!(dep.unchanged(&f));
        assert_eq!(dep.named_path(), root.join("data.xml"));
        // Re-pointed to a file with the very same content: still another
        // file (its own edits would no longer reach the recorded path).
        std::fs::remove_file(root.join("data.xml")).unwrap();
        std::os::unix::fs::symlink("two.xml", root.join("data.xml")).unwrap();
        assert!(!dep.unchanged(&f));
        // Replaced by a regular file.
        std::fs::remove_file(root.join("data.xml")).unwrap();
        std::fs::write(root.join("data.xml"), "same").unwrap();
        assert!(!dep.unchanged(&f));
        // A dependency named canonically needs no link to hold.
        assert!(Dep::new(root.join("one.xml"), hash).unchanged(&f));
    }
}
