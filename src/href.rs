//! Resolving an href (a stylesheet PI's, a `read_related` one) against the
//! document that names it, as root-relative URL path arithmetic. It sits
//! below both `chain` (which resolves PI hrefs) and `language` (whose stages
//! read related files), so neither has to import the other for it. Pure:
//! the result still has to be confined (`provider::confine`) before use.

/// Resolves `href` against the document at root-relative URL path `base`,
/// returning a root-relative URL path with dot segments removed, or `None`
/// when it names another host or climbs above the root.
pub fn resolve_href(base: &str, href: &str) -> Option<String> {
    let href = href.split(['?', '#']).next().unwrap_or("");
    if href.is_empty() {
        return None;
    }
    // A network path or a scheme (http:, file:, ...): never under the root.
    if href.starts_with("//") {
        return None;
    }
    if let Some(colon) = href.find(':') {
        if !href[..colon].contains('/') {
            return None;
        }
    }
    let joined = if href.starts_with('/') {
        href.to_string()
    } else {
        let dir = match base.rfind('/') {
            Some(i) => &base[..=i],
            None => "/",
        };
        format!("{dir}{href}")
    };
    let mut out: Vec<&str> = Vec::new();
    for seg in joined.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            s => out.push(s),
        }
    }
    Some(format!("/{}", out.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_resolve_against_the_document() {
        assert_eq!(
            resolve_href("/a/b/doc.xml", "s.xsl").as_deref(),
            Some("/a/b/s.xsl")
        );
        assert_eq!(
            resolve_href("/a/b/doc.xml", "../s.xsl").as_deref(),
            Some("/a/s.xsl")
        );
        assert_eq!(
            resolve_href("/a/b/doc.xml", "/x/s.xsl").as_deref(),
            Some("/x/s.xsl")
        );
        assert_eq!(
            resolve_href("/doc.xml", "./s.xsl").as_deref(),
            Some("/s.xsl")
        );
        assert_eq!(
            resolve_href("/doc.xml", "s.xsl?v=2").as_deref(),
            Some("/s.xsl")
        );
        assert_eq!(resolve_href("/doc.xml", "../s.xsl"), None);
        assert_eq!(resolve_href("/doc.xml", "http://example.com/s.xsl"), None);
        assert_eq!(resolve_href("/doc.xml", "file:///etc/passwd"), None);
        assert_eq!(resolve_href("/doc.xml", "//host/s.xsl"), None);
        assert_eq!(resolve_href("/doc.xml", ""), None);
    }
}
