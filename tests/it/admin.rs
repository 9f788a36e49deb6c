//! The admin listener refuses what a browser on the operator's machine
//! could send it (issue #36 row 12): a foreign `Host` (DNS rebinding) on
//! every route is 421; a state-changing request with a foreign `Origin`,
//! a cross-site `Sec-Fetch-Site`, or without the `X-Axle-Admin` header (a
//! `text/plain` form or fetch) is 403 and changes nothing; the admin's own
//! names, `--admin-host` names and `axle cache stats|purge` keep working,
//! on IPv4 and IPv6 loopback.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::tiers_support::{Axle, TiersSite};

/// Sends `head` (CRLF line ends added; `body` after it) to `addr` and
/// returns the status and the whole answer.
fn raw(addr: &str, head: &[&str], body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut text = head.join("\r\n");
    text.push_str(&format!(
        "\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    s.write_all(text.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out).into_owned();
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, out)
}

/// `axle cache ARGS`: exit success, stdout and stderr.
fn cache_cli(args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["cache"];
    all.extend_from_slice(args);
    crate::support::axle_output(&all)
}

fn port_of(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

/// A page made a hit, so a purge shows as its next answer being a miss.
async fn cached(server: &Axle) {
    server.get("/big.xml", &[]).await;
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "hit");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_host_is_refused_on_every_admin_route() {
    let site = TiersSite::new();
    let server = Axle::start(&site.root, true, &["--io-threads", "1"]);
    let admin = server.admin().to_string();
    let port = port_of(&admin);
    cached(&server).await;
    let evil = format!("host: evil.example:{port}");
    for (method, path) in [
        ("GET", "/"),
        ("GET", "/stats"),
        ("GET", "/metrics"),
        ("GET", "/status"),
        ("HEAD", "/stats"),
        ("POST", "/purge"),
    ] {
        let line = format!("{method} {path} HTTP/1.1");
        let (status, text) = raw(&admin, &[&line, &evil, "x-axle-admin: 1"], "");
        assert_eq!(status, 421, "{method} {path}: {text}");
        if method != "HEAD" {
            assert!(text.contains("evil.example"), "{text}");
            assert!(text.contains(&format!("localhost:{port}")), "{text}");
            assert!(!text.contains("\"hits\""), "{text}");
        }
    }
    // No Host at all (HTTP/1.0), and two of them.
    let (status, _) = raw(&admin, &["GET /stats HTTP/1.0"], "");
    assert_eq!(status, 421);
    let (status, _) = raw(
        &admin,
        &[
            "GET /stats HTTP/1.1",
            "host: localhost",
            "host: evil.example",
        ],
        "",
    );
    assert!(matches!(status, 400 | 421), "{status}");
    // The refused purge purged nothing.
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "hit");
    // The admin's own names answer.
    for host in [
        admin.clone(),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_string(),
    ] {
        let h = format!("host: {host}");
        let (status, text) = raw(&admin, &["GET /stats HTTP/1.1", &h], "");
        assert_eq!(status, 200, "{host}: {text}");
        assert!(text.contains("\"hits\""), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cross_site_purges_are_refused_and_change_nothing() {
    let site = TiersSite::new();
    let server = Axle::start(&site.root, true, &["--io-threads", "1"]);
    let admin = server.admin().to_string();
    let host = format!("host: {admin}");
    cached(&server).await;
    let before = server.stats().await;
    // What a page on another site can send with fetch() or a form: a
    // simple request, text/plain, with its Origin (and, in a current
    // browser, Sec-Fetch-Site).
    let attempts: [&[&str]; 6] = [
        &["origin: http://evil.example", "content-type: text/plain"],
        &[
            "origin: http://evil.example",
            "content-type: text/plain",
            "x-axle-admin: 1",
        ],
        &["origin: null", "x-axle-admin: 1"],
        &["sec-fetch-site: cross-site", "x-axle-admin: 1"],
        &["sec-fetch-site: same-site", "x-axle-admin: 1"],
        // An older browser's form POST: no Origin, no custom header.
        &["content-type: application/x-www-form-urlencoded"],
    ];
    for extra in attempts {
        let mut head = vec!["POST /purge HTTP/1.1", host.as_str()];
        head.extend_from_slice(extra);
        let (status, text) = raw(&admin, &head, "a=b");
        assert_eq!(status, 403, "{extra:?}: {text}");
        assert!(!text.contains("\"purged\""), "{text}");
    }
    assert_eq!(
        server.get("/big.xml", &[]).await.cache(),
        "hit",
        "no refused purge emptied the cache"
    );
    let after = server.stats().await;
    assert!(
        after["tiers"][0]["entries"].as_u64() >= before["tiers"][0]["entries"].as_u64(),
        "{before} {after}"
    );
    // The admin's own origin, with the header: purged.
    let origin = format!("origin: http://{admin}");
    let (status, text) = raw(
        &admin,
        &[
            "POST /purge HTTP/1.1",
            &host,
            &origin,
            "sec-fetch-site: same-origin",
            "x-axle-admin: 1",
        ],
        "",
    );
    assert_eq!(status, 200, "{text}");
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "miss");
    // A client with no Origin (curl, a script) and the header: purged.
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "hit");
    let (status, text) = raw(
        &admin,
        &["POST /purge HTTP/1.1", &host, "x-axle-admin: 1"],
        "",
    );
    assert_eq!(status, 200, "{text}");
    assert_eq!(server.get("/big.xml", &[]).await.cache(), "miss");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_works_on_ipv4_ipv6_and_through_allowed_names() {
    let site = TiersSite::new();
    // IPv4 loopback, under its address and under localhost.
    let v4 = Axle::start(&site.root, true, &["--io-threads", "1"]);
    let port = port_of(v4.admin());
    for addr in [v4.admin().to_string(), format!("localhost:{port}")] {
        cached(&v4).await;
        let (ok, out, err) = cache_cli(&["stats", "--admin", &addr]);
        assert!(ok, "stats --admin {addr}: {err}");
        assert!(out.contains("\"hits\""), "{out}");
        let (ok, out, err) = cache_cli(&["purge", "--admin", &addr]);
        assert!(ok, "purge --admin {addr}: {err}");
        assert!(out.contains("purged"), "{out}");
        assert_eq!(v4.get("/big.xml", &[]).await.cache(), "miss", "{addr}");
    }
    // IPv6 loopback.
    let v6 = Axle::start_admin(&site.root, Some("[::1]:0"), &["--io-threads", "1"]);
    assert!(v6.admin().starts_with("[::1]:"), "{}", v6.admin());
    cached(&v6).await;
    let (ok, out, err) = cache_cli(&["purge", "--admin", v6.admin(), "/big.xml"]);
    assert!(ok, "purge --admin {}: {err}", v6.admin());
    assert!(out.contains("/big.xml"), "{out}");
    assert_eq!(v6.get("/big.xml", &[]).await.cache(), "miss");
    let (ok, _, err) = cache_cli(&["stats", "--admin", v6.admin()]);
    assert!(ok, "{err}");

    // A name a proxy in front sends: refused until --admin-host names it.
    let proxied = Axle::start(
        &site.root,
        true,
        &["--io-threads", "1", "--admin-host", "admin.internal"],
    );
    let admin = proxied.admin().to_string();
    cached(&proxied).await;
    for host in ["admin.internal", "Admin.Internal"] {
        let h = format!("host: {host}");
        let (status, text) = raw(&admin, &["GET /stats HTTP/1.1", &h], "");
        assert_eq!(status, 200, "{host}: {text}");
    }
    let (status, text) = raw(
        &admin,
        &[
            "POST /purge HTTP/1.1",
            "host: admin.internal",
            "origin: https://admin.internal",
            "x-axle-admin: 1",
        ],
        "",
    );
    assert_eq!(status, 200, "{text}");
    assert_eq!(proxied.get("/big.xml", &[]).await.cache(), "miss");
    let (status, _) = raw(&admin, &["GET /stats HTTP/1.1", "host: other.internal"], "");
    assert_eq!(status, 421);
    // The same name on a server without --admin-host: refused.
    let (status, _) = raw(
        v4.admin(),
        &["GET /stats HTTP/1.1", "host: admin.internal"],
        "",
    );
    assert_eq!(status, 421);
    // A name that is not one is refused at start.
    let out = crate::support::axle()
        .args(["serve", "--root"])
        .arg(&site.root)
        .args(["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
        .args(["--admin-host", "a/b"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--admin-host"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
