//! `?passthru=1` (AxKit's passthru): the untransformed source, exactly as
//! stored. It exists apart from rendering because what it sends depends on
//! who asks: an XML client gets `text/xml`, while a browser would apply the
//! source's `<?xml-stylesheet?>` PIs itself and show a page, not the source,
//! so a browser gets the same bytes as `text/plain` in the source's own
//! encoding.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;

use crate::pipeline::{CacheStatus, RAW_XML_TYPE, Rendered};
use crate::provider::Source;
use crate::site::Location;

/// Whether the request asks for the untransformed source (`?passthru=1`
/// where the location allows it).
pub(super) fn wants_passthru(location: &Location, query: &[(String, String)]) -> bool {
    location.passthru
        && query
            .iter()
            .any(|(k, v)| k == "passthru" && v != "0" && !v.is_empty())
}

/// May `source` be shown untransformed here? Always where a section of
/// the location sets `passthru` itself; otherwise not for an XSP page (a
/// PI or a processor of `application/x-xsp`), whose source is its logic
/// and its SQL (issue #36 row 8): `?passthru=1` then renders the page.
/// A source the prolog scanner cannot read is looked at as bytes.
pub(super) fn shows(location: &Location, source: &Source) -> bool {
    use crate::language::xsp::XSP_TYPE;
    if location.passthru_set {
        return true;
    }
    let is_xsp = |t: &str| {
        t.split(';')
            .next()
            .is_some_and(|t| t.trim().eq_ignore_ascii_case(XSP_TYPE))
    };
    if location.processors.iter().any(|p| is_xsp(&p.pi.r#type)) {
        return false;
    }
    match crate::prolog::scan(&source.bytes) {
        Ok(prolog) => !prolog.stylesheets.iter().any(|pi| is_xsp(&pi.r#type)),
        Err(_) => !source
            .bytes
            .windows(XSP_TYPE.len())
            .any(|w| w.eq_ignore_ascii_case(XSP_TYPE.as_bytes())),
    }
}

/// The passthru response for `source`: never transcoded, never cached,
/// `Vary: Accept` since the Content-Type depends on it.
pub(super) async fn response(
    app: &super::App,
    source: Source,
    request_headers: &HeaderMap,
    location: &Location,
) -> Response {
    let content_type = if prefers_html(request_headers) {
        format!("text/plain; charset={}", declared_encoding(&source.bytes))
    } else {
        RAW_XML_TYPE.to_string()
    };
    untransformed(
        app,
        source.bytes,
        source.hash,
        &content_type,
        request_headers,
        location,
    )
    .await
}

/// A source sent as it is stored (`?passthru=1`, or a negotiated source):
/// `bytes` as `content_type`, ETag from `tag`, never transcoded nor
/// cached, `Vary: Accept` (its type depends on it) and no sniffing.
pub(super) async fn untransformed(
    app: &super::App,
    bytes: bytes::Bytes,
    tag: crate::cache::ContentHash,
    content_type: &str,
    request_headers: &HeaderMap,
    location: &Location,
) -> Response {
    let rendered = Rendered::new(
        bytes,
        tag,
        Arc::from(content_type),
        CacheStatus::Untransformed,
    );
    let mut untranscoded = location.clone();
    untranscoded.output_charset = None;
    let mut response =
        super::document_response(app, rendered, request_headers, &untranscoded).await;
    let headers = response.headers_mut();
    if !location.negotiate {
        // A negotiating location's responses say it already.
        headers.append(header::VARY, HeaderValue::from_static("accept"));
    }
    // Without this a browser may sniff the text back into XML.
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Whether the client asks for HTML, as a browser navigating does
/// (`Accept: text/html,...`); XML tools and `curl` do not.
fn prefers_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let media = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
            });
            media.eq_ignore_ascii_case("text/html") && !refused
        })
}

/// The charset a document's bytes are in: a UTF-16 byte-order mark, else
/// the XML declaration's `encoding`, else UTF-8 (XML's default). Only a
/// name of token characters is taken, so it is always a valid header value.
fn declared_encoding(bytes: &[u8]) -> String {
    if bytes.starts_with(&[0xFE, 0xFF]) || bytes.starts_with(&[0xFF, 0xFE]) {
        return "UTF-16".to_string();
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let Some(rest) = bytes.strip_prefix(b"<?xml") else {
        return "UTF-8".to_string();
    };
    let end = rest
        .windows(2)
        .position(|w| w == b"?>")
        .unwrap_or(rest.len().min(256));
    let decl = String::from_utf8_lossy(&rest[..end]);
    let encoding = decl.split_once("encoding").and_then(|(_, after)| {
        let after = after.trim_start().strip_prefix('=')?.trim_start();
        let quote = after.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let value = &after[1..];
        let value = &value[..value.find(quote)?];
        let token = !value.is_empty()
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
        token.then(|| value.to_string())
    });
    encoding.unwrap_or_else(|| "UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_encoding_is_read_from_the_declaration() {
        for (doc, want) in [
            (
                &b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>"[..],
                "ISO-8859-1",
            ),
            (
                b"<?xml version='1.0' encoding = 'windows-1252' ?><a/>",
                "windows-1252",
            ),
            (
                b"\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><a/>",
                "utf-8",
            ),
            (b"<?xml version=\"1.0\"?><a/>", "UTF-8"),
            (b"<a/>", "UTF-8"),
            (b"\xFF\xFE<\0a\0/\0>\0", "UTF-16"),
            (b"<?xml version=\"1.0\" encoding=\"bad\r\nx\"?>", "UTF-8"),
            (b"<?xml version=\"1.0\" encoding=\"unterminated", "UTF-8"),
            (b"<?xml encoding=\"\"?>", "UTF-8"),
        ] {
            assert_eq!(
                declared_encoding(doc),
                want,
                "{}",
                String::from_utf8_lossy(doc)
            );
        }
    }

    #[test]
    fn browsers_prefer_html_and_xml_clients_do_not() {
        let with = |accept: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
            prefers_html(&h)
        };
        assert!(with(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        ));
        assert!(with("TEXT/HTML"));
        assert!(!with("*/*"));
        assert!(!with("application/xml, text/xml"));
        assert!(!with("text/html;q=0, */*"));
        assert!(!prefers_html(&HeaderMap::new()));
    }
}
