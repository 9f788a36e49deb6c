//! Running one case through Axle's pipeline in every cache mode (off once,
//! all and incremental twice each), then turning the outcomes into a
//! verdict per mode: judged against the expected output, plus the cache's
//! miss-then-hit and agreement between modes. This is the in-process half
//! of the runner; `http` is the over-the-wire half.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axle::chain::{Processor, ProcessorOrder, When};
use axle::config::{CacheMode, ServeConfig};
use axle::pipeline::{CacheStatus, Pipeline, RenderRequest};
use axle::prolog::StylesheetPi;
use axle::provider::Provider;
use bytes::Bytes;

use super::judge::first_line;
use super::{Case, MODES, judge, loud};

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
    pub(super) fn is_pass(&self) -> bool {
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
