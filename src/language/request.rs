//! What a stage may know of the HTTP request behind a render, and what it
//! may add to the response: the request's method, path, query and form
//! fields, headers and cookies; cookies to set, a redirect. Exists for Languages whose
//! output is a function of the request (XSP's `request` and `cookie`
//! taglibs): such a stage says it is not cacheable, so its output is
//! never shared between requests, and the stages after it are keyed by
//! its output as usual.
//!
//! A render with no request behind it (`axle render`, a nested `axle:`
//! document, `axle build`'s dependency walk) has none: the stage sees
//! [`StageContext::request`](super::StageContext) as `None`.

use std::sync::Mutex;

/// The request behind a render.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct RequestInfo {
    /// `GET`, `HEAD`, `POST`.
    pub method: String,
    /// The URL path as requested (percent-encoded).
    pub path: String,
    /// The query string, without `?` (empty: none).
    pub query: String,
    /// Query parameters, then form fields of a POST body, in order, decoded.
    pub params: Vec<(String, String)>,
    /// Header fields, names in lower case, in order (values that are not
    /// visible ASCII or Latin-1 text are left out).
    pub headers: Vec<(String, String)>,
    /// Cookies of the `Cookie` header fields, in order.
    pub cookies: Vec<(String, String)>,
    /// The client's address, when known.
    pub remote_addr: Option<std::net::IpAddr>,
    /// `Set-Cookie` values a stage added (see [`RequestInfo::set_cookie`]).
    set_cookies: Mutex<Vec<String>>,
    /// The redirect a stage asked for (see [`RequestInfo::redirect`]).
    redirect: Mutex<Option<(u16, String)>>,
}

impl RequestInfo {
    /// A request with this method, path and query string; add the rest
    /// with the `with_` methods.
    pub fn new(method: &str, path: &str, query: &str) -> Self {
        RequestInfo {
            method: method.to_string(),
            path: path.to_string(),
            query: query.to_string(),
            ..RequestInfo::default()
        }
    }

    /// The same with these parameters (query, then form fields).
    pub fn with_params(mut self, params: Vec<(String, String)>) -> Self {
        self.params = params;
        self
    }

    /// The same with these header fields; the cookies are read from its
    /// `cookie` fields.
    pub fn with_headers(mut self, headers: Vec<(String, String)>) -> Self {
        self.cookies = headers
            .iter()
            .filter(|(name, _)| name == "cookie")
            .flat_map(|(_, value)| parse_cookies(value))
            .collect();
        self.headers = headers;
        self
    }

    /// The same with the client's address.
    pub fn with_remote_addr(mut self, addr: Option<std::net::IpAddr>) -> Self {
        self.remote_addr = addr;
        self
    }

    /// The first value of parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        first(&self.params, name)
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let lower = name.to_ascii_lowercase();
        first(&self.headers, &lower)
    }

    /// The value of cookie `name`.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        first(&self.cookies, name)
    }

    /// Adds a `Set-Cookie` field to the response (the whole value:
    /// `name=value; Path=/; ...`).
    pub fn set_cookie(&self, value: String) {
        if let Ok(mut list) = self.set_cookies.lock() {
            list.push(value);
        }
    }

    /// Answers the request with `status` (a 3xx) and `Location: location`
    /// instead of the rendered document (the last call wins).
    pub fn redirect(&self, status: u16, location: String) {
        if let Ok(mut slot) = self.redirect.lock() {
            *slot = Some((status, location));
        }
    }

    /// The redirect asked for, taken.
    pub fn take_redirect(&self) -> Option<(u16, String)> {
        self.redirect.lock().ok().and_then(|mut slot| slot.take())
    }

    /// The `Set-Cookie` values added so far, taken.
    pub fn take_set_cookies(&self) -> Vec<String> {
        self.set_cookies
            .lock()
            .map(|mut list| std::mem::take(&mut *list))
            .unwrap_or_default()
    }
}

fn first<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The `name=value` pairs of a `Cookie` field (RFC 6265 §5.4; values in
/// double quotes lose them; pairs without `=` are skipped).
pub fn parse_cookies(field: &str) -> Vec<(String, String)> {
    field
        .split(';')
        .filter_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            let name = name.trim();
            if name.is_empty() {
                return None;
            }
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            Some((name.to_string(), value.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_from_every_cookie_field() {
        let info = RequestInfo::new("GET", "/a", "").with_headers(vec![
            ("cookie".into(), "a=1; b=\"two\"; junk; =x".into()),
            ("cookie".into(), "c=3".into()),
            ("user-agent".into(), "t".into()),
        ]);
        assert_eq!(info.cookie("a"), Some("1"));
        assert_eq!(info.cookie("b"), Some("two"));
        assert_eq!(info.cookie("c"), Some("3"));
        assert_eq!(info.cookie("junk"), None);
        assert_eq!(info.header("User-Agent"), Some("t"));
    }

    #[test]
    fn set_cookies_are_taken_once() {
        let info = RequestInfo::new("GET", "/a", "");
        info.set_cookie("a=1".into());
        assert_eq!(info.take_set_cookies(), ["a=1"]);
        assert!(info.take_set_cookies().is_empty());
    }
}
