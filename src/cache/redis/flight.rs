//! Cross-instance single flight: on a miss in Redis, the first instance to
//! take `PREFIX:lock:KEY` (`SET NX PX lock-wait`) computes the response;
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

/// Takes the lock (`SET NX PX`), or finds it already this instance's:
/// 1 if this instance holds it now. Re-entrant because one request may
/// ask the tiers twice for one key (incremental mode looks the response
/// key up before its walk, then again as the walk's last stage): the
/// second ask must not wait for the lock its own first ask took.
pub(super) const TAKE: &str = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 \
     elseif redis.call('get', KEYS[1]) == ARGV[1] then return 1 else return 0 end";

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
    fn tokens_differ_between_instances() {
        // Two calls stand in for two processes: the time differs.
        assert_ne!(token(), token());
        assert_eq!(token().len(), 32);
    }
}
