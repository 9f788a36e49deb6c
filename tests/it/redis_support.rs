//! A real `redis-server` for the shared-cache tests, on a free loopback
//! port with no persistence, and a tiny RESP client over a `TcpStream` to
//! look at and damage what Axle stored (no client library, no
//! `redis-cli`). Without `redis-server` a test is skipped loudly, and
//! fails under `CI=true`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A reply, as RESP2 says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

impl Reply {
    pub fn int(&self) -> i64 {
        match self {
            Reply::Int(n) => *n,
            other => panic!("not an integer: {other:?}"),
        }
    }

    pub fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Reply::Bulk(b) => b.clone(),
            other => panic!("not a bulk string: {other:?}"),
        }
    }

    pub fn strings(&self) -> Vec<String> {
        match self {
            Reply::Array(items) => items
                .iter()
                .map(|i| String::from_utf8(i.bytes().unwrap()).unwrap())
                .collect(),
            other => panic!("not an array: {other:?}"),
        }
    }
}

/// Is `redis-server` on the PATH? If not, says so (and fails under CI).
pub fn have_redis() -> bool {
    let found = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "redis-server is not installed, and CI=true: .ci/run installs it"
        );
        eprintln!("SKIPPED: redis-server not installed");
    }
    found
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `redis-server` on a loopback port, killed when dropped.
pub struct Redis {
    pub port: u16,
    child: Option<Child>,
}

impl Redis {
    pub fn start() -> Redis {
        Redis::on(free_port())
    }

    /// On `port` (a restart on the same port, or a port an Axle was told
    /// before Redis was there).
    pub fn on(port: u16) -> Redis {
        let mut redis = Redis { port, child: None };
        redis.restart();
        redis
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// SIGKILL, and reaped.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGSTOP (`true`) or SIGCONT: a Redis that accepts nothing and
    /// answers nothing, as a stuck one does.
    pub fn pause(&self, stop: bool) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let signal = if stop { "-STOP" } else { "-CONT" };
        let ok = Command::new("kill").args([signal, &pid]).status();
        assert!(ok.is_ok_and(|s| s.success()));
    }

    /// Starts it again on the same port (empty: no persistence), waiting
    /// until it answers.
    pub fn restart(&mut self) {
        self.kill();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let start = Instant::now();
        loop {
            if let Ok(mut c) = Conn::open(self.port)
                && c.cmd(&["PING"]) == Reply::Status("PONG".into())
            {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "redis-server did not answer on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn conn(&self) -> Conn {
        Conn::open(self.port).expect("connect to redis")
    }

    /// Every key matching `pattern`, sorted.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let mut keys = self.conn().cmd(&["KEYS", pattern]).strings();
        keys.sort();
        keys
    }

    /// The value keys (`PREFIX{HEX}`; not locks, `PREFIX{HEX}:lock`)
    /// under `prefix`.
    pub fn values(&self, prefix: &str) -> Vec<String> {
        self.keys(&format!("{prefix}*"))
            .into_iter()
            .filter(|k| !k.ends_with(":lock"))
            .collect()
    }

    /// Waits (10 s at most) until `prefix` has at least `n` values.
    pub fn wait_values(&self, prefix: &str, n: usize) -> Vec<String> {
        let start = Instant::now();
        loop {
            let v = self.values(prefix);
            if v.len() >= n {
                return v;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "waited for {n} values under {prefix}: {v:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One RESP connection.
pub struct Conn {
    out: TcpStream,
    input: BufReader<TcpStream>,
}

impl Conn {
    pub fn open(port: u16) -> std::io::Result<Conn> {
        let out = TcpStream::connect(("127.0.0.1", port))?;
        out.set_read_timeout(Some(Duration::from_secs(5)))?;
        let input = BufReader::new(out.try_clone()?);
        Ok(Conn { out, input })
    }

    pub fn cmd(&mut self, args: &[&str]) -> Reply {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.cmd_bytes(&args)
    }

    pub fn cmd_bytes(&mut self, args: &[&[u8]]) -> Reply {
        let mut req = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        self.out.write_all(&req).unwrap();
        self.reply()
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.input.read_line(&mut line).unwrap();
        line.trim_end_matches("\r\n").to_string()
    }

    fn reply(&mut self) -> Reply {
        let line = self.line();
        let (kind, rest) = line.split_at(1);
        match kind {
            "+" => Reply::Status(rest.into()),
            "-" => Reply::Error(rest.into()),
            ":" => Reply::Int(rest.parse().unwrap()),
            "$" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Reply::Bulk(None);
                }
                let mut buf = vec![0; n as usize + 2];
                self.input.read_exact(&mut buf).unwrap();
                buf.truncate(n as usize);
                Reply::Bulk(Some(buf))
            }
            "*" => {
                let n: i64 = rest.parse().unwrap();
                Reply::Array((0..n.max(0)).map(|_| self.reply()).collect())
            }
            other => panic!("not RESP: {other}{rest}"),
        }
    }
}
