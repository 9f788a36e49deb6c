//! Cross-instance single flight: on a miss in Redis, the first instance to
//! take `PREFIX{KEY}:lock` (`SET NX PX lock-wait`) computes the response;
//! the others poll for the value with short sleeps, for at most
//! `lock-wait`, and compute it themselves if it does not come (or the lock
//! is released without a value: the winner's response was not stored).
//! The winner's `put` stores the value and releases its lock by compare
//! and delete, so it never drops a lock another instance took after its
//! own expired. Everything here is bounded by `lock-wait`.

use std::time::Duration;

/// The first wait between polls.
const POLL_START: Duration = Duration::from_millis(5);

/// The longest wait between polls.
const POLL_CAP: Duration = Duration::from_millis(50);

/// One round trip for a lookup: the value under `KEYS[1]` if there is
/// one (`{1, value}`); else, unless `ARGV[3]` is `0` (no locking: `{0}`),
/// takes the lock `KEYS[2]` (`SET NX PX ARGV[2]` with the token
/// `ARGV[1]`) or finds it already this instance's (`{2}`: this instance
/// computes), or finds another instance's (`{3}`: wait for its value).
pub(super) const LOOKUP: &str = "local v = redis.call('get', KEYS[1]) \
     if v then return {1, v} end \
     if ARGV[3] == '0' then return {0} end \
     if redis.call('set', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2} end \
     if redis.call('get', KEYS[2]) == ARGV[1] then return {2} end \
     return {3}";

/// What [`LOOKUP`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    /// The value.
    Value(Vec<u8>),
    /// No value, and no locking asked for.
    Miss,
    /// No value; this instance holds the lock now: it computes.
    Mine,
    /// No value; another instance holds the lock: wait for its value.
    Theirs,
}

impl redis::FromRedisValue for Lookup {
    fn from_redis_value(v: redis::Value) -> Result<Self, redis::ParsingError> {
        let bad = || redis::ParsingError::from("an unexpected lookup reply");
        let redis::Value::Array(items) = v else {
            return Err(bad());
        };
        let mut items = items.into_iter();
        let tag = match items.next() {
            Some(redis::Value::Int(n)) => n,
            _ => return Err(bad()),
        };
        match (tag, items.next()) {
            (1, Some(redis::Value::BulkString(bytes))) => Ok(Lookup::Value(bytes)),
            (0, None) => Ok(Lookup::Miss),
            (2, None) => Ok(Lookup::Mine),
            (3, None) => Ok(Lookup::Theirs),
            _ => Err(bad()),
        }
    }
}

/// The keys this instance holds the lock of (taken less than `lock-wait`
/// ago, not yet released by a `put`): asked again for one of them (the
/// same request's second ask, or another request joining the
/// computation), the tier answers "miss" without a round trip.
#[derive(Debug, Default)]
pub(super) struct Held(
    std::sync::Mutex<std::collections::HashMap<crate::cache::Key, std::time::Instant>>,
);

/// Held keys kept before old ones are swept out.
const HELD_SWEEP: usize = 4096;

impl Held {
    /// Records that this instance took the lock of `key` now.
    pub(super) fn mark(&self, key: crate::cache::Key, lock_wait: Duration) {
        let Ok(mut held) = self.0.lock() else { return };
        let now = std::time::Instant::now();
        if held.len() >= HELD_SWEEP {
            held.retain(|_, at| now.duration_since(*at) < lock_wait);
        }
        held.insert(key, now);
    }

    /// Whether this instance holds the lock of `key` (taken less than
    /// `lock_wait` ago).
    pub(super) fn holds(&self, key: &crate::cache::Key, lock_wait: Duration) -> bool {
        self.0
            .lock()
            .ok()
            .and_then(|held| held.get(key).copied())
            .is_some_and(|at| at.elapsed() < lock_wait)
    }

    /// Forgets `key` (its value was written, or given up).
    pub(super) fn forget(&self, key: &crate::cache::Key) {
        if let Ok(mut held) = self.0.lock() {
            held.remove(key);
        }
    }
}

/// Releases a lock only if it still holds this instance's token.
pub(super) const RELEASE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// This process's lock token: different for every instance (process ID,
/// start time, an address on the heap), the same for all its locks: one
/// instance computes a key at most once at a time (the store coalesces
/// its own concurrent misses), so per-instance is enough to tell whose
/// lock it is.
pub(super) fn token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let heap = Box::new(0u8);
    let mut h = blake3::Hasher::new();
    h.update(&std::process::id().to_le_bytes());
    h.update(&nanos.to_le_bytes());
    h.update(&(std::ptr::from_ref::<u8>(&heap) as usize).to_le_bytes());
    h.finalize().to_hex()[..32].to_string()
}

/// The waits between a loser's polls: short at first (a fast page comes
/// quickly), growing to a cap, adding up to at most `budget`.
pub(super) fn poll_waits(budget: Duration) -> impl Iterator<Item = Duration> {
    let mut next = POLL_START;
    let mut left = budget;
    std::iter::from_fn(move || {
        if left.is_zero() {
            return None;
        }
        let wait = next.min(left);
        left -= wait;
        next = (next * 2).min(POLL_CAP);
        Some(wait)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_add_up_to_the_budget_and_no_more() {
        for ms in [0u64, 1, 7, 100, 2000] {
            let budget = Duration::from_millis(ms);
            let waits: Vec<Duration> = poll_waits(budget).collect();
            assert_eq!(waits.iter().sum::<Duration>(), budget, "{ms}");
            assert!(waits.iter().all(|w| *w <= POLL_CAP));
        }
        let first: Vec<Duration> = poll_waits(Duration::from_secs(1)).take(3).collect();
        assert_eq!(first, [POLL_START, POLL_START * 2, POLL_START * 4]);
    }

    #[test]
    fn a_held_key_is_held_for_lock_wait_at_most() {
        let held = Held::default();
        let key = crate::cache::KeyBuilder::new("k").finish();
        let wait = Duration::from_millis(50);
        assert!(!held.holds(&key, wait));
        held.mark(key, wait);
        assert!(held.holds(&key, wait));
        std::thread::sleep(wait);
        assert!(!held.holds(&key, wait), "expired with its lock");
        held.mark(key, wait);
        held.forget(&key);
        assert!(!held.holds(&key, wait), "released by a put");
    }

    #[test]
    fn lookup_replies_parse_and_odd_ones_are_refused() {
        use redis::{FromRedisValue, Value};
        let parse = |v| Lookup::from_redis_value(v).ok();
        assert_eq!(
            parse(Value::Array(vec![
                Value::Int(1),
                Value::BulkString(b"v".to_vec())
            ])),
            Some(Lookup::Value(b"v".to_vec()))
        );
        assert_eq!(parse(Value::Array(vec![Value::Int(0)])), Some(Lookup::Miss));
        assert_eq!(parse(Value::Array(vec![Value::Int(2)])), Some(Lookup::Mine));
        assert_eq!(
            parse(Value::Array(vec![Value::Int(3)])),
            Some(Lookup::Theirs)
        );
        assert_eq!(parse(Value::Array(vec![Value::Int(1)])), None);
        assert_eq!(parse(Value::Nil), None);
    }

    #[test]
    fn tokens_differ_between_instances() {
        // Two calls stand in for two processes: the time differs.
        assert_ne!(token(), token());
        assert_eq!(token().len(), 32);
    }
}
