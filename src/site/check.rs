//! What `axle check` checks: which file and which root (each named when it
//! is not there), and every problem of the file under that root, each
//! once. The file: `--config`, else `axle.toml` in the root. The root:
//! `--root`, else the directory of `--config` (an `axle.toml` lives in the
//! root it configures, as `serve` reads it from there), else the root
//! `serve` would choose ([`crate::config::choose_root`]). The file is
//! loaded as `serve` loads it ([`SiteConfig::load_in`]: every path in it is
//! relative to the root).

use std::path::{Path, PathBuf};

use super::{ConfigError, SiteConfig};
use crate::language::Registry;
use crate::provider::SITE_CONFIG_NAME;

/// The file and root `axle check` works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckTarget {
    /// The configuration file, as given (or `ROOT/axle.toml`).
    pub file: PathBuf,
    /// The document root, canonical.
    pub root: PathBuf,
}

/// The file and root for `--config` and `--root` (either may be absent),
/// in the current directory `cwd`; a message naming what is not there
/// (and how that root was chosen) otherwise.
pub fn check_target(
    config: Option<&Path>,
    root: Option<&Path>,
    cwd: &Path,
) -> Result<CheckTarget, String> {
    let (root, how) = match (root, config) {
        (Some(root), _) => (root.to_path_buf(), "given by --root"),
        (None, Some(file)) => (super::file_directory(file), "the directory of --config"),
        (None, None) => {
            let chosen = crate::config::choose_root(cwd, SITE_CONFIG_NAME);
            (chosen.path, chosen.how)
        }
    };
    if let Some(file) = config
        && !file.is_file()
    {
        let what = if file.exists() {
            "is not a file"
        } else {
            "does not exist"
        };
        return Err(format!(
            "the configuration file {} (--config) {what}",
            file.display()
        ));
    }
    let canonical = root.canonicalize().map_err(|e| {
        format!(
            "the document root {} ({how}) cannot be used: {e}; pass --root DIR",
            root.display()
        )
    })?;
    if !canonical.is_dir() {
        return Err(format!(
            "the document root {} ({how}) is not a directory; pass --root DIR",
            root.display()
        ));
    }
    let file = match config {
        Some(file) => file.to_path_buf(),
        None => {
            let file = root.join(SITE_CONFIG_NAME);
            if !file.is_file() {
                return Err(format!(
                    "no configuration to check: {} does not exist (the document root is {how}); \
                     pass --config FILE or --root DIR",
                    canonical.join(SITE_CONFIG_NAME).display(),
                ));
            }
            file
        }
    };
    Ok(CheckTarget {
        file,
        root: canonical,
    })
}

/// Every problem of `target`'s file: what stops it loading, or else what
/// it names that cannot be used under the root; each names the file as
/// given. Empty: valid.
pub fn check(target: &CheckTarget, registry: Registry) -> Vec<ConfigError> {
    let mut problems = match SiteConfig::load_in(&target.file, registry, &target.root) {
        Ok(site) => site.check_references(&target.root),
        Err(errors) => errors.into_iter().collect(),
    };
    // The loaded site knows the file by its canonical path.
    for problem in &mut problems {
        problem.file.clone_from(&target.file);
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_given_or_the_files_directory_or_chosen() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(d.join("site")).unwrap();
        std::fs::write(d.join("site/axle.toml"), "").unwrap();
        let file = d.join("site/axle.toml");
        let t = check_target(Some(&file), None, &d).unwrap();
        assert_eq!(t.root, d.join("site"));
        let t = check_target(Some(&file), Some(&d), &d).unwrap();
        assert_eq!(
            (t.file.as_path(), t.root.as_path()),
            (file.as_path(), d.as_path())
        );
        let t = check_target(None, None, &d.join("site")).unwrap();
        assert_eq!(t.file, d.join("site/axle.toml"));
        let e = check_target(None, None, &d).unwrap_err();
        assert!(e.starts_with("no configuration to check"), "{e}");
        let e = check_target(Some(&d.join("nope.toml")), None, &d).unwrap_err();
        assert!(e.contains("(--config) does not exist"), "{e}");
        assert!(
            check(
                &check_target(Some(&file), None, &d).unwrap(),
                Registry::default()
            )
            .is_empty()
        );
    }
}
