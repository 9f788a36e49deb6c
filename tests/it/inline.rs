//! Transforms measured to be cheap run on the connection thread instead of
//! the transform pool: the bytes must be those the pool gives, nested
//! `axle:` documents must still render, and plug-in stages stay on the
//! pool unless they opt in.

use std::sync::Arc;
use std::time::Duration;

use axle::CacheMode;
use axle::language::{
    Language, LanguageError, Resource, Stage, StageContext, StageData, StageOutput,
};
use axle::pool::RunCounts;
use bytes::Bytes;

use crate::support::{TestServer, TestSite};

/// A server that runs every measured job inline (the threshold is far
/// above any test transform), so the first run of a job is on the pool
/// and every later one on the connection thread.
async fn inline_server(site: &TestSite, mode: CacheMode, registry: axle::Registry) -> TestServer {
    let mut config = axle::ServeConfig::new(&site.root);
    config.cache_mode = mode;
    config.inline_below = Duration::from_secs(60);
    TestServer::start_config(config, registry).await
}

fn counts(server: &TestServer) -> RunCounts {
    server.app.pipeline().run_counts()
}

#[tokio::test]
async fn a_measured_chain_runs_inline_with_the_bytes_the_pool_gave() {
    let site = TestSite::new();
    let server = inline_server(&site, CacheMode::Off, axle::Registry::default()).await;
    let first = server.get("/three.xml").await;
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(
        counts(&server),
        RunCounts {
            inline: 0,
            pooled: 1
        }
    );
    for n in 2..=4 {
        let again = server.get("/three.xml").await;
        assert_eq!(again.status, 200);
        assert_eq!(again.body, first.body, "run {n} (inline) differs");
        assert_eq!(again.comparable_headers(), first.comparable_headers());
    }
    assert_eq!(
        counts(&server),
        RunCounts {
            inline: 3,
            pooled: 1
        }
    );
}

#[tokio::test]
async fn with_no_threshold_nothing_runs_inline() {
    let site = TestSite::new();
    let mut config = axle::ServeConfig::new(&site.root);
    config.cache_mode = CacheMode::Off;
    config.inline_below = Duration::ZERO;
    let server = TestServer::start_config(config, axle::Registry::default()).await;
    for _ in 0..3 {
        assert_eq!(server.get("/three.xml").await.status, 200);
    }
    assert_eq!(
        counts(&server),
        RunCounts {
            inline: 0,
            pooled: 3
        }
    );
}

/// Incremental mode: an edited source runs its stages again, now inline,
/// and gives what a server without any cache gives for the new text.
#[tokio::test]
async fn incremental_stages_rerun_inline_after_an_edit() {
    let site = TestSite::new();
    let server = inline_server(&site, CacheMode::Incremental, axle::Registry::default()).await;
    assert_eq!(server.get("/two.xml").await.status, 200);
    let before = counts(&server);
    assert_eq!(before.inline, 0, "nothing was measured yet");
    let text = site.read("two.xml");
    let edited = text.replacen("</", "<!-- edited --></", 1);
    assert_ne!(edited, text, "the fixture has an end tag");
    // Wait out coarse file timestamps, so the edit is a change.
    tokio::time::sleep(Duration::from_millis(20)).await;
    site.write("two.xml", &edited);
    let after_edit = server.get("/two.xml").await;
    assert_eq!(after_edit.status, 200);
    assert_ne!(after_edit.cache(), "hit");
    assert!(
        counts(&server).inline > 0,
        "the recomputed stages ran inline: {:?}",
        counts(&server)
    );
    let reference = TestServer::start(&site.root, CacheMode::Off).await;
    assert_eq!(after_edit.body, reference.get("/two.xml").await.body);
}

/// An `axle:` document read inside an inline transform is rendered on the
/// connection thread, which is inside the async runtime: it must neither
/// block on the runtime (a panic) nor change the output.
#[tokio::test]
async fn axle_documents_render_inside_inline_transforms() {
    let site = TestSite::new();
    site.write(
        "t/outer.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" omit-xml-declaration="yes"/>
<xsl:template match="/"><outer><xsl:copy-of select="document('axle:/ax/inner.xml')"/></outer></xsl:template>
</xsl:stylesheet>
"#,
    );
    site.write(
        "t/inner.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="xml" omit-xml-declaration="yes"/>
<xsl:template match="/"><inner><xsl:value-of select="/doc"/></inner></xsl:template>
</xsl:stylesheet>
"#,
    );
    site.write(
        "ax/outer.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/outer.xsl\"?>\n<doc/>\n",
    );
    site.write(
        "ax/inner.xml",
        "<?xml-stylesheet type=\"text/xsl\" href=\"/t/inner.xsl\"?>\n<doc>inside</doc>\n",
    );
    let server = inline_server(&site, CacheMode::Off, axle::Registry::default()).await;
    for _ in 0..3 {
        let r = server.get("/ax/outer.xml").await;
        assert_eq!(
            (r.status, r.text()),
            (200, "<outer><inner>inside</inner></outer>\n".to_string())
        );
    }
    assert_eq!(
        counts(&server),
        RunCounts {
            inline: 2,
            pooled: 1
        }
    );
}

/// A plug-in Language whose stages reverse the document's bytes.
#[derive(Debug)]
struct Reverse {
    inline: bool,
}

#[derive(Debug)]
struct ReverseStage {
    inline: bool,
}

impl Language for Reverse {
    fn name(&self) -> &str {
        "test-reverse"
    }

    fn compile(&self, _resource: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
        Ok(Arc::new(ReverseStage {
            inline: self.inline,
        }))
    }
}

impl Stage for ReverseStage {
    fn run(&self, input: StageData, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
        let mut bytes = input.into_bytes()?.to_vec();
        bytes.reverse();
        Ok(StageOutput {
            data: StageData::Bytes(Bytes::from(bytes)),
            content_type: ctx.is_final.then(|| "text/plain".to_string()),
        })
    }

    fn runs_inline(&self) -> bool {
        self.inline
    }
}

#[tokio::test]
async fn plug_in_stages_stay_on_the_pool_unless_they_opt_in() {
    for inline in [false, true] {
        let site = TestSite::new();
        site.write(
            "rev.xml",
            "<?xml-stylesheet type=\"application/x-test-reverse\" href=\"/t/any.txt\"?>\n<doc>abc</doc>\n",
        );
        site.write("t/any.txt", "(the stage ignores its resource)");
        let mut registry = axle::Registry::default();
        registry
            .register("application/x-test-reverse", Arc::new(Reverse { inline }))
            .unwrap();
        let server = inline_server(&site, CacheMode::Off, registry).await;
        let first = server.get("/rev.xml").await;
        assert_eq!(first.status, 200, "{}", first.text());
        assert!(
            first.text().starts_with("\n>cod/<cba>cod<"),
            "{}",
            first.text()
        );
        for _ in 0..2 {
            assert_eq!(server.get("/rev.xml").await.body, first.body);
        }
        let expected = if inline {
            RunCounts {
                inline: 2,
                pooled: 1,
            }
        } else {
            RunCounts {
                inline: 0,
                pooled: 3,
            }
        };
        assert_eq!(counts(&server), expected, "runs_inline() = {inline}");
    }
}

/// A thread that serves a cache hit keeps transforms on the pool for a
/// while (`pool::QUIET`), so hits never queue behind inline transforms;
/// after a quiet spell of transforms alone, they run inline again.
#[tokio::test]
async fn a_hit_keeps_transforms_on_the_pool_for_a_while() {
    let site = TestSite::new();
    let server = inline_server(&site, CacheMode::All, axle::Registry::default()).await;
    let text = site.read("three.xml");
    let edit = |n: u32| {
        site.write(
            "three.xml",
            &text.replace("ignored 1", &format!("ignored {n}")),
        )
    };
    assert_eq!(server.get("/three.xml").await.cache(), "miss");
    assert_eq!(
        counts(&server),
        RunCounts {
            inline: 0,
            pooled: 1
        }
    );
    assert_eq!(server.get("/three.xml").await.cache(), "hit");
    let after_hit = std::time::Instant::now();
    edit(2);
    assert_eq!(server.get("/three.xml").await.cache(), "miss");
    let elapsed = after_hit.elapsed();
    if elapsed < axle::pool::QUIET {
        assert_eq!(
            counts(&server),
            RunCounts {
                inline: 0,
                pooled: 2
            },
            "a hit {elapsed:?} before: the pool"
        );
    } else {
        eprintln!(
            "(the machine is slow: {elapsed:?} since the hit; not checking where the miss ran)"
        );
    }
    tokio::time::sleep(axle::pool::QUIET).await;
    edit(3);
    let miss = server.get("/three.xml").await;
    assert_eq!(miss.cache(), "miss");
    assert_eq!(counts(&server).inline, 1, "quiet again: inline");
    let reference = TestServer::start(&site.root, CacheMode::Off).await;
    assert_eq!(miss.body, reference.get("/three.xml").await.body);
}
