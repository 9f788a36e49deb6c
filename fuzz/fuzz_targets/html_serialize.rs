//! Serializes HTML results through `csrc/html.c` (`ResultDoc::serialize`,
//! Axle's fast path for HTML in UTF-8) and through libxslt
//! (`ResultDoc::serialize_with_libxslt`), and holds the invariant
//! `src/ffi/html_tests.rs` holds on generated trees: for every result, the
//! two give the same bytes. Why: html.c is C that walks trees an author's
//! documents and stylesheets shape; under AddressSanitizer (scripts/fuzz-asan
//! builds csrc/ with -fsanitize=address) a read past a name or a buffer
//! is a crash here, and a difference is a wrong page.
//!
//! Input: byte 0 picks the `xsl:output` (HTML ones the fast path takes,
//! and others it leaves to libxslt), byte 1 how the rest becomes the
//! source: even, the rest is the source document itself (parsed as Axle
//! parses a document; one libxml2 refuses is skipped); odd, the rest are
//! choices building a document from `axle::ffi::html_source` (the
//! pieces html_tests.rs's property test uses, nested up to 12 deep) (HTML element
//! names in both cases, URI and boolean attributes, text with markup
//! characters and non-ASCII, comments, PIs, `raw` elements whose text is
//! written with disable-output-escaping, an `html` root or a `wrap` root
//! the stylesheet turns into one). The stylesheet copies the source (a
//! `raw` element's text unescaped; `/wrap` becomes `<html>`). Each
//! serialization gets its own transform (serializing edits the tree).
#![no_main]

use std::sync::{Arc, OnceLock};

use axle::ffi::html_source::{OUTPUTS, document, stylesheet};
use axle::ffi::{Limits, RefuseAll, Resolver, Stylesheet, XmlDoc};
use libfuzzer_sys::fuzz_target;

fn styles() -> &'static [Arc<Stylesheet>] {
    static STYLES: OnceLock<Vec<Arc<Stylesheet>>> = OnceLock::new();
    STYLES.get_or_init(|| {
        axle::ffi::init();
        OUTPUTS
            .iter()
            .map(|output| {
                let xsl = stylesheet(output);
                let resolver: Arc<dyn Resolver> = Arc::new(RefuseAll);
                Arc::new(
                    Stylesheet::compile(xsl.as_bytes(), "/site/style.xsl", resolver)
                        .unwrap_or_else(|e| panic!("{e}\n{xsl}")),
                )
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let [o, mode, rest @ ..] = data else {
        return;
    };
    let style = &styles()[usize::from(*o) % OUTPUTS.len()];
    let built;
    let source: &[u8] = if mode % 2 == 0 {
        rest
    } else {
        built = document(rest, 12);
        built.as_bytes()
    };
    let resolver: Arc<dyn Resolver> = Arc::new(RefuseAll);
    let transformed = || {
        let doc = XmlDoc::parse(source, "/site/doc.xml", resolver.clone()).ok()?;
        style
            .transform(
                doc,
                "/site/doc.xml",
                &[],
                &Limits::default(),
                resolver.clone(),
            )
            .ok()
    };
    let Some(first) = transformed() else {
        return;
    };
    let Some(second) = transformed() else {
        panic!("the same source transformed once, then failed");
    };
    let ours = first.serialize();
    let theirs = second.serialize_with_libxslt();
    match (ours, theirs) {
        (Ok(ours), Ok(theirs)) => assert!(
            ours == theirs,
            "serializations differ\n--- output {:?}\n--- source\n{}\n--- libxslt\n{}\n--- ours\n{}",
            OUTPUTS[usize::from(*o) % OUTPUTS.len()],
            String::from_utf8_lossy(source),
            String::from_utf8_lossy(&theirs),
            String::from_utf8_lossy(&ours)
        ),
        (Err(_), Err(_)) => {}
        (ours, theirs) => panic!(
            "one serialization failed: ours {:?}, libxslt {:?}\n--- source\n{}",
            ours.map(|b| b.len()),
            theirs.map(|b| b.len()),
            String::from_utf8_lossy(source)
        ),
    }
});
