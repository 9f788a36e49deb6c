//! A client's document (a POST body) parsed once, by libxml2, under limits
//! (`csrc/untrusted.c`): no external DTD or entity under any spelling (the
//! parse stops at the declaration), no load of any kind, elements nested
//! at most `max_depth` deep, at most `max_attributes` attributes (and
//! namespace declarations) on one element, and entity expansion bounded
//! as libxml2 2.11 bounds it (every reference costs its expanded size plus
//! 20 bytes; past the first [`EXPANSION_FLOOR`] bytes the total may not
//! exceed `max_amplification` times the document's size). The tree it
//! gives is the one the chain's first stage transforms: there is no
//! second parser with other rules.
//!
//! libxml2 2.9 checks an element's attributes for duplicates pairwise
//! before any callback sees them, so an element with 80,000 attributes
//! costs seconds before a handler could count them: the attributes are
//! counted on the bytes first ([`most_attributes`]), an upper bound that
//! refuses such an element before the parser reaches it. The parser's own
//! count then holds the limit exactly.

use std::os::raw::{c_int, c_ulong};
use std::ptr::NonNull;
use std::sync::Arc;

use super::errors::{begin, last_parse_error};
use super::resolve::ResolverGuard;
use super::{RefuseAll, XmlDoc, XmlError, c_len, c_string, sys};

/// Expansion every document may make whatever its size (libxml2 2.11's
/// `XML_PARSER_ALLOWED_EXPANSION`), in bytes.
pub const EXPANSION_FLOOR: u64 = 1_000_000;

/// The deepest nesting libxml2 parses without `XML_PARSE_HUGE` (which
/// would lift its other limits too): the ceiling of `max_depth`.
pub const DEPTH_CEILING: u32 = 256;

/// What a client's document may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UntrustedLimits {
    /// Elements nested at most this deep (1 to [`DEPTH_CEILING`]).
    pub max_depth: u32,
    /// Attributes and namespace declarations on one element, at most.
    pub max_attributes: u32,
    /// Entity expansion past [`EXPANSION_FLOOR`] bytes may not exceed this
    /// many times the document's size.
    pub max_amplification: u32,
}

impl Default for UntrustedLimits {
    fn default() -> Self {
        UntrustedLimits {
            max_depth: 256,
            max_attributes: 256,
            max_amplification: 5,
        }
    }
}

/// Why a client's document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// Elements nested past `max_depth`.
    #[error("elements nest more than {limit} deep{} (max-post-depth)", at_line(*.line))]
    Depth {
        /// The limit.
        limit: u32,
        /// Where it was passed, when known.
        line: Option<u32>,
    },
    /// One element has more attributes than `max_attributes`.
    #[error("an element has {count} attributes{}, more than {limit} (max-post-attributes)", at_line(*.line))]
    Attributes {
        /// How many were counted.
        count: u64,
        /// The limit.
        limit: u32,
        /// Where, when known.
        line: Option<u32>,
    },
    /// Entity references expand past the amplification bound.
    #[error(
        "its entity references expand to more than {limit} times its size{} (max-post-amplification; the first {EXPANSION_FLOOR} bytes are free)",
        at_line(*.line)
    )]
    Amplification {
        /// The limit.
        limit: u32,
        /// Where, when known.
        line: Option<u32>,
    },
    /// The DOCTYPE names an external subset.
    #[error(
        "its DOCTYPE names an external DTD (SYSTEM or PUBLIC): a posted document must be standalone"
    )]
    ExternalDtd,
    /// An external entity is declared.
    #[error(
        "it declares an external entity (SYSTEM, PUBLIC or NDATA){}: a posted document must be standalone",
        at_line(*.line)
    )]
    ExternalEntity {
        /// Where, when known.
        line: Option<u32>,
    },
    /// Not well-formed (libxml2's report).
    #[error("it is not well-formed XML: {0}")]
    Malformed(XmlError),
}

fn at_line(line: Option<u32>) -> String {
    line.map(|l| format!(" (line {l})")).unwrap_or_default()
}

/// Parse options: those of a served document (entities substituted, DTD
/// attribute defaults, CDATA merged, no network, no printing) without
/// DTD loading; the handlers refuse external subsets anyway.
const UNTRUSTED_OPTIONS: c_int = sys::XML_PARSE_NOENT
    | sys::XML_PARSE_DTDATTR
    | sys::XML_PARSE_NOCDATA
    | sys::XML_PARSE_NONET
    | sys::XML_PARSE_NOERROR
    | sys::XML_PARSE_NOWARNING;

impl XmlDoc {
    /// Parses a client's document (base URL `url`) under `limits`; nothing
    /// is loaded (the thread's resolver refuses every load meanwhile).
    pub fn parse_untrusted(
        bytes: &[u8],
        url: &str,
        limits: &UntrustedLimits,
    ) -> Result<XmlDoc, Refusal> {
        XmlDoc::parse_untrusted_with(bytes, url, limits, Arc::new(RefuseAll))
    }

    /// [`XmlDoc::parse_untrusted`] with `refusing` as the thread's resolver
    /// meanwhile (it must refuse every load; the `post_document` fuzz
    /// target passes one that also records whether any was asked for).
    #[doc(hidden)]
    pub fn parse_untrusted_with(
        bytes: &[u8],
        url: &str,
        limits: &UntrustedLimits,
        refusing: Arc<dyn super::Resolver>,
    ) -> Result<XmlDoc, Refusal> {
        let max_depth = limits.max_depth.clamp(1, DEPTH_CEILING);
        let counted = most_attributes(bytes);
        if counted > u64::from(limits.max_attributes) {
            return Err(Refusal::Attributes {
                count: counted,
                limit: limits.max_attributes,
                line: None,
            });
        }
        begin();
        let len = c_len(bytes).map_err(Refusal::Malformed)?;
        let c_url = c_string(url, "document URL").map_err(Refusal::Malformed)?;
        let _guard = ResolverGuard::install(refusing);
        let mut why: c_int = 0;
        let mut reached: c_ulong = 0;
        let mut line: c_int = 0;
        // SAFETY: buffer and length describe `bytes`, which outlives the
        // call; the URL is NUL-terminated; the out-parameters are valid
        // locals. libxml2 copies what it keeps; the handlers' state lives
        // on the C side's stack for the call only.
        let doc = unsafe {
            sys::axle_parse_untrusted(
                bytes.as_ptr().cast(),
                len,
                c_url.as_ptr(),
                UNTRUSTED_OPTIONS,
                c_ulong::from(max_depth),
                c_ulong::from(limits.max_attributes),
                f64::from(limits.max_amplification),
                EXPANSION_FLOOR as f64,
                &mut why,
                &mut reached,
                &mut line,
            )
        };
        let line = u32::try_from(line).ok().filter(|l| *l > 0);
        let refusal = match why {
            1 => Some(Refusal::Depth {
                limit: max_depth,
                line,
            }),
            2 => Some(Refusal::Attributes {
                count: reached,
                limit: limits.max_attributes,
                line,
            }),
            3 => Some(Refusal::Amplification {
                limit: limits.max_amplification,
                line,
            }),
            4 => Some(Refusal::ExternalDtd),
            5 => Some(Refusal::ExternalEntity { line }),
            _ => None,
        };
        match (NonNull::new(doc), refusal) {
            (Some(ptr), None) => Ok(XmlDoc {
                ptr,
                borrows_dtd: false,
            }),
            (Some(ptr), Some(r)) => {
                // Not reached (the C side frees a refused tree), but a tree
                // is never leaked.
                drop(XmlDoc {
                    ptr,
                    borrows_dtd: false,
                });
                Err(r)
            }
            (None, Some(r)) => Err(r),
            (None, None) => Err(Refusal::Malformed(last_parse_error(url))),
        }
    }
}

/// An upper bound of the attributes (and namespace declarations) of any
/// one element of `bytes`, counted without parsing: the `=` signs of each
/// start tag outside quoted values; in a DOCTYPE's internal subset, the
/// `=` signs and character references of each quoted literal (an entity's
/// replacement text may hold a start tag, written with `&#61;` for `=`).
/// Comments, processing instructions and CDATA sections count nothing. The
/// bytes are read as ASCII code units: one a byte, or in UTF-16 (by its
/// byte-order mark) one a pair.
pub fn most_attributes(bytes: &[u8]) -> u64 {
    match bytes {
        [0xFF, 0xFE, rest @ ..] => {
            Scanner::default().run(rest.chunks(2).map(|p| unit(p[0], p.get(1))))
        }
        [0xFE, 0xFF, rest @ ..] => Scanner::default().run(
            rest.chunks(2)
                .map(|p| unit(*p.get(1).unwrap_or(&0xFF), Some(&p[0]))),
        ),
        _ => Scanner::default().run_bytes(bytes),
    }
}

/// A UTF-16 code unit as ASCII (`low`, when `high` is 0), else a byte no
/// rule of the scanner looks at.
fn unit(low: u8, high: Option<&u8>) -> u8 {
    if high == Some(&0) { low } else { 0x80 }
}

/// Where [`most_attributes`] is in the markup.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Character data.
    #[default]
    Text,
    /// After `<`, deciding what follows.
    Open,
    /// After `<!`, reading the keyword.
    Bang,
    /// Inside a start tag.
    Tag,
    /// Inside an end tag, up to `>`.
    EndTag,
    /// Inside a comment, PI or CDATA section, until its terminator; then
    /// back to text, or to the DOCTYPE it is in.
    Skip { in_doctype: bool },
    /// Inside a DOCTYPE.
    Doctype,
}

#[derive(Debug, Default)]
struct Scanner {
    at: At,
    /// Inside a quoted value or literal: its quote.
    quote: Option<u8>,
    /// The keyword after `<!` so far.
    keyword: Vec<u8>,
    /// The terminator of a `Skip` run.
    until: &'static [u8],
    /// The last bytes seen (newest last), for terminators, `<!--`, `<?`
    /// and `&#`.
    recent: [u8; 3],
    /// In a DOCTYPE: `[`…`]` depth.
    brackets: u32,
    here: u64,
    most: u64,
}

impl Scanner {
    fn run(mut self, units: impl Iterator<Item = u8>) -> u64 {
        for b in units {
            self.step(b);
            self.recent = [self.recent[1], self.recent[2], b];
        }
        self.most
    }

    /// [`Scanner::run`] over bytes, character data skipped to the next
    /// `<` at once (most of a document is text).
    fn run_bytes(mut self, bytes: &[u8]) -> u64 {
        let mut i = 0;
        while i < bytes.len() {
            if self.at == At::Text {
                match bytes[i..].iter().position(|&b| b == b'<') {
                    Some(at) => i += at,
                    None => break,
                }
            }
            let b = bytes[i];
            self.step(b);
            self.recent = [self.recent[1], self.recent[2], b];
            i += 1;
        }
        self.most
    }

    fn count(&mut self) {
        self.here += 1;
        self.most = self.most.max(self.here);
    }

    /// Do the bytes seen, with `b` last, end with `tail`?
    fn ends_with(&self, b: u8, tail: &[u8]) -> bool {
        let window = [self.recent[0], self.recent[1], self.recent[2], b];
        window.ends_with(tail)
    }

    fn step(&mut self, b: u8) {
        match self.at {
            At::Text => {
                if b == b'<' {
                    self.at = At::Open;
                }
            }
            At::Open => match b {
                b'/' => self.at = At::EndTag,
                b'?' => self.skip(b"?>", false),
                b'!' => {
                    self.at = At::Bang;
                    self.keyword.clear();
                }
                _ => {
                    self.at = At::Tag;
                    self.quote = None;
                    self.here = 0;
                }
            },
            At::Bang => {
                self.keyword.push(b);
                if self.keyword == b"--" {
                    self.skip(b"-->", false);
                } else if self.keyword == b"[CDATA[" {
                    self.skip(b"]]>", false);
                } else if self.keyword == b"DOCTYPE" {
                    self.at = At::Doctype;
                    self.quote = None;
                    self.brackets = 0;
                    self.here = 0;
                } else if ![&b"--"[..], b"[CDATA[", b"DOCTYPE"]
                    .iter()
                    .any(|k| k.starts_with(&self.keyword))
                {
                    // Not markup a document may hold: the parser refuses
                    // it; nothing in it is counted.
                    self.skip(b">", false);
                }
            }
            At::Tag => match (self.quote, b) {
                (Some(q), _) if b == q => self.quote = None,
                (Some(_), _) => {}
                (None, b'"' | b'\'') => self.quote = Some(b),
                (None, b'=') => self.count(),
                (None, b'>') => self.at = At::Text,
                _ => {}
            },
            At::EndTag => {
                if b == b'>' {
                    self.at = At::Text;
                }
            }
            At::Skip { in_doctype } => {
                if self.ends_with(b, self.until) {
                    self.at = if in_doctype { At::Doctype } else { At::Text };
                    self.recent = [0; 3];
                }
            }
            At::Doctype => match (self.quote, b) {
                (Some(q), _) if b == q => self.quote = None,
                (Some(_), b'=') => self.count(),
                (Some(_), b'#') if self.recent[2] == b'&' => self.count(),
                (Some(_), _) => {}
                (None, b'"' | b'\'') => {
                    self.quote = Some(b);
                    self.here = 0;
                }
                (None, b'-') if self.ends_with(b, b"<!--") => self.skip(b"-->", true),
                (None, b'?') if self.recent[2] == b'<' => self.skip(b"?>", true),
                (None, b'[') => self.brackets += 1,
                (None, b']') => self.brackets = self.brackets.saturating_sub(1),
                (None, b'>') if self.brackets == 0 => self.at = At::Text,
                _ => {}
            },
        }
    }

    fn skip(&mut self, until: &'static [u8], in_doctype: bool) {
        self.at = At::Skip { in_doctype };
        self.until = until;
    }
}

#[cfg(test)]
mod tests;
