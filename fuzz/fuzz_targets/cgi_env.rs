//! Feeds arbitrary request paths, queries and header fields to the
//! `command` source's environment builder
//! (`axle::dynamic::checks::cgi_environment`), with the request built as
//! `axle serve` builds it: the path normalized (`normalize_request_path`;
//! a path it refuses is a 404 before any source runs) and taken below a
//! mount at `/cgi`, the query read into pairs (a NUL refused, as
//! `http::params::pairs` does) and re-encoded (as `http::dynamic`
//! does), headers only as `http` can hold them. Issue #24: a client
//! reaches a program only through its environment and stdin.
//!
//! Must never panic. Every variable name is one of the documented CGI
//! names or `HTTP_` and a configured header (each at most once, repeated
//! lines joined into it; never `HTTP_PROXY`, although `Proxy` is
//! configured; the
//! `CONTENT_*` pair only with a body); no name or value holds NUL, and no
//! name `=`; `SCRIPT_NAME` is the mount, `REQUEST_METHOD` the method. The
//! program's argv is not an input of the builder, so nothing here can
//! reach it.
//!
//! Input: byte 0 picks the method and whether there is a body; the rest
//! is the path, the query and header lines (`name:value`, split at `\n`),
//! separated by 0xFF bytes.
#![no_main]

use std::collections::HashSet;
use std::sync::OnceLock;

use axle::dynamic::checks::cgi_environment;
use axle::dynamic::{CGI_VARIABLES as CGI, CommandConfig, SourceRequest};
use axle::provider::normalize_request_path;
use axum::http::{HeaderName, HeaderValue, Method};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

const PREFIX: &str = "/cgi";

/// The configured headers (the defaults and one more) and their variables.
fn configured() -> &'static (Vec<String>, HashSet<String>) {
    static CONFIGURED: OnceLock<(Vec<String>, HashSet<String>)> = OnceLock::new();
    CONFIGURED.get_or_init(|| {
        let mut headers = CommandConfig::new(Vec::new()).headers;
        headers.push("x-request-id".to_string());
        headers.push("cookie".to_string());
        let mut names: HashSet<String> = CGI.iter().map(|s| s.to_string()).collect();
        for h in &headers {
            names.insert(format!("HTTP_{}", h.to_ascii_uppercase().replace('-', "_")));
        }
        // Configured although the site loader refuses it: the builder
        // itself never passes it (httpoxy, issue #36), so it is not in
        // the allowed names.
        headers.push("Proxy".to_string());
        (headers, names)
    })
}

/// The query as `http` hands it to a source: pairs (`&` and `;`
/// separating; a NUL refused: 400), re-encoded.
fn query_as_served(raw: &str) -> Result<Option<String>, ()> {
    let mut out = form_urlencoded::Serializer::new(String::new());
    let mut any = false;
    for part in raw.split([';', '&']) {
        for (name, value) in form_urlencoded::parse(part.as_bytes()) {
            if name.contains('\0') || value.contains('\0') {
                return Err(());
            }
            out.append_pair(&name, &value);
            any = true;
        }
    }
    Ok(any.then(|| out.finish()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let method = [Method::GET, Method::HEAD, Method::POST][usize::from(pick & 3) % 3].clone();
    let with_body = method == Method::POST && pick & 4 != 0;
    let mut parts = rest.split(|&b| b == 0xFF);
    let path = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let raw_query = parts.next().map(String::from_utf8_lossy);
    let head_lines = parts.next().unwrap_or_default();

    let Some(normal) = normalize_request_path(&path) else {
        return;
    };
    let Some(below) = normal.url.strip_prefix(PREFIX) else {
        return;
    };
    if !(below.is_empty() || below.starts_with('/')) {
        return;
    }
    let query = match raw_query.as_deref().map(query_as_served) {
        None => None,
        Some(Ok(q)) => q,
        Some(Err(())) => return,
    };
    let mut request = SourceRequest::new(method.clone(), PREFIX, below);
    request.query = query.clone();
    for line in head_lines.split(|&b| b == b'\n') {
        let at = line.iter().position(|&b| b == b':').unwrap_or(line.len());
        let (name, value) = (&line[..at], line.get(at + 1..).unwrap_or_default());
        if let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
        {
            request.headers.append(name, value);
        }
    }
    if with_body {
        request.body = Some(Bytes::from_static(b"<a/>"));
    }

    let (headers, allowed) = configured();
    let env = cgi_environment(headers, &request);
    let mut seen = HashSet::new();
    for (name, value) in &env {
        assert_ne!(name, "HTTP_PROXY", "httpoxy (request {request:?})");
        assert!(allowed.contains(name), "{name:?} set (request {request:?})");
        assert!(seen.insert(name.as_str()), "{name:?} set twice");
        assert!(
            !name.contains(['\0', '=']) && !value.contains('\0'),
            "{name:?}={value:?} (request {request:?})"
        );
        if name.starts_with("CONTENT_") {
            assert!(with_body, "{name:?} without a body");
        }
    }
    let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(get("SCRIPT_NAME"), Some(PREFIX), "{request:?}");
    assert_eq!(get("REQUEST_METHOD"), Some(method.as_str()));
    assert_eq!(get("QUERY_STRING"), Some(query.as_deref().unwrap_or("")));
    assert_eq!(get("CONTENT_LENGTH"), with_body.then_some("4"));
});
