//! convoy-core: what every convoy node shares.
//!
//! - [`messages`]: the wire types, mirroring `idl/convoy.idl`;
//! - [`qos`]: OMG DDS-XML QoS libraries, loaded and resolved into profiles per topic class;
//! - [`topics`]: every topic name convoy uses, built in one place;
//! - [`dds`]: the one typed DDS layer over rustdds (node handle, publishers, subscribers);
//! - [`scenario`]: scenario files (map, clock settings, agents);
//! - [`sensor_catalogue`]: what each sensor kind publishes (topics, types, ROS names);
//! - [`schedule`]: when a sensor fires on simulation time (sensor nodes and the coordinator);
//! - [`node`]: the node kit (identity, common arguments, start-up, process set-up);
//! - [`status`]: every node's NodeStatus heartbeat and its watch over the others';
//! - [`world`]: the validity rules of world commands.

pub mod config;
pub mod dds;
pub mod messages;
pub mod node;
pub mod qos;
pub mod scenario;
pub mod schedule;
pub mod sensor_catalogue;
pub mod status;
pub mod topics;
pub mod views;
pub mod world;
