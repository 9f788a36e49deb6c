//! Spawned FastCGI workers, supervised the way mod_fcgid does: each
//! worker is a process of the configured program whose fd 0 is a Unix
//! socket listening in a private directory of the server (mode 0700), on
//! which it accepts Axle's one connection (kept open between requests).
//! Workers start on demand up to `workers`; a request leases one idle
//! worker, and gives it back healthy, or has it stopped (a crash, a
//! broken answer, a timeout: the worker and every process it started are
//! killed, [`crate::exec::Daemon`]) and replaced by the next lease. A worker
//! is recycled after `max-requests` requests and stopped after
//! `idle-timeout` without one. Starts after a crash are spaced by a
//! back-off (100 ms doubling to 5 s, reset by a served request), so a
//! program that dies at once does not spin. Dropping the [`Pool`] stops
//! every worker and removes the directory.

use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::client::{Address, Connection, FcgiError};
use crate::exec::{Daemon, Program};

/// The first pause after a crash, doubled for each crash in a row.
const BACKOFF_START: Duration = Duration::from_millis(100);
/// The longest pause between starts.
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// How spawned workers are run.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// The program (its environment already the allow-list).
    pub program: Program,
    /// Extra variables for every worker (`PHP_FCGI_CHILDREN=0`, …).
    pub env: Vec<(String, String)>,
    /// Most workers at once.
    pub workers: usize,
    /// Requests a worker serves before it is replaced (0: no limit).
    pub max_requests: u64,
    /// How long a worker may wait for a request before it is stopped.
    pub idle_timeout: Duration,
}

/// A set of spawned workers.
#[derive(Debug)]
pub struct Pool {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: PoolConfig,
    dir: PathBuf,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug)]
struct State {
    idle: Vec<Worker>,
    /// Workers alive or being started (idle + leased + starting).
    live: usize,
    next_id: u64,
    backoff: Duration,
    not_before: Option<Instant>,
    /// Workers started since the pool was made (for tests and status).
    started: u64,
    /// The pids of the workers lent out now.
    leased: Vec<u32>,
    /// Set by [`stop_all`]: workers given back are stopped.
    stopped: bool,
    /// Whether the socket directory has been made.
    dir_made: bool,
}

/// One spawned worker and Axle's connection to it.
#[derive(Debug)]
pub struct Worker {
    daemon: Daemon,
    socket: PathBuf,
    conn: Option<Connection>,
    served: u64,
    idle_since: Instant,
}

impl Worker {
    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        self.daemon.id()
    }

    /// Its connection (made now when there is none) before `deadline`.
    pub fn connection(
        &mut self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<&mut Connection, FcgiError> {
        if self.conn.is_none() {
            let address = Address::Unix(self.socket.clone());
            self.conn = Some(Connection::connect(&address, deadline, timeout)?);
        }
        self.conn
            .as_mut()
            .ok_or_else(|| FcgiError::Io("no connection".into()))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.conn = None;
        let killed = self.daemon.stop();
        if killed > 0 {
            tracing::debug!(
                pid = self.daemon.id(),
                killed,
                "killed the processes a FastCGI worker left running"
            );
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A worker lent to one request: given back with [`Lease::finish`];
/// dropped without it, the worker is stopped.
#[derive(Debug)]
pub struct Lease {
    pool: Arc<Inner>,
    worker: Option<Worker>,
}

impl Lease {
    /// The worker.
    pub fn worker(&mut self) -> Result<&mut Worker, FcgiError> {
        self.worker
            .as_mut()
            .ok_or_else(|| FcgiError::Io("the worker was given back".into()))
    }

    /// Gives the worker back: to the idle set when `healthy` and under
    /// its request limit, else it is stopped (and replaced by a later
    /// lease).
    pub fn finish(mut self, healthy: bool) {
        let Some(mut worker) = self.worker.take() else {
            return;
        };
        worker.served += 1;
        let limit = self.pool.config.max_requests;
        let recycle = limit > 0 && worker.served >= limit;
        let mut state = self.pool.lock();
        state.leased.retain(|&p| p != worker.pid());
        if healthy && !recycle && !state.stopped && !worker.daemon.has_exited() {
            worker.idle_since = Instant::now();
            state.backoff = BACKOFF_START;
            state.idle.push(worker);
            drop(state);
        } else {
            if healthy {
                state.backoff = BACKOFF_START;
            } else {
                note_crash(&mut state);
            }
            state.live -= 1;
            drop(state);
            if recycle {
                tracing::debug!(
                    pid = worker.pid(),
                    served = worker.served,
                    "FastCGI worker recycled (max-requests)"
                );
            }
            drop(worker);
        }
        self.pool.freed.notify_one();
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            {
                let mut state = self.pool.lock();
                state.leased.retain(|&p| p != worker.pid());
                note_crash(&mut state);
                state.live -= 1;
            }
            drop(worker);
            self.pool.freed.notify_one();
        }
    }
}

/// A worker failed: the next start waits the back-off, which doubles.
fn note_crash(state: &mut State) {
    state.not_before = Some(Instant::now() + state.backoff);
    state.backoff = (state.backoff * 2).min(BACKOFF_MAX);
}

/// The name of a private directory for a pool's sockets (made when its
/// first worker starts, so a configuration only read, as `axle check`
/// reads it, leaves nothing behind).
fn private_dir() -> PathBuf {
    static POOLS: AtomicU64 = AtomicU64::new(0);
    let n = POOLS.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("axle-fcgi-{}-{n}", std::process::id()))
}

/// Makes `dir` afresh, readable by this user only (whatever was there
/// under that name is removed first).
fn make_private(dir: &std::path::Path) -> std::io::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::DirBuilder::new().mode(0o700).create(dir)
}

impl Pool {
    /// A pool of at most `config.workers` workers (none started yet).
    pub fn new(config: PoolConfig) -> Pool {
        let dir = private_dir();
        let idle_timeout = config.idle_timeout;
        let inner = Arc::new(Inner {
            config,
            dir,
            state: Mutex::new(State {
                idle: Vec::new(),
                live: 0,
                next_id: 0,
                backoff: BACKOFF_START,
                not_before: None,
                started: 0,
                leased: Vec::new(),
                stopped: false,
                dir_made: false,
            }),
            freed: Condvar::new(),
        });
        let weak = Arc::downgrade(&inner);
        {
            let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
            pools.retain(|w| w.strong_count() > 0);
            pools.push(weak.clone());
        }
        let tick = (idle_timeout / 2).clamp(Duration::from_millis(50), Duration::from_secs(5));
        let spawned = std::thread::Builder::new()
            .name("axle-fcgi-idle".into())
            .spawn(move || stop_idle(weak, tick));
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no thread to stop idle FastCGI workers: they stay until used");
        }
        Pool { inner }
    }

    /// The program the workers run.
    pub fn program(&self) -> &Program {
        &self.inner.config.program
    }

    /// Workers started since the pool was made.
    pub fn started(&self) -> u64 {
        self.inner.lock().started
    }

    /// Workers alive now.
    pub fn live(&self) -> usize {
        self.inner.lock().live
    }

    /// An idle worker (a dead one found idle is stopped and skipped), or
    /// a new one when fewer than `workers` are alive, or the first given
    /// back before `deadline`.
    pub fn lease(&self, deadline: Instant, timeout: Duration) -> Result<Lease, FcgiError> {
        let inner = &self.inner;
        let mut state = inner.lock();
        loop {
            while let Some(worker) = state.idle.pop() {
                if worker.daemon.has_exited() {
                    tracing::warn!(
                        pid = worker.pid(),
                        "a FastCGI worker had exited; it is replaced"
                    );
                    state.live -= 1;
                    note_crash(&mut state);
                    drop(worker);
                    continue;
                }
                state.leased.push(worker.pid());
                return Ok(Lease {
                    pool: Arc::clone(inner),
                    worker: Some(worker),
                });
            }
            if state.live < inner.config.workers.max(1) {
                state.live += 1;
                state.next_id += 1;
                state.started += 1;
                let id = state.next_id;
                let not_before = state.not_before;
                drop(state);
                if let Some(at) = not_before {
                    let now = Instant::now();
                    if at > now {
                        if at >= deadline {
                            inner.lock().live -= 1;
                            return Err(FcgiError::Timeout(timeout));
                        }
                        std::thread::sleep(at - now);
                    }
                }
                return match self.spawn(id) {
                    Ok(worker) => {
                        inner.lock().leased.push(worker.pid());
                        Ok(Lease {
                            pool: Arc::clone(inner),
                            worker: Some(worker),
                        })
                    }
                    Err(e) => {
                        let mut state = inner.lock();
                        state.live -= 1;
                        note_crash(&mut state);
                        Err(e)
                    }
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(FcgiError::Timeout(timeout));
            }
            state = inner
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn spawn(&self, id: u64) -> Result<Worker, FcgiError> {
        {
            let mut state = self.inner.lock();
            if !state.dir_made {
                make_private(&self.inner.dir).map_err(|e| {
                    FcgiError::Connect(format!("making {}: {e}", self.inner.dir.display()))
                })?;
                state.dir_made = true;
            }
        }
        let socket = self.inner.dir.join(format!("w{id}.sock"));
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket)
            .map_err(|e| FcgiError::Connect(format!("binding {}: {e}", socket.display())))?;
        let fd = OwnedFd::from(listener);
        let config = &self.inner.config;
        let daemon = config
            .program
            .spawn_daemon(Stdio::from(fd), &config.env)
            .map_err(|e| {
                let _ = std::fs::remove_file(&socket);
                FcgiError::Connect(format!("{} {e}", config.program.argv()[0]))
            })?;
        tracing::debug!(pid = daemon.id(), socket = %socket.display(), "FastCGI worker started");
        Ok(Worker {
            daemon,
            socket,
            conn: None,
            served: 0,
            idle_since: Instant::now(),
        })
    }
}

/// Every pool alive, for [`stop_all`].
static POOLS: Mutex<Vec<Weak<Inner>>> = Mutex::new(Vec::new());

/// Stops the workers of every pool: idle ones with all they started, lent
/// ones by their process group (the server is exiting without waiting for
/// them); a worker given back afterwards is stopped. For the server's
/// exit, which does not wait for every owner of a pool to be dropped.
pub fn stop_all() {
    let pools: Vec<Arc<Inner>> = POOLS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain(..)
        .filter_map(|w| w.upgrade())
        .collect();
    for inner in pools {
        let (idle, leased) = {
            let mut state = inner.lock();
            state.stopped = true;
            state.live -= state.idle.len();
            (std::mem::take(&mut state.idle), state.leased.clone())
        };
        drop(idle);
        for pid in leased {
            crate::exec::kill_daemon_group(pid);
        }
        let _ = std::fs::remove_dir_all(&inner.dir);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let idle = {
            let mut state = self.inner.lock();
            state.stopped = true;
            state.live -= state.idle.len();
            std::mem::take(&mut state.idle)
        };
        drop(idle);
        let _ = std::fs::remove_dir_all(&self.inner.dir);
    }
}

/// Stops idle workers past the idle timeout, every `tick`, while the pool
/// lives.
fn stop_idle(pool: Weak<Inner>, tick: Duration) {
    loop {
        std::thread::sleep(tick);
        let Some(inner) = pool.upgrade() else {
            return;
        };
        let expired: Vec<Worker> = {
            let mut state = inner.lock();
            let timeout = inner.config.idle_timeout;
            let (old, kept): (Vec<Worker>, Vec<Worker>) = std::mem::take(&mut state.idle)
                .into_iter()
                .partition(|w| w.idle_since.elapsed() >= timeout || w.daemon.has_exited());
            state.idle = kept;
            state.live -= old.len();
            old
        };
        for worker in &expired {
            tracing::debug!(pid = worker.pid(), "FastCGI worker stopped (idle-timeout)");
        }
        drop(expired);
    }
}
