//! The ROS 2 bridge against a real ROS 2 graph: stock rclpy nodes (ROS 2 Kilted on Fast DDS,
//! from PyPI) subscribe to what `convoy-bridge` serves with the default (reliable) and the
//! sensor-data (best-effort) QoS and decode every type; an independent DDS (CycloneDDS's Python
//! binding) reads `/tf` and `/tf_static`; a Python stack drives the ego car over `cmd_vel`,
//! with and without holding the lockstep for it.
//!
//! The ROS nodes are `tests/interop/ros2_probe.py` and `tests/interop/tf_reader.py`; they print
//! JSON lines the tests assert on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use convoy_bridge::ros_msgs::{
    Clock, Image, Imu, NavSatFix, Odometry, PointCloud2, RosMessage, TfMessage,
};
use convoy_tests::files::{fresh_dir, read_state_log, write_file};
use convoy_tests::ros::{
    collect_until_done, messages, num, probe, probe_args, python_node, start_python,
};
use convoy_tests::{
    convoy_run, domain, lines_until, repo_root, take_turn, wait_for_line, watchdog, ChildGuard,
};
use serde_json::Value;

/// Ego (external controller) with every bridged sensor kind; lead drives away ahead, faster
/// than the commands tests ever let ego go.
const SCENARIO: &str = r#"
[scenario]
name = "bridge"
seed = 3
dt = 0.05
mode = "sync"
step = "fixed"

[[agents]]
id = "ego"
start = { x = 0.0, y = 0.0 }
controller = { kind = "external" }
[[agents.sensors]]
id = "front"
kind = "camera"
rate = 10.0
width = 160
height = 120
depth = true
[[agents.sensors]]
id = "roof"
kind = "lidar"
rate = 10.0
channels = 8
columns = 256
[[agents.sensors]]
id = "imu"
kind = "imu"
rate = 20.0
[[agents.sensors]]
id = "gnss"
kind = "gnss"
rate = 10.0
[[agents.sensors]]
id = "odom"
kind = "odometry"
rate = 20.0

[[agents]]
id = "lead"
start = { x = 20.0, y = 0.0 }
controller = { kind = "waypoints", speed = 15.0, path = [[20.0, 0.0], [5000.0, 0.0]] }
"#;

/// A directory of the test's own with the scenario and `settings` as bridge.toml.
fn scratch(name: &str, settings: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = fresh_dir("test-ros2-bridge", name);
    let scenario = write_file(&dir, "scenario.toml", SCENARIO);
    let bridge = write_file(&dir, "bridge.toml", settings);
    (dir, scenario, bridge)
}

/// `convoy run` of the scenario with a bridge; every line of its stdout and stderr.
fn run_with_bridge(
    domain: u32,
    scenario: &Path,
    bridge: &Path,
    extra: &[&str],
) -> (ChildGuard, Receiver<String>) {
    let mut run = ChildGuard::spawn(
        "convoy run",
        convoy_run(domain, scenario)
            .arg("--bridge-config")
            .arg(bridge)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let lines = run.all_lines();
    (run, lines)
}

/// The type hash ROS ships for `pkg/msg/Type` (the type description file beside the .msg in
/// the venv), to check what the bridge announces against ROS's own.
fn ros_type_hash(ros_type: &str) -> String {
    let path = repo_root()
        .join(".venv/share")
        .join(format!("{ros_type}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let json: Value = serde_json::from_str(&text).expect("type description json");
    json["type_hashes"][0]["hash_string"]
        .as_str()
        .expect("hash_string")
        .to_string()
}

const DT_NS: i64 = 50_000_000;

/// `convoy run` options of a run at real time (async at 1x) that goes on until stopped.
const ASYNC_RUN: &[&str] = &["--mode", "async", "--duration", "600"];

/// What a stock ROS node sees of one sensor run, checked in full: every type decodes, sizes,
/// encodings, field layouts, frame ids, stamps on /clock's timeline, and the graph.
fn check_sensor_output(out: &[Value], image_topic: &str) {
    let clock_stamps: BTreeSet<i64> = messages(out, "/clock")
        .iter()
        .map(|m| num(m, "stamp_ns") as i64)
        .collect();
    assert!(!clock_stamps.is_empty(), "no /clock message: {out:?}");
    let (first_clock, last_clock) = (
        *clock_stamps.first().unwrap_or(&0),
        *clock_stamps.last().unwrap_or(&0),
    );
    let mut on_clock = 0;
    for (topic, frame_id) in [
        (image_topic, "ego/front"),
        ("/ego/front/depth", "ego/front"),
        ("/ego/roof/points", "ego/roof"),
        ("/ego/imu/imu", "ego/imu"),
        ("/ego/gnss/fix", "ego/gnss"),
        ("/ego/odom/odom", "map"),
    ] {
        let got = messages(out, topic);
        assert!(
            got.len() >= 3,
            "{topic}: only {} messages: {out:?}",
            got.len()
        );
        assert!(
            got.iter().any(|m| num(m, "stamp_ns") > 0.0),
            "{topic}: every stamp is 0 (unset?): {got:?}"
        );
        for m in &got {
            assert_eq!(m["frame_id"], frame_id, "{topic}: {m}");
            let stamp = num(m, "stamp_ns") as i64;
            // Simulation time: whole frames of dt. Frame 0 is time 0, and a probe that matched
            // before the run's first frame gets that one too; an unset stamp is caught below.
            assert!(stamp >= 0 && stamp % DT_NS == 0, "{topic}: stamp {stamp}");
            // Every frame's /clock arrives (reliable, real time): a stamp within the clock's
            // span is one of its times.
            if (first_clock..=last_clock).contains(&stamp) {
                assert!(
                    clock_stamps.contains(&stamp),
                    "{topic}: stamp {stamp} is no /clock time"
                );
                on_clock += 1;
            }
        }
    }
    assert!(
        on_clock >= 6,
        "only {on_clock} sensor stamps within /clock's span"
    );

    for m in messages(out, image_topic) {
        assert_eq!(
            (m["width"].as_u64(), m["height"].as_u64()),
            (Some(160), Some(120))
        );
        assert_eq!(m["encoding"], "rgb8");
        assert_eq!(m["step"].as_u64(), Some(480));
        assert_eq!(m["bytes"].as_u64(), Some(160 * 120 * 3));
        // The top row is sky (blue dominates), the centre is the car ahead or the road: not sky.
        let top: Vec<u64> = m["top"]
            .as_array()
            .expect("top")
            .iter()
            .filter_map(Value::as_u64)
            .collect();
        assert!(top[2] > top[0], "top-left pixel {top:?} is not sky");
    }
    for m in messages(out, "/ego/front/depth") {
        assert_eq!(m["encoding"], "32FC1");
        assert_eq!(m["bytes"].as_u64(), Some(160 * 120 * 4));
    }
    for m in messages(out, "/ego/roof/points") {
        let fields: Vec<Value> = m["fields"].as_array().expect("fields").clone();
        assert_eq!(
            fields,
            [
                serde_json::json!(["x", 0, 7, 1]),
                serde_json::json!(["y", 4, 7, 1]),
                serde_json::json!(["z", 8, 7, 1]),
                serde_json::json!(["intensity", 12, 2, 1]),
                serde_json::json!(["return_type", 13, 2, 1]),
                serde_json::json!(["channel", 14, 4, 1]),
            ],
            "PointXYZIRC layout"
        );
        let width = m["width"].as_u64().expect("width");
        assert!(width > 256 && width <= 8 * 256, "{width} points");
        assert_eq!(m["point_step"].as_u64(), Some(16));
        assert_eq!(m["bytes"].as_u64(), Some(width * 16));
    }
    for m in messages(out, "/ego/imu/imu") {
        assert!((num(m, "accel_z") - 9.81).abs() < 0.5, "{m}");
    }
    for m in messages(out, "/ego/gnss/fix") {
        assert_eq!(m["status"].as_i64(), Some(0));
        assert!(num(m, "latitude").is_finite() && num(m, "longitude").is_finite());
    }
    for m in messages(out, "/ego/odom/odom") {
        assert_eq!(m["child_frame_id"], "ego/base_link");
    }
}

/// The ROS graph as rclpy sees it: the bridge is a named node whose topics carry ROS's own
/// type hashes; /clock has one type.
fn check_graph(out: &[Value], node: &str, image_topic: &str) {
    let graph = out
        .iter()
        .find_map(|v| v.get("graph"))
        .unwrap_or_else(|| panic!("no graph line: {out:?}"));
    let nodes: Vec<&str> = graph["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(nodes.contains(&node), "{node} not in the graph: {nodes:?}");
    let topics = &graph["topics"];
    for (topic, ros_type, hash) in [
        (image_topic, "sensor_msgs/msg/Image", Image::TYPE_HASH),
        (
            "/ego/roof/points",
            "sensor_msgs/msg/PointCloud2",
            PointCloud2::TYPE_HASH,
        ),
        ("/ego/imu/imu", "sensor_msgs/msg/Imu", Imu::TYPE_HASH),
        (
            "/ego/gnss/fix",
            "sensor_msgs/msg/NavSatFix",
            NavSatFix::TYPE_HASH,
        ),
        (
            "/ego/odom/odom",
            "nav_msgs/msg/Odometry",
            Odometry::TYPE_HASH,
        ),
        ("/clock", "rosgraph_msgs/msg/Clock", Clock::TYPE_HASH),
        ("/tf", "tf2_msgs/msg/TFMessage", TfMessage::TYPE_HASH),
        ("/tf_static", "tf2_msgs/msg/TFMessage", TfMessage::TYPE_HASH),
        // Created by ros2-client's node itself; its hash comes from the participant.
        (
            "/parameter_events",
            "rcl_interfaces/msg/ParameterEvent",
            "RIHS01_043e627780fcad87a22d225bc2a037361dba713fca6a6b9f4b869a5aa0393204",
        ),
    ] {
        let t = &topics[topic];
        assert_eq!(t["types"], serde_json::json!([ros_type]), "{topic}: {t}");
        let publishers = t["publishers"].as_array().expect("publishers");
        let ours: Vec<&Value> = publishers
            .iter()
            .filter(|p| format!("/{}", p["node"].as_str().unwrap_or_default()) == node)
            .collect();
        assert_eq!(ours.len(), 1, "{topic}: publishers {publishers:?}");
        assert_eq!(ours[0]["type"], ros_type);
        assert_eq!(ours[0]["hash"], hash, "{topic}: the announced type hash");
        if ros_type != "tf2_msgs/msg/TFMessage" {
            // convoy's constant is ROS's own (tf2_msgs ships no wheel to compare with).
            assert_eq!(hash, ros_type_hash(ros_type), "{ros_type}");
        }
    }
}

#[test]
fn stock_rclpy_nodes_decode_every_sensor_with_both_qos_and_see_a_native_node() {
    watchdog("bridge sensors", Duration::from_secs(300));
    let _turn = take_turn();
    let d = domain::BRIDGE_SENSORS;
    let ros_domain = domain::BRIDGE_SENSORS_ROS;
    let (_dir, scenario, bridge) = scratch(
        "sensors",
        &format!(
            "[ros2]\nnode_name = \"sim_bridge\"\ndomain = {ros_domain}\n\n[ros2.topics]\n\
             \"/ego/front/image\" = \"/sensing/camera/image_raw\"\n"
        ),
    );
    // Real time (async at 1x), so every /clock reaches the Python subscribers.
    let _run = run_with_bridge(d, &scenario, &bridge, ASYNC_RUN);
    let topics = [
        "/sensing/camera/image_raw:image",
        "/ego/front/depth:image",
        "/ego/roof/points:cloud",
        "/ego/imu/imu:imu",
        "/ego/gnss/fix:fix",
        "/ego/odom/odom:odom",
        "/clock:clock",
    ];
    let reliable = "--qos reliable --count 4 --graph --timeout 90";
    let (_reliable, reliable_lines) =
        probe("reliable probe", ros_domain, &probe_args(&topics, reliable));
    let best_effort = "--qos sensor --count 4 --timeout 90 --name probe_be";
    let (_best_effort, best_effort_lines) = probe(
        "best-effort probe",
        ros_domain,
        &probe_args(&topics, best_effort),
    );
    let reliable = collect_until_done(&reliable_lines, Duration::from_secs(120));
    let best_effort = collect_until_done(&best_effort_lines, Duration::from_secs(120));
    check_sensor_output(&reliable, "/sensing/camera/image_raw");
    check_sensor_output(&best_effort, "/sensing/camera/image_raw");
    check_graph(&reliable, "/sim_bridge", "/sensing/camera/image_raw");

    // tf and tf_static, read by CycloneDDS with the ROS type names.
    let (_tf, tf_lines) = start_python(
        "tf reader",
        &mut python_node(
            "tf_reader.py",
            ros_domain,
            &[ros_domain.to_string().as_str(), "--count", "6"],
        ),
    );
    let tf = collect_until_done(&tf_lines, Duration::from_secs(90));
    let statics: BTreeMap<String, &Value> = tf
        .iter()
        .filter(|v| v["tf"] == "static")
        .map(|v| (v["child"].as_str().unwrap_or_default().to_string(), v))
        .collect();
    for sensor in ["front", "roof", "imu", "gnss", "odom"] {
        let t = statics
            .get(&format!("ego/{sensor}"))
            .unwrap_or_else(|| panic!("no static transform of ego/{sensor}: {tf:?}"));
        assert_eq!(t["parent"], "ego/base_link");
    }
    // The camera at the windscreen (0.6 x 2.25 m ahead), the lidar 0.3 m above the roof.
    for (sensor, axis, metres) in [("ego/front", 0, 1.35), ("ego/roof", 2, 1.05)] {
        let at = statics[sensor]["translation"]
            .as_array()
            .expect("translation");
        assert!(
            (at[axis].as_f64().unwrap_or(0.0) - metres).abs() < 1e-9,
            "{sensor}: {at:?}"
        );
    }
    let dynamic: Vec<&Value> = tf.iter().filter(|v| v["tf"] == "dynamic").collect();
    assert!(dynamic.len() >= 6, "{tf:?}");
    for t in &dynamic {
        assert_eq!(t["parent"], "map");
        assert!(
            t["child"] == "ego/base_link" || t["child"] == "lead/base_link",
            "{t}"
        );
        assert!((num(t, "stamp_ns") as i64) % DT_NS == 0);
    }
}

#[test]
fn localhost_discovery_range_reaches_the_bridge() {
    watchdog("bridge localhost", Duration::from_secs(240));
    let _turn = take_turn();
    let d = domain::BRIDGE_LOCALHOST;
    let ros_domain = domain::BRIDGE_LOCALHOST_ROS;
    let (_dir, scenario, bridge) =
        scratch("localhost", &format!("[ros2]\ndomain = {ros_domain}\n"));
    let _run = run_with_bridge(d, &scenario, &bridge, ASYNC_RUN);
    let topics = ["/ego/front/image:image", "/ego/imu/imu:imu"];
    let args = probe_args(&topics, "--count 3 --timeout 90");
    let mut probe = python_node("ros2_probe.py", ros_domain, &args);
    // Fast DDS then discovers by unicast to 127.0.0.1 only.
    probe.env("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST");
    let (_probe, lines) = start_python("localhost probe", &mut probe);
    let out = collect_until_done(&lines, Duration::from_secs(120));
    assert!(messages(&out, "/ego/front/image").len() >= 3, "{out:?}");
    assert!(messages(&out, "/ego/imu/imu").len() >= 3, "{out:?}");
}

/// The last odometry speed a probe printed.
fn last_speed(out: &[Value]) -> f64 {
    let odom = messages(out, "/ego/odom/odom");
    num(
        odom.last()
            .unwrap_or_else(|| panic!("no odometry: {out:?}")),
        "speed",
    )
}

#[test]
fn cmd_vel_drives_the_ego_car_and_bad_commands_are_clamped_or_rejected() {
    watchdog("bridge commands", Duration::from_secs(300));
    let _turn = take_turn();
    let d = domain::BRIDGE_COMMANDS;
    let (_dir, scenario, bridge) = scratch("commands", "[ros2]\nmax_speed = 8.0\n");
    let (mut run, run_lines) = run_with_bridge(d, &scenario, &bridge, ASYNC_RUN);
    // A stack commanding `speed` until `clocks` /clock messages have passed: ego's last speed
    // then (odometry, through the bridge, says it).
    let drive = |name: &str, speed: &str, clocks: &str| {
        let stack = format!("--stack ego --speed {speed} --stack-frames {clocks}");
        let options = format!("--count 100000 {stack} --timeout 120");
        let (_stack, lines) = probe(name, d, &probe_args(&["/ego/odom/odom:odom"], &options));
        last_speed(&collect_until_done(&lines, Duration::from_secs(150)))
    };

    // A stack asking for 4 m/s: the car gets there.
    let speed = drive("stack 4 m/s", "4.0", "160");
    assert!(
        (speed - 4.0).abs() < 0.3,
        "ego at {speed} m/s after 8 s of 4 m/s commands"
    );

    // Absurd: clamped to max_speed, with a log line.
    let speed = drive("stack 1e9 m/s", "1e9", "200");
    assert!(
        (speed - 8.0).abs() < 0.5,
        "ego at {speed} m/s, clamped commands ask 8"
    );
    wait_for_line(
        &run_lines,
        Duration::from_secs(30),
        "a clamp log line",
        |l| l.contains("/ego/cmd_vel") && l.contains("clamped to 8"),
    );

    // NaN: rejected with a log line; the car keeps its last command and the run goes on.
    let speed = drive("stack NaN", "nan", "40");
    assert!(
        (speed - 8.0).abs() < 0.5,
        "ego at {speed} m/s after NaN commands"
    );
    wait_for_line(
        &run_lines,
        Duration::from_secs(30),
        "a rejection log line",
        |l| l.contains("/ego/cmd_vel") && l.contains("non-finite command"),
    );
    assert!(
        run.child.try_wait().ok().flatten().is_none(),
        "the run stopped after bad commands"
    );
}

/// A held lockstep run of `frames` with a Python stack answering every /clock (speed a function
/// of the frame); returns ego's states from the run's state log.
fn held_run(name: &str, domain: u32, frames: u64) -> (Vec<(u64, String)>, Vec<String>) {
    let (dir, scenario, bridge) = scratch(
        name,
        "[ros2]\nhold_for_stack = true\nstack_timeout = 20.0\n",
    );
    let stack = format!("--stack ego --speed 2.0 --pattern --stack-frames {frames} --timeout 180");
    let (_stack, stack_lines) = probe("stack", domain, &probe_args(&[], &stack));
    let log = dir.join("states.jsonl");
    let (mut run, lines) = run_with_bridge(
        domain,
        &scenario,
        &bridge,
        &[
            "--frames",
            &frames.to_string(),
            "--state-log",
            log.to_str().expect("utf-8 path"),
        ],
    );
    let end = "the held run's end";
    let mut seen = lines_until(&lines, Duration::from_secs(200), end, |l| {
        l.contains("] done: ")
    });
    run.stop(Duration::from_secs(15));
    seen.extend(lines.try_iter());
    let _ = collect_until_done(&stack_lines, Duration::from_secs(60));
    let ego: Vec<(u64, String)> = read_state_log(&log)
        .into_iter()
        .filter(|((_, agent), _)| agent == "ego")
        .map(|((frame, _), v)| (frame, v["position"].to_string()))
        .collect();
    (ego, seen)
}

#[test]
fn holding_the_lockstep_for_the_stack_makes_closed_loop_runs_repeat() {
    watchdog("bridge hold", Duration::from_secs(500));
    let _turn = take_turn();
    let frames = 60;
    let (first, log) = held_run("hold_a", domain::BRIDGE_HOLD, frames);
    assert!(
        !log.iter().any(|l| l.contains("no cmd_vel for")),
        "a held frame timed out: {log:?}"
    );
    // The stack's speed pattern moved the car: it is not where it started.
    let last = &first.last().expect("ego states").1;
    assert_ne!(last, &first[0].1, "ego never moved");
    let (second, _) = held_run("hold_b", domain::BRIDGE_HOLD, frames);
    assert_eq!(first.len() as u64, frames + 1, "{first:?}");
    assert_eq!(first, second, "closed-loop runs differ");
}

#[test]
fn a_held_frame_without_a_stack_times_out_and_says_so() {
    watchdog("bridge hold timeout", Duration::from_secs(240));
    let _turn = take_turn();
    let d = domain::BRIDGE_HOLD_TIMEOUT;
    let (_dir, scenario, bridge) = scratch(
        "hold_timeout",
        "[ros2]\nhold_for_stack = true\nstack_timeout = 0.3\n",
    );
    let (_run, lines) = run_with_bridge(d, &scenario, &bridge, &["--frames", "4"]);
    wait_for_line(&lines, Duration::from_secs(60), "a stack timeout", |l| {
        l.contains("frame 1: no cmd_vel for ego within stack_timeout 0.3 s")
    });
    wait_for_line(&lines, Duration::from_secs(60), "the run's end", |l| {
        l.contains("] done: 4 frames")
    });
}

#[test]
fn a_subscriber_killed_mid_run_does_not_slow_the_bridge_for_the_next() {
    watchdog("bridge dead reader", Duration::from_secs(240));
    let _turn = take_turn();
    let d = domain::BRIDGE_DEAD_READER;
    let (_dir, scenario, bridge) = scratch("dead_reader", "[ros2]\n");
    let (_run, run_lines) = run_with_bridge(d, &scenario, &bridge, ASYNC_RUN);
    let topics = ["/ego/odom/odom:odom", "/ego/front/image:image"];
    // A subscriber that receives, then dies without a word (SIGKILL: no unregistering; its
    // readers stay matched until its lease lapses).
    let doomed_args = probe_args(&topics, "--count 100000 --timeout 60");
    let (mut doomed, lines) = probe("doomed probe", d, &doomed_args);
    for _ in 0..20 {
        wait_for_line(&lines, Duration::from_secs(60), "a message", |l| {
            l.contains("\"msg\"")
        });
    }
    doomed.kill_now();

    // The next subscriber gets the full rate: odometry at 20 Hz, the camera at 10 Hz of
    // real time, for 10 s (minus discovery).
    let next_args = probe_args(&topics, "--count 100000 --timeout 10 --name next_probe");
    let (_next, lines) = probe("next probe", d, &next_args);
    let out = collect_until_done(&lines, Duration::from_secs(60));
    let done = out.last().expect("done line");
    let odom = done["counts"]["/ego/odom/odom"].as_u64().unwrap_or(0);
    let images = done["counts"]["/ego/front/image"].as_u64().unwrap_or(0);
    assert!(
        odom >= 140 && images >= 70,
        "after a dead subscriber: {done}"
    );
    let blocked: Vec<String> = run_lines
        .try_iter()
        .filter(|l| l.contains("cannot publish"))
        .collect();
    assert!(
        blocked.is_empty(),
        "the bridge's writes blocked: {blocked:?}"
    );
}
