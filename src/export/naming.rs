//! How `axle build` names what it writes: a document page's file from its
//! URL path and the content type it is served as, a style variant's from
//! its style name. Kept apart from the build itself: the naming scheme is
//! the part users depend on (links, CDN rules), and its tests pin it.

/// A style name as part of a file name: characters other than ASCII
/// letters, digits, `-` and `_` become `_`.
pub(super) fn file_safe(style: &str) -> String {
    style
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A content type's essence (`text/html; charset=UTF-8` → `text/html`),
/// lowercased.
pub(super) fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The file extension for a content type.
fn extension(content_type: &str) -> String {
    let known = match essence(content_type).as_str() {
        "text/html" => "html",
        "application/xhtml+xml" => "xhtml",
        "image/svg+xml" => "svg",
        "text/plain" => "txt",
        "application/json" => "json",
        "text/css" => "css",
        "text/xml" | "application/xml" => "xml",
        e if e.ends_with("+xml") => "xml",
        e => {
            return mime_guess::get_mime_extensions_str(e)
                .and_then(|list| list.first())
                .map_or_else(|| String::from("bin"), |s| (*s).to_string());
        }
    };
    known.to_string()
}

/// The output file of a document page whose base name is `base`.
pub(super) fn document_file(base: &str, content_type: &str, variant: bool) -> String {
    let ext = extension(content_type);
    let lower = base.to_ascii_lowercase();
    if !variant && lower.ends_with(&format!(".{ext}")) {
        base.to_string()
    } else {
        format!("{base}.{ext}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_named_by_content_type() {
        assert_eq!(
            document_file("a/b.xml", "text/html; charset=UTF-8", false),
            "a/b.xml.html"
        );
        assert_eq!(document_file("a/b.xml", "text/xml", false), "a/b.xml");
        assert_eq!(
            document_file("a/b.xml.print", "text/xml", true),
            "a/b.xml.print.xml"
        );
        assert_eq!(
            document_file("a/index", "application/atom+xml", false),
            "a/index.xml"
        );
        assert_eq!(file_safe("my style/2"), "my_style_2");
    }
}
