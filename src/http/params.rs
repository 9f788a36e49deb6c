//! Stylesheet parameters from a request: the query string and
//! form-encoded POST bodies (AxKit's `&` and `;` separators), filtered by
//! the location's `params` policy. Parameter names must be XML names; the
//! values are passed as strings, never as XPath. A form body is read up
//! to `max_body_bytes` and its fields counted before any is decoded, so
//! a body of a hundred thousand empty fields costs one pass over it.

use axum::extract::Request;
use axum::http::header;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use super::HttpError;
use super::request_limits::{body_too_large, count_fields};
use crate::config::HttpLimits;
use crate::site::Location;

/// Request parameters that become stylesheet params: query pairs and form
/// fields (form fields win), minus Axle's own (`passthru` and the style
/// key), filtered by the location's policy.
pub(super) fn params(
    location: &Location,
    query: &[(String, String)],
    form: &[(String, String)],
) -> Vec<(String, String)> {
    query
        .iter()
        .chain(form)
        .filter(|(k, _)| k != "passthru" && Some(k) != location.style_key.as_ref())
        .filter(|(k, _)| is_ncname(k) && location.params.allows(k))
        .cloned()
        .collect()
}

/// The fields of a POST's form body: 413 past `max_body_bytes` or
/// `max_form_fields`, 400 for a body that cannot be read (a broken chunked
/// coding, say) or is not a form.
pub(super) async fn form_body(
    request: Request,
    limits: &HttpLimits,
) -> Result<Vec<(String, String)>, HttpError> {
    let is_form = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let body = match Limited::new(request.into_body(), limits.max_body_bytes)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<LengthLimitError>() => return Err(body_too_large(limits)),
        Err(e) => {
            return Err(HttpError::BadRequest(format!(
                "the request body could not be read: {}",
                causes(e.as_ref())
            )));
        }
    };
    if !is_form {
        return if body.is_empty() {
            Ok(Vec::new())
        } else {
            Err(HttpError::BadRequest(
                "POST bodies must be application/x-www-form-urlencoded".into(),
            ))
        };
    }
    let text = std::str::from_utf8(&body)
        .map_err(|_| HttpError::BadRequest("form body is not UTF-8".into()))?;
    if count_fields(text) > limits.max_form_fields {
        return Err(HttpError::ContentTooLarge(format!(
            "the form has more than {} fields",
            limits.max_form_fields
        )));
    }
    pairs(text)
}

/// An error and its causes, as one line.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// Form-encoded pairs: `&` and `;` both separate pairs; a NUL byte is
/// refused.
pub(super) fn pairs(text: &str) -> Result<Vec<(String, String)>, HttpError> {
    let mut out = Vec::new();
    for part in text.split([';', '&']) {
        for (name, value) in form_urlencoded::parse(part.as_bytes()) {
            if value.contains('\0') || name.contains('\0') {
                return Err(HttpError::BadRequest(
                    "a parameter contains a NUL byte".into(),
                ));
            }
            out.push((name.into_owned(), value.into_owned()));
        }
    }
    Ok(out)
}

pub(super) fn is_ncname(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}
