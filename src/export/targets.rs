//! Where an exported page's link points: the href resolved against the
//! page's URL (internal or not, path normalized as the export spells URLs),
//! and the relative path from one exported file to another. Pure URL
//! arithmetic; which file a URL was exported to is the build's to say.

use super::jobs::encode;

/// An internal link's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    /// The URL path, dot segments removed, every segment percent-encoded
    /// as the export's own URLs are.
    pub(super) path: String,
    /// The query as written (without `?`).
    pub(super) query: Option<String>,
    /// The fragment as written (without `#`).
    pub(super) fragment: Option<String>,
}

impl Target {
    /// The path and query: the URL the server would be asked for.
    pub(super) fn url(&self) -> String {
        match &self.query {
            Some(q) => format!("{}?{q}", self.path),
            None => self.path.clone(),
        }
    }
}

/// `href` resolved against `base` (the page's URL path, a query allowed),
/// when it names a page of this site; None for what is not: an empty href
/// or a bare fragment (the page itself), a URL with a scheme (`https:`,
/// `mailto:`, `data:`), a network-path reference (`//host/…`), a
/// backslash (which browsers read as a slash), a path that is not UTF-8.
pub(super) fn resolve(base: &str, href: &str) -> Option<Target> {
    if href.is_empty() || href.starts_with('#') || href.starts_with("//") || href.contains('\\') {
        return None;
    }
    let scheme_end = href.find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)));
    if scheme_end.is_some_and(|e| e > 0 && href[e..].starts_with(':'))
        && href.starts_with(|c: char| c.is_ascii_alphabetic())
    {
        return None;
    }
    let (rest, fragment) = match href.split_once('#') {
        Some((r, f)) => (r, Some(f.to_string())),
        None => (href, None),
    };
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q.to_string())),
        None => (rest, None),
    };
    let base_path = base.split('?').next().unwrap_or("/");
    let joined = if path.is_empty() {
        base_path.to_string()
    } else if path.starts_with('/') {
        path.to_string()
    } else {
        let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
        format!("{dir}{path}")
    };
    Some(Target {
        path: normalize(&joined)?,
        query,
        fragment,
    })
}

/// A `/`-rooted path with `.` and `..` segments removed (never above the
/// root, as browsers do) and each segment decoded and encoded again.
fn normalize(path: &str) -> Option<String> {
    let mut out: Vec<String> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    for (n, segment) in segments.iter().enumerate() {
        let decoded = percent_encoding::percent_decode_str(segment)
            .decode_utf8()
            .ok()?;
        match decoded.as_ref() {
            "." | ".." => {
                if decoded == ".." {
                    out.pop();
                }
                // `a/..` and `a/.` name the directory: keep the slash.
                if n == last {
                    out.push(String::new());
                }
            }
            d => out.push(encode(d)),
        }
    }
    Some(format!("/{}", out.join("/")))
}

/// The relative URL from the exported file `from` to the exported file
/// `to` (both relative to the output folder, `/`-separated, as on disk),
/// each segment percent-encoded.
pub(super) fn relative(from: &str, to: &str) -> String {
    let from_dir: Vec<&str> = from.split('/').collect();
    let from_dir = &from_dir[..from_dir.len() - 1];
    let to_parts: Vec<&str> = to.split('/').collect();
    let (to_dir, name) = to_parts.split_at(to_parts.len() - 1);
    let common = from_dir
        .iter()
        .zip(to_dir)
        .take_while(|(a, b)| a == b)
        .count();
    let parts: Vec<String> = std::iter::repeat_n(String::from(".."), from_dir.len() - common)
        .chain(to_dir[common..].iter().map(|p| encode(p)))
        .collect();
    // Every segment encoded: a `:` (`%3A`) never reads as a scheme.
    parts
        .into_iter()
        .chain(std::iter::once(encode(name[0])))
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(base: &str, href: &str) -> Option<String> {
        resolve(base, href).map(|t| t.url())
    }

    #[test]
    fn internal_links_resolve_against_the_page() {
        let base = "/articles/x.xml";
        assert_eq!(path(base, "/css/a.css").as_deref(), Some("/css/a.css"));
        assert_eq!(path(base, "y.xml").as_deref(), Some("/articles/y.xml"));
        assert_eq!(path(base, "../").as_deref(), Some("/"));
        assert_eq!(path(base, "../../../a").as_deref(), Some("/a"));
        assert_eq!(path(base, "./sub/..").as_deref(), Some("/articles/"));
        assert_eq!(
            path(base, "?style=print").as_deref(),
            Some("/articles/x.xml?style=print")
        );
        assert_eq!(path("/styles/", "?s=1").as_deref(), Some("/styles/?s=1"));
        assert_eq!(path("/a?q=1", "b").as_deref(), Some("/b"));
        // One spelling per path, as the export's own URLs.
        assert_eq!(
            path("/", "/caf%c3%a9 x.xml").as_deref(),
            Some("/caf%C3%A9%20x.xml")
        );
        assert_eq!(
            path("/", "/café x.xml").as_deref(),
            Some("/caf%C3%A9%20x.xml")
        );
        let t = resolve(base, "/a.xml?x=1#top").unwrap();
        assert_eq!(
            (t.path.as_str(), t.query.as_deref(), t.fragment.as_deref()),
            ("/a.xml", Some("x=1"), Some("top"))
        );
    }

    #[test]
    fn what_is_not_a_page_of_the_site_is_none() {
        for href in [
            "",
            "#top",
            "https://example.org/",
            "HTTP://x/",
            "mailto:a@b",
            "javascript:void(0)",
            "data:text/plain,x",
            "//cdn.example/x.js",
            "\\\\evil",
            "/%ff",
        ] {
            assert_eq!(resolve("/a/b.xml", href), None, "{href}");
        }
        // A colon after a slash is a path.
        assert!(resolve("/", "a/b:c").is_some());
    }

    #[test]
    fn relative_paths_between_exported_files() {
        assert_eq!(relative("index.html", "css/site.css"), "css/site.css");
        assert_eq!(
            relative("articles/x.xml.html", "css/site.css"),
            "../css/site.css"
        );
        assert_eq!(
            relative("articles/x.xml.html", "index.html"),
            "../index.html"
        );
        assert_eq!(
            relative("articles/x.xml.html", "articles/index.html"),
            "index.html"
        );
        assert_eq!(relative("a/b/c.html", "a/d/e.html"), "../d/e.html");
        assert_eq!(relative("a.html", "a.html"), "a.html");
        assert_eq!(relative("x.html", "caf é.html"), "caf%20%C3%A9.html");
        assert_eq!(relative("x.html", "a:b.html"), "a%3Ab.html");
    }
}
