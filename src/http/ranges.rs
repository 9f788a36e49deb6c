//! The rules of RFC 9110 that tower-http's `ServeFile` does not follow for
//! static files, applied to the request before it reaches `ServeFile`:
//!
//! - `Range` is defined for GET only (§14.2): ignored for any other method.
//! - A `Range` in another unit than `bytes`, with several ranges, or that
//!   is not valid syntax is ignored (§14.2: a server may ignore it), so
//!   the whole file is served with 200 (`ServeFile` answers 416, and it
//!   serves no multipart ranges).
//! - A failed `If-Range` (§13.1.5) means the whole file, 200: its
//!   validator must be a date equal to the file's `Last-Modified` (static
//!   files have no entity tag, so a tag never matches).
//! - `If-None-Match: *` on an existing file is 304 for GET and HEAD
//!   (§13.1.2), and with any `If-None-Match` the `If-Modified-Since` field
//!   is ignored (§13.1.3).
//!
//! What stays with `ServeFile`: one satisfiable bytes range (206 with
//! `Content-Range`), one unsatisfiable (416 with `Content-Range: bytes
//! */LEN`), `If-Modified-Since` and `If-Unmodified-Since`.

use std::time::SystemTime;

use axum::http::{HeaderMap, Method, header};

/// What to do with a static file request.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Static {
    /// Answer 304 Not Modified.
    NotModified,
    /// Hand the request to `ServeFile` (with its headers adjusted).
    Serve,
}

/// Applies the rules above to `headers` of a `method` request for a file
/// last modified at `modified`: drops a `Range` that is to be ignored and
/// an `If-Modified-Since` that is to be ignored, or says to answer 304.
pub(super) fn prepare(
    method: &Method,
    headers: &mut HeaderMap,
    modified: Option<SystemTime>,
) -> Static {
    if let Some(tags) = headers.get(header::IF_NONE_MATCH) {
        let any = tags.as_bytes().trim_ascii() == b"*";
        if any && (method == Method::GET || method == Method::HEAD) {
            return Static::NotModified;
        }
        headers.remove(header::IF_MODIFIED_SINCE);
    }
    let keep = method == Method::GET
        && headers
            .get(header::RANGE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(one_bytes_range)
        && headers.get(header::IF_RANGE).is_none_or(|v| {
            v.to_str()
                .ok()
                .is_some_and(|v| if_range_matches(v, modified))
        });
    if !keep {
        headers.remove(header::RANGE);
    }
    headers.remove(header::IF_RANGE);
    Static::Serve
}

/// Whether `range` is one range in bytes, in valid syntax
/// (`bytes=first-last`, `bytes=first-`, `bytes=-suffix`; RFC 9110 §14.1.2).
fn one_bytes_range(range: &str) -> bool {
    let Some((unit, set)) = range.split_once('=') else {
        return false;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") || set.contains(',') {
        return false;
    }
    let Some((first, last)) = set.trim().split_once('-') else {
        return false;
    };
    let number = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u64>().ok())
    };
    match (first.is_empty(), last.is_empty()) {
        (true, true) => false,
        (true, false) => number(last).is_some_and(|n| n.is_some()),
        (false, true) => number(first).is_some_and(|n| n.is_some()),
        (false, false) => match (number(first), number(last)) {
            (Some(Some(a)), Some(Some(b))) => a <= b,
            _ => false,
        },
    }
}

/// Whether an `If-Range` validator matches the file: a date equal to its
/// `Last-Modified` (an entity tag never does: static files have none).
fn if_range_matches(validator: &str, modified: Option<SystemTime>) -> bool {
    let (Ok(date), Some(modified)) = (httpdate::parse_http_date(validator.trim()), modified) else {
        return false;
    };
    httpdate::HttpDate::from(date) == httpdate::HttpDate::from(modified)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use std::time::{Duration, UNIX_EPOCH};

    fn headers(fields: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in fields {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    const MODIFIED: &str = "Sun, 06 Nov 1994 08:49:37 GMT";

    fn modified() -> Option<SystemTime> {
        Some(UNIX_EPOCH + Duration::from_secs(784_111_777))
    }

    /// Whether the Range survives.
    fn kept(method: Method, fields: &[(&'static str, &str)]) -> bool {
        let mut h = headers(fields);
        assert_eq!(prepare(&method, &mut h, modified()), Static::Serve);
        assert!(h.get(header::IF_RANGE).is_none());
        h.contains_key(header::RANGE)
    }

    #[test]
    fn only_one_valid_bytes_range_on_a_get_is_kept() {
        for ok in [
            "bytes=0-9",
            "bytes=5-",
            "bytes=-3",
            "BYTES=0-0",
            "bytes= 1-2 ",
            "bytes=99-",
        ] {
            assert!(kept(Method::GET, &[("range", ok)]), "{ok}");
        }
        for ignored in [
            "bytes=0-1,3-4",
            "items=0-9",
            "bytes=",
            "bytes=-",
            "bytes=a-b",
            "bytes=5-2",
            "bytes=1-2-3",
            "0-9",
        ] {
            assert!(!kept(Method::GET, &[("range", ignored)]), "{ignored}");
        }
        assert!(!kept(Method::HEAD, &[("range", "bytes=0-9")]));
        assert!(!kept(Method::POST, &[("range", "bytes=0-9")]));
    }

    #[test]
    fn if_range_keeps_the_range_only_when_the_date_matches() {
        let r = ("range", "bytes=0-9");
        assert!(kept(Method::GET, &[r, ("if-range", MODIFIED)]));
        assert!(!kept(
            Method::GET,
            &[r, ("if-range", "Sun, 06 Nov 1994 08:49:38 GMT")]
        ));
        assert!(!kept(Method::GET, &[r, ("if-range", "\"some-tag\"")]));
        assert!(!kept(Method::GET, &[r, ("if-range", "garbage")]));
        let mut h = headers(&[r, ("if-range", MODIFIED)]);
        prepare(&Method::GET, &mut h, None);
        assert!(!h.contains_key(header::RANGE), "no date to compare with");
    }

    #[test]
    fn if_none_match_any_is_304_for_get_and_head_and_hides_if_modified_since() {
        for m in [Method::GET, Method::HEAD] {
            let mut h = headers(&[("if-none-match", "*")]);
            assert_eq!(prepare(&m, &mut h, modified()), Static::NotModified);
        }
        let mut h = headers(&[("if-none-match", "\"x\""), ("if-modified-since", MODIFIED)]);
        assert_eq!(prepare(&Method::GET, &mut h, modified()), Static::Serve);
        assert!(!h.contains_key(header::IF_MODIFIED_SINCE));
        let mut h = headers(&[("if-modified-since", MODIFIED)]);
        prepare(&Method::GET, &mut h, modified());
        assert!(h.contains_key(header::IF_MODIFIED_SINCE));
    }
}
