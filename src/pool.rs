//! The transform pool: dedicated threads with 16 MiB stacks.
//!
//! Why not tokio's blocking pool: its threads have 2 MiB stacks, and libxslt
//! recursion overflows 2 MiB *below* libxslt's own depth limit (measured:
//! sibling recursion overflows at ~3,250 levels, the limit is 3,000), and a
//! stack overflow aborts the whole process. 16 MiB gives ~8× headroom.
//! A panic inside a job is caught and becomes an error; the thread lives on.
//!
//! Results come back one at a time, or in batches while transforms queue
//! ([`handoff`]).

use std::panic::AssertUnwindSafe;

mod handoff;

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
    load: std::sync::Arc<Load>,
    handoff: std::sync::Arc<handoff::Handoff>,
}

/// Jobs waiting and running (the metrics' queue depth and busy threads).
#[derive(Debug, Default)]
struct Load {
    queued: std::sync::atomic::AtomicUsize,
    busy: std::sync::atomic::AtomicUsize,
}

impl Pool {
    /// A pool of `threads` threads (0: one per CPU) that hands each
    /// result back when its job ends.
    pub fn new(threads: usize) -> std::io::Result<Pool> {
        Pool::with_window(threads, std::time::Duration::ZERO)
    }

    /// A pool of `threads` threads (0: one per CPU) whose results may wait
    /// up to `window` while their thread has more work (the module's doc).
    /// A non-zero window needs tokio's time driver in the runtimes that
    /// call [`Pool::run`].
    pub fn with_window(threads: usize, window: std::time::Duration) -> std::io::Result<Pool> {
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
            load: std::sync::Arc::default(),
            handoff: std::sync::Arc::new(handoff::Handoff::new(window)),
        })
    }

    /// Number of threads.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Jobs sent to the pool and not started yet.
    pub fn queued(&self) -> usize {
        self.load.queued.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Threads running a job now.
    pub fn busy(&self) -> usize {
        self.load.busy.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Results ever handed back in a batch rather than when their job
    /// ended ([`handoff`]).
    pub fn batched(&self) -> u64 {
        self.handoff.held()
    }

    /// Runs `job` on a pool thread and waits for it without blocking the
    /// async runtime.
    pub async fn run<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        use std::sync::atomic::Ordering::Relaxed;
        let load = std::sync::Arc::clone(&self.load);
        let handoff = std::sync::Arc::clone(&self.handoff);
        let in_flight = load.queued.fetch_add(1, Relaxed) + 1 + load.busy.load(Relaxed);
        let job: Job = Box::new(move || {
            load.queued.fetch_sub(1, Relaxed);
            load.busy.fetch_add(1, Relaxed);
            let started = std::time::Instant::now();
            let result = std::panic::catch_unwind(AssertUnwindSafe(job)).map_err(|payload| {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_string());
                PoolError::Panicked(msg)
            });
            load.busy.fetch_sub(1, Relaxed);
            let more_work = load.queued.load(Relaxed) > 0;
            handoff.finish(Box::new(move || drop(tx.send(result))), started, more_work);
        });
        self.queue.send(job).map_err(|_| {
            self.load.queued.fetch_sub(1, Relaxed);
            PoolError::Closed
        })?;
        if in_flight > self.size {
            let (load, size) = (std::sync::Arc::clone(&self.load), self.size);
            self.handoff
                .collect(move || load.queued.load(Relaxed) + load.busy.load(Relaxed) > size);
        }
        rx.await.map_err(|_| PoolError::Closed)?
    }

    /// Drops `value` on a pool thread, without waiting for it: for trees
    /// built there, whose hundreds of blocks the allocator frees more
    /// cheaply on the thread that allocated them (and off the connection
    /// thread). When the pool is gone, `value` is dropped here.
    pub fn drop_on_pool<T: Send + 'static>(&self, value: T) {
        let job: Job = Box::new(move || drop(value));
        // On failure the job comes back and is dropped here, value and all.
        let _ = self.queue.send(job);
    }
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
    async fn values_dropped_on_the_pool_are_dropped_there() {
        struct Noisy(std::sync::mpsc::Sender<Option<String>>);
        impl Drop for Noisy {
            fn drop(&mut self) {
                let _ = self
                    .0
                    .send(std::thread::current().name().map(str::to_string));
            }
        }
        let pool = Pool::new(1).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        pool.drop_on_pool(Noisy(tx));
        let thread = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        assert_eq!(thread.as_deref(), Some("axle-xslt-0"));
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
}
