//! The agent's physics and controllers in-process: path following, determinism, crashes into
//! zombies and walls, teleport checks, substeps, and the shipped scenarios (launch/scenarios/).
//!
//! Multi-agent tests step one AgentWorld per agent in lockstep, exchanging states the way the
//! nodes do over DDS (DESIGN.md): frame N of every agent sees the frame N-1 states of the others.

use convoy_agent::world::{substeps, AgentWorld, WorldError};
use convoy_core::messages::{AgentState, Control, ControlMode, Pose, Quat, Vec3};
use convoy_core::scenario::{ControllerSpec, Scenario, StartPose};
use convoy_world::World;

mod fleet;
use fleet::{load, Fleet};

// ---- helpers ----------------------------------------------------------------------------

/// launch/scenarios of the workspace this crate is in.
fn scenario(text: &str) -> Scenario {
    Scenario::from_str(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn pedals(frame: u64, throttle: f64, brake: f64, steer: f64) -> Control {
    Control {
        frame,
        mode: ControlMode::Pedals,
        throttle,
        brake,
        steer,
        ..Control::default()
    }
}

fn yaw_of(q: &Quat) -> f64 {
    (2.0 * (q.w * q.z + q.x * q.y)).atan2(1.0 - 2.0 * (q.y * q.y + q.z * q.z))
}

/// Speed along the vehicle's heading (negative when rolling backwards).
fn forward_speed(s: &AgentState) -> f64 {
    let yaw = yaw_of(&s.pose.orientation);
    s.twist.linear.x * yaw.cos() + s.twist.linear.y * yaw.sin()
}

fn planar_distance(a: &AgentState, b: &AgentState) -> f64 {
    let (dx, dy) = (
        a.pose.position.x - b.pose.position.x,
        a.pose.position.y - b.pose.position.y,
    );
    (dx * dx + dy * dy).sqrt()
}

/// Distance from (x, y) to a polyline (closed when `looped`).
fn distance_to_path(x: f64, y: f64, path: &[[f64; 2]], looped: bool) -> f64 {
    let n = path.len();
    let segments = if looped { n } else { n - 1 };
    (0..segments)
        .map(|i| {
            let (a, b) = (path[i], path[(i + 1) % n]);
            let ab = [b[0] - a[0], b[1] - a[1]];
            let len2 = ab[0] * ab[0] + ab[1] * ab[1];
            let t = if len2 > 0.0 {
                (((x - a[0]) * ab[0] + (y - a[1]) * ab[1]) / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let (cx, cy) = (a[0] + t * ab[0], a[1] + t * ab[1]);
            ((x - cx).powi(2) + (y - cy).powi(2)).sqrt()
        })
        .fold(f64::INFINITY, f64::min)
}

fn state_bits(s: &AgentState) -> Vec<u64> {
    let p = &s.pose;
    [
        p.position.x,
        p.position.y,
        p.position.z,
        p.orientation.x,
        p.orientation.y,
        p.orientation.z,
        p.orientation.w,
        s.twist.linear.x,
        s.twist.linear.y,
        s.twist.linear.z,
        s.twist.angular.x,
        s.twist.angular.y,
        s.twist.angular.z,
        s.accel.x,
        s.accel.y,
        s.accel.z,
        s.extents.x,
        s.extents.y,
        s.extents.z,
    ]
    .iter()
    .map(|v| v.to_bits())
    .chain([s.frame, s.stamp_ns as u64])
    .collect()
}

fn no_external(_: usize, frame: u64) -> Control {
    pedals(frame, 0.0, 1.0, 0.0)
}

// ---- (a) path following -----------------------------------------------------------------

/// A rounded rectangle (straights and 20 m arcs), counter-clockwise, as TOML path points.
fn loop_road() -> Vec<[f64; 2]> {
    let (a, b, r) = (60.0_f64, 30.0_f64, 20.0_f64);
    let centres = [
        (a - r, -(b - r), -90.0_f64),
        (a - r, b - r, 0.0),
        (-(a - r), b - r, 90.0),
        (-(a - r), -(b - r), 180.0),
    ];
    let mut points = vec![[0.0, -b]];
    for (cx, cy, start) in centres {
        for k in 0..=9 {
            let angle = (start + 10.0 * f64::from(k)).to_radians();
            points.push([cx + r * angle.cos(), cy + r * angle.sin()]);
        }
    }
    points
}

fn one_car_on_loop(dt: f64, speed: f64) -> Scenario {
    let path: Vec<String> = loop_road()
        .iter()
        .map(|[x, y]| format!("[{x}, {y}]"))
        .collect();
    scenario(&format!(
        r#"
[scenario]
name = "loop"
dt = {dt}

[[agents]]
id = "car"
start = {{ x = -10.0, y = -30.0, yaw = 0.0 }}
controller = {{ kind = "waypoints", speed = {speed}, looped = true, path = [{}] }}
"#,
        path.join(", ")
    ))
}

fn follows_loop(dt: f64) {
    let speed = 8.0;
    let scenario = one_car_on_loop(dt, speed);
    let path = loop_road();
    let mut fleet = Fleet::new(&scenario);
    let frames = (40.0 / dt).round() as u64; // 40 s: well over a lap (~330 m)
    let settle = (5.0 / dt).round() as u64;
    let (mut worst, mut speed_sum, mut speed_n) = (0.0_f64, 0.0, 0);
    for _ in 0..frames {
        fleet.step(&no_external);
        let s = &fleet.states[0];
        if fleet.frame > settle {
            let d = distance_to_path(s.pose.position.x, s.pose.position.y, &path, true);
            worst = worst.max(d);
            speed_sum += forward_speed(s);
            speed_n += 1;
        }
    }
    let mean_speed = speed_sum / f64::from(speed_n);
    assert!(worst < 1.0, "dt {dt}: {worst:.2} m off the path");
    assert!(
        (mean_speed - speed).abs() < 0.5,
        "dt {dt}: mean speed {mean_speed:.2} m/s, target {speed}"
    );
    let end = &fleet.states[0];
    assert!(end.pose.position.z.abs() < 1.0, "left the ground: {end:?}");
}

#[test]
fn waypoint_car_follows_a_loop_road() {
    follows_loop(0.01);
}

#[test]
fn waypoint_car_follows_a_loop_road_with_substeps() {
    // dt 0.05 s: five 0.01 s substeps per frame; the controller acts only once per frame.
    follows_loop(0.05);
}

// ---- (b) determinism --------------------------------------------------------------------

fn two_car_run(frames: u64) -> Vec<Vec<u64>> {
    let scenario = load("two_cars.toml");
    let mut fleet = Fleet::new(&scenario);
    let mut out = Vec::with_capacity(frames as usize * 2);
    for _ in 0..frames {
        fleet.step(&no_external);
        out.extend(fleet.states.iter().map(state_bits));
    }
    out
}

/// A run that crashes: head-on under full throttle, so contacts with zombies are exercised.
fn crash_run(frames: u64) -> Vec<Vec<u64>> {
    let mut fleet = Fleet::new(&head_on_scenario());
    let mut out = Vec::new();
    for _ in 0..frames {
        fleet.step(&|_, frame| pedals(frame, 1.0, 0.0, 0.02));
        out.extend(fleet.states.iter().map(state_bits));
    }
    out
}

#[test]
fn runs_are_bit_identical() {
    let a = two_car_run(2000);
    let b = two_car_run(2000);
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "state {i} differs");
    }
    let a = crash_run(600);
    let b = crash_run(600);
    assert!(a == b, "crash runs differ");
}

/// FNV-1a over every bit of a run: a short fingerprint to compare across processes.
fn digest(run: &[Vec<u64>]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for word in run.iter().flatten() {
        for byte in word.to_le_bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

const DIGEST_CHILD: &str = "CONVOY_AGENT_DIGEST_CHILD";

/// Prints the digest of a two-car run when started by `runs_match_across_processes`.
#[test]
fn digest_child() {
    if std::env::var_os(DIGEST_CHILD).is_some() {
        println!("DIGEST {:016x}", digest(&two_car_run(500)));
    }
}

#[test]
fn runs_match_across_processes() {
    // A fresh process has a different address layout and hash seeds: anything in the physics
    // that depended on them would show here.
    let exe = std::env::current_exe().expect("test binary");
    let output = std::process::Command::new(exe)
        .args([
            "--exact",
            "digest_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(DIGEST_CHILD, "1")
        .output()
        .expect("run the test binary again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let theirs = stdout
        .lines()
        .find_map(|l| l.split_once("DIGEST ").map(|(_, d)| d.trim()))
        .unwrap_or_else(|| panic!("no digest from the child: {stdout}"));
    let ours = format!("{:016x}", digest(&two_car_run(500)));
    assert_eq!(ours, theirs);
}

#[test]
fn zombie_order_does_not_matter() {
    let scenario = load("sixteen_cars.toml");
    let ids = scenario.agent_ids();
    let others: Vec<AgentState> = ids[1..]
        .iter()
        .map(|id| {
            AgentWorld::new(&scenario, &World::flat(), id)
                .expect("world")
                .state(0, 0)
        })
        .collect();
    let mut reversed = others.clone();
    reversed.reverse();
    let mut forward_world = AgentWorld::new(&scenario, &World::flat(), &ids[0]).expect("world");
    let mut reverse_world = AgentWorld::new(&scenario, &World::flat(), &ids[0]).expect("world");
    for frame in 1..=50 {
        forward_world.set_zombies(&others);
        reverse_world.set_zombies(&reversed);
        let c = pedals(frame, 0.5, 0.0, 0.1);
        forward_world.step(&c, 0.01);
        reverse_world.step(&c, 0.01);
        assert_eq!(
            state_bits(&forward_world.state(frame, 0)),
            state_bits(&reverse_world.state(frame, 0))
        );
    }
    assert_eq!(forward_world.zombie_ids(), ids[1..].to_vec());
    // The cars start spread along their road, none within reach of another.
    assert!(forward_world.zombies_in_reach().is_empty());
    // Agents that stop reporting are removed.
    forward_world.set_zombies(&others[..3]);
    assert_eq!(forward_world.zombie_ids(), ids[1..4].to_vec());
    forward_world.set_zombies(&[]);
    assert!(forward_world.zombie_ids().is_empty());
}

#[test]
fn a_bad_state_leaves_no_zombie_until_a_good_one_comes() {
    let scenario = load("sixteen_cars.toml");
    let ids = scenario.agent_ids();
    let good: Vec<AgentState> = ids
        .iter()
        .map(|id| {
            AgentWorld::new(&scenario, &World::flat(), id)
                .expect("world")
                .state(0, 0)
        })
        .collect();
    let mut bad = good.clone();
    bad[2].pose.position.x = f64::NAN;
    bad[5].extents.y = 0.0;
    let without_bad: Vec<String> = ids
        .iter()
        .enumerate()
        .filter(|(i, _)| ![0, 2, 5].contains(i))
        .map(|(_, id)| id.clone())
        .collect();
    let mut world = AgentWorld::new(&scenario, &World::flat(), &ids[0]).expect("world");
    // Sorted (as a Tick carries them), then reversed with a stale repeat of each bad state.
    assert!(world.set_zombies(&bad));
    assert_eq!(world.zombie_ids(), without_bad);
    assert!(world.set_zombies(&good));
    assert_eq!(world.zombie_ids(), ids[1..].to_vec());
    let mut shuffled = bad.clone();
    shuffled.reverse();
    let mut stale = good[2].clone();
    stale.frame = 0;
    bad[2].frame = 1;
    shuffled[13] = bad[2].clone();
    shuffled.push(stale);
    assert!(world.set_zombies(&shuffled));
    assert_eq!(world.zombie_ids(), without_bad);
    assert!(!world.set_zombies(&shuffled), "nothing changed");
}

// ---- (c) head-on crash ------------------------------------------------------------------

fn head_on_scenario() -> Scenario {
    scenario(
        r#"
[scenario]
name = "crash"
dt = 0.01

[[agents]]
id = "a"
start = { x = -15.0, y = 0.0, yaw = 0.0 }
controller = { kind = "external" }

[[agents]]
id = "b"
start = { x = 15.0, y = 0.0, yaw = 3.141592653589793 }
controller = { kind = "external" }
"#,
    )
}

#[test]
fn head_on_crash_is_felt_by_both_and_never_overlaps() {
    let scenario = head_on_scenario();
    let half_length = scenario.agents[0].vehicle.half_extents[0];
    let mut fleet = Fleet::new(&scenario);
    let mut closest = f64::INFINITY;
    let mut impact: Option<(u64, [f64; 2])> = None;
    let mut after_min = [f64::INFINITY; 2];
    let mut approach = [0.0; 2];
    for _ in 0..600 {
        fleet.step(&|_, frame| pedals(frame, 1.0, 0.0, 0.0));
        let [a, b] = [&fleet.states[0], &fleet.states[1]];
        let d = planar_distance(a, b);
        closest = closest.min(d);
        let speeds = [forward_speed(a), forward_speed(b)];
        // 30 m apart the other car is out of reach, no body in the physics world; it must be
        // one well before the cars touch.
        let in_reach = fleet.worlds[0].zombies_in_reach();
        if fleet.frame == 1 {
            assert!(in_reach.is_empty(), "30 m apart, in reach: {in_reach:?}");
        }
        if d < 2.0 * half_length + 2.0 {
            assert_eq!(in_reach, ["b"], "frame {}: {d:.2} m apart", fleet.frame);
        }
        match impact {
            None if d < 2.0 * half_length + 0.3 => impact = Some((fleet.frame, approach)),
            None => approach = speeds,
            Some((frame, _)) if fleet.frame <= frame + 20 => {
                after_min[0] = after_min[0].min(speeds[0]);
                after_min[1] = after_min[1].min(speeds[1]);
            }
            Some(_) => {}
        }
    }
    let (frame, before) = impact.expect("the cars never met");
    // 15 m each from rest at 4 m/s²: about 11 m/s at impact.
    assert!(
        before.iter().all(|v| *v > 9.0),
        "approach speeds {before:?}"
    );
    assert!(
        closest > 2.0 * half_length - 0.1,
        "bodies overlapped: centres {closest:.3} m apart (impact at frame {frame})"
    );
    for (i, v) in after_min.iter().enumerate() {
        assert!(
            *v < 0.2 * before[i],
            "agent {i}: speed {:.2} -> {v:.2} m/s after impact: the crash was not felt",
            before[i]
        );
    }
}

// ---- (d) static box ---------------------------------------------------------------------

#[test]
fn car_stops_at_a_wall() {
    for dt in [0.01, 0.05] {
        let scenario = scenario(&format!(
            r#"
[scenario]
name = "wall"
dt = {dt}

[map]
boxes = [{{ center = [40.0, 0.0, 1.0], half_extents = [0.25, 10.0, 1.0] }}]

[[agents]]
id = "car"
start = {{ x = 0.0, y = 0.0 }}
controller = {{ kind = "external" }}
"#
        ));
        let half_length = scenario.agents[0].vehicle.half_extents[0];
        let face = 40.0 - 0.25;
        let mut fleet = Fleet::new(&scenario);
        let mut furthest = f64::NEG_INFINITY;
        let mut top_speed = 0.0_f64;
        let frames = (10.0 / dt) as u64;
        for _ in 0..frames {
            fleet.step(&|_, frame| pedals(frame, 1.0, 0.0, 0.0));
            let s = &fleet.states[0];
            furthest = furthest.max(s.pose.position.x);
            top_speed = top_speed.max(forward_speed(s));
        }
        let end = &fleet.states[0];
        assert!(
            top_speed > 15.0,
            "dt {dt}: never got going ({top_speed:.1} m/s)"
        );
        assert!(
            furthest < face - half_length + 0.05,
            "dt {dt}: front went {:.3} m into the wall",
            furthest + half_length - face
        );
        assert!(
            end.pose.position.x > face - half_length - 0.5,
            "dt {dt}: {end:?}"
        );
        assert!(
            forward_speed(end).abs() < 0.5,
            "dt {dt}: still moving: {end:?}"
        );
        assert!(
            end.pose.position.y.abs() < 0.5 && end.pose.position.z.abs() < 1.0,
            "{end:?}"
        );
    }
}

// ---- (e) teleport -----------------------------------------------------------------------

#[test]
fn teleport_checks_the_pose() {
    let scenario = head_on_scenario();
    let mut world = AgentWorld::new(&scenario, &World::flat(), "a").expect("world");
    let at = |x: f64, y: f64| Pose {
        position: Vec3::new(x, y, 0.0),
        orientation: Quat::IDENTITY,
    };
    assert!(matches!(
        world.teleport(at(f64::NAN, 0.0)),
        Err(WorldError::BadPose(_))
    ));
    let mut bad_quat = at(0.0, 0.0);
    bad_quat.orientation.w = f64::INFINITY;
    assert!(matches!(
        world.teleport(bad_quat),
        Err(WorldError::BadPose(_))
    ));
    bad_quat.orientation.w = 2.0;
    assert!(matches!(
        world.teleport(bad_quat),
        Err(WorldError::BadPose(_))
    ));
    assert!(matches!(
        world.teleport(at(501.0, 0.0)),
        Err(WorldError::OffMap { .. })
    ));
    assert!(!world.is_on_map(0.0, -500.5));
    assert!(world.is_on_map(499.0, -499.0));

    // A good pose: on the ground at rest, facing the pose's heading (90° here).
    let half = std::f64::consts::FRAC_PI_4;
    let pose = Pose {
        position: Vec3::new(100.0, -50.0, 7.0),
        orientation: Quat::new(0.0, 0.0, half.sin(), half.cos()),
    };
    world.step(&pedals(1, 1.0, 0.0, 0.0), 0.01);
    world.teleport(pose).expect("teleport");
    let s = world.state(1, 0);
    assert_eq!((s.pose.position.x, s.pose.position.y), (100.0, -50.0));
    assert_eq!(
        s.pose.position.z,
        scenario.agents[0].vehicle.half_extents[2]
    );
    assert!((yaw_of(&s.pose.orientation) - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    assert_eq!(s.twist.linear, Vec3::ZERO);
    // It drives off in its new heading.
    for frame in 2..100 {
        world.step(&pedals(frame, 1.0, 0.0, 0.0), 0.01);
    }
    let s = world.state(100, 0);
    assert!(
        s.pose.position.y > -49.0 && (s.pose.position.x - 100.0).abs() < 0.01,
        "{s:?}"
    );
    assert!(matches!(
        AgentWorld::new(&scenario, &World::flat(), "nobody"),
        Err(WorldError::UnknownAgent(_))
    ));
}

#[test]
fn unusable_vehicles_are_rejected() {
    // Scenario::validate catches most of this for files; a Scenario built in code is checked too.
    let mut s = head_on_scenario();
    s.agents[0].vehicle.max_steer = 1.6; // past 90°: tan() flips sign
    assert!(matches!(
        AgentWorld::new(&s, &World::flat(), "a"),
        Err(WorldError::InvalidScenario(_))
    ));
    let mut s = head_on_scenario();
    s.agents[0].vehicle.mass = 0.0;
    assert!(matches!(
        AgentWorld::new(&s, &World::flat(), "a"),
        Err(WorldError::InvalidScenario(_))
    ));
    let mut s = head_on_scenario();
    s.agents[0].start = StartPose::Pose {
        x: 1e4,
        y: 0.0,
        yaw: 0.0,
    };
    assert!(matches!(
        AgentWorld::new(&s, &World::flat(), "a"),
        Err(WorldError::OffMap { .. })
    ));
}

// ---- (f) substeps -----------------------------------------------------------------------

#[test]
fn substep_count() {
    assert_eq!(substeps(0.05, 0.01, 10), 5);
    assert_eq!(substeps(0.01, 0.01, 10), 1);
    assert_eq!(substeps(0.02, 0.01, 10), 2);
    assert_eq!(substeps(0.025, 0.01, 10), 3);
    assert_eq!(substeps(0.2, 0.01, 16), 16);

    let scenario = scenario(
        r#"
[scenario]
name = "substeps"
dt = 0.05
max_substep_delta = 0.01

[[agents]]
id = "car"
start = { x = 0.0, y = 0.0 }
controller = { kind = "external" }
"#,
    );
    let mut world = AgentWorld::new(&scenario, &World::flat(), "car").expect("world");
    world.step(&pedals(1, 1.0, 0.0, 0.0), 0.05);
    assert_eq!(world.last_substeps(), 5);
}

// ---- (g) velocity mode ------------------------------------------------------------------

#[test]
fn velocity_mode_tracks_speed_and_yaw_rate() {
    let scenario = head_on_scenario();
    let mut world = AgentWorld::new(&scenario, &World::flat(), "a").expect("world");
    let command = |frame| Control {
        frame,
        mode: ControlMode::Velocity,
        linear_velocity: 5.0,
        angular_velocity: 0.3,
        ..Control::default()
    };
    for frame in 1..=500 {
        world.step(&command(frame), 0.01);
    }
    let s = world.state(500, 0);
    assert!((forward_speed(&s) - 5.0).abs() < 0.05, "{s:?}");
    assert!((s.twist.angular.z - 0.3).abs() < 0.01, "{s:?}");
}

// ---- shipped scenarios ------------------------------------------------------------------

#[test]
fn shipped_scenarios_load() {
    for name in ["two_cars.toml", "sixteen_cars.toml", "head_on.toml"] {
        let s = load(name);
        assert!(s.deterministic(), "{name}");
        for agent in &s.agents {
            AgentWorld::new(&s, &World::flat(), &agent.id)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    let sixteen = load("sixteen_cars.toml");
    let ids: Vec<String> = (0..16).map(|i| format!("car_{i:02}")).collect();
    assert_eq!(sixteen.agent_ids(), ids);
    assert_eq!(load("two_cars.toml").agent_ids(), ["car_2", "ego"]);
}

#[test]
fn sixteen_cars_drive_their_loop_without_crashing() {
    let scenario = load("sixteen_cars.toml");
    let mut fleet = Fleet::new(&scenario);
    let ids = scenario.agent_ids();
    let paths: Vec<Vec<[f64; 2]>> = ids
        .iter()
        .map(|id| match &scenario.agent(id).expect("agent").controller {
            ControllerSpec::Waypoints { path, .. } => path.clone(),
            _ => panic!("{id} has no path"),
        })
        .collect();
    let mut closest = f64::INFINITY;
    let mut worst_off_road = 0.0_f64;
    for _ in 0..3000 {
        fleet.step(&no_external);
        for (i, a) in fleet.states.iter().enumerate() {
            let p = a.pose.position;
            let off = distance_to_path(p.x, p.y, &paths[i], true);
            worst_off_road = worst_off_road.max(off);
            for b in &fleet.states[i + 1..] {
                closest = closest.min(planar_distance(a, b));
            }
        }
    }
    assert!(
        worst_off_road < 1.0,
        "a car left the road by {worst_off_road:.2} m"
    );
    // Cars are 4.5 m long; anything under ~20 m would mean a queue forming, not a spread.
    assert!(closest > 20.0, "two cars came {closest:.1} m close");
    for s in &fleet.states {
        assert!(forward_speed(s) > 11.0, "{} is crawling: {s:?}", s.agent_id);
    }
}
