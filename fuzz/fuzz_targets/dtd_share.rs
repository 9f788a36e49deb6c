//! Parses documents that name an external DTD through the shared-DTD path
//! (`XmlDoc::parse_document`, `csrc/dtd.c`: the first parse builds a
//! template from the DTD and registers it, later parses borrow its parsed
//! declarations) and holds what `src/ffi/dtd.rs` promises: the tree is the
//! one a parse without sharing gives (`XmlDoc::parse`). Why: dtd.c lends
//! libxml2 structures from one parse to another and returns them before a
//! document is freed; a lifetime or ownership slip there is a
//! use-after-free or a double free, which AddressSanitizer reports
//! (scripts/fuzz-asan builds csrc/ with -fsanitize=address).
//!
//! Input: byte 0 picks how the DOCTYPE names the DTD (relative, through a
//! subdirectory, absolute, with or without a public ID, with or without
//! an internal subset) and byte 1 whether the fuzzed DTD imports fixed
//! entity files; the rest is the DTD's text, then (after the first NUL)
//! the document's body after its DOCTYPE. The root: `/root/` in memory,
//! the DTD at `/root/dtd/d.dtd` (and `/root/dtd/other.dtd`, fixed), with an
//! entity set, an external parsed entity and a nested directory the DTD
//! can name; the resolver vouches for unchanged files by content hash, as
//! the file provider does, so the DTD's template is rebuilt whenever the
//! fuzzer changes it and reused by the second shared parse.
//!
//! Asserts: the full parse, the first shared parse and the second shared
//! parse all succeed or all fail; when they succeed, the three trees
//! serialize to the same bytes (DOCTYPE and all), have the same canonical
//! form and the same faithfulness; and the borrowing trees can still be
//! serialized and freed after their template is replaced (the DTD changed).
#![no_main]

use std::sync::{Arc, Mutex};

use axle::ffi::{DoctypeIds, Loaded, Resolver, XmlDoc};
use libfuzzer_sys::fuzz_target;

const DOC_URL: &str = "/root/docs/doc.xml";

/// The fixed files of the root; `/root/dtd/d.dtd` is the fuzzer's.
const FILES: &[(&str, &str)] = &[
    (
        "/root/dtd/isopub.ent",
        r#"<!ENTITY mdash "&#x2014;"> <!ENTITY hellip "&#x2026;"> <!ENTITY amp2 "&#38;#38;">"#,
    ),
    (
        "/root/dtd/chapter.xml",
        "<p id='c1'>chapter &mdash; text</p>",
    ),
    (
        "/root/dtd/other.dtd",
        r#"<!ELEMENT doc ANY> <!ATTLIST doc v CDATA "other"> <!ENTITY o "from other">"#,
    ),
    (
        "/root/dtd/sub/mod.mod",
        r#"<!ENTITY % m.kind "(x|y)"> <!ATTLIST p m %m.kind; "x"> <!ENTITY m "module">"#,
    ),
];

/// Serves the fixed files and the fuzzed DTD; vouches for a file whose
/// content hash is the one given.
struct Root {
    dtd: Mutex<Vec<u8>>,
}

impl Root {
    fn get(&self, url: &str) -> Option<Vec<u8>> {
        let url = url.strip_prefix("file://").unwrap_or(url);
        if url == "/root/dtd/d.dtd" {
            return Some(self.dtd.lock().unwrap().clone());
        }
        FILES
            .iter()
            .find(|(name, _)| *name == url)
            .map(|(_, body)| body.as_bytes().to_vec())
    }
}

impl Resolver for Root {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        self.get(url)
            .map(|bytes| Loaded {
                url: url.to_string(),
                bytes,
            })
            .ok_or_else(|| format!("no such file {url}"))
    }

    fn unchanged(&self, url: &str, hash: &[u8; 32]) -> bool {
        self.get(url)
            .is_some_and(|body| blake3::hash(&body).as_bytes() == hash)
    }
}

/// How the DOCTYPE names the DTD: (public ID, system ID, internal subset).
const DOCTYPES: &[(Option<&str>, &str, &str)] = &[
    (None, "../dtd/d.dtd", ""),
    (None, "/root/dtd/d.dtd", ""),
    (Some("-//Axle//DTD Fuzz//EN"), "../dtd/d.dtd", ""),
    (None, "../dtd/sub/../d.dtd", ""),
    (
        None,
        "../dtd/d.dtd",
        r#"<!ENTITY local "in the subset"> <!ATTLIST doc l CDATA "l">"#,
    ),
    (Some("-//Axle//DTD Other//EN"), "../dtd/other.dtd", ""),
    (None, "file:///root/dtd/d.dtd", ""),
    (None, "../dtd/missing.dtd", ""),
];

/// What may come before the fuzzed DTD text.
const PREFIXES: &[&str] = &[
    "",
    "<!ENTITY % isopub SYSTEM \"isopub.ent\">\n%isopub;\n",
    "<!ENTITY % mod SYSTEM \"sub/mod.mod\">\n%mod;\n<!ENTITY chapter SYSTEM \"chapter.xml\">\n",
    "<!ENTITY % on \"INCLUDE\"><!ENTITY % off \"IGNORE\">\n",
];

/// Everything a tree shows: its bytes, its canonical form, faithfulness.
fn view(doc: &XmlDoc) -> (Option<Vec<u8>>, Option<Vec<u8>>, bool) {
    (
        doc.to_xml_bytes().ok(),
        doc.with_canonical_form(<[u8]>::to_vec),
        doc.is_faithful(),
    )
}

fuzz_target!(|data: &[u8]| {
    let [d, p, rest @ ..] = data else {
        return;
    };
    let (public_id, system_id, subset) = DOCTYPES[usize::from(*d) % DOCTYPES.len()];
    let prefix = PREFIXES[usize::from(*p) % PREFIXES.len()];
    let (dtd_text, body) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b"<doc/>"[..]),
    };
    axle::ffi::init();
    let mut dtd = prefix.as_bytes().to_vec();
    dtd.extend_from_slice(dtd_text);

    let mut doc = b"<?xml version=\"1.0\"?>\n<!DOCTYPE doc ".to_vec();
    match public_id {
        Some(p) => doc.extend_from_slice(format!("PUBLIC \"{p}\" \"{system_id}\"").as_bytes()),
        None => doc.extend_from_slice(format!("SYSTEM \"{system_id}\"").as_bytes()),
    }
    if !subset.is_empty() {
        doc.extend_from_slice(format!(" [{subset}]").as_bytes());
    }
    doc.extend_from_slice(b">\n");
    doc.extend_from_slice(body);

    // The ids as the pipeline takes them: from the prolog scanner, and
    // only for a DOCTYPE without an internal subset (the document check
    // in `pipeline` passes none then; a subset may redefine anything).
    let scanned = axle::prolog::scan(&doc).ok().and_then(|p| p.doctype);
    let ids = scanned
        .as_ref()
        .filter(|s| !s.internal_subset)
        .and_then(|s| {
            Some(DoctypeIds {
                public_id: s.public_id.as_deref(),
                system_id: s.system_id.as_deref()?,
            })
        });

    let resolver: Arc<dyn Resolver> = Arc::new(Root {
        dtd: Mutex::new(dtd.clone()),
    });
    let full = XmlDoc::parse(&doc, DOC_URL, resolver.clone());
    let first = XmlDoc::parse_document(&doc, DOC_URL, resolver.clone(), ids);
    let second = XmlDoc::parse_document(&doc, DOC_URL, resolver.clone(), ids);
    let shown = String::from_utf8_lossy(&doc).into_owned();
    let dtd_shown = String::from_utf8_lossy(&dtd).into_owned();
    match (&full, &first, &second) {
        (Ok(full), Ok(first), Ok(second)) => {
            let want = view(full);
            assert!(
                view(first) == want,
                "the first shared parse differs (shares: {})\n--- dtd\n{dtd_shown}\n--- doc\n{shown}\n--- full\n{}\n--- shared\n{}",
                first.shares_dtd(),
                String::from_utf8_lossy(want.0.as_deref().unwrap_or_default()),
                String::from_utf8_lossy(view(first).0.as_deref().unwrap_or_default()),
            );
            assert!(
                view(second) == want,
                "the second shared parse differs (shares: {})\n--- dtd\n{dtd_shown}\n--- doc\n{shown}\n--- full\n{}\n--- shared\n{}",
                second.shares_dtd(),
                String::from_utf8_lossy(want.0.as_deref().unwrap_or_default()),
                String::from_utf8_lossy(view(second).0.as_deref().unwrap_or_default()),
            );
        }
        (Err(_), Err(_), Err(_)) => {}
        _ => panic!(
            "the parses disagree: full {:?}, first shared {:?}, second shared {:?}\n--- dtd\n{dtd_shown}\n--- doc\n{shown}",
            full.as_ref().map(|d| d.shares_dtd()),
            first.as_ref().map(|d| d.shares_dtd()),
            second.as_ref().map(|d| d.shares_dtd()),
        ),
    }
    // The borrowing trees outlive the template once another DTD text
    // replaces it: parse once more with a changed DTD, then use and drop
    // the old trees.
    dtd.extend_from_slice(b"\n<!-- changed -->");
    let changed: Arc<dyn Resolver> = Arc::new(Root {
        dtd: Mutex::new(dtd),
    });
    let third = XmlDoc::parse_document(&doc, DOC_URL, changed, ids);
    if let Ok(second) = &second {
        let _ = second.to_xml_bytes();
    }
    drop(first);
    drop(second);
    if let Ok(third) = &third {
        let _ = third.to_xml_bytes();
    }
});
