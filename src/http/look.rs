//! Axle's built-in look: the one style sheet (`stylesheets/axle.css`,
//! compiled into the binary) and the page shell for the pages Axle makes
//! itself rather than a site's stylesheets: error pages, directory
//! listings (`listing`) and the admin status page. Inline, so a page
//! needs no file under the document root, and the same on every one of
//! them: a header with a link home, light or dark as the browser prefers.

/// The built-in CSS.
pub(crate) const CSS: &str = include_str!("../../stylesheets/axle.css");

/// A complete HTML5 page: `title` (text) in `<title>`, the header with its
/// link home, and `body` (markup, already escaped) in `<main>`.
pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>{title}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
         <header class=\"axle-header\"><div class=\"wrap\"><a href=\"/\" title=\"Home page\">Axle</a></div></header>\n\
         <main class=\"wrap\">\n{body}</main>\n</body>\n</html>\n",
        title = super::escape_markup(title),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_has_the_style_a_link_home_and_an_escaped_title() {
        let html = page("a <b>", "<p>x</p>\n");
        assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
        assert!(html.contains("<title>a &lt;b&gt;</title>"));
        assert!(html.contains("prefers-color-scheme: dark"));
        assert!(html.contains("<a href=\"/\""));
        assert!(html.ends_with("</html>\n"));
        assert!(
            !CSS.contains("</style"),
            "the CSS must not close its element"
        );
    }
}
