//! The `command` source: a configured program's stdout is the document.
//! The program is fixed by the configuration (an argv, never a shell),
//! runs in the document root with a cleared environment, and learns about
//! the request only CGI-style, from its environment (`REQUEST_METHOD`,
//! `QUERY_STRING`, `PATH_INFO`, `SCRIPT_NAME`, `HTTP_*` for the configured
//! headers) and, for a POST, its stdin: nothing a client sends can change
//! which program runs or its arguments. Bounded as every program Axle runs
//! is ([`crate::exec`]): a timeout (504), an output limit and a non-zero
//! exit (502), a concurrency limit with a queue (503 + `Retry-After`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, header};

use super::{BoxFuture, Cacheability, DynamicProvider, Produced, SourceError, SourceRequest};
use crate::exec::{Concurrency, ExecError, Program};

/// How a `command` source is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandConfig {
    /// The program and its arguments (`["python3", "live.py"]`); `argv[0]`
    /// is found on `PATH` unless it has a `/` (then it is relative to the
    /// document root, the working directory).
    pub argv: Vec<String>,
    /// Variables of the server's environment passed on (default `PATH`,
    /// `LANG`, `LC_ALL`, `TZ`); nothing else of it is.
    pub env: Vec<String>,
    /// Request headers passed as `HTTP_NAME` variables (default `Accept`,
    /// `Accept-Language`, `User-Agent`).
    pub headers: Vec<String>,
    /// How long a run may take (default 10 s).
    pub timeout: Duration,
    /// The largest document it may write (default 16 MiB).
    pub max_size: u64,
    /// The largest POST body given on stdin (default 1 MiB; 0: POST is
    /// refused).
    pub max_body: u64,
    /// Runs at once (default: the number of CPUs).
    pub max_concurrent: usize,
    /// Requests waiting for a run (default 64); past it, 503.
    pub max_queue: usize,
    /// Whether what it writes may be cached (default: `Uncacheable`).
    pub cache: Cacheability,
}

impl CommandConfig {
    /// The defaults for `argv`.
    pub fn new(argv: Vec<String>) -> CommandConfig {
        CommandConfig {
            argv,
            env: ["PATH", "LANG", "LC_ALL", "TZ"].map(String::from).to_vec(),
            headers: ["accept", "accept-language", "user-agent"]
                .map(String::from)
                .to_vec(),
            timeout: Duration::from_secs(10),
            max_size: 16 << 20,
            max_body: 1 << 20,
            max_concurrent: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_queue: 64,
            cache: Cacheability::Uncacheable,
        }
    }
}

/// A program whose output is the document, run for each request.
pub struct CommandSource {
    program: Arc<Program>,
    config: CommandConfig,
    runs: Arc<Concurrency>,
}

impl std::fmt::Debug for CommandSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandSource")
            .field("argv", &self.config.argv)
            .finish()
    }
}

impl CommandSource {
    /// A source running `config.argv` in `root`: the executable is found
    /// now (an error names what is missing).
    pub fn new(config: CommandConfig, root: &Path) -> Result<CommandSource, String> {
        let program = Program::new(config.argv.clone(), root)
            .map_err(|e| format!("{}: {e}", show_argv(&config.argv)))?
            .with_env(Program::allowed_env(&config.env, &[]))
            .with_timeout(config.timeout)
            .with_max_output(config.max_size);
        Ok(CommandSource {
            program: Arc::new(program),
            runs: Arc::new(Concurrency::new(
                config.max_concurrent.max(1),
                config.max_queue,
            )),
            config,
        })
    }

    /// The CGI-style variables for `request`.
    fn environment(&self, request: &SourceRequest) -> Vec<(String, String)> {
        environment(&self.config.headers, request)
    }
}

/// Every variable a command may get besides `HTTP_*` and the configured
/// `env` allow-list (`CONTENT_TYPE` and `CONTENT_LENGTH` only with a
/// body): the one list docs, tests and the `cgi_env` fuzz target check
/// against.
pub const CGI_VARIABLES: [&str; 10] = [
    "GATEWAY_INTERFACE",
    "SERVER_PROTOCOL",
    "SERVER_SOFTWARE",
    "REQUEST_METHOD",
    "QUERY_STRING",
    "PATH_INFO",
    "SCRIPT_NAME",
    "REQUEST_URI",
    "CONTENT_TYPE",
    "CONTENT_LENGTH",
];

/// The CGI-style variables for `request`, with `headers` (configured
/// names) passed as `HTTP_*`.
pub fn environment(headers: &[String], request: &SourceRequest) -> Vec<(String, String)> {
    let mut env = vec![
        ("GATEWAY_INTERFACE".to_string(), "CGI/1.1".to_string()),
        ("SERVER_PROTOCOL".to_string(), "HTTP/1.1".to_string()),
        (
            "SERVER_SOFTWARE".to_string(),
            format!("axle/{}", env!("CARGO_PKG_VERSION")),
        ),
        ("REQUEST_METHOD".to_string(), request.method.to_string()),
        (
            "QUERY_STRING".to_string(),
            request.query.clone().unwrap_or_default(),
        ),
        ("PATH_INFO".to_string(), request.path_info.clone()),
        (
            "SCRIPT_NAME".to_string(),
            request
                .path
                .strip_suffix(request.path_below.as_str())
                .unwrap_or("")
                .to_string(),
        ),
        ("REQUEST_URI".to_string(), request_uri(request)),
    ];
    if let Some(body) = &request.body {
        env.push(("CONTENT_LENGTH".to_string(), body.len().to_string()));
        if let Some(t) = request
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
        {
            env.push(("CONTENT_TYPE".to_string(), t.to_string()));
        }
    }
    for name in headers {
        let Some(value) = request
            .headers
            .get(name.as_str())
            .and_then(|v| v.to_str().ok())
        else {
            continue;
        };
        let var: String = name
            .chars()
            .map(|c| {
                if c == '-' {
                    '_'
                } else {
                    c.to_ascii_uppercase()
                }
            })
            .collect();
        env.push((format!("HTTP_{var}"), value.to_string()));
    }
    env
}

/// The request's path and query as the client would write them.
fn request_uri(request: &SourceRequest) -> String {
    match &request.query {
        Some(q) => format!("{}?{q}", request.path),
        None => request.path.clone(),
    }
}

/// An argv for messages: its words joined by spaces.
fn show_argv(argv: &[String]) -> String {
    argv.join(" ")
}

impl DynamicProvider for CommandSource {
    fn describe(&self) -> String {
        format!("command {}", show_argv(&self.config.argv))
    }

    fn body_limit(&self, method: &Method) -> Result<Option<u64>, SourceError> {
        if method == Method::GET || method == Method::HEAD {
            Ok(None)
        } else if method == Method::POST && self.config.max_body > 0 {
            Ok(Some(self.config.max_body))
        } else if self.config.max_body > 0 {
            Err(SourceError::Method {
                allowed: "GET, HEAD, POST",
            })
        } else {
            Err(SourceError::Method {
                allowed: "GET, HEAD",
            })
        }
    }

    fn memo_key(&self, request: &SourceRequest) -> Option<Vec<u8>> {
        // Everything the program is told about the request.
        let env = self.environment(request);
        Some(super::memo_key(env.iter().flat_map(|(name, value)| {
            [Some(name.as_bytes()), Some(value.as_bytes())]
        })))
    }

    fn produce<'a>(
        &'a self,
        request: &'a SourceRequest,
    ) -> BoxFuture<'a, Result<Produced, SourceError>> {
        Box::pin(async move {
            let env = self.environment(request);
            let stdin = request.body.clone().unwrap_or_default();
            let (program, runs) = (Arc::clone(&self.program), Arc::clone(&self.runs));
            let wait = self.config.timeout;
            let ran = tokio::task::spawn_blocking(move || {
                let _permit = runs.acquire(wait)?;
                program.run_bytes(stdin, &env)
            })
            .await
            .map_err(|e| SourceError::Failed(format!("{}: {e}", self.describe())))?;
            match ran {
                Ok(output) => {
                    if !output.stderr.is_empty() {
                        tracing::debug!(command = %self.describe(), stderr = %output.stderr, "command wrote to stderr");
                    }
                    Ok(Produced {
                        bytes: output.stdout,
                        cacheable: self.config.cache != Cacheability::Uncacheable,
                    })
                }
                Err(e) => Err(self.failure(&e)),
            }
        })
    }
}

impl CommandSource {
    /// A run's failure as answered (stderr logged, never shown).
    fn failure(&self, e: &ExecError) -> SourceError {
        let message = format!("{} {e}", self.describe());
        if let Some(stderr) = e.stderr().filter(|s| !s.is_empty()) {
            tracing::warn!(command = %self.describe(), error = %e, %stderr, "command failed");
        }
        match e {
            ExecError::Timeout(_) => SourceError::Timeout(message),
            ExecError::Busy(_) => SourceError::Busy(message),
            _ => SourceError::Failed(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_holds_exactly_the_listed_variables_and_the_configured_headers() {
        let mut request = SourceRequest::new(Method::POST, "/live", "/a%20b.xml");
        request.query = Some("x=1".into());
        request.body = Some(bytes::Bytes::from_static(b"<a/>"));
        request
            .headers
            .insert(header::CONTENT_TYPE, "application/xml".parse().unwrap());
        request
            .headers
            .insert("accept-language", "fr".parse().unwrap());
        request.headers.insert("x-secret", "no".parse().unwrap());
        let env = environment(&["accept-language".to_string()], &request);
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        let mut want: Vec<&str> = CGI_VARIABLES.to_vec();
        want.push("HTTP_ACCEPT_LANGUAGE");
        let (mut got, mut want) = (names.clone(), want);
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "every listed variable, once, and nothing else");
        let value = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(value("PATH_INFO"), Some("/a b.xml"));
        assert_eq!(value("SCRIPT_NAME"), Some("/live"));
        assert_eq!(value("REQUEST_URI"), Some("/live/a%20b.xml?x=1"));
        assert_eq!(value("CONTENT_LENGTH"), Some("4"));
        // Without a body, no CONTENT_* variables.
        request.body = None;
        let env = environment(&[], &request);
        assert!(env.iter().all(|(k, _)| !k.starts_with("CONTENT_")));
    }
}
