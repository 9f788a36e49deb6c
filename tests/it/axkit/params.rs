//! Params (AxKit's query-string and form parameters passed to XSLT): query
//! and form params reach the stylesheet, the location's allow-lists decide
//! which, and only those that reach it vary the cache key.

use super::Server;
use crate::support::{MODES, TestSite};

const PARAMS_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text"/>
<xsl:param name="a" select="'-'"/>
<xsl:param name="b" select="'-'"/>
<xsl:param name="p" select="'-'"/>
<xsl:template match="/">a=<xsl:value-of select="$a"/> b=<xsl:value-of select="$b"/> p=<xsl:value-of select="$p"/></xsl:template>
</xsl:stylesheet>
"#;

const PARAMS: &str = r#"
[location."/none"]
params = "none"

[location."/only"]
params = ["a"]
"#;

fn params_site() -> TestSite {
    let site = TestSite::new();
    site.write("t/params.xsl", PARAMS_XSL);
    let doc = "<?xml-stylesheet type=\"text/xsl\" href=\"/t/params.xsl\"?>\n<doc/>\n";
    for dir in ["params", "none", "only"] {
        site.write(&format!("{dir}/doc.xml"), doc);
    }
    site
}

#[tokio::test(flavor = "multi_thread")]
async fn query_and_form_params_reach_the_stylesheet_and_vary_the_cache_key() {
    let site = params_site();
    const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");
    for mode in MODES {
        let server = Server::start(&site.root, mode, PARAMS).await;
        assert_eq!(server.body("/params/doc.xml").await, "a=- b=- p=-");
        assert_eq!(server.body("/params/doc.xml?a=1&b=2").await, "a=1 b=2 p=-");
        assert_eq!(
            server.body("/params/doc.xml?a=1;b=two%20words").await,
            "a=1 b=two words p=-"
        );
        assert_eq!(
            server
                .body("/params/doc.xml?a=x+y;b=%3Cb%3E&p=%27q%27")
                .await,
            "a=x y b=<b> p='q'"
        );

        let post = server
            .send(
                reqwest::Method::POST,
                "/params/doc.xml",
                &[FORM],
                Some("a=posted&b=da%20ta"),
            )
            .await;
        assert_eq!(
            (post.status, post.text()),
            (200, "a=posted b=da ta p=-".into()),
            "{mode}"
        );
        let both = server
            .send(
                reqwest::Method::POST,
                "/params/doc.xml?a=query;p=q",
                &[FORM],
                Some("a=form&b=f"),
            )
            .await;
        assert_eq!(both.text(), "a=form b=f p=q", "{mode}: form fields win");
        let not_form = server
            .send(
                reqwest::Method::POST,
                "/params/doc.xml",
                &[("content-type", "text/xml")],
                Some("<doc/>"),
            )
            .await;
        assert_eq!(not_form.status, 400, "{mode}");

        // The params are in the cache key.
        let p1 = server.get("/params/doc.xml?p=1").await;
        assert_eq!(
            (p1.text(), p1.cache()),
            ("a=- b=- p=1".into(), "miss".into())
        );
        let p2 = server.get("/params/doc.xml?p=2").await;
        assert_eq!(
            (p2.text(), p2.cache()),
            ("a=- b=- p=2".into(), "miss".into())
        );
        let p1_again = server.get("/params/doc.xml?p=1").await;
        assert_eq!(p1_again.body, p1.body);
        assert_ne!(p1.header("etag"), p2.header("etag"));
        if server.caches() {
            assert_eq!(p1_again.cache(), "hit", "{mode}");
        }

        // Allow-lists.
        assert_eq!(
            server.body("/none/doc.xml?a=1&b=2&p=3").await,
            "a=- b=- p=-",
            "{mode}"
        );
        let none_post = server
            .send(reqwest::Method::POST, "/none/doc.xml", &[FORM], Some("a=1"))
            .await;
        assert_eq!(none_post.text(), "a=- b=- p=-", "{mode}");
        assert_eq!(
            server.body("/only/doc.xml?a=1&b=2&p=3").await,
            "a=1 b=- p=-",
            "{mode}"
        );
        let only_post = server
            .send(
                reqwest::Method::POST,
                "/only/doc.xml",
                &[FORM],
                Some("a=x&b=y"),
            )
            .await;
        assert_eq!(only_post.text(), "a=x b=- p=-", "{mode}");
        // Params that do not reach the stylesheet do not split the cache.
        let n1 = server.get("/none/doc.xml?p=10").await;
        let n2 = server.get("/none/doc.xml?p=20").await;
        assert_eq!(n1.body, n2.body);
        if server.caches() {
            assert_eq!(n2.cache(), "hit", "{mode}");
            let o = server.get("/only/doc.xml?a=1&b=other").await;
            assert_eq!((o.text(), o.cache()), ("a=1 b=- p=-".into(), "hit".into()));
        }
    }
}
