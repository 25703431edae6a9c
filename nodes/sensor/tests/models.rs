//! Sensor models against hand-computed values, noiseless so they are exact.

use convoy_core::messages::{AgentState, Imu, Pose, Quat, SensorHeader, Twist, Vec3};
use convoy_core::scenario::GeoOrigin;
use convoy_sensor::models::{self, GnssSigma, ImuSigma, RadarSigma, GRAVITY, WGS84_A, WGS84_E2};
use convoy_sensor::Noise;
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

fn header() -> SensorHeader {
    SensorHeader {
        agent: "ego".into(),
        sensor: "s".into(),
        frame: 7,
        stamp_ns: 350_000_000,
        seq: 3,
    }
}

fn noise() -> Noise {
    Noise::new(1, "ego/s")
}

fn agent(id: &str, pos: Vec3, yaw: f64, vel: Vec3) -> AgentState {
    AgentState {
        agent_id: id.into(),
        pose: Pose {
            position: pos,
            orientation: models::quat_from_yaw(yaw),
        },
        twist: Twist {
            linear: vel,
            angular: Vec3::ZERO,
        },
        ..Default::default()
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

fn close3(a: Vec3, b: Vec3, tol: f64) -> bool {
    close(a.x, b.x, tol) && close(a.y, b.y, tol) && close(a.z, b.z, tol)
}

// ---- imu -----------------------------------------------------------------------------------

/// A noiseless IMU sample of `now`, `dt` after `previous`.
fn imu(now: &AgentState, previous: &AgentState, dt: f64) -> Imu {
    models::imu(
        now,
        previous,
        dt,
        header(),
        &mut noise(),
        ImuSigma::default(),
    )
}

#[test]
fn imu_at_rest_reads_gravity_up() {
    let s = agent("ego", Vec3::ZERO, 0.7, Vec3::ZERO);
    let m = imu(&s, &s, 0.01);
    assert!(close3(
        m.linear_acceleration,
        Vec3::new(0.0, 0.0, GRAVITY),
        1e-12
    ));
    assert!(close3(m.angular_velocity, Vec3::ZERO, 1e-12));
    assert_eq!(m.orientation, s.pose.orientation);
    assert_eq!(m.header, header());
}

#[test]
fn imu_acceleration_and_yaw_rate_in_body_frame() {
    // Heading north (yaw 90°), speeding up northwards by 2 m/s^2, turning left at 0.5 rad/s.
    let prev = agent("ego", Vec3::ZERO, FRAC_PI_2, Vec3::new(0.0, 10.0, 0.0));
    let mut now = agent("ego", Vec3::ZERO, FRAC_PI_2, Vec3::new(0.0, 10.2, 0.0));
    now.twist.angular = Vec3::new(0.0, 0.0, 0.5);
    let m = imu(&now, &prev, 0.1);
    // Forward is body x.
    assert!(close3(
        m.linear_acceleration,
        Vec3::new(2.0, 0.0, GRAVITY),
        1e-9
    ));
    assert!(close3(m.angular_velocity, Vec3::new(0.0, 0.0, 0.5), 1e-12));
}

#[test]
fn imu_body_frame_roll_rate() {
    // Facing west, rolling about the world's -x axis: that is the body's +x (forward) axis.
    let mut s = agent("ego", Vec3::ZERO, PI, Vec3::ZERO);
    s.twist.angular = Vec3::new(-0.3, 0.0, 0.0);
    let m = imu(&s, &s, 0.01);
    assert!(close3(m.angular_velocity, Vec3::new(0.3, 0.0, 0.0), 1e-12));
}

#[test]
fn imu_first_sample_uses_state_accel() {
    let mut s = agent("ego", Vec3::ZERO, 0.0, Vec3::ZERO);
    s.accel = Vec3::new(1.0, 0.0, 0.0);
    let m = imu(&s, &s, 0.0);
    assert!(close3(
        m.linear_acceleration,
        Vec3::new(1.0, 0.0, GRAVITY),
        1e-12
    ));
}

#[test]
fn imu_noise_is_seeded() {
    let s = agent("ego", Vec3::ZERO, 0.0, Vec3::ZERO);
    let sigma = ImuSigma {
        gyro: 0.01,
        accel: 0.1,
    };
    let a = models::imu(&s, &s, 0.01, header(), &mut noise(), sigma);
    let b = models::imu(&s, &s, 0.01, header(), &mut noise(), sigma);
    assert_eq!(a, b);
    assert_ne!(a.linear_acceleration.z, GRAVITY);
}

// ---- gnss ----------------------------------------------------------------------------------

fn origin() -> GeoOrigin {
    GeoOrigin {
        latitude: 48.137154,
        longitude: 11.576124,
        altitude: 519.0,
    }
}

fn fix_at(pos: Vec3) -> (f64, f64, f64) {
    let s = agent("ego", pos, 0.0, Vec3::ZERO);
    let f = models::gnss(&s, &origin(), header(), &mut noise(), GnssSigma::default());
    (f.latitude, f.longitude, f.altitude)
}

#[test]
fn gnss_origin_maps_to_itself() {
    let (lat, lon, alt) = fix_at(Vec3::ZERO);
    let o = origin();
    assert!(close(lat, o.latitude, 1e-10));
    assert!(close(lon, o.longitude, 1e-10));
    assert!(close(alt, o.altitude, 1e-4));
}

#[test]
fn gnss_100m_north() {
    let o = origin();
    let phi = o.latitude.to_radians();
    // Meridian radius of curvature at the origin, raised by the origin's altitude (the
    // tangent plane sits 519 m above the ellipsoid, which alone is 8e-5 of the answer).
    let m = WGS84_A * (1.0 - WGS84_E2) / (1.0 - WGS84_E2 * phi.sin().powi(2)).powf(1.5);
    let expected = o.latitude + (100.0 / (m + o.altitude)).to_degrees();
    let (lat, lon, alt) = fix_at(Vec3::new(0.0, 100.0, 0.0));
    // 1e-7 degrees is about a centimetre.
    assert!(close(lat, expected, 1e-7), "lat {lat} expected {expected}");
    assert!(close(lon, o.longitude, 1e-9));
    // The tangent plane rises above the curved ellipsoid by d^2 / 2R: under a millimetre.
    assert!(close(alt, o.altitude, 0.01));
}

#[test]
fn gnss_100m_east() {
    let o = origin();
    let phi = o.latitude.to_radians();
    // Prime vertical radius: a parallel's radius at altitude h is (N + h) cos(phi).
    let n = WGS84_A / (1.0 - WGS84_E2 * phi.sin().powi(2)).sqrt();
    let expected = o.longitude + (100.0 / ((n + o.altitude) * phi.cos())).to_degrees();
    let (lat, lon, _) = fix_at(Vec3::new(100.0, 0.0, 0.0));
    assert!(close(lon, expected, 1e-7), "lon {lon} expected {expected}");
    assert!(close(lat, o.latitude, 1e-7));
}

#[test]
fn gnss_up_is_altitude() {
    let (_, _, alt) = fix_at(Vec3::new(0.0, 0.0, 10.0));
    assert!(close(alt, origin().altitude + 10.0, 1e-4));
}

#[test]
fn gnss_round_trip_far_south() {
    let o = GeoOrigin {
        latitude: -33.8688,
        longitude: 151.2093,
        altitude: 0.0,
    };
    let s = agent("ego", Vec3::ZERO, 0.0, Vec3::ZERO);
    let f = models::gnss(&s, &o, header(), &mut noise(), GnssSigma::default());
    assert!(close(f.latitude, o.latitude, 1e-10));
    assert!(close(f.longitude, o.longitude, 1e-10));
}

#[test]
fn gnss_covariance_from_sigma() {
    let s = agent("ego", Vec3::ZERO, 0.0, Vec3::ZERO);
    let sigma = GnssSigma {
        horizontal: 0.5,
        vertical: 2.0,
    };
    let f = models::gnss(&s, &origin(), header(), &mut noise(), sigma);
    assert_eq!(f.position_covariance[0], 0.25);
    assert_eq!(f.position_covariance[4], 0.25);
    assert_eq!(f.position_covariance[8], 4.0);
}

// ---- odometry ------------------------------------------------------------------------------

#[test]
fn odometry_matches_state() {
    let mut s = agent(
        "ego",
        Vec3::new(1.0, 2.0, 3.0),
        0.3,
        Vec3::new(4.0, 5.0, 6.0),
    );
    s.twist.angular = Vec3::new(0.1, 0.2, 0.3);
    let o = models::odometry(&s, header());
    assert_eq!(o.pose, s.pose);
    assert_eq!(o.twist, s.twist);
    assert_eq!(o.header, header());
}

// ---- radar ---------------------------------------------------------------------------------

fn scan(own: &AgentState, others: &[AgentState]) -> Vec<convoy_core::messages::RadarDetection> {
    models::radar(
        own,
        others,
        FRAC_PI_2,
        100.0,
        header(),
        &mut noise(),
        RadarSigma::default(),
    )
    .detections
}

#[test]
fn radar_target_ahead_driving_away() {
    // Own heading north at 10 m/s; target 20 m north at 15 m/s.
    let own = agent(
        "ego",
        Vec3::new(5.0, 5.0, 0.0),
        FRAC_PI_2,
        Vec3::new(0.0, 10.0, 0.0),
    );
    let other = agent(
        "lead",
        Vec3::new(5.0, 25.0, 0.0),
        FRAC_PI_2,
        Vec3::new(0.0, 15.0, 0.0),
    );
    let d = scan(&own, &[other]);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].target, "lead");
    assert!(close(d[0].range, 20.0, 1e-9));
    assert!(close(d[0].azimuth, 0.0, 1e-9));
    assert!(close(d[0].elevation, 0.0, 1e-9));
    assert!(close(d[0].radial_velocity, 5.0, 1e-9));
}

#[test]
fn radar_target_left_at_45_degrees() {
    let own = agent("ego", Vec3::ZERO, 0.0, Vec3::ZERO);
    let r = 20.0 * FRAC_PI_4.cos();
    let other = agent("left", Vec3::new(r, r, 0.0), 0.0, Vec3::ZERO);
    let d = scan(&own, &[other]);
    assert_eq!(d.len(), 1);
    assert!(close(d[0].range, 20.0, 1e-9));
    assert!(close(d[0].azimuth, FRAC_PI_4, 1e-9));
    // Just outside the 90° field of view.
    let a = 50f64.to_radians();
    let outside = agent(
        "out",
        Vec3::new(20.0 * a.cos(), 20.0 * a.sin(), 0.0),
        0.0,
        Vec3::ZERO,
    );
    assert!(scan(&own, &[outside]).is_empty());
}

#[test]
fn radar_azimuth_is_relative_to_heading() {
    // Heading west; a target to the south is on the vehicle's left.
    let own = agent("ego", Vec3::ZERO, PI, Vec3::ZERO);
    let a = 30f64.to_radians();
    let other = agent(
        "t",
        Vec3::new(-10.0 * a.cos(), -10.0 * a.sin(), 0.0),
        0.0,
        Vec3::ZERO,
    );
    let d = scan(&own, &[other]);
    assert_eq!(d.len(), 1);
    assert!(close(d[0].azimuth, a, 1e-9));
}

#[test]
fn radar_closing_target_has_negative_radial_velocity() {
    let own = agent("ego", Vec3::ZERO, 0.0, Vec3::new(10.0, 0.0, 0.0));
    let other = agent(
        "t",
        Vec3::new(30.0, 0.0, 0.0),
        PI,
        Vec3::new(-5.0, 0.0, 0.0),
    );
    let d = scan(&own, &[other]);
    assert!(close(d[0].radial_velocity, -15.0, 1e-9));
}

#[test]
fn radar_ignores_behind_far_and_self() {
    let own = agent("ego", Vec3::ZERO, 0.0, Vec3::ZERO);
    let behind = agent("behind", Vec3::new(-20.0, 0.0, 0.0), 0.0, Vec3::ZERO);
    let far = agent("far", Vec3::new(150.0, 0.0, 0.0), 0.0, Vec3::ZERO);
    let me = own.clone();
    assert!(scan(&own, &[behind, far, me]).is_empty());
}

#[test]
fn radar_elevation_positive_up() {
    let own = agent("ego", Vec3::ZERO, 0.0, Vec3::ZERO);
    let other = agent("up", Vec3::new(10.0, 0.0, 10.0), 0.0, Vec3::ZERO);
    let d = scan(&own, &[other]);
    assert!(close(d[0].elevation, FRAC_PI_4, 1e-9));
}

#[test]
fn yaw_of_quaternion() {
    for y in [-3.0, -1.0, 0.0, 0.5, 2.0, 3.1] {
        assert!(close(models::yaw(models::quat_from_yaw(y)), y, 1e-12));
    }
    assert_eq!(models::yaw(Quat::IDENTITY), 0.0);
}
