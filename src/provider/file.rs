//! The file-tree provider, and the resolver that lets libxml2/libxslt read
//! (only) files under the same root.

use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::confine::{confine_in, confine_optional_in, confine_url_in};
use super::root::{PrivateSet, RootState, SharedRoot, resolve_root};
use super::{
    ConfinedPath, Located, Provider, ProviderError, ResourceKind, Source, lexical_url_path,
};
use crate::cache::{ContentHash, Dep, Fingerprints};
use crate::ffi::{Loaded, Resolver};

/// Serves the files under a document root, never one of its private
/// paths. Clones share the root in force: [`FileProvider::set_root`] on
/// one is seen by all.
#[derive(Debug, Clone)]
pub struct FileProvider {
    state: SharedRoot,
    fingerprints: Fingerprints,
}

impl FileProvider {
    /// A provider for `root` (which must exist), hashing through `fingerprints`.
    pub fn new(root: &Path, fingerprints: Fingerprints) -> std::io::Result<Self> {
        let canonical = resolve_root(root)?;
        Ok(FileProvider {
            state: SharedRoot::new(RootState {
                configured: root.to_path_buf(),
                canonical,
                private: PrivateSet::default(),
            }),
            fingerprints,
        })
    }

    /// The canonical root (the one in force now).
    pub fn root(&self) -> &Path {
        &self.state.get().canonical
    }

    /// The root as configured (what [`resolve_root`] resolves again on a
    /// reload: a symlink a deploy re-points).
    pub fn configured_root(&self) -> &Path {
        &self.state.get().configured
    }

    /// The private set in force.
    pub fn private(&self) -> &PrivateSet {
        &self.state.get().private
    }

    /// Puts `canonical` (a resolution of the configured root) and its
    /// private set in force for every clone of this provider; returns the
    /// canonical root it replaced. Reads already under way finish with
    /// the root they started with.
    pub fn set_root(&self, canonical: std::path::PathBuf, private: PrivateSet) -> &Path {
        let configured = self.configured_root().to_path_buf();
        &self
            .state
            .set(RootState {
                configured,
                canonical,
                private,
            })
            .canonical
    }

    /// The shared hash memo.
    pub fn fingerprints(&self) -> &Fingerprints {
        &self.fingerprints
    }

    /// [`confine`](super::confine)s a URL path to this root (remembering
    /// canonical paths while they are watched).
    pub fn confine(&self, url_path: &str) -> Result<ConfinedPath, ProviderError> {
        let state = self.state.get();
        confine_in(
            &state.canonical,
            &state.private,
            url_path,
            &self.fingerprints,
        )
    }

    /// [`confine_optional`](super::confine_optional)s a URL path to this
    /// root: a path naming no file gives a missing [`ConfinedPath`].
    pub fn confine_optional(&self, url_path: &str) -> Result<ConfinedPath, ProviderError> {
        let state = self.state.get();
        confine_optional_in(
            &state.canonical,
            &state.private,
            url_path,
            &self.fingerprints,
        )
    }

    /// A resolver confined to this root that records what it reads.
    pub fn resolver(&self) -> Arc<RootResolver> {
        self.resolver_with(None)
    }

    /// The same, also answering `axle:` URIs through `internal`.
    pub fn resolver_with(&self, internal: Option<Arc<dyn InternalDocuments>>) -> Arc<RootResolver> {
        Arc::new(RootResolver {
            state: self.state.get(),
            fingerprints: self.fingerprints.clone(),
            deps: Mutex::new(Vec::new()),
            internal,
            internal_error: Mutex::new(None),
        })
    }
}

fn unreadable(path: &ConfinedPath, err: &std::io::Error) -> ProviderError {
    ProviderError::Unreadable {
        path: path.rel().to_string(),
        reason: err.kind().to_string(),
    }
}

impl Provider for FileProvider {
    fn locate(&self, url_path: &str) -> Result<Located, ProviderError> {
        let path = self.confine(url_path)?;
        let meta = std::fs::metadata(path.as_path()).map_err(|e| unreadable(&path, &e))?;
        if meta.is_dir() {
            return Ok(Located {
                path,
                kind: ResourceKind::Directory,
                hash: None,
            });
        }
        if !meta.is_file() {
            return Err(ProviderError::NotFound(url_path.to_string()));
        }
        let hash = self
            .fingerprints
            .hash(path.as_path())
            .map_err(|e| unreadable(&path, &e))?;
        Ok(Located {
            path,
            kind: ResourceKind::File,
            hash: Some(hash),
        })
    }

    fn read(&self, located: &Located) -> Result<Source, ProviderError> {
        let (bytes, hash) = self
            .fingerprints
            .read(located.path.as_path())
            .map_err(|e| unreadable(&located.path, &e))?;
        Ok(Source {
            path: located.path.clone(),
            bytes: Bytes::from(bytes),
            hash,
        })
    }
}

/// The [`Resolver`] given to libxml2/libxslt for one stage: it reads only
/// files under the root (no network, nothing outside, whatever the URL says)
/// and records each file read, with its content hash, as a dependency.
pub struct RootResolver {
    /// The root and private set in force when the stage began: one stage
    /// reads under one root, whatever a reload does meanwhile.
    state: &'static RootState,
    fingerprints: Fingerprints,
    deps: Mutex<Vec<Dep>>,
    internal: Option<Arc<dyn InternalDocuments>>,
    internal_error: Mutex<Option<String>>,
}

impl std::fmt::Debug for RootResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RootResolver")
            .field("root", &self.state.canonical)
            .finish_non_exhaustive()
    }
}

/// Renders `axle:/path.xml` URIs: another document's *transformed* output
/// (AxKit's `axkit:` scheme). Files the rendering reads must be recorded in
/// `deps` (the calling stage then depends on them).
pub trait InternalDocuments: Send + Sync {
    /// The output of the document at root-relative URL path `path`.
    fn render(&self, path: &str, deps: &RootResolver) -> Result<Vec<u8>, String>;
}

impl RootResolver {
    /// The files read so far, in order, without duplicates.
    pub fn take_deps(&self) -> Vec<Dep> {
        let mut deps = match self.deps.lock() {
            Ok(mut d) => std::mem::take(&mut *d),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        let mut seen = std::collections::HashSet::new();
        deps.retain(|d| seen.insert((d.path.clone(), d.via.clone())));
        deps
    }

    /// The first `axle:` document that failed during this stage, if any.
    pub fn take_internal_error(&self) -> Option<String> {
        self.internal_error.lock().ok().and_then(|mut e| e.take())
    }

    /// Records a dependency read elsewhere (e.g. a nested render's
    /// stylesheet closure).
    pub fn record(&self, dep: Dep) {
        if let Ok(mut deps) = self.deps.lock() {
            deps.push(dep);
        }
    }

    /// The shared hash memo.
    pub fn fingerprints(&self) -> &Fingerprints {
        &self.fingerprints
    }

    /// Reads a confined file and records it. A
    /// [missing](ConfinedPath::is_missing) path is never read through
    /// (a file may have appeared there since, even a link out of the root):
    /// `NotFound`.
    pub fn read_recorded(
        &self,
        path: &ConfinedPath,
    ) -> Result<(Vec<u8>, ContentHash), ProviderError> {
        // Whoever confined `path`, a private file is not read through here.
        if path.is_missing()
            || self.state.private.contains(path.as_path())
            || path
                .named()
                .is_some_and(|named| self.state.private.contains(named))
        {
            return Err(ProviderError::NotFound(path.rel().to_string()));
        }
        let (bytes, hash) = self
            .fingerprints
            .read(path.as_path())
            .map_err(|e| unreadable(path, &e))?;
        if let Ok(mut deps) = self.deps.lock() {
            deps.push(path.dep(hash));
        }
        Ok((bytes, hash))
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.state.canonical
    }

    /// Confines a URL path (percent-encoded, root-relative) to this
    /// resolver's root, its private paths refused.
    pub fn confine(&self, url_path: &str) -> Result<ConfinedPath, ProviderError> {
        confine_in(
            &self.state.canonical,
            &self.state.private,
            url_path,
            &self.fingerprints,
        )
    }

    /// Confines a load's URL (see [`confine_url`](super::confine_url)),
    /// its private paths refused.
    fn confine_url(&self, url: &str) -> Result<ConfinedPath, ProviderError> {
        confine_url_in(
            &self.state.canonical,
            &self.state.private,
            url,
            &self.fingerprints,
        )
    }
}

impl Resolver for RootResolver {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        if let Some(path) = url.strip_prefix(crate::ffi::INTERNAL_SCHEME) {
            let Some(internal) = &self.internal else {
                return Err(format!("{url}: axle: URIs are not available here"));
            };
            return match internal.render(path, self) {
                Ok(bytes) => Ok(Loaded {
                    url: url.to_string(),
                    bytes,
                }),
                Err(why) => {
                    // libxslt's document() would turn this into an empty
                    // node-set; the stage reports it instead.
                    if let Ok(mut first) = self.internal_error.lock() {
                        first.get_or_insert_with(|| why.clone());
                    }
                    Err(why)
                }
            };
        }
        let path = self.confine_url(url).map_err(|e| match e {
            ProviderError::Outside(_) => {
                "refused to load a file outside the document root".to_string()
            }
            ProviderError::NotFound(_) => {
                // The output depends on there being no file here (document()
                // gives an empty node-set, a DTD or an XInclude with a
                // fallback goes on without it): record that, so the output
                // goes stale when one appears.
                if let Some(path) = lexical_url_path(self.root(), url) {
                    self.record(Dep::absent(path));
                }
                format!("{} not found", display_rel(self.root(), url))
            }
            other => other.to_string(),
        })?;
        let (bytes, _) = self.read_recorded(&path).map_err(|e| e.to_string())?;
        Ok(Loaded {
            url: path.url().to_string(),
            bytes,
        })
    }

    fn unchanged(&self, url: &str, hash: &[u8; 32]) -> bool {
        if url.starts_with(crate::ffi::INTERNAL_SCHEME) {
            return false;
        }
        let Ok(path) = self.confine_url(url) else {
            return false;
        };
        match self.fingerprints.hash(path.as_path()) {
            Ok(now) if now.as_bytes() == hash => {
                self.record(path.dep(now));
                true
            }
            _ => false,
        }
    }
}

/// A URL shown root-relative when it lies under the root, else a neutral word.
fn display_rel(root: &Path, url: &str) -> String {
    let plain = url.strip_prefix("file://").unwrap_or(url);
    match Path::new(plain).strip_prefix(root) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => "a file".to_string(),
    }
}
