//! Issue #36 row 6 and row 8 (program files): what the configuration makes
//! private (an `esql` database directory, a `private = true` location,
//! is refused by the loader for every kind of read (the request URL, an
//! external entity, `document()`, an XInclude, a stylesheet href,
//! passthru), under every spelling, as `axle.toml` is; the programs a
//! `command` provider or a filter runs are never served (nor passthru)
//! unless a location says `serve-programs`; the set follows the file on
//! SIGHUP.

use std::path::{Path, PathBuf};

use axle::CacheMode;

use crate::support::{MODES, TestServer};

const CONFIG: &str = r#"
[esql.book]
url = "sqlite:db/book.sqlite"

[location."/internal"]
private = true

[location."/live"]
provider = { type = "command", argv = ["sh", "programs/run.sh"], cache = "none" }

[filter."application/x-up"]
argv = ["sh", "programs/up.sh"]
"#;

/// A root with a private file in each kind of private place, pages that
/// try to read each through every kind of load, and a public control.
fn site(config: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("axle.toml", config);
    write("db/secret.xml", "<s>DB-SECRET</s>");
    write("internal/secret.xml", "<s>INTERNAL-SECRET</s>");
    write("programs/run.sh", "echo '<p>PROGRAM-SECRET</p>'\n");
    write("programs/up.sh", "tr a-z A-Z\n");
    write("public/open.xml", "<s>PUBLIC-OK</s>");
    write(
        "s/copy.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text"/>
<xsl:template match="/">[<xsl:value-of select="."/>]<xsl:for-each select="//load"><xsl:value-of select="document(@href)"/>|</xsl:for-each></xsl:template>
</xsl:stylesheet>"#,
    );
    // Every spelling of each private file, through document().
    let hrefs = [
        "/db/secret.xml",
        "/d%62/secret.xml",
        "file:///db/secret.xml",
        "/alias/secret.xml",
        "/internal/secret.xml",
        "/internal/./secret.xml",
        "/linked-secret.xml",
        "/public/open.xml",
    ];
    let loads: String = hrefs
        .iter()
        .map(|h| format!("<load href=\"{h}\"/>"))
        .collect();
    write(
        "loads.xml",
        &format!("<?xml-stylesheet href=\"/s/copy.xsl\" type=\"text/xsl\"?>\n<doc>{loads}</doc>"),
    );
    // Entities and an XInclude.
    write(
        "entity.xml",
        "<?xml-stylesheet href=\"/s/copy.xsl\" type=\"text/xsl\"?>\n\
         <!DOCTYPE doc [<!ENTITY a SYSTEM \"db/secret.xml\"><!ENTITY b SYSTEM \"internal/secret.xml\"><!ENTITY c SYSTEM \"public/open.xml\">]>\n\
         <doc>&a;&b;&c;</doc>",
    );
    write(
        "include.xml",
        "<?xml-stylesheet href=\"/s/copy.xsl\" type=\"text/xsl\"?>\n\
         <doc xmlns:xi=\"http://www.w3.org/2001/XInclude\"><xi:include href=\"db/secret.xml\"><xi:fallback>NO-DB</xi:fallback></xi:include><xi:include href=\"public/open.xml\"/></doc>",
    );
    // A stylesheet href into the private directory.
    write(
        "internal/steal.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"><xsl:template match="/">STYLESHEET-SECRET</xsl:template></xsl:stylesheet>"#,
    );
    write(
        "styled.xml",
        "<?xml-stylesheet href=\"/internal/steal.xsl\" type=\"text/xsl\"?>\n<doc/>",
    );
    std::os::unix::fs::symlink("db", root.join("alias")).unwrap();
    std::os::unix::fs::symlink("db/secret.xml", root.join("linked-secret.xml")).unwrap();
    let root = root.canonicalize().unwrap();
    (dir, root)
}

async fn start(root: &Path, mode: CacheMode) -> TestServer {
    let registry = axle::Registry::default();
    let site =
        axle::site::SiteConfig::load_in(&root.join("axle.toml"), registry.clone(), root).unwrap();
    let mut config = axle::ServeConfig::new(root);
    config.cache_mode = mode;
    TestServer::start_full(config, registry, site).await
}

const SECRETS: [&str; 4] = [
    "DB-SECRET",
    "INTERNAL-SECRET",
    "PROGRAM-SECRET",
    "STYLESHEET-SECRET",
];

fn assert_no_secret(body: &str, what: &str) {
    for secret in SECRETS {
        assert!(!body.contains(secret), "{what}: {secret} in {body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn private_files_are_never_served_under_any_spelling() {
    let (_dir, root) = site(CONFIG);
    let server = start(&root, CacheMode::All).await;
    for path in [
        "/db/secret.xml",
        "/d%62/secret.xml",
        "//db/./secret.xml",
        "/alias/secret.xml",
        "/linked-secret.xml",
        "/internal/secret.xml",
        "/internal/",
        "/internal/secret.xml?passthru=1",
        "/programs/run.sh",
        "/programs/up.sh",
        "/programs/run.sh?passthru=1",
        "/db/secret.xml?passthru=1",
    ] {
        let r = server.get(path).await;
        assert_eq!(r.status, 404, "{path}: {}", r.text());
        assert_no_secret(&r.text(), path);
    }
    let r = server.get("/public/open.xml?passthru=1").await;
    assert_eq!(r.status, 200, "the control is served");
    assert!(r.text().contains("PUBLIC-OK"));
}

#[tokio::test(flavor = "multi_thread")]
async fn no_load_reads_a_private_file() {
    let (_dir, root) = site(CONFIG);
    for mode in MODES {
        let server = start(&root, mode).await;
        let r = server.get("/loads.xml").await;
        assert_eq!(r.status, 200, "{mode}: {}", r.text());
        let body = r.text();
        assert_no_secret(&body, "document()");
        assert!(body.contains("PUBLIC-OK"), "{mode}: the control: {body}");

        let r = server.get("/entity.xml").await;
        let body = r.text();
        assert_no_secret(&body, "an entity");
        if r.status == 200 {
            assert!(body.contains("PUBLIC-OK"), "{mode}: {body}");
        }

        let r = server.get("/include.xml").await;
        let body = r.text();
        assert_no_secret(&body, "an XInclude");

        let r = server.get("/styled.xml").await;
        assert_ne!(r.status, 200, "{mode}: a private stylesheet ran");
        assert_no_secret(&r.text(), "a stylesheet href");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn include_with_xinclude_on_never_reads_a_private_file() {
    let config = format!("{CONFIG}\n[location.\"/\"]\nxinclude = true\n");
    let (_dir, root) = site(&config);
    let server = start(&root, CacheMode::Off).await;
    let r = server.get("/include.xml").await;
    let body = r.text();
    assert_no_secret(&body, "an XInclude");
    assert!(
        body.contains("NO-DB"),
        "the fallback ran: {} {body}",
        r.status
    );
    assert!(body.contains("PUBLIC-OK"), "{body}");
}

/// `serve-programs = true` is the one way to serve a program file.
#[tokio::test(flavor = "multi_thread")]
async fn a_location_may_serve_its_program_files() {
    let config = format!("{CONFIG}\n[location.\"/programs\"]\nserve-programs = true\n");
    let (_dir, root) = site(&config);
    let server = start(&root, CacheMode::All).await;
    let r = server.get("/programs/run.sh").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("PROGRAM-SECRET"));
    // The program still runs.
    let r = server.get("/live").await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn private_is_validated_at_load() {
    for (config, says) in [
        (
            "[location.\"/x\"]\nprivate = false\n",
            "true is the only value",
        ),
        ("[location.\"/\"]\nprivate = true\n", "whole root"),
        (
            "[location.\"/x\"]\nprivate = true\nprovider = { type = \"post\" }\n",
            "no provider",
        ),
    ] {
        let err = axle::site::SiteConfig::parse(
            config,
            Path::new("axle.toml"),
            axle::Registry::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains(says), "{config}: {err}");
        assert!(err.to_string().contains("private"), "{err}");
    }
}

/// SIGHUP's reload puts the new file's private set in force with it.
#[tokio::test(flavor = "multi_thread")]
async fn the_private_set_follows_a_reload() {
    let (_dir, root) = site(CONFIG);
    let server = start(&root, CacheMode::All).await;
    assert_eq!(server.get("/public/open.xml").await.status, 200);
    std::fs::write(
        root.join("axle.toml"),
        format!("{CONFIG}\n[location.\"/public\"]\nprivate = true\n"),
    )
    .unwrap();
    server.app.reload().unwrap();
    assert_eq!(server.get("/public/open.xml").await.status, 404);
    let body = server.get("/loads.xml").await.text();
    assert!(!body.contains("PUBLIC-OK"), "{body}");
    // And back.
    std::fs::write(root.join("axle.toml"), CONFIG).unwrap();
    server.app.reload().unwrap();
    assert_eq!(server.get("/public/open.xml").await.status, 200);
}

/// The esql database directory alone (a configuration today's keys
/// accept): refused to `document()`, entities and XInclude alike.
#[tokio::test(flavor = "multi_thread")]
async fn the_esql_directory_is_refused_to_every_load() {
    let (_dir, root) = site("[esql.book]\nurl = \"sqlite:db/book.sqlite\"\n");
    for mode in MODES {
        let server = start(&root, mode).await;
        for page in ["/loads.xml", "/entity.xml", "/include.xml"] {
            let r = server.get(page).await;
            assert!(
                !r.text().contains("DB-SECRET"),
                "{mode} {page}: {}",
                r.text()
            );
        }
        for path in ["/db/secret.xml", "/alias/secret.xml", "/linked-secret.xml"] {
            assert_eq!(server.get(path).await.status, 404, "{path}");
        }
    }
}

/// `axle render` reads through the same private set as `serve`, whatever
/// the spelling of `--root`.
#[test]
fn render_never_reads_a_private_file() {
    let (dir, root) = site(CONFIG);
    std::os::unix::fs::symlink(&root, dir.path().join("link")).unwrap();
    for spelling in ["root", "./root/", "link"] {
        let out = crate::support::axle()
            .current_dir(dir.path())
            .args(["render", "--root", spelling])
            .arg(root.join("loads.xml"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{spelling}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_no_secret(&stdout, spelling);
        assert!(stdout.contains("PUBLIC-OK"), "{spelling}: {stdout}");
        let out = crate::support::axle()
            .current_dir(dir.path())
            .args(["render", "--root", spelling])
            .arg(root.join("internal/secret.xml"))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{spelling}: a private file rendered");
        assert_no_secret(&String::from_utf8_lossy(&out.stdout), spelling);
    }
}

/// `axle check` names a configured stylesheet that is private.
#[test]
fn check_names_a_private_stylesheet() {
    let config = format!(
        "{CONFIG}\n[[location.\"/public\".processor]]\ntype = \"text/xsl\"\nhref = \"/internal/steal.xsl\"\n"
    );
    let (_dir, root) = site(&config);
    let site =
        axle::site::SiteConfig::load_in(&root.join("axle.toml"), axle::Registry::default(), &root)
            .unwrap();
    let problems = site.check_references(&root);
    assert!(
        problems
            .iter()
            .any(|p| p.message.contains("/internal/steal.xsl is a private file")),
        "{problems:?}"
    );
}
