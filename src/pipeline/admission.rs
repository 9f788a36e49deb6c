//! Who may render, and what a render may spend: admission (a bounded queue
//! for the transform threads, and a bound on renders of one URL path at
//! once, so a flood of `?x=N` variants of one slow page cannot hold every
//! thread) and the per-request budget every job of a render runs under
//! (its deadline, memory budget and cancel flag, enforced by
//! [`crate::ffi::BudgetScope`], and its count of nested `axle:` renders).
//!
//! Why here: the pipeline is the first layer that knows a request from a
//! job; the HTTP layer only maps what it reports ([`PipelineError::Busy`],
//! [`PipelineError::Stopped`], [`PipelineError::Limit`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::config::RenderLimits;
use crate::ffi::{BudgetScope, Exceeded, RenderBudget};

use super::{PipelineError, RenderRequest};

/// Admission to the transform threads.
#[derive(Debug)]
pub(super) struct Admission {
    /// Renders running or waiting: the threads plus the queue.
    slots: Arc<Semaphore>,
    /// Renders of one URL path at once, counted by variant.
    per_url: usize,
    urls: Mutex<HashMap<Arc<str>, UrlRenders>>,
    /// How long a render may wait for its URL's turn.
    wait: Duration,
}

/// The renders of one URL path under way: one permit per variant (a set of
/// parameters, style and media), shared by every request for it, so the
/// same page asked for by many clients at once renders on every thread,
/// while a new `?x=N` per request takes a permit of its own.
#[derive(Debug)]
struct UrlRenders {
    permits: Arc<Semaphore>,
    variants: HashMap<u64, (Arc<OwnedSemaphorePermit>, usize)>,
}

/// A render's admission: held until the render ends.
#[derive(Debug)]
pub(super) struct Admitted<'a> {
    admission: &'a Admission,
    url: Arc<str>,
    variant: u64,
    _slot: OwnedSemaphorePermit,
    url_permit: Option<Arc<OwnedSemaphorePermit>>,
}

impl Admission {
    pub(super) fn new(limits: &RenderLimits, threads: usize) -> Admission {
        let per_url = match limits.max_per_url {
            0 => threads.saturating_sub(1).max(1),
            n => n,
        };
        Admission {
            slots: Arc::new(Semaphore::new(threads + limits.max_queue)),
            per_url,
            urls: Mutex::new(HashMap::new()),
            wait: limits.timeout,
        }
    }

    /// Admits a render of `variant` (a hash of what besides the path makes
    /// it differ) of `url`, or says why not: the queue is full (at once), or
    /// renders of other variants of this URL held its turn for longer than
    /// a render may take.
    pub(super) async fn admit(
        &self,
        url: &str,
        variant: u64,
    ) -> Result<Admitted<'_>, PipelineError> {
        let slot = match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(permit) => permit,
            Err(TryAcquireError::NoPermits | TryAcquireError::Closed) => {
                return Err(PipelineError::Busy(
                    "every transform thread is busy and the render queue is full".into(),
                ));
            }
        };
        let url: Arc<str> = Arc::from(url);
        let mut admitted = Admitted {
            admission: self,
            url: Arc::clone(&url),
            variant,
            _slot: slot,
            url_permit: None,
        };
        let permits = {
            let mut urls = self.urls.lock().unwrap_or_else(|e| e.into_inner());
            let renders = urls.entry(Arc::clone(&url)).or_insert_with(|| UrlRenders {
                permits: Arc::new(Semaphore::new(self.per_url)),
                variants: HashMap::new(),
            });
            if let Some((permit, count)) = renders.variants.get_mut(&variant) {
                *count += 1;
                admitted.url_permit = Some(Arc::clone(permit));
                return Ok(admitted);
            }
            Arc::clone(&renders.permits)
        };
        let Ok(Ok(permit)) = tokio::time::timeout(self.wait, permits.acquire_owned()).await else {
            return Err(PipelineError::Busy(format!(
                "{} renders of this address with other parameters are already running",
                self.per_url
            )));
        };
        let mut urls = self.urls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(renders) = urls.get_mut(&url) {
            // The same variant may have been admitted while this waited:
            // then this shares its permit and gives its own back.
            let (shared, count) = renders
                .variants
                .entry(variant)
                .or_insert_with(|| (Arc::new(permit), 0));
            *count += 1;
            admitted.url_permit = Some(Arc::clone(shared));
        }
        Ok(admitted)
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        let Some(permit) = self.url_permit.take() else {
            return;
        };
        let mut urls = self
            .admission
            .urls
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(renders) = urls.get_mut(&self.url) else {
            return;
        };
        if let Some((_, count)) = renders.variants.get_mut(&self.variant) {
            *count -= 1;
            if *count == 0 {
                renders.variants.remove(&self.variant);
            }
        }
        drop(permit);
        // Forget a URL nobody renders or waits for (a waiter holds a
        // reference to its semaphore).
        if renders.variants.is_empty() && Arc::strong_count(&renders.permits) == 1 {
            urls.remove(&self.url);
        }
    }
}

/// What makes renders of one URL path differ (parameters, style, media,
/// the location's configuration), as a hash for [`Admission::admit`].
pub(super) fn variant(req: &RenderRequest) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    req.params.hash(&mut h);
    req.selection.style.hash(&mut h);
    req.selection.media.hash(&mut h);
    req.location.map(|l| *l.as_bytes()).hash(&mut h);
    h.finish()
}

/// One request's budget, shared by every job of its render.
#[derive(Debug)]
pub(super) struct RequestBudget {
    budget: RenderBudget,
    nested: AtomicUsize,
    limits: RenderLimits,
}

thread_local! {
    /// The request whose job this thread runs (for nested renders).
    static CURRENT: RefCell<Option<Arc<RequestBudget>>> = const { RefCell::new(None) };
}

impl RequestBudget {
    /// A budget starting now.
    pub(super) fn new(limits: &RenderLimits) -> Arc<RequestBudget> {
        Arc::new(RequestBudget {
            budget: RenderBudget {
                deadline: (!limits.timeout.is_zero()).then(|| Instant::now() + limits.timeout),
                memory: limits.memory,
                cancel: Arc::new(AtomicBool::new(false)),
            },
            nested: AtomicUsize::new(0),
            limits: *limits,
        })
    }

    /// No limits (renders outside a request: tests, tools).
    pub(super) fn unlimited() -> Arc<RequestBudget> {
        Arc::new(RequestBudget {
            budget: RenderBudget::unlimited(),
            nested: AtomicUsize::new(0),
            limits: RenderLimits {
                timeout: Duration::ZERO,
                memory: 0,
                max_source_bytes: u64::MAX,
                max_output_bytes: u64::MAX,
                max_chain: usize::MAX,
                max_nested: usize::MAX,
                max_xinclude_nodes: u64::MAX,
                max_queue: usize::MAX,
                max_per_url: usize::MAX,
                client: crate::ffi::UntrustedLimits::default(),
            },
        })
    }

    /// The limits in force.
    pub(super) fn limits(&self) -> &RenderLimits {
        &self.limits
    }

    /// Enters this budget on the current thread for one job; an error when
    /// it is already spent (the render waited past its deadline, or its
    /// client has gone).
    pub(super) fn enter(self: &Arc<Self>) -> Result<JobScope, PipelineError> {
        let scope = BudgetScope::enter(&self.budget);
        let outer = CURRENT.with(|c| c.replace(Some(Arc::clone(self))));
        let job = JobScope {
            scope,
            budget: Arc::clone(self),
            outer,
        };
        match job.scope.check() {
            Some(why) => Err(job.stopped(why)),
            None => Ok(job),
        }
    }

    /// A guard that cancels the render when dropped before
    /// [`CancelOnDrop::finished`]: the future awaiting it was dropped, so
    /// nobody wants the result (the client went away).
    pub(super) fn cancel_on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(Some(Arc::clone(&self.budget.cancel)))
    }
}

/// Cancels a render when dropped unfinished.
#[derive(Debug)]
pub(super) struct CancelOnDrop(Option<Arc<AtomicBool>>);

impl CancelOnDrop {
    /// The render ended: dropping the guard no longer cancels anything.
    pub(super) fn finished(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(flag) = self.0.take() {
            flag.store(true, Ordering::Release);
        }
    }
}

/// One job's budget on its thread.
pub(super) struct JobScope {
    scope: BudgetScope,
    budget: Arc<RequestBudget>,
    outer: Option<Arc<RequestBudget>>,
}

impl JobScope {
    /// `error` as the render's own failure, or as the budget's when the
    /// budget stopped it (libxml2's "out of memory" or libxslt's "stopped"
    /// are symptoms; the budget is the cause).
    pub(super) fn explain(&self, error: PipelineError) -> PipelineError {
        match self.scope.check() {
            Some(why) => self.stopped(why),
            None => error,
        }
    }

    /// The error for a render stopped for `why`, naming the limit.
    fn stopped(&self, why: Exceeded) -> PipelineError {
        let limits = &self.budget.limits;
        let limit = match why {
            Exceeded::Deadline => format!("render-timeout {:?}", limits.timeout),
            Exceeded::Memory => format!("render-memory {} bytes", limits.memory),
            Exceeded::Cancelled => "its client went away".to_string(),
        };
        PipelineError::Stopped { why, limit }
    }
}

impl Drop for JobScope {
    fn drop(&mut self) {
        let outer = self.outer.take();
        let _ = CURRENT.try_with(|c| *c.borrow_mut() = outer);
    }
}

/// The budget of the request whose job this thread runs (unlimited when
/// none: a render outside a request).
pub(super) fn current() -> Arc<RequestBudget> {
    CURRENT
        .with(|c| c.borrow().clone())
        .unwrap_or_else(RequestBudget::unlimited)
}

/// Counts one nested `axle:` render against the current request's limit.
pub(super) fn count_nested() -> Result<(), String> {
    CURRENT.with(|c| match c.borrow().as_ref() {
        Some(budget) => {
            let n = budget.nested.fetch_add(1, Ordering::Relaxed) + 1;
            if n > budget.limits.max_nested {
                Err(format!(
                    "more than {} axle: documents rendered for one request (max-nested)",
                    budget.limits.max_nested
                ))
            } else {
                Ok(())
            }
        }
        None => Ok(()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(per_url: usize, queue: usize) -> Admission {
        let limits = RenderLimits {
            max_per_url: per_url,
            max_queue: queue,
            timeout: Duration::from_millis(200),
            ..RenderLimits::default()
        };
        Admission::new(&limits, 2)
    }

    #[tokio::test]
    async fn one_variant_shares_its_permit_and_others_wait_their_turn() {
        let a = admission(1, 16);
        let first = a.admit("/a.xml", 1).await.unwrap();
        // The same variant, many times: admitted at once.
        let same: Vec<_> = admit_n(&a, "/a.xml", 1, 5).await;
        assert!(same.iter().all(Result::is_ok));
        // Another variant of the same URL: refused after the wait.
        let other = a.admit("/a.xml", 2).await;
        assert!(matches!(other, Err(PipelineError::Busy(_))), "{other:?}");
        // Another URL is not held up.
        assert!(a.admit("/b.xml", 2).await.is_ok());
        drop(same);
        drop(first);
        // Every render of variant 1 ended: variant 2 gets its turn, and the
        // map forgets what nobody renders.
        let second = a.admit("/a.xml", 2).await.unwrap();
        drop(second);
        assert!(a.urls.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_full_queue_refuses_at_once() {
        let a = admission(8, 1);
        let held: Vec<_> = admit_n(&a, "/x.xml", 7, 3).await;
        assert!(held.iter().all(Result::is_ok), "two threads + one queued");
        let refused = a.admit("/y.xml", 1).await;
        assert!(matches!(refused, Err(PipelineError::Busy(ref why)) if why.contains("queue")));
    }

    async fn admit_n<'a>(
        a: &'a Admission,
        url: &str,
        variant: u64,
        n: usize,
    ) -> Vec<Result<Admitted<'a>, PipelineError>> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(a.admit(url, variant).await);
        }
        out
    }
}
