//! `XmlDoc::xinclude_expansion` (`csrc/xinclude.c`) bounds the nodes a
//! document has once its XIncludes are processed, for the inclusions the
//! `xinclude_count` fuzz target found it undercounting: text inclusions,
//! inclusions that copy from the document they are in, and xpointers that
//! select overlapping subtrees.

use super::fuzzing::tree_node_count;
use super::*;
use std::sync::Arc;

const XI: &str = r#"xmlns:xi="http://www.w3.org/2001/XInclude""#;

/// Serves a few fixed files under `/root/`.
struct Root;

impl Resolver for Root {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        let body = match url {
            "/root/t.txt" => "some text\n".to_string(),
            "/root/y.xml" => "<r><x><y/><y><y/></y></x><z/></r>".to_string(),
            "/root/a.xml" => "<a><b/>text</a>".to_string(),
            _ => return Err(format!("no such file {url}")),
        };
        Ok(Loaded {
            url: url.to_string(),
            bytes: body.into_bytes(),
        })
    }
}

/// (the count, the nodes once processed); panics if processing fails.
fn counted(xml: &str) -> (u64, u64) {
    init();
    let resolver: Arc<dyn Resolver> = Arc::new(Root);
    let mut doc = XmlDoc::parse(xml.as_bytes(), "/root/doc.xml", resolver.clone())
        .unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let count = doc.xinclude_expansion(resolver.clone(), 1_000_000);
    doc.process_xinclude(resolver)
        .unwrap_or_else(|e| panic!("{e}\n{xml}"));
    (count, tree_node_count(&doc))
}

fn assert_bounds(xml: &str) {
    let (count, after) = counted(xml);
    assert!(
        count >= after,
        "counted {count}, {after} once processed\n{xml}"
    );
}

#[test]
fn a_text_inclusion_counts_its_markers_and_its_text() {
    // Each becomes a start marker, a text node and an end marker: 3 nodes
    // where the element alone was counted.
    assert_bounds(&format!(
        r#"<d {XI}><xi:include href="t.txt" parse="text"/><xi:include href="t.txt" parse="text"/></d>"#
    ));
}

#[test]
fn an_inclusion_from_the_document_itself_counts_the_document() {
    // Each copies from the document it is in (no href): counted as 0.
    let ys = "<y/>".repeat(20);
    let includes = r#"<xi:include xpointer="element(/1/1)"/>"#.repeat(10);
    assert_bounds(&format!(r#"<d {XI}><x>{ys}</x>{includes}</d>"#));
    // The same through the document's own URL.
    let includes = r#"<xi:include href="doc.xml" xpointer="element(/1/1)"/>"#.repeat(10);
    assert_bounds(&format!(r#"<d {XI}><x>{ys}</x>{includes}</d>"#));
}

#[test]
fn one_element_xpointers_are_counted_and_others_are_past_the_limit() {
    // element() selects one element: bounded by the included document.
    assert_bounds(&format!(
        r#"<d {XI}><xi:include href="y.xml" xpointer="element(/1/1)"/><xi:include href="a.xml" xpointer="xmlns(q=urn:q)element(/1)"/></d>"#
    ));
    // xpointer() can select overlapping subtrees (here every element of
    // y.xml with its descendants, 14 nodes from a document of 7) or copy
    // the document it is in many times: past any limit, never processed.
    for xml in [
        format!(r#"<d {XI}><xi:include href="y.xml" xpointer="xpointer(//*)"/></d>"#),
        format!(r#"<d {XI}><x><y/><y/></x><xi:include xpointer="xpointer(//y)"/></d>"#),
        format!(r#"<d {XI}><xi:include href="a.xml" xpointer="element(/1)xpath1(//b)"/></d>"#),
    ] {
        let resolver: Arc<dyn Resolver> = Arc::new(Root);
        let doc = XmlDoc::parse(xml.as_bytes(), "/root/doc.xml", resolver.clone()).unwrap();
        assert!(
            doc.xinclude_expansion(resolver, 1_000_000) > 1_000_000,
            "{xml}"
        );
    }
}
