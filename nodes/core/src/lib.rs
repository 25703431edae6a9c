//! convoy-core: what every convoy node shares.
//!
//! - [`messages`]: the wire types, mirroring `idl/convoy.idl`;
//! - [`ros_msgs`]: the ROS 2 message types convoy writes for stock ROS 2 nodes;
//! - [`qos`]: OMG DDS-XML QoS libraries, loaded and resolved into profiles per topic class;
//! - [`topics`]: every topic name convoy uses, built in one place;
//! - [`dds`]: the one typed DDS layer over rustdds (node handle, publishers, subscribers);
//! - [`scenario`]: scenario files (map, clock settings, agents);
//! - [`schedule`]: when a sensor fires on simulation time (sensor nodes and the coordinator);
//! - [`node`]: the node kit (identity, common arguments, start-up, process set-up);
//! - [`status`]: every node's NodeStatus heartbeat and its watch over the others';
//! - [`world`]: the validity rules of world commands.

pub mod config;
pub mod dds;
pub mod launch;
pub mod messages;
pub mod node;
pub mod qos;
pub mod ros_msgs;
pub mod scenario;
pub mod schedule;
pub mod status;
pub mod topics;
pub mod world;
