//! `axle warm` against a running server: every document under the root,
//! then a second run that finds them all cached; a sitemap and a URL list;
//! a URL that fails is listed and makes the exit status non-zero.

use crate::tiers_support::{Axle, TiersSite};

fn warm(args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["warm"];
    all.extend_from_slice(args);
    crate::support::axle_output(&all)
}

#[tokio::test(flavor = "multi_thread")]
async fn warm_fills_the_cache_from_a_root_a_sitemap_and_a_list() {
    let site = TiersSite::new();
    // The broken page would fail: this root is warmed without it.
    std::fs::remove_file(site.root.join("broken.xml")).unwrap();
    let server = Axle::start(&site.root, false, &[]);
    let root = site.root.to_str().unwrap();
    let (ok, out, err) = warm(&["--server", &server.url, "--root", root]);
    assert!(ok, "{out}{err}");
    // big, small, docs/a, docs/b, other/c, cc/page: six documents.
    assert!(out.contains("6 URLs"), "{out}");
    assert!(out.contains("6 rendered now, 0 already cached"), "{out}");
    let (ok, out, _) = warm(&[
        "--server",
        &server.url,
        "--root",
        root,
        "--concurrency",
        "2",
    ]);
    assert!(ok);
    assert!(out.contains("0 rendered now, 6 already cached"), "{out}");
    assert_eq!(
        server.get("/docs/a.xml", &[]).await.header("x-axle-cache"),
        "hit"
    );

    // A sitemap and a list name pages by URL; a new page is rendered.
    site.write(
        "docs/new.xml",
        &site.read("docs/a.xml").replace("<title>", "<title>New "),
    );
    let sitemap = site.beside("in").join("sitemap.xml");
    std::fs::write(
        &sitemap,
        format!(
            "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>{0}/docs/new.xml</loc></url><url><loc>{0}/big.xml</loc></url></urlset>",
            server.url
        ),
    )
    .unwrap();
    let (ok, out, err) = warm(&[
        "--server",
        &server.url,
        "--sitemap",
        sitemap.to_str().unwrap(),
    ]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("1 rendered now, 1 already cached"), "{out}");

    let list = site.beside("in").join("urls.txt");
    std::fs::write(
        &list,
        "# two pages and a missing one\n/small.xml\n/missing.xml\n",
    )
    .unwrap();
    let (ok, out, err) = warm(&["--server", &server.url, "--urls", list.to_str().unwrap()]);
    assert!(!ok, "a missing page fails the run: {out}");
    assert!(
        err.contains("1 of 2 URLs failed") && err.contains("404 /missing.xml"),
        "{err}"
    );

    // No source named, an unreachable server: clear errors.
    let (ok, _, err) = warm(&["--server", &server.url]);
    assert!(
        !ok && err.contains("--sitemap FILE, --urls FILE or --root DIR"),
        "{err}"
    );
    let (ok, _, err) = warm(&[
        "--server",
        "http://127.0.0.1:9",
        "--urls",
        list.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("cannot connect"), "{err}");
}
