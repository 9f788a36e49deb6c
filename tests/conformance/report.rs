//! The printed reports: the suites' table, thresholds, mismatches, skips
//! and regressions ([`RunReport::render`]), and the HTTP subset's summary
//! ([`HttpReport::render`]). Only text: they read what a run found and
//! decide nothing, so the wording can change without touching how cases are
//! run or judged.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::{CaseResult, HttpReport, HttpResult, MODES, RunReport, Verdict};

impl RunReport {
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

impl HttpReport {
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
