//! A port of the shared suite's `xmlcompare.py` (the `xml-ws` comparison
//! mode, an approximation of Xalan's `XHTComparator`), with `roxmltree` in
//! place of Python's `minidom`:
//!
//! - identical bytes are equal;
//! - if both sides parse as XML, the trees are compared: elements by
//!   namespace URI + local name, attributes as an unordered set (namespace
//!   declarations are not attributes), text with adjacent text/CDATA merged
//!   and whitespace-only text dropped, comments by their text, processing
//!   instructions by `target + ' ' + data.strip()`; the XML declaration and
//!   the DOCTYPE are ignored;
//! - otherwise (HTML, text, fragments, or an encoding the parser cannot
//!   read) both sides are compared as bytes with every run of ASCII
//!   whitespace collapsed to one space and both ends stripped.
//!
//! `roxmltree` only reads `&str`, so the bytes are decoded first, as expat
//! would read them: a UTF-8 or UTF-16 byte-order mark, else the encoding the
//! XML declaration names (UTF-8 when none). UTF-8, US-ASCII, ISO-8859-1 and
//! UTF-16 are decoded here (the encodings expat knows natively); any other
//! declared encoding counts as "does not parse" and takes the text fallback.
//! (Python's expat binding also reads single-byte codecs such as
//! windows-1252; none of the suite's gold files uses one.)

use roxmltree::{Document, Node, NodeType, ParsingOptions};

/// `Ok(())` when `expected` and `actual` are equivalent under the `xml-ws`
/// rules; otherwise the first difference, in one line.
pub fn compare(expected: &[u8], actual: &[u8]) -> Result<(), String> {
    if expected == actual {
        return Ok(());
    }
    let (Some(exp_text), Some(act_text)) = (decode_for_parse(expected), decode_for_parse(actual))
    else {
        return text_fallback(expected, actual, "not decodable as XML");
    };
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let exp_doc = Document::parse_with_options(&exp_text, options);
    let act_doc = Document::parse_with_options(&act_text, options);
    let (exp_doc, act_doc) = match (exp_doc, act_doc) {
        (Ok(e), Ok(a)) => (e, a),
        (Err(e), _) => return text_fallback(expected, actual, &format!("expected: {e}")),
        (_, Err(e)) => return text_fallback(expected, actual, &format!("actual: {e}")),
    };
    compare_children(exp_doc.root(), act_doc.root(), "")
}

/// True when equivalent.
pub fn equivalent(expected: &[u8], actual: &[u8]) -> bool {
    compare(expected, actual).is_ok()
}

/// `norm_ws`: `re.sub(rb'\s+', b' ', b).strip()` on bytes (ASCII whitespace).
pub fn norm_ws(bytes: &[u8]) -> Vec<u8> {
    let is_ws = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let mut out = Vec::with_capacity(bytes.len());
    let mut in_ws = false;
    for &b in bytes {
        if is_ws(b) {
            in_ws = true;
        } else {
            if in_ws && !out.is_empty() {
                out.push(b' ');
            }
            in_ws = false;
            out.push(b);
        }
    }
    out
}

fn text_fallback(expected: &[u8], actual: &[u8], why: &str) -> Result<(), String> {
    let (e, a) = (norm_ws(expected), norm_ws(actual));
    if e == a {
        return Ok(());
    }
    let at = e.iter().zip(a.iter()).take_while(|(x, y)| x == y).count();
    let window = |s: &[u8]| {
        let from = at.saturating_sub(20);
        let to = (at + 40).min(s.len());
        String::from_utf8_lossy(&s[from.min(to)..to]).into_owned()
    };
    Err(format!(
        "compared as text ({why}): differs at byte {at} of the collapsed text: expected {:?}, got {:?}",
        window(&e),
        window(&a)
    ))
}

// ---------------------------------------------------------------------------
// Decoding, as expat would

/// The text of an XML file as expat would decode it, or `None` when the
/// encoding is not one decoded here (see the module docs).
pub fn decode_for_parse(bytes: &[u8]) -> Option<String> {
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return String::from_utf8(rest.to_vec()).ok();
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return utf16(rest, u16::from_le_bytes);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return utf16(rest, u16::from_be_bytes);
    }
    let encoding = declared_encoding(bytes).map(|e| e.to_ascii_lowercase());
    match encoding.as_deref() {
        None | Some("utf-8") => String::from_utf8(bytes.to_vec()).ok(),
        Some("us-ascii") => bytes
            .is_ascii()
            .then(|| String::from_utf8(bytes.to_vec()).ok())
            .flatten(),
        Some("iso-8859-1" | "latin-1" | "latin1" | "iso8859-1" | "l1") => {
            Some(bytes.iter().map(|&b| char::from(b)).collect())
        }
        _ => None,
    }
}

fn utf16(bytes: &[u8], word: fn([u8; 2]) -> u16) -> Option<String> {
    if bytes.len() % 2 != 0 {
        return None;
    }
    let units: Vec<u16> = bytes.chunks_exact(2).map(|c| word([c[0], c[1]])).collect();
    String::from_utf16(&units).ok()
}

/// The `encoding` pseudo-attribute of a leading XML declaration.
fn declared_encoding(bytes: &[u8]) -> Option<String> {
    if !bytes.starts_with(b"<?xml") || !bytes.get(5).is_some_and(|b| b.is_ascii_whitespace()) {
        return None;
    }
    let end = bytes.windows(2).take(512).position(|w| w == b"?>")?;
    let decl = std::str::from_utf8(&bytes[..end]).ok()?;
    let at = decl.find("encoding")?;
    let rest = decl[at + "encoding".len()..].trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &rest[1..];
    let close = value.find(quote)?;
    Some(value[..close].to_string())
}

// ---------------------------------------------------------------------------
// Tree comparison

/// One item of `children()` in the Python: an element, or a tuple.
#[derive(Debug)]
enum Item<'a, 'input> {
    Element(Node<'a, 'input>),
    Text(String),
    Comment(String),
    Pi(String),
}

impl Item<'_, '_> {
    fn describe(&self) -> String {
        match self {
            Item::Element(n) => format!("element <{}>", qname(*n)),
            Item::Text(t) => format!("text {:?}", short(t)),
            Item::Comment(t) => format!("comment {:?}", short(t)),
            Item::Pi(t) => format!("processing instruction {:?}", short(t)),
        }
    }
}

fn short(text: &str) -> String {
    let mut s: String = text.chars().take(60).collect();
    if text.chars().count() > 60 {
        s.push('…');
    }
    s
}

fn qname(n: Node<'_, '_>) -> String {
    match n.tag_name().namespace().filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{{{ns}}}{}", n.tag_name().name()),
        None => n.tag_name().name().to_string(),
    }
}

/// Python's `str.strip()` test for whitespace-only text.
fn is_blank(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

fn py_strip(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

fn children<'a, 'input>(node: Node<'a, 'input>) -> Vec<Item<'a, 'input>> {
    let mut out = Vec::new();
    let mut buf = String::new();
    let flush = |buf: &mut String, out: &mut Vec<Item<'a, 'input>>| {
        if !buf.is_empty() {
            if !is_blank(buf) {
                out.push(Item::Text(std::mem::take(buf)));
            }
            buf.clear();
        }
    };
    for c in node.children() {
        match c.node_type() {
            NodeType::Text => {
                buf.push_str(c.text().unwrap_or(""));
                continue;
            }
            NodeType::Element => {
                flush(&mut buf, &mut out);
                out.push(Item::Element(c));
            }
            NodeType::Comment => {
                flush(&mut buf, &mut out);
                out.push(Item::Comment(c.text().unwrap_or("").to_string()));
            }
            NodeType::PI => {
                flush(&mut buf, &mut out);
                if let Some(pi) = c.pi() {
                    out.push(Item::Pi(format!(
                        "{} {}",
                        pi.target,
                        py_strip(pi.value.unwrap_or(""))
                    )));
                }
            }
            NodeType::Root => {}
        }
    }
    flush(&mut buf, &mut out);
    out
}

fn attrs(n: Node<'_, '_>) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = n
        .attributes()
        .map(|a| {
            (
                a.namespace().unwrap_or("").to_string(),
                a.name().to_string(),
                a.value().to_string(),
            )
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

fn compare_children(a: Node<'_, '_>, b: Node<'_, '_>, path: &str) -> Result<(), String> {
    let (ca, cb) = (children(a), children(b));
    for (i, (x, y)) in ca.iter().zip(cb.iter()).enumerate() {
        same(x, y, &format!("{path}/{}", step(x, i)))?;
    }
    if ca.len() != cb.len() {
        let at = ca.len().min(cb.len());
        let what = match (ca.get(at), cb.get(at)) {
            (Some(x), None) => format!("missing {}", x.describe()),
            (None, Some(y)) => format!("unexpected {}", y.describe()),
            _ => String::new(),
        };
        return Err(format!(
            "{}: {} children expected, {} found ({what})",
            if path.is_empty() { "/" } else { path },
            ca.len(),
            cb.len()
        ));
    }
    Ok(())
}

fn step(item: &Item<'_, '_>, index: usize) -> String {
    match item {
        Item::Element(n) => format!("{}[{}]", n.tag_name().name(), index + 1),
        Item::Text(_) => format!("text()[{}]", index + 1),
        Item::Comment(_) => format!("comment()[{}]", index + 1),
        Item::Pi(_) => format!("processing-instruction()[{}]", index + 1),
    }
}

fn same(a: &Item<'_, '_>, b: &Item<'_, '_>, path: &str) -> Result<(), String> {
    match (a, b) {
        (Item::Element(x), Item::Element(y)) => {
            let (tx, ty) = (x.tag_name(), y.tag_name());
            if (tx.namespace().unwrap_or(""), tx.name())
                != (ty.namespace().unwrap_or(""), ty.name())
            {
                return Err(format!(
                    "{path}: expected element <{}>, found <{}>",
                    qname(*x),
                    qname(*y)
                ));
            }
            let (ax, ay) = (attrs(*x), attrs(*y));
            if ax != ay {
                let missing: Vec<String> = ax
                    .iter()
                    .filter(|t| !ay.contains(t))
                    .map(|(_, n, v)| format!("{n}={v:?}"))
                    .collect();
                let extra: Vec<String> = ay
                    .iter()
                    .filter(|t| !ax.contains(t))
                    .map(|(_, n, v)| format!("{n}={v:?}"))
                    .collect();
                return Err(format!(
                    "{path}: attributes differ (expected but missing: [{}]; found but not expected: [{}])",
                    missing.join(", "),
                    extra.join(", ")
                ));
            }
            compare_children(*x, *y, path)
        }
        (Item::Text(x), Item::Text(y))
        | (Item::Comment(x), Item::Comment(y))
        | (Item::Pi(x), Item::Pi(y)) => {
            if x == y {
                Ok(())
            } else {
                Err(format!(
                    "{path}: expected {}, found {}",
                    a.describe(),
                    b.describe()
                ))
            }
        }
        _ => Err(format!(
            "{path}: expected {}, found {}",
            a.describe(),
            b.describe()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert!(equivalent(b"<a x='1' y='2'/>", b"<a y=\"2\" x=\"1\"></a>"));
        assert!(equivalent(
            b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a>\n  <b>t</b>\n</a>",
            b"<a><b>t</b></a>"
        ));
        assert!(!equivalent(b"<a><b>t </b></a>", b"<a><b>t</b></a>"));
        assert!(equivalent(
            b"<p:a xmlns:p='urn:x'/>",
            b"<q:a xmlns:q='urn:x'/>"
        ));
        assert!(!equivalent(b"<a xmlns='urn:x'/>", b"<a/>"));
        assert!(equivalent(b"<a>x<![CDATA[y]]>z</a>", b"<a>xyz</a>"));
        // Not well-formed: compared as text with whitespace collapsed.
        assert!(equivalent(b"<br>a  b", b" <br>a\nb\n"));
        assert!(!equivalent(b"<html><br></html>", b"<html> <br></html>"));
        assert!(equivalent(
            b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a>\xe9</a>",
            "<a>é</a>".as_bytes()
        ));
        assert!(equivalent(b"<!DOCTYPE a SYSTEM 'a.dtd'><a/>", b"<a/>"));
        assert!(equivalent(b"<?pi  x ?><a/>", b"<?pi x?><a/>"));
        assert!(!equivalent(b"<!--c--><a/>", b"<a/>"));
        assert!(equivalent(b"", b" \n"));
        assert!(!equivalent(b"", b"x"));
    }
}
