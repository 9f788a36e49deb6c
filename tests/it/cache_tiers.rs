//! The cache tiers end to end, against the `axle` binary (and, for a
//! custom tier, servers built in-process): a warm restart from the disk
//! tier; damaged disk entries never served; read-only and full cache
//! directories; `--freshness trust` with purge and SIGHUP; purge by
//! prefix; the admin listener (and its absence from the public one); a
//! tier registered through `Server::builder(..).cache_tier(..)`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axle::cache::{BoxFuture, Cache, Entry, Key, TierStats};

use crate::support::Resp;
use crate::tiers_support::{
    Axle, Mount, TiersSite, cache_file_of, cache_files, is_root, num, request, skip, tier,
    wait_stats,
};

const PAGES: [&str; 4] = ["/big.xml", "/docs/a.xml", "/docs/b.xml", "/other/c.xml"];

/// Every page of `PAGES` (and the small one) from a server that caches
/// nothing: what every other response must equal.
async fn reference(root: &Path) -> HashMap<&'static str, Vec<u8>> {
    let off = Axle::start(root, false, &["--cache", "off"]);
    let mut want = HashMap::new();
    for page in PAGES.into_iter().chain(["/small.xml"]) {
        let r = off.get(page, &[]).await;
        assert_eq!(r.status, 200, "{page}: {}", r.text());
        assert_eq!(r.cache(), "miss");
        want.insert(page, r.body);
    }
    want
}

fn dir_arg(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

async fn disk_entries_at_least(server: &Axle, n: u64) -> serde_json::Value {
    wait_stats(server.admin(), "disk writes", |s| {
        num(&tier(s, "disk")["entries"]) >= n
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_on_the_same_directory_starts_warm() {
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let dir = site.beside("cache");
    let args = ["--cache-dir", dir_arg(&dir)];

    let mut first = Axle::start(&site.root, true, &args);
    let r = first.get("/big.xml", &[]).await;
    assert_eq!((r.status, r.cache().as_str()), (200, "miss"));
    assert_eq!(r.body, want["/big.xml"]);
    let etag = r.header("etag");
    disk_entries_at_least(&first, 1).await;
    assert_eq!(cache_files(&dir).len(), 1);
    first.kill();

    let second = Axle::start(&site.root, true, &args);
    let r = second.get("/big.xml", &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.cache(), "hit; tier=disk");
    assert_eq!(r.body, want["/big.xml"], "byte-identical after a restart");
    assert_eq!(r.header("etag"), etag, "the same ETag after a restart");
    let r = second.get("/big.xml", &[]).await;
    assert_eq!(r.cache(), "hit", "promoted into memory");
    assert_eq!(r.body, want["/big.xml"]);
    let s = second.stats().await;
    let disk = tier(&s, "disk");
    assert_eq!(num(&disk["hits"]), 1, "{s}");
    assert_eq!(num(&disk["rejected"]), 0, "{s}");
    assert_eq!(disk["writable"], true, "{s}");
    assert_eq!(num(&s["misses"]), 0, "{s}");
}

/// How a disk entry is damaged between two runs.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// One byte of the body flipped.
    Corrupt,
    /// Cut to half its length.
    Truncated,
    /// Another page's (valid) file copied onto its name.
    Foreign,
    /// The format version changed.
    OldFormat,
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_room_in_memory_every_hit_is_a_memo_hit_read_from_disk() {
    // A memory tier that holds no output: the memo keeps the response's
    // head and store key, and each hit reads the body from the disk tier
    // (never the full path), until the entry or a file changes.
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let dir = site.beside("cache");
    let args = ["--cache-size", "64KiB", "--cache-dir", dir_arg(&dir)];
    let server = Axle::start(&site.root, true, &args);
    let r = server.get("/docs/a.xml", &[]).await;
    assert_eq!((r.status, r.cache().as_str()), (200, "miss"));
    let etag = r.header("etag");
    disk_entries_at_least(&server, 1).await;
    for _ in 0..3 {
        let r = server.get("/docs/a.xml", &[]).await;
        assert_eq!(r.cache(), "hit; tier=disk");
        assert_eq!(r.body, want["/docs/a.xml"], "byte-identical from disk");
        assert_eq!(r.header("etag"), etag);
    }
    let r = server
        .get("/docs/a.xml", &[("if-none-match", etag.as_str())])
        .await;
    assert_eq!(r.status, 304, "a conditional request still matches");
    let s = server.stats().await;
    assert_eq!(num(&s["misses"]), 1, "{s}");
    assert_eq!(num(&tier(&s, "disk")["hits"]), 4, "{s}");
    assert_eq!(num(&s["hot_hits"]), 0, "no body was in memory: {s}");

    // A damaged file: refused on the read, the page rendered again.
    let victim = cache_file_of(&dir, "/docs/a.xml");
    let mut bytes = std::fs::read(&victim).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x20;
    std::fs::write(&victim, &bytes).unwrap();
    let r = server.get("/docs/a.xml", &[]).await;
    assert_eq!(r.cache(), "miss", "recomputed");
    assert_eq!(r.body, want["/docs/a.xml"], "the correct bytes");
    let s = server.stats().await;
    assert_eq!(num(&tier(&s, "disk")["rejected"]), 1, "{s}");

    // An edited source: the memo's stat check sends it down the full path.
    disk_entries_at_least(&server, 1).await;
    let edited = site
        .read("docs/a.xml")
        .replace("Docs A 0", "Docs A, edited");
    site.write("docs/a.xml", &edited);
    let r = server.get("/docs/a.xml", &[]).await;
    assert_eq!(r.cache(), "miss");
    assert!(r.text().contains("Docs A, edited"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_disk_entry_is_never_served() {
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    for damage in [
        Damage::Corrupt,
        Damage::Truncated,
        Damage::Foreign,
        Damage::OldFormat,
    ] {
        let dir = site.beside(&format!("cache-{damage:?}"));
        let args = ["--cache-dir", dir_arg(&dir)];
        let mut first = Axle::start(&site.root, true, &args);
        for page in ["/big.xml", "/docs/a.xml"] {
            assert_eq!(first.get(page, &[]).await.body, want[page]);
        }
        disk_entries_at_least(&first, 2).await;
        first.kill();

        let victim = cache_file_of(&dir, "/big.xml");
        let mut bytes = std::fs::read(&victim).unwrap();
        match damage {
            Damage::Corrupt => {
                // The body is the end of the file.
                let at = bytes.len() - 100;
                bytes[at] ^= 0x20;
            }
            Damage::Truncated => bytes.truncate(bytes.len() / 2),
            Damage::Foreign => bytes = std::fs::read(cache_file_of(&dir, "/docs/a.xml")).unwrap(),
            Damage::OldFormat => bytes[10..14].copy_from_slice(&7u32.to_le_bytes()),
        }
        std::fs::write(&victim, &bytes).unwrap();

        let second = Axle::start(&site.root, true, &args);
        let r = second.get("/big.xml", &[]).await;
        assert_eq!(r.status, 200, "{damage:?}");
        assert_eq!(r.cache(), "miss", "{damage:?}: recomputed");
        assert_eq!(r.body, want["/big.xml"], "{damage:?}: the correct bytes");
        let r = second.get("/big.xml", &[]).await;
        assert_eq!((r.cache().as_str(), &r.body), ("hit", &want["/big.xml"]));
        // The undamaged neighbour still comes from the disk.
        let r = second.get("/docs/a.xml", &[]).await;
        assert_eq!(r.cache(), "hit; tier=disk", "{damage:?}");
        assert_eq!(r.body, want["/docs/a.xml"], "{damage:?}");
        let s = second.stats().await;
        assert!(
            num(&tier(&s, "disk")["rejected"]) >= 1,
            "{damage:?}: rejected counted: {s}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_cache_directory_serves_and_says_so() {
    if !is_root() {
        return skip("a read-only cache directory needs a tmpfs mount, which needs root");
    }
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let dir = site.beside("cache");
    let Some(mount) = Mount::new(&dir, "size=1m") else {
        return skip("cannot mount a tmpfs for a read-only cache directory");
    };
    let args = ["--cache-dir", dir_arg(&dir)];
    {
        let mut first = Axle::start(&site.root, true, &args);
        assert_eq!(first.get("/big.xml", &[]).await.body, want["/big.xml"]);
        disk_entries_at_least(&first, 1).await;
        first.kill();
    }
    assert!(mount.remount("ro"), "remount read-only");

    let server = Axle::start(&site.root, true, &args);
    // What is on the disk is still served from it.
    let r = server.get("/big.xml", &[]).await;
    assert_eq!((r.status, r.cache().as_str()), (200, "hit; tier=disk"));
    assert_eq!(r.body, want["/big.xml"]);
    for page in ["/docs/a.xml", "/docs/b.xml", "/other/c.xml", "/small.xml"] {
        for round in 0..2 {
            let r = server.get(page, &[]).await;
            assert_eq!(r.status, 200, "{page} round {round}: {}", r.text());
            assert_eq!(r.body, want[page], "{page} round {round}");
        }
    }
    let s = wait_stats(server.admin(), "the disk tier degraded", |s| {
        tier(s, "disk")["writable"] == false
    })
    .await;
    assert_eq!(num(&tier(&s, "disk")["entries"]), 1, "{s}");
    drop(server);
    drop(mount);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_cache_directory_serves_and_says_so() {
    if !is_root() {
        return skip("a full cache directory needs a small tmpfs mount, which needs root");
    }
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let dir = site.beside("cache");
    let Some(mount) = Mount::new(&dir, "size=64k") else {
        return skip("cannot mount a tmpfs for a full cache directory");
    };
    // Fill it to the last block.
    {
        use std::io::Write;
        let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
        let block = [b'f'; 4096];
        while filler.write_all(&block).is_ok() {}
    }
    let server = Axle::start(&site.root, true, &["--cache-dir", dir_arg(&dir)]);
    for round in 0..2 {
        for page in PAGES.into_iter().chain(["/small.xml"]) {
            let r = server.get(page, &[]).await;
            assert_eq!(r.status, 200, "{page} round {round}: {}", r.text());
            assert_eq!(r.body, want[page], "{page} round {round}");
            if round == 1 {
                assert_eq!(r.cache(), "hit", "{page}: memory still caches");
            }
        }
    }
    let s = wait_stats(server.admin(), "the disk tier degraded", |s| {
        tier(s, "disk")["writable"] == false
    })
    .await;
    assert_eq!(num(&tier(&s, "disk")["entries"]), 0, "{s}");
    drop(server);
    drop(mount);
}

/// `axle cache ARGS…`, which must succeed; its stdout.
fn cache_cli(args: &[&str]) -> String {
    let out = crate::support::axle()
        .arg("cache")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "axle cache {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Polls `page` until its body contains `text` (5 s at most).
async fn wait_for_text(server: &Axle, page: &str, text: &str) -> Resp {
    let start = Instant::now();
    loop {
        let r = server.get(page, &[]).await;
        if r.text().contains(text) {
            return r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{page} never showed {text:?}: {}",
            r.text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn trust_serves_what_it_has_until_purge_or_sighup() {
    let site = TiersSite::new();
    let server = Axle::start(&site.root, true, &["--freshness", "trust"]);
    let first = server.get("/big.xml", &[]).await;
    assert_eq!(first.cache(), "miss");
    assert!(
        first.text().contains("<h1>Big page</h1>"),
        "{}",
        first.text()
    );
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "hit");

    tokio::time::sleep(Duration::from_millis(50)).await;
    site.write(
        "big.xml",
        &site
            .read("big.xml")
            .replace("Big page<", "Big page, edited<"),
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    for _ in 0..3 {
        let r = server.get("/big.xml", &[]).await;
        assert_eq!(r.cache(), "hit", "trust checks nothing on a hit");
        assert_eq!(r.body, first.body);
    }

    let purged = cache_cli(&["purge", "--admin", server.admin()]);
    serde_json::from_str::<serde_json::Value>(&purged).expect("purge prints JSON");
    let r = server.get("/big.xml", &[]).await;
    assert_eq!(r.cache(), "miss", "purged");
    assert!(
        r.text().contains("<h1>Big page, edited</h1>"),
        "{}",
        r.text()
    );
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "hit");

    // SIGHUP says files changed too.
    site.write(
        "big.xml",
        &site
            .read("big.xml")
            .replace("Big page, edited<", "Big page, twice<"),
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    let r = server.get("/big.xml", &[]).await;
    assert_eq!(r.cache(), "hit");
    assert!(r.text().contains("<h1>Big page, edited</h1>"));
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let r = wait_for_text(&server, "/big.xml", "<h1>Big page, twice</h1>").await;
    assert_eq!(r.status, 200);
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "hit");
}

#[tokio::test(flavor = "multi_thread")]
async fn purge_with_a_prefix_drops_only_pages_under_it_in_every_tier() {
    let site = TiersSite::new();
    let dir = site.beside("cache");
    let server = Axle::start(&site.root, true, &["--cache-dir", dir_arg(&dir)]);
    let pages = ["/docs/a.xml", "/docs/b.xml", "/other/c.xml"];
    for page in pages {
        assert_eq!(server.get(page, &[]).await.cache(), "miss", "{page}");
        assert_eq!(server.get(page, &[]).await.cache(), "hit", "{page}");
    }
    disk_entries_at_least(&server, 3).await;

    let out = cache_cli(&["purge", "--admin", server.admin(), "/docs/"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["prefix"], "/docs/", "{doc}");

    assert_eq!(server.get("/other/c.xml", &[]).await.cache(), "hit");
    for page in ["/docs/a.xml", "/docs/b.xml"] {
        // Not from the disk either: purged there too.
        assert_eq!(server.get(page, &[]).await.cache(), "miss", "{page}");
        assert_eq!(server.get(page, &[]).await.cache(), "hit", "{page}");
    }
    assert_eq!(server.get("/other/c.xml", &[]).await.cache(), "hit");
}

/// The TCP ports process `pid` listens on (its sockets in LISTEN state).
fn listening_ports(pid: u32) -> Vec<u16> {
    let mut inodes = std::collections::HashSet::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        if let Ok(link) = std::fs::read_link(fd.path()) {
            let link = link.to_string_lossy().into_owned();
            if let Some(n) = link
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
            {
                inodes.insert(n.to_string());
            }
        }
    }
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address, st (0A: LISTEN), inode.
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                let port = f[1].rsplit(':').next().unwrap();
                ports.push(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports.sort();
    ports.dedup();
    ports
}

fn port_of(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_admin_listener_counts_and_the_public_one_exposes_nothing() {
    let site = TiersSite::new();
    let server = Axle::start(&site.root, true, &["--io-threads", "1"]);
    let before = server.stats().await;
    assert_eq!((num(&before["hits"]), num(&before["misses"])), (0, 0));
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "miss");
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "hit");
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "hit");
    assert_eq!(server.get("/docs/a.xml", &[]).await.cache(), "miss");
    let s = server.stats().await;
    assert_eq!(num(&s["misses"]), 2, "{s}");
    assert_eq!(num(&s["hits"]), 2, "{s}");
    let memory = tier(&s, "memory");
    assert!(num(&memory["entries"]) >= 2, "{s}");
    assert!(s["compressed"].is_object(), "{s}");
    assert!(s["stages"].is_object(), "{s}");

    // `axle cache stats` prints the same JSON.
    let printed: serde_json::Value =
        serde_json::from_str(&cache_cli(&["stats", "--admin", server.admin()])).unwrap();
    assert_eq!(num(&printed["misses"]), 2, "{printed}");
    assert_eq!(num(&printed["hits"]), 2, "{printed}");
    assert!(printed["tiers"].is_array());

    // The public listener knows nothing of them.
    for method in [reqwest::Method::GET, reqwest::Method::POST] {
        for path in ["/stats", "/purge", "/purge?prefix=/"] {
            let r = request(method.clone(), &format!("{}{path}", server.url), &[]).await;
            assert_eq!(r.status, 404, "{method} {path}: {}", r.text());
            assert!(!r.text().contains("\"hits\""), "{method} {path}");
        }
    }
    assert_eq!(
        server.get("/big.xml", &[]).await.cache(),
        "hit",
        "a POST /purge on the public listener purged nothing"
    );

    // Two listening sockets: the public one and the admin one.
    let mut want = vec![port_of(&server.url), port_of(server.admin())];
    want.sort();
    assert_eq!(listening_ports(server.pid()), want);

    // Without --admin: only the public one.
    let plain = Axle::start(&site.root, false, &["--io-threads", "1"]);
    assert!(plain.admin.is_none());
    assert_eq!(listening_ports(plain.pid()), vec![port_of(&plain.url)]);
    assert_eq!(
        request(reqwest::Method::GET, &format!("{}/stats", plain.url), &[])
            .await
            .status,
        404
    );
}

/// A tier in a map shared by every server it is registered with (a
/// stand-in for a shared store), as in the `Cache` trait's example.
#[derive(Clone, Default)]
struct SharedTier(Arc<Mutex<HashMap<Key, Arc<Entry>>>>);

impl Cache for SharedTier {
    fn name(&self) -> &'static str {
        "shared"
    }
    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Option<Arc<Entry>>> {
        Box::pin(async move { self.0.lock().ok()?.get(key).cloned() })
    }
    fn put(&self, key: Key, entry: Arc<Entry>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.0.lock().unwrap().insert(key, entry);
        })
    }
    fn remove<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.0.lock().unwrap().remove(key);
        })
    }
    fn purge<'a>(&'a self, prefix: Option<&'a str>) -> BoxFuture<'a, u64> {
        Box::pin(async move {
            let mut map = self.0.lock().unwrap();
            let before = map.len();
            map.retain(|_, e| match (prefix, &e.url) {
                (Some(p), Some(url)) => !url.starts_with(p),
                _ => false,
            });
            (before - map.len()) as u64
        })
    }
    fn stats(&self) -> TierStats {
        TierStats {
            entries: self.0.lock().unwrap().len() as u64,
            writable: true,
            ..TierStats::default()
        }
    }
}

/// A server built in-process with `tier` below its own memory, on an
/// ephemeral loopback port; its base URL.
async fn with_tier(root: &Path, tier: SharedTier) -> (String, tokio::task::JoinHandle<()>) {
    let server = axle::Server::builder(root)
        .cache_tier(tier)
        .configure(|c| c.workers = 2)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        server
            .serve_on(listener, std::future::pending())
            .await
            .unwrap();
    });
    (url, task)
}

async fn get(base: &str, path: &str) -> Resp {
    request(reqwest::Method::GET, &format!("{base}{path}"), &[]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_custom_tier_is_shared_by_servers_and_checked_before_use() {
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let shared = SharedTier::default();
    let (a, task_a) = with_tier(&site.root, shared.clone()).await;
    let (b, task_b) = with_tier(&site.root, shared.clone()).await;

    let r = get(&a, "/big.xml").await;
    assert_eq!((r.cache().as_str(), &r.body), ("miss", &want["/big.xml"]));
    // The write-down runs after the response has gone.
    let start = Instant::now();
    while shared.0.lock().unwrap().is_empty() {
        assert!(start.elapsed() < Duration::from_secs(10), "never stored");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = get(&b, "/big.xml").await;
    assert_eq!(r.cache(), "hit; tier=shared", "server B: A's page");
    assert_eq!(r.body, want["/big.xml"]);
    let r = get(&b, "/big.xml").await;
    assert_eq!((r.cache().as_str(), &r.body), ("hit", &want["/big.xml"]));

    // One body byte changed inside the tier: a third server (its memory
    // empty) must recompute, never serve it.
    {
        let mut map = shared.0.lock().unwrap();
        for entry in map.values_mut() {
            let mut bytes = entry.bytes.to_vec();
            let at = bytes.len() / 2;
            bytes[at] ^= 0x01;
            *entry = Arc::new(Entry {
                bytes: bytes::Bytes::from(bytes),
                ..Entry::clone(entry)
            });
        }
    }
    let (c, task_c) = with_tier(&site.root, shared.clone()).await;
    let r = get(&c, "/big.xml").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.cache(), "miss", "a corrupt tier value is recomputed");
    assert_eq!(r.body, want["/big.xml"]);
    let r = get(&c, "/big.xml").await;
    assert_eq!((r.cache().as_str(), &r.body), ("hit", &want["/big.xml"]));
    // The store replaced (or dropped) the corrupt value in the tier.
    let start = Instant::now();
    loop {
        let good = shared
            .0
            .lock()
            .unwrap()
            .values()
            .all(|e| e.bytes == want["/big.xml"]);
        if good {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the corrupt value stayed in the tier"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for t in [task_a, task_b, task_c] {
        t.abort();
    }
}

/// A cache directory inside the document root would be served (its files
/// hold rendered pages and absolute paths): refused at start, however it
/// is spelled, and nothing is created there.
#[test]
fn a_cache_directory_inside_the_root_is_refused() {
    let site = TiersSite::new();
    let root = site.root.to_str().unwrap();
    for dir in [
        format!("{root}/cache"),
        format!("{root}/missing/../cache/deeper"),
        format!("{root}/docs/./c"),
    ] {
        let out = crate::support::axle()
            .args(["serve", "--root", root, "--listen", "127.0.0.1:0"])
            .args(["--cache-dir", &dir])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{dir}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("inside the document root"), "{dir}: {said}");
    }
    for made in ["cache", "missing", "docs/c"] {
        assert!(!site.root.join(made).exists(), "{made} was created");
    }
}
