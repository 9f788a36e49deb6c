//! The HTTP surface: GET and HEAD for documents through their chains and
//! for static files, ETag/304, the `X-Axle-Cache` header, error pages.
//! Knows nothing of libxslt: it calls the pipeline and maps its errors once
//! (`error`).

mod error;

pub use error::HttpError;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use tower::ServiceExt;

use crate::config::ServeConfig;
use crate::language::Registry;
use crate::pipeline::{Pipeline, RenderRequest, Rendered};
use crate::provider::{Located, Provider, ProviderError, ResourceKind};

/// The name of the cache-status header.
pub const CACHE_HEADER: &str = "x-axle-cache";

/// Shared server state.
#[derive(Debug)]
pub struct App {
    pipeline: Pipeline,
}

impl App {
    /// Builds the pipeline for `config` with `registry`'s Languages.
    pub fn new(config: &ServeConfig, registry: Registry) -> std::io::Result<Arc<App>> {
        Ok(Arc::new(App {
            pipeline: Pipeline::new(config, registry)?,
        }))
    }

    /// The pipeline (for counters and tests).
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

/// The router: every path goes to one handler.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .fallback(handle)
        .with_state(app)
        // Outermost: one span per request with method and path.
        .layer(tower_http::trace::TraceLayer::new_for_http())
}

/// Binds `config.listen` and serves until Ctrl-C or SIGTERM.
pub async fn serve(config: &ServeConfig, registry: Registry) -> std::io::Result<()> {
    let app = App::new(config, registry)?;
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let addr: SocketAddr = listener.local_addr()?;
    tracing::info!(%addr, root = %app.pipeline.provider().root().display(), cache = %config.cache_mode, "axle serving");
    println!(
        "axle: serving {} on http://{addr}/ (cache: {})",
        config.root.display(),
        config.cache_mode
    );
    axum::serve(listener, router(app))
        .with_graceful_shutdown(shutdown_signal())
        .await
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

async fn handle(State(app): State<Arc<App>>, request: Request) -> Response {
    match respond(&app, request).await {
        Ok(r) => r,
        Err(e) => {
            if e.status().is_server_error() {
                tracing::warn!(error = %e, "request failed");
            }
            e.into_response()
        }
    }
}

async fn respond(app: &App, request: Request) -> Result<Response, HttpError> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return Err(HttpError::MethodNotAllowed);
    }
    let provider = app.pipeline.provider();
    let path = request.uri().path().to_string();
    let located = provider.locate(&path).map_err(not_found)?;
    let located = match located.kind {
        ResourceKind::File => located,
        ResourceKind::Directory if !path.ends_with('/') => {
            let query = request
                .uri()
                .query()
                .map(|q| format!("?{q}"))
                .unwrap_or_default();
            return Ok(Redirect::permanent(&format!("{path}/{query}")).into_response());
        }
        ResourceKind::Directory => provider
            .locate(&format!("{path}index.xml"))
            .map_err(not_found)?,
    };
    if !is_document(&located) {
        return serve_static(&located, request).await;
    }
    let req = RenderRequest::with_params(params(request.uri().query())?);
    let rendered = app
        .pipeline
        .render(&located, &req)
        .await
        .map_err(|e| HttpError::from_pipeline(e, provider.root()))?;
    Ok(document_response(&rendered, request.headers()))
}

fn not_found(e: ProviderError) -> HttpError {
    match e {
        ProviderError::Unreadable { path, reason } => HttpError::Render {
            title: "Unreadable document",
            detail: format!("{path}: {reason}"),
        },
        other => HttpError::NotFound(other.to_string()),
    }
}

fn is_document(located: &Located) -> bool {
    located.kind == ResourceKind::File
        && located
            .path
            .as_path()
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("xml"))
}

/// Query parameters as stylesheet params: `&` and `;` both separate pairs;
/// names that are not XML names are ignored (they could never reach an
/// `xsl:param`); a NUL byte is refused.
fn params(query: Option<&str>) -> Result<Vec<(String, String)>, HttpError> {
    let Some(query) = query else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for part in query.split([';', '&']) {
        for (name, value) in form_urlencoded::parse(part.as_bytes()) {
            if value.contains('\0') || name.contains('\0') {
                return Err(HttpError::BadRequest(
                    "a parameter contains a NUL byte".into(),
                ));
            }
            if is_ncname(&name) {
                out.push((name.into_owned(), value.into_owned()));
            }
        }
    }
    Ok(out)
}

fn is_ncname(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn document_response(rendered: &Rendered, request_headers: &HeaderMap) -> Response {
    let etag = rendered.hash.etag();
    let cache = rendered.cache.header_value();
    let not_modified = request_headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut builder = Response::builder()
        .header(header::ETAG, &etag)
        .header(CACHE_HEADER, cache);
    let response = if not_modified {
        builder.status(StatusCode::NOT_MODIFIED).body(Body::empty())
    } else {
        builder = builder.status(StatusCode::OK).header(
            header::CONTENT_TYPE,
            content_type_value(&rendered.content_type),
        );
        builder.body(Body::from(rendered.body.clone()))
    };
    response.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn content_type_value(ct: &str) -> HeaderValue {
    HeaderValue::from_str(ct)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"))
}

async fn serve_static(located: &Located, request: Request) -> Result<Response, HttpError> {
    let service = tower_http::services::ServeFile::new(located.path.as_path());
    match service.oneshot(request).await {
        Ok(response) => Ok(response.map(Body::new)),
        Err(infallible) => match infallible {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_take_both_separators_and_skip_non_names() {
        let p = params(Some("a=1;b=two%20words&c=%27%22&9x=no&=no&d")).unwrap();
        assert_eq!(
            p,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "two words".into()),
                ("c".into(), "'\"".into()),
                ("d".into(), "".into()),
            ]
        );
        assert!(params(Some("a=%00")).is_err());
    }
}
