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
//!   charged (the bytes asked for, plus the 16-byte header that records
//!   them) and an allocation past the budget fails, which both libraries
//!   report as an error, and stops the thread's transform. Outside a scope
//!   the hooks only add and read that header.
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
    state: Mutex<DogState>,
    wake: Condvar,
}

/// What the watchdog watches, and when it looks next.
struct DogState {
    scopes: Vec<Weak<Shared>>,
    /// When the sleeping watchdog wakes by itself; `None` while it is
    /// awake (it looks at every scope before it sleeps again).
    until: Option<Instant>,
}

/// How often the watchdog looks at cancel flags (deadlines wake it on
/// time).
const POLL: Duration = Duration::from_millis(25);

fn watchdog() -> &'static Watchdog {
    static DOG: OnceLock<&'static Watchdog> = OnceLock::new();
    DOG.get_or_init(|| {
        let dog: &'static Watchdog = Box::leak(Box::new(Watchdog {
            state: Mutex::new(DogState {
                scopes: Vec::new(),
                until: None,
            }),
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
    /// Adds a scope. The watchdog is woken only when it would otherwise
    /// look too late: after the scope's deadline, or more than [`POLL`]
    /// from now (its cancel flag). Under load it is already looking every
    /// `POLL`, so a render costs it no wake-up (one per render was two
    /// context switches a render, on the transform thread's CPU).
    fn watch(&self, shared: &Arc<Shared>) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.scopes.push(Arc::downgrade(shared));
        let Some(until) = state.until else {
            return; // awake: it looks at this scope before it sleeps
        };
        let mut due = Instant::now() + POLL;
        if let Some(d) = shared.deadline {
            due = due.min(d);
        }
        if until > due {
            state.until = None; // one wake-up is enough
            self.wake.notify_one();
        }
    }

    fn run(&self) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            state.until = None;
            let now = Instant::now();
            let mut next = now + POLL;
            state.scopes.retain(|weak| {
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
            let wait = if state.scopes.is_empty() {
                Duration::from_secs(3600)
            } else {
                next.saturating_duration_since(Instant::now())
            };
            state.until = Some(Instant::now() + wait);
            state = self
                .wake
                .wait_timeout(state, wait)
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

/// Bytes in front of every block the hooks hand out: the block's whole
/// size (header included), so a free or a realloc knows what to credit
/// without asking the allocator (mimalloc's usable-size lookup was a third
/// of the hooks' cost). 16 keeps the 16-byte alignment malloc gives.
///
/// This needs every pointer libxml2 and libxslt pass to `xmlFree` and
/// `xmlRealloc` to come from these hooks, and none of theirs to reach
/// `free`: true of libxml2 2.9.14 and libxslt 1.1.35 (their sources'
/// plain `malloc`/`free` pairs are their own mutexes and thread state),
/// of `csrc/` (which pairs `malloc` with `free` and `xmlMalloc` with
/// `xmlFree`) and of the Rust side (which gives libxml2 no block to free
/// and frees libxml2's with `xmlFree`); the hooks are set before either
/// library allocates ([`super::init`]). The AddressSanitizer fuzz builds
/// use the system allocator, which reports a free of a pointer it did not
/// hand out.
const HEADER: usize = 16;

/// The block a hook's pointer `p` sits in, and that block's size.
///
/// # Safety
/// `p` is a non-null pointer returned by [`counted_malloc`] or
/// [`counted_realloc`] and not yet freed.
#[inline(always)]
unsafe fn block_of(p: *mut c_void) -> (*mut c_void, usize) {
    // SAFETY: `p` is HEADER bytes into a live block (the caller's
    // contract), whose first word the hooks wrote.
    unsafe {
        let base = p.cast::<u8>().sub(HEADER).cast::<c_void>();
        (base, base.cast::<usize>().read())
    }
}

/// Writes `total` into the header of the new block `base` and returns the
/// pointer handed to libxml2.
///
/// # Safety
/// `base` is a live, non-null block of at least `total` (> HEADER) bytes,
/// aligned for `usize`.
#[inline(always)]
unsafe fn hand_out(base: *mut c_void, total: usize) -> *mut c_void {
    // SAFETY: the caller's contract.
    unsafe {
        base.cast::<usize>().write(total);
        base.cast::<u8>().add(HEADER).cast()
    }
}

#[inline(always)]
fn signed(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `xmlMalloc` (and `xmlMallocAtomic`): malloc, charged inside a scope.
pub(super) unsafe extern "C" fn counted_malloc(size: usize) -> *mut c_void {
    let Some(total) = size.checked_add(HEADER) else {
        return std::ptr::null_mut();
    };
    let limit = LIMIT.get();
    if limit != 0 && !fits(signed(total), limit) {
        return std::ptr::null_mut();
    }
    // SAFETY: plain malloc.
    let base = unsafe { sys::malloc(total) };
    if base.is_null() {
        return base;
    }
    if limit != 0 {
        add(signed(total));
    }
    // SAFETY: `base` is a fresh block of `total` bytes, malloc-aligned.
    unsafe { hand_out(base, total) }
}

/// `xmlRealloc`: realloc, the growth charged inside a scope.
pub(super) unsafe extern "C" fn counted_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() {
        // SAFETY: realloc(NULL, n) is malloc(n).
        return unsafe { counted_malloc(size) };
    }
    let Some(total) = size.checked_add(HEADER) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `p` came from these hooks (the caller's contract, see HEADER).
    let (base, old) = unsafe { block_of(p) };
    let limit = LIMIT.get();
    if limit != 0 && !fits(signed(total) - signed(old), limit) {
        return std::ptr::null_mut(); // `p` stays valid, as realloc's contract says
    }
    // SAFETY: `base` is the live block `p` was handed out from.
    let moved = unsafe { sys::realloc(base, total) };
    if moved.is_null() {
        return moved;
    }
    if limit != 0 {
        add(signed(total) - signed(old));
    }
    // SAFETY: `moved` is a live block of `total` bytes, malloc-aligned.
    unsafe { hand_out(moved, total) }
}

/// `xmlFree`: free, credited inside a scope.
pub(super) unsafe extern "C" fn counted_free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` came from these hooks (the caller's contract, see HEADER).
    let (base, total) = unsafe { block_of(p) };
    if LIMIT.get() > 0 {
        add(-signed(total));
    }
    // SAFETY: `base` is the live block `p` was handed out from.
    unsafe { sys::free(base) }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(memory: u64) -> BudgetScope {
        BudgetScope::enter(&RenderBudget {
            memory,
            ..RenderBudget::unlimited()
        })
    }

    #[test]
    fn the_hooks_charge_what_they_hand_out_and_credit_it_back() {
        std::thread::spawn(|| {
            let s = scope(1 << 20);
            // SAFETY: the hooks' own contract: blocks from counted_malloc
            // and counted_realloc, freed once.
            unsafe {
                let p = counted_malloc(100).cast::<u8>();
                assert!(!p.is_null());
                assert_eq!(p as usize % 16, 0, "malloc's alignment is kept");
                assert_eq!(CHARGED.get(), 116);
                std::ptr::write_bytes(p, 7, 100);
                let q = counted_realloc(p.cast(), 5000).cast::<u8>();
                assert_eq!(CHARGED.get(), 5016);
                assert!((0..100).all(|i| *q.add(i) == 7), "realloc keeps the bytes");
                let r = counted_realloc(q.cast(), 10).cast::<u8>();
                assert_eq!(CHARGED.get(), 26);
                assert_eq!(*r.add(9), 7);
                let t = counted_strdup(c"axle".as_ptr());
                assert_eq!(std::ffi::CStr::from_ptr(t).to_bytes(), b"axle");
                assert_eq!(CHARGED.get(), 26 + 21);
                counted_free(t.cast());
                counted_free(r.cast());
                counted_free(std::ptr::null_mut());
                assert_eq!(CHARGED.get(), 0);
                assert_eq!(s.peak_bytes(), 5016);
                let n = counted_realloc(std::ptr::null_mut(), 8);
                assert_eq!(CHARGED.get(), 24);
                counted_free(n);
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_allocation_past_the_budget_fails_and_stops_the_scope_at_the_edge() {
        std::thread::spawn(|| {
            let s = scope(1000);
            // SAFETY: as above.
            unsafe {
                let fits = counted_malloc(1000 - HEADER);
                assert!(!fits.is_null(), "exactly the budget fits");
                assert_eq!(s.check(), None);
                assert!(counted_realloc(fits, 1000 - HEADER + 1).is_null());
                assert_eq!(s.check(), Some(Exceeded::Memory));
                // The block refused a realloc is still whole and freeable.
                counted_free(fits);
                assert_eq!(CHARGED.get(), 0);
                assert!(counted_malloc(usize::MAX - 8).is_null());
            }
            drop(s);
            // Outside a scope nothing is charged and nothing refused.
            // SAFETY: as above.
            unsafe {
                let p = counted_malloc(4000);
                assert!(!p.is_null());
                assert_eq!(CHARGED.get(), 0);
                counted_free(p);
            }
        })
        .join()
        .unwrap();
    }
}
