//! `axle check` as a user runs it (issue #37 item 1): from the root with
//! a relative `--config`, with nothing at all, with a file or root that is
//! not there (each message names what it could not find); every mistake of
//! a file in one run with its file, key and line, then a count; an unknown
//! key's near spelling suggested; a program that cannot run named once;
//! an `esql` SQLite path resolved against the root as `serve` does.

use std::process::Stdio;

use crate::support::{TestSite, axle};

/// `axle check ARGS` in `dir`: success, stdout, stderr.
fn check(dir: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = axle()
        .arg("check")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const VALID: &str = "[location.\"/\"]\nstyle = \"a\"\n\n[[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = \"/s/upper.xsl\"\n";

#[test]
fn check_finds_the_file_and_root_from_where_it_runs() {
    let site = TestSite::new();
    site.write("axle.toml", VALID);
    let root = site.root.display().to_string();
    // `cd root && axle check --config axle.toml`: the config's directory
    // is the root (a bare name's directory is ".").
    for args in [
        &["--config", "axle.toml"][..],
        &["--config", "./axle.toml"],
        &[],
        &["--root", "."],
    ] {
        let (ok, out, err) = check(&site.root, args);
        assert!(ok, "{args:?}: {err}");
        assert!(
            out.contains(&format!("is valid for the root {root}")),
            "{args:?}: {out}"
        );
    }
    // From outside, naming the file: its directory is the root.
    let (ok, _, err) = check(&site.outside(), &["--config", "root/axle.toml"]);
    assert!(ok, "{err}");
}

#[test]
fn what_check_cannot_find_is_named() {
    let site = TestSite::new();
    site.write("axle.toml", VALID);
    // A missing file: the file, not the root.
    let (ok, _, err) = check(&site.root, &["--config", "axle-typo.toml"]);
    assert!(!ok);
    assert!(
        err.contains("the configuration file axle-typo.toml (--config) does not exist"),
        "{err}"
    );
    assert!(!err.contains("document root"), "{err}");
    let (ok, _, err) = check(&site.root, &["--config", "s"]);
    assert!(
        !ok && err.contains("the configuration file s (--config) is not a file"),
        "{err}"
    );
    // A missing root, given.
    let (ok, _, err) = check(&site.root, &["--root", "no-such-dir"]);
    assert!(!ok);
    assert!(
        err.contains("the document root no-such-dir (given by --root) cannot be used"),
        "{err}"
    );
    // No file in the root: where it looked, and why there.
    let empty = site.outside().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (ok, _, err) = check(&empty, &[]);
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "no configuration to check: {}/axle.toml does not exist",
            empty.canonicalize().unwrap().display()
        )) && err.contains("the current directory")
            && err.contains("--config FILE or --root DIR"),
        "{err}"
    );
}

#[test]
fn every_mistake_is_reported_in_one_run_then_counted() {
    let site = TestSite::new();
    site.write(
        "axle.toml",
        "[filter.\"text/x-gone\"]\n\
         argv = [\"/nonexistent/axle-check-program\"]\n\
         \n\
         [location.\"/\"]\n\
         cache-contrl = \"public\"\n\
         output-charset = \"klingon\"\n\
         \n\
         [location.\"/b\"]\n\
         params = \"some\"\n",
    );
    let (ok, out, err) = check(&site.root, &["--config", "axle.toml"]);
    assert!(!ok && out.is_empty(), "{out}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "axle: axle.toml:2: filter.\"text/x-gone\".argv: the command cannot be run: \
             /nonexistent/axle-check-program: No such file or directory (os error 2)",
            "axle: axle.toml:5: location.\"/\".cache-contrl: unknown field `cache-contrl`; \
             did you mean `cache-control`?",
            "axle: axle.toml:6: location.\"/\".output-charset: unknown charset 'klingon'",
            "axle: axle.toml:9: location.\"/b\".params: 'some': use \"all\", \"none\" or a list of names",
            &format!(
                "axle: 4 problems in axle.toml (document root {})",
                site.root.display()
            ),
        ],
        "{err}"
    );
    // `serve` refuses the same file with the same four lines.
    let out = axle()
        .args(["serve", "--listen", "127.0.0.1:0", "--root", "."])
        .current_dir(&site.root)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let served = String::from_utf8_lossy(&out.stderr);
    let problems: Vec<&str> = served
        .lines()
        .filter(|l| l.starts_with("axle: ./axle.toml:"))
        .collect();
    assert_eq!(problems.len(), 4, "{served}");
    assert!(
        problems[1].ends_with("did you mean `cache-control`?"),
        "{served}"
    );
}

#[test]
fn a_program_that_cannot_run_is_named_once() {
    let site = TestSite::new();
    // The file loads: the program and the stylesheet are problems of
    // what it names, which check refuses.
    site.write(
        "axle.toml",
        "[filter.\"text/x-gone\"]\nargv = [\"/nonexistent/axle-check-program\"]\n\n\
         [[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = \"/s/missing.xsl\"\n",
    );
    let (ok, _, err) = check(&site.root, &[]);
    assert!(!ok);
    assert_eq!(
        err.matches("/nonexistent/axle-check-program").count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("axle.toml:2: filter.\"text/x-gone\".argv"),
        "{err}"
    );
    assert!(err.contains("axle.toml:6: location.\"/\".processor[0].href: stylesheet /s/missing.xsl does not exist"), "{err}");
    assert!(err.contains("axle: 2 problems in ./axle.toml"), "{err}");
    // `serve` starts anyway, and warns about the program once.
    let mut child = axle()
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(&site.root)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = String::new();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap());
    while !log.contains("axle serving") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut lines, &mut line).unwrap() == 0 {
            break;
        }
        log.push_str(&line);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(log.contains("axle serving"), "{log}");
    assert_eq!(
        log.matches("/nonexistent/axle-check-program").count(),
        1,
        "{log}"
    );
}

/// A configuration kept outside the root names an `esql` SQLite database
/// relative to the root: `check` and `serve` both find it there.
#[test]
fn an_esql_path_is_relative_to_the_root_for_check_and_serve() {
    let site = TestSite::new();
    std::fs::create_dir_all(site.root.join("data")).unwrap();
    let conf = site.outside().join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    let file = conf.join("site.toml");
    std::fs::write(&file, "[esql.db]\nurl = \"sqlite:data/site.sqlite\"\n").unwrap();
    let root = site.root.to_str().unwrap();
    let (ok, out, err) = check(
        &site.outside(),
        &["--config", file.to_str().unwrap(), "--root", root],
    );
    assert!(ok, "{err}");
    assert!(out.contains("is valid"), "{out}");
    // serve, with the same two flags, starts (its first line is the address).
    let mut child = axle()
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&file)
        .args(["--root", root])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert!(
        line.contains("axle: serving"),
        "{line}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without the directory under the root, both refuse it, naming it.
    std::fs::remove_dir_all(site.root.join("data")).unwrap();
    std::fs::create_dir_all(conf.join("data")).unwrap();
    let (ok, _, err) = check(
        &site.outside(),
        &["--config", file.to_str().unwrap(), "--root", root],
    );
    assert!(!ok);
    assert!(
        err.contains("esql.db.url") && err.contains(&format!("{root}/data")),
        "{err}"
    );
}
