//! The `[shared-cache]` table of `axle.toml`: the shared tier in Redis,
//! validated at load (key and line in every error) and applied under the
//! `--shared-cache*` flags (a flag given on the command line wins). Read
//! at start only: a SIGHUP reload keeps the tier it started with.

use crate::cache::SharedCacheSettings;
use crate::config::{parse_duration, parse_size};

use super::ConfigError;
use super::format::SharedCacheFormat;
use super::validate::Here;

/// What a `[shared-cache]` table sets (None: not set there).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedCacheFile {
    url: Option<String>,
    prefix: Option<String>,
    ttl: Option<std::time::Duration>,
    max_entry: Option<u64>,
    timeout: Option<std::time::Duration>,
    lock_wait: Option<std::time::Duration>,
}

impl SharedCacheFile {
    pub(super) fn validate(
        f: &SharedCacheFormat,
        here: &Here<'_>,
    ) -> Result<SharedCacheFile, Vec<ConfigError>> {
        let mut errors = Vec::new();
        let d = |key: &str, v: &Option<String>| {
            v.as_deref()
                .map(|t| parse_duration(t).map_err(|e| here.err(key, e)))
                .transpose()
        };
        let file = SharedCacheFile {
            url: f.url.clone(),
            prefix: f.prefix.clone(),
            ttl: noted(&mut errors, d("ttl", &f.ttl)),
            max_entry: noted(
                &mut errors,
                f.max_entry_size
                    .as_deref()
                    .map(|t| parse_size(t).map_err(|e| here.err("max-entry-size", e)))
                    .transpose(),
            ),
            timeout: noted(&mut errors, d("timeout", &f.timeout)),
            lock_wait: noted(&mut errors, d("lock-wait", &f.lock_wait)),
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut whole = SharedCacheSettings::default();
        file.apply(&mut whole);
        if let Err(e) = whole.check() {
            let key = if e.contains("URL") {
                "url"
            } else if e.contains("prefix") {
                "prefix"
            } else if e.contains("ttl") {
                "ttl"
            } else {
                "timeout"
            };
            return Err(vec![here.err(key, e)]);
        }
        Ok(file)
    }

    /// Writes what the file sets into `settings`.
    pub fn apply(&self, settings: &mut SharedCacheSettings) {
        if let Some(url) = &self.url {
            settings.url = Some(url.clone());
        }
        if let Some(prefix) = &self.prefix {
            settings.prefix = prefix.clone();
        }
        if let Some(v) = self.ttl {
            settings.ttl = v;
        }
        if let Some(v) = self.max_entry {
            settings.max_entry = v;
        }
        if let Some(v) = self.timeout {
            settings.timeout = v;
        }
        if let Some(v) = self.lock_wait {
            settings.lock_wait = v;
        }
    }
}

/// `value`, or None with its error noted: every bad value is reported, and
/// each counts as unset meanwhile.
fn noted<T>(errors: &mut Vec<ConfigError>, value: Result<Option<T>, ConfigError>) -> Option<T> {
    value.unwrap_or_else(|e| {
        errors.push(e);
        None
    })
}
