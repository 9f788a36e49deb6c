//! XInclude (AxKit's XInclude provider): a location's `xinclude = true`
//! expands includes of files inside the root (XML and `parse="text"`),
//! tracks them for freshness, and never reads outside the root.

use super::{COPY_XSL, Server};
use crate::support::{MODES, TestSite, tick};

const XINCLUDE: &str = r#"
[location."/xi"]
xinclude = true
"#;

const XI_NS: &str = "http://www.w3.org/2001/XInclude";

fn xi_doc(body: &str) -> String {
    format!(
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/copy.xsl\"?>\n<doc xmlns:xi=\"{XI_NS}\">{body}</doc>\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn xinclude_includes_files_inside_the_root_and_tracks_them() {
    let site = TestSite::new();
    site.write("t/copy.xsl", COPY_XSL);
    let doc = xi_doc("<xi:include href=\"part.xml\"/>|<xi:include href=\"sub/more.xml\"/>");
    site.write("xi/doc.xml", &doc);
    site.write("noxi/doc.xml", &doc);
    site.write("noxi/part.xml", "<part>v1</part>");
    site.write("xi/sub/more.xml", "<more/>");
    for mode in MODES {
        site.write("xi/part.xml", "<part>v1</part>");
        tick().await;
        let server = Server::start(&site.root, mode, XINCLUDE).await;
        let expected = |v: &str| {
            format!(
                "<doc xmlns:xi=\"{XI_NS}\"><part>{v}</part>|<more xml:base=\"sub/more.xml\"/></doc>\n"
            )
        };
        let r = server.get("/xi/doc.xml").await;
        assert_eq!((r.status, r.text()), (200, expected("v1")), "{mode}");
        let again = server.get("/xi/doc.xml").await;
        assert_eq!(again.body, r.body);
        if server.caches() {
            assert_eq!(again.cache(), "hit", "{mode}");
        }
        // Editing an included file changes the response.
        tick().await;
        site.write("xi/part.xml", "<part>v2</part>");
        assert_eq!(server.body("/xi/doc.xml").await, expected("v2"), "{mode}");

        // With xinclude off (the default), the element passes through.
        assert_eq!(
            server.body("/noxi/doc.xml").await,
            format!(
                "<doc xmlns:xi=\"{XI_NS}\"><xi:include href=\"part.xml\"/>|<xi:include href=\"sub/more.xml\"/></doc>\n"
            ),
            "{mode}"
        );
    }
}

/// `parse="text"` includes the file's text (as `xmllint --xinclude` does).
#[tokio::test(flavor = "multi_thread")]
async fn xinclude_parse_text_includes_the_text_of_a_file_inside_the_root() {
    let site = TestSite::new();
    site.write("t/copy.xsl", COPY_XSL);
    site.write(
        "xi/text.xml",
        &xi_doc("[<xi:include href=\"note.txt\" parse=\"text\"/>]"),
    );
    for mode in MODES {
        site.write("xi/note.txt", "note 1 & <2>");
        tick().await;
        let server = Server::start(&site.root, mode, XINCLUDE).await;
        let r = server.get("/xi/text.xml").await;
        assert_eq!(
            (r.status, r.text()),
            (
                200,
                format!("<doc xmlns:xi=\"{XI_NS}\">[note 1 &amp; &lt;2&gt;]</doc>\n")
            ),
            "{mode}"
        );
        tick().await;
        site.write("xi/note.txt", "note 2");
        assert_eq!(
            server.body("/xi/text.xml").await,
            format!("<doc xmlns:xi=\"{XI_NS}\">[note 2]</doc>\n"),
            "{mode}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn xinclude_never_reads_outside_the_root() {
    let site = TestSite::new();
    site.write("t/copy.xsl", COPY_XSL);
    let secret = site.outside().join("secret.txt");
    std::fs::create_dir_all(site.root.join("xi")).unwrap();
    std::os::unix::fs::symlink(&secret, site.root.join("xi/link.txt")).unwrap();
    let secret_path = secret.display().to_string();
    let secret_url = format!("file://{secret_path}");
    let hrefs: [(&str, &str); 8] = [
        ("../../secret.txt", "text"),
        ("../../secret.txt", "xml"),
        ("/etc/passwd", "text"),
        ("file:///etc/passwd", "text"),
        (&secret_path, "text"),
        (&secret_url, "text"),
        ("link.txt", "text"),
        ("%2e%2e/%2e%2e/secret.txt", "text"),
    ];
    for mode in MODES {
        let server = Server::start(&site.root, mode, XINCLUDE).await;
        for (i, (href, parse)) in hrefs.iter().enumerate() {
            // With a fallback: the fallback, exactly.
            site.write(
                &format!("xi/fb{i}.xml"),
                &xi_doc(&format!(
                    "<xi:include href=\"{href}\" parse=\"{parse}\"><xi:fallback>refused</xi:fallback></xi:include>"
                )),
            );
            let r = server.get(&format!("/xi/fb{i}.xml")).await;
            assert_eq!(
                (r.status, r.text()),
                (200, format!("<doc xmlns:xi=\"{XI_NS}\">refused</doc>\n")),
                "{mode} {href} {parse}"
            );
            // Without: whatever the status, nothing of the file.
            site.write(
                &format!("xi/nofb{i}.xml"),
                &xi_doc(&format!("<xi:include href=\"{href}\" parse=\"{parse}\"/>")),
            );
            let r = server.get(&format!("/xi/nofb{i}.xml")).await;
            let text = r.text();
            assert!(
                !text.contains("TOP-SECRET-CONTENT") && !text.contains("root:x:"),
                "{mode} {href} {parse}: {text}"
            );
        }
    }
}
