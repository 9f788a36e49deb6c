//! Style types (AxKit's AxAddStyleMap): a location's type map lets PIs of
//! custom MIME types run a Language, only under that location.

use super::{Server, out, tags};
use crate::support::{MODES, TestSite};

const TYPES: &str = r#"
[location."/typed".types]
"application/x-identity" = "passthru"
"text/x-my-xslt" = "xslt"
"#;

/// `[location."/x".types]` (AxAddStyleMap) maps a PI's MIME type to a
/// Language, only under that location.
#[tokio::test(flavor = "multi_thread")]
async fn a_location_type_map_runs_pis_of_custom_types() {
    let site = TestSite::new();
    tags(&site, &["A"]);
    let identity = "<?xml version=\"1.0\"?>\n<?xml-stylesheet type=\"application/x-identity\" href=\"/t/A.xsl\"?>\n<doc>identity</doc>\n";
    let custom =
        "<?xml-stylesheet type=\"text/x-my-xslt\" href=\"/t/A.xsl\"?>\n<doc>custom</doc>\n";
    for dir in ["typed", "untyped"] {
        site.write(&format!("{dir}/identity.xml"), identity);
        site.write(&format!("{dir}/custom.xml"), custom);
    }
    for mode in MODES {
        let server = Server::start(&site.root, mode, TYPES).await;
        let id = server.get("/typed/identity.xml").await;
        assert_eq!(
            (id.status, id.text()),
            (200, identity.to_string()),
            "{mode}"
        );
        assert_eq!(id.header("content-type"), "text/xml; charset=UTF-8");
        assert_ne!(id.cache(), "none", "{mode}: a passthru stage ran");
        assert_eq!(
            server.body("/typed/custom.xml").await,
            out("custom...A"),
            "{mode}"
        );
        // Elsewhere the types mean nothing: no stage, served as it is.
        for (path, text) in [
            ("/untyped/identity.xml", identity),
            ("/untyped/custom.xml", custom),
        ] {
            let r = server.get(path).await;
            assert_eq!(
                (r.status, r.text(), r.cache(), r.header("content-type")),
                (200, text.to_string(), "none".into(), "text/xml".into()),
                "{mode} {path}"
            );
        }
    }
}
