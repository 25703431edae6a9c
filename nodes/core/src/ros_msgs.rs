//! ROS 2 message types convoy writes for stock ROS 2 nodes, mirrored field by field.
//!
//! A ROS 2 node on Fast DDS or CycloneDDS reads plain CDR (XCDR1) with the DDS type name
//! `pkg::msg::dds_::Type_` on the DDS topic `rt/<ros topic>`; these structs serialize to exactly
//! that layout (the `.msg` files' field order), so a rustdds writer of them is a ROS 2
//! publisher as far as the subscriber can tell. `convoy bench images` uses them to prove large
//! samples reach rclpy; the ROS 2 bridge publishes them. Only plain data here.

use serde::{Deserialize, Serialize};

use crate::messages::Message;

/// The DDS topic a ROS 2 topic name maps to: `/camera/image` -> `rt/camera/image`.
pub fn dds_topic(ros_topic: &str) -> String {
    format!("rt/{}", ros_topic.trim_start_matches('/'))
}

macro_rules! ros_message {
    ($ty:ident, $name:literal) => {
        impl Message for $ty {
            const TYPE_NAME: &'static str = $name;
            const KEYED: bool = false;
            type Key = ();
            fn key(&self) -> Self::Key {}
        }
    };
}

/// builtin_interfaces/Time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Time {
    pub sec: i32,
    pub nanosec: u32,
}

impl Time {
    /// Nanoseconds since the epoch (negative stamps keep nanosec in 0..1e9, as ROS does).
    pub fn from_ns(ns: i64) -> Time {
        Time {
            sec: ns.div_euclid(1_000_000_000) as i32,
            nanosec: ns.rem_euclid(1_000_000_000) as u32,
        }
    }

    pub fn as_ns(&self) -> i64 {
        i64::from(self.sec) * 1_000_000_000 + i64::from(self.nanosec)
    }
}

/// std_msgs/Header.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Header {
    pub stamp: Time,
    pub frame_id: String,
}

/// sensor_msgs/Image.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Image {
    pub header: Header,
    pub height: u32,
    pub width: u32,
    pub encoding: String,
    pub is_bigendian: u8,
    pub step: u32,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}
ros_message!(Image, "sensor_msgs::msg::dds_::Image_");

/// sensor_msgs/PointField; `datatype` is one of the constants below.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PointField {
    pub name: String,
    pub offset: u32,
    pub datatype: u8,
    pub count: u32,
}

impl PointField {
    pub const FLOAT32: u8 = 7;
}

/// sensor_msgs/PointCloud2.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PointCloud2 {
    pub header: Header,
    pub height: u32,
    pub width: u32,
    pub fields: Vec<PointField>,
    pub is_bigendian: bool,
    pub point_step: u32,
    pub row_step: u32,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
    pub is_dense: bool,
}
ros_message!(PointCloud2, "sensor_msgs::msg::dds_::PointCloud2_");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ros_topic_names_map_to_rt() {
        assert_eq!(dds_topic("/camera/image"), "rt/camera/image");
        assert_eq!(dds_topic("camera"), "rt/camera");
    }

    #[test]
    fn time_splits_nanoseconds_like_ros() {
        let t = Time::from_ns(1_500_000_000);
        assert_eq!((t.sec, t.nanosec), (1, 500_000_000));
        assert_eq!(t.as_ns(), 1_500_000_000);
        let negative = Time::from_ns(-1);
        assert_eq!((negative.sec, negative.nanosec), (-1, 999_999_999));
        assert_eq!(negative.as_ns(), -1);
    }
}
