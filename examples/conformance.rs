//! Runs the shared XSLT conformance suites through Axle and prints the
//! report (the same runner as `cargo test --test conformance`).
//!
//! ```sh
//! cargo run --release --example conformance [-- --suite libxslt|xalan] [--verbose] [--http] [--limit N]
//! ```
//!
//! `--verbose` lists every case and the slowest ones; `--http` also runs the
//! HTTP subset; `--limit N` runs only the first N cases of each suite's
//! manifest (a quick check: `tests/examples.rs` runs `--limit 3`). Exits 1
//! when a case marked `xsltproc=pass` does not pass (and is not skipped for
//! a documented reason) or the modes disagree, 2 when the suites are
//! missing. See `tests/conformance/README.md`.

#[path = "../tests/conformance/runner.rs"]
mod runner;

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut choice = runner::SuiteChoice::Both;
    let mut verbose = false;
    let mut http = false;
    let mut limit = usize::MAX;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--suite" => match args.next().as_deref() {
                Some("libxslt") => choice = runner::SuiteChoice::Libxslt,
                Some("xalan") | Some("xalan-conf") => choice = runner::SuiteChoice::Xalan,
                other => {
                    eprintln!("--suite takes libxslt or xalan, not {other:?}");
                    return ExitCode::from(2);
                }
            },
            "--verbose" | "-v" => verbose = true,
            "--http" => http = true,
            "--limit" => match args.next().map(|n| n.parse::<usize>()) {
                Some(Ok(n)) if n > 0 => limit = n,
                other => {
                    eprintln!("--limit takes a number of cases (at least 1), not {other:?}");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                println!(
                    "usage: conformance [--suite libxslt|xalan] [--verbose] [--http] [--limit N]\n\
                     Suites are read from $AXLE_SHARED/conformance (default ../shared)."
                );
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown argument {other}");
                return ExitCode::from(2);
            }
        }
    }
    let conf = match runner::conformance_dir() {
        Ok(dir) => dir,
        Err(looked_at) => {
            eprint!("{}", runner::missing_banner(&looked_at));
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tokio: {e}");
            return ExitCode::from(2);
        }
    };
    let report = match runtime.block_on(runner::run_first_cases(&conf, choice, true, limit)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", report.render(verbose));
    let mut ok = report.regressions().is_empty() && report.mode_mismatches().is_empty();
    if http {
        match runtime.block_on(runner::run_http_subset(&conf)) {
            Ok(h) => {
                print!("{}", h.render());
                ok &= h.failures().is_empty()
                    && h.mode_mismatches.is_empty()
                    && h.setup_errors.is_empty();
            }
            Err(e) => {
                eprintln!("HTTP subset: {e}");
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
