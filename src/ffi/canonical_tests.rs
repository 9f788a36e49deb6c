//! Unit tests of the tree a stage hands on (`doc.rs`): whether a result
//! tree is faithful (re-parsing its XML gives exactly this tree, so the next
//! stage may take the tree without re-parsing), its canonical XML bytes, and
//! its canonical form, which stands for those bytes for less work (the
//! incremental cache's cut-off hashes it): two trees have the same form
//! exactly when they serialize alike. They live apart from `tests.rs`
//! because they test what a result tree is, not how a transform runs, and
//! bring their own generated documents (`SLOTS`).

use super::tests::{refuse, xsl};
use super::*;
use std::sync::Arc;

#[test]
fn faithful_trees_round_trip_and_unfaithful_ones_are_flagged() {
    let check = |body: &str| -> bool {
        let style =
            Arc::new(Stylesheet::compile(xsl(body).as_bytes(), "/s.xsl", refuse()).unwrap());
        let doc = XmlDoc::parse(b"<doc><a>1</a></doc>", "/d.xml", refuse()).unwrap();
        style
            .transform(doc, "/d.xml", &[], &Limits::default(), refuse())
            .unwrap()
            .into_doc()
            .is_faithful()
    };
    assert!(check(
        r#"<xsl:template match="/"><r><xsl:copy-of select="doc/a"/>text</r></xsl:template>"#
    ));
    assert!(!check(
        r#"<xsl:template match="/">top-level text</xsl:template>"#
    ));
    assert!(!check(
        r#"<xsl:template match="/"><html><p>x</p></html></xsl:template>"#
    ));
    assert!(!check(
        r#"<xsl:template match="/"><r><xsl:text disable-output-escaping="yes">&lt;b/&gt;</xsl:text></r></xsl:template>"#
    ));
}

#[test]
fn canonical_xml_of_an_html_result_is_xml() {
    let style = Arc::new(
        Stylesheet::compile(
            xsl(r#"<xsl:template match="/"><html><body><br/></body></html></xsl:template>"#)
                .as_bytes(),
            "/s.xsl",
            refuse(),
        )
        .unwrap(),
    );
    let doc = XmlDoc::parse(b"<doc/>", "/d.xml", refuse()).unwrap();
    let result = style
        .transform(doc, "/d.xml", &[], &Limits::default(), refuse())
        .unwrap();
    assert!(result.is_html());
    let bytes = result.into_doc().to_xml_bytes().unwrap();
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<html><body><br/></body></html>\n"
    );
}

/// The slots of a small document and the choices for each: documents that
/// differ in one slot are the near misses a canonical form must tell apart.
const SLOTS: [&[&str]; 9] = [
    &["", " xmlns=\"urn:d\""],
    &["a", "p:a", "b"],
    &["x", "p:z", "y"],
    &["1", "2", "&lt;&amp;", "", "&#9;", "\u{e9}"],
    &["", " w=\"\"", " xmlns:q=\"urn:q\"", " xmlns:p=\"urn:p2\""],
    &[
        "t", "u", "&amp;", "<b/>", "<b></b>", "<!--c-->", "<!---->", "<?pi?>", "<?pi d?>",
        "<?pj d?>", "", "t<b/>u", "c", "<p:b/>",
    ],
    &[
        "", "<!--c-->", "<!--d-->", "<?pi?>", "<?pi e?>", "x", "<b>x</b>", "<p:b/>",
    ],
    &["", "<!--top-->", "<?top?>"],
    &[
        "",
        "<!DOCTYPE r SYSTEM \"r.dtd\">",
        "<!DOCTYPE r PUBLIC \"-//X//Y\" \"r.dtd\">",
        "<!DOCTYPE r SYSTEM \"s.dtd\">",
    ],
];

fn slot_document(choice: &[usize]) -> String {
    let c = |i: usize| SLOTS[i][choice[i] % SLOTS[i].len()];
    format!(
        "{}{}<r xmlns:p=\"urn:p\"{}><{e} {}=\"{}\"{}>{}</{e}>{}</r>",
        c(8),
        c(7),
        c(0),
        c(2),
        c(3),
        c(4),
        c(5),
        c(6),
        e = c(1),
    )
}

/// A document and every document that differs from it in one slot.
fn near_documents(base: &[usize]) -> Vec<String> {
    let mut docs = vec![slot_document(base)];
    for (slot, choices) in SLOTS.iter().enumerate() {
        for value in 0..choices.len() {
            let mut choice = base.to_vec();
            choice[slot] = value;
            docs.push(slot_document(&choice));
        }
    }
    docs
}

/// Asserts that each pair of `docs` has equal canonical forms exactly when
/// it has equal serializations.
fn assert_forms_match_serializations(docs: &[String]) {
    let trees: Vec<(Vec<u8>, Vec<u8>)> = docs
        .iter()
        .map(|d| {
            let doc = XmlDoc::parse(d.as_bytes(), "/d.xml", refuse()).unwrap();
            let form = doc.with_canonical_form(<[u8]>::to_vec).expect("encodable");
            (form, doc.to_xml_bytes().unwrap())
        })
        .collect();
    for (i, a) in trees.iter().enumerate() {
        for (j, b) in trees.iter().enumerate() {
            assert_eq!(a.0 == b.0, a.1 == b.1, "{} vs {}", docs[i], docs[j]);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
    /// The canonical form stands for the serialization: two trees have the
    /// same form exactly when they serialize to the same bytes (parsed
    /// trees, so no two distinct trees serialize alike). Every one-slot
    /// variant of a random document, against each other.
    #[test]
    fn canonical_forms_are_equal_exactly_when_serializations_are(
        base in proptest::collection::vec(0usize..16, SLOTS.len())
    ) {
        assert_forms_match_serializations(&near_documents(&base));
    }
}

#[test]
fn canonical_forms_tell_apart_trees_that_differ_in_shape_only() {
    // The same nodes in the same order, nested differently; and one
    // node's content read as another node type.
    let pairs = [
        ("<r><a><b/>x</a></r>", "<r><a/><b>x</b></r>"),
        ("<r><a><b/></a><c/></r>", "<r><a><b/><c/></a></r>"),
        ("<r><a/></r>", "<r><a></a></r>"),
        ("<r><!--c--></r>", "<r>c</r>"),
        ("<r><?c?></r>", "<r><!--c--></r>"),
        ("<r><?c x?></r>", "<r><?c x ?></r>"),
        ("<r a=\"1\" b=\"2\"/>", "<r b=\"2\" a=\"1\"/>"),
        ("<r xmlns:p=\"u\" p:a=\"1\"/>", "<r xmlns:p=\"u\" a=\"1\"/>"),
        (
            "<r xmlns:p=\"u\" xmlns:q=\"v\"/>",
            "<r xmlns:q=\"v\" xmlns:p=\"u\"/>",
        ),
        ("<r xmlns:p=\"u\"><p:a/></r>", "<r xmlns:p=\"u\"><a/></r>"),
        (
            "<?xml version=\"1.0\" standalone=\"yes\"?><r/>",
            "<?xml version=\"1.0\"?><r/>",
        ),
    ];
    for (a, b) in pairs {
        assert_forms_match_serializations(&[a.to_string(), b.to_string()]);
    }
}

#[test]
fn result_trees_with_the_same_content_have_the_same_canonical_form() {
    // Incremental caching's cut-off for a dynamic source: a stage that
    // drops the part that changes gives the same tree, and the same form.
    let strip = Arc::new(
        Stylesheet::compile(
            xsl(r#"<xsl:template match="@*|node()"><xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy></xsl:template><xsl:template match="volatile"/>"#)
                .as_bytes(),
            "/s.xsl",
            refuse(),
        )
        .unwrap(),
    );
    let form = |xml: &str| {
        let doc = XmlDoc::parse(xml.as_bytes(), "/d.xml", refuse()).unwrap();
        let tree = strip
            .transform(doc, "/d.xml", &[], &Limits::default(), refuse())
            .unwrap()
            .into_doc();
        assert!(tree.is_faithful());
        tree.with_canonical_form(<[u8]>::to_vec).unwrap()
    };
    let one = form(r#"<doc a="1"><volatile n="1"/><p>text</p><!--c--></doc>"#);
    assert_eq!(
        one,
        form(r#"<doc a="1"><volatile n="2"/><p>text</p><!--c--></doc>"#)
    );
    assert_ne!(
        one,
        form(r#"<doc a="1"><volatile n="1"/><p>text.</p><!--c--></doc>"#)
    );
    assert_ne!(
        one,
        form(r#"<doc a="2"><volatile n="1"/><p>text</p><!--c--></doc>"#)
    );
}

#[test]
fn a_tree_with_what_the_canonical_form_does_not_encode_has_none() {
    let form = |xml: &str| {
        XmlDoc::parse(xml.as_bytes(), "/d.xml", refuse())
            .unwrap()
            .with_canonical_form(<[u8]>::len)
    };
    assert!(form("<d>x</d>").is_some());
    assert!(form("<!DOCTYPE d SYSTEM \"d.dtd\"><d>x</d>").is_some());
    // Declarations in the DTD, and the entity references they allow.
    assert_eq!(form("<!DOCTYPE d [<!ENTITY e \"x\">]><d>&e;</d>"), None);
    assert_eq!(form("<!DOCTYPE d [<!ELEMENT d (#PCDATA)>]><d>x</d>"), None);
}
