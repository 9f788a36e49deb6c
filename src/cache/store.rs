//! The output store: `Key → Entry`, in memory, bounded in bytes (moka weighs
//! each entry by its size), with concurrent misses for one key computed once,
//! and the tiers below memory (`Cache`: the disk, a user's tier) asked in
//! order on a memory miss, a hit there promoted up, a computed response
//! written down to every tier. A hit is checked against the entry's
//! recorded dependencies first; what a lower tier answers is also checked
//! against its own hash (by the tier itself when it says it does:
//! `Cache::checks_bodies`), so no tier can serve a corrupt body.
//!
//! In incremental mode it also keeps *traces* (a build system's
//! constructive traces): the key of a chain's last stage (its closure and
//! its input's hash) → the key its response was stored under, so a request
//! whose earlier stages were recomputed with unchanged output finds the
//! stored response (early cut-off) without the last stage running again.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::{ContentHash, Dep, Fingerprints, Key, TierStats, Tiers};

/// One cached output: a stage's output or a whole response.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The bytes (empty when `elided`).
    pub bytes: Bytes,
    /// Their hash (the ETag and the next stage's input hash); for an
    /// intermediate tree, the hash of its canonical form
    /// ([`ContentHash::of_tree`]).
    pub hash: ContentHash,
    /// Only the hash is known: an intermediate tree not serialized because
    /// the next stage looked cut off (incremental mode). Enough to look up
    /// later stages; a request that needs it as input recomputes it in
    /// full.
    pub elided: bool,
    /// The response Content-Type, for final outputs.
    pub content_type: Option<Arc<str>>,
    /// Files read while computing it that its key does not cover.
    pub deps: Arc<[Dep]>,
    /// The document URL it was rendered for (final outputs), so a purge
    /// by path prefix finds it in every tier.
    pub url: Option<Arc<str>>,
    /// Compressed variants of `bytes`, made the first time a client asks
    /// for each encoding and weighed with the entry (memory only: a lower
    /// tier stores the identity bytes).
    pub variants: Arc<super::Variants>,
}

impl Entry {
    /// Rough memory cost, for the weigher.
    fn weight(&self) -> u32 {
        let deps: usize = self
            .deps
            .iter()
            .map(|d| d.path.as_os_str().len() + 48)
            .sum();
        let url = self.url.as_ref().map_or(0, |u| u.len());
        let variants = self.variants.weight();
        u32::try_from(self.bytes.len() + deps + url + variants + 160).unwrap_or(u32::MAX)
    }

    /// Whether `bytes` are what `hash` says (a final output's hash is of
    /// its bytes): what every entry read from a lower tier must pass.
    pub fn is_intact(&self) -> bool {
        !self.elided && ContentHash::of(&self.bytes) == self.hash
    }
}

/// Which part of the store an output goes to. Final outputs answer
/// requests; intermediate ones (incremental mode) only save earlier stages
/// after a later one changed, so they get their own, smaller budget and
/// never crowd out responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// A chain's last stage: the response body.
    Final,
    /// Any earlier stage.
    Intermediate,
}

/// Where an entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The memory tier.
    Memory,
    /// A lower tier, by name (promoted into memory on the way up).
    Lower(&'static str),
    /// Nowhere: computed for this request (or by a concurrent one it
    /// waited for).
    Computed,
}

type Tiered = moka::future::Cache<Key, Arc<Entry>>;

/// What a trace is weighed at: two 32-byte keys plus an estimate (not
/// measured) of moka's own per-entry structures.
const TRACE_WEIGHT: u32 = 160;

/// The store's own counters (the memory tier's evictions; per lower tier,
/// hits and entries rejected on load).
#[derive(Debug, Default)]
struct Counters {
    evictions: AtomicU64,
    /// Per lower tier, in order: hits, rejected (corrupt or stale).
    lower: Vec<(AtomicU64, AtomicU64)>,
}

/// The bounded output store.
#[derive(Clone)]
pub struct Store {
    finals: Tiered,
    intermediates: Tiered,
    traces: moka::sync::Cache<Key, Key>,
    fingerprints: Fingerprints,
    lower: Tiers,
    trust: bool,
    capacity: u64,
    intermediate_budget: u64,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("entries", &self.entry_count())
            .field("bytes", &self.weighted_size())
            .field(
                "lower",
                &self.lower.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn tiered(budget: u64, counters: &Arc<Counters>) -> Tiered {
    let counters = Arc::clone(counters);
    moka::future::Cache::builder()
        .max_capacity(budget)
        .weigher(|_k: &Key, v: &Arc<Entry>| v.weight())
        .eviction_listener(move |_k, _v, cause| {
            if cause == moka::notification::RemovalCause::Size {
                counters.evictions.fetch_add(1, Ordering::Relaxed);
            }
        })
        .build()
}

fn traces(budget: u64) -> moka::sync::Cache<Key, Key> {
    moka::sync::Cache::builder()
        .max_capacity(budget)
        .weigher(|_k: &Key, _v: &Key| TRACE_WEIGHT)
        .build()
}

/// What [`Store::purge`] dropped, per tier (memory first).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Purged {
    /// Tier name → entries dropped (as far as the tier knows).
    pub tiers: Vec<(String, u64)>,
}

impl Store {
    /// A store holding at most `finals` bytes of final outputs and
    /// `intermediates` bytes of intermediate ones (and no traces: see
    /// [`Store::with_traces`]).
    pub fn new(finals: u64, intermediates: u64, fingerprints: Fingerprints) -> Self {
        let counters = Arc::new(Counters::default());
        Store {
            finals: tiered(finals, &counters),
            intermediates: tiered(intermediates, &counters),
            traces: traces(0),
            fingerprints,
            lower: Arc::from(Vec::new()),
            trust: false,
            capacity: finals + intermediates,
            intermediate_budget: intermediates,
            counters,
        }
    }

    /// The same store keeping traces in at most `budget` bytes.
    #[must_use]
    pub fn with_traces(mut self, budget: u64) -> Self {
        self.traces = traces(budget);
        self
    }

    /// The same store over `lower` tiers, asked in order on a memory miss.
    #[must_use]
    pub fn with_lower(mut self, lower: Tiers) -> Self {
        let counters = Counters {
            evictions: AtomicU64::new(0),
            lower: lower.iter().map(|_| Default::default()).collect(),
        };
        let counters = Arc::new(counters);
        self.finals = tiered(self.capacity - self.intermediate_budget, &counters);
        self.intermediates = tiered(self.intermediate_budget, &counters);
        self.counters = counters;
        self.lower = lower;
        self
    }

    /// The same store believing every memory entry fresh without checking
    /// its dependencies (`--freshness trust`). Entries from a lower tier
    /// are still checked once, on their way up.
    #[must_use]
    pub fn trusting(mut self, trust: bool) -> Self {
        self.trust = trust;
        self
    }

    /// Whether memory entries are believed fresh with no check.
    pub fn is_trusting(&self) -> bool {
        self.trust
    }

    /// Forgets everything held in memory (outputs and traces); the lower
    /// tiers keep theirs.
    pub async fn clear_memory(&self) {
        self.finals.invalidate_all();
        self.intermediates.invalidate_all();
        self.traces.invalidate_all();
        self.sync().await;
    }

    /// The tiers below memory.
    pub fn lower(&self) -> &Tiers {
        &self.lower
    }

    /// The final output a trace under `key` leads to, with its key, if
    /// both are present and the output is fresh.
    pub async fn traced(&self, key: &Key) -> Option<(Arc<Entry>, Key, Found)> {
        let last = self.traces.get(key)?;
        let (entry, found) = self.get_found(&last, Tier::Final).await?;
        Some((entry, last, found))
    }

    /// Is there a trace under `key` (whether or not its response is still
    /// stored and fresh)? Synchronous, for a transform thread's guess.
    pub fn has_trace(&self, key: &Key) -> bool {
        self.traces.contains_key(key)
    }

    /// Is there an entry under `key` (fresh or not)? Synchronous, for a
    /// transform thread's guess.
    pub fn contains(&self, key: &Key, tier: Tier) -> bool {
        self.tier(tier).contains_key(key)
    }

    /// Records that the output of stage key `key` is the response stored
    /// under `response`.
    pub fn put_trace(&self, key: Key, response: Key) {
        self.traces.insert(key, response);
    }

    fn tier(&self, tier: Tier) -> &Tiered {
        match tier {
            Tier::Final => &self.finals,
            Tier::Intermediate => &self.intermediates,
        }
    }

    /// Is every dependency of `entry` unchanged? (Believed in trust mode.)
    fn is_fresh(&self, entry: &Entry) -> bool {
        self.trust || self.deps_hold(entry)
    }

    fn deps_hold(&self, entry: &Entry) -> bool {
        entry.deps.iter().all(|d| d.unchanged(&self.fingerprints))
    }

    /// The entry under `key`, if present and fresh (a stale one is dropped);
    /// for a final output, memory then every lower tier.
    pub async fn get(&self, key: &Key, tier: Tier) -> Option<Arc<Entry>> {
        self.get_found(key, tier).await.map(|(e, _)| e)
    }

    /// [`Store::get`], saying which tier answered. A lower tier's entry is
    /// promoted into memory (and every tier above the one that had it).
    pub async fn get_found(&self, key: &Key, tier: Tier) -> Option<(Arc<Entry>, Found)> {
        if let Some(entry) = self.get_memory(key, tier).await {
            return Some((entry, Found::Memory));
        }
        if tier == Tier::Intermediate {
            return None;
        }
        let (entry, name) = self.lookup_lower(key, true).await?;
        self.finals.insert(*key, Arc::clone(&entry)).await;
        Some((entry, Found::Lower(name)))
    }

    /// The final output under `key`, from memory or else from the first
    /// lower tier holding an intact copy (promoted into memory, as
    /// [`Store::get_found`] does), with no look at its dependencies: for
    /// the hot memo, whose own checks vouch for every file the response
    /// came from and which serves the entry only if its hash is the one
    /// it memoized (so the bytes are those it answered with before).
    pub async fn get_final_vouched(&self, key: &Key) -> Option<(Arc<Entry>, Found)> {
        if let Some(entry) = self.finals.get(key).await {
            return Some((entry, Found::Memory));
        }
        let (entry, name) = self.lookup_lower(key, false).await?;
        self.finals.insert(*key, Arc::clone(&entry)).await;
        Some((entry, Found::Lower(name)))
    }

    async fn get_memory(&self, key: &Key, tier: Tier) -> Option<Arc<Entry>> {
        let cache = self.tier(tier);
        let entry = cache.get(key).await?;
        if self.is_fresh(&entry) {
            Some(entry)
        } else {
            cache.invalidate(key).await;
            None
        }
    }

    /// The first lower tier's intact, fresh entry under `key` (fresh: its
    /// dependencies hold, looked at only when `check_deps`), written to
    /// the tiers above it; entries that fail a check are removed from the
    /// tier that had them.
    async fn lookup_lower(
        &self,
        key: &Key,
        check_deps: bool,
    ) -> Option<(Arc<Entry>, &'static str)> {
        for (i, tier) in self.lower.iter().enumerate() {
            let Some(entry) = tier.get(key).await else {
                continue;
            };
            let counters = self.counters.lower.get(i);
            // Checked in every freshness mode: loading is when a trusting
            // server learns about files that changed while it was down.
            // The body is hashed once per load: here, or by a tier that
            // checks it itself (the disk tier, on the read).
            let intact = if tier.checks_bodies() {
                !entry.elided
            } else {
                entry.is_intact()
            };
            if !intact || (check_deps && !self.deps_hold(&entry)) {
                if !intact {
                    tracing::warn!(tier = tier.name(), key = ?key, "a cache entry failed its hash check; dropped");
                }
                if let Some((_, rejected)) = counters {
                    rejected.fetch_add(1, Ordering::Relaxed);
                }
                tier.remove(key).await;
                continue;
            }
            if let Some((hits, _)) = counters {
                hits.fetch_add(1, Ordering::Relaxed);
            }
            self.write_down(&self.lower[..i], *key, &entry);
            return Some((entry, tier.name()));
        }
        None
    }

    /// Writes `entry` to each of `tiers` in the background (best effort,
    /// after the response has gone; only with a tokio runtime).
    fn write_down(&self, tiers: &[Arc<dyn super::Cache>], key: Key, entry: &Arc<Entry>) {
        if tiers.is_empty() || entry.elided {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        for tier in tiers {
            let (tier, entry) = (Arc::clone(tier), Arc::clone(entry));
            runtime.spawn(async move { tier.put(key, entry).await });
        }
    }

    /// The final output under `key` in memory without checking its
    /// dependencies (for a caller that has checked them its own way).
    pub async fn peek_final(&self, key: &Key) -> Option<Arc<Entry>> {
        self.finals.get(key).await
    }

    /// The fresh entry under `key`, or the one `compute` makes. Concurrent
    /// callers for the same key wait for one computation (or one lookup in
    /// the lower tiers). Returns the entry and where it was found. Errors
    /// are not cached. A final output computed here is written to every
    /// lower tier.
    ///
    /// `Ok(None)`: the computation (this caller's, or the one it joined,
    /// which may have begun before an edit this caller saw) read a file
    /// that has changed since: a dependency it recorded no longer holds.
    /// Such an entry is dropped, never handed on; the caller computes
    /// again, uncoalesced. So coalescing never crosses an edit, and a
    /// render that read a file while it was being written is never stored
    /// (the write changes the file after the read).
    pub async fn get_or_compute<E, F>(
        &self,
        key: Key,
        tier: Tier,
        compute: F,
    ) -> Result<Option<(Arc<Entry>, Found)>, Arc<E>>
    where
        E: Send + Sync + 'static,
        F: Future<Output = Result<Arc<Entry>, E>> + Send,
    {
        if let Some(entry) = self.get_memory(&key, tier).await {
            return Ok(Some((entry, Found::Memory)));
        }
        // What this caller's own lookup did, if it ran one (a waiter whose
        // work was done by a concurrent caller reports "computed": it did
        // not find the entry, it waited for it).
        let how = std::sync::OnceLock::new();
        let lookup = async {
            if tier == Tier::Final
                && let Some((entry, name)) = self.lookup_lower(&key, true).await
            {
                let _ = how.set(Found::Lower(name));
                return Ok(entry);
            }
            let _ = how.set(Found::Computed);
            compute.await
        };
        let entry = self.tier(tier).try_get_with(key, lookup).await?;
        let found = how.get().copied().unwrap_or(Found::Computed);
        if self.deps_hold(&entry) {
            if tier == Tier::Final && how.get() == Some(&Found::Computed) {
                self.write_down(&self.lower, key, &entry);
            }
            return Ok(Some((entry, found)));
        }
        self.tier(tier).invalidate(&key).await;
        Ok(None)
    }

    /// Whether every dependency `entry` recorded still holds (for an entry
    /// computed outside [`Store::get_or_compute`], before storing it).
    pub fn holds(&self, entry: &Entry) -> bool {
        self.deps_hold(entry)
    }

    /// Stores `entry` under `key`, replacing what is there (an elided
    /// intermediate output made whole); a final output goes to every lower
    /// tier too.
    pub async fn insert(&self, key: Key, tier: Tier, entry: Arc<Entry>) {
        if tier == Tier::Final {
            self.write_down(&self.lower, key, &entry);
        }
        self.tier(tier).insert(key, entry).await;
    }

    /// Weighs the final output under `key` again (it grew: a compressed
    /// variant was made for it).
    pub async fn reweigh(&self, key: &Key) {
        if let Some(entry) = self.finals.get(key).await {
            self.finals.insert(*key, entry).await;
        }
    }

    /// Drops every final output whose document URL starts with `prefix`
    /// (every output when None) from memory and every lower tier, and
    /// every intermediate output and trace (they are keyed by content and
    /// cheap to make again). With the file memo cleared by the caller,
    /// this is how a deployment says "files changed".
    pub async fn purge(&self, prefix: Option<&str>) -> Purged {
        let mut purged = Purged::default();
        let memory = match prefix {
            None => {
                let n = self.finals.entry_count();
                self.finals.invalidate_all();
                n
            }
            Some(prefix) => {
                let mut n = 0;
                let doomed: Vec<Key> = self
                    .finals
                    .iter()
                    .filter(|(_, e)| e.url.as_deref().is_some_and(|u| u.starts_with(prefix)))
                    .map(|(k, _)| *k)
                    .collect();
                for key in doomed {
                    self.finals.invalidate(&key).await;
                    n += 1;
                }
                n
            }
        };
        self.intermediates.invalidate_all();
        self.traces.invalidate_all();
        self.sync().await;
        purged.tiers.push(("memory".into(), memory));
        for tier in self.lower.iter() {
            let n = tier.purge(prefix).await;
            purged.tiers.push((tier.name().into(), n));
        }
        purged
    }

    /// Every tier's counters, memory first.
    pub fn tier_stats(&self) -> Vec<(&'static str, TierStats)> {
        let mut all = vec![(
            "memory",
            TierStats {
                entries: self.entry_count(),
                bytes: self.weighted_size(),
                capacity: self.capacity,
                evictions: self.counters.evictions.load(Ordering::Relaxed),
                rejected: 0,
                write_errors: 0,
                dropped: 0,
                writable: true,
                errors: 0,
                unavailable: 0,
                available: true,
            },
        )];
        for tier in self.lower.iter() {
            all.push((tier.name(), tier.stats()));
        }
        all
    }

    /// Hits answered by each lower tier, and entries rejected on load, in
    /// order.
    pub fn lower_counts(&self) -> Vec<(&'static str, u64, u64)> {
        self.lower
            .iter()
            .zip(self.counters.lower.iter())
            .map(|(t, (h, r))| {
                (
                    t.name(),
                    h.load(Ordering::Relaxed),
                    r.load(Ordering::Relaxed),
                )
            })
            .collect()
    }

    /// Number of entries (approximate, for status and tests).
    pub fn entry_count(&self) -> u64 {
        self.finals.entry_count() + self.intermediates.entry_count()
    }

    /// Drops every intermediate output (tests: as if all were evicted).
    #[cfg(test)]
    pub(crate) async fn clear_intermediates(&self) {
        self.intermediates.invalidate_all();
        self.intermediates.run_pending_tasks().await;
    }

    /// Bytes held (approximate).
    pub fn weighted_size(&self) -> u64 {
        self.finals.weighted_size() + self.intermediates.weighted_size()
    }

    /// Runs moka's pending maintenance (eviction), for tests and status.
    pub async fn sync(&self) {
        self.finals.run_pending_tasks().await;
        self.intermediates.run_pending_tasks().await;
        self.traces.run_pending_tasks();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::KeyBuilder;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn entry(body: &'static str, deps: Vec<Dep>) -> Arc<Entry> {
        Arc::new(Entry {
            bytes: Bytes::from_static(body.as_bytes()),
            hash: ContentHash::of(body.as_bytes()),
            elided: false,
            content_type: None,
            deps: deps.into(),
            url: None,
            variants: Default::default(),
        })
    }

    #[tokio::test]
    async fn concurrent_misses_compute_once() {
        let store = Store::new(1 << 20, 1 << 20, Fingerprints::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let key = KeyBuilder::new("t").finish();
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (store, runs) = (store.clone(), runs.clone());
            tasks.push(tokio::spawn(async move {
                store
                    .get_or_compute::<(), _>(key, Tier::Final, async {
                        runs.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        Ok(entry("x", vec![]))
                    })
                    .await
                    .unwrap()
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    /// A file (in a temporary directory, kept alive by the first value)
    /// holding `text`, and the dependency on it as read now.
    fn dependency(text: &str) -> (tempfile::TempDir, std::path::PathBuf, Dep) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dep.xml");
        std::fs::write(&path, text).unwrap();
        let hash = Fingerprints::default().hash(&path).unwrap();
        let dep = Dep::new(path.clone(), hash);
        (dir, path, dep)
    }

    #[tokio::test]
    async fn a_changed_dependency_makes_the_entry_stale() {
        let (_dir, dep_path, dep) = dependency("v1");
        let store = Store::new(1 << 20, 1 << 20, Fingerprints::default());
        let key = KeyBuilder::new("t").finish();
        let (_, found) = store
            .get_or_compute::<(), _>(key, Tier::Final, async { Ok(entry("x", vec![dep])) })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found, Found::Computed);
        assert!(store.get(&key, Tier::Final).await.is_some());
        std::fs::write(&dep_path, "v2").unwrap();
        assert!(store.get(&key, Tier::Final).await.is_none());
    }

    /// A computation that read a file which changed before it finished
    /// (shared work that began before an edit) is handed to no caller and
    /// not kept: callers are told to compute again.
    #[tokio::test]
    async fn a_computation_whose_dependency_changed_meanwhile_is_not_handed_on() {
        let (_dir, dep_path, dep) = dependency("v1");
        let store = Store::new(1 << 20, 1 << 20, Fingerprints::default());
        let key = KeyBuilder::new("t").finish();
        let (edit, edited) = tokio::sync::oneshot::channel::<()>();
        let first = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .get_or_compute::<(), _>(key, Tier::Final, async move {
                        // Read "v1", then the file is edited before the
                        // computation ends.
                        let _ = edited.await;
                        Ok(entry("from v1", vec![dep]))
                    })
                    .await
                    .unwrap()
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let joined = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .get_or_compute::<(), _>(key, Tier::Final, async { Ok(entry("never", vec![])) })
                    .await
                    .unwrap()
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        std::fs::write(&dep_path, "v2").unwrap();
        edit.send(()).unwrap();
        assert!(first.await.unwrap().is_none(), "the computing caller");
        assert!(joined.await.unwrap().is_none(), "the joined caller");
        assert!(store.get(&key, Tier::Final).await.is_none(), "not kept");
    }

    #[tokio::test]
    async fn a_trace_leads_to_a_fresh_stored_response_only() {
        let (_dir, dep_path, dep) = dependency("v1");
        let store = Store::new(1 << 20, 1 << 20, Fingerprints::default()).with_traces(1 << 20);
        let (stage, response) = (
            KeyBuilder::new("stage").finish(),
            KeyBuilder::new("response").finish(),
        );
        store.put_trace(stage, response);
        assert!(store.traced(&stage).await.is_none(), "no response stored");
        store
            .get_or_compute::<(), _>(response, Tier::Final, async { Ok(entry("out", vec![dep])) })
            .await
            .unwrap();
        let (found, key, _) = store.traced(&stage).await.expect("traced");
        assert_eq!((&found.bytes[..], key), (&b"out"[..], response));
        std::fs::write(&dep_path, "v2").unwrap();
        assert!(store.traced(&stage).await.is_none(), "stale response");
    }

    #[tokio::test]
    async fn the_budget_bounds_the_bytes_held() {
        let store = Store::new(10_000, 5_000, Fingerprints::default());
        for i in 0..100u64 {
            let body: &'static str = Box::leak("y".repeat(1000).into_boxed_str());
            for tier in [Tier::Final, Tier::Intermediate] {
                let key = KeyBuilder::new("t").u64(i).finish();
                store
                    .get_or_compute::<(), _>(key, tier, async { Ok(entry(body, vec![])) })
                    .await
                    .unwrap();
            }
        }
        store.sync().await;
        assert!(store.finals.weighted_size() <= 10_000);
        assert!(store.intermediates.weighted_size() <= 5_000);
        assert!(
            store.finals.weighted_size() > 5_000,
            "finals are not crowded out"
        );
    }
}
