//! Running a configured program, bounded: the one place Axle starts other
//! processes (a filter Language's command, a command source).
//!
//! A [`Program`] is an argv list (never a shell) whose executable was found
//! when it was configured, a working directory, and an environment that is
//! exactly what was allowed (the child's is cleared first), plus this
//! run's marker [`MARKER_VARIABLE`]. [`Program::run`] feeds the child its
//! stdin (an empty input is `/dev/null`), reads stdout up to a hard cap and
//! stderr up to [`STDERR_KEPT`] bytes (the rest is drained and dropped),
//! and holds the child to a wall-clock timeout, all from the calling
//! thread (`run`: one `poll` loop, no helper threads, every descriptor
//! owned by the run). The child runs in a process group of its own.
//!
//! A program's processes never outlive its run: when the child exits, on
//! the timeout, past the cap or on any error, its group is killed, and
//! then every process recognised as started by the run although it left
//! the group (`setsid`, a double fork, a daemon: `reap`, by the run's
//! marker in its environment, by a pipe of the run it holds, or by a
//! recognised parent). Nothing the run did not start is ever signalled or
//! waited for. The child is always reaped.
//!
//! [`Concurrency`] bounds how many runs happen at once, with a bounded
//! queue whose wait is bounded too (past either: [`ExecError::Busy`]).
//!
//! The API is synchronous: callers are blocking threads (the transform
//! pool, or `tokio::task::spawn_blocking`). Nothing else of the crate is
//! imported: this module sits below every other.

mod daemon;
mod reap;
mod run;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;

pub use daemon::{Daemon, kill_daemon_group};
pub use reap::MARKER_VARIABLE;

/// How much of a program's stderr is kept (for the log); the rest is read
/// and dropped, so the program never blocks on a full pipe.
pub const STDERR_KEPT: usize = 64 * 1024;

/// Why a program could not be configured or did not give an output.
///
/// Its `Display` is a one-line reason that reads after the program's name
/// ("… exited with status 3") and never includes what the program wrote to
/// stderr: that is for the log ([`ExecError::stderr`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The program cannot be run as configured: empty argv, an executable
    /// not found or not executable, a working directory that is not one.
    #[error("cannot be run: {0}")]
    Invalid(String),
    /// The process could not be started.
    #[error("could not be started: {0}")]
    Spawn(String),
    /// The program exited with a non-zero status or was killed by a signal.
    #[error("{}", exit_reason(*code, *signal))]
    Exit {
        /// Its exit status, when it exited.
        code: Option<i32>,
        /// The signal that killed it, when one did.
        signal: Option<i32>,
        /// What it wrote to stderr (at most [`STDERR_KEPT`] bytes, lossy
        /// UTF-8): for the log only.
        stderr: String,
    },
    /// It did not finish within its timeout (it was killed).
    #[error("did not finish within {}", show_duration(*.0))]
    Timeout(Duration),
    /// It wrote more than its output limit (it was killed).
    #[error("wrote more than {} of output", show_size(*.0))]
    TooLarge(u64),
    /// Every run is taken and the queue is full, or no run came free in
    /// time.
    #[error("is busy: {0}")]
    Busy(String),
    /// Talking to the running process failed.
    #[error("failed while running: {0}")]
    Io(String),
}

impl ExecError {
    /// What the program wrote to stderr before it failed, when known: for
    /// the log, never for a client.
    pub fn stderr(&self) -> Option<&str> {
        match self {
            ExecError::Exit { stderr, .. } => Some(stderr),
            _ => None,
        }
    }
}

fn exit_reason(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "ended abnormally".to_string(),
    }
}

/// `10s`, `1.5s`, `250ms`: a duration as configured, for messages.
pub fn show_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_millis() >= 1000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}ms", d.as_millis().max(1))
    }
}

/// `64 MiB`, `12 KiB`, `100 bytes`: a size, for messages.
pub fn show_size(n: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if n >= MIB && n % MIB == 0 {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n % KIB == 0 {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

/// What a successful run gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Everything the program wrote to stdout.
    pub stdout: Bytes,
    /// What it wrote to stderr (at most [`STDERR_KEPT`] bytes, lossy
    /// UTF-8): for the log only.
    pub stderr: String,
}

/// A configured program: argv (its executable found at construction),
/// working directory, environment and limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    argv: Vec<String>,
    executable: PathBuf,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    timeout: Duration,
    max_output: u64,
}

impl Program {
    /// The wall-clock time a run may take, unless set otherwise.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
    /// The most stdout a run may write, unless set otherwise.
    pub const DEFAULT_MAX_OUTPUT: u64 = 64 * 1024 * 1024;

    /// The program `argv` run in `cwd` (an existing directory), with an
    /// empty environment and the default limits.
    ///
    /// `argv[0]` is resolved to an absolute path now: without a `/` it is
    /// looked up on the server's `PATH` (absolute entries only), with one
    /// it is taken relative to `cwd`. It must be an executable regular
    /// file. The child still sees `argv[0]` as written.
    pub fn new(argv: Vec<String>, cwd: &Path) -> Result<Program, ExecError> {
        let Some(name) = argv.first() else {
            return Err(ExecError::Invalid("the command (argv) is empty".into()));
        };
        if let Some(bad) = argv.iter().find(|a| a.contains('\0')) {
            return Err(ExecError::Invalid(format!(
                "the argument {bad:?} contains a NUL byte"
            )));
        }
        let cwd = cwd
            .canonicalize()
            .map_err(|e| ExecError::Invalid(format!("working directory {}: {e}", cwd.display())))?;
        if !cwd.is_dir() {
            return Err(ExecError::Invalid(format!(
                "working directory {} is not a directory",
                cwd.display()
            )));
        }
        let executable = resolve(name, &cwd)?;
        Ok(Program {
            argv,
            executable,
            cwd,
            env: Vec::new(),
            timeout: Program::DEFAULT_TIMEOUT,
            max_output: Program::DEFAULT_MAX_OUTPUT,
        })
    }

    /// The same program with exactly `env` as its environment (see
    /// [`Program::allowed_env`]).
    pub fn with_env(mut self, env: Vec<(String, String)>) -> Program {
        self.env = env;
        self
    }

    /// The same program with another timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Program {
        self.timeout = timeout;
        self
    }

    /// The same program with another output limit (bytes of stdout).
    pub fn with_max_output(mut self, max_output: u64) -> Program {
        self.max_output = max_output;
        self
    }

    /// An environment allow-list: each variable of the server's own
    /// environment named in `pass` that is set (and is UTF-8), in that
    /// order, then `extra`.
    pub fn allowed_env<S: AsRef<str>>(
        pass: &[S],
        extra: &[(String, String)],
    ) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = pass
            .iter()
            .filter_map(|name| {
                let name = name.as_ref();
                std::env::var(name).ok().map(|v| (name.to_string(), v))
            })
            .collect();
        env.extend(extra.iter().cloned());
        env
    }

    /// The argv as configured.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The executable `argv[0]` was resolved to (absolute; symlinks not
    /// resolved).
    pub fn executable(&self) -> &Path {
        &self.executable
    }

    /// The working directory (canonical).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The environment every run gets (before its `extra_env`).
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The wall-clock limit of a run.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The most bytes of stdout a run may write.
    pub fn max_output(&self) -> u64 {
        self.max_output
    }

    /// Runs the program with `stdin` as its input and `extra_env` added to
    /// its environment; its stdout on success. See [`Program::run_bytes`].
    pub fn run(&self, stdin: &[u8], extra_env: &[(String, String)]) -> Result<Output, ExecError> {
        self.run_bytes(Bytes::copy_from_slice(stdin), extra_env)
    }

    /// Runs the program with `stdin` as its input (without copying it) and
    /// `extra_env` added to its environment.
    ///
    /// Errors: [`ExecError::Spawn`] when it cannot be started,
    /// [`ExecError::Timeout`] past the timeout, [`ExecError::TooLarge`] past
    /// the output limit (both kill its process group and every process
    /// recognised as the run's),
    /// [`ExecError::Exit`] for a non-zero status or a death by signal. A
    /// child that exits without reading all of its input is not an error
    /// by itself.
    pub fn run_bytes(
        &self,
        stdin: Bytes,
        extra_env: &[(String, String)],
    ) -> Result<Output, ExecError> {
        run::run(self, stdin, extra_env)
    }
}

/// Finds `name` on the server's `PATH`, or relative to `cwd` when it has a
/// `/`.
fn resolve(name: &str, cwd: &Path) -> Result<PathBuf, ExecError> {
    if name.is_empty() {
        return Err(ExecError::Invalid("the program name is empty".into()));
    }
    if name.contains('/') {
        let path = cwd.join(name);
        return match executable(&path) {
            Ok(()) => Ok(path),
            Err(why) => Err(ExecError::Invalid(format!("{name}: {why}"))),
        };
    }
    let Some(search) = std::env::var_os("PATH") else {
        return Err(ExecError::Invalid(format!(
            "{name} cannot be looked up: PATH is not set"
        )));
    };
    std::env::split_paths(&search)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|path| executable(path).is_ok())
        .ok_or_else(|| ExecError::Invalid(format!("{name} was not found on PATH")))
}

/// Is `path` an executable regular file (following links)?
fn executable(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("not executable".into());
    }
    Ok(())
}

/// A bound on concurrent runs: at most `max_running` at once, at most
/// `max_queued` callers waiting for a turn. Cloning shares the bound.
#[derive(Debug, Clone)]
pub struct Concurrency {
    slots: Arc<Slots>,
}

#[derive(Debug)]
struct Slots {
    max_running: usize,
    max_queued: usize,
    state: Mutex<SlotState>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct SlotState {
    running: usize,
    queued: usize,
}

impl Slots {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        // The state is two counters updated in single steps: still
        // consistent after a panic elsewhere.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Concurrency {
    /// At most `max_running` (at least 1) runs at once and `max_queued`
    /// callers waiting.
    pub fn new(max_running: usize, max_queued: usize) -> Concurrency {
        Concurrency {
            slots: Arc::new(Slots {
                max_running: max_running.max(1),
                max_queued,
                state: Mutex::new(SlotState::default()),
                freed: Condvar::new(),
            }),
        }
    }

    /// A turn to run, held until the [`Permit`] is dropped. With every run
    /// taken, the caller waits in the queue for at most `wait`; with the
    /// queue full, or no turn within `wait`: [`ExecError::Busy`].
    pub fn acquire(&self, wait: Duration) -> Result<Permit, ExecError> {
        let slots = &self.slots;
        let mut state = slots.lock();
        // Newcomers do not overtake callers already waiting.
        if state.running < slots.max_running && state.queued == 0 {
            state.running += 1;
            return Ok(self.permit());
        }
        if state.queued >= slots.max_queued {
            return Err(ExecError::Busy(format!(
                "{} run(s) at once, and {} waiting, already",
                slots.max_running, state.queued
            )));
        }
        state.queued += 1;
        let deadline = Instant::now() + wait;
        loop {
            if state.running < slots.max_running {
                state.queued -= 1;
                state.running += 1;
                return Ok(self.permit());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                state.queued -= 1;
                if state.running < slots.max_running && state.queued > 0 {
                    // Woken for a free turn as this wait ran out: the
                    // turn goes to another waiter, not lost.
                    slots.freed.notify_one();
                }
                return Err(ExecError::Busy(format!(
                    "no run came free within {}",
                    show_duration(wait)
                )));
            }
            state = slots
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Runs now (holding a permit).
    pub fn running(&self) -> usize {
        self.slots.lock().running
    }

    /// Callers waiting now.
    pub fn queued(&self) -> usize {
        self.slots.lock().queued
    }

    fn permit(&self) -> Permit {
        Permit {
            slots: Arc::clone(&self.slots),
        }
    }
}

/// One run's turn; dropping it lets the next caller in.
#[derive(Debug)]
pub struct Permit {
    slots: Arc<Slots>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = self.slots.lock();
        state.running = state.running.saturating_sub(1);
        drop(state);
        // One waiter takes the turn (one whose wait ran out passes it on):
        // waking them all cost every request a wake-up of each caller in
        // the queue (32 connections on 2 FastCGI workers: 13.7 futex
        // calls a request).
        self.slots.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    fn program(args: &[&str]) -> Program {
        let dir = std::env::temp_dir();
        Program::new(argv(args), &dir)
            .unwrap()
            .with_env(Program::allowed_env(&["PATH"], &[]))
    }

    #[test]
    fn cat_echoes_its_input() {
        let out = program(&["cat"]).run(b"<a>hello</a>", &[]).unwrap();
        assert_eq!(&out.stdout[..], b"<a>hello</a>");
        assert_eq!(out.stderr, "");
    }

    #[test]
    fn an_empty_input_is_dev_null_and_any_other_a_pipe() {
        let p = program(&["sh", "-c", "readlink /proc/self/fd/0; cat"]);
        let out = p.run(b"", &[]).unwrap();
        assert_eq!(&out.stdout[..], b"/dev/null\n");
        let out = p.run(b"<a/>", &[]).unwrap();
        let text = std::str::from_utf8(&out.stdout).unwrap();
        assert!(
            text.starts_with("pipe:[") && text.ends_with("]\n<a/>"),
            "{text}"
        );
    }

    #[test]
    fn argv0_is_resolved_on_path_or_relative_to_the_working_directory() {
        let p = program(&["sh", "-c", "echo $0"]);
        assert!(p.executable().is_absolute());
        assert!(p.executable().ends_with("sh"));
        // The child sees argv[0] as written.
        let out = p.run(b"", &[]).unwrap();
        assert_eq!(&out.stdout[..], b"sh\n");

        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("bin/tool");
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::fs::write(&script, "#!/bin/sh\necho tool \"$@\"\n").unwrap();
        let p = Program::new(argv(&["bin/tool", "x"]), dir.path());
        // Not executable yet.
        assert!(
            matches!(&p, Err(ExecError::Invalid(m)) if m.contains("not executable")),
            "{p:?}"
        );
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let p = Program::new(argv(&["bin/tool", "x"]), dir.path()).unwrap();
        assert_eq!(
            p.executable(),
            dir.path().canonicalize().unwrap().join("bin/tool")
        );
        assert_eq!(&p.run(b"", &[]).unwrap().stdout[..], b"tool x\n");
    }

    #[test]
    fn a_program_that_cannot_be_found_is_refused_at_construction() {
        let dir = std::env::temp_dir();
        for (args, want) in [
            (vec![], "empty"),
            (argv(&[""]), "empty"),
            (argv(&["no-such-program-axle"]), "not found on PATH"),
            (argv(&["./no-such-program"]), "No such file"),
            (argv(&["/"]), "not a regular file"),
            (argv(&["cat", "a\0b"]), "NUL"),
        ] {
            let e = Program::new(args.clone(), &dir).unwrap_err();
            assert!(
                matches!(&e, ExecError::Invalid(m) if m.contains(want)),
                "{args:?}: {e}"
            );
        }
        let e = Program::new(argv(&["cat"]), Path::new("/no/such/dir")).unwrap_err();
        assert!(matches!(e, ExecError::Invalid(_)), "{e}");
    }

    #[test]
    fn a_non_zero_exit_is_an_error_whose_message_leaves_stderr_out() {
        let e = program(&["sh", "-c", "echo secret-detail >&2; exit 3"])
            .run(b"", &[])
            .unwrap_err();
        assert!(
            matches!(
                &e,
                ExecError::Exit {
                    code: Some(3),
                    signal: None,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "exited with status 3");
        assert_eq!(e.stderr(), Some("secret-detail\n"));

        let e = program(&["sh", "-c", "kill -9 $$"])
            .run(b"", &[])
            .unwrap_err();
        assert!(
            matches!(
                &e,
                ExecError::Exit {
                    code: None,
                    signal: Some(9),
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "was killed by signal 9");
    }

    #[test]
    fn stderr_is_returned_capped_and_drained() {
        // 1 MiB of stderr: kept up to the cap, the rest drained (the child
        // would block on a full pipe otherwise).
        let out = program(&[
            "sh",
            "-c",
            "head -c 1048576 /dev/zero | tr '\\0' e >&2; echo done",
        ])
        .run(b"", &[])
        .unwrap();
        assert_eq!(&out.stdout[..], b"done\n");
        assert_eq!(out.stderr.len(), STDERR_KEPT);
    }

    /// The members of process group `pgid` that are still running (not
    /// zombies), from `/proc`.
    fn live_members(pgid: i32) -> Vec<i32> {
        let mut live = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // pid (comm) state ppid pgrp ...: comm may hold spaces.
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
                continue;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if fields.get(2) == Some(&pgid.to_string().as_str()) && fields[0] != "Z" {
                live.push(pid);
            }
        }
        live
    }

    #[test]
    fn the_timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let p = shell_in(dir.path(), "echo $$ > pid; sleep 30 & wait")
            .with_timeout(Duration::from_millis(300));
        let started = Instant::now();
        let e = p.run(b"", &[]).unwrap_err();
        let took = started.elapsed();
        assert_eq!(e, ExecError::Timeout(Duration::from_millis(300)));
        assert_eq!(e.to_string(), "did not finish within 300ms");
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(3),
            "{took:?}"
        );
        assert_group_gone(dir.path());
    }

    /// `sh -c script` run in `dir` with only `PATH`.
    fn shell_in(dir: &Path, script: &str) -> Program {
        Program::new(argv(&["sh", "-c", script]), dir)
            .unwrap()
            .with_env(Program::allowed_env(&["PATH"], &[]))
    }

    /// The process group whose id the program wrote to `dir/pid` has no
    /// live member left (SIGKILL is delivered at once, but the kernel may
    /// take a moment to tear the processes down).
    fn assert_group_gone(dir: &Path) {
        let pgid: i32 = std::fs::read_to_string(dir.join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let gone_by = Instant::now() + Duration::from_secs(2);
        while !live_members(pgid).is_empty() && Instant::now() < gone_by {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(live_members(pgid), Vec::<i32>::new());
    }

    #[test]
    fn what_a_program_leaves_running_is_killed_when_it_exits() {
        let dir = tempfile::tempdir().unwrap();
        let p = shell_in(dir.path(), "echo $$ > pid; sleep 30 & echo out");
        let started = Instant::now();
        // The background sleep holds stdout open: the run returns only
        // because it is killed when the shell exits.
        let out = p.run(b"", &[]).unwrap();
        assert_eq!(&out.stdout[..], b"out\n");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_group_gone(dir.path());
    }

    /// The live processes (not zombies) whose argv holds `arg` (a unique
    /// marker argument such as `30.5101`).
    fn live_with_arg(arg: &str) -> Vec<i32> {
        let mut live = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let dead = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|(_, r)| r.trim_start().starts_with(['Z', 'X']))
                })
                .unwrap_or(true);
            if !dead && cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()) {
                live.push(pid);
            }
        }
        live
    }

    /// No process with `arg` in its argv is left alive (SIGKILL is
    /// immediate, the teardown may take a moment: 2 s at most).
    #[track_caller]
    fn assert_none_alive(arg: &str) {
        let gone_by = Instant::now() + Duration::from_secs(2);
        while !live_with_arg(arg).is_empty() && Instant::now() < gone_by {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            live_with_arg(arg),
            Vec::<i32>::new(),
            "{arg} outlived its run"
        );
    }

    /// A shell function `left FIELD PID`: waits (3 s at most) until
    /// process PID's session (FIELD 6 of /proc/PID/stat) or group (5)
    /// differs from this shell's, so that a test's program exits only
    /// once its detached process has really left (else the group kill at
    /// its exit could win the race, and the test would prove nothing).
    const LEFT: &str = "left() { i=0; while [ \"$(cut -d' ' -f$1 /proc/$2/stat 2>/dev/null)\" = \"$(cut -d' ' -f$1 /proc/$$/stat)\" ] && [ $i -lt 300 ]; do sleep 0.01; i=$((i+1)); done; }; ";

    /// `sh -c` with [`LEFT`] defined before `script`.
    fn detaching(script: &str) -> Program {
        program(&["sh", "-c", &format!("{LEFT}{script}")])
    }

    #[test]
    fn what_a_program_detaches_from_its_group_is_killed_when_it_exits() {
        // Issue #36 row 9: each way of leaving the process group, each
        // with a sleep marked by a unique argument.
        for (script, arg) in [
            // A new session that keeps stdout: the run would wait for it.
            ("setsid sleep 30.5101 & left 6 $!; echo '<a/>'", "30.5101"),
            // A new session that lets go of every pipe: a daemon.
            (
                "setsid sh -c 'exec >/dev/null 2>&1 </dev/null; exec sleep 30.5102' & left 6 $!; echo '<a/>'",
                "30.5102",
            ),
            // A cleared environment, still holding stdout.
            (
                "setsid env -i sleep 30.5103 & left 6 $!; echo '<a/>'",
                "30.5103",
            ),
            // A double fork: the intermediate exits once it has forked.
            (
                "setsid sh -c 'sleep 30.5104 </dev/null >/dev/null 2>&1 & echo forked' | read x; echo '<a/>'",
                "30.5104",
            ),
            // Its own process group, not a session.
            (
                "python3 -c 'import os, sys; os.setpgid(0, 0); os.execvp(sys.argv[1], sys.argv[1:])' sleep 30.5105 & left 5 $!; echo '<a/>'",
                "30.5105",
            ),
        ] {
            let started = Instant::now();
            let out = detaching(script).run(b"", &[]).unwrap();
            assert_eq!(&out.stdout[..], b"<a/>\n", "{script}");
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{script}: {:?}",
                started.elapsed()
            );
            assert_none_alive(arg);
        }
    }

    #[test]
    fn what_a_program_detaches_is_killed_on_the_timeout_and_past_the_cap() {
        let started = Instant::now();
        let e = detaching("setsid sleep 30.5111 & sleep 30")
            .with_timeout(Duration::from_millis(300))
            .run(b"", &[])
            .unwrap_err();
        assert_eq!(e, ExecError::Timeout(Duration::from_millis(300)));
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_none_alive("30.5111");

        let e = detaching("setsid sleep 30.5112 & left 6 $!; head -c 100000 /dev/zero; sleep 30")
            .with_max_output(1000)
            .run(b"", &[])
            .unwrap_err();
        assert_eq!(e, ExecError::TooLarge(1000));
        assert_none_alive("30.5112");

        // A non-zero exit: the same.
        let e = detaching("setsid sleep 30.5113 & left 6 $!; exit 4")
            .run(b"", &[])
            .unwrap_err();
        assert!(matches!(e, ExecError::Exit { code: Some(4), .. }), "{e:?}");
        assert_none_alive("30.5113");
    }

    #[test]
    fn output_past_the_cap_kills_the_program() {
        let p = program(&["sh", "-c", "head -c 100000 /dev/zero; sleep 30"]).with_max_output(1000);
        let started = Instant::now();
        let e = p.run(b"", &[]).unwrap_err();
        assert_eq!(e, ExecError::TooLarge(1000));
        assert_eq!(e.to_string(), "wrote more than 1000 bytes of output");
        assert!(started.elapsed() < Duration::from_secs(5));
        // Exactly the cap is fine.
        let out = program(&["head", "-c", "1000", "/dev/zero"])
            .with_max_output(1000)
            .run(b"", &[])
            .unwrap();
        assert_eq!(out.stdout.len(), 1000);
    }

    #[test]
    fn a_program_that_never_reads_its_input_does_not_deadlock() {
        let input = vec![b'x'; 10 * 1024 * 1024];
        // Exits without reading: EPIPE for the writer, not an error.
        let out = program(&["sh", "-c", "echo ignored"])
            .run(&input, &[])
            .unwrap();
        assert_eq!(&out.stdout[..], b"ignored\n");
        // Writes a lot before reading anything.
        let out = program(&[
            "sh",
            "-c",
            "head -c 1048576 /dev/zero; wc -c | tr -d ' ' >&2",
        ])
        .run(&input, &[])
        .unwrap();
        assert_eq!(out.stdout.len(), 1024 * 1024);
        assert_eq!(out.stderr.trim(), (10 * 1024 * 1024).to_string());
        // Never reads and never ends: the timeout still holds.
        let e = program(&["sleep", "30"])
            .with_timeout(Duration::from_millis(200))
            .run(&input, &[])
            .unwrap_err();
        assert!(matches!(e, ExecError::Timeout(_)), "{e:?}");
    }

    #[test]
    fn the_environment_is_exactly_the_allow_list_and_the_extras() {
        let path = std::env::var("PATH").unwrap();
        let env = Program::allowed_env(
            &["PATH", "AXLE_SURELY_UNSET_VARIABLE"],
            &[("FIXED".to_string(), "yes".to_string())],
        );
        assert_eq!(
            env,
            vec![
                ("PATH".to_string(), path.clone()),
                ("FIXED".to_string(), "yes".to_string())
            ]
        );
        let out = program(&["env"])
            .with_env(env)
            .run(b"", &[("AXLE_X".to_string(), "1".to_string())])
            .unwrap();
        let mut lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
        lines.sort_unstable();
        let path_line = format!("PATH={path}");
        // And the run's marker, a fresh one each run.
        let marker = lines.remove(0);
        assert!(marker.starts_with("AXLE_RUN="), "{marker}");
        assert_eq!(lines, vec!["AXLE_X=1", "FIXED=yes", path_line.as_str()]);
        let again = program(&["env"]).run(b"", &[]).unwrap();
        let again = std::str::from_utf8(&again.stdout).unwrap();
        assert!(
            again.contains("AXLE_RUN=") && !again.contains(marker),
            "{again}"
        );
        // Nothing configured replaces it.
        let out = program(&["env"])
            .run(b"", &[("AXLE_RUN".to_string(), "forged".to_string())])
            .unwrap();
        let text = std::str::from_utf8(&out.stdout).unwrap();
        assert!(!text.contains("AXLE_RUN=forged"), "{text}");
    }

    #[test]
    fn the_queue_is_bounded_in_length_and_in_time() {
        let limit = Concurrency::new(1, 1);
        let first = limit.acquire(Duration::ZERO).unwrap();
        assert_eq!(limit.running(), 1);
        // One may wait; its wait runs out.
        let started = Instant::now();
        let e = limit.acquire(Duration::from_millis(100)).unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert!(
            matches!(&e, ExecError::Busy(m) if m.contains("within 100ms")),
            "{e}"
        );
        assert_eq!(limit.queued(), 0);
        // With one waiting, the next is refused at once.
        let waiter = {
            let limit = limit.clone();
            std::thread::spawn(move || limit.acquire(Duration::from_secs(10)).map(drop))
        };
        let queued_by = Instant::now() + Duration::from_secs(5);
        while limit.queued() == 0 && Instant::now() < queued_by {
            std::thread::sleep(Duration::from_millis(1));
        }
        let started = Instant::now();
        let e = limit.acquire(Duration::from_secs(10)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(matches!(e, ExecError::Busy(_)), "{e}");
        // A freed turn goes to the waiter.
        drop(first);
        waiter.join().unwrap().unwrap();
        assert_eq!((limit.running(), limit.queued()), (0, 0));
        // No queue at all: busy at once.
        let none = Concurrency::new(1, 0);
        let _held = none.acquire(Duration::ZERO).unwrap();
        assert!(matches!(
            none.acquire(Duration::from_secs(10)),
            Err(ExecError::Busy(_))
        ));
    }

    #[test]
    fn each_freed_turn_goes_to_one_waiter_and_none_is_lost() {
        // Freed turns wake one waiter each: every one of a queue still
        // gets its turn, and waiters whose waits run out as turns come
        // free pass them on.
        let limit = Concurrency::new(2, 64);
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..24)
            .map(|i| {
                let (limit, done) = (limit.clone(), Arc::clone(&done));
                std::thread::spawn(move || {
                    // Every third gives up soon; the rest wait long enough.
                    let wait = if i % 3 == 0 { 5 } else { 20_000 };
                    if let Ok(permit) = limit.acquire(Duration::from_millis(wait)) {
                        std::thread::sleep(Duration::from_millis(2));
                        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        drop(permit);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // The 16 patient ones all ran (the impatient may or may not have).
        assert!(done.load(std::sync::atomic::Ordering::Relaxed) >= 16);
        assert_eq!((limit.running(), limit.queued()), (0, 0));
    }

    #[test]
    fn messages_read_as_configured() {
        assert_eq!(show_duration(Duration::from_secs(10)), "10s");
        assert_eq!(show_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(show_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(show_size(64 * 1024 * 1024), "64 MiB");
        assert_eq!(show_size(12 * 1024), "12 KiB");
        assert_eq!(show_size(1000), "1000 bytes");
        assert_eq!(
            ExecError::Busy("x".into()).to_string(),
            "is busy: x".to_string()
        );
    }
}
