//! convoy's sensor runtime as a library: the pieces a sensor node is built from, with no DDS in
//! them so each can be tested on its own.
//!
//! - [`schedule`]: when a sensor fires, on simulation time, at most once per frame.
//! - [`dispatcher`]: SVL-style asynchronous publishing onto a worker pool, with an exclusive
//!   token per publisher and every dropped message counted by reason.
//! - [`pool`]: reused buffers for large payloads (images, point clouds).
//! - [`noise`]: seeded, per-sensor reproducible gaussian noise.
//! - [`models`]: pure functions from agent states to sensor messages (imu, gnss, odometry,
//!   radar).
//!
//! The DDS node loop that ties these together lives elsewhere.

pub mod dispatcher;
pub mod models;
pub mod noise;
pub mod pool;
pub mod schedule;

pub use dispatcher::{Dispatcher, DispatcherError, DropCounts, PublisherId};
pub use noise::Noise;
pub use pool::{BufferPool, PooledBuffer};
pub use schedule::{ScheduleError, SensorSchedule};
