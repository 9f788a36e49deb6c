//! The `[filter."MIME type"]` tables: each builds a [`FilterLanguage`]
//! (an external program as the Language of that stylesheet type),
//! registered before the locations are read, so their `processor` and
//! `types` entries may name it. A program that cannot be run yet is
//! registered as a Language whose stages answer 502 naming why, and
//! reported by `axle check`: the site starts, as it does when a
//! stylesheet it names is missing.

use std::path::Path;
use std::sync::Arc;

use super::ConfigError;
use super::format::{FastcgiFilterFormat, FilterFormat};
use super::validate::Here;
use crate::config::{parse_duration, parse_size};
use crate::dynamic::Cacheability;
use crate::exec::ExecError;
use crate::fastcgi::{Address, BackendConfig};
use crate::language::{
    ExternalFailure, FastcgiFilterConfig, FastcgiFilterLanguage, FilterConfig, FilterError,
    FilterLanguage, Language, LanguageError, Registry, Resource, Stage,
};

/// Builds and registers the filter for `mime`; a problem that does not
/// stop the site goes to `problems`.
pub(super) fn register(
    mime: &str,
    f: &FilterFormat,
    registry: &mut Registry,
    root: &Path,
    here: &Here<'_>,
    problems: &mut Vec<ConfigError>,
) -> Result<(), Vec<ConfigError>> {
    if let Some(fastcgi) = &f.fastcgi {
        return register_fastcgi(mime, f, fastcgi, registry, root, here, problems);
    }
    let config = config(mime, f, here)?;
    let language: Arc<dyn Language> = match FilterLanguage::new(config, root) {
        Ok(language) => Arc::new(language),
        Err(FilterError::Program(e @ ExecError::Invalid(_))) => {
            let problem = here.err("argv", format!("the command {e}"));
            problems.push(problem);
            Arc::new(Unavailable {
                name: format!("filter:{}", mime.to_ascii_lowercase()),
                reason: format!("filter {mime}: the command {e}"),
            })
        }
        Err(e) => return Err(vec![here.err("", e.to_string())]),
    };
    registry
        .register(mime, language)
        .map_err(|e| vec![here.err("", e.to_string())])?;
    Ok(())
}

/// The filter's settings from its table; every bad value is reported.
fn config(mime: &str, f: &FilterFormat, here: &Here<'_>) -> Result<FilterConfig, Vec<ConfigError>> {
    if f.argv.is_empty() || f.argv[0].is_empty() {
        return Err(vec![here.err(
            "argv",
            "a filter needs argv: the program and its arguments, e.g. [\"python3\", \"shout.py\"] (never run through a shell)",
        )]);
    }
    let mut errors = Vec::new();
    let mut config = FilterConfig::new(mime, f.argv.clone());
    let shared = shared_settings(f, here, &mut errors);
    config.timeout = shared.timeout.unwrap_or(config.timeout);
    config.max_output = shared.max_output.unwrap_or(config.max_output);
    config.max_concurrent = f.max_concurrent.unwrap_or(config.max_concurrent);
    config.max_queue = f.max_queue.unwrap_or(config.max_queue);
    config.cacheable = shared.cacheable;
    if let Some(env) = &f.env {
        config.env = env.clone();
    }
    config.version_file = f.version_file.clone();
    config.content_type = f.content_type.clone();
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors)
    }
}

/// The settings a command filter and a FastCGI filter read alike (`None`:
/// not set).
struct Shared {
    timeout: Option<std::time::Duration>,
    max_output: Option<u64>,
    cacheable: bool,
}

/// Reads the shared settings of `f`, each bad value added to `errors`.
fn shared_settings(f: &FilterFormat, here: &Here<'_>, errors: &mut Vec<ConfigError>) -> Shared {
    let mut shared = Shared {
        timeout: None,
        max_output: None,
        cacheable: true,
    };
    if let Some(t) = &f.timeout {
        match parse_duration(t) {
            Ok(d) => shared.timeout = Some(d),
            Err(e) => errors.push(here.err("timeout", e)),
        }
    }
    if let Some(t) = &f.max_output {
        match parse_size(t) {
            Ok(n) => shared.max_output = Some(n),
            Err(e) => errors.push(here.err("max-output", e)),
        }
    }
    if let Some(cache) = &f.cache {
        match Cacheability::parse(cache) {
            Ok(Cacheability::Uncacheable) => shared.cacheable = false,
            _ => errors.push(here.err(
                "cache",
                "a filter's output is cached by its input (the default); \"none\" runs it for every request",
            )),
        }
    }
    shared
}

/// Registers a filter answered by a FastCGI application.
fn register_fastcgi(
    mime: &str,
    f: &FilterFormat,
    fc: &FastcgiFilterFormat,
    registry: &mut Registry,
    root: &Path,
    here: &Here<'_>,
    problems: &mut Vec<ConfigError>,
) -> Result<(), Vec<ConfigError>> {
    let err = |k: &str, m: String| vec![here.err(k, m)];
    if !f.argv.is_empty() {
        return Err(err(
            "argv",
            "a filter has argv (a program run per stage) or fastcgi (an application's workers), not both".into(),
        ));
    }
    if f.version_file.is_some() || f.env.is_some() {
        let k = if f.env.is_some() {
            "env"
        } else {
            "version-file"
        };
        return Err(err(
            k,
            format!(
                "{k} is a command filter's; a FastCGI filter's script is recorded as its dependency (env goes in its fastcgi table)"
            ),
        ));
    }
    let backend = match (&fc.spawn, &fc.address) {
        (Some(argv), None) if !argv.is_empty() && !argv[0].is_empty() => {
            let mut b = BackendConfig::spawn(argv.clone());
            if let Some(n) = fc.workers {
                if n == 0 {
                    return Err(err(
                        "fastcgi.workers",
                        "at least one worker must be allowed".into(),
                    ));
                }
                b.workers = n;
            }
            if let Some(n) = fc.max_requests {
                b.max_requests = n as u64;
            }
            if let Some(t) = &fc.idle_timeout {
                b.idle_timeout = parse_duration(t).map_err(|e| err("fastcgi.idle-timeout", e))?;
            }
            if let Some(env) = &fc.env {
                b.env = env.clone();
            }
            b
        }
        (None, Some(address)) => {
            if fc.workers.is_some()
                || fc.max_requests.is_some()
                || fc.idle_timeout.is_some()
                || fc.env.is_some()
            {
                return Err(err(
                    "fastcgi.address",
                    "workers, max-requests, idle-timeout and env are for workers Axle spawns; a server at an address runs its own".into(),
                ));
            }
            BackendConfig::remote(Address::parse(address).map_err(|e| err("fastcgi.address", e))?)
        }
        _ => {
            return Err(err(
                "fastcgi.spawn",
                "a FastCGI filter needs spawn (e.g. [\"php-cgi\"]) or address (\"127.0.0.1:9000\", \"unix:/path\"), one of them".into(),
            ));
        }
    };
    let Some(script) = fc
        .script
        .clone()
        .filter(|s| !s.is_empty() && !s.split('/').any(|p| p == ".."))
    else {
        return Err(err(
            "fastcgi.script",
            "a FastCGI filter needs script: a file under the document root (SCRIPT_FILENAME), without \"..\"".into(),
        ));
    };
    let mut config = FastcgiFilterConfig::new(mime, backend, script);
    let mut errors = Vec::new();
    let shared = shared_settings(f, here, &mut errors);
    config.timeout = shared.timeout.unwrap_or(config.timeout);
    config.max_output = shared.max_output.unwrap_or(config.max_output);
    config.max_concurrent = f.max_concurrent.unwrap_or(config.max_concurrent);
    config.max_queue = f.max_queue.unwrap_or(config.max_queue);
    config.cacheable = shared.cacheable;
    config.content_type = f.content_type.clone();
    if !errors.is_empty() {
        return Err(errors);
    }
    let language: Arc<dyn Language> = match FastcgiFilterLanguage::new(config, root) {
        Ok(language) => Arc::new(language),
        Err(reason) => {
            problems.push(here.err("fastcgi.spawn", reason.clone()));
            Arc::new(Unavailable {
                name: format!("filter:{}", mime.to_ascii_lowercase()),
                reason: format!("filter {mime}: fastcgi {reason}"),
            })
        }
    };
    registry
        .register(mime, language)
        .map_err(|e| vec![here.err("", e.to_string())])?;
    Ok(())
}

/// A filter whose program cannot be run: its stages fail with 502.
struct Unavailable {
    name: String,
    reason: String,
}

impl Language for Unavailable {
    fn name(&self) -> &str {
        &self.name
    }

    fn resource_optional(&self) -> bool {
        true
    }

    fn compile(&self, _: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
        Err(LanguageError::External {
            kind: ExternalFailure::Failed,
            message: self.reason.clone(),
        })
    }
}
