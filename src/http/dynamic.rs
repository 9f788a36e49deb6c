//! Requests under a location whose documents come from a dynamic source
//! (`provider = { type = "post" | "command" | "upstream" }`, or a Provider
//! mounted through the builder): the body read within its limit, the
//! source asked, and what it produced rendered like a file at the
//! request's URL (its own `<?xml-stylesheet?>` PIs, or the location's
//! processors). Never memoized by the hot path: a source produced per
//! request is a new document each time; its cacheability goes to the
//! pipeline ([`RenderRequest::uncacheable_source`]).

use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use http_body_util::{BodyExt, Limited};

use super::{App, HttpError, choose, document_response, error_page, params, render_request};
use crate::dynamic::{Mount, SourceError, SourceRequest};
use crate::pipeline::{PipelineError, RenderRequest};
use crate::provider::{Located, ResourceKind, generated_path};
use crate::site::Location;

/// Answers `request` (at `path`, normalized and percent-encoded) from
/// `mount`'s source.
pub(super) async fn respond(
    app: &App,
    request: Request,
    location: &Location,
    mount: &Mount,
    path: String,
    query: &[(String, String)],
) -> Result<Response, HttpError> {
    let method = request.method().clone();
    let limit = mount
        .provider
        .body_limit(&method)
        .map_err(|e| HttpError::from_source(&e))?;
    let headers = request.headers().clone();
    let below = mount.below(&path).to_string();
    let body = match limit {
        Some(limit) => Some(read_body(app, request, limit).await?),
        None => None,
    };
    // `new` decodes PATH_INFO; the path is kept as the request spelled it.
    let mut source_request = SourceRequest::new(method, &mount.prefix, &below);
    source_request.path = path.clone();
    source_request.query = query_string(query);
    source_request.headers = headers;
    source_request.body = body;
    source_request.server = app.listening.get().copied();
    let produced = match mount.provider.produce(&source_request).await {
        Ok(p) => p,
        Err(e) => return Err(source_failed(mount, &path, &e)),
    };
    let generated = generated_path(app.pipeline.provider().root(), &path)
        .map_err(|e| HttpError::NotFound(e.to_string()))?;
    let headers = &source_request.headers;
    let chosen = choose::choose(location, headers, query, None);
    let mut req = render_request(location, &chosen, params(location, query, &[]));
    req.uncacheable_source = !produced.cacheable;
    req.source_is_variant = mount.client_document;
    if mount.client_document {
        // A client's document reads no file through XInclude, whatever
        // the location says (it is standalone: no external DTD either),
        // is parsed once under the posted-document limits, and chooses
        // through its PIs only what the location lets it.
        req.xinclude = false;
        req.client_document = Some(std::sync::Arc::clone(&location.client_stages));
    }
    let status = produced.status;
    match app
        .pipeline
        .render_generated(&generated, produced.bytes, &req)
        .await
    {
        Ok(rendered) => {
            let mut response = document_response(app, rendered, headers, location).await;
            // A source's own status (a FastCGI app's `Status: 404`) is the
            // page's, in place of a 200.
            if let Some(status) = status.filter(|_| response.status() == StatusCode::OK) {
                *response.status_mut() = status;
            }
            Ok(response)
        }
        // Boxed: an error page's future is as large as a render's.
        Err(e) => Err(Box::pin(render_failed(app, e, mount, generated, location, &req)).await),
    }
}

/// The request's query again, as the source gets it (`QUERY_STRING`,
/// an upstream's query): the pairs re-encoded, so it is one spelling.
fn query_string(query: &[(String, String)]) -> Option<String> {
    if query.is_empty() {
        return None;
    }
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (name, value) in query {
        out.append_pair(name, value);
    }
    Some(out.finish())
}

/// The body, at most `limit` bytes (413 past it), within the header
/// timeout (a client trickling a body holds no more than a slow head).
async fn read_body(app: &App, request: Request, limit: u64) -> Result<bytes::Bytes, HttpError> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let timeout = app.limits.http.header_timeout;
    let collect = Limited::new(request.into_body(), limit).collect();
    match tokio::time::timeout(timeout, collect).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            Err(HttpError::from_source(&SourceError::TooLarge(format!(
                "the request body is larger than this location takes (max-body: {limit} bytes)"
            ))))
        }
        Ok(Err(e)) => Err(HttpError::BadRequest(format!(
            "the request body could not be read: {e}"
        ))),
        Err(_) => Err(HttpError::Source {
            status: StatusCode::REQUEST_TIMEOUT,
            title: "Request timeout",
            detail: format!(
                "the request body did not arrive within header-timeout ({} s)",
                timeout.as_secs_f64()
            ),
            retry_after: None,
            allow: None,
        }),
    }
}

/// A source's error as answered, logged when it is the server's side.
fn source_failed(mount: &Mount, path: &str, e: &SourceError) -> HttpError {
    let answer = HttpError::from_source(e);
    if answer.status().is_server_error() {
        tracing::warn!(path, source = %mount.provider.describe(), error = %e, "dynamic source failed");
    } else {
        tracing::debug!(path, source = %mount.provider.describe(), error = %e, "dynamic source refused the request");
    }
    answer
}

/// A render of a produced document that failed: a document the parser
/// refuses is the client's fault when the client sent it (400), else the
/// source's (502); everything else as for a file.
async fn render_failed(
    app: &App,
    e: PipelineError,
    mount: &Mount,
    generated: crate::provider::ConfinedPath,
    location: &Location,
    req: &RenderRequest,
) -> HttpError {
    if let PipelineError::Source { error, .. } = &e {
        let error = if mount.client_document {
            SourceError::BadRequest(format!("the request body is not well-formed XML: {error}"))
        } else {
            SourceError::Failed(format!(
                "{} gave a document that is not well-formed XML: {error}",
                mount.provider.describe()
            ))
        };
        return source_failed(mount, generated.url(), &error);
    }
    let located = Located {
        path: generated,
        kind: ResourceKind::File,
        hash: None,
    };
    error_page(app, e, &located, location, req).await
}
