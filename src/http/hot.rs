//! The hot path: a GET or HEAD whose memoized response is still valid,
//! answered before the render path's future is built, and in wire form
//! (pre-built header lines) straight from the connection loop. Kept apart
//! because every cache hit runs exactly this code, and nothing else may
//! creep into it unmeasured.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{Method, header};
use axum::response::Response;

use super::params::{pairs, params};
use super::{App, Chosen, choose, conn, negotiate, passthru};
use crate::cache::{FieldKey, Key};
use crate::pipeline::{HotHit, Pipeline, Rendered};
use crate::provider::normalize_request_path;
use crate::site::Location;

/// What the hot memo has for a request.
pub(super) enum Hot {
    /// The response, whole.
    Answer(Response),
    /// A response whose body is to be read from the store first.
    Stored(HotStored),
    /// Nothing: the render path answers.
    Miss,
}

/// A memoized response without its body (the store's memory tier no
/// longer holds it), the store key to read the body by, and the request's
/// location. The fast path hands it to the service in the request's
/// extensions (`conn::Fast::Found`): reading a body from disk waits.
#[derive(Clone)]
pub(super) struct HotStored {
    rendered: Rendered,
    stored: Key,
    location: Arc<Location>,
}

/// The hot path: a GET or HEAD of a document whose memoized response is
/// still valid (one `stat` per file it came from, or none when watching).
/// Anything else, errors included, is left to [`respond`].
pub(super) fn hot_response(app: &App, request: &Request) -> Hot {
    let uri = request.uri();
    let Some((key, location)) = hot_memo_key(
        app,
        request.method(),
        uri.path(),
        uri.query().unwrap_or(""),
        request.headers(),
    ) else {
        return Hot::Miss;
    };
    if may_want_source(&location, request.headers()) {
        return Hot::Miss;
    }
    match app.pipeline.hot_find(&key) {
        Some(HotHit::Ready(rendered)) => {
            match super::document::hot_document_response(
                app,
                rendered,
                request.headers(),
                &location,
            ) {
                Some(response) => Hot::Answer(response),
                None => Hot::Miss,
            }
        }
        Some(HotHit::Stored(rendered, stored)) => Hot::Stored(HotStored {
            rendered,
            stored,
            location,
        }),
        None => Hot::Miss,
    }
}

/// The response to a request whose memoized response's body is read from
/// the store (memory, else a lower tier such as the disk tier); None when
/// no tier has the body the memo answered with.
pub(super) async fn hot_stored_response(
    app: &App,
    hot: HotStored,
    request_headers: &axum::http::HeaderMap,
) -> Option<Response> {
    let rendered = app.pipeline.hot_fill(hot.rendered, hot.stored).await?;
    super::document::hot_document_response(app, rendered, request_headers, &hot.location)
}

/// The hot-memo key of a GET or HEAD, and its location; None for a
/// request that is never memoized.
fn hot_memo_key(
    app: &App,
    method: &Method,
    path: &str,
    query: &str,
    headers: &impl conn::Headers,
) -> Option<(FieldKey, Arc<Location>)> {
    if method != Method::GET && method != Method::HEAD {
        return None;
    }
    let normal = normalize_request_path(path)?;
    let location = app.site().location(&normal.decoded);
    let query = pairs(query).ok()?;
    let (key, _, _) = hot_key(method, &location, headers, &query, &normal.url)?;
    Some((key, location))
}

/// The connection loop's fast path (`conn::Fast`), given the request head
/// before any `http::Request` is built: a hot-memo hit whose header lines
/// were built when it was memoized goes out in wire form. Locations that
/// transcode the output, and every request while debug logging is on
/// (`handle` logs each one), take the ordinary path without asking the
/// memo here.
pub(super) fn hot_wire(app: &App, head: &conn::Head<'_>) -> conn::Fast {
    if tracing::enabled!(tracing::Level::DEBUG) {
        return conn::Fast::Pass;
    }
    // One hit in 16 per thread is timed (two clock reads); every one when
    // the access log says how long it took.
    let sampled = super::metrics::RequestMetrics::sample_hit();
    let started = (sampled || app.access_log.is_some()).then(std::time::Instant::now);
    let Some((key, location)) = hot_memo_key(app, head.method, head.path, head.query, head) else {
        return conn::Fast::Missed;
    };
    if location.output_charset.is_some() || location.negotiate {
        // Headers the wire form does not write (`Vary: Accept-Charset`,
        // `Vary: Accept`): the ordinary path answers, memo and all.
        return conn::Fast::Pass;
    }
    let rendered = match app.pipeline.hot_find(&key) {
        Some(HotHit::Ready(rendered)) => rendered,
        Some(HotHit::Stored(rendered, stored)) => {
            // Its body is read (from disk, usually) by the service.
            let mut found = axum::http::Extensions::new();
            found.insert(HotStored {
                rendered,
                stored,
                location,
            });
            return conn::Fast::Found(found);
        }
        None => return conn::Fast::Missed,
    };
    // Every memoized response carries its head; without one (never, in
    // practice), the ordinary path answers.
    let Some(lines) = rendered.head.as_ref() else {
        return conn::Fast::Pass;
    };
    let Ok(chosen) = super::document::choose(app, head, &rendered, lines, false) else {
        // 406, or a large variant to make first: the ordinary path.
        return conn::Fast::Pass;
    };
    let not_modified = chosen.not_modified;
    let head_only = *head.method == Method::HEAD;
    let took = started.map(|t| t.elapsed());
    app.metrics
        .wire_hit(head_only, not_modified, took.filter(|_| sampled));
    let untransformed = rendered.cache == crate::pipeline::CacheStatus::Untransformed;
    if sampled && !untransformed {
        app.pages
            .record(head.path, u64::from(super::metrics::HIT_SAMPLE), None);
    }
    if let Some(log) = &app.access_log {
        log.log(&super::access_log::Line {
            peer: head.peer,
            request: super::access_log::Request::Parsed {
                method: head.method.as_str(),
                path: head.path,
                query: head.query,
                // The fast path serves only HTTP/1.1.
                version: axum::http::Version::HTTP_11,
            },
            status: if not_modified { 304 } else { 200 },
            bytes: if not_modified || head_only {
                0
            } else {
                chosen.body.len() as u64
            },
            referer: head.raw(&header::REFERER),
            user_agent: head.raw(&header::USER_AGENT),
            cache: if untransformed { "none" } else { "hit" },
            took: took.unwrap_or_default(),
        });
    }
    let fields = match chosen.encoding {
        None if not_modified => lines.lines.slice(..lines.not_modified_end),
        None => lines.lines.clone(),
        Some(enc) => super::document::encoded_lines(lines, &chosen, enc),
    };
    conn::Fast::Answer(conn::Wire {
        not_modified,
        fields,
        more: if untransformed {
            b"x-axle-cache: none\r\n"
        } else {
            b"x-axle-cache: hit\r\n"
        },
        body: chosen.body,
    })
}

/// Whether `If-None-Match` names `etag` (or is `*`), by the weak comparison
/// RFC 9110 (13.1.2) prescribes for it: `W/"x"` matches `"x"`.
pub(super) fn etag_matches(headers: &impl conn::Headers, etag: &[u8]) -> bool {
    fn opaque(tag: &[u8]) -> &[u8] {
        tag.strip_prefix(b"W/").unwrap_or(tag)
    }
    let ours = opaque(etag);
    headers.each(&header::IF_NONE_MATCH).any(|v| {
        v.split(',').any(|t| {
            let t = t.trim();
            t == "*" || opaque(t.as_bytes()) == ours
        })
    })
}

/// Whether a request may want a negotiating document's source
/// (`negotiate = true`), whose type only the source says: then the hot
/// memo, which holds pages, must not answer it, nor memoize its answer.
/// (Only on the ordinary path: the connection loop's own writer passes
/// every negotiating location to it, so `hot_wire` never asks, and
/// `hot_key` stays as it was for the wire's `Head`.)
pub(super) fn may_want_source(location: &Location, headers: &axum::http::HeaderMap) -> bool {
    location.negotiate && !negotiate::surely_page(headers, location.source_type.as_deref())
}

/// A request's hot-memo key, with the style choice and params it was built
/// from (the render request of a miss is made of them).
pub(super) type HotKey = (FieldKey, Chosen, Vec<(String, String)>);

/// The hot-memo key of a request for `path` (normalized) under `location`,
/// with the style choice and params it was built from; None when such a
/// request is never memoized (POST, passthru, directory listings, traced
/// locations).
pub(super) fn hot_key(
    method: &Method,
    location: &Location,
    headers: &impl conn::Headers,
    query: &[(String, String)],
    path: &str,
) -> Option<HotKey> {
    if method == Method::POST
        || passthru::wants_passthru(location, query)
        || location.directories
        || location.trace.is_some()
    {
        return None;
    }
    let chosen = choose::choose(location, headers, query, None);
    let params = params(location, query, &[]);
    let key = Pipeline::hot_key(
        path,
        Some(location.hash),
        &chosen.selection,
        chosen.from_client,
        location.xinclude,
        &params,
    );
    Some((key, chosen, params))
}
