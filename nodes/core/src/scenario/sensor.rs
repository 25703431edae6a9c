//! A scenario's sensors: their kind (what each publishes is in the sensor catalogue), rate,
//! placement and the per-kind parameters (field of view, range, lidar pattern, camera outputs).

use serde::{Deserialize, Serialize};

use super::one;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    MainOnly,
    #[default]
    MainOrClient,
    ClientOnly,
}

/// A sensor kind; what each publishes is in [`crate::sensor_catalogue`] (indexed by this enum's
/// order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SensorKind {
    Imu,
    Gnss,
    Odometry,
    Radar,
    Lidar,
    Camera,
}

impl SensorKind {
    /// The name scenario files use (`kind = "imu"`; see the sensor catalogue).
    pub fn as_str(self) -> &'static str {
        self.spec().name
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SensorSpec {
    pub id: String,
    pub kind: SensorKind,
    /// Hz of simulation time.
    pub rate: f64,
    #[serde(default)]
    pub distribution: Distribution,
    #[serde(default = "half")]
    pub load: f64,
    #[serde(default)]
    pub pin: Option<String>,
    /// Horizontal field of view, degrees (radar; default 90).
    #[serde(default)]
    pub fov: Option<f64>,
    /// Largest range, metres (radar; default 100).
    #[serde(default)]
    pub range: Option<f64>,
    /// Scale of the model's default noise: 0 for exact readings (default 1).
    #[serde(default = "one")]
    pub noise: f64,
    /// Mount point in the agent's body frame (x forward, y left, z up from the box centre),
    /// metres (lidar default: 0.3 m above the roof).
    #[serde(default)]
    pub offset: Option<[f64; 3]>,
    /// Lidar channels (rings; default 32).
    #[serde(default)]
    pub channels: Option<u32>,
    /// Lidar columns per rotation (default 1024).
    #[serde(default)]
    pub columns: Option<u32>,
    /// Elevation of the highest lidar channel, degrees (default 15).
    #[serde(default)]
    pub upper_fov: Option<f64>,
    /// Elevation of the lowest lidar channel, degrees (default -25).
    #[serde(default)]
    pub lower_fov: Option<f64>,
    /// Nearest range a lidar reports, metres (default 0.5).
    #[serde(default)]
    pub min_range: Option<f64>,
    /// Camera image width and height, pixels (default 640 x 480).
    #[serde(default)]
    pub width: Option<u32>,
    #[serde(default)]
    pub height: Option<u32>,
    /// Camera tilt below level, degrees (default 0).
    #[serde(default)]
    pub pitch: Option<f64>,
    /// A camera also publishes depth (32FC1, metres) on `<topic>_depth`.
    #[serde(default)]
    pub depth: bool,
    /// A camera also publishes semantic class ids (mono8) on `<topic>_semantic`.
    #[serde(default)]
    pub semantic: bool,
}

fn half() -> f64 {
    0.5
}

impl SensorSpec {
    /// A sensor with the scenario file's defaults for everything but its id, kind and rate.
    pub fn new(id: &str, kind: SensorKind, rate: f64) -> SensorSpec {
        SensorSpec {
            id: id.to_string(),
            kind,
            rate,
            distribution: Distribution::default(),
            load: half(),
            pin: None,
            fov: None,
            range: None,
            noise: one(),
            offset: None,
            channels: None,
            columns: None,
            upper_fov: None,
            lower_fov: None,
            min_range: None,
            width: None,
            height: None,
            pitch: None,
            depth: false,
            semantic: false,
        }
    }

    /// Horizontal field of view in radians.
    /// Where the sensor sits on its agent (x forward, y left, z up from the box centre), given
    /// the box's half extents: its `offset`, else the kind's default (lidar on the roof,
    /// camera at the windscreen, the rest at the centre). The sensor models and the ROS 2
    /// bridge's static transforms both use this.
    pub fn mount_offset(&self, half_extents: [f64; 3]) -> [f64; 3] {
        self.offset.unwrap_or(match self.kind {
            SensorKind::Lidar => [0.0, 0.0, half_extents[2] + 0.3],
            SensorKind::Camera => [half_extents[0] * 0.6, 0.0, half_extents[2] * 0.8],
            _ => [0.0, 0.0, 0.0],
        })
    }

    pub fn fov_rad(&self) -> f64 {
        self.fov.unwrap_or(90.0).to_radians()
    }

    /// Largest range in metres.
    pub fn max_range(&self) -> f64 {
        self.range.unwrap_or(100.0)
    }

    /// The lidar geometry fields, where given, are usable.
    pub(super) fn validate_lidar(&self) -> Result<(), String> {
        let id = &self.id;
        for (key, v) in [("width", self.width), ("height", self.height)] {
            if v.is_some_and(|px| !(1..=8192).contains(&px)) {
                return Err(format!("sensor '{id}': {key} must be 1 to 8192 pixels"));
            }
        }
        if self
            .pitch
            .is_some_and(|d| !(d.is_finite() && (-89.0..=89.0).contains(&d)))
        {
            return Err(format!("sensor '{id}': pitch must be in [-89, 89] degrees"));
        }
        if self.offset.iter().flatten().any(|v| !v.is_finite()) {
            return Err(format!("sensor '{id}': offset must be finite"));
        }
        if self.channels.is_some_and(|c| !(1..=256).contains(&c)) {
            return Err(format!("sensor '{id}': channels must be 1 to 256"));
        }
        if self.columns.is_some_and(|c| !(1..=16384).contains(&c)) {
            return Err(format!("sensor '{id}': columns must be 1 to 16384"));
        }
        for (key, v) in [("upper_fov", self.upper_fov), ("lower_fov", self.lower_fov)] {
            if v.is_some_and(|d| !(d.is_finite() && (-90.0..=90.0).contains(&d))) {
                return Err(format!("sensor '{id}': {key} must be in [-90, 90] degrees"));
            }
        }
        if self.upper_fov.unwrap_or(15.0) < self.lower_fov.unwrap_or(-25.0) {
            return Err(format!("sensor '{id}': upper_fov is below lower_fov"));
        }
        if self
            .min_range
            .is_some_and(|r| !(r.is_finite() && r >= 0.0 && r < self.max_range()))
        {
            return Err(format!("sensor '{id}': min_range must be in [0, range)"));
        }
        Ok(())
    }
}
