//! Freshness of cached responses in both modes: `check` (a stat per file
//! per request) and `watch` (inotify, drained before every hit). A change
//! that completed before a request must show in that request: no sleeps
//! in `watch` mode, where the guarantee is exact. In every cache mode:
//! `off` caches no output, but in `watch` mode it too trusts the watcher
//! for confined paths and the compiled-stylesheet and source memos.

use axle::CacheMode;
use axle::config::Freshness;

use crate::support::{MODES, TestServer, TestSite, tick};

async fn server(site: &TestSite, mode: CacheMode, freshness: Freshness) -> TestServer {
    let mut config = axle::ServeConfig::new(&site.root);
    config.cache_mode = mode;
    config.freshness = freshness;
    TestServer::start_config(config, axle::Registry::default()).await
}

/// What `X-Axle-Cache` says of a repeated request in `mode`.
fn repeat(mode: CacheMode) -> &'static str {
    if mode == CacheMode::Off {
        "miss"
    } else {
        "hit"
    }
}

/// Waits between edits only where stamps need a clock tick to differ.
async fn settle(freshness: Freshness) {
    if freshness == Freshness::Check {
        tick().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_kind_of_change_shows_in_the_next_response() {
    for (mode, freshness) in MODES
        .into_iter()
        .flat_map(|m| [(m, Freshness::Watch), (m, Freshness::Check)])
    {
        let site = TestSite::new();
        let server = server(&site, mode, freshness).await;
        let hit = repeat(mode);
        let first = server.get("/two.xml").await;
        assert!(first.text().contains("Second."), "{mode} {freshness}");
        assert_eq!(
            server.get("/two.xml").await.cache(),
            hit,
            "{mode} {freshness}"
        );

        // A stylesheet written in place.
        settle(freshness).await;
        site.write(
            "s/layout.xsl",
            &site
                .read("s/layout.xsl")
                .replace("<h1>", "<h1 class=\"a\">"),
        );
        let r = server.get("/two.xml").await;
        assert!(
            r.text().contains("<h1 class=\"a\">"),
            "{mode} {freshness}: in place"
        );
        assert_eq!(
            server.get("/two.xml").await.cache(),
            hit,
            "{mode} {freshness}"
        );

        // The source replaced by rename (an editor's atomic save).
        settle(freshness).await;
        let edited = site.read("two.xml").replace("Second.", "Renamed in.");
        site.write("tmp.xml.part", &edited);
        std::fs::rename(site.root.join("tmp.xml.part"), site.root.join("two.xml")).unwrap();
        assert!(
            server.get("/two.xml").await.text().contains("Renamed in."),
            "{mode} {freshness}: rename"
        );

        // A directory on the way swapped for another one.
        site.write(
            "d/doc.xml",
            &site.read("two.xml").replace("Renamed in.", "Old dir."),
        );
        assert!(server.get("/d/doc.xml").await.text().contains("Old dir."));
        assert_eq!(server.get("/d/doc.xml").await.cache(), hit, "{mode}");
        settle(freshness).await;
        std::fs::rename(site.root.join("d"), site.root.join("d-old")).unwrap();
        site.write(
            "d/doc.xml",
            &site.read("two.xml").replace("Renamed in.", "New dir."),
        );
        assert!(
            server.get("/d/doc.xml").await.text().contains("New dir."),
            "{mode} {freshness}: directory swapped"
        );
        // ... and from then on the new directory is the one watched.
        assert_eq!(
            server.get("/d/doc.xml").await.cache(),
            hit,
            "{mode} {freshness}"
        );
        settle(freshness).await;
        site.write(
            "d/doc.xml",
            &site
                .read("d/doc.xml")
                .replace("New dir.", "New dir. Edited."),
        );
        assert!(
            server
                .get("/d/doc.xml")
                .await
                .text()
                .contains("New dir. Edited."),
            "{mode} {freshness}: edited in the new directory"
        );

        // A symlink re-pointed to another document.
        std::os::unix::fs::symlink("two.xml", site.root.join("link.xml")).unwrap();
        assert!(server.get("/link.xml").await.text().contains("Renamed in."));
        assert_eq!(server.get("/link.xml").await.cache(), hit, "{mode}");
        settle(freshness).await;
        std::os::unix::fs::symlink("d/doc.xml", site.root.join("link.tmp")).unwrap();
        std::fs::rename(site.root.join("link.tmp"), site.root.join("link.xml")).unwrap();
        assert!(
            server.get("/link.xml").await.text().contains("New dir."),
            "{mode} {freshness}: symlink re-pointed"
        );

        // A file read by document().
        assert_eq!(server.get("/docfn.xml").await.text(), "[data v1]");
        settle(freshness).await;
        site.write("data.xml", "<data>data v2</data>");
        assert_eq!(
            server.get("/docfn.xml").await.text(),
            "[data v2]",
            "{mode} {freshness}: document()"
        );

        // Deleted.
        std::fs::remove_file(site.root.join("two.xml")).unwrap();
        assert_eq!(
            server.get("/two.xml").await.status,
            404,
            "{mode} {freshness}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_mode_sees_back_to_back_edits_without_waiting() {
    for mode in MODES {
        let site = TestSite::new();
        let server = server(&site, mode, Freshness::Watch).await;
        for n in 0..30 {
            // Same length every time, written within the same clock tick:
            // only the change events can tell these versions apart.
            let text = format!("<data>data v{:02}</data>", n);
            site.write("data.xml", &text);
            assert_eq!(
                server.get("/docfn.xml").await.text(),
                format!("[data v{n:02}]"),
                "{mode}: edit {n}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_a_load_did_not_find_is_a_dependency_too() {
    // document() of a file that is not there gives an empty node-set, and
    // that output is cached; the file appearing (or going again) must show
    // in the next response, in every caching mode and both freshness modes.
    for mode in [CacheMode::All, CacheMode::Incremental] {
        for freshness in [Freshness::Watch, Freshness::Check] {
            let site = TestSite::new();
            site.write(
                "s/optional.xsl",
                r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="text"/>
  <xsl:template match="/">[<xsl:value-of select="document('extra/optional.xml', /)/d"/>]</xsl:template>
</xsl:stylesheet>"#,
            );
            site.write(
                "optional.xml",
                "<?xml-stylesheet href=\"s/optional.xsl\" type=\"text/xsl\"?>\n<doc/>\n",
            );
            let mut config = axle::ServeConfig::new(&site.root);
            config.cache_mode = mode;
            config.freshness = freshness;
            let server = TestServer::start_config(config, axle::Registry::default()).await;
            let case = format!("{mode} {freshness}");
            assert_eq!(server.get("/optional.xml").await.text(), "[]", "{case}");
            let again = server.get("/optional.xml").await;
            assert_eq!(again.text(), "[]", "{case}");
            assert_eq!(again.cache(), "hit", "{case}: still cached");
            // The file appears (its directory too).
            site.write("extra/optional.xml", "<d>here</d>");
            assert_eq!(server.get("/optional.xml").await.text(), "[here]", "{case}");
            assert_eq!(server.get("/optional.xml").await.cache(), "hit", "{case}");
            // And goes again.
            settle(freshness).await;
            std::fs::remove_file(site.root.join("extra/optional.xml")).unwrap();
            assert_eq!(
                server.get("/optional.xml").await.text(),
                "[]",
                "{case}: removed"
            );
        }
    }
}
