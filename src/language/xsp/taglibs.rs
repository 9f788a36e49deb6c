//! The built-in taglibs, in the namespaces and with the tag names AxKit's
//! and Cocoon's pages used:
//! - `request` (Cocoon's request logicsheet, `http://apache.org/xsp/request/2.0`):
//!   parameters, headers, method, URI, query string, client address;
//! - `param` (AxKit's `AxKit::XSP::Param`): `<param:NAME/>` is the request
//!   parameter NAME;
//! - `cookie` (AxKit's `AxKit::XSP::Cookie`): `cookie:fetch` reads one,
//!   `cookie:create` sets one on the response;
//! - `util` (AxKit's `AxKit::XSP::Util`): the time (`strftime` formats),
//!   a file under the root, another Axle URL's rendered output.
//!
//! Every value is an XPath expression over the context document (see
//! `context.rs`); the only tasks are setting a cookie and formatting the
//! time.

use std::fmt::Write as _;
use std::sync::Arc;

use roxmltree::Node;

use super::compile::{TagCompiler, XspError, escape_attr, literal};
use super::taglib::{Taglib, Taglibs, TaskCall, TaskError, escape};

/// Cocoon's request logicsheet.
pub const REQUEST_NS: &str = "http://apache.org/xsp/request/2.0";
/// AxKit's param taglib.
pub const PARAM_NS: &str = "http://axkit.org/NS/xsp/param/v1";
/// AxKit's cookie taglib.
pub const COOKIE_NS: &str = "http://axkit.org/NS/xsp/cookie/v1";
/// AxKit's util taglib.
pub const UTIL_NS: &str = "http://apache.org/xsp/util/v1";

/// Adds the built-in taglibs.
pub(super) fn add_builtin(taglibs: &mut Taglibs) {
    taglibs.add(Arc::new(Request));
    taglibs.add(Arc::new(Param));
    taglibs.add(Arc::new(Cookie));
    taglibs.add(Arc::new(Util));
    taglibs.add(Arc::new(super::webutils::WebUtils));
}

/// `arg` of `tag`, required.
fn required(cx: &mut TagCompiler<'_>, tag: Node<'_, '_>, arg: &str) -> Result<String, XspError> {
    cx.arg(tag, arg)?.ok_or_else(|| {
        cx.error(
            tag,
            &format!("needs {arg} (an attribute or a child element)"),
        )
    })
}

/// The first value of `set` (`$params`, `$headers`, `$cookies`) named
/// `name` (an expression), as a string.
fn first(set: &str, name: &str) -> String {
    format!("string(({set}[@name = {name}])[1])")
}

/// `value`, or `default` when `set` has nothing named `name`.
fn with_default(set: &str, name: &str, default: &str) -> String {
    format!(
        "concat({}, substring({default}, 1, number(not({set}[@name = {name}])) * string-length({default})))",
        first(set, name)
    )
}

const UPPER: &str = "'ABCDEFGHIJKLMNOPQRSTUVWXYZ'";
const LOWER: &str = "'abcdefghijklmnopqrstuvwxyz'";

/// Outputs `<PREFIX:wrapper><PREFIX:item>v</PREFIX:item>…` in the tag's
/// namespace, one item per node of `select` (their `value`).
fn list(
    cx: &mut TagCompiler<'_>,
    tag: Node<'_, '_>,
    ns: &str,
    wrapper: (&str, Option<&str>),
    item: &str,
    select: &str,
    value: &str,
) {
    cx.expression(tag, select);
    // The page's own prefix for the namespace.
    let r = tag
        .lookup_prefix(ns)
        .filter(|p| !p.is_empty())
        .unwrap_or("r");
    let mut x = format!("<{r}:{} xmlns:{r}=\"{}\"", wrapper.0, escape_attr(ns));
    if let Some(name) = wrapper.1 {
        let _ = write!(
            x,
            "><xsl:attribute name=\"name\"><xsl:value-of select=\"{}\"/></xsl:attribute",
            escape_attr(name)
        );
    }
    let _ = write!(
        x,
        "><xsl:for-each select=\"{}\"><{r}:{item}><xsl:value-of select=\"{}\"/></{r}:{item}></xsl:for-each></{r}:{}>",
        escape_attr(select),
        escape_attr(value),
        wrapper.0
    );
    cx.raw(&x);
}

/// Cocoon's request logicsheet.
struct Request;

impl Taglib for Request {
    fn namespace(&self) -> &str {
        REQUEST_NS
    }

    fn expression(
        &self,
        tag: Node<'_, '_>,
        cx: &mut TagCompiler<'_>,
    ) -> Result<Option<String>, XspError> {
        let host = first("$headers", "'host'");
        Ok(Some(match tag.tag_name().name() {
            "get-parameter" => {
                let name = required(cx, tag, "name")?;
                match cx.arg(tag, "default")? {
                    Some(default) => with_default("$params", &name, &default),
                    None => first("$params", &name),
                }
            }
            "get-header" => {
                let name = required(cx, tag, "name")?;
                first("$headers", &format!("translate({name}, {UPPER}, {LOWER})"))
            }
            "get-method" => String::from("$method"),
            "get-uri" | "get-sitemap-uri" | "get-request-uri" | "get-path-info" => {
                String::from("$path")
            }
            "get-query-string" => String::from("$query"),
            "get-remote-address" | "get-remote-host" => String::from("$remote-addr"),
            "get-server-name" => format!("substring-before(concat({host}, ':'), ':')"),
            "get-requested-url" => format!(
                "concat('http://', {host}, $path, substring(concat('?', $query), 1, number(string-length($query) > 0) * (1 + string-length($query))))"
            ),
            _ => return Ok(None),
        }))
    }

    fn compile(&self, tag: Node<'_, '_>, cx: &mut TagCompiler<'_>) -> Result<(), XspError> {
        match tag.tag_name().name() {
            "get-parameter-values" => {
                let name = required(cx, tag, "name")?;
                list(
                    cx,
                    tag,
                    REQUEST_NS,
                    ("parameter-values", Some(&name)),
                    "value",
                    &format!("$params[@name = {name}]"),
                    ".",
                );
                Ok(())
            }
            "get-parameter-names" => {
                list(
                    cx,
                    tag,
                    REQUEST_NS,
                    ("parameter-names", None),
                    "name",
                    "$params[not(@name = preceding-sibling::param/@name)]",
                    "@name",
                );
                Ok(())
            }
            "get-header-names" => {
                list(
                    cx,
                    tag,
                    REQUEST_NS,
                    ("header-names", None),
                    "name",
                    "$headers[not(@name = preceding-sibling::header/@name)]",
                    "@name",
                );
                Ok(())
            }
            _ => {
                let expression = self.expression(tag, cx)?;
                cx.tag_value(tag, expression, "request")
            }
        }
    }
}

/// AxKit's param taglib: `<param:NAME/>`.
struct Param;

impl Taglib for Param {
    fn namespace(&self) -> &str {
        PARAM_NS
    }

    fn expression(
        &self,
        tag: Node<'_, '_>,
        _cx: &mut TagCompiler<'_>,
    ) -> Result<Option<String>, XspError> {
        Ok(Some(first("$params", &literal(tag.tag_name().name()))))
    }
}

/// AxKit's cookie taglib.
struct Cookie;

impl Taglib for Cookie {
    fn namespace(&self) -> &str {
        COOKIE_NS
    }

    fn expression(
        &self,
        tag: Node<'_, '_>,
        cx: &mut TagCompiler<'_>,
    ) -> Result<Option<String>, XspError> {
        if tag.tag_name().name() != "fetch" {
            return Ok(None);
        }
        let name = required(cx, tag, "name")?;
        Ok(Some(first("$cookies", &name)))
    }

    fn compile(&self, tag: Node<'_, '_>, cx: &mut TagCompiler<'_>) -> Result<(), XspError> {
        match tag.tag_name().name() {
            "fetch" => {
                let e = self.expression(tag, cx)?.unwrap_or_default();
                cx.value_of(tag, &e);
                Ok(())
            }
            "create" => {
                let mut args = vec![
                    (String::from("name"), required(cx, tag, "name")?),
                    (
                        String::from("value"),
                        cx.arg(tag, "value")?.unwrap_or_else(|| literal("")),
                    ),
                ];
                for optional in ["expires", "path", "domain", "secure"] {
                    if let Some(e) = cx.arg(tag, optional)? {
                        args.push((optional.to_string(), e));
                    }
                }
                // Outputs nothing; sets the cookie when the page runs.
                let _ = cx.task(tag, args, Arc::new(()));
                Ok(())
            }
            other => Err(cx.error(tag, &format!("unknown cookie tag {other} (create, fetch)"))),
        }
    }

    fn run(&self, task: &TaskCall<'_>) -> Result<String, TaskError> {
        let Some(request) = task.request else {
            return Ok(String::new());
        };
        let header = set_cookie(task)?;
        request.set_cookie(header);
        Ok(String::new())
    }
}

/// The `Set-Cookie` value for a `cookie:create` task.
fn set_cookie(task: &TaskCall<'_>) -> Result<String, TaskError> {
    let name = task.arg("name");
    let token = |c: char| c.is_ascii_graphic() && !"()<>@,;:\\\"/[]?={}".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(TaskError::new(format!(
            "`{name}` is not a cookie name (letters, digits and !#$%&'*+-.^_`|~)"
        )));
    }
    // The value percent-encoded, as AxKit's (CGI::Cookie) were.
    const SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'!')
        .remove(b'*')
        .remove(b'\'')
        .remove(b'(')
        .remove(b')');
    let value = percent_encoding::utf8_percent_encode(task.arg("value"), SET);
    let mut header = format!("{name}={value}");
    let path = task.arg("path");
    let path = if path.is_empty() { "/" } else { path };
    if path.chars().any(|c| c.is_control() || c == ';') {
        return Err(TaskError::new(
            "a cookie's path holds no ';' or control characters",
        ));
    }
    let _ = write!(header, "; Path={path}");
    let domain = task.arg("domain");
    if !domain.is_empty() {
        if !domain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        {
            return Err(TaskError::new(format!("`{domain}` is not a cookie domain")));
        }
        let _ = write!(header, "; Domain={domain}");
    }
    let expires = task.arg("expires");
    if !expires.is_empty() {
        let at = relative_time(expires).ok_or_else(|| {
            TaskError::new(format!(
                "cookie expires `{expires}`: use now, or +N or -N with s, m, h, d, M or y (+3d)"
            ))
        })?;
        let _ = write!(
            header,
            "; Expires={}",
            at.format("%a, %d %b %Y %H:%M:%S GMT")
        );
    }
    if matches!(task.arg("secure"), "1" | "true" | "yes" | "secure") {
        header.push_str("; Secure");
    }
    Ok(header)
}

/// AxKit's (CGI.pm's) relative times: `now`, `+30s`, `-1d`, `+3M`, `+1y`.
fn relative_time(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let now = chrono::Utc::now();
    let text = text.trim();
    if text == "now" {
        return Some(now);
    }
    let (sign, rest) = match text.as_bytes().first()? {
        b'+' => (1i64, &text[1..]),
        b'-' => (-1i64, &text[1..]),
        _ => return None,
    };
    let unit = rest.chars().last()?;
    let n: i64 = rest[..rest.len() - unit.len_utf8()].parse().ok()?;
    let seconds = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'M' => 30 * 86_400,
        'y' => 365 * 86_400,
        _ => return None,
    };
    now.checked_add_signed(chrono::TimeDelta::try_seconds(
        sign * n.checked_mul(seconds)?,
    )?)
}

/// AxKit's util taglib.
struct Util;

impl Taglib for Util {
    fn namespace(&self) -> &str {
        UTIL_NS
    }

    fn compile(&self, tag: Node<'_, '_>, cx: &mut TagCompiler<'_>) -> Result<(), XspError> {
        match tag.tag_name().name() {
            "time" => {
                let format = cx
                    .arg(tag, "format")?
                    .unwrap_or_else(|| literal("%a %b %e %H:%M:%S %Y"));
                let result = cx.task(
                    tag,
                    vec![
                        (String::from("format"), format),
                        (String::from("epoch"), String::from("string($epoch)")),
                    ],
                    Arc::new(()),
                );
                cx.value_of(tag, &format!("string({result})"));
                Ok(())
            }
            "include-file" => {
                let href = required(cx, tag, "href")?;
                cx.copy_of(tag, &format!("document({href})/node()"));
                Ok(())
            }
            "include-uri" => {
                let href = required(cx, tag, "href")?;
                // An Axle URL: a path, or `axle:` and a path.
                let url = format!(
                    "concat(substring('axle:', 1, 5 * number(not(starts-with({href}, 'axle:')))), {href})"
                );
                cx.copy_of(tag, &format!("document({url})/node()"));
                Ok(())
            }
            other => Err(cx.error(
                tag,
                &format!("unknown util tag {other} (time, include-file, include-uri)"),
            )),
        }
    }

    fn run(&self, task: &TaskCall<'_>) -> Result<String, TaskError> {
        let format = task.arg("format");
        let items: Vec<chrono::format::Item<'_>> =
            chrono::format::StrftimeItems::new(format).collect();
        if items.contains(&chrono::format::Item::Error) {
            return Err(TaskError::new(format!(
                "`{format}` is not a strftime format"
            )));
        }
        let epoch: i64 = task.arg("epoch").parse().unwrap_or(0);
        let at = chrono::DateTime::from_timestamp(epoch, 0)
            .ok_or_else(|| TaskError::new("the time is out of range"))?;
        let mut text = String::new();
        write!(text, "{}", at.format_with_items(items.into_iter()))
            .map_err(|_| TaskError::new(format!("`{format}` cannot format this time")))?;
        Ok(escape(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times() {
        let now = chrono::Utc::now().timestamp();
        let plus = relative_time("+3d").unwrap().timestamp();
        assert!((plus - now - 3 * 86_400).abs() <= 2);
        assert!(relative_time("-1h").unwrap().timestamp() < now);
        assert!(relative_time("tomorrow").is_none());
        assert!(relative_time("+3w").is_none());
        assert!(relative_time("+99999999999999y").is_none());
    }
}
