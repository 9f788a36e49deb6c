//! Render limits over HTTP: a runaway transform ends at its deadline (504)
//! or its memory budget (500) and the server serves on; chains and nested
//! `axle:` renders are bounded; a full queue answers 503 with
//! `Retry-After`; one slow URL cannot hold every transform thread.

use std::time::{Duration, Instant};

use axle::CacheMode;

use crate::support::{MODES, TestServer, TestSite};

const XSL_HEAD: &str =
    r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">"#;

/// A document whose one XPath expression is cubic over `n` nodes (1,000:
/// a billion node visits, minutes uncut) and its stylesheet.
fn write_cubic(site: &TestSite, name: &str, n: usize) {
    site.write(
        "cubic.xsl",
        &format!(
            r#"{XSL_HEAD}<xsl:output method="text"/><xsl:template match="/">
<xsl:value-of select="count(//n[count(//n[count(//n) > 0]) > 0])"/></xsl:template></xsl:stylesheet>"#
        ),
    );
    site.write(
        name,
        &format!(
            "<?xml-stylesheet href=\"cubic.xsl\" type=\"text/xsl\"?>\n<r>{}</r>",
            "<n/>".repeat(n)
        ),
    );
}

fn config(site: &TestSite, mode: CacheMode) -> axle::ServeConfig {
    let mut config = axle::ServeConfig::new(&site.root);
    config.cache_mode = mode;
    config
}

#[tokio::test]
async fn a_runaway_xpath_ends_at_the_deadline_with_504_and_the_server_serves_on() {
    let site = TestSite::new();
    write_cubic(&site, "slow.xml", 1000);
    for mode in MODES {
        let mut config = config(&site, mode);
        config.render.timeout = Duration::from_millis(500);
        let server = TestServer::start_config(config, axle::Registry::default()).await;
        let started = Instant::now();
        let r = server.get("/slow.xml").await;
        let took = started.elapsed();
        assert_eq!(r.status, 504, "{mode}: {}", r.text());
        assert!(r.text().contains("render-timeout"), "{mode}: {}", r.text());
        assert!(took < Duration::from_secs(5), "{mode}: took {took:?}");
        let ok = server.get("/one.xml").await;
        assert_eq!(ok.status, 200, "{mode}: {}", ok.text());
        // Not cached: asked again, it runs (and is stopped) again.
        assert_eq!(server.get("/slow.xml").await.status, 504, "{mode}");
    }
}

#[tokio::test]
async fn a_render_over_its_memory_budget_ends_with_500() {
    let site = TestSite::new();
    site.write(
        "double.xsl",
        &format!(
            r#"{XSL_HEAD}<xsl:output method="text"/><xsl:template match="/">
<xsl:call-template name="d"><xsl:with-param name="s" select="'0123456789abcdef'"/><xsl:with-param name="n" select="26"/></xsl:call-template></xsl:template>
<xsl:template name="d"><xsl:param name="s"/><xsl:param name="n"/><xsl:choose>
<xsl:when test="$n = 0"><xsl:value-of select="string-length($s)"/></xsl:when>
<xsl:otherwise><xsl:call-template name="d"><xsl:with-param name="s" select="concat($s, $s)"/><xsl:with-param name="n" select="$n - 1"/></xsl:call-template></xsl:otherwise>
</xsl:choose></xsl:template></xsl:stylesheet>"#
        ),
    );
    site.write(
        "double.xml",
        "<?xml-stylesheet href=\"double.xsl\" type=\"text/xsl\"?>\n<a/>",
    );
    let mut config = config(&site, CacheMode::Incremental);
    config.render.memory = 32 << 20;
    let server = TestServer::start_config(config, axle::Registry::default()).await;
    let r = server.get("/double.xml").await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("render-memory"), "{}", r.text());
    assert_eq!(server.get("/one.xml").await.status, 200);
}

#[tokio::test]
async fn a_chain_longer_than_max_chain_is_refused_and_one_at_the_limit_runs() {
    let site = TestSite::new();
    site.write(
        "id.xsl",
        &format!(
            r#"{XSL_HEAD}<xsl:template match="@*|node()"><xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy></xsl:template></xsl:stylesheet>"#
        ),
    );
    let pis = |n: usize| "<?xml-stylesheet href=\"id.xsl\" type=\"text/xsl\"?>\n".repeat(n);
    site.write("four.xml", &format!("{}<a>four</a>", pis(4)));
    site.write("five.xml", &format!("{}<a>five</a>", pis(5)));
    for mode in MODES {
        let mut config = config(&site, mode);
        config.render.max_chain = 4;
        let server = TestServer::start_config(config, axle::Registry::default()).await;
        let r = server.get("/four.xml").await;
        assert_eq!(r.status, 200, "{mode}: {}", r.text());
        let r = server.get("/five.xml").await;
        assert_eq!(r.status, 500, "{mode}: {}", r.text());
        assert!(r.text().contains("max-chain"), "{mode}: {}", r.text());
    }
}

#[tokio::test]
async fn nested_axle_renders_are_counted_per_request() {
    let site = TestSite::new();
    site.write("leaf.xml", "<leaf/>");
    // Each level loads the next twice, under two spellings: 2 + 4 + 8 = 14
    // nested renders for fan.xml.
    for (level, next) in [("fan", "f1"), ("f1", "f2"), ("f2", "leaf")] {
        site.write(
            &format!("{level}.xsl"),
            &format!(
                r#"{XSL_HEAD}<xsl:template match="/"><o><xsl:copy-of select="document('axle:/{next}.xml')"/><xsl:copy-of select="document('axle:/./{next}.xml')"/></o></xsl:template></xsl:stylesheet>"#
            ),
        );
        site.write(
            &format!("{level}.xml"),
            &format!("<?xml-stylesheet href=\"{level}.xsl\" type=\"text/xsl\"?>\n<x/>"),
        );
    }
    let mut config = config(&site, CacheMode::Off);
    config.render.max_nested = 14;
    let server = TestServer::start_config(config.clone(), axle::Registry::default()).await;
    let r = server.get("/fan.xml").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text().matches("<leaf/>").count(), 8, "{}", r.text());
    drop(server);
    config.render.max_nested = 13;
    let server = TestServer::start_config(config, axle::Registry::default()).await;
    let r = server.get("/fan.xml").await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("max-nested"), "{}", r.text());
}

#[tokio::test]
async fn a_full_queue_answers_503_with_retry_after() {
    let site = TestSite::new();
    write_cubic(&site, "slow.xml", 1000);
    let mut config = config(&site, CacheMode::Off);
    config.workers = 1;
    config.render.max_queue = 0;
    config.render.timeout = Duration::from_secs(3);
    let server =
        std::sync::Arc::new(TestServer::start_config(config, axle::Registry::default()).await);
    let slow = {
        let server = std::sync::Arc::clone(&server);
        tokio::spawn(async move { server.get("/slow.xml").await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let busy = server.get("/one.xml").await;
    assert_eq!(busy.status, 503, "{}", busy.text());
    assert_eq!(busy.header("retry-after"), "1");
    assert_eq!(slow.await.unwrap().status, 504);
    assert_eq!(server.get("/one.xml").await.status, 200);
}

#[tokio::test]
async fn one_slow_url_cannot_hold_every_transform_thread() {
    let site = TestSite::new();
    write_cubic(&site, "slow.xml", 1000);
    let mut config = config(&site, CacheMode::Incremental);
    config.workers = 2; // one render per URL path at once (the default)
    config.render.timeout = Duration::from_secs(4);
    let server =
        std::sync::Arc::new(TestServer::start_config(config, axle::Registry::default()).await);
    // New parameters each time: the cache cannot help.
    let slow: Vec<_> = (0..3)
        .map(|i| {
            let server = std::sync::Arc::clone(&server);
            tokio::spawn(async move { server.get(&format!("/slow.xml?x={i}")).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let ok = server.get("/one.xml").await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "waited {:?} behind one URL's renders",
        started.elapsed()
    );
    for s in slow {
        let status = s.await.unwrap().status;
        assert!(status == 504 || status == 503, "{status}");
    }
}

#[tokio::test]
async fn xinclude_fan_out_is_refused_before_it_is_expanded() {
    let site = TestSite::new();
    // Each level includes the next twice: 2^12 leaves from 13 small files.
    for i in 0..12 {
        site.write(
            &format!("xi/l{i}.xml"),
            &format!(
                r#"<x xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="l{n}.xml"/><xi:include href="l{n}.xml"/></x>"#,
                n = i + 1
            ),
        );
    }
    site.write("xi/l12.xml", "<leaf/>");
    site.write(
        "xi/count.xsl",
        &format!(
            r#"{XSL_HEAD}<xsl:output method="text"/><xsl:template match="/"><xsl:value-of select="count(//leaf)"/></xsl:template></xsl:stylesheet>"#
        ),
    );
    for (name, from) in [("small", 9), ("fan", 0)] {
        site.write(
            &format!("xi/{name}.xml"),
            &format!(
                "<?xml-stylesheet href=\"count.xsl\" type=\"text/xsl\"?>\n<r xmlns:xi=\"http://www.w3.org/2001/XInclude\"><xi:include href=\"l{from}.xml\"/></r>"
            ),
        );
    }
    let registry = axle::Registry::default();
    let toml = "[location.\"/\"]\nxinclude = true\n";
    let site_config =
        axle::site::SiteConfig::parse(toml, &site.root.join("axle.toml"), registry.clone())
            .unwrap();
    let mut config = config(&site, CacheMode::Incremental);
    config.render.max_xinclude_nodes = 1000;
    let server = TestServer::start_full(config, registry, site_config).await;
    let r = server.get("/xi/small.xml").await;
    assert_eq!((r.status, r.text()), (200, "8".to_string()));
    let started = Instant::now();
    let r = server.get("/xi/fan.xml").await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("max-xinclude-nodes"), "{}", r.text());
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A render whose client went away is stopped, on both connection paths:
/// Axle's own loop (a GET) and hyper's (an HTTP/1.0 request).
#[tokio::test]
async fn a_render_whose_client_went_away_is_cancelled() {
    use tokio::io::AsyncWriteExt;
    let site = TestSite::new();
    write_cubic(&site, "slow.xml", 1000);
    let mut config = config(&site, CacheMode::Off);
    config.workers = 1;
    config.render.timeout = Duration::from_secs(30);
    let server = TestServer::start_config(config, axle::Registry::default()).await;
    for (i, version) in ["HTTP/1.1", "HTTP/1.0"].iter().enumerate() {
        let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let request = format!("GET /slow.xml?x={i} {version}\r\nHost: localhost\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(stream);
        // The only transform thread is free again long before the render's
        // 30 s deadline.
        let started = Instant::now();
        let r = server.get(&format!("/one.xml?after={i}")).await;
        assert_eq!(r.status, 200, "{version}: {}", r.text());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{version}: the abandoned render held the thread for {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn sources_and_outputs_are_bounded_at_their_sizes() {
    let site = TestSite::new();
    site.write(
        "text.xsl",
        &format!(
            r#"{XSL_HEAD}<xsl:output method="text"/><xsl:template match="/"><xsl:value-of select="/a"/></xsl:template></xsl:stylesheet>"#
        ),
    );
    let body = "x".repeat(1000);
    let doc = format!("<?xml-stylesheet href=\"text.xsl\" type=\"text/xsl\"?>\n<a>{body}</a>");
    site.write("sized.xml", &doc);
    let len = doc.len() as u64;
    for mode in MODES {
        for (source, output, status) in [(len, 1000, 200), (len - 1, 1000, 500), (len, 999, 500)] {
            let mut config = config(&site, mode);
            config.render.max_source_bytes = source;
            config.render.max_output_bytes = output;
            let server = TestServer::start_config(config, axle::Registry::default()).await;
            let r = server.get("/sized.xml").await;
            assert_eq!(r.status, status, "{mode} {source} {output}: {}", r.text());
            if status == 200 {
                assert_eq!(r.text(), body);
            } else {
                let limit = if source < len {
                    "max-source-size"
                } else {
                    "max-output-size"
                };
                assert!(r.text().contains(limit), "{mode}: {}", r.text());
            }
        }
    }
}
