//! Incremental mode's walk over the stages: each stage stored under a key
//! over its input's hash, the response under the all-or-nothing key, and a
//! trace from the last stage's key to the response, so a recomputed stage
//! whose output did not change cuts the walk off early. Also how an
//! intermediate tree is stored elided (its hash without its bytes) and made
//! whole again when a later stage needs it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::cache::{ContentHash, Dep, Entry, Found, Key, Store, Tier};
use crate::ffi::{XmlDoc, XmlError};
use crate::language::{LanguageError, StageData};
use crate::provider::{Located, Source};

use super::job::{ChainJob, Want, merged_deps};
use super::{CacheStatus, Pipeline, PipelineError, Rendered, rendered};

impl Pipeline {
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
    ///
    /// `lean` (a produced source observed never to repeat, `repeats`):
    /// after the response key, no walk: the whole chain in one pool job,
    /// nothing stored, as `all` mode runs an uncacheable source.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn render_incremental(
        &self,
        job: ChainJob,
        located: &Located,
        source: Option<Source>,
        source_hash: ContentHash,
        validators: &mut Vec<Dep>,
        produced: bool,
        lean: bool,
    ) -> Result<Rendered, PipelineError> {
        let walk = Walk {
            keep_elided: produced,
            response_key: job.response_key(source_hash),
            uncacheable_stage: job.stages.iter().any(|s| !s.stage.cacheable()),
            job: Arc::new(job),
            located,
            source: source.map(|s| s.bytes),
            source_hash,
        };
        // With a stage that runs every time, the response is not a
        // function of the source: it is found only by the last stage's key.
        let found = match walk.uncacheable_stage {
            true => None,
            false => self.store.get_found(&walk.response_key, Tier::Final).await,
        };
        if let Some((entry, found)) = found {
            validators.extend(entry.deps.iter().cloned());
            let status = CacheStatus::of_found(found);
            return Ok(rendered(&entry, status, Some(walk.response_key)));
        }
        if lean {
            let source = match &walk.source {
                Some(bytes) => bytes.clone(),
                None => self.source_for(located, source_hash)?.bytes,
            };
            let job = Arc::clone(&walk.job);
            let entry = self.pool.run(move || job.run_all(source)).await??;
            validators.extend(entry.deps.iter().cloned());
            return Ok(rendered(&entry, CacheStatus::Miss, None));
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
        // Is the previous stage's entry stored (may it be made whole in
        // the store)?
        let mut previous_stored = true;
        for index in 0..total {
            let is_final = index + 1 == total;
            let stage_key = job.stage_key(index, input_hash);
            let cacheable = job.stages[index].stage.cacheable();
            if is_final && total > 1 && !walk.uncacheable_stage {
                if let Some((entry, stored, _)) = self.store.traced(&stage_key).await {
                    // Early cut-off: this input was seen before and its
                    // response is still stored. Not stored again under
                    // this request's key (a dynamic source has a new key
                    // each time); the trace finds it while it lasts.
                    if let Some(tree) = carried.take() {
                        self.pool.drop_on_pool(tree);
                    }
                    validators.extend(entry.deps.iter().cloned());
                    self.stats.cutoffs.fetch_add(1, Ordering::Relaxed);
                    let status = CacheStatus::of_reused(reused + 1, total);
                    return Ok(Some(rendered(&entry, status, Some(stored))));
                }
            }
            let (key, tier) = if is_final && walk.uncacheable_stage {
                // Keyed by its own input, which an uncacheable stage
                // before it makes anew: no response key, no trace.
                (stage_key, Tier::Final)
            } else if is_final {
                (walk.response_key, Tier::Final)
            } else {
                (stage_key, Tier::Intermediate)
            };
            // The input; `None` when it is an elided output found in the
            // store, usable only through what is stored (or being computed)
            // under this stage's key.
            let mut input = match (carried.take(), &previous) {
                (Some(tree), Some((_, p))) if p.elided && !walk.keep_elided => Some(Input::Tree {
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
            let (entry, found) = if !cacheable {
                // Run on every request, never stored; the stages after it
                // are keyed by its output's hash.
                let Some(input) = input.take() else {
                    return Ok(None);
                };
                let (entry, tree, made_whole) = self
                    .compute_stage(walk, index, input, whole, earlier)
                    .await?;
                made = Some((tree, made_whole));
                (entry, false)
            } else if whole {
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
                        // Kept only if nothing it read changed meanwhile
                        // (a file read while being written is never kept).
                        if self.store.holds(&entry) {
                            self.store.insert(key, tier, Arc::clone(&entry)).await;
                        }
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
                    Ok(Some((entry, found))) => (entry, found != Found::Computed),
                    // Computed (here or by a walk this one joined) from a
                    // file that changed since: dropped; the caller walks
                    // again, whole, uncoalesced.
                    Ok(None) => return Ok(None),
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
                if let (Some(whole_entry), Some((previous_key, _)), true) =
                    (made_whole, &previous, previous_stored)
                {
                    // The previous output was serialized to run this
                    // stage: store it whole in place of its elided entry.
                    self.store
                        .insert(*previous_key, Tier::Intermediate, Arc::new(whole_entry))
                        .await;
                }
            }
            if is_final {
                if total > 1 && !walk.uncacheable_stage {
                    self.store.put_trace(stage_key, walk.response_key);
                }
                validators.extend(entry.deps.iter().cloned());
                let status = CacheStatus::of_reused(reused, total);
                let stored = cacheable.then_some(key);
                return Ok(Some(rendered(&entry, status, stored)));
            }
            previous_stored = cacheable;
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
        let keep_elided = walk.keep_elided;
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
                    } else if !keep_elided && !job.next_looks_cut_off(index, entry.hash, &store) {
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
        variants: Default::default(),
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
    /// Does a stage of the chain say it may not be cached?
    uncacheable_stage: bool,
    /// A source produced per request (uncacheable): its intermediate
    /// outputs are stored elided, never serialized. A source that changes
    /// on every request would pay for serializing outputs no request reads
    /// again; one that repeats is answered by the response key, and one
    /// whose first stages repeat (a volatile part dropped) by the trace.
    /// A later request that needs such an output as input walks whole.
    keep_elided: bool,
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

impl ChainJob {
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
}
