//! Runs a document through its chain, caching by mode. Knows nothing of HTTP.
//!
//! The flow for one request: locate the source (a stat; its content hash is
//! memoized) → its prolog (memoized by content hash) → the chain of stages
//! (`chain`) → each stage compiled and fresh (`compiled`) → then by mode:
//!
//! - `off`: run the chain;
//! - `all`: one key over the source hash, every stage's closure hash, the
//!   params and the document's URL; the final response is cached under it;
//! - `incremental`: stage *i*'s key covers its Language, closure hash,
//!   position (final or not), the params, the document's URL and the hash
//!   of its *input bytes*
//!   (the source, or stage *i-1*'s output), never the previous key. A stage
//!   recomputed with an unchanged output therefore leaves every later key
//!   unchanged: early cut-off.
//!
//! Hand-off: bytes are the truth. A stage's intermediate output is defined as
//! its serialization (plain XML; text for `method="text"`), and the next stage
//! sees what re-parsing those bytes gives. A tree is handed on directly only
//! when it is exactly that tree
//! ([`XmlDoc::is_faithful`](crate::ffi::XmlDoc::is_faithful)); otherwise it
//! is serialized and re-parsed. So every mode gives the same bytes. In
//! incremental mode such a tree is identified by the hash of its canonical
//! form, which stands for its bytes (equal forms serialize alike), and is
//! not serialized when the next stage is cut off.
//!
//! Where things are: `Pipeline` and the mode dispatch here; `keys` what
//! every key covers; `job` a chain on a transform thread; `incremental` the
//! incremental walk; `nested` `axle:` documents; `trace` trace files; `hot`
//! the hot memo; `compiled` the compiled-stage cache; `scan` prologs;
//! `error` and `response` what a render gives back.

mod admission;
mod compiled;
mod error;
mod hot;
pub use hot::HotHit;
mod incremental;
mod job;
mod keys;
mod nested;
mod repeats;
mod response;
mod scan;
mod stats;
mod trace;

pub use crate::ffi::Exceeded;
pub use compiled::{CompiledStage, CompiledSummary};
pub use error::PipelineError;
pub use response::{CacheStatus, DEFAULT_TYPE, RAW_XML_TYPE, Rendered, ResponseHead};
pub use stats::{Sharded, StageTime, Stats, VariantCounts, VariantStats};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::cache::{ContentHash, Dep, Fingerprints, HotMemo, Store, Tier};
use crate::chain::{self, Selection};
use crate::config::{CacheMode, RenderLimits, ServeConfig};
use crate::ffi::{self, Limits, XmlDoc};
use crate::language::Registry;
use crate::pool::Pool;
use crate::prolog::Prolog;
use crate::provider::{CachingProvider, FileProvider, Located, Provider, ProviderError, Source};
use admission::{Admission, RequestBudget};
use compiled::Compiled;
use hot::HotResponse;
use job::{ChainJob, FirstTree};
use repeats::Repeats;
use response::rendered;
use scan::scan_prolog;
use trace::trace_stem;

/// The document pipeline for one document root.
pub struct Pipeline {
    sources: CachingProvider<FileProvider>,
    files: FileProvider,
    registry: Registry,
    compiled: Arc<Compiled>,
    runtime: Option<tokio::runtime::Handle>,
    store: Store,
    prologs: moka::sync::Cache<ContentHash, Arc<Prolog>>,
    hot: HotMemo<HotResponse>,
    pool: Arc<Pool>,
    mode: CacheMode,
    freshness: crate::config::Freshness,
    limits: Limits,
    render_limits: RenderLimits,
    admission: Admission,
    force_byte_handoff: bool,
    stats: Arc<Stats>,
    /// Which produced sources repeat (incremental mode walks those only).
    repeats: Repeats,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("root", &self.files.root())
            .field("mode", &self.mode)
            .field("store", &self.store)
            .finish()
    }
}

/// One request's inputs.
#[derive(Debug, Clone, Default)]
pub struct RenderRequest {
    /// Stylesheet parameters: sorted by name, one value per name.
    pub params: Vec<(String, String)>,
    /// Chosen style and media.
    pub selection: Selection,
    /// Stages to use when the document's PIs name none (configured
    /// processors; `axle render --stylesheet`).
    pub processors: Vec<chain::Processor>,
    /// How `processors` combine with the PI chain.
    pub processor_order: chain::ProcessorOrder,
    /// The MIME type → Language map for this request (None: the
    /// pipeline's own).
    pub registry: Option<Arc<Registry>>,
    /// Hash of the configuration that governs this request (part of every
    /// key, so a config change never serves stale output).
    pub location: Option<ContentHash>,
    /// Process XInclude in the source before stage 1.
    pub xinclude: bool,
    /// `xsl:sort` as browsers sort (a location's `xsl-sort = "unicode"`).
    pub unicode_sort: bool,
    /// Write the source and every stage's output into this directory, the
    /// URL path mirrored as subdirectories (`/a/b.xml` → `a/b.xml.0`, `.1`,
    /// ...).
    pub trace: Option<PathBuf>,
    /// Compute without reading or writing the cache (a traced request).
    pub no_cache: bool,
    /// The style came from the client (query, cookie, path): if it selects
    /// nothing in the document, the response is computed but not cached, so
    /// `?style=<random>` cannot fill the cache (AxKit's guard).
    pub client_style: bool,
    /// The source is produced per request and may not be cached (a `post`
    /// or `command` source, or a dynamic Provider that says so): in `all`
    /// mode nothing is looked up or stored (`X-Axle-Cache: uncacheable`,
    /// AxKit's `no_cache`); in `incremental` mode the stages are keyed by
    /// the source's content hash as for any source, so a repeated source
    /// lets them hit, but the response is never a plain `hit` (the source
    /// itself was produced again: `partial N/N`). Never memoized.
    pub uncacheable_source: bool,
    /// For a generated source ([`Pipeline::render_generated`]): are its
    /// bytes the client's choice (a request body)? Then each distinct
    /// source is a variant of its URL for `max-per-url`, so one client
    /// cannot hold every thread with new bodies. Otherwise (a program's or
    /// an upstream's output, a directory listing) only the request's
    /// params, style and media make a variant, and concurrent requests of
    /// one URL share a turn however their sources differ.
    pub source_is_variant: bool,
    /// The HTTP request behind the render (None: none, or not told), for
    /// stages that read it ([`crate::language::RequestInfo`]); cookies
    /// they set are taken from it after the render.
    pub request: Option<Arc<crate::language::RequestInfo>>,
    /// For a generated source that is a client's document (a request
    /// body): the Languages its PIs may name (each a stylesheet file under
    /// the root; the location's processors run whatever they say). Such a
    /// document is parsed once, by libxml2 under [`RenderLimits::client`]
    /// ([`crate::ffi::XmlDoc::parse_untrusted`]): that parse gives the
    /// prolog the chain is chosen by and the tree the first stage
    /// transforms. None: not a client's document.
    pub client_document: Option<Arc<[String]>>,
}

impl RenderRequest {
    /// A request with these params (sorted; the last value of a name wins).
    pub fn with_params<I: IntoIterator<Item = (String, String)>>(params: I) -> Self {
        let map: std::collections::BTreeMap<String, String> = params.into_iter().collect();
        RenderRequest {
            params: map.into_iter().collect(),
            ..RenderRequest::default()
        }
    }
}

/// Directories watched at most in `watch` mode (inotify watches are a
/// per-user kernel resource, 8,192 by default on older kernels); responses
/// whose files lie beyond are checked by `stat`.
const MAX_WATCHED_DIRS: usize = 8192;

/// The watcher `config.freshness` asks for, if the system gives one.
/// A changed file is also forgotten by the stat memo, so a rewrite that
/// keeps size and (coarse) mtime is still re-read. In every mode, `off`
/// included: there it has no responses to vouch for, but it spares every
/// render a `realpath` per confined path (one `readlink` per component:
/// 27 for the three-stage trivial page) and a `stat` per file.
fn watcher(config: &ServeConfig, fingerprints: &Fingerprints) -> Option<crate::cache::Watcher> {
    if config.freshness != crate::config::Freshness::Watch {
        return None;
    }
    let fingerprints = fingerprints.clone();
    let forget = Box::new(move |path: &Path| fingerprints.forget(path));
    match crate::cache::Watcher::new(MAX_WATCHED_DIRS, Some(forget)) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch files; checking them by stat instead");
            None
        }
    }
}

/// The tiers below memory `config` asks for, in order: the disk tier
/// (`--cache-dir`), the shared tier (`--shared-cache`), then every
/// registered tier.
fn lower_tiers(config: &ServeConfig, root: &Path) -> std::io::Result<crate::cache::Tiers> {
    let mut tiers: Vec<Arc<dyn crate::cache::Cache>> = Vec::new();
    if let Some(dir) = &config.cache_dir {
        refuse_cache_dir_in_root(dir, root)?;
        tiers.push(Arc::new(crate::cache::DiskTier::open(
            dir,
            config.cache_dir_size,
        )));
    }
    if config.shared_cache.url.is_some() {
        let tier = crate::cache::RedisTier::open(&config.shared_cache)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        tiers.push(Arc::new(tier));
    }
    tiers.extend(config.tiers.0.iter().cloned());
    Ok(Arc::from(tiers))
}

/// A cache directory inside the document root would be served: its files
/// hold rendered pages and the absolute paths they came from.
fn refuse_cache_dir_in_root(dir: &Path, root: &Path) -> std::io::Result<()> {
    // Resolved through its nearest existing ancestor (it may not exist
    // yet; nothing is created before it is accepted).
    let mut absolute = PathBuf::new();
    for part in std::path::absolute(dir)?.components() {
        match part {
            std::path::Component::ParentDir => {
                absolute.pop();
            }
            std::path::Component::CurDir => {}
            other => absolute.push(other),
        }
    }
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    let base = loop {
        if let Ok(c) = existing.canonicalize() {
            break c;
        }
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            return Ok(());
        };
        rest.push(name);
        existing = parent;
    };
    let dir = rest.iter().rev().fold(base, |p, n| p.join(n));
    let Ok(root) = root.canonicalize() else {
        return Ok(());
    };
    if dir.starts_with(&root) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "--cache-dir {} is inside the document root {}, where its files could be \
                 served: choose a directory outside it",
                dir.display(),
                root.display()
            ),
        ));
    }
    Ok(())
}

/// A generated source on its way to a render: its bytes, and for a
/// client's document the prolog and tree its one parse gave.
struct Generated {
    source: Source,
    prolog: Option<Arc<Prolog>>,
    first: Option<Arc<FirstTree>>,
}

/// The share of `--cache-dir-size` the hot memo gets on top of its share
/// of `--cache-size` when there is a disk tier (see [`Pipeline::new`]).
const DISK_INDEX_SHARE: u64 = 32;

impl Pipeline {
    /// A pipeline over `config.root` with the given Languages.
    pub fn new(config: &ServeConfig, registry: Registry) -> std::io::Result<Pipeline> {
        ffi::init();
        // One memory budget (--cache-size) for everything that grows with
        // the site: 1/32 for source bytes, the hot-response memo (metadata
        // only: it refers to store entries for bodies) 1/16, the rest for
        // outputs. In incremental mode responses are found by their
        // all-or-nothing key, so intermediate outputs only serve early
        // cut-off after a change: a thirty-second of the outputs' share
        // holds them (they never crowd out responses), and 1/128 holds the
        // traces that cut-off follows (weighed at an estimated 160 bytes
        // each). The per-file memos are bounded in entries (10,000 files
        // and 5,000 prologs: about 12 MB measured; at 50,000 and 20,000
        // they were 57 MB of a 100,000-document site's RSS).
        let fingerprints = Fingerprints::new(10_000);
        let files = FileProvider::new(&config.root, fingerprints.clone())?;
        let size = config.cache_size;
        let incremental = config.cache_mode == CacheMode::Incremental;
        let source_budget = (size / 32).max(1 << 20);
        let hot_budget = (size / 16).max(1 << 20);
        let trace_budget = if incremental {
            (size / 128).max(1 << 20)
        } else {
            0
        };
        let outputs = size.saturating_sub(source_budget + hot_budget + trace_budget);
        // With a disk tier the memo is also its index: the heads of the
        // responses whose bodies are on disk, so a disk hit is a memo hit
        // and one file read, never the full path. It gets 1/32 of
        // --cache-dir-size on top (32 MiB per GiB), like nginx's keys_zone
        // beside its max_size.
        let hot_budget = match &config.cache_dir {
            Some(_) => hot_budget + config.cache_dir_size / DISK_INDEX_SHARE,
            None => hot_budget,
        };
        let intermediates = if incremental { outputs / 32 } else { 0 };
        let watcher = watcher(config, &fingerprints).map(Arc::new);
        let pool = Pool::with_window(config.workers, config.handoff_window)?;
        let lower = lower_tiers(config, files.root())?;
        let trust = config.freshness == crate::config::Freshness::Trust;
        if trust {
            fingerprints.trust();
        }
        if let Some(w) = &watcher {
            // Checks of sources, stylesheets and DTDs by watch, not stat.
            fingerprints.watch_with(w, files.root());
        }
        Ok(Pipeline {
            sources: CachingProvider::new(files.clone(), source_budget),
            files,
            registry,
            compiled: Arc::new(Compiled::new(4096, fingerprints.clone())),
            runtime: tokio::runtime::Handle::try_current().ok(),
            store: Store::new(outputs - intermediates, intermediates, fingerprints)
                .with_traces(trace_budget)
                .with_lower(lower)
                .trusting(trust),
            prologs: moka::sync::Cache::new(5_000),
            hot: HotMemo::new(hot_budget, watcher).trusting(trust),
            admission: Admission::new(&config.render, pool.size()),
            pool: Arc::new(pool),
            mode: config.cache_mode,
            freshness: config.freshness,
            limits: config.limits,
            render_limits: config.render,
            force_byte_handoff: config.force_byte_handoff,
            stats: Arc::new(Stats::default()),
            repeats: Repeats::default(),
        })
    }

    /// The source provider (confinement, static files).
    pub fn provider(&self) -> &FileProvider {
        &self.files
    }

    /// The cache mode.
    pub fn mode(&self) -> CacheMode {
        self.mode
    }

    /// The transform pool's threads, jobs waiting, and threads busy.
    pub fn pool_load(&self) -> (usize, usize, usize) {
        (self.pool.size(), self.pool.queued(), self.pool.busy())
    }

    /// Render results ever handed back in a batch (the hand-off window).
    pub fn pool_batched(&self) -> u64 {
        self.pool.batched()
    }

    /// Compiled stages held (stylesheets and other Languages' resources).
    pub async fn compiled_stages(&self) -> u64 {
        self.compiled.len().await
    }

    /// Every compiled stage held (the status page lists them).
    pub fn compiled_list(&self) -> Vec<CompiledSummary> {
        self.compiled.list()
    }

    /// How hits are checked.
    pub fn freshness(&self) -> crate::config::Freshness {
        self.freshness
    }

    /// Counters.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The output store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The deployment says files changed (SIGHUP under `--freshness
    /// trust`): every remembered file hash, memoized response and memory
    /// entry is forgotten; entries in lower tiers stay, checked as they
    /// are loaded.
    pub async fn files_changed(&self) {
        self.files.fingerprints().clear();
        self.hot.clear();
        self.store.clear_memory().await;
    }

    /// The provider's root now resolves elsewhere (a deploy re-pointed
    /// the link): nothing remembered by path or by URL is used again, so
    /// no response of the old release is served; entries stored by
    /// content hash stay (identical files keep hitting, every dependency
    /// still checked).
    pub fn root_changed(&self) {
        self.files.fingerprints().clear();
        self.files.fingerprints().rewatch(self.files.root());
        self.hot.clear();
    }

    /// Drops every stored response whose URL starts with `prefix` (all
    /// when None) from every tier, and forgets remembered file hashes and
    /// memoized responses (`axle cache purge`).
    pub async fn purge(&self, prefix: Option<&str>) -> crate::cache::Purged {
        self.files.fingerprints().clear();
        self.hot.clear();
        self.store.purge(prefix).await
    }

    /// Whether hits are believed with no check (`--freshness trust`).
    pub fn trusting(&self) -> bool {
        self.store.is_trusting()
    }

    /// Renders the document at `located` (a file from [`Provider::locate`]).
    pub async fn render(
        &self,
        located: &Located,
        req: &RenderRequest,
    ) -> Result<Rendered, PipelineError> {
        self.stats.renders.fetch_add(1, Ordering::Relaxed);
        let budget = RequestBudget::new(&self.render_limits);
        let variant = admission::variant(req);
        let _admitted = self.admission.admit(located.path.url(), variant).await?;
        let cancel = budget.cancel_on_drop();
        let rendered = self.render_retried(located, req, &budget).await;
        cancel.finished();
        if let Ok(r) = &rendered {
            self.stats.count(r.cache);
        }
        rendered
    }

    /// [`Pipeline::render`], admitted, under `budget`.
    async fn render_retried(
        &self,
        located: &Located,
        req: &RenderRequest,
        budget: &Arc<RequestBudget>,
    ) -> Result<Rendered, PipelineError> {
        let mut located = located.clone();
        // A source edited mid-request is re-located and rendered again, so
        // an entry is never stored under a hash its bytes do not have; and a
        // source found malformed is tried again if it changed meanwhile (an
        // editor saving it), so a save is not seen as a passing error.
        for _ in 0..3 {
            match self.render_once(&located, req, None, budget).await {
                Err(PipelineError::SourceChanged(_)) => {
                    located = self.files.locate(located.path.url())?;
                }
                Err(e @ PipelineError::Source { .. }) => {
                    let now = self.files.locate(located.path.url())?;
                    if now.hash == located.hash {
                        return Err(e);
                    }
                    located = now;
                }
                other => return other,
            }
        }
        Err(PipelineError::SourceChanged(located.path.rel().to_string()))
    }

    /// Renders a generated document (a directory listing, an error
    /// document) as if it were the file at `path`.
    pub async fn render_generated(
        &self,
        path: &crate::provider::ConfinedPath,
        bytes: Bytes,
        req: &RenderRequest,
    ) -> Result<Rendered, PipelineError> {
        // Handed to the render, not remembered: a generated document is
        // usually one-off (a dynamic source changes on every request), and
        // would only push real sources and prologs out of their memos.
        let hash = ContentHash::of(&bytes);
        let source = Source {
            path: path.clone(),
            bytes,
            hash,
        };
        let located = Located {
            path: path.clone(),
            kind: crate::provider::ResourceKind::File,
            hash: Some(hash),
        };
        let budget = RequestBudget::new(&self.render_limits);
        let mut variant = admission::variant(req);
        if req.source_is_variant {
            let mut first = [0u8; 8];
            first.copy_from_slice(&hash.as_bytes()[..8]);
            variant ^= u64::from_le_bytes(first);
        }
        let _admitted = self.admission.admit(located.path.url(), variant).await?;
        let cancel = budget.cancel_on_drop();
        let generated = if req.client_document.is_some() {
            let limits = self.render_limits.client;
            self.parse_client_document(source, limits, &budget).await
        } else {
            Ok(Generated {
                source,
                prolog: None,
                first: None,
            })
        };
        let first = generated
            .as_ref()
            .ok()
            .and_then(|g| g.first.as_ref().map(Arc::clone));
        let rendered = match generated {
            Ok(generated) => {
                self.render_once(&located, req, Some(generated), &budget)
                    .await
            }
            Err(e) => Err(e),
        };
        if let Some(tree) = first.and_then(|f| f.take()) {
            // Not needed (the first stage's output was stored): freed
            // where it was made.
            self.pool.drop_on_pool(tree);
        }
        cancel.finished();
        if let Ok(r) = &rendered {
            self.stats.count(r.cache);
        }
        rendered
    }

    /// Parses a client's document once, on a transform thread inside the
    /// request's budget, under `limits`: its prolog (read from the tree)
    /// and the tree the first stage will take.
    async fn parse_client_document(
        &self,
        source: Source,
        limits: crate::ffi::UntrustedLimits,
        budget: &Arc<RequestBudget>,
    ) -> Result<Generated, PipelineError> {
        let source = self.within_size(source)?;
        let bytes = source.bytes.clone();
        let url = source.path.url().to_string();
        let document = source.path.rel().to_string();
        let budget = Arc::clone(budget);
        let (prolog, tree) = self
            .pool
            .run(move || {
                let scope = budget.enter()?;
                let tree = XmlDoc::parse_untrusted(&bytes, &url, &limits)
                    .map_err(|refusal| scope.explain(PipelineError::refused(document, refusal)))?;
                let prolog = scan::prolog_of_tree(&tree);
                Ok::<_, PipelineError>((prolog, tree))
            })
            .await??;
        Ok(Generated {
            source,
            prolog: Some(Arc::new(prolog)),
            first: Some(Arc::new(FirstTree::new(tree))),
        })
    }

    /// The prolog of a source, memoized by content hash.
    fn prolog(&self, located: &Located) -> Result<(Arc<Prolog>, Option<Source>), PipelineError> {
        if let Some(p) = located.hash.and_then(|h| self.prologs.get(&h)) {
            return Ok((p, None));
        }
        let source = self.read_within_size(located)?;
        let prolog = Arc::new(scan_prolog(&source)?);
        self.prologs.insert(source.hash, Arc::clone(&prolog));
        Ok((prolog, Some(source)))
    }

    /// The source's bytes, checked against the hash the keys were built from.
    fn source_for(&self, located: &Located, hash: ContentHash) -> Result<Source, PipelineError> {
        let source = self.read_within_size(located)?;
        if source.hash != hash {
            return Err(PipelineError::SourceChanged(located.path.rel().to_string()));
        }
        Ok(source)
    }

    /// The source at `located`, unless its file is larger than
    /// `max-source-size` (checked before it is read: a file too large to
    /// render is not read into memory either).
    fn read_within_size(&self, located: &Located) -> Result<Source, PipelineError> {
        let max = self.render_limits.max_source_bytes;
        let stamp = self
            .files
            .fingerprints()
            .current_stamp(located.path.as_path());
        if let Ok(len) = stamp.map(|s| s.size())
            && len > max
        {
            return Err(PipelineError::Limit(format!(
                "{} is {len} bytes, more than max-source-size ({max} bytes)",
                located.path.rel(),
            )));
        }
        self.within_size(self.sources.read(located)?)
    }

    /// `source`, unless it is larger than `max-source-size`.
    fn within_size(&self, source: Source) -> Result<Source, PipelineError> {
        let max = self.render_limits.max_source_bytes;
        if source.bytes.len() as u64 > max {
            return Err(PipelineError::Limit(format!(
                "{} is {} bytes, more than max-source-size ({max} bytes)",
                source.path.rel(),
                source.bytes.len()
            )));
        }
        Ok(source)
    }

    /// One render of `located`; `generated` is its source when it is not a
    /// file (read once here, never from the source memo).
    async fn render_once(
        &self,
        located: &Located,
        req: &RenderRequest,
        generated: Option<Generated>,
        budget: &Arc<RequestBudget>,
    ) -> Result<Rendered, PipelineError> {
        let from_file = generated.is_none();
        let mut rendered = self.render_inner(located, req, generated, budget).await?;
        // Mode-independent, so `off`, `all` and `incremental` send the same
        // headers: the newest file it came from (its source, the stages'
        // files, what they read), for a document made of files only.
        if from_file && !rendered.uncacheable && !rendered.undated {
            rendered.last_modified = newest(
                self.files.fingerprints(),
                std::iter::once(located.path.as_path()).chain(
                    rendered
                        .sources
                        .iter()
                        .flat_map(|s| s.iter())
                        .map(|d| d.path.as_path()),
                ),
            );
        }
        rendered.sources = None;
        Ok(rendered)
    }

    /// [`Pipeline::render_once`] without the response's dates.
    async fn render_inner(
        &self,
        located: &Located,
        req: &RenderRequest,
        generated: Option<Generated>,
        budget: &Arc<RequestBudget>,
    ) -> Result<Rendered, PipelineError> {
        let mut first_tree = None;
        let (prolog, mut source) = match generated {
            Some(Generated {
                source,
                prolog: Some(prolog),
                first,
            }) => {
                first_tree = first;
                (prolog, Some(source))
            }
            Some(Generated { source, .. }) => {
                let source = self.within_size(source)?;
                (Arc::new(scan_prolog(&source)?), Some(source))
            }
            None => self.prolog(located)?,
        };
        let source_hash = match (&source, located.hash) {
            (Some(s), _) => s.hash,
            (None, Some(h)) => h,
            (None, None) => {
                return Err(ProviderError::NotFound(located.path.rel().to_string()).into());
            }
        };
        let registry = req.registry.as_deref().unwrap_or(&self.registry);
        if let Some(allowed) = &req.client_document {
            if let Some(reason) = chain::client_choice_refused(
                &prolog,
                &req.selection,
                req.processor_order,
                registry,
                allowed,
            ) {
                return Err(PipelineError::Refused {
                    document: located.path.rel().to_string(),
                    reason,
                });
            }
        }
        let specs = chain::select(
            &prolog,
            located.path.url(),
            &self.files,
            registry,
            &req.selection,
            &req.processors,
            req.processor_order,
        )?;
        if specs.len() > self.render_limits.max_chain {
            return Err(PipelineError::Limit(format!(
                "{} names a chain of {} stages, more than max-chain ({})",
                located.path.rel(),
                specs.len(),
                self.render_limits.max_chain
            )));
        }
        if specs.is_empty() {
            let source = match source.take() {
                Some(s) => s,
                None => self.source_for(located, source_hash)?,
            };
            let validators = Some(Arc::from(vec![located.path.dep(source.hash)]));
            return Ok(Rendered {
                hash: source.hash,
                body: source.bytes,
                content_type: Arc::from(RAW_XML_TYPE),
                cache: CacheStatus::Untransformed,
                validators,
                stored: None,
                head: None,
                variants: Some(Arc::default()),
                uncacheable: req.uncacheable_source,
                last_modified: None,
                sources: None,
                undated: false,
            });
        }
        let mut stages = Vec::with_capacity(specs.len());
        for spec in &specs {
            stages.push(
                self.compiled
                    .get(spec, &self.files, &self.pool, &self.stats)
                    .await?,
            );
        }
        let mut validators = vec![located.path.dep(source_hash)];
        for stage in &stages {
            validators.extend(stage.files.iter().cloned());
        }
        let stage_files: Vec<Dep> = validators[1..].to_vec();
        let stages: Arc<[Arc<CompiledStage>]> = stages.into();
        let job = ChainJob {
            varies: varies_of(&stages, req.request.as_deref()),
            stages,
            params: Arc::from(req.params.clone()),
            base_url: Arc::from(located.path.url()),
            limits: self.limits,
            force_byte_handoff: self.force_byte_handoff,
            files: self.files.clone(),
            stats: Arc::clone(&self.stats),
            location: req.location,
            xinclude: req.xinclude,
            unicode_sort: req.unicode_sort,
            trace: req
                .trace
                .as_ref()
                .and_then(|dir| trace_stem(dir, located.path.url())),
            internal: Some(self.internal_documents()),
            prolog: Some(Arc::clone(&prolog)),
            budget: Arc::clone(budget),
            request: req.request.clone(),
            untrusted: req
                .client_document
                .as_ref()
                .map(|_| self.render_limits.client),
            first_tree,
        };
        // A stage keyed by more than its input and params (a time slice,
        // request values): never memoized by URL, not dated by its files.
        let varies = job.varies.iter().any(Option::is_some);
        // AxKit's guard: a style the client asked for that selects nothing
        // (no PI title, no style-limited processor) is rendered without
        // touching the cache, so `?style=<random>` cannot fill it.
        let idle_style = req.client_style
            && req.selection.style.as_deref().is_some_and(|style| {
                !chain::style_selects_something(&prolog, style)
                    && !req.processors.iter().any(|p| {
                        p.when
                            .style
                            .as_deref()
                            .is_some_and(|s| s.eq_ignore_ascii_case(style))
                    })
            });
        // A stage that may not be cached (a filter that asks a database)
        // or a source produced per request: `all` mode cannot store the
        // response, and nothing of it is memoized.
        let uncacheable = req.uncacheable_source || job.stages.iter().any(|s| !s.stage.cacheable());
        let mode = if req.no_cache || idle_style || req.trace.is_some() {
            CacheMode::Off
        } else {
            self.mode
        };
        // What the cache may do for this render: run it (`off`, or `all`
        // with something uncacheable in it), look up one response key
        // (`all`), or walk the stages (`incremental`).
        let run_only = match (mode, uncacheable) {
            (CacheMode::Off, _) => Some(CacheStatus::Miss),
            (CacheMode::All, true) => Some(CacheStatus::Uncacheable),
            _ => None,
        };
        if let Some(status) = run_only {
            let source = match source {
                Some(s) => s,
                None => self.source_for(located, source_hash)?,
            };
            let entry = self.pool.run(move || job.run_all(source.bytes)).await??;
            let mut out = rendered(&entry, status, None);
            out.uncacheable = uncacheable;
            out.sources = Some(files_of(&stage_files, &entry));
            out.undated = varies;
            return Ok(out);
        }
        match mode {
            CacheMode::Off => Err(PipelineError::Limit(
                "internal: cache mode off reached the cached path".into(),
            )),
            CacheMode::All => {
                let key = job.response_key(source_hash);
                let run = |job: ChainJob, source: Option<Source>| async move {
                    let source = match source {
                        Some(s) => s,
                        None => self.source_for(located, source_hash)?,
                    };
                    self.pool
                        .run(move || job.run_all(source.bytes).map(Arc::new))
                        .await?
                };
                let got = self
                    .store
                    .get_or_compute(key, Tier::Final, run(job.clone(), source.clone()))
                    .await
                    .map_err(|e| (*e).clone())?;
                let (entry, status) = match got {
                    Some((entry, found)) => (entry, CacheStatus::of_found(found)),
                    None => {
                        // What was computed read a file that changed
                        // since (shared work that began before an edit):
                        // computed again for this request, uncoalesced,
                        // and stored only if nothing changed meanwhile.
                        let entry = run(job, source).await?;
                        if self.store.holds(&entry) {
                            self.store
                                .insert(key, Tier::Final, Arc::clone(&entry))
                                .await;
                        }
                        (entry, CacheStatus::Miss)
                    }
                };
                validators.extend(entry.deps.iter().cloned());
                let mut out = rendered(&entry, status, Some(key));
                out.sources = Some(Arc::from(&validators[1..]));
                out.validators = (!varies).then(|| Arc::from(validators));
                out.undated = varies;
                Ok(out)
            }
            CacheMode::Incremental => {
                // A produced source observed never to repeat is not walked
                // (`repeats`).
                let observed =
                    req.uncacheable_source && !job.stages.iter().any(|s| !s.stage.cacheable());
                let lean = observed && self.repeats.lean(&job.base_url, source_hash);
                let url = observed.then(|| Arc::clone(&job.base_url));
                let mut out = self
                    .render_incremental(
                        job,
                        located,
                        source,
                        source_hash,
                        &mut validators,
                        req.uncacheable_source,
                        lean,
                    )
                    .await?;
                if let Some(url) = url {
                    let reused = out.cache != CacheStatus::Miss;
                    self.repeats.walked(&url, source_hash, reused);
                }
                if req.uncacheable_source && out.cache.is_hit() {
                    // Every stage was reused, but the source was produced
                    // again for this request.
                    let total = specs.len();
                    out.cache = CacheStatus::Partial {
                        reused: total,
                        total,
                    };
                }
                out.uncacheable = uncacheable;
                out.sources = Some(Arc::from(&validators[1..]));
                out.validators = (!uncacheable && !varies).then(|| Arc::from(validators));
                out.undated = varies;
                Ok(out)
            }
        }
    }
}

/// What each stage says of `request` for its key (`Stage::varies`).
pub(super) fn varies_of(
    stages: &[Arc<CompiledStage>],
    request: Option<&crate::language::RequestInfo>,
) -> Arc<[Option<Vec<u8>>]> {
    stages.iter().map(|s| s.stage.varies(request)).collect()
}

/// The files a run-only response came from: its stages' files and what
/// they read.
fn files_of(stage_files: &[Dep], entry: &crate::cache::Entry) -> Arc<[Dep]> {
    stage_files
        .iter()
        .chain(entry.deps.iter())
        .cloned()
        .collect()
}

/// The latest modification time of `paths` that exist (an absent
/// dependency has none); None when none does. Each from
/// [`Fingerprints::current_stamp`]: no `stat` for a file the watcher
/// vouches for (four a request of the article, before).
fn newest<'a>(
    fingerprints: &Fingerprints,
    paths: impl Iterator<Item = &'a Path>,
) -> Option<std::time::SystemTime> {
    paths
        .filter_map(|p| fingerprints.current_stamp(p).ok()?.modified())
        .max()
}

#[cfg(test)]
mod tests;
