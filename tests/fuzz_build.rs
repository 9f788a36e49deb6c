//! Builds every cargo-fuzz target in `fuzz/` (its own workspace) with the
//! toolchain running the tests. Why it exists: a change to a public API
//! the targets use must fail `cargo test`, on any machine; `libfuzzer-sys`
//! builds on stable without sanitizer flags, which is enough to keep the
//! targets compiling. The AddressSanitizer build that also runs them
//! (`scripts/fuzz-asan`) takes a full instrumented build of every
//! dependency, so it runs in `.ci/run` after the tests, not here.
//!
//! Skips with a banner when `cargo` cannot be run (fails under `CI=true`).

use std::path::Path;
use std::process::Command;

#[test]
fn every_fuzz_target_builds_on_stable() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    if Command::new(&cargo).arg("--version").output().is_err() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "CI=true but `{cargo}` cannot be run: the fuzz targets were not built"
        );
        eprintln!(
            "\n*** fuzz_build: `{cargo}` cannot be run; the fuzz targets were NOT built ***\n"
        );
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Under the main target directory (ignored by git), apart from the
    // nightly builds cargo-fuzz keeps in fuzz/target.
    let target_dir = root.join("target").join("fuzz-stable");
    let out = Command::new(&cargo)
        .args(["build", "--bins", "--manifest-path"])
        .arg(root.join("fuzz/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "building the fuzz targets failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
