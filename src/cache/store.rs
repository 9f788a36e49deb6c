//! The output store: `Key → Entry`, in memory, bounded in bytes (moka weighs
//! each entry by its size), with concurrent misses for one key computed once.
//! A hit is checked against the entry's recorded dependencies first.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;

use super::{ContentHash, Dep, Fingerprints, Key};

/// One cached output: a stage's output or a whole response.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The bytes.
    pub bytes: Bytes,
    /// Their hash (the ETag and the next stage's input hash).
    pub hash: ContentHash,
    /// The response Content-Type, for final outputs.
    pub content_type: Option<Arc<str>>,
    /// Files read while computing it that its key does not cover.
    pub deps: Arc<[Dep]>,
}

impl Entry {
    /// Rough memory cost, for the weigher.
    fn weight(&self) -> u32 {
        let deps: usize = self
            .deps
            .iter()
            .map(|d| d.path.as_os_str().len() + 48)
            .sum();
        u32::try_from(self.bytes.len() + deps + 160).unwrap_or(u32::MAX)
    }
}

/// The bounded output store.
#[derive(Clone)]
pub struct Store {
    cache: moka::future::Cache<Key, Arc<Entry>>,
    fingerprints: Fingerprints,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("entries", &self.cache.entry_count())
            .field("bytes", &self.cache.weighted_size())
            .finish()
    }
}

impl Store {
    /// A store holding at most `budget` bytes.
    pub fn new(budget: u64, fingerprints: Fingerprints) -> Self {
        let cache = moka::future::Cache::builder()
            .max_capacity(budget)
            .weigher(|_k: &Key, v: &Arc<Entry>| v.weight())
            .build();
        Store {
            cache,
            fingerprints,
        }
    }

    /// Is every dependency of `entry` unchanged?
    fn is_fresh(&self, entry: &Entry) -> bool {
        entry
            .deps
            .iter()
            .all(|d| self.fingerprints.hash(&d.path).is_ok_and(|h| h == d.hash))
    }

    /// The entry under `key`, if present and fresh (a stale one is dropped).
    pub async fn get(&self, key: &Key) -> Option<Arc<Entry>> {
        let entry = self.cache.get(key).await?;
        if self.is_fresh(&entry) {
            Some(entry)
        } else {
            self.cache.invalidate(key).await;
            None
        }
    }

    /// The fresh entry under `key`, or the one `compute` makes. Concurrent
    /// callers for the same key wait for one computation. Returns the entry
    /// and whether it was found (`true`) rather than computed (`false`).
    /// Errors are not cached.
    pub async fn get_or_compute<E, F>(
        &self,
        key: Key,
        compute: F,
    ) -> Result<(Arc<Entry>, bool), Arc<E>>
    where
        E: Send + Sync + 'static,
        F: Future<Output = Result<Arc<Entry>, E>> + Send,
    {
        if let Some(entry) = self.get(&key).await {
            return Ok((entry, true));
        }
        // A waiter whose computation was done by a concurrent caller reports
        // "computed" too: it did not find the entry, it waited for it.
        let entry = self.cache.try_get_with(key, compute).await?;
        Ok((entry, false))
    }

    /// Number of entries (approximate, for status and tests).
    pub fn entry_count(&self) -> u64 {
        self.cache.entry_count()
    }

    /// Bytes held (approximate).
    pub fn weighted_size(&self) -> u64 {
        self.cache.weighted_size()
    }

    /// Runs moka's pending maintenance (eviction), for tests and status.
    pub async fn sync(&self) {
        self.cache.run_pending_tasks().await;
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
            content_type: None,
            deps: deps.into(),
        })
    }

    #[tokio::test]
    async fn concurrent_misses_compute_once() {
        let store = Store::new(1 << 20, Fingerprints::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let key = KeyBuilder::new("t").finish();
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (store, runs) = (store.clone(), runs.clone());
            tasks.push(tokio::spawn(async move {
                store
                    .get_or_compute::<(), _>(key, async {
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

    #[tokio::test]
    async fn a_changed_dependency_makes_the_entry_stale() {
        let dir = tempfile::tempdir().unwrap();
        let dep_path = dir.path().join("dep.xml");
        std::fs::write(&dep_path, "v1").unwrap();
        let fp = Fingerprints::default();
        let store = Store::new(1 << 20, fp.clone());
        let key = KeyBuilder::new("t").finish();
        let dep = Dep {
            path: dep_path.clone(),
            hash: fp.hash(&dep_path).unwrap(),
        };
        let (_, found) = store
            .get_or_compute::<(), _>(key, async { Ok(entry("x", vec![dep])) })
            .await
            .unwrap();
        assert!(!found);
        assert!(store.get(&key).await.is_some());
        std::fs::write(&dep_path, "v2").unwrap();
        assert!(store.get(&key).await.is_none());
    }

    #[tokio::test]
    async fn the_budget_bounds_the_bytes_held() {
        let store = Store::new(10_000, Fingerprints::default());
        for i in 0..100u64 {
            let key = KeyBuilder::new("t").u64(i).finish();
            let body: &'static str = Box::leak("y".repeat(1000).into_boxed_str());
            store
                .get_or_compute::<(), _>(key, async { Ok(entry(body, vec![])) })
                .await
                .unwrap();
        }
        store.sync().await;
        assert!(store.weighted_size() <= 10_000, "{}", store.weighted_size());
    }
}
