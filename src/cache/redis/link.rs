//! The shared tier's connection to Redis and whether it is up: a thread of
//! its own with a small runtime that holds the connection and reconnects
//! with a capped backoff, every operation run there under the per-operation
//! timeout, and an `available` flag that requests read first, so while
//! Redis is down a request pays nothing (no connect, no timeout) until the
//! reconnect task says it is back. One log line per change of state.
//!
//! The connection lives on this thread's runtime, not on the server's I/O
//! threads' (each of which has a single-threaded runtime of its own): an
//! operation is spawned here and its result awaited from wherever it was
//! asked, so no I/O thread drives another's connection.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use redis::aio::MultiplexedConnection;

/// The first wait after a failed connection attempt.
pub(super) const BACKOFF_START: Duration = Duration::from_millis(100);

/// The longest wait between connection attempts.
pub(super) const BACKOFF_CAP: Duration = Duration::from_secs(5);

/// The shortest a connection attempt is given (the per-operation timeout
/// is for requests; a connect in the background may take a little more).
const CONNECT_MIN: Duration = Duration::from_millis(500);

/// Why an operation did not give an answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum LinkError {
    /// Redis was known to be down: not tried.
    #[error("the shared cache is unavailable")]
    Down,
    /// The operation took longer than the timeout (Redis is now taken
    /// for down).
    #[error("the shared cache did not answer within {0:?}")]
    Timeout(Duration),
    /// The connection failed (Redis is now taken for down).
    #[error("the shared cache's connection failed: {0}")]
    Connection(redis::RedisError),
    /// Redis answered with an error (out of memory, a wrong type, a reply
    /// of the wrong shape): it is up, this operation failed.
    #[error("the shared cache refused: {0}")]
    Refused(redis::RedisError),
    /// The link's runtime is gone (the server is stopping).
    #[error("the shared cache's thread has stopped")]
    Stopped,
}

/// Exponential backoff between connection attempts, capped.
#[derive(Debug, Clone)]
pub(super) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(super) fn new() -> Self {
        Backoff {
            next: BACKOFF_START,
        }
    }

    /// The wait before the next attempt (doubling, at most the cap).
    pub(super) fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(BACKOFF_CAP);
        wait
    }
}

/// What operations and the reconnect task share.
struct State {
    client: redis::Client,
    timeout: Duration,
    conn: RwLock<Option<MultiplexedConnection>>,
    available: AtomicBool,
    /// Said once the first connection has been made (so the first "up"
    /// says "connected", later ones "available again").
    ever_up: AtomicBool,
    /// Woken when an operation finds Redis down.
    wake: tokio::sync::Notify,
    /// Operations that failed (timeouts, connection errors, refusals).
    errors: AtomicU64,
    /// Operations not tried because Redis was down.
    skipped: AtomicU64,
    /// Where the server is, for log lines (no password).
    shown: String,
}

/// The connection to Redis, shared by the tier's methods.
pub(super) struct Link {
    state: Arc<State>,
    runtime: tokio::runtime::Handle,
    /// Dropped with the link: the thread's runtime stops.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Link {
    /// Starts the link's thread and its first connection attempt in the
    /// background (nothing here waits for Redis).
    pub(super) fn start(client: redis::Client, timeout: Duration) -> std::io::Result<Link> {
        let info = client.get_connection_info();
        let shown = format!("{}/{}", info.addr(), info.redis_settings().db());
        let state = Arc::new(State {
            client,
            timeout,
            conn: RwLock::new(None),
            available: AtomicBool::new(false),
            ever_up: AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
            errors: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            shown,
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (handle_tx, handle_rx) = std::sync::mpsc::sync_channel(1);
        let task_state = Arc::clone(&state);
        std::thread::Builder::new()
            .name("axle-redis".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = handle_tx.send(Err(e));
                        return;
                    }
                };
                let _ = handle_tx.send(Ok(runtime.handle().clone()));
                runtime.block_on(async move {
                    tokio::select! {
                        _ = stopped => {}
                        () = reconnect(task_state) => {}
                    }
                });
            })?;
        let runtime = handle_rx
            .recv()
            .map_err(|_| std::io::Error::other("the shared cache's thread did not start"))??;
        Ok(Link {
            state,
            runtime,
            _stop: stop,
        })
    }

    /// Whether Redis is taken for up.
    pub(super) fn available(&self) -> bool {
        self.state.available.load(Ordering::Acquire)
    }

    /// Failed operations so far.
    pub(super) fn errors(&self) -> u64 {
        self.state.errors.load(Ordering::Relaxed)
    }

    /// Operations not tried because Redis was down.
    pub(super) fn skipped(&self) -> u64 {
        self.state.skipped.load(Ordering::Relaxed)
    }

    /// Runs `op` on a clone of the connection, on the link's runtime,
    /// under the timeout; fails at once (`Down`) while Redis is down.
    pub(super) async fn run<T, F, Fut>(&self, op: F) -> Result<T, LinkError>
    where
        T: Send + 'static,
        F: FnOnce(MultiplexedConnection) -> Fut + Send + 'static,
        Fut: Future<Output = redis::RedisResult<T>> + Send + 'static,
    {
        let conn = if self.available() {
            self.state.conn.read().ok().and_then(|c| c.clone())
        } else {
            None
        };
        let Some(conn) = conn else {
            self.state.skipped.fetch_add(1, Ordering::Relaxed);
            return Err(LinkError::Down);
        };
        let state = Arc::clone(&self.state);
        let timeout = state.timeout;
        let task = self.runtime.spawn(async move {
            let result = match tokio::time::timeout(timeout, op(conn)).await {
                Err(_) => Err(LinkError::Timeout(timeout)),
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) if e.is_io_error() || e.is_connection_dropped() => {
                    Err(LinkError::Connection(e))
                }
                // An answer, if an error (out of memory, a wrong type):
                // Redis is up.
                Ok(Err(e)) => Err(LinkError::Refused(e)),
            };
            if let Err(e) = &result {
                state.errors.fetch_add(1, Ordering::Relaxed);
                if !matches!(e, LinkError::Refused(_)) {
                    state.went_down(e);
                }
            }
            result
        });
        task.await.unwrap_or(Err(LinkError::Stopped))
    }
}

impl State {
    /// Takes Redis for down after `why`: one log line (the first operation
    /// to see it), the connection dropped, the reconnect task woken.
    fn went_down(&self, why: &LinkError) {
        if self.available.swap(false, Ordering::AcqRel) {
            tracing::warn!(
                redis = %self.shown,
                error = %why,
                "shared cache unavailable: serving from the local tiers, reconnecting in the background"
            );
            if let Ok(mut conn) = self.conn.write() {
                *conn = None;
            }
            self.wake.notify_one();
        }
    }

    /// One connection attempt: connect and PING, both bounded.
    async fn connect(&self) -> redis::RedisResult<MultiplexedConnection> {
        let budget = self.timeout.max(CONNECT_MIN);
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(budget))
            .set_response_timeout(Some(self.timeout));
        let attempt = async {
            let mut conn = self
                .client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            redis::cmd("PING").query_async::<()>(&mut conn).await?;
            Ok(conn)
        };
        match tokio::time::timeout(budget * 2, attempt).await {
            Ok(result) => result,
            Err(_) => Err(redis::RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "connecting timed out",
            ))),
        }
    }
}

/// The reconnect task: while Redis is down, tries to connect with a capped
/// backoff; once up, sleeps until an operation finds it down again.
async fn reconnect(state: Arc<State>) {
    let mut backoff = Backoff::new();
    let mut said_down_at_start = false;
    loop {
        if state.available.load(Ordering::Acquire) {
            state.wake.notified().await;
            continue;
        }
        match state.connect().await {
            Ok(conn) => {
                if let Ok(mut slot) = state.conn.write() {
                    *slot = Some(conn);
                }
                state.available.store(true, Ordering::Release);
                if state.ever_up.swap(true, Ordering::AcqRel) {
                    tracing::info!(redis = %state.shown, "shared cache available again");
                } else {
                    tracing::info!(redis = %state.shown, "shared cache connected");
                }
                backoff = Backoff::new();
            }
            Err(e) => {
                if !state.ever_up.load(Ordering::Acquire) && !said_down_at_start {
                    said_down_at_start = true;
                    tracing::warn!(
                        redis = %state.shown,
                        error = %e,
                        "shared cache unavailable at start: serving from the local tiers, connecting in the background"
                    );
                }
                tracing::debug!(redis = %state.shown, error = %e, "shared cache: connection attempt failed");
                tokio::time::sleep(backoff.next_wait()).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        let mut b = Backoff::new();
        let waits: Vec<Duration> = (0..10).map(|_| b.next_wait()).collect();
        assert_eq!(waits[0], BACKOFF_START);
        assert_eq!(waits[1], BACKOFF_START * 2);
        assert!(waits.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(*waits.last().unwrap(), BACKOFF_CAP);
    }

    /// A port nothing listens on: every operation fails at once, without
    /// waiting for a timeout, and counts as skipped.
    #[tokio::test]
    async fn while_down_nothing_waits() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
        let link = Link::start(client, Duration::from_secs(5)).unwrap();
        let started = std::time::Instant::now();
        for _ in 0..100 {
            let r = link
                .run(|mut c| async move { redis::cmd("PING").query_async::<()>(&mut c).await })
                .await;
            assert!(matches!(r, Err(LinkError::Down)), "{r:?}");
        }
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(!link.available());
        assert_eq!(link.skipped(), 100);
        assert_eq!(link.errors(), 0);
    }
}
