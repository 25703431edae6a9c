//! convoy messages to ROS 2 messages and ROS 2 commands to convoy controls: pure functions,
//! no DDS, so each is tested on its own.
//!
//! Frames: `map` is the world; `<agent>/base_link` the agent's box centre (x forward, y left,
//! z up); `<agent>/<sensor>` a sensor's mount on it (DESIGN.md, "Bridges"). Every header is
//! stamped with simulation time.

use crate::ros_msgs as ros;
use convoy_core::messages::{
    AgentState, Control, ControlMode, GnssFix, Image, Imu, Odometry, PointCloud, PointFieldType,
    SensorHeader, Tick,
};
use convoy_core::scenario::{SensorKind, SensorSpec};

use crate::config::PointCloudLayout;

/// The world frame every pose is given in.
pub const MAP_FRAME: &str = "map";

/// `<agent>/base_link`.
pub fn base_link(agent: &str) -> String {
    format!("{agent}/base_link")
}

/// `<agent>/<sensor>`: a sensor's frame id.
pub fn sensor_frame(agent: &str, sensor: &str) -> String {
    format!("{agent}/{sensor}")
}

fn vector(v: convoy_core::messages::Vec3) -> ros::Vector3 {
    ros::Vector3 {
        x: v.x,
        y: v.y,
        z: v.z,
    }
}

fn quaternion(q: convoy_core::messages::Quat) -> ros::Quaternion {
    ros::Quaternion {
        x: q.x,
        y: q.y,
        z: q.z,
        w: q.w,
    }
}

fn header(stamp_ns: i64, frame_id: String) -> ros::Header {
    ros::Header {
        stamp: ros::Time::from_ns(stamp_ns),
        frame_id,
    }
}

/// A sensor sample's header: its stamp, in the sensor's frame.
fn sample_header(h: &SensorHeader) -> ros::Header {
    header(h.stamp_ns, sensor_frame(&h.agent, &h.sensor))
}

/// A camera image (rgb8, mono8 or 32FC1), its bytes moved, not copied.
pub fn image(image: Image) -> ros::Image {
    ros::Image {
        header: sample_header(&image.header),
        height: image.height,
        width: image.width,
        encoding: image.encoding,
        is_bigendian: 0,
        step: image.step,
        data: image.data,
    }
}

/// A point cloud that cannot be converted, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CloudError {
    #[error("point cloud has no float32 field '{0}'")]
    MissingField(&'static str),
    #[error("point cloud field '{name}' at offset {offset} does not fit in a {step}-byte point")]
    FieldOutside {
        name: String,
        offset: u32,
        step: u32,
    },
    #[error("point cloud data is {len} bytes, not {count} points of {step} bytes")]
    BadLength { len: usize, count: u32, step: u32 },
}

/// Where one field sits in a source point.
fn field_offset(cloud: &PointCloud, name: &'static str, datatype: PointFieldType) -> Option<usize> {
    cloud
        .fields
        .iter()
        .find(|f| f.name == name && f.datatype == datatype)
        .map(|f| f.offset as usize)
}

/// Bytes per point of the ROS layouts (both 16).
pub const ROS_POINT_STEP: u32 = 16;

/// A lidar cloud re-packed into `layout`. Fields are found by name in the source (x, y, z
/// float32 required; intensity float32 in [0, 1] and ring uint16 optional), so a change of
/// the sensor's layout does not silently garble the output.
pub fn point_cloud(
    cloud: &PointCloud,
    layout: PointCloudLayout,
) -> Result<ros::PointCloud2, CloudError> {
    let step = cloud.point_step as usize;
    let count = cloud.point_count as usize;
    if step == 0 || cloud.data.len() != step * count {
        return Err(CloudError::BadLength {
            len: cloud.data.len(),
            count: cloud.point_count,
            step: cloud.point_step,
        });
    }
    let required = |name: &'static str| {
        field_offset(cloud, name, PointFieldType::Float32).ok_or(CloudError::MissingField(name))
    };
    let (x, y, z) = (required("x")?, required("y")?, required("z")?);
    let intensity = field_offset(cloud, "intensity", PointFieldType::Float32);
    let ring = field_offset(cloud, "ring", PointFieldType::Uint16);
    for (name, offset, width) in [
        ("x", Some(x), 4),
        ("y", Some(y), 4),
        ("z", Some(z), 4),
        ("intensity", intensity, 4),
        ("ring", ring, 2),
    ] {
        if let Some(o) = offset {
            if o + width > step {
                return Err(CloudError::FieldOutside {
                    name: name.into(),
                    offset: o as u32,
                    step: cloud.point_step,
                });
            }
        }
    }
    let f32_at = |p: &[u8], o: usize| f32::from_le_bytes([p[o], p[o + 1], p[o + 2], p[o + 3]]);
    let mut data = Vec::with_capacity(count * ROS_POINT_STEP as usize);
    for p in cloud.data.chunks_exact(step) {
        for o in [x, y, z] {
            data.extend_from_slice(&p[o..o + 4]);
        }
        let i = intensity.map_or(0.0, |o| f32_at(p, o));
        match layout {
            PointCloudLayout::Xyzirc => {
                data.push((i.clamp(0.0, 1.0) * 255.0).round() as u8);
                // return_type: convoy's lidar reports the strongest (only) return.
                data.push(0);
                let channel = ring.map_or([0, 0], |o| [p[o], p[o + 1]]);
                data.extend_from_slice(&channel);
            }
            PointCloudLayout::Xyzi => data.extend_from_slice(&i.to_le_bytes()),
        }
    }
    let field = |name: &str, offset: u32, datatype: u8| ros::PointField {
        name: name.into(),
        offset,
        datatype,
        count: 1,
    };
    let mut fields = vec![
        field("x", 0, ros::PointField::FLOAT32),
        field("y", 4, ros::PointField::FLOAT32),
        field("z", 8, ros::PointField::FLOAT32),
    ];
    match layout {
        PointCloudLayout::Xyzirc => fields.extend([
            field("intensity", 12, ros::PointField::UINT8),
            field("return_type", 13, ros::PointField::UINT8),
            field("channel", 14, ros::PointField::UINT16),
        ]),
        PointCloudLayout::Xyzi => fields.push(field("intensity", 12, ros::PointField::FLOAT32)),
    }
    Ok(ros::PointCloud2 {
        header: sample_header(&cloud.header),
        height: 1,
        width: cloud.point_count,
        fields,
        is_bigendian: false,
        point_step: ROS_POINT_STEP,
        row_step: ROS_POINT_STEP * cloud.point_count,
        data,
        is_dense: true,
    })
}

/// An IMU sample; covariances unknown (all zero, as REP 145 allows).
pub fn imu(imu: &Imu) -> ros::Imu {
    ros::Imu {
        header: sample_header(&imu.header),
        orientation: quaternion(imu.orientation),
        orientation_covariance: [0.0; 9],
        angular_velocity: vector(imu.angular_velocity),
        angular_velocity_covariance: [0.0; 9],
        linear_acceleration: vector(imu.linear_acceleration),
        linear_acceleration_covariance: [0.0; 9],
    }
}

/// A GNSS fix: a GPS fix with the sensor's diagonal covariance when it gives one.
pub fn nav_sat_fix(fix: &GnssFix) -> ros::NavSatFix {
    let known = fix.position_covariance.iter().any(|c| *c != 0.0);
    ros::NavSatFix {
        header: sample_header(&fix.header),
        status: ros::NavSatStatus {
            status: 0,
            service: 1,
        },
        latitude: fix.latitude,
        longitude: fix.longitude,
        altitude: fix.altitude,
        position_covariance: fix.position_covariance,
        position_covariance_type: if known { 2 } else { 0 },
    }
}

/// Odometry: pose in `map`, twist in the agent's `base_link`.
pub fn odometry(odom: &Odometry) -> ros::Odometry {
    ros::Odometry {
        header: header(odom.header.stamp_ns, MAP_FRAME.into()),
        child_frame_id: base_link(&odom.header.agent),
        pose: ros::PoseWithCovariance {
            pose: ros::Pose {
                position: vector(odom.pose.position),
                orientation: quaternion(odom.pose.orientation),
            },
            covariance: ros::Covariance6::default(),
        },
        twist: ros::TwistWithCovariance {
            twist: ros::Twist {
                linear: vector(odom.twist.linear),
                angular: vector(odom.twist.angular),
            },
            covariance: ros::Covariance6::default(),
        },
    }
}

/// `/clock` for a tick.
pub fn clock(tick: &Tick) -> ros::Clock {
    ros::Clock {
        clock: ros::Time::from_ns(tick.sim_time_ns),
    }
}

/// `map` -> `<agent>/base_link` at the state's frame.
pub fn agent_transform(state: &AgentState) -> ros::TransformStamped {
    ros::TransformStamped {
        header: header(state.stamp_ns, MAP_FRAME.into()),
        child_frame_id: base_link(&state.agent_id),
        transform: ros::Transform {
            translation: vector(state.pose.position),
            rotation: quaternion(state.pose.orientation),
        },
    }
}

/// `<agent>/base_link` -> `<agent>/<sensor>`: the sensor's mount (and a camera's pitch, about
/// y, as the renderer applies it). Static: stamped at time zero.
pub fn sensor_transform(
    agent: &str,
    spec: &SensorSpec,
    half_extents: [f64; 3],
) -> ros::TransformStamped {
    let [x, y, z] = spec.mount_offset(half_extents);
    let pitch = if spec.kind == SensorKind::Camera {
        spec.pitch.unwrap_or(0.0).to_radians()
    } else {
        0.0
    };
    ros::TransformStamped {
        header: header(0, base_link(agent)),
        child_frame_id: sensor_frame(agent, &spec.id),
        transform: ros::Transform {
            translation: ros::Vector3 { x, y, z },
            rotation: ros::Quaternion {
                x: 0.0,
                y: (pitch / 2.0).sin(),
                z: 0.0,
                w: (pitch / 2.0).cos(),
            },
        },
    }
}

/// Limits a command is held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CommandLimits {
    pub max_speed: f64,
    pub max_reverse_speed: f64,
    pub max_yaw_rate: f64,
}

/// What became of a cmd_vel.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Within limits.
    Accepted(Control),
    /// Applied after clamping; the text says what was out of range.
    Clamped(Control, String),
    /// Not applied; the text says why.
    Rejected(String),
}

/// A `geometry_msgs/Twist` (linear.x m/s forward, angular.z rad/s yaw) as a velocity control
/// for `frame`: non-finite values are rejected, values outside `limits` clamped. The other
/// components (a car cannot strafe or roll) are ignored.
pub fn command(twist: &ros::Twist, frame: u64, limits: &CommandLimits) -> Command {
    let (speed, yaw_rate) = (twist.linear.x, twist.angular.z);
    if !speed.is_finite() || !yaw_rate.is_finite() {
        return Command::Rejected(format!(
            "non-finite command (linear.x {speed}, angular.z {yaw_rate})"
        ));
    }
    let clamped_speed = speed.clamp(-limits.max_reverse_speed, limits.max_speed);
    let clamped_yaw = yaw_rate.clamp(-limits.max_yaw_rate, limits.max_yaw_rate);
    let control = Control {
        frame,
        mode: ControlMode::Velocity,
        linear_velocity: clamped_speed,
        angular_velocity: clamped_yaw,
        ..Control::default()
    };
    let mut notes = Vec::new();
    if clamped_speed != speed {
        notes.push(format!("linear.x {speed} clamped to {clamped_speed}"));
    }
    if clamped_yaw != yaw_rate {
        notes.push(format!("angular.z {yaw_rate} clamped to {clamped_yaw}"));
    }
    if notes.is_empty() {
        Command::Accepted(control)
    } else {
        Command::Clamped(control, notes.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convoy_core::messages::{PointField, Quat, Vec3};

    fn sensor_header() -> SensorHeader {
        SensorHeader {
            agent: "ego".into(),
            sensor: "roof".into(),
            frame: 3,
            stamp_ns: 150_000_000,
            seq: 3,
        }
    }

    fn convoy_cloud() -> PointCloud {
        let field = |name: &str, offset: u32, datatype| PointField {
            name: name.into(),
            offset,
            datatype,
        };
        let mut data = Vec::new();
        for (x, intensity, ring) in [(1.0f32, 0.5f32, 7u16), (2.0, 1.0, 8)] {
            for v in [x, -x, 0.25, intensity] {
                data.extend_from_slice(&v.to_le_bytes());
            }
            data.extend_from_slice(&ring.to_le_bytes());
            data.extend_from_slice(&[0, 0]);
            data.extend_from_slice(&0.0f32.to_le_bytes());
        }
        PointCloud {
            header: sensor_header(),
            point_count: 2,
            point_step: 24,
            fields: vec![
                field("x", 0, PointFieldType::Float32),
                field("y", 4, PointFieldType::Float32),
                field("z", 8, PointFieldType::Float32),
                field("intensity", 12, PointFieldType::Float32),
                field("ring", 16, PointFieldType::Uint16),
                field("time_offset", 20, PointFieldType::Float32),
            ],
            data,
        }
    }

    #[test]
    fn clouds_repack_to_point_xyzirc() {
        let out = point_cloud(&convoy_cloud(), PointCloudLayout::Xyzirc).expect("cloud");
        assert_eq!((out.width, out.height, out.point_step), (2, 1, 16));
        assert_eq!(out.row_step, 32);
        let names: Vec<_> = out.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["x", "y", "z", "intensity", "return_type", "channel"]
        );
        assert_eq!(out.header.frame_id, "ego/roof");
        assert_eq!(
            (out.header.stamp.sec, out.header.stamp.nanosec),
            (0, 150_000_000)
        );
        let p1 = &out.data[16..32];
        assert_eq!(f32::from_le_bytes([p1[0], p1[1], p1[2], p1[3]]), 2.0);
        assert_eq!(f32::from_le_bytes([p1[4], p1[5], p1[6], p1[7]]), -2.0);
        assert_eq!(p1[12], 255);
        assert_eq!(out.data[12], 128);
        assert_eq!(u16::from_le_bytes([p1[14], p1[15]]), 8);
    }

    #[test]
    fn clouds_repack_to_point_xyzi() {
        let out = point_cloud(&convoy_cloud(), PointCloudLayout::Xyzi).expect("cloud");
        assert_eq!(out.fields.len(), 4);
        assert_eq!(out.fields[3].datatype, ros::PointField::FLOAT32);
        let p0 = &out.data[0..16];
        assert_eq!(f32::from_le_bytes([p0[12], p0[13], p0[14], p0[15]]), 0.5);
    }

    #[test]
    fn malformed_clouds_are_refused() {
        let mut c = convoy_cloud();
        c.data.pop();
        assert!(matches!(
            point_cloud(&c, PointCloudLayout::Xyzirc),
            Err(CloudError::BadLength { .. })
        ));
        let mut c = convoy_cloud();
        c.fields.retain(|f| f.name != "z");
        assert_eq!(
            point_cloud(&c, PointCloudLayout::Xyzirc),
            Err(CloudError::MissingField("z"))
        );
        let mut c = convoy_cloud();
        c.fields[0].offset = 22;
        assert!(matches!(
            point_cloud(&c, PointCloudLayout::Xyzirc),
            Err(CloudError::FieldOutside { .. })
        ));
    }

    #[test]
    fn commands_are_clamped_or_rejected() {
        let limits = CommandLimits {
            max_speed: 30.0,
            max_reverse_speed: 5.0,
            max_yaw_rate: 1.0,
        };
        let twist = |x: f64, z: f64| ros::Twist {
            linear: ros::Vector3 { x, y: 0.0, z: 0.0 },
            angular: ros::Vector3 { x: 0.0, y: 0.0, z },
        };
        match command(&twist(8.0, 0.1), 4, &limits) {
            Command::Accepted(c) => {
                assert_eq!(c.mode, ControlMode::Velocity);
                assert_eq!(
                    (c.frame, c.linear_velocity, c.angular_velocity),
                    (4, 8.0, 0.1)
                );
            }
            other => panic!("{other:?}"),
        }
        match command(&twist(1e9, -3.0), 4, &limits) {
            Command::Clamped(c, why) => {
                assert_eq!((c.linear_velocity, c.angular_velocity), (30.0, -1.0));
                assert!(
                    why.contains("linear.x") && why.contains("angular.z"),
                    "{why}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            command(&twist(f64::NAN, 0.0), 4, &limits),
            Command::Rejected(_)
        ));
        assert!(matches!(
            command(&twist(1.0, f64::INFINITY), 4, &limits),
            Command::Rejected(_)
        ));
    }

    #[test]
    fn transforms_and_odometry_name_their_frames() {
        let state = AgentState {
            agent_id: "ego".into(),
            frame: 2,
            stamp_ns: 100_000_000,
            pose: convoy_core::messages::Pose {
                position: Vec3::new(1.0, 2.0, 0.75),
                orientation: Quat::IDENTITY,
            },
            ..AgentState::default()
        };
        let t = agent_transform(&state);
        assert_eq!(
            (t.header.frame_id.as_str(), t.child_frame_id.as_str()),
            ("map", "ego/base_link")
        );
        assert_eq!(t.transform.translation.y, 2.0);
        let mut spec = SensorSpec::new("front", SensorKind::Camera, 10.0);
        spec.pitch = Some(10.0);
        let s = sensor_transform("ego", &spec, [2.25, 0.9, 0.75]);
        assert_eq!(s.child_frame_id, "ego/front");
        assert!((s.transform.translation.x - 1.35).abs() < 1e-12);
        assert!((s.transform.rotation.y - (5.0f64.to_radians()).sin()).abs() < 1e-12);
        let odom = odometry(&Odometry {
            header: sensor_header(),
            ..Odometry::default()
        });
        assert_eq!(odom.child_frame_id, "ego/base_link");
        assert_eq!(odom.header.frame_id, "map");
    }
}
