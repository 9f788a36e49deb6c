//! Start-up settings shared by the CLI, the server and the tests: the cache
//! mode, the memory budget, the document root and the transform limits.
//! Parsing of human sizes (`256MiB`) lives here so every entry point agrees.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::ffi::Limits;

mod address;
mod limits;
mod root_choice;
mod shared_cache;

pub use address::{ADDRESS_FORMS, Address, parse_client, parse_listen};
pub use limits::{HttpLimits, RenderLimits, parse_duration};
pub use root_choice::{ChosenRoot, choose_root};
pub use shared_cache::SharedCacheFlags;

/// How transform results are cached (chosen at start-up, `--cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum CacheMode {
    /// Compute every response (AxKit's `AxNoCache`); compiled stylesheets are
    /// still reused.
    Off,
    /// All-or-nothing: only the final response is cached, under one key over
    /// the whole chain (what AxKit did).
    All,
    /// Every stage's output is cached under its own key, with early cut-off.
    Incremental,
}

impl CacheMode {
    /// The name used on the command line and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheMode::Off => "off",
            CacheMode::All => "all",
            CacheMode::Incremental => "incremental",
        }
    }
}

impl std::fmt::Display for CacheMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a cached response is known to be fresh (chosen at start-up,
/// `--freshness`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Freshness {
    /// `stat` every file a response came from, on every request (AxKit's
    /// way). Right for any filesystem.
    Check,
    /// Watch the directories those files are in (inotify) and apply queued
    /// changes before each request: no `stat` on a hit. Falls back to
    /// `check` where watching is impossible. Misses writes through a hard
    /// link in an unwatched directory, through `mmap`, and by other
    /// machines on network filesystems.
    Watch,
    /// No check at all on a hit (AxKit's `AxDependencyChecks Off`): for
    /// immutable deployments. A file's hash, once known, is believed until
    /// the deployment says files changed: `axle cache purge` or SIGHUP.
    /// An entry promoted from a lower tier (the disk) is still checked
    /// once, when it is loaded.
    Trust,
}

impl std::fmt::Display for Freshness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Freshness::Check => "check",
            Freshness::Watch => "watch",
            Freshness::Trust => "trust",
        })
    }
}

/// Everything a server (or an embedded pipeline) needs at start-up.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The document root; nothing outside it is ever read.
    pub root: PathBuf,
    /// Where to listen.
    pub listen: SocketAddr,
    /// The cache strategy.
    pub cache_mode: CacheMode,
    /// Memory budget of the output cache, in bytes.
    pub cache_size: u64,
    /// Per-transform limits.
    pub limits: Limits,
    /// Transform worker threads (0: one per CPU).
    pub workers: usize,
    /// Threads accepting and serving connections, each with its own
    /// single-threaded runtime (0: one per CPU).
    pub io_threads: usize,
    /// How long a finished render's result may wait for the connection
    /// thread while transforms queue (`--handoff-window`; zero: each is
    /// handed back at once). Batches the hand-offs of a loaded server;
    /// an idle one adds no delay.
    pub handoff_window: std::time::Duration,
    /// Serialize and re-parse at every stage boundary instead of handing
    /// faithful trees on. Slower; exists to verify that the hand-off never
    /// changes a byte (the tests compare both).
    pub force_byte_handoff: bool,
    /// How hits are checked for freshness.
    pub freshness: Freshness,
    /// Share the listening port with other processes that ask the same
    /// (`SO_REUSEPORT`). Off: a port something else listens on is refused
    /// at start, naming the address, instead of silently splitting
    /// requests between two servers.
    pub reuse_port: bool,
    /// Connection and request limits.
    pub http: HttpLimits,
    /// What one render may spend.
    pub render: RenderLimits,
    /// The disk tier's directory (`--cache-dir`), if any.
    pub cache_dir: Option<PathBuf>,
    /// The disk tier's bound in bytes (`--cache-dir-size`).
    pub cache_dir_size: u64,
    /// The shared tier in Redis (`--shared-cache`, `[shared-cache]`),
    /// below the disk tier; off while its `url` is None.
    pub shared_cache: crate::cache::SharedCacheSettings,
    /// The admin listener's address (`--admin`): stats and purge. None:
    /// no admin listener (the default).
    pub admin: Option<SocketAddr>,
    /// More Host names the admin listener answers to (`--admin-host`,
    /// `NAME` or `NAME:PORT`), beyond its address and, on loopback,
    /// `localhost`: the name a reverse proxy in front of it sends.
    pub admin_hosts: Vec<String>,
    /// Cache tiers below memory and disk, asked in order (registered
    /// through [`crate::Server::builder`]).
    pub tiers: TierList,
    /// Write the process ID here once the server accepts connections
    /// (`--pid-file`); removed when it stops.
    pub pid_file: Option<PathBuf>,
    /// The access log (`--access-log FILE|-`), off when None.
    pub access_log: Option<AccessLogConfig>,
    /// How the root was chosen when no `--root` named it (`axle serve`'s
    /// rule, docs/operations.md), for the start line; None: given.
    pub root_chosen: Option<String>,
}

/// `--access-log` and `--access-log-format`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessLogConfig {
    /// The file appended to; `-` is standard output.
    pub path: PathBuf,
    /// How lines look.
    pub format: AccessLogFormat,
}

/// How access log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AccessLogFormat {
    /// Apache's combined format, then `"X-Axle-Cache" microseconds`.
    #[default]
    Combined,
    /// One JSON object per line.
    Json,
}

/// Cache tiers registered by a program embedding Axle, in the order they
/// are asked (after memory and the disk tier).
#[derive(Clone, Default)]
pub struct TierList(pub Vec<std::sync::Arc<dyn crate::cache::Cache>>);

impl std::fmt::Debug for TierList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|t| t.name()))
            .finish()
    }
}

impl ServeConfig {
    /// Defaults for `root`: loopback port 8080, incremental cache, 256 MiB.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ServeConfig {
            root: root.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            cache_mode: CacheMode::Incremental,
            cache_size: DEFAULT_CACHE_SIZE,
            limits: Limits::default(),
            workers: 0,
            io_threads: 0,
            handoff_window: DEFAULT_HANDOFF_WINDOW,
            force_byte_handoff: false,
            freshness: Freshness::Watch,
            reuse_port: false,
            http: HttpLimits::default(),
            render: RenderLimits::default(),
            cache_dir: None,
            cache_dir_size: DEFAULT_CACHE_DIR_SIZE,
            shared_cache: crate::cache::SharedCacheSettings::default(),
            admin: None,
            admin_hosts: Vec::new(),
            tiers: TierList::default(),
            pid_file: None,
            access_log: None,
            root_chosen: None,
        }
    }
}

/// The default output cache budget: 256 MiB.
pub const DEFAULT_CACHE_SIZE: u64 = 256 << 20;

/// The default hand-off window (`--handoff-window`): 2 ms.
pub const DEFAULT_HANDOFF_WINDOW: std::time::Duration = std::time::Duration::from_millis(2);

/// The longest hand-off window `--handoff-window` accepts: 50 ms. Longer
/// would let a loaded server sit on finished pages for a visible time.
pub const MAX_HANDOFF_WINDOW: std::time::Duration = std::time::Duration::from_millis(50);

/// Parses `--handoff-window`: a duration from 0 to [`MAX_HANDOFF_WINDOW`].
pub fn parse_handoff_window(text: &str) -> Result<std::time::Duration, String> {
    let window = parse_duration(text)?;
    if window > MAX_HANDOFF_WINDOW {
        return Err(format!(
            "a hand-off window of '{text}' is longer than the {} ms allowed (2ms is the default, 0 turns batching off)",
            MAX_HANDOFF_WINDOW.as_millis()
        ));
    }
    Ok(window)
}

/// The default bound of the disk tier: 1 GiB.
pub const DEFAULT_CACHE_DIR_SIZE: u64 = 1 << 30;

/// Parses a size such as `1048576`, `512k`, `256M`, `256MiB`, `1G` or `1GB`
/// (binary multiples in every spelling: a cache budget is about memory).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a size (examples: 64MiB, 1G, 1048576)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "unknown size unit '{other}' in '{text}' (use k, M, G)"
            ));
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size '{text}' is too large"))
}

/// The port `axle serve` listens on when none is given.
pub const DEFAULT_PORT: u16 = 8080;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handoff_window_is_bounded() {
        use std::time::Duration;
        assert_eq!(parse_handoff_window("0"), Ok(Duration::ZERO));
        assert_eq!(parse_handoff_window("2ms"), Ok(DEFAULT_HANDOFF_WINDOW));
        assert_eq!(parse_handoff_window("50ms"), Ok(MAX_HANDOFF_WINDOW));
        let err = parse_handoff_window("51ms").unwrap_err();
        assert!(err.contains("longer than the 50 ms allowed"), "{err}");
        assert!(parse_handoff_window("1s").is_err());
        assert!(parse_handoff_window("soon").is_err());
    }

    #[test]
    fn sizes_parse_in_every_spelling() {
        for (text, want) in [
            ("0", 0),
            ("1048576", 1 << 20),
            ("512k", 512 << 10),
            ("256M", 256 << 20),
            ("256MiB", 256 << 20),
            ("256 mb", 256 << 20),
            ("1G", 1 << 30),
            ("2GB", 2 << 30),
        ] {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
        for bad in ["", "MiB", "12Q", "-1", "99999999999999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
