//! The fast path's interface: what the connection loop offers it (a
//! borrowed [`Head`], with header lookup through [`Headers`]) and what it
//! answers ([`Fast`], a [`Wire`] response), with no `http::Request` or
//! `Response` built.

use axum::http::{HeaderMap, HeaderName, Method};
use bytes::Bytes;

/// A response already in wire form, as a cache hit answers: no
/// `http::Response` is built and no header map walked.
#[derive(Debug)]
pub struct Wire {
    /// 304 Not Modified (no body, no length) rather than 200 OK.
    pub not_modified: bool,
    /// Header lines, each ending in CRLF, from a validated source (the
    /// status line, framing, `date` and `connection` are added here).
    pub fields: Bytes,
    /// More header lines, likewise.
    pub more: &'static [u8],
    /// The body of a 200.
    pub body: Bytes,
}

/// A parsed request head as the fast path sees it: nothing is built for
/// it (the `http::Request` is built only if the fast path passes).
pub struct Head<'a> {
    /// GET or HEAD (the fast path sees no other method).
    pub method: &'a Method,
    /// The path, as sent (origin form, only characters an `http::Uri`
    /// keeps as they are).
    pub path: &'a str,
    /// The query string without its `?` (empty when there is none).
    pub query: &'a str,
    pub(super) fields: &'a [httparse::Header<'a>],
    /// The client's address (None where there is no socket: benchmarks).
    pub peer: Option<std::net::SocketAddr>,
}

impl Head<'_> {
    /// The first `name` field's value, its bytes as sent (the access log
    /// records them escaped, whatever they are).
    pub fn raw(&self, name: &HeaderName) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name.as_str()))
            .map(|h| h.value)
    }
}

/// What the fast path did with a request.
#[derive(Debug)]
pub enum Fast {
    /// Answered it.
    Answer(Wire),
    /// Left it to the service.
    Pass,
    /// Looked it up, found nothing, and left it to the service, which
    /// finds `FastMissed` in the request's extensions (so it need not
    /// look again).
    Missed,
    /// Looked it up and found what only the service can finish (work that
    /// waits, such as a read from disk): these extensions go into the
    /// request's, for the service to take.
    Found(axum::http::Extensions),
}

/// Marks a request the fast path looked up and missed ([`Fast::Missed`]).
#[derive(Debug, Clone, Copy)]
pub struct FastMissed;

/// The client's address, in a request's extensions (both connection
/// paths put it there; the access log reads it).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

/// Request header lookup, over an `http::HeaderMap` or a [`Head`] alike.
pub trait Headers {
    /// The first `name` field's value, if it is visible ASCII text (as
    /// `HeaderValue::to_str` has it).
    fn first(&self, name: &HeaderName) -> Option<&str>;

    /// Every `name` field's value that is visible ASCII text, in order.
    fn each<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a str> + 'a;
}

impl Headers for HeaderMap {
    fn first(&self, name: &HeaderName) -> Option<&str> {
        self.get(name).and_then(|v| v.to_str().ok())
    }

    fn each<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a str> + 'a {
        self.get_all(name).iter().filter_map(|v| v.to_str().ok())
    }
}

impl Headers for Head<'_> {
    fn first(&self, name: &HeaderName) -> Option<&str> {
        self.fields
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name.as_str()))
            .and_then(|h| visible(h.value))
    }

    fn each<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a str> + 'a {
        self.fields
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name.as_str()))
            .filter_map(|h| visible(h.value))
    }
}

/// `value` as text if it is all visible ASCII or tabs (the rule of
/// `HeaderValue::to_str`).
fn visible(value: &[u8]) -> Option<&str> {
    if value
        .iter()
        .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        std::str::from_utf8(value).ok()
    } else {
        None
    }
}
