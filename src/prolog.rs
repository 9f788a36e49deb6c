//! A fast scanner for the prolog (everything before the content) of an XML
//! document.
//!
//! Choosing a transformation chain needs only what comes before
//! the document's content: the `<?xml-stylesheet?>` processing instructions,
//! the DOCTYPE, the name and namespace of the root element and the declared
//! encoding. Parsing a whole document just to read those is wasteful when the
//! chain decides that the document is to be parsed again anyway (or served
//! from a cache), so [`scan`] reads the bytes only up to the end of the root
//! element's start tag and stops there, allocating nothing but the values it
//! returns. It never panics, whatever the bytes.
//!
//! What it deliberately does not do, answering [`ScanError`] instead so that
//! the caller can fall back to libxml2:
//! - decode anything but UTF-8 (and its ASCII subset): UTF-16/UTF-32 input, a
//!   declared legacy encoding such as ISO-8859-1, or bytes that are not UTF-8
//!   give [`ScanError::Unsupported`];
//! - guess at prologs that are not well-formed ([`ScanError::Malformed`]);
//! - expand entities other than the five predefined ones and character
//!   references, read the external DTD or apply attribute defaults from any
//!   DTD. The internal subset is skipped unread; if it mentions `xmlns` and
//!   the root element does not declare its own namespace, the namespace could
//!   come from a DTD default, and the answer is `Unsupported`.
//!
//! Nothing after the root start tag is looked at, so a successful scan says
//! nothing about the well-formedness of the rest of the document, and
//! processing instructions after the root element are never seen. Name
//! characters are checked for ASCII only (any non-ASCII character is accepted
//! in a name).
//!
//! Layout: this file has the scanner itself (the walk from the first byte
//! to the root start tag); `chars` the character classes and byte searches
//! it is built from; `pseudo` the pseudo-attribute syntax of the XML
//! declaration and `xml-stylesheet` PIs, with the references in their
//! values.

mod chars;
mod pseudo;

pub use pseudo::parse_stylesheet_pi;

use std::str;

use chars::{
    check_signature, find_bytes, first_control_char, is_ascii_name, is_pubid_byte, is_utf8_name,
    is_ws, name_len,
};
use pseudo::{PseudoAttrs, Unescape, unescape};

/// The namespace that the `xml` prefix is bound to by definition.
const XML_NAMESPACE: &str = "http://www.w3.org/XML/1998/namespace";

/// The reason given when the prolog holds bytes that are not UTF-8.
const NOT_UTF8: ScanError = ScanError::Unsupported("the prolog is not valid UTF-8");

/// What [`scan`] found before (and in) the root element's start tag.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Prolog {
    /// The `encoding` of the XML declaration, as written (only UTF-8 and
    /// US-ASCII are ever returned; other encodings are `Unsupported`).
    pub xml_encoding: Option<String>,
    /// Every usable `xml-stylesheet` processing instruction before the root
    /// element, in document order.
    pub stylesheets: Vec<StylesheetPi>,
    /// The document type declaration, if there is one.
    pub doctype: Option<Doctype>,
    /// The name of the root element, resolved against its own namespace
    /// declarations.
    pub root: RootName,
}

/// The pseudo-attributes of one `<?xml-stylesheet?>` processing instruction,
/// with character and predefined entity references expanded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StylesheetPi {
    /// The stylesheet's URI reference (never empty).
    pub href: String,
    /// The stylesheet's media type, e.g. `text/xsl` (never empty).
    pub r#type: String,
    /// The `title` pseudo-attribute.
    pub title: Option<String>,
    /// The `media` pseudo-attribute.
    pub media: Option<String>,
    /// The `charset` pseudo-attribute.
    pub charset: Option<String>,
    /// True if and only if the PI has `alternate="yes"`.
    pub alternate: bool,
}

/// A document type declaration (its internal subset is not kept).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Doctype {
    /// The declared name of the root element.
    pub name: String,
    /// The public identifier, as written between the quotes.
    pub public_id: Option<String>,
    /// The system identifier, as written between the quotes.
    pub system_id: Option<String>,
    /// Has it an internal subset (`[…]`, even an empty one)? Such a
    /// document's DTD is parsed for it, never shared.
    pub internal_subset: bool,
}

/// The qualified name of the root element and the namespace it is in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RootName {
    /// The prefix of the element name (`xsl` in `xsl:stylesheet`), if any.
    pub prefix: Option<String>,
    /// The local part of the element name.
    pub local: String,
    /// The namespace URI, or `None` when the element is in no namespace.
    pub namespace: Option<String>,
}

impl RootName {
    /// The name in Clark notation: `{namespace}local`, or just `local` when
    /// the element is in no namespace.
    #[must_use]
    pub fn clark(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{{{ns}}}{}", self.local),
            None => self.local.clone(),
        }
    }
}

/// Why [`scan`] could not read a prolog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    /// The input may well be fine, but reading it needs a full parser
    /// (another encoding, DTD processing): use libxml2 instead.
    #[error("the prolog cannot be read without a full parser: {0}")]
    Unsupported(&'static str),
    /// The prolog is not well-formed.
    #[error("malformed prolog at byte {offset}: {reason}")]
    Malformed {
        /// Where the problem was found, in bytes from the start of the input
        /// (a byte order mark included).
        offset: usize,
        /// What is wrong there.
        reason: &'static str,
    },
}

/// Scan the prolog of `bytes`.
///
/// Reads the input only up to the end of the root element's start tag; see
/// the module documentation for what is and is not accepted.
///
/// # Errors
///
/// [`ScanError::Unsupported`] when the input is not UTF-8 (a UTF-16 or UTF-32
/// signature, another declared encoding, bytes that are not UTF-8) or needs
/// DTD processing to be read; [`ScanError::Malformed`] when the prolog or the
/// root start tag is not well-formed or is cut off.
pub fn scan(bytes: &[u8]) -> Result<Prolog, ScanError> {
    check_signature(bytes)?;
    let start = if bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let mut s = Scanner { bytes, pos: start };
    let mut prolog = Prolog::default();
    let mut ascii_only = false;
    if s.starts_with(b"<?xml") && s.byte_at(5).is_some_and(is_ws) {
        if let Some(encoding) = s.xml_declaration()? {
            ascii_only = is_ascii_name(&encoding);
            if !ascii_only && !is_utf8_name(&encoding) {
                return Err(ScanError::Unsupported(
                    "the declared encoding is not UTF-8 or US-ASCII",
                ));
            }
            prolog.xml_encoding = Some(encoding);
        }
    }
    let mut subset_mentions_xmlns = false;
    loop {
        s.skip_ws();
        let rest = s.rest();
        if rest.is_empty() {
            return Err(s.malformed("no root element"));
        } else if rest.starts_with(b"<!--") {
            s.skip_comment()?;
        } else if rest.starts_with(b"<?") {
            if let Some(pi) = s.processing_instruction()? {
                prolog.stylesheets.push(pi);
            }
        } else if rest.starts_with(b"<!DOCTYPE") {
            if prolog.doctype.is_some() {
                return Err(s.malformed("a second DOCTYPE declaration"));
            }
            prolog.doctype = Some(s.doctype(&mut subset_mentions_xmlns)?);
        } else if rest.starts_with(b"<!") || rest.starts_with(b"</") {
            return Err(s.malformed("markup that is not allowed before the root element"));
        } else if rest.starts_with(b"<") {
            prolog.root = s.root_element(subset_mentions_xmlns)?;
            break;
        } else {
            return Err(s.malformed("text before the root element"));
        }
    }
    let head = bytes.get(..s.pos).unwrap_or(bytes);
    str::from_utf8(head).map_err(|_| NOT_UTF8)?;
    if let Some(offset) = first_control_char(head) {
        return Err(ScanError::Malformed {
            offset,
            reason: "a control character",
        });
    }
    if ascii_only && !head.is_ascii() {
        return Err(ScanError::Unsupported(
            "a non-ASCII character in a document declared US-ASCII",
        ));
    }
    Ok(prolog)
}

/// A cursor over the input. `pos` never exceeds `bytes.len()`.
struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    fn byte_at(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos.checked_add(ahead)?).copied()
    }

    fn peek(&self) -> Option<u8> {
        self.byte_at(0)
    }

    fn starts_with(&self, prefix: &[u8]) -> bool {
        self.rest().starts_with(prefix)
    }

    fn advance(&mut self, n: usize) {
        self.pos = self.pos.saturating_add(n).min(self.bytes.len());
    }

    fn jump_to(&mut self, pos: usize) {
        self.pos = pos.min(self.bytes.len());
    }

    /// Skip white space; true if there was any.
    fn skip_ws(&mut self) -> bool {
        let n = self.rest().iter().take_while(|&&b| is_ws(b)).count();
        self.advance(n);
        n > 0
    }

    fn malformed(&self, reason: &'static str) -> ScanError {
        malformed_at(self.pos, reason)
    }

    /// Where `pat` next occurs, from the current position on.
    fn find(&self, pat: &[u8]) -> Option<usize> {
        find_bytes(self.rest(), pat).map(|at| self.pos + at)
    }

    fn expect(&mut self, byte: u8, reason: &'static str) -> Result<(), ScanError> {
        if self.peek() == Some(byte) {
            self.advance(1);
            Ok(())
        } else {
            Err(self.malformed(reason))
        }
    }

    fn expect_ws(&mut self, reason: &'static str) -> Result<(), ScanError> {
        if self.skip_ws() {
            Ok(())
        } else {
            Err(self.malformed(reason))
        }
    }

    fn name(&mut self, reason: &'static str) -> Result<&'a [u8], ScanError> {
        let rest = self.rest();
        let len = name_len(rest);
        if len == 0 {
            return Err(self.malformed(reason));
        }
        self.advance(len);
        Ok(rest.get(..len).unwrap_or_default())
    }

    /// A `"` or `'` quoted literal; returns what is between the quotes.
    fn literal(&mut self, reason: &'static str) -> Result<&'a [u8], ScanError> {
        let Some(quote @ (b'"' | b'\'')) = self.peek() else {
            return Err(self.malformed(reason));
        };
        let body = self.rest().get(1..).unwrap_or_default();
        let len = body
            .iter()
            .position(|&b| b == quote)
            .ok_or_else(|| self.malformed("an unterminated quoted string"))?;
        self.advance(len + 2);
        Ok(body.get(..len).unwrap_or_default())
    }

    /// `<?xml ...?>` at the start of the document; returns its encoding.
    fn xml_declaration(&mut self) -> Result<Option<String>, ScanError> {
        const BAD: &str = "a malformed XML declaration";
        let start = self.pos;
        self.advance(5);
        let end = self
            .find(b"?>")
            .ok_or_else(|| malformed_at(start, "an unterminated XML declaration"))?;
        let data = self.bytes.get(self.pos..end).unwrap_or_default();
        let data = str::from_utf8(data).map_err(|_| NOT_UTF8)?;
        self.jump_to(end + 2);
        let (mut version, mut encoding, mut standalone) = (None, None, None);
        for (index, attr) in PseudoAttrs::new(data).enumerate() {
            let (name, value) = attr.ok_or(malformed_at(start, BAD))?;
            let slot = match name {
                "version" if index == 0 => &mut version,
                "encoding" if index > 0 && encoding.is_none() && standalone.is_none() => {
                    &mut encoding
                }
                "standalone" if index > 0 && standalone.is_none() => &mut standalone,
                _ => return Err(malformed_at(start, BAD)),
            };
            *slot = Some(value);
        }
        let version_ok = version
            .and_then(|v| v.strip_prefix("1."))
            .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()));
        let encoding_ok = encoding.is_none_or(|e| {
            e.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
                && e.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        });
        let standalone_ok = standalone.is_none_or(|s| s == "yes" || s == "no");
        if !(version_ok && encoding_ok && standalone_ok) {
            return Err(malformed_at(start, BAD));
        }
        Ok(encoding.map(str::to_owned))
    }

    /// `<!-- ... -->`.
    fn skip_comment(&mut self) -> Result<(), ScanError> {
        let start = self.pos;
        self.advance(4);
        let unterminated = || malformed_at(start, "an unterminated comment");
        let dashes = self.find(b"--").ok_or_else(unterminated)?;
        self.jump_to(dashes);
        match self.byte_at(2) {
            Some(b'>') => {
                self.advance(3);
                Ok(())
            }
            Some(_) => Err(self.malformed("'--' inside a comment")),
            None => Err(unterminated()),
        }
    }

    /// `<?target data?>` before the root; returns the stylesheet if it is a
    /// usable `xml-stylesheet` PI.
    fn processing_instruction(&mut self) -> Result<Option<StylesheetPi>, ScanError> {
        let start = self.pos;
        self.advance(2);
        let target = self.name("an invalid processing instruction target")?;
        if target.eq_ignore_ascii_case(b"xml") {
            return Err(malformed_at(
                start,
                "a misplaced or malformed XML declaration",
            ));
        }
        let after_target = self.pos;
        let spaced = self.skip_ws();
        let data_start = self.pos;
        let end = self
            .find(b"?>")
            .ok_or_else(|| malformed_at(start, "an unterminated processing instruction"))?;
        if !spaced && end != after_target {
            return Err(malformed_at(
                after_target,
                "no space after a processing instruction target",
            ));
        }
        self.jump_to(end + 2);
        if target != b"xml-stylesheet" {
            return Ok(None);
        }
        let data = self.bytes.get(data_start..end).unwrap_or_default();
        Ok(parse_stylesheet_pi(
            str::from_utf8(data).map_err(|_| NOT_UTF8)?,
        ))
    }

    /// `<!DOCTYPE name ExternalID? [subset]? >`. Sets `mentions_xmlns` if the
    /// internal subset has `xmlns` outside comments, PIs and literals.
    fn doctype(&mut self, mentions_xmlns: &mut bool) -> Result<Doctype, ScanError> {
        self.advance(9);
        self.expect_ws("no space after '<!DOCTYPE'")?;
        let name = text(self.name("an invalid DOCTYPE name")?)?;
        let spaced = self.skip_ws();
        let mut doctype = Doctype {
            name,
            public_id: None,
            system_id: None,
            internal_subset: false,
        };
        let public = self.starts_with(b"PUBLIC");
        if public || self.starts_with(b"SYSTEM") {
            if !spaced {
                return Err(self.malformed("no space before the external identifier"));
            }
            self.advance(6);
            self.expect_ws("no space after PUBLIC or SYSTEM")?;
            if public {
                let literal_start = self.pos;
                let public_id = self.literal("expected a quoted public identifier")?;
                if let Some(bad) = public_id.iter().position(|&b| !is_pubid_byte(b)) {
                    return Err(malformed_at(
                        literal_start + 1 + bad,
                        "an invalid character in a public identifier",
                    ));
                }
                doctype.public_id = Some(text(public_id)?);
                self.expect_ws("no space after the public identifier")?;
            }
            doctype.system_id = Some(text(self.literal("expected a quoted system identifier")?)?);
            self.skip_ws();
        }
        if self.peek() == Some(b'[') {
            self.advance(1);
            doctype.internal_subset = true;
            self.skip_internal_subset(mentions_xmlns)?;
            self.skip_ws();
        }
        self.expect(b'>', "expected '>' at the end of the DOCTYPE declaration")?;
        Ok(doctype)
    }

    /// Skip the internal subset up to and including its closing `]`.
    fn skip_internal_subset(&mut self, mentions_xmlns: &mut bool) -> Result<(), ScanError> {
        loop {
            let rest = self.rest();
            let Some(&b) = rest.first() else {
                return Err(self.malformed("an unterminated DOCTYPE internal subset"));
            };
            match b {
                b']' => {
                    self.advance(1);
                    return Ok(());
                }
                b'"' | b'\'' => {
                    self.literal("expected a quoted literal")?;
                }
                b'<' if rest.starts_with(b"<!--") => self.skip_comment()?,
                b'<' if rest.starts_with(b"<?") => {
                    let end = self
                        .find(b"?>")
                        .ok_or_else(|| self.malformed("an unterminated processing instruction"))?;
                    self.jump_to(end + 2);
                }
                b'x' if rest.starts_with(b"xmlns") => {
                    *mentions_xmlns = true;
                    self.advance(5);
                }
                _ => self.advance(1),
            }
        }
    }

    /// The root element's start tag, up to and including its `>` or `/>`.
    fn root_element(&mut self, subset_mentions_xmlns: bool) -> Result<RootName, ScanError> {
        self.advance(1);
        let name_start = self.pos;
        let qname = self.name("an invalid root element name")?;
        let (prefix, local) =
            split_qname(qname).ok_or(malformed_at(name_start, "an invalid qualified name"))?;
        // The raw value of the declaration that binds the root's prefix.
        let mut declaration: Option<(usize, &[u8])> = None;
        loop {
            let spaced = self.skip_ws();
            match self.peek() {
                None => return Err(malformed_at(name_start, "an unterminated root start tag")),
                Some(b'>') => {
                    self.advance(1);
                    break;
                }
                Some(b'/') => {
                    self.advance(1);
                    self.expect(b'>', "expected '>' after '/'")?;
                    break;
                }
                Some(_) if !spaced => return Err(self.malformed("no space before an attribute")),
                Some(_) => {
                    let attr_start = self.pos;
                    let name = self.name("an invalid attribute name")?;
                    self.skip_ws();
                    self.expect(b'=', "expected '=' after an attribute name")?;
                    self.skip_ws();
                    let value_start = self.pos;
                    let value = self.literal("expected a quoted attribute value")?;
                    if let Some(lt) = value.iter().position(|&b| b == b'<') {
                        return Err(malformed_at(
                            value_start + 1 + lt,
                            "'<' in an attribute value",
                        ));
                    }
                    let binds_root = match prefix {
                        None => name == b"xmlns",
                        Some(p) => name.strip_prefix(b"xmlns:") == Some(p),
                    };
                    if binds_root {
                        if declaration.is_some() {
                            return Err(malformed_at(
                                attr_start,
                                "a repeated namespace declaration",
                            ));
                        }
                        declaration = Some((value_start, value));
                    }
                }
            }
        }
        let namespace = match (prefix, declaration) {
            (Some(b"xml"), _) => Some(XML_NAMESPACE.to_owned()),
            (Some(b"xmlns"), _) => {
                return Err(malformed_at(
                    name_start,
                    "the reserved prefix xmlns on the root element",
                ));
            }
            (_, None) if subset_mentions_xmlns => {
                return Err(ScanError::Unsupported(
                    "the internal DTD subset may give the root element a default namespace declaration",
                ));
            }
            (None, None) => None,
            (Some(_), None) => {
                return Err(malformed_at(name_start, "an undeclared namespace prefix"));
            }
            (_, Some((at, raw))) => {
                let uri = unescape(text(raw)?.as_str(), true).map_err(|e| match e {
                    Unescape::Broken => {
                        malformed_at(at, "a bad reference in a namespace declaration")
                    }
                    Unescape::UnknownEntity => {
                        ScanError::Unsupported("an entity reference in a namespace declaration")
                    }
                })?;
                match (uri.is_empty(), prefix) {
                    (true, None) => None,
                    (true, Some(_)) => {
                        return Err(malformed_at(at, "an empty namespace URI bound to a prefix"));
                    }
                    (false, _) => Some(uri),
                }
            }
        };
        Ok(RootName {
            prefix: prefix.map(text).transpose()?,
            local: text(local)?,
            namespace,
        })
    }
}

fn malformed_at(offset: usize, reason: &'static str) -> ScanError {
    ScanError::Malformed { offset, reason }
}

/// Bytes of the prolog as an owned string.
fn text(bytes: &[u8]) -> Result<String, ScanError> {
    str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|_| NOT_UTF8)
}

/// Split an element name into prefix and local part; `None` when it is not a
/// namespace-valid `QName` (an empty part, or more than one colon).
fn split_qname(name: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
    let valid =
        |part: &[u8]| name_len(part) == part.len() && !part.is_empty() && !part.contains(&b':');
    match name.iter().position(|&b| b == b':') {
        None => Some((None, name)),
        Some(colon) => {
            let prefix = name.get(..colon)?;
            let local = name.get(colon + 1..)?;
            (valid(prefix) && valid(local)).then_some((Some(prefix), local))
        }
    }
}

#[cfg(test)]
mod tests;
