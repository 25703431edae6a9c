//! convoy's bridge nodes (DESIGN.md, "Bridges"): convoy's bridge-agnostic sensor messages out
//! to a third-party format, commands back in. One module per format over one subscription
//! layer; ROS 2 is the first.
//!
//! - [`config`]: the bridge settings file, its defaults and checks.
//! - [`convert`]: convoy messages to ROS 2 messages and cmd_vel to controls (pure functions).
//! - [`ros_msgs`]: the ROS 2 message types the bridge writes for stock ROS 2 nodes.
//! - [`map`]: the scenario's map (lanes, point cloud) as ROS 2 messages (pure functions).
//! - [`ros2`]: the ROS 2 node on `ros2-client` (names, type hashes, QoS).
//! - [`node`]: the loop of `convoy-bridge`, the stack-in-the-loop barrier included.
//! - [`mcap`]: recordings, the second format: convoy topics to MCAP files and back onto DDS.
//! - [`live_view`]: the live view, a third format: a Foxglove WebSocket server (`convoy view`).

pub mod config;
pub mod convert;
pub mod live_view;
pub mod map;
pub mod mcap;
pub mod node;
pub mod ros2;
pub mod ros_msgs;
