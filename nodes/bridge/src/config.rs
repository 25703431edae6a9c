//! The bridge's settings: a TOML file (optional; every key has a default) plus command-line
//! overrides, parsed with `deny_unknown_fields` and checked against the scenario by
//! [`Ros2Settings::validate`] before the bridge joins any DDS domain.
//!
//! ```toml
//! [ros2]
//! node_name = "convoy_bridge"      # the ROS node the bridge appears as
//! namespace = "/"
//! domain = 0                       # the ROS 2 domain; default: convoy's
//! point_cloud = "xyzirc"           # or "xyzi" (x, y, z, intensity float32)
//! reliable = true                  # writers: RELIABLE matches reliable and best-effort readers
//! agents = ["ego"]                 # whose topics are bridged; empty: every agent
//! hold_for_stack = false           # lockstep waits for the stack's cmd_vel each frame
//! stack_timeout = 2.0              # seconds a held frame waits for it
//! max_speed = 30.0                 # m/s; cmd_vel linear.x is clamped to [-max_reverse_speed, max_speed]
//! max_reverse_speed = 5.0
//! max_yaw_rate = 1.0               # rad/s; angular.z clamped to +-max_yaw_rate
//! map_points_spacing = 0.5         # m; the point-cloud map on /map/points (OpenDRIVE maps)
//!
//! [ros2.topics]                    # renames: default ROS name = the one to use
//! "/ego/front_camera/image" = "/sensing/camera/image_raw"
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use convoy_core::config::{self, ConfigError};
use convoy_core::scenario::{ControllerSpec, Scenario, SensorSpec};
use convoy_core::sensor_catalogue::sensor_topics;
use serde::{Deserialize, Serialize};

/// A bridge settings file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeFile {
    #[serde(default)]
    pub ros2: Ros2Settings,
}

/// How point clouds are laid out for ROS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PointCloudLayout {
    /// x, y, z float32, intensity uint8, return_type uint8, channel uint16 (16 bytes; Autoware's
    /// PointXYZIRC).
    #[default]
    Xyzirc,
    /// x, y, z, intensity float32 (16 bytes; PCL's PointXYZI).
    Xyzi,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Ros2Settings {
    pub node_name: String,
    pub namespace: String,
    pub domain: Option<u32>,
    pub point_cloud: PointCloudLayout,
    pub reliable: bool,
    pub agents: Vec<String>,
    pub hold_for_stack: bool,
    pub stack_timeout: f64,
    pub max_speed: f64,
    pub max_reverse_speed: f64,
    pub max_yaw_rate: f64,
    /// Spacing (m) of the point-cloud map published on `/map/points` (0.05 to 10, as
    /// `convoy map export --spacing`).
    pub map_points_spacing: f64,
    pub topics: BTreeMap<String, String>,
}

/// The default spacing (m) of `/map/points`: coarser than `convoy map export`'s 0.2 m, so the
/// one message stays near 10 MB for a town (Town01: 3.0 million points at 0.2 m, 47 MB).
pub const MAP_POINTS_SPACING: f64 = 0.5;

/// The lanes of the scenario's map (MarkerArray), published once, latched.
pub const MAP_LANES_TOPIC: &str = "/map/lanes";
/// The point-cloud map (PointCloud2), published once, latched.
pub const MAP_POINTS_TOPIC: &str = "/map/points";

impl Default for Ros2Settings {
    fn default() -> Self {
        Ros2Settings {
            node_name: "convoy_bridge".into(),
            namespace: "/".into(),
            domain: None,
            point_cloud: PointCloudLayout::Xyzirc,
            reliable: true,
            agents: Vec::new(),
            hold_for_stack: false,
            stack_timeout: 2.0,
            max_speed: 30.0,
            max_reverse_speed: 5.0,
            max_yaw_rate: 1.0,
            map_points_spacing: MAP_POINTS_SPACING,
            topics: BTreeMap::new(),
        }
    }
}

/// One output of a sensor that the bridge forwards: the convoy topic it reads and the ROS
/// topic it writes (before renames), `/<agent>/<sensor>/<output>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SensorOutput {
    pub convoy_topic: String,
    pub ros_name: String,
}

/// The outputs of `agent`'s sensor `spec` the bridge forwards, as the sensor catalogue names
/// them (a camera's image, and its depth and classes when it makes them; none for radar).
pub fn sensor_outputs(agent: &str, spec: &SensorSpec) -> Vec<SensorOutput> {
    sensor_topics(agent, spec)
        .into_iter()
        .filter_map(|topic| {
            Some(SensorOutput {
                ros_name: topic.ros_name?,
                convoy_topic: topic.name,
            })
        })
        .collect()
}

/// Whether the bridge publishes the map (`/map/lanes`, `/map/points`) for `scenario`: when it
/// has an OpenDRIVE road network, as `convoy map export` needs.
pub fn publishes_map(scenario: &Scenario) -> bool {
    scenario.map.opendrive.is_some()
}

/// `/<agent>/cmd_vel`.
pub fn cmd_vel_topic(agent: &str) -> String {
    format!("/{agent}/cmd_vel")
}

/// An invalid setting: which key and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: ros2.{key}: {message}")]
pub struct SettingsError {
    pub source_name: String,
    pub key: String,
    pub message: String,
}

impl BridgeFile {
    /// Reads and parses a settings file (`file:line: message` errors for bad TOML or keys).
    pub fn load(path: &Path) -> Result<BridgeFile, ConfigError> {
        let (text, file) = config::read(path, "bridge settings")?;
        config::parse(&text, &file)
    }
}

impl Ros2Settings {
    /// The agents whose topics are bridged: `agents`, or every agent of the scenario.
    pub fn bridged_agents(&self, scenario: &Scenario) -> Vec<String> {
        if self.agents.is_empty() {
            scenario.agent_ids()
        } else {
            self.agents.clone()
        }
    }

    /// Bridged agents driven from outside (`controller = external`): their cmd_vel is read,
    /// and with `hold_for_stack` each frame waits for it.
    pub fn commanded_agents(&self, scenario: &Scenario) -> Vec<String> {
        self.bridged_agents(scenario)
            .into_iter()
            .filter(|a| {
                scenario
                    .agent(a)
                    .is_some_and(|spec| matches!(spec.controller, ControllerSpec::External))
            })
            .collect()
    }

    /// Every default ROS topic name this configuration would use.
    pub fn default_topics(&self, scenario: &Scenario) -> Vec<String> {
        let mut out = vec!["/clock".to_string(), "/tf".into(), "/tf_static".into()];
        if publishes_map(scenario) {
            out.extend([MAP_LANES_TOPIC.to_string(), MAP_POINTS_TOPIC.to_string()]);
        }
        for agent in self.bridged_agents(scenario) {
            if let Some(spec) = scenario.agent(&agent) {
                for sensor in &spec.sensors {
                    out.extend(
                        sensor_outputs(&agent, sensor)
                            .into_iter()
                            .map(|o| o.ros_name),
                    );
                }
            }
        }
        out.extend(
            self.commanded_agents(scenario)
                .iter()
                .map(|a| cmd_vel_topic(a)),
        );
        out
    }

    /// The ROS name a default topic name maps to (after renames).
    pub fn ros_name(&self, default: &str) -> String {
        self.topics
            .get(default)
            .cloned()
            .unwrap_or_else(|| default.to_string())
    }

    /// Checks every value, and the agents and renames against `scenario`; `source_name`
    /// names where the settings came from in errors.
    pub fn validate(&self, scenario: &Scenario, source_name: &str) -> Result<(), SettingsError> {
        let err = |key: &str, message: String| SettingsError {
            source_name: source_name.to_string(),
            key: key.to_string(),
            message,
        };
        if !is_ros_base_name(&self.node_name) {
            return Err(err(
                "node_name",
                format!(
                    "'{}' is not a ROS node name (letters, digits and _, not starting with a digit)",
                    self.node_name
                ),
            ));
        }
        if !(self.namespace == "/" || is_ros_topic_name(&self.namespace)) {
            return Err(err(
                "namespace",
                format!("'{}' is not a ROS namespace (like /sim)", self.namespace),
            ));
        }
        if let Some(d) = self.domain {
            if convoy_core::dds::check_domain_id(d).is_err() {
                return Err(err("domain", format!("{d} is out of range 0..=232")));
            }
        }
        for (key, value, min) in [
            ("stack_timeout", self.stack_timeout, 0.001),
            ("max_speed", self.max_speed, 0.0),
            ("max_reverse_speed", self.max_reverse_speed, 0.0),
            ("max_yaw_rate", self.max_yaw_rate, 0.0),
        ] {
            if !(value.is_finite() && value >= min) {
                return Err(err(key, format!("{value} must be a number >= {min}")));
            }
        }
        if !(0.05..=10.0).contains(&self.map_points_spacing) {
            return Err(err(
                "map_points_spacing",
                format!("{} m must be between 0.05 and 10", self.map_points_spacing),
            ));
        }
        let known = scenario.agent_ids();
        for a in &self.agents {
            if !known.contains(a) {
                return Err(err(
                    "agents",
                    format!(
                        "agent '{a}' is not in the scenario (agents: {})",
                        known.join(", ")
                    ),
                ));
            }
        }
        if self.hold_for_stack && self.commanded_agents(scenario).is_empty() {
            return Err(err(
                "hold_for_stack",
                "no bridged agent has `controller = external`: there is no command to wait for"
                    .into(),
            ));
        }
        let defaults = self.default_topics(scenario);
        let mut used = BTreeMap::new();
        for name in &defaults {
            let ros = self.ros_name(name);
            if let Some(other) = used.insert(ros.clone(), name.clone()) {
                return Err(err(
                    "topics",
                    format!("'{other}' and '{name}' would both be published as '{ros}'"),
                ));
            }
        }
        for (from, to) in &self.topics {
            if !defaults.contains(from) {
                return Err(err(
                    "topics",
                    format!(
                        "'{from}' is not a topic this bridge uses (it uses: {})",
                        defaults.join(", ")
                    ),
                ));
            }
            if !is_ros_topic_name(to) {
                return Err(err(
                    "topics",
                    format!(
                        "'{to}' is not an absolute ROS topic name (like /sensing/camera/image)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A ROS base name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_ros_base_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An absolute ROS topic name: `/` then base names joined by `/`.
fn is_ros_topic_name(name: &str) -> bool {
    name.strip_prefix('/')
        .is_some_and(|rest| !rest.is_empty() && rest.split('/').all(is_ros_base_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        let text = include_str!("../tests/fixtures/stack.toml");
        Scenario::from_str(text, "stack.toml").expect("scenario")
    }

    #[test]
    fn defaults_validate_and_name_every_topic() {
        let s = Ros2Settings::default();
        s.validate(&scenario(), "defaults").expect("valid");
        let topics = s.default_topics(&scenario());
        assert!(topics.contains(&"/ego/front/image".to_string()));
        // The camera makes no depth or classes: nothing to bridge for them.
        assert!(!topics
            .iter()
            .any(|t| t.ends_with("/depth") || t.ends_with("/semantic")));
        assert!(topics.contains(&"/ego/cmd_vel".to_string()));
        assert!(!topics.contains(&"/lead/cmd_vel".to_string()));
        assert_eq!(s.commanded_agents(&scenario()), ["ego"]);
    }

    #[test]
    fn unknown_keys_are_refused_with_their_line() {
        let e = config::parse::<BridgeFile>("[ros2]\nnode_nam = \"x\"\n", "b.toml")
            .expect_err("unknown key");
        let text = e.to_string();
        assert!(
            text.contains("b.toml:2") && text.contains("node_nam"),
            "{text}"
        );
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut s = Ros2Settings {
            max_speed: f64::NAN,
            ..Ros2Settings::default()
        };
        let e = s.validate(&scenario(), "b.toml").expect_err("nan");
        assert_eq!(e.key, "max_speed");
        s.max_speed = 10.0;
        s.topics
            .insert("/ego/front/imag".into(), "/camera/image".into());
        let e = s
            .validate(&scenario(), "b.toml")
            .expect_err("unknown topic");
        assert!(e.to_string().contains("/ego/front/imag"), "{e}");
        s.topics.clear();
        s.topics.insert("/ego/front/image".into(), "camera".into());
        let e = s.validate(&scenario(), "b.toml").expect_err("relative");
        assert_eq!(e.key, "topics");
        s.topics.clear();
        s.topics.insert("/ego/front/image".into(), "/clock".into());
        let e = s.validate(&scenario(), "b.toml").expect_err("collision");
        assert!(e.to_string().contains("both"), "{e}");
        s.topics.clear();
        s.node_name = "1bridge".into();
        assert_eq!(
            s.validate(&scenario(), "b.toml").expect_err("name").key,
            "node_name"
        );
    }

    #[test]
    fn a_map_scenario_adds_the_map_topics_and_checks_their_spacing() {
        assert!(!Ros2Settings::default()
            .default_topics(&scenario())
            .contains(&MAP_LANES_TOPIC.to_string()));
        let text = format!(
            "{}\n[map]\nopendrive = \"town.xodr\"\n",
            include_str!("../tests/fixtures/stack.toml")
        );
        let town = Scenario::from_str(&text, "town.toml").expect("scenario");
        let mut s = Ros2Settings::default();
        let topics = s.default_topics(&town);
        assert!(topics.contains(&"/map/lanes".to_string()), "{topics:?}");
        assert!(topics.contains(&"/map/points".to_string()), "{topics:?}");
        s.topics
            .insert("/map/points".into(), "/map/pointcloud_map".into());
        s.validate(&town, "b.toml").expect("renamed map topic");
        s.map_points_spacing = 0.0;
        let e = s.validate(&town, "b.toml").expect_err("spacing");
        assert_eq!(e.key, "map_points_spacing");
    }

    #[test]
    fn hold_for_stack_needs_an_external_agent() {
        let s = Ros2Settings {
            hold_for_stack: true,
            agents: vec!["lead".into()],
            ..Ros2Settings::default()
        };
        let e = s.validate(&scenario(), "b.toml").expect_err("no external");
        assert_eq!(e.key, "hold_for_stack");
    }
}
