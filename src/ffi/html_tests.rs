//! `csrc/html.c` against libxslt: every HTML result must serialize to the
//! bytes `xsltSaveResultToString` gives, on generated trees that reach each
//! of its rules (HTML element descriptions, formatting, attribute escaping
//! and quoting, URI attributes, namespaces, script and style, DOE text,
//! comments, PIs, DOCTYPEs, output settings).

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

/// `xsl:output` variants: the HTML ones the fast path takes and some it
/// leaves to libxslt (another encoding, XML, text, xhtml).
const OUTPUTS: &[&str] = &[
    r#"<xsl:output method="html"/>"#,
    r#"<xsl:output method="html" indent="no"/>"#,
    r#"<xsl:output method="html" indent="yes" encoding="utf-8"/>"#,
    r#"<xsl:output method="html" doctype-public="-//W3C//DTD HTML 4.01//EN" doctype-system="http://www.w3.org/TR/html4/strict.dtd"/>"#,
    r#"<xsl:output method="html" doctype-system="about:legacy-compat"/>"#,
    r#"<xsl:output method="html" doctype-system="it's &quot;odd&quot;"/>"#,
    r#"<xsl:output method="html" encoding="ISO-8859-1"/>"#,
    r#"<xsl:output method="html" encoding="UTF8" indent="no"/>"#,
    r#"<xsl:output method="xml"/>"#,
    r#"<xsl:output method="xhtml"/>"#,
    "",
];

/// Copies the source, except `raw` elements (their text, unescaped) and
/// `wrap` elements (an `html` root, for the implicit HTML method).
const TEMPLATES: &str = r#"
<xsl:template match="@*|node()"><xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy></xsl:template>
<xsl:template match="raw"><xsl:value-of select="." disable-output-escaping="yes"/></xsl:template>
<xsl:template match="/wrap"><html><xsl:apply-templates/></html></xsl:template>
"#;

fn stylesheet(output: &str) -> String {
    format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">{output}{TEMPLATES}</xsl:stylesheet>"#
    )
}

const ELEMENTS: &[&str] = &[
    "html", "head", "body", "title", "meta", "p", "pre", "param", "div", "span", "a", "br", "img",
    "hr", "input", "script", "style", "textarea", "option", "select", "table", "tr", "td", "ul",
    "li", "b", "em", "form", "area", "col", "link", "base", "dd", "tbody", "colgroup", "foo",
    "Para", "BR", "SCRIPT", "Style", "pX", "x:foo", "svg", "raw", "frame",
];

const ATTRIBUTES: &[&str] = &[
    "href", "HREF", "src", "action", "name", "id", "class", "checked", "SELECTED", "disabled",
    "title", "value", "onclick", "x:ref", "xml:lang", "nohref",
];

/// Pieces of text, as the tree should hold them (escaped when written).
const TEXTS: &[&str] = &[
    "a", "word", " ", "\n", "\t", "\r", "<", ">", "&", "\"", "'", "é", "€", "😀", "&{x}",
    "<!--c-->", "-->", "  lead", "?", "=", "#", "%", "/", "\u{7f}", "]]>",
];

/// Escapes `text` for the source document (markup characters and the
/// double quote, for text and attribute values), keeping tab, newline and
/// CR as character references, which attribute normalization leaves alone.
/// Its own, so that ffi's tests reach nothing above ffi.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\r' => out.push_str("&#13;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out
}

/// Builds a source document from `choices`: each byte picks what comes
/// next (an element with attributes, text, a comment, a PI, a `raw`
/// element, the end of the current element).
struct Builder<'a> {
    choices: &'a [u8],
    at: usize,
}

impl Builder<'_> {
    fn next(&mut self) -> usize {
        let b = self.choices.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        usize::from(b)
    }

    fn more(&self) -> bool {
        self.at < self.choices.len()
    }

    fn pick<'s>(&mut self, list: &[&'s str]) -> &'s str {
        list[self.next() % list.len()]
    }

    fn text(&mut self) -> String {
        let n = 1 + self.next() % 4;
        (0..n).map(|_| self.pick(TEXTS)).collect()
    }

    fn children(&mut self, out: &mut String, depth: usize) {
        while self.more() {
            match self.next() % 9 {
                0..=2 if depth < 5 => self.element(out, depth + 1),
                3 | 4 => out.push_str(&escape(&self.text())),
                5 => {
                    let t = self.text().replace("--", "- -").replace('\r', "");
                    let t = t.trim_end_matches('-');
                    out.push_str(&format!("<!--{t}-->"));
                }
                6 => {
                    let t = self.text().replace("?>", "? >").replace('\r', "");
                    out.push_str(&format!("<?pi {t}?>"));
                }
                7 => out.push_str(&format!("<raw>{}</raw>", escape(&self.text()))),
                _ => return,
            }
        }
    }

    fn element(&mut self, out: &mut String, depth: usize) {
        let name = self.pick(ELEMENTS);
        out.push('<');
        out.push_str(name);
        if name == "svg" {
            out.push_str(r#" xmlns="http://www.w3.org/2000/svg""#);
        }
        let attrs = self.next() % 4;
        let mut seen = Vec::new();
        for _ in 0..attrs {
            let attr = self.pick(ATTRIBUTES);
            if seen.contains(&attr.to_ascii_lowercase()) {
                continue;
            }
            seen.push(attr.to_ascii_lowercase());
            let value = if self.next() % 5 == 0 {
                String::new()
            } else {
                self.text()
            };
            out.push_str(&format!(r#" {attr}="{}""#, escape(&value)));
        }
        out.push('>');
        self.children(out, depth);
        out.push_str(&format!("</{name}>"));
    }

    fn document(choices: &[u8]) -> String {
        let mut b = Builder { choices, at: 0 };
        let root = if b.next() % 3 == 0 { "wrap" } else { "html" };
        let mut out = format!(r#"<{root} xmlns:x="urn:x">"#);
        b.children(&mut out, 1);
        out.push_str(&format!("</{root}>"));
        out
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn html_results_serialize_like_libxslt(
        output in 0..OUTPUTS.len(),
        choices in proptest::collection::vec(any::<u8>(), 0..160),
    ) {
        assert_same(&stylesheet(OUTPUTS[output]), &Builder::document(&choices));
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
