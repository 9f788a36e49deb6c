//! Pseudo-attributes: the `name="value"` syntax of the XML declaration and
//! of `xml-stylesheet` PIs, the predefined entities and character
//! references in their values, and [`parse_stylesheet_pi`], which the
//! libxml2 fallback also calls with PI data it extracted itself.

use super::StylesheetPi;
use super::chars::{is_name, is_xml_char, name_len, next_byte, skip_ws_from};

/// Parse the data of one `xml-stylesheet` PI (the text after the target, e.g.
/// `href="a.xsl" type="text/xsl"`).
///
/// Returns `None` when `href` or `type` is missing or empty, when a known
/// pseudo-attribute appears twice, or when the pseudo-attribute syntax is
/// broken (including a value with `<` or a reference other than a character
/// reference or one of the five predefined entities). Unknown
/// pseudo-attributes are ignored. The libxml2 fallback path calls this with
/// PI data it extracted itself.
#[must_use]
pub fn parse_stylesheet_pi(data: &str) -> Option<StylesheetPi> {
    let mut href = None;
    let mut r#type = None;
    let mut title = None;
    let mut media = None;
    let mut charset = None;
    let mut alternate = None;
    for attr in PseudoAttrs::new(data) {
        let (name, raw) = attr?;
        let slot = match name {
            "href" => &mut href,
            "type" => &mut r#type,
            "title" => &mut title,
            "media" => &mut media,
            "charset" => &mut charset,
            "alternate" => &mut alternate,
            _ => continue,
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(unescape(raw, false).ok()?);
    }
    Some(StylesheetPi {
        href: href.filter(|h| !h.is_empty())?,
        r#type: r#type.filter(|t| !t.is_empty())?,
        title,
        media,
        charset,
        alternate: alternate.as_deref() == Some("yes"),
    })
}

/// Why a value could not be unescaped.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unescape {
    /// A `<`, a `&` that does not start a reference, or a bad character
    /// reference.
    Broken,
    /// A reference to an entity that only a DTD could define.
    UnknownEntity,
}

/// Expand the predefined entities and character references in `raw`, and
/// normalize line ends (`\r\n` and `\r` become `\n`). With `attribute`, also
/// normalize white space as XML does for attribute values (each literal tab,
/// line end or `\r\n` becomes one space).
pub(super) fn unescape(raw: &str, attribute: bool) -> Result<String, Unescape> {
    let bytes = raw.as_bytes();
    let next_special = |from: usize| {
        let rest = bytes.get(from..)?;
        let at = rest
            .iter()
            .position(|&b| matches!(b, b'&' | b'<' | b'\r' | b'\n' | b'\t'))?;
        Some(from + at)
    };
    let Some(first) = next_special(0) else {
        return Ok(raw.to_owned());
    };
    let piece = |from: usize, to: usize| raw.get(from..to).ok_or(Unescape::Broken);
    let mut out = String::with_capacity(raw.len());
    let mut done = 0;
    let mut special = Some(first);
    while let Some(at) = special {
        out.push_str(piece(done, at)?);
        done = at + 1;
        match bytes.get(at) {
            Some(b'&') => {
                let end = next_byte(bytes, done, b';').ok_or(Unescape::Broken)?;
                out.push(expand_reference(piece(done, end)?)?);
                done = end + 1;
            }
            Some(&end @ (b'\r' | b'\n')) => {
                if end == b'\r' && bytes.get(done) == Some(&b'\n') {
                    done += 1;
                }
                out.push(if attribute { ' ' } else { '\n' });
            }
            Some(b'\t') => out.push(if attribute { ' ' } else { '\t' }),
            _ => return Err(Unescape::Broken), // '<'
        }
        special = next_special(done);
    }
    out.push_str(piece(done, raw.len())?);
    Ok(out)
}

/// The character that `&reference;` stands for.
pub(super) fn expand_reference(reference: &str) -> Result<char, Unescape> {
    let (digits, radix) = match reference.strip_prefix('#') {
        Some(hex) if hex.starts_with('x') => (hex.get(1..).unwrap_or_default(), 16),
        Some(decimal) => (decimal, 10),
        None => {
            return match reference {
                "amp" => Ok('&'),
                "lt" => Ok('<'),
                "gt" => Ok('>'),
                "quot" => Ok('"'),
                "apos" => Ok('\''),
                _ if is_name(reference) => Err(Unescape::UnknownEntity),
                _ => Err(Unescape::Broken),
            };
        }
    };
    if digits.is_empty() {
        return Err(Unescape::Broken);
    }
    let mut code: u32 = 0;
    for d in digits.chars() {
        let digit = d.to_digit(radix).ok_or(Unescape::Broken)?;
        code = code
            .checked_mul(radix)
            .and_then(|c| c.checked_add(digit))
            .ok_or(Unescape::Broken)?;
    }
    char::from_u32(code)
        .filter(|&c| is_xml_char(c))
        .ok_or(Unescape::Broken)
}

/// An iterator over the `name="value"` pairs of PI data (an XML declaration
/// or an `xml-stylesheet` PI), yielding the raw values. It yields `None` once
/// after broken syntax and then stops.
pub(super) struct PseudoAttrs<'a> {
    data: &'a str,
    pos: usize,
    done: bool,
}

impl<'a> PseudoAttrs<'a> {
    pub(super) fn new(data: &'a str) -> Self {
        PseudoAttrs {
            data,
            pos: 0,
            done: false,
        }
    }

    fn parse_next(&mut self) -> Option<(&'a str, &'a str)> {
        let bytes = self.data.as_bytes();
        let start = skip_ws_from(bytes, self.pos);
        if self.pos > 0 && start == self.pos {
            return None; // two pseudo-attributes without space between
        }
        let name_end = start + name_len(bytes.get(start..)?);
        let name = self.data.get(start..name_end).filter(|n| !n.is_empty())?;
        let equals = skip_ws_from(bytes, name_end);
        if bytes.get(equals) != Some(&b'=') {
            return None;
        }
        let open = skip_ws_from(bytes, equals + 1);
        let quote = bytes
            .get(open)
            .copied()
            .filter(|&q| q == b'"' || q == b'\'')?;
        let close = next_byte(bytes, open + 1, quote)?;
        self.pos = close + 1;
        Some((name, self.data.get(open + 1..close)?))
    }
}

impl<'a> Iterator for PseudoAttrs<'a> {
    type Item = Option<(&'a str, &'a str)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || skip_ws_from(self.data.as_bytes(), self.pos) >= self.data.len() {
            return None;
        }
        let attr = self.parse_next();
        self.done = attr.is_none();
        Some(attr)
    }
}
