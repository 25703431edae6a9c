//! Launch files (TOML, under launch/): one graph, its hosts and its nodes (DESIGN.md, "Launch").
//!
//! ```toml
//! [run]
//! domain = 7
//! scenario = "scenarios/two_cars.toml"   # relative to this file
//! qos = "../qos/convoy.xml::convoy"      # optional; --qos overrides
//! duration = 30.0                        # simulated seconds; optional
//! agents_per_process = 1                 # optional; N or "auto": a host's agents share processes
//!
//! [hosts.a]
//! address = "netns:convoy_a"            # "local", "netns:NAME" or "ssh://user@host"
//! link = { delay_ms = 2.0, loss_pct = 1.0 }   # netns hosts: what the host sends (netem, or
//!                                             # docs/TRANSPORT.md "Link emulation" without it)
//!
//! [[nodes]]
//! kind = "coordinator"
//! host = "a"
//!
//! [[nodes]]
//! kind = "agent"
//! host = "a"
//! agents = ["ego"]                       # which scenario agents run on this host
//!
//! [[nodes]]
//! kind = "sensor"
//! host = "a"
//! name = "main"                          # sensor nodes: assignments and pins name it
//! role = "main"                          # main (beside the coordinator) or client
//! capacity = 1.0                         # optional; how much sensor load it takes
//! adapter = "auto"                       # optional; cameras on "gpu", "cpu" (lavapipe) or auto
//!
//! [[nodes]]
//! kind = "bridge"
//! host = "a"
//! name = "ros2"                          # optional; it runs as DDS node bridge/NAME
//! config = "bridge.toml"                 # optional; the bridge's settings, relative to this file
//!
//! [[nodes]]
//! kind = "record"                        # an MCAP recorder; the run waits for it
//! host = "a"
//! name = "record"                        # optional; it runs as DDS node bridge/NAME
//! out = "run.mcap"                       # optional; relative to this file
//! topics = ["convoy/agent/*/state"]      # optional; default: every convoy topic
//!
//! [[nodes]]
//! kind = "foxglove"                      # the live view (`convoy view`)
//! host = "a"
//! name = "view"                          # optional; it runs as DDS node bridge/NAME
//! bind = "127.0.0.1:8765"                # optional; where its WebSocket server listens
//! ```
//!
//! Plain data with `deny_unknown_fields`; [`LaunchFile::load`] parses and checks everything
//! (hosts, node kinds, agent ids against the scenario, files) before anything starts, with
//! `file:line: message` errors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use convoy_core::config;
use convoy_core::node::{AdapterChoice, SensorNodeRole};
use convoy_core::qos::QosSpec;
use convoy_core::scenario::{ClockMode, Exchange, Scenario};
use convoy_core::topics::TopicClass;

use crate::grouping::AgentsPerProcess;
pub use crate::host::HostAddress;
pub use crate::launch_nodes::{
    parse_bind, BridgeNodeLaunch, RecordNodeLaunch, SensorNodeLaunch, ViewNodeLaunch,
    DEFAULT_VIEW_BIND,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchSpec {
    pub run: RunSection,
    #[serde(default)]
    pub hosts: BTreeMap<String, HostSpec>,
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    #[serde(default)]
    pub domain: u32,
    /// Scenario file, relative to the launch file.
    pub scenario: PathBuf,
    /// QoS library `FILE[::LIBRARY]`, FILE relative to the launch file.
    pub qos: Option<String>,
    pub mode: Option<ClockMode>,
    pub exchange: Option<Exchange>,
    /// Simulated seconds to run; none: until Ctrl-C.
    pub duration: Option<f64>,
    /// Frames to run; none: until Ctrl-C.
    pub frames: Option<u64>,
    /// Agents that share one process on a host: a number (default 1, a process per agent) or
    /// "auto".
    pub agents_per_process: Option<AgentsPerProcess>,
    /// DDS Security on every node (docs/SECURITY.md): the launcher makes the run's CA, each
    /// node's identity and permissions, and removes them when the run ends.
    #[serde(default)]
    pub secure: bool,
    /// Topic classes whose payloads a secured run encrypts (the others are signed); default
    /// `["state", "sensor"]`.
    pub encrypt: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// `local`, `netns:NAME` or `ssh://user@host`.
    pub address: String,
    /// Link conditions for experiments on what the host sends (netns hosts: applied by
    /// `convoy netns up`, with netem; where the kernel has none, delay and jitter are emulated
    /// in convoy's transport and loss and rate stay in the kernel: nftables and tbf).
    pub link: Option<LinkSpec>,
    /// netns hosts: the host's address on the bridge, `10.77.0.N/24`; derived when absent.
    pub ip: Option<String>,
}

/// Every field defaults to 0: no delay, no loss, no rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkSpec {
    pub delay_ms: f64,
    pub jitter_ms: f64,
    pub loss_pct: f64,
    /// 0: unlimited.
    pub rate_mbit: f64,
}

impl LinkSpec {
    /// Why these conditions cannot be: a value not finite or below 0, or loss above 100%.
    pub fn problem(&self) -> Option<String> {
        let values = [self.delay_ms, self.jitter_ms, self.loss_pct, self.rate_mbit];
        if values.iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
            return Some("link values must be finite and >= 0".into());
        }
        if self.loss_pct > 100.0 {
            return Some(format!("loss_pct = {} is above 100", self.loss_pct));
        }
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Coordinator,
    Agent,
    Sensor,
    Bridge,
    Record,
    Foxglove,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub kind: NodeKind,
    pub host: String,
    /// agent nodes: which scenario agents run on this host (one process each); empty: every
    /// agent no other node claims.
    #[serde(default)]
    pub agents: Vec<String>,
    /// sensor nodes: the node's name (default: its role); bridge nodes: theirs (default ros2).
    pub name: Option<String>,
    /// bridge nodes: the settings file (relative to the launch file).
    pub config: Option<PathBuf>,
    /// sensor nodes: main or client (default main).
    pub role: Option<SensorNodeRole>,
    /// sensor nodes: capacity (default 1.0).
    pub capacity: Option<f64>,
    /// sensor nodes: the graphics adapter of their cameras (default auto).
    pub adapter: Option<AdapterChoice>,
    /// record nodes: the file to write (relative to the launch file).
    pub out: Option<PathBuf>,
    /// record nodes: topic patterns (default: every convoy topic).
    #[serde(default)]
    pub topics: Vec<String>,
    /// foxglove nodes: HOST:PORT of the WebSocket server (default 127.0.0.1:8765).
    pub bind: Option<String>,
}

/// A launch file, loaded and checked, with its paths resolved.
#[derive(Debug, Clone)]
pub struct LaunchFile {
    pub path: PathBuf,
    pub spec: LaunchSpec,
    pub scenario_path: PathBuf,
    pub scenario: Scenario,
    pub qos: Option<QosSpec>,
    pub hosts: BTreeMap<String, HostAddress>,
    /// agent id -> host name.
    pub agent_hosts: BTreeMap<String, String>,
    pub sensor_nodes: Vec<SensorNodeLaunch>,
    pub bridge_nodes: Vec<BridgeNodeLaunch>,
    pub record_nodes: Vec<RecordNodeLaunch>,
    pub view_nodes: Vec<ViewNodeLaunch>,
    /// What a secured run encrypts (`[run] encrypt`).
    pub encrypt: BTreeSet<TopicClass>,
}

/// A launch file that cannot be used, with where.
pub type LaunchError = convoy_core::config::ConfigError;

impl LaunchFile {
    pub fn load(path: &Path) -> Result<LaunchFile, LaunchError> {
        let (text, file) = config::read(path, "launch file")?;
        let invalid = |line: usize, message: String| LaunchError::Invalid {
            file: file.clone(),
            line,
            message,
        };
        let spec: LaunchSpec = config::parse(&text, &file)?;
        let at = |needle: &str| config::find_line(&text, needle);
        let base = path.parent().unwrap_or(Path::new("."));

        if convoy_core::dds::check_domain_id(spec.run.domain).is_err() {
            return Err(invalid(
                at("domain"),
                format!("domain = {} is out of range 0..=232", spec.run.domain),
            ));
        }
        if let Some(d) = spec.run.duration {
            if !(d.is_finite() && d > 0.0) {
                return Err(invalid(
                    at("duration"),
                    format!("duration = {d} must be positive"),
                ));
            }
        }
        let encrypt = match &spec.run.encrypt {
            None => crate::security::run::DEFAULT_ENCRYPTED.into(),
            Some(names) => crate::security::parse_classes(names)
                .map_err(|e| invalid(at("encrypt"), format!("encrypt: {e:#}")))?,
        };
        if spec.run.encrypt.is_some() && !spec.run.secure {
            return Err(invalid(
                at("encrypt"),
                "encrypt applies to secured runs: add secure = true".into(),
            ));
        }
        let scenario_path = base.join(&spec.run.scenario);
        let scenario = Scenario::load(&scenario_path)
            .map_err(|e| invalid(at("scenario"), format!("scenario: {e}")))?;
        let qos = match &spec.run.qos {
            None => None,
            Some(q) => {
                let mut qspec = QosSpec::parse(q);
                qspec.path = base.join(&qspec.path);
                convoy_core::qos::QosSet::load_all(&qspec)
                    .map_err(|e| invalid(at("qos"), format!("qos: {e}")))?;
                Some(qspec)
            }
        };

        let mut hosts = BTreeMap::new();
        for (name, host) in &spec.hosts {
            let host_error = |m: &str| {
                invalid(
                    at(&format!("[hosts.{name}]")),
                    format!("host '{name}': {m}"),
                )
            };
            let address = HostAddress::parse(&host.address).map_err(|m| host_error(&m))?;
            if let Some(link) = &host.link {
                if let Some(problem) = link.problem() {
                    return Err(host_error(&problem));
                }
                if !matches!(address, HostAddress::Netns(_)) {
                    return Err(host_error("link conditions apply to netns hosts only"));
                }
            }
            hosts.insert(name.clone(), address);
        }
        if !hosts.contains_key("local") {
            hosts.insert("local".into(), HostAddress::Local);
        }

        let mut coordinators = 0;
        let mut agent_hosts = BTreeMap::new();
        let mut catch_all: Option<String> = None;
        let known: BTreeSet<String> = scenario.agent_ids().into_iter().collect();
        let mut sensor_nodes: Vec<SensorNodeLaunch> = Vec::new();
        let mut bridge_nodes: Vec<BridgeNodeLaunch> = Vec::new();
        let mut record_nodes: Vec<RecordNodeLaunch> = Vec::new();
        let mut view_nodes: Vec<ViewNodeLaunch> = Vec::new();
        for node in &spec.nodes {
            // Fields that belong to other kinds of node.
            let kind = kind_name(node.kind);
            let kind_line = at(&format!("kind = \"{kind}\""));
            let misplaced =
                |what: &str, line| invalid(line, format!("{what}, not to a {kind} node"));
            if (node.role.is_some() || node.capacity.is_some()) && node.kind != NodeKind::Sensor {
                return Err(misplaced(
                    "role and capacity belong to sensor nodes",
                    kind_line,
                ));
            }
            if node.adapter.is_some() && node.kind != NodeKind::Sensor {
                return Err(misplaced("adapter belongs to sensor nodes", kind_line));
            }
            let named = matches!(
                node.kind,
                NodeKind::Sensor | NodeKind::Bridge | NodeKind::Record | NodeKind::Foxglove
            );
            if node.name.is_some() && !named {
                return Err(misplaced(
                    "name belongs to sensor, bridge, record and foxglove nodes",
                    kind_line,
                ));
            }
            if (node.out.is_some() || !node.topics.is_empty()) && node.kind != NodeKind::Record {
                return Err(misplaced(
                    "out and topics belong to record nodes",
                    kind_line,
                ));
            }
            if node.bind.is_some() && node.kind != NodeKind::Foxglove {
                return Err(misplaced("bind belongs to foxglove nodes", at("bind")));
            }
            if node.config.is_some() && node.kind != NodeKind::Bridge {
                return Err(misplaced("config belongs to bridge nodes", at("config")));
            }
            if !node.agents.is_empty() && node.kind != NodeKind::Agent {
                return Err(misplaced("agents belong to agent nodes", kind_line));
            }
            // Sensor and bridge nodes: a valid name that no other node of the kind has.
            let check_name = |what, name: &str, taken: bool| {
                let line = at(&format!("\"{name}\"")).max(kind_line);
                convoy_core::topics::check_id(what, name)
                    .map_err(|e| invalid(line, e.to_string()))?;
                if taken {
                    let message =
                        format!("two {kind} nodes are named '{name}' (give each a `name`)");
                    return Err(invalid(line, message));
                }
                Ok(())
            };
            if !hosts.contains_key(&node.host) {
                return Err(invalid(
                    at(&format!("\"{}\"", node.host)),
                    format!(
                        "node on unknown host '{}' (hosts: {})",
                        node.host,
                        hosts.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            match node.kind {
                NodeKind::Coordinator => coordinators += 1,
                NodeKind::Agent if node.agents.is_empty() => {
                    if catch_all.replace(node.host.clone()).is_some() {
                        return Err(invalid(
                            at("kind = \"agent\""),
                            "only one agent node may leave `agents` empty (it takes the rest)"
                                .into(),
                        ));
                    }
                }
                NodeKind::Agent => {
                    for a in &node.agents {
                        if !known.contains(a) {
                            return Err(invalid(
                                at(&format!("\"{a}\"")),
                                format!(
                                    "agent '{a}' is not in {} (agents: {})",
                                    scenario_path.display(),
                                    known.iter().cloned().collect::<Vec<_>>().join(", ")
                                ),
                            ));
                        }
                        if agent_hosts.insert(a.clone(), node.host.clone()).is_some() {
                            return Err(invalid(
                                at(&format!("\"{a}\"")),
                                format!("agent '{a}' is launched twice"),
                            ));
                        }
                    }
                }
                NodeKind::Sensor => {
                    let role = node.role.unwrap_or_default();
                    let name = node.name.clone().unwrap_or_else(|| role.to_string());
                    let taken = sensor_nodes.iter().any(|s| s.name == name);
                    check_name("sensor node name", &name, taken)?;
                    let capacity = node.capacity.unwrap_or(1.0);
                    if !(capacity.is_finite() && capacity > 0.0) {
                        return Err(invalid(
                            at("capacity"),
                            format!("sensor node '{name}': capacity = {capacity} must be positive"),
                        ));
                    }
                    sensor_nodes.push(SensorNodeLaunch {
                        name,
                        role,
                        capacity,
                        adapter: node.adapter.unwrap_or_default(),
                        host: node.host.clone(),
                    });
                }
                NodeKind::Record => {
                    // A recorder is DDS node bridge/NAME: no bridge may have its name.
                    let name = node.name.clone().unwrap_or_else(|| "record".into());
                    let taken = bridge_nodes.iter().any(|b| b.name == name)
                        || record_nodes.iter().any(|r| r.name == name)
                        || view_nodes.iter().any(|v| v.name == name);
                    check_name("record node name", &name, taken)?;
                    record_nodes.push(RecordNodeLaunch {
                        name,
                        host: node.host.clone(),
                        out: node.out.as_ref().map(|o| base.join(o)),
                        topics: node.topics.clone(),
                    });
                }
                NodeKind::Bridge => {
                    let name = node.name.clone().unwrap_or_else(|| "ros2".into());
                    let taken = bridge_nodes.iter().any(|b| b.name == name)
                        || record_nodes.iter().any(|r| r.name == name)
                        || view_nodes.iter().any(|v| v.name == name);
                    check_name("bridge node name", &name, taken)?;
                    let config = node.config.as_ref().map(|c| base.join(c));
                    if let Some(c) = &config {
                        if !c.is_file() {
                            return Err(invalid(
                                at("config"),
                                format!("bridge '{name}': no settings file {}", c.display()),
                            ));
                        }
                    }
                    bridge_nodes.push(BridgeNodeLaunch {
                        name,
                        host: node.host.clone(),
                        config,
                    });
                }
                NodeKind::Foxglove => {
                    let name = node.name.clone().unwrap_or_else(|| "view".into());
                    // Views are bridges on DDS (bridge/NAME): one name space for all three.
                    let taken = view_nodes.iter().any(|v| v.name == name)
                        || bridge_nodes.iter().any(|b| b.name == name)
                        || record_nodes.iter().any(|r| r.name == name);
                    check_name("foxglove node name", &name, taken)?;
                    let bind = node
                        .bind
                        .clone()
                        .unwrap_or_else(|| DEFAULT_VIEW_BIND.into());
                    if let Err(e) = parse_bind(&bind) {
                        return Err(invalid(at("bind"), e));
                    }
                    view_nodes.push(ViewNodeLaunch {
                        name,
                        host: node.host.clone(),
                        bind,
                    });
                }
            }
        }
        if coordinators != 1 {
            return Err(invalid(
                at("[[nodes]]"),
                format!("a launch file needs exactly one coordinator node, found {coordinators}"),
            ));
        }
        for a in &known {
            if !agent_hosts.contains_key(a) {
                match &catch_all {
                    Some(host) => {
                        agent_hosts.insert(a.clone(), host.clone());
                    }
                    None => {
                        return Err(invalid(
                            at("[[nodes]]"),
                            format!("scenario agent '{a}' is launched by no node"),
                        ))
                    }
                }
            }
        }
        Ok(LaunchFile {
            path: path.to_path_buf(),
            spec,
            scenario_path,
            scenario,
            qos,
            hosts,
            agent_hosts,
            sensor_nodes,
            bridge_nodes,
            record_nodes,
            view_nodes,
            encrypt,
        })
    }

    /// (host name, namespace) of every `netns:` host, in host-name order.
    pub fn netns_hosts(&self) -> Vec<(String, String)> {
        self.hosts
            .iter()
            .filter_map(|(name, a)| match a {
                HostAddress::Netns(ns) => Some((name.clone(), ns.clone())),
                _ => None,
            })
            .collect()
    }

    /// The host of the coordinator node.
    pub fn coordinator_host(&self) -> &str {
        self.spec
            .nodes
            .iter()
            .find(|n| n.kind == NodeKind::Coordinator)
            .map_or("local", |n| n.host.as_str())
    }
}

pub fn kind_name(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Coordinator => "coordinator",
        NodeKind::Agent => "agent",
        NodeKind::Sensor => "sensor",
        NodeKind::Bridge => "bridge",
        NodeKind::Record => "record",
        NodeKind::Foxglove => "foxglove",
    }
}
