//! Request heads: parsed with `httparse` from the bytes read, offered to
//! the fast path when they are a plain GET or HEAD, otherwise built into an
//! `http::Request` that shares the read bytes; anything this loop does not
//! serve (a body, HTTP/1.0, an upgrade, an unparsable head) is marked for
//! hyper. A head that breaks a limit of [`HttpLimits`] on its size or its
//! field count is refused here (431), and so is one that breaks HTTP/1.1's
//! rules on `Host` and the target's form (400, [`wire_rules`], which the
//! hand-off applies too); one whose target or query the handler refuses
//! (414) never reaches the fast path.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Uri, Version};
use bytes::{Buf, Bytes};

use super::super::HttpError;
use super::super::request_limits::count_fields;
use super::MAX_HEADERS;
use super::fast::{Fast, FastMissed, Head, Wire};
use crate::config::HttpLimits;

/// Whether `target` is an origin-form path and query made only of
/// characters `http::Uri` keeps as they are (unreserved, sub-delims, `:`,
/// `@`, `/`, `?`, `%`): such a target splits at its first `?` into exactly
/// the `path()` and `query()` a parsed `Uri` gives. Anything else goes
/// through the `Uri` parser and the service.
pub(super) fn plain_target(target: &str) -> bool {
    target.starts_with('/') && target.bytes().all(|b| PLAIN[usize::from(b)])
}

/// The bytes [`plain_target`] allows, as a table (this runs on every
/// request).
const PLAIN: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        table[i] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'/'
                    | b'?'
                    | b'%'
            );
        i += 1;
    }
    table
};

/// What the bytes read so far hold.
// Returned and matched at once; boxing the request would cost an
// allocation per request.
#[allow(clippy::large_enum_variant)]
pub(super) enum Parsed {
    /// A request the fast path answered (its head is consumed), whether it
    /// was a HEAD, and whether the client asked to close after it.
    Wire(Wire, bool, bool),
    /// A complete request for the service (its head is consumed), and
    /// whether the client asked to close the connection after it.
    Request(Request, bool),
    /// Not a whole head yet.
    Partial,
    /// A head that breaks a limit: the answer (the connection then closes).
    Refused(HttpError),
    /// A request for hyper (body, HTTP/1.0, upgrade, unparsable, ...).
    HandOff,
}

/// Parses the request at the start of `unread`. A complete one this loop
/// serves is consumed from `unread`: answered by `fast`, or built into a
/// request whose URI and header values share its bytes.
pub(super) fn parse<F>(
    unread: &mut Bytes,
    fast: &F,
    limits: &HttpLimits,
    peer: Option<std::net::SocketAddr>,
) -> Parsed
where
    F: Fn(&Head<'_>) -> Fast,
{
    if unread.is_empty() {
        return Parsed::Partial;
    }
    let data: &Bytes = unread;
    let mut storage =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(data, &mut storage) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) if limits.max_header_count <= MAX_HEADERS => {
            return Parsed::Refused(too_many_fields(limits));
        }
        Err(_) => return Parsed::HandOff,
    };
    if len > limits.max_header_bytes {
        return Parsed::Refused(super::too_large_head(limits));
    }
    if req.headers.len() > limits.max_header_count {
        return Parsed::Refused(too_many_fields(limits));
    }
    let (Some(method), Some(path), Some(1)) = (req.method, req.path, req.version) else {
        return Parsed::HandOff;
    };
    let method = match method {
        "GET" => Method::GET,
        "HEAD" => Method::HEAD,
        "CONNECT" => return Parsed::HandOff,
        other => match Method::from_bytes(other.as_bytes()) {
            Ok(m) => m,
            Err(_) => return Parsed::HandOff,
        },
    };
    let mut close = false;
    let mut hosts = 0;
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"host") {
            hosts += 1;
        } else if name.eq_ignore_ascii_case(b"content-length") {
            if h.value.trim_ascii() != b"0" {
                return Parsed::HandOff;
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding")
            || name.eq_ignore_ascii_case(b"upgrade")
            || name.eq_ignore_ascii_case(b"expect")
        {
            return Parsed::HandOff;
        } else if name.eq_ignore_ascii_case(b"connection") {
            close |= h
                .value
                .split(|b| *b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
    }
    if hosts != 1 {
        return Parsed::Refused(host_error(hosts));
    }
    let mut missed = false;
    let mut found = None;
    // What the handler refuses (a target or a query past its limit) is
    // left to it, so both paths say the same.
    let (plain_path, query) = path.split_once('?').unwrap_or((path, ""));
    let refusable = path.len() > limits.max_uri_bytes
        || (!query.is_empty() && count_fields(query) > limits.max_query_params);
    if (method == Method::GET || method == Method::HEAD) && !refusable && plain_target(path) {
        let head = Head {
            method: &method,
            path: plain_path,
            query,
            fields: req.headers,
            peer,
        };
        match fast(&head) {
            Fast::Answer(wire) => {
                let head_only = method == Method::HEAD;
                unread.advance(len);
                return Parsed::Wire(wire, head_only, close);
            }
            Fast::Missed => missed = true,
            Fast::Found(extensions) => found = Some(extensions),
            Fast::Pass => {}
        }
    }
    let Ok(uri) = Uri::from_maybe_shared(data.slice_ref(path.as_bytes())) else {
        return Parsed::HandOff;
    };
    if let Err(e) = wire_rules(&method, Version::HTTP_11, &uri, hosts) {
        return Parsed::Refused(e);
    }
    let mut headers = HeaderMap::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(h.name.as_bytes()),
            HeaderValue::from_maybe_shared(data.slice_ref(h.value)),
        ) else {
            return Parsed::HandOff;
        };
        headers.append(name, value);
    }
    let mut request = Request::new(Body::empty());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.headers_mut() = headers;
    if missed {
        request.extensions_mut().insert(FastMissed);
    }
    if let Some(found) = found {
        request.extensions_mut().extend(found);
    }
    if let Some(peer) = peer {
        request.extensions_mut().insert(super::Peer(peer));
    }
    unread.advance(len);
    Parsed::Request(request, close)
}

/// The answer to a head with more than `max_header_count` fields.
fn too_many_fields(limits: &HttpLimits) -> HttpError {
    HttpError::HeadTooLarge(format!(
        "the request has more than {} header fields",
        limits.max_header_count
    ))
}

/// HTTP/1.1's rules on a request's `Host` fields (`hosts` of them) and its
/// target's form, for both connection paths (RFC 9112 §3.2, §3.2.3): an
/// HTTP/1.1 request needs exactly one `Host`, any request at most one,
/// and only CONNECT may use the authority form (`example.com:80`). Here,
/// not in the handler, because they are rules of the wire: a request
/// built in process (an embedding application's, a test's) needs no
/// `Host`.
pub(super) fn wire_rules(
    method: &Method,
    version: Version,
    uri: &Uri,
    hosts: usize,
) -> Result<(), HttpError> {
    if uri.scheme().is_none() && uri.authority().is_some() && method != Method::CONNECT {
        return Err(HttpError::BadRequest(format!(
            "the request target '{}' is in authority form, which only CONNECT uses",
            uri.authority().map_or("", |a| a.as_str())
        )));
    }
    if hosts > 1 || (hosts == 0 && version == Version::HTTP_11) {
        return Err(host_error(hosts));
    }
    Ok(())
}

/// The answer to a request with `hosts` Host fields where one is needed.
fn host_error(hosts: usize) -> HttpError {
    HttpError::BadRequest(if hosts == 0 {
        "an HTTP/1.1 request must have a Host header field".into()
    } else {
        "the request has more than one Host header field".into()
    })
}
