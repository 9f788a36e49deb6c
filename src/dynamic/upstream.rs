//! The `upstream` source: the document is fetched from a configured
//! backend ([`crate::upstream::Upstream`], which alone decides what is
//! contacted), the request's path below the mount put into its URL
//! template. Cacheability follows the upstream (`cache = "validated"`, the
//! default: an answer with an `ETag` or a `max-age` may be cached, and is
//! revalidated or reused as it says), or is forced: `"none"` (fetched every
//! time, never cached) or a time-to-live ([`super::Memoized`]).

use http::StatusCode;

use super::{BoxFuture, Cacheability, DynamicProvider, Produced, SourceError, SourceRequest};
use crate::upstream::{Upstream, UpstreamConfig, UpstreamError};

/// A document fetched from an upstream for each request.
#[derive(Debug)]
pub struct UpstreamSource {
    upstream: Upstream,
    cache: Cacheability,
}

impl UpstreamSource {
    /// A source fetching through `config`, cached as `cache` says (with
    /// `Cacheability::Uncacheable`, the upstream's own memo is off too:
    /// every request is a fetch). A TTL is applied by wrapping this in
    /// [`super::Memoized`].
    pub fn new(mut config: UpstreamConfig, cache: Cacheability) -> Result<UpstreamSource, String> {
        if cache == Cacheability::Uncacheable {
            config.memo_size = 0;
        }
        let upstream = Upstream::new(config).map_err(|e| e.to_string())?;
        Ok(UpstreamSource { upstream, cache })
    }
}

impl DynamicProvider for UpstreamSource {
    fn describe(&self) -> String {
        "upstream".to_string()
    }

    fn memo_key(&self, request: &SourceRequest) -> Option<Vec<u8>> {
        // The path and query put into the URL, and the headers forwarded.
        let url = [
            Some(request.path_below.as_bytes()),
            Some(request.query.as_deref().unwrap_or("").as_bytes()),
        ];
        let headers = self
            .upstream
            .config()
            .headers
            .iter()
            .map(|name| request.headers.get(name.as_str()).map(|v| v.as_bytes()));
        Some(super::memo_key(url.into_iter().chain(headers)))
    }

    fn produce<'a>(
        &'a self,
        request: &'a SourceRequest,
    ) -> BoxFuture<'a, Result<Produced, SourceError>> {
        Box::pin(async move {
            let fetched = self
                .upstream
                .fetch(
                    &request.path_below,
                    request.query.as_deref(),
                    &request.headers,
                )
                .await
                .map_err(|e| {
                    let tried = self
                        .upstream
                        .request_url(&request.path_below, request.query.as_deref())
                        .ok();
                    source_error(&e, tried.as_ref())
                })?;
            let cacheable = match self.cache {
                Cacheability::Validated => fetched.cacheable,
                Cacheability::Ttl(_) => true,
                Cacheability::Uncacheable => false,
            };
            Ok(Produced {
                bytes: fetched.body,
                cacheable,
            })
        })
    }
}

/// The upstream's failure as the source's: its status decides. The
/// message names the URL it tried ([`shown_url`]), so a 502 page says
/// what could not be reached.
fn source_error(e: &UpstreamError, tried: Option<&http::Uri>) -> SourceError {
    let message = match tried {
        Some(url) => format!("upstream {}: {e}", shown_url(url)),
        None => format!("upstream: {e}"),
    };
    match e.status() {
        StatusCode::BAD_REQUEST => SourceError::BadRequest(message),
        StatusCode::NOT_FOUND => SourceError::NotFound(message),
        StatusCode::GATEWAY_TIMEOUT => SourceError::Timeout(message),
        _ => SourceError::Failed(message),
    }
}

/// `url` as a page may show it: scheme, host, port and path; never
/// userinfo or the query (where credentials and tokens travel).
fn shown_url(url: &http::Uri) -> String {
    let scheme = url.scheme_str().unwrap_or("http");
    let host = url.host().unwrap_or("");
    let port = url.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    format!("{scheme}://{host}{port}{}", url.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shown_url_has_no_userinfo_and_no_query() {
        let url: http::Uri = "http://user:pw@127.0.0.1:8080/a/b.xml?token=s3cret"
            .parse()
            .unwrap();
        assert_eq!(shown_url(&url), "http://127.0.0.1:8080/a/b.xml");
    }
}
