//! What a run left behind: recognising the processes a program started
//! (however it detached them: `setsid`, a double fork, a daemon) and
//! killing them, without ever touching a process the run did not start.
//!
//! The process group (killed by [`super::run`]) holds a program's
//! ordinary children; a process that called `setsid` or `setpgid` has
//! left it. Those are found in `/proc` by *positive* recognition only, on
//! three marks, each of which only a process of this run can carry:
//! - its environment holds this run's marker, `AXLE_RUN=<token>` (the
//!   token unique to the run: server pid, a counter, the clock), which
//!   every descendant inherits unless it clears its environment;
//! - it holds one of this run's pipes (the child's stdin, stdout or
//!   stderr) as a descriptor that survives `exec` (one still marked
//!   close-on-exec is a process between its `fork` and `exec`, which may
//!   be anybody's, so it does not count);
//! - its parent is a recognised process (a descendant that cleared its
//!   environment and closed its descriptors, while its parent lives).
//!
//! Only processes that started no earlier than the run's child are read
//! at all (and, unless the pid counter wrapped meanwhile, only those with
//! a higher pid: pids are handed out in increasing order), never the
//! server itself nor the child (which [`super::run`] kills and reaps). A recognised process is opened as a pidfd and its
//! start time read again before the signal, so a pid reused between the
//! scan and the kill is never signalled; without pidfds (Linux before
//! 5.3) the check and the `kill` are two steps. Scans repeat until one
//! finds nothing new (a process forking while the scan runs is found by
//! the next), at most [`MAX_ROUNDS`] times.
//!
//! Who reaps them: a killed descendant has been re-parented to init (or
//! to the nearest subreaper), which reaps it. When that is this process
//! (an embedder that set `PR_SET_CHILD_SUBREAPER`), the killed processes
//! are reaped here, through their pidfds. Nothing else is ever waited
//! for: no `waitpid(-1)`, no subreaper of our own (which would make every
//! orphan of the embedding program ours to reap).
//!
//! What escapes (documented in docs/security.md): a descendant that
//! clears its environment, closes or replaces every inherited descriptor
//! and whose parent has exited before the scan; a process of another
//! user (a setuid program: its `/proc` entry cannot be read nor the
//! process signalled); a process started by something else at the
//! program's request (`at`, `systemd-run`, a daemon's socket); a system
//! without `/proc`, where only the process group is killed.

use std::collections::HashSet;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions};

/// The variable every run's environment carries its marker in.
pub const MARKER_VARIABLE: &str = "AXLE_RUN";

/// Most scans of one clean-up (each after killing what the last found).
pub(super) const MAX_ROUNDS: usize = 16;

/// How long a killed descendant that is our own child (this process is
/// a subreaper) is waited for before it is left to a later wait.
const REAP_WAIT: Duration = Duration::from_millis(500);

/// `O_CLOEXEC` as `/proc/PID/fdinfo` shows it (octal flags).
const O_CLOEXEC: u32 = 0o2_000_000;

/// A fresh marker value: unique to this run among every run of every
/// process (pid, a counter, the clock).
pub(super) fn marker_value() -> String {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}.{n}.{nanos:x}", std::process::id())
}

/// One process as `/proc/PID/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    /// `R`, `S`, `Z`, …
    state: u8,
    ppid: i32,
    /// Clock ticks since boot.
    start: u64,
}

/// Reads `/proc/PID/stat` (`None`: gone, or no `/proc`).
fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// `pid (comm) state ppid pgrp … starttime …`: comm may hold anything,
/// so the fields are counted after its last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: *fields.first()?.as_bytes().first()?,
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// A run's family: what recognises its processes, and which have been
/// killed.
#[derive(Debug)]
pub(super) struct Family {
    /// The run's child (never killed here: the run kills and reaps it).
    child: i32,
    /// The child's start time (`None`: no `/proc`; nothing is scanned).
    child_start: Option<u64>,
    /// `AXLE_RUN=<token>`, as an entry of `/proc/PID/environ`.
    marker: Vec<u8>,
    /// The run's pipes as `/proc/PID/fd/N` links show them (`pipe:[N]`).
    pipes: Vec<String>,
    /// Processes signalled already (pid, start time).
    killed: HashSet<(i32, u64)>,
    /// Their pidfds, for the reap.
    pidfds: Vec<(i32, OwnedFd)>,
}

impl Family {
    /// The family of `child`, whose environment holds `marker` (the
    /// value of [`MARKER_VARIABLE`]), and whose pipes are `pipes` (this
    /// process's ends).
    pub(super) fn new(child: Pid, marker: &str, pipes: &[BorrowedFd<'_>]) -> Family {
        let child = child.as_raw_nonzero().get();
        let pipes = pipes
            .iter()
            .filter_map(|fd| std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok())
            .map(|link| link.to_string_lossy().into_owned())
            .filter(|link| link.starts_with("pipe:"))
            .collect();
        Family {
            child,
            child_start: stat(child).map(|s| s.start),
            marker: format!("{MARKER_VARIABLE}={marker}").into_bytes(),
            pipes,
            killed: HashSet::new(),
            pidfds: Vec::new(),
        }
    }

    /// Kills every live process recognised as the run's (except its child),
    /// scanning again until a scan finds nothing new; then reaps those
    /// that are this process's own children. Returns how many were
    /// killed.
    pub(super) fn kill_all(&mut self) -> usize {
        let before = self.killed.len();
        for round in 0.. {
            let found = self.scan();
            let mut new = 0;
            for (pid, start) in found {
                if self.kill(pid, start) {
                    new += 1;
                }
            }
            if new == 0 {
                break;
            }
            if round + 1 == MAX_ROUNDS {
                tracing::warn!(
                    child = self.child,
                    "a program's processes were still starting others after {MAX_ROUNDS} rounds of killing them"
                );
                break;
            }
        }
        self.reap();
        self.killed.len() - before
    }

    /// The live processes recognised as this run's now, with their
    /// start times (the child left out).
    fn scan(&self) -> Vec<(i32, u64)> {
        let Some(child_start) = self.child_start else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let me = std::process::id() as i32;
        // Pids are handed out in increasing order, wrapping at pid_max:
        // unless the counter has wrapped since the child was started, its
        // descendants have higher pids, and only those are read (a stat
        // read costs ~20 µs; a busy host has hundreds of processes).
        // Narrowing the scan can only miss a process, never take one.
        let wrapped = last_pid().is_none_or(|last| last < self.child);
        let young: Vec<(i32, Stat)> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| pid != me && pid != self.child && (wrapped || pid > self.child))
            .filter_map(|pid| Some((pid, stat(pid)?)))
            // No older than the child: the only ones that can be its
            // descendants.
            .filter(|(_, s)| s.start >= child_start && !matches!(s.state, b'Z' | b'X'))
            .collect();
        let mut family: HashSet<i32> = young
            .iter()
            .filter(|(pid, _)| self.marked(*pid) || self.holds_a_pipe(*pid))
            .map(|(pid, _)| *pid)
            .collect();
        family.insert(self.child);
        // Children of recognised processes, to a fixed point.
        loop {
            let more: Vec<i32> = young
                .iter()
                .filter(|(pid, s)| !family.contains(pid) && family.contains(&s.ppid))
                .map(|(pid, _)| *pid)
                .collect();
            if more.is_empty() {
                break;
            }
            family.extend(more);
        }
        young
            .into_iter()
            .filter(|(pid, _)| *pid != self.child && family.contains(pid))
            .map(|(pid, s)| (pid, s.start))
            .collect()
    }

    /// Does `pid`'s environment hold this run's marker?
    fn marked(&self, pid: i32) -> bool {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            return false;
        };
        environ.split(|&b| b == 0).any(|entry| entry == self.marker)
    }

    /// Does `pid` hold one of this run's pipes as a descriptor that
    /// survives `exec`?
    fn holds_a_pipe(&self, pid: i32) -> bool {
        if self.pipes.is_empty() {
            return false;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten().any(|fd| {
            let ours = std::fs::read_link(fd.path())
                .is_ok_and(|link| self.pipes.iter().any(|p| link.as_os_str() == p.as_str()));
            ours && !close_on_exec(pid, &fd.file_name().to_string_lossy())
        })
    }

    /// SIGKILL to `pid` if it is still the process that started at
    /// `start`, once; `true` when it was signalled now.
    fn kill(&mut self, pid: i32, start: u64) -> bool {
        if self.killed.contains(&(pid, start)) {
            return false;
        }
        let Some(id) = Pid::from_raw(pid) else {
            return false;
        };
        let same = || stat(pid).is_some_and(|s| s.start == start);
        match rustix::process::pidfd_open(id, PidfdFlags::empty()) {
            Ok(fd) => {
                // Opened, then checked: the pidfd is that process for good.
                if !same() {
                    return false;
                }
                if let Err(e) = rustix::process::pidfd_send_signal(&fd, Signal::KILL) {
                    tracing::debug!(pid, error = %e, "could not kill a program's leftover process");
                }
                self.pidfds.push((pid, fd));
            }
            Err(Errno::NOSYS) => {
                if !same() {
                    return false;
                }
                let _ = rustix::process::kill_process(id, Signal::KILL);
            }
            // Gone already.
            Err(_) => return false,
        }
        tracing::debug!(
            pid,
            child = self.child,
            "killed a process a program left running"
        );
        self.killed.insert((pid, start));
        true
    }

    /// Reaps the killed processes that are this process's own children
    /// (re-parented to it because it is a subreaper); init reaps the
    /// others.
    fn reap(&mut self) {
        let me = std::process::id() as i32;
        let by = Instant::now() + REAP_WAIT;
        for (pid, fd) in std::mem::take(&mut self.pidfds) {
            if stat(pid).is_none_or(|s| s.ppid != me) {
                continue;
            }
            // Readable once it has exited.
            let left = by.saturating_duration_since(Instant::now());
            let timeout = Timespec::try_from(left).ok();
            let mut poll = [PollFd::new(&fd, PollFlags::IN)];
            let _ = rustix::event::poll(&mut poll, timeout.as_ref());
            let _ = rustix::process::waitid(
                WaitId::PidFd(std::os::fd::AsFd::as_fd(&fd)),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
            );
        }
    }
}

/// The pid the kernel handed out last in this pid namespace
/// (`/proc/sys/kernel/ns_last_pid`; `None`: unknown).
fn last_pid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Is descriptor `fd` of `pid` close-on-exec (`/proc/PID/fdinfo/FD`)?
/// Unknown counts as yes (not recognised).
fn close_on_exec(pid: i32, fd: &str) -> bool {
    let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")) else {
        return true;
    };
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        .is_none_or(|flags| flags & O_CLOEXEC != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let line = "4242 (a (weird) name) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 50";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                state: b'S',
                ppid: 17,
                start: 987654
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        // This process: alive (the main thread waits while tests run).
        let me = stat(std::process::id() as i32).unwrap();
        assert!(matches!(me.state, b'R' | b'S'), "{}", me.state as char);
        assert!(me.start > 0);
    }

    #[test]
    fn markers_are_unique() {
        let (a, b) = (marker_value(), marker_value());
        assert_ne!(a, b);
        assert!(a.starts_with(&format!("{}.", std::process::id())), "{a}");
    }

    #[test]
    fn a_process_that_is_not_the_run_s_is_never_recognised() {
        // The "run's child", and then a sibling of it (a child of this
        // test process, as an embedder's own children are): younger than
        // the child, but with no marker, no pipe of the run, and not the
        // child's descendant.
        let mut child = std::process::Command::new("sleep")
            .arg("30.4241")
            .spawn()
            .unwrap();
        let mut other = std::process::Command::new("sleep")
            .arg("30.4242")
            .spawn()
            .unwrap();
        let mut family = Family::new(Pid::from_child(&child), &marker_value(), &[]);
        assert!(family.child_start.is_some());
        let found = family.scan();
        let other_pid = other.id() as i32;
        assert!(
            found.iter().all(|(pid, _)| *pid != other_pid),
            "{found:?} holds {other_pid}"
        );
        assert_eq!(family.kill_all(), 0);
        assert_eq!(other.try_wait().unwrap(), None, "still running");
        assert_eq!(
            child.try_wait().unwrap(),
            None,
            "the child is not killed here"
        );
        for p in [&mut child, &mut other] {
            p.kill().unwrap();
            p.wait().unwrap();
        }
    }
}
