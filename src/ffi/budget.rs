//! What one render may spend inside libxml2 and libxslt, enforced where the
//! work happens: a wall-clock deadline and a cancel flag, and an allocation
//! budget.
//!
//! Why here: an operation count does not bound time (one XPath op can copy
//! a whole node set) and nothing above `ffi` can interrupt a running
//! transform. A [`BudgetScope`] is entered on the thread that runs a render
//! (a transform thread) for the render's whole life, nested `axle:` renders
//! included:
//! - **time and cancellation**: every transform context created while the
//!   scope is live is registered; one watchdog thread stops the registered
//!   contexts of a scope whose deadline has passed or whose cancel flag is
//!   set, by setting the context's stop state and its op limits (libxslt
//!   checks the state between instructions, libxml2 the XPath op limit at
//!   every op), so the transform ends at its next check;
//! - **memory**: every libxml2/libxslt allocation goes through
//!   [`xmlMemSetup`]'s hooks; on a thread inside a scope the bytes are
//!   charged (by the allocator's usable size) and an allocation past the
//!   budget fails, which both libraries report as an error, and stops the
//!   thread's transform. Outside a scope the hooks only forward.
//!
//! A stopped transform's compiled instance is dropped rather than reused
//! (its per-transform state may be half-written).

use std::cell::{Cell, RefCell};
use std::os::raw::{c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::sys;

/// What a render may spend.
#[derive(Debug, Clone)]
pub struct RenderBudget {
    /// When the render must end.
    pub deadline: Option<Instant>,
    /// Bytes libxml2 and libxslt may hold for it (0: unlimited).
    pub memory: u64,
    /// Set (by anyone) to stop the render: its client has gone.
    pub cancel: Arc<AtomicBool>,
}

impl RenderBudget {
    /// No deadline, no memory budget, never cancelled.
    pub fn unlimited() -> RenderBudget {
        RenderBudget {
            deadline: None,
            memory: 0,
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Why a render was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// Its deadline passed.
    Deadline,
    /// It needed more memory than its budget.
    Memory,
    /// Its client went away.
    Cancelled,
}

const NONE: u8 = 0;
const DEADLINE: u8 = 1;
const MEMORY: u8 = 2;
const CANCELLED: u8 = 3;

/// The part of a scope the watchdog sees.
#[derive(Debug)]
struct Shared {
    deadline: Option<Instant>,
    cancel: Arc<AtomicBool>,
    /// Why it was stopped (`NONE` while running).
    reason: AtomicU8,
    /// Live transform contexts (addresses), innermost last. A context is
    /// removed (under this lock) before it is freed, so the watchdog
    /// never touches a freed one.
    contexts: Mutex<Vec<usize>>,
}

impl Shared {
    /// Records `why` (the first reason wins) and stops every live context.
    fn stop(&self, why: u8) {
        let _ = self
            .reason
            .compare_exchange(NONE, why, Ordering::AcqRel, Ordering::Acquire);
        let contexts = self
            .contexts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for &ctxt in contexts.iter() {
            // SAFETY: `ctxt` is a live transform context: contexts are
            // removed from this list, under this lock, before they are
            // freed. The shim only stores into its `state` and op limit
            // fields (aligned word stores the transform's thread reads at
            // its next check; see the module doc).
            unsafe { sys::shim_ctxt_stop(ctxt as *mut sys::xsltTransformContext) };
        }
    }

    fn exceeded(&self) -> Option<Exceeded> {
        match self.reason.load(Ordering::Acquire) {
            DEADLINE => Some(Exceeded::Deadline),
            MEMORY => Some(Exceeded::Memory),
            CANCELLED => Some(Exceeded::Cancelled),
            _ => None,
        }
    }
}

thread_local! {
    /// The scope this thread runs a render in, if any.
    static SCOPE: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
    /// Bytes charged to this thread's scope (may go below zero: memory
    /// allocated before the scope and freed inside it).
    static CHARGED: Cell<i64> = const { Cell::new(0) };
    /// The most charged at once in this scope.
    static PEAK: Cell<i64> = const { Cell::new(0) };
    /// The memory budget (0: none, and the hooks only forward).
    static LIMIT: Cell<i64> = const { Cell::new(0) };
}

/// A render's budget, in force on this thread while the value lives.
#[derive(Debug)]
pub struct BudgetScope {
    shared: Arc<Shared>,
    outer: Option<(Option<Arc<Shared>>, i64, i64, i64)>,
}

impl BudgetScope {
    /// Enters `budget` on this thread. A scope entered inside another (a
    /// nested render run by the same thread) keeps the outer one's budget
    /// and deadline, so nesting never buys more.
    pub fn enter(budget: &RenderBudget) -> BudgetScope {
        if let Some(outer) = SCOPE.with(|s| s.borrow().clone()) {
            return BudgetScope {
                shared: outer,
                outer: None,
            };
        }
        let shared = Arc::new(Shared {
            deadline: budget.deadline,
            cancel: Arc::clone(&budget.cancel),
            reason: AtomicU8::new(NONE),
            contexts: Mutex::new(Vec::new()),
        });
        let saved = (
            SCOPE.with(|s| s.replace(Some(Arc::clone(&shared)))),
            CHARGED.replace(0),
            PEAK.replace(0),
            LIMIT.replace(i64::try_from(budget.memory).unwrap_or(i64::MAX)),
        );
        watchdog().watch(&shared);
        BudgetScope {
            shared,
            outer: Some(saved),
        }
    }

    /// Why the render was stopped, if it was; also stops it now if its
    /// deadline has passed or it was cancelled (for the work between
    /// transforms, which no watchdog can interrupt).
    pub fn check(&self) -> Option<Exceeded> {
        if self.shared.exceeded().is_none() {
            if self.shared.cancel.load(Ordering::Acquire) {
                self.shared.stop(CANCELLED);
            } else if self.shared.deadline.is_some_and(|d| Instant::now() >= d) {
                self.shared.stop(DEADLINE);
            }
        }
        self.shared.exceeded()
    }

    /// The most bytes libxml2 and libxslt held at once for this render.
    pub fn peak_bytes(&self) -> u64 {
        u64::try_from(PEAK.get()).unwrap_or(0)
    }
}

impl Drop for BudgetScope {
    fn drop(&mut self) {
        if let Some((scope, charged, peak, limit)) = self.outer.take() {
            let big = PEAK.get() > RETURN_AFTER;
            let _ = SCOPE.try_with(|s| *s.borrow_mut() = scope);
            CHARGED.set(charged);
            PEAK.set(peak);
            LIMIT.set(limit);
            if big {
                return_free_memory();
            }
        }
    }
}

/// Gives this thread's free memory back to the system: mimalloc's
/// `mi_collect`; nothing under the system allocator (the `mimalloc`
/// feature off, as in AddressSanitizer builds), whose arenas glibc trims
/// itself.
fn return_free_memory() {
    #[cfg(feature = "mimalloc")]
    // SAFETY: mi_collect takes no pointers; it returns this thread's free
    // memory to the system.
    unsafe {
        libmimalloc_sys::mi_collect(true)
    };
}

/// After a render that held more than this, this thread's free memory is
/// given back to the system.
const RETURN_AFTER: i64 = 64 << 20;

/// Why the render on this thread was stopped, if it runs in a scope and
/// was.
pub(super) fn exceeded_here() -> Option<Exceeded> {
    SCOPE.with(|s| s.borrow().as_ref().and_then(|shared| shared.exceeded()))
}

/// Registers a transform context created on this thread, so the scope's
/// watchdog can stop it; the returned guard unregisters it and must drop
/// before the context is freed.
pub(super) fn register(ctxt: *mut sys::xsltTransformContext) -> ContextGuard {
    let shared = SCOPE.with(|s| s.borrow().clone());
    if let Some(shared) = &shared {
        shared
            .contexts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(ctxt as usize);
        if shared.exceeded().is_some() {
            // SAFETY: `ctxt` is live (just created by the caller).
            unsafe { sys::shim_ctxt_stop(ctxt) };
        }
    }
    ContextGuard {
        shared,
        ctxt: ctxt as usize,
    }
}

/// A registered transform context; unregisters it when dropped.
pub(super) struct ContextGuard {
    shared: Option<Arc<Shared>>,
    ctxt: usize,
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            let mut contexts = shared
                .contexts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(i) = contexts.iter().rposition(|&c| c == self.ctxt) {
                contexts.remove(i);
            }
        }
    }
}

/// The one thread that stops renders past their deadline or cancelled.
struct Watchdog {
    scopes: Mutex<Vec<Weak<Shared>>>,
    wake: Condvar,
}

/// How often the watchdog looks at cancel flags (deadlines wake it on
/// time).
const POLL: Duration = Duration::from_millis(25);

fn watchdog() -> &'static Watchdog {
    static DOG: OnceLock<&'static Watchdog> = OnceLock::new();
    DOG.get_or_init(|| {
        let dog: &'static Watchdog = Box::leak(Box::new(Watchdog {
            scopes: Mutex::new(Vec::new()),
            wake: Condvar::new(),
        }));
        let spawned = std::thread::Builder::new()
            .name("axle-watchdog".into())
            .spawn(move || dog.run());
        if let Err(e) = spawned {
            tracing::error!(error = %e, "no watchdog thread: render deadlines are checked only between transforms");
        }
        dog
    })
}

impl Watchdog {
    fn watch(&self, shared: &Arc<Shared>) {
        self.scopes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Arc::downgrade(shared));
        self.wake.notify_one();
    }

    fn run(&self) {
        let mut scopes = self
            .scopes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            let now = Instant::now();
            let mut next = now + POLL;
            scopes.retain(|weak| {
                let Some(shared) = weak.upgrade() else {
                    return false;
                };
                if shared.exceeded().is_some() {
                    return false;
                }
                if shared.cancel.load(Ordering::Acquire) {
                    shared.stop(CANCELLED);
                    return false;
                }
                match shared.deadline {
                    Some(d) if d <= now => {
                        shared.stop(DEADLINE);
                        false
                    }
                    Some(d) => {
                        next = next.min(d);
                        true
                    }
                    None => true,
                }
            });
            let wait = if scopes.is_empty() {
                Duration::from_secs(3600)
            } else {
                next.saturating_duration_since(Instant::now())
            };
            scopes = self
                .wake
                .wait_timeout(scopes, wait)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

/// Whether `extra` more bytes fit this thread's budget `limit`; when they
/// do not, the scope is stopped. Inlined into the hooks, which run for
/// every libxml2 allocation (4,000 in an uncached render of the sample
/// article): the check is two loads and a compare, the stop out of line.
#[inline(always)]
fn fits(extra: i64, limit: i64) -> bool {
    if CHARGED.get().saturating_add(extra) <= limit {
        return true;
    }
    over_budget();
    false
}

/// Stops this thread's scope: an allocation did not fit its budget.
#[cold]
#[inline(never)]
fn over_budget() {
    let _ = SCOPE.try_with(|s| {
        if let Ok(scope) = s.try_borrow()
            && let Some(shared) = scope.as_ref()
        {
            shared.stop(MEMORY);
        }
    });
}

/// Adds `delta` (negative for a free) to this thread's charge.
#[inline(always)]
fn add(delta: i64) {
    let charged = CHARGED.get().saturating_add(delta);
    CHARGED.set(charged);
    if charged > PEAK.get() {
        PEAK.set(charged);
    }
}

#[inline(always)]
fn usable(p: *mut c_void) -> i64 {
    if p.is_null() {
        return 0;
    }
    // SAFETY: `p` is a live block from this process's malloc.
    i64::try_from(unsafe { sys::malloc_usable_size(p) }).unwrap_or(i64::MAX)
}

/// `xmlMalloc` (and `xmlMallocAtomic`): malloc, charged inside a scope.
pub(super) unsafe extern "C" fn counted_malloc(size: usize) -> *mut c_void {
    let limit = LIMIT.get();
    if limit == 0 {
        // SAFETY: plain malloc.
        return unsafe { sys::malloc(size) };
    }
    if !fits(i64::try_from(size).unwrap_or(i64::MAX), limit) {
        return std::ptr::null_mut();
    }
    // SAFETY: plain malloc.
    let p = unsafe { sys::malloc(size) };
    add(usable(p));
    p
}

/// `xmlRealloc`: realloc, the growth charged inside a scope.
pub(super) unsafe extern "C" fn counted_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    let limit = LIMIT.get();
    if limit == 0 {
        // SAFETY: forwards the caller's contract.
        return unsafe { sys::realloc(p, size) };
    }
    let old = usable(p);
    if !fits(i64::try_from(size).unwrap_or(i64::MAX) - old, limit) {
        return std::ptr::null_mut(); // `p` stays valid, as realloc's contract says
    }
    // SAFETY: forwards the caller's contract.
    let q = unsafe { sys::realloc(p, size) };
    if !q.is_null() {
        add(usable(q) - old);
    }
    q
}

/// `xmlFree`: free, credited inside a scope.
pub(super) unsafe extern "C" fn counted_free(p: *mut c_void) {
    if LIMIT.get() > 0 {
        add(-usable(p));
    }
    // SAFETY: forwards the caller's contract.
    unsafe { sys::free(p) }
}

/// `xmlMemStrdup`: a copy made with [`counted_malloc`].
pub(super) unsafe extern "C" fn counted_strdup(s: *const c_char) -> *mut c_char {
    if s.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `s` is a NUL-terminated string (the caller's contract).
    let len = unsafe { std::ffi::CStr::from_ptr(s) }
        .to_bytes_with_nul()
        .len();
    // SAFETY: see counted_malloc.
    let p = unsafe { counted_malloc(len) };
    if !p.is_null() {
        // SAFETY: both blocks hold at least `len` bytes and do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(s.cast::<u8>(), p.cast::<u8>(), len) };
    }
    p.cast()
}
