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
//! choices building a document from html_tests.rs's pieces (HTML element
//! names in both cases, URI and boolean attributes, text with markup
//! characters and non-ASCII, comments, PIs, `raw` elements whose text is
//! written with disable-output-escaping, an `html` root or a `wrap` root
//! the stylesheet turns into one). The stylesheet copies the source (a
//! `raw` element's text unescaped; `/wrap` becomes `<html>`). Each
//! serialization gets its own transform (serializing edits the tree).
#![no_main]

use std::sync::{Arc, OnceLock};

use axle::ffi::{Limits, RefuseAll, Resolver, Stylesheet, XmlDoc};
use libfuzzer_sys::fuzz_target;

/// html_tests.rs's `OUTPUTS`.
const OUTPUTS: &[&str] = &[
    r#"<xsl:output method="html"/>"#,
    r#"<xsl:output method="html" indent="no"/>"#,
    r#"<xsl:output method="html" indent="yes" encoding="utf-8"/>"#,
    r#"<xsl:output method="html" doctype-public="-//W3C//DTD HTML 4.01//EN" doctype-system="http://www.w3.org/TR/html4/strict.dtd"/>"#,
    r#"<xsl:output method="html" doctype-system="about:legacy-compat"/>"#,
    r#"<xsl:output method="html" doctype-system="it's &quot;odd&quot;"/>"#,
    r#"<xsl:output method="html" encoding="ISO-8859-1"/>"#,
    r#"<xsl:output method="html" encoding="UTF8" indent="no"/>"#,
    r#"<xsl:output method="html" doctype-public="-//W3C//DTD HTML 4.01 Transitional//EN"/>"#,
    r#"<xsl:output method="xml"/>"#,
    r#"<xsl:output method="xhtml"/>"#,
    "",
];

/// html_tests.rs's `TEMPLATES`.
const TEMPLATES: &str = r#"
<xsl:template match="@*|node()"><xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy></xsl:template>
<xsl:template match="raw"><xsl:value-of select="." disable-output-escaping="yes"/></xsl:template>
<xsl:template match="/wrap"><html><xsl:apply-templates/></html></xsl:template>
"#;

const ELEMENTS: &[&str] = &[
    "html",
    "head",
    "body",
    "title",
    "meta",
    "p",
    "pre",
    "param",
    "div",
    "span",
    "a",
    "br",
    "img",
    "hr",
    "input",
    "script",
    "style",
    "textarea",
    "option",
    "select",
    "table",
    "tr",
    "td",
    "ul",
    "li",
    "b",
    "em",
    "form",
    "area",
    "col",
    "link",
    "base",
    "dd",
    "tbody",
    "colgroup",
    "foo",
    "Para",
    "BR",
    "SCRIPT",
    "Style",
    "pX",
    "x:foo",
    "svg",
    "raw",
    "frame",
    "iframe",
    "noscript",
    "xmp",
    "plaintext",
    "embed",
    "object",
    "basefont",
    "isindex",
    "h1",
    "dl",
    "dt",
    "Meta",
    "HEAD",
    "x:html",
    "y:br",
];

const ATTRIBUTES: &[&str] = &[
    "href",
    "HREF",
    "src",
    "action",
    "name",
    "id",
    "class",
    "checked",
    "SELECTED",
    "disabled",
    "title",
    "value",
    "onclick",
    "x:ref",
    "xml:lang",
    "nohref",
    "http-equiv",
    "content",
    "charset",
    "longdesc",
    "usemap",
    "cite",
    "background",
    "codebase",
    "data",
    "profile",
    "compact",
    "noshade",
    "nowrap",
    "ismap",
    "declare",
    "defer",
    "readonly",
    "multiple",
    "y:href",
];

const TEXTS: &[&str] = &[
    "a",
    "word",
    " ",
    "\n",
    "\t",
    "\r",
    "<",
    ">",
    "&",
    "\"",
    "'",
    "é",
    "€",
    "😀",
    "&{x}",
    "<!--c-->",
    "-->",
    "  lead",
    "?",
    "=",
    "#",
    "%",
    "/",
    "\u{7f}",
    "]]>",
    "%20",
    "%zz",
    "javascript:",
    "text/html; charset=utf-8",
    "\u{a0}",
    "\u{80}",
    "\u{2028}",
    "&amp;",
    "}",
    "\u{fffd}",
    "x y",
    "%C3%A9",
];

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

/// html_tests.rs's `Builder`, deeper and with more pieces.
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
                0..=2 if depth < 12 => self.element(out, depth + 1),
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
        if self.next() % 7 == 0 {
            out.push_str(r#" xmlns="http://www.w3.org/1999/xhtml""#);
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
        let root = match b.next() % 4 {
            0 => "wrap",
            1 => "HTML",
            _ => "html",
        };
        let mut out = format!(r#"<{root} xmlns:x="urn:x" xmlns:y="urn:y">"#);
        b.children(&mut out, 1);
        out.push_str(&format!("</{root}>"));
        out
    }
}

fn styles() -> &'static [Arc<Stylesheet>] {
    static STYLES: OnceLock<Vec<Arc<Stylesheet>>> = OnceLock::new();
    STYLES.get_or_init(|| {
        axle::ffi::init();
        OUTPUTS
            .iter()
            .map(|output| {
                let xsl = format!(
                    r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">{output}{TEMPLATES}</xsl:stylesheet>"#
                );
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
        built = Builder::document(rest);
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
