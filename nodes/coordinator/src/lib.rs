//! convoy-coordinator: the clock (lockstep barrier or wall-clock pace), the registry of nodes
//! with leases, the relay of agent states, world commands and the state log.
//!
//! [`barrier`] and [`registry`] are plain data and rules; [`run`] is the loop that feeds them
//! from DDS.

pub mod assignment;
pub mod barrier;
pub mod registry;
pub mod run;
pub mod sensors;

pub use run::{run, CoordinatorConfig, RunSummary};
