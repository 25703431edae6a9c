//! Sensor models: pure functions from agent states to sensor messages.
//!
//! World frame is local ENU (x east, y north, z up) around the scenario's geo origin; agent
//! twists are in the world frame; quaternions are `[x, y, z, w]` and rotate body to world.
//! Body frame is x forward, y left, z up. Each model takes its [`Noise`] stream and a sigma
//! struct whose `Default` is noiseless, so tests can check exact values.

use crate::noise::Noise;
use convoy_core::messages::{
    AgentState, GnssFix, Imu, Odometry, Quat, RadarDetection, RadarScan, SensorHeader, Vec3,
};
use convoy_core::scenario::GeoOrigin;

/// Standard gravity (m/s^2).
pub const GRAVITY: f64 = 9.806_65;

/// WGS84 semi-major axis (m).
pub const WGS84_A: f64 = 6_378_137.0;
/// WGS84 flattening.
pub const WGS84_F: f64 = 1.0 / 298.257_223_563;
/// WGS84 first eccentricity squared.
pub const WGS84_E2: f64 = WGS84_F * (2.0 - WGS84_F);

// ---- small vector helpers ------------------------------------------------------------------

fn add(a: Vec3, b: Vec3) -> Vec3 {
    Vec3::new(a.x + b.x, a.y + b.y, a.z + b.z)
}

fn sub(a: Vec3, b: Vec3) -> Vec3 {
    Vec3::new(a.x - b.x, a.y - b.y, a.z - b.z)
}

fn scale(a: Vec3, s: f64) -> Vec3 {
    Vec3::new(a.x * s, a.y * s, a.z * s)
}

fn dot(a: Vec3, b: Vec3) -> f64 {
    a.x * b.x + a.y * b.y + a.z * b.z
}

fn cross(a: Vec3, b: Vec3) -> Vec3 {
    Vec3::new(
        a.y * b.z - a.z * b.y,
        a.z * b.x - a.x * b.z,
        a.x * b.y - a.y * b.x,
    )
}

fn norm(a: Vec3) -> f64 {
    dot(a, a).sqrt()
}

/// The quaternion scaled to unit length; a degenerate one (zero, NaN) is taken as identity
/// rather than spreading NaN through every reading.
fn normalized(q: Quat) -> Quat {
    let n = (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).sqrt();
    if n.is_finite() && n > 1e-12 {
        Quat::new(q.x / n, q.y / n, q.z / n, q.w / n)
    } else {
        Quat::IDENTITY
    }
}

/// Rotates `v` by unit quaternion `q` (body to world).
pub fn rotate(q: Quat, v: Vec3) -> Vec3 {
    // v' = v + 2w (u x v) + 2 u x (u x v), u = (x, y, z).
    let u = Vec3::new(q.x, q.y, q.z);
    let t = scale(cross(u, v), 2.0);
    add(add(v, scale(t, q.w)), cross(u, t))
}

/// Rotates `v` by the inverse of unit quaternion `q` (world to body).
pub fn rotate_inv(q: Quat, v: Vec3) -> Vec3 {
    rotate(Quat::new(-q.x, -q.y, -q.z, q.w), v)
}

/// Heading (yaw about z, radians, counter-clockwise from east) of an orientation.
pub fn yaw(q: Quat) -> f64 {
    let q = normalized(q);
    (2.0 * (q.w * q.z + q.x * q.y)).atan2(1.0 - 2.0 * (q.y * q.y + q.z * q.z))
}

/// A rotation of `yaw` radians about z.
pub fn quat_from_yaw(yaw: f64) -> Quat {
    let h = yaw / 2.0;
    Quat::new(0.0, 0.0, h.sin(), h.cos())
}

fn noisy(v: Vec3, noise: &mut Noise, sigma: f64) -> Vec3 {
    Vec3::new(
        v.x + noise.gaussian(sigma),
        v.y + noise.gaussian(sigma),
        v.z + noise.gaussian(sigma),
    )
}

// ---- imu -----------------------------------------------------------------------------------

/// IMU noise: standard deviations per axis.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct ImuSigma {
    /// rad/s
    pub gyro: f64,
    /// m/s^2
    pub accel: f64,
}

/// An IMU reading: orientation as posed, angular velocity in the body frame, and specific
/// force in the body frame (acceleration minus gravity, so a car at rest on flat ground reads
/// +g on z). The acceleration is the velocity change from `state_prev` over `dt`; when `dt` is
/// not positive (the first sample) the state's own `accel` is used instead.
pub fn imu(
    state_now: &AgentState,
    state_prev: &AgentState,
    dt: f64,
    header: SensorHeader,
    noise: &mut Noise,
    sigma: ImuSigma,
) -> Imu {
    let q = normalized(state_now.pose.orientation);
    let accel_world = if dt.is_finite() && dt > 0.0 {
        scale(
            sub(state_now.twist.linear, state_prev.twist.linear),
            1.0 / dt,
        )
    } else {
        state_now.accel
    };
    let specific_force = sub(accel_world, Vec3::new(0.0, 0.0, -GRAVITY));
    Imu {
        header,
        orientation: q,
        angular_velocity: noisy(rotate_inv(q, state_now.twist.angular), noise, sigma.gyro),
        linear_acceleration: noisy(rotate_inv(q, specific_force), noise, sigma.accel),
    }
}

// ---- gnss ----------------------------------------------------------------------------------

/// GNSS noise: standard deviations in metres.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct GnssSigma {
    pub horizontal: f64,
    pub vertical: f64,
}

/// Geodetic (degrees, degrees, metres above the ellipsoid) to ECEF (m).
pub fn geodetic_to_ecef(lat_deg: f64, lon_deg: f64, alt: f64) -> Vec3 {
    let (lat, lon) = (lat_deg.to_radians(), lon_deg.to_radians());
    let n = WGS84_A / (1.0 - WGS84_E2 * lat.sin().powi(2)).sqrt();
    Vec3::new(
        (n + alt) * lat.cos() * lon.cos(),
        (n + alt) * lat.cos() * lon.sin(),
        (n * (1.0 - WGS84_E2) + alt) * lat.sin(),
    )
}

/// ECEF (m) to geodetic (degrees, degrees, metres above the ellipsoid).
pub fn ecef_to_geodetic(p: Vec3) -> (f64, f64, f64) {
    let rho = p.x.hypot(p.y);
    let lon = p.y.atan2(p.x);
    // Fixed-point iteration on latitude; from the spherical-ish first guess it converges to
    // well under a millimetre in a handful of steps anywhere near the Earth's surface.
    let mut lat = p.z.atan2(rho * (1.0 - WGS84_E2));
    for _ in 0..8 {
        let n = WGS84_A / (1.0 - WGS84_E2 * lat.sin().powi(2)).sqrt();
        lat = (p.z + WGS84_E2 * n * lat.sin()).atan2(rho);
    }
    let (s, c) = lat.sin_cos();
    let n = WGS84_A / (1.0 - WGS84_E2 * s * s).sqrt();
    // Valid at every latitude (no division by cos(lat) at the poles).
    let alt = rho * c + p.z * s - WGS84_A * WGS84_A / n;
    (lat.to_degrees(), lon.to_degrees(), alt)
}

/// Local ENU (m) around `origin` to WGS84 (degrees, degrees, metres above the ellipsoid).
pub fn enu_to_geodetic(enu: Vec3, origin: &GeoOrigin) -> (f64, f64, f64) {
    let (lat, lon) = (origin.latitude.to_radians(), origin.longitude.to_radians());
    let (sl, cl) = lat.sin_cos();
    let (so, co) = lon.sin_cos();
    let d = Vec3::new(
        -so * enu.x - sl * co * enu.y + cl * co * enu.z,
        co * enu.x - sl * so * enu.y + cl * so * enu.z,
        cl * enu.y + sl * enu.z,
    );
    let o = geodetic_to_ecef(origin.latitude, origin.longitude, origin.altitude);
    ecef_to_geodetic(add(o, d))
}

/// A GNSS fix of the agent's position, with the noise added in local metres and the
/// covariance saying how large that noise is.
pub fn gnss(
    state: &AgentState,
    origin: &GeoOrigin,
    header: SensorHeader,
    noise: &mut Noise,
    sigma: GnssSigma,
) -> GnssFix {
    let p = state.pose.position;
    let enu = Vec3::new(
        p.x + noise.gaussian(sigma.horizontal),
        p.y + noise.gaussian(sigma.horizontal),
        p.z + noise.gaussian(sigma.vertical),
    );
    let (latitude, longitude, altitude) = enu_to_geodetic(enu, origin);
    let (h2, v2) = (sigma.horizontal.powi(2), sigma.vertical.powi(2));
    GnssFix {
        header,
        latitude,
        longitude,
        altitude,
        // Row-major ENU covariance, as ROS NavSatFix has it.
        position_covariance: [h2, 0.0, 0.0, 0.0, h2, 0.0, 0.0, 0.0, v2],
    }
}

// ---- odometry ------------------------------------------------------------------------------

/// Ground-truth odometry: the agent's pose and twist as they are.
pub fn odometry(state: &AgentState, header: SensorHeader) -> Odometry {
    Odometry {
        header,
        pose: state.pose,
        twist: state.twist,
    }
}

// ---- radar ---------------------------------------------------------------------------------

/// Radar noise: standard deviations per detection.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct RadarSigma {
    /// m
    pub range: f64,
    /// rad, applied to azimuth and elevation
    pub angle: f64,
    /// m/s
    pub radial_velocity: f64,
}

/// Detections of the other agents within `max_range` and within ±`fov_azimuth_rad`/2 of the
/// vehicle's heading. Angles are in the vehicle's body frame (azimuth positive to the left,
/// elevation positive up); radial velocity is the relative velocity along the line of sight,
/// positive when the target moves away. The own agent (same id) is skipped if present.
pub fn radar(
    own: &AgentState,
    others: &[AgentState],
    fov_azimuth_rad: f64,
    max_range: f64,
    header: SensorHeader,
    noise: &mut Noise,
    sigma: RadarSigma,
) -> RadarScan {
    let q = normalized(own.pose.orientation);
    // A hair of slack so a target exactly on the edge of the field of view counts.
    let half_fov = fov_azimuth_rad / 2.0 + 1e-9;
    let mut detections = Vec::new();
    for other in others {
        if other.agent_id == own.agent_id {
            continue;
        }
        let d_world = sub(other.pose.position, own.pose.position);
        let range = norm(d_world);
        if !(range > 1e-9 && range <= max_range) {
            continue;
        }
        let d = rotate_inv(q, d_world);
        let azimuth = d.y.atan2(d.x);
        if azimuth.abs() > half_fov {
            continue;
        }
        let elevation = d.z.atan2(d.x.hypot(d.y));
        let v_rel = sub(other.twist.linear, own.twist.linear);
        let radial_velocity = dot(v_rel, d_world) / range;
        detections.push(RadarDetection {
            target: other.agent_id.clone(),
            range: range + noise.gaussian(sigma.range),
            azimuth: azimuth + noise.gaussian(sigma.angle),
            elevation: elevation + noise.gaussian(sigma.angle),
            radial_velocity: radial_velocity + noise.gaussian(sigma.radial_velocity),
        });
    }
    RadarScan { header, detections }
}
