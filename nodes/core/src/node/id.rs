//! A node's identity: one type, formatted and parsed here only. The text form is the DDS node
//! id every NodeStatus carries (`coordinator`, `agent/ego`, `sensor/main`, `bridge/ros2`);
//! anything else (a CLI tool such as `convoy echo`) is a [`NodeId::Tool`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::messages::NodeRole;
use crate::topics::{check_id, TopicNameError};

/// Who a node is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeId {
    Coordinator,
    /// An agent process, by the scenario's agent id.
    Agent(String),
    /// A sensor node, by its name (assignments and pins use the name).
    Sensor(String),
    /// A bridge node, by its name.
    Bridge(String),
    /// A CLI tool or benchmark endpoint: the whole id as written (`cli/echo`, `bench/ping`).
    Tool(String),
}

/// A sensor node's place: a main node runs beside the coordinator and takes `main_only`
/// sensors; a client node takes the others (and `client_only` ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SensorNodeRole {
    #[default]
    Main,
    Client,
}

/// A node id that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeIdError {
    #[error("node id '{0}' has an empty name after its kind")]
    EmptyName(String),
    #[error(
        "node id '{0}' is not a node: expected coordinator, agent/ID, sensor/NAME or bridge/NAME"
    )]
    NotANode(String),
}

impl NodeId {
    pub fn agent(id: impl Into<String>) -> NodeId {
        NodeId::Agent(id.into())
    }

    pub fn sensor(name: impl Into<String>) -> NodeId {
        NodeId::Sensor(name.into())
    }

    pub fn bridge(name: impl Into<String>) -> NodeId {
        NodeId::Bridge(name.into())
    }

    pub fn tool(id: impl Into<String>) -> NodeId {
        NodeId::Tool(id.into())
    }

    /// The agent id of an agent node.
    pub fn as_agent(&self) -> Option<&str> {
        match self {
            NodeId::Agent(id) => Some(id),
            _ => None,
        }
    }

    /// The name of a sensor node.
    pub fn as_sensor(&self) -> Option<&str> {
        match self {
            NodeId::Sensor(name) => Some(name),
            _ => None,
        }
    }

    /// The name of a bridge node.
    pub fn as_bridge(&self) -> Option<&str> {
        match self {
            NodeId::Bridge(name) => Some(name),
            _ => None,
        }
    }

    /// The role a node of this kind announces (a sensor node's depends on how it was started).
    pub fn role(&self, sensor_role: SensorNodeRole) -> NodeRole {
        match self {
            NodeId::Coordinator => NodeRole::Coordinator,
            NodeId::Agent(_) => NodeRole::Agent,
            NodeId::Sensor(_) => sensor_role.into(),
            NodeId::Bridge(_) => NodeRole::Bridge,
            NodeId::Tool(_) => NodeRole::Tool,
        }
    }

    /// Checks the name an agent, sensor or bridge node id carries: it becomes part of topic
    /// names (`convoy/agent/ID/state`), so the same rule as every id in a topic name.
    pub fn check(&self) -> Result<(), TopicNameError> {
        match self {
            NodeId::Agent(id) => check_id("agent", id),
            NodeId::Sensor(name) => check_id("sensor node", name),
            NodeId::Bridge(name) => check_id("bridge name", name),
            NodeId::Coordinator | NodeId::Tool(_) => Ok(()),
        }
    }

    /// Parses a node id that must name a graph node (not a tool).
    pub fn parse_node(text: &str) -> Result<NodeId, NodeIdError> {
        match text.parse::<NodeId>() {
            Ok(NodeId::Tool(_)) => Err(NodeIdError::NotANode(text.to_string())),
            other => other,
        }
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeId::Coordinator => f.write_str("coordinator"),
            NodeId::Agent(id) => write!(f, "agent/{id}"),
            NodeId::Sensor(name) => write!(f, "sensor/{name}"),
            NodeId::Bridge(name) => write!(f, "bridge/{name}"),
            NodeId::Tool(id) => f.write_str(id),
        }
    }
}

impl FromStr for NodeId {
    type Err = NodeIdError;

    /// Any text is an id: the node kinds by their prefix, everything else a tool.
    fn from_str(text: &str) -> Result<NodeId, NodeIdError> {
        if text == "coordinator" {
            return Ok(NodeId::Coordinator);
        }
        let Some((kind, name)) = text.split_once('/') else {
            return Ok(NodeId::Tool(text.to_string()));
        };
        let make = match kind {
            "agent" => NodeId::Agent,
            "sensor" => NodeId::Sensor,
            "bridge" => NodeId::Bridge,
            _ => return Ok(NodeId::Tool(text.to_string())),
        };
        if name.is_empty() {
            return Err(NodeIdError::EmptyName(text.to_string()));
        }
        Ok(make(name.to_string()))
    }
}

impl From<SensorNodeRole> for NodeRole {
    fn from(role: SensorNodeRole) -> NodeRole {
        match role {
            SensorNodeRole::Main => NodeRole::SensorMain,
            SensorNodeRole::Client => NodeRole::SensorClient,
        }
    }
}

impl SensorNodeRole {
    /// The sensor node role a NodeStatus announces; None for other nodes.
    pub fn of(role: NodeRole) -> Option<SensorNodeRole> {
        match role {
            NodeRole::SensorMain => Some(SensorNodeRole::Main),
            NodeRole::SensorClient => Some(SensorNodeRole::Client),
            _ => None,
        }
    }
}

impl fmt::Display for SensorNodeRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SensorNodeRole::Main => "main",
            SensorNodeRole::Client => "client",
        })
    }
}

impl FromStr for SensorNodeRole {
    type Err = String;
    fn from_str(text: &str) -> Result<SensorNodeRole, String> {
        match text {
            "main" => Ok(SensorNodeRole::Main),
            "client" => Ok(SensorNodeRole::Client),
            _ => Err(format!(
                "'{text}' is not a sensor node role: use main or client"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_back_as_they_were_written() {
        for id in [
            NodeId::Coordinator,
            NodeId::agent("car_07"),
            NodeId::sensor("main"),
            NodeId::bridge("ros2"),
            NodeId::tool("bench/bridge/writer"),
        ] {
            assert_eq!(id.to_string().parse::<NodeId>(), Ok(id));
        }
        assert_eq!(NodeId::agent("ego").to_string(), "agent/ego");
    }

    #[test]
    fn a_kind_without_a_name_and_a_tool_where_a_node_is_wanted_are_errors() {
        assert_eq!(
            "agent/".parse::<NodeId>(),
            Err(NodeIdError::EmptyName("agent/".into()))
        );
        assert!(NodeId::parse_node("cli/echo").is_err());
        assert_eq!(NodeId::parse_node("sensor/b"), Ok(NodeId::sensor("b")));
    }

    #[test]
    fn sensor_roles_announce_their_place() {
        assert_eq!(
            NodeId::sensor("c").role(SensorNodeRole::Client),
            NodeRole::SensorClient
        );
        assert_eq!("client".parse(), Ok(SensorNodeRole::Client));
        assert!("server".parse::<SensorNodeRole>().is_err());
    }
}
