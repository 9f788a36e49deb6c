//! Where a FastCGI request goes: a spawned worker of a [`Pool`] (its kept
//! connection; a worker that fails is stopped and replaced), or an
//! existing server at an [`Address`] (a connection per request, so a
//! server that serves one connection at a time is never held idle).

use std::time::{Duration, Instant};

use super::client::{Address, Answer, Connection, FcgiError};
use super::workers::Pool;

/// A FastCGI application to send requests to.
#[derive(Debug)]
pub enum Backend {
    /// Workers Axle spawned.
    Spawned(Pool),
    /// A server that was already running.
    Remote(Address),
}

/// One request's bounds.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// When the answer must be in.
    pub deadline: Instant,
    /// The configured timeout (named in errors).
    pub timeout: Duration,
    /// The most STDOUT kept (more is an error).
    pub max_stdout: u64,
    /// The most STDERR kept (the rest dropped).
    pub max_stderr: usize,
}

impl Backend {
    /// Sends one request (`params`: the PARAMS content; `stdin`: the body)
    /// and returns the answer.
    pub fn call(&self, params: &[u8], stdin: &[u8], b: Bounds) -> Result<Answer, FcgiError> {
        match self {
            Backend::Remote(address) => {
                let mut conn = Connection::connect(address, b.deadline, b.timeout)?;
                conn.request(
                    params,
                    stdin,
                    false,
                    b.deadline,
                    b.timeout,
                    b.max_stdout,
                    b.max_stderr,
                )
            }
            Backend::Spawned(pool) => {
                let mut lease = pool.lease(b.deadline, b.timeout)?;
                let result = lease
                    .worker()
                    .and_then(|w| w.connection(b.deadline, b.timeout))
                    .and_then(|c| {
                        c.request(
                            params,
                            stdin,
                            true,
                            b.deadline,
                            b.timeout,
                            b.max_stdout,
                            b.max_stderr,
                        )
                    });
                // A worker that failed in any way (crashed, timed out,
                // broke the protocol, wrote too much) is stopped with
                // everything it started; the next lease starts another.
                lease.finish(result.is_ok());
                result
            }
        }
    }
}

/// How a FastCGI application is reached: spawned (`spawn`, with its
/// workers' settings) or at an `address`; shared by the `fastcgi` source
/// and FastCGI filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendConfig {
    /// The program to spawn as workers (`["php-cgi"]`), found on `PATH`
    /// or relative to the document root.
    pub spawn: Option<Vec<String>>,
    /// An existing server instead.
    pub address: Option<Address>,
    /// Most spawned workers at once (default: the number of CPUs).
    pub workers: usize,
    /// Requests a spawned worker serves before it is replaced (default
    /// 500, php-cgi's own; 0: no limit).
    pub max_requests: u64,
    /// How long a spawned worker may wait for a request (default 300 s).
    pub idle_timeout: Duration,
    /// Variables of the server's environment passed to spawned workers
    /// (default `PATH`, `LANG`, `LC_ALL`, `TZ`).
    pub env: Vec<String>,
}

impl BackendConfig {
    /// Spawned workers of `argv`, with the defaults.
    pub fn spawn(argv: Vec<String>) -> BackendConfig {
        BackendConfig {
            spawn: Some(argv),
            address: None,
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            // A leak guard, not a habit: a one-shot php-cgi run costs ~12 ms of CPU,
            // and at 500 (PHP's own PHP_FCGI_MAX_REQUESTS) restarts were
            // ~33 us of every request's CPU at 5,000 req/s. mod_fcgid and
            // php-fpm default to no limit at all.
            max_requests: 10_000,
            idle_timeout: Duration::from_secs(300),
            env: ["PATH", "LANG", "LC_ALL", "TZ"].map(String::from).to_vec(),
        }
    }

    /// An existing server at `address`.
    pub fn remote(address: Address) -> BackendConfig {
        BackendConfig {
            address: Some(address),
            spawn: None,
            ..BackendConfig::spawn(Vec::new())
        }
    }

    /// `php-cgi` or `127.0.0.1:9000`: what the application is, for
    /// messages (a spawned program by its `argv[0]` only).
    pub fn name(&self) -> String {
        match (&self.spawn, &self.address) {
            (Some(argv), _) => argv.first().cloned().unwrap_or_default(),
            (None, Some(a)) => a.to_string(),
            (None, None) => String::new(),
        }
    }

    /// Variables every spawned worker gets: php-cgi serves in its one
    /// process (`PHP_FCGI_CHILDREN=0`, no children of its own Axle does
    /// not count) and never exits on its own after a number of requests
    /// (`PHP_FCGI_MAX_REQUESTS=0`: Axle recycles by `max-requests`).
    pub const WORKER_ENV: [(&'static str, &'static str); 2] =
        [("PHP_FCGI_CHILDREN", "0"), ("PHP_FCGI_MAX_REQUESTS", "0")];

    /// The backend: the program found and a pool made (no worker started
    /// yet), or the address. An error names what is missing.
    pub fn start(&self, root: &std::path::Path) -> Result<Backend, String> {
        if let Some(argv) = &self.spawn {
            let program = crate::exec::Program::new(argv.clone(), root)
                .map_err(|e| format!("{}: {e}", argv.join(" ")))?
                .with_env(crate::exec::Program::allowed_env(&self.env, &[]));
            let env = BackendConfig::WORKER_ENV
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let pool = Pool::new(super::workers::PoolConfig {
                program,
                env,
                workers: self.workers.max(1),
                max_requests: self.max_requests,
                idle_timeout: self.idle_timeout,
            });
            return Ok(Backend::Spawned(pool));
        }
        match &self.address {
            Some(a) => Ok(Backend::Remote(a.clone())),
            None => Err("neither spawn nor address is set".into()),
        }
    }
}
