//! Sensor nodes as separate processes: samples on simulation time, made from their own
//! frame's states (checked against the coordinator's state log), drop counters in NodeStatus,
//! the live assignment table, and a restarted sensor node resuming from the TRANSIENT_LOCAL
//! assignments.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use convoy_core::dds::{Node, Subscriber};
use convoy_core::messages::{
    GnssFix, Image, NodeStatus, Odometry, PointCloud, RadarScan, SensorHeader,
};
use convoy_core::qos::QosSet;
use convoy_core::topics;
use convoy_tests::files::{fresh_dir, read_state_log, write_file};
use convoy_tests::{
    convoy, convoy_on, convoy_run, domain, find_node_process, run_ok, sigkill, take_turn,
    wait_for_line, wait_nodes_gone, wait_until, watchdog, workspace_bin, ChildGuard,
};

/// Two cars on a straight road, the lead 20 m ahead; ego carries a GNSS at 10 Hz (every second
/// frame at dt = 0.05), an odometry at 7.5 Hz (a rate that does not divide the frame rate) and
/// a noiseless radar at 20 Hz (every frame).
fn scenario(lease: f64) -> String {
    format!(
        r#"
[scenario]
name = "sensors"
seed = 3
dt = 0.05
mode = "sync"
step = "fixed"
lease = {lease}

[map]
ground_half_extents = [500.0, 100.0]

[[agents]]
id = "ego"
start = {{ x = 0.0, y = 0.0 }}
controller = {{ kind = "waypoints", speed = 7.0, path = [[0.0, 0.0], [900.0, 0.0]] }}

[[agents.sensors]]
id = "gnss"
kind = "gnss"
rate = 10.0

[[agents.sensors]]
id = "odom"
kind = "odometry"
rate = 7.5

[[agents.sensors]]
id = "radar"
kind = "radar"
rate = 20.0
fov = 60.0
range = 150.0
noise = 0.0

[[agents]]
id = "lead"
start = {{ x = 20.0, y = 0.0 }}
controller = {{ kind = "waypoints", speed = 6.8, path = [[20.0, 0.0], [900.0, 0.0]] }}
"#
    )
}

fn scratch(name: &str, lease: f64) -> (PathBuf, PathBuf) {
    scratch_scenario(name, &scenario(lease))
}

/// A fresh directory of the test's own holding `text` as its scenario file.
fn scratch_scenario(name: &str, text: &str) -> (PathBuf, PathBuf) {
    let dir = fresh_dir("test-sensors", name);
    let path = write_file(&dir, &format!("{name}.toml"), text);
    (dir, path)
}

/// `convoy run` of the scenario at `path` on domain `d` with `extra` options; its stdout's lines.
fn start_run(d: u32, path: &Path, extra: &[&str]) -> (ChildGuard, Receiver<String>) {
    ChildGuard::spawn_with_stdout("convoy run", convoy_run(d, path).args(extra))
}

/// Follows a `convoy run` of a fixed number of frames, no line of whose output may say "error".
/// `poll` takes what samples have come (waiting a little) and says whether all the last frame's
/// are in, and whether all else the test waits for is. Once the run has reported done, the last
/// frame's samples are waited for 20 s at most (the sensor node may trail the run under load);
/// the rest, and the whole, are bounded.
fn follow_run(lines: &Receiver<String>, mut poll: impl FnMut() -> (bool, bool)) {
    let until = Instant::now() + Duration::from_secs(120);
    let mut drain_until: Option<Instant> = None;
    loop {
        assert!(Instant::now() < until, "the run did not finish in time");
        while let Ok(l) = lines.try_recv() {
            assert!(!l.contains("error"), "{l}");
            if l.contains("] done: ") && drain_until.is_none() {
                drain_until = Some(Instant::now() + Duration::from_secs(20));
            }
        }
        let (last_frame_in, rest_in) = poll();
        if drain_until.is_some_and(|t| last_frame_in || Instant::now() > t) && rest_in {
            return;
        }
    }
}

fn node(domain: u32) -> Node {
    Node::new(domain, "test/sensors", Arc::new(QosSet::builtin())).expect("test node")
}

/// The test's reader of `ego`'s `sensor`, deep enough to hold a whole run: the profile's
/// KEEP_LAST 8 lets a lockstep run (which does not wait for this reader) overwrite samples while
/// the test's thread is descheduled on a loaded machine, and these tests count every frame.
fn sub<M: convoy_core::messages::Message>(node: &Node, sensor: &str) -> Subscriber<M> {
    node.deep_subscriber(&topics::sensor("ego", sensor), 256)
        .expect("sensor subscriber")
}

/// Frames (0-based) in which a sensor of `rate` Hz fires at dt = 0.05 s: sample k is due at
/// k / rate seconds and lands on the first frame at or after it. Worked out in integers here,
/// independently of the runtime's schedule.
fn due_frames(rate_num: u64, rate_den: u64, frames: u64) -> Vec<u64> {
    // frame f covers sim time f * 0.05 = f / 20 s; sample k at k * den / num s.
    // first frame >= k * den / num * 20 = ceil(20 k den / num).
    let mut out = Vec::new();
    let mut k = 0;
    loop {
        let f = (20 * k * rate_den).div_ceil(rate_num);
        if f >= frames {
            return out;
        }
        if out.last() != Some(&f) {
            out.push(f);
        }
        k += 1;
    }
}

#[test]
fn due_frames_helper_matches_the_hand_count() {
    assert_eq!(due_frames(10, 1, 8), vec![0, 2, 4, 6]);
    assert_eq!(due_frames(15, 2, 12), vec![0, 3, 6, 8, 11]);
    assert_eq!(due_frames(20, 1, 4), vec![0, 1, 2, 3]);
}

/// Checks that the samples of `headers` (as received) are stamped with their frame's simulation
/// time, and that their frames are exactly `expected` from the first frame received on (the
/// test's reader may match after the run started: it is not part of the lockstep, and the run
/// does not wait for it), for at least half of the run.
fn assert_frames<'a>(
    what: &str,
    headers: impl IntoIterator<Item = &'a SensorHeader>,
    expected: &[u64],
) {
    let got: Vec<u64> = headers
        .into_iter()
        .map(|h| {
            assert_eq!(
                h.stamp_ns,
                h.frame as i64 * 50_000_000,
                "{what}: frame {} stamp",
                h.frame
            );
            h.frame
        })
        .collect();
    let first = *got
        .first()
        .unwrap_or_else(|| panic!("no {what} sample at all"));
    let tail: Vec<u64> = expected.iter().copied().filter(|f| *f >= first).collect();
    assert_eq!(got, tail, "{what}: frames received vs due");
    assert!(
        got.len() * 2 >= expected.len(),
        "{what}: only {} of {} samples (first at frame {first})",
        got.len(),
        expected.len()
    );
}

#[test]
fn samples_fire_on_simulation_time_from_their_own_frames_states() {
    watchdog("sensor samples", Duration::from_secs(240));
    let _turn = take_turn();
    let d = domain::SENSORS_SYNC;
    let (dir, path) = scratch("sync", 2.0);
    let log = dir.join("states.jsonl");
    // Long enough that a reader which matches late still checks most of the run: under CI
    // load the test's readers matched the sensor node's writers about a hundred frames in
    // ("first at frame 104", "first at frame 112"; the run does not wait for them), while
    // the lockstep ran a few hundred frames a second.
    let frames = 1000u64;
    let n = node(d);
    let mut gnss: Subscriber<GnssFix> = sub(&n, "gnss");
    let mut odom: Subscriber<Odometry> = sub(&n, "odom");
    let mut radar: Subscriber<RadarScan> = sub(&n, "radar");
    let mut status: Subscriber<NodeStatus> =
        n.subscriber(&topics::nodes()).expect("status subscriber");

    let log_arg = log.to_str().expect("utf-8 path");
    let (mut run, lines) = start_run(
        d,
        &path,
        &["--frames", &frames.to_string(), "--state-log", log_arg],
    );
    let (mut got_gnss, mut got_odom, mut got_radar) = (Vec::new(), Vec::new(), Vec::new());
    let mut last_status: BTreeMap<String, u64> = BTreeMap::new();
    // Until every sensor's sample of the last frame has come, and the sensor node's status has
    // counted its work (its final beat comes when `convoy run` stops it, which may follow
    // "done" by a while under load).
    follow_run(&lines, || {
        let gnss_in = gnss.take_wait(64, Duration::from_millis(10));
        got_gnss.extend(gnss_in.into_iter().map(|s| s.value));
        got_odom.extend(odom.take(64).into_iter().map(|s| s.value));
        got_radar.extend(radar.take(64).into_iter().map(|s| s.value));
        for s in status.take(64) {
            if s.value.node_id == "sensor/main" {
                let counters = s.value.counters.iter();
                last_status = counters.map(|c| (c.name.clone(), c.value)).collect();
            }
        }
        let all_last = got_gnss.last().is_some_and(|m| m.header.frame == frames)
            && got_odom.last().is_some_and(|m| m.header.frame == frames)
            && got_radar.last().is_some_and(|m| m.header.frame == frames);
        let counted = last_status.get("published").is_some_and(|&n| n > 0);
        (all_last, counted)
    });
    run.stop(Duration::from_secs(15));
    let states = read_state_log(&log);

    // Rates on simulation time, stamped with the frame's sim time.
    let due = |num, den| due_frames(num, den, frames + 1);
    assert_frames(
        "gnss (10 Hz)",
        got_gnss.iter().map(|m| &m.header),
        &due(10, 1),
    );
    assert_frames(
        "odometry (7.5 Hz)",
        got_odom.iter().map(|m| &m.header),
        &due(15, 2),
    );
    assert_frames(
        "radar (20 Hz)",
        got_radar.iter().map(|m| &m.header),
        &due(20, 1),
    );

    // Each sample is made from the states of its own frame.
    for m in &got_odom {
        let s = &states[&(m.header.frame, "ego".to_string())];
        let p = &s["position"];
        // The log's JSON parse may differ in the last bit; frames are ~0.35 m apart.
        let close = |a: f64, b: Option<f64>| (a - b.unwrap_or(f64::NAN)).abs() < 1e-9;
        assert!(
            close(m.pose.position.x, p[0].as_f64()) && close(m.pose.position.y, p[1].as_f64()),
            "frame {}: odometry {:?} vs state {p}",
            m.header.frame,
            m.pose.position
        );
    }
    for m in &got_radar {
        let f = m.header.frame;
        let ego = &states[&(f, "ego".to_string())]["position"];
        let lead = &states[&(f, "lead".to_string())]["position"];
        let d: f64 = (0..3)
            .map(|i| (lead[i].as_f64().unwrap_or(0.0) - ego[i].as_f64().unwrap_or(0.0)).powi(2))
            .sum::<f64>()
            .sqrt();
        assert_eq!(m.detections.len(), 1, "frame {f}: {:?}", m.detections);
        assert_eq!(m.detections[0].target, "lead");
        assert!(
            (m.detections[0].range - d).abs() < 1e-9,
            "frame {f}: {} vs {d}",
            m.detections[0].range
        );
    }
    // Ego drives 0.2 m/s faster than the lead: the range shrinks (by 10 m over the run).
    assert!(
        got_radar.first().map(|m| m.detections[0].range)
            > got_radar.last().map(|m| m.detections[0].range)
    );

    // NodeStatus counts what was published and every drop reason.
    for name in [
        "published",
        "dropped_token_busy",
        "dropped_queue_full",
        "dropped_paused",
        "dropped_publisher_error",
        "frames_acked",
    ] {
        assert!(
            last_status.contains_key(name),
            "NodeStatus lacks {name}: {last_status:?}"
        );
    }
    assert!(last_status["published"] > 0, "{last_status:?}");
    assert_eq!(last_status["dropped_publisher_error"], 0, "{last_status:?}");
    wait_nodes_gone(d, Duration::from_secs(10));
}

#[test]
fn a_restarted_sensor_node_takes_its_work_from_the_assignments_and_the_table_shows_it() {
    watchdog("sensor restart", Duration::from_secs(240));
    let _turn = take_turn();
    let d = domain::SENSORS_RESTART;
    // A long lease: the restart must happen inside it, so the coordinator never reassigns.
    let (_dir, path) = scratch("restart", 6.0);
    let n = node(d);
    let mut gnss: Subscriber<GnssFix> = sub(&n, "gnss");
    let (mut run, lines) = start_run(d, &path, &["--frames", "1000000"]);
    let limit = Duration::from_secs(60);
    wait_for_line(&lines, limit, "gnss placed on main", |l| {
        l.contains("sensor ego/gnss -> main ") && l.contains("epoch 1")
    });
    wait_until("a gnss sample", limit, || !gnss.take(64).is_empty());

    // The live table lists every sensor with its node, load and epoch.
    let out = run_ok(
        convoy_on(d).args(["assignments", "--json", "--wait", "1.5"]),
        Duration::from_secs(30),
    );
    let table: serde_json::Value = serde_json::from_str(out.trim()).expect("assignments --json");
    let rows = table.as_array().expect("a list");
    assert_eq!(rows.len(), 3, "{out}");
    for row in rows {
        assert_eq!(row["node"], "main", "{row}");
        assert_eq!(row["epoch"], 1, "{row}");
        assert_eq!(row["node_state"], "up", "{row}");
    }

    // Kill the sensor node and start it again by hand, with the same name.
    let pid = find_node_process(d, "convoy-sensor", "--name", "main").expect("sensor node");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("its command line");
    let words: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).to_string())
        .collect();
    sigkill(pid);
    wait_until("the sensor node gone", limit, || {
        find_node_process(d, "convoy-sensor", "--name", "main").is_none()
    });
    let _ = gnss.take(1024);
    let (restarted, restarted_lines) = ChildGuard::spawn_with_stdout(
        "restarted sensor node",
        Command::new(&words[0]).args(&words[1..]),
    );
    // It runs its sensors from the TRANSIENT_LOCAL assignments: still epoch 1.
    for sensor in ["gnss", "odom", "radar"] {
        wait_for_line(
            &restarted_lines,
            limit,
            &format!("{sensor} taken up again"),
            |l| l.contains(&format!("running ego/{sensor} (")) && l.contains("epoch 1)"),
        );
    }
    // ... and the samples flow again while the run goes on.
    let mut frames = Vec::new();
    wait_until("gnss samples after the restart", limit, || {
        frames.extend(gnss.take(64).into_iter().map(|s| s.value.header.frame));
        frames.len() >= 5
    });
    wait_for_line(&lines, limit, "progress after the restart", |l| {
        l.contains("] frame ")
    });
    drop(restarted);
    run.stop(Duration::from_secs(15));
    wait_nodes_gone(d, Duration::from_secs(10));
}

/// Ego parked with a 16-channel roof lidar at 10 Hz (every second frame at dt = 0.05); a car
/// parked 15 m ahead; a wall 40 m behind.
const LIDAR_SCENARIO: &str = r#"
[scenario]
name = "lidar"
seed = 5
dt = 0.05
mode = "sync"
step = "fixed"

[map]
ground_half_extents = [200.0, 200.0]
[[map.boxes]]
center = [-40.5, 0.0, 5.0]
half_extents = [0.5, 20.0, 5.0]

[[agents]]
id = "ego"
start = { x = 0.0, y = 0.0 }
[agents.controller]
kind = "external"
[[agents.sensors]]
id = "roof"
kind = "lidar"
rate = 10.0
channels = 16
columns = 512
upper_fov = 10.0
lower_fov = -20.0
range = 80.0

[[agents]]
id = "lead"
start = { x = 15.0, y = 0.0 }
[agents.controller]
kind = "external"
"#;

#[test]
fn a_roof_lidar_publishes_scans_of_the_map_and_the_other_car() {
    watchdog("lidar", Duration::from_secs(240));
    let _turn = take_turn();
    let d = domain::SENSORS_LIDAR;
    let (_dir, path) = scratch_scenario("lidar", LIDAR_SCENARIO);
    // Long enough that a reader which matches late still checks most of the run (as in the
    // sampling test): a 40-frame run took half a second, and once under load the test's reader
    // matched the lidar's writer only as it ended ("only 8 of 21 samples (first at frame 26)":
    // the writer's KEEP_LAST 8 kept for it).
    let frames = 300u64;
    let n = node(d);
    let mut roof: Subscriber<PointCloud> = sub(&n, "roof");
    let (mut run, lines) = start_run(d, &path, &["--frames", &frames.to_string()]);
    let mut clouds: Vec<PointCloud> = Vec::new();
    follow_run(&lines, || {
        let scans = roof.take_wait(16, Duration::from_millis(20));
        clouds.extend(scans.into_iter().map(|s| s.value));
        (
            clouds.last().is_some_and(|c| c.header.frame == frames),
            true,
        )
    });
    run.stop(Duration::from_secs(15));

    let headers = clouds.iter().map(|c| &c.header);
    assert_frames("lidar", headers, &due_frames(10, 1, frames + 1));
    for cloud in &clouds {
        assert_eq!(cloud.point_step, convoy_sensor::lidar::POINT_STEP);
        let names: Vec<&str> = cloud.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["x", "y", "z", "intensity", "ring", "time_offset"]);
        let points = convoy_sensor::lidar::points(cloud);
        assert_eq!(points.len(), cloud.point_count as usize);
        // Downward rings see the ground 1.8 m below the sensor (0.75 m box centre + 0.75 m
        // half height + 0.3 m mount) in every direction: one point per column each.
        for ring in 0..4u16 {
            let on_ring: Vec<_> = points.iter().filter(|p| p.ring == ring).collect();
            assert_eq!(
                on_ring.len(),
                512,
                "ring {ring} of frame {}",
                cloud.header.frame
            );
        }
        // The car ahead: its rear face is 15 - 2.25 = 12.75 m away.
        let nearest_ahead = points
            .iter()
            .filter(|p| p.x > 1.0 && p.y.abs() < 0.5 && p.z > -1.0)
            .map(|p| p.x)
            .fold(f32::MAX, f32::min);
        assert!(
            (f64::from(nearest_ahead) - 12.75).abs() < 0.15,
            "nearest point ahead at {nearest_ahead} m"
        );
        // The wall behind: level rays straight back hit x = -40.
        let behind: Vec<_> = points
            .iter()
            .filter(|p| p.x < -1.0 && p.y.abs() < 0.5 && p.z.abs() < 1.0)
            .collect();
        assert!(!behind.is_empty(), "no return from the wall behind");
        for p in behind {
            assert!((f64::from(p.x) + 40.0).abs() < 0.15, "{p:?}");
        }
        assert!(points
            .iter()
            .all(|p| (p.x * p.x + p.y * p.y + p.z * p.z).sqrt() <= 80.2));
    }
}

/// Ego parked with a 160x120 front camera at 10 Hz that also publishes depth and classes;
/// car_2 parked 20 m ahead.
const CAMERA_SCENARIO: &str = r#"
[scenario]
name = "camera"
seed = 5
dt = 0.05
mode = "sync"
step = "fixed"

[[agents]]
id = "ego"
start = { x = 0.0, y = 0.0 }
[agents.controller]
kind = "external"
[[agents.sensors]]
id = "front"
kind = "camera"
rate = 10.0
width = 160
height = 120
fov = 90.0
depth = true
semantic = true

[[agents]]
id = "car_2"
start = { x = 20.0, y = 0.0 }
[agents.controller]
kind = "external"
"#;

#[test]
fn a_front_camera_publishes_what_it_sees_and_echo_saves_it_as_png() {
    watchdog("camera", Duration::from_secs(240));
    let _turn = take_turn();
    let d = domain::SENSORS_CAMERA;
    let (dir, path) = scratch_scenario("camera", CAMERA_SCENARIO);
    let n = node(d);
    let mut rgb: Subscriber<Image> = sub(&n, "front");
    let mut depth: Subscriber<Image> = sub(&n, "front_depth");
    let mut classes: Subscriber<Image> = sub(&n, "front_semantic");
    let (mut run, _lines) = start_run(d, &path, &["--duration", "600"]);
    let saved = dir.join("png");
    run_ok(
        convoy_on(d)
            .args(["topic", "echo", "convoy/sensor/ego/front"])
            .args(["-n", "1", "--timeout", "60", "--save"])
            .arg(&saved),
        Duration::from_secs(90),
    );
    let pngs: Vec<_> = std::fs::read_dir(&saved)
        .expect("the save directory")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(pngs.len(), 1, "{pngs:?}");
    let name = pngs[0]
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        name.starts_with("ego_front_") && name.ends_with(".png"),
        "{name}"
    );
    let bytes = std::fs::read(&pngs[0]).expect("png");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    // IHDR: width and height.
    let be32 = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    assert_eq!((be32(16), be32(20)), (160, 120), "PNG size");

    // The three outputs of one frame.
    let until = Instant::now() + Duration::from_secs(60);
    let (mut c, mut dp, mut cl) = (None, None, None);
    while (c.is_none() || dp.is_none() || cl.is_none()) && Instant::now() < until {
        c = c.or(rgb
            .take_wait(4, Duration::from_millis(50))
            .pop()
            .map(|s| s.value));
        dp = dp.or(depth.take(4).pop().map(|s| s.value));
        cl = cl.or(classes.take(4).pop().map(|s| s.value));
    }
    run.stop(Duration::from_secs(15));
    let (c, dp, cl) = (c.expect("colour"), dp.expect("depth"), cl.expect("classes"));
    assert_eq!(
        (c.encoding.as_str(), c.width, c.height, c.step),
        ("rgb8", 160, 120, 480)
    );
    assert_eq!((dp.encoding.as_str(), dp.step), ("32FC1", 640));
    assert_eq!((cl.encoding.as_str(), cl.step), ("mono8", 160));
    assert_eq!(c.header.stamp_ns, c.header.frame as i64 * 50_000_000);
    // The centre of the image is car_2 (class 3), whose rear face is 20 - 2.25 m from ego's
    // centre and the camera sits 0.6 x 2.25 = 1.35 m ahead of it.
    let centre = (62 * 160 + 80) as usize;
    assert_eq!(cl.data[centre], 3, "the centre pixel is not the car");
    let d = &dp.data[4 * centre..4 * centre + 4];
    let metres = f32::from_le_bytes([d[0], d[1], d[2], d[3]]);
    assert!(
        (f64::from(metres) - 16.4).abs() < 0.1,
        "depth at the centre {metres}"
    );
    // The car is car_2's colour: blue dominates.
    let px = &c.data[3 * centre..3 * centre + 3];
    assert!(px[2] > px[0] && px[2] > px[1], "centre colour {px:?}");
    // The top row is sky.
    assert_eq!(cl.data[80], 0, "top row is not sky");
}

/// `--adapter` picks the cameras' graphics adapter, and the node names the one it took at start
/// (`camera adapter: NAME (BACKEND, TYPE)`): `--adapter gpu` where there is no GPU stops the node
/// at once with what it found and no panic (where there is one, it is named); a launch file's
/// sensor node with `adapter = "cpu"` renders on the CPU (lavapipe) and publishes, and so does
/// `convoy run --adapter cpu`'s.
#[test]
fn the_camera_adapter_is_chosen_named_at_start_and_a_missing_gpu_is_a_clear_error() {
    watchdog("camera adapter", Duration::from_secs(240));
    let _turn = take_turn();
    let d = domain::SENSORS_ADAPTER;
    let (dir, path) = scratch_scenario("adapter", CAMERA_SCENARIO);

    // gpu, from the node's command line; it stops before it would need a coordinator.
    let mut gpu = ChildGuard::spawn(
        "convoy-sensor --adapter gpu",
        Command::new(workspace_bin("convoy-sensor"))
            .arg(&path)
            .args(["--domain", &d.to_string(), "--adapter", "gpu"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let lines = gpu.all_lines();
    let said = wait_for_line(&lines, Duration::from_secs(60), "the adapter", |l| {
        l.starts_with("camera adapter: ") || l.starts_with("error: --adapter")
    });
    if said.starts_with("error: ") {
        assert!(
            said.starts_with(
                "error: --adapter gpu: no hardware (GPU) adapter for the camera; found: "
            ),
            "{said}"
        );
        let status = gpu.wait_for_exit(Duration::from_secs(30));
        assert!(status.is_some_and(|s| !s.success()), "{status:?}");
        let rest: Vec<String> = lines.try_iter().collect();
        assert!(!rest.iter().any(|l| l.contains("panicked")), "{rest:?}");
    } else {
        let hardware = ["DiscreteGpu)", "IntegratedGpu)", "VirtualGpu)"];
        assert!(hardware.iter().any(|t| said.ends_with(t)), "{said}");
    }
    gpu.stop(Duration::from_secs(10));

    // cpu, from a launch file: lavapipe renders, and the camera's images come.
    let launch = write_file(
        &dir,
        "adapter_launch.toml",
        &format!(
            "[run]\ndomain = {d}\nscenario = \"{}\"\n\n\
             [[nodes]]\nkind = \"coordinator\"\nhost = \"local\"\n\n\
             [[nodes]]\nkind = \"agent\"\nhost = \"local\"\n\n\
             [[nodes]]\nkind = \"sensor\"\nhost = \"local\"\nadapter = \"cpu\"\n",
            path.display()
        ),
    );
    let n = node(d);
    let mut rgb: Subscriber<Image> = sub(&n, "front");
    let (mut run, lines) = ChildGuard::spawn_with_stdout(
        "convoy launch",
        convoy()
            .arg("launch")
            .arg(&launch)
            .args(["--duration", "600"]),
    );
    let said = wait_for_line(&lines, Duration::from_secs(90), "the adapter", |l| {
        l.contains("camera adapter: ")
    });
    assert!(
        said.contains("sensor/main] camera adapter: ") && said.ends_with(", Cpu)"),
        "{said}"
    );
    let image = rgb.take_wait(1, Duration::from_secs(60)).pop();
    run.stop(Duration::from_secs(15));
    let image = image.expect("an image from the cpu adapter").value;
    assert_eq!(
        (image.encoding.as_str(), image.width, image.height),
        ("rgb8", 160, 120)
    );

    // cpu, from `convoy run --adapter`: its sensor node is started with it.
    let (mut run, lines) = ChildGuard::spawn_with_stdout(
        "convoy run --adapter cpu",
        convoy()
            .args(["--domain", &d.to_string(), "run"])
            .arg(&path)
            .args(["--adapter", "cpu", "--duration", "600"]),
    );
    let said = wait_for_line(&lines, Duration::from_secs(90), "the adapter", |l| {
        l.contains("camera adapter: ")
    });
    run.stop(Duration::from_secs(15));
    assert!(
        said.contains("sensor/main] camera adapter: ") && said.ends_with(", Cpu)"),
        "{said}"
    );
}
