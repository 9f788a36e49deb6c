//! Does a produced source repeat itself? Incremental mode stores every
//! stage of a render under keys over its input, which pays off only when
//! an input comes back. A source produced per request (a program's
//! output, an upstream's answer) whose output changes on every request
//! never comes back: walking its stages one pool job each, hashing each
//! intermediate tree and storing outputs, traces and responses nobody
//! reads again made incremental mode slower than all-or-nothing on such a
//! front (callgrind, a changing `command` front: see docs/performance.md).
//!
//! So each URL of a produced source is observed: after [`LEAN_AFTER`]
//! walks in a row that reused nothing, its renders run *lean* (the whole
//! chain in one pool job, nothing stored: what `all` mode does with an
//! uncacheable source), while its source's hash (computed anyway) is
//! still compared with the last few seen, so a source that comes back is
//! walked (and stored) again at once. Every [`PROBE_EVERY`]th lean render
//! is walked anyway, so a source whose first stage drops what changes
//! (early cut-off) is noticed too. Bytes are the same either way: the
//! modes give the same bytes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::cache::ContentHash;

/// Walks in a row that reused nothing before a URL's renders run lean.
pub(super) const LEAN_AFTER: u32 = 16;
/// One lean render in this many is walked (a probe).
pub(super) const PROBE_EVERY: u32 = 64;
/// Source hashes remembered per URL (a repeat among them is walked).
const RECENT: usize = 8;
/// URLs observed at most (all forgotten past it: they start over).
const MAX_URLS: usize = 4096;

/// The observations, by URL.
#[derive(Debug, Default)]
pub(super) struct Repeats {
    urls: Mutex<HashMap<Arc<str>, Seen>>,
}

/// What was seen of one URL's source.
#[derive(Debug, Default)]
struct Seen {
    /// Walks in a row that reused nothing.
    misses: u32,
    /// Lean renders so far (every [`PROBE_EVERY`]th is walked).
    lean: u32,
    /// The last sources' hashes (their first 8 bytes, never 0; 0: empty).
    recent: [u64; RECENT],
    next: usize,
}

impl Seen {
    fn remember(&mut self, tag: u64) {
        if !self.recent.contains(&tag) {
            self.recent[self.next] = tag;
            self.next = (self.next + 1) % RECENT;
        }
    }
}

/// A source hash's tag: its first 8 bytes, never 0.
fn tag(hash: ContentHash) -> u64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_le_bytes(first) | 1
}

impl Repeats {
    /// Should this render of `url`, its source hashed `hash`, run lean
    /// (no walk, nothing stored)? Yes once `url`'s walks reused nothing
    /// [`LEAN_AFTER`] times in a row, unless `hash` is one of its last
    /// sources or this is a probe.
    pub(super) fn lean(&self, url: &str, hash: ContentHash) -> bool {
        let mut urls = self.urls.lock().unwrap_or_else(|e| e.into_inner());
        let Some(seen) = urls.get_mut(url) else {
            return false;
        };
        let tag = tag(hash);
        if seen.misses < LEAN_AFTER || seen.recent.contains(&tag) {
            return false;
        }
        seen.lean = seen.lean.wrapping_add(1);
        if seen.lean % PROBE_EVERY == 0 {
            return false;
        }
        seen.remember(tag);
        true
    }

    /// Records a walk of `url` with source `hash`: did it reuse anything
    /// (a stored stage, response or trace)?
    pub(super) fn walked(&self, url: &str, hash: ContentHash, reused: bool) {
        let mut urls = self.urls.lock().unwrap_or_else(|e| e.into_inner());
        if !urls.contains_key(url) && urls.len() >= MAX_URLS {
            urls.clear();
        }
        let seen = match urls.get_mut(url) {
            Some(seen) => seen,
            None => urls.entry(Arc::from(url)).or_default(),
        };
        seen.misses = match reused {
            true => 0,
            false => seen.misses.saturating_add(1),
        };
        seen.remember(tag(hash));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(n: u32) -> ContentHash {
        ContentHash::of(&n.to_le_bytes())
    }

    #[test]
    fn a_source_that_never_repeats_runs_lean_after_enough_misses() {
        let r = Repeats::default();
        assert!(!r.lean("/a", hash(0)), "nothing seen yet");
        for n in 0..LEAN_AFTER {
            assert!(!r.lean("/a", hash(n)));
            r.walked("/a", hash(n), false);
        }
        assert!(r.lean("/a", hash(1000)));
        assert!(!r.lean("/b", hash(1000)), "by URL");
        // A source seen lately is walked (it may be stored now).
        assert!(!r.lean("/a", hash(LEAN_AFTER - 1)));
        assert!(!r.lean("/a", hash(1000)), "remembered from its lean run");
    }

    #[test]
    fn a_walk_that_reused_something_starts_over_and_probes_are_walked() {
        let r = Repeats::default();
        for n in 0..LEAN_AFTER {
            r.walked("/a", hash(n), false);
        }
        let walked = (0..PROBE_EVERY * 2)
            .filter(|n| !r.lean("/a", hash(10_000 + n)))
            .count();
        assert_eq!(walked, 2, "one probe in {PROBE_EVERY}");
        r.walked("/a", hash(5), true);
        assert!(!r.lean("/a", hash(20_000)), "it reused something");
    }
}
