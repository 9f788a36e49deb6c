//! A location's `provider` key: which dynamic source answers the URLs
//! under it, built from the file at load (programs found, URLs parsed,
//! sizes and durations read), each problem named by key and line. A key
//! that does not belong to the provider's type is an error, not ignored.

use std::path::Path;
use std::sync::Arc;

use super::ConfigError;
use super::format::ProviderFormat;
use super::validate::Here;
use std::time::Duration;

use crate::config::{parse_duration, parse_size};
use crate::dynamic::command_header_problem;
use crate::dynamic::{
    BoxFuture, Cacheability, CommandConfig, CommandSource, DynamicProvider, FastcgiConfig,
    FastcgiSource, Memoized, Mount, PostConfig, PostSource, Produced, SourceError, SourceRequest,
    UpstreamSource,
};
use crate::fastcgi::{Address, BackendConfig};
use crate::upstream::UpstreamConfig;

/// The provider types and the keys each takes (besides `type`).
const TYPES: &[(&str, &[&str])] = &[
    ("files", &[]),
    ("post", &["max-body", "cache"]),
    (
        "command",
        &[
            "argv",
            "cache",
            "env",
            "headers",
            "timeout",
            "max-size",
            "max-body",
            "max-concurrent",
            "max-queue",
        ],
    ),
    (
        "fastcgi",
        &[
            "spawn",
            "address",
            "script",
            "workers",
            "max-requests",
            "idle-timeout",
            "cache",
            "env",
            "headers",
            "timeout",
            "max-size",
            "max-body",
            "max-concurrent",
            "max-queue",
        ],
    ),
    (
        "upstream",
        &[
            "url",
            "cache",
            "headers",
            "timeout",
            "connect-timeout",
            "max-size",
            "max-hops",
        ],
    ),
];

/// The keys `p` sets, as written in the file.
fn keys_set(p: &ProviderFormat) -> Vec<&'static str> {
    let mut keys = Vec::new();
    let mut note = |set: bool, key: &'static str| {
        if set {
            keys.push(key);
        }
    };
    note(p.cache.is_some(), "cache");
    note(p.max_body.is_some(), "max-body");
    note(p.argv.is_some(), "argv");
    note(p.env.is_some(), "env");
    note(p.headers.is_some(), "headers");
    note(p.timeout.is_some(), "timeout");
    note(p.connect_timeout.is_some(), "connect-timeout");
    note(p.max_size.is_some(), "max-size");
    note(p.max_concurrent.is_some(), "max-concurrent");
    note(p.max_queue.is_some(), "max-queue");
    note(p.max_hops.is_some(), "max-hops");
    note(p.url.is_some(), "url");
    note(p.spawn.is_some(), "spawn");
    note(p.address.is_some(), "address");
    note(p.script.is_some(), "script");
    note(p.workers.is_some(), "workers");
    note(p.max_requests.is_some(), "max-requests");
    note(p.idle_timeout.is_some(), "idle-timeout");
    keys
}

/// The mount a section's `provider` makes (`None`: `type = "files"`, the
/// file tree). Programs run in `root`; one that cannot be run is mounted
/// as [`Unavailable`] and its problem added to `problems`.
pub(super) fn mount(
    prefix: &str,
    p: &ProviderFormat,
    root: &Path,
    here: &Here<'_>,
    problems: &mut Vec<ConfigError>,
) -> Result<Option<Mount>, ConfigError> {
    let key = |k: &str| format!("provider.{k}");
    let Some((_, allowed)) = TYPES.iter().find(|(t, _)| *t == p.r#type) else {
        let names: Vec<&str> = TYPES.iter().map(|(t, _)| *t).collect();
        return Err(here.err(
            &key("type"),
            format!(
                "unknown provider type {:?} (one of: {})",
                p.r#type,
                names.join(", ")
            ),
        ));
    };
    if let Some(stray) = keys_set(p).into_iter().find(|k| !allowed.contains(k)) {
        return Err(here.err(
            &key(stray),
            format!(
                "a {:?} provider has no key {stray:?} (its keys: type{}{})",
                p.r#type,
                if allowed.is_empty() { "" } else { ", " },
                allowed.join(", ")
            ),
        ));
    }
    let cache = match &p.cache {
        Some(text) => Some(Cacheability::parse(text).map_err(|e| here.err(&key("cache"), e))?),
        None => None,
    };
    let size = |k: &str, v: &Option<String>| -> Result<Option<u64>, ConfigError> {
        v.as_deref()
            .map(|t| parse_size(t).map_err(|e| here.err(&key(k), e)))
            .transpose()
    };
    let duration = |k: &str, v: &Option<String>| -> Result<Option<Duration>, ConfigError> {
        v.as_deref()
            .map(|t| parse_duration(t).map_err(|e| here.err(&key(k), e)))
            .transpose()
    };
    let (provider, client_document): (Arc<dyn DynamicProvider>, bool) = match p.r#type.as_str() {
        "files" => return Ok(None),
        "post" => {
            if cache.is_some_and(|c| c != Cacheability::Uncacheable) {
                return Err(here.err(
                    &key("cache"),
                    "a posted document is the request's own: its cache is \"none\" \
                     (incremental mode still reuses the stages when a body repeats)",
                ));
            }
            let mut config = PostConfig::default();
            if let Some(max) = size("max-body", &p.max_body)? {
                config.max_body = max;
            }
            (Arc::new(PostSource::new(config)), true)
        }
        "command" => {
            let argv = p.argv.clone().unwrap_or_default();
            if argv.is_empty() || argv[0].is_empty() {
                return Err(here.err(
                    &key("argv"),
                    "a command provider needs argv: the program and its arguments, e.g. [\"python3\", \"live.py\"] (never run through a shell)",
                ));
            }
            let mut config = CommandConfig::new(argv);
            if let Some(v) = &p.env {
                config.env = v.clone();
            }
            if let Some(v) = &p.headers {
                // Refused at load, not skipped: httpoxy (`proxy`) and
                // names that cannot be passed are a configuration error.
                if let Some(why) = v.iter().find_map(|h| command_header_problem(h)) {
                    return Err(here.err(&key("headers"), why));
                }
                config.headers = v.clone();
            }
            if let Some(t) = duration("timeout", &p.timeout)? {
                config.timeout = t;
            }
            if let Some(max) = size("max-size", &p.max_size)? {
                config.max_size = max;
            }
            if let Some(max) = size("max-body", &p.max_body)? {
                config.max_body = max;
            }
            if let Some(n) = p.max_concurrent {
                if n == 0 {
                    return Err(
                        here.err(&key("max-concurrent"), "at least one run must be allowed")
                    );
                }
                config.max_concurrent = n;
            }
            if let Some(n) = p.max_queue {
                config.max_queue = n;
            }
            let cache = cache.unwrap_or(Cacheability::Uncacheable);
            if cache == Cacheability::Validated {
                return Err(here.err(
                    &key("cache"),
                    "a program's output has no validator: cache is \"none\" or a duration",
                ));
            }
            config.cache = cache;
            let describe = format!("command {}", config.argv.join(" "));
            match CommandSource::new(config, root) {
                Ok(source) => (memoized(Arc::new(source), cache), false),
                Err(reason) => {
                    // A program installed later (or on the next machine)
                    // should not keep the site from starting: its pages
                    // answer 502 meanwhile, and `axle check` refuses it.
                    let problem = here.err(&key("argv"), reason.clone());
                    problems.push(problem);
                    (
                        Arc::new(Unavailable { describe, reason }) as Arc<dyn DynamicProvider>,
                        false,
                    )
                }
            }
        }
        "fastcgi" => {
            let (config, cache) = fastcgi_config(p, cache, here, &size, &duration)?;
            let describe = format!("fastcgi {} {}", config.backend.name(), config.script);
            match FastcgiSource::new(config, root) {
                Ok(source) => (memoized(Arc::new(source), cache), false),
                Err(reason) => {
                    problems.push(here.err(&key("spawn"), reason.clone()));
                    (
                        Arc::new(Unavailable { describe, reason }) as Arc<dyn DynamicProvider>,
                        false,
                    )
                }
            }
        }
        "upstream" => {
            let Some(url) = &p.url else {
                return Err(here.err(
                    &key("url"),
                    "an upstream provider needs a url (\"http://host:port{path}\", or \
                     \"/prefix{path}\" for this same server)",
                ));
            };
            if UpstreamSource::names_this_server(url) && fetches_itself(prefix, url) {
                return Err(here.err(
                    &key("url"),
                    format!(
                        "{url:?} is under this location ({prefix}): each request would \
                         fetch itself; name a path outside it"
                    ),
                ));
            }
            let mut config = UpstreamConfig::new(url.clone());
            if let Some(t) = duration("timeout", &p.timeout)? {
                config.timeout = t;
            }
            config.connect_timeout = duration("connect-timeout", &p.connect_timeout)?;
            if let Some(max) = size("max-size", &p.max_size)? {
                config.max_size = max;
            }
            if let Some(h) = &p.headers {
                config.headers = h.clone();
            }
            if let Some(n) = p.max_hops {
                config.max_hops = u32::try_from(n).unwrap_or(u32::MAX);
            }
            let cache = cache.unwrap_or(Cacheability::Validated);
            let source = UpstreamSource::new(config, cache).map_err(|e| {
                let at = if e.contains("header") {
                    "headers"
                } else {
                    "url"
                };
                here.err(&key(at), e)
            })?;
            (memoized(Arc::new(source), cache), false)
        }
        other => {
            return Err(here.err(&key("type"), format!("unknown provider type {other:?}")));
        }
    };
    Ok(Some(Mount {
        prefix: prefix.to_string(),
        provider,
        client_document,
    }))
}

type SizeOf<'a> = dyn Fn(&str, &Option<String>) -> Result<Option<u64>, ConfigError> + 'a;
type DurationOf<'a> = dyn Fn(&str, &Option<String>) -> Result<Option<Duration>, ConfigError> + 'a;

/// A `fastcgi` provider's settings (and its cacheability), every value
/// checked.
fn fastcgi_config(
    p: &ProviderFormat,
    cache: Option<Cacheability>,
    here: &Here<'_>,
    size: &SizeOf<'_>,
    duration: &DurationOf<'_>,
) -> Result<(FastcgiConfig, Cacheability), ConfigError> {
    let key = |k: &str| format!("provider.{k}");
    let backend = match (&p.spawn, &p.address) {
        (Some(_), Some(_)) => {
            return Err(here.err(
                &key("address"),
                "a fastcgi provider has spawn (workers Axle starts) or address (a server already running), not both",
            ));
        }
        (Some(argv), None) => {
            if argv.is_empty() || argv[0].is_empty() {
                return Err(here.err(
                    &key("spawn"),
                    "spawn is the program and its arguments, e.g. [\"php-cgi\"] (never run through a shell)",
                ));
            }
            let mut backend = BackendConfig::spawn(argv.clone());
            if let Some(n) = p.workers {
                if n == 0 {
                    return Err(here.err(&key("workers"), "at least one worker must be allowed"));
                }
                backend.workers = n;
            }
            if let Some(n) = p.max_requests {
                backend.max_requests = n as u64;
            }
            if let Some(t) = duration("idle-timeout", &p.idle_timeout)? {
                backend.idle_timeout = t;
            }
            if let Some(v) = &p.env {
                backend.env = v.clone();
            }
            backend
        }
        (None, Some(address)) => {
            for (set, k) in [
                (p.workers.is_some(), "workers"),
                (p.max_requests.is_some(), "max-requests"),
                (p.idle_timeout.is_some(), "idle-timeout"),
                (p.env.is_some(), "env"),
            ] {
                if set {
                    return Err(here.err(
                        &key(k),
                        format!(
                            "{k} is for workers Axle spawns; a server at an address runs its own"
                        ),
                    ));
                }
            }
            let address = Address::parse(address).map_err(|e| here.err(&key("address"), e))?;
            BackendConfig::remote(address)
        }
        (None, None) => {
            return Err(here.err(
                &key("spawn"),
                "a fastcgi provider needs spawn (e.g. [\"php-cgi\"]) or address (\"127.0.0.1:9000\", \"unix:/path\")",
            ));
        }
    };
    let Some(script) = p.script.clone().filter(|s| !s.is_empty()) else {
        return Err(here.err(
            &key("script"),
            "a fastcgi provider needs script: the file under the document root it runs (SCRIPT_FILENAME)",
        ));
    };
    if script.split('/').any(|part| part == "..") {
        return Err(here.err(
            &key("script"),
            "script is a path under the document root, without \"..\"",
        ));
    }
    let mut config = FastcgiConfig::new(backend, script);
    if let Some(v) = &p.headers {
        if let Some(why) = v.iter().find_map(|h| command_header_problem(h)) {
            return Err(here.err(&key("headers"), why));
        }
        config.headers = v.clone();
    }
    if let Some(t) = duration("timeout", &p.timeout)? {
        config.timeout = t;
    }
    if let Some(max) = size("max-size", &p.max_size)? {
        config.max_size = max;
    }
    if let Some(max) = size("max-body", &p.max_body)? {
        config.max_body = max;
    }
    if let Some(n) = p.max_concurrent {
        if n == 0 {
            return Err(here.err(
                &key("max-concurrent"),
                "at least one request must be allowed",
            ));
        }
        config.max_concurrent = n;
    }
    if let Some(n) = p.max_queue {
        config.max_queue = n;
    }
    let cache = cache.unwrap_or(Cacheability::Uncacheable);
    if cache == Cacheability::Validated {
        return Err(here.err(
            &key("cache"),
            "a FastCGI answer has no validator here: cache is \"none\" or a duration",
        ));
    }
    config.cache = cache;
    Ok((config, cache))
}

/// Whether a this-server upstream `url` (a path template) falls under the
/// location `prefix` that mounts it: every request would fetch itself.
fn fetches_itself(prefix: &str, url: &str) -> bool {
    let path = url.split(['?', '{']).next().unwrap_or(url);
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty()
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Bytes of answers a source with a time-to-live keeps.
const MEMO_BUDGET: u64 = 64 << 20;

/// `source`, answered from memory for its time-to-live when it has one.
fn memoized(source: Arc<dyn DynamicProvider>, cache: Cacheability) -> Arc<dyn DynamicProvider> {
    match cache {
        Cacheability::Ttl(ttl) => Arc::new(Memoized::new(source, ttl, MEMO_BUDGET)),
        _ => source,
    }
}

/// A source whose program cannot be run (not installed, not executable):
/// every request is a 502 naming why.
struct Unavailable {
    describe: String,
    reason: String,
}

impl DynamicProvider for Unavailable {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn produce<'a>(&'a self, _: &'a SourceRequest) -> BoxFuture<'a, Result<Produced, SourceError>> {
        Box::pin(async move { Err(SourceError::Failed(self.reason.clone())) })
    }
}
