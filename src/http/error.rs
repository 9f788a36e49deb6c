//! The HTTP boundary's error type and its one mapping to status codes and
//! error pages. Pages name our files (root-relative) and lines, never
//! absolute paths and never content from outside the root.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::chain::ChainError;
use crate::pipeline::PipelineError;
use crate::provider::ProviderError;

/// An error answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HttpError {
    /// 404: nothing there, or a path that tries to leave the root.
    #[error("not found: {0}")]
    NotFound(String),
    /// 405: only GET and HEAD are served.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 400: a request Axle cannot take.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// 414: a request target, or its query, past a limit.
    #[error("URI too long: {0}")]
    UriTooLong(String),
    /// 413: a request body, or its form fields, past a limit.
    #[error("content too large: {0}")]
    ContentTooLarge(String),
    /// 431: a request head, or its header fields, past a limit.
    #[error("request header fields too large: {0}")]
    HeadTooLarge(String),
    /// An error page rendered by the location's error stylesheet.
    #[error("error page rendered by the error stylesheet ({status})")]
    Styled {
        /// The status.
        status: StatusCode,
        /// Content-Type of the page.
        content_type: String,
        /// The page.
        body: bytes::Bytes,
    },
    /// 500: the document or a stylesheet is broken.
    #[error("{title}: {detail}")]
    Render {
        /// Short title.
        title: &'static str,
        /// What went wrong, with file and line where known.
        detail: String,
    },
}

impl HttpError {
    /// Maps a pipeline error, removing the absolute root from messages.
    pub fn from_pipeline(err: PipelineError, root: &std::path::Path) -> HttpError {
        let root_text = root.display().to_string();
        let clean = |s: String| s.replace(&root_text, "");
        match err {
            PipelineError::Provider(ProviderError::NotFound(p) | ProviderError::Outside(p)) => {
                HttpError::NotFound(clean(p))
            }
            PipelineError::Provider(e @ ProviderError::Unreadable { .. }) => HttpError::Render {
                title: "Unreadable document",
                detail: clean(e.to_string()),
            },
            PipelineError::Chain(e @ ChainError::Missing { .. }) => HttpError::Render {
                title: "Missing stylesheet",
                detail: clean(e.to_string()),
            },
            PipelineError::Chain(e) => HttpError::Render {
                title: "Unusable stylesheet",
                detail: clean(e.to_string()),
            },
            e @ PipelineError::Source { .. } => HttpError::Render {
                title: "Malformed document",
                detail: clean(e.to_string()),
            },
            e @ PipelineError::Compile { .. } => HttpError::Render {
                title: "Broken stylesheet",
                detail: clean(e.to_string()),
            },
            e @ PipelineError::Stage { .. } => HttpError::Render {
                title: "Transformation failed",
                detail: clean(e.to_string()),
            },
            e => HttpError::Render {
                title: "Internal error",
                detail: clean(e.to_string()),
            },
        }
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        match self {
            HttpError::NotFound(_) => StatusCode::NOT_FOUND,
            HttpError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            HttpError::BadRequest(_) => StatusCode::BAD_REQUEST,
            HttpError::UriTooLong(_) => StatusCode::URI_TOO_LONG,
            HttpError::ContentTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            HttpError::HeadTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            HttpError::Render { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            HttpError::Styled { status, .. } => *status,
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let status = self.status();
        if let HttpError::Styled {
            content_type, body, ..
        } = self
        {
            let mut response = (status, body).into_response();
            let headers = response.headers_mut();
            if let Ok(v) = HeaderValue::from_str(&content_type) {
                headers.insert(header::CONTENT_TYPE, v);
            }
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            return response;
        }
        let (title, detail) = match &self {
            HttpError::NotFound(_) => (
                "Not found",
                "There is no document at this address.".to_string(),
            ),
            HttpError::MethodNotAllowed => (
                "Method not allowed",
                "Axle serves GET and HEAD requests (and POST to documents).".to_string(),
            ),
            HttpError::BadRequest(why) => ("Bad request", why.clone()),
            HttpError::UriTooLong(why) => ("URI too long", why.clone()),
            HttpError::ContentTooLarge(why) => ("Content too large", why.clone()),
            HttpError::HeadTooLarge(why) => ("Request header fields too large", why.clone()),
            HttpError::Render { title, detail } => (*title, detail.clone()),
            HttpError::Styled { .. } => ("Error", String::new()),
        };
        let body = format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{code} {title}</title></head>\n\
             <body><h1>{code} {title}</h1>\n<pre>{detail}</pre>\n<hr><address>Axle</address></body></html>\n",
            code = status.as_u16(),
            title = super::escape_markup(title),
            detail = super::escape_markup(&detail),
        );
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=UTF-8"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if matches!(self, HttpError::MethodNotAllowed) {
            headers.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD, POST"));
        }
        response
    }
}
