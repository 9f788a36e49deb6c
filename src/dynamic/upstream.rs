//! The `upstream` source: the document is fetched from a configured
//! backend ([`crate::upstream::Upstream`], which alone decides what is
//! contacted), the request's path below the mount put into its URL
//! template. Cacheability follows the upstream (`cache = "validated"`, the
//! default: an answer with an `ETag` or a `max-age` may be cached, and is
//! revalidated or reused as it says), or is forced: `"none"` (fetched every
//! time, never cached) or a time-to-live ([`super::Memoized`]).
//!
//! A template that is a path (`/dynamic/mirrored{path}?passthru=1`) names
//! this same server, wherever it listens: the authority is the address its
//! public listener is bound to ([`SourceRequest::server`]), a wildcard
//! address read as the loopback address of its family, so the site's
//! configuration need not repeat `--listen` (nor know the port the system
//! chose for `--listen 127.0.0.1:0`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use http::StatusCode;

use super::{BoxFuture, Cacheability, DynamicProvider, Produced, SourceError, SourceRequest};
use crate::upstream::{Upstream, UpstreamConfig, UpstreamError};

/// A document fetched from an upstream for each request.
#[derive(Debug)]
pub struct UpstreamSource {
    target: Target,
    cache: Cacheability,
}

/// Where the documents come from.
#[derive(Debug)]
enum Target {
    /// The backend the URL names.
    Configured(Arc<Upstream>),
    /// This server (the URL is a path): the client for the address it is
    /// bound to, made at the first request (an address never changes for
    /// one server, but one source may be served by several in a test).
    ThisServer {
        config: UpstreamConfig,
        bound: Mutex<Option<(SocketAddr, Arc<Upstream>)>>,
    },
}

/// The address to fetch from for a server bound to `bound`: a wildcard
/// (`0.0.0.0`, `[::]`) is reached on the loopback address of its family;
/// an IPv4 address written as IPv6 (`::ffff:a.b.c.d`) as IPv4.
fn reachable(bound: SocketAddr) -> SocketAddr {
    let ip = match bound.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip.to_canonical(),
    };
    SocketAddr::new(ip, bound.port())
}

/// `config` with its path template put under `addr`.
fn at(config: &UpstreamConfig, addr: SocketAddr) -> UpstreamConfig {
    let mut config = config.clone();
    config.url = format!("http://{addr}{}", config.url);
    config
}

impl UpstreamSource {
    /// A source fetching through `config`, cached as `cache` says (with
    /// `Cacheability::Uncacheable`, the upstream's own memo is off too:
    /// every request is a fetch). A TTL is applied by wrapping this in
    /// [`super::Memoized`].
    ///
    /// A URL that is a path names this server ([`Self::names_this_server`]): it
    /// is checked here as it will be used, under a loopback address.
    pub fn new(mut config: UpstreamConfig, cache: Cacheability) -> Result<UpstreamSource, String> {
        if cache == Cacheability::Uncacheable {
            config.memo_size = 0;
        }
        let target = if Self::names_this_server(&config.url) {
            if config.url.starts_with("//") {
                return Err(format!(
                    "`{}`: a URL of this server is a path with one leading / \
                     (another host is written http://host:port/...)",
                    config.url
                ));
            }
            let probe = at(&config, SocketAddr::from((Ipv4Addr::LOCALHOST, 80)));
            Upstream::new(probe).map_err(|e| e.to_string())?;
            Target::ThisServer {
                config,
                bound: Mutex::new(None),
            }
        } else {
            Target::Configured(Arc::new(Upstream::new(config).map_err(|e| e.to_string())?))
        };
        Ok(UpstreamSource { target, cache })
    }

    /// Whether an upstream URL template names this same server: a path,
    /// not `http://...`.
    pub fn names_this_server(url: &str) -> bool {
        url.starts_with('/')
    }

    fn config(&self) -> &UpstreamConfig {
        match &self.target {
            Target::Configured(upstream) => upstream.config(),
            Target::ThisServer { config, .. } => config,
        }
    }

    /// The client for `request`: the configured one, or the one for the
    /// address this server is bound to.
    fn upstream(&self, request: &SourceRequest) -> Result<Arc<Upstream>, SourceError> {
        let (config, bound) = match &self.target {
            Target::Configured(upstream) => return Ok(Arc::clone(upstream)),
            Target::ThisServer { config, bound } => (config, bound),
        };
        let Some(server) = request.server else {
            return Err(SourceError::Failed(
                "upstream: the url names this server (a path), and this document is \
                 not being served on a listener"
                    .to_string(),
            ));
        };
        let addr = reachable(server);
        let mut bound = bound.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((was, upstream)) = bound.as_ref()
            && *was == addr
        {
            return Ok(Arc::clone(upstream));
        }
        let upstream = Arc::new(
            Upstream::new(at(config, addr))
                .map_err(|e| SourceError::Failed(format!("upstream: {e}")))?,
        );
        *bound = Some((addr, Arc::clone(&upstream)));
        Ok(upstream)
    }
}

impl DynamicProvider for UpstreamSource {
    fn describe(&self) -> String {
        match self.target {
            Target::Configured(_) => "upstream".to_string(),
            Target::ThisServer { .. } => "upstream (this server)".to_string(),
        }
    }

    fn memo_key(&self, request: &SourceRequest) -> Option<Vec<u8>> {
        // The path and query put into the URL, and the headers forwarded.
        let url = [
            Some(request.path_below.as_bytes()),
            Some(request.query.as_deref().unwrap_or("").as_bytes()),
        ];
        let headers = self
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
            let upstream = self.upstream(request)?;
            let fetched = upstream
                .fetch(
                    &request.path_below,
                    request.query.as_deref(),
                    &request.headers,
                )
                .await
                .map_err(|e| {
                    let tried = upstream
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
                status: None,
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
        StatusCode::LOOP_DETECTED => SourceError::Loop(message),
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

    #[test]
    fn a_wildcard_listener_is_reached_on_loopback_and_others_as_bound() {
        let cases = [
            ("0.0.0.0:8080", "127.0.0.1:8080"),
            ("[::]:8080", "[::1]:8080"),
            ("127.0.0.1:41234", "127.0.0.1:41234"),
            ("192.0.2.7:80", "192.0.2.7:80"),
            ("[::ffff:127.0.0.1]:9", "127.0.0.1:9"),
            ("[2001:db8::1]:8080", "[2001:db8::1]:8080"),
        ];
        for (bound, want) in cases {
            let bound: SocketAddr = bound.parse().unwrap();
            assert_eq!(reachable(bound).to_string(), want, "{bound}");
        }
    }

    #[tokio::test]
    async fn a_path_url_without_a_listener_is_a_failure_naming_why() {
        let source = UpstreamSource::new(
            UpstreamConfig::new("/d{path}?passthru=1"),
            Cacheability::Validated,
        )
        .unwrap();
        assert_eq!(source.describe(), "upstream (this server)");
        let request = SourceRequest::new(http::Method::GET, "/m", "/page.xml");
        match source.produce(&request).await {
            Err(SourceError::Failed(why)) => assert!(why.contains("not being served"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_path_url_is_checked_at_load_as_it_will_be_used() {
        for (url, why) in [
            ("/d{path}{path}", "at most once"),
            ("/d?x={path}", "only in the URL's path"),
            ("//host/{path}", "one leading /"),
        ] {
            let e =
                UpstreamSource::new(UpstreamConfig::new(url), Cacheability::Validated).unwrap_err();
            assert!(e.contains(why), "{url}: {e}");
        }
    }
}
