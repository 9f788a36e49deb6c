//! Which document root `axle serve` serves when no `--root` names one
//! (and `axle check` checks, given neither `--root` nor `--config`): one
//! rule, whoever starts the binary (`cargo run`, an installed `axle`,
//! `./target/release/axle`), named at start so the choice is never a
//! surprise: the current directory if it holds a site (`index.xml` or
//! `axle.toml`); else `samples/` when the current directory is a checkout
//! of Axle (its `Cargo.toml` is the `axle` package's, and
//! `samples/index.xml` exists), so the README's commands serve the sample
//! site; else the current directory.

use std::path::{Path, PathBuf};

/// A root chosen without `--root`, and the rule that chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenRoot {
    /// The directory (relative to the one the rule looked in).
    pub path: PathBuf,
    /// The rule, for the start line and messages ("the current directory,
    /// which holds index.xml or axle.toml").
    pub how: &'static str,
}

/// The root for a process started in `dir` without `--root`;
/// `config_file` is the site configuration's name (`axle.toml`).
pub fn choose_root(dir: &Path, config_file: &str) -> ChosenRoot {
    if dir.join("index.xml").is_file() || dir.join(config_file).is_file() {
        return ChosenRoot {
            path: dir.to_path_buf(),
            how: "the current directory, which holds index.xml or axle.toml",
        };
    }
    if is_axle_checkout(dir) {
        return ChosenRoot {
            path: dir.join("samples"),
            how: "samples/, the sample site of the Axle checkout in the current directory",
        };
    }
    ChosenRoot {
        path: dir.to_path_buf(),
        how: "the current directory, which holds no index.xml or axle.toml",
    }
}

/// Is `dir` a checkout of Axle's sources with its sample site?
fn is_axle_checkout(dir: &Path) -> bool {
    if !dir.join("samples/index.xml").is_file() {
        return false;
    }
    let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
        return false;
    };
    manifest
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("package")?.get("name")?.as_str().map(|n| n == "axle"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_site_then_a_checkouts_samples_then_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let chosen = choose_root(d, "axle.toml");
        assert_eq!(chosen.path, d);
        assert!(chosen.how.contains("holds no index.xml"), "{chosen:?}");
        // samples/ alone is not a checkout.
        write(&d.join("samples/index.xml"), "<p/>");
        assert_eq!(choose_root(d, "axle.toml").path, d);
        // Another package's checkout is not Axle's.
        write(&d.join("Cargo.toml"), "[package]\nname = \"other\"\n");
        assert_eq!(choose_root(d, "axle.toml").path, d);
        write(&d.join("Cargo.toml"), "[package]\nname = \"axle\"\n");
        assert_eq!(choose_root(d, "axle.toml").path, d.join("samples"));
        // A site of its own wins.
        write(&d.join("axle.toml"), "");
        let chosen = choose_root(d, "axle.toml");
        assert_eq!(chosen.path, d);
        assert!(chosen.how.contains("holds index.xml or axle.toml"));
        std::fs::remove_file(d.join("axle.toml")).unwrap();
        write(&d.join("index.xml"), "<p/>");
        assert_eq!(choose_root(d, "axle.toml").path, d);
    }
}
