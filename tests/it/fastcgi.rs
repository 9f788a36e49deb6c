//! The `fastcgi` source and FastCGI filters over HTTP (issue #38), against
//! real php-cgi: workers Axle spawns (answering, crashed and restarted,
//! recycled after max-requests, timed out and replaced), a FastCGI server
//! the test starts (`php-cgi -b`), POST bodies, `Status:` and
//! `Content-Type:` honoured, 502 for a fatal error or a non-XML answer,
//! the filter path, and the three cache modes giving the same bytes.
//! Without php-cgi the tests are skipped loudly (a failure under
//! `CI=true`: `.ci/run` installs it).

use std::process::{Command, Stdio};

use axle::CacheMode;

use crate::sources::server;
use crate::support::{TestServer, TestSite};

/// Is php-cgi installed? (A failure under CI, where it must be.)
fn php_cgi() -> bool {
    let found = Command::new("php-cgi")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "php-cgi is not installed, and CI=true: .ci/run installs it"
        );
        eprintln!("SKIPPED: php-cgi not installed");
    }
    found
}

/// The page every test runs: an article through the two-stage chain,
/// titled by `?t=`, telling which worker answered (`<pid>`), and doing
/// what `?do=` asks.
const LIVE_PHP: &str = r#"<?php
$do = $_GET['do'] ?? '';
switch ($do) {
case 'sleep': usleep((int)($_GET['ms'] ?? 0) * 1000); break;
case 'crash': posix_kill(getmypid(), 9); break;
case 'fatal': no_such_function_axle(); break;
case 'json': header('Content-Type: application/json'); echo '{"a":1}'; exit;
case 'html': echo "<p>not <b>xml"; exit;
case 'missing': http_response_code(404); break;
case 'flood': header('Content-Type: text/xml'); echo '<a>', str_repeat('x', 300000), '</a>'; exit;
case 'forever': while (true) { usleep(100000); }
case 'len':
    $in = file_get_contents('php://input');
    header('Content-Type: text/xml');
    echo '<len>', strlen($in), ' ', md5($in), '</len>';
    exit;
case 'env':
    header('Content-Type: text/xml');
    echo '<env>';
    foreach (['REQUEST_METHOD','QUERY_STRING','PATH_INFO','SCRIPT_NAME','SCRIPT_FILENAME','CONTENT_TYPE','CONTENT_LENGTH','HTTP_ACCEPT_LANGUAGE','HTTP_X_SECRET','HTTP_PROXY','GATEWAY_INTERFACE'] as $k) {
        $v = $_SERVER[$k] ?? null;
        if ($v !== null) { echo "<$k>", htmlspecialchars($v), "</$k>"; }
    }
    echo '<stdin>', htmlspecialchars(file_get_contents('php://input')), '</stdin>';
    echo '<pid>', getmypid(), '</pid></env>';
    exit;
}
header('Content-Type: text/xml; charset=UTF-8');
$t = htmlspecialchars($_GET['t'] ?? ($_SERVER['PATH_INFO'] ?? ''));
echo '<?xml version="1.0"?>', "\n";
echo '<?xml-stylesheet href="/s/content.xsl" type="text/xsl"?>', "\n";
echo '<?xml-stylesheet href="/s/layout.xsl" type="text/xsl"?>', "\n";
echo "<article><title>$t</title><para>From PHP.</para></article>";
"#;

/// The contract's `/app` location, with `extra` keys (a `workers` in
/// them replaces the contract's 2).
fn app_toml(extra: &str) -> String {
    let workers = if extra.contains("workers") {
        ""
    } else {
        " workers = 2,"
    };
    format!(
        "[location.\"/app\"]\nprovider = {{ type = \"fastcgi\", spawn = [\"php-cgi\"], script = \"live.php\",{workers} cache = \"none\", timeout = \"3s\"{extra} }}\n"
    )
}

fn site() -> TestSite {
    let site = TestSite::new();
    site.write("live.php", LIVE_PHP);
    site
}

/// The `<pid>` of an `?do=env` answer.
async fn pid(server: &TestServer, path: &str) -> String {
    let r = server.get(path).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    let start = text.find("<pid>").expect("a pid") + 5;
    let end = text[start..].find('<').unwrap() + start;
    text[start..end].to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn spawned_php_workers_render_through_the_chain_in_every_mode_with_the_same_bytes() {
    if !php_cgi() {
        return;
    }
    let site = site();
    let mut bodies = Vec::new();
    for (mode, caches) in [
        (CacheMode::Off, ["miss", "miss", "miss"]),
        (
            CacheMode::All,
            ["uncacheable", "uncacheable", "uncacheable"],
        ),
        (CacheMode::Incremental, ["miss", "partial 2/2", "miss"]),
    ] {
        let server = server(&site, &app_toml(""), mode).await;
        let mut seen = Vec::new();
        for t in ["One", "One", "Two"] {
            let r = server.get(&format!("/app/page.xml?t={t}")).await;
            assert_eq!(r.status, 200, "{mode}: {}", r.text());
            assert!(r.text().contains(&format!("<h1>{t}</h1>")), "{}", r.text());
            seen.push(r.cache());
            bodies.push((t, r.body));
        }
        assert_eq!(seen, caches, "{mode}");
    }
    for (t, body) in &bodies {
        let first = bodies.iter().find(|(f, _)| f == t).unwrap();
        assert_eq!(body, &first.1, "every mode gives the same bytes for {t}");
    }
    // PATH_INFO is the request path below the prefix.
    let server = server(&site, &app_toml(""), CacheMode::Off).await;
    let r = server.get("/app/x.xml").await;
    assert!(r.text().contains("<h1>/x.xml</h1>"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_app_gets_cgi_variables_and_a_post_body_as_stdin() {
    if !php_cgi() {
        return;
    }
    let site = site();
    let server = server(
        &site,
        &app_toml(", headers = [\"accept-language\"]"),
        CacheMode::Incremental,
    )
    .await;
    let r = server
        .request(
            reqwest::Method::GET,
            "/app/a%20b/c.xml?do=env&x=1",
            &[
                ("accept-language", "fr"),
                ("x-secret", "no"),
                ("proxy", "http://attacker.invalid"),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    for want in [
        "<REQUEST_METHOD>GET</REQUEST_METHOD>",
        "<QUERY_STRING>do=env&amp;x=1</QUERY_STRING>",
        "<PATH_INFO>/a b/c.xml</PATH_INFO>",
        "<SCRIPT_NAME>/app</SCRIPT_NAME>",
        "<HTTP_ACCEPT_LANGUAGE>fr</HTTP_ACCEPT_LANGUAGE>",
        "<GATEWAY_INTERFACE>CGI/1.1</GATEWAY_INTERFACE>",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    let script = site.root.join("live.php");
    assert!(
        text.contains(&format!(
            "<SCRIPT_FILENAME>{}</SCRIPT_FILENAME>",
            script.display()
        )),
        "{text}"
    );
    assert!(
        !text.contains("HTTP_X_SECRET"),
        "only configured headers: {text}"
    );
    assert!(!text.contains("HTTP_PROXY"), "never HTTP_PROXY: {text}");
    let r = server
        .send(
            reqwest::Method::POST,
            "/app/p.xml?do=env",
            &[("content-type", "text/plain")],
            "hello <stdin>",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(
        text.contains("<stdin>hello &lt;stdin&gt;</stdin>"),
        "{text}"
    );
    assert!(
        text.contains("<CONTENT_LENGTH>13</CONTENT_LENGTH>"),
        "{text}"
    );
    assert!(
        text.contains("<CONTENT_TYPE>text/plain</CONTENT_TYPE>"),
        "{text}"
    );
    assert!(
        text.contains("<REQUEST_METHOD>POST</REQUEST_METHOD>"),
        "{text}"
    );
    // Past max-body: 413; PUT: 405.
    let server2 = server_with(&site, ", max-body = \"8\"").await;
    let r = server2
        .send(reqwest::Method::POST, "/app/p.xml", &[], "123456789")
        .await;
    assert_eq!(r.status, 413, "{}", r.text());
    let r = server2
        .send(reqwest::Method::PUT, "/app/p.xml", &[], "1")
        .await;
    assert_eq!(r.status, 405, "{}", r.text());
}

async fn server_with(site: &TestSite, extra: &str) -> TestServer {
    server(site, &app_toml(extra), CacheMode::Incremental).await
}

#[tokio::test(flavor = "multi_thread")]
async fn status_and_content_type_are_honoured_and_broken_answers_are_502() {
    if !php_cgi() {
        return;
    }
    let site = site();
    let server = server_with(&site, ", max-size = \"100KiB\"").await;
    // A 404 with a document: the page, with the app's status.
    let r = server.get("/app/x.xml?do=missing&t=Gone").await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.text().contains("<h1>Gone</h1>"), "{}", r.text());
    for (what, path, says) in [
        ("a fatal error", "/app/x.xml?do=fatal", ""),
        ("JSON", "/app/x.xml?do=json", "application/json"),
        ("HTML that is not XML", "/app/x.xml?do=html", ""),
        ("past max-size", "/app/x.xml?do=flood", "100 KiB"),
    ] {
        let r = server.get(path).await;
        assert_eq!(r.status, 502, "{what}: {}", r.text());
        assert!(r.text().contains(says), "{what}: {}", r.text());
        // And the next request is served by a healthy worker.
        let r = server.get("/app/x.xml?t=After").await;
        assert_eq!(r.status, 200, "after {what}: {}", r.text());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crashed_worker_is_replaced_and_the_next_request_is_served() {
    if !php_cgi() {
        return;
    }
    let site = site();
    let server = server_with(&site, ", workers = 1").await;
    let first = pid(&server, "/app/x.xml?do=env").await;
    assert_eq!(
        pid(&server, "/app/x.xml?do=env").await,
        first,
        "a worker serves again"
    );
    let r = server.get("/app/x.xml?do=crash").await;
    assert_eq!(r.status, 502, "{}", r.text());
    let after = pid(&server, "/app/x.xml?do=env").await;
    assert_ne!(after, first, "a new worker");
    assert!(!alive(&first), "the crashed worker is gone (reaped)");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_larger_than_the_socket_buffer_arrives_whole() {
    // The request is written at once as far as the socket takes it; the
    // rest waits for the worker to read (the runtime's write path).
    if !php_cgi() {
        return;
    }
    let site = site();
    let server = server_with(&site, ", workers = 1, max-body = \"1MiB\"").await;
    let body: String = (0..900_000u32)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let digest = md5_of(body.as_bytes());
    let r = server
        .send(
            reqwest::Method::POST,
            "/app/p.xml?do=len",
            &[],
            body.clone(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text().contains(&format!("<len>900000 {digest}</len>")),
        "{}",
        r.text()
    );
}

/// MD5 through the system's `md5sum` (the app reports PHP's `md5()`).
fn md5_of(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("md5sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("md5sum");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..32].to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_goes_away_leaves_the_worker_serving() {
    // The request to the worker is a task of its own: the client's
    // disconnect ends the page, not the worker's request, so the worker
    // is given back healthy and serves the next request.
    if !php_cgi() {
        return;
    }
    let site = site();
    let server = server_with(&site, ", workers = 1").await;
    let first = pid(&server, "/app/x.xml?do=env").await;
    let impatient = reqwest::Client::builder()
        .timeout(std::time::Duration::from_millis(150))
        .build()
        .unwrap();
    let gone = impatient
        .get(server.url("/app/x.xml?do=sleep&ms=600"))
        .send()
        .await;
    assert!(gone.is_err(), "the client gave up first");
    assert_eq!(
        pid(&server, "/app/x.xml?do=env").await,
        first,
        "the same worker, not killed for the client's going"
    );
    assert!(alive(&first));
}

#[tokio::test(flavor = "multi_thread")]
async fn workers_are_recycled_after_max_requests() {
    if !php_cgi() {
        return;
    }
    let site = site();
    let server = server_with(&site, ", workers = 1, max-requests = 2").await;
    let a = pid(&server, "/app/x.xml?do=env&n=1").await;
    assert_eq!(pid(&server, "/app/x.xml?do=env&n=2").await, a);
    let b = pid(&server, "/app/x.xml?do=env&n=3").await;
    assert_ne!(a, b, "the third request goes to a new worker");
    assert!(!alive(&a), "the recycled worker was stopped");
    assert_eq!(pid(&server, "/app/x.xml?do=env&n=4").await, b);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_worker_is_stopped_after_idle_timeout_and_started_again_on_demand() {
    if !php_cgi() {
        return;
    }
    let site = site();
    let server = server_with(&site, ", workers = 1, idle-timeout = \"1s\"").await;
    let a = pid(&server, "/app/x.xml?do=env").await;
    // Within the timeout it stays (the stopper looks every 500 ms).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(alive(&a), "not idle long enough yet");
    let mut gone = false;
    for _ in 0..40 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if !alive(&a) {
            gone = true;
            break;
        }
    }
    assert!(gone, "the idle worker was stopped");
    let b = pid(&server, "/app/x.xml?do=env").await;
    assert_ne!(a, b, "a new worker answers");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_past_the_timeout_is_killed_504_and_the_next_request_is_fine() {
    if !php_cgi() {
        return;
    }
    let site = site();
    let server = server(
        &site,
        &app_toml(", workers = 1").replace("\"3s\"", "\"1s\""),
        CacheMode::Incremental,
    )
    .await;
    let first = pid(&server, "/app/x.xml?do=env").await;
    let r = server.get("/app/x.xml?do=forever").await;
    assert_eq!(r.status, 504, "{}", r.text());
    assert!(!alive(&first), "the busy worker was killed");
    let r = server.get("/app/x.xml?t=Fine").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("<h1>Fine</h1>"));
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_workers_and_the_queue_a_request_is_503() {
    if !php_cgi() {
        return;
    }
    let site = site();
    let server = std::sync::Arc::new(
        server_with(&site, ", workers = 1, max-concurrent = 1, max-queue = 0").await,
    );
    // Warm the worker so the slow request holds it, not its start.
    assert_eq!(server.get("/app/x.xml?t=Warm").await.status, 200);
    let slow = {
        let server = std::sync::Arc::clone(&server);
        tokio::spawn(async move { server.get("/app/x.xml?do=sleep&ms=800&t=Slow").await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let busy = server.get("/app/x.xml?t=Busy").await;
    assert_eq!(busy.status, 503, "{}", busy.text());
    assert_eq!(busy.header("retry-after"), "1");
    assert_eq!(slow.await.unwrap().status, 200);
}

/// Is the process `pid` alive (not a zombie)?
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with(['Z', 'X']))
        })
        .is_some_and(|zombie| !zombie)
}

/// A php-cgi FastCGI server on a loopback port, killed when dropped.
struct PhpServer {
    child: std::process::Child,
    addr: String,
}

impl PhpServer {
    fn start(root: &std::path::Path) -> PhpServer {
        let port = crate::redis_support::free_port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new("php-cgi")
            .args(["-b", &addr])
            .current_dir(root)
            .env("PHP_FCGI_CHILDREN", "0")
            .env("PHP_FCGI_MAX_REQUESTS", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Ready once it accepts.
        for _ in 0..100 {
            if std::net::TcpStream::connect(&addr).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        PhpServer { child, addr }
    }
}

impl Drop for PhpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_existing_fastcgi_server_is_used_at_its_address() {
    if !php_cgi() {
        return;
    }
    let site = site();
    let php = PhpServer::start(&site.root);
    let toml = format!(
        "[location.\"/fpm\"]\nprovider = {{ type = \"fastcgi\", address = \"{}\", script = \"live.php\", cache = \"none\" }}\n",
        php.addr
    );
    let mut bodies = Vec::new();
    for mode in [CacheMode::Off, CacheMode::All, CacheMode::Incremental] {
        let server = server(&site, &toml, mode).await;
        for t in ["Far", "Far"] {
            let r = server.get(&format!("/fpm/x.xml?t={t}")).await;
            assert_eq!(r.status, 200, "{mode}: {}", r.text());
            assert!(r.text().contains("<h1>Far</h1>"), "{}", r.text());
            bodies.push(r.body);
        }
        let r = server
            .send(reqwest::Method::POST, "/fpm/p.xml?do=env", &[], "posted")
            .await;
        assert!(r.text().contains("<stdin>posted</stdin>"), "{}", r.text());
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "same bytes");
    // A server that is not there: 502 naming the address.
    drop(php);
    let server = server(&site, &toml, CacheMode::Off).await;
    let r = server.get("/fpm/x.xml").await;
    assert_eq!(r.status, 502, "{}", r.text());
}

/// A fake FastCGI server on a loopback port answering every connection
/// with `answer`'s bytes, whatever it was sent.
fn fake_server(answer: Vec<u8>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let answer = answer.clone();
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut buf = [0; 4096];
                let _ = conn.set_read_timeout(Some(std::time::Duration::from_millis(200)));
                let _ = conn.read(&mut buf);
                let _ = conn.write_all(&answer);
                std::thread::sleep(std::time::Duration::from_millis(100));
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_breaking_the_record_layer_is_a_502() {
    let site = TestSite::new();
    site.write("live.php", "");
    // A record whose length runs past what is sent, then the close.
    let truncated = vec![1, 6, 0, 1, 0xFF, 0xFF, 0, 0, b'<', b'a'];
    // Version 2.
    let version = vec![2, 6, 0, 1, 0, 0, 0, 0];
    // STDOUT for another request id.
    let other = vec![1, 6, 0, 9, 0, 1, 7, 0, b'x', 0, 0, 0, 0, 0, 0, 0];
    for (what, bytes) in [
        ("truncated", truncated),
        ("version", version),
        ("request id", other),
    ] {
        let addr = fake_server(bytes);
        let toml = format!(
            "[location.\"/fake\"]\nprovider = {{ type = \"fastcgi\", address = \"{addr}\", script = \"live.php\", timeout = \"2s\" }}\n"
        );
        let server = server(&site, &toml, CacheMode::Off).await;
        let r = server.get("/fake/x.xml").await;
        assert_eq!(r.status, 502, "{what}: {}", r.text());
    }
}

const SHOUT_PHP: &str = r#"<?php
header('Content-Type: text/xml');
// Text between tags in upper case; the markup as it was.
echo preg_replace_callback('/>([^<]*)</', fn($m) => '>' . strtoupper($m[1]) . '<', file_get_contents('php://input'));
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_filter_runs_as_fastcgi_workers_with_the_stage_input_as_stdin() {
    if !php_cgi() {
        return;
    }
    let site = TestSite::new();
    site.write("shout.php", SHOUT_PHP);
    site.write(
        "loud.xml",
        "<?xml-stylesheet type=\"application/x-shout\" href=\"/shout.php\"?>\n<doc>quiet words</doc>",
    );
    let toml = "[filter.\"application/x-shout\"]\nfastcgi = { spawn = [\"php-cgi\"], script = \"shout.php\", workers = 2 }\n";
    let mut bodies = Vec::new();
    for mode in [CacheMode::Off, CacheMode::All, CacheMode::Incremental] {
        let server = server(&site, toml, mode).await;
        for _ in 0..2 {
            let r = server.get("/loud.xml").await;
            assert_eq!(r.status, 200, "{mode}: {}", r.text());
            assert!(r.text().contains("<doc>QUIET WORDS</doc>"), "{}", r.text());
            bodies.push(r.body);
        }
        if mode != CacheMode::Off {
            assert_eq!(server.get("/loud.xml").await.cache(), "hit", "{mode}");
        }
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "same bytes");
    // An edited script means new keys: the stored page is not served.
    let server = server(&site, toml, CacheMode::All).await;
    assert_eq!(server.get("/loud.xml").await.status, 200);
    assert_eq!(server.get("/loud.xml").await.cache(), "hit");
    site.write("shout.php", &SHOUT_PHP.replace("strtoupper", "strrev"));
    let r = server.get("/loud.xml").await;
    assert!(r.text().contains("<doc>sdrow teiuq</doc>"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spawn_program_that_is_absent_is_a_502_naming_it_and_axle_check_reports_it() {
    let site = TestSite::new();
    let toml = "[location.\"/app\"]\nprovider = { type = \"fastcgi\", spawn = [\"no-such-php-axle\"], script = \"live.php\" }\n\
                [filter.\"application/x-none\"]\nfastcgi = { spawn = [\"no-such-fcgi-filter-axle\"], script = \"f.php\" }\n";
    let server = server(&site, toml, CacheMode::All).await;
    let r = server.get("/app/x.xml").await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("no-such-php-axle"), "{}", r.text());
    site.write(
        "f.xml",
        "<?xml-stylesheet type=\"application/x-none\" href=\"/\"?><a/>",
    );
    let r = server.get("/f.xml").await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(
        r.text().contains("no-such-fcgi-filter-axle"),
        "{}",
        r.text()
    );
    let config = axle::site::SiteConfig::parse_in(
        toml,
        &site.root.join("axle.toml"),
        axle::Registry::default(),
        &site.root,
    )
    .unwrap();
    let problems: Vec<String> = config
        .check_references(&site.root)
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("provider.spawn") && p.contains("no-such-php-axle")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("fastcgi.spawn")),
        "{problems:?}"
    );
}

#[test]
fn fastcgi_keys_are_checked() {
    let parse = |toml: &str| {
        axle::site::SiteConfig::parse(
            toml,
            std::path::Path::new("axle.toml"),
            axle::Registry::default(),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    for (toml, want) in [
        (
            "provider = { type = \"fastcgi\", script = \"a.php\" }",
            "needs spawn",
        ),
        (
            "provider = { type = \"fastcgi\", spawn = [\"sh\"] }",
            "needs script",
        ),
        (
            "provider = { type = \"fastcgi\", spawn = [\"sh\"], address = \"127.0.0.1:9\", script = \"a\" }",
            "not both",
        ),
        (
            "provider = { type = \"fastcgi\", address = \"localhost:9\", script = \"a\" }",
            "not an IP address",
        ),
        (
            "provider = { type = \"fastcgi\", address = \"127.0.0.1:9\", workers = 2, script = \"a\" }",
            "workers",
        ),
        (
            "provider = { type = \"fastcgi\", spawn = [\"sh\"], workers = 0, script = \"a\" }",
            "at least one worker",
        ),
        (
            "provider = { type = \"fastcgi\", spawn = [\"sh\"], script = \"../a\" }",
            "\"..\"",
        ),
        (
            "provider = { type = \"fastcgi\", spawn = [\"sh\"], script = \"a\", headers = [\"proxy\"] }",
            "httpoxy",
        ),
        (
            "provider = { type = \"fastcgi\", spawn = [\"sh\"], script = \"a\", url = \"/x\" }",
            "has no key",
        ),
    ] {
        let toml = format!("[location.\"/a\"]\n{toml}\n");
        let e = parse(&toml).unwrap_err();
        assert!(e.contains(want), "{toml}: {e}");
    }
}
