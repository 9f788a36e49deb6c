//! The `esql` taglib against a real PostgreSQL server: a private cluster
//! made with `initdb` in a temporary directory and started on a loopback
//! port (as the `postgres` user when the tests run as root). Absent
//! PostgreSQL: skipped loudly, and a failure under `CI=true` (`.ci/run`
//! installs it).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use reqwest::Method;

use crate::support::{Resp, TestServer};
use crate::xsp::{texts, urlencode};

/// A PostgreSQL cluster of its own, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    server: Option<Child>,
}

/// The directory with `initdb`, `postgres` and `psql`'s siblings.
fn pg_bin() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file() && b.join("postgres").is_file())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program args` as the `postgres` user when we are root.
fn as_pg(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

impl Cluster {
    fn start() -> Option<Cluster> {
        let Some(bin) = pg_bin() else {
            let message = "SKIPPED: PostgreSQL is not installed (apt-get install postgresql): the esql tests against a real server did not run";
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{message} (CI=true: .ci/run installs it)"
            );
            eprintln!("{message}");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("axle-pg")
            .tempdir()
            .unwrap();
        let data = dir.path().join("data");
        if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown of the cluster's directory failed");
        }
        let out = as_pg(&bin.join("initdb"))
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-instructions",
                "-D",
            ])
            .arg(&data)
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut cluster = Cluster {
            dir,
            bin,
            port,
            server: None,
        };
        cluster.run();
        Some(cluster)
    }

    /// Starts the server on the cluster (again), and waits until it answers.
    fn run(&mut self) {
        let server = as_pg(&self.bin.join("postgres"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-k"])
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.server = Some(server);
        for _ in 0..100 {
            if self.psql("SELECT 1").is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        self.stop();
        panic!("PostgreSQL did not start on 127.0.0.1:{}", self.port);
    }

    fn psql(&self, sql: &str) -> Result<String, String> {
        let psql = self.bin.join("psql");
        let psql = if psql.is_file() {
            psql
        } else {
            PathBuf::from("psql")
        };
        let out = Command::new(psql)
            .args([
                "-X",
                "-q",
                "-t",
                "-A",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-p",
            ])
            .arg(self.port.to_string())
            .args(["-d", "postgres", "-c", sql])
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The postmaster's process ID (the child may be `runuser`, which
    /// does not pass signals on).
    fn postmaster(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.path().join("data/postmaster.pid")).ok()?;
        text.lines().next().map(str::to_string)
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.server.take() {
            // SIGINT: PostgreSQL's fast shutdown.
            let pid = self.postmaster().unwrap_or_else(|| child.id().to_string());
            let _ = Command::new("kill").args(["-INT", &pid]).status();
            for _ in 0..100 {
                if child.try_wait().ok().flatten().is_some() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
        let _ = &self.dir;
    }
}

async fn server(cluster: &Cluster) -> (tempfile::TempDir, TestServer) {
    let config = format!(
        "[esql.pg]\nurl = \"{}\"\ntimeout = \"1s\"\nmax-rows = 50\npool-size = 2\n",
        cluster.url()
    );
    let (dir, _root, server) = crate::xsp::configured(&config, axle::CacheMode::Incremental).await;
    (dir, server)
}

#[tokio::test(flavor = "multi_thread")]
async fn esql_on_postgresql_binds_parameters_limits_time_and_survives_an_outage() {
    let Some(mut cluster) = tokio::task::spawn_blocking(Cluster::start).await.unwrap() else {
        return;
    };
    cluster
        .psql(
            "CREATE TABLE entries (id serial PRIMARY KEY, name text NOT NULL, stars int4 NOT NULL)",
        )
        .unwrap();
    let (_dir, server) = server(&cluster).await;
    let post = |form: Vec<(&'static str, String)>| {
        let url = server.url("/esql/pg.xml?q=");
        async move {
            let r = reqwest::Client::new()
                .post(url)
                .form(&form)
                .send()
                .await
                .unwrap();
            Resp::of(r).await
        }
    };
    let hostile = [
        "'; DROP TABLE entries; --",
        "' OR '1'='1",
        "$1 $2 ?1 :x",
        "x'); DELETE FROM entries; --",
        "'||(SELECT current_user)||'",
        "ünïcødé ✓ 🚀 <b>&amp;</b>",
        "a\tb\nc\r\nd",
    ];
    for (i, value) in hostile.iter().enumerate() {
        let r = post(vec![
            ("name", value.to_string()),
            ("stars", (i % 5).to_string()),
        ])
        .await;
        assert_eq!(r.status, 200, "{value:?}: {}", r.text());
        assert_eq!(texts(&r, "inserted"), ["1"], "{value:?}");
        assert_eq!(texts(&r, "count"), [(i + 1).to_string()], "{value:?}");
        let found = server
            .request(
                Method::GET,
                &format!("/esql/pg.xml?q={}", urlencode(value)),
                &[],
            )
            .await;
        assert_eq!(
            texts(&found, "name"),
            [*value],
            "{value:?}: {}",
            found.text()
        );
        assert_eq!(texts(&found, "stars"), [(i % 5).to_string()]);
        assert_eq!(
            texts(&found, "good"),
            [if i % 5 > 2 { "true" } else { "false" }]
        );
    }
    assert_eq!(
        cluster.psql("SELECT count(*) FROM entries").unwrap(),
        hostile.len().to_string()
    );
    // An int parameter that is not one: the request's error, named.
    let r = post(vec![("name", "x".into()), ("stars", "1 OR 1=1".into())]).await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        r.text().contains("parameter 2 is not an integer"),
        "{}",
        r.text()
    );
    // past int4's range, refused before it reaches the server
    let r = post(vec![("name", "x".into()), ("stars", "99999999999".into())]).await;
    assert!(r.text().contains("out of range"), "{}", r.text());

    // statement_timeout stops a slow query.
    let started = std::time::Instant::now();
    let r = server.request(Method::GET, "/esql/pgslow.xml", &[]).await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("ran past its timeout"), "{}", r.text());
    assert!(started.elapsed() < std::time::Duration::from_secs(8));

    // The server goes away: pages that query it fail, named; the rest
    // serve; it comes back: queries work again (the pool reconnects).
    let mut cluster = tokio::task::spawn_blocking(move || {
        cluster.stop();
        cluster
    })
    .await
    .unwrap();
    let r = server.request(Method::GET, "/esql/pg.xml?q=", &[]).await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("the query on pg failed"), "{}", r.text());
    assert_eq!(
        server.request(Method::GET, "/core.xml", &[]).await.status,
        200
    );
    let _cluster = tokio::task::spawn_blocking(move || {
        cluster.run();
        cluster
    })
    .await
    .unwrap();
    let mut back = None;
    for _ in 0..50 {
        let r = server.request(Method::GET, "/esql/pg.xml?q=", &[]).await;
        if r.status == 200 {
            back = Some(r);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let back = back.expect("queries work again once the server is back");
    assert_eq!(texts(&back, "count"), [hostile.len().to_string()]);
}
