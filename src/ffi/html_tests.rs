//! `csrc/html.c` against libxslt: every HTML result must serialize to the
//! bytes `xsltSaveResultToString` gives, on generated trees that reach each
//! of its rules (HTML element descriptions, formatting, attribute escaping
//! and quoting, URI attributes, namespaces, script and style, DOE text,
//! comments, PIs, DOCTYPEs, output settings).

use super::html_source::{OUTPUTS, document, stylesheet};
use super::*;
use proptest::prelude::*;
use std::sync::Arc;

/// `xsl` compiled (a test failure if it does not compile).
fn compiled(xsl: &str) -> Arc<Stylesheet> {
    let resolver: Arc<dyn Resolver> = Arc::new(RefuseAll);
    Arc::new(
        Stylesheet::compile(xsl.as_bytes(), "/site/style.xsl", resolver)
            .unwrap_or_else(|e| panic!("{e}\n{xsl}")),
    )
}

/// `xml` transformed by `style`: the result tree, not yet serialized.
fn transformed(style: &Arc<Stylesheet>, xml: &str) -> ResultDoc {
    let resolver: Arc<dyn Resolver> = Arc::new(RefuseAll);
    let doc = XmlDoc::parse(xml.as_bytes(), "/site/doc.xml", resolver.clone())
        .unwrap_or_else(|e| panic!("{e}\n{xml}"));
    style
        .transform(doc, "/site/doc.xml", &[], &Limits::default(), resolver)
        .unwrap_or_else(|e| panic!("{e}\n{xml}"))
}

/// Both serializations of `xml` through `xsl`, each from its own transform.
fn both(xsl: &str, xml: &str) -> (Vec<u8>, Vec<u8>) {
    let style = compiled(xsl);
    let ours = transformed(&style, xml).serialize().unwrap();
    let theirs = transformed(&style, xml).serialize_with_libxslt().unwrap();
    (ours, theirs)
}

fn assert_same(xsl: &str, xml: &str) {
    let (ours, theirs) = both(xsl, xml);
    assert!(
        ours == theirs,
        "serializations differ\n--- stylesheet\n{xsl}\n--- source\n{xml}\n--- libxslt\n{}\n--- ours\n{}",
        String::from_utf8_lossy(&theirs),
        String::from_utf8_lossy(&ours)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn html_results_serialize_like_libxslt(
        output in 0..OUTPUTS.len(),
        choices in proptest::collection::vec(any::<u8>(), 0..160),
    ) {
        assert_same(&stylesheet(OUTPUTS[output]), &document(&choices, 5));
    }
}

#[test]
fn every_rule_on_one_page() {
    let page = r#"<html xmlns:x="urn:x"><head><title>t</title><meta name="a"/><style>p &lt; q &amp; "r"</style><script>if (a &lt; b &amp;&amp; c) {}</script></head>
<body onload="go()"><p>one<br/>two</p><pre>
  kept  <b>bold</b>
</pre><div><div/><p/><x:foo x:ref="a&amp;b">ns</x:foo><foo xmlns:xml="http://www.w3.org/XML/1998/namespace" xmlns:y="urn:y" xml:lang="en"/></div>
<a href=" /a b/é?x=1&amp;y=&quot;2&quot;" name="n m">link</a><img src="i.png" alt="it's"/>
<form action="/go"><input type="checkbox" checked="checked" value="&lt;!--ssi--&gt; &amp;{x} &lt;y"/></form>
<ul><li>1</li><li>2</li></ul><table><tr><td>c</td></tr></table><textarea></textarea><option/>
<!-- a comment --><?pi data?><raw>&lt;b&gt;raw&lt;/b&gt;</raw><span>é € 😀 &#13;</span></body></html>"#;
    for output in OUTPUTS {
        assert_same(&stylesheet(output), page);
    }
}

#[test]
fn the_fast_path_is_taken_for_html_in_utf8() {
    // The comparisons above would pass if the fast path never ran; this
    // checks that it takes an HTML tree in UTF-8, and leaves XML alone.
    let result =
        |output: &str| transformed(&compiled(&stylesheet(output)), "<html><p>x</p></html>");
    assert_eq!(
        result(OUTPUTS[0]).save_html().unwrap().as_deref(),
        Some(&b"<html><p>x</p></html>\n"[..])
    );
    assert_eq!(
        result(r#"<xsl:output method="xml"/>"#).save_html().unwrap(),
        None
    );
}
