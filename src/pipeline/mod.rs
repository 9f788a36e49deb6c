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
//! when it is exactly that tree ([`XmlDoc::is_faithful`]); otherwise it is
//! serialized and re-parsed. So every mode gives the same bytes. In
//! incremental mode such a tree is identified by the hash of its canonical
//! form, which stands for its bytes (equal forms serialize alike), and is
//! not serialized when the next stage is cut off.

mod compiled;

pub use compiled::CompiledStage;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use bytes::Bytes;
use http::HeaderValue;

use crate::cache::{
    ContentHash, Dep, Entry, FieldKey, FieldKeyBuilder, Fingerprints, HotMemo, Key, KeyBuilder,
    Stamp, Store, Tier,
};
use crate::chain::{self, ChainError, Selection};
use crate::config::{CacheMode, ServeConfig};
use crate::ffi::{self, Limits, XmlDoc, XmlError};
use crate::language::{LanguageError, Registry, StageContext, StageData};
use crate::pool::{Pool, PoolError};
use crate::prolog::{self, Doctype, Prolog, RootName};
use crate::provider::{
    CachingProvider, FileProvider, InternalDocuments, Located, Provider, ProviderError,
    RootResolver, Source,
};
use compiled::Compiled;

/// Content-Type of a document served without any stage.
pub const RAW_XML_TYPE: &str = "text/xml";

/// Why a document could not be rendered.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PipelineError {
    /// The source could not be located or read.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The chain names a stylesheet that is missing or not allowed.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// The source document is not well-formed.
    #[error("{document} is not well-formed XML: {error}")]
    Source {
        /// Root-relative path.
        document: String,
        /// The parser's report.
        error: XmlError,
    },
    /// A stage's resource (stylesheet) does not compile.
    #[error("{stylesheet} cannot be used: {error}")]
    Compile {
        /// Root-relative path of the stylesheet.
        stylesheet: String,
        /// Why.
        error: LanguageError,
    },
    /// A stage failed while running.
    #[error("stage {stage} ({stylesheet}) failed: {error}")]
    Stage {
        /// 1-based stage number.
        stage: usize,
        /// Root-relative path of its stylesheet.
        stylesheet: String,
        /// Why.
        error: LanguageError,
    },
    /// The transform pool failed (a panic: a bug).
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// The source changed while it was being rendered (retried internally).
    #[error("{0} changed while it was being rendered")]
    SourceChanged(String),
}

/// How much of a response came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    /// Nothing computed.
    Hit,
    /// Everything computed.
    Miss,
    /// Incremental mode: `reused` of `total` stages came from the cache.
    Partial {
        /// Stages reused.
        reused: usize,
        /// Stages in the chain.
        total: usize,
    },
    /// The document has no stages: served as it is.
    Untransformed,
}

impl CacheStatus {
    /// What the cache did for a chain of `total` stages of which `reused`
    /// were found rather than run.
    fn of_reused(reused: usize, total: usize) -> CacheStatus {
        match reused {
            0 => CacheStatus::Miss,
            n if n == total => CacheStatus::Hit,
            n => CacheStatus::Partial { reused: n, total },
        }
    }

    /// The `X-Axle-Cache` header value.
    pub fn header_value(&self) -> String {
        match self {
            CacheStatus::Hit => "hit".into(),
            CacheStatus::Miss => "miss".into(),
            CacheStatus::Partial { reused, total } => format!("partial {reused}/{total}"),
            CacheStatus::Untransformed => "none".into(),
        }
    }
}

/// A rendered document.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The response body.
    pub body: Bytes,
    /// Its hash (the ETag).
    pub hash: ContentHash,
    /// The Content-Type.
    pub content_type: Arc<str>,
    /// What the cache did.
    pub cache: CacheStatus,
    /// Every file the response was computed from, with the hash used (the
    /// source first); None when the response must not be memoized.
    pub validators: Option<Arc<[Dep]>>,
    /// The output-store key that holds `body`, when one does: the hot memo
    /// then keeps only this key, so a body is weighed once, by the store.
    pub stored: Option<Key>,
    /// Header values built once when the response was memoized (a hot-memo
    /// hit has them; a fresh render has none).
    pub head: Option<ResponseHead>,
}

/// The header values every response of a memoized render carries, built
/// and validated once for all its hits.
#[derive(Debug, Clone)]
pub struct ResponseHead {
    /// `Content-Type`.
    pub content_type: HeaderValue,
    /// `ETag` (of `hash`).
    pub etag: HeaderValue,
    /// The same two as HTTP/1.1 header lines, `etag` first:
    /// `etag: …\r\ncontent-type: …\r\n` (a 304 sends `..etag_end`).
    pub lines: Bytes,
    /// Where the `etag` line ends in `lines`.
    pub etag_end: usize,
}

impl ResponseHead {
    /// The head of `rendered` (a content type that is not a valid header
    /// value is sent as `application/octet-stream`).
    pub fn of(rendered: &Rendered) -> ResponseHead {
        let etag = rendered.hash.etag_bytes();
        let content_type = HeaderValue::from_str(&rendered.content_type)
            .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
        let etag =
            HeaderValue::from_bytes(&etag).unwrap_or_else(|_| HeaderValue::from_static("\"\""));
        // Validated header values, so the lines cannot be split.
        let mut lines = Vec::with_capacity(64 + content_type.len());
        lines.extend_from_slice(b"etag: ");
        lines.extend_from_slice(etag.as_bytes());
        lines.extend_from_slice(b"\r\n");
        let etag_end = lines.len();
        lines.extend_from_slice(b"content-type: ");
        lines.extend_from_slice(content_type.as_bytes());
        lines.extend_from_slice(b"\r\n");
        ResponseHead {
            content_type,
            etag,
            lines: Bytes::from(lines),
            etag_end,
        }
    }
}

/// Counters, for tests, benchmarks and (later) the status page.
#[derive(Debug, Default)]
pub struct Stats {
    /// Stage executions.
    pub stage_runs: AtomicU64,
    /// Stage compilations.
    pub compiles: AtomicU64,
    /// Rendered requests.
    pub renders: AtomicU64,
    /// Incremental renders that walked the stages a second time, because
    /// an output stored by hash only (elided) was needed as an input.
    pub whole_walks: AtomicU64,
}

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
    limits: Limits,
    force_byte_handoff: bool,
    stats: Arc<Stats>,
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
    /// Write the source and every stage's output into this directory.
    pub trace: Option<PathBuf>,
    /// Compute without reading or writing the cache (a traced request).
    pub no_cache: bool,
    /// The style came from the client (query, cookie, path): if it selects
    /// nothing in the document, the response is computed but not cached, so
    /// `?style=<random>` cannot fill the cache (AxKit's guard).
    pub client_style: bool,
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
        let intermediates = if incremental { outputs / 32 } else { 0 };
        let watcher = watcher(config, &fingerprints).map(Arc::new);
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
                .with_traces(trace_budget),
            prologs: moka::sync::Cache::new(5_000),
            hot: HotMemo::new(hot_budget, watcher),
            pool: Arc::new(Pool::new(config.workers)?),
            mode: config.cache_mode,
            limits: config.limits,
            force_byte_handoff: config.force_byte_handoff,
            stats: Arc::new(Stats::default()),
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

    /// Counters.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The output store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Renders the document at `located` (a file from [`Provider::locate`]).
    pub async fn render(
        &self,
        located: &Located,
        req: &RenderRequest,
    ) -> Result<Rendered, PipelineError> {
        self.stats.renders.fetch_add(1, Ordering::Relaxed);
        let mut located = located.clone();
        // A source edited mid-request is re-located and rendered again, so
        // an entry is never stored under a hash its bytes do not have; and a
        // source found malformed is tried again if it changed meanwhile (an
        // editor saving it), so a save is not seen as a passing error.
        for _ in 0..3 {
            match self.render_once(&located, req, None).await {
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

    /// The hot-memo key of a request for `url_path` (as requested), from
    /// the parts of its render request that it covers (so a hit need not
    /// build the whole [`RenderRequest`]).
    pub fn hot_key(
        url_path: &str,
        location: Option<ContentHash>,
        selection: &Selection,
        client_style: bool,
        xinclude: bool,
        params: &[(String, String)],
    ) -> FieldKey {
        let mut k = FieldKeyBuilder::new("hot");
        k.str(url_path)
            .hash(&location.unwrap_or_else(|| ContentHash::of(b"")))
            .str(selection.style.as_deref().unwrap_or("\0"))
            .str(&selection.media)
            .u64(u64::from(client_style))
            .u64(u64::from(xinclude))
            .u64(params.len() as u64);
        for (name, value) in params {
            k.str(name).str(value);
        }
        k.finish()
    }

    /// The memoized response for `key`, if every file it came from is
    /// unchanged (one `stat` each). Never in `off` mode.
    pub fn hot_get(&self, key: &FieldKey) -> Option<Rendered> {
        if self.mode == CacheMode::Off {
            return None;
        }
        let HotResponse {
            rendered: mut r,
            entry,
        } = self.hot.get(key)?;
        if let Some(weak) = entry {
            // The body lives in the store: while the store holds that very
            // entry the weak reference reaches it (no second lookup); the
            // memo's own checks cover every file it came from.
            r.body = weak.upgrade()?.bytes.clone();
        }
        r.cache = match r.cache {
            CacheStatus::Untransformed => CacheStatus::Untransformed,
            _ => CacheStatus::Hit,
        };
        Some(r)
    }

    /// Memoizes `rendered` for `key`; `request_path` is the document as the
    /// request named it (checked in place of the source's canonical path,
    /// so a re-pointed symlink is noticed). Skipped when a file changed
    /// since it was used, or the response is not cacheable.
    pub async fn hot_put(&self, key: FieldKey, request_path: &Path, rendered: &Rendered) {
        if self.mode == CacheMode::Off {
            return;
        }
        let Some(validators) = &rendered.validators else {
            return;
        };
        let fingerprints = self.files.fingerprints();
        let mut checks: Vec<(PathBuf, Stamp)> = Vec::with_capacity(validators.len());
        for (i, dep) in validators.iter().enumerate() {
            // The memo usually knows the stamp; a file it has forgotten (a
            // big site) is stamped and hashed again, never skipped.
            let stamp = match fingerprints.stamp_for(&dep.path, &dep.hash) {
                Some(stamp) => stamp,
                None => match fingerprints.stamped(&dep.path) {
                    Ok((stamp, hash)) if hash == dep.hash => stamp,
                    _ => return,
                },
            };
            let path = if i == 0 {
                request_path.to_path_buf()
            } else {
                dep.path.clone()
            };
            if !checks.iter().any(|(p, _)| *p == path) {
                checks.push((path, stamp));
            }
        }
        let mut memo = rendered.clone();
        memo.validators = None;
        memo.head = Some(ResponseHead::of(&memo));
        let mut entry = None;
        if let Some(stored) = &memo.stored {
            // A weak reference: the memo never keeps a body the store has
            // evicted (bodies are weighed once, by the store).
            let Some(found) = self.store.peek_final(stored).await else {
                return;
            };
            entry = Some(Arc::downgrade(&found));
            memo.body = Bytes::new();
        }
        let hot = HotResponse {
            rendered: memo,
            entry,
        };
        self.hot.put(key, hot, self.files.root(), checks);
    }

    /// Forgets memoized responses (after a configuration reload).
    pub fn clear_hot(&self) {
        self.hot.clear();
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
        self.render_once(&located, req, Some(source)).await
    }

    /// The prolog of a source, memoized by content hash.
    fn prolog(&self, located: &Located) -> Result<(Arc<Prolog>, Option<Source>), PipelineError> {
        if let Some(p) = located.hash.and_then(|h| self.prologs.get(&h)) {
            return Ok((p, None));
        }
        let source = self.sources.read(located)?;
        let prolog = Arc::new(scan_prolog(&source)?);
        self.prologs.insert(source.hash, Arc::clone(&prolog));
        Ok((prolog, Some(source)))
    }

    /// The source's bytes, checked against the hash the keys were built from.
    fn source_for(&self, located: &Located, hash: ContentHash) -> Result<Source, PipelineError> {
        let source = self.sources.read(located)?;
        if source.hash != hash {
            return Err(PipelineError::SourceChanged(located.path.rel().to_string()));
        }
        Ok(source)
    }

    /// One render of `located`; `generated` is its source when it is not a
    /// file (read once here, never from the source memo).
    async fn render_once(
        &self,
        located: &Located,
        req: &RenderRequest,
        generated: Option<Source>,
    ) -> Result<Rendered, PipelineError> {
        let (prolog, mut source) = match generated {
            Some(source) => (Arc::new(scan_prolog(&source)?), Some(source)),
            None => self.prolog(located)?,
        };
        let source_hash = match (&source, located.hash) {
            (Some(s), _) => s.hash,
            (None, Some(h)) => h,
            (None, None) => {
                return Err(ProviderError::NotFound(located.path.rel().to_string()).into());
            }
        };
        let specs = chain::select(
            &prolog,
            located.path.url(),
            &self.files,
            req.registry.as_deref().unwrap_or(&self.registry),
            &req.selection,
            &req.processors,
            req.processor_order,
        )?;
        if specs.is_empty() {
            let source = match source.take() {
                Some(s) => s,
                None => self.source_for(located, source_hash)?,
            };
            let validators = Some(Arc::from(vec![Dep {
                path: located.path.as_path().to_path_buf(),
                hash: source.hash,
            }]));
            return Ok(Rendered {
                hash: source.hash,
                body: source.bytes,
                content_type: Arc::from(RAW_XML_TYPE),
                cache: CacheStatus::Untransformed,
                validators,
                stored: None,
                head: None,
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
        let mut validators = vec![Dep {
            path: located.path.as_path().to_path_buf(),
            hash: source_hash,
        }];
        for stage in &stages {
            validators.extend(stage.files.iter().cloned());
        }
        let job = ChainJob {
            stages: stages.into(),
            params: Arc::from(req.params.clone()),
            base_url: Arc::from(located.path.url()),
            limits: self.limits,
            force_byte_handoff: self.force_byte_handoff,
            files: self.files.clone(),
            stats: Arc::clone(&self.stats),
            location: req.location,
            xinclude: req.xinclude,
            trace: req
                .trace
                .as_ref()
                .map(|dir| (dir.clone(), trace_name(located.path.url()))),
            internal: Some(self.internal_documents()),
            prolog: Some(Arc::clone(&prolog)),
        };
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
        let mode = if req.no_cache || idle_style || req.trace.is_some() {
            CacheMode::Off
        } else {
            self.mode
        };
        match mode {
            CacheMode::Off => {
                let source = match source {
                    Some(s) => s,
                    None => self.source_for(located, source_hash)?,
                };
                let entry = self.pool.run(move || job.run_all(source.bytes)).await??;
                Ok(rendered(&entry, CacheStatus::Miss, None))
            }
            CacheMode::All => {
                let key = job.response_key(source_hash);
                let compute = async {
                    let source = match source {
                        Some(s) => s,
                        None => self.source_for(located, source_hash)?,
                    };
                    self.pool
                        .run(move || job.run_all(source.bytes).map(Arc::new))
                        .await?
                };
                let (entry, found) = self
                    .store
                    .get_or_compute(key, Tier::Final, compute)
                    .await
                    .map_err(|e| (*e).clone())?;
                let status = if found {
                    CacheStatus::Hit
                } else {
                    CacheStatus::Miss
                };
                validators.extend(entry.deps.iter().cloned());
                let mut out = rendered(&entry, status, Some(key));
                out.validators = Some(Arc::from(validators));
                Ok(out)
            }
            CacheMode::Incremental => {
                let mut out = self
                    .render_incremental(job, located, source, source_hash, &mut validators)
                    .await?;
                out.validators = Some(Arc::from(validators));
                Ok(out)
            }
        }
    }

    /// Incremental mode. The response is stored under the all-or-nothing
    /// key (so a hit costs exactly what it costs in `all` mode, however
    /// many intermediate outputs were evicted); earlier stages are stored
    /// under stage keys over their input's hash; and a *trace* maps the
    /// last stage's key (its closure and its input's hash) to the
    /// response it produced, so a recomputed earlier stage whose output is
    /// unchanged reaches the stored response (early cut-off).
    ///
    /// An intermediate tree is identified by the hash of its canonical form.
    /// When the next stage's key already has a trace or an output (a
    /// cut-off, as for a dynamic source), it is stored elided
    /// ([`Entry::elided`]) and never serialized; otherwise it is serialized
    /// at once and stored whole (and should that guess fail, made whole
    /// when the next stage runs from the tree). A request that finds an
    /// elided output and then needs it as input walks the stages again,
    /// recomputing such outputs in full.
    async fn render_incremental(
        &self,
        job: ChainJob,
        located: &Located,
        source: Option<Source>,
        source_hash: ContentHash,
        validators: &mut Vec<Dep>,
    ) -> Result<Rendered, PipelineError> {
        let walk = Walk {
            response_key: job.response_key(source_hash),
            job: Arc::new(job),
            located,
            source: source.map(|s| s.bytes),
            source_hash,
        };
        if let Some(entry) = self.store.get(&walk.response_key, Tier::Final).await {
            validators.extend(entry.deps.iter().cloned());
            return Ok(rendered(&entry, CacheStatus::Hit, Some(walk.response_key)));
        }
        let before = validators.len();
        if let Some(out) = self.walk_stages(&walk, validators, false).await? {
            return Ok(out);
        }
        validators.truncate(before);
        self.stats.whole_walks.fetch_add(1, Ordering::Relaxed);
        match self.walk_stages(&walk, validators, true).await? {
            Some(out) => Ok(out),
            // Not reached: that walk keeps no elided output as an input.
            None => Err(PipelineError::SourceChanged(located.path.rel().to_string())),
        }
    }

    /// One walk over the stages of an incremental render. `Ok(None)`: a
    /// stage missed (nothing stored or being computed under its key) whose
    /// input is an elided output found in the store (only when not
    /// `whole`; the caller walks again with `whole`, which recomputes found
    /// elided outputs and stores them whole). Concurrent walks of one key
    /// still compute each stage once: a walk that waited for another's
    /// elided output waits for its next stage too.
    async fn walk_stages(
        &self,
        walk: &Walk<'_>,
        validators: &mut Vec<Dep>,
        whole: bool,
    ) -> Result<Option<Rendered>, PipelineError> {
        let job = &walk.job;
        let total = job.stages.len();
        let mut input_hash = walk.source_hash;
        let mut previous: Option<(Key, Arc<Entry>)> = None;
        // A tree computed by this request for the next stage (faithful only).
        let mut carried: Option<XmlDoc> = None;
        let mut reused = 0;
        let mut earlier_deps: Vec<Dep> = Vec::new();
        for index in 0..total {
            let is_final = index + 1 == total;
            let stage_key = job.stage_key(index, input_hash);
            if is_final && total > 1 {
                if let Some((entry, stored)) = self.store.traced(&stage_key).await {
                    // Early cut-off: this input was seen before and its
                    // response is still stored. Not stored again under
                    // this request's key (a dynamic source has a new key
                    // each time); the trace finds it while it lasts.
                    if let Some(tree) = carried.take() {
                        self.pool.drop_on_pool(tree);
                    }
                    validators.extend(entry.deps.iter().cloned());
                    let status = CacheStatus::of_reused(reused + 1, total);
                    return Ok(Some(rendered(&entry, status, Some(stored))));
                }
            }
            let (key, tier) = if is_final {
                (walk.response_key, Tier::Final)
            } else {
                (stage_key, Tier::Intermediate)
            };
            // The input; `None` when it is an elided output found in the
            // store, usable only through what is stored (or being computed)
            // under this stage's key.
            let mut input = match (carried.take(), &previous) {
                (Some(tree), Some((_, p))) if p.elided => Some(Input::Tree {
                    tree,
                    make_whole: Some(Arc::clone(p)),
                }),
                (Some(tree), _) => Some(Input::Tree {
                    tree,
                    make_whole: None,
                }),
                (None, Some((_, p))) if p.elided => None,
                (None, Some((_, p))) => Some(Input::Bytes(p.bytes.clone())),
                (None, None) => Some(Input::Source),
            };
            let earlier: Arc<[Dep]> = if is_final {
                std::mem::take(&mut earlier_deps).into()
            } else {
                Arc::from(Vec::new())
            };
            let mut made: Option<(Option<XmlDoc>, Option<Entry>)> = None;
            let (entry, found) = if whole {
                // Looked up by hand: this walk must not take an elided
                // output as found (and it is rare enough to go uncoalesced).
                // Its inputs are never elided: it stores what it computes
                // whole.
                match (self.store.get(&key, tier).await, input.take()) {
                    (Some(entry), unused) if !entry.elided => {
                        self.drop_input_on_pool(unused);
                        (entry, true)
                    }
                    (_, None) => return Ok(None),
                    (_, Some(input)) => {
                        let (entry, tree, made_whole) = self
                            .compute_stage(walk, index, input, true, earlier)
                            .await?;
                        made = Some((tree, made_whole));
                        self.store.insert(key, tier, Arc::clone(&entry)).await;
                        (entry, false)
                    }
                }
            } else {
                let slot = &mut input;
                let compute = async {
                    // Nothing stored or being computed here, and no input
                    // to compute from: the caller walks again, whole.
                    let input = slot.take().ok_or(Stop::Elided)?;
                    let (entry, tree, made_whole) = self
                        .compute_stage(walk, index, input, false, earlier)
                        .await
                        .map_err(Stop::Failed)?;
                    made = Some((tree, made_whole));
                    Ok(entry)
                };
                let got = self.store.get_or_compute(key, tier, compute).await;
                // Found stored (or computed by another request): the input
                // was not needed.
                self.drop_input_on_pool(input.take());
                match got {
                    Ok(got) => got,
                    Err(stop) => match &*stop {
                        Stop::Elided => return Ok(None),
                        Stop::Failed(e) => return Err(e.clone()),
                    },
                }
            };
            if found {
                reused += 1;
            }
            if let Some((tree, made_whole)) = made {
                carried = tree;
                if let (Some(whole_entry), Some((previous_key, _))) = (made_whole, &previous) {
                    // The previous output was serialized to run this
                    // stage: store it whole in place of its elided entry.
                    self.store
                        .insert(*previous_key, Tier::Intermediate, Arc::new(whole_entry))
                        .await;
                }
            }
            if is_final {
                if total > 1 {
                    self.store.put_trace(stage_key, walk.response_key);
                }
                validators.extend(entry.deps.iter().cloned());
                let status = CacheStatus::of_reused(reused, total);
                return Ok(Some(rendered(&entry, status, Some(walk.response_key))));
            }
            input_hash = entry.hash;
            validators.extend(entry.deps.iter().cloned());
            earlier_deps.extend(entry.deps.iter().cloned());
            previous = Some((key, entry));
        }
        Err(PipelineError::SourceChanged(
            walk.located.path.rel().to_string(),
        ))
    }

    /// Frees an input tree a stage did not need on the pool, where it was
    /// built: freed on the connection thread, the stage-1 tree of a dynamic
    /// article cost ~58k instructions a request (callgrind), most of them
    /// the allocator's cross-thread frees.
    fn drop_input_on_pool(&self, input: Option<Input>) {
        if let Some(Input::Tree { tree, .. }) = input {
            self.pool.drop_on_pool(tree);
        }
    }

    /// Runs stage `index` of an incremental walk on the pool. Returns its
    /// entry (a final one carrying every stage's dependencies), the tree to
    /// hand on, and, when the input was an elided output's tree, that
    /// output made whole (serialized first: the tree is consumed). An
    /// intermediate tree's entry is made whole at once when `whole`, or
    /// when the next stage does not look cut off; else it stays elided.
    async fn compute_stage(
        &self,
        walk: &Walk<'_>,
        index: usize,
        input: Input,
        whole: bool,
        earlier: Arc<[Dep]>,
    ) -> Result<(Arc<Entry>, Option<XmlDoc>, Option<Entry>), PipelineError> {
        let (input, make_whole) = match input {
            Input::Tree { tree, make_whole } => (StageData::Dom(tree), make_whole),
            Input::Bytes(bytes) => (StageData::Bytes(bytes), None),
            Input::Source => {
                let bytes = match &walk.source {
                    Some(bytes) => bytes.clone(),
                    None => self.source_for(walk.located, walk.source_hash)?.bytes,
                };
                (StageData::Bytes(bytes), None)
            }
        };
        let job = Arc::clone(&walk.job);
        let is_final = index + 1 == job.stages.len();
        let store = self.store.clone();
        self.pool
            .run(move || {
                let previous_whole = match (&make_whole, &input) {
                    // Best effort: a failure leaves the entry elided.
                    (Some(elided), StageData::Dom(tree)) => made_whole(elided, tree).ok(),
                    _ => None,
                };
                let (mut entry, tree) = job.run_one(index, input, Want::Identity)?;
                if let Some(doc) = tree.as_ref().filter(|_| entry.elided) {
                    if whole {
                        entry = job.made_whole_or_error(index, &entry, doc)?;
                    } else if !job.next_looks_cut_off(index, entry.hash, &store) {
                        // The next stage runs from this tree and the entry
                        // would be made whole then: make it now, and store
                        // it once. Best effort, as above.
                        if let Ok(whole_entry) = made_whole(&entry, doc) {
                            entry = whole_entry;
                        }
                    }
                }
                if is_final && !earlier.is_empty() {
                    // The response answers hits on its own, so it carries
                    // every stage's dependencies.
                    let mut deps: Vec<Dep> = earlier.to_vec();
                    deps.extend(entry.deps.iter().cloned());
                    entry.deps = merged_deps(deps);
                }
                Ok::<_, PipelineError>((Arc::new(entry), tree, previous_whole))
            })
            .await?
    }
}

/// `elided` with its bytes: `tree` (the tree it was computed as)
/// serialized.
fn made_whole(elided: &Entry, tree: &XmlDoc) -> Result<Entry, XmlError> {
    Ok(Entry {
        bytes: Bytes::from(tree.to_xml_bytes()?),
        elided: false,
        ..elided.clone()
    })
}

/// What one incremental render walks over, in every walk.
struct Walk<'a> {
    job: Arc<ChainJob>,
    located: &'a Located,
    /// The source's bytes when already read (a generated source always).
    source: Option<Bytes>,
    source_hash: ContentHash,
    response_key: Key,
}

/// Why an incremental walk's computation stopped.
enum Stop {
    /// Its input is an elided output (the caller walks again, whole).
    Elided,
    /// The stage failed.
    Failed(PipelineError),
}

/// A stage's input in an incremental walk.
enum Input {
    /// The source (read now if not yet).
    Source,
    /// The previous stage's stored bytes.
    Bytes(Bytes),
    /// The previous stage's tree, computed by this request; when its entry
    /// is elided, that entry, to be made whole from the tree.
    Tree {
        tree: XmlDoc,
        make_whole: Option<Arc<Entry>>,
    },
}

impl Pipeline {
    fn internal_documents(&self) -> Arc<dyn InternalDocuments> {
        Arc::new(Nested {
            files: self.files.clone(),
            compiled: Arc::clone(&self.compiled),
            registry: self.registry.clone(),
            limits: self.limits,
            runtime: self.runtime.clone(),
            stats: Arc::clone(&self.stats),
            force_byte_handoff: self.force_byte_handoff,
        })
    }
}

/// Renders `axle:` documents inside a transform, synchronously on the
/// transform thread: the document's own PI chain (default style and media,
/// no configured processors), without a cache entry of its own; every file
/// it reads (source, stylesheet closures, `document()` targets) is recorded
/// as a dependency of the calling stage, so the caller's cached output is
/// invalidated by any of them.
#[derive(Clone)]
struct Nested {
    files: FileProvider,
    compiled: Arc<Compiled>,
    registry: Registry,
    limits: Limits,
    runtime: Option<tokio::runtime::Handle>,
    stats: Arc<Stats>,
    force_byte_handoff: bool,
}

/// Deepest `axle:` nesting allowed.
const MAX_NESTING: usize = 8;

thread_local! {
    static NESTING: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Marks a document as being rendered on this thread until dropped.
struct NestGuard;

impl NestGuard {
    /// Marks the top-level document (only when nothing is being rendered on
    /// this thread yet), so a loop back to it is caught at once.
    fn enter_top(path: &str) -> Option<NestGuard> {
        NESTING.with(|n| {
            let mut stack = n.borrow_mut();
            stack.is_empty().then(|| {
                stack.push(path.to_string());
                NestGuard
            })
        })
    }

    fn enter(path: &str) -> Result<NestGuard, String> {
        NESTING.with(|n| {
            let mut stack = n.borrow_mut();
            if stack.iter().any(|p| p == path) {
                let mut chain = stack.clone();
                chain.push(path.to_string());
                return Err(format!("axle: URI loop: {}", chain.join(" -> ")));
            }
            if stack.len() >= MAX_NESTING {
                return Err(format!("axle: URIs nested deeper than {MAX_NESTING}"));
            }
            stack.push(path.to_string());
            Ok(NestGuard)
        })
    }
}

impl Drop for NestGuard {
    fn drop(&mut self) {
        NESTING.with(|n| {
            n.borrow_mut().pop();
        });
    }
}

impl InternalDocuments for Nested {
    fn render(&self, path: &str, deps: &RootResolver) -> Result<Vec<u8>, String> {
        let url = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        let located = self.files.locate(&url).map_err(|e| e.to_string())?;
        if located.kind != crate::provider::ResourceKind::File {
            return Err(format!("axle:{url} is not a document"));
        }
        let _guard = NestGuard::enter(located.path.url())?;
        let (bytes, hash) = deps
            .read_recorded(&located.path)
            .map_err(|e| e.to_string())?;
        let source = Source {
            path: located.path.clone(),
            bytes: Bytes::from(bytes),
            hash,
        };
        let prolog = scan_prolog(&source).map_err(|e| e.to_string())?;
        let specs = chain::select(
            &prolog,
            located.path.url(),
            &self.files,
            &self.registry,
            &Selection::default(),
            &[],
            chain::ProcessorOrder::Fallback,
        )
        .map_err(|e| e.to_string())?;
        if specs.is_empty() {
            return Ok(source.bytes.to_vec());
        }
        let mut stages = Vec::with_capacity(specs.len());
        for spec in &specs {
            let c = self
                .compiled
                .get_blocking(spec, &self.files, &self.stats, self.runtime.as_ref())
                .map_err(|e| e.to_string())?;
            for f in &c.files {
                deps.record(f.clone());
            }
            stages.push(c);
        }
        let job = ChainJob {
            stages: stages.into(),
            params: Arc::from(Vec::new()),
            base_url: Arc::from(located.path.url()),
            limits: self.limits,
            force_byte_handoff: self.force_byte_handoff,
            files: self.files.clone(),
            stats: Arc::clone(&self.stats),
            location: None,
            xinclude: false,
            trace: None,
            internal: Some(Arc::new(self.clone())),
            prolog: Some(Arc::new(prolog)),
        };
        let entry = job.run_all(source.bytes).map_err(|e| e.to_string())?;
        for d in entry.deps.iter() {
            deps.record(d.clone());
        }
        Ok(entry.bytes.to_vec())
    }
}

/// Dependencies gathered over several stages: one per file, in path order.
fn merged_deps(mut deps: Vec<Dep>) -> Arc<[Dep]> {
    deps.sort_by(|a, b| a.path.cmp(&b.path));
    deps.dedup_by(|a, b| a.path == b.path);
    deps.into()
}

fn rendered(entry: &Entry, cache: CacheStatus, stored: Option<Key>) -> Rendered {
    Rendered {
        validators: None,
        stored,
        body: entry.bytes.clone(),
        hash: entry.hash,
        content_type: entry
            .content_type
            .clone()
            .unwrap_or_else(|| Arc::from(DEFAULT_TYPE)),
        cache,
        head: None,
    }
}

/// What the hot memo keeps for a request: the response without its body
/// when the store holds that, and a weak reference to the store's entry.
#[derive(Debug, Clone)]
struct HotResponse {
    rendered: Rendered,
    entry: Option<Weak<Entry>>,
}

impl crate::cache::Weight for HotResponse {
    fn weight(&self) -> usize {
        let weak = if self.entry.is_some() { 128 } else { 0 };
        let head = self.rendered.head.as_ref().map_or(0, |h| {
            h.content_type.len() + h.etag.len() + 2 * std::mem::size_of::<HeaderValue>()
        });
        self.rendered.body.len() + self.rendered.content_type.len() + weak + head
    }
}

/// Content-Type when the last stage names none.
pub const DEFAULT_TYPE: &str = "text/html; charset=UTF-8";

/// What [`ChainJob::run_one`] makes of a non-final stage's faithful tree
/// (any other output is serialized, and its entry holds the bytes and
/// their hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// The bytes and their hash, and the tree to hand on (trace files).
    Bytes,
    /// The tree to hand on; the entry's bytes and hash mean nothing (`off`
    /// and `all`, which use only its dependencies).
    Tree,
    /// The tree to hand on, identified by the hash of its canonical form
    /// (incremental mode's stage keys), its entry elided
    /// ([`Entry::elided`]; [`made_whole`] serializes it). A tree the form
    /// cannot encode is serialized and identified by its bytes' hash.
    Identity,
}

/// Everything a pool thread needs to run (part of) a chain.
struct ChainJob {
    stages: Arc<[Arc<CompiledStage>]>,
    params: Arc<[(String, String)]>,
    base_url: Arc<str>,
    limits: Limits,
    force_byte_handoff: bool,
    files: FileProvider,
    stats: Arc<Stats>,
    location: Option<ContentHash>,
    xinclude: bool,
    trace: Option<(PathBuf, String)>,
    internal: Option<Arc<dyn InternalDocuments>>,
    /// The prolog scanned from the source (the bytes the first stage
    /// gets): its DOCTYPE picks the shared DTD without a second scan.
    /// `None`: the first stage scans it.
    prolog: Option<Arc<Prolog>>,
}

impl ChainJob {
    /// What every key of this job covers besides the stages and their
    /// input: the location, XInclude, the params, and the document's URL.
    /// The URL is the base URI of the source and of every intermediate
    /// tree, so it can change any stage's output (`document('x.xml', /)`,
    /// relative entities and XIncludes): identical bytes at two URLs are
    /// two documents.
    fn add_params(&self, key: &mut KeyBuilder) {
        key.str(&self.base_url);
        key.hash(&self.location.unwrap_or_else(|| ContentHash::of(b"")))
            .u64(u64::from(self.xinclude));
        key.u64(self.params.len() as u64);
        for (name, value) in self.params.iter() {
            key.str(name).str(value);
        }
    }

    /// All-or-nothing: one key over the whole chain.
    fn response_key(&self, source: ContentHash) -> Key {
        let mut key = KeyBuilder::new("response");
        key.hash(&source).u64(self.stages.len() as u64);
        for stage in self.stages.iter() {
            key.hash(&stage.closure);
        }
        self.add_params(&mut key);
        key.finish()
    }

    /// Incremental: stage `index` over the hash of its input bytes.
    fn stage_key(&self, index: usize, input: ContentHash) -> Key {
        let mut key = KeyBuilder::new("stage");
        key.hash(&self.stages[index].closure)
            .u64(u64::from(index + 1 == self.stages.len()))
            .hash(&input);
        self.add_params(&mut key);
        key.finish()
    }

    /// Does the stage after `index`, given an input with `hash`, look cut
    /// off: a trace under its key (the last stage) or a stored output
    /// (another)? A synchronous guess, from a transform thread.
    fn next_looks_cut_off(&self, index: usize, hash: ContentHash, store: &Store) -> bool {
        let next = self.stage_key(index + 1, hash);
        if index + 2 == self.stages.len() {
            store.has_trace(&next)
        } else {
            store.contains(&next, Tier::Intermediate)
        }
    }

    /// [`made_whole`], a failure reported as stage `index`'s.
    fn made_whole_or_error(
        &self,
        index: usize,
        elided: &Entry,
        tree: &XmlDoc,
    ) -> Result<Entry, PipelineError> {
        made_whole(elided, tree).map_err(|e| self.stage_error(index, LanguageError::Xml(e)))
    }

    /// Runs stage `index`. Returns its entry (what it holds: see [`Want`];
    /// a final stage always gets its bytes) and, for a non-final faithful
    /// tree, the tree to hand on.
    fn run_one(
        &self,
        index: usize,
        input: StageData,
        want: Want,
    ) -> Result<(Entry, Option<XmlDoc>), PipelineError> {
        let stage = &self.stages[index];
        let is_final = index + 1 == self.stages.len();
        let _top = NestGuard::enter_top(&self.base_url);
        let resolver = self.files.resolver_with(self.internal.clone());
        let input = if index == 0 && self.xinclude {
            let mut doc = input
                .into_dom(&self.base_url, &resolver)
                .map_err(|error| self.stage_error(index, error))?;
            doc.process_xinclude(resolver.clone())
                .map_err(|e| self.stage_error(index, LanguageError::Xml(e)))?;
            StageData::Dom(doc)
        } else {
            input
        };
        let limits = Limits {
            xinclude: self.xinclude,
            ..self.limits
        };
        let ctx = StageContext {
            base_url: &self.base_url,
            params: &self.params,
            is_final,
            limits: &limits,
            resolver: &resolver,
            input_from_stage: index > 0,
            source_doctype: self
                .prolog
                .as_ref()
                .filter(|_| index == 0)
                .map(|p| p.doctype.as_ref()),
        };
        self.stats.stage_runs.fetch_add(1, Ordering::Relaxed);
        let span = tracing::debug_span!("stage", n = index + 1, stylesheet = %stage.rel);
        let _enter = span.enter();
        let output = stage
            .stage
            .run(input, &ctx)
            .map_err(|error| self.stage_error(index, error))?;
        if let Some(why) = resolver.take_internal_error() {
            return Err(self.stage_error(index, LanguageError::Failed(why)));
        }
        let wrap = |e: XmlError| self.stage_error(index, LanguageError::Xml(e));
        let serialize = |doc: &XmlDoc| doc.to_xml_bytes().map(Bytes::from).map_err(wrap);
        // (bytes, the tree to hand on, the tree's hash when it stands for
        // the bytes)
        let (bytes, tree, tree_hash) = match output.data {
            StageData::Bytes(b) => (b, None, None),
            StageData::Dom(doc) if is_final || self.force_byte_handoff || !doc.is_faithful() => {
                // Serialize; the next stage (if any) re-parses these bytes.
                (serialize(&doc)?, None, None)
            }
            StageData::Dom(doc) => match want {
                Want::Bytes => (serialize(&doc)?, Some(doc), None),
                // Empty bytes and the hash of nothing: only `run_all` asks
                // for this, and it uses such an entry's deps alone.
                Want::Tree => (Bytes::new(), Some(doc), None),
                Want::Identity => match doc.with_canonical_form(ContentHash::of_tree) {
                    Some(hash) => (Bytes::new(), Some(doc), Some(hash)),
                    None => (serialize(&doc)?, Some(doc), None),
                },
            },
        };
        let elided = tree_hash.is_some();
        let hash = tree_hash.unwrap_or_else(|| ContentHash::of(&bytes));
        let entry = Entry {
            bytes,
            hash,
            elided,
            content_type: if is_final {
                Some(Arc::from(
                    output.content_type.as_deref().unwrap_or(DEFAULT_TYPE),
                ))
            } else {
                None
            },
            deps: resolver.take_deps().into(),
        };
        Ok((entry, tree))
    }

    /// Runs the whole chain (modes `off` and `all`): one pool job, trees
    /// handed on where faithful.
    fn run_all(&self, source: Bytes) -> Result<Entry, PipelineError> {
        self.write_trace(0, &source);
        let mut data = StageData::Bytes(source);
        let mut deps: Vec<Dep> = Vec::new();
        let mut last = None;
        for index in 0..self.stages.len() {
            let want = if self.trace.is_some() {
                Want::Bytes
            } else {
                Want::Tree
            };
            let (entry, tree) = self.run_one(index, data, want)?;
            self.write_trace(index + 1, &entry.bytes);
            deps.extend(entry.deps.iter().cloned());
            data = match tree {
                Some(t) => StageData::Dom(t),
                None => StageData::Bytes(entry.bytes.clone()),
            };
            last = Some(entry);
        }
        let Some(mut entry) = last else {
            return Err(PipelineError::SourceChanged(self.base_url.to_string()));
        };
        entry.deps = merged_deps(deps);
        Ok(entry)
    }

    /// AxKit's AxTraceIntermediate: `<dir>/<escaped path>.N` holds the
    /// source (N = 0) and each stage's output. Failures are logged only.
    fn write_trace(&self, n: usize, bytes: &[u8]) {
        let Some((dir, name)) = &self.trace else {
            return;
        };
        let path = dir.join(format!("{name}.{n}"));
        if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, bytes)) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write trace file");
        }
    }

    fn stage_error(&self, index: usize, error: LanguageError) -> PipelineError {
        if index == 0 {
            let document = || decoded(&self.base_url);
            match &error {
                LanguageError::Xml(e @ XmlError::Parse { .. })
                    if is_source_error(e, &self.base_url) =>
                {
                    return PipelineError::Source {
                        document: document(),
                        error: e.clone(),
                    };
                }
                LanguageError::NotWellFormed { line, message } => {
                    let error = XmlError::Parse {
                        file: Some(document()),
                        line: *line,
                        message: message.clone(),
                    };
                    return PipelineError::Source {
                        document: document(),
                        error,
                    };
                }
                _ => {}
            }
        }
        PipelineError::Stage {
            stage: index + 1,
            stylesheet: self.stages[index].rel.clone(),
            error,
        }
    }
}

/// A trace file name for a URL path: `/a/b.xml` → `a|b.xml` (AxKit escaped
/// `/` the same way).
fn trace_name(url_path: &str) -> String {
    let name = url_path.trim_start_matches('/').replace('/', "|");
    if name.is_empty() {
        "index".to_string()
    } else {
        name
    }
}

fn is_source_error(e: &XmlError, base_url: &str) -> bool {
    matches!(e, XmlError::Parse { file: Some(f), .. } if f == base_url)
}

fn decoded(url: &str) -> String {
    percent_encoding::percent_decode_str(url)
        .decode_utf8_lossy()
        .into_owned()
}

/// Reads a source's prolog: the fast scanner, else a full libxml2 parse.
fn scan_prolog(source: &Source) -> Result<Prolog, PipelineError> {
    match prolog::scan(&source.bytes) {
        Ok(p) => Ok(p),
        Err(why) => {
            tracing::debug!(document = source.path.rel(), %why, "prolog scanner fell back to libxml2");
            let url = source.path.url().to_string();
            let raw = ffi::prolog_via_libxml(&source.bytes, &url).map_err(|error| {
                PipelineError::Source {
                    document: source.path.rel().to_string(),
                    error,
                }
            })?;
            Ok(prolog_from_raw(raw))
        }
    }
}

fn prolog_from_raw(raw: ffi::RawProlog) -> Prolog {
    let stylesheets = raw
        .pis
        .iter()
        .filter(|(target, _)| target == "xml-stylesheet")
        .filter_map(|(_, data)| prolog::parse_stylesheet_pi(data))
        .collect();
    let doctype = raw.doctype.map(|(name, public_id, system_id)| Doctype {
        name,
        public_id,
        system_id,
        // Not known from this path; nothing here shares DTDs.
        internal_subset: true,
    });
    let root = raw
        .root
        .map(|(prefix, local, namespace)| RootName {
            prefix,
            local,
            namespace,
        })
        .unwrap_or_default();
    Prolog {
        xml_encoding: None,
        stylesheets,
        doctype,
        root,
    }
}

#[cfg(test)]
mod tests;
