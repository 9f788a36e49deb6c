//! The `esql` taglib over SQLite (in-process): queries and updates, the
//! injection matrix (a request value is only ever a bound parameter), the
//! row limit at its edge, the timeout, database errors kept off the page
//! unless `debug-errors`, compile errors naming the tag, and the
//! database's directory never served.

use std::path::PathBuf;

use reqwest::Method;

use crate::support::{Resp, TestServer};
use crate::xsp::{texts, urlencode};

const CONFIG: &str = r#"
[esql.book]
url = "sqlite:db/book.sqlite"
init = "db/schema.sql"

[esql.small]
url = "sqlite:db/book.sqlite"
max-rows = 3
timeout = "300ms"

[location."/esql/debug"]
debug-errors = true
"#;

/// A copy of `tests/fixtures/xsp` with `CONFIG` as its axle.toml, and a
/// `debug-errors` location holding a copy of `esql/broken.xml`.
async fn server() -> (tempfile::TempDir, PathBuf, TestServer) {
    let (dir, root, server) = crate::xsp::configured(CONFIG, axle::CacheMode::Incremental).await;
    std::fs::create_dir_all(root.join("esql/debug")).unwrap();
    std::fs::copy(
        root.join("esql/broken.xml"),
        root.join("esql/debug/broken.xml"),
    )
    .unwrap();
    (dir, root, server)
}

async fn post(server: &TestServer, path: &str, form: &[(&str, &str)]) -> Resp {
    let r = reqwest::Client::new()
        .post(server.url(path))
        .form(form)
        .send()
        .await
        .unwrap();
    Resp::of(r).await
}

async fn get(server: &TestServer, path: &str) -> Resp {
    server.request(Method::GET, path, &[]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn queries_and_updates_run_with_bound_parameters() {
    let (_dir, _root, server) = server().await;
    let r = get(&server, "/esql/book.xml").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(texts(&r, "name"), ["first"]);
    assert_eq!(texts(&r, "message"), ["hello"]);
    assert_eq!(texts(&r, "pos"), ["1"]);
    assert!(texts(&r, "inserted").is_empty(), "a GET inserts nothing");

    let r = post(
        &server,
        "/esql/book.xml",
        &[("name", "second"), ("message", "hi")],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(texts(&r, "inserted"), ["1"]);
    assert_eq!(texts(&r, "name"), ["first", "second"]);
    assert_eq!(texts(&r, "pos"), ["1", "2"]);

    let r = get(&server, "/esql/find.xml?q=second&since=1").await;
    assert_eq!(texts(&r, "count"), ["1"]);
    assert_eq!(texts(&r, "since"), ["1"]);
}

/// Hostile values go in as data and come back byte for byte; none changes
/// what SQL runs, none matches what it does not equal.
#[tokio::test(flavor = "multi_thread")]
async fn the_injection_matrix_never_reaches_the_sql() {
    let (_dir, _root, server) = server().await;
    let hostile = [
        "'; DROP TABLE entries; --",
        "' OR '1'='1",
        "\" OR \"\"=\"",
        "1); DELETE FROM entries; --",
        "Robert'); DROP TABLE Students;--",
        "'||(SELECT message FROM entries LIMIT 1)||'",
        "?1 ?2 $1 :name @x",
        "<script>alert(1)</script> & ]]> <![CDATA[x]]>",
        "%27 %00 \\ \\' \\\"",
        "ünïcødé ✓ 🚀",
        "a\tb\nc\r\nd",
        "{$path} {concat('a','b')} $params",
        "') UNION SELECT sql FROM sqlite_master --",
    ];
    // Before any is stored: nothing equals them.
    for value in hostile {
        let r = server
            .request(
                Method::GET,
                &format!("/esql/find.xml?q={}", urlencode(value)),
                &[],
            )
            .await;
        assert_eq!(r.status, 200, "{value:?}: {}", r.text());
        assert_eq!(texts(&r, "count"), ["0"], "{value:?}");
    }
    for (i, value) in hostile.iter().enumerate() {
        let r = post(
            &server,
            "/esql/book.xml",
            &[("name", value), ("message", value)],
        )
        .await;
        assert_eq!(r.status, 200, "{value:?}: {}", r.text());
        assert_eq!(texts(&r, "inserted"), ["1"], "{value:?}");
        let names = texts(&r, "name");
        assert_eq!(names.len(), i + 2, "one row more per insert: {names:?}");
        assert_eq!(names.last().map(String::as_str), Some(*value));
        assert_eq!(
            texts(&r, "message").last().map(String::as_str),
            Some(*value)
        );
        let r = get(&server, &format!("/esql/find.xml?q={}", urlencode(value))).await;
        assert_eq!(texts(&r, "count"), ["1"], "{value:?}: {}", r.text());
        assert_eq!(texts(&r, "name"), [*value]);
    }
    let r = get(&server, "/esql/book.xml").await;
    assert_eq!(
        texts(&r, "name").len(),
        hostile.len() + 1,
        "nothing dropped or deleted"
    );
    // A request value never becomes a number where an int is declared.
    let r = get(&server, "/esql/find.xml?q=x&since=1%20OR%201%3D1").await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        r.text().contains("parameter 1 is not an integer"),
        "{}",
        r.text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_row_limit_holds_at_its_edge_and_a_slow_query_is_stopped() {
    let (_dir, _root, server) = server().await;
    for (n, rows) in [(1, 1), (3, 3), (4, 3), (100_000, 3)] {
        let r = get(&server, &format!("/esql/rows.xml?n={n}")).await;
        assert_eq!(r.status, 200, "{n}: {}", r.text());
        assert_eq!(texts(&r, "n"), [rows.to_string()], "{n}");
        assert_eq!(texts(&r, "x").len(), rows, "{n}");
    }
    let started = std::time::Instant::now();
    let r = get(&server, "/esql/slow.xml").await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("ran past its timeout"), "{}", r.text());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(get(&server, "/esql/book.xml").await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn database_errors_stay_in_the_log_unless_the_location_allows_them() {
    let (_dir, _root, server) = server().await;
    let r = get(&server, "/esql/broken.xml").await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        r.text()
            .contains("the query on book failed (the database refused it)"),
        "{}",
        r.text()
    );
    assert!(r.text().contains("broken.xml, line 5"), "{}", r.text());
    assert!(!r.text().contains("no_such_table"), "{}", r.text());
    let r = get(&server, "/esql/debug/broken.xml").await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("no such table"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_that_misuse_esql_do_not_compile_and_name_the_tag() {
    let (_dir, _root, server) = server().await;
    for (path, expected) in [
        (
            "/esql/badpool.xml",
            "line 5, &lt;esql:execute-query&gt;: no esql connection named `nope`",
        ),
        (
            "/esql/sqltext.xml",
            "line 6, &lt;xsp-request:get-parameter&gt;: esql:query holds SQL text and esql:parameter only",
        ),
    ] {
        let r = get(&server, path).await;
        assert_eq!(r.status, 500, "{path}: {}", r.text());
        assert!(r.text().contains(expected), "{path}: {}", r.text());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_database_directory_is_never_served() {
    let (_dir, root, server) = server().await;
    // The database exists once a page has used it.
    assert_eq!(get(&server, "/esql/book.xml").await.status, 200);
    assert!(root.join("db/book.sqlite").is_file());
    for path in [
        "/db/book.sqlite",
        "/db/schema.sql",
        "/db/",
        "/db",
        "/%64b/book.sqlite",
    ] {
        let r = get(&server, path).await;
        assert_eq!(r.status, 404, "{path}: {}", r.text());
    }
}
