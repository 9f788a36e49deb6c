//! The transform pool: dedicated threads with 16 MiB stacks.
//!
//! Why not tokio's blocking pool: its threads have 2 MiB stacks, and libxslt
//! recursion overflows 2 MiB *below* libxslt's own depth limit (measured:
//! sibling recursion overflows at ~3,250 levels, the limit is 3,000), and a
//! stack overflow aborts the whole process. 16 MiB gives ~8× headroom.
//! A panic inside a job is caught and becomes an error; the thread lives on.

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

/// A fixed set of transform threads.
#[derive(Debug)]
pub struct Pool {
    threads: rayon::ThreadPool,
}

impl Pool {
    /// A pool of `threads` threads (0: one per CPU).
    pub fn new(threads: usize) -> std::io::Result<Pool> {
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .stack_size(STACK_SIZE)
            .thread_name(|i| format!("axle-xslt-{i}"))
            .build()
            .map_err(std::io::Error::other)?;
        Ok(Pool { threads })
    }

    /// Number of threads.
    pub fn size(&self) -> usize {
        self.threads.current_num_threads()
    }

    /// Runs `job` on a pool thread and waits for it without blocking the
    /// async runtime.
    pub async fn run<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.threads.spawn(move || {
            let result = std::panic::catch_unwind(AssertUnwindSafe(job)).map_err(|payload| {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_string());
                PoolError::Panicked(msg)
            });
            let _ = tx.send(result);
        });
        rx.await.map_err(|_| PoolError::Closed)?
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
