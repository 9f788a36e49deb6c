//! Static files (anything under the root that is not an `.xml` document):
//! through tower-http's `ServeFile` after the RFC 9110 rules it does not
//! follow (`ranges`), or, for a compressible file a client takes gzip or
//! brotli for, its compressed variant, made once per file content and kept
//! in a memo bounded in bytes (`StaticVariants`), so a CSS or JavaScript
//! file costs what a cached page costs.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use tower::ServiceExt;

use super::encoding::{Choice, negotiate};
use super::{App, HttpError, ranges};
use crate::cache::{ContentHash, Encoding, Variants, worth_compressing};
use crate::provider::Located;
use crate::site::Location;

/// Compressed variants of static files by content hash, bounded in bytes
/// (weighed by the variants made).
pub(super) struct StaticVariants(moka::sync::Cache<ContentHash, Arc<Variants>>);

impl std::fmt::Debug for StaticVariants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticVariants")
            .field("entries", &self.0.entry_count())
            .finish()
    }
}

impl StaticVariants {
    /// A memo holding at most `budget` bytes of variants.
    pub(super) fn new(budget: u64) -> Self {
        StaticVariants(
            moka::sync::Cache::builder()
                .max_capacity(budget)
                .weigher(|_k: &ContentHash, v: &Arc<Variants>| {
                    u32::try_from(v.weight() + 64).unwrap_or(u32::MAX)
                })
                .build(),
        )
    }
}

/// Serves the static file at `located` for `request`.
pub(super) async fn serve(
    app: &App,
    located: &Located,
    location: &Location,
    request: Request,
) -> Result<Response, HttpError> {
    let path = located.path.as_path();
    let content_type = mime_guess::from_path(path)
        .first_raw()
        .unwrap_or("application/octet-stream");
    let meta = std::fs::metadata(path).ok();
    let size = meta.as_ref().map_or(0, std::fs::Metadata::len);
    // Larger files (`max-compress-size`) go out as they are, with ranges.
    let compressible = worth_compressing(content_type, usize::try_from(size).unwrap_or(0))
        && size <= app.limits.http.max_compress_bytes;
    let head_only = request.method() == Method::HEAD;
    if compressible && !request.headers().contains_key(header::RANGE) {
        let accept = request
            .headers()
            .get_all(header::ACCEPT_ENCODING)
            .iter()
            .filter_map(|v| v.to_str().ok());
        if let Choice::Encoded(enc) = negotiate(accept, &Encoding::ALL, true)
            && let Some(response) = compressed(
                app,
                located,
                location,
                request.headers(),
                head_only,
                content_type,
                enc,
            )
            .await
        {
            return Ok(response);
        }
    }
    let mut response = serve_file(located, request).await?;
    let success = response.status().is_success();
    let headers = response.headers_mut();
    if compressible {
        headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if let Some(v) = &location.cache_control
        && success
    {
        headers.insert(header::CACHE_CONTROL, v.clone());
    }
    Ok(response)
}

/// The `enc` variant of the file as a response (or a 304 when the
/// request's conditions hold); None when it would not be smaller, or the
/// file cannot be read (then `ServeFile` answers as for any file).
async fn compressed(
    app: &App,
    located: &Located,
    location: &Location,
    headers: &axum::http::HeaderMap,
    head_only: bool,
    content_type: &str,
    enc: Encoding,
) -> Option<Response> {
    let path = located.path.as_path();
    let fingerprints = app.pipeline.provider().fingerprints();
    let hash = fingerprints.hash(path).ok()?;
    let memo = &app.statics.0;
    let variants = memo.get(&hash).unwrap_or_default();
    let variant = match variants.get(enc) {
        Some(made) => made?.clone(),
        None => {
            // Read and compressed on the blocking pool, never on a
            // connection's thread.
            let (files, file, pending) = (
                fingerprints.clone(),
                path.to_path_buf(),
                Arc::clone(&variants),
            );
            let made = tokio::task::spawn_blocking(move || {
                let (bytes, read) = files.read(&file).ok()?;
                // Changed since the stat: the ordinary path serves it.
                (read == hash).then(|| pending.get_or_make(enc, &bytes, &hash).cloned())?
            })
            .await
            .ok()
            .flatten();
            // Inserted (again) to be weighed with what it now holds.
            memo.insert(hash, Arc::clone(&variants));
            if let Some(v) = &made {
                let stats = &app.pipeline.stats().variants;
                let counter = match enc {
                    Encoding::Gzip => &stats.gzip,
                    Encoding::Br => &stats.br,
                };
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                stats
                    .bytes
                    .fetch_add(v.bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
            }
            made?
        }
    };
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let not_modified = match headers.get(header::IF_NONE_MATCH) {
        Some(_) => super::hot::etag_matches(headers, &variant.etag),
        None => super::document::unmodified_since(headers, modified),
    };
    let mut response = if not_modified {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let body = if head_only {
            Body::empty()
        } else {
            Body::from(variant.bytes.clone())
        };
        let mut r = Response::new(body);
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(content_type)
                .unwrap_or(HeaderValue::from_static("application/octet-stream")),
        );
        h.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(enc.token()),
        );
        h.insert(
            header::CONTENT_LENGTH,
            HeaderValue::from(variant.bytes.len()),
        );
        r
    };
    app.pipeline.stats().variants.served.incr();
    let h = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_maybe_shared(variant.etag) {
        h.insert(header::ETAG, etag);
    }
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Some(date) = modified
        .map(httpdate::fmt_http_date)
        .and_then(|d| HeaderValue::from_str(&d).ok())
    {
        h.insert(header::LAST_MODIFIED, date);
    }
    if let Some(v) = &location.cache_control {
        h.insert(header::CACHE_CONTROL, v.clone());
    }
    Some(response)
}

/// A static file through `ServeFile`, after the RFC 9110 rules it does not
/// follow (`ranges`).
async fn serve_file(located: &Located, mut request: Request) -> Result<Response, HttpError> {
    let conditional = [header::RANGE, header::IF_RANGE, header::IF_NONE_MATCH]
        .iter()
        .any(|h| request.headers().contains_key(h));
    if conditional {
        // Rare: one more stat for the file's date, only when it matters.
        let modified = std::fs::metadata(located.path.as_path())
            .and_then(|m| m.modified())
            .ok();
        let method = request.method().clone();
        if ranges::prepare(&method, request.headers_mut(), modified) == ranges::Static::NotModified
        {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::NOT_MODIFIED;
            if let Some(date) = modified
                .map(httpdate::fmt_http_date)
                .and_then(|d| HeaderValue::from_str(&d).ok())
            {
                response.headers_mut().insert(header::LAST_MODIFIED, date);
            }
            return Ok(response);
        }
    }
    let service = tower_http::services::ServeFile::new(located.path.as_path());
    match service.oneshot(request).await {
        Ok(response) => Ok(response.map(Body::new)),
        Err(infallible) => match infallible {},
    }
}
