//! The disk tier's in-memory index: which keys have a file, how big each
//! is, when each was last used, and its document URL (for purge by
//! prefix). Rebuilt at open by scanning the directory's headers; kept in
//! step by the writer (writes, evictions, purges) and by reads (hits move
//! an entry's tick, rejected files leave).

use std::collections::HashMap;
use std::sync::Arc;

use crate::cache::Key;

/// One file's record.
#[derive(Debug, Clone)]
pub(super) struct Slot {
    /// The file's size in bytes.
    pub size: u64,
    /// When it was last written or read (a logical clock).
    pub tick: u64,
    /// The document URL.
    pub url: Option<Arc<str>>,
}

/// Key → [`Slot`], with the total of their sizes.
#[derive(Debug, Default)]
pub(super) struct Index {
    map: HashMap<Key, Slot>,
    bytes: u64,
    /// Has the scan at open finished? Until then a key missing here may
    /// still have a file, and reads look on disk.
    pub scanned: bool,
}

impl Index {
    /// Entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The size of `key`'s file, if there is a record for it.
    pub fn size(&self, key: &Key) -> Option<u64> {
        self.map.get(key).map(|s| s.size)
    }

    /// Records (or replaces) `key`'s file.
    pub fn insert(&mut self, key: Key, slot: Slot) {
        self.bytes += slot.size;
        if let Some(old) = self.map.insert(key, slot) {
            self.bytes -= old.size;
        }
    }

    /// Records `key`'s file unless it is known already (the scan meeting a
    /// file a read or a write got to first).
    pub fn insert_if_absent(&mut self, key: Key, slot: Slot) {
        if !self.map.contains_key(&key) {
            self.insert(key, slot);
        }
    }

    /// Marks `key` used at `tick`; false when it has no record.
    pub fn touch(&mut self, key: &Key, tick: u64) -> bool {
        match self.map.get_mut(key) {
            Some(slot) => {
                slot.tick = slot.tick.max(tick);
                true
            }
            None => false,
        }
    }

    /// Forgets `key`.
    pub fn remove(&mut self, key: &Key) -> Option<Slot> {
        let slot = self.map.remove(key)?;
        self.bytes -= slot.size;
        Some(slot)
    }

    /// Forgets the least recently used entries until at most `target`
    /// bytes are held, and returns their keys (whose files the caller
    /// deletes). An O(n log n) sort, run only when over the capacity.
    pub fn evict_to(&mut self, target: u64) -> Vec<Key> {
        if self.bytes <= target {
            return Vec::new();
        }
        let mut by_age: Vec<(u64, Key)> = self.map.iter().map(|(k, s)| (s.tick, *k)).collect();
        by_age.sort_unstable_by_key(|&(tick, _)| tick);
        let mut out = Vec::new();
        for (_, key) in by_age {
            if self.bytes <= target {
                break;
            }
            self.remove(&key);
            out.push(key);
        }
        out
    }

    /// Forgets every entry whose URL starts with `prefix` (every entry
    /// when None) and returns their keys.
    pub fn take_matching(&mut self, prefix: Option<&str>) -> Vec<Key> {
        let keys: Vec<Key> = self
            .map
            .iter()
            .filter(|(_, s)| match prefix {
                None => true,
                Some(p) => s.url.as_deref().is_some_and(|u| u.starts_with(p)),
            })
            .map(|(k, _)| *k)
            .collect();
        for k in &keys {
            self.remove(k);
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(size: u64, tick: u64, url: &str) -> Slot {
        Slot {
            size,
            tick,
            url: Some(url.into()),
        }
    }

    #[test]
    fn sizes_add_up_through_replacement_and_removal() {
        let mut ix = Index::default();
        let a = Key::from_bytes([1; 32]);
        ix.insert(a, slot(10, 1, "/a"));
        ix.insert(a, slot(30, 2, "/a"));
        ix.insert_if_absent(a, slot(99, 0, "/a"));
        assert_eq!((ix.len(), ix.bytes()), (1, 30));
        assert!(ix.touch(&a, 5));
        assert!(!ix.touch(&Key::from_bytes([2; 32]), 5));
        assert_eq!(ix.remove(&a).map(|s| s.tick), Some(5));
        assert_eq!((ix.len(), ix.bytes()), (0, 0));
    }

    #[test]
    fn eviction_takes_the_oldest_first() {
        let mut ix = Index::default();
        for i in 0..10u8 {
            ix.insert(Key::from_bytes([i; 32]), slot(10, u64::from(i), "/x"));
        }
        let gone = ix.evict_to(75);
        assert_eq!(
            gone,
            (0..3u8)
                .map(|i| Key::from_bytes([i; 32]))
                .collect::<Vec<_>>()
        );
        assert_eq!(ix.bytes(), 70);
    }
}
