//! Axle's own XSLT stylesheets, compiled into the binary and run outside
//! the pipeline: the admin status page (`stylesheets/status.xsl`) and the
//! default directory listing (`stylesheets/listing.xsl`).
//!
//! Why not through `Pipeline`: its stylesheets are files under the
//! document root, which must not have to carry Axle's own, and an
//! installed `axle` has no source tree; and the status page reports the
//! pipeline's counters, which rendering it there would change. Each is
//! compiled once from its bytes with a resolver that refuses every load
//! (they import nothing), and each result is the body of a page that
//! `look::page` puts in the built-in shell.

use std::sync::{Arc, OnceLock};

use crate::ffi::{Limits, RefuseAll, Stylesheet, XmlDoc};

/// One of Axle's own stylesheets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BuiltIn {
    /// The admin listener's status page.
    Status,
    /// The default directory listing.
    Listing,
}

impl BuiltIn {
    /// Its bytes and the URL it is compiled as (nothing is loaded
    /// relative to it).
    fn source(self) -> (&'static [u8], &'static str) {
        match self {
            BuiltIn::Status => (
                include_bytes!("../../stylesheets/status.xsl"),
                "axle:/status.xsl",
            ),
            BuiltIn::Listing => (
                include_bytes!("../../stylesheets/listing.xsl"),
                "axle:/listing.xsl",
            ),
        }
    }

    /// The stylesheet, compiled on first use.
    fn compiled(self) -> Result<Arc<Stylesheet>, String> {
        static STATUS: OnceLock<Result<Arc<Stylesheet>, String>> = OnceLock::new();
        static LISTING: OnceLock<Result<Arc<Stylesheet>, String>> = OnceLock::new();
        let cell = match self {
            BuiltIn::Status => &STATUS,
            BuiltIn::Listing => &LISTING,
        };
        cell.get_or_init(|| {
            crate::ffi::init();
            let (bytes, url) = self.source();
            Stylesheet::compile(bytes, url, Arc::new(RefuseAll))
                .map(Arc::new)
                .map_err(|e| format!("the bundled {url} does not compile: {e}"))
        })
        .clone()
    }

    /// Transforms the document `xml` with `params` (literal strings) and
    /// serializes the result (UTF-8). Blocking: call it off the I/O
    /// threads.
    pub(crate) fn render(self, xml: &[u8], params: &[(String, String)]) -> Result<Vec<u8>, String> {
        let style = self.compiled()?;
        let resolver = Arc::new(RefuseAll);
        let url = "axle:/document.xml";
        let doc = XmlDoc::parse(xml, url, resolver.clone())
            .map_err(|e| format!("the document for {self:?} does not parse: {e}"))?;
        let result = style
            .transform(doc, url, params, &Limits::default(), resolver)
            .map_err(|e| format!("{self:?} stylesheet failed: {e}"))?;
        result
            .serialize()
            .map_err(|e| format!("the {self:?} page does not serialize: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_stylesheet_compiles() {
        for b in [BuiltIn::Status, BuiltIn::Listing] {
            b.compiled().unwrap();
        }
    }

    #[test]
    fn the_listing_links_names_encoded_and_dates_readable() {
        let xml = br#"<filelist xmlns="http://axkit.org/2002/filelist"><directory name="sub dir" size="4096" mtime="0"/><file name="a#b.xml" size="1536" mtime="1765000000" type="text/xml"/></filelist>"#;
        let params = [("path".to_string(), "/docs/".to_string())];
        let html = String::from_utf8(BuiltIn::Listing.render(xml, &params).unwrap()).unwrap();
        assert!(html.contains("<h1>Index of /docs/</h1>"), "{html}");
        assert!(html.contains("href=\"sub%20dir/\""), "{html}");
        assert!(html.contains("href=\"a%23b.xml\""), "{html}");
        assert!(html.contains("href=\"../\""), "{html}");
        assert!(html.contains("1.5 KiB"), "{html}");
        assert!(html.contains("title=\"1536 bytes\""), "{html}");
        assert!(html.contains(">1970-01-01 00:00</time>"), "{html}");
        assert!(html.contains(">2025-12-06 05:46</time>"), "{html}");
        assert!(!html.contains("passthru"), "{html}");
    }
}
