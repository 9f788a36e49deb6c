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
use super::format::FilterFormat;
use super::validate::Here;
use crate::config::{parse_duration, parse_size};
use crate::dynamic::Cacheability;
use crate::exec::ExecError;
use crate::language::{
    ExternalFailure, FilterConfig, FilterError, FilterLanguage, Language, LanguageError, Registry,
    Resource, Stage,
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
    if let Some(t) = &f.timeout {
        match parse_duration(t) {
            Ok(d) => config.timeout = d,
            Err(e) => errors.push(here.err("timeout", e)),
        }
    }
    if let Some(t) = &f.max_output {
        match parse_size(t) {
            Ok(n) => config.max_output = n,
            Err(e) => errors.push(here.err("max-output", e)),
        }
    }
    if let Some(n) = f.max_concurrent {
        config.max_concurrent = n;
    }
    if let Some(n) = f.max_queue {
        config.max_queue = n;
    }
    if let Some(env) = &f.env {
        config.env = env.clone();
    }
    config.version_file = f.version_file.clone();
    config.content_type = f.content_type.clone();
    if let Some(cache) = &f.cache {
        match Cacheability::parse(cache) {
            Ok(Cacheability::Uncacheable) => config.cacheable = false,
            _ => errors.push(here.err(
                "cache",
                "a filter's output is cached by its input (the default); \"none\" runs it for every request",
            )),
        }
    }
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors)
    }
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
