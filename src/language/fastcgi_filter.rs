//! FastCGI filter Languages (`[filter."type"] fastcgi = { ... }`): a
//! stylesheet type whose stages are answered by a FastCGI application
//! (workers Axle spawns, or a server at an address) instead of a process
//! started per run. The stage's input is the request's FCGI_STDIN (a
//! `POST` of `application/xml`), the answer's body its output. The
//! application learns of the stage as a command filter's program does,
//! as variables (`AXLE_RESOURCE`, `AXLE_RESOURCE_URL`, `AXLE_BASE_URL`,
//! `AXLE_STAGE_FINAL`, `AXLE_PARAM_<name>`), plus `SCRIPT_FILENAME` (the
//! configured `script` under the root) and the CGI variables php-cgi
//! needs. Keys and caching as for a command filter ([`super::filter`]):
//! the configuration is in the config hash, the script (and a spawned
//! program's executable) recorded as the stage's dependencies, so an
//! edited script means new keys.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::filter::{FilterConfig, excerpt, normalize_mime, param_variable, record_file};
use super::{
    ExternalFailure, Language, LanguageError, Resource, Stage, StageContext, StageData, StageOutput,
};
use crate::cache::{ContentHash, Dep, KeyBuilder};
use crate::exec::{Concurrency, ExecError, STDERR_KEPT};
use crate::fastcgi::{Backend, BackendConfig, Bounds, FcgiError, record, response};

/// One `[filter."type"]` whose `fastcgi` table is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastcgiFilterConfig {
    /// The stylesheet MIME type a PI names to run this filter.
    pub mime: String,
    /// The application: spawned workers or an address.
    pub backend: BackendConfig,
    /// The script under the document root (`SCRIPT_FILENAME`).
    pub script: String,
    /// Wall-clock limit of one stage (its wait for a turn included).
    pub timeout: Duration,
    /// Most bytes of answer one stage may get.
    pub max_output: u64,
    /// Stages of this filter at once.
    pub max_concurrent: usize,
    /// Stages waiting for a turn; past it, 503.
    pub max_queue: usize,
    /// The response's Content-Type when it is the last stage.
    pub content_type: Option<String>,
    /// May its output be cached?
    pub cacheable: bool,
}

impl FastcgiFilterConfig {
    /// A filter for `mime` answered by `backend` running `script`.
    pub fn new(mime: impl Into<String>, backend: BackendConfig, script: String) -> Self {
        let max_concurrent = backend.workers;
        FastcgiFilterConfig {
            mime: mime.into(),
            backend,
            script,
            timeout: FilterConfig::DEFAULT_TIMEOUT,
            max_output: FilterConfig::DEFAULT_MAX_OUTPUT,
            max_concurrent,
            max_queue: FilterConfig::DEFAULT_MAX_QUEUE,
            content_type: None,
            cacheable: true,
        }
    }
}

/// A Language whose stages a FastCGI application answers.
#[derive(Debug)]
pub struct FastcgiFilterLanguage {
    name: String,
    shared: Arc<Shared>,
    config_hash: ContentHash,
}

#[derive(Debug)]
struct Shared {
    mime: String,
    /// `filter <type> (fastcgi <app>)`.
    label: String,
    backend: Backend,
    /// The spawned program's executable (recorded as a dependency).
    executable: Option<PathBuf>,
    script: PathBuf,
    root: PathBuf,
    turns: Concurrency,
    config: FastcgiFilterConfig,
}

impl FastcgiFilterLanguage {
    /// The filter `config` describes, under `root`. An error names what
    /// is missing (a spawned program not found).
    pub fn new(config: FastcgiFilterConfig, root: &Path) -> Result<Self, String> {
        let mime = normalize_mime(&config.mime);
        if mime.is_empty() || mime.contains(char::is_whitespace) {
            return Err(format!("{:?} is not a MIME type", config.mime));
        }
        if config.timeout.is_zero() || config.max_concurrent == 0 {
            return Err("timeout and max-concurrent must not be 0".into());
        }
        let root = root
            .canonicalize()
            .map_err(|e| format!("document root {}: {e}", root.display()))?;
        let backend = config.backend.start(&root)?;
        let executable = match &backend {
            Backend::Spawned(pool) => Some(pool.program().executable().to_path_buf()),
            Backend::Remote(_) => None,
        };
        let script = root.join(config.script.trim_start_matches('/'));
        let mut key = KeyBuilder::new("fastcgi filter configuration");
        key.str(&mime)
            .str(&config.backend.name())
            .u64(config.backend.spawn.as_ref().map_or(0, Vec::len) as u64);
        for arg in config.backend.spawn.iter().flatten() {
            key.str(arg);
        }
        key.bytes(script.as_os_str().as_bytes())
            .str(config.content_type.as_deref().unwrap_or(""))
            .u64(u64::from(config.cacheable))
            .u64(u64::try_from(config.timeout.as_millis()).unwrap_or(u64::MAX))
            .u64(config.max_output);
        let config_hash = key.finish_hash();
        Ok(FastcgiFilterLanguage {
            name: format!("filter:{mime}"),
            shared: Arc::new(Shared {
                label: format!("filter {mime} (fastcgi {})", config.backend.name()),
                mime,
                backend,
                executable,
                script,
                root,
                turns: Concurrency::new(config.max_concurrent, config.max_queue),
                config,
            }),
            config_hash,
        })
    }
}

impl Language for FastcgiFilterLanguage {
    fn name(&self) -> &str {
        &self.name
    }

    fn config_hash(&self) -> Option<ContentHash> {
        Some(self.config_hash)
    }

    fn resource_optional(&self) -> bool {
        true
    }

    fn compile(&self, resource: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
        let shared = &self.shared;
        let resolver = resource.resolver;
        if let Some(exe) = &shared.executable {
            record_file(resolver, exe).map_err(|e| LanguageError::External {
                kind: ExternalFailure::Failed,
                message: format!("{}: its executable cannot be read: {e}", shared.label),
            })?;
        }
        if record_file(resolver, &shared.script).is_err() {
            resolver.record(Dep::absent(shared.script.clone()));
        }
        let file = (!resource.missing)
            .then(|| resource.path.to_str().map(str::to_string))
            .flatten();
        Ok(Arc::new(FastcgiStage {
            shared: Arc::clone(shared),
            resource: file,
            resource_url: resource.url.to_string(),
        }))
    }
}

struct FastcgiStage {
    shared: Arc<Shared>,
    resource: Option<String>,
    resource_url: String,
}

impl FastcgiStage {
    fn params(&self, ctx: &StageContext<'_>, length: usize) -> Vec<u8> {
        let shared = &self.shared;
        let mut env: Vec<(String, String)> = vec![
            ("GATEWAY_INTERFACE".into(), "CGI/1.1".into()),
            ("SERVER_PROTOCOL".into(), "HTTP/1.1".into()),
            ("REQUEST_METHOD".into(), "POST".into()),
            ("CONTENT_TYPE".into(), "application/xml".into()),
            ("CONTENT_LENGTH".into(), length.to_string()),
            (
                "SCRIPT_FILENAME".into(),
                shared.script.to_string_lossy().into_owned(),
            ),
            (
                "SCRIPT_NAME".into(),
                format!("/{}", shared.config.script.trim_start_matches('/')),
            ),
            (
                "DOCUMENT_ROOT".into(),
                shared.root.to_string_lossy().into_owned(),
            ),
            ("REDIRECT_STATUS".into(), "200".into()),
            ("AXLE_RESOURCE_URL".into(), self.resource_url.clone()),
            ("AXLE_BASE_URL".into(), ctx.base_url.to_string()),
            (
                "AXLE_STAGE_FINAL".into(),
                if ctx.is_final { "1" } else { "0" }.into(),
            ),
        ];
        if let Some(path) = &self.resource {
            env.push(("AXLE_RESOURCE".into(), path.clone()));
        }
        for (name, value) in ctx.params {
            if let Some(var) = param_variable(name) {
                env.push((var, value.clone()));
            }
        }
        record::encode_pairs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    fn error(&self, kind: ExternalFailure, reason: impl std::fmt::Display) -> LanguageError {
        LanguageError::External {
            kind,
            message: format!("{} {reason}", self.shared.label),
        }
    }
}

impl Stage for FastcgiStage {
    fn run(&self, input: StageData, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
        let input = input.into_bytes()?;
        let shared = &self.shared;
        let config = &shared.config;
        let start = Instant::now();
        let _turn = shared.turns.acquire(config.timeout).map_err(|e| match e {
            ExecError::Busy(_) => self.error(ExternalFailure::Busy, e),
            other => self.error(ExternalFailure::Failed, other),
        })?;
        let params = self.params(ctx, input.len());
        let bounds = Bounds {
            deadline: start + config.timeout,
            timeout: config.timeout,
            max_stdout: config.max_output,
            max_stderr: STDERR_KEPT,
        };
        let answer = shared
            .backend
            .call(&params, &input, bounds)
            .map_err(|e| match e {
                FcgiError::Timeout(_) => self.error(ExternalFailure::Timeout, e),
                other => self.error(ExternalFailure::Failed, other),
            })?;
        if !answer.stderr.is_empty() {
            tracing::warn!(
                document = ctx.base_url,
                filter = %shared.mime,
                stderr = %excerpt(&String::from_utf8_lossy(&answer.stderr)),
                "FastCGI filter wrote to stderr"
            );
        }
        let head =
            response::parse(&answer.stdout).map_err(|e| self.error(ExternalFailure::Failed, e))?;
        if !(200..300).contains(&head.status) {
            return Err(self.error(
                ExternalFailure::Failed,
                format!("answered status {}", head.status),
            ));
        }
        let body = bytes::Bytes::from(answer.stdout).slice(head.body_start..);
        let content_type = ctx.is_final.then(|| {
            config
                .content_type
                .clone()
                .unwrap_or_else(|| FilterConfig::DEFAULT_CONTENT_TYPE.to_string())
        });
        Ok(StageOutput {
            data: StageData::Bytes(body),
            content_type,
        })
    }

    fn cacheable(&self) -> bool {
        self.shared.config.cacheable
    }
}
