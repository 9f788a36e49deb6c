//! Feeds arbitrary request paths and queries to the one place an upstream
//! source's URL is built (`Upstream::request_url`, the checks
//! `Upstream::fetch` makes before it connects), for three fixed URL
//! templates. Issue #24: nothing a client sends may change which host is
//! contacted or lead out of the template's prefix. Whenever a path is
//! accepted, the URL must have exactly the configured scheme, host and
//! port; its path must be the template's with the request path put in
//! as given, so it starts with the template's prefix; no segment may be
//! `.` or `..` (before any `;`) after any number of percent-decodings
//! (split at `/` and `\` after each, and also with overlong UTF-8 forms
//! of ASCII read as that ASCII, as lenient decoders do); it must hold no raw `\`, `#`,
//! space, control character or non-ASCII byte; and a WHATWG URL parser
//! (the `url` crate, as browsers and many proxies read URLs) must find
//! the same host and port and a path under the prefix.
//!
//! Input: the first byte picks the template (modulo 3); the rest is the
//! path, then, after the first 0xFF byte (never part of UTF-8), the query.
#![no_main]

use std::sync::OnceLock;

use axle::upstream::{Upstream, UpstreamConfig};
use libfuzzer_sys::fuzz_target;

struct Template {
    upstream: Upstream,
    authority: &'static str,
    host: &'static str,
    port: u16,
    /// The path before `{path}`.
    prefix: &'static str,
    /// The path after `{path}`.
    suffix: &'static str,
    /// The template's own query.
    query: Option<&'static str>,
}

fn templates() -> &'static [Template; 3] {
    static TEMPLATES: OnceLock<[Template; 3]> = OnceLock::new();
    TEMPLATES.get_or_init(|| {
        let make = |url: &str| Upstream::new(UpstreamConfig::new(url)).expect(url);
        [
            Template {
                upstream: make("http://127.0.0.1:8181{path}"),
                authority: "127.0.0.1:8181",
                host: "127.0.0.1",
                port: 8181,
                prefix: "",
                suffix: "",
                query: None,
            },
            Template {
                upstream: make("http://127.0.0.1:8181/api{path}?k=v"),
                authority: "127.0.0.1:8181",
                host: "127.0.0.1",
                port: 8181,
                prefix: "/api",
                suffix: "",
                query: Some("k=v"),
            },
            Template {
                upstream: make("http://backend.invalid:80/a/b{path}.xml"),
                authority: "backend.invalid:80",
                host: "backend.invalid",
                port: 80,
                prefix: "/a/b",
                suffix: ".xml",
                query: None,
            },
        ]
    })
}

/// One round of percent-decoding: every `%` and two hex digits.
fn decode(bytes: &[u8]) -> Vec<u8> {
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The bytes as a lenient UTF-8 decoder reads them (old servers did, and
/// some still do): an overlong sequence for an ASCII character (`C0 AE`,
/// `E0 80 AE`, `F0 80 80 AE` for `.`) becomes that character.
fn lenient(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (len, lead) = match b {
            0xC0..=0xDF => (2, u32::from(b & 0x1F)),
            0xE0..=0xEF => (3, u32::from(b & 0x0F)),
            0xF0..=0xF7 => (4, u32::from(b & 0x07)),
            _ => (1, 0),
        };
        let tail = bytes.get(i + 1..i + len).unwrap_or(&[]);
        if len > 1 && tail.len() == len - 1 && tail.iter().all(|&c| c & 0xC0 == 0x80) {
            let value = tail
                .iter()
                .fold(lead, |v, &c| (v << 6) | u32::from(c & 0x3F));
            if value < 0x80 {
                out.push(value as u8);
                i += len;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    out
}

/// Panics if a segment of `path` is `.` or `..` (before any `;`) after any
/// number of percent-decodings of the whole path, read as it is or
/// leniently ([`lenient`]).
fn no_dot_segments(path: &str, input: &str) {
    let mut bytes = path.as_bytes().to_vec();
    // Each round that changes anything shortens the bytes: this ends.
    loop {
        for form in [bytes.clone(), lenient(&bytes)] {
            for segment in form.split(|&b| b == b'/' || b == b'\\') {
                let name = segment.split(|&b| b == b';').next().unwrap_or(&[]);
                assert!(
                    name != b"." && name != b"..",
                    "{input:?}: a dot segment in {path:?} once decoded to {:?}",
                    String::from_utf8_lossy(&form)
                );
            }
        }
        let next = decode(&bytes);
        if next == bytes {
            break;
        }
        bytes = next;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let t = &templates()[usize::from(pick) % 3];
    let (path, query) = match rest.iter().position(|&b| b == 0xFF) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let path = String::from_utf8_lossy(path);
    let query = query.map(String::from_utf8_lossy);
    let Ok(uri) = t.upstream.request_url(&path, query.as_deref()) else {
        return;
    };
    let url = uri.to_string();
    let input = (&path, &query);

    // The configured scheme, host and port, and nothing else.
    assert_eq!(uri.scheme_str(), Some("http"), "{input:?} → {url}");
    assert_eq!(
        uri.authority().map(|a| a.as_str()),
        Some(t.authority),
        "{input:?} → {url}"
    );
    assert_eq!(uri.host(), Some(t.host), "{input:?} → {url}");
    assert_eq!(uri.port_u16(), Some(t.port), "{input:?} → {url}");
    assert!(
        url.starts_with(&format!("http://{}/", t.authority)),
        "{input:?} → {url}"
    );

    // Nothing that ends the URL early, splits the request line or that a
    // server may read as a separator.
    for &b in url.as_bytes() {
        assert!(
            !matches!(b, b'\\' | b'#' | b' ' | 0..0x20 | 0x7f | 0x80..),
            "{input:?} → {url}: byte {b:#04x}"
        );
    }

    // The template's path with the request path put in as given.
    let upath = uri.path();
    let filled = format!("{}{}{}", t.prefix, path, t.suffix);
    let expected = if filled.is_empty() { "/" } else { &filled };
    assert_eq!(upath, expected, "{input:?} → {url}");
    let below = upath
        .strip_prefix(t.prefix)
        .unwrap_or_else(|| panic!("{input:?} → {url}: not under {:?}", t.prefix));
    assert!(
        below.is_empty() || below.starts_with('/') || below == t.suffix,
        "{input:?} → {url}: {below:?} leaves the prefix"
    );
    no_dot_segments(upath, &format!("{input:?}"));

    // The query: the template's, then the request's.
    let wanted = [t.query, query.as_deref().filter(|q| !q.is_empty())]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("&");
    assert_eq!(
        uri.query().unwrap_or(""),
        wanted,
        "{input:?} → {url}: the query"
    );

    // What a WHATWG parser makes of the same text.
    let whatwg = url::Url::parse(&url).unwrap_or_else(|e| panic!("{input:?} → {url}: {e}"));
    assert_eq!(whatwg.scheme(), "http", "{input:?} → {url}");
    assert_eq!(whatwg.host_str(), Some(t.host), "{input:?} → {url}");
    assert_eq!(
        whatwg.port_or_known_default(),
        Some(t.port),
        "{input:?} → {url}"
    );
    assert!(
        whatwg.username().is_empty() && whatwg.password().is_none(),
        "{input:?} → {url}"
    );
    let below = whatwg
        .path()
        .strip_prefix(t.prefix)
        .unwrap_or_else(|| panic!("{input:?} → {url}: WHATWG path {}", whatwg.path()));
    assert!(
        below.is_empty() || below.starts_with('/') || below == t.suffix,
        "{input:?} → {url}: WHATWG path {}",
        whatwg.path()
    );
});
