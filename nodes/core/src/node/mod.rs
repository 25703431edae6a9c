//! The node kit: what every convoy node process shares, so that a node's `main` shows only
//! what is special about it.
//!
//! - [`NodeId`]: who a node is on `convoy/nodes` (`coordinator`, `agent/ID`, `sensor/NAME`,
//!   `bridge/NAME`), formatted and parsed here only;
//! - [`NodeArgs`]: the arguments every node binary takes (scenario, `--domain`, `--qos`, and
//!   the `--mode`/`--exchange` overrides), declared once;
//! - [`NodeContext`]: a started node (the scenario with overrides applied and checked, the QoS
//!   profiles loaded, the DDS node, its status beacon);
//! - [`node_main`]: the body of every node binary's `main` (logging, a stop flag, exit status).

mod adapter;
mod args;
mod context;
mod id;
mod process;

pub use adapter::AdapterChoice;
pub use args::NodeArgs;
pub use context::{load_scenario, NodeContext, StartError};
pub use id::{NodeId, NodeIdError, SensorNodeRole};
pub use process::{hostname, init_logging, keep_freed_memory, node_main, stop_flag};
