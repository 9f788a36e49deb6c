//! AxKit's `AxKit::XSP::WebUtils` taglib (`http://axkit.org/NS/xsp/webutils/v1`),
//! its one tag that changes the response: `web:redirect`. A page that
//! handled a POST answers with a redirect to a page to GET (a reload does
//! not post again), as AxKit's pages did with this tag.
//!
//! `<web:redirect><web:uri>/xsp/guestbook.xml</web:uri></web:redirect>`:
//! `uri` is an attribute or a child element (an XSP value); `status`
//! (Axle's: 301, 302, 303, 307 or 308; AxKit sent 302, the default) too.
//! The target stays on this site: a path (`/x`), or one relative to the
//! page; an absolute URL or `//host` is refused, so a request value put in
//! `uri` can never send a client elsewhere (AxKit's `host` and `secure`
//! are refused at compile time for the same reason). Like a cookie, the
//! redirect is a task: it runs when the page runs (inside a condition,
//! only when the condition holds), and the server answers with the status
//! and `Location` instead of the rendered page, with the page's cookies.

use std::sync::Arc;

use roxmltree::Node;

use super::compile::{TagCompiler, XspError, literal};
use super::taglib::{Taglib, TaskCall, TaskError};

/// AxKit's WebUtils taglib.
pub const WEBUTILS_NS: &str = "http://axkit.org/NS/xsp/webutils/v1";

/// The statuses a page may redirect with.
const STATUSES: [u16; 5] = [301, 302, 303, 307, 308];

/// AxKit's WebUtils taglib (`web:redirect`).
pub(super) struct WebUtils;

impl Taglib for WebUtils {
    fn namespace(&self) -> &str {
        WEBUTILS_NS
    }

    fn compile(&self, tag: Node<'_, '_>, cx: &mut TagCompiler<'_>) -> Result<(), XspError> {
        match tag.tag_name().name() {
            "redirect" => {
                for refused in ["host", "secure"] {
                    if cx.arg(tag, refused)?.is_some() {
                        return Err(cx.error(
                            tag,
                            &format!(
                                "web:redirect's {refused} is not supported: a redirect stays on this site (a path in uri)"
                            ),
                        ));
                    }
                }
                let Some(uri) = cx.arg(tag, "uri")? else {
                    return Err(cx.error(tag, "needs uri (an attribute or a child element)"));
                };
                let status = cx.arg(tag, "status")?.unwrap_or_else(|| literal("302"));
                // Outputs nothing; redirects when the page runs.
                let _ = cx.task(
                    tag,
                    vec![("uri".into(), uri), ("status".into(), status)],
                    Arc::new(()),
                );
                Ok(())
            }
            other => Err(cx.error(tag, &format!("unknown web tag {other} (Axle has redirect)"))),
        }
    }

    fn run(&self, task: &TaskCall<'_>) -> Result<String, TaskError> {
        let Some(request) = task.request else {
            return Ok(String::new());
        };
        let status = task.arg("status").trim();
        let status = status
            .parse::<u16>()
            .ok()
            .filter(|s| STATUSES.contains(s))
            .ok_or_else(|| {
                TaskError::new(format!(
                    "web:redirect status `{status}`: one of 301, 302, 303, 307, 308"
                ))
            })?;
        let location = location(task.arg("uri"), task.page)?;
        request.redirect(status, location);
        Ok(String::new())
    }
}

/// The `Location` for `uri` on the page at `page` (a URL path): a path as
/// it is, a relative reference against the page's directory; characters a
/// header cannot hold percent-encoded.
fn location(uri: &str, page: &str) -> Result<String, TaskError> {
    let uri = uri.trim();
    let scheme = uri
        .split_once(':')
        .is_some_and(|(s, _)| !s.is_empty() && !s.contains(['/', '?', '#']));
    if uri.is_empty() || uri.starts_with("//") || uri.starts_with('\\') || scheme {
        return Err(TaskError::new(format!(
            "web:redirect uri `{uri}`: a path on this site (/page.xml, or relative to the page)"
        )));
    }
    let joined = if uri.starts_with('/') {
        uri.to_string()
    } else {
        let dir = page.rsplit_once('/').map_or("", |(dir, _)| dir);
        format!("{dir}/{uri}")
    };
    const SET: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'<')
        .add(b'>')
        .add(b'\\')
        .add(b'^')
        .add(b'`')
        .add(b'{')
        .add(b'|')
        .add(b'}');
    Ok(percent_encoding::utf8_percent_encode(&joined, SET).to_string())
}

#[cfg(test)]
mod tests {
    use super::location;

    #[test]
    fn a_location_stays_on_this_site() {
        let page = "/xsp/guestbook.xml";
        for (uri, want) in [
            ("/xsp/guestbook.xml", "/xsp/guestbook.xml"),
            ("guestbook.xml#entries", "/xsp/guestbook.xml#entries"),
            ("../index.xml?a=b c", "/xsp/../index.xml?a=b%20c"),
            ("/é\r\n", "/%C3%A9"),
        ] {
            assert_eq!(location(uri, page).unwrap(), want, "{uri}");
        }
        for uri in [
            "",
            "http://evil.example/",
            "//evil.example/",
            "javascript:x",
            "\\\\evil",
        ] {
            assert!(location(uri, page).is_err(), "{uri}");
        }
    }
}
