//! convoy-core: what every convoy node shares.
//!
//! - [`messages`]: the wire types, mirroring `idl/convoy.idl`;
//! - [`qos`]: OMG DDS-XML QoS libraries, loaded and resolved into profiles per topic class;
//! - [`topics`]: every topic name convoy uses, built in one place;
//! - [`dds`]: the one typed DDS layer over rustdds (node handle, publishers, subscribers).

pub mod dds;
pub mod messages;
pub mod qos;
pub mod topics;
