//! The HTTP boundary's error type and its one mapping to status codes and
//! error pages. Pages name our files (root-relative) and lines, never
//! absolute paths and never content from outside the root. A page has
//! Axle's built-in look (`look`): a heading, a sentence a person can act
//! on, the technical reason (escaped) where there is one, a link home.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::chain::ChainError;
use crate::language::{ExternalFailure, LanguageError};
use crate::pipeline::Exceeded;
use crate::pipeline::PipelineError;
use crate::provider::ProviderError;

/// An error answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HttpError {
    /// 404: nothing there, or a path that tries to leave the root.
    #[error("not found: {0}")]
    NotFound(String),
    /// 404: a directory URL with no index document where listings are
    /// off; the page says how to turn them on (and, at `/`, that the
    /// document root has no index and how to choose another root).
    #[error("not found: {path} has no index document and listings are off")]
    NoIndex {
        /// The directory's URL path (`/docs/`).
        path: String,
        /// The index document's name (`index.xml`), None when the
        /// location names none (`index = ""`).
        index: Option<String>,
    },
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
    /// A render refused or stopped by a limit: 503 (busy, with
    /// `Retry-After`), 504 (past its deadline) or 500 (over a budget); or
    /// an external filter that failed: 502 (it failed), 504 (its timeout)
    /// or 503 (all its runs taken, with `Retry-After`). Answered plainly,
    /// never through an error stylesheet.
    #[error("{title}: {detail}")]
    Limited {
        /// The status.
        status: StatusCode,
        /// Short title.
        title: &'static str,
        /// Which limit, and what to do.
        detail: String,
        /// Seconds a client should wait before trying again.
        retry_after: Option<u32>,
    },
    /// A dynamic source refused the request (400, 404, 405, 413, 415) or
    /// failed (502; 503 with `Retry-After`; 504).
    #[error("{title}: {detail}")]
    Source {
        /// The status.
        status: StatusCode,
        /// Short title.
        title: &'static str,
        /// What went wrong (never the program's stderr or the upstream's
        /// body: those are logged).
        detail: String,
        /// Seconds a client should wait before trying again.
        retry_after: Option<u32>,
        /// For 405: the methods the source answers.
        allow: Option<&'static str>,
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
            e @ (PipelineError::Stage {
                error: LanguageError::External { kind, .. },
                ..
            }
            | PipelineError::Compile {
                error: LanguageError::External { kind, .. },
                ..
            }) => external(kind, clean(e.to_string())),
            e @ PipelineError::Compile { .. } => HttpError::Render {
                title: "Broken stylesheet",
                detail: clean(e.to_string()),
            },
            e @ PipelineError::Busy(_) => HttpError::Limited {
                status: StatusCode::SERVICE_UNAVAILABLE,
                title: "Busy",
                detail: clean(e.to_string()),
                retry_after: Some(1),
            },
            e @ PipelineError::Stopped { why, .. } => HttpError::Limited {
                status: match why {
                    Exceeded::Deadline => StatusCode::GATEWAY_TIMEOUT,
                    Exceeded::Memory => StatusCode::INTERNAL_SERVER_ERROR,
                    Exceeded::Cancelled => StatusCode::SERVICE_UNAVAILABLE,
                },
                title: "Render stopped",
                detail: clean(e.to_string()),
                retry_after: None,
            },
            e @ PipelineError::Limit(_) => HttpError::Limited {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                title: "Over a limit",
                detail: clean(e.to_string()),
                retry_after: None,
            },
            e @ PipelineError::Refused { .. } => HttpError::Source {
                status: StatusCode::BAD_REQUEST,
                title: "Refused document",
                detail: clean(e.to_string()),
                retry_after: None,
                allow: None,
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

    /// The answer for a dynamic source's error.
    pub fn from_source(err: &crate::dynamic::SourceError) -> HttpError {
        use crate::dynamic::SourceError as E;
        let title = match err {
            E::Malformed { .. } => "Malformed document",
            E::BadRequest(_) => "Bad request",
            E::NotFound(_) => "Not found",
            E::Method { .. } => "Method not allowed",
            E::TooLarge(_) => "Content too large",
            E::UnsupportedType(_) => "Unsupported media type",
            E::Failed(_) => "Bad gateway",
            E::Busy(_) => "Busy",
            E::Timeout(_) => "Gateway timeout",
            E::Loop(_) => "Loop detected",
        };
        HttpError::Source {
            status: err.status(),
            title,
            detail: err.to_string(),
            retry_after: matches!(err, E::Busy(_)).then_some(1),
            allow: match err {
                E::Method { allowed } => Some(allowed),
                _ => None,
            },
        }
    }

    /// This error as a client sees it by default: the file and line and a
    /// one-line reason, without libxslt's template and variable stacks,
    /// offending bytes or advice about options Axle does not have (the
    /// whole report is logged; a location with `debug-errors = true` shows
    /// it).
    pub fn summarized(self) -> HttpError {
        match self {
            HttpError::Render { title, detail } => HttpError::Render {
                title,
                detail: one_line_reason(&detail),
            },
            HttpError::Limited {
                status,
                title,
                detail,
                retry_after,
            } => HttpError::Limited {
                status,
                title,
                detail: one_line_reason(&detail),
                retry_after,
            },
            other => other,
        }
    }

    /// Whether this error was logged where it arose: every `Render`,
    /// `Limited` and `Styled` error is (a render's failure with the whole
    /// report, before the page was made from it; an unreadable file where
    /// it was found), so the handler does not log it twice.
    pub fn logged(&self) -> bool {
        matches!(
            self,
            HttpError::Render { .. }
                | HttpError::Limited { .. }
                | HttpError::Styled { .. }
                | HttpError::Source { .. }
        )
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        match self {
            HttpError::NotFound(_) | HttpError::NoIndex { .. } => StatusCode::NOT_FOUND,
            HttpError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            HttpError::BadRequest(_) => StatusCode::BAD_REQUEST,
            HttpError::UriTooLong(_) => StatusCode::URI_TOO_LONG,
            HttpError::ContentTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            HttpError::HeadTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            HttpError::Render { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            HttpError::Limited { status, .. } | HttpError::Source { status, .. } => *status,
            HttpError::Styled { status, .. } => *status,
        }
    }
}

/// An external filter's failure (the detail names the stage, the filter
/// and the reason; its stderr was logged where it failed and is not here):
/// like a gateway's upstream, it failed (502), timed out (504) or had no
/// run free (503, try again in a second).
fn external(kind: ExternalFailure, detail: String) -> HttpError {
    let (status, title, retry_after) = match kind {
        ExternalFailure::Failed => (StatusCode::BAD_GATEWAY, "Filter failed", None),
        ExternalFailure::Timeout => (StatusCode::GATEWAY_TIMEOUT, "Filter timed out", None),
        ExternalFailure::Busy => (StatusCode::SERVICE_UNAVAILABLE, "Busy", Some(1)),
    };
    HttpError::Limited {
        status,
        title,
        detail,
        retry_after,
    }
}

/// Most characters of an error page's reason.
const MAX_REASON: usize = 400;

/// The first line of a report (where: stage, file, line, element) and the
/// first line of what went wrong, joined: libxslt's reports go on with
/// `Templates:`/`Variables:` stacks, libxml2's with the offending bytes.
/// The C function that reported it (`xsltApplySequenceConstructor: `) and
/// advice naming libxml2's own options are dropped; characters that are
/// not printable become `?`.
pub fn one_line_reason(detail: &str) -> String {
    let mut lines = detail
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take_while(|l| {
            !matches!(*l, "Templates:" | "Variables:" | "Detail:") && !l.starts_with('#')
        });
    let mut reason = lines.next().unwrap_or_default().to_string();
    if let Some(next) = lines.next().filter(|l| !l.starts_with("Bytes:")) {
        let next = match next.split_once(": ") {
            Some((function, rest))
                if !function.is_empty()
                    && function
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                rest
            }
            _ => next,
        };
        reason.push_str(": ");
        reason.push_str(next);
    }
    for advice in [", use XML_PARSE_HUGE option", " use XML_PARSE_HUGE option"] {
        reason = reason.replace(advice, "");
    }
    let mut clean: String = reason
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(MAX_REASON)
        .collect();
    if reason.chars().count() > MAX_REASON {
        clean.push('…');
    }
    clean
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
        let body = page_body(&self, status);
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=UTF-8"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let HttpError::Limited {
            retry_after: Some(seconds),
            ..
        }
        | HttpError::Source {
            retry_after: Some(seconds),
            ..
        } = self
        {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if let HttpError::Source {
            allow: Some(methods),
            ..
        } = self
        {
            headers.insert(header::ALLOW, HeaderValue::from_static(methods));
        }
        if matches!(self, HttpError::MethodNotAllowed) {
            headers.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD, POST"));
        }
        response
    }
}

/// The sentence above the technical reason, by status.
fn lead(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 | 413 | 414 | 431 => "Axle could not take this request:",
        404 => "There is no document at this address.",
        405 | 415 => "This address does not take this request:",
        500 => "This page could not be made:",
        502 => "Axle could not get this page from the program or server behind it:",
        503 => "Axle is busy or the source is unavailable; try again shortly:",
        504 => "This page took longer than it may:",
        508 => "This request went round a loop of upstream fetches:",
        _ => "This request could not be answered:",
    }
}

/// The error page for `err` (not `Styled`, which has its own body).
fn page_body(err: &HttpError, status: StatusCode) -> String {
    use super::escape_markup as esc;
    let code = status.as_u16();
    let (title, body) = match err {
        HttpError::NotFound(_) => ("Not found", format!("<p>{}</p>\n", lead(status))),
        HttpError::NoIndex { path, index } => ("Not found", no_index(path, index.as_deref())),
        HttpError::MethodNotAllowed => (
            "Method not allowed",
            "<p>Axle serves GET and HEAD requests (and POST to documents).</p>\n".to_string(),
        ),
        other => {
            let (title, detail) = match other {
                HttpError::BadRequest(why) => ("Bad request", why.as_str()),
                HttpError::UriTooLong(why) => ("URI too long", why.as_str()),
                HttpError::ContentTooLarge(why) => ("Content too large", why.as_str()),
                HttpError::HeadTooLarge(why) => ("Request header fields too large", why.as_str()),
                HttpError::Render { title, detail }
                | HttpError::Limited { title, detail, .. }
                | HttpError::Source { title, detail, .. } => (*title, detail.as_str()),
                _ => ("Error", ""),
            };
            let mut body = format!("<p>{}</p>\n", lead(status));
            if !detail.is_empty() {
                body.push_str(&format!("<pre class=\"error\">{}</pre>\n", esc(detail)));
            }
            (title, body)
        }
    };
    let body = format!(
        "<h1>{code} {title}</h1>\n{body}<p class=\"home\"><a href=\"/\">Back to the home page</a></p>\n",
        title = esc(title),
    );
    super::look::page(&format!("{code} {title}"), &body)
}

/// What a directory without an index and without listings says: how to
/// list it, and at `/` that the root has no index and `--root` chooses
/// another (the root's path is not shown: clients never see it).
fn no_index(path: &str, index: Option<&str>) -> String {
    use super::escape_markup as esc;
    let mut body = String::new();
    let missing = match index {
        Some(name) => format!("has no <code>{}</code>", esc(name)),
        None => "has no index document (<code>index = \"\"</code>)".to_string(),
    };
    if path == "/" {
        body.push_str(&format!(
            "<p>The document root {missing}, and directory listings are off. \
             To serve another directory, start Axle with <code>axle serve --root DIR</code>.</p>\n"
        ));
    } else {
        body.push_str(&format!(
            "<p>There is no document at this address: the directory {missing}, \
             and directory listings are off here.</p>\n"
        ));
    }
    body.push_str(&format!(
        "<p>To list this directory, turn listings on for it in <code>axle.toml</code>:</p>\n\
         <pre>[location.\"{}\"]\ndirectories = true</pre>\n",
        esc(match path.trim_end_matches('/') {
            "" => "/",
            prefix => prefix,
        })
    ));
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_s_failure_is_a_gateway_s_answer_naming_stage_filter_and_reason() {
        let root = std::path::Path::new("/srv/site");
        let stage = |kind, message: &str| PipelineError::Stage {
            stage: 2,
            stylesheet: "/shout.py".into(),
            error: LanguageError::External {
                kind,
                message: message.into(),
            },
        };
        let cases = [
            (
                ExternalFailure::Failed,
                "filter application/x-shout (python3) exited with status 3",
                502,
                "Filter failed",
                None,
            ),
            (
                ExternalFailure::Timeout,
                "filter application/x-shout (python3) did not finish within 2s",
                504,
                "Filter timed out",
                None,
            ),
            (
                ExternalFailure::Busy,
                "filter application/x-shout (python3) is busy: no run came free within 2s",
                503,
                "Busy",
                Some(1),
            ),
        ];
        for (kind, message, status, want_title, want_retry) in cases {
            let e = HttpError::from_pipeline(stage(kind, message), root).summarized();
            assert_eq!(e.status().as_u16(), status, "{kind:?}");
            let HttpError::Limited {
                title,
                detail,
                retry_after,
                ..
            } = &e
            else {
                panic!("{e:?}");
            };
            assert_eq!(*title, want_title);
            assert_eq!(*retry_after, want_retry);
            assert_eq!(*detail, format!("stage 2 (/shout.py) failed: {message}"));
        }
        // A filter that cannot even be compiled (its executable gone).
        let compile = PipelineError::Compile {
            stylesheet: "/shout.py".into(),
            error: LanguageError::External {
                kind: ExternalFailure::Failed,
                message: "filter application/x-shout (python3): its executable cannot be read"
                    .into(),
            },
        };
        assert_eq!(
            HttpError::from_pipeline(compile, root).status(),
            StatusCode::BAD_GATEWAY
        );
        // Any other stage failure is still the document's 500.
        let other = PipelineError::Stage {
            stage: 1,
            stylesheet: "/s/a.xsl".into(),
            error: LanguageError::Failed("x".into()),
        };
        assert_eq!(
            HttpError::from_pipeline(other, root).status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    #[test]
    fn an_error_page_escapes_its_reason_and_links_home() {
        let e = HttpError::Render {
            title: "Broken stylesheet",
            detail: "Invalid expression \"1 < <b>\"".into(),
        };
        let html = page_body(&e, e.status());
        assert!(html.contains("<h1>500 Broken stylesheet</h1>"), "{html}");
        assert!(
            html.contains(
                "<pre class=\"error\">Invalid expression &quot;1 &lt; &lt;b&gt;&quot;</pre>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"/\">Back to the home page</a>"),
            "{html}"
        );
    }

    #[test]
    fn a_directory_without_index_says_how_to_list_it_and_at_the_root_how_to_choose_one() {
        let docs = HttpError::NoIndex {
            path: "/docs/".into(),
            index: Some("index.xml".into()),
        };
        assert_eq!(docs.status(), StatusCode::NOT_FOUND);
        let html = page_body(&docs, docs.status());
        assert!(
            html.contains("[location.\"/docs\"]\ndirectories = true"),
            "{html}"
        );
        assert!(!html.contains("--root"), "{html}");
        let root = HttpError::NoIndex {
            path: "/".into(),
            index: Some("index.xml".into()),
        };
        let html = page_body(&root, root.status());
        assert!(
            html.contains("The document root has no <code>index.xml</code>"),
            "{html}"
        );
        assert!(
            html.contains("<code>axle serve --root DIR</code>"),
            "{html}"
        );
        assert!(
            html.contains("[location.\"/\"]\ndirectories = true"),
            "{html}"
        );
        let none = HttpError::NoIndex {
            path: "/x/".into(),
            index: None,
        };
        assert!(page_body(&none, none.status()).contains("<code>index = \"\"</code>"));
    }

    #[test]
    fn a_reason_is_where_and_what_without_stacks_bytes_or_foreign_advice() {
        let recursion = "stage 1 (/s/r.xsl) failed: transform failed: runtime error: file /s/r.xsl line 3 element x\n\
            xsltApplySequenceConstructor: A potential infinite template recursion was detected.\n\
            Templates:\n#0 name down \n#1 name down \nVariables:\n#0\nn \n";
        assert_eq!(
            one_line_reason(recursion),
            "stage 1 (/s/r.xsl) failed: transform failed: runtime error: file /s/r.xsl line 3 element x: \
             A potential infinite template recursion was detected."
        );
        let bytes = "/a.xml is not well-formed XML: /a.xml:1: Input is not proper UTF-8, indicate encoding !\nBytes: 0xE9 0x3C 0x2F 0x61\n";
        assert_eq!(
            one_line_reason(bytes),
            "/a.xml is not well-formed XML: /a.xml:1: Input is not proper UTF-8, indicate encoding !"
        );
        let huge = "/a.xml:1: Excessive depth in document: 256 use XML_PARSE_HUGE option";
        assert_eq!(
            one_line_reason(huge),
            "/a.xml:1: Excessive depth in document: 256"
        );
        assert_eq!(one_line_reason("bad\u{1}byte"), "bad?byte");
        let long = "x".repeat(1000);
        assert_eq!(
            one_line_reason(&long).chars().count(),
            super::MAX_REASON + 1
        );
        assert_eq!(one_line_reason(""), "");
    }
}
