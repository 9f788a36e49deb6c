//! What the configuration makes private (docs/security.md, "Private
//! files"): the paths under the root that confinement refuses for every
//! kind of read, as it refuses `axle.toml`: besides the `esql` databases'
//! directories (`esql.rs`), a location's `private = true` (its whole
//! prefix). And program files, the argv entries of a `command` provider
//! or a filter that name files under the root: never served (static,
//! passthru) unless a location with `serve-programs = true` covers them,
//! but read by the stage that runs them (a filter's script is also the
//! href of the PI that names it).

use std::path::{Path, PathBuf};

use super::format::{FileFormat, Section};
use super::validate::{Here, ValidSection};
use super::{ConfigError, SiteConfig};

/// Refuses a `private` that could not mean what it says.
pub(super) fn check_location(
    section: &Section,
    prefix: &str,
    here: &Here<'_>,
) -> Result<(), ConfigError> {
    match section.private {
        Some(false) => Err(here.err(
            "private",
            "true is the only value: a private prefix covers everything under it, and an inner section cannot open it again",
        )),
        Some(true) if prefix.trim_matches('/').is_empty() => Err(here.err(
            "private",
            "the whole root cannot be private (nothing would be served): mark a directory private",
        )),
        Some(true)
            if section
                .provider
                .as_ref()
                .is_some_and(|p| p.r#type != "files") =>
        {
            Err(here.err(
                "private",
                "a private location serves nothing, so it has no provider",
            ))
        }
        _ => Ok(()),
    }
}

/// `root` joined with a decoded URL prefix's segments (`..` and empty
/// segments dropped: a prefix names a place under the root).
fn under_root(root: &Path, decoded: &str) -> PathBuf {
    let mut path = root.to_path_buf();
    for segment in decoded.split('/') {
        if !segment.is_empty() && segment != "." && segment != ".." {
            path.push(segment);
        }
    }
    path
}

/// The paths of the `private = true` locations: each prefix under the
/// root as written and, when it exists, where it leads.
pub(super) fn location_paths(sections: &[ValidSection], root: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for section in sections.iter().filter(|s| s.raw.private == Some(true)) {
        let decoded = percent_encoding::percent_decode_str(&section.prefix).decode_utf8_lossy();
        let lexical = under_root(root, &decoded);
        if let Ok(canonical) = lexical.canonicalize() {
            if canonical != lexical {
                paths.push(canonical);
            }
        }
        paths.push(lexical);
    }
    paths
}

/// Every argv entry of a filter or a `command` provider, and every
/// `spawn` entry and `script` of a FastCGI source or filter, that names a
/// regular file under the root (canonical): the executable when it is a
/// file there (`./run.sh`), a script (`programs/live.py`), a data file
/// it is given.
pub(super) fn program_candidates(format: &FileFormat, root: &Path) -> Vec<PathBuf> {
    let filters = format.filter.values().map(|f| f.argv.as_slice());
    let providers = || format.location.values().filter_map(|s| s.provider.as_ref());
    let commands = providers()
        .filter(|p| p.r#type == "command")
        .filter_map(|p| p.argv.as_deref());
    // A FastCGI app's program and script (`live.php`) are programs too.
    let fastcgi_sources = providers()
        .filter(|p| p.r#type == "fastcgi")
        .flat_map(|p| p.spawn.iter().flatten().chain(p.script.iter()));
    let fastcgi_filters = format
        .filter
        .values()
        .filter_map(|f| f.fastcgi.as_ref())
        .flat_map(|f| f.spawn.iter().flatten().chain(f.script.iter()));
    filters
        .chain(commands)
        .flatten()
        .chain(fastcgi_sources)
        .chain(fastcgi_filters)
        .filter(|entry| !entry.is_empty())
        .filter_map(|entry| root.join(entry).canonicalize().ok())
        .filter(|path| path.starts_with(root) && path.is_file())
        .collect()
}

/// The program files that stay private: those no `serve-programs = true`
/// location covers.
pub(super) fn programs_not_served(
    site: &SiteConfig,
    candidates: Vec<PathBuf>,
    root: &Path,
) -> Vec<PathBuf> {
    candidates
        .into_iter()
        .filter(|path| {
            let Ok(inside) = path.strip_prefix(root) else {
                return true;
            };
            let url = format!("/{}", inside.to_string_lossy());
            !site.location(&url).serve_programs
        })
        .collect()
}
