//! The nodes of a launch file beyond the coordinator and the agents, checked: sensor nodes,
//! ROS 2 bridges, recorders and live views, as `convoy launch` and `convoy run` start them
//! (run_cmd::ExtraNodes). launch.rs reads them from a file; this is what it reads them into.

use std::path::PathBuf;

use convoy_core::node::{AdapterChoice, SensorNodeRole};

/// A sensor node of a launch file, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SensorNodeLaunch {
    pub name: String,
    pub role: SensorNodeRole,
    pub capacity: f64,
    /// Which graphics adapter renders its cameras (`convoy-sensor --adapter`).
    pub adapter: AdapterChoice,
    /// Host name.
    pub host: String,
}

impl SensorNodeLaunch {
    /// A sensor node on this host with the default capacity, as `convoy run` starts them.
    pub fn local(name: String, role: SensorNodeRole) -> SensorNodeLaunch {
        SensorNodeLaunch {
            name,
            role,
            capacity: 1.0,
            adapter: AdapterChoice::Auto,
            host: "local".into(),
        }
    }
}

/// A recorder node of a launch file (or of `convoy run --record`): DDS node `bridge/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordNodeLaunch {
    pub name: String,
    pub host: String,
    /// The file, resolved against the launch file; None: the recorder's default name.
    pub out: Option<PathBuf>,
    pub topics: Vec<String>,
}

/// A bridge node of a launch file (or of `convoy run --bridge`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeNodeLaunch {
    pub name: String,
    pub host: String,
    /// The settings file, resolved against the launch file.
    pub config: Option<PathBuf>,
}

/// A live view node (`kind = "foxglove"`): `convoy view` on its host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewNodeLaunch {
    pub name: String,
    pub host: String,
    /// HOST:PORT of its WebSocket server.
    pub bind: String,
}

/// Where a live view listens unless told otherwise (Foxglove's usual port).
pub const DEFAULT_VIEW_BIND: &str = "127.0.0.1:8765";

/// `HOST:PORT` as host and port: "bind '...': expected HOST:PORT, e.g. 127.0.0.1:8765".
pub fn parse_bind(bind: &str) -> Result<(String, u16), String> {
    let bad = || format!("bind '{bind}': expected HOST:PORT, e.g. {DEFAULT_VIEW_BIND}");
    let (host, port) = bind.rsplit_once(':').ok_or_else(bad)?;
    let port = port.parse().map_err(|_| bad())?;
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}
