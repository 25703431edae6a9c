//! Child processes and signals: start, stop (SIGTERM, bounded wait, SIGKILL), and a flag that
//! Ctrl-C/SIGTERM sets, so a command stops cleanly and leaves no process behind.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// A flag set by SIGINT or SIGTERM (the one every convoy node uses).
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    convoy_core::node::stop_flag().context("cannot install a signal handler")
}

/// SIGTERM to a child that has not exited yet.
pub fn terminate(child: &mut Child) {
    if let (Ok(None), Ok(pid)) = (child.try_wait(), libc::pid_t::try_from(child.id())) {
        // SAFETY: kill(2) on a pid we spawned and have not reaped yet (try_wait said so).
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// SIGTERM, up to `grace` for the child to exit, then SIGKILL; always reaps it.
pub fn stop_child(child: &mut Child, grace: Duration) {
    terminate(child);
    let until = Instant::now() + grace;
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A child that is stopped (SIGTERM, the grace period, SIGKILL) when this drops, so that no
/// path, an error's included, leaves it behind.
pub struct StopOnDrop(pub Child, pub Duration);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        stop_child(&mut self.0, self.1);
    }
}

/// Runs `command` to its end; fails unless it succeeds. `what` names it in the errors.
pub fn run(command: &mut Command, what: &str) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Hands every line of `stream` to `each` on a thread of its own, until the stream ends or
/// `each` returns false.
pub fn read_lines(
    stream: impl Read + Send + 'static,
    mut each: impl FnMut(String) -> bool + Send + 'static,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if !each(line) {
                break;
            }
        }
    });
}

/// Starts `command` (stdin closed, stdout piped) and waits up to `timeout` for a line `ready`
/// accepts; the child is stopped if none comes. Later lines are drained, so the child never
/// blocks on a full pipe.
pub fn spawn_until_ready(
    command: &mut Command,
    what: &str,
    timeout: Duration,
    ready: impl Fn(&str) -> bool + Send + 'static,
) -> Result<Child> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {what}"))?;
    let stdout = child
        .stdout
        .take()
        .context("the child's stdout is not piped")?;
    let (tx, rx) = mpsc::channel();
    read_lines(stdout, move |line| {
        if ready(&line) {
            let _ = tx.send(());
        }
        true
    });
    let waited = rx.recv_timeout(timeout);
    if waited.is_err() {
        stop_child(&mut child, Duration::from_secs(1));
    }
    match waited {
        Ok(()) => Ok(child),
        Err(RecvTimeoutError::Timeout) => bail!("{what} did not become ready within {timeout:?}"),
        Err(RecvTimeoutError::Disconnected) => bail!("{what} stopped before it was ready"),
    }
}
