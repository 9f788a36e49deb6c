//! Running whole suites: every case of the chosen manifests, biggest
//! first, a few at a time, into a [`RunReport`], and the questions the test
//! asks of it (counts, cases passing everywhere, mode mismatches,
//! regressions). The report's text is in `report`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{
    CONCURRENCY, Case, CaseResult, Group, Pipelines, SuiteChoice, Verdict, load_manifest, loud,
    run_case,
};

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
    run_first_cases(conf, choice, progress, usize::MAX).await
}

/// [`run_suites`] on the first `limit` cases of each chosen manifest (a
/// short run: `examples/conformance.rs --limit N`).
pub async fn run_first_cases(
    conf: &Path,
    choice: SuiteChoice,
    progress: bool,
    limit: usize,
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
            .take(limit)
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
}
