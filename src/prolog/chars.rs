//! The character level of the prolog scanner: which bytes are white
//! space, name characters, XML characters and public-ID characters; the
//! encoding signatures the scanner refuses; and the small byte searches
//! the rest of the scanner is built from.

use super::ScanError;

/// Refuse input that is visibly not in an 8-bit encoding compatible with
/// ASCII (byte order marks and the `<` / `<?` patterns of UTF-16 and UTF-32,
/// EBCDIC's `<?xm`).
pub(super) fn check_signature(bytes: &[u8]) -> Result<(), ScanError> {
    if bytes.starts_with(b"\xFE\xFF") || bytes.starts_with(b"\xFF\xFE") {
        return Err(ScanError::Unsupported("a UTF-16 or UTF-32 byte order mark"));
    }
    // No XML document in an ASCII-compatible encoding has a NUL byte, and
    // UTF-16/UTF-32 text always has one in its first four bytes.
    if bytes.iter().take(4).any(|&b| b == 0) {
        return Err(ScanError::Unsupported("UTF-16 or UTF-32 input"));
    }
    if bytes.starts_with(b"\x4C\x6F\xA7\x94") {
        return Err(ScanError::Unsupported("EBCDIC input"));
    }
    Ok(())
}

/// The position of the first byte below 0x20 that is not white space (such
/// characters are not allowed in XML 1.0).
pub(super) fn first_control_char(bytes: &[u8]) -> Option<usize> {
    let control = |b: u8| b < 0x20 && !is_ws(b);
    // A test without early exit per chunk vectorizes; most input has none.
    let clean = bytes
        .chunks(64)
        .all(|chunk| !chunk.iter().fold(false, |found, &b| found | control(b)));
    if clean {
        None
    } else {
        bytes.iter().position(|&b| control(b))
    }
}

pub(super) fn is_utf8_name(encoding: &str) -> bool {
    encoding.eq_ignore_ascii_case("UTF-8") || encoding.eq_ignore_ascii_case("UTF8")
}

pub(super) fn is_ascii_name(encoding: &str) -> bool {
    encoding.eq_ignore_ascii_case("US-ASCII") || encoding.eq_ignore_ascii_case("ASCII")
}

/// XML white space.
pub(super) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// A byte that may start an XML name (any non-ASCII byte is accepted).
pub(super) fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':' || b >= 0x80
}

/// A byte that may continue an XML name.
pub(super) fn is_name_byte(b: u8) -> bool {
    is_name_start(b) || b.is_ascii_digit() || b == b'-' || b == b'.'
}

/// The length of the XML name at the start of `bytes` (0 when there is none).
pub(super) fn name_len(bytes: &[u8]) -> usize {
    match bytes.first() {
        Some(&b) if is_name_start(b) => bytes.iter().take_while(|&&b| is_name_byte(b)).count(),
        _ => 0,
    }
}

/// Whether all of `s` is one XML name.
pub(super) fn is_name(s: &str) -> bool {
    !s.is_empty() && name_len(s.as_bytes()) == s.len()
}

/// A character allowed by XML 1.0's `Char` production.
pub(super) fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// A character allowed in a public identifier.
pub(super) fn is_pubid_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" \r\n-'()+,./:=?;!*#@$_%".contains(&b)
}

/// The first occurrence of `pat` (which must not be empty) in `hay`.
pub(super) fn find_bytes(hay: &[u8], pat: &[u8]) -> Option<usize> {
    let (&first, tail) = pat.split_first()?;
    let mut from = 0;
    loop {
        let at = from + hay.get(from..)?.iter().position(|&b| b == first)?;
        if hay.get(at + 1..)?.starts_with(tail) {
            return Some(at);
        }
        from = at + 1;
    }
}

/// Where `byte` next occurs in `bytes`, from `from` on.
pub(super) fn next_byte(bytes: &[u8], from: usize, byte: u8) -> Option<usize> {
    let at = bytes.get(from..)?.iter().position(|&b| b == byte)?;
    Some(from + at)
}

/// The end of the white space that starts at `from` in `bytes`.
pub(super) fn skip_ws_from(bytes: &[u8], from: usize) -> usize {
    from + bytes
        .get(from..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&b| is_ws(b))
        .count()
}
