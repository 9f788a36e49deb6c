//! `axle serve`'s `--shared-cache*` flags, as a clap group the binary
//! flattens into `serve`, and how they override what `axle.toml`'s
//! `[shared-cache]` set. Here rather than in `main.rs` so the binary stays
//! thin; the settings themselves are `crate::cache::SharedCacheSettings`.

use std::time::Duration;

use super::{ServeConfig, parse_duration, parse_size};

/// `serve`'s shared tier in Redis (docs/cache.md#the-shared-tier-redis);
/// each flag wins over the same key of `axle.toml`'s `[shared-cache]`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SharedCacheFlags {
    /// Share rendered responses between instances through Redis at
    /// redis://HOST:PORT[/DB] (or a Redis Cluster:
    /// redis+cluster://HOST:PORT[,HOST:PORT...]), below memory and disk.
    /// Off by default.
    #[arg(long, value_name = "URL")]
    pub shared_cache: Option<String>,
    /// Put before every key, so several sites can share one Redis. [default: axle:]
    #[arg(long, value_name = "PREFIX")]
    pub shared_cache_prefix: Option<String>,
    /// Expiry set on every stored response. [default: 24h]
    #[arg(long, value_parser = parse_duration)]
    pub shared_cache_ttl: Option<Duration>,
    /// The largest entry stored in Redis (inclusive); larger ones are not. [default: 8MiB]
    #[arg(long, value_parser = parse_size)]
    pub shared_cache_max_entry: Option<u64>,
    /// The most one Redis operation may take. [default: 100ms]
    #[arg(long, value_parser = parse_duration)]
    pub shared_cache_timeout: Option<Duration>,
    /// How long a miss waits for another instance computing the same
    /// response. [default: 2s]
    #[arg(long, value_parser = parse_duration)]
    pub shared_cache_lock_wait: Option<Duration>,
}

impl SharedCacheFlags {
    /// Writes the flags given into `config`, over the file's settings.
    pub fn apply(&self, config: &mut ServeConfig) {
        let s = &mut config.shared_cache;
        if let Some(v) = &self.shared_cache {
            s.url = Some(v.clone());
        }
        if let Some(v) = &self.shared_cache_prefix {
            s.prefix = v.clone();
        }
        if let Some(v) = self.shared_cache_ttl {
            s.ttl = v;
        }
        if let Some(v) = self.shared_cache_max_entry {
            s.max_entry = v;
        }
        if let Some(v) = self.shared_cache_timeout {
            s.timeout = v;
        }
        if let Some(v) = self.shared_cache_lock_wait {
            s.lock_wait = v;
        }
    }
}
