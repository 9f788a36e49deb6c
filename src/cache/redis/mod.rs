//! The shared tier (`--shared-cache redis://HOST:PORT[/DB]`, or
//! `redis+cluster://HOST:PORT[,HOST:PORT...]` for a Redis Cluster; `name()
//! == "redis"`): final outputs kept in a Redis that several Axle instances
//! share, so a page one instance rendered is a hit on the others, and a
//! miss that another instance is already computing waits for it instead
//! of computing it again (`flight`).
//!
//! Values are the disk tier's self-checking encoding of an entry (magic,
//! version, key, blake3 checksum: `disk::format`), stored under
//! `PREFIX{HEX}` (the key in hex as a hash tag, its lock `PREFIX{HEX}:lock`,
//! so a cluster keeps the two on one slot and the lookup script may touch
//! both; one format for a cluster and a single server), each with an
//! expiry (`ttl`); a value that fails to decode is deleted and counted as
//! rejected (decoding checks the body's hash), and the store checks the
//! dependencies of what decodes. Entries larger than `max-entry-size` are
//! not stored (counted as dropped).
//!
//! Redis being down, slow or full never fails a page (`link`): every
//! operation is bounded by `timeout`, a failure takes the tier down (one
//! log line), and while down every call returns at once until the
//! reconnect task finds Redis again.

mod flight;
mod link;
mod settings;

pub use settings::{
    DEFAULT_LOCK_WAIT, DEFAULT_MAX_ENTRY, DEFAULT_PREFIX, DEFAULT_TIMEOUT, DEFAULT_TTL,
    SharedCacheSettings,
};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;

use super::disk::format;
use super::{BoxFuture, Cache, Entry, Key, TierStats};
use link::{Client, Link, LinkError};

/// Keys asked for per SCAN step during a purge.
const SCAN_COUNT: usize = 500;

/// Why the shared tier could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SharedCacheError {
    /// A setting is unusable.
    #[error("{0}")]
    Settings(String),
    /// The URL does not parse.
    #[error("the shared cache's URL: {0}")]
    Url(redis::RedisError),
    /// The tier's thread could not be started.
    #[error("the shared cache's thread: {0}")]
    Thread(std::io::Error),
}

/// The shared tier. See the module documentation.
pub struct RedisTier {
    link: Link,
    prefix: String,
    ttl_ms: u64,
    max_entry: u64,
    lock_wait: Duration,
    token: String,
    held: flight::Held,
    rejected: AtomicU64,
    dropped: AtomicU64,
    write_errors: AtomicU64,
    /// Misses that waited for another instance and got its value.
    waited: AtomicU64,
}

impl std::fmt::Debug for RedisTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTier")
            .field("prefix", &self.prefix)
            .field("available", &self.link.available())
            .finish()
    }
}

impl RedisTier {
    /// The tier `settings` describe (whose `url` must be set). Connects in
    /// the background: returns at once whether Redis is up or not.
    pub fn open(settings: &SharedCacheSettings) -> Result<RedisTier, SharedCacheError> {
        settings.check().map_err(SharedCacheError::Settings)?;
        let url = settings
            .url
            .as_deref()
            .ok_or_else(|| SharedCacheError::Settings("no shared cache URL".into()))?;
        let client = Client::open(url, settings.timeout).map_err(SharedCacheError::Url)?;
        let link = Link::start(client, url, settings.timeout).map_err(SharedCacheError::Thread)?;
        Ok(RedisTier {
            link,
            prefix: settings.prefix.clone(),
            ttl_ms: u64::try_from(settings.ttl.as_millis()).unwrap_or(u64::MAX),
            max_entry: settings.max_entry,
            lock_wait: settings.lock_wait,
            token: flight::token(),
            held: flight::Held::default(),
            rejected: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            waited: AtomicU64::new(0),
        })
    }

    /// Whether Redis is taken for up now.
    pub fn available(&self) -> bool {
        self.link.available()
    }

    /// Misses that waited for another instance's value and got it.
    pub fn waited(&self) -> u64 {
        self.waited.load(Ordering::Relaxed)
    }

    fn value_key(&self, key: &Key) -> String {
        value_name(&self.prefix, key)
    }

    fn lock_key(&self, key: &Key) -> String {
        format!("{}{LOCK_SUFFIX}", value_name(&self.prefix, key))
    }

    /// The value under `name` decoded, or None; a value that fails to
    /// decode is deleted and counted.
    async fn decode_or_drop(&self, key: &Key, name: &str, value: Vec<u8>) -> Option<Arc<Entry>> {
        match format::decode(key, Bytes::from(value)) {
            Ok(entry) => Some(Arc::new(entry)),
            Err(e) => {
                self.rejected.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(key = %name, error = %e, "a shared cache value is unusable; deleted");
                self.del(name.to_string()).await;
                None
            }
        }
    }

    async fn del(&self, name: String) {
        let _ = self
            .link
            .run(move |mut c| async move {
                redis::cmd("DEL").arg(name).query_async::<i64>(&mut c).await
            })
            .await;
    }

    async fn get_value(&self, name: &str) -> Result<Option<Vec<u8>>, LinkError> {
        let name = name.to_string();
        self.link
            .run(move |mut c| async move {
                redis::cmd("GET")
                    .arg(name)
                    .query_async::<Option<Vec<u8>>>(&mut c)
                    .await
            })
            .await
    }

    /// The value under `key`, or (locking unless `lock_wait` is 0) who
    /// computes it: one round trip.
    async fn lookup(&self, key: &Key) -> Result<flight::Lookup, LinkError> {
        let (value, lock, token) = (self.value_key(key), self.lock_key(key), self.token.clone());
        let ms = u64::try_from(self.lock_wait.as_millis()).unwrap_or(u64::MAX);
        self.link
            .run(move |mut c| async move {
                redis::cmd("EVAL")
                    .arg(flight::LOOKUP)
                    .arg(2)
                    .arg(value)
                    .arg(lock)
                    .arg(token)
                    .arg(ms)
                    .arg(if ms == 0 { "0" } else { "1" })
                    .query_async::<flight::Lookup>(&mut c)
                    .await
            })
            .await
    }

    /// A loser's wait: polls for the value (and whether the lock is still
    /// held) until it comes, the lock goes without it, or `lock_wait` has
    /// passed.
    async fn wait_for(&self, key: &Key) -> Option<Arc<Entry>> {
        let (value, lock) = (self.value_key(key), self.lock_key(key));
        for wait in flight::poll_waits(self.lock_wait) {
            tokio::time::sleep(wait).await;
            let (v, l) = (value.clone(), lock.clone());
            let got = self
                .link
                .run(move |mut c| async move {
                    redis::cmd("MGET")
                        .arg(v)
                        .arg(l)
                        .query_async::<(Option<Vec<u8>>, Option<Vec<u8>>)>(&mut c)
                        .await
                })
                .await;
            match got {
                Ok((Some(bytes), _)) => {
                    let entry = self.decode_or_drop(key, &value, bytes).await;
                    if entry.is_some() {
                        self.waited.fetch_add(1, Ordering::Relaxed);
                    }
                    return entry;
                }
                // Released with no value: the winner stored nothing.
                Ok((None, None)) => return None,
                Ok((None, Some(_))) => {}
                Err(_) => return None,
            }
        }
        None
    }

    /// Releases this instance's lock on `key`, if it still holds it.
    async fn release(&self, key: &Key) {
        let (lock, token) = (self.lock_key(key), self.token.clone());
        let _ = self
            .link
            .run(move |mut c| async move {
                redis::cmd("EVAL")
                    .arg(flight::RELEASE)
                    .arg(1)
                    .arg(lock)
                    .arg(token)
                    .query_async::<i64>(&mut c)
                    .await
            })
            .await;
    }

    /// Every key under this tier's prefix (values and locks), by SCAN:
    /// of the server, or of each primary of a cluster in turn.
    async fn scan(&self) -> Vec<String> {
        let pattern = format!("{}*", glob_escape(&self.prefix));
        let targets = self
            .link
            .run(|c| c.scan_targets())
            .await
            .unwrap_or_default();
        let mut keys = Vec::new();
        for target in targets {
            let mut cursor: u64 = 0;
            loop {
                let (p, t) = (pattern.clone(), target.clone());
                let step = self
                    .link
                    .run(move |c| c.scan_step(t, cursor, p, SCAN_COUNT))
                    .await;
                let Ok((next, mut found)) = step else {
                    break;
                };
                keys.append(&mut found);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

/// `text` with the characters SCAN's MATCH treats as a pattern escaped.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// What follows a value's name in its lock's.
const LOCK_SUFFIX: &str = ":lock";

/// The name of `key`'s value under `prefix`: `PREFIX{HEX}`. The braces
/// make the hex a Redis Cluster hash tag, so the value and its lock
/// (`PREFIX{HEX}:lock`) are on one slot, as a script touching both needs.
fn value_name(prefix: &str, key: &Key) -> String {
    format!("{prefix}{{{}}}", key.hex())
}

/// The key a value name under `prefix` stands for (None for a lock, a
/// name of the earlier format `PREFIX` + hex, or a foreign name).
fn key_of(prefix: &str, name: &str) -> Option<Key> {
    let tagged = name.strip_prefix(prefix)?;
    super::disk::parse_key(tagged.strip_prefix('{')?.strip_suffix('}')?)
}

impl Cache for RedisTier {
    fn name(&self) -> &'static str {
        "redis"
    }

    /// Every value it returns went through `format::decode`, which checks
    /// the body against its hash.
    fn checks_bodies(&self) -> bool {
        true
    }

    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Option<Arc<Entry>>> {
        Box::pin(async move {
            if self.held.holds(key, self.lock_wait) {
                // This instance is computing it (this request's first ask
                // took the lock, or another request's did).
                return None;
            }
            match self.lookup(key).await {
                Ok(flight::Lookup::Value(bytes)) => {
                    self.decode_or_drop(key, &self.value_key(key), bytes).await
                }
                Ok(flight::Lookup::Mine) => {
                    // This instance computes; its `put` releases the lock.
                    self.held.mark(*key, self.lock_wait);
                    None
                }
                Ok(flight::Lookup::Theirs) => self.wait_for(key).await,
                Ok(flight::Lookup::Miss) | Err(_) => None,
            }
        })
    }

    fn put(&self, key: Key, entry: Arc<Entry>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.held.forget(&key);
            if entry.elided {
                return;
            }
            let value = format::encode(&key, &entry);
            if value.len() as u64 > self.max_entry {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(key = ?key, bytes = value.len(), "too large for the shared cache; not stored");
                self.release(&key).await;
                return;
            }
            let (name, ttl) = (self.value_key(&key), self.ttl_ms);
            let (lock, token) = (self.lock_key(&key), self.token.clone());
            let stored = self
                .link
                .run(move |mut c| async move {
                    redis::pipe()
                        .cmd("SET")
                        .arg(name)
                        .arg(value)
                        .arg("PX")
                        .arg(ttl)
                        .ignore()
                        .cmd("EVAL")
                        .arg(flight::RELEASE)
                        .arg(1)
                        .arg(lock)
                        .arg(token)
                        .ignore()
                        .query_async::<()>(&mut c)
                        .await
                })
                .await;
            match stored {
                Ok(()) => {}
                Err(LinkError::Down) => {}
                Err(e) => {
                    self.write_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(error = %e, "a shared cache write failed");
                    // A refused SET (out of memory) leaves the lock:
                    // released so the others do not wait for nothing.
                    if matches!(e, LinkError::Refused(_)) {
                        self.release(&key).await;
                    }
                }
            }
        })
    }

    fn remove<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, ()> {
        Box::pin(async move { self.del(self.value_key(key)).await })
    }

    /// SCANs the site's prefix: without `prefix`, deletes every key
    /// under it (never the whole database: other sites may share it);
    /// with one, reads each value and deletes those whose document URL
    /// starts with it.
    fn purge<'a>(&'a self, prefix: Option<&'a str>) -> BoxFuture<'a, u64> {
        Box::pin(async move {
            let mut dropped = 0;
            for name in self.scan().await {
                let key = key_of(&self.prefix, &name);
                let doomed = match (prefix, key) {
                    (None, _) => true,
                    (Some(_), None) => false,
                    (Some(p), Some(key)) => match self.get_value(&name).await {
                        Ok(Some(bytes)) => format::decode(&key, Bytes::from(bytes))
                            .map_or(true, |e| e.url.as_deref().is_some_and(|u| u.starts_with(p))),
                        _ => false,
                    },
                };
                if doomed {
                    self.del(name).await;
                    if key.is_some() {
                        dropped += 1;
                    }
                }
            }
            dropped
        })
    }

    fn stats(&self) -> TierStats {
        let available = self.link.available();
        TierStats {
            rejected: self.rejected.load(Ordering::Relaxed),
            write_errors: self.write_errors.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            writable: available,
            errors: self.link.errors(),
            unavailable: self.link.skipped(),
            available,
            ..TierStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_names_round_trip_and_locks_are_not_values() {
        let key = crate::cache::KeyBuilder::new("t").finish();
        let name = value_name("site:", &key);
        assert_eq!(name, format!("site:{{{}}}", key.hex()));
        assert_eq!(key_of("site:", &name), Some(key));
        assert_eq!(key_of("site:", &format!("{name}{LOCK_SUFFIX}")), None);
        assert_eq!(key_of("other:", &name), None);
        // The earlier, untagged format is not a value of this one.
        assert_eq!(key_of("site:", &format!("site:{}", key.hex())), None);
    }

    /// A value and its lock hash to one cluster slot (the lookup script
    /// touches both), and different keys spread over slots.
    #[test]
    fn a_value_and_its_lock_share_a_slot() {
        use redis::cluster_routing::Slot;
        let slot = |name: &str| Slot::for_key(name.as_bytes());
        let mut slots = std::collections::HashSet::new();
        for i in 0..32 {
            let key = crate::cache::KeyBuilder::new(&format!("k{i}")).finish();
            let name = value_name("axle:", &key);
            assert_eq!(slot(&name), slot(&format!("{name}{LOCK_SUFFIX}")));
            slots.insert(slot(&name));
        }
        assert!(slots.len() > 16, "keys spread over slots");
    }

    #[test]
    fn a_prefix_is_matched_literally() {
        assert_eq!(glob_escape("a*b?[c]\\:"), "a\\*b\\?\\[c\\]\\\\:");
    }
}
