//! A rendered document as an HTTP response: output transcoding, the
//! representation a client's `Accept-Encoding` picks (identity, or a gzip
//! or brotli variant made once per cached entry), its strong ETag, the
//! conditional requests (`If-None-Match`, then `If-Modified-Since`), and
//! the headers for what sits in front (`Vary`, `Cache-Control`,
//! `Last-Modified`, `X-Axle-Cache`). Shared by the render path and the
//! hot path's wire form, so both answer alike.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;

use super::encoding::{Choice, negotiate};
use super::{App, charset, conn, hot::etag_matches};
use crate::cache::{Encoding, Variants};
use crate::pipeline::{CacheStatus, Rendered, ResponseHead};
use crate::site::{Location, OutputCharset};

/// The name of the cache-status header.
pub const CACHE_HEADER: &str = "x-axle-cache";

/// `X-Axle-Cache` as a header name.
const CACHE_HEADER_NAME: axum::http::HeaderName = axum::http::HeaderName::from_static(CACHE_HEADER);

/// The representation of a document chosen for one request.
pub(super) struct Chosen {
    /// The body to send (identity or encoded).
    pub body: Bytes,
    /// Its encoding (None: identity).
    pub encoding: Option<Encoding>,
    /// Its strong ETag when encoded (distinct per encoding); None: the
    /// head's own (identity).
    pub etag: Option<Bytes>,
    /// The request's validators match it: a 304.
    pub not_modified: bool,
}

/// Bodies larger than this are compressed on the blocking pool, never on
/// a connection's thread (brotli takes ~2-3 ms per 100 KB here).
const INLINE_COMPRESS: usize = 64 << 10;

/// Why [`choose`] chose nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// No representation is acceptable (406).
    NotAcceptable,
    /// The chosen variant is not made yet and its body is large: make it
    /// on the blocking pool first ([`document_response`] does).
    Large(Encoding),
}

/// Picks the representation of `rendered` (with `head`) that the request's
/// `Accept-Encoding` asks for, making a variant the first time (stored
/// with the entry when `rendered.variants` is the store's), and evaluates
/// the request's conditions against it. A large body's variant is made
/// here only when `inline_large` says so.
pub(super) fn choose(
    app: &App,
    headers: &impl conn::Headers,
    rendered: &Rendered,
    head: &ResponseHead,
    inline_large: bool,
) -> Result<Chosen, Refused> {
    let small_enough = rendered.body.len() as u64 <= app.limits.http.max_compress_bytes;
    let compressible = head.compressible && small_enough;
    let offered: &[Encoding] = if compressible { &Encoding::ALL } else { &[] };
    let accept = headers.each(&header::ACCEPT_ENCODING);
    let choice = match negotiate(accept, offered, true) {
        Choice::NotAcceptable if !head.compressible && small_enough => {
            // The client refuses identity: a body not worth compressing
            // is compressed for it anyway, if it takes any encoding.
            negotiate(headers.each(&header::ACCEPT_ENCODING), &Encoding::ALL, true)
        }
        other => other,
    };
    let body = match choice {
        Choice::NotAcceptable => return Err(Refused::NotAcceptable),
        Choice::Identity => rendered.body.clone(),
        Choice::Encoded(enc)
            if !inline_large
                && rendered.body.len() > INLINE_COMPRESS
                && rendered
                    .variants
                    .as_ref()
                    .filter(|_| compressible)
                    .and_then(|v| v.get(enc))
                    .is_none() =>
        {
            return Err(Refused::Large(enc));
        }
        Choice::Encoded(enc) => match variant(app, rendered, enc, compressible) {
            Some((body, etag)) => {
                let not_modified = conditions_hold(headers, &etag, head);
                app.pipeline().stats().variants.served.incr();
                return Ok(Chosen {
                    body,
                    encoding: Some(enc),
                    etag: Some(etag),
                    not_modified,
                });
            }
            // Not worth it after all (it would not shrink): identity.
            None => rendered.body.clone(),
        },
    };
    // No allocation here: this is every identity hit.
    let not_modified = conditions_hold(headers, head.etag.as_bytes(), head);
    Ok(Chosen {
        body,
        encoding: None,
        etag: None,
        not_modified,
    })
}

/// The `enc` variant of `rendered`'s body and its ETag: the stored one,
/// or made now (kept with the store's entry, which is weighed again);
/// for a response no store holds, made for this request only. None when
/// it would not be smaller.
fn variant(app: &App, rendered: &Rendered, enc: Encoding, worth: bool) -> Option<(Bytes, Bytes)> {
    let fresh;
    let variants: &Variants = match (&rendered.variants, worth) {
        (Some(v), true) => v,
        _ => {
            fresh = Variants::default();
            &fresh
        }
    };
    let made_before = variants.get(enc).is_some();
    let v = variants.get_or_make(enc, &rendered.body, &rendered.hash);
    if !made_before && let Some(v) = v {
        made(app, rendered, enc, v.bytes.len());
    }
    v.map(|v| (v.bytes.clone(), v.etag.clone()))
}

/// Counts a variant of `len` bytes just made for `rendered`, and has the
/// store weigh its entry again (it holds the variant now).
fn made(app: &App, rendered: &Rendered, enc: Encoding, len: usize) {
    let stats = &app.pipeline().stats().variants;
    let counter = match enc {
        Encoding::Gzip => &stats.gzip,
        Encoding::Br => &stats.br,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    stats.bytes.fetch_add(len as u64, Ordering::Relaxed);
    if let Some(key) = rendered.stored
        && rendered.variants.is_some()
        && let Ok(runtime) = tokio::runtime::Handle::try_current()
    {
        let store = app.pipeline().store().clone();
        runtime.spawn(async move { store.reweigh(&key).await });
    }
}

/// Whether the request's conditions say the client has this
/// representation: `If-None-Match` (weak comparison) when present, else
/// `If-Modified-Since` against `Last-Modified` (RFC 9110 13.2.2).
fn conditions_hold(headers: &impl conn::Headers, etag: &[u8], head: &ResponseHead) -> bool {
    if headers.each(&header::IF_NONE_MATCH).next().is_some() {
        return etag_matches(headers, etag);
    }
    unmodified_since(headers, head.modified)
}

/// Whether `If-Modified-Since` names a date no earlier than `modified`
/// (to the second: HTTP dates have whole seconds).
pub(super) fn unmodified_since(
    headers: &impl conn::Headers,
    modified: Option<std::time::SystemTime>,
) -> bool {
    let Some(modified) = modified else {
        return false;
    };
    let Some(since) = headers
        .each(&header::IF_MODIFIED_SINCE)
        .next()
        .and_then(|v| httpdate::parse_http_date(v.trim()).ok())
    else {
        return false;
    };
    let secs = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    };
    secs(modified) <= secs(since)
}

/// The header lines of an encoded representation in wire form: its own
/// ETag, what the identity head says after its ETag (Vary, Cache-Control,
/// Last-Modified, Content-Type), and `content-encoding`; a 304 stops
/// before Content-Type.
pub(super) fn encoded_lines(head: &ResponseHead, chosen: &Chosen, enc: Encoding) -> Bytes {
    let rest = if chosen.not_modified {
        &head.lines[head.etag_end..head.not_modified_end]
    } else {
        &head.lines[head.etag_end..]
    };
    let etag = chosen.etag.as_deref().unwrap_or(head.etag.as_bytes());
    let mut lines = Vec::with_capacity(rest.len() + etag.len() + 48);
    lines.extend_from_slice(b"etag: ");
    lines.extend_from_slice(etag);
    lines.extend_from_slice(b"\r\n");
    lines.extend_from_slice(rest);
    if !chosen.not_modified {
        lines.extend_from_slice(b"content-encoding: ");
        lines.extend_from_slice(enc.token().as_bytes());
        lines.extend_from_slice(b"\r\n");
    }
    Bytes::from(lines)
}

/// The response for a rendered document: transcoded if the location says
/// so, in the representation the request accepts, 304 when its
/// conditions hold. A large body's variant is made on the blocking pool.
pub(super) async fn document_response(
    app: &App,
    rendered: Rendered,
    request_headers: &HeaderMap,
    location: &Location,
) -> Response {
    match build(app, rendered.clone(), request_headers, location, false) {
        Ok(response) => response,
        Err(enc) => {
            let mut rendered = rendered;
            let variants = Arc::clone(rendered.variants.get_or_insert_with(Arc::default));
            let (body, hash) = (rendered.body.clone(), rendered.hash);
            let made_now = tokio::task::spawn_blocking(move || {
                let before = variants.get(enc).is_some();
                let len = variants
                    .get_or_make(enc, &body, &hash)
                    .map(|v| v.bytes.len());
                len.filter(|_| !before)
            })
            .await;
            match made_now {
                Ok(Some(len)) => made(app, &rendered, enc, len),
                Ok(None) => {}
                Err(_) => tracing::warn!("compressing a response failed; it goes out as it is"),
            }
            build(app, rendered, request_headers, location, true)
                .unwrap_or_else(|_| not_acceptable())
        }
    }
}

/// [`document_response`] on the hot path (no waiting): None when a large
/// variant would have to be made first (the ordinary path makes it).
pub(super) fn hot_document_response(
    app: &App,
    rendered: Rendered,
    request_headers: &HeaderMap,
    location: &Location,
) -> Option<Response> {
    build(app, rendered, request_headers, location, false).ok()
}

/// The response; `Err(enc)`: the `enc` variant of a large body must be
/// made first (never when `inline_large`).
fn build(
    app: &App,
    mut rendered: Rendered,
    request_headers: &HeaderMap,
    location: &Location,
    inline_large: bool,
) -> Result<Response, Encoding> {
    let mut vary_charset = false;
    if let Some(setting) = &location.output_charset {
        vary_charset = matches!(setting, OutputCharset::Accept);
        let accept = request_headers
            .get(header::ACCEPT_CHARSET)
            .and_then(|v| v.to_str().ok());
        let to = charset::target(setting, accept);
        if let Some((body, content_type)) =
            charset::transcode(&rendered.body, &rendered.content_type, to)
        {
            rendered.hash = crate::cache::ContentHash::of(&body);
            rendered.body = body;
            rendered.content_type = Arc::from(content_type);
            // Variants of the untranscoded body do not apply.
            rendered.variants = None;
        }
    }
    // A memoized response brings its header values; transcoding changed
    // the body (and its hash), so then they are built afresh.
    let head = match rendered.head.take() {
        Some(head) if location.output_charset.is_none() => head,
        _ => Arc::new(ResponseHead::of(&rendered, location.cache_control.as_ref())),
    };
    let chosen = match choose(app, request_headers, &rendered, &head, inline_large) {
        Ok(chosen) => chosen,
        Err(Refused::NotAcceptable) => return Ok(not_acceptable()),
        Err(Refused::Large(enc)) => return Err(enc),
    };
    // Headers inserted directly (no builder): this runs on every hit.
    let mut response = if chosen.not_modified {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = Response::new(Body::from(chosen.body));
        r.headers_mut()
            .insert(header::CONTENT_TYPE, head.content_type.clone());
        r
    };
    let headers = response.headers_mut();
    let etag = match chosen.etag {
        None => head.etag.clone(),
        Some(etag) => HeaderValue::from_maybe_shared(etag).unwrap_or(head.etag.clone()),
    };
    headers.insert(header::ETAG, etag);
    if let (Some(enc), false) = (chosen.encoding, chosen.not_modified) {
        headers.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(enc.token()),
        );
    }
    if head.compressible {
        headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if vary_charset {
        headers.append(header::VARY, HeaderValue::from(header::ACCEPT_CHARSET));
    }
    if location.negotiate {
        // The page or the source, by `Accept` (`super::negotiate`).
        headers.append(header::VARY, HeaderValue::from(header::ACCEPT));
    }
    if let Some(v) = &head.cache_control {
        headers.insert(header::CACHE_CONTROL, v.clone());
    }
    if let Some(v) = &head.last_modified {
        headers.insert(header::LAST_MODIFIED, v.clone());
    }
    headers.insert(CACHE_HEADER_NAME, cache_value(rendered.cache));
    Ok(response)
}

/// 406: the client accepts no encoding Axle can send.
pub(super) fn not_acceptable() -> Response {
    let mut r = Response::new(Body::from(
        "406 Not Acceptable: the request's Accept-Encoding excludes every encoding Axle sends (identity, gzip, br)\n",
    ));
    *r.status_mut() = StatusCode::NOT_ACCEPTABLE;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    r
}

/// The `X-Axle-Cache` value (static for the common ones).
fn cache_value(cache: CacheStatus) -> HeaderValue {
    match cache {
        CacheStatus::Hit => HeaderValue::from_static("hit"),
        CacheStatus::Miss => HeaderValue::from_static("miss"),
        CacheStatus::Untransformed => HeaderValue::from_static("none"),
        other => HeaderValue::from_str(&other.header_value())
            .unwrap_or_else(|_| HeaderValue::from_static("partial")),
    }
}

/// The answer of a page that redirected (XSP's `web:redirect`) instead of
/// its rendered document: `status`, `Location`, the page's cookies, never
/// stored, and a line of HTML with the link for a client that does not
/// follow it.
pub(super) fn redirect_response(status: u16, location: &str, cookies: Vec<String>) -> Response {
    // The taglib percent-encodes what a header cannot hold.
    let target = HeaderValue::from_str(location).unwrap_or(HeaderValue::from_static("/"));
    let link = super::escape_markup(location);
    let mut response = Response::new(Body::from(format!(
        "<!DOCTYPE html>\n<title>Redirected</title>\n<p>See <a href=\"{link}\">{link}</a>.</p>\n"
    )));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::SEE_OTHER);
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, target);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=UTF-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    for cookie in cookies {
        if let Ok(value) = HeaderValue::try_from(cookie) {
            headers.append(header::SET_COOKIE, value);
        }
    }
    response
}
