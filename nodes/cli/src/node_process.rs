//! One node process to start: what it runs, with which environment, on which host, and the
//! command line that starts it there (`ip netns exec` for a namespace, `ssh` for a remote
//! host, where the environment does not cross and goes on the remote command line instead).

use std::path::{Path, PathBuf};
use std::process::Command;

use convoy_core::dds::run_scope::{RunId, RUN_ID_ENV};
use convoy_core::node::NodeId;

use crate::launch::HostAddress;

/// One node process to start.
#[derive(Debug, Clone)]
pub struct NodeProcess {
    /// The node id (or `agents/FIRST..LAST` for a process of several agents).
    pub id: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The DDS nodes this process runs (several agents share one process and participant):
    /// what a secured run's grant for it names.
    pub nodes: Vec<NodeId>,
    /// Variables set for this process only (a secured run's `CONVOY_SECURITY`).
    pub env: Vec<(String, String)>,
    pub host: HostAddress,
}

impl NodeProcess {
    /// `program args` as node `id` on `host`.
    pub fn on(host: &HostAddress, id: &str, program: &Path, args: Vec<String>) -> NodeProcess {
        NodeProcess {
            id: id.to_string(),
            program: program.to_path_buf(),
            args,
            nodes: id.parse().into_iter().collect(),
            env: Vec::new(),
            host: host.clone(),
        }
    }

    /// The same process, running the DDS nodes `nodes` (a process of several agents).
    pub fn running(mut self, nodes: Vec<NodeId>) -> NodeProcess {
        self.nodes = nodes;
        self
    }

    /// The command that starts this node on its host.
    pub fn command(&self) -> Command {
        let (program, args) = self.wrapped();
        let mut command = Command::new(program);
        command.args(args);
        if !matches!(self.host, HostAddress::Ssh { .. }) {
            command.envs(self.env.iter().map(|(k, v)| (k, v)));
        }
        command
    }

    /// The program and arguments that run this node on its host.
    fn wrapped(&self) -> (PathBuf, Vec<String>) {
        let program = &self.program;
        let args = self.args.clone();
        match &self.host {
            HostAddress::Local => (program.to_path_buf(), args),
            HostAddress::Netns(name) => {
                let mut wrapped = vec!["netns".into(), "exec".into(), name.clone()];
                // Where `convoy netns up` emulates the namespace's link delay (a kernel without
                // netem), every convoy process started there sends through that emulation.
                if let Some(link) = crate::launch_cmd::emulated_link(name) {
                    wrapped.push("env".into());
                    wrapped.push(format!("{}={link}", convoy_core::dds::transport::LINK_ENV));
                }
                wrapped.push(program.display().to_string());
                wrapped.extend(args);
                ("ip".into(), wrapped)
            }
            HostAddress::Ssh { user, host } => {
                // The remote shell gets one command line: quote every word.
                // The remote node has a terminal (-tt) but its output is piped back: no colours.
                let mut words = vec!["NO_COLOR=1".to_string()];
                // The environment does not cross ssh: the run id and this node's own
                // variables go on the command line.
                if let Ok(Some(id)) = RunId::from_env() {
                    words.push(format!("{RUN_ID_ENV}={id}"));
                }
                for (key, value) in &self.env {
                    words.push(format!("{key}={}", shell_quote(value)));
                }
                words.push(shell_quote(&program.display().to_string()));
                words.extend(args.iter().map(|a| shell_quote(a)));
                let mut ssh = ssh_args(user.as_deref(), host);
                // -tt: the remote node gets a terminal, so stopping the local ssh client hangs
                // it up and the node stops (SIGHUP) instead of running on, orphaned.
                ssh.insert(0, "-tt".into());
                ssh.push(words.join(" "));
                ("ssh".into(), ssh)
            }
        }
    }
}

/// The arguments of an `ssh` to `user@host`, up to (not including) the remote command: batch
/// mode, new host keys accepted, and `CONVOY_SSH_OPTS`.
pub fn ssh_args(user: Option<&str>, host: &str) -> Vec<String> {
    let target = match user {
        Some(u) => format!("{u}@{host}"),
        None => host.to_string(),
    };
    let mut args: Vec<String> = vec![
        "-o".into(),
        "BatchMode=yes".into(),
        "-o".into(),
        "StrictHostKeyChecking=accept-new".into(),
    ];
    if let Ok(extra) = std::env::var("CONVOY_SSH_OPTS") {
        args.extend(extra.split_whitespace().map(String::from));
    }
    args.push(target);
    args
}

/// `s` as one word of a POSIX shell command line.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-:=,".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
