//! Preparing a suite case to be served over HTTP: the
//! `<?xml-stylesheet?>` PI to insert into its source (with an href relative
//! to the source), the PI a `(pi)` row already has, and the Content-Type
//! its stylesheet's `xsl:output` (with imports and includes) implies. Pure
//! functions over bytes and files, apart from the serving and fetching in
//! `http`.

use std::path::Path;

use axle::prolog::StylesheetPi;

use super::{url_path, xmlcompare};

/// Inserts `<?xml-stylesheet href="{href}" type="text/xsl"?>` right after
/// the XML declaration (or a byte-order mark, or at the very start).
pub fn insert_pi(source: &[u8], href: &str) -> Result<Vec<u8>, String> {
    let pi = format!("<?xml-stylesheet href=\"{href}\" type=\"text/xsl\"?>");
    // UTF-16 (with a byte-order mark): work on code units.
    let utf16: Option<fn(&[u8]) -> u16> = if source.starts_with(b"\xFF\xFE") {
        Some(|c| u16::from_le_bytes([c[0], c[1]]))
    } else if source.starts_with(b"\xFE\xFF") {
        Some(|c| u16::from_be_bytes([c[0], c[1]]))
    } else {
        None
    };
    if let Some(unit) = utf16 {
        let little = source[0] == 0xFF;
        let units: Vec<u16> = source[2..].chunks_exact(2).map(unit).collect();
        let text = String::from_utf16(&units).map_err(|e| format!("bad UTF-16: {e}"))?;
        let with_pi = insert_pi(text.as_bytes(), href)?;
        let with_pi = String::from_utf8(with_pi).map_err(|e| e.to_string())?;
        let mut out = source[..2].to_vec();
        for u in with_pi.encode_utf16() {
            out.extend_from_slice(&if little {
                u.to_le_bytes()
            } else {
                u.to_be_bytes()
            });
        }
        return Ok(out);
    }
    let mut at = if source.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let rest = &source[at..];
    if rest.starts_with(b"<?xml") && rest.get(5).is_some_and(|b| b.is_ascii_whitespace()) {
        let end = rest
            .windows(2)
            .position(|w| w == b"?>")
            .ok_or("unterminated XML declaration")?;
        at += end + 2;
    }
    let mut out = Vec::with_capacity(source.len() + pi.len() + 1);
    out.extend_from_slice(&source[..at]);
    if at > 0 {
        out.push(b'\n');
    }
    out.extend_from_slice(pi.as_bytes());
    if at == 0 {
        out.push(b'\n');
    }
    out.extend_from_slice(&source[at..]);
    Ok(out)
}

/// The first `<?xml-stylesheet?>` PI of a document (a plain byte search:
/// the chosen `(pi)` documents are ASCII-compatible).
pub(super) fn first_stylesheet_pi(bytes: &[u8]) -> Option<StylesheetPi> {
    let marker = b"<?xml-stylesheet";
    let start = bytes.windows(marker.len()).position(|w| w == marker)? + marker.len();
    let len = bytes[start..].windows(2).position(|w| w == b"?>")?;
    let data = String::from_utf8_lossy(&bytes[start..start + len]);
    axle::prolog::parse_stylesheet_pi(data.trim())
}

/// `href` of `to` relative to the folder of `from` (both suite-relative),
/// percent-encoded per segment.
pub fn relative_href(from: &str, to: &str) -> String {
    let mut from_dir: Vec<&str> = from.split('/').collect();
    from_dir.pop();
    let to_parts: Vec<&str> = to.split('/').collect();
    let common = from_dir
        .iter()
        .zip(to_parts.iter())
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<String> = vec!["..".to_string(); from_dir.len() - common];
    parts.extend(
        to_parts[common..]
            .iter()
            .map(|s| url_path(s).trim_start_matches('/').to_string()),
    );
    parts.join("/")
}

/// The `xsl:output` settings that decide a Content-Type.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OutputDecl {
    /// `method`.
    pub method: Option<String>,
    /// `media-type`.
    pub media_type: Option<String>,
    /// `encoding`.
    pub encoding: Option<String>,
}

const XSL_NS: &str = "http://www.w3.org/1999/XSL/Transform";

/// The effective `xsl:output` of the stylesheet element `sheet` in `file`:
/// its imports first (in order: a later import has higher precedence), then
/// its own `xsl:output` elements and includes in document order, later
/// attributes overriding earlier ones.
fn output_of_element(
    sheet: roxmltree::Node<'_, '_>,
    file: &Path,
    depth: usize,
) -> Result<OutputDecl, String> {
    if depth > 20 {
        return Err(format!("imports nest too deeply at {}", file.display()));
    }
    let mut decl = OutputDecl::default();
    let merge = |into: &mut OutputDecl, from: OutputDecl| {
        if from.method.is_some() {
            into.method = from.method;
        }
        if from.media_type.is_some() {
            into.media_type = from.media_type;
        }
        if from.encoding.is_some() {
            into.encoding = from.encoding;
        }
    };
    let is_xsl = |n: &roxmltree::Node<'_, '_>, name: &str| {
        n.is_element() && n.tag_name().namespace() == Some(XSL_NS) && n.tag_name().name() == name
    };
    if !(is_xsl(&sheet, "stylesheet") || is_xsl(&sheet, "transform")) {
        return Ok(decl); // a literal result element as stylesheet
    }
    for child in sheet.children().filter(|c| is_xsl(c, "import")) {
        let href = child.attribute("href").unwrap_or("");
        merge(
            &mut decl,
            output_of_file(&file.with_file_name("").join(href), depth + 1)?,
        );
    }
    for child in sheet.children() {
        if is_xsl(&child, "output") {
            merge(
                &mut decl,
                OutputDecl {
                    method: child.attribute("method").map(str::to_string),
                    media_type: child.attribute("media-type").map(str::to_string),
                    encoding: child.attribute("encoding").map(str::to_string),
                },
            );
        } else if is_xsl(&child, "include") {
            let href = child.attribute("href").unwrap_or("");
            merge(
                &mut decl,
                output_of_file(&file.with_file_name("").join(href), depth + 1)?,
            );
        }
    }
    Ok(decl)
}

fn parse_file(file: &Path) -> Result<String, String> {
    let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    // Other encodings (windows-1251, ...): every byte as one character, which
    // keeps the ASCII markup and xsl:output attributes intact.
    Ok(xmlcompare::decode_for_parse(&bytes)
        .unwrap_or_else(|| bytes.iter().map(|&b| char::from(b)).collect()))
}

fn output_of_file(file: &Path, depth: usize) -> Result<OutputDecl, String> {
    let text = parse_file(file)?;
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&text, options)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    output_of_element(doc.root_element(), file, depth)
}

/// The stylesheet's effective `xsl:output`; `fragment` names an embedded
/// stylesheet by ID.
pub fn output_decl(file: &Path, fragment: Option<&str>) -> Result<OutputDecl, String> {
    let Some(id) = fragment else {
        return output_of_file(file, 0);
    };
    let text = parse_file(file)?;
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&text, options)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let sheet = doc
        .descendants()
        .find(|n| n.is_element() && n.attribute("id") == Some(id))
        .ok_or_else(|| format!("{}: no element with id {id}", file.display()))?;
    output_of_element(sheet, file, 0)
}

/// The Content-Type Axle documents for a final XSLT stage: `media-type`,
/// else by `method` (`text` → text/plain, `xml` → text/xml, otherwise
/// text/html), with `charset` from `encoding`, else UTF-8.
pub fn expected_content_type(decl: &OutputDecl) -> String {
    let mime = match (&decl.media_type, decl.method.as_deref()) {
        (Some(m), _) => m.as_str(),
        (None, Some("text")) => "text/plain",
        (None, Some("xml")) => "text/xml",
        _ => "text/html",
    };
    format!(
        "{mime}; charset={}",
        decl.encoding.as_deref().unwrap_or("UTF-8")
    )
}
