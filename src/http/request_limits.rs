//! The checks every request passes before the handler looks at it, on
//! both connection paths (Axle's own loop and hyper), so the same request
//! gets the same status whichever path it took: a missing or repeated
//! `Host` and an authority-form target (400, RFC 9112 §3.2 and §3.2.3), a
//! target or query past its limit (414), more header fields than allowed
//! (431), a declared body past its limit (413). Pure functions over the
//! request head; the body's own limits are in `params`.

use axum::extract::Request;
use axum::http::{Method, Version, header};

use super::HttpError;
use crate::config::HttpLimits;

/// Refuses a request whose head breaks a rule or a limit.
pub(super) fn check(request: &Request, limits: &HttpLimits) -> Result<(), HttpError> {
    let uri = request.uri();
    if uri.scheme().is_none() && uri.authority().is_some() && request.method() != Method::CONNECT {
        return Err(HttpError::BadRequest(format!(
            "the request target '{}' is in authority form, which only CONNECT uses",
            uri.authority().map_or("", |a| a.as_str())
        )));
    }
    let hosts = request.headers().get_all(header::HOST).iter().count();
    if hosts > 1 {
        return Err(HttpError::BadRequest(
            "the request has more than one Host header field".into(),
        ));
    }
    if hosts == 0 && request.version() == Version::HTTP_11 {
        return Err(HttpError::BadRequest(
            "an HTTP/1.1 request must have a Host header field".into(),
        ));
    }
    let target = target_len(uri);
    if target > limits.max_uri_bytes {
        return Err(HttpError::UriTooLong(format!(
            "the request target is {target} bytes long; at most {} are accepted",
            limits.max_uri_bytes
        )));
    }
    if let Some(query) = uri.query() {
        if count_fields(query) > limits.max_query_params {
            return Err(HttpError::UriTooLong(format!(
                "the query string has more than {} parameters",
                limits.max_query_params
            )));
        }
    }
    let fields = request.headers().len();
    if fields > limits.max_header_count {
        return Err(HttpError::HeadTooLarge(format!(
            "the request has {fields} header fields; at most {} are accepted",
            limits.max_header_count
        )));
    }
    if let Some(length) = request.headers().get(header::CONTENT_LENGTH) {
        let declared = length
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > limits.max_body_bytes as u64) {
            return Err(body_too_large(limits));
        }
    }
    Ok(())
}

/// The answer to a body longer than `max_body_bytes`.
pub(super) fn body_too_large(limits: &HttpLimits) -> HttpError {
    HttpError::ContentTooLarge(format!(
        "the request body is longer than {} bytes",
        limits.max_body_bytes
    ))
}

/// The length of the target as sent (origin or absolute form).
fn target_len(uri: &axum::http::Uri) -> usize {
    let scheme = uri.scheme_str().map_or(0, |s| s.len() + 3);
    let authority = uri.authority().map_or(0, |a| a.as_str().len());
    let rest = uri.path_and_query().map_or(0, |pq| pq.as_str().len());
    scheme + authority + rest
}

/// The fields of a form-encoded text (`&` and `;` separate them, empty
/// ones do not count), counted without decoding any.
pub(super) fn count_fields(text: &str) -> usize {
    text.split(['&', ';']).filter(|f| !f.is_empty()).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::StatusCode;

    fn request(target: &str, headers: &[(&str, &str)]) -> Request {
        let mut builder = Request::builder().uri(target);
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        builder.body(Body::empty()).unwrap()
    }

    fn status(r: &Request, limits: &HttpLimits) -> Option<StatusCode> {
        check(r, limits).err().map(|e| e.status())
    }

    #[test]
    fn each_rule_gives_its_status() {
        let limits = HttpLimits {
            max_uri_bytes: 20,
            max_query_params: 2,
            max_header_count: 3,
            max_body_bytes: 10,
            ..HttpLimits::default()
        };
        let host = [("host", "h")];
        assert_eq!(status(&request("/a", &host), &limits), None);
        assert_eq!(
            status(&request("/a", &[]), &limits),
            Some(StatusCode::BAD_REQUEST)
        );
        let two = [("host", "h"), ("host", "i")];
        assert_eq!(
            status(&request("/a", &two), &limits),
            Some(StatusCode::BAD_REQUEST)
        );
        assert_eq!(
            status(&request("example.com:80", &host), &limits),
            Some(StatusCode::BAD_REQUEST)
        );
        assert_eq!(
            status(&request("/0123456789012345678901", &host), &limits),
            Some(StatusCode::URI_TOO_LONG)
        );
        assert_eq!(status(&request("/?a&b;;", &host), &limits), None);
        assert_eq!(
            status(&request("/?a&b;c", &host), &limits),
            Some(StatusCode::URI_TOO_LONG)
        );
        let many = [("host", "h"), ("a", "1"), ("b", "2"), ("c", "3")];
        assert_eq!(
            status(&request("/", &many), &limits),
            Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE)
        );
        let long = [("host", "h"), ("content-length", "11")];
        assert_eq!(
            status(&request("/", &long), &limits),
            Some(StatusCode::PAYLOAD_TOO_LARGE)
        );
    }

    #[test]
    fn http_1_0_needs_no_host() {
        let mut r = request("/a", &[]);
        *r.version_mut() = Version::HTTP_10;
        assert_eq!(status(&r, &HttpLimits::default()), None);
    }
}
