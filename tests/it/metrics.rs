//! `GET /metrics` on the admin listener, parsed with a real Prometheus
//! exposition-format parser (`prometheus-parse`): request counters by
//! method and status on both connection paths, latency histograms, cache
//! and tier counters, the pool and the compiled stylesheets; and nothing
//! of it on the public listener.

use crate::tiers_support::{Axle, TiersSite, client};

/// The scrape, parsed.
async fn scrape(admin: &str) -> prometheus_parse::Scrape {
    let text = client()
        .get(format!("http://{admin}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lines = text.lines().map(|l| Ok(l.to_string()));
    prometheus_parse::Scrape::parse(lines).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The value of `name` with these labels (0 when absent).
fn value(s: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    s.samples
        .iter()
        .filter(|m| m.metric == name)
        .filter(|m| labels.iter().all(|(k, v)| m.labels.get(k) == Some(*v)))
        .map(|m| match &m.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => *v,
            prometheus_parse::Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
            prometheus_parse::Value::Summary(_) => 0.0,
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_parse_and_count_what_was_served() {
    let site = TiersSite::new();
    let server = Axle::start(&site.root, true, &["--io-threads", "1"]);
    // One render, then 39 hits (the wire path), one 304, one 404, a HEAD.
    for _ in 0..40 {
        assert_eq!(server.get("/big.xml", &[]).await.status, 200);
    }
    let etag = server.get("/big.xml", &[]).await.header("etag");
    let r = server.get("/big.xml", &[("if-none-match", &etag)]).await;
    assert_eq!(r.status, 304);
    assert_eq!(server.get("/nowhere.xml", &[]).await.status, 404);
    let head = crate::tiers_support::request(
        reqwest::Method::HEAD,
        &format!("{}/big.xml", server.url),
        &[],
    )
    .await;
    assert_eq!(head.status, 200);

    let s = scrape(server.admin()).await;
    let get200 = value(
        &s,
        "axle_requests_total",
        &[("method", "GET"), ("status", "200")],
    );
    assert_eq!(get200, 41.0);
    assert_eq!(
        value(
            &s,
            "axle_requests_total",
            &[("method", "GET"), ("status", "304")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            "axle_requests_total",
            &[("method", "GET"), ("status", "404")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            "axle_requests_total",
            &[("method", "HEAD"), ("status", "200")]
        ),
        1.0
    );
    // Every request counted once, hits and renders in their histograms.
    let all: f64 = value(&s, "axle_requests_total", &[]);
    assert_eq!(all, 44.0);
    assert_eq!(
        value(
            &s,
            "axle_request_duration_seconds_count",
            &[("kind", "render")]
        ),
        1.0
    );
    assert!(
        value(
            &s,
            "axle_request_duration_seconds_count",
            &[("kind", "hit")]
        ) >= 1.0
    );
    assert_eq!(value(&s, "axle_cache_misses_total", &[]), 1.0);
    assert!(value(&s, "axle_cache_hits_total", &[]) >= 40.0);
    assert_eq!(
        value(&s, "axle_language_runs_total", &[("language", "xslt")]),
        1.0
    );
    assert!(value(&s, "axle_stage_seconds_total", &[("language", "xslt")]) > 0.0);
    assert!(value(&s, "axle_tier_entries", &[("tier", "memory")]) >= 1.0);
    assert!(value(&s, "axle_tier_bytes", &[("tier", "memory")]) > 0.0);
    assert!(value(&s, "axle_pool_threads", &[]) >= 1.0);
    assert_eq!(value(&s, "axle_pool_queue_depth", &[]), 0.0);
    assert!(value(&s, "axle_compiled_stages", &[]) >= 1.0);
    assert!(value(&s, "axle_stylesheet_instances", &[]) >= 1.0);
    // Every metric is Axle's own.
    assert!(s.samples.iter().all(|m| m.metric.starts_with("axle_")));
    // Not on the public listener.
    assert_eq!(server.get("/metrics", &[]).await.status, 404);
}
