//! The HTTP surface: chains, Content-Type from xsl:output, static files,
//! ETag/304, HEAD, directories, params.

use crate::support::{MODES, TestServer, TestSite};
use axle::CacheMode;

/// Expected bodies are what `xsltproc` gives for the same chain piped by hand
/// (`xsltproc s/content.xsl two.xml | xsltproc s/layout.xsl -`).
#[tokio::test(flavor = "multi_thread")]
async fn chains_of_one_two_and_three_stages_render() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;

    let one = server.get("/one.xml").await;
    assert_eq!(one.status, 200);
    assert_eq!(
        one.text(),
        "<html><body>\n<h1>ONE STAGE</h1>\n<p>for nobody</p>\n</body></html>\n"
    );

    let two = server.get("/two.xml").await;
    assert_eq!(two.status, 200);
    assert_eq!(
        two.text(),
        "<!DOCTYPE html>\n<html>\n<head>\n\
         <meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\">\n\
         <title>Two stages</title>\n</head>\n<body>\n<h1>Two stages</h1>\n\
         <p>First <i>para</i>.</p>\n<p>Second.</p>\n<footer>base v1</footer>\n</body>\n</html>\n"
    );

    let three = server.get("/three.xml").await;
    assert_eq!(three.status, 200);
    assert_eq!(
        three.text(),
        "<html><body><p class=\"yes\">kept</p></body></html>\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn content_type_follows_the_last_stylesheets_output() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::All).await;

    let html = server.get("/one.xml").await;
    assert_eq!(html.header("content-type"), "text/html; charset=UTF-8");

    let text = server.get("/text.xml").await;
    assert_eq!(text.header("content-type"), "text/plain; charset=UTF-8");
    assert_eq!(text.text(), "alpha\nbeta\n");

    let latin1 = server.get("/latin1.xml").await;
    assert_eq!(
        latin1.header("content-type"),
        "text/xml; charset=ISO-8859-1"
    );
    let mut expected = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<out>caf".to_vec();
    expected.extend_from_slice(&[0xE9]);
    expected.extend_from_slice(b" &#8364; ");
    expected.extend_from_slice(&[0xFC]);
    expected.extend_from_slice(b"</out>\n");
    assert_eq!(latin1.body, expected, "bytes stay in the output encoding");

    let atom = server.get("/atom.xml").await;
    assert_eq!(
        atom.header("content-type"),
        "application/atom+xml; charset=UTF-8"
    );
    assert!(atom.text().starts_with("<?xml version=\"1.0\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n  <title>news</title>"), "{}", atom.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_document_without_a_chain_is_served_as_text_xml() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let r = server.get("/plain.xml").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), "text/xml");
        assert_eq!(r.text(), site.read("plain.xml"));
        assert_eq!(r.cache(), "none");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn static_files_are_served_with_their_type() {
    let site = TestSite::new();
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;
    let css = server.get("/style.css").await;
    assert_eq!(css.status, 200);
    assert_eq!(css.header("content-type"), "text/css");
    assert_eq!(css.text(), site.read("style.css"));
    let xsl = server.get("/s/upper.xsl").await;
    assert_eq!(xsl.status, 200, "stylesheets are files too");
    assert_eq!(server.get("/nope.css").await.status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn etag_and_if_none_match_give_304_in_every_mode() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let first = server.get("/two.xml").await;
        let etag = first.header("etag");
        assert!(etag.starts_with('"') && etag.len() == 34, "{etag}");
        let again = server
            .request(
                reqwest::Method::GET,
                "/two.xml",
                &[("if-none-match", &etag)],
            )
            .await;
        assert_eq!(again.status, 304, "{mode}");
        assert!(again.body.is_empty());
        assert_eq!(again.header("etag"), etag);
        // RFC 9110's weak comparison: the weak form of the same tag matches
        // (a proxy that compresses a body weakens its ETag), among others.
        for weak in [format!("W/{etag}"), format!("W/\"other\", W/{etag}")] {
            let again = server
                .request(
                    reqwest::Method::GET,
                    "/two.xml",
                    &[("if-none-match", &weak)],
                )
                .await;
            assert_eq!(again.status, 304, "{mode} {weak}");
        }
        let other = server
            .request(
                reqwest::Method::GET,
                "/two.xml",
                &[("if-none-match", "\"other\", W/\"other\"")],
            )
            .await;
        assert_eq!(other.status, 200);
        assert_eq!(other.body, first.body);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn head_has_the_headers_of_get_and_no_body() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let get = server.get("/two.xml").await;
        let head = server.request(reqwest::Method::HEAD, "/two.xml", &[]).await;
        assert_eq!(head.status, 200);
        assert!(head.body.is_empty());
        assert_eq!(head.header("content-length"), get.body.len().to_string());
        assert_eq!(head.header("etag"), get.header("etag"));
        assert_eq!(head.header("content-type"), get.header("content-type"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn directories_redirect_to_the_slash_and_serve_index_xml() {
    let site = TestSite::new();
    site.write(
        "dir/index.xml",
        "<?xml-stylesheet href=\"/s/upper.xsl\" type=\"text/xsl\"?><doc><title>index</title></doc>",
    );
    let server = TestServer::start(&site.root, CacheMode::Incremental).await;
    let redirect = server.get("/dir").await;
    assert_eq!(redirect.status, 308);
    assert_eq!(redirect.header("location"), "/dir/");
    let index = server.get("/dir/").await;
    assert_eq!(index.status, 200);
    assert!(index.text().contains("<h1>INDEX</h1>"));
    assert_eq!(
        server.get("/s/").await.status,
        404,
        "a directory without index.xml"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn query_params_reach_the_stylesheet_and_vary_the_response() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let a = server.get("/one.xml?who=alice").await;
        assert!(a.text().contains("<p>for alice</p>"), "{}", a.text());
        let b = server.get("/one.xml?who=bob;x=1").await;
        assert!(b.text().contains("<p>for bob</p>"));
        let quotes = server.get("/one.xml?who=it%27s%20%22q%22").await;
        assert!(
            quotes.text().contains("<p>for it's \"q\"</p>"),
            "{}",
            quotes.text()
        );
        let again = server.get("/one.xml?who=alice").await;
        assert_eq!(again.body, a.body);
        if mode != CacheMode::Off {
            assert_eq!(again.cache(), "hit", "{mode}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_embedded_stylesheet_is_found_by_its_id_and_tracks_edits() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let r = server.get("/embedded.xml").await;
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "embedded: hello"),
            "{mode}"
        );
        crate::support::tick().await;
        site.write(
            "embedded.xml",
            &site.read("embedded.xml").replace("embedded: ", "inline: "),
        );
        assert_eq!(
            server.get("/embedded.xml").await.text(),
            "inline: hello",
            "{mode}"
        );
        site.write(
            "embedded.xml",
            &site.read("embedded.xml").replace("inline: ", "embedded: "),
        );
        crate::support::tick().await;
    }
    site.write(
        "noid.xml",
        "<?xml-stylesheet href=\"#nope\" type=\"text/xsl\"?><doc/>",
    );
    let server = TestServer::start(&site.root, CacheMode::Off).await;
    let r = server.get("/noid.xml").await;
    assert_eq!(r.status, 500);
    assert!(r.text().contains("no stylesheet with ID"), "{}", r.text());
}
