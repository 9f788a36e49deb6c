//! Caching: content hashes and keys (`key`), the stat-memoized file hashes
//! that make freshness checks cheap (`fingerprint`), and the bounded,
//! byte-weighed output store (`store`) that coalesces concurrent misses
//! and keeps incremental mode's traces,
//! the hot-response memo (`hot`) and the directory watches that let it
//! skip even the `stat`s (`watch`).
//!
//! The cache never decides *what* a key covers for a stage; the pipeline
//! builds keys here from content hashes only.

mod fingerprint;
mod hot;
mod key;
mod store;
mod watch;

pub use fingerprint::{Fingerprints, Stamp};
pub use hot::{HotEntry, HotMemo, Validity, Weight};
pub use key::{
    Collecting, ContentHash, FieldKey, FieldKeyBuilder, Fields, Hashing, KEY_CONTEXT, Key,
    KeyBuilder, Sink,
};
pub use store::{Entry, Store, Tier};
pub use watch::{Token, Watcher};

use std::path::PathBuf;

/// A file an output was computed from, beyond those in its key (a
/// `document()` target, an external entity, a DTD), with the content hash it
/// had, or [`ContentHash::ABSENT`] when a load found no file there (so the
/// output changes when one appears). An entry whose dependency changed is
/// stale.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Dep {
    /// Absolute path (under the root).
    pub path: PathBuf,
    /// Content hash when read, or [`ContentHash::ABSENT`].
    pub hash: ContentHash,
}

impl Dep {
    /// A load that found nothing at `path`.
    pub fn absent(path: PathBuf) -> Dep {
        Dep {
            path,
            hash: ContentHash::ABSENT,
        }
    }

    /// Is the file as it was when the output was computed: the same hash,
    /// or still no file where there was none?
    pub fn unchanged(&self, fingerprints: &Fingerprints) -> bool {
        if self.hash == ContentHash::ABSENT {
            // A stat, every time: absent files are not memoized or watched.
            return std::fs::metadata(&self.path).is_err();
        }
        fingerprints.hash(&self.path).is_ok_and(|h| h == self.hash)
    }
}
