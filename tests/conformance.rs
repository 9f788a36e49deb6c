//! XSLT conformance: the shared libxslt and Xalan suites through Axle's
//! pipeline in all three cache modes, and a subset over real HTTP. The
//! runner lives in `tests/conformance/runner.rs` (shared with
//! `examples/conformance.rs`); see `tests/conformance/README.md`.
//!
//! Pass criteria: every row marked `xsltproc=pass` passes in all three modes
//! unless it is skipped for a documented reason (it needs what Axle's
//! security settings forbid, or XInclude); no mode mismatch; the HTTP subset
//! passes. The Done-means threshold counts are printed.

#[path = "conformance/runner.rs"]
mod runner;

use std::path::PathBuf;

/// The suites' folder, or `None` (after the banner) when they are missing
/// and `CI` is not set.
fn suites() -> Option<PathBuf> {
    match runner::conformance_dir() {
        Ok(dir) => Some(dir),
        Err(looked_at) => {
            runner::loud(&runner::missing_banner(&looked_at));
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but the conformance suites are missing at {}",
                looked_at.display()
            );
            None
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn save(name: &str, text: &str) {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    if std::fs::write(&path, text).is_ok() {
        runner::loud(&format!("(report saved to {})\n", path.display()));
    }
}

#[test]
fn suites_pass_through_the_pipeline_in_every_mode() {
    let Some(conf) = suites() else { return };
    let report = runtime()
        .block_on(runner::run_suites(&conf, runner::SuiteChoice::Both, true))
        .unwrap();
    let text = report.render(false);
    runner::loud(&text);
    save("conformance-report.txt", &report.render(true));

    let mismatches = report.mode_mismatches();
    assert!(
        mismatches.is_empty(),
        "{} mode mismatch(es): {}",
        mismatches.len(),
        mismatches
            .iter()
            .map(|r| format!(
                "{}: {}",
                r.case.label(),
                r.mode_mismatch.as_deref().unwrap_or("")
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let regressions = report.regressions();
    assert!(
        regressions.is_empty(),
        "{} case(s) marked xsltproc=pass do not pass through Axle:\n{}",
        regressions.len(),
        regressions
            .iter()
            .map(|r| format!(
                "  {}: {}",
                r.case.label(),
                runner::report::failure_summary(r)
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The thresholds, counting cases skipped for a documented
    // reason (listed in the report) as exceptions, not passes.
    for group in report.groups() {
        let (need, _) = group.threshold();
        let passed = report.passed_everywhere(group);
        let documented = report
            .results
            .iter()
            .filter(|r| r.case.group == group && r.case.xsltproc_pass && r.skip().is_some())
            .count();
        assert!(
            passed + documented >= need && documented <= 3,
            "{}: {passed} passed + {documented} documented exceptions < {need}",
            group.name()
        );
    }
    // Skips are only ever for the documented reasons.
    for r in &report.results {
        if let Some((category, _)) = r.skip() {
            assert!(
                category == runner::SKIP_FORBIDDEN || category == runner::SKIP_DESIGN,
                "{}: skipped for {category}",
                r.case.label()
            );
        }
    }
}

#[test]
fn http_subset_is_served_like_the_pipeline_renders() {
    let Some(conf) = suites() else { return };
    let report = runtime().block_on(runner::run_http_subset(&conf)).unwrap();
    let text = report.render();
    runner::loud(&text);
    save("conformance-http-report.txt", &text);
    assert!(report.setup_errors.is_empty(), "{:?}", report.setup_errors);
    assert!(
        report.cases.0 + report.cases.1 >= 50,
        "the HTTP subset has only {} cases",
        report.cases.0 + report.cases.1
    );
    assert!(
        report.cases.1 >= 10,
        "only {} expect-error cases over HTTP",
        report.cases.1
    );
    assert!(
        report.mode_mismatches.is_empty(),
        "HTTP mode mismatches: {:#?}",
        report.mode_mismatches
    );
    let failures = report.failures();
    assert!(
        failures.is_empty(),
        "{} HTTP check(s) failed:\n{}",
        failures.len(),
        failures
            .iter()
            .map(|f| format!(
                "  {} [{}]: {}",
                f.label,
                f.mode,
                f.outcome.as_ref().err().map_or("", |s| s.as_str())
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Every document of the suites that names an external DTD parses to the
/// same tree (or the same error) whether its DTD is parsed for it or lent
/// from an earlier parse (`axle::ffi::XmlDoc::parse_document`): DocBook
/// 3.1.7, 4.0 and 4.1.2, the simplified DocBook and the xmlspec DTDs.
#[test]
fn suite_documents_parse_the_same_with_a_shared_dtd() {
    use axle::cache::Fingerprints;
    use axle::ffi::{DoctypeIds, Resolver, XmlDoc};
    use axle::provider::FileProvider;
    use std::sync::Arc;

    let Some(conf) = suites() else { return };
    let files = FileProvider::new(&conf, Fingerprints::default()).unwrap();
    let mut docs = Vec::new();
    let mut stack = vec![conf.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "xml") {
                docs.push(path);
            }
        }
    }
    docs.sort();
    let (mut compared, mut shared) = (0, 0);
    // Twice: the second round parses every document with a kept template.
    for _round in 0..2 {
        for path in &docs {
            let bytes = std::fs::read(path).unwrap();
            let Some(doctype) = axle::prolog::scan(&bytes).ok().and_then(|p| p.doctype) else {
                continue;
            };
            let Some(system_id) = doctype.system_id.as_deref() else {
                continue;
            };
            let url = format!("/{}", path.strip_prefix(&conf).unwrap().display());
            let ids = DoctypeIds {
                public_id: doctype.public_id.as_deref(),
                system_id,
            };
            let resolver: Arc<dyn Resolver> = files.resolver();
            let full = XmlDoc::parse(&bytes, &url, resolver.clone());
            let lent = XmlDoc::parse_document(&bytes, &url, resolver, Some(ids));
            match (full, lent) {
                (Ok(full), Ok(lent)) => {
                    shared += usize::from(lent.shares_dtd());
                    assert_eq!(
                        String::from_utf8_lossy(&full.to_xml_bytes().unwrap()),
                        String::from_utf8_lossy(&lent.to_xml_bytes().unwrap()),
                        "{url}"
                    );
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{url}"),
                (a, b) => panic!("{url}: {:?} vs {:?}", a.map(|_| ()), b.map(|_| ())),
            }
            compared += 1;
        }
    }
    runner::loud(&format!(
        "shared DTDs: {compared} parses compared, {shared} of them with a lent DTD\n"
    ));
    assert!(shared >= 20, "only {shared} parses used a shared DTD");
}
