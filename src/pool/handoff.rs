//! How finished transform results get back to connection threads: one
//! at a time, or in batches while transforms queue (the *hand-off
//! window*).
//!
//! Why batches: on a CPU shared by a connection thread and a transform
//! thread, waking the connection thread for each result made it preempt
//! the transform thread (1.4 involuntary switches a request for the
//! sample article, measured), and interleaving the two threads' work
//! cost 10–25% of a render. So a long job (at least [`LONG_JOB`]) whose
//! thread has more work waiting leaves its result for a *collector*, a
//! task on a connection thread's runtime that hands every waiting result
//! back once a window while the pool is oversubscribed. A thread that
//! runs out of work hands its results back at once, so an idle server
//! adds no delay, and a loaded one at most the window.
//!
//! Short jobs are never held: behind them the connection thread does not
//! sleep long enough to preempt (the 3-stage trivial chain, ~45 µs a
//! render, switched 0.07 times a request unbatched, and more with a
//! collector waking it), so no collector starts for them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// A job shorter than this hands its result back at once.
pub(super) const LONG_JOB: Duration = Duration::from_micros(100);

/// A result's sender, run to hand the result back.
pub(super) type Done = Box<dyn FnOnce() + Send + 'static>;

/// Finished results not handed back yet.
pub(super) struct Handoff {
    /// How long a result may wait while its thread has more work; zero:
    /// every result is handed back when its job ends.
    window: Duration,
    /// The senders of finished results, waiting for a collector.
    waiting: std::sync::Mutex<Vec<Done>>,
    /// A collector runs; results may wait only while it does.
    collecting: AtomicBool,
    /// A long job ended with more work queued and no collector running:
    /// the next oversubscribed submission starts one.
    wanted: AtomicBool,
    /// Results ever left for a collector.
    held: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoff")
            .field("window", &self.window)
            .field("collecting", &self.collecting)
            .field("wanted", &self.wanted)
            .finish_non_exhaustive()
    }
}

impl Handoff {
    /// Results wait at most `window` (zero: never).
    pub(super) fn new(window: Duration) -> Handoff {
        Handoff {
            window,
            waiting: std::sync::Mutex::default(),
            collecting: AtomicBool::new(false),
            wanted: AtomicBool::new(false),
            held: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Hands `done` back now, or leaves it for the collector: when the job
    /// that began at `started` was long, its thread has `more_work`, and a
    /// collector runs.
    pub(super) fn finish(&self, done: Done, started: Instant, more_work: bool) {
        let hold = more_work && !self.window.is_zero() && started.elapsed() >= LONG_JOB;
        if !hold || !self.collecting.load(SeqCst) {
            if hold {
                self.wanted.store(true, SeqCst);
            }
            done();
            self.deliver();
            return;
        }
        match self.waiting.lock() {
            Ok(mut waiting) => waiting.push(done),
            Err(_) => return done(),
        }
        self.held.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // The collector may have stopped after the check above: it
        // delivers once more after stopping, and this delivers if it saw
        // it stopped, so a result is never left behind.
        if !self.collecting.load(SeqCst) {
            self.deliver();
        }
    }

    /// Results ever left for a collector.
    pub(super) fn held(&self) -> u64 {
        self.held.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Hands every waiting result back; how many there were.
    fn deliver(&self) -> usize {
        let waiting = match self.waiting.lock() {
            Ok(mut waiting) if !waiting.is_empty() => std::mem::take(&mut *waiting),
            _ => return 0,
        };
        let n = waiting.len();
        for done in waiting {
            done();
        }
        n
    }

    /// Starts a collector on the current runtime, if one is wanted and
    /// none runs. It stops once `oversubscribed` says no, or after a
    /// window with nothing to hand back.
    pub(super) fn collect(self: &Arc<Self>, oversubscribed: impl Fn() -> bool + Send + 'static) {
        let window = self.window;
        if window.is_zero() || !self.wanted.load(SeqCst) || self.collecting.swap(true, SeqCst) {
            return;
        }
        let guard = Collecting(Arc::clone(self));
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // not on a tokio runtime: `guard` stops collecting
        };
        runtime.spawn(async move {
            let start = tokio::time::Instant::now() + window;
            let mut tick = tokio::time::interval_at(start, window);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let handed = guard.0.deliver();
                if handed == 0 {
                    // Nothing held for a whole window: jobs are short, or
                    // longer than the window. A later long job asks again.
                    guard.0.wanted.store(false, SeqCst);
                    return;
                }
                if !oversubscribed() {
                    return; // `guard` stops collecting and delivers once more
                }
            }
        });
    }
}

/// Stops collecting when the collector ends or its runtime drops it.
struct Collecting(Arc<Handoff>);

impl Drop for Collecting {
    fn drop(&mut self) {
        self.0.collecting.store(false, SeqCst);
        self.0.deliver();
    }
}

#[cfg(test)]
mod tests {
    use super::super::Pool;
    use super::*;

    /// Runs for `d` (sleeping is enough: the pool only sees the time).
    fn job(d: Duration, value: u32) -> impl FnOnce() -> u32 + Send + 'static {
        move || {
            std::thread::sleep(d);
            value
        }
    }

    /// Three long jobs at once on one thread: the second and third end
    /// with work queued and no collector, so one is wanted.
    async fn want_a_collector(pool: &Pool) {
        let long = Duration::from_millis(1);
        let (a, b, c) = tokio::join!(
            pool.run(job(long, 1)),
            pool.run(job(long, 2)),
            pool.run(job(long, 3))
        );
        assert_eq!((a, b, c), (Ok(1), Ok(2), Ok(3)));
    }

    #[tokio::test]
    async fn a_held_result_comes_back_within_the_window_not_after_the_queue() {
        let pool = Arc::new(Pool::with_window(1, Duration::from_millis(2)).unwrap());
        want_a_collector(&pool).await;
        let slow_done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&slow_done);
        let slow = move || {
            std::thread::sleep(Duration::from_secs(2));
            flag.store(true, SeqCst);
            0
        };
        // Spawned in order, so submitted in order: two long jobs, then
        // a slow one queued behind them.
        let long = Duration::from_millis(1);
        let spawn = |f: Box<dyn FnOnce() -> u32 + Send>| {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.run(f).await })
        };
        let first = spawn(Box::new(job(long, 1)));
        let second = spawn(Box::new(job(long, 2)));
        let last = spawn(Box::new(slow));
        assert_eq!(first.await.unwrap(), Ok(1));
        assert_eq!(second.await.unwrap(), Ok(2));
        assert!(
            !slow_done.load(SeqCst),
            "the results waited for the slow job queued behind them"
        );
        assert!(
            pool.handoff.held() > 0,
            "nothing was held: the test missed the batching path"
        );
        assert_eq!(last.await.unwrap(), Ok(0));
    }

    #[tokio::test]
    async fn without_a_window_nothing_is_held() {
        let pool = Pool::with_window(1, Duration::ZERO).unwrap();
        want_a_collector(&pool).await;
        want_a_collector(&pool).await;
        assert_eq!(pool.handoff.held(), 0);
    }

    #[tokio::test]
    async fn short_jobs_are_never_held() {
        let pool = Arc::new(Pool::with_window(1, Duration::from_millis(2)).unwrap());
        let mut jobs = tokio::task::JoinSet::new();
        for i in 0..64u32 {
            let pool = Arc::clone(&pool);
            jobs.spawn(async move { pool.run(move || i).await });
        }
        let mut sum = 0;
        while let Some(done) = jobs.join_next().await {
            sum += done.unwrap().unwrap();
        }
        assert_eq!(sum, (0..64).sum::<u32>());
        assert_eq!(pool.handoff.held(), 0);
    }

    #[test]
    fn a_stopping_collector_hands_back_what_waits() {
        let handoff = Arc::new(Handoff::new(Duration::from_millis(2)));
        handoff.collecting.store(true, SeqCst);
        let (tx, rx) = std::sync::mpsc::channel();
        let started = Instant::now() - LONG_JOB;
        handoff.finish(Box::new(move || tx.send(7).unwrap()), started, true);
        assert_eq!(handoff.held(), 1);
        assert!(rx.try_recv().is_err(), "held while a collector runs");
        drop(Collecting(Arc::clone(&handoff)));
        assert_eq!(rx.try_recv(), Ok(7));
        assert!(!handoff.collecting.load(SeqCst));
    }
}
