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
//! - [`node`]: the DDS loop of a sensor node (`convoy-sensor`) that ties these together.

pub mod camera;
pub mod dispatcher;
pub mod lidar;
pub mod models;
pub mod node;
pub mod noise;
pub mod sampling;

pub use convoy_core::schedule::{ScheduleError, SensorSchedule};
pub use dispatcher::{Dispatcher, DispatcherError, DropCounts, PublisherId};
pub use noise::Noise;
