//! Issue #36 row 9: a program's descendants never outlive its run. A
//! `command` source and a filter whose programs detach a `sleep` from
//! their process group (`setsid`, keeping stdout or not), requested
//! again and again against `axle serve` run as a child process: every
//! answer is prompt, no marked `sleep` is left alive, and the server's
//! threads and descriptors come back to what they were before.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::{TestSite, serve_child};

/// The live processes (not zombies) with `arg` in their argv.
fn live_with_arg(arg: &str) -> Vec<i32> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with(['Z', 'X']))
            })
            .unwrap_or(true);
        if !zombie && cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()) {
            live.push(pid);
        }
    }
    live
}

/// Entries in `/proc/PID/<dir>` (`task`: threads, `fd`: descriptors).
fn count(pid: u32, dir: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/{dir}"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The names of `pid`'s threads (for the message when they leak).
fn thread_names(pid: u32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .map(|n| n.trim().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Waits (at most `within`) until `ok` holds; whether it did.
fn eventually(within: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let by = Instant::now() + within;
    loop {
        if ok() {
            return true;
        }
        if Instant::now() >= by {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The site: `/ok` and `/keep` … command sources, `filtered.xml` run
/// through a filter that detaches a sleep; each sleep marked by a unique
/// argument.
const TOML: &str = r#"
[location."/ok"]
provider = { type = "command", argv = ["sh", "-c", "echo '<a>ok</a>'"], timeout = "3s" }

[location."/keep"]
provider = { type = "command", argv = ["sh", "detach.sh", "30.6101", "keep"], timeout = "3s" }

[location."/daemon"]
provider = { type = "command", argv = ["sh", "detach.sh", "30.6102", "daemon"], timeout = "3s" }

[location."/late"]
provider = { type = "command", argv = ["sh", "detach.sh", "30.6103", "late"], timeout = "500ms" }

[filter."application/x-cat"]
argv = ["cat"]

[filter."application/x-detach"]
argv = ["sh", "detach.sh", "30.6104", "filter"]
timeout = "3s"
"#;

/// `detach.sh ARG MODE`: starts `sleep ARG` in a session of its own
/// (`daemon`: holding no descriptor of the run; else holding stdout),
/// waits until it has really left the shell's session (so the group kill
/// at the shell's exit cannot win the race), then answers: `filter`
/// copies its input, `late` sleeps past the timeout, others print
/// `<a>MODE</a>`.
const DETACH: &str = r#"case $2 in
daemon) setsid sh -c "exec >/dev/null 2>&1 </dev/null; exec sleep $1" & ;;
*) setsid sleep "$1" & ;;
esac
p=$!
i=0
while [ "$(cut -d' ' -f6 /proc/$p/stat 2>/dev/null)" = "$(cut -d' ' -f6 /proc/$$/stat)" ] && [ $i -lt 300 ]; do
  sleep 0.01
  i=$((i+1))
done
case $2 in
filter) cat ;;
late) sleep 30 ;;
*) printf '<a>%s</a>\n' "$2" ;;
esac
"#;

const CAT: &str = "<?xml version=\"1.0\"?>\n\
<?xml-stylesheet href=\"/none\" type=\"application/x-cat\"?>\n<a>cat</a>\n";

const FILTERED: &str = "<?xml version=\"1.0\"?>\n\
<?xml-stylesheet href=\"/none\" type=\"application/x-detach\"?>\n<a>filtered</a>\n";

/// `axle serve` on `root`, as a child process (its threads and
/// descriptors are its own to count).
fn serve(root: &Path) -> (Child, String) {
    serve_child(
        &["--listen", "127.0.0.1:0", "--cache", "off"],
        root,
        Stdio::null(),
    )
}

/// One GET on a fresh connection (`Connection: close`): its status,
/// body and how long it took.
fn get(url: &str) -> (u16, String, Duration) {
    use std::io::{Read, Write};
    let started = Instant::now();
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text, started.elapsed())
}

#[test]
fn a_program_s_detached_processes_die_with_its_run_and_nothing_leaks() {
    let site = TestSite::new();
    site.write("axle.toml", TOML);
    site.write("filtered.xml", FILTERED);
    site.write("cat.xml", CAT);
    site.write("detach.sh", DETACH);
    let (mut child, url) = serve(&site.root);
    let pid = child.id();
    // Warm up: the runtime's threads (its blocking pool included) as a
    // run of a well-behaved program leaves them.
    for _ in 0..3 {
        for path in ["/ok/x", "/cat.xml"] {
            let (status, text, _) = get(&format!("{url}{path}"));
            assert_eq!(status, 200, "{path}: {text}");
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    let (threads, fds) = (count(pid, "task"), count(pid, "fd"));
    let names = thread_names(pid);

    const N: usize = 6;
    for (path, want, arg) in [
        ("/keep/x", "<a>keep</a>", "30.6101"),
        ("/daemon/x", "<a>daemon</a>", "30.6102"),
        ("/filtered.xml", "<a>filtered</a>", "30.6104"),
    ] {
        for _ in 0..N {
            let (status, text, took) = get(&format!("{url}{path}"));
            assert_eq!(status, 200, "{path}: {text}");
            assert!(text.contains(want), "{path}: {text}");
            // Not held until the timeout by the detached sleep.
            assert!(took < Duration::from_secs(2), "{path}: {took:?}");
        }
        assert!(
            eventually(Duration::from_secs(3), || live_with_arg(arg).is_empty()),
            "{path}: {:?} outlived its run",
            live_with_arg(arg)
        );
    }
    // The timeout path: 504, and the detached sleep dies too.
    for _ in 0..2 {
        let (status, text, took) = get(&format!("{url}/late/x"));
        assert_eq!(status, 504, "{text}");
        assert!(took < Duration::from_secs(3), "{took:?}");
    }
    assert!(
        eventually(Duration::from_secs(3), || live_with_arg("30.6103")
            .is_empty()),
        "{:?} outlived its run",
        live_with_arg("30.6103")
    );
    // Back to the baseline: no pipe left behind, no reader thread (the
    // old supervisor's two per run were stuck on the sleeps' pipes). The
    // runtime's blocking pool may have started one more thread for a
    // request that came while the last one's was being handed back; it
    // keeps an idle thread 10 s, so threads get 12 s to come back.
    let fds_back = eventually(Duration::from_secs(3), || count(pid, "fd") <= fds);
    let fds_now = count(pid, "fd");
    let threads_back = eventually(Duration::from_secs(12), || count(pid, "task") <= threads);
    let (threads_now, names_now) = (count(pid, "task"), thread_names(pid));
    let _ = child.kill();
    let _ = child.wait();
    let runs = 3 * N + 2;
    assert!(
        fds_back,
        "descriptors: {fds} before, {fds_now} after {runs} runs"
    );
    assert!(
        threads_back,
        "threads: {threads} {names:?} before, {threads_now} {names_now:?} after {runs} runs"
    );
}
