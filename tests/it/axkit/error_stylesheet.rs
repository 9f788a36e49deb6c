//! The error stylesheet (AxKit's AxErrorStylesheet): errors rendered
//! through a configured stylesheet, the standard page without one, and an
//! error response never cached, so fixing the document fixes the
//! response.

use super::{Server, out, pi, tags};
use crate::support::{MODES, TestSite, tick};

const ERROR_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="html"/>
<xsl:template match="/"><html><body><p class="file"><xsl:value-of select="/error/file"/></p><p class="msg"><xsl:value-of select="/error/msg"/></p></body></html></xsl:template>
</xsl:stylesheet>
"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_error_stylesheet_renders_errors_which_are_never_cached() {
    let site = TestSite::new();
    tags(&site, &["A"]);
    site.write("t/error.xsl", ERROR_XSL);
    let broken = format!(
        "<?xml version=\"1.0\"?>\n{}<doc><unclosed></doc>\n",
        pi("A", "")
    );
    let fixed = format!("<?xml version=\"1.0\"?>\n{}<doc>fixed</doc>\n", pi("A", ""));
    let config = "[location.\"/errs\"]\nerror-stylesheet = \"/t/error.xsl\"\n";
    for mode in MODES {
        site.write("errs/doc.xml", &broken);
        site.write("plainerrs/doc.xml", &broken);
        site.write(
            "errs/missing.xml",
            "<?xml-stylesheet type=\"text/xsl\" href=\"/t/nope.xsl\"?><doc/>",
        );
        tick().await;
        let server = Server::start(&site.root, mode, config).await;
        for _ in 0..2 {
            let r = server.get("/errs/doc.xml").await;
            assert_eq!(r.status, 500, "{mode}");
            assert_eq!(r.header("content-type"), "text/html; charset=UTF-8");
            assert_eq!(r.header("cache-control"), "no-store");
            let text = r.text();
            assert!(
                text.starts_with(
                    "<html><body>\n<p class=\"file\">/errs/doc.xml</p>\n<p class=\"msg\">/errs/doc.xml is not well-formed XML: /errs/doc.xml:3:22: "
                ),
                "{mode}: {text}"
            );
            assert!(text.ends_with("</p>\n</body></html>\n"), "{text}");
            assert!(!text.contains(&site.root.display().to_string()), "{text}");
        }
        let missing = server.get("/errs/missing.xml").await;
        assert_eq!(missing.status, 500);
        assert!(
            missing.text().starts_with("<html><body>\n<p class=\"file\">/errs/missing.xml</p>\n<p class=\"msg\">stylesheet /t/nope.xsl (named by /errs/missing.xml) was not found"),
            "{mode}: {}",
            missing.text()
        );
        // Without an error stylesheet: the standard page.
        let plain = server.get("/plainerrs/doc.xml").await;
        assert_eq!(plain.status, 500);
        assert!(
            plain.text().contains("500 Malformed document"),
            "{}",
            plain.text()
        );

        // Fixing the document fixes the response: nothing was cached.
        tick().await;
        site.write("errs/doc.xml", &fixed);
        let ok = server.get("/errs/doc.xml").await;
        assert_eq!((ok.status, ok.text()), (200, out("fixed...A")), "{mode}");
    }
}
