//! The `Cache` trait: a tier of the output cache below the in-memory store
//! (the disk tier, a user's tier registered through the builder, a shared
//! tier). Exists so that where outputs are kept is a plug-in, like a
//! Language: a Cache is a Provider of stage outputs, looked up by a key
//! built from content hashes only.
//!
//! The contract every tier gets from the store (`Store`), whatever it
//! does: what a tier answers is checked before it is used (the bytes
//! against the entry's hash, unless the tier says it checked them itself,
//! `Cache::checks_bodies`; every recorded dependency against the files as
//! they are now), so a tier that returns a corrupt, truncated or stale
//! value costs a recomputation, never a wrong page. A tier never fails a
//! request: `put` is best effort and runs after the response has gone;
//! a tier that cannot store (a read-only or full directory, a server
//! that is down) says so in its log and its [`TierStats`], and the tiers
//! above keep serving.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::{Entry, Key};

/// A boxed, sendable future (what [`Cache`]'s methods return, so tiers of
/// any type sit side by side in one list).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tier of the output cache below memory. Tiers are asked in order
/// (memory, then disk, then each registered tier); a hit in a lower tier is
/// promoted into memory, and a computed response is written to every tier.
///
/// Only final outputs (whole responses) reach the tiers below memory:
/// intermediate outputs and incremental mode's traces live in memory, where
/// they serve early cut-off after a change.
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::{Arc, Mutex};
/// use axle::cache::{BoxFuture, Cache, Entry, Key, TierStats};
///
/// /// A tier that keeps entries in a map (a stand-in for a database).
/// #[derive(Default)]
/// struct MapTier(Mutex<HashMap<Key, Arc<Entry>>>);
///
/// impl Cache for MapTier {
///     fn name(&self) -> &'static str {
///         "map"
///     }
///     fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Option<Arc<Entry>>> {
///         Box::pin(async move { self.0.lock().ok()?.get(key).cloned() })
///     }
///     fn put(&self, key: Key, entry: Arc<Entry>) -> BoxFuture<'_, ()> {
///         Box::pin(async move {
///             if let Ok(mut map) = self.0.lock() {
///                 map.insert(key, entry);
///             }
///         })
///     }
///     fn remove<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, ()> {
///         Box::pin(async move {
///             if let Ok(mut map) = self.0.lock() {
///                 map.remove(key);
///             }
///         })
///     }
///     fn purge<'a>(&'a self, prefix: Option<&'a str>) -> BoxFuture<'a, u64> {
///         Box::pin(async move {
///             let Ok(mut map) = self.0.lock() else { return 0 };
///             let before = map.len();
///             map.retain(|_, e| match (prefix, &e.url) {
///                 (Some(p), Some(url)) => !url.starts_with(p),
///                 _ => false,
///             });
///             (before - map.len()) as u64
///         })
///     }
///     fn stats(&self) -> TierStats {
///         let map = self.0.lock().map(|m| m.len()).unwrap_or(0);
///         TierStats { entries: map as u64, ..TierStats::default() }
///     }
/// }
/// ```
pub trait Cache: Send + Sync + 'static {
    /// A short name: `X-Axle-Cache: hit; tier=NAME` and the stats say it.
    fn name(&self) -> &'static str;

    /// The entry stored under `key`, if this tier has one. The tier may
    /// verify its own storage; the store checks the bytes against the
    /// entry's hash (unless [`Cache::checks_bodies`]) and its dependencies
    /// against the files in any case.
    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Option<Arc<Entry>>>;

    /// Stores `entry` (a final output, never elided) under `key`. Best
    /// effort: a tier that cannot store it logs why and drops it.
    fn put(&self, key: Key, entry: Arc<Entry>) -> BoxFuture<'_, ()>;

    /// Whether every entry [`Cache::get`] returns has had its bytes checked
    /// against its hash by the tier itself (as the disk and shared tiers'
    /// decoding does): the store then does not hash the body a second
    /// time. The default, false, has the store check it.
    fn checks_bodies(&self) -> bool {
        false
    }

    /// Forgets the entry under `key` (the store found it corrupt or stale).
    fn remove<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, ()>;

    /// Forgets every entry whose document URL (`Entry::url`) starts with
    /// `prefix`, or every entry when `prefix` is None; returns how many
    /// were dropped (as far as the tier knows).
    fn purge<'a>(&'a self, prefix: Option<&'a str>) -> BoxFuture<'a, u64>;

    /// What the tier holds and did, for the admin listener's `/stats`.
    fn stats(&self) -> TierStats;
}

/// One tier's counters (all as far as the tier knows; zero where it does
/// not count).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TierStats {
    /// Entries held.
    pub entries: u64,
    /// Bytes held.
    pub bytes: u64,
    /// The most bytes it may hold (0: unbounded or unknown).
    pub capacity: u64,
    /// Entries evicted to stay within the capacity.
    pub evictions: u64,
    /// Entries found unusable when read (corrupt, truncated, foreign, an
    /// old format) and dropped.
    pub rejected: u64,
    /// Writes that failed (and were dropped).
    pub write_errors: u64,
    /// Writes not attempted (a full write queue, a tier not writable, an
    /// entry larger than the tier stores).
    pub dropped: u64,
    /// Whether the tier is storing at all (false: degraded, e.g. a
    /// read-only or full directory, a shared cache that is down).
    pub writable: bool,
    /// Operations that failed talking to the tier's server (timeouts,
    /// lost connections, errors it answered): a tier with no server
    /// counts none.
    pub errors: u64,
    /// Operations not tried because the tier's server was down (they
    /// failed at once instead of waiting for a timeout).
    pub unavailable: u64,
    /// Whether the tier's server is reachable now (true for a tier with
    /// no server).
    pub available: bool,
}

impl Default for TierStats {
    /// Every count zero, not writable (a tier says it is), available.
    fn default() -> Self {
        TierStats {
            entries: 0,
            bytes: 0,
            capacity: 0,
            evictions: 0,
            rejected: 0,
            write_errors: 0,
            dropped: 0,
            writable: false,
            errors: 0,
            unavailable: 0,
            available: true,
        }
    }
}

/// The tiers below memory, in the order they are asked.
pub type Tiers = Arc<[Arc<dyn Cache>]>;
