//! Output charset (AxKit's AxOutputCharset): a location's
//! `output-charset`, fixed or taken from Accept-Charset (`accept`),
//! transcodes the transformed output, with character references for
//! characters the charset lacks; the untransformed source is never
//! transcoded, and each charset is its own variant (ETag, Vary).

use super::Server;
use crate::support::{MODES, TestSite};

const HTML_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="html" encoding="UTF-8"/>
<xsl:template match="/"><html><head><title>t</title></head><body><p><xsl:value-of select="/doc"/></p></body></html></xsl:template>
</xsl:stylesheet>
"#;

const XML_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" encoding="UTF-8"/>
<xsl:template match="/"><out><xsl:value-of select="/doc"/></out></xsl:template>
</xsl:stylesheet>
"#;

const CHARSETS: &str = r#"
[location."/latin"]
output-charset = "ISO-8859-1"

[location."/acc"]
output-charset = "accept"
"#;

/// The UTF-8 HTML page of `html.xsl` for "café € Ω", with `charset` in its
/// meta tag.
fn html_page(charset: &str) -> String {
    format!(
        "<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html; charset={charset}\">\n<title>t</title>\n</head>\n<body><p>café € Ω</p></body>\n</html>\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn output_charset_transcodes_with_character_references_for_missing_characters() {
    let site = TestSite::new();
    site.write("t/html.xsl", HTML_XSL);
    site.write("t/xml.xsl", XML_XSL);
    let html_doc =
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/html.xsl\"?>\n<doc>café € Ω</doc>\n";
    let xml_doc = "<?xml-stylesheet type=\"text/xsl\" href=\"/t/xml.xsl\"?>\n<doc>café € Ω</doc>\n";
    for dir in ["utf8", "latin", "acc"] {
        site.write(&format!("{dir}/page.xml"), html_doc);
        site.write(&format!("{dir}/data.xml"), xml_doc);
    }
    // windows-1252 (what the label ISO-8859-1 means): é and € exist, Ω not.
    let cp1252_html = {
        let mut b = html_page("windows-1252")
            .replace("café € Ω", "caf\u{1}")
            .into_bytes();
        let at = b.iter().position(|&c| c == 1).unwrap();
        b.splice(at..at + 1, b"\xE9 \x80 &#937;".iter().copied());
        b
    };
    let cp1252_xml =
        b"<?xml version=\"1.0\" encoding=\"windows-1252\"?>\n<out>caf\xE9 \x80 &#937;</out>\n"
            .to_vec();
    let koi8_html = html_page("KOI8-R")
        .replace("café € Ω", "caf&#233; &#8364; &#937;")
        .into_bytes();
    for mode in MODES {
        let server = Server::start(&site.root, mode, CHARSETS).await;
        let utf8 = server.get("/utf8/page.xml").await;
        assert_eq!(utf8.text(), html_page("UTF-8"), "{mode}");
        assert_eq!(utf8.header("content-type"), "text/html; charset=UTF-8");
        assert_eq!(utf8.header("vary"), "");

        for _ in 0..2 {
            let latin = server.get("/latin/page.xml").await;
            assert_eq!(latin.status, 200);
            assert_eq!(
                latin.header("content-type"),
                "text/html; charset=windows-1252"
            );
            assert_eq!(latin.body, cp1252_html, "{mode}: {}", latin.text());
            assert_eq!(
                latin.header("vary"),
                "",
                "{mode}: a fixed charset does not vary"
            );
            let xml = server.get("/latin/data.xml").await;
            assert_eq!(xml.header("content-type"), "text/xml; charset=windows-1252");
            assert_eq!(xml.body, cp1252_xml, "{mode}: {}", xml.text());
            // The source itself is never transcoded.
            let raw = server.get("/latin/page.xml?passthru=1").await;
            assert_eq!(raw.text(), html_doc);
        }

        // "accept": from Accept-Charset, always with Vary.
        for (accept, ct, body) in [
            (
                None,
                "text/html; charset=UTF-8",
                html_page("UTF-8").into_bytes(),
            ),
            (
                Some("utf-8"),
                "text/html; charset=UTF-8",
                html_page("UTF-8").into_bytes(),
            ),
            (
                Some("iso-8859-1"),
                "text/html; charset=windows-1252",
                cp1252_html.clone(),
            ),
            (
                Some("utf-8;q=0.5, iso-8859-1"),
                "text/html; charset=windows-1252",
                cp1252_html.clone(),
            ),
            (
                Some("iso-8859-1;q=0.5, utf-8"),
                "text/html; charset=UTF-8",
                html_page("UTF-8").into_bytes(),
            ),
            (
                Some("koi8-r"),
                "text/html; charset=KOI8-R",
                koi8_html.clone(),
            ),
            (
                Some("x-unknown"),
                "text/html; charset=UTF-8",
                html_page("UTF-8").into_bytes(),
            ),
        ] {
            let headers: Vec<(&str, &str)> =
                accept.iter().map(|a| ("accept-charset", *a)).collect();
            let r = server.get_with("/acc/page.xml", &headers).await;
            assert_eq!(r.status, 200);
            assert_eq!(r.header("content-type"), ct, "{mode} {accept:?}");
            assert_eq!(r.body, body, "{mode} {accept:?}: {}", r.text());
            assert_eq!(
                r.header("vary").to_ascii_lowercase(),
                "accept-charset",
                "{mode} {accept:?}"
            );
        }
        // Variants have their own ETags.
        let a = server
            .get_with("/acc/page.xml", &[("accept-charset", "koi8-r")])
            .await;
        let b = server.get("/acc/page.xml").await;
        assert_ne!(a.header("etag"), b.header("etag"));
    }
}
