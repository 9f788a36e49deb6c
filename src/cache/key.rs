//! Content hashes and cache keys: the only place keys are derived.
//!
//! A key is a blake3 `derive_key` hash under a versioned context string, over
//! length-prefixed fields, so no two different field lists can collide by
//! concatenation. Changing what a key covers means bumping [`KEY_CONTEXT`].
//! Keys are built from content hashes only: paths and mtimes merely memoize
//! those hashes (see `fingerprint`).

use std::fmt;

/// Versioned domain of every Axle cache key.
pub const KEY_CONTEXT: &str = "axle 2026-12-01 cache key v2";

/// Domain of [`ContentHash::of_tree`]: versioned with the canonical form
/// (`shim_tree_canon` in csrc/shim.c).
pub const TREE_CONTEXT: &str = "axle 2026-12-01 tree canonical form v1";

/// The blake3 hash of some bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash([u8; 32]);

impl ContentHash {
    /// Stands for "no file": the hash of a [`crate::cache::Dep`] on a file a
    /// load did not find (no bytes hash to all zeros but by a blake3
    /// collision).
    pub const ABSENT: ContentHash = ContentHash([0; 32]);

    /// Hashes `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        ContentHash(*blake3::hash(bytes).as_bytes())
    }

    /// Identifies a tree by its canonical form
    /// ([`crate::ffi::XmlDoc::with_canonical_form`]): a keyed hash under
    /// its own context, so it never equals the hash of any bytes. It
    /// stands for the tree's serialization wherever a stage's output is
    /// an input hash (incremental mode's stage keys), never for a body.
    pub fn of_tree(canonical_form: &[u8]) -> Self {
        let mut hasher = blake3::Hasher::new_derive_key(TREE_CONTEXT);
        hasher.update(canonical_form);
        ContentHash(*hasher.finalize().as_bytes())
    }

    /// The raw hash.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The hash whose raw bytes are `bytes` (as [`as_bytes`](Self::as_bytes)
    /// gave them: a cache tier reading back what it stored).
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        ContentHash(bytes)
    }

    /// Lower-case hex of the first `n` bytes (at most 32).
    pub fn hex(&self, n: usize) -> String {
        let mut s = String::with_capacity(2 * n);
        push_hex(&mut s, &self.0[..n.min(self.0.len())]);
        s
    }

    /// The strong ETag value for a body with this hash.
    pub fn etag(&self) -> String {
        self.etag_bytes().iter().map(|&b| char::from(b)).collect()
    }

    /// [`etag`](Self::etag) as bytes on the stack (every response has one):
    /// the first 16 bytes in lower-case hex, quoted.
    pub fn etag_bytes(&self) -> [u8; 34] {
        let mut out = [b'"'; 34];
        for (i, &b) in self.0[..16].iter().enumerate() {
            out[1 + 2 * i..3 + 2 * i].copy_from_slice(&hex_pair(b));
        }
        out
    }
}

/// The two lower-case hex digits of `b` (no formatting machinery: this
/// runs for keys and ETags).
fn hex_pair(b: u8) -> [u8; 2] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]]
}

/// Appends `bytes` in lower-case hex.
fn push_hex(s: &mut String, bytes: &[u8]) {
    // Bytes, then one string: pushing chars one at a time was ~1.7k
    // instructions of a disk-tier hit's ~36k (callgrind), for the file name.
    for chunk in bytes.chunks(32) {
        let mut hex = [0u8; 64];
        for (pair, &b) in hex.chunks_exact_mut(2).zip(chunk) {
            pair.copy_from_slice(&hex_pair(b));
        }
        s.push_str(std::str::from_utf8(&hex[..2 * chunk.len()]).unwrap_or_default());
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

impl Key {
    /// The raw key (a cache tier's file or record name).
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key whose raw bytes are `bytes` (as [`as_bytes`](Self::as_bytes)
    /// gave them).
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Key(bytes)
    }

    /// Lower-case hex of the whole key (64 characters).
    pub fn hex(&self) -> String {
        let mut s = String::with_capacity(64);
        push_hex(&mut s, &self.0);
        s
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex: String = self.0.iter().take(8).map(|b| format!("{b:02x}")).collect();
        write!(f, "Key({hex})")
    }
}

/// Builds a key field by field: each field length-prefixed, so no two
/// different field lists can give the same bytes. Where the bytes go is
/// the sink's business: [`KeyBuilder`] hashes them into a [`Key`],
/// [`FieldKeyBuilder`] keeps them as a [`FieldKey`].
#[derive(Debug, Clone)]
pub struct Fields<S>(S);

/// Where a [`Fields`] builder's bytes go.
pub trait Sink {
    /// Takes the next bytes of the field stream.
    fn write(&mut self, bytes: &[u8]);
}

impl<S: Sink> Fields<S> {
    /// Adds a length-prefixed byte field.
    pub fn bytes(&mut self, field: &[u8]) -> &mut Self {
        self.0.write(&(field.len() as u64).to_le_bytes());
        self.0.write(field);
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
}

/// Builds a [`Key`]: a blake3 `derive_key` hash of the field stream.
pub type KeyBuilder = Fields<Hashing>;

/// The [`KeyBuilder`] sink: fields are gathered in a buffer and hashed in
/// one go (blake3's per-call overhead dwarfed a key's few hundred bytes),
/// from a hasher whose context key is derived once per process; the hashed
/// byte stream, and so every key, is exactly what feeding the fields one
/// by one to `Hasher::new_derive_key(KEY_CONTEXT)` gives.
#[derive(Debug, Clone)]
pub struct Hashing {
    hasher: blake3::Hasher,
    buf: Vec<u8>,
}

/// The derive-key hasher for [`KEY_CONTEXT`], before any input.
static BASE: std::sync::LazyLock<blake3::Hasher> =
    std::sync::LazyLock::new(|| blake3::Hasher::new_derive_key(KEY_CONTEXT));

/// Fields at least this long go to the hasher directly (large fields, such
/// as a generated document's bytes, are not copied twice).
const FLUSH_AT: usize = 4096;

impl Sink for Hashing {
    fn write(&mut self, bytes: &[u8]) {
        if bytes.len() >= FLUSH_AT {
            self.hasher.update(&self.buf);
            self.buf.clear();
            self.hasher.update(bytes);
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }
}

impl Fields<Hashing> {
    /// Starts a key of the given kind (e.g. `"stage"`, `"response"`).
    pub fn new(kind: &str) -> Self {
        let mut b = Fields(Hashing {
            hasher: BASE.clone(),
            buf: Vec::with_capacity(256),
        });
        b.bytes(kind.as_bytes());
        b
    }

    fn finalize(&self) -> [u8; 32] {
        let mut hasher = self.0.hasher.clone();
        hasher.update(&self.0.buf);
        *hasher.finalize().as_bytes()
    }

    /// Finishes the key.
    pub fn finish(&self) -> Key {
        Key(self.finalize())
    }

    /// Finishes as a content hash (for combined hashes such as a
    /// stylesheet's closure).
    pub fn finish_hash(&self) -> ContentHash {
        ContentHash(self.finalize())
    }
}

/// A key made of its fields themselves (length-prefixed, as a [`Key`]'s
/// are), for in-memory memos looked up on every request: the map hashes it
/// with its own (randomly seeded) hasher and compares equal keys in full, so
/// no two requests can share an entry, without a blake3 pass per request.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct FieldKey(Box<[u8]>);

impl FieldKey {
    /// Its size in bytes (for weighers).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Is it empty (never, for a built key)?
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for FieldKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FieldKey({} bytes)", self.0.len())
    }
}

/// Builds a [`FieldKey`]: the field stream itself.
pub type FieldKeyBuilder = Fields<Collecting>;

/// The [`FieldKeyBuilder`] sink: the bytes, kept.
#[derive(Debug, Clone)]
pub struct Collecting(Vec<u8>);

impl Sink for Collecting {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

impl Fields<Collecting> {
    /// Starts a key of the given kind.
    pub fn new(kind: &str) -> Self {
        let mut b = Fields(Collecting(Vec::with_capacity(192)));
        b.bytes(kind.as_bytes());
        b
    }

    /// Finishes the key.
    pub fn finish(&mut self) -> FieldKey {
        FieldKey(std::mem::take(&mut self.0.0).into_boxed_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_keys_length_is_every_byte_it_holds() {
        // What the hot memo's weigher counts: a request's path and query
        // are client-controlled, so a long one must weigh its length.
        let key = FieldKeyBuilder::new("hot")
            .str("/a.xml")
            .str(&"q".repeat(5000))
            .finish();
        assert_eq!(key.len(), (8 + 3) + (8 + 6) + (8 + 5000));
        assert!(!key.is_empty());
    }

    #[test]
    fn fields_are_length_prefixed() {
        let a = KeyBuilder::new("k").str("ab").str("c").finish();
        let b = KeyBuilder::new("k").str("a").str("bc").finish();
        assert_ne!(a, b);
    }

    #[test]
    fn buffering_does_not_change_keys() {
        // Field by field into the derive-key hasher, as keys were defined.
        let fields: [&[u8]; 4] = [b"stage", &[7u8; 5000], b"", b"tail"];
        let mut plain = blake3::Hasher::new_derive_key(KEY_CONTEXT);
        for f in fields {
            plain.update(&(f.len() as u64).to_le_bytes());
            plain.update(f);
        }
        let mut built = KeyBuilder::new("stage");
        for f in &fields[1..] {
            built.bytes(f);
        }
        assert_eq!(built.finish().0, *plain.finalize().as_bytes());
    }

    #[test]
    fn field_keys_are_length_prefixed() {
        let a = FieldKeyBuilder::new("k").str("ab").str("c").finish();
        let b = FieldKeyBuilder::new("k").str("a").str("bc").finish();
        assert_ne!(a, b);
        assert_eq!(a, FieldKeyBuilder::new("k").str("ab").str("c").finish());
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
