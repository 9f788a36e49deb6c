//! Crash safety of the disk tier: the server is SIGKILLed at a random
//! moment while several clients keep it writing to the disk tier (a small
//! memory budget and hundreds of distinct pages), then restarted on the
//! same directory, over and over. Every complete response, during the
//! load and after each restart, must be byte-identical to an uncached
//! render: a torn or half-written cache file is never served.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::tiers_support::{Axle, TiersSite, cache_files};

const ITERATIONS: usize = 50;
const PAGES: usize = 300;
const CLIENTS: usize = 4;

/// The URLs under test: distinct `p` parameters on two pages (each a
/// distinct cache entry, each body printing its parameter).
fn urls() -> Vec<String> {
    (0..PAGES)
        .map(|n| {
            if n % 3 == 0 {
                format!("/docs/a.xml?p={n}")
            } else {
                format!("/big.xml?p={n}")
            }
        })
        .collect()
}

/// A small xorshift generator (no dependency needed for "random enough").
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What the clients saw.
#[derive(Default)]
struct Seen {
    /// Complete responses checked.
    checked: AtomicU64,
    /// Of those, answered by the disk tier.
    disk_hits: AtomicU64,
    /// Complete responses that were not the expected page.
    wrong: AtomicU64,
}

/// One request; None when the connection failed or the body was cut (the
/// server died under it: nothing was served).
async fn fetch(client: &reqwest::Client, url: &str) -> Option<(u16, String, Vec<u8>)> {
    let r = client.get(url).send().await.ok()?;
    let status = r.status().as_u16();
    let cache = r
        .headers()
        .get("x-axle-cache")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = r.bytes().await.ok()?.to_vec();
    Some((status, cache, body))
}

/// Requests random URLs of `urls` from `base` until the server goes away
/// (or `until`), checking every complete response against `want`.
async fn hammer(
    base: String,
    urls: Arc<Vec<String>>,
    want: Arc<HashMap<String, Vec<u8>>>,
    seen: Arc<Seen>,
    seed: u64,
    until: Instant,
) {
    let client = reqwest::Client::new();
    let mut rng = Rng(seed | 1);
    while Instant::now() < until {
        let url = &urls[rng.below(urls.len() as u64) as usize];
        let Some((status, cache, body)) = fetch(&client, &format!("{base}{url}")).await else {
            return;
        };
        seen.checked.fetch_add(1, Ordering::Relaxed);
        if cache == "hit; tier=disk" {
            seen.disk_hits.fetch_add(1, Ordering::Relaxed);
        }
        if status != 200 || body != want[url] {
            seen.wrong.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "WRONG: {url}: status {status}, cache {cache:?}, {} bytes (want {})",
                body.len(),
                want[url].len()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_during_disk_writes_never_leads_to_a_wrong_body() {
    let started = Instant::now();
    let site = TiersSite::new();
    let urls = Arc::new(urls());

    // The expected bytes, once, from a server that caches nothing.
    let want: Arc<HashMap<String, Vec<u8>>> = {
        let off = Axle::start(&site.root, false, &["--cache", "off"]);
        let client = reqwest::Client::new();
        let mut want = HashMap::new();
        for url in urls.iter() {
            let (status, _, body) = fetch(&client, &format!("{}{url}", off.url)).await.unwrap();
            assert_eq!(status, 200, "{url}");
            want.insert(url.clone(), body);
        }
        Arc::new(want)
    };
    // Distinct content per URL (the parameter is printed).
    let distinct: std::collections::HashSet<&Vec<u8>> = want.values().collect();
    assert_eq!(distinct.len(), PAGES);

    let dir = site.beside("cache");
    let args = [
        "--cache-dir",
        dir.to_str().unwrap(),
        "--cache-size",
        "32KiB",
        "--io-threads",
        "1",
    ];
    let seen = Arc::new(Seen::default());
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("crash loop seed {seed}");
    let mut rng = Rng(seed);
    let mut most_files = 0;
    for iteration in 0..ITERATIONS {
        let mut server = Axle::start(&site.root, false, &args);
        let kill_after = Duration::from_millis(50 + rng.below(351));
        let until = Instant::now() + kill_after + Duration::from_secs(5);
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                seed = rng.next();
                tokio::spawn(hammer(
                    server.url.clone(),
                    Arc::clone(&urls),
                    Arc::clone(&want),
                    Arc::clone(&seen),
                    seed,
                    until,
                ))
            })
            .collect();
        tokio::time::sleep(kill_after).await;
        server.kill();
        for c in clients {
            c.await.unwrap();
        }
        most_files = most_files.max(cache_files(&dir).len());
        assert_eq!(
            seen.wrong.load(Ordering::Relaxed),
            0,
            "iteration {iteration}: a wrong body was served"
        );
    }

    // One more restart: every page, checked.
    let server = Axle::start(&site.root, false, &args);
    let client = reqwest::Client::new();
    for url in urls.iter() {
        let (status, cache, body) = fetch(&client, &format!("{}{url}", server.url))
            .await
            .unwrap();
        assert_eq!(status, 200, "{url}");
        assert_eq!(body, want[url], "{url} ({cache})");
        seen.checked.fetch_add(1, Ordering::Relaxed);
        if cache == "hit; tier=disk" {
            seen.disk_hits.fetch_add(1, Ordering::Relaxed);
        }
    }
    drop(server);

    let checked = seen.checked.load(Ordering::Relaxed);
    let disk_hits = seen.disk_hits.load(Ordering::Relaxed);
    eprintln!(
        "crash loop: {ITERATIONS} kills, {checked} responses checked, {disk_hits} from the disk tier, \
         at most {most_files} cache files, {:?}",
        started.elapsed()
    );
    assert_eq!(seen.wrong.load(Ordering::Relaxed), 0);
    // Not vacuous: the disk tier held entries and answered requests.
    assert!(most_files > 0, "the disk tier never held a file");
    assert!(disk_hits > 0, "the disk tier never answered");
    assert!(
        checked > (ITERATIONS * 10) as u64,
        "too few responses: {checked}"
    );
}
