//! A secured run's files, made by the launcher (`convoy run --secure`, `convoy launch
//! --secure`, a launch file's `[run] secure = true`): a fresh CA and one identity per node
//! process in a private folder of the run's own, each process pointed at its enclave by
//! `CONVOY_SECURITY`; a process on an ssh host gets only its enclave, copied over the ssh
//! channel. Everything is removed when the run ends (docs/SECURITY.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use convoy_core::dds::run_scope::RunId;
use convoy_core::dds::security::SECURITY_ENV;
use convoy_core::node::NodeId;
use convoy_core::topics::TopicClass;

use super::{grants, make, RunSecurity};
use crate::launch::HostAddress;
use crate::node_process::{shell_quote, ssh_args, NodeProcess};

/// How long a launcher-made run's certificates and permissions stay valid. A node that joins
/// (or rejoins) later than this is refused; a longer run needs `convoy security init
/// --valid-hours` and its files.
pub const VALID_HOURS: i64 = 72;

/// The identity a user's own tools (`convoy world`, `convoy topic`) take to reach the run.
pub const TOOL_IDENTITY: &str = "cli";

/// The topic classes whose payloads a secured run encrypts unless told otherwise.
pub const DEFAULT_ENCRYPTED: [TopicClass; 2] = [TopicClass::State, TopicClass::Sensor];

/// A secured run's folder; dropping it removes the folder and the enclaves sent to ssh hosts.
pub struct SecuredRun {
    dir: PathBuf,
    /// (ssh arguments up to the command, the enclave's folder there)
    remote: Vec<(Vec<String>, String)>,
}

impl SecuredRun {
    /// Makes the run's files for `nodes` (each process one identity, granted what every DDS
    /// node it runs may publish, plus the tool identity) and points every process at its
    /// enclave.
    pub fn prepare(
        run_id: &RunId,
        domain: u32,
        encrypt: &BTreeSet<TopicClass>,
        nodes: &mut [NodeProcess],
    ) -> Result<SecuredRun> {
        let dir = std::env::temp_dir().join(format!("convoy-secure-{run_id}"));
        let mut identities: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for node in nodes.iter() {
            let publish: BTreeSet<String> = node.nodes.iter().flat_map(grants::publish).collect();
            identities.insert(node.id.clone(), publish.into_iter().collect());
        }
        identities.insert(
            TOOL_IDENTITY.into(),
            grants::publish(&NodeId::Tool(TOOL_IDENTITY.into())),
        );
        let spec = RunSecurity {
            run: run_id.to_string(),
            domain,
            identities,
            valid_s: VALID_HOURS * 3600,
            encrypt: encrypt.clone(),
        };
        // From here on, dropping it removes whatever was made, a failure half way included.
        let mut secured = SecuredRun {
            dir: dir.clone(),
            remote: Vec::new(),
        };
        make(&dir, &spec)?;
        for node in nodes.iter_mut() {
            let name = grants::enclave_name(&node.id);
            let enclave = dir.join("enclaves").join(&name);
            let value = match &node.host {
                HostAddress::Ssh { user, host } => {
                    let ssh = ssh_args(user.as_deref(), host);
                    let there = format!("/tmp/convoy-secure-{run_id}-{name}");
                    secured.remote.push((ssh.clone(), there.clone()));
                    send_enclave(&ssh, &enclave, &there)
                        .with_context(|| format!("node {}: cannot send its enclave", node.id))?;
                    there
                }
                HostAddress::Local | HostAddress::Netns(_) => enclave.display().to_string(),
            };
            node.env.push((SECURITY_ENV.to_string(), value));
        }
        Ok(secured)
    }

    /// The run's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The enclave of the tool identity (for `CONVOY_SECURITY` of a user's `convoy world`).
    pub fn tool_enclave(&self) -> PathBuf {
        self.dir.join("enclaves").join(TOOL_IDENTITY)
    }
}

impl Drop for SecuredRun {
    fn drop(&mut self) {
        for (ssh, there) in &self.remote {
            let removed = Command::new("ssh")
                .args(ssh)
                .arg(format!("rm -rf {}", shell_quote(there)))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if !removed.is_ok_and(|s| s.success()) {
                eprintln!(
                    "could not remove {there} on {}: remove it by hand (it holds a node's key)",
                    ssh.last().map_or("?", String::as_str)
                );
            }
        }
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!(
                    "could not remove {}: {e}; remove it by hand (it holds the run's keys)",
                    self.dir.display()
                );
            }
        }
    }
}

/// Copies the files of `enclave` to the folder `there` on the ssh host (made owner-only), as
/// a tar stream over the ssh channel: nothing of it goes on a command line.
fn send_enclave(ssh: &[String], enclave: &Path, there: &str) -> Result<()> {
    let mut tar = Command::new("tar")
        .arg("-C")
        .arg(enclave)
        .args(["-cf", "-", "."])
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run tar")?;
    let stream = tar.stdout.take().context("tar has no output")?;
    let there = shell_quote(there);
    let out = Command::new("ssh")
        .args(ssh)
        .arg(format!(
            "umask 077 && rm -rf {there} && mkdir -p {there} && tar -C {there} -xf -"
        ))
        .stdin(stream)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("cannot run ssh")?;
    let tarred = tar.wait().context("tar")?;
    if !tarred.success() {
        bail!("tar of {} failed ({tarred})", enclave.display());
    }
    if !out.status.success() {
        bail!(
            "ssh failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
