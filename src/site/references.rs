//! The files a configuration names: every processor `href` and
//! `error-stylesheet` must be a file under the document root. Loading does
//! not look at the disk (a reload must not fail because a stylesheet is
//! being replaced), so `axle check` asks for this separately.

use std::path::{Path, PathBuf};

use super::{ConfigError, SiteConfig};
use crate::cache::Fingerprints;
use crate::href::resolve_href;
use crate::provider::{ProviderError, confine};

/// A file a section names, and where.
#[derive(Debug, Clone)]
pub(super) struct Reference {
    /// The full key (`location."/docs".processor[1].href`).
    pub(super) key: String,
    /// Its line.
    pub(super) line: Option<usize>,
    /// The href as written.
    pub(super) href: String,
}

impl SiteConfig {
    /// Every processor `href` and `error-stylesheet` that does not name an
    /// existing file under `root`, and every program (a `command` source,
    /// a filter) that cannot be run, one error each (empty: all are
    /// there).
    ///
    /// Hrefs resolve as the chain resolves them: against the document's
    /// URL path, confined to the root (no `..` above it, no symlink out of
    /// it). A root-relative href (`/stylesheets/x.xsl`) names one file; a
    /// relative one (`x.xsl`) names a file per document directory and is
    /// checked for documents directly under the section's prefix. An
    /// embedded stylesheet (`#id`) is in each document and is not checked.
    pub fn check_references(&self, root: &Path) -> Vec<ConfigError> {
        let file = self.source.clone().unwrap_or_default();
        let root = match root.canonicalize() {
            Ok(r) => r,
            Err(e) => {
                return vec![ConfigError {
                    file,
                    line: None,
                    key: "(root)".into(),
                    message: format!("document root {}: {e}", root.display()),
                }];
            }
        };
        let fingerprints = Fingerprints::new(64);
        let private = self.private_set();
        let mut errors = self.problems();
        for section in &self.sections {
            for r in &section.references {
                let checked = check(&root, &private, &section.prefix, &r.href, &fingerprints);
                if let Err(message) = checked {
                    errors.push(ConfigError {
                        file: file.clone(),
                        line: r.line,
                        key: r.key.clone(),
                        message,
                    });
                }
            }
        }
        errors
    }
}

/// Does `href`, configured for the location `prefix`, name a file under
/// `root` (canonical)? The error message says what is wrong.
fn check(
    root: &Path,
    private: &crate::provider::PrivateSet,
    prefix: &str,
    href: &str,
    fingerprints: &Fingerprints,
) -> Result<(), String> {
    if let Some(id) = href.strip_prefix('#') {
        return if id.is_empty() {
            Err(format!("href=\"{href}\" names no embedded stylesheet"))
        } else {
            Ok(())
        };
    }
    // A document directly under the prefix, as a URL path ('%' is the one
    // character a decoded prefix may hold that a URL path must encode).
    let base = format!("{}/", prefix.trim_end_matches('/').replace('%', "%25"));
    let relative = !href.starts_with('/');
    let under = if relative {
        format!(
            " (a relative href resolves against each document's directory; checked for documents in {base})"
        )
    } else {
        String::new()
    };
    let Some(url) = resolve_href(&base, href) else {
        return Err(format!(
            "stylesheet {href} is outside the document root{under}"
        ));
    };
    match confine(root, &url, fingerprints) {
        // What the server never reads (docs/security.md, "Private files").
        Ok(path)
            if private.contains(path.as_path())
                || path.named().is_some_and(|named| private.contains(named)) =>
        {
            Err(format!(
                "stylesheet {href} is a private file (never read){under}"
            ))
        }
        Ok(path) if path.as_path().is_file() => Ok(()),
        Ok(path) => Err(format!(
            "stylesheet {href} is not a file ({} is a directory){under}",
            path.as_path().display()
        )),
        Err(ProviderError::NotFound(_)) => Err(format!(
            "stylesheet {href} does not exist (no file {}){under}",
            lexical(root, &url).display()
        )),
        Err(_) => Err(format!(
            "stylesheet {href} is outside the document root{under}"
        )),
    }
}

/// Where a root-relative URL path would be under `root`, for messages.
fn lexical(root: &Path, url: &str) -> PathBuf {
    let decoded = percent_encoding::percent_decode_str(url).decode_utf8_lossy();
    root.join(decoded.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Registry;

    fn site(text: &str) -> SiteConfig {
        SiteConfig::parse(text, Path::new("axle.toml"), Registry::default()).unwrap()
    }

    fn root() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("s/sub")).unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        std::fs::write(dir.path().join("s/a.xsl"), "<x/>").unwrap();
        std::fs::write(dir.path().join("docs/local.xsl"), "<x/>").unwrap();
        dir
    }

    const CONFIG: &str = r##"[location."/"]
error-stylesheet = "/s/a.xsl"

[[location."/".processor]]
type = "text/xsl"
href = "/s/a.xsl"

[location."/docs"]
error-stylesheet = "/s/missing-error.xsl"

[[location."/docs".processor]]
type = "text/xsl"
href = "local.xsl"

[[location."/docs".processor]]
type = "text/xsl"
href = "/s/missing.xsl"

[[location."/docs".processor]]
type = "text/xsl"
href = "/../outside.xsl"

[[location."/docs".processor]]
type = "text/xsl"
href = "/s/sub"

[[location."/docs".processor]]
type = "text/xsl"
href = "#embedded"

[[location."/docs".processor]]
type = "text/xsl"
href = "nope.xsl"
"##;

    #[test]
    fn missing_outside_and_directory_hrefs_are_reported_with_key_and_line() {
        let dir = root();
        let errors = site(CONFIG).check_references(dir.path());
        let got: Vec<(String, Option<usize>)> =
            errors.iter().map(|e| (e.key.clone(), e.line)).collect();
        let d = "location.\"/docs\"";
        assert_eq!(
            got,
            [
                (format!("{d}.processor[1].href"), Some(17)),
                (format!("{d}.processor[2].href"), Some(21)),
                (format!("{d}.processor[3].href"), Some(25)),
                (format!("{d}.processor[5].href"), Some(33)),
                (format!("{d}.error-stylesheet"), Some(9)),
            ],
            "{errors:#?}"
        );
        assert!(
            errors[0].message.contains("does not exist"),
            "{}",
            errors[0]
        );
        assert!(
            errors[1].message.contains("outside the document root"),
            "{}",
            errors[1]
        );
        assert!(errors[2].message.contains("is not a file"), "{}", errors[2]);
        assert!(errors[3].message.contains("relative href"), "{}", errors[3]);
        assert_eq!(
            errors[4].to_string(),
            format!(
                "axle.toml:9: {d}.error-stylesheet: stylesheet /s/missing-error.xsl does not exist (no file {})",
                dir.path()
                    .canonicalize()
                    .unwrap()
                    .join("s/missing-error.xsl")
                    .display()
            )
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_root_is_outside() {
        let dir = root();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("x.xsl"), "<x/>").unwrap();
        std::os::unix::fs::symlink(other.path().join("x.xsl"), dir.path().join("s/link.xsl"))
            .unwrap();
        let errors =
            site("[[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = \"/s/link.xsl\"\n")
                .check_references(dir.path());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].message.contains("outside"), "{}", errors[0]);
        assert_eq!(errors[0].line, Some(3));
    }

    #[test]
    fn all_present_is_no_error_and_a_missing_root_is_one() {
        let dir = root();
        let ok = site("[[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = \"/s/a.xsl\"\n");
        assert!(ok.check_references(dir.path()).is_empty());
        let errors = ok.check_references(&dir.path().join("nope"));
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].key, "(root)");
    }
}
