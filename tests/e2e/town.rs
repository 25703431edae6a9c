//! Cars that drive a real town: launch/scenarios/town.toml's sixteen `lane_follow` cars on
//! CARLA's Town01, as real processes in lockstep. Over 10,000 frames no car leaves its lane by
//! more than 0.5 m, no two cars touch, every car keeps moving (mean speed above half its
//! target), and runs are bit-identical, peer and relay alike. Also: a node whose copy of the
//! map differs is refused by the coordinator, naming the file, the node and its host; bad map
//! files and starts fail before anything runs.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use convoy_core::scenario::Scenario;
use convoy_tests::files::{
    assert_same_states, fresh_dir, read_state_log, town_without_sensors, StateLog,
};
use convoy_tests::{
    convoy_run, domain, repo_root, run_scenario, run_with_timeout, wait_for_line, workspace_bin,
    ChildGuard,
};
use convoy_world::World;

/// 10,000 frames of 16 cars, three times, on two cores.
const RUN_LIMIT: Duration = Duration::from_secs(900);
const FRAMES: &str = "10000";
/// The cars' target speed in town.toml.
const TARGET_SPEED: f64 = 8.0;

/// The numbers of a state log field (`position`, `orientation`: arrays of floats).
fn numbers(state: &serde_json::Value, field: &str) -> Vec<f64> {
    state[field]
        .as_array()
        .unwrap_or_else(|| panic!("no {field} in {state}"))
        .iter()
        .map(|v| v.as_f64().unwrap_or(f64::NAN))
        .collect()
}

fn xyz(state: &serde_json::Value) -> [f64; 3] {
    let p = numbers(state, "position");
    [p[0], p[1], p[2]]
}

fn yaw(state: &serde_json::Value) -> f64 {
    let q = numbers(state, "orientation");
    let (x, y, z, w) = (q[0], q[1], q[2], q[3]);
    (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z))
}

/// Lane keeping, contacts and progress of a run, checked against the numbers.
fn check_driving(world: &World, states: &StateLog, dt: f64) {
    let roads = world.roads.as_ref().expect("town has roads");
    // frame -> (agent, position, yaw) of every car.
    type Cars<'a> = Vec<(&'a str, [f64; 3], f64)>;
    let mut by_frame: BTreeMap<u64, Cars> = BTreeMap::new();
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

/// Two "hosts" with different copies of a map: the coordinator refuses the agent whose copy
/// differs, naming the file, the node and its host, and the run stops instead of going on.
#[test]
fn a_node_with_another_copy_of_the_map_is_refused() {
    let dir = fresh_dir("town", "digest");
    let hill = repo_root().join("nodes/world/tests/fixtures/hill.xodr");
    let text = std::fs::read_to_string(&hill).expect("hill.xodr");
    let scenario = "[scenario]\nname = \"digest\"\ndt = 0.05\nbarrier_timeout = 2.0\n\n[map]\n\
                    opendrive = \"hill.xodr\"\n\n[[agents]]\nid = \"car\"\n\
                    start = { road = \"1\", lane = -1, s = 10.0 }\n\
                    controller = { kind = \"lane_follow\", speed = 5.0 }\n";
    let mut paths = Vec::new();
    for (host, map) in [
        ("host_a", text.clone()),
        ("host_b", text.replace("a=\"3.5\"", "a=\"3.4\"")),
    ] {
        let d = dir.join(host);
        std::fs::create_dir_all(&d).expect("host dir");
        std::fs::write(d.join("hill.xodr"), map).expect("map");
        std::fs::write(d.join("digest.toml"), scenario).expect("scenario");
        paths.push(d.join("digest.toml"));
    }
    let d = domain::TOWN_DIGEST;
    let mut coordinator = ChildGuard::spawn(
        "coordinator",
        Command::new(workspace_bin("convoy-coordinator"))
            .arg(&paths[0])
            .args(["--domain", &d.to_string(), "--frames", "100000"])
            .env("RUST_LOG", "warn,rustdds=error")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let lines = coordinator.all_lines();
    let _agent = ChildGuard::spawn(
        "agent car",
        Command::new(workspace_bin("convoy-agent"))
            .arg(&paths[1])
            .args(["--domain", &d.to_string(), "--id", "car"])
            .env("RUST_LOG", "warn,rustdds=error")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_for_line(&lines, Duration::from_secs(60), "the refusal", |l| {
        l.contains("refusing agent/car")
            && l.contains("map file 'hill.xodr' differs")
            && l.contains("on host ")
    });
    let status = coordinator.wait_for_exit(Duration::from_secs(20));
    assert!(
        status.is_some_and(|s| !s.success()),
        "the coordinator went on: {status:?}"
    );
}

/// Lane centres of every driving lane of the shipped maps, as convoy bakes them (`convoy map
/// info --lane-centres`), agree with pyxodr's within 2 cm (tests/interop/xodr_centres.py):
/// Town01 (lines and arcs), esmini's fabriksgatan (paramPoly3, lane offsets) and parking_demo
/// (spirals).
#[test]
fn lane_centres_agree_with_an_independent_opendrive_reader() {
    let dir = fresh_dir("town", "centres");
    let maps = repo_root().join("launch/maps");
    for map in [
        "town01/Town01.xodr",
        "esmini/fabriksgatan.xodr",
        "esmini/parking_demo.xodr",
    ] {
        let file = maps.join(map);
        let out = dir.join(format!("{}.json", map.replace('/', "_")));
        let (ok, _, err) = run_with_timeout(
            convoy_tests::convoy()
                .args(["map", "info"])
                .arg(&file)
                .arg("--lane-centres")
                .arg(&out),
            Duration::from_secs(60),
        );
        assert!(ok, "convoy map info {map} failed: {err}");
        let (ok, stdout, stderr) = run_with_timeout(
            Command::new(convoy_tests::ros_python())
                .arg(repo_root().join("tests/interop/xodr_centres.py"))
                .arg(&file)
                .arg(&out)
                .args(["--tolerance", "0.02", "--types", "driving"]),
            Duration::from_secs(300),
        );
        assert!(ok, "{map}: lane centres disagree:\n{stdout}\n{stderr}");
        println!("{map}: {}", stdout.lines().last().unwrap_or(""));
    }
}
