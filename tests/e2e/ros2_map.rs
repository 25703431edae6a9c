//! The map on ROS 2 (issue 38, items 3 and 4), against stock rclpy nodes (ROS 2 Kilted on Fast
//! DDS, from PyPI; `tests/interop/ros2_map.py`):
//!
//! - a ROS node that starts after the bridge published the town's map still gets `/map/lanes`
//!   (MarkerArray) and `/map/points` (PointCloud2), latched, in frame `map`: one marker per line
//!   string of the `lanelet2_map.osm` that `convoy map export` writes, with its kind and every
//!   point, and the very bytes of the PCD exported at the same spacing;
//! - the poses the bridge publishes for a stack (`/tf` map -> ego/base_link, odometry) are in
//!   the exported map's frame: one lidar scan put into `map` with them lies on the exported
//!   point-cloud map, and a brute-force search over x, y and yaw offsets finds the best fit
//!   within 10 cm and half a degree of that pose.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use convoy_bridge::config::MAP_POINTS_SPACING;
use convoy_tests::files::{fresh_dir, town_without_sensors, write_file};
use convoy_tests::ros::{collect_until_done, num, python_node, start_python};
use convoy_tests::ChildGuard;
use convoy_tests::{convoy, convoy_run, domain, run_ok, take_turn, wait_for_line, watchdog};
use serde_json::Value;

/// The ego's sensors in the localisation test: the town's roof lidar, and ground-truth odometry
/// every frame (so one is stamped like each scan).
const EGO_SENSORS: &str = r#"[[agents.sensors]]
id = "roof_lidar"
kind = "lidar"
rate = 10.0
channels = 32
columns = 1024

[[agents.sensors]]
id = "odom"
kind = "odometry"
rate = 20.0

"#;

/// `convoy map export SCENARIO --out DIR/export --tile 0 [--spacing S]`: the exported map's
/// folder (one PCD).
fn export(dir: &Path, scenario: &Path, spacing: Option<f64>) -> PathBuf {
    let out = dir.join("export");
    let mut cmd = convoy();
    cmd.args(["map", "export"])
        .arg(scenario)
        .arg("--out")
        .arg(&out)
        .args(["--tile", "0"]);
    if let Some(s) = spacing {
        cmd.args(["--spacing", &s.to_string()]);
    }
    run_ok(&mut cmd, Duration::from_secs(120));
    out
}

/// `convoy run SCENARIO` at real time with a bridge on ROS domain `ros_domain`; the run and
/// every line of its output.
fn run_with_bridge(
    dir: &Path,
    domain: u32,
    ros_domain: u32,
    scenario: &Path,
) -> (ChildGuard, Receiver<String>) {
    let bridge = write_file(
        dir,
        "bridge.toml",
        &format!("[ros2]\ndomain = {ros_domain}\n"),
    );
    let mut run = ChildGuard::spawn(
        "convoy run",
        convoy_run(domain, scenario)
            .arg("--bridge-config")
            .arg(&bridge)
            .args(["--mode", "async", "--duration", "600"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let lines = run.all_lines();
    (run, lines)
}

/// The one line of `out` with key `key`.
fn line<'a>(out: &'a [Value], key: &str) -> &'a Value {
    out.iter()
        .find_map(|v| v.get(key))
        .unwrap_or_else(|| panic!("no {key} line: {out:?}"))
}

/// The number after `word ` in the bridge's "map published: ..." line.
fn number_before(text: &str, word: &str) -> u64 {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| w[1].trim_matches(|c| "(),".contains(c)) == word)
        .and_then(|w| w[0].trim_start_matches('(').parse().ok())
        .unwrap_or_else(|| panic!("no number before '{word}' in: {text}"))
}

#[test]
fn a_late_ros_node_gets_the_town_s_lanes_and_point_cloud_as_exported() {
    watchdog("ros2 map late", Duration::from_secs(400));
    let _turn = take_turn();
    let (d, ros_domain) = (domain::ROS2_MAP, domain::ROS2_MAP_ROS);
    let dir = fresh_dir("test-ros2-map", "late");
    let scenario = town_without_sensors(&dir);
    // The bridge's cloud: the exporter's at the bridge's spacing.
    let exported = export(&dir, &scenario, Some(MAP_POINTS_SPACING));
    let (mut run, run_lines) = run_with_bridge(&dir, d, ros_domain, &scenario);
    let published = wait_for_line(
        &run_lines,
        Duration::from_secs(120),
        "the bridge's map line",
        |l| l.contains("map published:"),
    );
    eprintln!("{published}");
    // Started only now: what it gets, it gets because the topics are latched.
    let osm = exported.join("lanelet2_map.osm");
    let pcd = exported.join("pointcloud_map.pcd");
    let (_late, lines) = start_python(
        "late map node",
        &mut python_node(
            "ros2_map.py",
            ros_domain,
            &[
                "map".as_ref(),
                "--osm".as_ref(),
                osm.as_os_str(),
                "--pcd".as_ref(),
                pcd.as_os_str(),
                "--timeout".as_ref(),
                "90".as_ref(),
            ],
        ),
    );
    let out = collect_until_done(&lines, Duration::from_secs(150));
    run.stop(Duration::from_secs(15));

    let lanes = line(&out, "lanes");
    eprintln!("/map/lanes: {lanes}");
    let markers = lanes["markers"].as_u64().expect("markers");
    let lanelets = number_before(&published, "lanelets");
    assert_eq!(markers, number_before(&published, "line"), "{published}");
    // Each lanelet has two bounds, shared with the lanelet beside it where there is one.
    assert!(
        lanelets > 100 && markers > lanelets && markers <= 2 * lanelets,
        "{markers} markers for {lanelets} lanelets"
    );
    assert_eq!(Some(markers), lanes["osm_ways"].as_u64(), "{lanes}");
    assert_eq!(lanes["mismatched_namespaces"], serde_json::json!([]));
    // The OSM file writes local_x/y/ele to 0.1 mm.
    assert!(num(lanes, "max_point_deviation") < 1e-3, "{lanes}");
    assert_eq!(lanes["frames"], serde_json::json!(["map"]));
    assert_eq!(lanes["types"], serde_json::json!([lanes["line_strip"]]));
    assert_eq!(lanes["actions"], serde_json::json!([0]));
    assert_eq!(lanes["unique_ids"], true);
    assert!(num(lanes, "min_width") > 0.0 && num(lanes, "min_alpha") > 0.0);
    let namespaces = lanes["namespaces"].as_object().expect("namespaces");
    assert!(
        namespaces.contains_key("road_border") && namespaces.len() >= 2,
        "{namespaces:?}"
    );

    let points = line(&out, "points");
    eprintln!(
        "/map/points: {} points, {} bytes, after {} s",
        points["width"], points["bytes"], points["after_s"]
    );
    assert_eq!(points["frame_id"], "map");
    assert_eq!(
        points["fields"],
        serde_json::json!([
            ["x", 0, 7, 1],
            ["y", 4, 7, 1],
            ["z", 8, 7, 1],
            ["intensity", 12, 7, 1]
        ])
    );
    assert_eq!(
        (points["height"].as_u64(), points["point_step"].as_u64()),
        (Some(1), Some(16))
    );
    let width = points["width"].as_u64().expect("width");
    assert_eq!(Some(width), points["pcd_points"].as_u64());
    assert_eq!(width, number_before(&published, "points"), "{published}");
    assert!(width > 100_000, "{width} points for Town01");
    assert_eq!(points["same_bytes_as_pcd"], true, "{points}");
}

#[test]
fn a_lidar_scan_placed_by_the_bridge_s_poses_lies_on_the_exported_map() {
    watchdog("ros2 map localise", Duration::from_secs(500));
    let _turn = take_turn();
    let (d, ros_domain) = (domain::ROS2_LOCALISE, domain::ROS2_LOCALISE_ROS);
    let dir = fresh_dir("test-ros2-map", "localise");
    // The town with the ego's roof lidar and odometry (the ego is the first agent).
    let town = std::fs::read_to_string(town_without_sensors(&dir)).expect("town.toml");
    let second = town
        .match_indices("[[agents]]")
        .nth(1)
        .map(|(i, _)| i)
        .expect("a second agent");
    let text = format!("{}{EGO_SENSORS}{}", &town[..second], &town[second..]);
    let scenario = write_file(&dir, "town.toml", &text);
    // The map a stack would localise on: the export's defaults (0.2 m), one file.
    let pcd = export(&dir, &scenario, None).join("pointcloud_map.pcd");
    // The stack's node first, so it gets the first scans, taken near the start, where the
    // houses beside the road give a scan something to fit in x and y (a straight road between
    // lawns further on does not).
    let (_node, lines) = start_python(
        "localise node",
        &mut python_node(
            "ros2_map.py",
            ros_domain,
            &[
                "localise".as_ref(),
                "--pcd".as_ref(),
                pcd.as_os_str(),
                "--timeout".as_ref(),
                "150".as_ref(),
            ],
        ),
    );
    let (mut run, _run_lines) = run_with_bridge(&dir, d, ros_domain, &scenario);
    let out = collect_until_done(&lines, Duration::from_secs(300));
    run.stop(Duration::from_secs(15));
    let r = line(&out, "localise");
    eprintln!("localisation against the exported map: {r:#}");

    // Frames: the scan in the lidar's, mounted on base_link; poses of base_link in map.
    assert_eq!(r["scan_frame"], "ego/roof_lidar");
    assert_eq!(r["mount_parent"], "ego/base_link");
    assert_eq!(r["tf_parents"], serde_json::json!(["map"]));
    assert_eq!(
        (r["odom_frame"].as_str(), r["odom_child"].as_str()),
        (Some("map"), Some("ego/base_link"))
    );
    // Odometry and /tf give the same pose at the scan's stamp.
    assert!(num(r, "odom_vs_tf") < 1e-9, "{r}");
    assert!(num(r, "scan_points") > 5000.0, "{r}");

    // The scan on the map: the map is a 0.2 m lattice on every surface, so a point of a
    // surface is up to 0.14 m from its nearest map point (0.08 m on average); the other cars
    // are not in the map.
    assert!(num(r, "median") < 0.1, "median distance {}", r["median"]);
    assert!(num(r, "within_20cm") > 0.85, "{r}");
    // The pose that fits the map best is the bridge's, within 10 cm and half a degree...
    let best = &r["best"];
    let (dx, dy) = (num(best, "dx"), num(best, "dy"));
    assert!(
        dx.hypot(dy) <= 0.1 && num(best, "dyaw_deg").abs() <= 0.5,
        "best fit {best} away from the bridge's pose"
    );
    // ...and half a metre or two degrees off fits clearly worse: the search could tell.
    let truth = num(r, "truth_cost");
    for (offset, cost) in r["off_costs"].as_object().expect("off_costs") {
        let cost = cost.as_f64().expect("cost");
        assert!(
            cost > truth * 1.15,
            "{offset}: {cost} against {truth} at the pose"
        );
    }
}
