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
//!
//! Two kinds of connection sit behind one type ([`Conn`]): one Redis
//! (`redis://`) or a Redis Cluster (`redis+cluster://`, seed nodes), whose
//! connection routes each command to the node that owns its key's slot.
//! Operations are written once against [`Conn`]; only a SCAN has to know
//! which it is (a cluster is scanned node by node: [`Conn::scan_targets`]).

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};

/// The URL scheme of a Redis Cluster's seed nodes.
pub(super) const CLUSTER_SCHEME: &str = "redis+cluster://";

/// Attempts the cluster connection makes on its own (following a MOVED
/// after a resharding, a node's reconnect) within one operation's timeout.
const CLUSTER_RETRIES: u32 = 3;

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

/// Where the shared tier's Redis is: one server or a cluster's seeds.
pub(super) enum Client {
    /// `redis://HOST:PORT[/DB]`.
    Single(redis::Client),
    /// `redis+cluster://HOST:PORT[,HOST:PORT...]`.
    Cluster(redis::cluster::ClusterClient),
}

impl Client {
    /// The client `url` names (`redis://` or `redis+cluster://`);
    /// `timeout` bounds a cluster's own per-node waits.
    pub(super) fn open(url: &str, timeout: Duration) -> redis::RedisResult<Client> {
        let Some(rest) = url.strip_prefix(CLUSTER_SCHEME) else {
            return redis::Client::open(url).map(Client::Single);
        };
        let nodes = cluster_seeds(rest)?;
        redis::cluster::ClusterClientBuilder::new(nodes)
            .connection_timeout(timeout.max(CONNECT_MIN))
            .response_timeout(timeout)
            .retries(CLUSTER_RETRIES)
            .build()
            .map(Client::Cluster)
    }

    /// Where it is, for log lines (no password).
    fn shown(&self, url: &str) -> String {
        match self {
            Client::Single(c) => {
                let info = c.get_connection_info();
                format!("{}/{}", info.addr(), info.redis_settings().db())
            }
            Client::Cluster(_) => {
                let rest = url.strip_prefix(CLUSTER_SCHEME).unwrap_or(url);
                let hosts = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
                format!("cluster {}", hosts.trim_end_matches('/'))
            }
        }
    }
}

/// `[USER:PASS@]HOST:PORT[,HOST:PORT...][/]` as one `redis://` URL per
/// seed node (the credentials, if any, on each). A cluster has database 0
/// only: a path naming another is refused.
fn cluster_seeds(rest: &str) -> redis::RedisResult<Vec<String>> {
    let bad = |why: &str| {
        redis::RedisError::from((
            redis::ErrorKind::InvalidClientConfig,
            "a redis+cluster:// URL",
            why.to_string(),
        ))
    };
    let (rest, path) = rest.split_once('/').unwrap_or((rest, ""));
    if !matches!(path, "" | "0") {
        return Err(bad("a cluster has database 0 only"));
    }
    let (auth, hosts) = match rest.rsplit_once('@') {
        Some((auth, hosts)) => (format!("{auth}@"), hosts),
        None => (String::new(), rest),
    };
    let seeds: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| format!("redis://{auth}{h}/"))
        .collect();
    if seeds.is_empty() {
        return Err(bad("no seed node (HOST:PORT[,HOST:PORT...])"));
    }
    Ok(seeds)
}

/// A connection of either kind; commands go through
/// [`ConnectionLike`] (a cluster's routed by their keys).
#[derive(Clone)]
pub(super) enum Conn {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// Where one SCAN runs: the one server, or one primary of a cluster
/// (a SCAN sees only the keys of the node it is sent to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ScanTarget {
    Only,
    Node { host: String, port: u16 },
}

/// The primaries that own slots, each once, as the cluster says
/// (`CLUSTER SLOTS`, asked of any node): a node down is still listed
/// until the cluster fails it over.
async fn primaries(c: &mut ClusterConnection) -> redis::RedisResult<Vec<ScanTarget>> {
    let bad =
        || redis::RedisError::from((redis::ErrorKind::Parse, "an unexpected CLUSTER SLOTS reply"));
    let reply = c
        .route_command(
            redis::cmd("CLUSTER").arg("SLOTS").to_owned(),
            RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
        )
        .await?;
    let redis::Value::Array(ranges) = reply else {
        return Err(bad());
    };
    let mut targets = Vec::new();
    for range in ranges {
        let redis::Value::Array(fields) = range else {
            return Err(bad());
        };
        let Some(redis::Value::Array(primary)) = fields.into_iter().nth(2) else {
            return Err(bad());
        };
        let mut primary = primary.into_iter();
        let (Some(host), Some(port)) = (primary.next(), primary.next()) else {
            return Err(bad());
        };
        let target = ScanTarget::Node {
            host: redis::from_redis_value(host)?,
            port: redis::from_redis_value(port)?,
        };
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    Ok(targets)
}

impl Conn {
    /// Where a SCAN of every key must run: the server, or each of the
    /// cluster's primaries.
    pub(super) async fn scan_targets(mut self) -> redis::RedisResult<Vec<ScanTarget>> {
        match &mut self {
            Conn::Single(_) => Ok(vec![ScanTarget::Only]),
            Conn::Cluster(c) => primaries(c).await,
        }
    }

    /// One SCAN step (`cursor`, keys matching `pattern`) on `target`.
    pub(super) async fn scan_step(
        mut self,
        target: ScanTarget,
        cursor: u64,
        pattern: String,
        count: usize,
    ) -> redis::RedisResult<(u64, Vec<String>)> {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count);
        match (&mut self, target) {
            (Conn::Cluster(c), ScanTarget::Node { host, port }) => {
                let routing =
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port });
                let reply = c.route_command(cmd, routing).await?;
                Ok(redis::from_redis_value(reply)?)
            }
            (conn, _) => cmd.query_async(conn).await,
        }
    }
}

/// What operations and the reconnect task share.
struct State {
    client: Client,
    timeout: Duration,
    conn: RwLock<Option<Conn>>,
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
    pub(super) fn start(client: Client, url: &str, timeout: Duration) -> std::io::Result<Link> {
        let shown = client.shown(url);
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
        F: FnOnce(Conn) -> Fut + Send + 'static,
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
                Ok(Err(e)) if lost(&e) => Err(LinkError::Connection(e)),
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

/// Whether `e` says the connection (or, on a cluster, a node or the
/// cluster's view of its slots) is gone, rather than an answer that
/// happens to be an error: the tier goes down and reconnects.
fn lost(e: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    e.is_io_error()
        || e.is_connection_dropped()
        || matches!(
            e.kind(),
            ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(
                    ServerErrorKind::ClusterDown
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::Moved
                        | ServerErrorKind::Ask
                )
        )
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

    /// One connection attempt: connect and PING, both bounded. A cluster
    /// is up when every primary `CLUSTER SLOTS` lists answers a PING (a
    /// slot whose node is down would fail its operations: the tier stays
    /// down until it is back or failed over).
    async fn connect(&self) -> redis::RedisResult<Conn> {
        let budget = self.timeout.max(CONNECT_MIN);
        let attempt = async {
            match &self.client {
                Client::Single(client) => {
                    let config = redis::AsyncConnectionConfig::new()
                        .set_connection_timeout(Some(budget))
                        .set_response_timeout(Some(self.timeout));
                    let mut conn = client
                        .get_multiplexed_async_connection_with_config(&config)
                        .await?;
                    redis::cmd("PING").query_async::<()>(&mut conn).await?;
                    Ok(Conn::Single(conn))
                }
                Client::Cluster(client) => {
                    let mut conn = client.get_async_connection().await?;
                    for node in primaries(&mut conn).await? {
                        if let ScanTarget::Node { host, port } = node {
                            let at = SingleNodeRoutingInfo::ByAddress { host, port };
                            conn.route_command(redis::cmd("PING"), RoutingInfo::SingleNode(at))
                                .await?;
                        }
                    }
                    Ok(Conn::Cluster(conn))
                }
            }
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
        let url = format!("redis://127.0.0.1:{port}/");
        let client = Client::open(&url, Duration::from_secs(5)).unwrap();
        let link = Link::start(client, &url, Duration::from_secs(5)).unwrap();
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

    #[test]
    fn cluster_urls_give_one_seed_url_per_node() {
        assert_eq!(
            cluster_seeds("10.0.0.1:7000,10.0.0.2:7001").unwrap(),
            ["redis://10.0.0.1:7000/", "redis://10.0.0.2:7001/"]
        );
        assert_eq!(
            cluster_seeds(":pw@a:1,b:2/").unwrap(),
            ["redis://:pw@a:1/", "redis://:pw@b:2/"]
        );
        assert!(cluster_seeds("a:1/3").is_err(), "a cluster has db 0 only");
        assert!(cluster_seeds("").is_err());
        let client = Client::open(
            "redis+cluster://:secret@127.0.0.1:7000,127.0.0.1:7001",
            Duration::from_millis(100),
        )
        .unwrap();
        assert!(matches!(client, Client::Cluster(_)));
        let shown = client.shown("redis+cluster://:secret@127.0.0.1:7000,127.0.0.1:7001");
        assert_eq!(shown, "cluster 127.0.0.1:7000,127.0.0.1:7001");
    }
}
