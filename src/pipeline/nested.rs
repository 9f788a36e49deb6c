//! `axle:` documents: another document of the site rendered through its own
//! chain inside a transform (for `document('axle:/x.xml')` and the like),
//! synchronously on the transform thread, with every file it reads
//! recorded as a dependency of the calling stage. Loops and runaway
//! nesting are caught per thread.

use std::sync::Arc;

use bytes::Bytes;

use crate::chain::{self, Selection};
use crate::ffi::Limits;
use crate::language::Registry;
use crate::provider::{FileProvider, InternalDocuments, Provider, RootResolver, Source};

use super::admission;
use super::compiled::Compiled;
use super::job::ChainJob;
use super::scan::scan_prolog;
use super::{Pipeline, Stats};

impl Pipeline {
    pub(super) fn internal_documents(&self) -> Arc<dyn InternalDocuments> {
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
pub(super) struct NestGuard;

impl NestGuard {
    /// Marks the top-level document (only when nothing is being rendered on
    /// this thread yet), so a loop back to it is caught at once.
    pub(super) fn enter_top(path: &str) -> Option<NestGuard> {
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
        admission::count_nested()?;
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
        let budget = admission::current();
        if specs.len() > budget.limits().max_chain {
            return Err(format!(
                "axle:{url} names a chain of {} stages, more than max-chain ({})",
                specs.len(),
                budget.limits().max_chain
            ));
        }
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
        let stages: Arc<[Arc<super::CompiledStage>]> = stages.into();
        let job = ChainJob {
            varies: super::varies_of(&stages, None),
            stages,
            params: Arc::from(Vec::new()),
            base_url: Arc::from(located.path.url()),
            limits: self.limits,
            force_byte_handoff: self.force_byte_handoff,
            files: self.files.clone(),
            stats: Arc::clone(&self.stats),
            location: None,
            xinclude: false,
            unicode_sort: false,
            trace: None,
            internal: Some(Arc::new(self.clone())),
            prolog: Some(Arc::new(prolog)),
            budget,
            request: None,
            untrusted: None,
            first_tree: None,
        };
        let entry = job.run_all(source.bytes).map_err(|e| e.to_string())?;
        for d in entry.deps.iter() {
            deps.record(d.clone());
        }
        Ok(entry.bytes.to_vec())
    }
}
