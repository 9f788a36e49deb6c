//! A long-lived process of a [`Program`] (a FastCGI worker), held to the
//! same process-tree rule as a run: what Axle starts, Axle kills. The
//! child gets its own process group and a marker of its own
//! ([`MARKER_VARIABLE`]); stopping it (or dropping the [`Daemon`]) kills
//! the group, the child and every process recognised as its
//! ([`Family`]: started by it however it detached), then reaps the child.
//! Its stderr is read by a thread of its own, line by line, into the log.

use std::io::{BufRead, BufReader};
use std::os::fd::AsFd;
use std::process::{Child, Stdio};

use rustix::process::Pid;

use super::reap::{Family, marker_value};
use super::{ExecError, Program};

/// Longest stderr line logged as it is (the rest of it is cut).
const LINE_KEPT: usize = 4096;

/// A running long-lived child; stopped (with all it started) when dropped.
#[derive(Debug)]
pub struct Daemon {
    child: Child,
    pid: Pid,
    family: Family,
    reaped: bool,
}

impl Program {
    /// Starts the program as a long-lived process with `stdin` as its fd 0
    /// (a listening socket, for a FastCGI worker) and `extra_env` added to
    /// its environment; stdout goes to `/dev/null`, stderr to the log
    /// (`tracing`, target `axle::exec`, naming `argv[0]`). The timeout and
    /// output limit of the program do not apply: the caller bounds each
    /// request it sends.
    pub fn spawn_daemon(
        &self,
        stdin: Stdio,
        extra_env: &[(String, String)],
    ) -> Result<Daemon, ExecError> {
        let marker = marker_value();
        let mut command = super::run::command(self, extra_env, &marker);
        command
            .stdin(stdin)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|e| ExecError::Spawn(e.to_string()))?;
        let pid = Pid::from_child(&child);
        let stderr = child.stderr.take();
        let family = {
            let pipes: Vec<_> = stderr.iter().map(|p| p.as_fd()).collect();
            Family::new(pid, &marker, &pipes)
        };
        if let Some(stderr) = stderr {
            let name = self.argv[0].clone();
            let id = child.id();
            let spawned = std::thread::Builder::new()
                .name("axle-worker-stderr".into())
                .spawn(move || log_lines(stderr, &name, id));
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "no thread to read a worker's stderr: it is dropped");
            }
        }
        Ok(Daemon {
            child,
            pid,
            family,
            reaped: false,
        })
    }
}

/// Logs each line `stderr` gives until its end.
fn log_lines(stderr: std::process::ChildStderr, program: &str, pid: u32) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let kept = &line[..line.len().min(LINE_KEPT)];
                let text = String::from_utf8_lossy(kept);
                let text = text.trim_end();
                if !text.is_empty() {
                    tracing::warn!(target: "axle::exec", program, pid, stderr = %text, "worker wrote to stderr");
                }
            }
        }
    }
}

impl Daemon {
    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Has the child exited? (Not reaped yet, so its group id stays
    /// reserved until [`Daemon::stop`] kills the group.)
    pub fn has_exited(&self) -> bool {
        if self.reaped {
            return true;
        }
        super::run::exited_unreaped(self.pid)
    }

    /// Kills the child, its group and every process recognised as its,
    /// and reaps the child. Returns how many processes outside the group
    /// were killed.
    pub fn stop(&mut self) -> usize {
        if self.reaped {
            return 0;
        }
        super::run::kill_group(self.pid);
        let _ = self.child.kill();
        let killed = self.family.kill_all();
        let _ = self.child.wait();
        self.reaped = true;
        killed
    }
}

/// SIGKILL to the process group of a daemon known only by its pid (one
/// lent out while the server exits: its [`Daemon`] is not at hand). The
/// daemon is not reaped until its `Daemon` is, so the id is still its.
pub fn kill_daemon_group(pid: u32) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        super::run::kill_group(pid);
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_and_what_it_detaches_die_when_it_is_stopped() {
        let dir = std::env::temp_dir();
        let program = Program::new(
            vec![
                "sh".into(),
                "-c".into(),
                "setsid sleep 300 & sleep 300".into(),
            ],
            &dir,
        )
        .unwrap()
        .with_env(Program::allowed_env(&["PATH"], &[]));
        let mut daemon = program.spawn_daemon(Stdio::null(), &[]).unwrap();
        assert!(!daemon.has_exited());
        std::thread::sleep(std::time::Duration::from_millis(200));
        let killed = daemon.stop();
        assert!(killed >= 1, "the detached sleep is found and killed");
        assert!(daemon.has_exited());
    }
}
