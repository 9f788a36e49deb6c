//! Content negotiation of rendered documents over HTTP: the
//! `Accept-Encoding` q-value matrix on both paths (a fresh server's first
//! request goes through the render path, the second is answered by the
//! hot memo's wire form), every encoded body decoding to the identity
//! bytes, ETags per encoding, 304 per encoding, HEAD, `If-Modified-Since`,
//! `Cache-Control` from the site configuration and on error pages, ETags
//! stable across processes, and the three cache modes agreeing.

use axle::CacheMode;

use crate::support::{MODES, Resp, TestServer};
use crate::tiers_support::{Axle, TiersSite, decoded, gunzip, unbrotli};

/// What a request must get.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    Identity,
    Gzip,
    Br,
    NotAcceptable,
    /// 200, in any encoding (the body still decodes to the identity bytes).
    Any,
}

/// `(Accept-Encoding, for the compressible page, for the small page)`.
const MATRIX: &[(Option<&str>, Want, Want)] = &[
    (None, Want::Identity, Want::Identity),
    (Some("gzip"), Want::Gzip, Want::Identity),
    (Some("br"), Want::Br, Want::Identity),
    (Some("gzip, br"), Want::Br, Want::Identity),
    (Some("br;q=0.5, gzip"), Want::Gzip, Want::Identity),
    (Some("gzip;q=0"), Want::Identity, Want::Identity),
    // Identity refused and no coding listed: nothing is acceptable (RFC
    // 9110 12.5.3: a listed header makes unlisted codings unacceptable).
    (
        Some("identity;q=0"),
        Want::NotAcceptable,
        Want::NotAcceptable,
    ),
    // Identity refused, gzip listed: gzip; the small page compressed
    // anyway if that shrinks it, else sent as it is.
    (Some("gzip, identity;q=0"), Want::Gzip, Want::Any),
    (Some("*;q=0"), Want::NotAcceptable, Want::NotAcceptable),
    (Some("*"), Want::Br, Want::Identity),
    (Some("deflate"), Want::Identity, Want::Identity),
    (Some("x-gzip"), Want::Gzip, Want::Identity),
];

const BIG: &str = "/big.xml";
const SMALL: &str = "/small.xml";

fn headers(accept: Option<&str>) -> Vec<(&str, &str)> {
    accept.map(|a| ("accept-encoding", a)).into_iter().collect()
}

/// The ETag's text inside its quotes.
fn etag_inner(etag: &str) -> &str {
    etag.strip_prefix('"')
        .and_then(|e| e.strip_suffix('"'))
        .unwrap_or_else(|| panic!("not a strong ETag: {etag}"))
}

/// Checks `r` (for `Accept-Encoding: accept` on `page`) against `want`,
/// given the identity response.
fn check(r: &Resp, identity: &Resp, want: Want, page: &str, accept: Option<&str>, round: u32) {
    let ctx = format!("{page} accept {accept:?} round {round}");
    if want == Want::NotAcceptable {
        assert_eq!(r.status, 406, "{ctx}");
        assert_eq!(r.header("cache-control"), "no-store", "{ctx}");
        assert!(r.header("vary").contains("accept-encoding"), "{ctx}");
        return;
    }
    assert_eq!(r.status, 200, "{ctx}: {}", r.text());
    let encoding = r.header("content-encoding");
    let expected = match want {
        Want::Identity => Some(""),
        Want::Gzip => Some("gzip"),
        Want::Br => Some("br"),
        _ => None,
    };
    if let Some(expected) = expected {
        assert_eq!(encoding, expected, "{ctx}");
    }
    assert_eq!(
        decoded(r),
        identity.body,
        "{ctx}: decodes to the identity bytes"
    );
    let id = etag_inner(&identity.header("etag")).to_string();
    let etag = r.header("etag");
    match encoding.as_str() {
        "" => {
            assert_eq!(r.body, identity.body, "{ctx}");
            assert_eq!(etag, identity.header("etag"), "{ctx}");
        }
        "gzip" => {
            assert_eq!(etag_inner(&etag), format!("{id}-gz"), "{ctx}");
            assert_ne!(r.body, identity.body, "{ctx}");
        }
        "br" => {
            assert_eq!(etag_inner(&etag), format!("{id}-br"), "{ctx}");
            assert_ne!(r.body, identity.body, "{ctx}");
        }
        other => panic!("{ctx}: content-encoding {other}"),
    }
    if page == BIG {
        assert!(
            r.header("vary")
                .to_ascii_lowercase()
                .contains("accept-encoding"),
            "{ctx}: {:?}",
            r.headers
        );
    } else {
        assert!(r.headers.get("vary").is_none(), "{ctx}: no Vary");
    }
}

/// The identity response of `page` from a server of its own.
async fn identity_of(root: &std::path::Path, page: &str) -> Resp {
    let server = TestServer::start(root, CacheMode::Incremental).await;
    let r = server.get(page).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.headers.get("content-encoding").is_none());
    r
}

#[tokio::test(flavor = "multi_thread")]
async fn the_q_value_matrix_on_the_render_path_and_the_hot_path() {
    let site = TiersSite::new();
    let big = identity_of(&site.root, BIG).await;
    let small = identity_of(&site.root, SMALL).await;
    assert!(big.body.len() >= 2048, "{}", big.body.len());
    assert!(small.body.len() < 1024, "{}", small.body.len());
    for &(accept, want_big, want_small) in MATRIX {
        for (page, identity, want) in [(BIG, &big, want_big), (SMALL, &small, want_small)] {
            // A fresh server: the first request renders, the next ones
            // come from the hot memo.
            let server = TestServer::start(&site.root, CacheMode::Incremental).await;
            let h = headers(accept);
            for round in 0..3 {
                let r = server.request(reqwest::Method::GET, page, &h).await;
                check(&r, identity, want, page, accept, round);
                if round > 0 && r.status == 200 {
                    assert_eq!(r.cache(), "hit", "{page} {accept:?} round {round}");
                }
            }
            // And after the page is cached under another encoding.
            let server = TestServer::start(&site.root, CacheMode::Incremental).await;
            server.get(page).await;
            let r = server.request(reqwest::Method::GET, page, &h).await;
            check(&r, identity, want, page, accept, 9);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn etags_differ_per_encoding_and_304_is_per_encoding() {
    let site = TiersSite::new();
    let big = identity_of(&site.root, BIG).await;
    let id = big.header("etag");
    let inner = etag_inner(&id).to_string();
    let gz = format!("\"{inner}-gz\"");
    let br = format!("\"{inner}-br\"");
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;
    for round in 0..3 {
        let get = |h: Vec<(&'static str, String)>| {
            let server = &server;
            async move {
                let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
                server.request(reqwest::Method::GET, BIG, &h).await
            }
        };
        let r = get(vec![
            ("accept-encoding", "gzip".into()),
            ("if-none-match", gz.clone()),
        ])
        .await;
        assert_eq!(r.status, 304, "round {round}");
        assert_eq!(r.header("etag"), gz, "round {round}");
        assert!(r.body.is_empty());
        assert!(
            r.header("vary").contains("accept-encoding"),
            "round {round}"
        );

        let r = get(vec![
            ("accept-encoding", "br".into()),
            ("if-none-match", br.clone()),
        ])
        .await;
        assert_eq!(
            (r.status, r.header("etag")),
            (304, br.clone()),
            "round {round}"
        );

        // The identity ETag does not match the gzip representation.
        let r = get(vec![
            ("accept-encoding", "gzip".into()),
            ("if-none-match", id.clone()),
        ])
        .await;
        assert_eq!(r.status, 200, "round {round}");
        assert_eq!(r.header("content-encoding"), "gzip");
        assert_eq!(r.header("etag"), gz);
        assert_eq!(gunzip(&r.body), big.body);

        // Nor the gzip ETag the br one, nor the identity one.
        let r = get(vec![
            ("accept-encoding", "br".into()),
            ("if-none-match", gz.clone()),
        ])
        .await;
        assert_eq!((r.status, r.header("etag")), (200, br.clone()));
        assert_eq!(unbrotli(&r.body), big.body);
        let r = get(vec![("if-none-match", gz.clone())]).await;
        assert_eq!((r.status, r.header("etag")), (200, id.clone()));
        assert_eq!(r.body, big.body);
        let r = get(vec![("if-none-match", id.clone())]).await;
        assert_eq!((r.status, r.header("etag")), (304, id.clone()));

        // A list naming it matches too.
        let r = get(vec![
            ("accept-encoding", "gzip".into()),
            ("if-none-match", format!("{id}, {gz}")),
        ])
        .await;
        assert_eq!(r.status, 304, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn head_requests_answer_like_get_without_a_body() {
    let site = TiersSite::new();
    let big = identity_of(&site.root, BIG).await;
    let inner = etag_inner(&big.header("etag")).to_string();
    for (accept, encoding, suffix) in [
        (None, "", ""),
        (Some("gzip"), "gzip", "-gz"),
        (Some("br"), "br", "-br"),
    ] {
        let server = TestServer::start(&site.root, CacheMode::Incremental).await;
        let h = headers(accept);
        for round in 0..3 {
            let r = server.request(reqwest::Method::HEAD, BIG, &h).await;
            assert_eq!(r.status, 200, "{accept:?} round {round}");
            assert!(r.body.is_empty(), "{accept:?} round {round}");
            assert_eq!(r.header("content-encoding"), encoding, "{accept:?}");
            assert_eq!(
                r.header("etag"),
                format!("\"{inner}{suffix}\""),
                "{accept:?}"
            );
            assert!(r.header("vary").contains("accept-encoding"));
            let get = server.request(reqwest::Method::GET, BIG, &h).await;
            assert_eq!(decoded(&get), big.body);
            if let Some(len) = r.headers.get("content-length") {
                assert_eq!(
                    len.to_str().unwrap(),
                    get.body.len().to_string(),
                    "{accept:?}: HEAD's length is GET's"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn if_modified_since_against_last_modified() {
    let site = TiersSite::new();
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;
    let first = server.get(BIG).await;
    let lm = first.header("last-modified");
    let modified = httpdate::parse_http_date(&lm).expect("a Last-Modified date");
    let older = httpdate::fmt_http_date(modified - std::time::Duration::from_secs(86400));
    let newer = httpdate::fmt_http_date(modified + std::time::Duration::from_secs(86400));
    for round in 0..3 {
        for accept in [None, Some("gzip"), Some("br")] {
            let mut h = headers(accept);
            h.push(("if-modified-since", &lm));
            let r = server.request(reqwest::Method::GET, BIG, &h).await;
            assert_eq!(r.status, 304, "{accept:?} round {round}");
            assert!(r.body.is_empty());
            let mut h = headers(accept);
            h.push(("if-modified-since", &newer));
            let r = server.request(reqwest::Method::GET, BIG, &h).await;
            assert_eq!(r.status, 304, "{accept:?} round {round}");
            let mut h = headers(accept);
            h.push(("if-modified-since", &older));
            let r = server.request(reqwest::Method::GET, BIG, &h).await;
            assert_eq!(r.status, 200, "{accept:?} round {round}");
            assert_eq!(decoded(&r), first.body);
            assert_eq!(r.header("last-modified"), lm);
        }
        // If-None-Match wins over If-Modified-Since.
        let r = server
            .request(
                reqwest::Method::GET,
                BIG,
                &[("if-none-match", "\"other\""), ("if-modified-since", &lm)],
            )
            .await;
        assert_eq!(r.status, 200, "round {round}");
    }
    // An edit moves Last-Modified forward.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    site.write(
        "big.xml",
        &site.read("big.xml").replace("Big page<", "Big page 2<"),
    );
    let r = server
        .request(reqwest::Method::GET, BIG, &[("if-modified-since", &lm)])
        .await;
    assert_eq!(r.status, 200);
    assert!(r.text().contains("Big page 2"));
    let lm2 = httpdate::parse_http_date(&r.header("last-modified")).unwrap();
    assert!(lm2 > modified);
}

#[tokio::test(flavor = "multi_thread")]
async fn cache_control_comes_from_the_location_and_errors_say_no_store() {
    let site = TiersSite::new();
    let server = Axle::start(&site.root, false, &[]);
    for round in 0..3 {
        for accept in [None, Some("gzip"), Some("br")] {
            let h = headers(accept);
            let r = server.get("/cc/page.xml", &h).await;
            assert_eq!(r.status, 200);
            assert_eq!(
                r.header("cache-control"),
                "public, max-age=60",
                "{accept:?} round {round}"
            );
            let mut h = h.clone();
            let etag = r.header("etag");
            h.push(("if-none-match", &etag));
            let r = server.get("/cc/page.xml", &h).await;
            assert_eq!(r.status, 304, "{accept:?} round {round}");
            assert_eq!(r.header("cache-control"), "public, max-age=60");
            // Outside the location: none.
            let r = server.get(BIG, &headers(accept)).await;
            assert!(r.headers.get("cache-control").is_none(), "{:?}", r.headers);
        }
        let r = server
            .get("/broken.xml", &[("accept-encoding", "gzip")])
            .await;
        assert!(r.status >= 400, "{}", r.status);
        assert_eq!(r.header("cache-control"), "no-store", "round {round}");
        let r = server.get("/missing.xml", &[]).await;
        assert_eq!(r.status, 404);
        assert_eq!(r.header("cache-control"), "no-store", "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn etags_are_the_same_in_two_processes() {
    let site = TiersSite::new();
    let mut seen: Vec<Vec<(String, Vec<u8>)>> = Vec::new();
    for _ in 0..2 {
        let server = Axle::start(&site.root, false, &[]);
        let mut got = Vec::new();
        for accept in [None, Some("gzip"), Some("br")] {
            for page in [BIG, SMALL, "/cc/page.xml"] {
                let r = server.get(page, &headers(accept)).await;
                assert_eq!(r.status, 200);
                got.push((r.header("etag"), decoded(&r)));
            }
        }
        seen.push(got);
    }
    assert_eq!(seen[0], seen[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_cache_mode_gives_the_same_representations() {
    let site = TiersSite::new();
    let servers = [
        TestServer::start(&site.root, MODES[0]).await,
        TestServer::start(&site.root, MODES[1]).await,
        TestServer::start(&site.root, MODES[2]).await,
    ];
    for accept in [
        None,
        Some("gzip"),
        Some("br"),
        Some("gzip, br"),
        Some("gzip, identity;q=0"),
        Some("gzip;q=0"),
    ] {
        let h = headers(accept);
        for page in [BIG, SMALL, "/docs/a.xml", "/style.css"] {
            let want = servers[0].request(reqwest::Method::GET, page, &h).await;
            assert_eq!(want.status, 200, "{page}");
            for (server, mode) in servers.iter().zip(MODES) {
                for round in 0..2 {
                    let got = server.request(reqwest::Method::GET, page, &h).await;
                    let ctx = format!("{mode} {page} {accept:?} round {round}");
                    assert_eq!(got.body, want.body, "{ctx}");
                    assert_eq!(got.comparable_headers(), want.comparable_headers(), "{ctx}");
                }
            }
        }
    }
}
