//! `convoy security init DIR`: every file a secured run needs, made fresh (DDS Security 1.1
//! builtin plugins; the design: docs/SECURITY.md). A run's certificate authority (EC P-256),
//! signing both the identities and the documents; per node an identity certificate and key,
//! and a permissions document granting only the topics that node writes (grants.rs); one
//! governance document for the run's domain.
//!
//! Layout (per node, the file names rustdds and SROS2 use, so a node is pointed at one folder):
//!
//! ```text
//! DIR/                      0700
//!   ca.cert.pem             the run's CA (identities and permissions)
//!   ca.key.pem              0600: signs more nodes later; never leaves DIR
//!   governance.xml          what governance.p7s signs, for reading
//!   enclaves/<node>/        0700, <node> the node id with `/` as `_` (agent_ego)
//!     identity_ca.cert.pem  permissions_ca.cert.pem  governance.p7s
//!     cert.pem  key.pem (0600)  permissions.xml  permissions.p7s
//! ```

mod documents;
pub mod grants;
mod pki;
pub mod run;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use convoy_core::node::NodeId;
use convoy_core::scenario::Scenario;
use convoy_core::topics::TopicClass;

pub use documents::{Governance, Grant};

/// The node ids every `convoy run` of a scenario starts besides its agents.
const RUN_NODES: [&str; 4] = ["coordinator", "sensor/main", "bridge/record", "cli"];

#[derive(Debug, Subcommand)]
pub enum SecurityCommand {
    /// Make a run's CA, each node's identity and permissions, and the governance, in DIR
    Init(InitArgs),
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The folder to make (it must not exist, or be empty)
    pub dir: PathBuf,
    /// The DDS domain the documents allow
    #[arg(long, short = 'd', default_value_t = 0)]
    pub domain: u32,
    /// A scenario whose nodes get identities: the coordinator, each agent, sensor/main,
    /// bridge/record and the `cli` tool
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// More nodes by id (`agent/ego`, `sensor/gpu1`, `bridge/ros2`, `coordinator`; anything
    /// else is a tool)
    #[arg(long = "node", value_name = "ID")]
    pub nodes: Vec<String>,
    /// How long the certificates and permissions stay valid, in hours
    #[arg(long, default_value_t = 24.0)]
    pub valid_hours: f64,
    /// Topic classes whose payloads are encrypted (the others are signed)
    #[arg(long, value_delimiter = ',', default_value = "state,sensor")]
    pub encrypt: Vec<String>,
    /// The run's name in the certificates' subjects (default: the folder's name)
    #[arg(long)]
    pub run: Option<String>,
}

/// What to make: the run, its domain, its identities, how long it is valid and what is
/// encrypted.
#[derive(Debug, Clone)]
pub struct RunSecurity {
    pub run: String,
    pub domain: u32,
    /// Each identity by the name in its certificate (a node id, or a process of several agents,
    /// `agents/FIRST..LAST`) with the topics it may publish.
    pub identities: BTreeMap<String, Vec<String>>,
    pub valid_s: i64,
    pub encrypt: BTreeSet<TopicClass>,
}

impl RunSecurity {
    /// The set `args` describes, its scenario read and its names checked.
    pub fn from_args(args: &InitArgs) -> Result<RunSecurity> {
        if !(args.valid_hours > 0.0 && args.valid_hours <= 24.0 * 366.0) {
            bail!(
                "--valid-hours {}: give a positive number of hours, at most a year",
                args.valid_hours
            );
        }
        let mut nodes = BTreeSet::new();
        if let Some(file) = &args.scenario {
            let scenario = Scenario::load(file)?;
            for id in RUN_NODES {
                nodes.insert(parse_node(id)?);
            }
            for agent in &scenario.agents {
                nodes.insert(NodeId::Agent(agent.id.clone()));
            }
        }
        for id in &args.nodes {
            nodes.insert(parse_node(id).with_context(|| format!("--node {id}"))?);
        }
        if nodes.is_empty() {
            bail!("no nodes: give --scenario FILE or --node ID (repeatable)");
        }
        let encrypt = parse_classes(&args.encrypt).context("--encrypt")?;
        let run = match &args.run {
            Some(run) => run.clone(),
            None => args
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "convoy".into()),
        };
        Ok(RunSecurity {
            run,
            domain: args.domain,
            identities: nodes
                .iter()
                .map(|node| (node.to_string(), grants::publish(node)))
                .collect(),
            valid_s: (args.valid_hours * 3600.0) as i64,
            encrypt,
        })
    }
}

/// Topic classes by their names (`state`, `sensor`, ...), as `--encrypt` and a launch file's
/// `[run] encrypt` give them.
pub fn parse_classes(names: &[String]) -> Result<BTreeSet<TopicClass>> {
    names
        .iter()
        .filter(|c| !c.is_empty())
        .map(|name| {
            TopicClass::ALL
                .into_iter()
                .find(|c| c.profile_name() == name)
                .with_context(|| {
                    let known: Vec<&str> =
                        TopicClass::ALL.iter().map(|c| c.profile_name()).collect();
                    format!("unknown topic class '{name}' (known: {})", known.join(", "))
                })
        })
        .collect()
}

/// A node id as a certificate may carry it: printable, no `,` `=` `+` (they would change the
/// subject's meaning), at most 64 characters (X.509's common name limit).
fn parse_node(id: &str) -> Result<NodeId> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'));
    if !ok {
        bail!("node id '{id}': use 1-64 characters from [A-Za-z0-9_-/.]");
    }
    Ok(id.parse::<NodeId>()?)
}

/// `convoy security init`.
pub fn init(args: &InitArgs) -> Result<()> {
    let spec = RunSecurity::from_args(args)?;
    let made = make(&args.dir, &spec)?;
    println!(
        "made {}: a CA and {} node identities for run '{}' on domain {}, valid {} h; payloads of {} encrypted",
        args.dir.display(),
        made.len(),
        spec.run,
        spec.domain,
        spec.valid_s / 3600,
        if spec.encrypt.is_empty() {
            "no class".to_string()
        } else {
            spec.encrypt
                .iter()
                .map(|c| c.profile_name())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    for dir in made {
        println!("  {}", dir.display());
    }
    Ok(())
}

/// Makes every file of `spec` under `dir` (which must not exist, or be empty); returns each
/// node's folder.
pub fn make(dir: &Path, spec: &RunSecurity) -> Result<Vec<PathBuf>> {
    make_private_dir(dir)?;
    let now = pki::now_s();
    let validity = (now - pki::CLOCK_SKEW_S, spec.valid_s + pki::CLOCK_SKEW_S);
    let ca = pki::certificate_authority(&spec.run, validity)?;
    let ca_pem = ca.cert.to_pem()?;
    write_file(&dir.join("ca.cert.pem"), &ca_pem, false)?;
    write_file(
        &dir.join("ca.key.pem"),
        &ca.key.private_key_to_pem_pkcs8()?,
        true,
    )?;
    let governance = Governance {
        domain: spec.domain,
        encrypt: spec.encrypt.clone(),
    }
    .xml();
    write_file(&dir.join("governance.xml"), governance.as_bytes(), false)?;
    let governance_p7s = documents::sign(&governance, &ca)?;
    write_file(&dir.join("governance.p7s"), &governance_p7s, false)?;
    let enclaves = dir.join("enclaves");
    make_private_dir(&enclaves)?;
    let mut made = Vec::new();
    for (common_name, publish) in &spec.identities {
        let name = grants::enclave_name(common_name);
        let identity = pki::node_identity(&ca, common_name, &spec.run, validity)?;
        let grant = Grant {
            name: name.clone(),
            subject: pki::subject_text(common_name, &spec.run),
            domain: spec.domain,
            validity: (validity.0, validity.0 + validity.1),
            publish: publish.clone(),
            subscribe: vec![grants::ALL_TOPICS.to_string()],
        };
        let folder = enclaves.join(&name);
        make_private_dir(&folder)?;
        let permissions = grant.xml();
        let files: [(&str, Vec<u8>, bool); 7] = [
            ("identity_ca.cert.pem", ca_pem.clone(), false),
            ("permissions_ca.cert.pem", ca_pem.clone(), false),
            ("governance.p7s", governance_p7s.clone(), false),
            ("cert.pem", identity.cert.to_pem()?, false),
            ("key.pem", identity.key.private_key_to_pem_pkcs8()?, true),
            ("permissions.xml", permissions.clone().into_bytes(), false),
            (
                "permissions.p7s",
                documents::sign(&permissions, &ca)?,
                false,
            ),
        ];
        for (file, bytes, private) in files {
            write_file(&folder.join(file), &bytes, private)?;
        }
        made.push(folder);
    }
    Ok(made)
}

/// Makes `dir` readable by its owner only; an existing empty folder is taken (and narrowed),
/// anything else refused: keys are never written over files of another run.
fn make_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "{}: the folder exists and is not empty; give a new one (keys are never written over another run's)",
                    dir.display()
                );
            }
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .with_context(|| format!("cannot make {} private", dir.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot make {}", dir.display())),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", dir.display())),
    }
}

/// Writes a new file, owner-only (`private`) or readable by all.
fn write_file(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if private { 0o600 } else { 0o644 })
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}
