//! The sensor catalogue: what each sensor kind publishes, in one table that the sensor node,
//! the bridge, the CLI and the benchmarks read. A kind's entry names it (as scenario files
//! write it), says whether its samples need the other agents' states of the frame (it sees
//! them), and lists its topics: the main one on `convoy/sensor/<agent>/<id>` and any extra
//! outputs on `<topic>_<suffix>`, each with its convoy message type and the last part of the
//! ROS 2 name the bridge gives it (`/<agent>/<id>/<ros>`; none: not bridged).
//!
//! All sensor topics use the `sensor` QoS class ([`crate::topics::sensor`]).

use crate::messages::{GnssFix, Image, Imu, Message, Odometry, PointCloud, RadarScan};
use crate::scenario::{SensorKind, SensorSpec};
use crate::topics;

/// One topic a sensor kind publishes.
#[derive(Debug)]
pub struct OutputSpec {
    /// "" for the sensor's main topic; otherwise the topic is `<main topic>_<suffix>`.
    pub suffix: &'static str,
    /// The convoy (IDL) type on the topic.
    pub message: &'static str,
    /// The last part of the ROS 2 topic name the bridge writes it on; None: not bridged.
    pub ros: Option<&'static str>,
    /// Whether a sensor of this spec publishes it (extra outputs are asked for).
    pub published: fn(&SensorSpec) -> bool,
}

/// What one sensor kind is and publishes.
#[derive(Debug)]
pub struct KindSpec {
    pub kind: SensorKind,
    /// The name scenario files and the CLI use (`kind = "imu"`).
    pub name: &'static str,
    /// Its samples are made from the other agents' states of the frame too (it sees them).
    pub sees_others: bool,
    pub outputs: &'static [OutputSpec],
}

impl OutputSpec {
    /// The name of this output's topic for `agent`'s sensor `sensor`.
    pub fn topic_name(&self, agent: &str, sensor: &str) -> String {
        if self.suffix.is_empty() {
            topics::sensor_name(agent, sensor)
        } else {
            topics::sensor_output_name(agent, sensor, self.suffix)
        }
    }
}

const fn main_output(message: &'static str, ros: Option<&'static str>) -> OutputSpec {
    OutputSpec {
        suffix: "",
        message,
        ros,
        published: |_| true,
    }
}

/// Every sensor kind, in the order of [`SensorKind`].
pub const CATALOGUE: [KindSpec; 6] = [
    KindSpec {
        kind: SensorKind::Imu,
        name: "imu",
        sees_others: false,
        outputs: &[main_output(Imu::TYPE_NAME, Some("imu"))],
    },
    KindSpec {
        kind: SensorKind::Gnss,
        name: "gnss",
        sees_others: false,
        outputs: &[main_output(GnssFix::TYPE_NAME, Some("fix"))],
    },
    KindSpec {
        kind: SensorKind::Odometry,
        name: "odometry",
        sees_others: false,
        outputs: &[main_output(Odometry::TYPE_NAME, Some("odom"))],
    },
    KindSpec {
        kind: SensorKind::Radar,
        name: "radar",
        sees_others: true,
        // No standard ROS message for radar detections: not bridged.
        outputs: &[main_output(RadarScan::TYPE_NAME, None)],
    },
    KindSpec {
        kind: SensorKind::Lidar,
        name: "lidar",
        sees_others: true,
        outputs: &[main_output(PointCloud::TYPE_NAME, Some("points"))],
    },
    KindSpec {
        kind: SensorKind::Camera,
        name: "camera",
        sees_others: true,
        outputs: &[
            main_output(Image::TYPE_NAME, Some("image")),
            // Depth along the optical axis, 32FC1 metres.
            OutputSpec {
                suffix: "depth",
                message: Image::TYPE_NAME,
                ros: Some("depth"),
                published: |spec| spec.depth,
            },
            // Semantic class ids, mono8.
            OutputSpec {
                suffix: "semantic",
                message: Image::TYPE_NAME,
                ros: Some("semantic"),
                published: |spec| spec.semantic,
            },
        ],
    },
];

impl SensorKind {
    /// This kind's catalogue entry.
    pub fn spec(self) -> &'static KindSpec {
        let entry = &CATALOGUE[self as usize];
        debug_assert_eq!(entry.kind, self, "CATALOGUE is out of SensorKind's order");
        entry
    }

    /// The kind a name stands for (`"imu"`), as scenario files and the CLI write it.
    pub fn from_name(name: &str) -> Option<SensorKind> {
        CATALOGUE.iter().find(|k| k.name == name).map(|k| k.kind)
    }
}

/// One topic one sensor of a scenario publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SensorTopic {
    /// The convoy topic name.
    pub name: String,
    /// "" for the main topic, else the extra output's suffix.
    pub suffix: &'static str,
    pub message: &'static str,
    /// The ROS 2 topic the bridge writes it on (`/<agent>/<id>/<ros>`); None: not bridged.
    pub ros_name: Option<String>,
}

/// The topics `agent`'s sensor `spec` publishes, the main one first.
pub fn sensor_topics(agent: &str, spec: &SensorSpec) -> Vec<SensorTopic> {
    spec.kind
        .spec()
        .outputs
        .iter()
        .filter(|output| (output.published)(spec))
        .map(|output| SensorTopic {
            name: output.topic_name(agent, &spec.id),
            suffix: output.suffix,
            message: output.message,
            ros_name: output.ros.map(|ros| format!("/{agent}/{}/{ros}", spec.id)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::TYPE_NAMES;

    #[test]
    fn the_catalogue_follows_sensor_kind_and_names_read_back() {
        for (i, entry) in CATALOGUE.iter().enumerate() {
            assert_eq!(entry.kind as usize, i, "{} out of order", entry.name);
            assert_eq!(SensorKind::from_name(entry.name), Some(entry.kind));
            let serde_name = serde_json::to_string(&entry.kind).expect("serialize");
            assert_eq!(serde_name, format!("\"{}\"", entry.name));
            assert!(
                entry.outputs[0].suffix.is_empty(),
                "{}: main topic first",
                entry.name
            );
            for output in entry.outputs {
                assert!(TYPE_NAMES.contains(&output.message), "{}", output.message);
            }
        }
        assert_eq!(SensorKind::from_name("sonar"), None);
    }
}
