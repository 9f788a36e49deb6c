//! Edits while requests are in flight: a request sent after an edit
//! completed never gets output computed from the file as it was before (or
//! half-written), even when it would have joined a render or a compile
//! that began before the edit. One case per kind of shared work, in every
//! mode and both freshness modes, and a bounded stress test that counts
//! stale and wrong responses under concurrent edits (it must count none).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axle::CacheMode;
use axle::config::Freshness;

use crate::support::{MODES, TestServer};

fn combinations() -> impl Iterator<Item = (CacheMode, Freshness)> {
    MODES
        .into_iter()
        .flat_map(|m| [(m, Freshness::Watch), (m, Freshness::Check)])
}

async fn server(root: &Path, mode: CacheMode, freshness: Freshness) -> TestServer {
    let mut config = axle::ServeConfig::new(root);
    config.cache_mode = mode;
    config.freshness = freshness;
    TestServer::start_config(config, axle::Registry::default()).await
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// An editor's atomic save: a new file renamed over the old one.
fn save(root: &Path, rel: &str, text: &str) {
    let tmp = root.join(format!("{rel}.part"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, root.join(rel)).unwrap();
}

const XSL_HEAD: &str =
    r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">"#;

/// A site with a slow page (it reads `/data.xml` first, then counts for a
/// while) and a page whose stylesheet is slow to compile (its import,
/// `inc.xsl`, is read first, then tens of thousands of templates).
fn slow_site() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root, "big.xml", &format!("<r>{}</r>", "<i/>".repeat(8000)));
    write(&root, "data.xml", "<d>old</d>");
    write(
        &root,
        "slow.xsl",
        &format!(
            r#"{XSL_HEAD}<xsl:output method="text"/>
<xsl:template match="/doc"><xsl:value-of select="document('/data.xml')/d"/>|<xsl:value-of select="count(document('/big.xml')//i[count(preceding-sibling::i) mod 7 = 0])"/></xsl:template>
</xsl:stylesheet>"#
        ),
    );
    write(
        &root,
        "render.xml",
        "<?xml-stylesheet href=\"/slow.xsl\" type=\"text/xsl\"?><doc/>",
    );
    let templates: String = (0..60_000)
        .map(|i| format!("<xsl:template match=\"e{i}[@a={i}]/f\"><g><xsl:apply-templates/></g></xsl:template>\n"))
        .collect();
    write(
        &root,
        "compile.xsl",
        &format!(
            r#"{XSL_HEAD}<xsl:import href="inc.xsl"/><xsl:include href="many.xsl"/><xsl:output method="text"/>
<xsl:template match="/doc"><xsl:call-template name="inc"/></xsl:template>
</xsl:stylesheet>"#
        ),
    );
    write(
        &root,
        "many.xsl",
        &format!("{XSL_HEAD}{templates}</xsl:stylesheet>"),
    );
    write(&root, "inc.xsl", &inc("old"));
    write(
        &root,
        "compile.xml",
        "<?xml-stylesheet href=\"/compile.xsl\" type=\"text/xsl\"?><doc/>",
    );
    (dir, root)
}

fn inc(text: &str) -> String {
    format!(r#"{XSL_HEAD}<xsl:template name="inc">{text}</xsl:template></xsl:stylesheet>"#)
}

/// Starts a request for `path` now, edits with `edit` once `lead` has
/// passed (while the first request's render or compile is under way), then
/// sends a second request and returns both bodies.
async fn race(
    server: &Arc<TestServer>,
    path: &'static str,
    lead: Duration,
    edit: impl FnOnce(),
) -> (String, String) {
    let first = {
        let server = Arc::clone(server);
        tokio::spawn(async move { server.get(path).await.text() })
    };
    tokio::time::sleep(lead).await;
    edit();
    let second = server.get(path).await.text();
    (first.await.unwrap(), second)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_after_an_edit_never_joins_a_render_that_read_the_old_file() {
    let mut wrong = Vec::new();
    for (mode, freshness) in combinations() {
        let (_dir, root) = slow_site();
        let server = Arc::new(server(&root, mode, freshness).await);
        // Compiled once beforehand: only the render is shared.
        write(
            &root,
            "warm.xml",
            "<?xml-stylesheet href=\"/slow.xsl\" type=\"text/xsl\"?><doc/>",
        );
        let started = Instant::now();
        assert!(server.get("/warm.xml").await.text().starts_with("old|"));
        let render_time = started.elapsed();
        let (_first, second) = race(&server, "/render.xml", render_time / 4, || {
            save(&root, "data.xml", "<d>new</d>")
        })
        .await;
        if !second.starts_with("new|") {
            wrong.push(format!(
                "{mode} {freshness}: {second:?} (a render takes {render_time:?})"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "stale after the edit:\n{}",
        wrong.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_after_an_edit_never_joins_a_compile_that_read_the_old_file() {
    let mut wrong = Vec::new();
    for (mode, freshness) in combinations() {
        let (_dir, root) = slow_site();
        let server = Arc::new(server(&root, mode, freshness).await);
        // How long a compile takes here, measured on a copy.
        std::fs::copy(root.join("compile.xsl"), root.join("copy.xsl")).unwrap();
        write(
            &root,
            "copy.xml",
            "<?xml-stylesheet href=\"/copy.xsl\" type=\"text/xsl\"?><doc/>",
        );
        let started = Instant::now();
        assert_eq!(server.get("/copy.xml").await.text(), "old");
        let compile_time = started.elapsed();
        let (_first, second) = race(&server, "/compile.xml", compile_time / 4, || {
            save(&root, "inc.xsl", &inc("new"))
        })
        .await;
        if second != "new" {
            wrong.push(format!(
                "{mode} {freshness}: {second:?} (a compile takes {compile_time:?})"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "stale after the edit:\n{}",
        wrong.join("\n")
    );
}

/// One edit of the stress test: when it began, when it ended (`None`
/// while under way), and the versions of `data.xml` and `v.xsl` it wrote.
type Edit = (Instant, Option<Instant>, usize, usize);

/// What the stress test saw.
#[derive(Default, Debug)]
struct Tally {
    responses: usize,
    /// Broken responses to requests during which a file was being written.
    overlapped: usize,
    stale: Vec<String>,
    wrong: Vec<String>,
}

/// Clients request a page that shows the version of `data.xml` (read by
/// `document()`) and of `v.xsl` (imported), while an editor rewrites them
/// (atomic saves and in-place rewrites, alternately). A response to a
/// request sent after version N of a file was completely written must show
/// version N or later of it, never an older one and never a broken one.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_edits_never_give_a_stale_or_broken_response() {
    let mut report = Vec::new();
    for (mode, freshness) in combinations() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let data = |n: usize| format!("<d>{n:06}</d>");
        let imported = |n: usize| {
            format!(r#"{XSL_HEAD}<xsl:template name="v">{n:06}</xsl:template></xsl:stylesheet>"#)
        };
        write(&root, "data.xml", &data(0));
        write(&root, "v.xsl", &imported(0));
        write(
            &root,
            "page.xsl",
            &format!(
                r#"{XSL_HEAD}<xsl:import href="v.xsl"/><xsl:output method="text"/>
<xsl:template match="/doc"><xsl:value-of select="document('/data.xml')/d"/>|<xsl:call-template name="v"/></xsl:template>
</xsl:stylesheet>"#
            ),
        );
        write(
            &root,
            "page.xml",
            "<?xml-stylesheet href=\"/page.xsl\" type=\"text/xsl\"?><doc/>",
        );
        let server = Arc::new(server(&root, mode, freshness).await);
        // When each edit began and ended, and the versions it wrote.
        let now = Instant::now();
        let written: Arc<Mutex<Vec<Edit>>> = Arc::new(Mutex::new(vec![(now, Some(now), 0, 0)]));
        let deadline = Instant::now() + Duration::from_millis(1500);
        let editor = {
            let (root, written) = (root.clone(), Arc::clone(&written));
            std::thread::spawn(move || {
                let mut n = 0;
                while Instant::now() < deadline {
                    n += 1;
                    let (d, v) = if n % 2 == 0 { (n, n - 1) } else { (n - 1, n) };
                    // Known to be under way before the first byte changes.
                    let index = {
                        let mut w = written.lock().unwrap();
                        w.push((Instant::now(), None, d, v));
                        w.len() - 1
                    };
                    if n % 4 < 2 {
                        save(&root, "data.xml", &data(d));
                        save(&root, "v.xsl", &imported(v));
                    } else {
                        std::fs::write(root.join("data.xml"), data(d)).unwrap();
                        std::fs::write(root.join("v.xsl"), imported(v)).unwrap();
                    }
                    written.lock().unwrap()[index].1 = Some(Instant::now());
                    std::thread::sleep(Duration::from_millis(5 + (n as u64 * 7) % 20));
                }
            })
        };
        let tally = Arc::new(Mutex::new(Tally::default()));
        let mut clients = Vec::new();
        for _ in 0..6 {
            let (server, written, tally) = (
                Arc::clone(&server),
                Arc::clone(&written),
                Arc::clone(&tally),
            );
            clients.push(tokio::spawn(async move {
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    // The newest versions completely written before now.
                    let (min_d, min_v) = {
                        let w = written.lock().unwrap();
                        let done = w
                            .iter()
                            .filter(|(_, end, _, _)| end.is_some_and(|e| e <= sent));
                        done.fold((0, 0), |(d, v), (_, _, wd, wv)| (d.max(*wd), v.max(*wv)))
                    };
                    let r = server.get("/page.xml").await;
                    let received = Instant::now();
                    let body = r.text();
                    // Whether an edit was under way at some point while
                    // this request was: then it may see a file half
                    // written, as any reader would.
                    let overlapped = written.lock().unwrap().iter().any(|(began, end, _, _)| {
                        *began <= received && end.is_none_or(|e| e >= sent)
                    });
                    let mut t = tally.lock().unwrap();
                    t.responses += 1;
                    let parsed = body.split_once('|').and_then(|(d, v)| {
                        Some((d.parse::<usize>().ok()?, v.parse::<usize>().ok()?))
                    });
                    match parsed {
                        Some((d, v)) if d >= min_d && v >= min_v => {}
                        Some(_) => t.stale.push(format!(
                            "{body:?} ({}) sent after {min_d:06}|{min_v:06} was written",
                            r.cache()
                        )),
                        None if overlapped => t.overlapped += 1,
                        None => t.wrong.push(format!("{} {body:?}", r.status)),
                    }
                }
            }));
        }
        for c in clients {
            c.await.unwrap();
        }
        editor.join().unwrap();
        let t = tally.lock().unwrap();
        let edits = written.lock().unwrap().len() - 1;
        report.push((mode, freshness, t.responses, edits, t.overlapped));
        assert!(
            t.stale.is_empty() && t.wrong.is_empty(),
            "{mode} {freshness}: {} stale and {} wrong of {} responses over {edits} edits; first: {:?} {:?}",
            t.stale.len(),
            t.wrong.len(),
            t.responses,
            t.stale.first(),
            t.wrong.first()
        );
    }
    for (mode, freshness, responses, edits, overlapped) in report {
        eprintln!(
            "{mode} {freshness}: {responses} responses over {edits} edits: 0 stale, 0 wrong \
             ({overlapped} broken while a write was under way)"
        );
    }
}
