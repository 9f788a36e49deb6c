//! Who the admin listener answers (issue #36 row 12). The admin listener
//! is meant for the operator's own tools, but a web browser on the
//! operator's machine can reach it too: a page on any site can send it a
//! cross-site request (`fetch`, a form), and through DNS rebinding
//! (`evil.example` resolving to 127.0.0.1 after the page loaded) can even
//! read its answers. So every admin request is checked here before any
//! route sees it:
//!
//! - **Host**: answered only under the admin's own names: the address the
//!   connection arrived at and the listen address (IP literals), and, on a
//!   loopback or wildcard listener, `localhost`, `127.0.0.1` and `[::1]`;
//!   plus the names of `--admin-host`. A port, when the Host has one, must
//!   be the admin's (or the one an `--admin-host NAME:PORT` names). Any
//!   other Host, or none, is 421 Misdirected Request: this listener is not
//!   the server for that authority (a rebinding page's Host is always its
//!   own name, which is never on the list).
//! - **State-changing requests** (every method but GET and HEAD: `POST
//!   /purge`): refused (403) when an `Origin` is present and is not one of
//!   the admin's own origins (`http://` or `https://` and an allowed Host),
//!   when `Sec-Fetch-Site` says `cross-site` or `same-site`, and when the
//!   request lacks the `X-Axle-Admin` header. A browser sends a custom
//!   header cross-origin only after a CORS preflight, which the admin never
//!   grants (it answers no `OPTIONS` with CORS headers), so no page can
//!   make a browser send one; `axle cache purge` and scripts add it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The header a state-changing admin request must carry (any value).
pub const ADMIN_HEADER: &str = "x-axle-admin";

/// The local address of an admin connection (where the client's packets
/// arrived: on a wildcard listener, the address it used).
#[derive(Debug, Clone, Copy)]
pub struct LocalAddr(pub Option<SocketAddr>);

impl Connected<axum::serve::IncomingStream<'_, tokio::net::TcpListener>> for LocalAddr {
    fn connect_info(stream: axum::serve::IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        LocalAddr(stream.io().local_addr().ok())
    }
}

/// An extra name the admin answers to (`--admin-host`), lowercased: with
/// a port, only that port; without, no port or the admin's.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Name {
    host: String,
    port: Option<u16>,
}

/// The admin listener's names and the rules above.
#[derive(Debug, Clone)]
pub struct Guard {
    /// The address it listens on (its port is the admin's port).
    listen: SocketAddr,
    /// `--admin-host` names.
    extra: Vec<Name>,
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A Host that is not one of the admin's names (or none).
    Host(Option<String>),
    /// A state-changing request from another origin, or without the
    /// header only a same-origin client can send.
    Forbidden(String),
}

impl Guard {
    /// The guard of a listener bound at `listen` (its real port, after
    /// binding) with the extra names `extra` (`NAME` or `NAME:PORT`).
    pub fn new(listen: SocketAddr, extra: &[String]) -> Result<Guard, String> {
        let extra = extra
            .iter()
            .map(|n| parse_name(n).ok_or_else(|| invalid_name(n)))
            .collect::<Result<_, _>>()?;
        Ok(Guard { listen, extra })
    }

    /// Whether the listener is on loopback or a wildcard address, where
    /// `localhost` and the loopback literals name it.
    fn local_names(&self) -> bool {
        let ip = canonical(self.listen.ip());
        ip.is_loopback() || ip.is_unspecified()
    }

    /// The Host values the admin answers to (for messages and tests), the
    /// connection's own address (`local`) first.
    pub fn names(&self, local: Option<SocketAddr>) -> Vec<String> {
        let port = self.listen.port();
        let mut out = Vec::new();
        let mut push = |s: String| {
            if !out.contains(&s) {
                out.push(s);
            }
        };
        if let Some(local) = local {
            push(SocketAddr::new(canonical(local.ip()), port).to_string());
        }
        push(SocketAddr::new(canonical(self.listen.ip()), port).to_string());
        if self.local_names() {
            push(format!("localhost:{port}"));
            push(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port).to_string());
            push(SocketAddr::new(Ipv6Addr::LOCALHOST.into(), port).to_string());
        }
        for n in &self.extra {
            match n.port {
                Some(p) => push(format!("{}:{p}", n.host)),
                None => push(n.host.clone()),
            }
        }
        out
    }

    /// Whether `authority` (a Host value, or an Origin's host and port) is
    /// one of the admin's names for a connection that arrived at `local`.
    pub fn allows(&self, authority: &str, local: Option<SocketAddr>) -> bool {
        let Some(Name { host, port }) = parse_name(authority) else {
            return false;
        };
        let admin_port = self.listen.port();
        let extra = self.extra.iter().any(|n| {
            n.host == host
                && match n.port {
                    Some(p) => port == Some(p),
                    None => port.is_none_or(|p| p == admin_port),
                }
        });
        if extra {
            return true;
        }
        if port.is_some_and(|p| p != admin_port) {
            return false;
        }
        if let Some(ip) = ip_literal(&host) {
            let ip = canonical(ip);
            let own =
                local.is_some_and(|l| canonical(l.ip()) == ip) || canonical(self.listen.ip()) == ip;
            let loopback = self.local_names()
                && (ip == IpAddr::V4(Ipv4Addr::LOCALHOST) || ip == IpAddr::V6(Ipv6Addr::LOCALHOST));
            return own || loopback;
        }
        self.local_names() && host == "localhost"
    }

    /// Checks `method` and `headers` of a request that arrived at `local`.
    pub fn check(
        &self,
        method: &Method,
        headers: &HeaderMap,
        local: Option<SocketAddr>,
    ) -> Result<(), Refusal> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let host = match (hosts.next(), hosts.next()) {
            (Some(h), None) => h.to_str().ok(),
            _ => None,
        };
        match host {
            Some(h) if self.allows(h, local) => {}
            _ => {
                let shown = headers
                    .get(header::HOST)
                    .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned());
                return Err(Refusal::Host(shown));
            }
        }
        if method == Method::GET || method == Method::HEAD {
            return Ok(());
        }
        let mut origins = headers.get_all(header::ORIGIN).iter();
        match (origins.next(), origins.next()) {
            (None, _) => {}
            (Some(o), None) if self.own_origin(o.as_bytes(), local) => {}
            (Some(o), _) => {
                return Err(Refusal::Forbidden(format!(
                    "a request from another origin ('{}') may not change the admin's state",
                    String::from_utf8_lossy(o.as_bytes())
                )));
            }
        }
        if let Some(site) = headers.get("sec-fetch-site")
            && !matches!(site.as_bytes(), b"same-origin" | b"none")
        {
            return Err(Refusal::Forbidden(format!(
                "a {} request (Sec-Fetch-Site) may not change the admin's state",
                String::from_utf8_lossy(site.as_bytes())
            )));
        }
        if !headers.contains_key(ADMIN_HEADER) {
            return Err(Refusal::Forbidden(format!(
                "a state-changing admin request must carry the header '{}: 1' \
                 (axle cache purge sends it; a web page cannot)",
                "X-Axle-Admin"
            )));
        }
        Ok(())
    }

    /// Whether `origin` (`scheme://host[:port]`) is the admin's own.
    fn own_origin(&self, origin: &[u8], local: Option<SocketAddr>) -> bool {
        let Ok(origin) = std::str::from_utf8(origin) else {
            return false;
        };
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        authority.is_some_and(|a| !a.contains('/') && self.allows(a, local))
    }
}

/// `name` parsed as a Host value: `host`, `host:port`, `[v6]` or
/// `[v6]:port`, lowercased; None when it is not one.
fn parse_name(name: &str) -> Option<Name> {
    let name = name.trim();
    let (host, port) = if let Some(rest) = name.strip_prefix('[') {
        let (inner, after) = rest.split_once(']')?;
        inner.parse::<Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (format!("[{inner}]"), port)
    } else {
        match name.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (name.to_string(), None),
        }
    };
    let port = match port {
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|_| p.bytes().all(|b| b.is_ascii_digit()))?,
        ),
        None => None,
    };
    let valid = host.starts_with('[')
        || (!host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')));
    valid.then(|| Name {
        host: host.to_ascii_lowercase(),
        port,
    })
}

/// Checks an `--admin-host` value (a host name, an IPv4 address or a
/// bracketed IPv6 address, with an optional `:PORT`): the value, trimmed.
pub fn parse_admin_host(text: &str) -> Result<String, String> {
    parse_name(text)
        .map(|_| text.trim().to_string())
        .ok_or_else(|| invalid_name(text))
}

fn invalid_name(name: &str) -> String {
    format!(
        "--admin-host '{name}' is not a host name, IP address or [IPv6] address with an optional :PORT"
    )
}

/// `host` as an IP address when it is a literal (`1.2.3.4`, `[::1]`).
fn ip_literal(host: &str) -> Option<IpAddr> {
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6),
        None => host.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 one (a dual-stack listener's
/// IPv4 clients).
fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

/// The middleware every admin route runs behind.
pub async fn guard(
    State(guard): State<std::sync::Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let local = request
        .extensions()
        .get::<ConnectInfo<LocalAddr>>()
        .and_then(|c| c.0.0);
    match guard.check(request.method(), request.headers(), local) {
        Ok(()) => next.run(request).await,
        Err(Refusal::Host(host)) => {
            tracing::warn!(
                host = host.as_deref().unwrap_or("(none)"),
                "admin request refused: not one of the admin's Host names"
            );
            let text = format!(
                "axle admin: this listener answers only to the Host names {}; {} is not one of them \
                 (name more with axle serve --admin-host NAME)\n",
                guard.names(local).join(", "),
                match &host {
                    Some(h) => format!("'{h}'"),
                    None => "a request without one".into(),
                }
            );
            plain(StatusCode::MISDIRECTED_REQUEST, text)
        }
        Err(Refusal::Forbidden(why)) => {
            tracing::warn!(method = %request.method(), path = request.uri().path(), why, "admin request refused");
            plain(StatusCode::FORBIDDEN, format!("axle admin: {why}\n"))
        }
    }
}

fn plain(status: StatusCode, text: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        text,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn loopback() -> Guard {
        Guard::new("127.0.0.1:9090".parse().unwrap(), &[]).unwrap()
    }

    #[test]
    fn loopback_names_with_or_without_the_port() {
        let g = loopback();
        let local = Some("127.0.0.1:9090".parse().unwrap());
        for ok in [
            "127.0.0.1:9090",
            "localhost:9090",
            "LOCALHOST:9090",
            "[::1]:9090",
            "[0:0:0:0:0:0:0:1]:9090",
            "localhost",
            "127.0.0.1",
        ] {
            assert!(g.allows(ok, local), "{ok}");
        }
        for no in [
            "evil.example:9090",
            "evil.example",
            "localhost:9091",
            "127.0.0.2:9090",
            "127.1:9090",
            "localhost.evil.example:9090",
            "localhost:9090:9090",
            "localhost:+9090",
            "",
            "[::1",
            "[::2]:9090",
        ] {
            assert!(!g.allows(no, local), "{no}");
        }
    }

    #[test]
    fn a_wildcard_listener_answers_to_the_address_a_client_used() {
        let g = Guard::new("0.0.0.0:9090".parse().unwrap(), &[]).unwrap();
        let local = Some("192.0.2.7:9090".parse().unwrap());
        assert!(g.allows("192.0.2.7:9090", local));
        assert!(g.allows("localhost:9090", local));
        assert!(g.allows("0.0.0.0:9090", local));
        assert!(!g.allows("192.0.2.8:9090", local));
        // A dual-stack listener's IPv4 client.
        let g = Guard::new("[::]:9090".parse().unwrap(), &[]).unwrap();
        let mapped = Some("[::ffff:192.0.2.7]:9090".parse().unwrap());
        assert!(g.allows("192.0.2.7:9090", mapped));
        // A public listener has no loopback names.
        let g = Guard::new("192.0.2.7:9090".parse().unwrap(), &[]).unwrap();
        assert!(g.allows("192.0.2.7:9090", local));
        assert!(!g.allows("localhost:9090", local));
    }

    #[test]
    fn extra_names_with_and_without_a_port() {
        let g = Guard::new(
            "127.0.0.1:9090".parse().unwrap(),
            &["Admin.Internal".into(), "proxy.example:8443".into()],
        )
        .unwrap();
        assert!(g.allows("admin.internal", None));
        assert!(g.allows("admin.internal:9090", None));
        assert!(!g.allows("admin.internal:80", None));
        assert!(g.allows("proxy.example:8443", None));
        assert!(!g.allows("proxy.example", None));
        assert!(!g.allows("proxy.example:9090", None));
        assert!(Guard::new("127.0.0.1:1".parse().unwrap(), &["a/b".into()]).is_err());
        assert!(Guard::new("127.0.0.1:1".parse().unwrap(), &["a:x".into()]).is_err());
        assert!(Guard::new("127.0.0.1:1".parse().unwrap(), &["".into()]).is_err());
    }

    #[test]
    fn state_changing_requests_need_the_header_and_no_foreign_origin() {
        let g = loopback();
        let post = Method::POST;
        let ok = [("host", "127.0.0.1:9090"), ("x-axle-admin", "1")];
        assert_eq!(g.check(&post, &headers(&ok), None), Ok(()));
        let with = |extra: &[(&str, &str)]| {
            let mut all = ok.to_vec();
            all.extend_from_slice(extra);
            g.check(&post, &headers(&all), None)
        };
        assert_eq!(with(&[("origin", "http://localhost:9090")]), Ok(()));
        assert_eq!(with(&[("sec-fetch-site", "same-origin")]), Ok(()));
        for bad in [
            &[("origin", "http://evil.example")][..],
            &[("origin", "null")],
            &[("origin", "http://localhost:9090/x")],
            &[("origin", "http://localhost:9091")],
            &[
                ("origin", "http://localhost:9090"),
                ("origin", "http://evil.example"),
            ],
            &[("sec-fetch-site", "cross-site")],
            &[("sec-fetch-site", "same-site")],
        ] {
            assert!(matches!(with(bad), Err(Refusal::Forbidden(_))), "{bad:?}");
        }
        // text/plain from a page, no custom header: refused.
        let simple = headers(&[("host", "127.0.0.1:9090"), ("content-type", "text/plain")]);
        assert!(matches!(
            g.check(&post, &simple, None),
            Err(Refusal::Forbidden(_))
        ));
        // GET needs only the Host.
        let get = headers(&[
            ("host", "localhost:9090"),
            ("origin", "http://evil.example"),
        ]);
        assert_eq!(g.check(&Method::GET, &get, None), Ok(()));
        let foreign = headers(&[("host", "evil.example:9090")]);
        assert_eq!(
            g.check(&Method::GET, &foreign, None),
            Err(Refusal::Host(Some("evil.example:9090".into())))
        );
        assert_eq!(
            g.check(&Method::GET, &HeaderMap::new(), None),
            Err(Refusal::Host(None))
        );
        let two = headers(&[("host", "localhost:9090"), ("host", "localhost:9090")]);
        assert!(matches!(
            g.check(&Method::GET, &two, None),
            Err(Refusal::Host(_))
        ));
    }
}
