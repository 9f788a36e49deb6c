//! Source documents for checking `csrc/html.c` against libxslt, shared by
//! its property test (`html_tests.rs`) and the `html_serialize` fuzz
//! target: one generator, so the two cover the same pieces (HTML element
//! names in both cases, URI and boolean attributes, text with markup
//! characters and non-ASCII, comments, PIs, `raw` elements written with
//! disable-output-escaping, an `html`, `HTML` or `wrap` root). For tests
//! and fuzz targets; not an API.

/// The stylesheet for `output` (one of [`OUTPUTS`]) and [`TEMPLATES`].
pub fn stylesheet(output: &str) -> String {
    format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">{output}{TEMPLATES}</xsl:stylesheet>"#
    )
}

/// A source document built from `choices` (each byte picks what comes
/// next), elements nested at most `max_depth` deep.
pub fn document(choices: &[u8], max_depth: usize) -> String {
    Builder::document(choices, max_depth)
}

/// The `xsl:output` settings tried: HTML ones the fast path takes, and
/// others it leaves to libxslt.
pub const OUTPUTS: &[&str] = &[
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

/// Copies the source, except `raw` elements (their text, unescaped) and
/// `wrap` elements (an `html` root, for the implicit HTML method).
pub const TEMPLATES: &str = r#"
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

/// Escapes `text` for the source document (markup characters and the
/// double quote, for text and attribute values), keeping tab, newline and
/// CR as character references, which attribute normalization leaves alone.
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

/// Builds a source document from choices: each byte picks what comes
/// next (an element with attributes, text, a comment, a PI, a `raw`
/// element, the end of the current element).
struct Builder<'a> {
    choices: &'a [u8],
    at: usize,
    max_depth: usize,
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
                0..=2 if depth < self.max_depth => self.element(out, depth + 1),
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
        } else if self.next() % 7 == 0 {
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

    fn document(choices: &[u8], max_depth: usize) -> String {
        let mut b = Builder {
            choices,
            at: 0,
            max_depth,
        };
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
