//! Running a chain on a transform thread: [`ChainJob`] carries everything a
//! pool thread needs, runs one stage (XInclude before stage 1, the
//! `StageContext`, the tree-or-bytes hand-off) or the whole chain (`off`
//! and `all` modes, and `axle:` documents), and gathers the dependencies.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::cache::{ContentHash, Dep, Entry, SyncedSince};
use crate::ffi::{Limits, UntrustedLimits, XmlDoc, XmlError};
use crate::language::{LanguageError, RequestInfo, StageContext, StageData};
use crate::prolog::Prolog;
use crate::provider::{FileProvider, InternalDocuments};

use super::admission::RequestBudget;
use super::nested::NestGuard;
use super::{CompiledStage, DEFAULT_TYPE, PipelineError, Stats};

/// What [`ChainJob::run_one`] makes of a non-final stage's faithful tree
/// (any other output is serialized, and its entry holds the bytes and
/// their hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// The bytes and their hash, and the tree to hand on (trace files).
    Bytes,
    /// The tree to hand on; the entry's bytes and hash mean nothing (`off`
    /// and `all`, which use only its dependencies).
    Tree,
    /// The tree to hand on, identified by the hash of its canonical form
    /// (incremental mode's stage keys), its entry elided
    /// ([`Entry::elided`]; `incremental::made_whole` serializes it). A tree
    /// the form cannot encode is serialized and identified by its bytes'
    /// hash.
    Identity,
}

/// The tree a client's document's one parse gave, until the first stage
/// takes it (once: a second run of stage 1, as incremental mode's whole
/// walk makes, parses the bytes again under the same limits).
#[derive(Debug)]
pub(super) struct FirstTree(Mutex<Option<XmlDoc>>);

impl FirstTree {
    pub(super) fn new(tree: XmlDoc) -> FirstTree {
        FirstTree(Mutex::new(Some(tree)))
    }

    /// The tree, if no stage took it yet.
    pub(super) fn take(&self) -> Option<XmlDoc> {
        match self.0.lock() {
            Ok(mut t) => t.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        }
    }
}

/// Everything a pool thread needs to run (part of) a chain (cheap to
/// clone: shared parts).
#[derive(Clone)]
pub(super) struct ChainJob {
    pub(super) stages: Arc<[Arc<CompiledStage>]>,
    pub(super) params: Arc<[(String, String)]>,
    pub(super) base_url: Arc<str>,
    pub(super) limits: Limits,
    pub(super) force_byte_handoff: bool,
    pub(super) files: FileProvider,
    pub(super) stats: Arc<Stats>,
    pub(super) location: Option<ContentHash>,
    pub(super) xinclude: bool,
    /// `xsl:sort` as browsers sort.
    pub(super) unicode_sort: bool,
    /// Where trace files go, without their `.N` suffix (`trace::trace_stem`).
    pub(super) trace: Option<PathBuf>,
    pub(super) internal: Option<Arc<dyn InternalDocuments>>,
    /// The prolog scanned from the source (the bytes the first stage
    /// gets): its DOCTYPE picks the shared DTD without a second scan.
    /// `None`: the first stage scans it.
    pub(super) prolog: Option<Arc<Prolog>>,
    /// The request's budget, entered on the thread for each stage.
    pub(super) budget: Arc<RequestBudget>,
    /// The HTTP request behind the render, for stages that read it.
    pub(super) request: Option<Arc<RequestInfo>>,
    /// Per stage, what it said of the request for its key
    /// (`Stage::varies`).
    pub(super) varies: Arc<[Option<Vec<u8>>]>,
    /// A client's document: the first stage's input is the tree of its
    /// one parse under these limits, never the served documents' parse.
    pub(super) untrusted: Option<UntrustedLimits>,
    /// That parse's tree, for the first stage to take.
    pub(super) first_tree: Option<Arc<FirstTree>>,
}

impl ChainJob {
    /// Runs stage `index`. Returns its entry (what it holds: see [`Want`];
    /// a final stage always gets its bytes) and, for a non-final faithful
    /// tree, the tree to hand on.
    pub(super) fn run_one(
        &self,
        index: usize,
        input: StageData,
        want: Want,
    ) -> Result<(Entry, Option<XmlDoc>), PipelineError> {
        let scope = self.budget.enter()?;
        let (entry, tree) = self
            .run_stage(index, input, want)
            .map_err(|e| scope.explain(e))?;
        let max = self.budget.limits().max_output_bytes;
        if index + 1 == self.stages.len() && entry.bytes.len() as u64 > max {
            return Err(PipelineError::Limit(format!(
                "{} rendered {} bytes, more than max-output-size ({max} bytes)",
                self.base_url,
                entry.bytes.len()
            )));
        }
        Ok((entry, tree))
    }

    /// [`ChainJob::run_one`] without its budget.
    fn run_stage(
        &self,
        index: usize,
        input: StageData,
        want: Want,
    ) -> Result<(Entry, Option<XmlDoc>), PipelineError> {
        let stage = &self.stages[index];
        let is_final = index + 1 == self.stages.len();
        let _top = NestGuard::enter_top(&self.base_url);
        let resolver = self.files.resolver_with(self.internal.clone());
        let input = match (index, self.untrusted, input) {
            (0, Some(limits), StageData::Bytes(bytes)) => {
                let tree = match self.first_tree.as_ref().and_then(|t| t.take()) {
                    Some(tree) => tree,
                    None => XmlDoc::parse_untrusted(&bytes, &self.base_url, &limits).map_err(
                        |refusal| {
                            PipelineError::refused(super::error::decoded(&self.base_url), refusal)
                        },
                    )?,
                };
                StageData::Dom(tree)
            }
            (_, _, input) => input,
        };
        let input = if index == 0 && self.xinclude {
            let mut doc = input
                .into_dom(&self.base_url, &resolver)
                .map_err(|error| self.stage_error(index, error))?;
            let max = self.budget.limits().max_xinclude_nodes;
            let nodes = doc.xinclude_expansion(resolver.clone(), max);
            if nodes > max {
                return Err(PipelineError::Limit(format!(
                    "{} would have more than {max} nodes once its XIncludes are processed (max-xinclude-nodes)",
                    self.base_url
                )));
            }
            doc.process_xinclude(resolver.clone())
                .map_err(|e| self.stage_error(index, LanguageError::Xml(e)))?;
            StageData::Dom(doc)
        } else {
            input
        };
        let limits = Limits {
            xinclude: self.xinclude,
            unicode_sort: self.unicode_sort,
            ..self.limits
        };
        let ctx = StageContext {
            base_url: &self.base_url,
            params: &self.params,
            is_final,
            limits: &limits,
            resolver: &resolver,
            input_from_stage: index > 0,
            request: self.request.as_deref(),
            source_doctype: self
                .prolog
                .as_ref()
                .filter(|_| index == 0)
                .map(|p| p.doctype.as_ref()),
        };
        self.stats.stage_runs.fetch_add(1, Ordering::Relaxed);
        let span = tracing::debug_span!("stage", n = index + 1, stylesheet = %stage.rel);
        let _enter = span.enter();
        let started = std::time::Instant::now();
        let output = stage.stage.run(input, &ctx);
        self.stats.stage_ran(&stage.language, started.elapsed());
        let output = output.map_err(|error| self.stage_error(index, error))?;
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
            url: is_final.then(|| Arc::clone(&self.base_url)),
            variants: Default::default(),
        };
        Ok((entry, tree))
    }

    /// Runs the whole chain (modes `off` and `all`): one pool job, trees
    /// handed on where faithful.
    pub(super) fn run_all(&self, source: Bytes) -> Result<Entry, PipelineError> {
        // One drain of the file-change queue for the job's checks
        // (crate::cache::SyncedSince).
        let _fresh = SyncedSince::now();
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
}

/// Dependencies gathered over several stages: one per file, in path order.
pub(super) fn merged_deps(mut deps: Vec<Dep>) -> Arc<[Dep]> {
    deps.sort_by(|a, b| a.path.cmp(&b.path));
    deps.dedup_by(|a, b| a.path == b.path);
    deps.into()
}
