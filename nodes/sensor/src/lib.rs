//! convoy's sensor runtime as a library: the pieces a sensor node is built from, with no DDS in
//! them so each can be tested on its own.
//!
//! - `convoy_core::schedule` (shared with the coordinator, which must know which frames a
//!   sensor node owes): when a sensor fires, on simulation time, at most once per frame.
//! - [`dispatcher`]: SVL-style asynchronous publishing onto a worker pool, with an exclusive
//!   token per publisher and every dropped message counted by reason.
//! - [`noise`]: seeded, per-sensor reproducible gaussian noise.
//! - [`models`]: pure functions from agent states to sensor messages (imu, gnss, odometry,
//!   radar).
//!
//! - [`lidar`]: ray-cast lidar scans through rapier3d's query pipeline.
//! - [`camera`]: off-screen wgpu rendering (colour, depth, semantic classes).
//! - [`sampling`]: one sample of a sensor for a frame: which model its kind runs, with what
//!   noise, stamped how.
//! - [`stages`]: where a camera image's time goes, stage by stage (NodeStatus counters).
//! - [`node`]: the DDS loop of a sensor node (`convoy-sensor`) that ties these together.

pub mod camera;
pub mod dispatcher;
pub mod lidar;
pub mod models;
pub mod node;
pub mod noise;
pub mod sampling;
pub mod stages;

pub use convoy_core::schedule::{ScheduleError, SensorSchedule};
pub use dispatcher::{Dispatcher, DispatcherError, DropCounts, PublisherId};
pub use noise::Noise;

/// The scenarios unit tests share (tests/fixtures/).
#[cfg(test)]
mod fixtures {
    use convoy_core::messages::{AgentState, Pose, Quat, Vec3};
    use convoy_core::scenario::Scenario;

    const TWO_CARS: &str = include_str!("../tests/fixtures/two_cars.toml");

    /// Ego at the origin facing +x (a radar and odometry on it), car_2 20 m ahead.
    pub fn two_cars() -> Scenario {
        Scenario::from_str(TWO_CARS, "two_cars.toml").expect("two_cars.toml")
    }

    /// [`two_cars`] in a yard walled 30 m away on every side.
    pub fn walled_yard() -> Scenario {
        let walls = include_str!("../tests/fixtures/yard_walls.toml");
        Scenario::from_str(&format!("{TWO_CARS}\n{walls}"), "walled_yard.toml").expect("walls")
    }

    /// `agent`'s state in `frame`: standing at (x, y) on the ground (the default box is 1.5 m
    /// high), facing +x.
    pub fn state(agent: &str, frame: u64, x: f64, y: f64) -> AgentState {
        AgentState {
            agent_id: agent.into(),
            frame,
            pose: Pose {
                position: Vec3::new(x, y, 0.75),
                orientation: Quat::IDENTITY,
            },
            ..AgentState::default()
        }
    }
}
