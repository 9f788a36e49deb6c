//! The shared tier's settings (`--shared-cache*` flags, the `[shared-cache]`
//! table of `axle.toml`) and their defaults, in one place so the CLI, the
//! file and the docs agree.

use std::time::Duration;

/// The key prefix when none is given.
pub const DEFAULT_PREFIX: &str = "axle:";

/// How long a stored response lives in Redis when not told: one day.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The largest encoded entry stored when not told: 8 MiB.
pub const DEFAULT_MAX_ENTRY: u64 = 8 << 20;

/// The per-operation timeout when not told: 100 ms.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(100);

/// How long a request waits for another instance computing the same
/// response when not told: 2 s.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(2);

/// The shared (Redis) tier's settings. `url: None`: no shared tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedCacheSettings {
    /// `redis://HOST:PORT[/DB]`, or `redis+cluster://HOST:PORT[,HOST:PORT...]`
    /// (seed nodes of a Redis Cluster).
    pub url: Option<String>,
    /// Put before every key, so several sites can share one Redis.
    pub prefix: String,
    /// The expiry set on every stored value.
    pub ttl: Duration,
    /// The largest encoded entry stored (inclusive); larger ones are not
    /// stored (counted as `dropped`).
    pub max_entry: u64,
    /// The most one Redis operation may take.
    pub timeout: Duration,
    /// How long a miss waits for another instance that is computing the
    /// same response (the lock's expiry too).
    pub lock_wait: Duration,
}

impl Default for SharedCacheSettings {
    fn default() -> Self {
        SharedCacheSettings {
            url: None,
            prefix: DEFAULT_PREFIX.to_string(),
            ttl: DEFAULT_TTL,
            max_entry: DEFAULT_MAX_ENTRY,
            timeout: DEFAULT_TIMEOUT,
            lock_wait: DEFAULT_LOCK_WAIT,
        }
    }
}

impl SharedCacheSettings {
    /// Refuses settings the tier cannot work with (said at start).
    pub fn check(&self) -> Result<(), String> {
        if self.prefix.is_empty() {
            return Err(
                "the shared cache's prefix may not be empty (keys of every site would mix)".into(),
            );
        }
        if self.ttl < Duration::from_millis(1) {
            return Err("the shared cache's ttl must be at least 1ms".into());
        }
        if self.timeout < Duration::from_millis(1) {
            return Err("the shared cache's timeout must be at least 1ms".into());
        }
        if let Some(url) = &self.url {
            let cluster = url.starts_with(super::link::CLUSTER_SCHEME);
            if !url.starts_with("redis://") && !cluster {
                return Err(format!(
                    "'{url}' is not a Redis URL (redis://HOST:PORT[/DB] or \
                     redis+cluster://HOST:PORT[,HOST:PORT...])"
                ));
            }
            // Keys carry their own hash tag (`PREFIX{HEX}`): a brace in the
            // prefix could make a value and its lock hash apart.
            if cluster && self.prefix.contains(['{', '}']) {
                return Err(format!(
                    "the shared cache's prefix '{}' may not contain '{{' or '}}' with a Redis \
                     Cluster (keys are hash-tagged by the server)",
                    self.prefix
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_and_bad_values_are_named() {
        let mut s = SharedCacheSettings {
            url: Some("redis://127.0.0.1:6379/0".into()),
            ..Default::default()
        };
        assert_eq!(s.check(), Ok(()));
        s.prefix.clear();
        assert!(s.check().unwrap_err().contains("prefix"));
        s.prefix = "a:".into();
        s.url = Some("http://x".into());
        assert!(s.check().unwrap_err().contains("Redis URL"));
        s.url = Some("redis+cluster://10.0.0.1:7000,10.0.0.2:7000".into());
        assert_eq!(s.check(), Ok(()));
        s.prefix = "{site}:".into();
        assert!(s.check().unwrap_err().contains("prefix"));
        s.prefix = "a:".into();
        s.url = Some("redis://x".into());
        s.timeout = Duration::ZERO;
        assert!(s.check().unwrap_err().contains("timeout"));
    }
}
