//! Freshness through symbolic and hard links: every link on the way to a
//! file a page came from is part of what the page depends on. A link
//! re-pointed (`ln -sfn`), a link replaced by a file or a file by a link, a
//! stylesheet directory swapped deploy-style (`current -> release-2`), an
//! edit to the target of a requested document that is itself a link, and a
//! write through a second hard link must each show in the next response, in
//! every cache mode and both freshness modes.

use std::path::{Path, PathBuf};

use axle::CacheMode;
use axle::config::Freshness;

use crate::support::{MODES, TestServer, tick};

/// The combinations every case runs in.
fn combinations() -> impl Iterator<Item = (CacheMode, Freshness)> {
    MODES
        .into_iter()
        .flat_map(|m| [(m, Freshness::Watch), (m, Freshness::Check)])
}

/// A site whose page reads through links everywhere:
/// - `xsl -> xsl-v1` (a stylesheet directory swapped deploy-style);
/// - `xsl-v1/page.xsl` imports `inc.xsl -> inc-a.xsl` (a linked import);
/// - `page.xsl` reads `document('/data.xml')`, `data.xml -> data-one.xml`;
/// - `page.xml` names `/xsl/page.xsl`; `alias.xml -> docs/real.xml` (a
///   requested document that is a link);
/// - `shared.xml` has a second hard link, `hard.xml`, in the same directory.
struct LinkSite {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn page_xsl(version: &str) -> String {
    format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="inc.xsl"/>
<xsl:output method="text"/>
<xsl:template match="/doc">{version}|<xsl:call-template name="inc"/>|<xsl:value-of select="document('/data.xml')/d"/>|<xsl:value-of select="document('/shared.xml')/d"/>|<xsl:value-of select="."/></xsl:template>
</xsl:stylesheet>"#
    )
}

fn inc_xsl(name: &str) -> String {
    format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:template name="inc">{name}</xsl:template>
</xsl:stylesheet>"#
    )
}

impl LinkSite {
    fn new() -> LinkSite {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let site = LinkSite {
            root: root.clone(),
            _dir: dir,
        };
        for v in ["v1", "v2"] {
            site.write(&format!("xsl-{v}/page.xsl"), &page_xsl(v));
            site.write(
                &format!("xsl-{v}/inc-a.xsl"),
                &inc_xsl(&format!("inc-a-{v}")),
            );
            site.write(
                &format!("xsl-{v}/inc-b.xsl"),
                &inc_xsl(&format!("inc-b-{v}")),
            );
            site.link(&format!("xsl-{v}/inc.xsl"), "inc-a.xsl");
        }
        site.link("xsl", "xsl-v1");
        for (name, text) in [("one", "one"), ("two", "two"), ("three", "three")] {
            site.write(&format!("data-{name}.xml"), &format!("<d>{text}</d>"));
        }
        site.link("data.xml", "data-one.xml");
        site.write("shared.xml", "<d>shared-1</d>");
        std::fs::hard_link(root.join("shared.xml"), root.join("hard.xml")).unwrap();
        let doc = |body: &str| {
            format!(
                "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"/xsl/page.xsl\" type=\"text/xsl\"?>\n<doc>{body}</doc>\n"
            )
        };
        site.write("page.xml", &doc("page"));
        site.write("docs/real.xml", &doc("real-1"));
        site.link("alias.xml", "docs/real.xml");
        LinkSite {
            root: site.root.canonicalize().unwrap(),
            _dir: site._dir,
        }
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// `ln -sfn TARGET NAME`, atomically: a new link renamed over the name.
    fn link(&self, name: &str, target: &str) {
        let path = self.root.join(name);
        let tmp = path.with_extension("link-tmp");
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(target, &tmp).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }

    /// Replaces NAME (a link) by a regular file, atomically.
    fn replace_with_file(&self, name: &str, text: &str) {
        let path = self.root.join(name);
        let tmp = path.with_extension("file-tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }

    /// Writes in place through `name` (no new inode).
    fn write_in_place(&self, name: &str, text: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(self.root.join(name))
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }
}

async fn server(root: &Path, mode: CacheMode, freshness: Freshness) -> TestServer {
    let mut config = axle::ServeConfig::new(root);
    config.cache_mode = mode;
    config.freshness = freshness;
    TestServer::start_config(config, axle::Registry::default()).await
}

/// Requests `path` until it is served from the cache (so the next request
/// after a change would be a hit if the change went unseen), and returns
/// its body.
async fn warm(server: &TestServer, path: &str, mode: CacheMode) -> String {
    let mut body = String::new();
    for _ in 0..3 {
        let r = server.get(path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        body = r.text();
    }
    if mode != CacheMode::Off {
        assert_eq!(server.get(path).await.cache(), "hit", "{path} is cached");
    }
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn every_link_on_the_way_is_a_dependency() {
    let mut wrong = Vec::new();
    for (mode, freshness) in combinations() {
        let site = LinkSite::new();
        let server = server(&site.root, mode, freshness).await;
        let mut expect = |case: &str, got: String, want: &str| {
            if got != want {
                wrong.push(format!(
                    "{mode} {freshness} {case}: got {got:?}, want {want:?}"
                ));
            }
        };
        let settle = || async {
            if freshness == Freshness::Check {
                tick().await;
            }
        };
        let body = warm(&server, "/page.xml", mode).await;
        expect("start", body, "v1|inc-a-v1|one|shared-1|page");

        // A document() target that is a link, re-pointed.
        site.link("data.xml", "data-two.xml");
        expect(
            "re-pointed document() link",
            server.get("/page.xml").await.text(),
            "v1|inc-a-v1|two|shared-1|page",
        );
        warm(&server, "/page.xml", mode).await;

        // The link replaced by a regular file.
        site.replace_with_file("data.xml", "<d>file</d>");
        expect(
            "link replaced by a file",
            server.get("/page.xml").await.text(),
            "v1|inc-a-v1|file|shared-1|page",
        );
        warm(&server, "/page.xml", mode).await;

        // The file replaced by a link again.
        site.link("data.xml", "data-three.xml");
        expect(
            "file replaced by a link",
            server.get("/page.xml").await.text(),
            "v1|inc-a-v1|three|shared-1|page",
        );
        warm(&server, "/page.xml", mode).await;

        // An imported stylesheet that is a link, re-pointed.
        site.link("xsl-v1/inc.xsl", "inc-b.xsl");
        expect(
            "re-pointed import link",
            server.get("/page.xml").await.text(),
            "v1|inc-b-v1|three|shared-1|page",
        );
        warm(&server, "/page.xml", mode).await;

        // The stylesheet directory swapped deploy-style.
        site.link("xsl", "xsl-v2");
        expect(
            "stylesheet directory swapped",
            server.get("/page.xml").await.text(),
            "v2|inc-a-v2|three|shared-1|page",
        );
        warm(&server, "/page.xml", mode).await;

        // A write through a second hard link in the same directory.
        settle().await;
        site.write_in_place("hard.xml", "<d>shared-2</d>");
        expect(
            "write through a hard link",
            server.get("/page.xml").await.text(),
            "v2|inc-a-v2|three|shared-2|page",
        );

        // The requested document is a link; its target edited in place.
        let body = warm(&server, "/alias.xml", mode).await;
        expect("alias", body, "v2|inc-a-v2|three|shared-2|real-1");
        settle().await;
        site.write_in_place(
            "docs/real.xml",
            "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"/xsl/page.xsl\" type=\"text/xsl\"?>\n<doc>real-2</doc>\n",
        );
        expect(
            "requested link's target edited",
            server.get("/alias.xml").await.text(),
            "v2|inc-a-v2|three|shared-2|real-2",
        );
        // And the requested link re-pointed.
        warm(&server, "/alias.xml", mode).await;
        site.link("alias.xml", "page.xml");
        expect(
            "requested link re-pointed",
            server.get("/alias.xml").await.text(),
            "v2|inc-a-v2|three|shared-2|page",
        );
    }
    assert!(wrong.is_empty(), "stale responses:\n{}", wrong.join("\n"));
}
