//! Tests of the untrusted parse: each limit at its edge, each external
//! reference refused, the tree the same as a served document's parse.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

fn limits(depth: u32, attributes: u32, amplification: u32) -> UntrustedLimits {
    UntrustedLimits {
        max_depth: depth,
        max_attributes: attributes,
        max_amplification: amplification,
    }
}

fn parse(text: &str) -> Result<XmlDoc, Refusal> {
    XmlDoc::parse_untrusted(text.as_bytes(), "/post/x.xml", &UntrustedLimits::default())
}

fn nested(depth: usize) -> String {
    format!("{}{}", "<a>".repeat(depth), "</a>".repeat(depth))
}

fn with_attributes(n: usize) -> String {
    let attrs: String = (0..n).map(|i| format!(" a{i}=\"{i}\"")).collect();
    format!("<r{attrs}/>")
}

#[test]
fn a_standalone_document_parses_to_the_tree_a_file_gives() {
    let text = "<?xml version=\"1.0\"?>\n<!DOCTYPE d [<!ENTITY e \"<b>hi</b>\"><!ATTLIST d x CDATA \"dflt\">]>\n<?pi data?><d>&e; &amp; <![CDATA[<raw>]]></d>";
    let doc = parse(text).unwrap();
    let plain = XmlDoc::parse(text.as_bytes(), "/post/x.xml", Arc::new(RefuseAll)).unwrap();
    assert_eq!(doc.to_xml_bytes().unwrap(), plain.to_xml_bytes().unwrap());
    let out = String::from_utf8(doc.to_xml_bytes().unwrap()).unwrap();
    assert!(out.contains("<b>hi</b>"), "{out}");
    assert!(out.contains("x=\"dflt\""), "{out}");
}

#[test]
fn external_dtds_are_refused_in_every_spelling() {
    for text in [
        "<!DOCTYPE a SYSTEM \"x.dtd\"><a/>",
        "<!DOCTYPE a PUBLIC \"-//X//DTD X//EN\" \"http://127.0.0.1:1/x.dtd\"><a/>",
        "<!DOCTYPE a SYSTEM 'file:///etc/passwd' [<!ELEMENT a ANY>]><a/>",
        "<!DOCTYPE a SYSTEM \"/data/guestbook.sql\"><a/>",
    ] {
        assert_eq!(parse(text).unwrap_err(), Refusal::ExternalDtd, "{text}");
    }
}

#[test]
fn external_entities_are_refused_at_their_declaration() {
    for text in [
        // The first declaration binds (XML 1.0 §4.2): a later internal one
        // must not hide it.
        "<!DOCTYPE d [<!ENTITY s SYSTEM \"/db/x\"><!ENTITY s \"ok\">]><d>&s;</d>",
        "<!DOCTYPE d [<!ENTITY s \"ok\"><!ENTITY s SYSTEM \"/db/x\">]><d>&s;</d>",
        "<!DOCTYPE d [<!ENTITY s SYSTEM \"/etc/passwd\">]><d/>",
        "<!DOCTYPE d [<!ENTITY s PUBLIC \"-//X//X\" \"x.txt\">]><d>&s;</d>",
        "<!DOCTYPE d [<!ENTITY % p SYSTEM \"x.dtd\"> %p;]><d/>",
        "<!DOCTYPE d [<!ENTITY % p SYSTEM \"x.dtd\">]><d/>",
        "<!DOCTYPE d [<!NOTATION n SYSTEM \"n\"><!ENTITY u SYSTEM \"u.bin\" NDATA n>]><d/>",
        "<!DOCTYPE d [<!ENTITY % q \"<!ENTITY s SYSTEM '/db/x'>\"> %q;]><d>&s;</d>",
    ] {
        match parse(text) {
            Err(Refusal::ExternalEntity { .. }) => {}
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn depth_is_held_at_its_edge() {
    let l = limits(10, 256, 5);
    assert!(XmlDoc::parse_untrusted(nested(10).as_bytes(), "/x.xml", &l).is_ok());
    match XmlDoc::parse_untrusted(nested(11).as_bytes(), "/x.xml", &l) {
        Err(Refusal::Depth { limit: 10, .. }) => {}
        other => panic!("{other:?}"),
    }
    // The attack of issue #36 row 1: thousands of levels, refused at once.
    let started = Instant::now();
    let e = parse(&nested(100_000)).unwrap_err();
    assert!(matches!(e, Refusal::Depth { limit: 256, .. }), "{e}");
    assert!(e.to_string().contains("max-post-depth"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // A limit past libxml2's own is held at libxml2's.
    let high = limits(100_000, 256, 5);
    assert!(XmlDoc::parse_untrusted(nested(256).as_bytes(), "/x.xml", &high).is_ok());
    assert!(XmlDoc::parse_untrusted(nested(257).as_bytes(), "/x.xml", &high).is_err());
}

#[test]
fn depth_counts_what_entity_copies_add() {
    // The entity's content is parsed once (and counted there), then copied
    // at its second reference: the tree walk sees the copy's depth.
    let l = limits(6, 256, 5);
    let shallow = "<!DOCTYPE d [<!ENTITY e \"<a><a><a></a></a></a>\">]><d>&e;<b>&e;</b></d>";
    assert!(XmlDoc::parse_untrusted(shallow.as_bytes(), "/x.xml", &l).is_ok());
    let deep =
        "<!DOCTYPE d [<!ENTITY e \"<a><a><a></a></a></a>\">]><d>&e;<b><b><b>&e;</b></b></b></d>";
    match XmlDoc::parse_untrusted(deep.as_bytes(), "/x.xml", &l) {
        Err(Refusal::Depth { limit: 6, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn attributes_are_held_at_their_edge() {
    let l = limits(256, 10, 5);
    assert!(XmlDoc::parse_untrusted(with_attributes(10).as_bytes(), "/x.xml", &l).is_ok());
    match XmlDoc::parse_untrusted(with_attributes(11).as_bytes(), "/x.xml", &l) {
        Err(Refusal::Attributes {
            count: 11,
            limit: 10,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    // Namespace declarations count too.
    let ns = "<r xmlns:a=\"a\" xmlns:b=\"b\" a:x=\"1\" b:y=\"2\" z=\"3\"/>";
    assert!(XmlDoc::parse_untrusted(ns.as_bytes(), "/x.xml", &limits(256, 5, 5)).is_ok());
    assert!(XmlDoc::parse_untrusted(ns.as_bytes(), "/x.xml", &limits(256, 4, 5)).is_err());
    // Row 4: 80,000 attributes, refused well under a second.
    let started = Instant::now();
    let e = parse(&with_attributes(80_000)).unwrap_err();
    assert!(e.to_string().contains("max-post-attributes"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn attributes_written_in_an_entity_are_counted() {
    let attrs: String = (0..300).map(|i| format!(" a{i}&#61;'{i}'")).collect();
    let text = format!("<!DOCTYPE d [<!ENTITY e \"&#60;x{attrs}/>\">]><d>&e;</d>");
    assert!(matches!(parse(&text), Err(Refusal::Attributes { .. })));
}

#[test]
fn most_attributes_reads_markup_as_the_parser_does() {
    assert_eq!(most_attributes(b"<a x=\"1\" y='2'><b z=\"=>=\"/></a>"), 2);
    assert_eq!(most_attributes(b"<a>x=y=z</a>"), 0);
    assert_eq!(most_attributes(b"<!-- <a x=1 y=2 z=3> --><a/>"), 0);
    assert_eq!(most_attributes(b"<?pi a=1 b=2 c=3?><a/>"), 0);
    assert_eq!(most_attributes(b"<a><![CDATA[<b x=1 y=2>]]></a>"), 0);
    // A quote inside a DOCTYPE comment does not end the DOCTYPE early, nor
    // swallow the start tag after it.
    assert_eq!(
        most_attributes(b"<!DOCTYPE a [<!-- ' --><!ENTITY e \"x\">]><a p=\"'\" q=\"'\" r=\"'\"/>"),
        3
    );
    let mut utf16 = vec![0xFF, 0xFE];
    for u in "<a x=\"1\" y=\"2\" z=\"3\"/>".encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    assert_eq!(most_attributes(&utf16), 3);
}

#[test]
fn amplification_is_bounded() {
    // Row 3: one 100 KB entity referenced 2,000 times, refused at once.
    let big = "x".repeat(100_000);
    let refs = "&s;".repeat(2_000);
    let text = format!("<!DOCTYPE d [<!ENTITY s \"{big}\">]><d>{refs}</d>");
    let started = Instant::now();
    let e = parse(&text).unwrap_err();
    assert!(matches!(e, Refusal::Amplification { limit: 5, .. }), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // The billion laughs.
    let mut laughs = String::from("<!DOCTYPE a [<!ENTITY e0 \"ha\">");
    for i in 1..10 {
        let p = i - 1;
        laughs.push_str(&format!(
            "<!ENTITY e{i} \"{}\">",
            format!("&e{p};").repeat(10)
        ));
    }
    laughs.push_str("]><a>&e9;</a>");
    assert!(matches!(parse(&laughs), Err(Refusal::Amplification { .. })));
    // Ordinary use: boilerplate entities a few times.
    let ok = format!(
        "<!DOCTYPE d [<!ENTITY c \"Copyright 2026 Example\">]><d>{}</d>",
        "<p>&c;</p>".repeat(100)
    );
    assert!(parse(&ok).is_ok());
}

#[test]
fn amplification_is_held_at_its_edge() {
    // 1 MB of expansion is free; past it, at most max-amplification × the
    // document's size. A 10,000-byte entity referenced N times in a
    // document of about 10,000 + 3N bytes.
    let entity = "y".repeat(10_000);
    let doc = |n: usize| {
        format!(
            "<!DOCTYPE d [<!ENTITY s \"{entity}\">]><d>{}</d>",
            "&s;".repeat(n)
        )
    };
    // libxml2 looks the entity up once more at its declaration, which is
    // charged like a reference: 98 references cost 99 × 10,020 = 991,980
    // bytes, within the free 1,000,000; 99 cost 1,002,000, past it, and
    // past 5 × the document's 10,340 bytes.
    assert!(parse(&doc(98)).is_ok());
    assert!(matches!(
        parse(&doc(99)),
        Err(Refusal::Amplification { .. })
    ));
    // 200: 2,004,000 expanded, document 10,630 bytes × 5 = 53,150: refused.
    assert!(matches!(
        parse(&doc(200)),
        Err(Refusal::Amplification { .. })
    ));
    // With amplification 1,000 the same document passes (2,004,000 ≤
    // 10,630,000).
    let lenient = limits(256, 256, 1_000);
    assert!(XmlDoc::parse_untrusted(doc(200).as_bytes(), "/x.xml", &lenient).is_ok());
}

#[test]
fn malformed_documents_say_where() {
    match parse("<a>\n  <b></c>\n</a>") {
        Err(Refusal::Malformed(XmlError::Parse { line, .. })) => assert_eq!(line, Some(2)),
        other => panic!("{other:?}"),
    }
}
