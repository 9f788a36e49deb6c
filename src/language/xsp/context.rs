//! The document an XSP page's expressions run over: the request (method,
//! path, query, parameters, headers, cookies, client address), the time,
//! and the results of the page's tasks.
//!
//! ```xml
//! <xsp-context>
//!   <request method="GET" path="/a.xml" query="q=1" remote-addr="127.0.0.1">
//!     <param name="q">1</param>
//!     <header name="user-agent">curl/8</header>
//!     <cookie name="seen">yes</cookie>
//!   </request>
//!   <time iso="2026-12-02T20:30:00Z" epoch="1796243400"/>
//!   <results><result id="1">…</result></results>
//! </xsp-context>
//! ```
//!
//! Every value is text in the document (escaped here), so a request value
//! is data to the expressions, never part of them.

use std::fmt::Write as _;

use super::taglib::escape;
use crate::language::RequestInfo;

/// The context document for `request` (None: an empty request) at `now`,
/// with the tasks' `results` (id, XML content).
pub fn document(
    request: Option<&RequestInfo>,
    now: chrono::DateTime<chrono::Utc>,
    results: &[(usize, String)],
) -> String {
    let mut x = String::with_capacity(1024);
    x.push_str("<xsp-context>");
    match request {
        Some(r) => {
            let _ = write!(
                x,
                "<request method=\"{}\" path=\"{}\" query=\"{}\"",
                escape(&r.method),
                escape(&r.path),
                escape(&r.query)
            );
            if let Some(addr) = r.remote_addr {
                let _ = write!(x, " remote-addr=\"{addr}\"");
            }
            x.push('>');
            for (kind, pairs) in [
                ("param", &r.params),
                ("header", &r.headers),
                ("cookie", &r.cookies),
            ] {
                for (name, value) in pairs {
                    let _ = write!(
                        x,
                        "<{kind} name=\"{}\">{}</{kind}>",
                        escape(name),
                        escape(value)
                    );
                }
            }
            x.push_str("</request>");
        }
        None => x.push_str("<request method=\"\" path=\"\" query=\"\"/>"),
    }
    let _ = write!(
        x,
        "<time iso=\"{}\" epoch=\"{}\"/>",
        now.format("%Y-%m-%dT%H:%M:%SZ"),
        now.timestamp()
    );
    x.push_str("<results>");
    for (id, content) in results {
        let _ = write!(x, "<result id=\"{id}\">{content}</result>");
    }
    x.push_str("</results></xsp-context>");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_values_are_escaped_text() {
        let info = RequestInfo::new("GET", "/a.xml", "q=%3C")
            .with_params(vec![("q".into(), "<x a=\"1\">&\u{1}".into())])
            .with_headers(vec![("cookie".into(), "s=1".into())]);
        let now = chrono::DateTime::from_timestamp(0, 0).unwrap();
        let doc = document(Some(&info), now, &[(1, "<row/>".into())]);
        assert!(
            doc.contains("<param name=\"q\">&lt;x a=&quot;1&quot;&gt;&amp;\u{FFFD}</param>"),
            "{doc}"
        );
        assert!(doc.contains("<cookie name=\"s\">1</cookie>"), "{doc}");
        assert!(
            doc.contains("iso=\"1970-01-01T00:00:00Z\" epoch=\"0\""),
            "{doc}"
        );
        assert!(doc.contains("<result id=\"1\"><row/></result>"), "{doc}");
        roxmltree::Document::parse(&doc).unwrap();
    }
}
