//! An application's STDOUT as a CGI response (RFC 3875 §6): header lines
//! (`Status:`, `Content-Type:`, others), an empty line, the body. Pure and
//! fuzzed with the record layer (`fastcgi_response`).

/// The parts of a CGI response Axle reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgiResponse {
    /// The `Status:` header's code (200 without one).
    pub status: u16,
    /// The `Content-Type:` header's value, when there is one.
    pub content_type: Option<String>,
    /// The `Location:` header's value, when there is one.
    pub location: Option<String>,
    /// Where the body starts in the STDOUT bytes.
    pub body_start: usize,
}

/// Why STDOUT is not a CGI response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CgiError {
    /// No empty line ends the header block.
    #[error("its answer has no header block (no empty line after the headers)")]
    NoHeaders,
    /// A header line without `:` or not text.
    #[error("its answer has a malformed header line")]
    BadHeader,
    /// A `Status:` that is not a three-digit code from 100 to 599.
    #[error("its answer has an invalid Status header {0:?}")]
    BadStatus(String),
}

/// The most header bytes read before the empty line.
pub const MAX_HEADER_BLOCK: usize = 64 * 1024;

/// Reads the header block of `stdout`.
pub fn parse(stdout: &[u8]) -> Result<CgiResponse, CgiError> {
    let window = &stdout[..stdout.len().min(MAX_HEADER_BLOCK)];
    let mut at = 0;
    let mut response = CgiResponse {
        status: 200,
        content_type: None,
        location: None,
        body_start: 0,
    };
    loop {
        let Some(nl) = window[at..].iter().position(|&b| b == b'\n') else {
            return Err(CgiError::NoHeaders);
        };
        let line = &window[at..at + nl];
        at += nl + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            response.body_start = at;
            return Ok(response);
        }
        let line = std::str::from_utf8(line).map_err(|_| CgiError::BadHeader)?;
        let (name, value) = line.split_once(':').ok_or(CgiError::BadHeader)?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_ascii_whitespace().next().unwrap_or("");
            response.status = match code.parse::<u16>() {
                Ok(c) if code.len() == 3 && (100..600).contains(&c) => c,
                _ => return Err(CgiError::BadStatus(value.chars().take(40).collect())),
            };
        } else if name.eq_ignore_ascii_case("content-type") {
            response.content_type = Some(value.to_string());
        } else if name.eq_ignore_ascii_case("location") {
            response.location = Some(value.to_string());
        }
    }
}

/// Is `content_type` a type an XML parser may read: an XML media type
/// (`text/xml`, `application/xml`, `…+xml`), or `text/html`, which PHP
/// sends for every script that sets no type (the body then decides)?
pub fn may_be_xml(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "text/xml" | "application/xml" | "text/html"
    ) || essence.ends_with("+xml")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_type_and_body_are_read() {
        let out = b"X-Powered-By: PHP\r\nStatus: 404 Not Found\r\nContent-type: text/xml; charset=UTF-8\r\n\r\n<a/>";
        let r = parse(out).unwrap();
        assert_eq!(r.status, 404);
        assert_eq!(r.content_type.as_deref(), Some("text/xml; charset=UTF-8"));
        assert_eq!(&out[r.body_start..], b"<a/>");
        let r = parse(b"Content-Type: text/xml\n\n<b/>").unwrap();
        assert_eq!((r.status, r.body_start), (200, 24));
    }

    #[test]
    fn broken_header_blocks_are_refused() {
        assert_eq!(parse(b"<a/>"), Err(CgiError::NoHeaders));
        assert_eq!(parse(b"no colon\n\n"), Err(CgiError::BadHeader));
        assert!(matches!(
            parse(b"Status: 99\n\n"),
            Err(CgiError::BadStatus(_))
        ));
        assert!(matches!(
            parse(b"Status: abc\n\n"),
            Err(CgiError::BadStatus(_))
        ));
        let mut huge = vec![b'a'; MAX_HEADER_BLOCK + 10];
        huge.extend_from_slice(b": b\n\n");
        assert_eq!(parse(&huge), Err(CgiError::NoHeaders));
    }

    #[test]
    fn xml_types_and_php_s_default_may_be_parsed() {
        for t in [
            "text/xml",
            "application/xml; charset=utf-8",
            "application/atom+xml",
            "text/html; charset=UTF-8",
        ] {
            assert!(may_be_xml(t), "{t}");
        }
        for t in ["application/json", "text/plain", "image/png"] {
            assert!(!may_be_xml(t), "{t}");
        }
    }
}
