//! The transform pool: dedicated threads with 16 MiB stacks, and the
//! decision to run a cheap job inline on the connection thread instead.
//!
//! Why not tokio's blocking pool: its threads have 2 MiB stacks, and libxslt
//! recursion overflows 2 MiB *below* libxslt's own depth limit (measured:
//! sibling recursion overflows at ~3,250 levels, the limit is 3,000), and a
//! stack overflow aborts the whole process. 16 MiB gives ~8× headroom.
//! A panic inside a job is caught and becomes an error; the thread lives on.
//!
//! Inline runs: handing a job to a pool thread and its result back costs
//! two thread wake-ups and, on a busy machine, two context switches; for a
//! 100 µs transform that is over a tenth of its cost (measured on the
//! dynamic (article) page: 12.8% more requests per second inline). A job
//! whose measured cost (a moving average per *cost key*: the document and
//! the part of its chain) is below [`Pool::inline_below`] runs on the
//! calling thread, if that thread was started by [`spawn_serving_thread`]
//! (so it has a transform thread's stack) and has served nothing but
//! transformed responses for the last [`QUIET`] (see [`note_light`]: a
//! cache hit must never wait behind inline transforms). Unmeasured,
//! expensive or panicking jobs, and every job on other threads, go to the
//! pool, so a connection thread is never held by one job for longer than
//! about the threshold, and hits keep flowing while transforms run.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use std::panic::AssertUnwindSafe;

/// Stack size of every transform thread.
pub const STACK_SIZE: usize = 16 << 20;

/// Why a job produced no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The job panicked (a bug); the message is the panic payload.
    #[error("internal error in a transform: {0}")]
    Panicked(String),
    /// The pool is gone (shutting down).
    #[error("the transform pool is shut down")]
    Closed,
}

/// A job for a transform thread.
type Job = Box<dyn FnOnce() + Send + 'static>;

thread_local! {
    /// Whether this thread may run jobs inline (set by [`spawn_serving_thread`]).
    static SERVING: Cell<bool> = const { Cell::new(false) };
    /// Responses this thread served without a transform ([`note_light`]).
    static LIGHT: Cell<u64> = const { Cell::new(0) };
    /// [`LIGHT`] as last looked at, and when it was last seen to change.
    static LIGHT_SEEN: Cell<(u64, Option<Instant>)> = const { Cell::new((0, None)) };
}

/// How long a serving thread keeps every job on the pool after it served a
/// response without a transform (a cache hit, a static file).
pub const QUIET: Duration = Duration::from_millis(100);

/// Tells the pool that this thread just served a response without running
/// a transform (a hit, a static file). Such requests must not queue behind
/// inline transforms, so for [`QUIET`] after one, this thread runs none:
/// inline runs are for threads busy with transforms alone. (Measured with
/// cache hits and dynamic pages on one CPU: inline transforms cut the hits'
/// throughput from ~27k to ~5.5k requests/s and raised their median latency
/// from ~0.5 ms to ~3 ms; the pool lets the kernel share the CPU instead.)
pub fn note_light() {
    LIGHT.with(|l| l.set(l.get().wrapping_add(1)));
}

/// Whether this thread has served only transformed responses for
/// [`QUIET`] (as far as the last look can tell: a light response is
/// noticed at the next look, which then waits [`QUIET`] from there).
fn only_transforms_lately() -> bool {
    let light = LIGHT.with(Cell::get);
    LIGHT_SEEN.with(|seen| {
        let (counted, changed) = seen.get();
        let now = Instant::now();
        if light != counted {
            seen.set((light, Some(now)));
            return false;
        }
        changed.is_none_or(|at| now.duration_since(at) >= QUIET)
    })
}

/// Spawns a thread that serves connections: it has a transform thread's
/// stack, so the pool may run cheap jobs inline on it.
pub fn spawn_serving_thread<T, F>(name: String, f: F) -> std::io::Result<std::thread::JoinHandle<T>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    std::thread::Builder::new()
        .name(name)
        .stack_size(STACK_SIZE)
        .spawn(move || {
            SERVING.with(|s| s.set(true));
            f()
        })
}

/// Identifies what a job computes, for its cost estimate (see
/// [`Pool::run_costed`]).
pub type CostKey = u64;

/// Moving averages of job run times, in microseconds, by cost key.
#[derive(Debug, Default)]
struct Estimates {
    micros: Mutex<HashMap<CostKey, u32, foldhash::fast::RandomState>>,
}

/// Estimates kept at most; beyond it they are forgotten and measured again.
const MAX_ESTIMATES: usize = 16_384;

impl Estimates {
    fn get(&self, key: CostKey) -> Option<u32> {
        self.micros.lock().ok()?.get(&key).copied()
    }

    /// Records one run. A run slower than the estimate replaces it (one
    /// slow run sends the job to the pool at once); a faster one moves it
    /// a quarter of the way down (it comes back inline after a few).
    fn record(&self, key: CostKey, took: Duration) {
        let sample = u32::try_from(took.as_micros()).unwrap_or(u32::MAX);
        let Ok(mut map) = self.micros.lock() else {
            return;
        };
        if map.len() >= MAX_ESTIMATES && !map.contains_key(&key) {
            map.clear();
        }
        let estimate = map.entry(key).or_insert(sample);
        *estimate = if sample >= *estimate {
            sample
        } else {
            // Both are u32, so the average fits.
            u32::try_from((u64::from(*estimate) * 3 + u64::from(sample)) / 4).unwrap_or(u32::MAX)
        };
    }

    /// Never inline again (the job panicked).
    fn exclude(&self, key: CostKey) {
        if let Ok(mut map) = self.micros.lock() {
            map.insert(key, u32::MAX);
        }
    }
}

/// How many jobs ran where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunCounts {
    /// Jobs run on the calling (connection) thread.
    pub inline: u64,
    /// Jobs run on a pool thread.
    pub pooled: u64,
}

/// A fixed set of transform threads fed from one queue.
///
/// Why not rayon: its idle workers spin (`sched_yield`) before sleeping,
/// which on a 2-core machine takes CPU from the threads serving requests;
/// transforms are coarse jobs that need no work stealing. Idle threads here
/// block on the queue.
#[derive(Debug)]
pub struct Pool {
    queue: std::sync::mpsc::Sender<Job>,
    size: usize,
    inline_below: Duration,
    estimates: std::sync::Arc<Estimates>,
    inline_runs: AtomicU64,
    pooled_runs: AtomicU64,
}

impl Pool {
    /// A pool of `threads` threads (0: one per CPU) that runs nothing
    /// inline.
    pub fn new(threads: usize) -> std::io::Result<Pool> {
        Self::with_inline(threads, Duration::ZERO)
    }

    /// A pool of `threads` threads (0: one per CPU); jobs measured to take
    /// less than `inline_below` run on the calling serving thread
    /// (`Duration::ZERO`: never).
    pub fn with_inline(threads: usize, inline_below: Duration) -> std::io::Result<Pool> {
        let size = if threads == 0 {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        } else {
            threads
        };
        let (queue, jobs) = std::sync::mpsc::channel::<Job>();
        let jobs = std::sync::Arc::new(std::sync::Mutex::new(jobs));
        for i in 0..size {
            let jobs = std::sync::Arc::clone(&jobs);
            std::thread::Builder::new()
                .name(format!("axle-xslt-{i}"))
                .stack_size(STACK_SIZE)
                .spawn(move || {
                    loop {
                        // The lock is held only while waiting for the next
                        // job, never while running one.
                        let job = match jobs.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return, // the pool was dropped
                        }
                    }
                })?;
        }
        Ok(Pool {
            queue,
            size,
            inline_below,
            estimates: std::sync::Arc::default(),
            inline_runs: AtomicU64::new(0),
            pooled_runs: AtomicU64::new(0),
        })
    }

    /// Jobs measured to take less than this run inline.
    pub fn inline_below(&self) -> Duration {
        self.inline_below
    }

    /// How many costed jobs ran inline and on the pool so far.
    pub fn counts(&self) -> RunCounts {
        RunCounts {
            inline: self.inline_runs.load(Ordering::Relaxed),
            pooled: self.pooled_runs.load(Ordering::Relaxed),
        }
    }

    /// Whether a job with this key runs on the calling thread.
    fn inline(&self, key: CostKey) -> bool {
        !self.inline_below.is_zero()
            && SERVING.with(Cell::get)
            && only_transforms_lately()
            && self
                .estimates
                .get(key)
                .is_some_and(|micros| u128::from(micros) < self.inline_below.as_micros())
    }

    /// Runs `job`, inline when its key's measured cost is below the
    /// threshold and this is a serving thread, else on a pool thread; the
    /// run is timed either way. `key: None` (a stage that must not block a
    /// connection thread) always uses the pool.
    pub async fn run_costed<T, F>(&self, key: Option<CostKey>, job: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let Some(key) = key else {
            self.pooled_runs.fetch_add(1, Ordering::Relaxed);
            return self.run(job).await;
        };
        if self.inline(key) {
            self.inline_runs.fetch_add(1, Ordering::Relaxed);
            let start = Instant::now();
            let result = catch(job);
            match &result {
                Ok(_) => self.estimates.record(key, start.elapsed()),
                Err(_) => self.estimates.exclude(key),
            }
            return result;
        }
        self.pooled_runs.fetch_add(1, Ordering::Relaxed);
        let estimates = std::sync::Arc::clone(&self.estimates);
        let timed = move || {
            let start = Instant::now();
            let out = job();
            estimates.record(key, start.elapsed());
            out
        };
        let result = self.run(timed).await;
        if matches!(result, Err(PoolError::Panicked(_))) {
            self.estimates.exclude(key);
        }
        result
    }

    /// Number of threads.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Runs `job` on a pool thread and waits for it without blocking the
    /// async runtime.
    pub async fn run<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(catch(job));
        });
        self.queue.send(job).map_err(|_| PoolError::Closed)?;
        rx.await.map_err(|_| PoolError::Closed)?
    }
}

/// Runs `job`, turning a panic into [`PoolError::Panicked`].
fn catch<T>(job: impl FnOnce() -> T) -> Result<T, PoolError> {
    std::panic::catch_unwind(AssertUnwindSafe(job)).map_err(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".to_string());
        PoolError::Panicked(msg)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_and_panics_are_caught() {
        let pool = Pool::new(2).unwrap();
        assert_eq!(pool.run(|| 40 + 2).await, Ok(42));
        let err = pool.run(|| -> u8 { panic!("boom") }).await.unwrap_err();
        assert_eq!(err, PoolError::Panicked("boom".into()));
        assert_eq!(pool.run(|| 1).await, Ok(1), "the pool survives a panic");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn jobs_run_on_all_threads_at_once() {
        // Two jobs that each wait for the other: only finishes if both run
        // at the same time (the queue lock is not held while a job runs).
        let pool = std::sync::Arc::new(Pool::new(2).unwrap());
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let jobs: Vec<_> = (0..2)
            .map(|i| {
                let (pool, barrier) = (pool.clone(), barrier.clone());
                tokio::spawn(
                    async move { pool.run(move || barrier.wait().is_leader() as u8 + i).await },
                )
            })
            .collect();
        for job in jobs {
            let done = tokio::time::timeout(std::time::Duration::from_secs(10), job).await;
            assert!(done.is_ok(), "jobs were serialized");
        }
    }

    #[tokio::test]
    async fn threads_have_big_stacks() {
        let pool = Pool::new(1).unwrap();
        // Recurse ~8 MiB deep: fine on 16 MiB, fatal on a 2 MiB stack.
        fn deep(n: usize) -> usize {
            let buf = [0u8; 1024];
            if n == 0 {
                buf[0] as usize
            } else {
                deep(n - 1) + std::hint::black_box(&buf)[1] as usize
            }
        }
        assert_eq!(pool.run(|| deep(8 * 1024)).await, Ok(0));
    }

    /// Runs `f` on a serving thread's single-threaded runtime.
    fn on_serving_thread<T: Send + 'static>(
        f: impl FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>
        + Send
        + 'static,
    ) -> T {
        spawn_serving_thread("test-serving".into(), move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(f())
        })
        .unwrap()
        .join()
        .unwrap()
    }

    fn here() -> std::thread::ThreadId {
        std::thread::current().id()
    }

    #[test]
    fn measured_cheap_jobs_run_inline_on_serving_threads() {
        let pool = std::sync::Arc::new(Pool::with_inline(1, Duration::from_secs(10)).unwrap());
        let p = std::sync::Arc::clone(&pool);
        let (serving, ran) = on_serving_thread(move || {
            Box::pin(async move {
                let mut ran = Vec::new();
                for _ in 0..3 {
                    ran.push(p.run_costed(Some(7), here).await.unwrap());
                }
                // No key: the pool, however cheap.
                ran.push(p.run_costed(None, here).await.unwrap());
                (here(), ran)
            })
        });
        assert_ne!(ran[0], serving, "unmeasured: the pool");
        assert_eq!(ran[1], serving, "measured cheap: inline");
        assert_eq!(ran[2], serving);
        assert_ne!(ran[3], serving, "no cost key: the pool");
        assert_eq!(
            pool.counts(),
            RunCounts {
                inline: 2,
                pooled: 2
            }
        );
    }

    #[test]
    fn a_light_response_keeps_jobs_on_the_pool_for_a_while() {
        let pool = std::sync::Arc::new(Pool::with_inline(1, Duration::from_secs(10)).unwrap());
        let p = std::sync::Arc::clone(&pool);
        let (serving, ran) = on_serving_thread(move || {
            Box::pin(async move {
                let mut ran = vec![p.run_costed(Some(5), here).await.unwrap()];
                note_light();
                let noted = Instant::now();
                ran.push(p.run_costed(Some(5), here).await.unwrap());
                let pooled_in_time = noted.elapsed() < QUIET;
                tokio::time::sleep(QUIET).await;
                ran.push(p.run_costed(Some(5), here).await.unwrap());
                (here(), (ran, pooled_in_time))
            })
        });
        let (ran, in_time) = ran;
        if in_time {
            assert_ne!(ran[1], serving, "right after a light response: the pool");
        } else {
            eprintln!("(the machine is slow: the second job outlasted QUIET; not checked)");
        }
        assert_eq!(ran[2], serving, "after QUIET: inline again");
    }

    #[tokio::test]
    async fn other_threads_never_run_jobs_inline() {
        let pool = Pool::with_inline(1, Duration::from_secs(10)).unwrap();
        for _ in 0..3 {
            assert_ne!(pool.run_costed(Some(1), here).await.unwrap(), here());
        }
        assert_eq!(
            pool.counts(),
            RunCounts {
                inline: 0,
                pooled: 3
            }
        );
    }

    #[test]
    fn a_slow_run_sends_the_job_back_to_the_pool() {
        let pool = std::sync::Arc::new(Pool::with_inline(1, Duration::from_millis(20)).unwrap());
        let p = std::sync::Arc::clone(&pool);
        let (serving, ran) = on_serving_thread(move || {
            Box::pin(async move {
                let slow = |d: u64| {
                    move || {
                        std::thread::sleep(Duration::from_millis(d));
                        here()
                    }
                };
                let mut ran = Vec::new();
                ran.push(p.run_costed(Some(3), slow(0)).await.unwrap()); // measured: cheap
                ran.push(p.run_costed(Some(3), slow(60)).await.unwrap()); // inline, but slow
                ran.push(p.run_costed(Some(3), slow(0)).await.unwrap()); // so: the pool
                (here(), ran)
            })
        });
        assert_ne!(ran[0], serving);
        assert_eq!(ran[1], serving);
        assert_ne!(ran[2], serving, "one slow run is enough to leave");
    }

    #[test]
    fn an_inline_panic_is_an_error_and_the_job_leaves_for_good() {
        let pool = std::sync::Arc::new(Pool::with_inline(1, Duration::from_secs(10)).unwrap());
        let p = std::sync::Arc::clone(&pool);
        let (serving, outcomes) = on_serving_thread(move || {
            Box::pin(async move {
                let mut out = Vec::new();
                let text = |e: PoolError| e.to_string();
                out.push(p.run_costed(Some(9), here).await.map_err(text));
                let boom = || -> std::thread::ThreadId { panic!("inline boom") };
                out.push(p.run_costed(Some(9), boom).await.map_err(text));
                out.push(p.run_costed(Some(9), here).await.map_err(text));
                (here(), out)
            })
        });
        assert_ne!(outcomes[0], Ok(serving));
        assert_eq!(
            outcomes[1],
            Err("internal error in a transform: inline boom".to_string())
        );
        assert!(
            matches!(outcomes[2], Ok(id) if id != serving),
            "after a panic: the pool"
        );
        assert_eq!(
            pool.counts(),
            RunCounts {
                inline: 1,
                pooled: 2
            }
        );
    }

    #[test]
    fn serving_threads_have_big_stacks() {
        fn deep(n: usize) -> usize {
            let buf = [0u8; 1024];
            if n == 0 {
                buf[0] as usize
            } else {
                deep(n - 1) + std::hint::black_box(&buf)[1] as usize
            }
        }
        let depth = spawn_serving_thread("test-deep".into(), || deep(8 * 1024))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(depth, 0);
    }
}
