//! The document root as confinement sees it: the root as configured (a
//! path that may be a symlink a deploy re-points), the canonical directory
//! it resolved to, and the private set (files and directories under it
//! that no read ever reaches). One [`RootState`] is in force at a time; a
//! reload swaps in a new one whole, so a read sees one root and one
//! private set, never a mix of two.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Canonical paths under the root that nothing reads through
/// confinement: the site configuration, `esql` database directories,
/// locations marked `private`, program files (docs/security.md, "Private
/// files"). A path is private when it is one of them or lies under one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrivateSet {
    paths: Vec<PathBuf>,
}

impl PrivateSet {
    /// No path (the free `confine` functions' set).
    pub const NONE: PrivateSet = PrivateSet { paths: Vec::new() };

    /// The set of these paths (absolute; canonical for what exists, so a
    /// link to them is recognised by its target).
    pub fn new(paths: impl IntoIterator<Item = PathBuf>) -> PrivateSet {
        // Normalized (no `//`, `/./` or trailing `/`), so that a plain
        // path's bytes start with one exactly when its components do.
        let mut paths: Vec<PathBuf> = paths
            .into_iter()
            .map(|p| p.components().collect())
            .collect();
        paths.sort();
        paths.dedup();
        PrivateSet { paths }
    }

    /// Is `path` one of the private paths, or under one?
    pub fn contains(&self, path: &Path) -> bool {
        if self.paths.is_empty() {
            return false;
        }
        let bytes = path.as_os_str().as_encoded_bytes();
        if !plain(bytes) {
            return self.paths.iter().any(|p| path.starts_with(p));
        }
        // Compared as bytes on a component boundary: `Path::starts_with`
        // walks components, and confinement asks twice for every file a
        // render names (27k instructions of an uncached three-stage render).
        self.paths.iter().any(|p| {
            let prefix = p.as_os_str().as_encoded_bytes();
            bytes.starts_with(prefix)
                && (bytes.len() == prefix.len()
                    || prefix.ends_with(b"/")
                    || bytes[prefix.len()] == b'/')
        })
    }

    /// The paths, sorted.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Nothing private (beyond `axle.toml`, refused by name everywhere).
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// Is `path` spelled as its components are (no `//`, `/./` or final
/// `/.`), so that comparing bytes compares components?
fn plain(path: &[u8]) -> bool {
    !path.ends_with(b"/.")
        && !path.windows(2).any(|w| w == b"//")
        && !path.windows(3).any(|w| w == b"/./")
}

/// One resolution of the document root.
#[derive(Debug)]
pub struct RootState {
    /// The root as given (`--root current`): what a reload resolves again.
    pub configured: PathBuf,
    /// Where it led when resolved (symlinks followed): the root every
    /// path is confined to.
    pub canonical: PathBuf,
    /// What no read reaches.
    pub private: PrivateSet,
}

/// The root in force, shared by every clone of a provider: a swap is seen
/// by all of them at once.
///
/// Each state is leaked when it is put in force (a few hundred bytes per
/// root change: a reload or a deploy's swap, never per request), so a
/// reader borrows it for as long as it likes with no lock held and no
/// count touched: `FileProvider::root` stays a plain `&Path`.
#[derive(Debug, Clone)]
pub(crate) struct SharedRoot(Arc<RwLock<&'static RootState>>);

impl SharedRoot {
    pub(crate) fn new(state: RootState) -> SharedRoot {
        SharedRoot(Arc::new(RwLock::new(Box::leak(Box::new(state)))))
    }

    /// The state in force now.
    pub(crate) fn get(&self) -> &'static RootState {
        match self.0.read() {
            Ok(s) => *s,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    /// Puts `state` in force; returns the one it replaced.
    pub(crate) fn set(&self, state: RootState) -> &'static RootState {
        let fresh: &'static RootState = Box::leak(Box::new(state));
        match self.0.write() {
            Ok(mut s) => std::mem::replace(&mut *s, fresh),
            Err(poisoned) => std::mem::replace(&mut *poisoned.into_inner(), fresh),
        }
    }
}

/// Resolves a configured root: canonical, and a directory.
pub fn resolve_root(configured: &Path) -> std::io::Result<PathBuf> {
    let root = configured.canonicalize().map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("document root {}: {e}", configured.display()),
        )
    })?;
    if !root.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("document root {} is not a directory", root.display()),
        ));
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_path_covers_what_lies_under_it_and_nothing_beside_it() {
        let set = PrivateSet::new([PathBuf::from("/srv/site/data"), PathBuf::from("/srv/a.py")]);
        assert!(set.contains(Path::new("/srv/site/data")));
        assert!(set.contains(Path::new("/srv/site/data/x.sqlite")));
        assert!(set.contains(Path::new("/srv/a.py")));
        // Components, not string prefixes.
        assert!(!set.contains(Path::new("/srv/site/database.xml")));
        assert!(!set.contains(Path::new("/srv/a.pyc")));
        assert!(!PrivateSet::default().contains(Path::new("/srv")));
        // Spellings that are the same components.
        assert!(set.contains(Path::new("/srv/site/data/")));
        assert!(set.contains(Path::new("/srv//site/./data/x")));
        assert!(set.contains(Path::new("/srv/site/data/.")));
        let spelled = PrivateSet::new([PathBuf::from("/srv//site/./data/")]);
        assert!(spelled.contains(Path::new("/srv/site/data/x.sqlite")));
        assert!(!spelled.contains(Path::new("/srv/site/database.xml")));
        assert!(PrivateSet::new([PathBuf::from("/")]).contains(Path::new("/srv")));
    }

    #[test]
    fn a_swap_is_seen_by_every_clone() {
        let state = |p: &str| RootState {
            configured: PathBuf::from("/srv/current"),
            canonical: PathBuf::from(p),
            private: PrivateSet::default(),
        };
        let a = SharedRoot::new(state("/srv/releases/1"));
        let b = a.clone();
        let old = a.get();
        let replaced = a.set(state("/srv/releases/2"));
        assert_eq!(replaced.canonical, old.canonical);
        assert_eq!(b.get().canonical, Path::new("/srv/releases/2"));
        // What a reader borrowed before the swap stays valid.
        assert_eq!(old.canonical, Path::new("/srv/releases/1"));
    }
}
