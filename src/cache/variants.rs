//! Precompressed variants of a cached body (`Content-Encoding: gzip`/`br`).
//!
//! A cached output is served many times and compressed, at most, once per
//! encoding: the first request that can take an encoding makes that
//! variant and every later one gets the same bytes, so a compressed hit
//! costs what a plain hit costs. A variant the compressor could not make
//! meaningfully smaller is remembered as "not worth it" so that it is not
//! tried again.
//!
//! Each variant has its own strong ETag, derived from the identity body's
//! [`ContentHash`] and the encoding only (never from the compressed
//! bytes), so it is the same across restarts, instances and compressor
//! versions, and differs from the identity ETag and from the other
//! encoding's (RFC 9110 §8.8.3: a strong validator changes with the
//! representation, and the encoded bytes are a different representation).
//!
//! This module knows compression, not HTTP: negotiating which variant a
//! request gets is `crate::http`'s business.

use std::io::{self, Write};
use std::sync::OnceLock;

use bytes::Bytes;

use super::ContentHash;

/// A content coding a cached body can be precompressed in.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Encoding {
    /// `gzip` (RFC 1952), through flate2 at [`GZIP_LEVEL`].
    Gzip,
    /// `br` (RFC 7932), through the pure-Rust `brotli` crate at
    /// [`BROTLI_QUALITY`].
    Br,
}

impl Encoding {
    /// Every encoding, in order of preference when a client accepts them
    /// equally (brotli's bodies are the smaller).
    pub const ALL: [Encoding; 2] = [Encoding::Br, Encoding::Gzip];

    /// The content-coding token (`Content-Encoding`, `Accept-Encoding`).
    pub const fn token(self) -> &'static str {
        match self {
            Encoding::Gzip => "gzip",
            Encoding::Br => "br",
        }
    }

    /// The strong ETag of the variant in this encoding of a body whose
    /// identity hash is `hash`: the identity ETag with `-gz` or `-br`
    /// before its closing quote (`"<32 hex>-gz"`). Known without
    /// compressing anything (a conditional request can be answered 304
    /// before the variant exists).
    pub fn etag(self, hash: &ContentHash) -> Bytes {
        let identity = hash.etag_bytes();
        let suffix: &[u8] = match self {
            Encoding::Gzip => b"-gz\"",
            Encoding::Br => b"-br\"",
        };
        let mut etag = Vec::with_capacity(identity.len() + suffix.len() - 1);
        // The identity ETag less its closing quote.
        etag.extend_from_slice(&identity[..identity.len() - 1]);
        etag.extend_from_slice(suffix);
        Bytes::from(etag)
    }

    /// The slot of this encoding in [`Variants`].
    const fn index(self) -> usize {
        match self {
            Encoding::Gzip => 0,
            Encoding::Br => 1,
        }
    }
}

/// The gzip level. Measured (release build, this 2-core machine, best of
/// 20) on two real ~100 KB HTML pages, Rust's `platform-support.html`
/// (98,165 bytes) and the book's `ch02-00-guessing-game-tutorial.html`
/// (83,095 bytes):
///
/// | level | platform-support      | guessing-game         |
/// |-------|-----------------------|-----------------------|
/// | 6     | 15,202 B (15.5%) 1.25 ms | 21,333 B (25.7%) 1.74 ms |
/// | 9     | 15,131 B (15.4%) 1.71 ms | 21,281 B (25.6%) 2.24 ms |
///
/// Level 9 gains little, but a variant is made once per cached body and
/// served many times, and 2 ms per 100 KB is well inside the budget.
pub const GZIP_LEVEL: u32 = 9;

/// The brotli quality. Same pages and machine as [`GZIP_LEVEL`] (best of
/// 10, best of 3 from quality 10; text mode made no difference):
///
/// | quality | platform-support          | guessing-game             |
/// |---------|---------------------------|---------------------------|
/// | 4       | 14,993 B (15.3%) 0.8 ms   | 21,371 B (25.7%) 1.0 ms   |
/// | 5       | 14,023 B (14.3%) 1.3 ms   | 20,168 B (24.3%) 1.6 ms   |
/// | 6       | 13,924 B (14.2%) 1.4 ms   | 20,008 B (24.1%) 1.8 ms   |
/// | 7       | 13,865 B (14.1%) 1.6 ms   | 19,939 B (24.0%) 2.1 ms   |
/// | 8       | 13,836 B (14.1%) 2.1–3.1 ms | 19,909 B (24.0%) 2.5 ms |
/// | 9       | 13,775 B (14.0%) 15.1 ms  | 19,844 B (23.9%) 17.6 ms  |
/// | 10      | 12,461 B (12.7%) 39–41 ms | 17,926 B (21.6%) 36 ms    |
/// | 11      | 12,236 B (12.5%) 109 ms   | 17,563 B (21.1%) 87 ms    |
///
/// Quality 9 would fit the ~20 ms budget for a 100 KB page, barely, but
/// buys 0.3–0.5% over 8 for six times the time (and a 300 KB page would
/// blow the budget); 10 and 11 are out of it. 8 is the last cheap step:
/// 2–3 ms, 8–9% smaller than gzip at 9.
pub const BROTLI_QUALITY: u32 = 8;

/// The brotli window, log2 bytes (22: 4 MiB, the format's usual maximum,
/// more than any body it is likely to see needs).
pub const BROTLI_WINDOW: u32 = 22;

/// Bodies shorter than this are never compressed. A response this small
/// plus Axle's ~200–300 bytes of headers fits one 1,460-byte TCP segment
/// whether compressed or not, so compression saves no packet and no round
/// trip, only a few hundred bytes, while the variant costs memory in the
/// cache and decompression on the client. (nginx's `gzip_min_length`
/// default of 20 bytes is a floor, not advice; common practice is
/// 256–1,024, and Akamai's is 860.)
pub const MIN_COMPRESS_LEN: usize = 1024;

/// A variant is kept only when it saves at least 1/`MIN_SAVING_DIVISOR`
/// of the body (5%): less does not pay for a second copy in the cache
/// (weighed against the bound) nor for the client's decompression.
pub const MIN_SAVING_DIVISOR: usize = 20;

/// A precompressed body and its strong ETag.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Variant {
    /// The body in the variant's encoding.
    pub bytes: Bytes,
    /// Its strong ETag, quoted (see [`Encoding::etag`]).
    pub etag: Bytes,
}

/// The precompressed variants of one cached body, each made at most once,
/// on first demand.
///
/// Per encoding, a slot is empty (not made yet), holds a variant, or holds
/// "made, not worth it" (the compressed body was not smaller enough, or
/// the body too short to try).
#[derive(Default, Debug)]
pub struct Variants {
    slots: [OnceLock<Option<Variant>>; 2],
    /// Compressions run (tests check that concurrent callers share one).
    #[cfg(test)]
    compressions: std::sync::atomic::AtomicUsize,
}

impl Variants {
    /// Variants already decided (a cache tier reading back what it
    /// stored, or a test): each pair's encoding gets its variant, or
    /// "not worth it" for `None`; encodings not listed are undecided. A
    /// later pair for the same encoding is ignored.
    pub fn with_decided(decided: impl IntoIterator<Item = (Encoding, Option<Variant>)>) -> Self {
        let variants = Variants::default();
        for (enc, variant) in decided {
            // Ignored if already set: the first decision stands.
            let _ = variants.slots[enc.index()].set(variant);
        }
        variants
    }

    /// What has been decided for `enc`, without waiting or compressing:
    /// `None` if not yet, `Some(None)` if not worth it, `Some(Some(v))`
    /// for the variant.
    pub fn get(&self, enc: Encoding) -> Option<Option<&Variant>> {
        self.slots[enc.index()].get().map(Option::as_ref)
    }

    /// The variant of `body` (whose identity hash is `hash`) in `enc`,
    /// compressing it if this is the first call for `enc`; `None` when it
    /// is not worth having (a body shorter than [`MIN_COMPRESS_LEN`], a
    /// saving under 5%, or a compressor error, which is logged).
    ///
    /// Concurrent callers for the same encoding wait for the one that
    /// compresses: a body is compressed at most once per encoding. `body`
    /// and `hash` must be the same on every call (they are the entry's).
    /// Whether the body's type is worth compressing is the caller's
    /// question ([`worth_compressing`]).
    pub fn get_or_make(&self, enc: Encoding, body: &[u8], hash: &ContentHash) -> Option<&Variant> {
        self.slots[enc.index()]
            .get_or_init(|| self.make(enc, body, hash))
            .as_ref()
    }

    /// Bytes held by the variants made (bodies and ETags), for weighing
    /// an entry against the cache's bound.
    pub fn weight(&self) -> usize {
        self.slots
            .iter()
            .filter_map(|slot| slot.get().and_then(Option::as_ref))
            .map(|v| v.bytes.len() + v.etag.len())
            .sum()
    }

    fn make(&self, enc: Encoding, body: &[u8], hash: &ContentHash) -> Option<Variant> {
        if body.len() < MIN_COMPRESS_LEN {
            return None;
        }
        #[cfg(test)]
        self.compressions
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let compressed = match compress(enc, body) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(encoding = enc.token(), error = %e, "compression failed");
                return None;
            }
        };
        worth_keeping(body.len(), compressed.len()).then(|| Variant {
            bytes: Bytes::from(compressed),
            etag: enc.etag(hash),
        })
    }
}

/// Does a compressed body of `compressed` bytes save enough over `body`
/// bytes to be kept?
fn worth_keeping(body: usize, compressed: usize) -> bool {
    compressed <= body - body / MIN_SAVING_DIVISOR
}

/// `body` compressed in `enc` (gzip at [`GZIP_LEVEL`]; brotli at
/// [`BROTLI_QUALITY`], window [`BROTLI_WINDOW`]). The output is
/// deterministic (gzip's header has no time or name).
///
/// Both compressors write to memory and cannot fail in practice; their
/// `io::Result` is passed on rather than unwrapped.
pub fn compress(enc: Encoding, body: &[u8]) -> io::Result<Vec<u8>> {
    // Text compresses to about a quarter; a little headroom either way.
    let capacity = body.len() / 4 + 64;
    match enc {
        Encoding::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(
                Vec::with_capacity(capacity),
                flate2::Compression::new(GZIP_LEVEL),
            );
            encoder.write_all(body)?;
            encoder.finish()
        }
        Encoding::Br => {
            let params = brotli::enc::BrotliEncoderParams {
                quality: BROTLI_QUALITY as i32,
                lgwin: BROTLI_WINDOW as i32,
                size_hint: body.len(),
                ..Default::default()
            };
            let mut out = Vec::with_capacity(capacity);
            brotli::BrotliCompress(&mut &body[..], &mut out, &params)?;
            Ok(out)
        }
    }
}

/// Is a body of `content_type` and `len` bytes worth precompressing?
/// Textual types are: `text/*`, XML (`*/xml`, `*+xml`, so SVG, XHTML, RSS
/// and Atom), JSON (`*/json`, `*+json`), JavaScript, and the uncompressed
/// font formats (TrueType, OpenType, EOT). Everything else is not, notably
/// images other than SVG, audio, video, WOFF/WOFF2 fonts, archives, PDFs
/// and `application/octet-stream`: they are compressed already, or
/// unknown. Parameters (`; charset=...`), surrounding spaces and case are
/// ignored. Bodies shorter than [`MIN_COMPRESS_LEN`] are never worth it.
pub fn worth_compressing(content_type: &str, len: usize) -> bool {
    len >= MIN_COMPRESS_LEN && compressible_type(content_type)
}

fn compressible_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    let Some((top, sub)) = essence.split_once('/') else {
        return false;
    };
    let (top, sub) = (top.trim(), sub.trim());
    if top.is_empty() || sub.is_empty() {
        return false;
    }
    let is = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    if is(top, "text") {
        return true;
    }
    if ["xml", "json"].iter().any(|s| is(sub, s))
        || ["+xml", "+json"]
            .iter()
            .any(|s| ends_with_ignore_case(sub, s))
    {
        return true;
    }
    if is(top, "application") {
        return [
            "javascript",
            "ecmascript",
            "x-javascript",
            "vnd.ms-fontobject",
            "x-font-ttf",
            "x-font-otf",
        ]
        .iter()
        .any(|s| is(sub, s));
    }
    if is(top, "font") {
        return ["ttf", "otf", "sfnt"].iter().any(|s| is(sub, s));
    }
    false
}

fn ends_with_ignore_case(s: &str, suffix: &str) -> bool {
    let (s, suffix) = (s.as_bytes(), suffix.as_bytes());
    s.len() >= suffix.len() && s[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Read;
    use std::sync::atomic::Ordering;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    fn unbrotli(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        brotli::Decompressor::new(bytes, 4096)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    fn decompress(enc: Encoding, bytes: &[u8]) -> Vec<u8> {
        match enc {
            Encoding::Gzip => gunzip(bytes),
            Encoding::Br => unbrotli(bytes),
        }
    }

    /// Some markup, `n` times over, a little different each time.
    fn page(n: usize) -> Vec<u8> {
        let mut s = String::from("<!DOCTYPE html><html><body>");
        for i in 0..n {
            s.push_str(&format!(
                "<p class=\"item\">Paragraph {i} of the page, with some text.</p>\n"
            ));
        }
        s.push_str("</body></html>");
        s.into_bytes()
    }

    #[test]
    fn tokens_and_all() {
        assert_eq!(Encoding::Gzip.token(), "gzip");
        assert_eq!(Encoding::Br.token(), "br");
        assert_eq!(Encoding::ALL, [Encoding::Br, Encoding::Gzip]);
    }

    #[test]
    fn etags_differ_per_encoding_and_from_identity_and_are_stable() {
        let hash = ContentHash::of(b"body");
        let identity = hash.etag_bytes();
        let gz = Encoding::Gzip.etag(&hash);
        let br = Encoding::Br.etag(&hash);
        assert_eq!(&gz[..], format!("{}-gz\"", &hash.etag()[..33]).as_bytes());
        assert_eq!(&br[..], format!("{}-br\"", &hash.etag()[..33]).as_bytes());
        assert_ne!(gz, br);
        assert_ne!(&gz[..], &identity[..]);
        assert_ne!(&br[..], &identity[..]);
        // Stable: the same hash gives the same tags, whoever computes them.
        assert_eq!(gz, Encoding::Gzip.etag(&ContentHash::of(b"body")));
        assert_eq!(br, Encoding::Br.etag(&ContentHash::of(b"body")));
        // And another body's differ.
        assert_ne!(gz, Encoding::Gzip.etag(&ContentHash::of(b"other")));
        // A valid strong entity-tag: quoted, no inner quote, no W/.
        for tag in [&gz, &br] {
            assert_eq!(tag.len(), 37);
            assert_eq!((tag[0], tag[36]), (b'"', b'"'));
            assert!(
                tag[1..36]
                    .iter()
                    .all(|&b| b != b'"' && (0x21..0x7f).contains(&b))
            );
        }
    }

    #[test]
    fn a_variant_made_decompresses_and_carries_its_etag() {
        let body = page(200);
        let hash = ContentHash::of(&body);
        let variants = Variants::default();
        for enc in Encoding::ALL {
            assert_eq!(variants.get(enc), None);
            let v = variants.get_or_make(enc, &body, &hash).unwrap().clone();
            assert!(v.bytes.len() < body.len() / 5, "{enc:?}: {}", v.bytes.len());
            assert_eq!(decompress(enc, &v.bytes), body);
            assert_eq!(v.etag, enc.etag(&hash));
            assert_eq!(variants.get(enc), Some(Some(&v)));
        }
        let gz = variants.get(Encoding::Gzip).unwrap().unwrap();
        let br = variants.get(Encoding::Br).unwrap().unwrap();
        assert_eq!(
            variants.weight(),
            gz.bytes.len() + gz.etag.len() + br.bytes.len() + br.etag.len()
        );
        assert_eq!(variants.compressions.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn incompressible_and_tiny_bodies_are_decided_not_worth_it() {
        // Pseudo-random bytes do not shrink by 5%.
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let noise: Vec<u8> = (0..8192)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let variants = Variants::default();
        let hash = ContentHash::of(&noise);
        for enc in Encoding::ALL {
            assert_eq!(variants.get_or_make(enc, &noise, &hash), None);
            assert_eq!(variants.get(enc), Some(None));
            // Decided: not tried again.
            assert_eq!(variants.get_or_make(enc, &noise, &hash), None);
        }
        assert_eq!(variants.compressions.load(Ordering::SeqCst), 2);
        assert_eq!(variants.weight(), 0);

        // A tiny body is not even tried, however well it would compress.
        let tiny = vec![b'a'; MIN_COMPRESS_LEN - 1];
        let variants = Variants::default();
        let hash = ContentHash::of(&tiny);
        assert_eq!(variants.get_or_make(Encoding::Br, &tiny, &hash), None);
        assert_eq!(variants.get(Encoding::Br), Some(None));
        assert_eq!(variants.get(Encoding::Gzip), None);
        assert_eq!(variants.compressions.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn the_saving_threshold_is_five_percent() {
        assert!(worth_keeping(1000, 950));
        assert!(!worth_keeping(1000, 951));
        assert!(!worth_keeping(1000, 1000));
        assert!(!worth_keeping(1000, 1100));
    }

    #[test]
    fn concurrent_callers_share_one_compression() {
        let body = page(2000);
        let hash = ContentHash::of(&body);
        let variants = Variants::default();
        let barrier = std::sync::Barrier::new(8);
        let made: Vec<(usize, usize)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let (variants, body, barrier) = (&variants, &body, &barrier);
                    s.spawn(move || {
                        let enc = Encoding::ALL[i % 2];
                        barrier.wait();
                        let v = variants.get_or_make(enc, body, &hash).unwrap();
                        (i % 2, std::ptr::from_ref(v) as usize)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(variants.compressions.load(Ordering::SeqCst), 2);
        for (enc, ptr) in &made {
            let same = variants.get(Encoding::ALL[*enc]).unwrap().unwrap();
            assert_eq!(*ptr, std::ptr::from_ref(same) as usize);
        }
    }

    #[test]
    fn decided_variants_are_restored_as_given() {
        let body = page(100);
        let hash = ContentHash::of(&body);
        let gz = Variant {
            bytes: Bytes::from(compress(Encoding::Gzip, &body).unwrap()),
            etag: Encoding::Gzip.etag(&hash),
        };
        let variants =
            Variants::with_decided([(Encoding::Gzip, Some(gz.clone())), (Encoding::Gzip, None)]);
        assert_eq!(variants.get(Encoding::Gzip), Some(Some(&gz)));
        assert_eq!(variants.get(Encoding::Br), None);
        assert_eq!(variants.weight(), gz.bytes.len() + gz.etag.len());
        // Already decided: returned without compressing.
        assert_eq!(
            variants.get_or_make(Encoding::Gzip, &body, &hash),
            Some(&gz)
        );
        assert_eq!(variants.compressions.load(Ordering::SeqCst), 0);
        let none = Variants::with_decided([(Encoding::Br, None)]);
        assert_eq!(none.get_or_make(Encoding::Br, &body, &hash), None);
        assert_eq!(none.compressions.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn variants_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Variants>();
        check::<Variant>();
    }

    #[test]
    fn compression_is_deterministic() {
        let body = page(300);
        for enc in Encoding::ALL {
            assert_eq!(compress(enc, &body).unwrap(), compress(enc, &body).unwrap());
        }
    }

    #[test]
    fn textual_types_are_worth_compressing() {
        for t in [
            "text/html",
            "text/html; charset=utf-8",
            "TEXT/HTML;CHARSET=UTF-8",
            "text/plain",
            "text/css",
            "text/xml",
            "text/javascript",
            " text/csv ; header=present",
            "application/xml",
            "application/xhtml+xml",
            "application/rss+xml",
            "application/atom+xml",
            "application/xslt+xml",
            "image/svg+xml",
            "Image/SVG+XML",
            "application/json",
            "text/json",
            "application/ld+json",
            "application/manifest+json",
            "application/javascript",
            "application/ecmascript",
            "application/x-javascript",
            "font/ttf",
            "font/otf",
            "application/vnd.ms-fontobject",
        ] {
            assert!(worth_compressing(t, 100_000), "{t}");
            assert!(!worth_compressing(t, MIN_COMPRESS_LEN - 1), "{t} when tiny");
            assert!(worth_compressing(t, MIN_COMPRESS_LEN), "{t} at the minimum");
        }
    }

    #[test]
    fn compressed_and_unknown_types_are_not() {
        for t in [
            "image/jpeg",
            "image/png",
            "image/gif",
            "image/webp",
            "image/avif",
            "audio/mpeg",
            "audio/ogg",
            "video/mp4",
            "video/webm",
            "font/woff",
            "font/woff2",
            "application/font-woff",
            "application/zip",
            "application/gzip",
            "application/x-gzip",
            "application/x-bzip2",
            "application/x-xz",
            "application/zstd",
            "application/epub+zip",
            "application/octet-stream",
            "application/pdf",
            "APPLICATION/PDF; x=y",
            "",
            "text",
            "/html",
            "text/",
            "garbage",
        ] {
            assert!(!worth_compressing(t, 100_000), "{t}");
        }
    }

    proptest! {
        #[test]
        fn any_body_round_trips(body in proptest::collection::vec(any::<u8>(), 0..20_000)) {
            for enc in Encoding::ALL {
                let c = compress(enc, &body).unwrap();
                prop_assert_eq!(decompress(enc, &c), body.clone());
            }
        }

        #[test]
        fn repetitive_bodies_round_trip_through_variants(
            unit in proptest::collection::vec(any::<u8>(), 1..64),
            times in 1usize..2_000,
            tail in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut body: Vec<u8> = unit.iter().copied().cycle().take(unit.len() * times).collect();
            body.extend_from_slice(&tail);
            let hash = ContentHash::of(&body);
            let variants = Variants::default();
            for enc in Encoding::ALL {
                match variants.get_or_make(enc, &body, &hash) {
                    Some(v) => {
                        prop_assert!(body.len() >= MIN_COMPRESS_LEN);
                        prop_assert!(v.bytes.len() * 20 <= body.len() * 19);
                        prop_assert_eq!(decompress(enc, &v.bytes), body.clone());
                        prop_assert_eq!(&v.etag, &enc.etag(&hash));
                    }
                    None => {
                        // Only too short or too little saved.
                        let c = compress(enc, &body).unwrap();
                        prop_assert!(body.len() < MIN_COMPRESS_LEN || !worth_keeping(body.len(), c.len()));
                        prop_assert_eq!(decompress(enc, &c), body.clone());
                    }
                }
            }
        }
    }
}
