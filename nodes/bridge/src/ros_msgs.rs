//! ROS 2 message types convoy writes for stock ROS 2 nodes, mirrored field by field.
//!
//! A ROS 2 node on Fast DDS or CycloneDDS reads plain CDR (XCDR1) with the DDS type name
//! `pkg::msg::dds_::Type_` on the DDS topic `rt/<ros topic>`; these structs serialize to exactly
//! that layout (the `.msg` files' field order), so a rustdds writer of them is a ROS 2
//! publisher as far as the subscriber can tell. `convoy bench images` uses them to prove large
//! samples reach rclpy; the ROS 2 bridge publishes them. Only plain data here.
//!
//! Each top-level type also names its ROS package and type and carries the type's hash
//! (REP 2011, `RIHS01_...`, from the type description files ROS ships beside each .msg;
//! tf2_msgs/TFMessage's worked out from TransformStamped's with the same algorithm), which a
//! ROS 2 endpoint announces in its USER_DATA so graph tools show the type.

use serde::{Deserialize, Serialize};

use convoy_core::messages::Message;

/// What a ROS 2 endpoint announces of its message type.
pub trait RosMessage: Message {
    /// `sensor_msgs`
    const PACKAGE: &'static str;
    /// `Image`
    const NAME: &'static str;
    /// `RIHS01_<sha256 hex>` of the type description.
    const TYPE_HASH: &'static str;

    /// The USER_DATA a ROS 2 endpoint of this type carries: `typehash=RIHS01_...;`.
    fn user_data() -> Vec<u8> {
        format!("typehash={};", Self::TYPE_HASH).into_bytes()
    }
}

/// The DDS topic a ROS 2 topic name maps to: `/camera/image` -> `rt/camera/image`.
pub fn dds_topic(ros_topic: &str) -> String {
    format!("rt/{}", ros_topic.trim_start_matches('/'))
}

macro_rules! ros_message {
    ($ty:ident, $package:literal, $name:literal, $hash:literal) => {
        impl Message for $ty {
            const TYPE_NAME: &'static str = concat!($package, "::msg::dds_::", $name, "_");
            const KEYED: bool = false;
            type Key = ();
            fn key(&self) -> Self::Key {}
        }
        impl RosMessage for $ty {
            const PACKAGE: &'static str = $package;
            const NAME: &'static str = $name;
            const TYPE_HASH: &'static str = $hash;
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
ros_message!(
    Image,
    "sensor_msgs",
    "Image",
    "RIHS01_d31d41a9a4c4bc8eae9be757b0beed306564f7526c88ea6a4588fb9582527d47"
);

/// sensor_msgs/PointField; `datatype` is one of the constants below.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PointField {
    pub name: String,
    pub offset: u32,
    pub datatype: u8,
    pub count: u32,
}

impl PointField {
    pub const INT8: u8 = 1;
    pub const UINT8: u8 = 2;
    pub const INT16: u8 = 3;
    pub const UINT16: u8 = 4;
    pub const INT32: u8 = 5;
    pub const UINT32: u8 = 6;
    pub const FLOAT32: u8 = 7;
    pub const FLOAT64: u8 = 8;
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
ros_message!(
    PointCloud2,
    "sensor_msgs",
    "PointCloud2",
    "RIHS01_9198cabf7da3796ae6fe19c4cb3bdd3525492988c70522628af5daa124bae2b5"
);

/// geometry_msgs/Vector3 (and Point, which has the same layout).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Vector3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

/// geometry_msgs/Quaternion.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quaternion {
    pub x: f64,
    pub y: f64,
    pub z: f64,
    pub w: f64,
}

impl Default for Quaternion {
    fn default() -> Self {
        Quaternion {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            w: 1.0,
        }
    }
}

/// geometry_msgs/Pose.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pose {
    pub position: Vector3,
    pub orientation: Quaternion,
}

/// geometry_msgs/Twist: what a stack sends on `cmd_vel`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Twist {
    pub linear: Vector3,
    pub angular: Vector3,
}
ros_message!(
    Twist,
    "geometry_msgs",
    "Twist",
    "RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a"
);

/// A row-major 6x6 covariance (`float64[36]`): a fixed array, no length on the wire. Six rows
/// of six, because serde derives stop at 32 elements; CDR writes nested fixed arrays as the
/// flat one.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Covariance6(pub [[f64; 6]; 6]);

/// geometry_msgs/PoseWithCovariance.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PoseWithCovariance {
    pub pose: Pose,
    pub covariance: Covariance6,
}

/// geometry_msgs/TwistWithCovariance.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TwistWithCovariance {
    pub twist: Twist,
    pub covariance: Covariance6,
}

/// nav_msgs/Odometry.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Odometry {
    pub header: Header,
    pub child_frame_id: String,
    pub pose: PoseWithCovariance,
    pub twist: TwistWithCovariance,
}
ros_message!(
    Odometry,
    "nav_msgs",
    "Odometry",
    "RIHS01_3cc97dc7fb7502f8714462c526d369e35b603cfc34d946e3f2eda2766dfec6e0"
);

/// sensor_msgs/Imu.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Imu {
    pub header: Header,
    pub orientation: Quaternion,
    pub orientation_covariance: [f64; 9],
    pub angular_velocity: Vector3,
    pub angular_velocity_covariance: [f64; 9],
    pub linear_acceleration: Vector3,
    pub linear_acceleration_covariance: [f64; 9],
}
ros_message!(
    Imu,
    "sensor_msgs",
    "Imu",
    "RIHS01_7d9a00ff131080897a5ec7e26e315954b8eae3353c3f995c55faf71574000b5b"
);

/// sensor_msgs/NavSatStatus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NavSatStatus {
    /// -1 no fix, 0 fix, 1 SBAS, 2 GBAS.
    pub status: i8,
    /// Bit mask: 1 GPS, 2 GLONASS, 4 COMPASS, 8 GALILEO.
    pub service: u16,
}

/// sensor_msgs/NavSatFix.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NavSatFix {
    pub header: Header,
    pub status: NavSatStatus,
    pub latitude: f64,
    pub longitude: f64,
    pub altitude: f64,
    pub position_covariance: [f64; 9],
    /// 0 unknown, 1 approximated, 2 diagonal known, 3 known.
    pub position_covariance_type: u8,
}
ros_message!(
    NavSatFix,
    "sensor_msgs",
    "NavSatFix",
    "RIHS01_62223ab3fe210a15976021da7afddc9e200dc9ec75231c1b6a557fc598a65404"
);

/// rosgraph_msgs/Clock, on `/clock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Clock {
    pub clock: Time,
}
ros_message!(
    Clock,
    "rosgraph_msgs",
    "Clock",
    "RIHS01_692f7a66e93a3c83e71765d033b60349ba68023a8c689a79e48078bcb5c58564"
);

/// geometry_msgs/Transform.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Transform {
    pub translation: Vector3,
    pub rotation: Quaternion,
}

/// geometry_msgs/TransformStamped: `header.frame_id` is the parent frame.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TransformStamped {
    pub header: Header,
    pub child_frame_id: String,
    pub transform: Transform,
}

/// tf2_msgs/TFMessage, on `/tf` and `/tf_static`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TfMessage {
    pub transforms: Vec<TransformStamped>,
}
ros_message!(
    TfMessage,
    "tf2_msgs",
    "TFMessage",
    "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"
);

/// builtin_interfaces/Duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Duration {
    pub sec: i32,
    pub nanosec: u32,
}

/// std_msgs/ColorRGBA (each component 0 to 1).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ColorRgba {
    pub r: f32,
    pub g: f32,
    pub b: f32,
    pub a: f32,
}

/// sensor_msgs/CompressedImage (a marker's texture).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CompressedImage {
    pub header: Header,
    pub format: String,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

/// visualization_msgs/UVCoordinate.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct UvCoordinate {
    pub u: f32,
    pub v: f32,
}

/// visualization_msgs/MeshFile.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MeshFile {
    pub filename: String,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

/// visualization_msgs/Marker, in the field order of ROS 2 Kilted's Marker.msg (texture,
/// uv_coordinates, mesh_file and the rest included: plain CDR has no way to leave a field out).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Marker {
    pub header: Header,
    pub ns: String,
    pub id: i32,
    /// One of the shape constants below.
    #[serde(rename = "type")]
    pub kind: i32,
    /// [`Marker::ADD`], [`Marker::DELETE`] or [`Marker::DELETEALL`].
    pub action: i32,
    pub pose: Pose,
    pub scale: Vector3,
    pub color: ColorRgba,
    /// Zero: shown until replaced or deleted.
    pub lifetime: Duration,
    pub frame_locked: bool,
    pub points: Vec<Vector3>,
    pub colors: Vec<ColorRgba>,
    pub texture_resource: String,
    pub texture: CompressedImage,
    pub uv_coordinates: Vec<UvCoordinate>,
    pub text: String,
    pub mesh_resource: String,
    pub mesh_file: MeshFile,
    pub mesh_use_embedded_materials: bool,
}

impl Marker {
    pub const ARROW: i32 = 0;
    pub const CUBE: i32 = 1;
    pub const SPHERE: i32 = 2;
    pub const CYLINDER: i32 = 3;
    pub const LINE_STRIP: i32 = 4;
    pub const LINE_LIST: i32 = 5;
    pub const CUBE_LIST: i32 = 6;
    pub const SPHERE_LIST: i32 = 7;
    pub const POINTS: i32 = 8;
    pub const TEXT_VIEW_FACING: i32 = 9;
    pub const MESH_RESOURCE: i32 = 10;
    pub const TRIANGLE_LIST: i32 = 11;
    pub const ARROW_STRIP: i32 = 12;
    pub const ADD: i32 = 0;
    pub const DELETE: i32 = 2;
    pub const DELETEALL: i32 = 3;
}

/// visualization_msgs/MarkerArray.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MarkerArray {
    pub markers: Vec<Marker>,
}
ros_message!(
    MarkerArray,
    "visualization_msgs",
    "MarkerArray",
    "RIHS01_86cb8800b6fb05b5eff1abd7a56f62a5641d3ae9a1c29e78e67e704f1d067dcf"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ros_topic_names_map_to_rt() {
        assert_eq!(dds_topic("/camera/image"), "rt/camera/image");
        assert_eq!(dds_topic("camera"), "rt/camera");
    }

    #[test]
    fn dds_type_names_follow_ros_conventions() {
        assert_eq!(Image::TYPE_NAME, "sensor_msgs::msg::dds_::Image_");
        assert_eq!(TfMessage::TYPE_NAME, "tf2_msgs::msg::dds_::TFMessage_");
        assert_eq!(
            Clock::user_data(),
            b"typehash=RIHS01_692f7a66e93a3c83e71765d033b60349ba68023a8c689a79e48078bcb5c58564;"
        );
    }

    #[test]
    fn odometry_has_the_plain_cdr_size_of_its_msg_file() {
        // header (stamp 8 + frame_id "map": 4 + 4 incl. NUL) + child_frame_id "base": 4 + 5,
        // padded to 8, then 7 + 36 + 6 + 36 float64.
        let odom = Odometry {
            header: Header {
                stamp: Time::default(),
                frame_id: "map".into(),
            },
            child_frame_id: "base".into(),
            ..Odometry::default()
        };
        let bytes = cdr_encoding::to_vec::<_, byteorder::LittleEndian>(&odom).expect("encode");
        assert_eq!(bytes.len(), 32 + (7 + 36 + 6 + 36) * 8);
        let back: Odometry = cdr_encoding::from_bytes::<_, byteorder::LittleEndian>(&bytes)
            .expect("decode")
            .0;
        assert_eq!(back, odom);
    }

    #[test]
    fn a_marker_has_the_plain_cdr_layout_of_its_msg_file() {
        let marker = Marker {
            header: Header {
                stamp: Time::default(),
                frame_id: "map".into(),
            },
            ns: "ab".into(),
            kind: Marker::LINE_STRIP,
            points: vec![Vector3::default(); 2],
            ..Marker::default()
        };
        let array = MarkerArray {
            markers: vec![marker],
        };
        let bytes = cdr_encoding::to_vec::<_, byteorder::LittleEndian>(&array).expect("encode");
        // rclpy's serialize_message of the same MarkerArray is 273 bytes after its 4-byte
        // encapsulation header: the markers' count 4; header 16; ns 7, pad 1; id, type,
        // action 12; pose 56 and scale 24 (8-aligned at 40); color 16, lifetime 8,
        // frame_locked 1, pad 3; points 4 + 2 * 24; colors 4; texture_resource 5, pad 3;
        // texture 28 (its padding within); uv_coordinates 4; text 5, pad 3; mesh_resource 5,
        // pad 3; mesh_file 12; mesh_use_embedded_materials 1.
        assert_eq!(bytes.len(), 273);
        let back: MarkerArray = cdr_encoding::from_bytes::<_, byteorder::LittleEndian>(&bytes)
            .expect("decode")
            .0;
        assert_eq!(back, array);
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
