//! convoy's wire messages: the Rust mirror of `idl/convoy.idl`, field by field and in order.
//!
//! Every type is plain data (serde + CDR/XCDR1, `@final` in the IDL); the code that acts on
//! them lives elsewhere. Field order is the wire layout, so never reorder fields here without
//! changing the IDL in the same commit: tests/interop checks the two against CycloneDDS types
//! generated from the IDL. IDL enums are 32-bit on the wire; serde's unit-variant index is the
//! enumerator's ordinal, so the Rust enums keep the IDL's order.

use cdr_encoding_size::CdrEncodingSize;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;

/// The IDL of every convoy message, as a recording stores it next to the data (MCAP schema
/// encoding `omgidl`): a reader of the file needs nothing else to decode it.
pub const IDL: &str = include_str!("../../../idl/convoy.idl");

/// What every convoy message type tells the DDS layer.
pub trait Message: Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static {
    /// The IDL's fully qualified type name, as DDS discovery announces it.
    const TYPE_NAME: &'static str;
    /// True when the IDL marks key members; the topic then keeps one instance per key.
    const KEYED: bool;
    /// The key members in IDL order (`()` for unkeyed types).
    type Key: rustdds::Key + DeserializeOwned + Send + Sync;
    fn key(&self) -> Self::Key;
    /// The simulation time the message is stamped with, in nanoseconds; None for a message
    /// that carries none (a recorder then uses the time it received the message).
    fn sim_time_ns(&self) -> Option<u64> {
        None
    }
}

/// The `sim_time_ns` of a message stamped with the signed nanoseconds at `stamp`: a negative
/// stamp (never written by convoy) counts as none.
macro_rules! stamp_method {
    () => {};
    ($($stamp:ident).+) => {
        fn sim_time_ns(&self) -> Option<u64> {
            u64::try_from(self.$($stamp).+).ok()
        }
    };
}

/// `unkeyed_message!(Type)`, or `unkeyed_message!(Type, stamp: field.path)` for a type stamped
/// with simulation time.
macro_rules! unkeyed_message {
    ($ty:ident $(, stamp: $($stamp:ident).+)?) => {
        impl Message for $ty {
            const TYPE_NAME: &'static str = concat!("convoy::", stringify!($ty));
            const KEYED: bool = false;
            type Key = ();
            fn key(&self) -> Self::Key {}
            stamp_method!($($($stamp).+)?);
        }
    };
}

/// `string_keyed_message!(Type, key_field)`, optionally with `stamp: field.path`.
macro_rules! string_keyed_message {
    ($ty:ident, $field:ident $(, stamp: $($stamp:ident).+)?) => {
        impl Message for $ty {
            const TYPE_NAME: &'static str = concat!("convoy::", stringify!($ty));
            const KEYED: bool = true;
            type Key = String;
            fn key(&self) -> Self::Key {
                self.$field.clone()
            }
            stamp_method!($($($stamp).+)?);
        }
    };
}

// ---- geometry ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Vec3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

impl Vec3 {
    pub const ZERO: Vec3 = Vec3 {
        x: 0.0,
        y: 0.0,
        z: 0.0,
    };
    pub const fn new(x: f64, y: f64, z: f64) -> Self {
        Vec3 { x, y, z }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quat {
    pub x: f64,
    pub y: f64,
    pub z: f64,
    pub w: f64,
}

impl Quat {
    pub const IDENTITY: Quat = Quat {
        x: 0.0,
        y: 0.0,
        z: 0.0,
        w: 1.0,
    };
    pub const fn new(x: f64, y: f64, z: f64, w: f64) -> Self {
        Quat { x, y, z, w }
    }
}

impl Default for Quat {
    fn default() -> Self {
        Quat::IDENTITY
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pose {
    pub position: Vec3,
    pub orientation: Quat,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Twist {
    pub linear: Vec3,
    pub angular: Vec3,
}

// ---- agents -----------------------------------------------------------------------------

/// `convoy/agent/<a>/state`: one per agent per frame.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentState {
    pub agent_id: String,
    pub frame: u64,
    pub stamp_ns: i64,
    pub pose: Pose,
    pub twist: Twist,
    pub accel: Vec3,
    /// Half extents of the body's bounding box.
    pub extents: Vec3,
}
string_keyed_message!(AgentState, agent_id, stamp: stamp_ns);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ControlMode {
    /// throttle, brake, steer
    #[default]
    Pedals,
    /// linear_velocity (m/s forward), angular_velocity (rad/s yaw)
    Velocity,
}

/// `convoy/agent/<a>/control`
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Control {
    pub frame: u64,
    pub mode: ControlMode,
    pub throttle: f64,
    pub brake: f64,
    pub steer: f64,
    pub linear_velocity: f64,
    pub angular_velocity: f64,
}
unkeyed_message!(Control);

// ---- clock and barrier ------------------------------------------------------------------

/// `convoy/clock`
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Tick {
    pub frame: u64,
    pub sim_time_ns: i64,
    pub dt_ns: i64,
    pub paused: bool,
    /// Membership for this frame, sorted by id.
    pub agents: Vec<String>,
    /// Relay exchange: the previous frame's states of every member (empty in peer mode).
    pub states: Vec<AgentState>,
}
unkeyed_message!(Tick, stamp: sim_time_ns);

/// `convoy/frame_done`
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FrameDone {
    pub node_id: String,
    pub frame: u64,
}
string_keyed_message!(FrameDone, node_id);

// ---- registry ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum NodeRole {
    Coordinator,
    Agent,
    SensorMain,
    SensorClient,
    Bridge,
    #[default]
    Tool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counter {
    pub name: String,
    pub value: u64,
}

/// `convoy/nodes`
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeStatus {
    pub node_id: String,
    pub role: NodeRole,
    pub host: String,
    pub capacity: f64,
    pub load: f64,
    pub counters: Vec<Counter>,
}
string_keyed_message!(NodeStatus, node_id);

/// The key of [`SensorAssignment`]: both IDL key members, in order.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Serialize,
    Deserialize,
    CdrEncodingSize,
)]
pub struct SensorKey {
    pub agent_id: String,
    pub sensor_id: String,
}
impl rustdds::Key for SensorKey {}

/// `convoy/assignments`
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SensorAssignment {
    pub agent_id: String,
    pub sensor_id: String,
    pub node_id: String,
    pub epoch: u32,
    /// The sensor's load from the scenario, so a table of assignments needs no scenario.
    pub load: f64,
}

impl Message for SensorAssignment {
    const TYPE_NAME: &'static str = "convoy::SensorAssignment";
    const KEYED: bool = true;
    type Key = SensorKey;
    fn key(&self) -> SensorKey {
        SensorKey {
            agent_id: self.agent_id.clone(),
            sensor_id: self.sensor_id.clone(),
        }
    }
}

// ---- sensors ----------------------------------------------------------------------------

/// Starts every sensor message: which sensor, which frame, stamped in simulation time.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SensorHeader {
    pub agent: String,
    pub sensor: String,
    pub frame: u64,
    pub stamp_ns: i64,
    pub seq: u64,
}

/// `convoy/sensor/<a>/<s>`, camera.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Image {
    pub header: SensorHeader,
    pub width: u32,
    pub height: u32,
    /// "rgb8", "rgba8", "mono8", "32FC1"
    pub encoding: String,
    /// Bytes per row.
    pub step: u32,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}
unkeyed_message!(Image, stamp: header.stamp_ns);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum PointFieldType {
    Int8,
    Uint8,
    Int16,
    Uint16,
    Int32,
    Uint32,
    #[default]
    Float32,
    Float64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PointField {
    pub name: String,
    pub offset: u32,
    pub datatype: PointFieldType,
}

/// `convoy/sensor/<a>/<s>`, lidar: packed little-endian points, `point_step` bytes each.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PointCloud {
    pub header: SensorHeader,
    pub point_count: u32,
    pub point_step: u32,
    pub fields: Vec<PointField>,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}
unkeyed_message!(PointCloud, stamp: header.stamp_ns);

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Imu {
    pub header: SensorHeader,
    pub orientation: Quat,
    pub angular_velocity: Vec3,
    pub linear_acceleration: Vec3,
}
unkeyed_message!(Imu, stamp: header.stamp_ns);

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GnssFix {
    pub header: SensorHeader,
    /// Degrees, WGS84.
    pub latitude: f64,
    /// Degrees, WGS84.
    pub longitude: f64,
    /// Metres above the ellipsoid.
    pub altitude: f64,
    /// A fixed-size IDL array: no length on the wire.
    pub position_covariance: [f64; 9],
}
unkeyed_message!(GnssFix, stamp: header.stamp_ns);

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Odometry {
    pub header: SensorHeader,
    pub pose: Pose,
    pub twist: Twist,
}
unkeyed_message!(Odometry, stamp: header.stamp_ns);

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RadarDetection {
    /// Agent id of what was hit.
    pub target: String,
    pub range: f64,
    pub azimuth: f64,
    pub elevation: f64,
    pub radial_velocity: f64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RadarScan {
    pub header: SensorHeader,
    pub detections: Vec<RadarDetection>,
}
unkeyed_message!(RadarScan, stamp: header.stamp_ns);

// ---- world commands ---------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum WorldCommandKind {
    #[default]
    Pause,
    Resume,
    /// agent_id, pose
    Teleport,
    /// agent_id, control
    SetControl,
    /// agent_id ("" for every agent)
    GetState,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WorldCommand {
    pub kind: WorldCommandKind,
    pub agent_id: String,
    pub pose: Pose,
    pub control: Control,
}

/// `convoy/world/request`
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WorldRequest {
    pub request_id: String,
    pub client: String,
    pub command: WorldCommand,
}
string_keyed_message!(WorldRequest, request_id);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ReplyStatus {
    #[default]
    Pending,
    Failed,
    Success,
}

/// `convoy/world/reply`
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WorldReply {
    pub request_id: String,
    pub status: ReplyStatus,
    pub message: String,
    pub states: Vec<AgentState>,
}
string_keyed_message!(WorldReply, request_id);

// ---- tools ------------------------------------------------------------------------------

/// `convoy/bench/ping` and `convoy/bench/pong`: `convoy bench latency`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BenchSample {
    pub seq: u64,
    pub sent_ns: i64,
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
}
unkeyed_message!(BenchSample);

/// Something generic over a message type, run for a type known only by name at run time
/// (`convoy topic echo` learns a sensor topic's type from discovery).
pub trait MessageVisitor {
    type Output;
    fn visit<M: Message>(self) -> Self::Output;
}

/// `<topic>/shm`: where a large sample written to same-host readers lies in its writer's
/// shared-memory ring (docs/TRANSPORT.md, "Same-host shared memory for large samples"). The
/// DDS layer writes and reads these itself; no node sees them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ShmSample {
    /// The ring's file name under /dev/shm.
    pub ring: String,
    pub slot: u32,
    pub seq: u64,
    pub len: u32,
    /// The sample itself, where its writer has no ring (/dev/shm had no room; `ring` is
    /// empty then).
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
}
unkeyed_message!(ShmSample);

/// Every top-level message type name, as DDS announces it.
pub const TYPE_NAMES: [&str; 15] = [
    Tick::TYPE_NAME,
    FrameDone::TYPE_NAME,
    NodeStatus::TYPE_NAME,
    AgentState::TYPE_NAME,
    Control::TYPE_NAME,
    SensorAssignment::TYPE_NAME,
    Image::TYPE_NAME,
    PointCloud::TYPE_NAME,
    Imu::TYPE_NAME,
    GnssFix::TYPE_NAME,
    Odometry::TYPE_NAME,
    RadarScan::TYPE_NAME,
    WorldRequest::TYPE_NAME,
    WorldReply::TYPE_NAME,
    BenchSample::TYPE_NAME,
];

/// Runs `visitor` with the Rust type of `type_name`; `None` for a type convoy does not define.
pub fn visit_type<V: MessageVisitor>(type_name: &str, visitor: V) -> Option<V::Output> {
    Some(match type_name {
        Tick::TYPE_NAME => visitor.visit::<Tick>(),
        FrameDone::TYPE_NAME => visitor.visit::<FrameDone>(),
        NodeStatus::TYPE_NAME => visitor.visit::<NodeStatus>(),
        AgentState::TYPE_NAME => visitor.visit::<AgentState>(),
        Control::TYPE_NAME => visitor.visit::<Control>(),
        SensorAssignment::TYPE_NAME => visitor.visit::<SensorAssignment>(),
        Image::TYPE_NAME => visitor.visit::<Image>(),
        PointCloud::TYPE_NAME => visitor.visit::<PointCloud>(),
        Imu::TYPE_NAME => visitor.visit::<Imu>(),
        GnssFix::TYPE_NAME => visitor.visit::<GnssFix>(),
        Odometry::TYPE_NAME => visitor.visit::<Odometry>(),
        RadarScan::TYPE_NAME => visitor.visit::<RadarScan>(),
        WorldRequest::TYPE_NAME => visitor.visit::<WorldRequest>(),
        WorldReply::TYPE_NAME => visitor.visit::<WorldReply>(),
        BenchSample::TYPE_NAME => visitor.visit::<BenchSample>(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<M: Message + PartialEq>(m: &M) {
        let bytes = cdr_encoding::to_vec::<M, byteorder_le::LE>(m).expect("encode");
        let (back, _) = cdr_encoding::from_bytes::<M, byteorder_le::LE>(&bytes).expect("decode");
        assert_eq!(&back, m);
    }

    mod byteorder_le {
        pub type LE = byteorder::LittleEndian;
    }

    #[test]
    fn every_type_name_dispatches_to_its_type() {
        struct Name;
        impl MessageVisitor for Name {
            type Output = &'static str;
            fn visit<M: Message>(self) -> &'static str {
                M::TYPE_NAME
            }
        }
        for name in TYPE_NAMES {
            assert_eq!(visit_type(name, Name), Some(name));
        }
        assert_eq!(visit_type("convoy::Nope", Name), None);
    }

    #[test]
    fn stamped_types_report_their_sim_time() {
        let tick = Tick {
            sim_time_ns: 42,
            ..Tick::default()
        };
        assert_eq!(tick.sim_time_ns(), Some(42));
        let imu = Imu {
            header: SensorHeader {
                stamp_ns: 7,
                ..SensorHeader::default()
            },
            ..Imu::default()
        };
        assert_eq!(imu.sim_time_ns(), Some(7));
        assert_eq!(FrameDone::default().sim_time_ns(), None);
        assert!(IDL.contains("struct AgentState"));
    }

    #[test]
    fn enums_are_32_bit_ordinals() {
        let bytes = cdr_encoding::to_vec::<NodeRole, byteorder_le::LE>(&NodeRole::SensorMain)
            .expect("encode");
        assert_eq!(bytes, vec![2, 0, 0, 0]);
    }

    #[test]
    fn gnss_covariance_is_a_fixed_array() {
        let fix = GnssFix::default();
        let bytes = cdr_encoding::to_vec::<GnssFix, byteorder_le::LE>(&fix).expect("encode");
        // header: 2 empty strings (4+1 each, padded) + 3 x 8 bytes; then 3 + 9 doubles.
        let header_len = cdr_encoding::to_vec::<SensorHeader, byteorder_le::LE>(&fix.header)
            .expect("encode")
            .len();
        assert_eq!(bytes.len(), header_len + 12 * 8);
        round_trip(&fix);
    }

    #[test]
    fn keyed_types_report_their_keys() {
        let a = SensorAssignment {
            agent_id: "ego".into(),
            sensor_id: "cam".into(),
            node_id: "n".into(),
            epoch: 1,
            load: 0.5,
        };
        assert_eq!(
            a.key(),
            SensorKey {
                agent_id: "ego".into(),
                sensor_id: "cam".into()
            }
        );
        const { assert!(!Tick::KEYED && AgentState::KEYED && FrameDone::KEYED) };
        round_trip(&a);
    }
}
