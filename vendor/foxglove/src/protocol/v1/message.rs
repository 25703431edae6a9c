//! Binary message encoding for Foxglove protocol v1.

pub use crate::protocol::common::BinaryMessage;
