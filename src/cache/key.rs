//! Content hashes and cache keys: the only place keys are derived.
//!
//! A key is a blake3 `derive_key` hash under a versioned context string, over
//! length-prefixed fields, so no two different field lists can collide by
//! concatenation. Changing what a key covers means bumping [`KEY_CONTEXT`].
//! Keys are built from content hashes only: paths and mtimes merely memoize
//! those hashes (see `fingerprint`).

use std::fmt;

/// Versioned domain of every Axle cache key.
pub const KEY_CONTEXT: &str = "axle 2026-11-30 cache key v1";

/// The blake3 hash of some bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash([u8; 32]);

impl ContentHash {
    /// Hashes `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        ContentHash(*blake3::hash(bytes).as_bytes())
    }

    /// The raw hash.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lower-case hex of the first `n` bytes (at most 32).
    pub fn hex(&self, n: usize) -> String {
        let mut s = String::with_capacity(2 * n);
        push_hex(&mut s, &self.0[..n.min(self.0.len())]);
        s
    }

    /// The strong ETag value for a body with this hash.
    pub fn etag(&self) -> String {
        let mut s = String::with_capacity(34);
        s.push('"');
        push_hex(&mut s, &self.0[..16]);
        s.push('"');
        s
    }
}

/// Appends `bytes` in lower-case hex (on every response's ETag: no
/// formatting machinery).
fn push_hex(s: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentHash({})", self.hex(8))
    }
}

/// A cache key: what a cache entry is stored under.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key([u8; 32]);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex: String = self.0.iter().take(8).map(|b| format!("{b:02x}")).collect();
        write!(f, "Key({hex})")
    }
}

/// Builds a [`Key`] field by field.
#[derive(Debug, Clone)]
pub struct KeyBuilder(blake3::Hasher);

impl KeyBuilder {
    /// Starts a key of the given kind (e.g. `"stage"`, `"response"`).
    pub fn new(kind: &str) -> Self {
        let mut b = KeyBuilder(blake3::Hasher::new_derive_key(KEY_CONTEXT));
        b.bytes(kind.as_bytes());
        b
    }

    /// Adds a length-prefixed byte field.
    pub fn bytes(&mut self, field: &[u8]) -> &mut Self {
        self.0.update(&(field.len() as u64).to_le_bytes());
        self.0.update(field);
        self
    }

    /// Adds a string field.
    pub fn str(&mut self, field: &str) -> &mut Self {
        self.bytes(field.as_bytes())
    }

    /// Adds a content hash.
    pub fn hash(&mut self, h: &ContentHash) -> &mut Self {
        self.bytes(h.as_bytes())
    }

    /// Adds an integer.
    pub fn u64(&mut self, n: u64) -> &mut Self {
        self.bytes(&n.to_le_bytes())
    }

    /// Finishes the key.
    pub fn finish(&self) -> Key {
        Key(*self.0.finalize().as_bytes())
    }

    /// Finishes as a content hash (for combined hashes such as a
    /// stylesheet's closure).
    pub fn finish_hash(&self) -> ContentHash {
        ContentHash(*self.0.finalize().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_length_prefixed() {
        let a = KeyBuilder::new("k").str("ab").str("c").finish();
        let b = KeyBuilder::new("k").str("a").str("bc").finish();
        assert_ne!(a, b);
    }

    #[test]
    fn kinds_separate_domains() {
        assert_ne!(
            KeyBuilder::new("stage").finish(),
            KeyBuilder::new("response").finish()
        );
    }

    #[test]
    fn etag_is_quoted_hex() {
        let e = ContentHash::of(b"x").etag();
        assert_eq!(e.len(), 34);
        assert!(e.starts_with('"') && e.ends_with('"'));
        let h = ContentHash::of(b"x");
        let slow: String = h.0.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(h.hex(32), slow);
        assert_eq!(e, format!("\"{}\"", &slow[..32]));
    }
}
