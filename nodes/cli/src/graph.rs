//! Bringing up a graph of node processes on this host: start each, prefix every line it prints
//! with its node id, stop them all cleanly (SIGTERM, grace, SIGKILL) at the end or on Ctrl-C,
//! and say which node failed. `convoy run` uses it; `convoy launch` builds on the same code.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::node_process::NodeProcess;
use crate::process::{read_lines, stop_child, terminate};

/// A line a node printed, tagged with the node.
#[derive(Debug, Clone)]
pub struct NodeLine {
    pub node: String,
    pub line: String,
}

struct Running {
    spec: NodeProcess,
    child: Child,
}

/// A running graph. Dropping it stops every node.
pub struct Graph {
    nodes: Vec<Running>,
    lines: Receiver<NodeLine>,
    grace: Duration,
}

/// A binary installed beside the `convoy` executable (cargo puts them in one directory).
pub fn sibling_binary(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the convoy executable")?;
    let dir = exe
        .parent()
        .context("the convoy executable has no directory")?;
    let path = dir.join(name);
    if !path.exists() {
        bail!(
            "{} not found next to {} (build the workspace: cargo build --workspace --bins)",
            name,
            exe.display()
        );
    }
    Ok(path)
}

fn forward(node: String, stream: impl Read + Send + 'static, tx: Sender<NodeLine>) {
    read_lines(stream, move |line| {
        // A node on an ssh terminal ends its lines with \r\n.
        let line = line.trim_end_matches('\r').to_string();
        let node = node.clone();
        tx.send(NodeLine { node, line }).is_ok()
    });
}

/// A private XDG runtime directory for the nodes when the environment has none (a root shell,
/// CI): without one, the graphics stack a camera renders with prints an error about it at start,
/// though nothing is wrong. None when one is set or none can be made.
fn runtime_dir() -> Option<std::path::PathBuf> {
    if std::env::var_os("XDG_RUNTIME_DIR").is_some() {
        return None;
    }
    // SAFETY: getuid(2) has no failure mode and touches no memory.
    let uid = unsafe { libc::getuid() };
    let dir = std::env::temp_dir().join(format!("convoy-runtime-{uid}"));
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => Some(dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Some(dir),
        Err(_) => None,
    }
}

impl Graph {
    /// Starts every node; on a failure to start, the ones already started are stopped.
    pub fn start(nodes: &[NodeProcess], grace: Duration) -> Result<Graph> {
        let (tx, rx) = channel();
        let mut graph = Graph {
            nodes: Vec::new(),
            lines: rx,
            grace,
        };
        let runtime_dir = runtime_dir();
        for spec in nodes {
            let mut command = spec.command();
            if let Some(dir) = &runtime_dir {
                command.env("XDG_RUNTIME_DIR", dir);
            }
            let mut child = command
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .with_context(|| {
                    format!("cannot start node {} ({})", spec.id, spec.program.display())
                })?;
            if let Some(out) = child.stdout.take() {
                forward(spec.id.clone(), out, tx.clone());
            }
            if let Some(err) = child.stderr.take() {
                forward(spec.id.clone(), err, tx.clone());
            }
            graph.nodes.push(Running {
                spec: spec.clone(),
                child,
            });
        }
        Ok(graph)
    }

    /// Lines printed since the last call, waiting up to `wait` for the first.
    pub fn lines(&self, wait: Duration) -> Vec<NodeLine> {
        let mut out = Vec::new();
        if let Ok(line) = self.lines.recv_timeout(wait) {
            out.push(line);
            while let Ok(line) = self.lines.try_recv() {
                out.push(line);
            }
        }
        out
    }

    /// Nodes that have exited, with their status (checked without waiting).
    pub fn exited(&mut self) -> Vec<(String, std::process::ExitStatus)> {
        self.nodes
            .iter_mut()
            .filter_map(|r| match r.child.try_wait() {
                Ok(Some(status)) => Some((r.spec.id.clone(), status)),
                _ => None,
            })
            .collect()
    }

    /// SIGTERM to every node still running, a shared grace period, then SIGKILL.
    pub fn stop(&mut self) {
        for r in self.nodes.iter_mut() {
            terminate(&mut r.child);
        }
        let until = Instant::now() + self.grace;
        for r in self.nodes.iter_mut() {
            let left = until.saturating_duration_since(Instant::now());
            stop_child(&mut r.child, left);
        }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs a graph until `main_node` exits (success ends the run) or `stop` is set; prints every
/// node's lines prefixed with its id. Fails naming any node that exited with an error.
pub fn run_until_done(
    nodes: &[NodeProcess],
    main_node: &str,
    stop: &Arc<AtomicBool>,
    echo: bool,
    mut on_line: impl FnMut(&NodeLine),
) -> Result<()> {
    let mut graph = Graph::start(nodes, Duration::from_secs(3))?;
    let width = nodes.iter().map(|n| n.id.len()).max().unwrap_or(0);
    let print = |l: &NodeLine| {
        if echo {
            // A closed stdout (a pipe whose reader left) must not stop the graph.
            let _ = writeln!(std::io::stdout(), "[{:>width$}] {}", l.node, l.line);
        }
    };
    // Nodes that died while the run went on: reported at once, failing the run at its end.
    let mut failed: Vec<String> = Vec::new();
    let result = loop {
        for line in graph.lines(Duration::from_millis(50)) {
            print(&line);
            on_line(&line);
        }
        let exited = graph.exited();
        if let Some((_, status)) = exited.iter().find(|(id, _)| id == main_node) {
            if status.success() {
                break Ok(());
            }
            break Err(anyhow::anyhow!("node {main_node} failed ({status})"));
        }
        for (id, status) in exited.iter().filter(|(_, s)| !s.success()) {
            if !failed.iter().any(|f| f.starts_with(&format!("{id} "))) {
                let _ = writeln!(
                    std::io::stdout(),
                    "[launch] node {id} failed ({status}); the run goes on without it"
                );
                failed.push(format!("{id} ({status})"));
            }
        }
        if stop.load(Ordering::Relaxed) {
            let _ = writeln!(std::io::stdout(), "stopping (interrupted)");
            break Ok(());
        }
    };
    graph.stop();
    // Whatever the nodes printed while stopping.
    for line in graph.lines(Duration::from_millis(100)) {
        print(&line);
        on_line(&line);
    }
    result?;
    // Exits caused by our own stop do not count: an ssh client, for one, exits 255 when
    // stopped, whatever its remote node did.
    if !failed.is_empty() {
        bail!("node(s) failed: {}", failed.join(", "));
    }
    Ok(())
}
