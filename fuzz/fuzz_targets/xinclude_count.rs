//! Counts documents' XInclude expansion (`XmlDoc::xinclude_expansion`,
//! `csrc/xinclude.c`) before processing their XIncludes, as the pipeline
//! does for a location with `xinclude = true` (it refuses a document whose
//! count is past `max-xinclude-nodes`, then processes it), and holds what
//! the count promises: an upper bound of the nodes the tree has once its
//! XIncludes are processed. Why: the count is what stops a few small files
//! that include each other from expanding to millions of nodes; an
//! undercount lets such a document through, and the counter is C walking
//! trees and URIs (AddressSanitizer builds csrc/ instrumented).
//!
//! Input: the document (at `/root/doc.xml`), then after the first NUL the
//! text of `/root/f.xml`, a file the document (or the other files) can
//! include. The root, in memory: `a.xml` (a few nodes), `two.xml` and
//! `four.xml` (including `a.xml` twice, `two.xml` twice), `t.txt` (text),
//! `self.xml` (includes itself), `sub/c.xml` (includes `../a.xml`),
//! `ent.xml` (entities that expand to elements), `y.xml` (elements to
//! point into with an xpointer), `bad.xml` (not well-formed).
//!
//! Asserts: never crashes; when the count is at most the limit (100,000)
//! and processing succeeds, the tree has at most that many nodes
//! (`axle::ffi::fuzzing::tree_node_count`, the count's own rule: every
//! node of every children list, XInclude markers included).
#![no_main]

use std::sync::Arc;

use axle::ffi::{Loaded, Resolver, XmlDoc};
use libfuzzer_sys::fuzz_target;

const XI: &str = "http://www.w3.org/2001/XInclude";
const LIMIT: u64 = 100_000;

fn files() -> &'static [(&'static str, String)] {
    static FILES: std::sync::OnceLock<Vec<(&'static str, String)>> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        axle::ffi::init();
        vec![
            ("/root/a.xml", "<a><b/>text<!--c--><?p d?><b><c/></b></a>".to_string()),
            (
                "/root/two.xml",
                format!(r#"<t xmlns:xi="{XI}"><xi:include href="a.xml"/><xi:include href="a.xml"/></t>"#),
            ),
            (
                "/root/four.xml",
                format!(r#"<f xmlns:xi="{XI}"><xi:include href="two.xml"/> <xi:include href="two.xml"/></f>"#),
            ),
            ("/root/t.txt", "some text\nand more\n".to_string()),
            (
                "/root/self.xml",
                format!(r#"<s xmlns:xi="{XI}"><xi:include href="self.xml"/></s>"#),
            ),
            (
                "/root/sub/c.xml",
                format!(r#"<c xmlns:xi="{XI}"><xi:include href="../a.xml"/><xi:include href="../t.txt" parse="text"/></c>"#),
            ),
            (
                "/root/ent.xml",
                r#"<!DOCTYPE e [<!ENTITY x "<b>1</b><b>2</b>"><!ENTITY y "&x;&x;&x;">]><e>&y;&y;</e>"#.to_string(),
            ),
            ("/root/y.xml", r#"<r><x id="x"><y/><y/><y/></x><z/></r>"#.to_string()),
            ("/root/bad.xml", "<a><b></a>".to_string()),
        ]
    })
}

struct Root {
    extra: Vec<u8>,
}

impl Resolver for Root {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        let path = url.strip_prefix("file://").unwrap_or(url);
        let bytes = if path == "/root/f.xml" {
            Some(self.extra.clone())
        } else {
            files()
                .iter()
                .find(|(name, _)| *name == path)
                .map(|(_, body)| body.as_bytes().to_vec())
        };
        bytes
            .map(|bytes| Loaded {
                url: url.to_string(),
                bytes,
            })
            .ok_or_else(|| format!("no such file {url}"))
    }
}

fuzz_target!(|data: &[u8]| {
    let (doc, extra) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"<f/>"[..]),
    };
    let _ = files();
    let resolver: Arc<dyn Resolver> = Arc::new(Root {
        extra: extra.to_vec(),
    });
    let Ok(mut parsed) = XmlDoc::parse(doc, "/root/doc.xml", resolver.clone()) else {
        return;
    };
    let count = parsed.xinclude_expansion(resolver.clone(), LIMIT);
    assert!(count >= 1, "a document has at least its own node");
    if count > LIMIT {
        return;
    }
    let before = axle::ffi::fuzzing::tree_node_count(&parsed);
    assert!(
        count >= before,
        "count {count} below the tree's {before} nodes before processing\n{}",
        String::from_utf8_lossy(doc)
    );
    if parsed.process_xinclude(resolver).is_err() {
        return;
    }
    let after = axle::ffi::fuzzing::tree_node_count(&parsed);
    assert!(
        count >= after,
        "count {count}, but {after} nodes once processed\n--- doc\n{}\n--- f.xml\n{}\n--- processed\n{}",
        String::from_utf8_lossy(doc),
        String::from_utf8_lossy(extra),
        String::from_utf8_lossy(&parsed.to_xml_bytes().unwrap_or_default()),
    );
});
