//! Compiled stages, cached by (Language, resource path) and checked for
//! freshness on every use: one `stat` per file of the stage's closure (the
//! stylesheet and everything it imported, included or loaded as a DTD or
//! entity while compiling). A changed file means a recompile. A Language
//! whose resource is optional (a filter) may name no file: it is compiled
//! without one, and the file's absence is part of its closure.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{PipelineError, Stats};
use crate::cache::{ContentHash, Dep, Fingerprints, KeyBuilder};
use crate::chain::StageSpec;
use crate::language::{Resource, Stage};
use crate::pool::Pool;
use crate::provider::{FileProvider, RootResolver};

/// A compiled stage and the content it was compiled from.
pub struct CompiledStage {
    /// The runnable stage.
    pub stage: Arc<dyn Stage>,
    /// Hash over the Language (name and version) and every file of the
    /// closure: the stage's identity in cache keys.
    pub closure: ContentHash,
    /// The closure's files with the hashes they had.
    pub files: Vec<Dep>,
    /// The resource's root-relative path (for messages).
    pub rel: String,
    /// The name of the Language that runs it (stage times are kept by it).
    pub language: Arc<str>,
}

impl std::fmt::Debug for CompiledStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledStage")
            .field("rel", &self.rel)
            .field("closure", &self.closure)
            .finish()
    }
}

/// A compiled stage's cache key: its Language (name and configuration),
/// its resource and the embedded stylesheet's ID.
type Slot = (String, Option<ContentHash>, PathBuf, Option<String>);

fn slot(spec: &StageSpec) -> Slot {
    (
        spec.language.name().to_string(),
        spec.language.config_hash(),
        spec.resource.as_path().to_path_buf(),
        spec.fragment.clone(),
    )
}

/// The compiled-stage cache.
pub(crate) struct Compiled {
    /// foldhash, seeded per process: a slot's path hashes one write per
    /// component, and every stage of every render looks its slot up.
    cache: moka::future::Cache<Slot, Arc<CompiledStage>, foldhash::quality::RandomState>,
    fingerprints: Fingerprints,
}

/// A compiled stage as the admin listener lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CompiledSummary {
    /// The resource's root-relative path (empty for a filter without one).
    pub path: String,
    /// The Language that runs it.
    pub language: String,
    /// Files in its closure (the resource and all it imported, included or
    /// loaded while compiling).
    pub files: usize,
    /// The first bytes of its closure hash, in hex (its identity in keys).
    pub closure: String,
}

impl Compiled {
    /// Every compiled stage held, by path then Language.
    pub(crate) fn list(&self) -> Vec<CompiledSummary> {
        let mut all: Vec<CompiledSummary> = self
            .cache
            .iter()
            .map(|(_, c)| CompiledSummary {
                path: c.rel.clone(),
                language: c.language.to_string(),
                files: c.files.len(),
                closure: c.closure.hex(8),
            })
            .collect();
        all.sort_by(|a, b| (&a.path, &a.language).cmp(&(&b.path, &b.language)));
        all
    }

    /// Compiled stages held (pending maintenance run first, so the count
    /// is current).
    pub(crate) async fn len(&self) -> u64 {
        self.cache.run_pending_tasks().await;
        self.cache.entry_count()
    }

    pub(crate) fn new(capacity: u64, fingerprints: Fingerprints) -> Self {
        Compiled {
            cache: moka::future::Cache::builder()
                .max_capacity(capacity)
                .build_with_hasher(foldhash::quality::RandomState::default()),
            fingerprints,
        }
    }

    fn is_fresh(&self, c: &CompiledStage) -> bool {
        c.files.iter().all(|d| d.unchanged(&self.fingerprints))
    }

    /// The compiled stage for `spec`, compiling on the pool when missing or
    /// stale; concurrent requests for one stage compile it once, unless a
    /// file it read changed before the shared compile finished.
    pub(crate) async fn get(
        &self,
        spec: &StageSpec,
        files: &FileProvider,
        pool: &Arc<Pool>,
        stats: &Arc<Stats>,
    ) -> Result<Arc<CompiledStage>, PipelineError> {
        let key = slot(spec);
        if let Some(c) = self.cache.get(&key).await {
            if self.is_fresh(&c) {
                return Ok(c);
            }
            self.cache.invalidate(&key).await;
        }
        let run = || {
            let (spec, files, pool, stats) = (
                spec.clone(),
                files.clone(),
                Arc::clone(pool),
                Arc::clone(stats),
            );
            async move {
                pool.run(move || compile(&spec, &files, &stats))
                    .await
                    .map_err(PipelineError::from)?
            }
        };
        let compiled = self
            .cache
            .try_get_with(key.clone(), run())
            .await
            .map_err(|e| (*e).clone())?;
        if self.is_fresh(&compiled) {
            return Ok(compiled);
        }
        // A file of the closure changed after the compile read it: shared
        // work that began before an edit this request saw, or a file read
        // while it was being written. Compiled again for this request,
        // uncoalesced; kept only if nothing changed meanwhile.
        self.cache.invalidate(&key).await;
        let again = run().await?;
        if self.is_fresh(&again) {
            self.cache.insert(key, Arc::clone(&again)).await;
        }
        Ok(again)
    }
}

impl Compiled {
    /// The same as [`Compiled::get`] from a transform thread (for `axle:`
    /// documents rendered inside a transform): compiles inline on a miss,
    /// never waiting for the pool, which may be busy with the caller.
    pub(crate) fn get_blocking(
        &self,
        spec: &StageSpec,
        files: &FileProvider,
        stats: &Stats,
        runtime: Option<&tokio::runtime::Handle>,
    ) -> Result<Arc<CompiledStage>, PipelineError> {
        let key = slot(spec);
        if let Some(rt) = runtime {
            if let Some(c) = rt.block_on(self.cache.get(&key)) {
                if self.is_fresh(&c) {
                    return Ok(c);
                }
            }
        }
        let compiled = compile(spec, files, stats)?;
        if let Some(rt) = runtime {
            rt.block_on(self.cache.insert(key, Arc::clone(&compiled)));
        }
        Ok(compiled)
    }
}

/// How often a compile that failed while one of its files was being
/// rewritten is tried again.
const COMPILE_ATTEMPTS: usize = 3;

/// Compiles `spec`. An editor that saves by truncating and rewriting can let
/// a compile read a half-written file; when a compile fails and one of the
/// files it read has changed 10 ms later, it is tried again, so a save shows
/// as the new version rather than as a passing error.
fn compile(
    spec: &StageSpec,
    files: &FileProvider,
    stats: &Stats,
) -> Result<Arc<CompiledStage>, PipelineError> {
    let mut attempt = 1;
    loop {
        let resolver = files.resolver();
        match compile_once(spec, files, stats, &resolver) {
            Err(e) if attempt < COMPILE_ATTEMPTS => {
                // Give a writer that truncated the file time to finish.
                std::thread::sleep(std::time::Duration::from_millis(10 * attempt as u64));
                if !changed_since_read(&resolver, files) {
                    return Err(e);
                }
                tracing::debug!(error = %e, attempt, "a file changed during compilation; retrying");
                attempt += 1;
            }
            other => return other,
        }
    }
}

fn changed_since_read(resolver: &RootResolver, files: &FileProvider) -> bool {
    resolver
        .take_deps()
        .iter()
        .any(|d| !d.unchanged(files.fingerprints()))
}

fn compile_once(
    spec: &StageSpec,
    files: &FileProvider,
    stats: &Stats,
    resolver: &Arc<RootResolver>,
) -> Result<Arc<CompiledStage>, PipelineError> {
    stats.compiles.fetch_add(1, Ordering::Relaxed);
    let rel = match &spec.fragment {
        Some(id) => format!("{}#{id}", spec.resource.rel()),
        None => spec.resource.rel().to_string(),
    };
    let optional = spec.language.resource_optional();
    let bytes = if optional && spec.resource.is_missing() {
        // The href names no file: the stage depends on there being none
        // (one appearing means a recompile).
        resolver.record(Dep::absent(spec.resource.as_path().to_path_buf()));
        None
    } else if optional && spec.resource.as_path().is_dir() {
        // A directory (`href="/"`): no file to read, none to record.
        None
    } else {
        let (bytes, _) = resolver.read_recorded(&spec.resource).map_err(|_| {
            PipelineError::Chain(crate::chain::ChainError::Missing {
                href: spec.href.clone(),
                document: rel.clone(),
            })
        })?;
        Some(bytes)
    };
    let resource = Resource {
        path: spec.resource.as_path(),
        url: spec.resource.url(),
        fragment: spec.fragment.as_deref(),
        bytes: bytes.as_deref().unwrap_or_default(),
        resolver,
        missing: bytes.is_none(),
    };
    let stage = spec
        .language
        .compile(&resource)
        .map_err(|error| PipelineError::Compile {
            stylesheet: rel.clone(),
            error,
        })?;
    let deps = resolver.take_deps();
    // The stage's identity: its Language (and that instance's
    // configuration), which stylesheet of which file (two embedded
    // stylesheets, `#a` and `#b`, share every file), and every file the
    // compile read, as read (or found absent).
    let mut key = KeyBuilder::new("closure");
    key.str(spec.language.name())
        .u64(u64::from(spec.language.version()));
    match spec.language.config_hash() {
        Some(config) => key.u64(1).hash(&config),
        None => key.u64(0),
    };
    key.str(spec.resource.url())
        .u64(u64::from(spec.fragment.is_some()))
        .str(spec.fragment.as_deref().unwrap_or(""));
    for d in &deps {
        let rel_path = d.path.strip_prefix(files.root()).unwrap_or(&d.path);
        key.str(&rel_path.to_string_lossy()).hash(&d.hash);
    }
    tracing::debug!(stylesheet = %rel, files = deps.len(), "compiled");
    Ok(Arc::new(CompiledStage {
        stage,
        closure: key.finish_hash(),
        files: deps,
        rel,
        language: Arc::from(spec.language.name()),
    }))
}
