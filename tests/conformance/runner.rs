//! The XSLT conformance runner: the shared libxslt and Xalan suites
//! (`$AXLE_SHARED/conformance`) through Axle's own pipeline, in every cache
//! mode, and a subset over real HTTP. Used by `tests/conformance.rs` (which
//! asserts the pass criteria) and `examples/conformance.rs` (which prints the
//! report). See `tests/conformance/README.md`.
//!
//! This file is the runner's root: where the suites are, and the constants
//! the test asserts on. The work is in its modules, one per step of a run;
//! the names they share (and the test and the example call) are re-exported
//! here, so they read `runner::run_suites`, `runner::Case`, ...:
//!
//! - `manifest`: reading a suite's MANIFEST.tsv into cases;
//! - `case`: running one case through the pipeline in every mode;
//! - `judge`: comparing an outcome with the expected output;
//! - `suites`: running whole suites, concurrently, and what the run found;
//! - `report`: the report text;
//! - `http` and `http_prep`: the subset served over real HTTP;
//! - `xmlcompare`: the `xml-ws` rule.
// Included by the test and the example, which each use part of it.
#![allow(dead_code, unused_imports)]

#[path = "xmlcompare.rs"]
pub mod xmlcompare;

#[path = "case.rs"]
pub mod case;
#[path = "http.rs"]
pub mod http;
#[path = "http_prep.rs"]
pub mod http_prep;
#[path = "judge.rs"]
pub mod judge;
#[path = "manifest.rs"]
pub mod manifest;
#[path = "report.rs"]
pub mod report;
#[path = "suites.rs"]
pub mod suites;

pub use case::{CaseResult, Outcome, Pipelines, Verdict, run_case, url_path};
pub use http::{HttpReport, HttpResult, run_http_subset};
pub use http_prep::{expected_content_type, insert_pi, output_decl, relative_href};
pub use judge::{compare_bytes, judge};
pub use manifest::{Case, Compare, Group, SuiteChoice, load_manifest};
pub use suites::{RunReport, run_first_cases, run_suites};

use std::path::{Path, PathBuf};

use axle::config::CacheMode;

/// The three cache modes, in the order they run.
pub const MODES: [CacheMode; 3] = [CacheMode::Off, CacheMode::All, CacheMode::Incremental];

/// Cases run at once (each runs its five requests one after the other).
pub const CONCURRENCY: usize = 4;

/// Skip reason for cases whose expected output assumes a filesystem base
/// URI where Axle, by design, uses a root-relative URL.
pub const SKIP_DESIGN: &str = "differs by design (root-relative base URIs)";
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
