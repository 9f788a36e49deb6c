//! A document parsed with a shared DTD is the tree a full parse gives:
//! default and typed attributes, IDs, entities (internal, nested, in
//! attributes, external, unparsed), PE-built declarations and conditional
//! sections; and a template is dropped when a file of its DTD changes.

use super::super::*;
use std::sync::{Arc, Mutex};

/// Serves files from an in-memory map that tests can change, and vouches
/// for unchanged files by hash.
#[derive(Default)]
struct Files {
    files: Mutex<Vec<(String, String)>>,
    loads: Mutex<u32>,
}

impl Files {
    fn new(files: &[(&str, &str)]) -> Arc<Files> {
        Arc::new(Files {
            files: Mutex::new(
                files
                    .iter()
                    .map(|(n, b)| (n.to_string(), b.to_string()))
                    .collect(),
            ),
            loads: Mutex::new(0),
        })
    }

    fn get(&self, url: &str) -> Option<String> {
        self.files
            .lock()
            .unwrap()
            .iter()
            .find(|(name, _)| url == name.as_str())
            .map(|(_, body)| body.clone())
    }

    fn set(&self, name: &str, body: &str) {
        let mut files = self.files.lock().unwrap();
        files.retain(|(n, _)| n != name);
        files.push((name.to_string(), body.to_string()));
    }

    fn loads(&self) -> u32 {
        *self.loads.lock().unwrap()
    }
}

impl Resolver for Files {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        *self.loads.lock().unwrap() += 1;
        self.get(url)
            .map(|body| Loaded {
                url: url.to_string(),
                bytes: body.into_bytes(),
            })
            .ok_or_else(|| format!("no such file {url}"))
    }

    fn unchanged(&self, url: &str, hash: &[u8; 32]) -> bool {
        self.get(url)
            .is_some_and(|body| blake3::hash(body.as_bytes()).as_bytes() == hash)
    }
}

/// The tree as bytes, DOCTYPE and all, plus what id() finds.
fn dump(doc: &XmlDoc) -> Vec<u8> {
    let mut out: *mut u8 = std::ptr::null_mut();
    let mut len: c_int = 0;
    // SAFETY: a live document; out/len are locals.
    unsafe { sys::shim_dump_xml(doc.ptr.as_ptr(), &mut out, &mut len) };
    // SAFETY: the shim returned `len` bytes from libxml2's allocator.
    unsafe { take_buffer(out, len) }
}

fn doctype(bytes: &str) -> Option<DoctypeIds<'static>> {
    let scanned = crate::prolog::scan(bytes.as_bytes()).ok()?.doctype?;
    let public: Option<&'static str> = scanned.public_id.map(|p| &*Box::leak(p.into_boxed_str()));
    let system: &'static str = Box::leak(scanned.system_id?.into_boxed_str());
    Some(DoctypeIds {
        public_id: public,
        system_id: system,
    })
}

fn both_ways(files: &Arc<Files>, url: &str, xml: &str) -> (XmlDoc, XmlDoc) {
    let resolver: Arc<dyn Resolver> = files.clone();
    let full = XmlDoc::parse(xml.as_bytes(), url, resolver.clone()).expect("full parse");
    let shared =
        XmlDoc::parse_document(xml.as_bytes(), url, resolver, doctype(xml)).expect("shared parse");
    (full, shared)
}

const DTD: &str = r#"<!ENTITY % common "id ID #IMPLIED role CDATA #IMPLIED">
<!ENTITY % kind "(a|b|c)">
<!ENTITY % on "INCLUDE">
<!ENTITY % off "IGNORE">
<!ELEMENT doc (p|note|ext)*>
<!ATTLIST doc %common; version CDATA "1.0" xmlns:x CDATA #FIXED "urn:x">
<!ELEMENT p (#PCDATA|ref)*>
<!ATTLIST p %common; kind %kind; "b" tokens NMTOKENS #IMPLIED>
<![%on;[ <!ATTLIST p shown CDATA "yes"> ]]>
<![%off;[ <!ATTLIST p hidden CDATA "no"> ]]>
<!ATTLIST p kind (a|b) "a" extra CDATA "second">
<!ELEMENT ref EMPTY>
<!ATTLIST ref to IDREF #REQUIRED>
<!ELEMENT note ANY>
<!ATTLIST note x:flag CDATA "on" pic ENTITY #IMPLIED>
<!ELEMENT ext ANY>
<!NOTATION gif SYSTEM "image/gif">
<!ENTITY logo SYSTEM "logo.gif" NDATA gif>
<!ENTITY who "Axle &amp; <b>co</b>">
<!ENTITY nested "[&who;]">
<!ENTITY attr "a  b">
<!ENTITY chapter SYSTEM "chapter.xml">
<!ENTITY % isopub SYSTEM "isopub.ent">
%isopub;
"#;

fn files() -> Arc<Files> {
    Files::new(&[
        ("/dtd/test.dtd", DTD),
        (
            "/dtd/isopub.ent",
            r#"<!ENTITY mdash "&#x2014;"> <!ENTITY hellip "&#x2026;">"#,
        ),
        ("/dtd/chapter.xml", "<p id='c1'>chapter &mdash; text</p>"),
    ])
}

const DOC: &str = r#"<?xml version="1.0"?>
<!DOCTYPE doc SYSTEM "../dtd/test.dtd">
<doc>
  <p id="  one " tokens="  x   y  " role=" keep  spaces ">&who; &nested; &mdash;&hellip;<ref to=" two "/></p>
  <p id="two" kind="c" title="&attr;">second</p>
  <note pic="logo">note</note>
  <ext>&chapter;</ext>
</doc>
"#;

#[test]
fn a_shared_dtd_gives_the_tree_a_full_parse_gives() {
    let files = files();
    let (full, shared) = both_ways(&files, "/docs/a.xml", DOC);
    assert!(shared.borrows_dtd, "the template was not used");
    let (a, b) = (dump(&full), dump(&shared));
    assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
    // Defaults, normalization and entities are really in the tree.
    let text = String::from_utf8_lossy(&b);
    assert!(text.contains(r#"id="one""#), "{text}");
    assert!(text.contains(r#"tokens="x y""#), "{text}");
    assert!(text.contains(r#"version="1.0""#), "{text}");
    assert!(
        text.contains(r#"shown="yes""#) && !text.contains("hidden"),
        "{text}"
    );
    assert!(text.contains(r#"extra="second""#), "{text}");
    assert!(
        text.contains("Axle &amp; <b>co</b>") && text.contains('\u{2014}'),
        "{text}"
    );
    assert!(text.contains("chapter \u{2014} text"), "{text}");
}

#[test]
fn ids_and_unparsed_entities_are_there_for_xslt() {
    let files = files();
    let xsl = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
      <xsl:output method="text"/>
      <xsl:template match="/">
        <xsl:value-of select="id('one')/@kind"/>|<xsl:value-of select="id('two')"/>|<xsl:value-of
          select="count(id('c1'))"/>|<xsl:value-of select="unparsed-entity-uri('logo')"/>|<xsl:value-of
          select="unparsed-entity-uri('who')"/>|<xsl:value-of select="//*[@x:flag]/@x:flag" xmlns:x="urn:x"/>
      </xsl:template>
    </xsl:stylesheet>"#;
    let style = Arc::new(
        Stylesheet::compile(xsl.as_bytes(), "/s.xsl", Arc::new(RefuseAll)).expect("compiles"),
    );
    let (full, shared) = both_ways(&files, "/docs/a.xml", DOC);
    let out = |doc: XmlDoc| {
        style
            .transform(
                doc,
                "/docs/a.xml",
                &[],
                &Limits::default(),
                Arc::new(RefuseAll),
            )
            .expect("transforms")
            .serialize()
            .expect("serializes")
    };
    let (a, b) = (out(full), out(shared));
    assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
    assert_eq!(String::from_utf8_lossy(&b), "b|second|1|/dtd/logo.gif||on");
}

#[test]
fn the_dtd_is_read_once_and_again_when_a_file_of_it_changes() {
    let files = files();
    let xml = DOC.replace("../dtd/test.dtd", "../dtd/test.dtd?once");
    files.set("/dtd/test.dtd?once", DTD);
    let resolver: Arc<dyn Resolver> = files.clone();
    let parse = || {
        XmlDoc::parse_document(
            xml.as_bytes(),
            "/docs/a.xml",
            resolver.clone(),
            doctype(&xml),
        )
        .expect("parses")
    };
    let first = parse();
    let after_first = files.loads();
    let second = parse();
    assert!(first.borrows_dtd && second.borrows_dtd);
    // The second parse loads only the external entity of the document body.
    assert_eq!(files.loads() - after_first, 1);
    // A changed entity file is seen.
    files.set(
        "/dtd/isopub.ent",
        r#"<!ENTITY mdash "--"> <!ENTITY hellip "...">"#,
    );
    let third = parse();
    assert!(third.borrows_dtd);
    let text = String::from_utf8_lossy(&dump(&third)).into_owned();
    assert!(
        text.contains("&amp; <b>co</b>") && text.contains("--..."),
        "{text}"
    );
    let full = XmlDoc::parse(xml.as_bytes(), "/docs/a.xml", resolver.clone()).expect("parses");
    assert_eq!(text, String::from_utf8_lossy(&dump(&full)));
}

#[test]
fn documents_a_template_cannot_stand_for_are_parsed_in_full() {
    let files = files();
    // An internal subset, standalone="yes", and a DTD with an error.
    files.set("/dtd/bad.dtd", "<!ELEMENT doc ANY> <!ATTLIST doc a CDATA>");
    for xml in [
        r#"<!DOCTYPE doc SYSTEM "../dtd/test.dtd" [<!ENTITY who "inside">]><doc><p>&who;</p></doc>"#,
        r#"<?xml version="1.0" standalone="yes"?><!DOCTYPE doc SYSTEM "../dtd/test.dtd"><doc><p id="x"/></doc>"#,
        r#"<!DOCTYPE doc SYSTEM "../dtd/bad.dtd"><doc/>"#,
    ] {
        let resolver: Arc<dyn Resolver> = files.clone();
        let full = XmlDoc::parse(xml.as_bytes(), "/docs/b.xml", resolver.clone());
        let shared = XmlDoc::parse_document(xml.as_bytes(), "/docs/b.xml", resolver, doctype(xml));
        match (full, shared) {
            (Ok(full), Ok(shared)) => {
                assert!(!shared.borrows_dtd, "{xml}");
                assert_eq!(dump(&full), dump(&shared), "{xml}");
            }
            (Err(a), Err(b)) => assert_eq!(a, b, "{xml}"),
            (a, b) => panic!("{xml}: {a:?} vs {b:?}"),
        }
    }
}
