//! A started node: everything a node does before its own work, in one place.

use std::sync::Arc;
use std::time::Duration;

use crate::config::ConfigError;
use crate::dds::{EndpointError, Node, NodeError, Participant};
use crate::messages::NodeRole;
use crate::qos::{QosError, QosSet};
use crate::scenario::Scenario;
use crate::status::StatusBeacon;
use crate::topics::TopicNameError;

use super::{NodeArgs, NodeId, SensorNodeRole};

/// Why a node could not start; each names the file or the setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Scenario(#[from] ConfigError),
    #[error("{file}: {message}")]
    Override { file: String, message: String },
    #[error(transparent)]
    Name(#[from] TopicNameError),
    #[error(transparent)]
    Qos(#[from] QosError),
    #[error(transparent)]
    Dds(#[from] NodeError),
    #[error("cannot announce the node on convoy/nodes: {0}")]
    Beacon(#[from] EndpointError),
}

/// What every node holds once started.
pub struct NodeContext {
    /// The scenario with `--mode`/`--exchange` applied, checked again after them.
    pub scenario: Scenario,
    /// The DDS node: publishers and subscribers come from here.
    pub node: Node,
    /// This node's NodeStatus, already beating with the scenario's lease; the node's loop
    /// calls `beat()` when due and may set capacity, load and counters.
    pub beacon: StatusBeacon,
}

impl NodeContext {
    /// Loads the scenario and applies the overrides, loads the QoS profiles, joins the DDS
    /// domain as `id` and starts the status beacon (sensor nodes: [`Self::start_sensor_node`]).
    pub fn start(args: &NodeArgs, id: NodeId) -> Result<NodeContext, StartError> {
        let role = id.role(SensorNodeRole::Main);
        NodeContext::start_as(args, id, role, None)
    }

    /// [`Self::start`] on `participant`, which other nodes of this process share (the agents
    /// of one process, `convoy_agent::group`).
    pub fn start_on(
        args: &NodeArgs,
        id: NodeId,
        participant: &Participant,
    ) -> Result<NodeContext, StartError> {
        let role = id.role(SensorNodeRole::Main);
        NodeContext::start_as(args, id, role, Some(participant))
    }

    /// [`Self::start`] for sensor node `name`, which announces its `role`.
    pub fn start_sensor_node(
        args: &NodeArgs,
        name: &str,
        role: SensorNodeRole,
    ) -> Result<NodeContext, StartError> {
        NodeContext::start_as(args, NodeId::sensor(name), role.into(), None)
    }

    fn start_as(
        args: &NodeArgs,
        id: NodeId,
        role: NodeRole,
        participant: Option<&Participant>,
    ) -> Result<NodeContext, StartError> {
        id.check()?;
        let scenario = load_scenario(args)?;
        let qos = Arc::new(match &args.qos {
            Some(spec) => QosSet::load(spec)?,
            None => QosSet::builtin(),
        });
        let node = match participant {
            Some(shared) => Node::join(shared, &id.to_string(), qos)?,
            None => Node::new(args.domain, &id.to_string(), qos)?,
        };
        let mut beacon = StatusBeacon::new(&node, role)?;
        beacon.set_lease(Duration::from_secs_f64(scenario.scenario.lease));
        Ok(NodeContext {
            scenario,
            node,
            beacon,
        })
    }
}

/// The scenario file with the command line's overrides applied, checked again after them
/// (an override can make a valid file invalid: async with a variable step, say).
pub fn load_scenario(args: &NodeArgs) -> Result<Scenario, StartError> {
    let mut scenario = Scenario::load(&args.scenario)?;
    if let Some(mode) = args.mode {
        scenario.scenario.mode = mode;
    }
    if let Some(exchange) = args.exchange {
        scenario.scenario.exchange = exchange;
    }
    scenario
        .validate()
        .map_err(|(_, message)| StartError::Override {
            file: args.scenario.display().to_string(),
            message,
        })?;
    Ok(scenario)
}
