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

/// A kind of edit the stress test makes, each with a version of its own
/// that the page shows, in this order, separated by `|`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The requested document itself, saved atomically.
    Source,
    /// An external entity the document includes, rewritten in place.
    Entity,
    /// A `document()` target, saved atomically.
    DataSaved,
    /// The same target, rewritten in place (truncate, then write).
    DataInPlace,
    /// An imported stylesheet, saved atomically.
    Import,
    /// A `document()` target that is a symlink, re-pointed to the other of
    /// two files after the new version was written into it.
    Link,
    /// A stylesheet directory swapped deploy-style (`xsl -> xsl-a|xsl-b`).
    Swap,
}

/// Every kind, for the long run.
pub const ALL_KINDS: [Kind; 7] = [
    Kind::Source,
    Kind::Entity,
    Kind::DataSaved,
    Kind::DataInPlace,
    Kind::Import,
    Kind::Link,
    Kind::Swap,
];

/// The fields of the page: which file shows each kind's version.
const FIELDS: usize = 6;

fn field(kind: Kind) -> usize {
    match kind {
        Kind::Source => 0,
        Kind::Entity => 1,
        Kind::DataSaved | Kind::DataInPlace => 2,
        Kind::Import => 3,
        Kind::Link => 4,
        Kind::Swap => 5,
    }
}

fn source(n: usize) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE doc [<!ENTITY e SYSTEM \"ent.xml\">]>\n\
         <?xml-stylesheet href=\"/xsl/page.xsl\" type=\"text/xsl\"?>\n<doc><s>{n:06}</s><e>&e;</e></doc>\n"
    )
}

fn page_xsl(n: usize) -> String {
    format!(
        r#"{XSL_HEAD}<xsl:import href="v.xsl"/><xsl:output method="text"/>
<xsl:template match="/doc"><xsl:value-of select="s"/>|<xsl:value-of select="e"/>|<xsl:value-of select="document('/data.xml')/d"/>|<xsl:call-template name="v"/>|<xsl:value-of select="document('/link.xml')/d"/>|{n:06}</xsl:template>
</xsl:stylesheet>"#
    )
}

fn imported(n: usize) -> String {
    format!(r#"{XSL_HEAD}<xsl:template name="v">{n:06}</xsl:template></xsl:stylesheet>"#)
}

fn datum(n: usize) -> String {
    format!("<d>{n:06}</d>")
}

/// `ln -sfn TARGET NAME` (a new link renamed over the name).
fn relink(root: &Path, name: &str, target: &str) {
    let tmp = root.join(format!("{name}.tmp-link"));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).unwrap();
    std::fs::rename(&tmp, root.join(name)).unwrap();
}

/// A site at version 0 of every kind.
fn stress_site(root: &Path) {
    write(root, "page.xml", &source(0));
    write(root, "ent.xml", "000000");
    write(root, "data.xml", &datum(0));
    for d in ["xsl-a", "xsl-b"] {
        write(root, &format!("{d}/page.xsl"), &page_xsl(0));
        write(root, &format!("{d}/v.xsl"), &imported(0));
    }
    relink(root, "xsl", "xsl-a");
    write(root, "link-a.xml", &datum(0));
    write(root, "link-b.xml", &datum(0));
    relink(root, "link.xml", "link-a.xml");
}

/// Makes edit number `n` of `kind` (version `n` of its field).
fn apply(root: &Path, kind: Kind, n: usize) {
    let live_xsl = || {
        std::fs::read_link(root.join("xsl"))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    match kind {
        Kind::Source => save(root, "page.xml", &source(n)),
        Kind::Entity => std::fs::write(root.join("ent.xml"), format!("{n:06}")).unwrap(),
        Kind::DataSaved => save(root, "data.xml", &datum(n)),
        Kind::DataInPlace => std::fs::write(root.join("data.xml"), datum(n)).unwrap(),
        Kind::Import => {
            // Both directories, so a swap never goes back in this field.
            for d in ["xsl-a", "xsl-b"] {
                save(root, &format!("{d}/v.xsl"), &imported(n));
            }
        }
        Kind::Link => {
            let next = if n % 2 == 0 {
                "link-a.xml"
            } else {
                "link-b.xml"
            };
            write(root, next, &datum(n));
            relink(root, "link.xml", next);
        }
        Kind::Swap => {
            let next = if live_xsl() == "xsl-a" {
                "xsl-b"
            } else {
                "xsl-a"
            };
            save(root, &format!("{next}/page.xsl"), &page_xsl(n));
            relink(root, "xsl", next);
        }
    }
}

/// One edit: when it began, when it ended (`None` while under way), its
/// field and the version it wrote there.
type Edit = (Instant, Option<Instant>, usize, usize);

/// What a stress run saw.
#[derive(Default, Debug)]
pub struct Tally {
    /// Responses checked.
    pub responses: usize,
    /// Edits made.
    pub edits: usize,
    /// Broken responses to requests during which a file was being written
    /// (any reader may see a half-written file; not counted as wrong).
    pub overlapped: usize,
    /// Responses older than an edit completed before their request.
    pub stale: Vec<String>,
    /// Broken responses to requests during which nothing was written.
    pub wrong: Vec<String>,
}

impl Tally {
    /// The counts as table cells: responses, edits, stale, wrong, broken
    /// during a write.
    fn row(&self) -> String {
        format!(
            "{} | {} | {} | {} | {}",
            self.responses,
            self.edits,
            self.stale.len(),
            self.wrong.len(),
            self.overlapped
        )
    }

    /// The counts in words.
    fn summary(&self) -> String {
        format!(
            "{} responses over {} edits: {} stale, {} wrong ({} broken while a write was under way)",
            self.responses,
            self.edits,
            self.stale.len(),
            self.wrong.len(),
            self.overlapped
        )
    }
}

/// `clients` clients request `/page.xml` for `duration` while an editor
/// makes edits of `kinds` in turn, every 5-25 ms. A response to a request
/// sent after version N of a field was completely written must show
/// version N or later there, and a response must parse unless a write was
/// under way during its request.
pub async fn stress(
    mode: CacheMode,
    freshness: Freshness,
    kinds: &[Kind],
    duration: Duration,
    clients: usize,
) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    stress_site(&root);
    let server = Arc::new(server(&root, mode, freshness).await);
    let now = Instant::now();
    let edits: Arc<Mutex<Vec<Edit>>> = Arc::new(Mutex::new(
        (0..FIELDS).map(|f| (now, Some(now), f, 0)).collect(),
    ));
    let deadline = Instant::now() + duration;
    let editor = {
        let (root, edits, kinds) = (root.clone(), Arc::clone(&edits), kinds.to_vec());
        std::thread::spawn(move || {
            let mut n = 0;
            while Instant::now() < deadline {
                n += 1;
                let kind = kinds[n % kinds.len()];
                // Known to be under way before the first byte changes.
                let index = {
                    let mut e = edits.lock().unwrap();
                    e.push((Instant::now(), None, field(kind), n));
                    e.len() - 1
                };
                apply(&root, kind, n);
                edits.lock().unwrap()[index].1 = Some(Instant::now());
                std::thread::sleep(Duration::from_millis(5 + (n as u64 * 7) % 20));
            }
        })
    };
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (server, edits, tally) = (Arc::clone(&server), Arc::clone(&edits), Arc::clone(&tally));
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                let sent = Instant::now();
                // The newest version of each field completely written
                // before the request was sent.
                let floor = {
                    let e = edits.lock().unwrap();
                    let mut floor = [0usize; FIELDS];
                    for (_, end, f, n) in e.iter() {
                        if end.is_some_and(|end| end <= sent) {
                            floor[*f] = floor[*f].max(*n);
                        }
                    }
                    floor
                };
                let r = server.get("/page.xml").await;
                let received = Instant::now();
                let body = r.text();
                let overlapped =
                    edits.lock().unwrap().iter().any(|(began, end, _, _)| {
                        *began <= received && end.is_none_or(|e| e >= sent)
                    });
                let got: Option<Vec<usize>> = body
                    .split('|')
                    .map(|v| v.parse::<usize>().ok())
                    .collect::<Option<Vec<_>>>()
                    .filter(|v| v.len() == FIELDS);
                let mut t = tally.lock().unwrap();
                t.responses += 1;
                match got {
                    Some(got) if got.iter().zip(floor).all(|(g, f)| *g >= f) => {}
                    Some(_) => t.stale.push(format!(
                        "{body:?} ({}) sent after {floor:?} was written",
                        r.cache()
                    )),
                    None if overlapped => t.overlapped += 1,
                    None => t.wrong.push(format!("{} {body:?}", r.status)),
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    editor.join().unwrap();
    let mut tally = std::mem::take(&mut *tally.lock().unwrap());
    tally.edits = edits.lock().unwrap().len() - FIELDS;
    tally
}

/// The bounded version run in CI: every kind, 1.5 s per combination.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_edits_never_give_a_stale_or_broken_response() {
    let mut failed = Vec::new();
    for (mode, freshness) in combinations() {
        let t = stress(mode, freshness, &ALL_KINDS, Duration::from_millis(1500), 6).await;
        eprintln!("{mode} {freshness}: {}", t.summary());
        assert!(
            t.responses > 100,
            "{mode} {freshness}: only {} responses",
            t.responses
        );
        if !t.stale.is_empty() || !t.wrong.is_empty() {
            failed.push(format!(
                "{mode} {freshness}: {} stale, {} wrong of {}; first: {:?} {:?}",
                t.stale.len(),
                t.wrong.len(),
                t.responses,
                t.stale.first(),
                t.wrong.first()
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The long version (`bash benches/freshness.sh`): each kind of edit alone
/// and all together, in every combination, `AXLE_STRESS_SECS` seconds each
/// (default 10), printed as a table.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "minutes long: run by benches/freshness.sh"]
async fn long_edit_stress() {
    let secs: u64 = std::env::var("AXLE_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let mut sets: Vec<(String, Vec<Kind>)> = ALL_KINDS
        .iter()
        .map(|k| (format!("{k:?}"), vec![*k]))
        .collect();
    sets.push(("all".to_string(), ALL_KINDS.to_vec()));
    // On a line of its own: the test harness's "test … " precedes it.
    println!();
    println!(
        "| edits | mode | freshness | responses | edits made | stale | wrong | broken during a write |"
    );
    println!("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |");
    let mut bad = 0;
    for (name, kinds) in &sets {
        for (mode, freshness) in combinations() {
            let t = stress(mode, freshness, kinds, Duration::from_secs(secs), 8).await;
            bad += t.stale.len() + t.wrong.len();
            println!("| {name} | {mode} | {freshness} | {} |", t.row());
            for line in t.stale.iter().chain(&t.wrong).take(3) {
                println!("|   | e.g. {line} | | | | | | |");
            }
        }
    }
    assert_eq!(bad, 0, "stale or wrong responses (table above)");
}
