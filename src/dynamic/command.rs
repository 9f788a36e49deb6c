//! The `command` source: a configured program's stdout is the document.
//! The program is fixed by the configuration (an argv, never a shell),
//! runs in the document root with a cleared environment, and learns about
//! the request only CGI-style, from its environment (`REQUEST_METHOD`,
//! `QUERY_STRING`, `PATH_INFO`, `SCRIPT_NAME`, `HTTP_*` for the configured
//! headers, repeated lines joined into one, never `HTTP_PROXY`) and, for a
//! POST, its stdin: nothing a client sends can change
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
        let Some(var) = header_variable(name) else {
            continue;
        };
        // Two configured spellings of one header give one variable.
        if env.iter().any(|(k, _)| *k == var) {
            continue;
        }
        let Some(value) = joined_header(&request.headers, name) else {
            continue;
        };
        env.push((var, value));
    }
    env
}

/// The `HTTP_*` variable a configured header is passed as (`-` becomes
/// `_`, letters upper case), or `None` for a name that may never be
/// passed (see [`header_problem`]): `Proxy` would become `HTTP_PROXY`,
/// which HTTP client libraries take as their proxy (httpoxy), so the
/// builder never emits it whatever the configuration says.
fn header_variable(name: &str) -> Option<String> {
    if header_problem(name).is_some() {
        return None;
    }
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
    Some(format!("HTTP_{var}"))
}

/// Why `name` cannot be a configured `headers` entry of a command (the
/// site loader refuses it, naming the key and line), or `None` when it
/// can: a header name (RFC 9110 token), without `_` (in `HTTP_*` it
/// would read as `-`: a client could pass one for the other), and not
/// `Proxy` in any case (httpoxy: `HTTP_PROXY` is an HTTP client's proxy
/// setting; Apache, nginx and Go's CGI never pass it either).
pub fn header_problem(name: &str) -> Option<String> {
    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Some(format!("{name:?} is not a header name"));
    }
    if name.contains('_') {
        return Some(format!(
            "{name:?}: a header name with '_' is not passed (as HTTP_* it would read the same as one with '-')"
        ));
    }
    if name.eq_ignore_ascii_case("proxy") {
        return Some(format!(
            "{name:?} is never passed to a program: as HTTP_PROXY it would set the program's HTTP proxy (httpoxy)"
        ));
    }
    None
}

/// Every line of the header `name` in `headers`, as one value (CGI/1.1,
/// RFC 3875 §4.1.18: repeated lines are one meta-variable): joined with
/// `", "` as HTTP joins a repeated field (RFC 9110 §5.3), except `Cookie`,
/// whose lines are joined with `"; "` (RFC 6265 §5.4, RFC 9113 §8.2.3).
/// Lines that are not visible ASCII are left out, as a single such line
/// always was; `None` when no line is left.
fn joined_header(headers: &http::HeaderMap, name: &str) -> Option<String> {
    let separator = if name.eq_ignore_ascii_case("cookie") {
        "; "
    } else {
        ", "
    };
    let values: Vec<&str> = headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(separator))
}

/// What a program's source takes for `method`: GET and HEAD without a
/// body, POST with one of at most `max_body` bytes (`0`: POST refused).
pub(super) fn program_body_limit(
    method: &Method,
    max_body: u64,
) -> Result<Option<u64>, SourceError> {
    if method == Method::GET || method == Method::HEAD {
        Ok(None)
    } else if method == Method::POST && max_body > 0 {
        Ok(Some(max_body))
    } else if max_body > 0 {
        Err(SourceError::Method {
            allowed: "GET, HEAD, POST",
        })
    } else {
        Err(SourceError::Method {
            allowed: "GET, HEAD",
        })
    }
}

/// A memo key of every variable a program is told.
pub(super) fn variables_key(env: &[(String, String)]) -> Vec<u8> {
    super::memo_key(
        env.iter()
            .flat_map(|(name, value)| [Some(name.as_bytes()), Some(value.as_bytes())]),
    )
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
        program_body_limit(method, self.config.max_body)
    }

    fn memo_key(&self, request: &SourceRequest) -> Option<Vec<u8>> {
        // Everything the program is told about the request.
        Some(variables_key(&self.environment(request)))
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
                        status: None,
                    })
                }
                Err(e) => Err(self.failure(&e)),
            }
        })
    }
}

impl CommandSource {
    /// A run's failure as answered (stderr logged, never shown), naming
    /// the program by its `argv[0]` as configured (its arguments, paths
    /// under the server among them, are logged, not shown).
    fn failure(&self, e: &ExecError) -> SourceError {
        let program = self.config.argv.first().map_or("", String::as_str);
        let message = format!("command {program} {e}");
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

    /// The value of `var` in the environment of `request` with `headers`
    /// configured.
    fn variable(headers: &[&str], request: &SourceRequest, var: &str) -> Option<String> {
        let headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
        let env = environment(&headers, request);
        let mut found = env.iter().filter(|(k, _)| k == var);
        let first = found.next().map(|(_, v)| v.clone());
        assert!(found.next().is_none(), "{var} set twice: {env:?}");
        first
    }

    #[test]
    fn repeated_header_lines_are_one_variable_joined_as_cgi_says() {
        let mut request = SourceRequest::new(Method::GET, "/live", "/x");
        for (name, value) in [
            ("cookie", "a=1"),
            ("user-agent", "first/1.0"),
            ("cookie", "b=2"),
            ("user-agent", "second/2.0"),
            ("cookie", "c=3"),
            ("accept", "text/html"),
            ("accept", "\u{e9}t\u{e9}"),
        ] {
            let value = http::HeaderValue::from_bytes(value.as_bytes()).unwrap();
            request.headers.append(name, value);
        }
        let configured = ["cookie", "User-Agent", "accept"];
        assert_eq!(
            variable(&configured, &request, "HTTP_COOKIE").as_deref(),
            Some("a=1; b=2; c=3"),
            "Cookie lines are joined with \"; \""
        );
        assert_eq!(
            variable(&configured, &request, "HTTP_USER_AGENT").as_deref(),
            Some("first/1.0, second/2.0"),
            "other repeated lines with \", \""
        );
        // A line that is not visible ASCII is left out, the others kept.
        assert_eq!(
            variable(&configured, &request, "HTTP_ACCEPT").as_deref(),
            Some("text/html")
        );
        // One line: its value as it is; none: no variable.
        request.headers.remove("cookie");
        request.headers.insert("cookie", "only=1".parse().unwrap());
        assert_eq!(
            variable(&configured, &request, "HTTP_COOKIE").as_deref(),
            Some("only=1")
        );
        request.headers.remove("cookie");
        assert_eq!(variable(&configured, &request, "HTTP_COOKIE"), None);
    }

    #[test]
    fn the_builder_never_emits_http_proxy_whatever_is_configured() {
        let mut request = SourceRequest::new(Method::GET, "/live", "/x");
        request
            .headers
            .insert("proxy", "http://attacker.example:8080".parse().unwrap());
        request.headers.insert("x-a", "dash".parse().unwrap());
        request.headers.insert("x_a", "underscore".parse().unwrap());
        let configured = ["proxy", "PROXY", "Proxy", "x-a", "x_a", "X-A"];
        let headers: Vec<String> = configured.iter().map(|h| h.to_string()).collect();
        let env = environment(&headers, &request);
        assert!(
            env.iter().all(|(k, _)| k != "HTTP_PROXY"),
            "httpoxy: {env:?}"
        );
        // `x_a` is not passed, and `X-A` is the same variable as `x-a`.
        assert_eq!(
            variable(&configured, &request, "HTTP_X_A").as_deref(),
            Some("dash")
        );
    }

    #[test]
    fn header_names_that_cannot_be_passed_are_named() {
        for name in ["proxy", "Proxy", "PROXY", "pRoXy"] {
            let why = header_problem(name).unwrap();
            assert!(
                why.contains("HTTP_PROXY") && why.contains("httpoxy"),
                "{why}"
            );
        }
        assert!(header_problem("x_forwarded").unwrap().contains("'_'"));
        assert!(header_problem("a b").unwrap().contains("not a header name"));
        assert!(header_problem("").unwrap().contains("not a header name"));
        for name in [
            "accept",
            "User-Agent",
            "cookie",
            "proxy-authorization",
            "x-proxy",
        ] {
            assert_eq!(header_problem(name), None, "{name}");
        }
    }
}
