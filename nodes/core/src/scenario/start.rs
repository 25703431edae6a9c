//! Where an agent starts: a pose on the ground, or a lane of the OpenDRIVE map.

use serde::{Deserialize, Serialize};

/// Where an agent starts: on the ground at (x, y) heading `yaw` (radians, 0 = +x,
/// counter-clockwise), or on a lane of the OpenDRIVE map (`{ road = "5", lane = -1, s = 20.0 }`,
/// `s` along the road's reference line), facing the lane's direction of travel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StartFields", into = "StartFields")]
pub enum StartPose {
    Pose { x: f64, y: f64, yaw: f64 },
    Lane { road: String, lane: i32, s: f64 },
}

/// The TOML form of [`StartPose`]: one table with the fields of either form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    x: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    y: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    yaw: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    road: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lane: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<f64>,
}

impl TryFrom<StartFields> for StartPose {
    type Error = String;
    fn try_from(f: StartFields) -> Result<StartPose, String> {
        match f {
            StartFields {
                x: Some(x),
                y: Some(y),
                yaw,
                road: None,
                lane: None,
                s: None,
            } => Ok(StartPose::Pose {
                x,
                y,
                yaw: yaw.unwrap_or(0.0),
            }),
            StartFields {
                x: None,
                y: None,
                yaw: None,
                road: Some(road),
                lane: Some(lane),
                s,
            } => Ok(StartPose::Lane {
                road,
                lane,
                s: s.unwrap_or(0.0),
            }),
            _ => Err("start takes either { x, y, yaw } or { road, lane, s } \
                      (a road id, an OpenDRIVE lane id and s along the road)"
                .into()),
        }
    }
}

impl From<StartPose> for StartFields {
    fn from(start: StartPose) -> StartFields {
        match start {
            StartPose::Pose { x, y, yaw } => StartFields {
                x: Some(x),
                y: Some(y),
                yaw: Some(yaw),
                ..StartFields::default()
            },
            StartPose::Lane { road, lane, s } => StartFields {
                road: Some(road),
                lane: Some(lane),
                s: Some(s),
                ..StartFields::default()
            },
        }
    }
}
