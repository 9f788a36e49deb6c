//! One run of a [`Program`], supervised from the calling thread alone.
//!
//! The child is spawned in a process group of its own, with this run's
//! marker ([`MARKER_VARIABLE`]) in its environment. One loop, on the
//! caller's thread, `poll`s everything at once: the child's stdin (fed
//! without blocking), its stdout (read up to the cap) and stderr (kept up
//! to [`STDERR_KEPT`], the rest drained), and its exit (a pidfd; where
//! there is none, a 10 ms tick). There are no helper threads, and every
//! descriptor is owned by the run: nothing can outlive it, whatever a
//! stray process does with the other ends of the pipes.
//!
//! When the child exits, its stdin is closed, its group killed, and then
//! every process recognised as the run's ([`Family`]): so the pipes come
//! to their end and the run returns at once. Past the deadline or the
//! cap, or on any error, the group, the child and the family are killed
//! likewise. The child is always reaped (its group is killed before, so
//! its id cannot have been reused by then).

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions};

use super::reap::{Family, MARKER_VARIABLE, marker_value};
use super::{ExecError, Output, Program, STDERR_KEPT};

/// How often the child's exit is checked for where there is no pidfd.
const TICK: Duration = Duration::from_millis(10);

/// Bytes read from a pipe at a time.
const CHUNK: usize = 64 * 1024;

/// Runs `program`: see [`Program::run_bytes`].
pub(super) fn run(
    program: &Program,
    stdin: Bytes,
    extra_env: &[(String, String)],
) -> Result<Output, ExecError> {
    let deadline = Instant::now() + program.timeout;
    let marker = marker_value();
    let mut command = command(program, extra_env, &marker);
    command
        // No input: /dev/null, which saves a pipe.
        .stdin(if stdin.is_empty() {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command
        .spawn()
        .map_err(|e| ExecError::Spawn(e.to_string()))?;
    let mut running = Running::new(child, &marker);
    let result = running.supervise(stdin, deadline, program);
    running.finish(result)
}

/// The command for `program` with `extra_env` and the run's `marker`: its
/// argv (argv[0] as written), working directory, and exactly the allowed
/// environment, in its own process group. Stdio is the caller's to set.
pub(super) fn command(program: &Program, extra_env: &[(String, String)], marker: &str) -> Command {
    let mut command = Command::new(&program.executable);
    command
        .arg0(&program.argv[0])
        .args(&program.argv[1..])
        .current_dir(&program.cwd)
        .env_clear()
        .envs(program.env.iter().map(|(k, v)| (k, v)))
        .envs(extra_env.iter().map(|(k, v)| (k, v)))
        // Last, so that no configured variable can replace it.
        .env(MARKER_VARIABLE, marker)
        .process_group(0);
    command
}

/// A spawned child being supervised; killed (with its group and family)
/// unless it ended well, and reaped, whatever happens.
struct Running {
    child: Child,
    pid: Pid,
    /// Readable when the child has exited (`None`: no pidfds here).
    pidfd: Option<OwnedFd>,
    family: Family,
    reaped: bool,
}

impl Running {
    fn new(child: Child, marker: &str) -> Running {
        let pid = Pid::from_child(&child);
        let pidfd = rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok();
        let mut pipes = Vec::with_capacity(3);
        if let Some(p) = &child.stdin {
            pipes.push(p.as_fd());
        }
        if let Some(p) = &child.stdout {
            pipes.push(p.as_fd());
        }
        if let Some(p) = &child.stderr {
            pipes.push(p.as_fd());
        }
        let family = Family::new(pid, marker, &pipes);
        Running {
            child,
            pid,
            pidfd,
            family,
            reaped: false,
        }
    }

    /// Feeds stdin, collects stdout and stderr and waits for the exit, all
    /// before `deadline`.
    fn supervise(
        &mut self,
        input: Bytes,
        deadline: Instant,
        program: &Program,
    ) -> Result<Output, ExecError> {
        let (Some(out), Some(err)) = (self.child.stdout.take(), self.child.stderr.take()) else {
            return Err(ExecError::Io("the child's pipes are missing".into()));
        };
        let mut stdin = self.child.stdin.take();
        let (mut out, mut err) = (Some(out), Some(err));
        for fd in [
            out.as_ref().map(|p| p.as_fd()),
            err.as_ref().map(|p| p.as_fd()),
        ]
        .into_iter()
        .chain([stdin.as_ref().map(|p| p.as_fd())])
        .flatten()
        {
            rustix::io::ioctl_fionbio(fd, true)
                .map_err(|e| ExecError::Io(format!("making a pipe non-blocking: {e}")))?;
        }
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let mut fed = 0;
        let mut exited = false;
        loop {
            if !exited && self.has_exited() {
                exited = true;
                // Nobody is meant to read its input any more; whatever it
                // left running dies with it (and lets go of the pipes).
                stdin = None;
                self.kill_leftovers();
            }
            if exited && out.is_none() && err.is_none() {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ExecError::Timeout(program.timeout));
            }
            let watch_exit = !exited && self.pidfd.is_some();
            let wait = if exited || watch_exit {
                left
            } else {
                left.min(TICK)
            };
            let ready = {
                let mut fds = Vec::with_capacity(4);
                let mut slots = [None; 4];
                if let Some(p) = &out {
                    slots[0] = Some(fds.len());
                    fds.push(PollFd::new(p, PollFlags::IN));
                }
                if let Some(p) = &err {
                    slots[1] = Some(fds.len());
                    fds.push(PollFd::new(p, PollFlags::IN));
                }
                if let Some(p) = &stdin {
                    slots[2] = Some(fds.len());
                    fds.push(PollFd::new(p, PollFlags::OUT));
                }
                if let (true, Some(p)) = (watch_exit, &self.pidfd) {
                    slots[3] = Some(fds.len());
                    fds.push(PollFd::new(p, PollFlags::IN));
                }
                let timeout = Timespec::try_from(wait).ok();
                match rustix::event::poll(&mut fds, timeout.as_ref()) {
                    Ok(_) | Err(Errno::INTR) => {}
                    Err(e) => return Err(ExecError::Io(format!("waiting on its pipes: {e}"))),
                }
                slots.map(|slot| slot.is_some_and(|i| !fds[i].revents().is_empty()))
            };
            if ready[0] {
                drain(&mut out, |bytes| {
                    if (stdout.len() + bytes.len()) as u64 > program.max_output {
                        return Err(ExecError::TooLarge(program.max_output));
                    }
                    stdout.extend_from_slice(bytes);
                    Ok(())
                })?;
            }
            if ready[1] {
                drain(&mut err, |bytes| {
                    let room = STDERR_KEPT.saturating_sub(stderr.len());
                    stderr.extend_from_slice(&bytes[..bytes.len().min(room)]);
                    Ok(())
                })?;
            }
            if ready[2] {
                feed(&mut stdin, &input, &mut fed);
            }
            if ready[3] && !self.has_exited() {
                // Readable without an exit: do not trust it again.
                self.pidfd = None;
            }
        }
        Ok(Output {
            stdout: Bytes::from(stdout),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    }

    /// Has the child exited (not reaping it, so its pid, and so its group
    /// id, stay reserved until the group is killed)?
    fn has_exited(&self) -> bool {
        exited_unreaped(self.pid)
    }

    /// Kills what the child left running: its group, then its family.
    fn kill_leftovers(&mut self) {
        kill_group(self.pid);
        let killed = self.family.kill_all();
        if killed > 0 {
            tracing::debug!(
                child = self.pid.as_raw_nonzero().get(),
                killed,
                "killed the processes a program left running outside its group"
            );
        }
    }

    /// Reaps the child (killing it and all it started first unless it
    /// ended well) and turns its status into the result.
    fn finish(mut self, result: Result<Output, ExecError>) -> Result<Output, ExecError> {
        if result.is_err() {
            self.kill();
        }
        let status = self.reap();
        let output = result?;
        let status = status.map_err(|e| ExecError::Io(format!("waiting for it: {e}")))?;
        if status.success() {
            return Ok(output);
        }
        Err(ExecError::Exit {
            code: status.code(),
            signal: status.signal(),
            stderr: output.stderr,
        })
    }

    fn kill(&mut self) {
        kill_group(self.pid);
        // In case it left its group.
        let _ = self.child.kill();
        self.family.kill_all();
    }

    fn reap(&mut self) -> std::io::Result<std::process::ExitStatus> {
        let status = self.child.wait();
        self.reaped = status.is_ok();
        status
    }
}

impl Drop for Running {
    /// A child left unreaped (a panic, a failed wait) is killed and reaped.
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.child.wait();
        }
    }
}

/// Reads what `pipe` has now (it is non-blocking) and hands it to `take`;
/// at its end, the pipe is closed (`None`).
fn drain<R: Read>(
    pipe: &mut Option<R>,
    mut take: impl FnMut(&[u8]) -> Result<(), ExecError>,
) -> Result<(), ExecError> {
    let Some(r) = pipe.as_mut() else {
        return Ok(());
    };
    let mut buf = vec![0; CHUNK];
    loop {
        match r.read(&mut buf) {
            Ok(0) => {
                *pipe = None;
                return Ok(());
            }
            Ok(n) => take(&buf[..n])?,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(ExecError::Io(format!("reading its output: {e}"))),
        }
    }
}

/// Writes what the child's stdin takes now of `input[*fed..]`; at the
/// end of the input, or when the child stops reading (`EPIPE`: the
/// child's business, not an error of the run), stdin is closed.
fn feed<W: Write>(stdin: &mut Option<W>, input: &[u8], fed: &mut usize) {
    let Some(w) = stdin.as_mut() else {
        return;
    };
    while *fed < input.len() {
        match w.write(&input[*fed..]) {
            Ok(n) => *fed += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                if e.kind() != ErrorKind::BrokenPipe {
                    tracing::debug!(error = %e, "writing a program's stdin failed");
                }
                break;
            }
        }
    }
    *stdin = None;
}

/// Has child `pid` exited? Asked without reaping it, so its pid (and so
/// its group id) stays reserved until the group is killed; a child reaped
/// already (ECHILD) has.
pub(super) fn exited_unreaped(pid: Pid) -> bool {
    match rustix::process::waitid(
        WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
    ) {
        Ok(status) => status.is_some(),
        Err(Errno::INTR) => false,
        Err(_) => true,
    }
}

/// SIGKILL to the process group `pid` leads (gone already: nothing to do).
pub(super) fn kill_group(pid: Pid) {
    let _ = rustix::process::kill_process_group(pid, Signal::KILL);
}
