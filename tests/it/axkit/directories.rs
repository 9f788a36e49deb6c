//! Directories (AxKit's AxHandleDirs and its filelist document): a
//! directory gives its filelist, transformed by the location's processors,
//! or its index document; a listing names only what can be served.

use super::{Server, out, pi, tags};
use crate::support::{MODES, TestSite};

const FILELIST_XSL: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform" xmlns:f="http://axkit.org/2002/filelist">
<xsl:output method="text"/>
<xsl:template match="/f:filelist"><xsl:for-each select="f:file|f:directory"><xsl:value-of select="local-name()"/><xsl:text> </xsl:text><xsl:value-of select="@name"/><xsl:if test="self::f:file"><xsl:text> </xsl:text><xsl:value-of select="@size"/></xsl:if><xsl:text>&#10;</xsl:text></xsl:for-each></xsl:template>
</xsl:stylesheet>
"#;

const DIRECTORIES: &str = r#"
[location."/listing"]
directories = true
processor = [{ type = "text/xsl", href = "/t/filelist.xsl", root = "{http://axkit.org/2002/filelist}filelist" }]

[location."/rawlist"]
directories = true

[location."/noindex"]
index = ""

[location."/home"]
index = "home.xml"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn directories_give_a_filelist_or_their_index() {
    let site = TestSite::new();
    tags(&site, &["A"]);
    site.write("t/filelist.xsl", FILELIST_XSL);
    site.write("listing/a.txt", "hello");
    site.write("listing/b.xml", "<b/>");
    site.write("listing/.hidden", "secret");
    site.write("listing/sub/index.xml", "<x/>");
    site.write("rawlist/a.txt", "hello");
    let index = format!("{}<doc>index</doc>", pi("A", ""));
    site.write("withindex/index.xml", &index);
    site.write("noindex/index.xml", &index);
    site.write("home/home.xml", &format!("{}<doc>home</doc>", pi("A", "")));
    site.write(
        "home/index.xml",
        &format!("{}<doc>index</doc>", pi("A", "")),
    );
    std::fs::create_dir_all(site.root.join("empty")).unwrap();
    for mode in MODES {
        let server = Server::start(&site.root, mode, DIRECTORIES).await;
        let list = server.get("/listing/").await;
        assert_eq!(
            (list.status, list.text()),
            (
                200,
                "file a.txt 5\nfile b.xml 4\ndirectory sub\n".to_string()
            ),
            "{mode}"
        );
        assert_eq!(list.header("content-type"), "text/plain; charset=UTF-8");
        for (from, to) in [("/listing", "/listing/"), ("/listing/sub", "/listing/sub/")] {
            let r = server.get(from).await;
            assert_eq!(
                (r.status, r.header("location")),
                (308, to.to_string()),
                "{mode}"
            );
        }
        // The listing replaces the index here.
        let sub = server.get("/listing/sub/").await;
        assert_eq!(sub.text(), "file index.xml 4\n", "{mode}");
        // A changed directory gives a changed listing.
        site.write("listing/c.txt", "abc");
        assert_eq!(
            server.body("/listing/").await,
            "file a.txt 5\nfile b.xml 4\nfile c.txt 3\ndirectory sub\n",
            "{mode}"
        );
        std::fs::remove_file(site.root.join("listing/c.txt")).unwrap();

        // Without a processor Axle's own listing page, and with
        // `?passthru=1` the filelist document itself.
        let page = server.get("/rawlist/").await;
        assert_eq!(page.status, 200);
        assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
        assert!(
            page.text().contains("<a href=\"a.txt\">a.txt</a>"),
            "{}",
            page.text()
        );
        let raw = server.get("/rawlist/?passthru=1").await;
        assert_eq!(raw.status, 200);
        assert_eq!(raw.header("content-type"), "text/xml");
        let text = raw.text();
        assert!(
            text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<filelist xmlns=\"http://axkit.org/2002/filelist\">\n  <file name=\"a.txt\" size=\"5\" mtime=\""),
            "{text}"
        );
        assert!(
            text.contains(" type=\"text/plain\"/>\n</filelist>\n"),
            "{text}"
        );

        // Without `directories`: index.xml, else 404; `index = ""` turns it off.
        assert_eq!(server.body("/withindex/").await, out("index...A"), "{mode}");
        assert_eq!(server.get("/withindex").await.status, 308);
        assert_eq!(server.get("/empty/").await.status, 404, "{mode}");
        assert_eq!(server.get("/noindex/").await.status, 404, "{mode}");
        assert_eq!(server.body("/home/").await, out("home...A"), "{mode}");
    }
}

/// A listing names only what can be served: a symlink leading out of the
/// root (a 404 when requested) is left out, like a dotfile.
#[tokio::test(flavor = "multi_thread")]
async fn a_directory_listing_leaves_out_symlinks_leading_out_of_the_root() {
    let site = TestSite::new();
    site.write("t/filelist.xsl", FILELIST_XSL);
    site.write("listing/a.txt", "hello");
    std::os::unix::fs::symlink(
        site.outside().join("secret.txt"),
        site.root.join("listing/out.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(site.outside(), site.root.join("listing/up")).unwrap();
    std::os::unix::fs::symlink(
        site.root.join("listing/a.txt"),
        site.root.join("listing/in.txt"),
    )
    .unwrap();
    for mode in MODES {
        let server = Server::start(&site.root, mode, DIRECTORIES).await;
        assert_eq!(server.get("/listing/out.txt").await.status, 404);
        assert_eq!(server.get("/listing/up/").await.status, 404);
        assert_eq!(
            server.body("/listing/").await,
            "file a.txt 5\nfile in.txt 5\n",
            "{mode}"
        );
    }
}
