//! Scenario files (TOML, under launch/scenarios/): the world, the clock settings and the agents.
//!
//! Plain data with `deny_unknown_fields`, loaded by [`Scenario::load`] and checked by
//! [`Scenario::validate`]; every error names the file and line (`two_cars.toml:14: ...`). The
//! coordinator, every agent and the CLI load the same file, so they agree on it by construction.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config;
use crate::topics::check_id;

mod map;
mod sensor;
mod start;
pub use map::{BoxSpec, MapSpec, MeshSpec};
pub use sensor::{Distribution, SensorKind, SensorSpec};
pub use start::{StartFields, StartPose};

/// CARLA's limits: at most 16 substeps per frame.
pub const MAX_SUBSTEPS_LIMIT: u32 = 16;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The file this scenario was loaded from (empty when parsed from text): map files are
    /// relative to its folder, and world errors name its lines.
    #[serde(skip)]
    pub file: PathBuf,
    pub scenario: Settings,
    #[serde(default)]
    pub origin: GeoOrigin,
    #[serde(default)]
    pub map: MapSpec,
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ClockMode {
    /// Lockstep: a frame starts when every participant finished the previous one.
    #[default]
    Sync,
    /// Wall-clock pace times a real-time factor; waits for no one.
    Async,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StepMode {
    #[default]
    Fixed,
    /// async only: dt is the wall time since the last tick.
    Variable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Exchange {
    /// SynChrono: every agent reads every other agent's state topic.
    #[default]
    Peer,
    /// The coordinator reads the state topics; Tick N+1 carries frame N's states.
    Relay,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub name: String,
    #[serde(default)]
    pub seed: u64,
    /// Seconds per frame.
    pub dt: f64,
    #[serde(default)]
    pub mode: ClockMode,
    #[serde(default)]
    pub step: StepMode,
    #[serde(default)]
    pub exchange: Exchange,
    /// async mode: simulated seconds per wall-clock second.
    #[serde(default = "one")]
    pub real_time_factor: f64,
    /// Physics substep limit in seconds (CARLA's max_substep_delta_time).
    #[serde(default = "default_substep")]
    pub max_substep_delta: f64,
    #[serde(default = "default_substeps")]
    pub max_substeps: u32,
    /// Seconds a lockstep barrier waits before naming who is late.
    #[serde(default = "default_barrier_timeout")]
    pub barrier_timeout: f64,
    /// Seconds without a status from a node before it is considered gone.
    #[serde(default = "default_lease")]
    pub lease: f64,
}

fn one() -> f64 {
    1.0
}
fn default_substep() -> f64 {
    0.01
}
fn default_substeps() -> u32 {
    10
}
fn default_barrier_timeout() -> f64 {
    5.0
}
fn default_lease() -> f64 {
    2.0
}

/// WGS84 coordinates of the map's origin (x east, y north, z up).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeoOrigin {
    pub latitude: f64,
    pub longitude: f64,
    #[serde(default)]
    pub altitude: f64,
}

impl Default for GeoOrigin {
    fn default() -> Self {
        GeoOrigin {
            latitude: 48.137154,
            longitude: 11.576124,
            altitude: 519.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub id: String,
    pub start: StartPose,
    #[serde(default)]
    pub vehicle: VehicleParams,
    pub controller: ControllerSpec,
    #[serde(default)]
    pub sensors: Vec<SensorSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VehicleParams {
    /// kg
    #[serde(default = "default_mass")]
    pub mass: f64,
    /// Half length, half width, half height of the body box, metres.
    #[serde(default = "default_half_extents")]
    pub half_extents: [f64; 3],
    /// Distance between the axles, metres.
    #[serde(default = "default_wheelbase")]
    pub wheelbase: f64,
    /// Largest front-wheel angle, radians (steer = ±1).
    #[serde(default = "default_max_steer")]
    pub max_steer: f64,
    /// Drive force at full throttle, newtons.
    #[serde(default = "default_drive")]
    pub max_drive_force: f64,
    /// Brake force at full brake, newtons.
    #[serde(default = "default_brake")]
    pub max_brake_force: f64,
    /// m/s
    #[serde(default = "default_max_speed")]
    pub max_speed: f64,
}

fn default_mass() -> f64 {
    1500.0
}
fn default_half_extents() -> [f64; 3] {
    [2.25, 1.0, 0.75]
}
fn default_wheelbase() -> f64 {
    2.8
}
fn default_max_steer() -> f64 {
    0.6
}
fn default_drive() -> f64 {
    6000.0
}
fn default_brake() -> f64 {
    12000.0
}
fn default_max_speed() -> f64 {
    40.0
}

impl Default for VehicleParams {
    fn default() -> Self {
        VehicleParams {
            mass: default_mass(),
            half_extents: default_half_extents(),
            wheelbase: default_wheelbase(),
            max_steer: default_max_steer(),
            max_drive_force: default_drive(),
            max_brake_force: default_brake(),
            max_speed: default_max_speed(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum ControllerSpec {
    /// Follows `path` (x, y points) at `speed` m/s; `looped` closes the path.
    Waypoints {
        speed: f64,
        path: Vec<[f64; 2]>,
        #[serde(default)]
        looped: bool,
    },
    /// Applies `convoy/agent/<id>/control` (from a stack, a bridge or `convoy world`).
    External,
    /// Follows the centre of its lane at `speed` m/s through lane sections and junctions,
    /// choosing turns from the run's seeded stream, or along `route` (road ids in order) where
    /// given; keeps at least `gap` metres to the car ahead in its lane (stops rather than hits
    /// it). Needs an OpenDRIVE map and a lane start.
    #[serde(rename = "lane_follow")]
    LaneFollow {
        speed: f64,
        #[serde(default)]
        route: Vec<String>,
        #[serde(default = "default_gap")]
        gap: f64,
    },
}

fn default_gap() -> f64 {
    6.0
}
impl std::str::FromStr for ClockMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sync" => Ok(ClockMode::Sync),
            "async" => Ok(ClockMode::Async),
            _ => Err(format!("'{s}' is not a clock mode: use sync or async")),
        }
    }
}

impl std::str::FromStr for Exchange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "peer" => Ok(Exchange::Peer),
            "relay" => Ok(Exchange::Relay),
            _ => Err(format!("'{s}' is not a state exchange: use peer or relay")),
        }
    }
}

/// A scenario file that cannot be used, with where.
pub type ScenarioError = crate::config::ConfigError;

impl Scenario {
    /// Reads, parses and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let (text, file) = config::read(path, "scenario")?;
        let mut scenario = Scenario::from_str(&text, &file)?;
        scenario.file = path.to_path_buf();
        Ok(scenario)
    }

    /// A file the scenario names (a map or a mesh), relative to the scenario's folder.
    pub fn map_path(&self, name: &str) -> PathBuf {
        self.file.parent().unwrap_or(Path::new("")).join(name)
    }

    /// Whether the world needs more than ground and boxes (an OpenDRIVE map or meshes).
    pub fn has_map_files(&self) -> bool {
        self.map.opendrive.is_some() || !self.map.meshes.is_empty()
    }

    /// Parses and validates scenario text; `file` names it in errors.
    pub fn from_str(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = config::parse(text, file)?;
        scenario
            .validate()
            .map_err(|(key, message)| ScenarioError::Invalid {
                file: file.to_string(),
                line: config::find_line(text, &key),
                message,
            })?;
        Ok(scenario)
    }

    /// Checks what serde cannot: ranges, ids, CARLA's substep rule, determinism notes.
    /// The error carries a text to find in the file (for the line) and the message.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let s = &self.scenario;
        let bad = |key: &str, message: String| Err((key.to_string(), message));
        if !(s.dt.is_finite() && s.dt > 0.0 && s.dt <= 1.0) {
            return bad(
                "dt",
                format!("dt = {} s is out of range: use (0, 1] seconds", s.dt),
            );
        }
        if !(s.max_substep_delta.is_finite() && s.max_substep_delta > 0.0) {
            return bad(
                "max_substep_delta",
                format!(
                    "max_substep_delta = {} must be positive",
                    s.max_substep_delta
                ),
            );
        }
        if s.max_substeps == 0 || s.max_substeps > MAX_SUBSTEPS_LIMIT {
            return bad(
                "max_substeps",
                format!(
                    "max_substeps = {} is out of range: use 1 to {MAX_SUBSTEPS_LIMIT}",
                    s.max_substeps
                ),
            );
        }
        let limit = s.max_substep_delta * f64::from(s.max_substeps);
        if s.dt > limit + 1e-12 {
            return bad(
                "dt",
                format!(
                    "dt = {} s is more than max_substep_delta * max_substeps = {} * {} = {} s: \
                     physics could not keep up; lower dt or raise max_substeps",
                    s.dt, s.max_substep_delta, s.max_substeps, limit
                ),
            );
        }
        if s.step == StepMode::Variable && s.mode == ClockMode::Sync {
            return bad(
                "step",
                "step = \"variable\" needs mode = \"async\" (a lockstep frame has a fixed dt)"
                    .into(),
            );
        }
        if s.exchange == Exchange::Relay && s.mode == ClockMode::Async {
            return bad(
                "exchange",
                "exchange = \"relay\" needs mode = \"sync\" (states ride on the lockstep Tick)"
                    .into(),
            );
        }
        if !(s.real_time_factor.is_finite() && s.real_time_factor > 0.0) {
            return bad(
                "real_time_factor",
                format!("real_time_factor = {} must be positive", s.real_time_factor),
            );
        }
        for (key, v) in [("barrier_timeout", s.barrier_timeout), ("lease", s.lease)] {
            if !(v.is_finite() && v > 0.0 && v <= 3600.0) {
                return bad(key, format!("{key} = {v} s is out of range: use (0, 3600]"));
            }
        }
        if self.agents.is_empty() {
            return bad(
                "[scenario]",
                "a scenario needs at least one [[agents]] entry".into(),
            );
        }
        let mut ids = BTreeSet::new();
        for agent in &self.agents {
            let at = format!("\"{}\"", agent.id);
            if let Err(e) = check_id("agent", &agent.id) {
                return bad(&at, e.to_string());
            }
            if !ids.insert(agent.id.as_str()) {
                return bad(&at, format!("agent id '{}' is used twice", agent.id));
            }
            agent
                .validate()
                .map_err(|m| (at.clone(), format!("agent '{}': {m}", agent.id)))?;
        }
        for b in &self.map.boxes {
            if b.half_extents.iter().any(|h| !(h.is_finite() && *h > 0.0))
                || b.center.iter().chain([&b.yaw]).any(|v| !v.is_finite())
            {
                return bad(
                    "boxes",
                    format!(
                        "map box {:?} needs finite values and positive half extents",
                        b.center
                    ),
                );
            }
        }
        self.validate_map()
    }

    /// Map files and lane starts that cannot work without a map (the files themselves are
    /// read by convoy-world, which names them in its errors).
    fn validate_map(&self) -> Result<(), (String, String)> {
        let bad = |key: &str, message: String| Err((key.to_string(), message));
        if let Some(file) = &self.map.opendrive {
            if file.is_empty() {
                return bad("opendrive", "map.opendrive is an empty path".into());
            }
        }
        for mesh in &self.map.meshes {
            let at = format!("\"{}\"", mesh.file);
            if mesh.file.is_empty() {
                return bad("meshes", "a map mesh has an empty file".into());
            }
            if !(mesh.scale.is_finite() && mesh.scale > 0.0)
                || mesh
                    .position
                    .iter()
                    .chain([&mesh.yaw])
                    .any(|v| !v.is_finite())
            {
                return bad(
                    &at,
                    format!(
                        "mesh '{}' needs a finite position and yaw and a positive scale",
                        mesh.file
                    ),
                );
            }
        }
        if self.map.opendrive.is_none() {
            if let Some(agent) = self
                .agents
                .iter()
                .find(|a| matches!(a.start, StartPose::Lane { .. }))
            {
                return bad(
                    &format!("\"{}\"", agent.id),
                    format!(
                        "agent '{}' starts on a lane, but [map] names no opendrive file",
                        agent.id
                    ),
                );
            }
        }
        Ok(())
    }

    /// The agent ids, sorted (the order zombies are created and updated in).
    pub fn agent_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.agents.iter().map(|a| a.id.clone()).collect();
        ids.sort();
        ids
    }

    pub fn agent(&self, id: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.id == id)
    }

    /// Frame length in nanoseconds.
    pub fn dt_ns(&self) -> i64 {
        (self.scenario.dt * 1e9).round() as i64
    }

    /// True when runs are reproducible bit for bit (DESIGN: sync + fixed).
    pub fn deterministic(&self) -> bool {
        self.scenario.mode == ClockMode::Sync && self.scenario.step == StepMode::Fixed
    }
}

impl AgentSpec {
    fn validate(&self) -> Result<(), String> {
        let v = &self.vehicle;
        let positive = [
            ("mass", v.mass),
            ("wheelbase", v.wheelbase),
            ("max_steer", v.max_steer),
            ("max_drive_force", v.max_drive_force),
            ("max_brake_force", v.max_brake_force),
            ("max_speed", v.max_speed),
        ];
        for (name, value) in positive {
            if !(value.is_finite() && value > 0.0) {
                return Err(format!("vehicle.{name} = {value} must be positive"));
            }
        }
        if v.half_extents.iter().any(|h| !(h.is_finite() && *h > 0.0)) {
            return Err("vehicle.half_extents must be positive".into());
        }
        match &self.start {
            StartPose::Pose { x, y, yaw } => {
                if [x, y, yaw].iter().any(|v| !v.is_finite()) {
                    return Err("start needs finite x, y, yaw".into());
                }
            }
            StartPose::Lane { road, s, .. } => {
                if road.is_empty() || !(s.is_finite() && *s >= 0.0) {
                    return Err(format!(
                        "start on a lane needs a road id and s >= 0 (got road '{road}', s {s})"
                    ));
                }
            }
        }
        if let ControllerSpec::LaneFollow { speed, gap, .. } = &self.controller {
            if !(speed.is_finite() && *speed >= 0.0) {
                return Err(format!("controller.speed = {speed} must be >= 0"));
            }
            if !(gap.is_finite() && *gap > 0.0) {
                return Err(format!("controller.gap = {gap} must be positive"));
            }
            if !matches!(self.start, StartPose::Lane { .. }) {
                return Err(
                    "a lane_follow controller needs a lane start: start = { road, lane, s }".into(),
                );
            }
        }
        if let ControllerSpec::Waypoints { speed, path, .. } = &self.controller {
            if !(speed.is_finite() && *speed >= 0.0) {
                return Err(format!("controller.speed = {speed} must be >= 0"));
            }
            if path.len() < 2 {
                return Err("controller.path needs at least two points".into());
            }
            if path.iter().flatten().any(|c| !c.is_finite()) {
                return Err("controller.path has a non-finite coordinate".into());
            }
        }
        let mut sensor_ids = BTreeSet::new();
        for sensor in &self.sensors {
            check_id("sensor", &sensor.id).map_err(|e| e.to_string())?;
            if !sensor_ids.insert(&sensor.id) {
                return Err(format!("sensor id '{}' is used twice", sensor.id));
            }
            if !(sensor.rate.is_finite() && sensor.rate > 0.0) {
                return Err(format!("sensor '{}': rate must be positive", sensor.id));
            }
            if !(0.0..=1.0).contains(&sensor.load) {
                return Err(format!("sensor '{}': load must be in [0, 1]", sensor.id));
            }
            if sensor.fov.is_some_and(|f| !(f > 0.0 && f <= 360.0)) {
                return Err(format!(
                    "sensor '{}': fov must be in (0, 360] degrees",
                    sensor.id
                ));
            }
            if sensor.range.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
                return Err(format!("sensor '{}': range must be positive", sensor.id));
            }
            if !(sensor.noise.is_finite() && sensor.noise >= 0.0) {
                return Err(format!("sensor '{}': noise must be 0 or more", sensor.id));
            }
            sensor.validate_lidar()?;
        }
        Ok(())
    }
}

/// The path of a scenario given on the command line: as is, or under launch/scenarios/.
pub fn resolve_path(given: &Path) -> PathBuf {
    if given.exists() {
        return given.to_path_buf();
    }
    let in_dir = Path::new("launch/scenarios").join(given);
    for candidate in [in_dir.clone(), in_dir.with_extension("toml")] {
        if candidate.exists() {
            return candidate;
        }
    }
    given.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
[scenario]
name = "t"
dt = 0.01

[[agents]]
id = "ego"
start = { x = 0.0, y = 0.0 }
controller = { kind = "external" }
"#;

    #[test]
    fn minimal_scenario_gets_defaults() {
        let s = Scenario::from_str(MINIMAL, "t.toml").expect("valid");
        assert_eq!(s.scenario.max_substeps, 10);
        assert!(s.deterministic());
        assert_eq!(s.dt_ns(), 10_000_000);
    }

    #[test]
    fn errors_name_file_and_line() {
        let typo = MINIMAL.replace("dt = 0.01", "dt = 0.01\nspeeed = 3");
        let err = Scenario::from_str(&typo, "t.toml")
            .expect_err("typo accepted")
            .to_string();
        assert!(err.starts_with("t.toml:5:"), "{err}");
        assert!(err.contains("speeed"), "{err}");

        let too_big = MINIMAL.replace("dt = 0.01", "dt = 0.2");
        let err = Scenario::from_str(&too_big, "t.toml")
            .expect_err("dt accepted")
            .to_string();
        assert!(err.starts_with("t.toml:4:"), "{err}");
        assert!(err.contains("0.01 * 10 = 0.1"), "{err}");

        let bad_id = MINIMAL.replace("id = \"ego\"", "id = \"Ego\"");
        let err = Scenario::from_str(&bad_id, "t.toml")
            .expect_err("id accepted")
            .to_string();
        assert!(err.starts_with("t.toml:7:"), "{err}");

        let variable = MINIMAL.replace("dt = 0.01", "dt = 0.01\nstep = \"variable\"");
        let err = Scenario::from_str(&variable, "t.toml")
            .expect_err("variable sync")
            .to_string();
        assert!(err.contains("needs mode = \"async\""), "{err}");
    }
}
