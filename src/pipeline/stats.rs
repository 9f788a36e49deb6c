//! The pipeline's counters: what the cache did for each response (hits,
//! misses, partials, early cut-offs), how often stages ran and compiled,
//! and the time spent in each Language. Read by tests, benchmarks and the
//! admin listener's `/stats`; kept apart so counting stays cheap where it
//! runs on every hit (a sharded counter, no shared cache line).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::CacheStatus;

/// A counter incremented from many threads at once: one padded slot per
/// thread (by a thread-local index), summed when read, so a hit on one
/// I/O thread never waits for another's cache line.
#[derive(Debug, Default)]
pub struct Sharded([Padded; SHARDS]);

const SHARDS: usize = 16;

#[derive(Debug, Default)]
#[repr(align(128))]
struct Padded(AtomicU64);

thread_local! {
    static SHARD: usize = {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        // Truncation is the point: any slot will do.
        (NEXT.fetch_add(1, Ordering::Relaxed) as usize) % SHARDS
    };
}

impl Sharded {
    /// Adds one.
    #[inline]
    pub fn incr(&self) {
        let i = SHARD.with(|s| *s);
        self.0[i].0.fetch_add(1, Ordering::Relaxed);
    }

    /// The sum of every slot.
    pub fn get(&self) -> u64 {
        self.0.iter().map(|p| p.0.load(Ordering::Relaxed)).sum()
    }
}

/// Counters, for tests, benchmarks and the admin listener.
#[derive(Debug, Default)]
pub struct Stats {
    /// Stage executions.
    pub stage_runs: AtomicU64,
    /// Stage compilations.
    pub compiles: AtomicU64,
    /// Rendered requests (every request that reached the render path).
    pub renders: AtomicU64,
    /// Incremental renders that walked the stages a second time, because
    /// an output stored by hash only (elided) was needed as an input.
    pub whole_walks: AtomicU64,
    /// Responses answered by the hot memo (nothing looked up but the memo).
    pub hot_hits: Sharded,
    /// Rendered responses found whole in the memory tier.
    pub hits: AtomicU64,
    /// Rendered responses found whole in a tier below memory.
    pub tier_hits: AtomicU64,
    /// Responses computed in full.
    pub misses: AtomicU64,
    /// Incremental responses for which some stages were reused.
    pub partials: AtomicU64,
    /// Of those, the ones that reached a stored response through a trace
    /// (early cut-off: a stage recomputed with unchanged output).
    pub cutoffs: AtomicU64,
    /// Responses computed and never stored (an uncacheable source or stage
    /// in `all` mode).
    pub uncacheable: AtomicU64,
    /// Documents served with no stage.
    pub untransformed: AtomicU64,
    /// Compressed variants made and served.
    pub variants: VariantStats,
    /// Time spent in stages, by Language name.
    stage_time: Mutex<BTreeMap<String, StageTime>>,
}

/// Compressed variants of cached responses and static files.
#[derive(Debug, Default)]
pub struct VariantStats {
    /// gzip variants made.
    pub gzip: AtomicU64,
    /// brotli variants made.
    pub br: AtomicU64,
    /// Bytes of every variant made.
    pub bytes: AtomicU64,
    /// Responses sent compressed.
    pub served: Sharded,
}

/// [`VariantStats`] read at one moment (the `/stats` document's
/// `compressed`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct VariantCounts {
    /// gzip variants made.
    pub gzip: u64,
    /// brotli variants made.
    pub br: u64,
    /// Bytes of every variant made.
    pub bytes_made: u64,
    /// Responses sent compressed.
    pub served: u64,
}

impl VariantStats {
    /// The counts now.
    pub fn counts(&self) -> VariantCounts {
        VariantCounts {
            gzip: self.gzip.load(Ordering::Relaxed),
            br: self.br.load(Ordering::Relaxed),
            bytes_made: self.bytes.load(Ordering::Relaxed),
            served: self.served.get(),
        }
    }
}

/// Runs and time of one Language's stages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StageTime {
    /// Stages run.
    pub runs: u64,
    /// Total time, in microseconds.
    pub micros: u64,
}

impl Stats {
    /// Counts a response the render path made.
    pub(super) fn count(&self, status: CacheStatus) {
        let counter = match status {
            CacheStatus::Hit => &self.hits,
            CacheStatus::TierHit(_) => &self.tier_hits,
            CacheStatus::Miss => &self.misses,
            CacheStatus::Partial { .. } => &self.partials,
            CacheStatus::Uncacheable => &self.uncacheable,
            CacheStatus::Untransformed => &self.untransformed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one stage run of `language` that took `took`.
    pub(super) fn stage_ran(&self, language: &str, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let Ok(mut map) = self.stage_time.lock() else {
            return;
        };
        match map.get_mut(language) {
            Some(t) => {
                t.runs += 1;
                t.micros = t.micros.saturating_add(micros);
            }
            None => {
                map.insert(language.to_string(), StageTime { runs: 1, micros });
            }
        }
    }

    /// Time spent per Language so far.
    pub fn stage_times(&self) -> BTreeMap<String, StageTime> {
        self.stage_time
            .lock()
            .map(|m| m.clone())
            .unwrap_or_default()
    }

    /// Every response that computed nothing: hot memo, memory and lower
    /// tiers.
    pub fn all_hits(&self) -> u64 {
        self.hot_hits.get()
            + self.hits.load(Ordering::Relaxed)
            + self.tier_hits.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sharded_counter_sums_every_thread() {
        let c = std::sync::Arc::new(Sharded::default());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let c = std::sync::Arc::clone(&c);
                std::thread::spawn(move || (0..1000).for_each(|_| c.incr()))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(c.get(), 8000);
    }

    #[test]
    fn statuses_and_stage_times_are_counted() {
        let s = Stats::default();
        s.count(CacheStatus::Hit);
        s.count(CacheStatus::TierHit("disk"));
        s.count(CacheStatus::Miss);
        s.count(CacheStatus::Partial {
            reused: 1,
            total: 2,
        });
        s.hot_hits.incr();
        assert_eq!(s.all_hits(), 3);
        assert_eq!(s.misses.load(Ordering::Relaxed), 1);
        s.stage_ran("xslt", Duration::from_micros(5));
        s.stage_ran("xslt", Duration::from_micros(7));
        assert_eq!(
            s.stage_times()["xslt"],
            StageTime {
                runs: 2,
                micros: 12
            }
        );
    }
}
