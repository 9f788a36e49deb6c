//! The disk tier's file format: one self-checking file per entry (also
//! the shared tier's value format: one self-checking value per entry).
//!
//! ```text
//! magic      b"AXLE\0CACHE"                      10 bytes
//! version    u32 LE (VERSION)                     4
//! key        the entry's key (= the file name)   32
//! hash       ContentHash of the body             32
//! type       option<string>                       content type
//! url        option<string>                       document URL
//! deps       u32 LE count, then each:
//!              path   bytes (raw OsStr bytes)
//!              hash   32 bytes
//!              via    option<bytes>
//! body len   u64 LE
//! body sum   u64 LE: XXH3-64 of the body
//! checksum   blake3 of everything above          32
//! body       body len bytes, to the end
//!
//! bytes          = u32 LE length, then that many bytes
//! option<bytes>  = u8 0 (absent) | u8 1, then bytes
//! string         = bytes holding UTF-8
//! ```
//!
//! One fast pass over the body, no blake3 of it: the checksum seals the
//! header (small), and the header holds the body's content hash (its
//! ETag, written from the body that was stored) and an XXH3-64 of the
//! body, against which a read checks the body it found. XXH3 is a
//! checksum, not a cryptographic hash: it is here to catch what happens
//! to files (a torn write, a flipped bit, a file cut short: a random
//! change passes it with odds of 2^-64), as blake3 over the body did at
//! about 1/15 of the cost (a 12 KB body: ~3k instructions instead of
//! ~43k, callgrind). Neither was ever a defence against someone who can
//! write the cache directory: blake3 is unkeyed, so such a writer could
//! write a matching hash as easily. A tier that decodes with [`decode`]
//! says so through `Cache::checks_bodies`, and the store does not hash
//! the body again. Version 1 sealed the whole file with the checksum and
//! then hashed the body again.
//!
//! Every length is checked against the bytes that are left before anything
//! is sliced or allocated, so a corrupt or hostile file costs at most its
//! own size in memory. The encoding is canonical: decoding accepts exactly
//! what [`encode`] produces (no other option tag, no invalid UTF-8, no
//! trailing bytes), so a decoded entry encodes back to the same bytes.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::cache::{ContentHash, Dep, Entry, Key};

/// The first bytes of every cache file.
pub(in crate::cache) const MAGIC: &[u8; 10] = b"AXLE\x00CACHE";

/// The format version, also in the directory name (`v2`): a change to the
/// layout bumps both, and files of another version are rejected (and
/// deleted) when met.
pub(in crate::cache) const VERSION: u32 = 2;

/// The directory files of this version live in.
pub(super) const VERSION_DIR: &str = "v2";

/// The directories of earlier versions (deleted by the disk tier's scan:
/// nothing reads them any more).
pub(super) const OLD_VERSION_DIRS: &[&str] = &["v1"];

/// Bytes of the trailing checksum.
const CHECKSUM: usize = 32;

/// The fewest bytes one dependency takes (an empty path, a hash, no via),
/// to bound a dependency count by the bytes left.
const MIN_DEP: usize = 4 + 32 + 1;

/// Why a file is not a usable cache entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(in crate::cache) enum FormatError {
    /// The file ends before its fields do (or is empty).
    #[error("truncated")]
    Truncated,
    /// Not a cache file at all.
    #[error("bad magic bytes")]
    Magic,
    /// A cache file of another format version.
    #[error("format version {0}, expected {VERSION}")]
    Version(u32),
    /// A valid file stored under another key's name (copied or moved).
    #[error("foreign file: the key inside is not the file's name")]
    Foreign,
    /// The header's checksum does not match.
    #[error("checksum mismatch")]
    Checksum,
    /// The body does not match the checksum its header recorded.
    #[error("body does not match its recorded checksum")]
    BodyHash,
    /// A field is malformed (an unknown option tag, invalid UTF-8, a
    /// length that disagrees with the file's size, trailing bytes).
    #[error("malformed field: {0}")]
    Malformed(&'static str),
}

/// What the index needs from a file, read from its header only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Header {
    /// The document URL, for purge by prefix.
    pub url: Option<Arc<str>>,
}

/// Encodes `entry` under `key` (see the module doc for the layout).
pub(in crate::cache) fn encode(key: &Key, entry: &Entry) -> Vec<u8> {
    let deps: usize = entry
        .deps
        .iter()
        .map(|d| {
            MIN_DEP
                + d.path.as_os_str().len()
                + d.via.as_ref().map_or(0, |v| 4 + v.as_os_str().len())
        })
        .sum();
    let mut out = Vec::with_capacity(
        MAGIC.len() + 4 + 64 + 2 * 5 + 256 + 4 + deps + 8 + entry.bytes.len() + CHECKSUM,
    );
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(entry.hash.as_bytes());
    put_opt(&mut out, entry.content_type.as_deref().map(str::as_bytes));
    put_opt(&mut out, entry.url.as_deref().map(str::as_bytes));
    out.extend_from_slice(&len32(entry.deps.len()).to_le_bytes());
    for dep in entry.deps.iter() {
        put_bytes(&mut out, dep.path.as_os_str().as_bytes());
        out.extend_from_slice(dep.hash.as_bytes());
        put_opt(
            &mut out,
            dep.via.as_deref().map(|v| v.as_os_str().as_bytes()),
        );
    }
    out.extend_from_slice(&(entry.bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&body_sum(&entry.bytes).to_le_bytes());
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    out.extend_from_slice(&entry.bytes);
    out
}

/// A length as the u32 the format stores. Paths, URLs and content types
/// are far below 4 GiB; a longer one is cut to the cap here and the file
/// then fails its own checks when read (never a wrong entry).
fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&len32(bytes.len()).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn put_opt(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => out.push(0),
        Some(b) => {
            out.push(1);
            put_bytes(out, b);
        }
    }
}

/// Decodes a whole file stored under `key`, checking everything: magic,
/// version, key, the header's checksum, lengths, and the body against its
/// content hash (the one pass over the body).
pub(in crate::cache) fn decode(key: &Key, file: Bytes) -> Result<Entry, FormatError> {
    let (fields, body_len, body_sum_read, start) = decode_sealed(key, &file)?;
    if body_len != (file.len() - start) as u64 {
        return Err(if body_len > (file.len() - start) as u64 {
            FormatError::Truncated
        } else {
            FormatError::Malformed("body length")
        });
    }
    let bytes = file.slice(start..);
    if body_sum(&bytes) != body_sum_read {
        return Err(FormatError::BodyHash);
    }
    Ok(Entry {
        bytes,
        hash: fields.hash,
        elided: false,
        content_type: fields.content_type,
        deps: fields.deps.into(),
        url: fields.url,
        variants: Default::default(),
    })
}

/// Decodes and checks the header at the start of `bytes` (the magic,
/// version and key first, so a file of another version or key says so
/// rather than "checksum"; then the fields, the body length and the
/// checksum over them): the fields, the body length, and where the body
/// starts. `Truncated` when `bytes` ends inside the header.
fn decode_sealed(key: &Key, bytes: &[u8]) -> Result<(Fields, u64, u64, usize), FormatError> {
    check_start(key, bytes)?;
    let mut r = Reader::new(bytes);
    let fields = read_fields(key, &mut r)?;
    let body_len = r.u64()?;
    let body_sum = r.u64()?;
    let sealed = r.pos;
    let sum = r.take(CHECKSUM)?;
    if blake3::hash(&bytes[..sealed]).as_bytes() != sum {
        return Err(FormatError::Checksum);
    }
    Ok((fields, body_len, body_sum, r.pos))
}

/// The body's checksum (see the module doc: what it is for, and not).
fn body_sum(body: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(body)
}

/// Decodes the header of a file of `file_len` bytes stored under `key`
/// from its first bytes `prefix`: everything but the body, which is only
/// checked to have the size the header says. `Truncated` when `prefix` is
/// shorter than the file and ends inside the header: the caller reads more
/// and tries again.
pub(super) fn decode_header(
    key: &Key,
    prefix: &[u8],
    file_len: u64,
) -> Result<Header, FormatError> {
    let (fields, body_len, _, start) = decode_sealed(key, prefix)?;
    let expected = (start as u64).checked_add(body_len);
    if expected != Some(file_len) {
        return Err(if expected.is_some_and(|n| n > file_len) {
            FormatError::Truncated
        } else {
            FormatError::Malformed("body length")
        });
    }
    Ok(Header { url: fields.url })
}

/// Checks as much of the magic, version and key as `bytes` holds.
fn check_start(key: &Key, bytes: &[u8]) -> Result<(), FormatError> {
    let n = bytes.len().min(MAGIC.len());
    if bytes[..n] != MAGIC[..n] {
        return Err(FormatError::Magic);
    }
    let mut r = Reader::new(bytes);
    r.take(MAGIC.len())?;
    let version = r.u32()?;
    if version != VERSION {
        return Err(FormatError::Version(version));
    }
    if r.take(32)? != key.as_bytes() {
        return Err(FormatError::Foreign);
    }
    Ok(())
}

/// The fields before the body.
struct Fields {
    hash: ContentHash,
    content_type: Option<Arc<str>>,
    url: Option<Arc<str>>,
    deps: Vec<Dep>,
}

fn read_fields(key: &Key, r: &mut Reader<'_>) -> Result<Fields, FormatError> {
    r.take(MAGIC.len())?;
    r.u32()?;
    if r.take(32)? != key.as_bytes() {
        return Err(FormatError::Foreign);
    }
    let hash = r.hash()?;
    let content_type = r.opt()?.map(utf8).transpose()?;
    let url = r.opt()?.map(utf8).transpose()?;
    let count = r.u32()? as usize;
    // Bound the count by the bytes left before reserving room for it.
    // (Truncated, not malformed: a header read from a prefix may simply
    // not reach that far yet, and its caller reads more.)
    if count > r.left() / MIN_DEP {
        return Err(FormatError::Truncated);
    }
    let mut deps = Vec::with_capacity(count);
    for _ in 0..count {
        let path = PathBuf::from(OsStr::from_bytes(r.bytes()?));
        let hash = r.hash()?;
        let via = r
            .opt()?
            .map(|v| Arc::<Path>::from(Path::new(OsStr::from_bytes(v))));
        deps.push(Dep { path, hash, via });
    }
    Ok(Fields {
        hash,
        content_type,
        url,
        deps,
    })
}

fn utf8(bytes: &[u8]) -> Result<Arc<str>, FormatError> {
    std::str::from_utf8(bytes)
        .map(Arc::from)
        .map_err(|_| FormatError::Malformed("invalid UTF-8"))
}

/// A bounds-checked cursor: every read that would pass the end is
/// `Truncated`, and nothing is allocated here.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        if n > self.left() {
            return Err(FormatError::Truncated);
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, FormatError> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, FormatError> {
        self.array().map(u64::from_le_bytes)
    }

    fn hash(&mut self) -> Result<ContentHash, FormatError> {
        self.array().map(ContentHash::from_bytes)
    }

    fn bytes(&mut self) -> Result<&'a [u8], FormatError> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn opt(&mut self) -> Result<Option<&'a [u8]>, FormatError> {
        match self.take(1)?[0] {
            0 => Ok(None),
            1 => self.bytes().map(Some),
            _ => Err(FormatError::Malformed("option tag")),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> Key {
        Key::from_bytes([7; 32])
    }

    /// An entry with every optional field absent, an empty body, no deps.
    pub(crate) fn bare() -> Entry {
        Entry {
            bytes: Bytes::new(),
            hash: ContentHash::of(b""),
            elided: false,
            content_type: None,
            deps: Vec::new().into(),
            url: None,
            variants: Default::default(),
        }
    }

    pub(crate) fn sample() -> Entry {
        entry_of(b"<html>hello</html>", Some("/docs/a.xml"))
    }

    /// An entry of `body` for `url`, with a dependency of each kind (a
    /// file, an absent one, one reached through a link).
    pub(crate) fn entry_of(body: &[u8], url: Option<&str>) -> Entry {
        let body = Bytes::copy_from_slice(body);
        Entry {
            hash: ContentHash::of(&body),
            bytes: body,
            elided: false,
            content_type: Some("text/html; charset=utf-8".into()),
            deps: vec![
                Dep::new("/srv/a.xml".into(), ContentHash::of(b"a")),
                Dep::absent("/srv/missing.xml".into()),
                Dep {
                    path: "/srv/real.xml".into(),
                    hash: ContentHash::of(b"r"),
                    via: Some(Arc::from(Path::new("/srv/link.xml"))),
                },
            ]
            .into(),
            url: url.map(Arc::from),
            variants: Default::default(),
        }
    }

    pub(crate) fn same(a: &Entry, b: &Entry) -> bool {
        a.bytes == b.bytes
            && a.hash == b.hash
            && a.elided == b.elided
            && a.content_type == b.content_type
            && a.deps == b.deps
            && a.url == b.url
    }

    #[test]
    fn every_field_round_trips() {
        let e = sample();
        let file = encode(&key(), &e);
        let back = decode(&key(), Bytes::from(file.clone())).unwrap();
        assert!(same(&e, &back));
        let header = decode_header(&key(), &file, file.len() as u64).unwrap();
        assert_eq!(header.url.as_deref(), Some("/docs/a.xml"));
        // And with every optional field absent, an empty body, no deps.
        let bare = bare();
        let back = decode(&key(), Bytes::from(encode(&key(), &bare))).unwrap();
        assert!(same(&bare, &back));
    }

    #[test]
    fn a_header_read_from_a_short_prefix_asks_for_more() {
        let file = encode(&key(), &sample());
        let len = file.len() as u64;
        assert_eq!(
            decode_header(&key(), &file[..40], len),
            Err(FormatError::Truncated)
        );
        // Into the checksum: more is needed; into the body: enough.
        let body = sample().bytes.len();
        assert_eq!(
            decode_header(&key(), &file[..file.len() - body - 1], len),
            Err(FormatError::Truncated)
        );
        assert!(decode_header(&key(), &file[..file.len() - body + 1], len).is_ok());
    }

    #[test]
    fn each_check_names_its_failure() {
        let e = sample();
        let file = encode(&key(), &e);
        let other = Key::from_bytes([8; 32]);
        assert_eq!(
            decode(&other, Bytes::from(file.clone())).unwrap_err(),
            FormatError::Foreign
        );
        for version in [VERSION - 1, VERSION + 1] {
            let mut other = file.clone();
            other[10..14].copy_from_slice(&version.to_le_bytes());
            assert_eq!(
                decode(&key(), Bytes::from(other)).unwrap_err(),
                FormatError::Version(version)
            );
        }
        // A flipped byte in the header (its last, in the checksum), then
        // in the body.
        let mut header = file.clone();
        let at = header.len() - e.bytes.len() - 1;
        header[at] ^= 1;
        assert_eq!(
            decode(&key(), Bytes::from(header)).unwrap_err(),
            FormatError::Checksum
        );
        let mut header = file.clone();
        header[100] ^= 1; // inside the content type
        assert_eq!(
            decode(&key(), Bytes::from(header)).unwrap_err(),
            FormatError::Checksum
        );
        let mut body = file.clone();
        let at = body.len() - 1;
        body[at] ^= 1;
        assert_eq!(
            decode(&key(), Bytes::from(body)).unwrap_err(),
            FormatError::BodyHash
        );
        // A body cut short or grown, under an intact header.
        let short = &file[..file.len() - 1];
        assert_eq!(
            decode(&key(), Bytes::copy_from_slice(short)).unwrap_err(),
            FormatError::Truncated
        );
        let mut long = file.clone();
        long.push(b'x');
        assert_eq!(
            decode(&key(), Bytes::from(long)).unwrap_err(),
            FormatError::Malformed("body length")
        );
        assert_eq!(
            decode(&key(), Bytes::new()).unwrap_err(),
            FormatError::Truncated
        );
        assert_eq!(
            decode(&key(), Bytes::from_static(b"<?xml")).unwrap_err(),
            FormatError::Magic
        );
    }

    /// Seals `header` (ending in a body length) with a valid checksum and
    /// appends `body`, so the parser behind the checksum is exercised
    /// rather than the checksum alone.
    fn sealed(mut header: Vec<u8>, body: &[u8]) -> Vec<u8> {
        let sum = blake3::hash(&header);
        header.extend_from_slice(sum.as_bytes());
        header.extend_from_slice(body);
        header
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_or_decode(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let len = bytes.len() as u64;
            let _ = decode_header(&key(), &bytes, len);
            if let Ok(e) = decode(&key(), Bytes::from(bytes.clone())) {
                prop_assert_eq!(encode(&key(), &e), bytes);
            }
        }

        #[test]
        fn sealed_arbitrary_fields_decode_only_when_canonical(
            tail in proptest::collection::vec(any::<u8>(), 0..512),
            body in proptest::collection::vec(any::<u8>(), 0..16),
            hash_body in any::<bool>(),
            sum_body in any::<bool>(),
        ) {
            // A valid start, arbitrary fields, the body's length (and its
            // sum, or arbitrary bytes there), a valid checksum, the body.
            let mut content = Vec::new();
            content.extend_from_slice(MAGIC);
            content.extend_from_slice(&VERSION.to_le_bytes());
            content.extend_from_slice(key().as_bytes());
            if hash_body {
                content.extend_from_slice(ContentHash::of(&body).as_bytes());
            }
            content.extend_from_slice(&tail);
            content.extend_from_slice(&(body.len() as u64).to_le_bytes());
            if sum_body {
                content.extend_from_slice(&body_sum(&body).to_le_bytes());
            }
            let file = sealed(content, &body);
            let len = file.len() as u64;
            let _ = decode_header(&key(), &file, len);
            if let Ok(e) = decode(&key(), Bytes::from(file.clone())) {
                prop_assert_eq!(encode(&key(), &e), file);
            }
        }

        #[test]
        fn every_cut_of_a_valid_file_is_rejected(cut in 0usize..400) {
            let file = encode(&key(), &sample());
            let cut = cut.min(file.len() - 1);
            prop_assert!(decode(&key(), Bytes::from(file[..cut].to_vec())).is_err());
            prop_assert!(decode_header(&key(), &file[..cut], cut as u64).is_err());
        }
    }
}
