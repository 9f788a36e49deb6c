//! Compression at its edges: `max-compress-size` (a body of exactly the
//! limit is compressed, one byte more is not), a large page whose first
//! variant is made on the blocking pool (both paths decode to the same
//! bytes), and static files (a compressible file's variant with its own
//! ETag and 304; a small one, an image and a `Range` request left alone).

use crate::tiers_support::{Axle, TiersSite, decoded};

/// A page of `paras` paragraphs under the fixture's stylesheet.
fn page(paras: usize) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"/s/page.xsl\" type=\"text/xsl\"?>\n<page><title>Long</title>\n",
    );
    for i in 0..paras {
        s.push_str(&format!(
            "<para>Paragraph {i}: the quick brown fox jumps over the lazy dog, again and again.</para>\n"
        ));
    }
    s.push_str("</page>\n");
    s
}

#[tokio::test(flavor = "multi_thread")]
async fn max_compress_size_is_inclusive_at_its_edge() {
    let site = TiersSite::new();
    let plain = Axle::start(&site.root, false, &[]);
    let identity = plain.get("/big.xml", &[]).await;
    assert_eq!(identity.status, 200);
    let len = identity.body.len();
    assert!(len > 1024, "{len}");
    for (limit, encoded) in [(len, true), (len - 1, false)] {
        let limit = limit.to_string();
        let server = Axle::start(&site.root, false, &["--max-compress-size", &limit]);
        for round in 0..2 {
            let r = server.get("/big.xml", &[("accept-encoding", "gzip")]).await;
            assert_eq!(r.status, 200);
            let got = r.header("content-encoding");
            assert_eq!(
                got,
                if encoded { "gzip" } else { "" },
                "limit {limit}, body {len}, round {round}"
            );
            assert_eq!(decoded(&r), identity.body, "limit {limit} round {round}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_page_is_compressed_once_and_served_on_both_paths() {
    let site = TiersSite::new();
    site.write("long.xml", &page(3000));
    let server = Axle::start(&site.root, true, &[]);
    let identity = server.get("/long.xml", &[]).await;
    assert!(identity.body.len() > 128 << 10, "{}", identity.body.len());
    for accept in ["br", "gzip"] {
        for round in 0..3 {
            let r = server
                .get("/long.xml", &[("accept-encoding", accept)])
                .await;
            assert_eq!(r.status, 200);
            assert_eq!(r.header("content-encoding"), accept, "round {round}");
            assert!(r.body.len() < identity.body.len() / 4, "{}", r.body.len());
            assert_eq!(decoded(&r), identity.body, "{accept} round {round}");
        }
    }
    let stats = server.stats().await;
    assert_eq!(stats["compressed"]["gzip"], 1, "{stats}");
    assert_eq!(stats["compressed"]["br"], 1, "{stats}");
    assert_eq!(stats["compressed"]["served"], 6, "{stats}");
}

#[tokio::test(flavor = "multi_thread")]
async fn static_files_get_their_own_variants() {
    let site = TiersSite::new();
    let css: String = (0..200)
        .map(|i| format!(".rule-{i} {{ color: #{:06x}; margin: {i}px; }}\n", i * 4099))
        .collect();
    site.write("big.css", &css);
    site.write("tiny.css", "p { color: red }\n");
    std::fs::write(site.root.join("pic.png"), vec![7u8; 4096]).unwrap();
    let server = Axle::start(&site.root, false, &[]);
    let plain = server.get("/big.css", &[]).await;
    assert_eq!(plain.status, 200);
    assert_eq!(plain.body, css.as_bytes());
    assert!(plain.headers.get("content-encoding").is_none());
    assert_eq!(plain.header("vary"), "accept-encoding");
    let mut etags = Vec::new();
    for accept in ["gzip", "br"] {
        for round in 0..2 {
            let r = server.get("/big.css", &[("accept-encoding", accept)]).await;
            assert_eq!(r.status, 200);
            assert_eq!(r.header("content-encoding"), accept, "round {round}");
            assert_eq!(r.header("vary"), "accept-encoding");
            assert_eq!(decoded(&r), css.as_bytes(), "{accept} round {round}");
            assert!(r.header("content-type").starts_with("text/css"));
            let etag = r.header("etag");
            let suffix = if accept == "gzip" { "-gz\"" } else { "-br\"" };
            assert!(etag.ends_with(suffix), "{etag}");
            // 304 for that encoding's ETag.
            let again = server
                .get(
                    "/big.css",
                    &[("accept-encoding", accept), ("if-none-match", &etag)],
                )
                .await;
            assert_eq!(again.status, 304, "{accept}");
            assert_eq!(again.header("etag"), etag);
            etags.push(etag);
        }
    }
    assert_ne!(etags[0], etags[2]);
    // A Range request gets the identity bytes it names.
    let ranged = server
        .get(
            "/big.css",
            &[("accept-encoding", "gzip"), ("range", "bytes=0-9")],
        )
        .await;
    assert_eq!(ranged.status, 206);
    assert!(ranged.headers.get("content-encoding").is_none());
    assert_eq!(ranged.body, &css.as_bytes()[..10]);
    // Too small, and not a compressible type: as they are.
    for path in ["/tiny.css", "/pic.png"] {
        let r = server.get(path, &[("accept-encoding", "gzip, br")]).await;
        assert_eq!(r.status, 200, "{path}");
        assert!(r.headers.get("content-encoding").is_none(), "{path}");
    }
    // An edit is a new variant, never the old one.
    let edited = css.replace("color", "colour");
    site.write("big.css", &edited);
    let r = server.get("/big.css", &[("accept-encoding", "gzip")]).await;
    assert_eq!(decoded(&r), edited.as_bytes());
}
