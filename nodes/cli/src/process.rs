//! Child processes and signals: start, stop (SIGTERM, bounded wait, SIGKILL), and a flag that
//! Ctrl-C/SIGTERM sets, so a command stops cleanly and leaves no process behind.

use std::process::Child;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// A flag set by SIGINT or SIGTERM (the one every convoy node uses).
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    convoy_core::node::stop_flag().context("cannot install a signal handler")
}

/// SIGTERM, up to `grace` for the child to exit, then SIGKILL; always reaps it.
pub fn stop_child(child: &mut Child, grace: Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) on a pid we spawned and have not reaped yet (try_wait said so).
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
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
