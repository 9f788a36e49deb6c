//! The XSLT conformance runner: the shared libxslt and Xalan suites
//! (`$AXLE_SHARED/conformance`) through Axle's own pipeline, in every cache
//! mode, and a subset over real HTTP. Used by `tests/conformance.rs` (which
//! asserts the pass criteria) and `examples/conformance.rs` (which prints the
//! report). See `tests/conformance/README.md`.
#![allow(dead_code)]

#[path = "xmlcompare.rs"]
pub mod xmlcompare;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axle::chain::{Processor, ProcessorOrder, When};
use axle::config::{CacheMode, ServeConfig};
use axle::pipeline::{CacheStatus, Pipeline, RenderRequest};
use axle::prolog::StylesheetPi;
use axle::provider::Provider;
use bytes::Bytes;

/// The three cache modes, in the order they run.
pub const MODES: [CacheMode; 3] = [CacheMode::Off, CacheMode::All, CacheMode::Incremental];

/// Cases run at once (each runs its five requests one after the other).
pub const CONCURRENCY: usize = 4;

/// Skip reason for cases whose expected output assumes a filesystem base
/// URI where Axle, by design, uses a root-relative URL.
pub const SKIP_DESIGN: &str = "differs by design (root-relative base URIs)";

/// Cases whose output differs from xsltproc's by design, each with the
/// substitution that turns the expected output into Axle's designed output.
/// The case counts as a documented skip only if Axle's output then matches
/// exactly; otherwise it fails.
///
/// Axle gives a document the base URI of its URL path (`/general/bug-21-.xml`)
/// and never a filesystem path, so `unparsed-entity-uri()` returns
/// `/general/test.jpg`; xsltproc, run by libxslt's runtest on the relative
/// file name `bug-21-.xml`, returns `test.jpg` (and run on an absolute path
/// it returns the absolute filesystem path, which a server must not leak).
const DESIGN_DIFFERENCES: [(&str, &str, &str); 2] = [
    ("general/bug-21-", "test.jpg", "/general/test.jpg"),
    ("general/bug-52", "graphic.gif", "/general/graphic.gif"),
];
/// Skip reason for cases that need what Axle's security settings forbid.
pub const SKIP_FORBIDDEN: &str = "forbidden by Axle's security settings";

// ---------------------------------------------------------------------------
// Where the suites are

/// `$AXLE_SHARED`, else `<CARGO_MANIFEST_DIR>/../shared`.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("AXLE_SHARED") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
    }
}

/// The conformance folder, when it holds both manifests.
pub fn conformance_dir() -> Result<PathBuf, PathBuf> {
    let dir = shared_dir().join("conformance");
    let ok =
        dir.join("libxslt/MANIFEST.tsv").is_file() && dir.join("xalan-conf/MANIFEST.tsv").is_file();
    match (ok, dir.canonicalize()) {
        (true, Ok(canonical)) => Ok(canonical),
        _ => Err(dir),
    }
}

/// The banner printed when the suites are missing.
pub fn missing_banner(looked_at: &Path) -> String {
    let line = "#".repeat(78);
    format!(
        "\n{line}\n#\n#   XSLT CONFORMANCE SUITES NOT FOUND: NOTHING WAS CHECKED.\n#\n\
         #   Looked for {}/{{libxslt,xalan-conf}}/MANIFEST.tsv\n\
         #   Set AXLE_SHARED to the shared folder (the one holding conformance/).\n\
         #   Without it this test passes vacuously (it fails when CI is set).\n#\n{line}\n",
        looked_at.display()
    )
}

/// Writes straight to the process's stderr (not captured by the test
/// harness), so the banner and the report are always seen.
pub fn loud(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

// ---------------------------------------------------------------------------
// Manifests

/// A group of cases with its own threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// `libxslt/`.
    Libxslt,
    /// `xalan-conf/conf/...`.
    XalanConf,
    /// `xalan-conf/conferr/...`.
    XalanErr,
}

impl Group {
    /// All groups, in report order.
    pub const ALL: [Group; 3] = [Group::Libxslt, Group::XalanConf, Group::XalanErr];

    /// Report name.
    pub fn name(self) -> &'static str {
        match self {
            Group::Libxslt => "libxslt",
            Group::XalanConf => "xalan conf",
            Group::XalanErr => "xalan conferr",
        }
    }

    /// The suite folder (the document root for its cases).
    pub fn folder(self) -> &'static str {
        match self {
            Group::Libxslt => "libxslt",
            Group::XalanConf | Group::XalanErr => "xalan-conf",
        }
    }

    /// The Done-means threshold: `(passes needed, cases)`.
    pub fn threshold(self) -> (usize, usize) {
        match self {
            Group::Libxslt => (513, 553),
            Group::XalanConf => (1578, 1693),
            Group::XalanErr => (226, 310),
        }
    }
}

/// Which suites to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuiteChoice {
    /// Both.
    Both,
    /// `libxslt/` only.
    Libxslt,
    /// `xalan-conf/` only.
    Xalan,
}

/// A manifest comparison rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Bytes equal.
    Exact,
    /// Bytes equal after dropping every line containing `id`.
    NoId,
    /// Bytes equal after dropping lines matching `id[0-9]`.
    FilteredId,
    /// `xmlcompare.py`'s rules.
    XmlWs,
    /// The render must fail.
    ExpectError,
}

/// One manifest row.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its group.
    pub group: Group,
    /// `case_id`.
    pub id: String,
    /// The source document, relative to the suite folder.
    pub xml: String,
    /// The stylesheet, relative to the suite folder; `None` for `(pi)`.
    pub xsl: Option<String>,
    /// Expected output file; `None` = must be empty.
    pub expected: Option<String>,
    /// String params (quotes stripped).
    pub params: Vec<(String, String)>,
    /// Params given as unquoted XPath expressions (passed as strings).
    pub unquoted_params: Vec<String>,
    /// `--maxdepth=N`.
    pub max_depth: Option<u32>,
    /// `--xinclude`.
    pub xinclude: bool,
    /// `xsltproc=pass`.
    pub xsltproc_pass: bool,
    /// The comparison rule.
    pub compare: Compare,
    /// Manifest notes.
    pub notes: String,
    /// A libxslt runtest.c row: a render error counts as empty output.
    pub runtest: bool,
}

impl Case {
    /// `group/case_id` for reports.
    pub fn label(&self) -> String {
        format!("{} {}", self.group.folder(), self.id)
    }
}

/// Reads a suite's manifest.
pub fn load_manifest(conf: &Path, folder: &str) -> Result<Vec<Case>, String> {
    let path = conf.join(folder).join("MANIFEST.tsv");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cases = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 8 {
            return Err(format!(
                "{}:{}: {} columns",
                path.display(),
                n + 1,
                cols.len()
            ));
        }
        let id = cols[0].to_string();
        let group = match folder {
            "libxslt" => Group::Libxslt,
            _ if id.starts_with("conferr/") => Group::XalanErr,
            _ => Group::XalanConf,
        };
        let compare = match cols[7] {
            "exact" => Compare::Exact,
            "noid" => Compare::NoId,
            "filtered-id" => Compare::FilteredId,
            "xml-ws" => Compare::XmlWs,
            "expect-error" => Compare::ExpectError,
            other => return Err(format!("{id}: unknown compare mode {other}")),
        };
        let mut case = Case {
            group,
            id,
            xml: cols[1].to_string(),
            xsl: (cols[2] != "(pi)").then(|| cols[2].to_string()),
            expected: (cols[3] != "-").then(|| cols[3].to_string()),
            params: Vec::new(),
            unquoted_params: Vec::new(),
            max_depth: None,
            xinclude: false,
            xsltproc_pass: cols[5] == "xsltproc=pass",
            compare,
            notes: cols.get(8).copied().unwrap_or("-").to_string(),
            runtest: cols[4].contains("passed_value"),
        };
        if cols[4] != "-" {
            for token in cols[4].split(';').filter(|t| !t.is_empty()) {
                parse_param(&mut case, token)?;
            }
        }
        case.params.sort();
        cases.push(case);
    }
    Ok(cases)
}

fn parse_param(case: &mut Case, token: &str) -> Result<(), String> {
    if let Some(option) = token.strip_prefix("--") {
        let (name, value) = option.split_once('=').unwrap_or((option, ""));
        match name {
            "maxdepth" => {
                case.max_depth = Some(
                    value
                        .parse()
                        .map_err(|_| format!("{}: bad --maxdepth {value}", case.id))?,
                );
            }
            "nonet" => {} // Axle never reads the network
            "xinclude" => case.xinclude = true,
            other => return Err(format!("{}: unknown xsltproc option --{other}", case.id)),
        }
        return Ok(());
    }
    let Some((name, expr)) = token.split_once('=') else {
        return Err(format!("{}: bad param {token}", case.id));
    };
    let quoted = |q: char| expr.len() >= 2 && expr.starts_with(q) && expr.ends_with(q);
    let value = if quoted('\'') || quoted('"') {
        expr[1..expr.len() - 1].to_string()
    } else {
        case.unquoted_params.push(token.to_string());
        expr.to_string()
    };
    case.params.push((name.to_string(), value));
    Ok(())
}

// ---------------------------------------------------------------------------
// Running one case

/// What one request gave.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The body.
    pub body: Bytes,
    /// The Content-Type.
    pub content_type: String,
    /// What the cache did.
    pub cache: CacheStatus,
}

/// A request's outcome: the rendering, or the error's text.
pub type Outcome = Result<Rendered, String>;

/// A verdict for one case in one mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Passed.
    Pass,
    /// Failed, with the reason (one line).
    Fail(String),
    /// Not counted: `(category, detail)`.
    Skip(&'static str, String),
}

impl Verdict {
    fn is_pass(&self) -> bool {
        *self == Verdict::Pass
    }
}

/// A case's results in every mode.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case.
    pub case: Arc<Case>,
    /// Per mode, in [`MODES`] order.
    pub verdicts: [Verdict; 3],
    /// A difference between modes (a failure in every mode it touches).
    pub mode_mismatch: Option<String>,
    /// The off-mode outcome's first line of error, if any (for reports).
    pub error: Option<String>,
    /// Wall time of the case's five requests.
    pub elapsed: Duration,
}

impl CaseResult {
    /// Passed in all three modes.
    pub fn passed_everywhere(&self) -> bool {
        self.verdicts.iter().all(Verdict::is_pass)
    }

    /// Skipped (in any mode), with its category and detail.
    pub fn skip(&self) -> Option<(&'static str, &str)> {
        self.verdicts.iter().find_map(|v| match v {
            Verdict::Skip(cat, detail) => Some((*cat, detail.as_str())),
            _ => None,
        })
    }
}

/// One pipeline per (suite folder, mode, depth limit), shared by the cases.
pub struct Pipelines {
    map: HashMap<(&'static str, CacheMode, Option<u32>), Arc<Pipeline>>,
    conf: PathBuf,
}

impl Pipelines {
    /// Builds the pipelines the cases need.
    pub fn new(conf: &Path, cases: &[Arc<Case>]) -> std::io::Result<Pipelines> {
        let mut map = HashMap::new();
        for case in cases {
            for mode in MODES {
                let key = (case.group.folder(), mode, case.max_depth);
                if map.contains_key(&key) {
                    continue;
                }
                let mut config = ServeConfig::new(conf.join(case.group.folder()));
                config.cache_mode = mode;
                config.workers = 2;
                if let Some(depth) = case.max_depth {
                    config.limits.max_depth = depth;
                }
                map.insert(
                    key,
                    Arc::new(Pipeline::new(&config, axle::Registry::default())?),
                );
            }
        }
        Ok(Pipelines {
            map,
            conf: conf.to_path_buf(),
        })
    }

    fn get(&self, case: &Case, mode: CacheMode) -> &Arc<Pipeline> {
        &self.map[&(case.group.folder(), mode, case.max_depth)]
    }
}

/// Percent-encodes a relative path segment by segment, with a leading `/`.
pub fn url_path(rel: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    rel.split('/')
        .map(|s| format!("/{}", percent_encoding::utf8_percent_encode(s, SEGMENT)))
        .collect()
}

/// The request a case makes: its params, and its stylesheet instead of the
/// document's PIs (unless it is a `(pi)` row).
pub fn request_for(case: &Case) -> RenderRequest {
    let mut request = RenderRequest::with_params(case.params.clone());
    if let Some(xsl) = &case.xsl {
        // Like `<?xml-stylesheet href="/X.xsl" type="text/xsl"?>`, unconditional.
        request.processors = vec![Processor {
            pi: StylesheetPi {
                href: url_path(xsl),
                r#type: "text/xsl".to_string(),
                ..Default::default()
            },
            when: When::default(),
        }];
        request.processor_order = ProcessorOrder::Instead;
    }
    request.xinclude = case.xinclude;
    request
}

fn case_timeout() -> Duration {
    let secs = std::env::var("AXLE_CONFORMANCE_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    Duration::from_secs(secs)
}

async fn render_once(pipeline: &Pipeline, case: &Case, request: &RenderRequest) -> Outcome {
    let root = pipeline.provider().root().display().to_string();
    let clean = |s: String| s.replace(&format!("{root}/"), "").replace(&root, "");
    let located = pipeline
        .provider()
        .locate(&url_path(&case.xml))
        .map_err(|e| clean(e.to_string()))?;
    match tokio::time::timeout(case_timeout(), pipeline.render(&located, request)).await {
        Err(_) => Err(format!("timed out after {:?}", case_timeout())),
        Ok(Err(e)) => Err(clean(e.to_string())),
        Ok(Ok(r)) => Ok(Rendered {
            body: r.body,
            content_type: r.content_type.to_string(),
            cache: r.cache,
        }),
    }
}

/// Runs one case in every mode: off once, all twice, incremental twice.
pub async fn run_case(pipelines: &Pipelines, case: Arc<Case>) -> CaseResult {
    let started = Instant::now();
    let request = request_for(&case);
    let mut outcomes: Vec<(CacheMode, usize, Outcome)> = Vec::new();
    for mode in MODES {
        let pipeline = pipelines.get(&case, mode);
        let times = if mode == CacheMode::Off { 1 } else { 2 };
        for n in 0..times {
            let outcome = render_once(pipeline, &case, &request).await;
            outcomes.push((mode, n, outcome));
        }
    }
    let expected = match &case.expected {
        Some(rel) => std::fs::read(pipelines.conf.join(case.group.folder()).join(rel))
            .map(Bytes::from)
            .map_err(|e| format!("cannot read expected output {rel}: {e}")),
        None => Ok(Bytes::new()),
    };
    let mode_mismatch = mode_mismatch(&outcomes);
    if mode_mismatch.is_some() {
        dump_outcomes(&case, &outcomes);
    }
    let mut verdicts = [Verdict::Pass, Verdict::Pass, Verdict::Pass];
    for (i, mode) in MODES.iter().enumerate() {
        let runs: Vec<&Outcome> = outcomes
            .iter()
            .filter(|(m, _, _)| m == mode)
            .map(|(_, _, o)| o)
            .collect();
        let mut verdict = match &expected {
            Ok(exp) => judge(&case, runs[0], exp),
            Err(e) => Verdict::Fail(e.clone()),
        };
        if verdict.is_pass() {
            if let Some(problem) = cache_problem(*mode, &runs) {
                verdict = Verdict::Fail(problem);
            }
        }
        if let Some(m) = &mode_mismatch {
            if verdict.is_pass() || matches!(verdict, Verdict::Fail(_)) {
                verdict = Verdict::Fail(format!("mode mismatch: {m}"));
            }
        }
        verdicts[i] = verdict;
    }
    let error = outcomes[0].2.as_ref().err().map(|e| first_line(e));
    CaseResult {
        case,
        verdicts,
        mode_mismatch,
        error,
        elapsed: started.elapsed(),
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    shorten(line.trim(), 240)
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max).collect();
    s.push('…');
    s
}

fn is_refusal(error: &str) -> bool {
    error.contains("denied") || error.contains("outside the document root")
}

/// Compares an outcome with the expected bytes by the case's rule.
pub fn judge(case: &Case, outcome: &Outcome, expected: &[u8]) -> Verdict {
    let verdict = judge_output(case, outcome, expected);
    if matches!(verdict, Verdict::Fail(_)) {
        if let Some((_, from, to)) = DESIGN_DIFFERENCES.iter().find(|(id, _, _)| *id == case.id) {
            let designed = String::from_utf8_lossy(expected).replace(from, to);
            if judge_output(case, outcome, designed.as_bytes()) == Verdict::Pass {
                return Verdict::Skip(
                    SKIP_DESIGN,
                    format!(
                        "unparsed-entity-uri() gives {to}, xsltproc on a relative file name {from}"
                    ),
                );
            }
        }
    }
    match (&verdict, outcome) {
        (Verdict::Fail(_), Err(error)) if is_refusal(error) => {
            // The first line, and the line saying what was refused.
            let refusal = error
                .lines()
                .find(|l| is_refusal(l))
                .map(|l| shorten(l.trim(), 160))
                .unwrap_or_default();
            let first = first_line(error);
            Verdict::Skip(
                SKIP_FORBIDDEN,
                if first.contains(&refusal) {
                    first
                } else {
                    format!("{first} / {refusal}")
                },
            )
        }
        _ => verdict,
    }
}

fn judge_output(case: &Case, outcome: &Outcome, expected: &[u8]) -> Verdict {
    if case.compare == Compare::ExpectError {
        return match outcome {
            Err(_) => Verdict::Pass,
            Ok(r) => Verdict::Fail(format!(
                "no error: the transform succeeded ({} bytes of output)",
                r.body.len()
            )),
        };
    }
    let actual: &[u8] = match outcome {
        Ok(r) => &r.body,
        Err(_) if case.runtest => b"",
        Err(e) => return Verdict::Fail(format!("render error: {}", first_line(e))),
    };
    match compare_bytes(case.compare, expected, actual) {
        Ok(()) => Verdict::Pass,
        Err(diff) => match outcome {
            Err(e) => Verdict::Fail(format!("render error (empty output): {}", first_line(e))),
            Ok(_) => Verdict::Fail(diff),
        },
    }
}

/// Compares by a rule other than `expect-error`.
pub fn compare_bytes(rule: Compare, expected: &[u8], actual: &[u8]) -> Result<(), String> {
    match rule {
        Compare::Exact | Compare::ExpectError => exact_diff(expected, actual),
        Compare::NoId => exact_diff(
            &drop_lines(expected, |l| contains(l, b"id")),
            &drop_lines(actual, |l| contains(l, b"id")),
        ),
        Compare::FilteredId => exact_diff(
            &drop_lines(expected, id_digit),
            &drop_lines(actual, id_digit),
        ),
        Compare::XmlWs => xmlcompare::compare(expected, actual),
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn id_digit(line: &[u8]) -> bool {
    line.windows(3)
        .any(|w| w[0] == b'i' && w[1] == b'd' && w[2].is_ascii_digit())
}

/// `grep -v`: the kept lines, each ending in `\n`.
fn drop_lines(bytes: &[u8], drop: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    for line in lines {
        if !drop(line) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out
}

/// `Ok` when equal, else the first differing line.
pub fn exact_diff(expected: &[u8], actual: &[u8]) -> Result<(), String> {
    if expected == actual {
        return Ok(());
    }
    if expected.is_empty() {
        let first = actual.split(|b| *b == b'\n').next().unwrap_or(b"");
        return Err(format!(
            "expected empty output, got {} bytes: {:?}",
            actual.len(),
            shorten(&String::from_utf8_lossy(first), 120)
        ));
    }
    let e: Vec<&[u8]> = expected.split(|b| *b == b'\n').collect();
    let a: Vec<&[u8]> = actual.split(|b| *b == b'\n').collect();
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i), a.get(i));
        if x != y {
            // Show both lines from a little before their first difference.
            let col = match (x, y) {
                (Some(x), Some(y)) => x.iter().zip(y.iter()).take_while(|(p, q)| p == q).count(),
                _ => 0,
            };
            let from = col.saturating_sub(30);
            let show = |l: Option<&&[u8]>| match l {
                Some(l) => format!(
                    "{}{:?}",
                    if from > 0 { "…" } else { "" },
                    shorten(&String::from_utf8_lossy(&l[from.min(l.len())..]), 100)
                ),
                None => "end of output".to_string(),
            };
            return Err(format!(
                "line {}{}: expected {}, got {}",
                i + 1,
                if from > 0 {
                    format!(", byte {}", col + 1)
                } else {
                    String::new()
                },
                show(x),
                show(y)
            ));
        }
    }
    Err(format!(
        "outputs differ ({} vs {} bytes)",
        expected.len(),
        actual.len()
    ))
}

fn cache_problem(mode: CacheMode, runs: &[&Outcome]) -> Option<String> {
    if mode == CacheMode::Off || runs.len() < 2 {
        return None;
    }
    match (runs[0], runs[1]) {
        (Ok(first), Ok(second)) => {
            if first.cache == CacheStatus::Untransformed {
                return None;
            }
            if first.cache != CacheStatus::Miss {
                return Some(format!(
                    "cache: first request said {}, expected miss",
                    first.cache.header_value()
                ));
            }
            if second.cache != CacheStatus::Hit {
                return Some(format!(
                    "cache: second request said {}, expected hit",
                    second.cache.header_value()
                ));
            }
            None
        }
        _ => None,
    }
}

/// With `AXLE_CONFORMANCE_DUMP=DIR`, a case whose modes disagree leaves
/// every body it got in DIR (`<case>.<mode>.<request>`), to diff.
fn dump_outcomes(case: &Case, outcomes: &[(CacheMode, usize, Outcome)]) {
    let Some(dir) = std::env::var_os("AXLE_CONFORMANCE_DUMP") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let _ = std::fs::create_dir_all(&dir);
    let name = case.id.replace('/', "_");
    for (mode, n, outcome) in outcomes {
        let body: &[u8] = match outcome {
            Ok(r) => &r.body,
            Err(e) => e.as_bytes(),
        };
        let _ = std::fs::write(dir.join(format!("{name}.{mode}.{}", n + 1)), body);
    }
    loud(&format!(
        "  {}: modes disagree; bodies in {}\n",
        case.id,
        dir.display()
    ));
}

fn mode_mismatch(outcomes: &[(CacheMode, usize, Outcome)]) -> Option<String> {
    let (_, _, reference) = &outcomes[0];
    let mut problems = Vec::new();
    for (mode, n, outcome) in &outcomes[1..] {
        let which = format!("{mode} (request {})", n + 1);
        match (reference, outcome) {
            (Ok(a), Ok(b)) => {
                if a.body != b.body {
                    let at = a
                        .body
                        .iter()
                        .zip(b.body.iter())
                        .take_while(|(x, y)| x == y)
                        .count();
                    problems.push(format!(
                        "{which}: body differs from off ({} vs {} bytes, first difference at byte {at})",
                        b.body.len(),
                        a.body.len()
                    ));
                } else if a.content_type != b.content_type {
                    problems.push(format!(
                        "{which}: Content-Type {:?}, off gave {:?}",
                        b.content_type, a.content_type
                    ));
                }
            }
            // Errors agree on their first line (what failed, where). The
            // libxslt detail below it may vary between two compiles of one
            // stylesheet (e.g. which attribute set of a cycle is named
            // depends on hash order), so it is not compared.
            (Err(a), Err(b)) if first_line(a) != first_line(b) => problems.push(format!(
                "{which}: error {:?}, off gave {:?}",
                first_line(b),
                first_line(a)
            )),
            (Err(_), Err(_)) => {}
            (Ok(_), Err(b)) => {
                problems.push(format!("{which}: error {:?}, off succeeded", first_line(b)))
            }
            (Err(a), Ok(_)) => problems.push(format!(
                "{which}: succeeded, off failed with {:?}",
                first_line(a)
            )),
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

// ---------------------------------------------------------------------------
// Running the suites

/// Everything one run found.
pub struct RunReport {
    /// Where the suites were.
    pub conf: PathBuf,
    /// Every case's result, in manifest order.
    pub results: Vec<CaseResult>,
    /// Wall time per suite folder.
    pub elapsed: Vec<(&'static str, Duration)>,
}

/// Loads the chosen manifests and runs every case in every mode.
pub async fn run_suites(
    conf: &Path,
    choice: SuiteChoice,
    progress: bool,
) -> Result<RunReport, String> {
    let folders: &[&'static str] = match choice {
        SuiteChoice::Both => &["libxslt", "xalan-conf"],
        SuiteChoice::Libxslt => &["libxslt"],
        SuiteChoice::Xalan => &["xalan-conf"],
    };
    let mut results = Vec::new();
    let mut elapsed = Vec::new();
    for folder in folders {
        let started = Instant::now();
        let cases: Vec<Arc<Case>> = load_manifest(conf, folder)?
            .into_iter()
            .map(Arc::new)
            .collect();
        let pipelines = Arc::new(
            Pipelines::new(conf, &cases).map_err(|e| format!("pipeline for {folder}: {e}"))?,
        );
        // Biggest inputs first, so the long cases do not finish last.
        let mut order: Vec<usize> = (0..cases.len()).collect();
        let size = |c: &Case| {
            let root = conf.join(c.group.folder());
            let len = |rel: &str| std::fs::metadata(root.join(rel)).map_or(0, |m| m.len());
            len(&c.xml) + c.xsl.as_deref().map_or(0, len)
        };
        let sizes: Vec<u64> = cases.iter().map(|c| size(c)).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
        let semaphore = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
        let mut set = tokio::task::JoinSet::new();
        for i in order {
            let (case, pipelines, semaphore) = (
                Arc::clone(&cases[i]),
                Arc::clone(&pipelines),
                Arc::clone(&semaphore),
            );
            set.spawn(async move {
                let _permit = semaphore.acquire_owned().await;
                (i, run_case(&pipelines, case).await)
            });
        }
        let mut slots: Vec<Option<CaseResult>> = vec![None; cases.len()];
        let mut done = 0;
        while let Some(joined) = set.join_next().await {
            let (i, result) = joined.map_err(|e| format!("a case task panicked: {e}"))?;
            done += 1;
            if progress && done % 250 == 0 {
                loud(&format!(
                    "  {folder}: {done}/{} cases ({:.0?})\n",
                    cases.len(),
                    started.elapsed()
                ));
            }
            slots[i] = Some(result);
        }
        results.extend(slots.into_iter().flatten());
        elapsed.push((*folder, started.elapsed()));
    }
    Ok(RunReport {
        conf: conf.to_path_buf(),
        results,
        elapsed,
    })
}

/// Counts for one group and mode.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Cases.
    pub cases: usize,
    /// Passed.
    pub passed: usize,
    /// Failed.
    pub failed: usize,
    /// Skipped.
    pub skipped: usize,
    /// Cases marked `xsltproc=pass`.
    pub xsltproc_pass: usize,
    /// Of those, passed.
    pub xsltproc_pass_passed: usize,
}

impl RunReport {
    /// Counts per group and mode.
    pub fn counts(&self, group: Group, mode: usize) -> Counts {
        let mut c = Counts::default();
        for r in self.results.iter().filter(|r| r.case.group == group) {
            c.cases += 1;
            match &r.verdicts[mode] {
                Verdict::Pass => c.passed += 1,
                Verdict::Fail(_) => c.failed += 1,
                Verdict::Skip(..) => c.skipped += 1,
            }
            if r.case.xsltproc_pass {
                c.xsltproc_pass += 1;
                if r.verdicts[mode].is_pass() {
                    c.xsltproc_pass_passed += 1;
                }
            }
        }
        c
    }

    /// Cases passing in all three modes, per group.
    pub fn passed_everywhere(&self, group: Group) -> usize {
        self.results
            .iter()
            .filter(|r| r.case.group == group && r.passed_everywhere())
            .count()
    }

    /// Groups present in this run.
    pub fn groups(&self) -> Vec<Group> {
        Group::ALL
            .into_iter()
            .filter(|g| self.results.iter().any(|r| r.case.group == *g))
            .collect()
    }

    /// Cases with a difference between modes.
    pub fn mode_mismatches(&self) -> Vec<&CaseResult> {
        self.results
            .iter()
            .filter(|r| r.mode_mismatch.is_some())
            .collect()
    }

    /// `xsltproc=pass` cases that do not pass in every mode and are not
    /// skipped for a documented reason.
    pub fn regressions(&self) -> Vec<&CaseResult> {
        self.results
            .iter()
            .filter(|r| r.case.xsltproc_pass && !r.passed_everywhere() && r.skip().is_none())
            .collect()
    }

    /// The report, as printed.
    pub fn render(&self, verbose: bool) -> String {
        let mut out = String::new();
        let total: Duration = self.elapsed.iter().map(|(_, d)| *d).sum();
        let _ = writeln!(
            out,
            "\nAxle XSLT conformance: {} cases from {} ({:.1?}: {})",
            self.results.len(),
            self.conf.display(),
            total,
            self.elapsed
                .iter()
                .map(|(f, d)| format!("{f} {d:.1?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            out,
            "\n{:<14} {:<12} {:>6} {:>7} {:>7} {:>8}   {:>22}",
            "suite", "mode", "cases", "passed", "failed", "skipped", "xsltproc=pass passing"
        );
        let _ = writeln!(out, "{}", "-".repeat(84));
        for group in self.groups() {
            for (i, mode) in MODES.iter().enumerate() {
                let c = self.counts(group, i);
                let _ = writeln!(
                    out,
                    "{:<14} {:<12} {:>6} {:>7} {:>7} {:>8}   {:>22}",
                    group.name(),
                    mode.as_str(),
                    c.cases,
                    c.passed,
                    c.failed,
                    c.skipped,
                    format!("{}/{}", c.xsltproc_pass_passed, c.xsltproc_pass)
                );
            }
        }
        let _ = writeln!(
            out,
            "\nDone-means thresholds (cases passing in all three modes):"
        );
        for group in self.groups() {
            let (need, of) = group.threshold();
            let got = self.passed_everywhere(group);
            let cases = self
                .results
                .iter()
                .filter(|r| r.case.group == group)
                .count();
            let skipped = self
                .results
                .iter()
                .filter(|r| r.case.group == group && r.skip().is_some())
                .count();
            // Cases xsltproc passes that Axle skips for a documented reason
            // (a security setting, a design difference) are listed below;
            // the threshold is met when passes plus those reach it.
            let documented = self
                .results
                .iter()
                .filter(|r| r.case.group == group && r.case.xsltproc_pass && r.skip().is_some())
                .count();
            let verdict = if got >= need {
                "met".to_string()
            } else if got + documented >= need {
                format!("met with {documented} documented exception(s) listed below")
            } else {
                "NOT met".to_string()
            };
            let _ = writeln!(
                out,
                "  {:<14} {got:>5}/{cases:<5} threshold {need}/{of}: {verdict}{}",
                group.name(),
                if skipped > 0 {
                    format!(" ({skipped} skipped for a documented reason)")
                } else {
                    String::new()
                }
            );
        }
        let mismatches = self.mode_mismatches();
        let _ = writeln!(out, "\nMode mismatches: {}", mismatches.len());
        for r in &mismatches {
            let _ = writeln!(
                out,
                "  {}: {}",
                r.case.label(),
                r.mode_mismatch.as_deref().unwrap_or("")
            );
        }
        let mut skips: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for r in &self.results {
            if let Some((cat, detail)) = r.skip() {
                skips.entry(cat).or_default().push(format!(
                    "{}{}: {detail}",
                    r.case.label(),
                    if r.case.xsltproc_pass {
                        ""
                    } else {
                        " (xsltproc=fail)"
                    }
                ));
            }
        }
        let _ = writeln!(
            out,
            "\nSkipped: {}",
            skips.values().map(Vec::len).sum::<usize>()
        );
        for (cat, list) in &skips {
            let _ = writeln!(out, "  {cat} ({}):", list.len());
            for line in list {
                let _ = writeln!(out, "    {line}");
            }
        }
        let regressions = self.regressions();
        let _ = writeln!(
            out,
            "\nCases marked xsltproc=pass that do not pass through Axle: {}",
            regressions.len()
        );
        for r in &regressions {
            let _ = writeln!(out, "  {}: {}", r.case.label(), failure_summary(r));
            if !r.case.unquoted_params.is_empty() {
                let _ = writeln!(
                    out,
                    "      note: the params {} are XPath expressions for xsltproc; Axle passed them as strings",
                    r.case.unquoted_params.join(", ")
                );
            }
        }
        let unquoted: Vec<&CaseResult> = self
            .results
            .iter()
            .filter(|r| !r.case.unquoted_params.is_empty())
            .collect();
        for r in unquoted {
            let _ = writeln!(
                out,
                "\nNote: {} has unquoted params ({}), passed as strings: {}",
                r.case.label(),
                r.case.unquoted_params.join(", "),
                if r.passed_everywhere() {
                    "the output still matches".to_string()
                } else {
                    format!("the case does not pass ({})", failure_summary(r))
                }
            );
        }
        let fixed: Vec<&CaseResult> = self
            .results
            .iter()
            .filter(|r| !r.case.xsltproc_pass && r.passed_everywhere())
            .collect();
        let _ = writeln!(
            out,
            "\nCases marked xsltproc=fail that pass through Axle: {}{}",
            fixed.len(),
            if fixed.is_empty() { "" } else { ":" }
        );
        for r in &fixed {
            let _ = writeln!(out, "  {}", r.case.label());
        }
        if verbose {
            let _ = writeln!(out, "\nEvery case:");
            for r in &self.results {
                let _ = writeln!(
                    out,
                    "  {:<4} {:<58} {:>7.0?}  {}",
                    if r.passed_everywhere() {
                        "PASS"
                    } else if r.skip().is_some() {
                        "SKIP"
                    } else {
                        "FAIL"
                    },
                    r.case.label(),
                    r.elapsed,
                    if r.passed_everywhere() {
                        String::new()
                    } else {
                        failure_summary(r)
                    }
                );
            }
            let mut slow: Vec<&CaseResult> = self.results.iter().collect();
            slow.sort_by_key(|r| std::cmp::Reverse(r.elapsed));
            let _ = writeln!(out, "\nSlowest cases (five requests each):");
            for r in slow.iter().take(15) {
                let _ = writeln!(out, "  {:>8.1?}  {}", r.elapsed, r.case.label());
            }
        }
        out
    }
}

/// One line: the reason in each mode, merged when the modes agree.
pub fn failure_summary(r: &CaseResult) -> String {
    let mut by_reason: Vec<(String, Vec<&str>)> = Vec::new();
    for (i, v) in r.verdicts.iter().enumerate() {
        let reason = match v {
            Verdict::Pass => continue,
            Verdict::Fail(why) => why.clone(),
            Verdict::Skip(cat, detail) => format!("skipped ({cat}): {detail}"),
        };
        match by_reason.iter_mut().find(|(why, _)| *why == reason) {
            Some((_, modes)) => modes.push(MODES[i].as_str()),
            None => by_reason.push((reason, vec![MODES[i].as_str()])),
        }
    }
    by_reason
        .into_iter()
        .map(|(why, modes)| {
            if modes.len() == 3 {
                why
            } else {
                format!("[{}] {why}", modes.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

// ---------------------------------------------------------------------------
// The HTTP subset

/// What the HTTP subset serves: every row marked `xsltproc=pass` that is a
/// `(pi)` row or lies under one of these `(suite folder, case_id prefix)`
/// folders, except [`HTTP_EXCLUDED`]. `(pi)` rows are served as they are;
/// every other row gets an `<?xml-stylesheet?>` PI naming its stylesheet
/// inserted into (a copy of) its source.
pub const HTTP_FOLDERS: &[(&str, &str)] = &[
    // document(): libxslt documents/ and Xalan mdocs/.
    ("libxslt", "documents/"),
    ("xalan-conf", "conf/mdocs/"),
    // xsl:import / xsl:include with relative hrefs.
    ("xalan-conf", "conf/impincl/"),
    // Embedded and external PI stylesheets.
    ("xalan-conf", "conf/embed/"),
    // Output methods, media types, encodings.
    ("xalan-conf", "conf/output/"),
    ("libxslt", "encoding/"),
    // Errors: 500, then the server must still answer.
    ("xalan-conf", "conferr/impinclerr/"),
    ("xalan-conf", "conferr/mdocserr/"),
    ("xalan-conf", "conferr/outputerr/"),
    ("xalan-conf", "conferr/messageerr/"),
    ("xalan-conf", "conferr/variableerr/"),
];

/// Rows of [`HTTP_FOLDERS`] left out of the HTTP subset, and why: the PI
/// the subset inserts changes their output (it is a node of the source that
/// these stylesheets copy or count), so they cannot be served this way.
pub const HTTP_EXCLUDED: &[(&str, &str)] = &[(
    "xalan-conf conf/output/output80",
    "identity transform (match=\"@*|node()\") from the root: the inserted PI is copied to the output",
)];

fn in_folders(case: &Case) -> bool {
    case.xsl.is_none()
        || HTTP_FOLDERS
            .iter()
            .any(|(f, prefix)| *f == case.group.folder() && case.id.starts_with(prefix))
}

/// Is `case` in the HTTP subset?
pub fn in_http_subset(case: &Case) -> bool {
    let folder = case.group.folder();
    let label = case.label();
    case.xsltproc_pass
        && (case.xsl.is_none()
            || HTTP_FOLDERS
                .iter()
                .any(|(f, prefix)| *f == folder && case.id.starts_with(prefix)))
        && !HTTP_EXCLUDED.iter().any(|(l, _)| *l == label)
}

/// One HTTP check.
#[derive(Debug, Clone)]
pub struct HttpResult {
    /// `folder case_id`.
    pub label: String,
    /// The mode.
    pub mode: CacheMode,
    /// `Ok` or what went wrong.
    pub outcome: Result<(), String>,
}

/// The HTTP subset's findings.
pub struct HttpReport {
    /// Every (case, mode) check.
    pub results: Vec<HttpResult>,
    /// Cases whose bodies or headers differ between modes.
    pub mode_mismatches: Vec<String>,
    /// Problems with the subset itself (a listed case missing, ...).
    pub setup_errors: Vec<String>,
    /// Cases run (`ok` cases, error cases).
    pub cases: (usize, usize),
    /// Wall time.
    pub elapsed: Duration,
}

impl HttpReport {
    /// The failed checks.
    pub fn failures(&self) -> Vec<&HttpResult> {
        self.results.iter().filter(|r| r.outcome.is_err()).collect()
    }

    /// The report, as printed.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\nHTTP subset: {} cases ({} rendered, {} expect-error) in 3 modes, {:.1?}",
            self.cases.0 + self.cases.1,
            self.cases.0,
            self.cases.1,
            self.elapsed
        );
        for mode in MODES {
            let of_mode: Vec<&HttpResult> =
                self.results.iter().filter(|r| r.mode == mode).collect();
            let passed = of_mode.iter().filter(|r| r.outcome.is_ok()).count();
            let _ = writeln!(
                out,
                "  {:<12} {passed:>3}/{:<3} passed",
                mode.as_str(),
                of_mode.len()
            );
        }
        let _ = writeln!(out, "  mode mismatches: {}", self.mode_mismatches.len());
        for m in &self.mode_mismatches {
            let _ = writeln!(out, "    {m}");
        }
        for e in &self.setup_errors {
            let _ = writeln!(out, "  setup: {e}");
        }
        let failures = self.failures();
        if !failures.is_empty() {
            let _ = writeln!(out, "  failures:");
            for f in failures {
                let _ = writeln!(
                    out,
                    "    {} [{}]: {}",
                    f.label,
                    f.mode,
                    f.outcome.as_ref().err().map_or("", |s| s.as_str())
                );
            }
        }
        out
    }
}

/// Inserts `<?xml-stylesheet href="{href}" type="text/xsl"?>` right after
/// the XML declaration (or a byte-order mark, or at the very start).
pub fn insert_pi(source: &[u8], href: &str) -> Result<Vec<u8>, String> {
    let pi = format!("<?xml-stylesheet href=\"{href}\" type=\"text/xsl\"?>");
    // UTF-16 (with a byte-order mark): work on code units.
    let utf16: Option<fn(&[u8]) -> u16> = if source.starts_with(b"\xFF\xFE") {
        Some(|c| u16::from_le_bytes([c[0], c[1]]))
    } else if source.starts_with(b"\xFE\xFF") {
        Some(|c| u16::from_be_bytes([c[0], c[1]]))
    } else {
        None
    };
    if let Some(unit) = utf16 {
        let little = source[0] == 0xFF;
        let units: Vec<u16> = source[2..].chunks_exact(2).map(unit).collect();
        let text = String::from_utf16(&units).map_err(|e| format!("bad UTF-16: {e}"))?;
        let with_pi = insert_pi(text.as_bytes(), href)?;
        let with_pi = String::from_utf8(with_pi).map_err(|e| e.to_string())?;
        let mut out = source[..2].to_vec();
        for u in with_pi.encode_utf16() {
            out.extend_from_slice(&if little {
                u.to_le_bytes()
            } else {
                u.to_be_bytes()
            });
        }
        return Ok(out);
    }
    let mut at = if source.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let rest = &source[at..];
    if rest.starts_with(b"<?xml") && rest.get(5).is_some_and(|b| b.is_ascii_whitespace()) {
        let end = rest
            .windows(2)
            .position(|w| w == b"?>")
            .ok_or("unterminated XML declaration")?;
        at += end + 2;
    }
    let mut out = Vec::with_capacity(source.len() + pi.len() + 1);
    out.extend_from_slice(&source[..at]);
    if at > 0 {
        out.push(b'\n');
    }
    out.extend_from_slice(pi.as_bytes());
    if at == 0 {
        out.push(b'\n');
    }
    out.extend_from_slice(&source[at..]);
    Ok(out)
}

/// The first `<?xml-stylesheet?>` PI of a document (a plain byte search:
/// the chosen `(pi)` documents are ASCII-compatible).
fn first_stylesheet_pi(bytes: &[u8]) -> Option<StylesheetPi> {
    let marker = b"<?xml-stylesheet";
    let start = bytes.windows(marker.len()).position(|w| w == marker)? + marker.len();
    let len = bytes[start..].windows(2).position(|w| w == b"?>")?;
    let data = String::from_utf8_lossy(&bytes[start..start + len]);
    axle::prolog::parse_stylesheet_pi(data.trim())
}

/// `href` of `to` relative to the folder of `from` (both suite-relative),
/// percent-encoded per segment.
pub fn relative_href(from: &str, to: &str) -> String {
    let mut from_dir: Vec<&str> = from.split('/').collect();
    from_dir.pop();
    let to_parts: Vec<&str> = to.split('/').collect();
    let common = from_dir
        .iter()
        .zip(to_parts.iter())
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<String> = vec!["..".to_string(); from_dir.len() - common];
    parts.extend(
        to_parts[common..]
            .iter()
            .map(|s| url_path(s).trim_start_matches('/').to_string()),
    );
    parts.join("/")
}

/// The `xsl:output` settings that decide a Content-Type.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OutputDecl {
    /// `method`.
    pub method: Option<String>,
    /// `media-type`.
    pub media_type: Option<String>,
    /// `encoding`.
    pub encoding: Option<String>,
}

const XSL_NS: &str = "http://www.w3.org/1999/XSL/Transform";

/// The effective `xsl:output` of the stylesheet element `sheet` in `file`:
/// its imports first (in order: a later import has higher precedence), then
/// its own `xsl:output` elements and includes in document order, later
/// attributes overriding earlier ones.
fn output_of_element(
    sheet: roxmltree::Node<'_, '_>,
    file: &Path,
    depth: usize,
) -> Result<OutputDecl, String> {
    if depth > 20 {
        return Err(format!("imports nest too deeply at {}", file.display()));
    }
    let mut decl = OutputDecl::default();
    let merge = |into: &mut OutputDecl, from: OutputDecl| {
        if from.method.is_some() {
            into.method = from.method;
        }
        if from.media_type.is_some() {
            into.media_type = from.media_type;
        }
        if from.encoding.is_some() {
            into.encoding = from.encoding;
        }
    };
    let is_xsl = |n: &roxmltree::Node<'_, '_>, name: &str| {
        n.is_element() && n.tag_name().namespace() == Some(XSL_NS) && n.tag_name().name() == name
    };
    if !(is_xsl(&sheet, "stylesheet") || is_xsl(&sheet, "transform")) {
        return Ok(decl); // a literal result element as stylesheet
    }
    for child in sheet.children().filter(|c| is_xsl(c, "import")) {
        let href = child.attribute("href").unwrap_or("");
        merge(
            &mut decl,
            output_of_file(&file.with_file_name("").join(href), depth + 1)?,
        );
    }
    for child in sheet.children() {
        if is_xsl(&child, "output") {
            merge(
                &mut decl,
                OutputDecl {
                    method: child.attribute("method").map(str::to_string),
                    media_type: child.attribute("media-type").map(str::to_string),
                    encoding: child.attribute("encoding").map(str::to_string),
                },
            );
        } else if is_xsl(&child, "include") {
            let href = child.attribute("href").unwrap_or("");
            merge(
                &mut decl,
                output_of_file(&file.with_file_name("").join(href), depth + 1)?,
            );
        }
    }
    Ok(decl)
}

fn parse_file(file: &Path) -> Result<String, String> {
    let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    // Other encodings (windows-1251, ...): every byte as one character, which
    // keeps the ASCII markup and xsl:output attributes intact.
    Ok(xmlcompare::decode_for_parse(&bytes)
        .unwrap_or_else(|| bytes.iter().map(|&b| char::from(b)).collect()))
}

fn output_of_file(file: &Path, depth: usize) -> Result<OutputDecl, String> {
    let text = parse_file(file)?;
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&text, options)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    output_of_element(doc.root_element(), file, depth)
}

/// The stylesheet's effective `xsl:output`; `fragment` names an embedded
/// stylesheet by ID.
pub fn output_decl(file: &Path, fragment: Option<&str>) -> Result<OutputDecl, String> {
    let Some(id) = fragment else {
        return output_of_file(file, 0);
    };
    let text = parse_file(file)?;
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&text, options)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let sheet = doc
        .descendants()
        .find(|n| n.is_element() && n.attribute("id") == Some(id))
        .ok_or_else(|| format!("{}: no element with id {id}", file.display()))?;
    output_of_element(sheet, file, 0)
}

/// The Content-Type Axle documents for a final XSLT stage: `media-type`,
/// else by `method` (`text` → text/plain, `xml` → text/xml, otherwise
/// text/html), with `charset` from `encoding`, else UTF-8.
pub fn expected_content_type(decl: &OutputDecl) -> String {
    let mime = match (&decl.media_type, decl.method.as_deref()) {
        (Some(m), _) => m.as_str(),
        (None, Some("text")) => "text/plain",
        (None, Some("xml")) => "text/xml",
        _ => "text/html",
    };
    format!(
        "{mime}; charset={}",
        decl.encoding.as_deref().unwrap_or("UTF-8")
    )
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

struct HttpServer {
    addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn start_server(
    root: &Path,
    mode: CacheMode,
    max_depth: Option<u32>,
) -> Result<HttpServer, String> {
    let mut config = ServeConfig::new(root);
    config.cache_mode = mode;
    config.workers = 2;
    if let Some(depth) = max_depth {
        config.limits.max_depth = depth;
    }
    let app = axle::http::App::new(&config, axle::Registry::default())
        .map_err(|e| format!("server for {}: {e}", root.display()))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let router = axle::http::router(app);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(HttpServer { addr, task })
}

struct Fetched {
    status: u16,
    content_type: String,
    cache: String,
    etag: String,
    body: Bytes,
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<Fetched, String> {
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (status, content_type, cache, etag) = (
        response.status().as_u16(),
        header("content-type"),
        header("x-axle-cache"),
        header("etag"),
    );
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("GET {url}: reading the body: {e}"))?;
    Ok(Fetched {
        status,
        content_type,
        cache,
        etag,
        body,
    })
}

/// A prepared HTTP case.
struct HttpCase {
    case: Case,
    url: String,
    content_type: Option<String>,
    expected: Bytes,
}

/// Runs [`HTTP_CASES`] over real HTTP in every mode.
pub async fn run_http_subset(conf: &Path) -> Result<HttpReport, String> {
    let started = Instant::now();
    let mut setup_errors = Vec::new();
    let scratch = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let mut manifests: HashMap<&str, Vec<Case>> = HashMap::new();
    for folder in ["libxslt", "xalan-conf"] {
        manifests.insert(folder, load_manifest(conf, folder)?);
    }
    // Prepare the copies: each suite folder once, then the PIs.
    let mut copied: HashMap<&str, PathBuf> = HashMap::new();
    let mut prepared: Vec<HttpCase> = Vec::new();
    for (label, _) in HTTP_EXCLUDED {
        let known = label.split_once(' ').is_some_and(|(folder, id)| {
            manifests
                .get(folder)
                .is_some_and(|cases| cases.iter().any(|c| c.id == id && in_folders(c)))
        });
        if !known {
            setup_errors.push(format!(
                "excluded case {label} is not in the subset's folders"
            ));
        }
    }
    let chosen: Vec<Case> = ["libxslt", "xalan-conf"]
        .iter()
        .flat_map(|f| manifests[f].iter())
        .filter(|c| in_http_subset(c))
        .cloned()
        .collect();
    for case in chosen {
        let folder = case.group.folder();
        let label = case.label();
        if !copied.contains_key(folder) {
            let target = scratch.path().join(folder);
            copy_tree(&conf.join(folder), &target).map_err(|e| format!("copying {folder}: {e}"))?;
            let canonical = target.canonicalize().map_err(|e| e.to_string())?;
            copied.insert(
                if folder == "libxslt" {
                    "libxslt"
                } else {
                    "xalan-conf"
                },
                canonical,
            );
        }
        let root = &copied[folder];
        let source = root.join(&case.xml);
        let (stylesheet, fragment) = match &case.xsl {
            Some(xsl) => {
                let bytes = std::fs::read(&source).map_err(|e| format!("{label}: {e}"))?;
                if contains(&bytes, b"<?xml-stylesheet") {
                    setup_errors.push(format!("{label}: its source already has a stylesheet PI"));
                    continue;
                }
                let href = relative_href(&case.xml, xsl);
                match insert_pi(&bytes, &href) {
                    Ok(with_pi) => {
                        std::fs::write(&source, with_pi).map_err(|e| format!("{label}: {e}"))?
                    }
                    Err(e) => {
                        setup_errors.push(format!("{label}: {e}"));
                        continue;
                    }
                }
                (root.join(xsl), None)
            }
            None => {
                let bytes = std::fs::read(&source).map_err(|e| format!("{label}: {e}"))?;
                let Some(pi) = first_stylesheet_pi(&bytes) else {
                    setup_errors.push(format!("{label}: no stylesheet PI"));
                    continue;
                };
                match pi.href.strip_prefix('#') {
                    Some(id) => (source.clone(), Some(id.to_string())),
                    None => (source.with_file_name("").join(&pi.href), None),
                }
            }
        };
        let content_type = if case.compare == Compare::ExpectError {
            None
        } else {
            match output_decl(&stylesheet, fragment.as_deref()) {
                Ok(decl) => Some(expected_content_type(&decl)),
                Err(e) => {
                    setup_errors.push(format!("{label}: reading xsl:output: {e}"));
                    continue;
                }
            }
        };
        let expected = match &case.expected {
            Some(rel) => Bytes::from(
                std::fs::read(conf.join(folder).join(rel)).map_err(|e| format!("{label}: {e}"))?,
            ),
            None => Bytes::new(),
        };
        let mut url = url_path(&case.xml);
        if !case.params.is_empty() {
            let query: Vec<String> = case
                .params
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}={}",
                        form_urlencoded::byte_serialize(k.as_bytes()).collect::<String>(),
                        form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>()
                    )
                })
                .collect();
            url = format!("{url}?{}", query.join("&"));
        }
        prepared.push(HttpCase {
            case,
            url,
            content_type,
            expected,
        });
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("client: {e}"))?;
    let mut results = Vec::new();
    // Per case: the (status, content-type, etag, body) seen in each mode.
    let mut seen: BTreeMap<String, Vec<(CacheMode, String)>> = BTreeMap::new();
    for mode in MODES {
        let mut servers: HashMap<&str, HttpServer> = HashMap::new();
        for (folder, root) in &copied {
            // libxslt's runtest rows run with xsltMaxDepth = 200.
            let depth = (*folder == "libxslt").then_some(200);
            servers.insert(folder, start_server(root, mode, depth).await?);
        }
        let mut probe: HashMap<&str, (String, Bytes)> = HashMap::new();
        for hc in &prepared {
            let folder = hc.case.group.folder();
            let base = format!("http://{}", servers[folder].addr);
            let label = hc.case.label();
            let outcome = check_http_case(&client, &base, hc, mode, &mut probe, &mut seen).await;
            results.push(HttpResult {
                label,
                mode,
                outcome,
            });
        }
    }
    let mut mode_mismatches = Vec::new();
    for (label, per_mode) in &seen {
        if per_mode.windows(2).any(|w| w[0].1 != w[1].1) {
            let detail: Vec<String> = per_mode
                .iter()
                .map(|(m, s)| format!("{m}: {}", shorten(s, 100)))
                .collect();
            mode_mismatches.push(format!("{label}: {}", detail.join("; ")));
        }
    }
    let errors = prepared
        .iter()
        .filter(|h| h.case.compare == Compare::ExpectError)
        .count();
    Ok(HttpReport {
        results,
        mode_mismatches,
        setup_errors,
        cases: (prepared.len() - errors, errors),
        elapsed: started.elapsed(),
    })
}

async fn check_http_case(
    client: &reqwest::Client,
    base: &str,
    hc: &HttpCase,
    mode: CacheMode,
    probe: &mut HashMap<&'static str, (String, Bytes)>,
    seen: &mut BTreeMap<String, Vec<(CacheMode, String)>>,
) -> Result<(), String> {
    let folder = hc.case.group.folder();
    let url = format!("{base}{}", hc.url);
    let first = fetch(client, &url).await?;
    let summary = |f: &Fetched| {
        format!(
            "{} {} {} {}",
            f.status,
            f.content_type,
            f.etag,
            axle::cache::ContentHash::of(&f.body).etag()
        )
    };
    seen.entry(hc.case.label())
        .or_default()
        .push((mode, summary(&first)));
    // A runtest row expecting empty output: xsltproc printed nothing, most
    // often because the transform failed; over HTTP that is a 500.
    let empty_or_error = hc.case.runtest && hc.case.expected.is_none() && first.status == 500;
    if hc.case.compare == Compare::ExpectError || empty_or_error {
        if first.status != 500 {
            return Err(format!(
                "expected status 500, got {} ({} bytes)",
                first.status,
                first.body.len()
            ));
        }
        // The server must still answer: the suite's probe document, or a
        // static file when no rendered case ran before this one.
        let (probe_url, probe_body) = match probe.get(folder) {
            Some((u, b)) => (format!("{base}{u}"), Some(b.clone())),
            None => (format!("{base}/MANIFEST.tsv"), None),
        };
        let next = fetch(client, &probe_url)
            .await
            .map_err(|e| format!("the server stopped answering after a 500: {e}"))?;
        if next.status != 200 || probe_body.is_some_and(|b| b != next.body) {
            return Err(format!(
                "after the 500, {probe_url} gave status {} (expected 200 and the same body)",
                next.status
            ));
        }
        return Ok(());
    }
    if first.status != 200 {
        return Err(format!(
            "status {}: {}",
            first.status,
            first_line(&html_detail(&first.body))
        ));
    }
    if let Some(want) = &hc.content_type {
        if first.content_type != *want {
            return Err(format!(
                "Content-Type {:?}, expected {want:?} (from xsl:output)",
                first.content_type
            ));
        }
    }
    compare_bytes(hc.case.compare, &hc.expected, &first.body)?;
    if mode != CacheMode::Off {
        let second = fetch(client, &url).await?;
        if second.body != first.body || second.content_type != first.content_type {
            return Err("the second request gave another response".into());
        }
        if first.cache != "miss" || second.cache != "hit" {
            return Err(format!(
                "x-axle-cache: {} then {}, expected miss then hit",
                first.cache, second.cache
            ));
        }
    }
    probe
        .entry(folder)
        .or_insert_with(|| (hc.url.clone(), first.body.clone()));
    Ok(())
}

/// The `<pre>` of an Axle error page.
fn html_detail(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match (text.find("<pre>"), text.find("</pre>")) {
        (Some(a), Some(b)) if a < b => text[a + 5..b].to_string(),
        _ => text.into_owned(),
    }
}
