//! The limits every request is held to before the handler looks at it, on
//! both connection paths (Axle's own loop and hyper), so the same request
//! gets the same status whichever path it took: a target or query past
//! its limit (414), more header fields than allowed (431), a declared body
//! past its limit (413). Pure functions over the request head; the body's
//! own limits are in `params`, HTTP/1.1's rules on `Host` and the target's
//! form in `conn` (they are rules of the wire).

use axum::extract::Request;
use axum::http::header;

use super::HttpError;
use crate::config::HttpLimits;

/// Refuses a request whose head breaks a rule or a limit.
pub(super) fn check(request: &Request, limits: &HttpLimits) -> Result<(), HttpError> {
    let uri = request.uri();
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
    fn each_limit_gives_its_status() {
        let limits = HttpLimits {
            max_uri_bytes: 20,
            max_query_params: 2,
            max_header_count: 3,
            max_body_bytes: 10,
            ..HttpLimits::default()
        };
        // Built in process: no Host needed.
        assert_eq!(status(&request("/a", &[]), &limits), None);
        assert_eq!(
            status(&request("/0123456789012345678901", &[]), &limits),
            Some(StatusCode::URI_TOO_LONG)
        );
        assert_eq!(status(&request("/?a&b;;", &[]), &limits), None);
        assert_eq!(
            status(&request("/?a&b;c", &[]), &limits),
            Some(StatusCode::URI_TOO_LONG)
        );
        let many = [("host", "h"), ("a", "1"), ("b", "2"), ("c", "3")];
        assert_eq!(
            status(&request("/", &many), &limits),
            Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE)
        );
        let long = [("content-length", "11")];
        assert_eq!(
            status(&request("/", &long), &limits),
            Some(StatusCode::PAYLOAD_TOO_LARGE)
        );
        assert_eq!(
            status(&request("/", &[("content-length", "10")]), &limits),
            None
        );
    }
}
