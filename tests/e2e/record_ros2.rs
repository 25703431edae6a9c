//! A replay through the ROS 2 bridge (issue 18): a stock rclpy node (tests/interop/ros2_probe.py)
//! gets the same ROS messages from a bridge fed by `convoy replay` as it got from the bridge of
//! the live run that was recorded, so a stack cannot tell the two apart.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use convoy_tests::files::{fresh_dir, write_file};
use convoy_tests::ros::{collect_until_done, messages, num, probe, probe_args};
use convoy_tests::{
    convoy_on, convoy_run, domain, run_ok, take_turn, wait_until, watchdog, workspace_bin,
    ChildGuard,
};
use serde_json::Value;

/// Ego and a lead car on waypoints; ego carries an IMU and an odometry at 20 Hz and a GNSS at
/// 10 Hz (every bridged kind that needs no renderer).
const SCENARIO: &str = r#"
[scenario]
name = "replay_ros2"
seed = 9
dt = 0.05
mode = "async"
step = "fixed"

[[agents]]
id = "ego"
start = { x = 0.0, y = 0.0 }
controller = { kind = "waypoints", speed = 8.0, path = [[0.0, 0.0], [900.0, 0.0]] }
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
controller = { kind = "waypoints", speed = 9.0, path = [[20.0, 0.0], [900.0, 0.0]] }
"#;

const TOPICS: [&str; 4] = [
    "/ego/imu/imu:imu",
    "/ego/gnss/fix:fix",
    "/ego/odom/odom:odom",
    "/clock:clock",
];
/// Every message printed (more than a run has) until /clock reaches 5.5 s of the run's 6: each
/// side is seen whole from the moment ROS discovery matched the probe and the bridge. The
/// timeout only bounds a run that never gets there.
const PROBE: &str = "--count 100000 --until-clock 5500000000 --timeout 150";

/// How many messages the probe printed per topic (for failure messages).
fn per_topic(out: &[Value]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in out {
        if let Some(topic) = line["msg"].as_str() {
            *counts.entry(topic.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

/// What the probe printed of `topic`, by stamp.
fn by_stamp(out: &[Value], topic: &str) -> BTreeMap<i64, Value> {
    messages(out, topic)
        .into_iter()
        .map(|m| (num(m, "stamp_ns") as i64, m.clone()))
        .collect()
}

#[test]
fn the_bridge_fed_by_a_replay_serves_what_it_served_live() {
    watchdog("the_bridge_fed_by_a_replay", Duration::from_secs(400));
    let _turn = take_turn();
    let dir = fresh_dir("test-record-ros2", "replay");
    let scenario = write_file(&dir, "scenario.toml", SCENARIO);
    let file = dir.join("live.mcap");

    // Live: the probe listens (ROS domain = convoy's) before the run and its bridge start.
    let live_domain = domain::RECORD_ROS2_LIVE;
    let (_live_probe, live_lines) = probe("live probe", live_domain, &probe_args(&TOPICS, PROBE));
    let mut run = ChildGuard::spawn(
        "convoy run",
        convoy_run(live_domain, &scenario)
            .args(["--bridge", "--duration", "6", "--record"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let live = collect_until_done(&live_lines, Duration::from_secs(160));
    wait_until("the live run's end", Duration::from_secs(120), || {
        matches!(run.child.try_wait(), Ok(Some(_)))
    });
    let status = run.child.try_wait().ok().flatten();
    assert!(
        status.is_some_and(|s| s.success()),
        "convoy run: {status:?}"
    );

    // Replay: a bridge of its own, the probe, then the topics the bridge reads.
    let replay_domain = domain::RECORD_ROS2_REPLAY;
    let _bridge = ChildGuard::spawn(
        "bridge",
        Command::new(workspace_bin("convoy-bridge"))
            .arg(&scenario)
            .args(["--domain", &replay_domain.to_string()])
            .stdout(Stdio::null()),
    );
    let (_replay_probe, replay_lines) =
        probe("replay probe", replay_domain, &probe_args(&TOPICS, PROBE));
    run_ok(
        convoy_on(replay_domain)
            .arg("replay")
            .arg(&file)
            .args(["--settle", "30", "--topics", "convoy/clock"])
            .args(["convoy/agent/*/state", "convoy/sensor/*"]),
        Duration::from_secs(120),
    );
    let replayed = collect_until_done(&replay_lines, Duration::from_secs(160));

    // The same stamps carry the same messages (the probe joins each side when ROS discovery
    // matches it with the bridge, so the stamps both saw are compared: most of the run).
    for topic in ["/ego/imu/imu", "/ego/gnss/fix", "/ego/odom/odom", "/clock"] {
        let (a, b) = (by_stamp(&live, topic), by_stamp(&replayed, topic));
        let common: Vec<&i64> = a.keys().filter(|s| b.contains_key(s)).collect();
        assert!(
            common.len() >= 20,
            "{topic}: live {:?}, replayed {:?}; messages per topic live {:?}, replayed {:?}",
            a.keys().collect::<Vec<_>>(),
            b.keys().collect::<Vec<_>>(),
            per_topic(&live),
            per_topic(&replayed)
        );
        for stamp in common {
            assert_eq!(a[stamp], b[stamp], "{topic} at {stamp} ns");
        }
    }
}
