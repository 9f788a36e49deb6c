//! The `fastcgi` source: a FastCGI application's answer is the document.
//! The application is a set of workers Axle spawns and supervises
//! (`spawn`, php-cgi the usual one: no process started per request) or a
//! server already running (`address`, php-fpm). It is told about the
//! request as the `command` source tells its program (the same CGI/1.1
//! variables, `HTTP_*` for the configured headers, never `HTTP_PROXY`),
//! plus `SCRIPT_FILENAME` (the configured `script` under the document
//! root), `DOCUMENT_ROOT` and `REDIRECT_STATUS=200` (php-cgi's
//! force-cgi-redirect); a POST body is its FCGI_STDIN. Its `Status:` is
//! the page's (a non-2xx answer without a document: 502, or 404 for a
//! 404); a `Content-Type:` that is not XML is a 502, as is a broken
//! answer. The limits of `command` apply: timeout (504, and the worker is
//! killed), max-size (502), concurrency and queue (503 + `Retry-After`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, StatusCode};

use super::{BoxFuture, Cacheability, DynamicProvider, Produced, SourceError, SourceRequest};
use crate::exec::{Concurrency, ExecError, STDERR_KEPT, show_size};
use crate::fastcgi::record::RecordError;
use crate::fastcgi::{Backend, BackendConfig, Bounds, FcgiError, record, response};

/// How a `fastcgi` source is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastcgiConfig {
    /// Where the application is (spawned workers or an address).
    pub backend: BackendConfig,
    /// The script, relative to the document root (`SCRIPT_FILENAME`).
    pub script: String,
    /// Request headers passed as `HTTP_*` (as `command`'s).
    pub headers: Vec<String>,
    /// How long a request may take (default 10 s).
    pub timeout: Duration,
    /// The largest answer (default 16 MiB).
    pub max_size: u64,
    /// The largest POST body (default 1 MiB; 0: POST refused).
    pub max_body: u64,
    /// Requests at once (default: the workers, or the CPUs for an
    /// address).
    pub max_concurrent: usize,
    /// Requests waiting (default 64); past it, 503.
    pub max_queue: usize,
    /// Whether its answers may be cached.
    pub cache: Cacheability,
}

impl FastcgiConfig {
    /// The defaults for `backend` running `script`.
    pub fn new(backend: BackendConfig, script: String) -> FastcgiConfig {
        let max_concurrent = backend.workers;
        FastcgiConfig {
            backend,
            script,
            headers: ["accept", "accept-language", "user-agent"]
                .map(String::from)
                .to_vec(),
            timeout: Duration::from_secs(10),
            max_size: 16 << 20,
            max_body: 1 << 20,
            max_concurrent,
            max_queue: 64,
            cache: Cacheability::Uncacheable,
        }
    }
}

/// A FastCGI application whose answer is the document.
pub struct FastcgiSource {
    backend: Arc<Backend>,
    config: FastcgiConfig,
    script: PathBuf,
    root: PathBuf,
    runs: Concurrency,
}

impl std::fmt::Debug for FastcgiSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastcgiSource")
            .field("app", &self.config.backend.name())
            .field("script", &self.config.script)
            .finish()
    }
}

impl FastcgiSource {
    /// The source for `config` under `root`: a spawned program is found
    /// now (an error names what is missing); no worker starts before the
    /// first request.
    pub fn new(config: FastcgiConfig, root: &Path) -> Result<FastcgiSource, String> {
        let root = root
            .canonicalize()
            .map_err(|e| format!("document root {}: {e}", root.display()))?;
        let backend = config.backend.start(&root)?;
        Ok(FastcgiSource {
            backend: Arc::new(backend),
            script: root.join(config.script.trim_start_matches('/')),
            root,
            runs: Concurrency::new(config.max_concurrent.max(1), config.max_queue),
            config,
        })
    }

    /// Every variable the application is told.
    fn params(&self, request: &SourceRequest) -> Vec<(String, String)> {
        let mut env = super::command::environment(&self.config.headers, request);
        env.push((
            "SCRIPT_FILENAME".into(),
            self.script.to_string_lossy().into_owned(),
        ));
        env.push((
            "DOCUMENT_ROOT".into(),
            self.root.to_string_lossy().into_owned(),
        ));
        env.push(("REDIRECT_STATUS".into(), "200".into()));
        env
    }

    fn failure(&self, e: &FcgiError) -> SourceError {
        let message = format!("fastcgi {} {e}", self.config.backend.name());
        match e {
            FcgiError::Timeout(_) => SourceError::Timeout(message),
            FcgiError::Protocol(RecordError::TooLarge(n)) => SourceError::Failed(format!(
                "fastcgi {} wrote more than {} of output",
                self.config.backend.name(),
                show_size(*n)
            )),
            _ => SourceError::Failed(message),
        }
    }

    /// The document in an answer, or why there is none.
    fn document(&self, stdout: Vec<u8>) -> Result<Produced, SourceError> {
        let app = self.config.backend.name();
        let head = response::parse(&stdout)
            .map_err(|e| SourceError::Failed(format!("fastcgi {app}: {e}")))?;
        if let Some(t) = head
            .content_type
            .as_deref()
            .filter(|t| !response::may_be_xml(t))
        {
            return Err(SourceError::Failed(format!(
                "fastcgi {app} answered {t:?}, not XML"
            )));
        }
        let body = Bytes::from(stdout).slice(head.body_start..);
        let status = StatusCode::from_u16(head.status).unwrap_or(StatusCode::BAD_GATEWAY);
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(match status {
                StatusCode::NOT_FOUND => {
                    SourceError::NotFound(format!("fastcgi {app} answered 404"))
                }
                s if s.is_success() => {
                    SourceError::Failed(format!("fastcgi {app} answered no document"))
                }
                s => SourceError::Failed(format!(
                    "fastcgi {app} answered status {} with no document",
                    s.as_u16()
                )),
            });
        }
        if !head.content_type.as_deref().is_some_and(declares_xml) {
            // No XML type declared (PHP's default `text/html`, or none):
            // only a well-formed document is taken, so an error page (a
            // PHP fatal error shown as HTML) is a 502, not a page served
            // as it is.
            well_formed(&body).map_err(|e| {
                SourceError::Failed(format!(
                    "fastcgi {app} answered a document that is not well-formed XML ({e})"
                ))
            })?;
        }
        let ok = status == StatusCode::OK;
        Ok(Produced {
            bytes: body,
            cacheable: ok && self.config.cache != Cacheability::Uncacheable,
            status: (!ok).then_some(status),
        })
    }
}

impl DynamicProvider for FastcgiSource {
    fn describe(&self) -> String {
        format!(
            "fastcgi {} {}",
            self.config.backend.name(),
            self.config.script
        )
    }

    fn body_limit(&self, method: &Method) -> Result<Option<u64>, SourceError> {
        super::command::program_body_limit(method, self.config.max_body)
    }

    fn memo_key(&self, request: &SourceRequest) -> Option<Vec<u8>> {
        // Everything the application is told about the request.
        Some(super::command::variables_key(&self.params(request)))
    }

    fn produce<'a>(
        &'a self,
        request: &'a SourceRequest,
    ) -> BoxFuture<'a, Result<Produced, SourceError>> {
        Box::pin(async move {
            let env = self.params(request);
            let params = record::encode_pairs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let stdin = request.body.clone().unwrap_or_default();
            let (backend, runs) = (Arc::clone(&self.backend), self.runs.clone());
            let (timeout, max_size) = (self.config.timeout, self.config.max_size);
            let answered = tokio::task::spawn_blocking(move || {
                let start = Instant::now();
                let _permit = runs.acquire(timeout).map_err(Waited::Busy)?;
                let bounds = Bounds {
                    // The queue's wait counts: a request is answered
                    // within its timeout.
                    deadline: start + timeout,
                    timeout,
                    max_stdout: max_size,
                    max_stderr: STDERR_KEPT,
                };
                backend
                    .call(&params, &stdin, bounds)
                    .map_err(Waited::Failed)
            })
            .await
            .map_err(|e| SourceError::Failed(format!("{}: {e}", self.describe())))?;
            let answer = match answered {
                Ok(answer) => answer,
                Err(Waited::Busy(e)) => {
                    return Err(SourceError::Busy(format!(
                        "fastcgi {} {e}",
                        self.config.backend.name()
                    )));
                }
                Err(Waited::Failed(e)) => return Err(self.failure(&e)),
            };
            if !answer.stderr.is_empty() {
                tracing::warn!(
                    source = %self.describe(),
                    stderr = %String::from_utf8_lossy(&answer.stderr),
                    "FastCGI application wrote to stderr"
                );
            }
            self.document(answer.stdout)
        })
    }
}

/// Does `content_type` name an XML media type (`text/xml`,
/// `application/xml`, `…+xml`)?
fn declares_xml(content_type: &str) -> bool {
    response::may_be_xml(content_type)
        && !content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("text/html")
}

/// Is `body` a well-formed XML document (a DOCTYPE allowed)?
fn well_formed(body: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(body).map_err(|_| "not UTF-8".to_string())?;
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(text, options)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Why a request got no answer: no turn, or the application.
enum Waited {
    Busy(ExecError),
    Failed(FcgiError),
}
