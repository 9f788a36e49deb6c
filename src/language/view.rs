//! The Rust Language's side of a stage: its input as a read-only
//! `roxmltree` document, and a small builder for its output.
//!
//! It exists so that a plug-in written in Rust does not parse, decode or
//! serialize XML by hand (and get escaping, encodings or namespaces
//! subtly wrong in each plug-in). [`StageData::with_view`] lends the input
//! as a [`roxmltree::Document`] (a tree input serialized once, bytes
//! decoded by their byte-order mark or declared encoding), [`view_of`] does
//! the same for any bytes (a stage's resource), and [`XmlOut`] writes
//! well-formed, namespace-correct UTF-8 XML, copying roxmltree nodes with
//! their names, prefixes and namespace declarations ([`XmlOut::copy_with`]:
//! an identity transform with a hook on attributes).

use std::borrow::Cow;
use std::fmt::Write as _;

use bytes::Bytes;
use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};
use roxmltree::{Document, Node, NodeType, ParsingOptions};

use super::{LanguageError, StageContext, StageData, StageOutput};

/// The Content-Type [`XmlOut::finish`] gives a final stage's output.
pub const XML_CONTENT_TYPE: &str = "text/xml; charset=UTF-8";

impl StageData {
    /// Lends the input to `f` as a read-only [`roxmltree::Document`] and
    /// returns what `f` returns.
    ///
    /// The document is what an XSLT stage in the same place would see: a
    /// tree (an earlier stage's) is serialized once as UTF-8 XML; bytes
    /// are decoded by their byte-order mark, else by the encoding their XML
    /// declaration names (UTF-8 when none), and parsed with a DTD's
    /// internal subset allowed (its entities expanded; the DOCTYPE itself
    /// is not in the tree). Bytes whose DOCTYPE names an external subset
    /// are parsed by libxml2 first, reading that DTD through `ctx`'s
    /// resolver (so it is recorded as a dependency), so that the entities
    /// and default attributes it declares are there as for XSLT; if
    /// libxml2 refuses them, the bytes are viewed as they are. Text an
    /// earlier stage wrote with disable-output-escaping shows as escaped
    /// text between the processing instructions
    /// `javax.xml.transform.disable-output-escaping` and `…enable-…`
    /// (see [`StageContext::input_from_stage`]); copied on, they keep
    /// that meaning for the next stage.
    ///
    /// Input that is not well-formed XML, or not in its encoding, is a
    /// [`LanguageError::NotWellFormed`] with the line and, in the message,
    /// roxmltree's `line:column`.
    ///
    /// Why a closure: a `roxmltree::Document` borrows the text it was
    /// parsed from. Here the text lives exactly as long as the call, there
    /// is one parse, and nothing self-referential is needed; a value
    /// owning the text would have to hand out the document in a second
    /// step (a second place to fail, and a borrow to keep apart from it).
    pub fn with_view<R>(
        self,
        ctx: &StageContext<'_>,
        f: impl FnOnce(&Document<'_>) -> Result<R, LanguageError>,
    ) -> Result<R, LanguageError> {
        let bytes = match self {
            StageData::Bytes(bytes) if names_external_dtd(&bytes, ctx) => {
                through_libxml2(bytes, ctx)
            }
            other => other.into_bytes()?,
        };
        view_of(&bytes, f)
    }
}

/// Bytes whose DOCTYPE names an external subset, as serialized after
/// libxml2 parsed them with it (entities expanded, default attributes
/// added); the bytes themselves when libxml2 refuses them.
fn through_libxml2(bytes: Bytes, ctx: &StageContext<'_>) -> Bytes {
    match StageData::Bytes(bytes.clone())
        .into_dom_for(ctx)
        .and_then(|doc| Ok(doc.to_xml_bytes()?))
    {
        Ok(serialized) => Bytes::from(serialized),
        Err(_) => bytes,
    }
}

/// Does the DOCTYPE of `bytes` name an external subset (by the pipeline's
/// earlier scan when `ctx` has it, else by scanning the prolog)?
fn names_external_dtd(bytes: &[u8], ctx: &StageContext<'_>) -> bool {
    let scanned;
    let doctype = match ctx.source_doctype.filter(|_| !ctx.input_from_stage) {
        Some(known) => known,
        None => {
            scanned = super::doctype_of(bytes);
            scanned.as_ref()
        }
    };
    doctype.is_some_and(|d| d.system_id.is_some())
}

/// Lends `bytes` (an XML document: a stage's resource, say) to `f` as a
/// read-only [`roxmltree::Document`], decoded and parsed as
/// [`StageData::with_view`] does for bytes with no external DTD.
pub fn view_of<R>(
    bytes: &[u8],
    f: impl FnOnce(&Document<'_>) -> Result<R, LanguageError>,
) -> Result<R, LanguageError> {
    let text = decode(bytes)?;
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let doc =
        Document::parse_with_options(&text, options).map_err(|e| LanguageError::NotWellFormed {
            line: Some(e.pos().row),
            message: e.to_string(),
        })?;
    f(&doc)
}

/// The document's text: by its byte-order mark (UTF-8, UTF-16), else by
/// the UTF-16 signature of `<?`, else by the encoding its XML declaration
/// names (UTF-8 when none).
pub(crate) fn decode(bytes: &[u8]) -> Result<Cow<'_, str>, LanguageError> {
    if let Some((encoding, bom)) = Encoding::for_bom(bytes) {
        return decode_as(encoding, &bytes[bom..]);
    }
    match bytes {
        [0x3C, 0x00, 0x3F, 0x00, ..] => return decode_as(UTF_16LE, bytes),
        [0x00, 0x3C, 0x00, 0x3F, ..] => return decode_as(UTF_16BE, bytes),
        _ => {}
    }
    let Some(label) = declared_encoding(bytes) else {
        return decode_as(UTF_8, bytes);
    };
    if is_latin1(label) {
        // ISO-8859-1 itself: every byte is its code point (the WHATWG
        // label would give windows-1252, which differs in 0x80-0x9F).
        return Ok(encoding_rs::mem::decode_latin1(bytes));
    }
    if is_ascii(label) {
        return decode_as(UTF_8, bytes);
    }
    match Encoding::for_label(label) {
        Some(encoding) if encoding.is_ascii_compatible() => decode_as(encoding, bytes),
        _ => Err(LanguageError::NotWellFormed {
            line: Some(1),
            message: format!(
                "unsupported encoding {:?} in the XML declaration",
                String::from_utf8_lossy(label)
            ),
        }),
    }
}

/// `bytes` (without a byte-order mark) in `encoding`, refusing what is not.
fn decode_as<'b>(
    encoding: &'static Encoding,
    bytes: &'b [u8],
) -> Result<Cow<'b, str>, LanguageError> {
    if encoding == UTF_8 {
        return std::str::from_utf8(bytes).map(Cow::Borrowed).map_err(|e| {
            let valid = &bytes[..e.valid_up_to()];
            let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let row = 1 + valid.iter().filter(|&&b| b == b'\n').count();
            let col = 1 + String::from_utf8_lossy(&valid[line_start..])
                .chars()
                .count();
            LanguageError::NotWellFormed {
                line: u32::try_from(row).ok(),
                message: format!(
                    "the input is not UTF-8 (and its XML declaration names no other \
                     encoding): an invalid byte at {row}:{col}"
                ),
            }
        });
    }
    encoding
        .decode_without_bom_handling_and_without_replacement(bytes)
        .ok_or_else(|| LanguageError::NotWellFormed {
            line: None,
            message: format!("the input is not valid {}", encoding.name()),
        })
}

/// The `encoding` pseudo-attribute of an XML declaration at the start of
/// `bytes` (in an ASCII-compatible encoding), as written.
fn declared_encoding(bytes: &[u8]) -> Option<&[u8]> {
    let rest = bytes.strip_prefix(b"<?xml")?;
    if !rest.first().is_some_and(u8::is_ascii_whitespace) {
        return None;
    }
    let decl = &rest[..rest.windows(2).position(|w| w == b"?>")?];
    let at = decl.windows(8).position(|w| w == b"encoding")?;
    let rest = decl[at + 8..].trim_ascii_start().strip_prefix(b"=")?;
    let rest = rest.trim_ascii_start();
    let (&quote, value) = rest.split_first()?;
    if quote != b'"' && quote != b'\'' {
        return None;
    }
    Some(&value[..value.iter().position(|&b| b == quote)?])
}

/// The names of ISO-8859-1 (IANA).
fn is_latin1(label: &[u8]) -> bool {
    [
        "ISO-8859-1",
        "ISO_8859-1",
        "ISO_8859-1:1987",
        "ISO8859-1",
        "latin1",
        "l1",
        "iso-ir-100",
        "IBM819",
        "CP819",
        "csISOLatin1",
    ]
    .iter()
    .any(|name| name.as_bytes().eq_ignore_ascii_case(label))
}

/// The names of US-ASCII (read as UTF-8, its superset).
fn is_ascii(label: &[u8]) -> bool {
    label.eq_ignore_ascii_case(b"US-ASCII") || label.eq_ignore_ascii_case(b"ASCII")
}

/// An element's name as written in its document, with its prefix
/// (`xsl:template`), or, when the text does not say (an element from an
/// entity's replacement text), a prefix bound to its namespace there.
pub fn prefixed_name<'a>(node: Node<'a, '_>) -> Cow<'a, str> {
    let name = node.tag_name();
    let written = node
        .document()
        .input_text()
        .get(node.range().start + 1..)
        .map(|s| {
            let end = s.find(|c: char| c.is_whitespace() || c == '/' || c == '>');
            &s[..end.unwrap_or(s.len())]
        });
    let prefix = match name.namespace() {
        Some(uri) if node.default_namespace() != Some(uri) => node.lookup_prefix(uri),
        _ => None,
    };
    written_or(written, prefix, name.name())
}

/// An attribute's name as written, with its prefix (`xml:lang`).
fn attribute_name<'a>(node: Node<'a, '_>, attr: &roxmltree::Attribute<'a, '_>) -> Cow<'a, str> {
    let written = node.document().input_text().get(attr.range_qname());
    let prefix = attr.namespace().and_then(|uri| node.lookup_prefix(uri));
    written_or(written, prefix, attr.name())
}

/// The name as written when that text really is this name, else rebuilt
/// from the prefix.
fn written_or<'a>(written: Option<&'a str>, prefix: Option<&str>, local: &'a str) -> Cow<'a, str> {
    match (written, prefix) {
        (Some(q), _) if q.rsplit(':').next() == Some(local) => Cow::Borrowed(q),
        (_, Some(prefix)) => Cow::Owned(format!("{prefix}:{local}")),
        (_, None) => Cow::Borrowed(local),
    }
}

/// An element's attributes as [`XmlOut::copy_with`] is about to write
/// them: names with their prefixes as written (`xml:lang`, `x:k`), values
/// unescaped, in document order. The hook changes, adds or removes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs<'a> {
    list: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> Attrs<'a> {
    /// The value of the attribute written `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.list
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_ref())
    }

    /// Sets the attribute written `name`: its value replaced where it is,
    /// or the attribute added last. A prefixed name needs its prefix bound
    /// where the element is written.
    pub fn set(&mut self, name: impl Into<Cow<'a, str>>, value: impl Into<Cow<'a, str>>) {
        let (name, value) = (name.into(), value.into());
        match self.list.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => *v = value,
            None => self.list.push((name, value)),
        }
    }

    /// Removes the attribute written `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<Cow<'a, str>> {
        let at = self.list.iter().position(|(n, _)| n == name)?;
        Some(self.list.remove(at).1)
    }

    /// The attributes, (name, value), in the order they will be written.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.list.iter().map(|(n, v)| (n.as_ref(), v.as_ref()))
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Are there none?
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Writes a stage's output as UTF-8 XML that is well-formed and
/// namespace-well-formed, or says why not at the end.
///
/// Elements are opened with [`XmlOut::start`], given attributes and
/// namespace declarations with [`XmlOut::attr`] and [`XmlOut::namespace`]
/// (until their first content), and closed with [`XmlOut::end`] (an
/// empty one as `<e/>`). Text, comments and processing instructions go
/// where they are written; [`XmlOut::copy`] and [`XmlOut::copy_with`]
/// write roxmltree nodes. Text escapes `&`, `<` and `>` (so `]]>` never
/// appears) and a carriage return; attribute values also `"`, tab and
/// newline, as character references, so every value re-parses to itself.
/// Top-level nodes are each followed by a newline, as libxml2 writes
/// them.
///
/// The methods return `&mut Self` to chain; a misuse (a name that is not
/// a QName, an unbound prefix, an attribute after content, a character
/// XML 1.0 cannot carry, `--` in a comment, a second root element) is
/// remembered, and [`XmlOut::finish`] returns the first one as a
/// [`LanguageError::Failed`]. So is an element left open, and a document
/// without a root element.
#[derive(Debug, Default)]
pub struct XmlOut {
    out: String,
    /// Open elements: name, and the length of `scope` before its
    /// declarations.
    open: Vec<(String, usize)>,
    /// Namespace bindings the output has in scope, innermost last
    /// (`None`: the default namespace; an empty URI undeclares it).
    scope: Vec<(Option<String>, String)>,
    /// The attribute names of the start tag being written (`None`: no
    /// start tag is open).
    tag: Option<Vec<String>>,
    /// Has the root element been written?
    root: bool,
    /// The first misuse.
    error: Option<String>,
}

impl XmlOut {
    /// An empty document, with no XML declaration.
    pub fn new() -> XmlOut {
        XmlOut::default()
    }

    /// A document that starts with `<?xml version="1.0" encoding="UTF-8"?>`.
    pub fn with_declaration() -> XmlOut {
        let mut out = XmlOut::new();
        out.out
            .push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out
    }

    /// Opens element `name` (a QName: `p`, `svg:rect`).
    pub fn start(&mut self, name: &str) -> &mut Self {
        if !self.ready() {
            return self;
        }
        if !is_qname(name) {
            return self.fail(format!("{name:?} is not an element name"));
        }
        if self.open.is_empty() && self.root {
            return self.fail(format!(
                "a second root element <{name}> (a document has one)"
            ));
        }
        self.out.push('<');
        self.out.push_str(name);
        self.open.push((name.to_string(), self.scope.len()));
        self.tag = Some(Vec::new());
        self
    }

    /// Adds an attribute to the element just opened (before its content).
    /// `xmlns` and `xmlns:p` are namespace declarations
    /// ([`XmlOut::namespace`]).
    pub fn attr(&mut self, name: &str, value: &str) -> &mut Self {
        if name == "xmlns" {
            return self.namespace(None, value);
        }
        if let Some(prefix) = name.strip_prefix("xmlns:") {
            return self.namespace(Some(prefix), value);
        }
        if self.error.is_some() {
            return self;
        }
        let Some(names) = self.tag.as_mut() else {
            return self.fail(format!(
                "attribute {name:?} written where no start tag is open (after content, or \
                 outside an element)"
            ));
        };
        if names.iter().any(|n| n == name) {
            return self.fail(format!("attribute {name:?} written twice"));
        }
        if !is_qname(name) {
            return self.fail(format!("{name:?} is not an attribute name"));
        }
        names.push(name.to_string());
        self.out.push(' ');
        self.out.push_str(name);
        self.out.push_str("=\"");
        if let Err(c) = escape(&mut self.out, value, true) {
            return self.bad_char(c, "an attribute value");
        }
        self.out.push('"');
        self
    }

    /// Declares a namespace on the element just opened: `prefix` (`None`:
    /// the default namespace) bound to `uri` (for the default namespace,
    /// `""` undeclares it).
    pub fn namespace(&mut self, prefix: Option<&str>, uri: &str) -> &mut Self {
        if self.error.is_some() {
            return self;
        }
        if self.tag.is_none() {
            return self.fail(format!(
                "a namespace declaration for {uri:?} where no start tag is open"
            ));
        }
        let declared_here = &self.scope[self.open.last().map_or(0, |(_, at)| *at)..];
        if declared_here.iter().any(|(p, _)| p.as_deref() == prefix) {
            return self.fail(format!("namespace prefix {prefix:?} declared twice"));
        }
        match prefix {
            Some("xmlns") => return self.fail("the prefix xmlns cannot be declared".into()),
            Some("xml") if uri != XML_NS => {
                return self.fail("the prefix xml is bound to its own namespace only".into());
            }
            Some("xml") => return self,
            Some(p) if !is_ncname(p) => {
                return self.fail(format!("{p:?} is not a namespace prefix"));
            }
            Some(p) if uri.is_empty() => {
                return self.fail(format!("prefix {p:?} bound to an empty namespace name"));
            }
            _ => {}
        }
        self.out.push_str(" xmlns");
        if let Some(p) = prefix {
            self.out.push(':');
            self.out.push_str(p);
        }
        self.out.push_str("=\"");
        if let Err(c) = escape(&mut self.out, uri, true) {
            return self.bad_char(c, "a namespace name");
        }
        self.out.push('"');
        self.scope
            .push((prefix.map(str::to_string), uri.to_string()));
        self
    }

    /// Closes the innermost open element.
    pub fn end(&mut self) -> &mut Self {
        if self.error.is_some() {
            return self;
        }
        let Some((name, scope_len)) = self.open.last().cloned() else {
            return self.fail("end() with no element open".into());
        };
        if self.tag.is_some() {
            if !self.close_start_tag() {
                return self;
            }
            // `>` was just written: make it `/>`.
            self.out.pop();
            self.out.push_str("/>");
        } else {
            self.out.push_str("</");
            self.out.push_str(&name);
            self.out.push('>');
        }
        self.open.pop();
        self.scope.truncate(scope_len);
        if self.open.is_empty() {
            self.root = true;
            self.out.push('\n');
        }
        self
    }

    /// Writes text. At the top level (outside the root element) only
    /// whitespace is allowed, and it is dropped.
    pub fn text(&mut self, text: &str) -> &mut Self {
        if !self.ready() {
            return self;
        }
        if self.open.is_empty() {
            if text.chars().all(|c| matches!(c, ' ' | '\t' | '\n' | '\r')) {
                return self;
            }
            return self.fail(format!(
                "text {:?} outside the root element",
                text.chars().take(20).collect::<String>()
            ));
        }
        if let Err(c) = escape(&mut self.out, text, false) {
            return self.bad_char(c, "text");
        }
        self
    }

    /// Writes a comment (`<!--text-->`; `text` may not contain `--` or
    /// end with `-`).
    pub fn comment(&mut self, text: &str) -> &mut Self {
        if !self.ready() {
            return self;
        }
        if text.contains("--") || text.ends_with('-') {
            return self.fail(format!(
                "a comment cannot contain \"--\" or end with \"-\": {text:?}"
            ));
        }
        if let Some(c) = text.chars().find(|&c| !is_xml_char(c)) {
            return self.bad_char(c, "a comment");
        }
        self.out.push_str("<!--");
        self.out.push_str(text);
        self.out.push_str("-->");
        self.after_top_level_node();
        self
    }

    /// Writes a processing instruction (`<?target data?>`, or
    /// `<?target?>` when `data` is empty; `data` may not contain `?>`).
    pub fn pi(&mut self, target: &str, data: &str) -> &mut Self {
        if !self.ready() {
            return self;
        }
        if !is_ncname(target) || target.eq_ignore_ascii_case("xml") {
            return self.fail(format!("{target:?} is not a processing instruction target"));
        }
        if data.contains("?>") {
            return self.fail(format!(
                "processing instruction data cannot contain \"?>\": {data:?}"
            ));
        }
        if let Some(c) = data.chars().find(|&c| !is_xml_char(c)) {
            return self.bad_char(c, "a processing instruction");
        }
        self.out.push_str("<?");
        self.out.push_str(target);
        if !data.is_empty() {
            self.out.push(' ');
            self.out.push_str(data);
        }
        self.out.push_str("?>");
        self.after_top_level_node();
        self
    }

    /// Writes a copy of `node` ([`XmlOut::copy_with`] changing nothing).
    pub fn copy(&mut self, node: Node<'_, '_>) -> &mut Self {
        self.copy_with(node, |_, _| {})
    }

    /// Writes a copy of `node` and everything below it: a document's root
    /// is its children (comments and PIs around the root element
    /// included; the DOCTYPE is not in a roxmltree tree), an element is
    /// written with its name as written (prefix included), the namespace
    /// declarations its names need where the output's scope differs from
    /// the source's (so it re-parses to the same expanded names and
    /// in-scope namespaces), its attributes and its children; text,
    /// comments and PIs as they are. Before each element's attributes are
    /// written, `edit` may change them ([`Attrs`]).
    pub fn copy_with<'a, 'input: 'a>(
        &mut self,
        node: Node<'a, 'input>,
        mut edit: impl FnMut(Node<'a, 'input>, &mut Attrs<'a>),
    ) -> &mut Self {
        enum Step<'a, 'input> {
            Open(Node<'a, 'input>),
            Close,
        }
        // An explicit stack instead of recursion: deep documents are fine.
        let mut stack = vec![Step::Open(node)];
        while let Some(step) = stack.pop() {
            if self.error.is_some() {
                break;
            }
            let node = match step {
                Step::Close => {
                    self.end();
                    continue;
                }
                Step::Open(node) => node,
            };
            match node.node_type() {
                NodeType::Root => stack.extend(node.children().rev().map(Step::Open)),
                NodeType::Element => {
                    self.start_copy(node, &mut edit);
                    stack.push(Step::Close);
                    stack.extend(node.children().rev().map(Step::Open));
                }
                NodeType::Text => {
                    self.text(node.text().unwrap_or(""));
                }
                NodeType::Comment => {
                    self.comment(node.text().unwrap_or(""));
                }
                NodeType::PI => {
                    if let Some(pi) = node.pi() {
                        self.pi(pi.target, pi.value.unwrap_or(""));
                    }
                }
            }
        }
        self
    }

    /// The start tag of a copied element.
    fn start_copy<'a, 'input: 'a>(
        &mut self,
        node: Node<'a, 'input>,
        edit: &mut impl FnMut(Node<'a, 'input>, &mut Attrs<'a>),
    ) {
        self.start(&prefixed_name(node));
        // The source's default namespace ("" when none), declared (or
        // undeclared) when the output has another in scope here.
        let default = node
            .namespaces()
            .find(|ns| ns.name().is_none())
            .map_or("", |ns| ns.uri());
        if self.lookup(None).unwrap_or("") != default {
            self.namespace(None, default);
        }
        for ns in node.namespaces() {
            let (Some(prefix), uri) = (ns.name(), ns.uri()) else {
                continue;
            };
            if !uri.is_empty() && self.lookup(Some(prefix)) != Some(uri) {
                self.namespace(Some(prefix), uri);
            }
        }
        let mut attrs = Attrs {
            list: node
                .attributes()
                .map(|a| (attribute_name(node, &a), Cow::Borrowed(a.value())))
                .collect(),
        };
        edit(node, &mut attrs);
        for (name, value) in &attrs.list {
            self.attr(name, value);
        }
    }

    /// The document, or the first misuse.
    pub fn into_string(mut self) -> Result<String, LanguageError> {
        if self.error.is_none() {
            if let Some((name, _)) = self.open.last() {
                let name = name.clone();
                self.fail(format!(
                    "<{name}> is still open ({} element(s) unclosed)",
                    self.open.len()
                ));
            } else if !self.root {
                self.fail("the document has no root element".into());
            }
        }
        match self.error {
            Some(e) => Err(LanguageError::Failed(format!("XmlOut: {e}"))),
            None => Ok(self.out),
        }
    }

    /// The stage's output: the document's bytes, and for the final stage
    /// (`ctx.is_final`) the Content-Type [`XML_CONTENT_TYPE`] (set
    /// `content_type` on the result for another).
    pub fn finish(self, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
        Ok(StageOutput {
            data: StageData::Bytes(Bytes::from(self.into_string()?)),
            content_type: ctx.is_final.then(|| XML_CONTENT_TYPE.to_string()),
        })
    }

    /// The URI `prefix` is bound to in the output here.
    fn lookup(&self, prefix: Option<&str>) -> Option<&str> {
        if prefix == Some("xml") {
            return Some(XML_NS);
        }
        self.scope
            .iter()
            .rev()
            .find(|(p, _)| p.as_deref() == prefix)
            .map(|(_, uri)| uri.as_str())
    }

    /// No misuse yet, and a start tag being written is closed (content
    /// follows).
    fn ready(&mut self) -> bool {
        self.error.is_none() && (self.tag.is_none() || self.close_start_tag())
    }

    /// Ends the start tag being written with `>`, once its prefixes are
    /// known to be bound.
    fn close_start_tag(&mut self) -> bool {
        let Some(attrs) = self.tag.take() else {
            return true;
        };
        let element = self.open.last().map(|(n, _)| n.clone()).unwrap_or_default();
        let unbound = std::iter::once(&element).chain(&attrs).find(|name| {
            name.split_once(':')
                .is_some_and(|(prefix, _)| self.lookup(Some(prefix)).is_none_or(str::is_empty))
        });
        if let Some(name) = unbound {
            let why =
                format!("the prefix of {name:?} (on <{element}>) is not bound to a namespace");
            self.fail(why);
            return false;
        }
        self.out.push('>');
        true
    }

    fn after_top_level_node(&mut self) {
        if self.open.is_empty() {
            self.out.push('\n');
        }
    }

    fn bad_char(&mut self, c: char, place: &str) -> &mut Self {
        self.fail(format!(
            "U+{:04X} cannot be written in {place} (not an XML 1.0 character)",
            u32::from(c)
        ))
    }

    fn fail(&mut self, why: String) -> &mut Self {
        self.error.get_or_insert(why);
        self
    }
}

/// The namespace the `xml` prefix is bound to.
const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

/// Appends `text` escaped for content or (`attribute`) a double-quoted
/// attribute value; the first character XML 1.0 cannot carry is the error.
fn escape(out: &mut String, text: &str, attribute: bool) -> Result<(), char> {
    let mut rest = text;
    while let Some(at) = rest.find(|c: char| {
        matches!(c, '&' | '<' | '>' | '\r')
            || (attribute && matches!(c, '"' | '\t' | '\n'))
            || (c < ' ' && !matches!(c, '\t' | '\n'))
            || matches!(c, '\u{FFFE}' | '\u{FFFF}')
    }) {
        out.push_str(&rest[..at]);
        let c = rest[at..].chars().next().unwrap_or('\0');
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            other => return Err(other),
        }
        rest = &rest[at + c.len_utf8()..];
    }
    out.push_str(rest);
    Ok(())
}

/// XML 1.0's `Char` (Rust strings hold no surrogates).
fn is_xml_char(c: char) -> bool {
    !((c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{FFFE}' | '\u{FFFF}'))
}

/// A QName: an NCName, or two joined by one colon.
fn is_qname(name: &str) -> bool {
    match name.split_once(':') {
        Some((prefix, local)) => is_ncname(prefix) && is_ncname(local),
        None => is_ncname(name),
    }
}

/// XML's `Name` without colons.
fn is_ncname(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(is_name_start) && chars.all(is_name_char)
}

fn is_name_start(c: char) -> bool {
    matches!(c,
        'A'..='Z' | '_' | 'a'..='z' | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}'
        | '\u{F8}'..='\u{2FF}' | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}'
        | '\u{200C}'..='\u{200D}' | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}'
        | '\u{3001}'..='\u{D7FF}' | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}'
        | '\u{10000}'..='\u{EFFFF}')
}

fn is_name_char(c: char) -> bool {
    is_name_start(c)
        || matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::cache::Fingerprints;
    use crate::ffi::Limits;
    use crate::provider::{FileProvider, RootResolver};

    const OPTIONS: ParsingOptions = ParsingOptions {
        allow_dtd: true,
        nodes_limit: u32::MAX,
    };

    /// Everything a copy must keep, node by node: kinds, expanded names,
    /// attributes (expanded, sorted), in-scope namespaces, text, PIs.
    fn meaning(xml: &str) -> Vec<String> {
        let doc = Document::parse_with_options(xml, OPTIONS).unwrap();
        doc.descendants()
            .map(|n| match n.node_type() {
                NodeType::Root => "root".to_string(),
                NodeType::Element => {
                    let mut attrs: Vec<_> = n
                        .attributes()
                        .map(|a| format!("{:?}{}={:?}", a.namespace(), a.name(), a.value()))
                        .collect();
                    attrs.sort();
                    let mut scope: Vec<_> = n
                        .namespaces()
                        .filter(|ns| !ns.uri().is_empty())
                        .map(|ns| format!("{:?}={}", ns.name(), ns.uri()))
                        .collect();
                    scope.sort();
                    format!("element {:?} {attrs:?} {scope:?}", n.tag_name())
                }
                NodeType::Text => format!("text {:?}", n.text()),
                NodeType::Comment => format!("comment {:?}", n.text()),
                NodeType::PI => format!("pi {:?}", n.pi()),
            })
            .collect()
    }

    /// The copy of `input` through the view and the builder.
    fn copied(input: &[u8]) -> Result<String, LanguageError> {
        view_of(input, |doc| {
            let mut out = XmlOut::with_declaration();
            out.copy(doc.root());
            out.into_string()
        })
    }

    const RICH: &str = "<?xml version='1.0'?>\n\
        <!DOCTYPE r [<!ENTITY e '<b:i xmlns:b=\"urn:b\">&amp;</b:i>'>]>\n\
        <!-- before --><?first data with ?? and > ?>\n\
        <r xmlns='urn:d' xmlns:p='urn:p' xmlns:q='urn:p' p:a='&lt;&amp;&gt;&quot;&#9;&#10;&#13;x' b='&apos;'>\
        <p:e xmlns=''><u q:k='1'/><p:u xmlns:p='urn:other' p:k='2'/></p:e>\
        <![CDATA[a]]]]><![CDATA[>b <c> & d]]>&#13;\n&e;<!--in-side--><?t?>\
        <q:x xml:lang='en'>\u{e9}\u{1F600}</q:x></r>\n<!-- after -->";

    #[test]
    fn a_copy_re_parses_to_the_same_document() {
        let out = copied(RICH.as_bytes()).unwrap();
        assert_eq!(meaning(&out), meaning(RICH), "{out}");
        assert_eq!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <!-- before -->\n<?first data with ?? and > ?>\n\
             <r xmlns=\"urn:d\" xmlns:p=\"urn:p\" xmlns:q=\"urn:p\" \
             p:a=\"&lt;&amp;&gt;&quot;&#9;&#10;&#13;x\" b=\"'\">\
             <p:e xmlns=\"\"><u q:k=\"1\"/><p:u xmlns:p=\"urn:other\" p:k=\"2\"/></p:e>\
             a]]&gt;b &lt;c&gt; &amp; d&#13;\n<b:i xmlns:b=\"urn:b\">&amp;</b:i>\
             <!--in-side--><?t?><q:x xml:lang=\"en\">\u{e9}\u{1F600}</q:x></r>\n\
             <!-- after -->\n"
        );
        // And a copy of the copy is the copy.
        assert_eq!(copied(out.as_bytes()).unwrap(), out);
    }

    #[test]
    fn a_copied_subtree_takes_the_namespaces_it_needs() {
        let input = "<a xmlns='urn:a' xmlns:p='urn:p'><b><p:c p:k='v'><d/></p:c></b></a>";
        let out = view_of(input.as_bytes(), |doc| {
            let c = doc
                .descendants()
                .find(|n| n.has_tag_name(("urn:p", "c")))
                .unwrap();
            let mut out = XmlOut::new();
            // Inside an element of our own, in another default namespace.
            out.start("wrap")
                .namespace(None, "urn:w")
                .namespace(Some("p"), "urn:x");
            out.copy(c).end();
            out.into_string()
        })
        .unwrap();
        assert_eq!(
            out,
            "<wrap xmlns=\"urn:w\" xmlns:p=\"urn:x\">\
             <p:c xmlns=\"urn:a\" xmlns:p=\"urn:p\" p:k=\"v\"><d/></p:c></wrap>\n"
        );
        let doc = Document::parse(&out).unwrap();
        let d = doc.descendants().find(|n| n.has_tag_name("d")).unwrap();
        assert_eq!(d.tag_name().namespace(), Some("urn:a"));
        let c = d.parent().unwrap();
        assert_eq!(c.attribute(("urn:p", "k")), Some("v"));

        // An element in no namespace copied under a default namespace.
        let out = view_of(b"<x><y/></x>", |doc| {
            let mut out = XmlOut::new();
            out.start("w").attr("xmlns", "urn:w");
            out.copy(doc.root_element()).end();
            out.into_string()
        })
        .unwrap();
        assert_eq!(out, "<w xmlns=\"urn:w\"><x xmlns=\"\"><y/></x></w>\n");
    }

    #[test]
    fn the_hook_changes_attributes() {
        let input = "<d xmlns:x='urn:x'><t n='old' x:k='v' gone='1'/><t/></d>";
        let out = view_of(input.as_bytes(), |doc| {
            let mut out = XmlOut::new();
            out.copy_with(doc.root(), |node, attrs| {
                if node.has_tag_name("t") {
                    assert_eq!(attrs.get("x:k").is_some(), attrs.len() == 3);
                    attrs.set("n", "new");
                    attrs.set("x:added", String::from("a\"b"));
                    assert_eq!(
                        attrs.remove("gone").as_deref(),
                        attrs.get("x:k").map(|_| "1")
                    );
                }
            });
            out.into_string()
        })
        .unwrap();
        assert_eq!(
            out,
            "<d xmlns:x=\"urn:x\"><t n=\"new\" x:k=\"v\" x:added=\"a&quot;b\"/>\
             <t n=\"new\" x:added=\"a&quot;b\"/></d>\n"
        );
    }

    #[test]
    fn the_builder_escapes_text_and_attributes() {
        let text = "a & b < c > d ]]> e \" ' \r\n\tf";
        let value = "1 & 2 < 3 > 4 \" ' \t\n\r end";
        let mut out = XmlOut::new();
        out.start("r")
            .attr("v", value)
            .text(text)
            .comment(" c ")
            .pi("p", "x")
            .start("e")
            .end()
            .end();
        let xml = out.into_string().unwrap();
        assert_eq!(
            xml,
            "<r v=\"1 &amp; 2 &lt; 3 &gt; 4 &quot; ' &#9;&#10;&#13; end\">\
             a &amp; b &lt; c &gt; d ]]&gt; e \" ' &#13;\n\tf<!-- c --><?p x?><e/></r>\n"
        );
        let doc = Document::parse(&xml).unwrap();
        assert_eq!(doc.root_element().attribute("v"), Some(value));
        assert_eq!(doc.root_element().text(), Some(text));
    }

    #[test]
    fn the_builder_says_what_was_misused() {
        let fails = |build: &dyn Fn(&mut XmlOut), why: &str| {
            let mut out = XmlOut::new();
            build(&mut out);
            match out.into_string() {
                Err(LanguageError::Failed(m)) => assert!(m.contains(why), "{why}: {m}"),
                other => panic!("{why}: {other:?}"),
            }
        };
        fails(
            &|o| {
                o.start("a").text("x").attr("k", "v");
            },
            "no start tag is open",
        );
        fails(
            &|o| {
                o.start("p:a").end();
            },
            "\"p:a\" (on <p:a>) is not bound",
        );
        fails(
            &|o| {
                o.start("a").attr("q:k", "v").end();
            },
            "\"q:k\" (on <a>) is not bound",
        );
        fails(
            &|o| {
                o.start("1a");
            },
            "not an element name",
        );
        fails(
            &|o| {
                o.start("a").attr("k", "1").attr("k", "2");
            },
            "written twice",
        );
        fails(
            &|o| {
                o.start("a").end().start("b");
            },
            "a second root element",
        );
        fails(
            &|o| {
                o.text("x");
            },
            "outside the root element",
        );
        fails(
            &|o| {
                o.start("a").comment("a--b");
            },
            "cannot contain \"--\"",
        );
        fails(
            &|o| {
                o.start("a").pi("xml", "");
            },
            "not a processing instruction target",
        );
        fails(
            &|o| {
                o.start("a").pi("t", "?>");
            },
            "cannot contain \"?>\"",
        );
        fails(
            &|o| {
                o.start("a").text("\u{1}");
            },
            "U+0001 cannot be written in text",
        );
        fails(
            &|o| {
                o.start("a").attr("k", "\u{FFFF}");
            },
            "U+FFFF cannot be written in an attribute value",
        );
        fails(
            &|o| {
                o.start("a").start("b").end();
            },
            "<a> is still open",
        );
        fails(
            &|o| {
                o.comment("only");
            },
            "no root element",
        );
        fails(
            &|o| {
                o.end();
            },
            "no element open",
        );
        fails(
            &|o| {
                o.start("a").namespace(Some("p"), "");
            },
            "empty namespace name",
        );
        // Only the first misuse is reported.
        fails(
            &|o| {
                o.start("1").start("2");
            },
            "\"1\" is not an element name",
        );
        // Whitespace at the top level is dropped, not an error.
        let mut out = XmlOut::new();
        out.text("\n ").start("a").end().text("\n");
        assert_eq!(out.into_string().unwrap(), "<a/>\n");
    }

    #[test]
    fn malformed_input_names_line_and_column() {
        match copied(b"<doc>\n  <section></doc>") {
            Err(LanguageError::NotWellFormed { line, message }) => {
                assert_eq!(line, Some(2), "{message}");
                assert!(message.contains("2:"), "roxmltree's position: {message}");
            }
            other => panic!("{other:?}"),
        }
        for not_xml in [&b"just text"[..], b"", b"<a>&undefined;</a>", b"<a/><b/>"] {
            assert!(
                matches!(
                    copied(not_xml),
                    Err(LanguageError::NotWellFormed { line: Some(_), .. })
                ),
                "{not_xml:?}"
            );
        }
        match copied(b"<doc>\nok\ncaf\xe9</doc>") {
            Err(LanguageError::NotWellFormed { line, message }) => {
                assert_eq!(line, Some(3), "{message}");
                assert!(
                    message.contains("not UTF-8") && message.contains("3:4"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn documents_are_decoded_by_their_declaration_or_mark() {
        let want = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<d>caf\u{e9} \u{80}</d>\n";
        let latin1 = b"<?xml version='1.0' encoding='iso-8859-1'?><d>caf\xe9 \x80</d>";
        assert_eq!(copied(latin1).unwrap(), want);
        let mut utf16: Vec<u8> = vec![0xFF, 0xFE];
        for unit in "<?xml version='1.0' encoding='UTF-16'?><d>caf\u{e9} \u{80}</d>".encode_utf16()
        {
            utf16.extend(unit.to_le_bytes());
        }
        assert_eq!(copied(&utf16).unwrap(), want);
        assert_eq!(
            copied(&utf16[2..]).unwrap(),
            want,
            "UTF-16 by the signature of <?"
        );
        let bom = b"\xEF\xBB\xBF<d>caf\xC3\xA9 \xC2\x80</d>";
        assert_eq!(copied(bom).unwrap(), want);
        let cp1252 = b"<?xml version=\"1.0\" encoding=\"windows-1252\"?><d>\x80</d>";
        assert!(copied(cp1252).unwrap().contains("<d>\u{20ac}</d>"));
        match copied(b"<?xml version='1.0' encoding='x-unknown'?><d/>") {
            Err(LanguageError::NotWellFormed { message, .. }) => {
                assert!(
                    message.contains("unsupported encoding \"x-unknown\""),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            copied(b"<?xml version='1.0' encoding='Shift_JIS'?><d>\x82</d>"),
            Err(LanguageError::NotWellFormed { message, .. }) if message.contains("Shift_JIS")
        ));
    }

    fn resolver(root: &std::path::Path) -> Arc<RootResolver> {
        FileProvider::new(root, Fingerprints::new(16))
            .unwrap()
            .resolver()
    }

    /// The input viewed in `ctx`, copied.
    fn viewed(input: StageData, ctx: &StageContext<'_>) -> String {
        input
            .with_view(ctx, |doc| {
                let mut out = XmlOut::with_declaration();
                out.copy(doc.root());
                out.into_string()
            })
            .unwrap()
    }

    #[test]
    fn a_tree_is_viewed_as_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let resolver = resolver(&root);
        let limits = Limits::default();
        let ctx = StageContext::new("/doc.xml", &[], false, &limits, &resolver);
        let bytes = Bytes::from_static(RICH.as_bytes());
        let tree = StageData::Bytes(bytes.clone()).into_dom_for(&ctx).unwrap();
        let from_bytes = viewed(StageData::Bytes(bytes), &ctx);
        assert_eq!(viewed(StageData::Dom(tree), &ctx), from_bytes);
        assert_eq!(meaning(&from_bytes), meaning(RICH));
    }

    #[test]
    fn an_external_dtd_is_read_as_for_xslt() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(
            root.join("d.dtd"),
            "<!ENTITY nbsp \"&#160;\"><!ATTLIST d kind CDATA \"default\">",
        )
        .unwrap();
        let source = b"<?xml version='1.0'?>\n<!DOCTYPE d SYSTEM 'd.dtd'>\n<d>a&nbsp;b</d>";
        let resolver = resolver(&root);
        let limits = Limits::default();
        let ctx = StageContext::new("/doc.xml", &[], false, &limits, &resolver);
        let want = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<d kind=\"default\">a\u{a0}b</d>\n";
        let bytes = Bytes::from_static(source);
        assert_eq!(viewed(StageData::Bytes(bytes.clone()), &ctx), want);
        let tree = StageData::Bytes(bytes).into_dom_for(&ctx).unwrap();
        assert_eq!(viewed(StageData::Dom(tree), &ctx), want);
        // Without the DTD the entity is unknown: roxmltree's error.
        std::fs::remove_file(root.join("d.dtd")).unwrap();
        let refused = StageData::Bytes(Bytes::from_static(source)).with_view(&ctx, |_| Ok(()));
        assert!(
            matches!(&refused, Err(LanguageError::NotWellFormed { line: Some(3), message }) if message.contains("nbsp")),
            "{refused:?}"
        );
    }

    #[test]
    fn finish_sets_the_content_type_of_a_final_stage() {
        let dir = tempfile::tempdir().unwrap();
        let resolver = resolver(dir.path());
        let limits = Limits::default();
        for is_final in [false, true] {
            let ctx = StageContext::new("/doc.xml", &[], is_final, &limits, &resolver);
            let mut out = XmlOut::with_declaration();
            out.start("a").text("\u{e9}").end();
            let output = out.finish(&ctx).unwrap();
            assert_eq!(
                output.content_type.as_deref(),
                is_final.then_some(XML_CONTENT_TYPE)
            );
            let StageData::Bytes(bytes) = output.data else {
                panic!("bytes expected");
            };
            assert_eq!(
                &bytes[..],
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a>\u{e9}</a>\n".as_bytes()
            );
        }
    }
}
