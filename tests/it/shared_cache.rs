//! The shared tier (`--shared-cache redis://…`) end to end: two `axle`
//! processes on one real `redis-server` (spawned on a free loopback port
//! with no persistence). A page one renders is a hit on the other; Redis
//! killed, restarted, down at start, or holding a damaged value never
//! costs a wrong page; prefixes keep sites apart; every value has its
//! expiry; the size bound holds at its edge; one slow page asked of both
//! at once is computed once in all; purge by URL prefix; a stuck Redis
//! costs at most the timeout, a full one only its writes; `[shared-cache]`
//! in `axle.toml`, under the flags.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::redis_support::{Redis, free_port, have_redis};
use crate::tiers_support::{Axle, TiersSite, num, request, tier, wait_stats};

const PAGES: [&str; 4] = ["/big.xml", "/docs/a.xml", "/docs/b.xml", "/other/c.xml"];

/// Every page of `PAGES` from a server that caches nothing.
async fn reference(root: &Path) -> HashMap<&'static str, Vec<u8>> {
    let off = Axle::start(root, false, &["--cache", "off"]);
    let mut want = HashMap::new();
    for page in PAGES {
        let r = off.get(page, &[]).await;
        assert_eq!(r.status, 200, "{page}: {}", r.text());
        want.insert(page, r.body);
    }
    want
}

/// An instance on `redis` with the admin listener, and `extra` flags.
fn instance(root: &Path, url: &str, extra: &[&str]) -> Axle {
    let mut args = vec!["--shared-cache", url];
    args.extend_from_slice(extra);
    Axle::start(root, true, &args)
}

async fn redis_tier(server: &Axle) -> serde_json::Value {
    let s = server.stats().await;
    tier(&s, "redis").clone()
}

/// Waits until the instance's redis tier says `available == up`.
async fn wait_available(server: &Axle, up: bool) -> serde_json::Value {
    wait_stats(server.admin(), "the redis tier's availability", |s| {
        tier(s, "redis")["available"] == up
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_rendered_by_one_instance_is_a_hit_on_the_other() {
    if !have_redis() {
        return;
    }
    let redis = Redis::start();
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let a = instance(&site.root, &redis.url(), &["--shared-cache-ttl", "1h"]);
    let b = instance(&site.root, &redis.url(), &[]);
    wait_available(&a, true).await;
    wait_available(&b, true).await;

    let first = a.get("/big.xml", &[]).await;
    assert_eq!((first.status, first.cache().as_str()), (200, "miss"));
    let keys = redis.wait_values("axle:", 1);
    assert_eq!(keys.len(), 1, "{keys:?}");

    // Every value carries the expiry it was given (1h here).
    let pttl = redis.conn().cmd(&["PTTL", &keys[0]]).int();
    assert!(pttl > 3_500_000 && pttl <= 3_600_000, "PTTL {pttl}");

    let r = b.get("/big.xml", &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.cache(), "hit; tier=redis", "B's first request");
    assert_eq!(r.body, want["/big.xml"]);
    assert_eq!(r.body, first.body);
    assert_eq!(r.header("etag"), first.header("etag"));
    let again = b.get("/big.xml", &[]).await;
    assert_eq!(again.cache(), "hit", "promoted into B's memory");

    let s = b.stats().await;
    assert_eq!(num(&s["stage_runs"]), 0, "B transformed nothing: {s}");
    let t = tier(&s, "redis");
    assert_eq!(num(&t["hits"]), 1, "{s}");
    assert_eq!(t["available"], true);
    assert_eq!(num(&t["errors"]), 0, "{s}");

    // The default expiry: one day.
    let c = b.get("/docs/a.xml", &[]).await;
    assert_eq!(c.cache(), "miss");
    let docs = redis
        .wait_values("axle:", 2)
        .into_iter()
        .find(|k| *k != keys[0])
        .unwrap();
    let pttl = redis.conn().cmd(&["PTTL", &docs]).int();
    assert!(pttl > 86_000_000 && pttl <= 86_400_000, "PTTL {pttl}");

    // /metrics exports the tier's state.
    let m = request(
        reqwest::Method::GET,
        &format!("http://{}/metrics", b.admin()),
        &[],
    )
    .await
    .text();
    assert!(m.contains("axle_tier_available{tier=\"redis\"} 1"), "{m}");
    assert!(
        m.contains("axle_tier_errors_total{tier=\"redis\"} 0"),
        "{m}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_killed_mid_run_then_restarted() {
    if !have_redis() {
        return;
    }
    let mut redis = Redis::start();
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let a = instance(&site.root, &redis.url(), &[]);
    let b = instance(&site.root, &redis.url(), &[]);
    wait_available(&a, true).await;
    wait_available(&b, true).await;
    assert_eq!(a.get("/big.xml", &[]).await.body, want["/big.xml"]);
    redis.wait_values("axle:", 1);

    redis.kill();
    // Both go on answering, from their own tiers or by rendering.
    for _ in 0..3 {
        for server in [&a, &b] {
            for page in PAGES {
                let r = server.get(page, &[]).await;
                assert_eq!(r.status, 200, "{page}");
                assert_eq!(r.body, want[page], "{page}");
            }
        }
    }
    for server in [&a, &b] {
        let t = wait_available(server, false).await;
        let t = tier(&t, "redis");
        assert_eq!(t["writable"], false);
        assert!(num(&t["errors"]) >= 1, "{t}");
    }
    // While down, requests do not wait on Redis: a new page each, fast.
    site.write(
        "down.xml",
        "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"/s/page.xsl\" type=\"text/xsl\"?>\n<page><title>Down</title><para>x</para></page>\n",
    );
    let r = b.get("/down.xml", &[]).await;
    assert_eq!((r.status, r.cache().as_str()), (200, "miss"));
    let t = redis_tier(&b).await;
    assert!(num(&t["unavailable"]) >= 1, "failed fast while down: {t}");

    redis.restart();
    wait_available(&a, true).await;
    wait_available(&b, true).await;
    site.write(
        "new.xml",
        "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"/s/page.xsl\" type=\"text/xsl\"?>\n<page><title>New</title><para>After the restart.</para></page>\n",
    );
    let r = a.get("/new.xml", &[]).await;
    assert_eq!((r.status, r.cache().as_str()), (200, "miss"));
    redis.wait_values("axle:", 1);
    let on_b = b.get("/new.xml", &[]).await;
    assert_eq!(
        on_b.cache(),
        "hit; tier=redis",
        "used again after a restart"
    );
    assert_eq!(on_b.body, r.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_down_at_start_then_up() {
    if !have_redis() {
        return;
    }
    let port = free_port();
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let url = format!("redis://127.0.0.1:{port}/0");
    let a = instance(&site.root, &url, &[]);
    for page in PAGES {
        let r = a.get(page, &[]).await;
        assert_eq!((r.status, r.cache().as_str()), (200, "miss"), "{page}");
        assert_eq!(r.body, want[page]);
    }
    let t = redis_tier(&a).await;
    assert_eq!(t["available"], false, "{t}");

    // Redis comes up later: found by the reconnect task.
    let redis = Redis::on(port);
    wait_available(&a, true).await;
    site.write(
        "late.xml",
        "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"/s/page.xsl\" type=\"text/xsl\"?>\n<page><title>Late</title><para>y</para></page>\n",
    );
    assert_eq!(a.get("/late.xml", &[]).await.cache(), "miss");
    redis.wait_values("axle:", 1);
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    /// One byte of the body flipped.
    Flipped,
    /// Cut to half its length.
    Truncated,
    /// Not an entry at all.
    Garbage,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_value_is_rejected_and_recomputed() {
    if !have_redis() {
        return;
    }
    let redis = Redis::start();
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let a = instance(&site.root, &redis.url(), &[]);
    wait_available(&a, true).await;
    assert_eq!(a.get("/big.xml", &[]).await.cache(), "miss");
    let key = redis.wait_values("axle:", 1).remove(0);
    for damage in [Damage::Flipped, Damage::Truncated, Damage::Garbage] {
        let mut conn = redis.conn();
        let mut value = conn.cmd(&["GET", &key]).bytes().expect("stored");
        match damage {
            Damage::Flipped => {
                // The body is the end of the value.
                let at = value.len() - 100;
                value[at] ^= 0x20;
            }
            Damage::Truncated => value.truncate(value.len() / 2),
            Damage::Garbage => value = b"not an entry".to_vec(),
        }
        conn.cmd_bytes(&[b"SET", key.as_bytes(), &value]);
        // A new instance each time (A has the page in memory).
        let b = instance(&site.root, &redis.url(), &[]);
        wait_available(&b, true).await;
        let r = b.get("/big.xml", &[]).await;
        assert_eq!(r.status, 200, "{damage:?}");
        assert_eq!(r.cache(), "miss", "{damage:?}: recomputed");
        assert_eq!(r.body, want["/big.xml"], "{damage:?}");
        let t = redis_tier(&b).await;
        assert_eq!(num(&t["rejected"]), 1, "{damage:?}: {t}");
        // B stored the good value again.
        let start = std::time::Instant::now();
        loop {
            let now = redis.conn().cmd(&["GET", &key]).bytes();
            if now.as_ref().is_some_and(|v| *v != value) {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "{damage:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let again = instance(&site.root, &redis.url(), &[]);
        wait_available(&again, true).await;
        assert_eq!(again.get("/big.xml", &[]).await.cache(), "hit; tier=redis");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn prefixes_keep_sites_apart_and_purge_stays_in_its_own() {
    if !have_redis() {
        return;
    }
    let redis = Redis::start();
    let site = TiersSite::new();
    let one = instance(&site.root, &redis.url(), &["--shared-cache-prefix", "one:"]);
    let two = instance(&site.root, &redis.url(), &["--shared-cache-prefix", "two:"]);
    wait_available(&one, true).await;
    wait_available(&two, true).await;
    for page in ["/big.xml", "/docs/a.xml", "/docs/b.xml"] {
        assert_eq!(one.get(page, &[]).await.cache(), "miss");
    }
    redis.wait_values("one:", 3);
    assert!(redis.values("two:").is_empty());
    // The other prefix sees none of them.
    assert_eq!(two.get("/big.xml", &[]).await.cache(), "miss");
    assert_eq!(two.get("/docs/a.xml", &[]).await.cache(), "miss");
    redis.wait_values("two:", 2);

    // Purge by URL prefix: only /docs/ under one's prefix.
    let purge = |admin: &str, query: &str| {
        let url = format!("http://{admin}/purge{query}");
        async move { request(reqwest::Method::POST, &url, &[("x-axle-admin", "1")]).await }
    };
    let r = purge(one.admin(), "?prefix=/docs/").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let purged: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert!(r.text().contains("redis"), "{purged}");
    assert_eq!(redis.values("one:").len(), 1, "only /big.xml is left");
    assert_eq!(redis.values("two:").len(), 2, "the other site is untouched");
    // Purge everything: every key under one's prefix, nothing else.
    assert_eq!(purge(one.admin(), "").await.status, 200);
    assert!(redis.keys("one:*").is_empty());
    assert_eq!(redis.values("two:").len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_entry_size_bound_is_inclusive() {
    if !have_redis() {
        return;
    }
    let redis = Redis::start();
    let site = TiersSite::new();
    // The value's size, from an unbounded instance.
    let probe = instance(
        &site.root,
        &redis.url(),
        &["--shared-cache-prefix", "probe:"],
    );
    wait_available(&probe, true).await;
    probe.get("/big.xml", &[]).await;
    let key = redis.wait_values("probe:", 1).remove(0);
    let len = redis.conn().cmd(&["STRLEN", &key]).int();
    assert!(len > 1000, "{len}");

    let at = len.to_string();
    let edge = instance(
        &site.root,
        &redis.url(),
        &[
            "--shared-cache-prefix",
            "edge:",
            "--shared-cache-max-entry",
            &at,
        ],
    );
    let under = (len - 1).to_string();
    let over = instance(
        &site.root,
        &redis.url(),
        &[
            "--shared-cache-prefix",
            "over:",
            "--shared-cache-max-entry",
            &under,
        ],
    );
    wait_available(&edge, true).await;
    wait_available(&over, true).await;
    assert_eq!(edge.get("/big.xml", &[]).await.status, 200);
    assert_eq!(over.get("/big.xml", &[]).await.status, 200);
    let stored = redis.wait_values("edge:", 1);
    assert_eq!(
        redis.conn().cmd(&["STRLEN", &stored[0]]).int(),
        len,
        "a value of exactly the bound is stored"
    );
    let t = wait_stats(over.admin(), "the oversize write", |s| {
        num(&tier(s, "redis")["dropped"]) == 1
    })
    .await;
    assert!(redis.values("over:").is_empty(), "{t}");
    assert_eq!(num(&redis_tier(&edge).await["dropped"]), 0);
}

/// A site whose `/slow.xml` takes a second to render (a filter stage that
/// sleeps), and two instances on `redis` with `extra` flags.
async fn slow_pair(redis: &Redis, extra: &[&str]) -> (TiersSite, Axle, Axle) {
    let site = TiersSite::new();
    site.write(
        "axle.toml",
        &format!(
            "{}\n[filter.\"application/x-slow\"]\nargv = [\"sh\", \"-c\", \"sleep 1; cat\"]\n",
            site.read("axle.toml")
        ),
    );
    site.write(
        "slow.xml",
        "<?xml version=\"1.0\"?>\n<?xml-stylesheet type=\"application/x-slow\" href=\"/\"?>\n<page>slow</page>\n",
    );
    let a = instance(&site.root, &redis.url(), extra);
    let b = instance(&site.root, &redis.url(), extra);
    wait_available(&a, true).await;
    wait_available(&b, true).await;
    (site, a, b)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_page_asked_of_both_at_once_is_computed_once() {
    if !have_redis() {
        return;
    }
    let redis = Redis::start();
    let (_site, a, b) = slow_pair(&redis, &[]).await;
    let (ra, rb) = tokio::join!(a.get("/slow.xml", &[]), b.get("/slow.xml", &[]));
    assert_eq!(
        (ra.status, rb.status),
        (200, 200),
        "{} {}",
        ra.text(),
        rb.text()
    );
    assert_eq!(ra.body, rb.body);
    let mut answers = [ra.cache(), rb.cache()];
    answers.sort();
    assert_eq!(answers, ["hit; tier=redis", "miss"]);
    let runs = num(&a.stats().await["stage_runs"]) + num(&b.stats().await["stage_runs"]);
    assert_eq!(runs, 1, "the slow stage ran once in all");
    assert!(
        redis.keys("axle:*:lock").is_empty() && !redis.values("axle:").is_empty(),
        "the lock was released"
    );
}

/// Past `lock-wait` a loser stops waiting and renders the page itself
/// (the edge of the limit: a page slower than it is computed twice).
#[tokio::test(flavor = "multi_thread")]
async fn past_lock_wait_the_loser_computes_it_itself() {
    if !have_redis() {
        return;
    }
    let redis = Redis::start();
    let (_site, a, b) = slow_pair(&redis, &["--shared-cache-lock-wait", "200ms"]).await;
    let (ra, rb) = tokio::join!(a.get("/slow.xml", &[]), b.get("/slow.xml", &[]));
    assert_eq!((ra.status, rb.status), (200, 200));
    assert_eq!(ra.body, rb.body);
    assert_eq!([ra.cache(), rb.cache()], ["miss", "miss"]);
    let runs = num(&a.stats().await["stage_runs"]) + num(&b.stats().await["stage_runs"]);
    assert_eq!(runs, 2, "each computed it");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stuck_redis_costs_at_most_the_timeout() {
    if !have_redis() {
        return;
    }
    let redis = Redis::start();
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let a = instance(
        &site.root,
        &redis.url(),
        &["--shared-cache-timeout", "200ms"],
    );
    wait_available(&a, true).await;
    redis.pause(true);
    let start = std::time::Instant::now();
    let r = a.get("/big.xml", &[]).await;
    let first = start.elapsed();
    assert_eq!((r.status, r.cache().as_str()), (200, "miss"));
    assert_eq!(r.body, want["/big.xml"]);
    // One GET timed out; the tier is down, so the rest fail at once.
    assert!(first < Duration::from_secs(2), "{first:?}");
    let start = std::time::Instant::now();
    for page in &PAGES[1..] {
        let r = a.get(page, &[]).await;
        assert_eq!(r.body, want[page]);
    }
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    let t = redis_tier(&a).await;
    assert_eq!(t["available"], false, "{t}");
    assert!(num(&t["errors"]) >= 1, "{t}");
    redis.pause(false);
    wait_available(&a, true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_redis_refuses_writes_and_pages_still_come() {
    if !have_redis() {
        return;
    }
    let redis = Redis::start();
    let mut conn = redis.conn();
    conn.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    // Below what Redis already uses: every write is refused (OOM).
    conn.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    let site = TiersSite::new();
    let want = reference(&site.root).await;
    let a = instance(&site.root, &redis.url(), &[]);
    wait_available(&a, true).await;
    for page in PAGES {
        let r = a.get(page, &[]).await;
        assert_eq!((r.status, r.cache().as_str()), (200, "miss"), "{page}");
        assert_eq!(r.body, want[page]);
    }
    let s = wait_stats(a.admin(), "refused writes", |s| {
        num(&tier(s, "redis")["write_errors"]) >= 1
    })
    .await;
    let t = tier(&s, "redis");
    assert_eq!(t["available"], true, "answering, only full: {t}");
    assert!(redis.values("axle:").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_file_sets_the_shared_cache_and_the_flags_win() {
    if !have_redis() {
        return;
    }
    let redis = Redis::start();
    let site = TiersSite::new();
    site.write(
        "axle.toml",
        &format!(
            "{}\n[shared-cache]\nurl = \"{}\"\nprefix = \"file:\"\nttl = \"2h\"\nmax-entry-size = \"1MiB\"\ntimeout = \"250ms\"\nlock-wait = \"1s\"\n",
            site.read("axle.toml"),
            redis.url()
        ),
    );
    let from_file = Axle::start(&site.root, true, &[]);
    wait_available(&from_file, true).await;
    from_file.get("/big.xml", &[]).await;
    let key = redis.wait_values("file:", 1).remove(0);
    let pttl = redis.conn().cmd(&["PTTL", &key]).int();
    assert!(pttl > 7_000_000 && pttl <= 7_200_000, "PTTL {pttl}");

    let flags = Axle::start(&site.root, true, &["--shared-cache-prefix", "flag:"]);
    wait_available(&flags, true).await;
    assert_eq!(flags.get("/big.xml", &[]).await.cache(), "miss");
    redis.wait_values("flag:", 1);

    // A bad value is refused at start, naming the key.
    site.write(
        "axle.toml",
        "[shared-cache]\nurl = \"redis://127.0.0.1:1/0\"\nttl = \"forever\"\n",
    );
    let out = crate::support::axle()
        .args(["check", "--root"])
        .arg(&site.root)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("shared-cache.ttl"), "{err}");
}
