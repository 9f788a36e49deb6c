//! `axle:` URIs (AxKit's `axkit:` URIs): a stylesheet reading the
//! transformed output of another document, with that document tracked for
//! freshness, loops cut and reported, and a nested render through the same
//! stylesheet not waiting for itself.

use std::time::Duration;

use super::{Server, tag_xsl};
use crate::support::{MODES, TestSite, tick};

fn reader_xsl(uri: &str) -> String {
    format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" omit-xml-declaration="yes"/>
<xsl:template match="/"><outer><xsl:copy-of select="document('{uri}')"/></outer></xsl:template>
</xsl:stylesheet>
"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn axle_uris_read_the_transformed_output_of_another_document_and_track_it() {
    let site = TestSite::new();
    site.write("t/outer.xsl", &reader_xsl("axle:/ax/other.xml"));
    site.write("t/other.xsl", &tag_xsl("v1"));
    site.write(
        "ax/outer.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/outer.xsl\"?>\n<doc/>\n",
    );
    site.write(
        "ax/other.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/other.xsl\"?>\n<doc>other</doc>\n",
    );
    for mode in MODES {
        site.write("t/other.xsl", &tag_xsl("v1"));
        site.write(
            "ax/other.xml",
            "<?xml-stylesheet type=\"text/xsl\" href=\"/t/other.xsl\"?>\n<doc>other</doc>\n",
        );
        tick().await;
        let server = Server::start(&site.root, mode, "").await;
        let first = server.get("/ax/outer.xml").await;
        assert_eq!(
            (first.status, first.text()),
            (200, "<outer><out>other...v1</out></outer>\n".to_string()),
            "{mode}"
        );
        let again = server.get("/ax/outer.xml").await;
        assert_eq!(again.body, first.body);
        if server.caches() {
            assert_eq!(again.cache(), "hit", "{mode}");
        }
        // The inner document's stylesheet changes: so does the outer output.
        tick().await;
        site.write("t/other.xsl", &tag_xsl("v2"));
        assert_eq!(
            server.body("/ax/outer.xml").await,
            "<outer><out>other...v2</out></outer>\n",
            "{mode}"
        );
        // And its source.
        tick().await;
        site.write(
            "ax/other.xml",
            "<?xml-stylesheet type=\"text/xsl\" href=\"/t/other.xsl\"?>\n<doc>edited</doc>\n",
        );
        assert_eq!(
            server.body("/ax/outer.xml").await,
            "<outer><out>edited...v2</out></outer>\n",
            "{mode}"
        );
    }
}

/// `a.xml` reads `axle:/ax/b.xml`, which reads `axle:/ax/a.xml`: the loop
/// is cut and reported, without hanging or crashing the server.
#[tokio::test(flavor = "multi_thread")]
async fn an_axle_uri_loop_is_reported_not_followed() {
    let site = TestSite::new();
    site.write("t/reads-b.xsl", &reader_xsl("axle:/ax/b.xml"));
    site.write("t/reads-a.xsl", &reader_xsl("axle:/ax/a.xml"));
    site.write(
        "ax/a.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/reads-b.xsl\"?>\n<a/>\n",
    );
    site.write(
        "ax/b.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/reads-a.xsl\"?>\n<b/>\n",
    );
    site.write("t/self.xsl", &reader_xsl("axle:/ax/self.xml"));
    site.write(
        "ax/self.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/self.xsl\"?>\n<s/>\n",
    );
    for mode in MODES {
        let server = Server::start(&site.root, mode, "").await;
        for path in ["/ax/a.xml", "/ax/b.xml", "/ax/self.xml"] {
            let r = tokio::time::timeout(Duration::from_secs(10), server.get(path))
                .await
                .unwrap_or_else(|_| panic!("{mode} {path}: no answer in 10 s"));
            // Reported either way: a 500 page, or a message in the output.
            assert!(
                matches!(r.status, 200 | 500) && r.text().contains("URI loop"),
                "{mode} {path}: {} {}",
                r.status,
                r.text()
            );
        }
        // The server still serves.
        assert_eq!(server.get("/one.xml").await.status, 200, "{mode}");
    }
}

/// A document whose stylesheet reads another document rendered through
/// that same stylesheet: the nested transform runs inside the outer one,
/// on its thread, while the outer holds the only compiled instance; it
/// must get another instance, not wait for the outer's.
#[tokio::test(flavor = "multi_thread")]
async fn an_axle_uri_rendered_through_the_same_stylesheet_does_not_wait_for_itself() {
    let site = TestSite::new();
    site.write(
        "t/same.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" omit-xml-declaration="yes"/>
<xsl:template match="/outer"><o><xsl:copy-of select="document('axle:/ax/inner.xml')"/></o></xsl:template>
<xsl:template match="/inner"><i/></xsl:template>
</xsl:stylesheet>
"#,
    );
    site.write(
        "ax/outer.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/same.xsl\"?>\n<outer/>\n",
    );
    site.write(
        "ax/inner.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/same.xsl\"?>\n<inner/>\n",
    );
    for mode in MODES {
        let server = Server::start(&site.root, mode, "").await;
        let r = tokio::time::timeout(Duration::from_secs(10), server.get("/ax/outer.xml"))
            .await
            .unwrap_or_else(|_| panic!("{mode}: no answer in 10 s"));
        assert_eq!((r.status, r.text().trim()), (200, "<o><i/></o>"), "{mode}");
    }
}
