//! Stylesheet parameters from a request: the query string and
//! form-encoded POST bodies (AxKit's `&` and `;` separators), filtered by
//! the location's `params` policy. Parameter names must be XML names; the
//! values are passed as strings, never as XPath.

use axum::extract::Request;
use axum::http::header;

use super::HttpError;
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

pub(super) async fn form_body(request: Request) -> Result<Vec<(String, String)>, HttpError> {
    let is_form = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let body = axum::body::to_bytes(request.into_body(), MAX_FORM_BODY)
        .await
        .map_err(|_| {
            HttpError::BadRequest(format!("request body larger than {MAX_FORM_BODY} bytes"))
        })?;
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
    pairs(text)
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

/// Largest form body accepted for POSTed parameters.
const MAX_FORM_BODY: usize = 1 << 20;
