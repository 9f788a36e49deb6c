//! Feeds arbitrary request bodies, with a few `Content-Type` and
//! `Content-Encoding` values and body limits, to the `post` source's body
//! check (`axle::dynamic::checks::post_document`: the media type, the
//! content coding with its decoded-size limit, the encoding), then to the
//! one parse a posted document gets (issue #36:
//! `XmlDoc::parse_untrusted_with`, libxml2 under the posted-document
//! limits, with a resolver that records and refuses every load). Named
//! `post_body` until issue #36, which gave it seeds for each way a posted
//! document attacked the server (5,000 levels of nesting, entity
//! amplification, 50,000 attributes, DOCTYPEs with `SYSTEM`/`PUBLIC`,
//! parameter entities, duplicate entity declarations): under
//! AddressSanitizer (scripts/fuzz-asan) a stack overflow is a crash, and
//! libFuzzer's `-timeout` catches a body that takes seconds.
//!
//! Must never panic. A refusal by the check must be 400, 413 or 415 (413
//! only for a gzip body, 415 only for a type or coding that is not
//! taken). An accepted body must be at most the limit, the body itself
//! when it was not encoded. Its parse, under the default limits and under
//! tight ones (depth 8, 8 attributes, amplification 1), must load nothing
//! (not even try), and a tree it gives must hold no element deeper than
//! the depth limit.
//!
//! Input: byte 0 picks the Content-Type, byte 1 the Content-Encoding
//! (the last choice gzips the rest of the input here, so that the decoded
//! document is the fuzzer's), byte 2 the limit; the rest is the body (as
//! sent: one over the limit is skipped, as the server answers 413 before
//! reading past it).
#![no_main]

use std::sync::{Arc, Mutex};

use axle::dynamic::checks::post_document;
use axle::ffi::{Loaded, Resolver, UntrustedLimits, XmlDoc};
use axum::http::{HeaderMap, HeaderValue, header};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

const TYPES: [Option<&[u8]>; 8] = [
    None,
    Some(b"application/xml"),
    Some(b"text/xml; charset=utf-8"),
    Some(b"application/atom+xml"),
    Some(b"Application/TEI+XML ; x=y"),
    Some(b"text/plain"),
    Some(b"application/xmlx"),
    Some(b"application/xml\xff"),
];

/// The last one: `gzip`, with the body compressed by the harness.
const CODINGS: [Option<&[u8]>; 8] = [
    None,
    Some(b"identity"),
    Some(b"gzip"),
    Some(b"X-GZIP "),
    Some(b"br"),
    Some(b"gzip, gzip"),
    Some(b""),
    Some(b"gzip"),
];

const LIMITS: [u64; 4] = [256, 4096, 64 * 1024, 1 << 20];

/// Records every URL libxml2 asks for, and refuses it.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Resolver for Recorder {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        self.0.lock().unwrap().push(format!("load {url}"));
        Err(format!("{url}: nothing may be loaded"))
    }

    fn unchanged(&self, url: &str, _hash: &[u8; 32]) -> bool {
        self.0.lock().unwrap().push(format!("unchanged {url}"));
        false
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fuzz_target!(|data: &[u8]| {
    let [t, c, l, body @ ..] = data else {
        return;
    };
    let content_type = TYPES[usize::from(*t) % TYPES.len()];
    let coding_pick = usize::from(*c) % CODINGS.len();
    let coding = CODINGS[coding_pick];
    let max = LIMITS[usize::from(*l) % LIMITS.len()];
    let mut headers = HeaderMap::new();
    if let Some(v) = content_type {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_bytes(v).unwrap());
    }
    if let Some(v) = coding {
        headers.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_bytes(v).unwrap(),
        );
    }
    let sent = if coding_pick == CODINGS.len() - 1 {
        Bytes::from(gzip(body))
    } else {
        Bytes::copy_from_slice(body)
    };
    // The server reads at most the limit (more is 413 before the check).
    if sent.len() as u64 > max {
        return;
    }
    let gzipped = coding.is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"gzip"))
        || coding.is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"x-gzip"));

    let doc = match post_document(&headers, sent.clone(), max) {
        Ok(doc) => doc,
        Err(e) => {
            let status = e.status().as_u16();
            assert!(
                matches!(status, 400 | 413 | 415),
                "refused with {status}: {e}"
            );
            assert!(status != 413 || gzipped, "413 for an unencoded body: {e}");
            return;
        }
    };
    assert!(doc.len() as u64 <= max, "{} bytes over {max}", doc.len());
    if !gzipped {
        assert_eq!(doc, sent, "an unencoded body changed");
    }

    // The one parse a posted document gets: nothing loaded, or tried.
    axle::ffi::init();
    let tight = UntrustedLimits {
        max_depth: 8,
        max_attributes: 8,
        max_amplification: 1,
    };
    for limits in [UntrustedLimits::default(), tight] {
        let recorder = Arc::new(Recorder::default());
        let parsed = XmlDoc::parse_untrusted_with(&doc, "/post/doc.xml", &limits, recorder.clone());
        let loads = recorder.0.lock().unwrap().clone();
        assert!(
            loads.is_empty(),
            "a posted document made libxml2 load {loads:?}: {:?}",
            String::from_utf8_lossy(&doc)
        );
        if let Ok(tree) = parsed {
            let depth = axle::ffi::fuzzing::tree_depth(&tree);
            assert!(
                depth <= u64::from(limits.max_depth),
                "a tree {depth} deep passed max-post-depth {}",
                limits.max_depth
            );
        }
    }
});
