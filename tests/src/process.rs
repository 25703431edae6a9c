//! Child processes of a test: [`ChildGuard`], killed and reaped when the test ends, and its
//! output's lines; commands run to completion within a time limit; and convoy's node processes
//! on a test's domain, found by their command lines.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use crate::wait_until;

/// A child process killed (and reaped) when the test ends, pass or fail.
pub struct ChildGuard {
    pub child: Child,
    pub name: String,
}

impl ChildGuard {
    pub fn spawn(name: &str, cmd: &mut Command) -> ChildGuard {
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        ChildGuard {
            child,
            name: name.to_string(),
        }
    }

    /// Spawns `cmd` with its stdout piped; returns the child and its stdout's lines.
    pub fn spawn_with_stdout(name: &str, cmd: &mut Command) -> (ChildGuard, Receiver<String>) {
        let mut guard = ChildGuard::spawn(name, cmd.stdout(Stdio::piped()));
        let lines = guard.stdout_lines();
        (guard, lines)
    }

    /// Lines of the child's stdout (spawned with `Stdio::piped()`), read on a thread.
    pub fn stdout_lines(&mut self) -> Receiver<String> {
        let (tx, rx) = std::sync::mpsc::channel();
        let out = self.child.stdout.take();
        forward_lines(out.expect("child spawned with a piped stdout"), tx);
        rx
    }

    /// Lines of the child's stdout and stderr (both spawned piped) together, as they come.
    pub fn all_lines(&mut self) -> Receiver<String> {
        let (tx, rx) = std::sync::mpsc::channel();
        let err = self.child.stderr.take();
        forward_lines(err.expect("child spawned with a piped stderr"), tx.clone());
        let out = self.child.stdout.take();
        forward_lines(out.expect("child spawned with a piped stdout"), tx);
        rx
    }

    /// Waits up to `limit` for the child to exit by itself; its status, or `None` if it is still
    /// running.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, then waits up to `grace` for the exit status.
    pub fn terminate(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        self.signal(libc::SIGTERM, grace)
    }

    /// SIGINT (Ctrl-C), then waits up to `grace` for the exit status.
    pub fn interrupt(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        self.signal(libc::SIGINT, grace)
    }

    fn signal(&mut self, signal: libc::c_int, grace: Duration) -> Option<std::process::ExitStatus> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(status);
        }
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) on our own unreaped child.
            unsafe {
                libc::kill(pid, signal);
            }
        }
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// SIGTERM, and fails the test unless the child exits within `grace`.
    pub fn stop(&mut self, grace: Duration) {
        let status = self.terminate(grace);
        assert!(status.is_some(), "{} did not stop on SIGTERM", self.name);
    }

    /// SIGSTOP: the child is frozen, threads and all (a DDS participant then answers nothing,
    /// announces nothing, acknowledges nothing), until the returned guard is dropped: SIGCONT.
    pub fn freeze(&self) -> Frozen {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: kill(2) on our own unreaped child.
        let stopped = unsafe { libc::kill(pid, libc::SIGSTOP) };
        assert_eq!(stopped, 0, "cannot SIGSTOP {}", self.name);
        Frozen { pid }
    }

    /// SIGKILL: the child is gone at once without a word (no goodbye, no unregistering).
    pub fn kill_now(&mut self) {
        let name = &self.name;
        let killed = self.child.kill();
        killed.unwrap_or_else(|e| panic!("cannot SIGKILL {name}: {e}"));
        let _ = self.child.wait();
    }
}

/// A child stopped by [`ChildGuard::freeze`]; dropping this continues it (SIGCONT), also when
/// the test fails, so the child's own guard can then stop it normally.
pub struct Frozen {
    pid: libc::pid_t,
}

impl Drop for Frozen {
    fn drop(&mut self) {
        // SAFETY: kill(2) on a child of this test, not yet reaped (its guard outlives this).
        unsafe {
            libc::kill(self.pid, libc::SIGCONT);
        }
    }
}

/// Sends each line read from `from` to `to`, on a thread of its own, until either end closes.
fn forward_lines(from: impl Read + Send + 'static, to: Sender<String>) {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            if to.send(line).is_err() {
                break;
            }
        }
    });
}

/// SIGKILL to a node process of the test's own graph (found by [`find_node_process`]).
pub fn sigkill(pid: i32) {
    // SAFETY: kill(2) on a process of this test's own graph.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

impl Drop for ChildGuard {
    /// SIGTERM first, so a `convoy run` under test stops its own children, then SIGKILL.
    fn drop(&mut self) {
        if self.terminate(Duration::from_secs(5)).is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Runs a command to completion with a time limit; returns (status ok, stdout, stderr).
pub fn run_with_timeout(cmd: &mut Command, limit: Duration) -> (bool, String, String) {
    let mut guard = ChildGuard::spawn("command", cmd.stdout(Stdio::piped()).stderr(Stdio::piped()));
    let stdout = guard.child.stdout.take().expect("piped stdout");
    let stderr = guard.child.stderr.take().expect("piped stderr");
    let out_thread =
        std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let err_thread =
        std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let until = Instant::now() + limit;
    let status = loop {
        if let Ok(Some(status)) = guard.child.try_wait() {
            break status;
        }
        assert!(
            Instant::now() < until,
            "command did not finish within {limit:?}: {cmd:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out_thread.join().unwrap_or_default();
    let err = err_thread.join().unwrap_or_default();
    (status.success(), out, err)
}

/// [`run_with_timeout`] of a command that must succeed; returns its stdout.
pub fn run_ok(cmd: &mut Command, limit: Duration) -> String {
    let (ok, out, err) = run_with_timeout(cmd, limit);
    assert!(ok, "{cmd:?} failed:\n{out}\n{err}");
    out
}

/// [`run_with_timeout`] of a command that must fail; returns its stderr.
pub fn run_fails(cmd: &mut Command, limit: Duration) -> String {
    let (ok, out, err) = run_with_timeout(cmd, limit);
    assert!(!ok, "{cmd:?} succeeded:\n{out}");
    err
}

/// Node processes of this test's domain still running (matched on `--domain N` in their
/// command line): what a clean shutdown must leave empty.
pub fn processes_on_domain(domain: u32) -> Vec<String> {
    let needle = format!("--domain\0{domain}\0");
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).to_string();
        // A recorder is `convoy ... record`: the command itself, not a node binary.
        if text.contains(&needle)
            && (text.contains("convoy-agent")
                || text.contains("convoy-coordinator")
                || text.contains("convoy-sensor")
                || text.contains("convoy-bridge")
                || text.contains("\0record\0"))
        {
            found.push(text.replace('\0', " "));
        }
    }
    found
}

/// Waits up to `timeout` until no node process of `domain` is left: what a clean stop leaves.
pub fn wait_nodes_gone(domain: u32, timeout: Duration) {
    wait_until("no node left", timeout, || {
        processes_on_domain(domain).is_empty()
    });
}

/// The pid of the running `binary` (e.g. "convoy-agent") of this test's `domain` whose command
/// line has `flag value` (e.g. "--id", "b2").
pub fn find_node_process(domain: u32, binary: &str, flag: &str, value: &str) -> Option<i32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let words: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|w| String::from_utf8_lossy(w).to_string())
            .collect();
        let has = |a: &str, b: &str| words.windows(2).any(|w| w[0] == a && w[1] == b);
        if words.first().is_some_and(|w| w.ends_with(binary))
            && has(flag, value)
            && has("--domain", &domain.to_string())
        {
            return Some(pid);
        }
    }
    None
}
