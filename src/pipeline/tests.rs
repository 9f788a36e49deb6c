//! Unit tests of key derivation: what each mode's keys cover, and the
//! early cut-off rule (a stage's key covers its input's content hash, never
//! the previous stage's key).

use super::*;
use crate::language::Passthru;

fn job(closures: &[&str], params: &[(&str, &str)], root: &std::path::Path) -> ChainJob {
    let stages: Vec<Arc<CompiledStage>> = closures
        .iter()
        .map(|c| {
            Arc::new(CompiledStage {
                stage: Arc::new(Passthru),
                closure: ContentHash::of(c.as_bytes()),
                files: Vec::new(),
                rel: format!("/{c}"),
                language: Arc::from("passthru"),
            })
        })
        .collect();
    ChainJob {
        stages: stages.into(),
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
            .into(),
        base_url: Arc::from("/doc.xml"),
        limits: Limits::default(),
        force_byte_handoff: false,
        files: FileProvider::new(root, Fingerprints::default()).unwrap(),
        stats: Arc::new(Stats::default()),
        location: None,
        xinclude: false,
        unicode_sort: false,
        trace: None,
        internal: None,
        prolog: None,
        budget: super::admission::RequestBudget::unlimited(),
        request: None,
        varies: Arc::from(vec![None; closures.len()]),
        untrusted: None,
        first_tree: None,
    }
}

#[test]
fn a_stage_key_covers_its_input_hash_not_the_earlier_stages() {
    let dir = tempfile::tempdir().unwrap();
    let input = ContentHash::of(b"stage one output");
    let a = job(&["one.xsl", "two.xsl"], &[], dir.path());
    let b = job(&["ONE-EDITED.xsl", "two.xsl"], &[], dir.path());
    assert_eq!(
        a.stage_key(1, input),
        b.stage_key(1, input),
        "early cut-off"
    );
    assert_ne!(a.stage_key(0, input), b.stage_key(0, input));
    assert_ne!(
        a.stage_key(1, input),
        a.stage_key(1, ContentHash::of(b"other"))
    );
}

#[test]
fn stage_keys_cover_params_closure_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let h = ContentHash::of(b"in");
    let base = job(&["a.xsl", "b.xsl"], &[("p", "1")], dir.path());
    let other_param = job(&["a.xsl", "b.xsl"], &[("p", "2")], dir.path());
    let no_param = job(&["a.xsl", "b.xsl"], &[], dir.path());
    let longer = job(&["a.xsl", "b.xsl", "c.xsl"], &[("p", "1")], dir.path());
    assert_ne!(base.stage_key(1, h), other_param.stage_key(1, h));
    assert_ne!(base.stage_key(1, h), no_param.stage_key(1, h));
    // b.xsl is final in `base` but not in `longer`: final output is
    // serialized by xsl:output, intermediate output as plain XML.
    assert_ne!(base.stage_key(1, h), longer.stage_key(1, h));
    assert_eq!(base.stage_key(0, h), longer.stage_key(0, h));
}

#[test]
fn the_response_key_covers_source_every_stage_and_params() {
    let dir = tempfile::tempdir().unwrap();
    let src = ContentHash::of(b"source");
    let k = |closures: &[&str], params: &[(&str, &str)], s: ContentHash| {
        job(closures, params, dir.path()).response_key(s)
    };
    let base = k(&["a", "b"], &[], src);
    assert_eq!(base, k(&["a", "b"], &[], src));
    assert_ne!(base, k(&["a", "B"], &[], src));
    assert_ne!(base, k(&["b", "a"], &[], src));
    assert_ne!(base, k(&["a", "b"], &[("x", "")], src));
    assert_ne!(base, k(&["a", "b"], &[], ContentHash::of(b"edited")));
    assert_ne!(base, k(&["a", "b", "c"], &[], src));
}

#[test]
fn keys_cover_the_location_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let h = ContentHash::of(b"in");
    let plain = job(&["a.xsl"], &[], dir.path());
    let mut configured = job(&["a.xsl"], &[], dir.path());
    configured.location = Some(ContentHash::of(b"location settings"));
    assert_ne!(plain.stage_key(0, h), configured.stage_key(0, h));
    assert_ne!(plain.response_key(h), configured.response_key(h));
    let mut xinclude = job(&["a.xsl"], &[], dir.path());
    xinclude.xinclude = true;
    assert_ne!(plain.response_key(h), xinclude.response_key(h));
    let mut sorted = job(&["a.xsl"], &[], dir.path());
    sorted.unicode_sort = true;
    assert_ne!(plain.response_key(h), sorted.response_key(h));
    assert_ne!(plain.stage_key(0, h), sorted.stage_key(0, h));
    assert_ne!(xinclude.stage_key(0, h), sorted.stage_key(0, h));
}

#[test]
fn trace_paths_mirror_the_url_path() {
    use std::path::PathBuf;
    let rel = |url: &str| trace::trace_rel(url);
    assert_eq!(rel("/a/b.xml"), Some(PathBuf::from("a/b.xml")));
    assert_eq!(rel("/b.xml"), Some(PathBuf::from("b.xml")));
    assert_eq!(
        rel("/a%20b/c%7Cd.xml"),
        Some(PathBuf::from("a%20b/c%7Cd.xml"))
    );
    assert_eq!(rel("/"), Some(PathBuf::from("index")));
    assert_eq!(rel(""), Some(PathBuf::from("index")));
    // Not produced by confinement, but tidied if they ever were.
    assert_eq!(rel("//a/./b.xml"), Some(PathBuf::from("a/b.xml")));
}

#[test]
fn trace_paths_never_leave_the_directory() {
    let rel = |url: &str| trace::trace_rel(url);
    assert_eq!(rel("/../etc/passwd"), None);
    assert_eq!(rel("/a/../../b.xml"), None);
    assert_eq!(rel("/a/.."), None);
    assert_eq!(rel("/a\\..\\b.xml"), None);
    assert_eq!(rel("/a/b\0.xml"), None);
    let dir = std::path::Path::new("/tmp/trace");
    assert_eq!(trace::trace_stem(dir, "/../x.xml"), None);
    let stem = trace::trace_stem(dir, "/a/b.xml").unwrap();
    assert!(stem.starts_with(dir));
    assert_eq!(stem, dir.join("a").join("b.xml"));
}

#[test]
fn trace_files_are_written_in_subdirectories() {
    let root = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut job = job(&["one.xsl"], &[], root.path());
    job.trace = trace::trace_stem(out.path(), "/articles/a.xml");
    job.write_trace(0, b"source");
    job.write_trace(1, b"stage one");
    let file = |n: usize| out.path().join("articles").join(format!("a.xml.{n}"));
    assert_eq!(std::fs::read(file(0)).unwrap(), b"source");
    assert_eq!(std::fs::read(file(1)).unwrap(), b"stage one");
    assert!(!file(2).exists());
}

#[test]
fn cache_status_header_values() {
    assert_eq!(CacheStatus::Hit.header_value(), "hit");
    assert_eq!(CacheStatus::Miss.header_value(), "miss");
    assert_eq!(
        CacheStatus::Partial {
            reused: 2,
            total: 3
        }
        .header_value(),
        "partial 2/3"
    );
    assert_eq!(CacheStatus::Untransformed.header_value(), "none");
}

#[test]
fn request_params_are_sorted_and_the_last_value_wins() {
    let r = RenderRequest::with_params(vec![
        ("b".to_string(), "1".to_string()),
        ("a".to_string(), "2".to_string()),
        ("b".to_string(), "3".to_string()),
    ]);
    assert_eq!(
        r.params,
        vec![
            ("a".to_string(), "2".to_string()),
            ("b".to_string(), "3".to_string())
        ]
    );
}

/// A pipeline over `root` in `mode`, checking freshness by stat (no
/// watcher thread per test).
fn pipeline_at(root: &std::path::Path, mode: CacheMode) -> Pipeline {
    let mut config = ServeConfig::new(root);
    config.cache_mode = mode;
    config.freshness = crate::config::Freshness::Check;
    Pipeline::new(&config, Registry::default()).unwrap()
}

/// A stylesheet that copies its input.
const IDENTITY: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="@*|node()"><xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy></xsl:template>
</xsl:stylesheet>"#;

/// `one.xsl` and `two.xsl` under `root`, both [`IDENTITY`].
fn two_identity_stages(root: &std::path::Path) {
    std::fs::write(root.join("one.xsl"), IDENTITY).unwrap();
    std::fs::write(root.join("two.xsl"), IDENTITY).unwrap();
}

#[tokio::test]
async fn an_incremental_hit_needs_no_intermediate_output() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let identity = IDENTITY;
    two_identity_stages(root);
    std::fs::write(
        root.join("doc.xml"),
        r#"<?xml-stylesheet type="text/xsl" href="one.xsl"?><?xml-stylesheet type="text/xsl" href="two.xsl"?><doc>x</doc>"#,
    )
    .unwrap();
    let pipeline = pipeline_at(root, CacheMode::Incremental);
    let located = pipeline.provider().locate("/doc.xml").unwrap();
    let req = RenderRequest::default();
    let first = pipeline.render(&located, &req).await.unwrap();
    assert_eq!(first.cache, CacheStatus::Miss);
    // Every intermediate output evicted: the trace still finds the response.
    pipeline.store().clear_intermediates().await;
    let again = pipeline.render(&located, &req).await.unwrap();
    assert_eq!(again.cache, CacheStatus::Hit);
    assert_eq!(again.body, first.body);
    assert_eq!(again.stored, first.stored);
    // An edited stage invalidates the trace's key; the walk runs again
    // (stage 1 was evicted, so nothing is reused).
    std::fs::write(
        root.join("two.xsl"),
        identity.replace("<xsl:copy>", "<xsl:copy><!-- -->"),
    )
    .unwrap();
    let edited = pipeline.render(&located, &req).await.unwrap();
    assert_eq!(edited.cache, CacheStatus::Miss);
    // With stage 1 stored again, the next edit reuses it (early cut-off).
    std::fs::write(
        root.join("two.xsl"),
        identity.replace("<xsl:copy>", "<xsl:copy><!-- 3 -->"),
    )
    .unwrap();
    let third = pipeline.render(&located, &req).await.unwrap();
    assert_eq!(third.cache, FIRST_OF_TWO_REUSED);
    // Back to the first version: its trace and response are still there.
    std::fs::write(root.join("two.xsl"), identity).unwrap();
    let reverted = pipeline.render(&located, &req).await.unwrap();
    assert_eq!(reverted.cache, CacheStatus::Hit);
    assert_eq!(reverted.body, first.body);
}

#[test]
fn keys_cover_the_documents_url() {
    let dir = tempfile::tempdir().unwrap();
    let h = ContentHash::of(b"in");
    let a = job(&["a.xsl", "b.xsl"], &[], dir.path());
    let mut b = job(&["a.xsl", "b.xsl"], &[], dir.path());
    b.base_url = Arc::from("/elsewhere/doc.xml");
    assert_ne!(a.response_key(h), b.response_key(h));
    assert_ne!(a.stage_key(0, h), b.stage_key(0, h));
    assert_ne!(a.stage_key(1, h), b.stage_key(1, h));
}

/// Stage 1 of a two-stage chain reused, stage 2 computed.
const FIRST_OF_TWO_REUSED: CacheStatus = CacheStatus::Partial {
    reused: 1,
    total: 2,
};

/// Incremental renders that had to walk the stages again, whole.
fn whole_walks(p: &Pipeline) -> u64 {
    p.stats().whole_walks.load(Ordering::Relaxed)
}

/// A two-stage site whose first stage drops `<volatile>`: a source that
/// changes only there gives stage 1 the same output.
fn volatile_site(root: &std::path::Path, volatile: &str) {
    std::fs::write(
        root.join("strip.xsl"),
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="@*|node()"><xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy></xsl:template>
  <xsl:template match="volatile"/>
</xsl:stylesheet>"#,
    )
    .unwrap();
    std::fs::write(
        root.join("doc.xml"),
        format!(
            r#"<?xml-stylesheet type="text/xsl" href="strip.xsl"?><?xml-stylesheet type="text/xsl" href="last.xsl"?><doc><volatile>{volatile}</volatile><p>kept</p></doc>"#
        ),
    )
    .unwrap();
}

fn last_stage(root: &std::path::Path, marker: &str) {
    std::fs::write(
        root.join("last.xsl"),
        format!(
            r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="/"><html><body>{marker}<xsl:copy-of select="doc/*"/></body></html></xsl:template>
</xsl:stylesheet>"#
        ),
    )
    .unwrap();
}

async fn render_doc(pipeline: &Pipeline) -> Rendered {
    let located = pipeline.provider().locate("/doc.xml").unwrap();
    let req = RenderRequest::default();
    pipeline.render(&located, &req).await.unwrap()
}

#[tokio::test]
async fn an_output_stored_by_hash_only_is_recomputed_when_a_later_stage_needs_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    volatile_site(root, "1");
    last_stage(root, "v1");
    let (inc, off) = (
        pipeline_at(root, CacheMode::Incremental),
        pipeline_at(root, CacheMode::Off),
    );
    let runs = |p: &Pipeline| p.stats().stage_runs.load(Ordering::Relaxed);
    let first = render_doc(&inc).await;
    assert_eq!(first.cache, CacheStatus::Miss);
    assert_eq!(first.body, render_doc(&off).await.body);

    // A new source, the same stage-1 output: cut off at stage 2, and stage
    // 1's output is stored by its tree's hash only.
    volatile_site(root, "2");
    let cut = render_doc(&inc).await;
    assert_eq!(cut.cache, FIRST_OF_TWO_REUSED);
    assert_eq!(cut.body, first.body);
    assert_eq!(runs(&inc), 3);

    // The last stage changes: stage 1's stored output is found, elided, and
    // stage 2 needs it as input. The render walks again, recomputes stage 1
    // in full, and gives what `off` gives.
    last_stage(root, "v2");
    let walked = render_doc(&inc).await;
    assert_eq!(walked.body, render_doc(&off).await.body);
    assert_ne!(walked.body, first.body);
    assert_eq!(walked.cache, CacheStatus::Miss);
    assert_eq!(whole_walks(&inc), 1);
    assert_eq!(runs(&inc), 5);

    // That walk stored stage 1 whole: the next change of the last stage
    // reuses it without walking again.
    last_stage(root, "v3");
    let reused = render_doc(&inc).await;
    assert_eq!(reused.cache, FIRST_OF_TWO_REUSED);
    assert_eq!(reused.body, render_doc(&off).await.body);
    assert_eq!(whole_walks(&inc), 1);
    assert_eq!(runs(&inc), 6);
}

#[tokio::test]
async fn an_output_elided_on_a_wrong_guess_is_made_whole_by_the_stage_that_needs_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    volatile_site(root, "1");
    let last = |marker: &str| {
        std::fs::write(
            root.join("last.xsl"),
            format!(
                r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="/"><html><body>{marker}<xsl:value-of select="document('data.xml')/d"/><xsl:copy-of select="doc/*"/></body></html></xsl:template>
</xsl:stylesheet>"#
            ),
        )
        .unwrap()
    };
    last("v1");
    std::fs::write(root.join("data.xml"), "<d>one</d>").unwrap();
    let (inc, off) = (
        pipeline_at(root, CacheMode::Incremental),
        pipeline_at(root, CacheMode::Off),
    );

    assert_eq!(render_doc(&inc).await.cache, CacheStatus::Miss);
    volatile_site(root, "2");
    let cut = render_doc(&inc).await;
    assert_eq!(cut.cache, FIRST_OF_TWO_REUSED);

    // The response the trace leads to goes stale (a file the last stage
    // read changed): stage 1 still guesses a cut-off and is elided, then
    // stage 2 runs from its tree and makes it whole.
    std::fs::write(root.join("data.xml"), "<d>two</d>").unwrap();
    volatile_site(root, "3");
    let rerun = render_doc(&inc).await;
    assert_eq!(rerun.cache, CacheStatus::Miss);
    assert_eq!(rerun.body, render_doc(&off).await.body);

    // So a later change of the last stage finds stage 1 whole: reused, no
    // second walk.
    last("v2");
    let reused = render_doc(&inc).await;
    assert_eq!(reused.cache, FIRST_OF_TWO_REUSED);
    assert_eq!(reused.body, render_doc(&off).await.body);
    assert_eq!(whole_walks(&inc), 0);
}

#[tokio::test]
async fn a_produced_source_that_never_repeats_runs_lean_and_a_repeat_is_walked_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    two_identity_stages(root);
    let source = |n: u32| {
        Bytes::from(format!(
            r#"<?xml-stylesheet type="text/xsl" href="one.xsl"?><?xml-stylesheet type="text/xsl" href="two.xsl"?><doc>{n}</doc>"#
        ))
    };
    let incremental = pipeline_at(root, CacheMode::Incremental);
    let off = pipeline_at(root, CacheMode::Off);
    let path =
        crate::provider::generated_path(incremental.provider().root(), "/front.xml").unwrap();
    let req = RenderRequest {
        uncacheable_source: true,
        ..RenderRequest::default()
    };
    let mut statuses = Vec::new();
    for n in 0..super::repeats::LEAN_AFTER + 1 {
        let got = incremental
            .render_generated(&path, source(n), &req)
            .await
            .unwrap();
        let want = off.render_generated(&path, source(n), &req).await.unwrap();
        assert_eq!(got.body, want.body, "the same bytes, walked or lean");
        statuses.push(got.cache);
    }
    assert!(statuses.iter().all(|s| *s == CacheStatus::Miss));
    // The last one ran lean and stored nothing: its repeat (recent) is
    // walked and computed, stored, and found the next time.
    let last = super::repeats::LEAN_AFTER;
    let found = CacheStatus::Partial {
        reused: 2,
        total: 2,
    };
    for expected in [CacheStatus::Miss, found] {
        let got = incremental
            .render_generated(&path, source(last), &req)
            .await
            .unwrap();
        assert_eq!(got.cache, expected);
    }
    // What the walks stored is found.
    let first = incremental
        .render_generated(&path, source(0), &req)
        .await
        .unwrap();
    assert_eq!(first.cache, found);
}
