//! The shared tier on a real Redis Cluster (`--shared-cache
//! redis+cluster://…`): three `redis-server --cluster-enabled yes` on
//! loopback ports, joined by `redis-cli --cluster create` (no replicas),
//! and two `axle` processes given two of them as seeds. Pages one renders
//! are hits on the other whichever node holds them; a purge by URL prefix
//! and a whole purge reach every node; a damaged value is rejected and
//! recomputed; one node down takes the tier down until it is back; the
//! whole cluster killed costs no page, and the cluster started again is
//! found and shared again. Without
//! `redis-server` and `redis-cli` the test is skipped loudly, and fails
//! under `CI=true`.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::redis_support::{Conn, Reply};
use crate::tiers_support::{Axle, TiersSite, num, request, tier, wait_stats};

/// Are `redis-server` and `redis-cli` on the PATH? If not, says so (and
/// fails under CI).
fn have_cluster_tools() -> bool {
    let runs = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let found = runs("redis-server") && runs("redis-cli");
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "redis-server/redis-cli not installed, and CI=true: .ci/run installs them"
        );
        eprintln!("SKIPPED: redis-server/redis-cli not installed");
    }
    found
}

/// Three loopback ports whose cluster bus ports (port + 10000) are free
/// too: below 55536, so the bus port exists.
fn cluster_ports() -> [u16; 3] {
    let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
    let mut found = Vec::new();
    let mut p = 20_000 + u16::try_from(std::process::id() % 20_000).unwrap_or(0);
    while found.len() < 3 {
        if free(p) && free(p + 10_000) {
            found.push(p);
        }
        p = if p >= 45_000 { 20_000 } else { p + 7 };
    }
    [found[0], found[1], found[2]]
}

/// A three-primary Redis Cluster on loopback, killed when dropped.
struct Cluster {
    ports: [u16; 3],
    children: HashMap<u16, Child>,
    /// Where the nodes keep their `nodes-PORT.conf`.
    dir: tempfile::TempDir,
}

/// `CLUSTER INFO` says the cluster is whole.
fn cluster_ok(r: &Reply) -> bool {
    matches!(r, Reply::Bulk(Some(b)) if String::from_utf8_lossy(b).contains("cluster_state:ok"))
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let ports = cluster_ports();
        let mut cluster = Cluster {
            ports,
            children: HashMap::new(),
            dir,
        };
        for port in ports {
            let child = cluster.spawn(port);
            cluster.children.insert(port, child);
        }
        for port in ports {
            cluster.wait(port, "PING", |r| r == &Reply::Status("PONG".into()));
        }
        let nodes: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli runs");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for port in ports {
            cluster.wait(port, "CLUSTER INFO", cluster_ok);
        }
        cluster
    }

    fn spawn(&self, port: u16) -> Child {
        let p = port.to_string();
        Command::new("redis-server")
            .current_dir(self.dir.path())
            .args(["--port", &p, "--bind", "127.0.0.1"])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-config-file", &format!("nodes-{p}.conf")])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts")
    }

    /// Waits (10 s at most) until `command` on `port` answers as `ok` says.
    fn wait(&self, port: u16, command: &str, ok: impl Fn(&Reply) -> bool) {
        let start = Instant::now();
        loop {
            if let Ok(mut c) = Conn::open(port) {
                let args: Vec<&str> = command.split(' ').collect();
                if ok(&c.cmd(&args)) {
                    return;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{port}: {command} never answered as wanted"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `redis+cluster://` with the first two nodes as seeds.
    fn url(&self) -> String {
        format!(
            "redis+cluster://127.0.0.1:{},127.0.0.1:{}",
            self.ports[0], self.ports[1]
        )
    }

    /// The keys matching `pattern` on each node (a node holds its slots'
    /// keys only), by port.
    fn keys_by_node(&self, pattern: &str) -> HashMap<u16, BTreeSet<String>> {
        self.ports
            .iter()
            .map(|&p| {
                let keys = Conn::open(p).unwrap().cmd(&["KEYS", pattern]).strings();
                (p, keys.into_iter().collect())
            })
            .collect()
    }

    /// The value keys (not locks) under `axle:` on all nodes.
    fn values(&self) -> BTreeSet<String> {
        self.keys_by_node("axle:*")
            .into_values()
            .flatten()
            .filter(|k| !k.ends_with(":lock"))
            .collect()
    }

    /// Waits (10 s at most) until there are `n` values.
    fn wait_values(&self, n: usize) -> BTreeSet<String> {
        let start = Instant::now();
        loop {
            let v = self.values();
            if v.len() >= n {
                return v;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "waited for {n} values: {v:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The node holding `key`.
    fn node_of(&self, key: &str) -> u16 {
        let by_node = self.keys_by_node("axle:*");
        *by_node
            .iter()
            .find(|(_, keys)| keys.contains(key))
            .map(|(p, _)| p)
            .unwrap_or_else(|| panic!("{key} on no node"))
    }

    /// Starts the three nodes again on their ports, from their
    /// `nodes-PORT.conf` (the same cluster, empty), waiting until it is ok.
    fn restart(&mut self) {
        self.kill();
        for port in self.ports {
            let child = self.spawn(port);
            self.children.insert(port, child);
        }
        for port in self.ports {
            self.wait(port, "CLUSTER INFO", cluster_ok);
        }
    }

    /// SIGKILLs one node.
    fn kill_node(&mut self, port: u16) {
        if let Some(mut c) = self.children.remove(&port) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts one node again, waiting until the cluster is ok.
    fn restart_node(&mut self, port: u16) {
        let child = self.spawn(port);
        self.children.insert(port, child);
        for port in self.ports {
            self.wait(port, "CLUSTER INFO", cluster_ok);
        }
    }

    fn kill(&mut self) {
        for (_, mut c) in self.children.drain() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill();
    }
}

const PAGE_XML: &str =
    "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"/s/page.xsl\" type=\"text/xsl\"?>\n";

fn instance(root: &Path, url: &str) -> Axle {
    Axle::start(root, true, &["--shared-cache", url])
}

async fn wait_available(server: &Axle, up: bool) {
    wait_stats(server.admin(), "the redis tier's availability", |s| {
        tier(s, "redis")["available"] == up
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redis_cluster_shares_pages_purges_every_node_and_may_die() {
    if !have_cluster_tools() {
        return;
    }
    let mut cluster = Cluster::start();
    let site = TiersSite::new();
    // Enough pages that their keys land on every node: ten under /docs/
    // (the purge's prefix), ten elsewhere.
    let docs: Vec<String> = (0..10).map(|i| format!("/docs/p{i}.xml")).collect();
    let rest: Vec<String> = (0..10).map(|i| format!("/misc/q{i}.xml")).collect();
    for page in docs.iter().chain(&rest) {
        site.write(
            &page[1..],
            &format!("{PAGE_XML}<page><title>{page}</title><para>{page}</para></page>\n"),
        );
    }
    let mut want = HashMap::new();
    {
        let off = Axle::start(&site.root, false, &["--cache", "off"]);
        for page in docs.iter().chain(&rest) {
            let r = off.get(page, &[]).await;
            assert_eq!(r.status, 200, "{page}: {}", r.text());
            want.insert(page.clone(), r.body);
        }
    }

    let url = cluster.url();
    let a = instance(&site.root, &url);
    let b = instance(&site.root, &url);
    wait_available(&a, true).await;
    wait_available(&b, true).await;

    // A renders the /docs/ pages, then the rest; each page's key noted.
    for page in &docs {
        let r = a.get(page, &[]).await;
        assert_eq!((r.status, r.cache().as_str()), (200, "miss"), "{page}");
    }
    let docs_keys = cluster.wait_values(docs.len());
    for page in &rest {
        assert_eq!(a.get(page, &[]).await.cache(), "miss", "{page}");
    }
    let all_keys = cluster.wait_values(docs.len() + rest.len());
    assert_eq!(all_keys.len(), 20, "{all_keys:?}");
    let by_node = cluster.keys_by_node("axle:*");
    let holding = |keys: &BTreeSet<String>| {
        by_node
            .values()
            .filter(|on| on.iter().any(|k| keys.contains(k)))
            .count()
    };
    assert_eq!(holding(&all_keys), 3, "values on every node: {by_node:?}");
    assert!(holding(&docs_keys) >= 2, "/docs/ on several: {by_node:?}");
    assert!(
        by_node.values().flatten().all(|k| !k.ends_with(":lock")),
        "every lock released: {by_node:?}"
    );

    // B's first request for each is a hit from the cluster.
    for page in docs.iter().chain(&rest) {
        let r = b.get(page, &[]).await;
        assert_eq!(r.status, 200, "{page}");
        assert_eq!(r.cache(), "hit; tier=redis", "{page}: B's first request");
        assert_eq!(r.body, want[page], "{page}");
    }
    let s = b.stats().await;
    assert_eq!(num(&s["stage_runs"]), 0, "B transformed nothing: {s}");
    assert_eq!(num(&tier(&s, "redis")["errors"]), 0, "{s}");

    // A damaged value (written through redis-cli's cluster mode) is
    // rejected and recomputed by an instance that has not seen it; the
    // other pages are hits.
    let victim = all_keys
        .difference(&docs_keys)
        .next()
        .expect("a value outside /docs/")
        .clone();
    let out = Command::new("redis-cli")
        .args(["-c", "-p", &cluster.ports[0].to_string()])
        .args(["SET", &victim, "not an entry"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let on_node = Conn::open(cluster.node_of(&victim))
        .unwrap()
        .cmd(&["GET", &victim])
        .bytes();
    assert_eq!(on_node.as_deref(), Some(&b"not an entry"[..]));
    let c = instance(&site.root, &url);
    wait_available(&c, true).await;
    let mut misses = Vec::new();
    for page in &rest {
        let r = c.get(page, &[]).await;
        assert_eq!(r.status, 200, "{page}");
        assert_eq!(r.body, want[page], "{page}");
        if r.cache() == "miss" {
            misses.push(page.clone());
        } else {
            assert_eq!(r.cache(), "hit; tier=redis", "{page}");
        }
    }
    assert_eq!(misses.len(), 1, "the damaged one recomputed: {misses:?}");
    let t = c.stats().await;
    assert_eq!(num(&tier(&t, "redis")["rejected"]), 1, "{t}");
    assert_eq!(num(&tier(&t, "redis")["errors"]), 0, "{t}");
    drop(c);

    // Purge by URL prefix: the /docs/ values go from every node, the
    // others stay.
    let purge = |query: &str| {
        let url = format!("http://{}/purge{query}", a.admin());
        async move { request(reqwest::Method::POST, &url, &[("x-axle-admin", "1")]).await }
    };
    let r = purge("?prefix=/docs/").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let left = cluster.values();
    assert!(left.is_disjoint(&docs_keys), "{left:?}");
    assert_eq!(left.len(), rest.len(), "{left:?}");
    // Purge everything: no key under the prefix on any node.
    assert_eq!(purge("").await.status, 200);
    let by_node = cluster.keys_by_node("axle:*");
    assert!(by_node.values().all(BTreeSet::is_empty), "{by_node:?}");

    // One node down (not a seed): its slots cannot be served, so the
    // tier goes down at the first operation that meets it and stays down
    // (a reconnect needs every primary) until the node is back.
    let third = cluster.ports[2];
    cluster.kill_node(third);
    // Twenty new variants: some land on the third node's slots.
    for (i, page) in docs.iter().chain(&rest).enumerate() {
        let r = a.get(&format!("{page}?n={i}"), &[]).await;
        assert_eq!(r.status, 200, "{page}");
    }
    wait_available(&a, false).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let t = a.stats().await;
    assert_eq!(
        tier(&t, "redis")["available"],
        false,
        "down while a node is: {t}"
    );
    cluster.restart_node(third);
    wait_available(&a, true).await;

    // The whole cluster killed: both go on answering, right.
    cluster.kill();
    site.write(
        "gone.xml",
        &format!("{PAGE_XML}<page><title>Gone</title><para>z</para></page>\n"),
    );
    let started = Instant::now();
    for server in [&a, &b] {
        for page in docs.iter().chain(&rest) {
            let r = server.get(page, &[]).await;
            assert_eq!(r.status, 200, "{page}");
            assert_eq!(r.body, want[page], "{page}");
        }
        let r = server.get("/gone.xml", &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    wait_available(&a, false).await;
    wait_available(&b, false).await;

    // The cluster back (empty): the reconnect finds it, and it is shared
    // again.
    cluster.restart();
    wait_available(&a, true).await;
    wait_available(&b, true).await;
    site.write(
        "back.xml",
        &format!("{PAGE_XML}<page><title>Back</title><para>w</para></page>\n"),
    );
    assert_eq!(a.get("/back.xml", &[]).await.cache(), "miss");
    cluster.wait_values(1);
    let r = b.get("/back.xml", &[]).await;
    assert_eq!((r.status, r.cache().as_str()), (200, "hit; tier=redis"));
}
