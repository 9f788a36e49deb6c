//! The `post` source: the request body is the document. Only XML media
//! types are taken (`*/xml`, `*+xml`; else 415), a gzip-encoded body is
//! decoded (the limit holds for the decoded size too, so a small bomb is
//! 413), and the body must be in an encoding Axle reads as libxml2 does
//! (UTF-8, UTF-16 with its byte-order mark, or a declared encoding that
//! keeps ASCII as ASCII; else 400). Whether it is well-formed, standalone
//! and within the posted-document limits is the one libxml2 parse's to
//! say (`ffi::XmlDoc::parse_untrusted`, run by the pipeline for a
//! client's document): there is no second parser here with other rules.

use bytes::Bytes;
use http::{Method, header};

use super::{BoxFuture, DynamicProvider, Produced, SourceError, SourceRequest};

/// How a `post` source is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostConfig {
    /// The largest body taken, after decoding (`max-body`, default 1 MiB).
    pub max_body: u64,
}

impl Default for PostConfig {
    fn default() -> Self {
        PostConfig {
            max_body: 1024 * 1024,
        }
    }
}

/// The request body as the source document (POST only).
#[derive(Debug, Clone)]
pub struct PostSource {
    config: PostConfig,
}

impl PostSource {
    /// A `post` source with `config`.
    pub fn new(config: PostConfig) -> PostSource {
        PostSource { config }
    }
}

impl DynamicProvider for PostSource {
    fn describe(&self) -> String {
        "post".to_string()
    }

    fn body_limit(&self, method: &Method) -> Result<Option<u64>, SourceError> {
        if method == Method::POST {
            Ok(Some(self.config.max_body))
        } else {
            Err(SourceError::Method { allowed: "POST" })
        }
    }

    fn produce<'a>(
        &'a self,
        request: &'a SourceRequest,
    ) -> BoxFuture<'a, Result<Produced, SourceError>> {
        Box::pin(async move {
            let body = request.body.clone().unwrap_or_default();
            let headers = request.headers.clone();
            let max = self.config.max_body;
            // Decoding and parsing a body of up to max-body bytes is a few
            // milliseconds of CPU: off the connection threads, which serve
            // hits meanwhile.
            let bytes = tokio::task::spawn_blocking(move || document(&headers, body, max))
                .await
                .map_err(|e| SourceError::Failed(format!("the body check failed: {e}")))??;
            Ok(Produced {
                bytes,
                cacheable: false,
                status: None,
            })
        })
    }
}

/// The document a POST carries: its type checked, decoded, and its
/// encoding checked (see the module's comment for what the parse checks).
pub fn document(headers: &http::HeaderMap, body: Bytes, max: u64) -> Result<Bytes, SourceError> {
    check_type(headers.get(header::CONTENT_TYPE))?;
    let bytes = decode(headers.get(header::CONTENT_ENCODING), body, max)?;
    text_of(&bytes)?;
    Ok(bytes)
}

/// Is the Content-Type an XML media type (`*/xml` or `*/*+xml`)?
fn check_type(value: Option<&http::HeaderValue>) -> Result<(), SourceError> {
    let Some(value) = value else {
        return Err(SourceError::UnsupportedType(
            "the request has no Content-Type: send the document as application/xml (or another */xml or */*+xml type)".into(),
        ));
    };
    let text = value.to_str().unwrap_or("");
    let essence = text
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let xml = essence
        .split_once('/')
        .is_some_and(|(top, sub)| !top.is_empty() && (sub == "xml" || sub.ends_with("+xml")));
    if xml {
        Ok(())
    } else {
        Err(SourceError::UnsupportedType(format!(
            "{essence:?} is not an XML media type: send the document as application/xml (or another */xml or */*+xml type)"
        )))
    }
}

/// The body without its content coding: identity or gzip (decoded up to
/// `max` bytes; more is 413).
fn decode(coding: Option<&http::HeaderValue>, body: Bytes, max: u64) -> Result<Bytes, SourceError> {
    let coding = coding
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    match coding.as_str() {
        "" | "identity" => Ok(body),
        "gzip" | "x-gzip" => {
            use std::io::Read;
            let mut out = Vec::new();
            let mut decoder = flate2::read::GzDecoder::new(&body[..]).take(max + 1);
            decoder.read_to_end(&mut out).map_err(|e| {
                SourceError::BadRequest(format!(
                    "the gzip-encoded request body cannot be decoded: {e}"
                ))
            })?;
            if out.len() as u64 > max {
                return Err(SourceError::TooLarge(format!(
                    "the request body decodes to more than max-body ({max} bytes)"
                )));
            }
            Ok(Bytes::from(out))
        }
        other => Err(SourceError::UnsupportedType(format!(
            "the content coding {other:?} is not supported (send identity or gzip)"
        ))),
    }
}

/// The body as text for the check, read as libxml2 will read it when a
/// stage parses it: by its byte-order mark (UTF-8 or UTF-16; an encoding
/// its XML declaration names must then be the same), else by the encoding
/// its XML declaration names (one that keeps ASCII as ASCII, or UTF-8),
/// else as UTF-8. The check must see the characters libxml2 will: valid
/// UTF-8 bytes declared as UTF-7 are other markup to libxml2 (`+ADw-` is
/// `<`), so an encoding Axle cannot decode is refused, not guessed.
fn text_of(bytes: &[u8]) -> Result<std::borrow::Cow<'_, str>, SourceError> {
    use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};
    let invalid = |encoding: &'static Encoding| {
        SourceError::BadRequest(format!("the request body is not valid {}", encoding.name()))
    };
    let unsupported = |label: &str, why: &str| {
        SourceError::BadRequest(format!(
            "the request body's XML declaration names the encoding {label:?}, {why}: send UTF-8"
        ))
    };
    if let Some((encoding, bom)) = Encoding::for_bom(bytes) {
        let text = encoding
            .decode_without_bom_handling_and_without_replacement(&bytes[bom..])
            .ok_or_else(|| invalid(encoding))?;
        if let Some(label) = declared_encoding(text.as_bytes()) {
            let named = Encoding::for_label(label.as_bytes());
            let utf16 = encoding == UTF_16LE || encoding == UTF_16BE;
            let agrees = named == Some(encoding)
                || (utf16
                    && (label.eq_ignore_ascii_case("utf-16")
                        || label.eq_ignore_ascii_case("utf16")));
            if !agrees {
                return Err(unsupported(
                    label,
                    &format!("but it starts with a {} byte-order mark", encoding.name()),
                ));
            }
        }
        return Ok(text);
    }
    let encoding = match declared_encoding(bytes) {
        None => UTF_8,
        Some(label) => match Encoding::for_label(label.as_bytes()) {
            None => return Err(unsupported(label, "which Axle cannot read")),
            Some(e) if e == UTF_16LE || e == UTF_16BE => {
                return Err(unsupported(label, "but it has no byte-order mark"));
            }
            Some(e) if !e.is_ascii_compatible() => {
                return Err(unsupported(label, "which does not keep ASCII as ASCII"));
            }
            Some(e) => e,
        },
    };
    match encoding.decode_without_bom_handling_and_without_replacement(bytes) {
        Some(text) => Ok(text),
        None if encoding == UTF_8 => Err(SourceError::BadRequest(
            "the request body is not UTF-8 and its XML declaration names no other encoding".into(),
        )),
        None => Err(invalid(encoding)),
    }
}

/// The `encoding` pseudo-attribute of an XML declaration at the very start
/// (`<?xml` and white space, up to the first `?>`), however long it is.
fn declared_encoding(bytes: &[u8]) -> Option<&str> {
    let rest = bytes.strip_prefix(b"<?xml")?;
    if !matches!(rest.first(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        return None;
    }
    let end = rest.windows(2).position(|w| w == b"?>")?;
    let decl = std::str::from_utf8(&rest[..end]).ok()?;
    let at = decl.find("encoding")?;
    let value = decl[at + "encoding".len()..]
        .trim_start()
        .strip_prefix('=')?
        .trim_start();
    let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let value = &value[1..];
    Some(&value[..value.find(quote)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};

    fn headers(content_type: Option<&str>, encoding: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(t) = content_type {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_str(t).unwrap());
        }
        if let Some(e) = encoding {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_str(e).unwrap());
        }
        h
    }

    fn gzip(bytes: &[u8]) -> Bytes {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        Bytes::from(e.finish().unwrap())
    }

    #[test]
    fn xml_types_are_taken_and_others_refused() {
        let doc = Bytes::from_static(b"<a/>");
        for t in [
            "application/xml",
            "text/xml; charset=utf-8",
            "application/atom+xml",
            "Application/TEI+XML",
        ] {
            assert!(
                document(&headers(Some(t), None), doc.clone(), 100).is_ok(),
                "{t}"
            );
        }
        for t in [
            None,
            Some("text/plain"),
            Some("application/json"),
            Some("xml"),
            Some("application/xmlx"),
        ] {
            let e = document(&headers(t, None), doc.clone(), 100).unwrap_err();
            assert_eq!(e.status(), 415, "{t:?}: {e}");
        }
    }

    #[test]
    fn structure_is_left_to_the_one_parse() {
        // Well-formedness, DTDs and entities are the libxml2 parse's to
        // judge (ffi::untrusted, tests/it/post_attacks.rs): this check
        // takes any body of an XML type in a readable encoding.
        for body in [
            &b"<a>\n  <b></c>\n</a>"[..],
            b"<!DOCTYPE a SYSTEM \"x.dtd\"><a/>",
        ] {
            let out = document(
                &headers(Some("application/xml"), None),
                Bytes::copy_from_slice(body),
                1000,
            );
            assert_eq!(out.unwrap(), Bytes::copy_from_slice(body));
        }
    }

    #[test]
    fn gzip_bodies_are_decoded_within_the_limit() {
        let doc = b"<a>hello</a>";
        let out = document(
            &headers(Some("application/xml"), Some("gzip")),
            gzip(doc),
            100,
        )
        .unwrap();
        assert_eq!(&out[..], doc);
        // A bomb: small on the wire, past the limit decoded.
        let big = format!("<a>{}</a>", "x".repeat(10_000));
        let e = document(
            &headers(Some("application/xml"), Some("gzip")),
            gzip(big.as_bytes()),
            1000,
        )
        .unwrap_err();
        assert_eq!(e.status(), 413, "{e}");
        let e = document(
            &headers(Some("application/xml"), Some("gzip")),
            Bytes::from_static(b"not gzip"),
            1000,
        )
        .unwrap_err();
        assert_eq!(e.status(), 400, "{e}");
        let e = document(
            &headers(Some("application/xml"), Some("br")),
            Bytes::from_static(doc),
            1000,
        )
        .unwrap_err();
        assert_eq!(e.status(), 415, "{e}");
    }

    #[test]
    fn declared_encodings_are_read_for_the_check() {
        let latin1 = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a>caf\xe9</a>";
        assert!(
            document(
                &headers(Some("text/xml"), None),
                Bytes::from_static(latin1),
                100
            )
            .is_ok()
        );
        let undeclared = b"<a>caf\xe9</a>";
        let e = document(
            &headers(Some("text/xml"), None),
            Bytes::from_static(undeclared),
            100,
        )
        .unwrap_err();
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn encodings_are_read_as_libxml2_reads_them() {
        let check = |body: &[u8]| {
            document(
                &headers(Some("application/xml"), None),
                Bytes::copy_from_slice(body),
                1000,
            )
        };
        // Found by the post_body (now post_document) fuzz target's seeds: valid UTF-8, so the
        // check read it as UTF-8 and saw a comment, while libxml2 decodes
        // UTF-7 and saw <!DOCTYPE a SYSTEM "x.dtd"> (and loaded x.dtd).
        let utf7 = b"<?xml version=\"1.0\" encoding=\"UTF-7\"?><!--+AC0-+AC0-+AD4-+ADw-+ACE-DOCTYPE a SYSTEM +ACI-x.dtd+ACI-+AD4-+ADw-+ACE-+AC0-+AC0--><a/>";
        let mut long = b"<?xml version=\"1.0\"".to_vec();
        long.extend_from_slice(&[b' '; 300]);
        long.extend_from_slice(b"encoding=\"UTF-7\"?><a/>");
        for (body, says) in [
            (&utf7[..], "UTF-7"),
            // The encoding named past the first 200 bytes was not read.
            (&long[..], "UTF-7"),
            (
                b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"UTF-7\"?><a/>",
                "byte-order mark",
            ),
            (
                b"<?xml version=\"1.0\" encoding=\"UTF-16\"?><a/>",
                "no byte-order mark",
            ),
            (
                b"<?xml version=\"1.0\" encoding=\"ISO-2022-JP\"?><a/>",
                "ASCII",
            ),
            (
                b"<?xml version=\"1.0\" encoding=\"IBM037\"?><a/>",
                "cannot read",
            ),
            (
                b"<?xml version=\"1.0\" encoding=\"Shift_JIS\"?><a>\x81</a>",
                "Shift_JIS",
            ),
        ] {
            let e = check(body).unwrap_err();
            assert_eq!(e.status(), 400, "{e}");
            assert!(e.to_string().contains(says), "{e}");
        }
        let mut utf16 = vec![0xFF, 0xFE];
        for unit in "<?xml version=\"1.0\" encoding=\"UTF-16\"?><a>\u{e9}</a>".encode_utf16() {
            utf16.extend_from_slice(&unit.to_le_bytes());
        }
        for body in [
            &utf16[..],
            b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"utf-8\"?><a/>",
            b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a>caf\xc3\xa9</a>",
            b"<?xml version=\"1.0\" encoding=\"Shift_JIS\"?><a>\x83\x65</a>",
            b"<?xml-stylesheet href=\"s.xsl\" encoding=\"UTF-7\"?><a/>",
        ] {
            let out = check(body);
            assert!(out.is_ok(), "{:?}: {out:?}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn only_post_reads_a_body() {
        let post = PostSource::new(PostConfig { max_body: 7 });
        assert_eq!(post.body_limit(&Method::POST), Ok(Some(7)));
        assert_eq!(post.body_limit(&Method::GET).unwrap_err().status(), 405);
    }
}
