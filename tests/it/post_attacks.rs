//! Issue #36 rows 1–5: what a client can do with a posted document. Each
//! runs against a real `axle serve` child (a stack overflow would take the
//! test binary down with an in-process server), which must answer every
//! attack with a readable 400 and serve on.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::{TestSite, serve_child};

const SECRET: &str = "ESQL-DB-SECRET-6f2a";

/// A served copy of the fixture site with a `post` location (max-body 1
/// MiB), a second one that lets its documents choose embedded
/// stylesheets and XSP, a filter type, an XSP page, and a "database"
/// directory (`data/`) no request may read.
struct PostSite {
    site: TestSite,
    child: Child,
    url: String,
    client: reqwest::Client,
}

impl Drop for PostSite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PostSite {
    fn start() -> PostSite {
        let site = TestSite::new();
        site.write("data/guestbook.sql", &format!("-- {SECRET}\n"));
        site.write(
            "axle.toml",
            r#"
[location."/post"]
provider = { type = "post", max-body = "1MiB" }

[location."/open"]
provider = { type = "post", max-body = "1MiB" }
client-stages = ["xslt", "filter:application/x-shout"]

[filter."application/x-shout"]
argv = ["sh", "-c", "tr a-z A-Z"]

[esql.guest]
url = "sqlite:data/guestbook.sqlite"
"#,
        );
        site.write(
            "page.xml",
            "<?xml-stylesheet href=\".\" type=\"application/x-xsp\"?>\n<xsp:page xmlns:xsp=\"http://apache.org/xsp\"><p>XSP-RAN</p></xsp:page>",
        );
        let (child, url) = serve_child(
            &["--listen", "127.0.0.1:0", "--cache", "off"],
            &site.root,
            Stdio::null(),
        );
        PostSite {
            site,
            child,
            url,
            client: reqwest::Client::new(),
        }
    }

    async fn post(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, String, Duration) {
        let started = Instant::now();
        let r = self
            .client
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/xml")
            .body(body)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.text().await.unwrap(), started.elapsed())
    }

    /// The server still answers a page, and its process is alive.
    async fn serves_on(&mut self) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "the server process died"
        );
        let r = self
            .client
            .get(format!("{}/two.xml", self.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let (status, text, _) = self
            .post(
                "/post/ok.xml",
                "<?xml-stylesheet href=\"/s/identity.xsl\" type=\"text/xsl\"?><ok>fine</ok>",
            )
            .await;
        assert_eq!(status, 200, "{text}");
        assert!(text.contains("fine"), "{text}");
    }

    fn root(&self) -> &Path {
        &self.site.root
    }
}

fn nested(depth: usize) -> String {
    format!("{}{}", "<a>".repeat(depth), "</a>".repeat(depth))
}

#[tokio::test(flavor = "multi_thread")]
async fn row1_deep_nesting_is_400_naming_the_limit_and_the_server_serves_on() {
    let mut s = PostSite::start();
    for depth in [257, 3_500, 100_000] {
        let (status, text, _) = s.post("/post/deep.xml", nested(depth)).await;
        assert_eq!(status, 400, "{depth}: {text}");
        assert!(text.contains("max-post-depth"), "{depth}: {text}");
        s.serves_on().await;
    }
    // The limit's edge: 256 levels are a document.
    let (status, text, _) = s.post("/post/deep.xml", nested(256)).await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn row2_no_posted_document_reads_a_file() {
    let mut s = PostSite::start();
    assert!(s.root().join("data/guestbook.sql").exists());
    let outside = s.site.outside().join("secret.txt");
    for body in [
        // Two declarations: XML binds the first, libxml2 reads it.
        "<!DOCTYPE d [<!ENTITY s SYSTEM \"/data/guestbook.sql\"><!ENTITY s \"ok\">]><d>&s;</d>"
            .to_string(),
        "<!DOCTYPE d [<!ENTITY s \"ok\"><!ENTITY s SYSTEM \"/data/guestbook.sql\">]><d>&s;</d>"
            .to_string(),
        "<!DOCTYPE d [<!ENTITY s SYSTEM \"data/guestbook.sql\">]><d>&s;</d>".to_string(),
        "<!DOCTYPE d [<!ENTITY s SYSTEM \"../data/%67uestbook.sql\">]><d>&s;</d>".to_string(),
        format!(
            "<!DOCTYPE d [<!ENTITY s SYSTEM \"file://{}\">]><d>&s;</d>",
            outside.display()
        ),
        "<!DOCTYPE d [<!ENTITY % p SYSTEM \"/data/guestbook.sql\"> %p;]><d/>".to_string(),
        "<!DOCTYPE d [<!ENTITY % q \"<!ENTITY s SYSTEM '/data/guestbook.sql'>\"> %q;]><d>&s;</d>"
            .to_string(),
        "<!DOCTYPE d SYSTEM \"/data/guestbook.sql\"><d/>".to_string(),
        "<!DOCTYPE d PUBLIC \"-//A//B\" \"/data/guestbook.sql\"><d/>".to_string(),
    ] {
        let (status, text, _) = s.post("/post/x.xml", body.clone()).await;
        assert_eq!(status, 400, "{body}: {text}");
        assert!(!text.contains(SECRET), "{body}: {text}");
        assert!(!text.contains("TOP-SECRET"), "{body}: {text}");
        assert!(
            text.contains("external entity") || text.contains("external DTD"),
            "{body}: {text}"
        );
    }
    s.serves_on().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn row3_entity_amplification_is_refused_at_once() {
    let mut s = PostSite::start();
    let big = "x".repeat(100_000);
    for refs in [800, 2_000] {
        let body = format!(
            "<!DOCTYPE d [<!ENTITY s \"{big}\">]><d>{}</d>",
            "&s;".repeat(refs)
        );
        let (status, text, took) = s.post("/post/x.xml", body).await;
        assert_eq!(status, 400, "{refs}: {text}");
        assert!(text.contains("max-post-amplification"), "{text}");
        assert!(took < Duration::from_secs(3), "{refs}: {took:?}");
    }
    s.serves_on().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn row4_many_attributes_are_refused_well_under_a_second() {
    let mut s = PostSite::start();
    let attrs: String = (0..80_000).map(|i| format!(" a{i}=\"\"")).collect();
    let body = format!("<r{attrs}/>");
    assert!(body.len() < 1 << 20);
    let (status, text, took) = s.post("/post/x.xml", body).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("max-post-attributes"), "{text}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // The edge: 256 attributes are fine, 257 are not.
    let at = |n: usize| {
        let attrs: String = (0..n).map(|i| format!(" a{i}=\"\"")).collect();
        format!("<?xml-stylesheet href=\"/s/identity.xsl\" type=\"text/xsl\"?><r{attrs}/>")
    };
    assert_eq!(s.post("/post/x.xml", at(256)).await.0, 200);
    assert_eq!(s.post("/post/x.xml", at(257)).await.0, 400);
    s.serves_on().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn row5_a_posted_document_never_chooses_what_runs() {
    let mut s = PostSite::start();
    let embedded = std::fs::read_to_string(s.root().join("embedded.xml")).unwrap();
    let refused = [
        ("embedded", embedded.clone()),
        (
            "a filter",
            "<?xml-stylesheet href=\"x\" type=\"application/x-shout\"?><a>quiet</a>".to_string(),
        ),
        (
            "an XSP page",
            "<?xml-stylesheet href=\"/page.xml\" type=\"application/x-xsp\"?><a/>".to_string(),
        ),
        (
            "itself as XSP",
            "<?xml-stylesheet href=\".\" type=\"application/x-xsp\"?><xsp:page xmlns:xsp=\"http://apache.org/xsp\"><p>XSP-RAN</p></xsp:page>".to_string(),
        ),
    ];
    for (what, body) in &refused {
        let (status, text, _) = s.post("/post/x.xml", body.clone()).await;
        assert_eq!(status, 400, "{what}: {text}");
        assert!(
            text.contains("may not choose") || text.contains("may name only"),
            "{what}: {text}"
        );
        assert!(!text.contains("embedded: hello"), "{what}: {text}");
        assert!(!text.contains("QUIET"), "{what}: {text}");
        assert!(!text.contains("XSP-RAN"), "{what}: {text}");
    }
    // A stylesheet file under the root is the client's to name.
    let (status, text, _) = s
        .post(
            "/post/x.xml",
            "<?xml-stylesheet href=\"/s/identity.xsl\" type=\"text/xsl\"?><a>mine</a>",
        )
        .await;
    assert_eq!(status, 200, "{text}");
    // Where the location says so, the same documents run; an embedded
    // stylesheet never does.
    let (status, text, _) = s.post("/open/x.xml", embedded).await;
    assert_eq!(status, 400, "{text}");
    let (status, text, _) = s
        .post(
            "/open/x.xml",
            "<?xml-stylesheet href=\"/s/identity.xsl\" type=\"application/x-shout\"?><a>quiet</a>",
        )
        .await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("QUIET"), "{text}");
    s.serves_on().await;
}
