//! The one way an address is written on the command line, for every
//! subcommand that takes one (`serve --listen`, `serve --admin`, `cache
//! stats|purge --admin`, `warm --server`): `PORT`, `:PORT`, `HOST:PORT`,
//! `[IPv6]:PORT`, or any of the last two as `http://HOST:PORT` (a
//! trailing `/` allowed), so an address copied from a start line or a
//! browser works anywhere. What a bare port means depends on the side:
//! a listener takes `PORT` as loopback and `:PORT` as every interface; a
//! client connects to `127.0.0.1:PORT` for both.

use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};

/// The forms, for messages.
pub const ADDRESS_FORMS: &str = "PORT, :PORT, HOST:PORT, [IPv6]:PORT or http://HOST:PORT (e.g. 8080, :8080, \
     localhost:8080, 127.0.0.1:8080, [::1]:8080, http://127.0.0.1:8080/)";

/// An address as written: a host (or none) and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    host: Host,
    port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    /// `PORT`.
    Bare,
    /// `:PORT`.
    Any,
    /// A name or an IPv4 literal, or an IPv6 literal in brackets.
    Named(String),
}

impl Address {
    /// Reads `text` in one of the forms ([`ADDRESS_FORMS`]); nothing is
    /// resolved yet.
    pub fn parse(text: &str) -> Result<Address, String> {
        let bad = |why: &str| format!("'{text}' is not an address{why}: use {ADDRESS_FORMS}");
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        if lower.starts_with("https://") {
            return Err(bad(" (Axle's listeners speak plain http://)"));
        }
        let (t, url) = match lower.strip_prefix("http://") {
            Some(_) => {
                let rest = &t["http://".len()..];
                (rest.strip_suffix('/').unwrap_or(rest), true)
            }
            None => (t, false),
        };
        if t.contains('/') {
            return Err(bad(" (an address has no path)"));
        }
        let port = |p: &str| {
            p.parse::<u16>()
                .ok()
                .filter(|_| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| bad(&format!(" ('{p}' is not a port, 0 to 65535)")))
        };
        if !url && t.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(Address {
                host: Host::Bare,
                port: port(t)?,
            });
        }
        if let Some(rest) = t.strip_prefix('[') {
            let (inner, after) = rest.split_once(']').ok_or_else(|| bad(""))?;
            inner
                .parse::<std::net::Ipv6Addr>()
                .map_err(|_| bad(&format!(" ('{inner}' is not an IPv6 address)")))?;
            let p = after
                .strip_prefix(':')
                .ok_or_else(|| bad(" (it needs a :PORT)"))?;
            return Ok(Address {
                host: Host::Named(format!("[{inner}]")),
                port: port(p)?,
            });
        }
        let Some((host, p)) = t.rsplit_once(':') else {
            return Err(bad(" (it needs a :PORT)"));
        };
        if host.is_empty() {
            if url {
                return Err(bad(" (it needs a HOST)"));
            }
            return Ok(Address {
                host: Host::Any,
                port: port(p)?,
            });
        }
        if host.contains(':') {
            return Err(bad(" (write an IPv6 address in brackets: [::1]:8080)"));
        }
        let valid = host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
        if !valid {
            return Err(bad(&format!(" ('{host}' is not a host name)")));
        }
        Ok(Address {
            host: Host::Named(host.to_string()),
            port: port(p)?,
        })
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where a listener binds: `PORT` on loopback, `:PORT` on every
    /// interface, a host name resolved now (its first address).
    pub fn listen_addr(&self) -> Result<SocketAddr, String> {
        match &self.host {
            Host::Bare => Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))),
            Host::Any => Ok(SocketAddr::from((Ipv4Addr::UNSPECIFIED, self.port))),
            Host::Named(_) => {
                let authority = self.authority();
                authority
                    .to_socket_addrs()
                    .map_err(|e| format!("cannot resolve '{authority}' to listen on: {e}"))?
                    .next()
                    .ok_or_else(|| format!("'{authority}' resolves to no address to listen on"))
            }
        }
    }

    /// What a client connects to and sends as `Host`: `HOST:PORT` as
    /// written (a name is resolved when connecting, each of its addresses
    /// tried), `127.0.0.1:PORT` for `PORT` and `:PORT`.
    pub fn authority(&self) -> String {
        match &self.host {
            Host::Bare | Host::Any => {
                SocketAddr::from((Ipv4Addr::LOCALHOST, self.port)).to_string()
            }
            Host::Named(h) => format!("{h}:{}", self.port),
        }
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Host::Bare => write!(f, "{}", self.port),
            Host::Any => write!(f, ":{}", self.port),
            Host::Named(h) => write!(f, "{h}:{}", self.port),
        }
    }
}

/// A listener's address (`serve --listen`, `serve --admin`): `8080`
/// (loopback), `:8080` (every interface), `127.0.0.1:8080`, `[::1]:8080`,
/// `localhost:8080` (resolved once, first address), `http://HOST:PORT/`.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    Address::parse(text)?.listen_addr()
}

/// A client's address (`cache --admin`, `warm --server`), checked now,
/// resolved when connecting.
pub fn parse_client(text: &str) -> Result<Address, String> {
    Address::parse(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_for_a_listener() {
        for (text, want) in [
            ("8087", "127.0.0.1:8087"),
            (":8087", "0.0.0.0:8087"),
            ("127.0.0.1:8087", "127.0.0.1:8087"),
            ("[::1]:8087", "[::1]:8087"),
            ("0", "127.0.0.1:0"),
            ("http://127.0.0.1:8087", "127.0.0.1:8087"),
            ("http://127.0.0.1:8087/", "127.0.0.1:8087"),
            ("HTTP://[::1]:8087/", "[::1]:8087"),
            (" 8087 ", "127.0.0.1:8087"),
        ] {
            assert_eq!(parse_listen(text), Ok(want.parse().unwrap()), "{text}");
        }
        let local = parse_listen("localhost:8087").unwrap();
        assert!(local.ip().is_loopback(), "{local}");
        assert_eq!(local.port(), 8087);
    }

    #[test]
    fn every_form_parses_for_a_client() {
        for (text, want) in [
            ("18481", "127.0.0.1:18481"),
            (":18481", "127.0.0.1:18481"),
            ("127.0.0.1:18481", "127.0.0.1:18481"),
            ("localhost:18481", "localhost:18481"),
            ("[::1]:18481", "[::1]:18481"),
            ("http://127.0.0.1:18481", "127.0.0.1:18481"),
            ("http://localhost:18481/", "localhost:18481"),
            ("admin.example:9090", "admin.example:9090"),
        ] {
            assert_eq!(
                parse_client(text).map(|a| a.authority()),
                Ok(want.to_string()),
                "{text}"
            );
        }
    }

    #[test]
    fn a_bad_address_lists_the_forms() {
        for bad in [
            "",
            "localhost",
            ":",
            "99999",
            "host:port",
            ":x",
            "1.2.3.4:99999",
            "::1:8080",
            "[::1]",
            "[nope]:80",
            "http://",
            "http://:8080",
            "http://8080",
            "http://host:80/path",
            "https://host:443",
            "ftp://host:21",
            "bad host:80",
        ] {
            let err = Address::parse(bad).unwrap_err();
            assert!(
                err.contains("PORT, :PORT, HOST:PORT, [IPv6]:PORT or http://HOST:PORT"),
                "{bad}: {err}"
            );
        }
        assert!(
            Address::parse("https://h:1")
                .unwrap_err()
                .contains("plain http://")
        );
        assert!(Address::parse("::1:8080").unwrap_err().contains("brackets"));
    }

    #[test]
    fn an_address_shows_as_written() {
        for text in ["8080", ":8080", "localhost:8080", "[::1]:8080"] {
            assert_eq!(Address::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Address::parse("http://h:1/").unwrap().to_string(), "h:1");
    }
}
