//! convoy-agent: one vehicle with its own rapier3d physics; every other agent is a kinematic
//! "zombie" (DESIGN.md, "Time, clock and determinism").
//!
//! - [`world`]: everything one agent process simulates: ground, static map boxes, road and mesh
//!   surfaces (from `convoy-world`), its own
//!   vehicle and the zombies; stepped with CARLA-style substeps;
//! - [`vehicle`]: the drive model (pedals or velocity commands turned into tire impulses);
//! - [`controller`]: built-in controllers (waypoint following, [`lane_follow`]ing on an
//!   OpenDRIVE map) that produce [`Control`]s;
//! - [`lockstep`]: what the agent does with each Tick (the frame logic);
//! - [`node`]: the node: its DDS endpoints, and the listeners that step it in the receive
//!   thread; [`outbox`]: writes that wait for the agent's own thread;
//! - [`group`]: several agents in one process, each still a DDS node of its own.
//!
//! Everything here is deterministic: the same scenario, controls and zombie states give
//! bit-identical states in every run and process (rapier with `enhanced-determinism`, zombies in
//! agent-id order, no clocks, threads or randomness, transcendental functions from libm).

pub mod controller;
pub mod group;
pub mod lane_follow;
pub mod lockstep;
pub mod node;
pub mod outbox;
pub mod vehicle;
pub mod world;
mod zombies;

pub use controller::{from_spec, Controller, WaypointFollower};
pub use lane_follow::LaneFollower;
pub use vehicle::Vehicle;
pub use world::{substeps, AgentWorld, WorldError};

#[doc(no_inline)]
pub use convoy_core::messages::Control;

/// Transcendental functions through libm (via simba with `libm_force`, which rapier's
/// `enhanced-determinism` turns on) rather than the platform's libm: the results then do not
/// depend on the C library of the host, so trajectories match across machines, not only across
/// runs. (`sqrt` and arithmetic are exact IEEE operations and need no such care.)
pub(crate) mod detmath {
    use rapier3d_f64::math::{ComplexField, RealField};

    pub fn sin(x: f64) -> f64 {
        <f64 as ComplexField>::sin(x)
    }
    pub fn cos(x: f64) -> f64 {
        <f64 as ComplexField>::cos(x)
    }
    pub fn tan(x: f64) -> f64 {
        <f64 as ComplexField>::tan(x)
    }
    pub fn atan(x: f64) -> f64 {
        <f64 as ComplexField>::atan(x)
    }
    pub fn atan2(y: f64, x: f64) -> f64 {
        <f64 as RealField>::atan2(y, x)
    }
}
