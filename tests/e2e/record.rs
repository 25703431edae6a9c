//! Recordings (issue 18): `convoy run --record` and `convoy record` write MCAP files that
//! Foxglove's own Python reader (tests/interop/mcap_read.py, the `mcap` package from PyPI) reads
//! back with every message, its schema and its QoS; `convoy replay` publishes a recording again
//! so that a second recorder gets the same messages; a recorder stopped with Ctrl-C finishes its
//! file, one killed outright leaves a file readable up to its last chunk; and bad input (files
//! that are no recording, a pattern that matches nothing, a full disk) gets a clear error that
//! names the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use convoy_core::schedule::SensorSchedule;
use convoy_tests::files::{fresh_dir, logged_frames, write_file, Tmpfs};
use convoy_tests::{
    convoy_on, convoy_run, domain, repo_root, ros_python, run_fails, run_ok, run_scenario,
    take_turn, wait_for_line, wait_nodes_gone, watchdog, ChildGuard,
};
use serde_json::Value;

/// Frames of the recorded runs: one simulated second at dt = 0.01.
const FRAMES: u64 = 100;
const DT_NS: i64 = 10_000_000;

/// Two cars on parallel lanes; ego carries an IMU at 100 Hz (every frame) and a GNSS at 10 Hz.
fn scenario(dir: &Path) -> PathBuf {
    let text = r#"
[scenario]
name = "record"
seed = 5
dt = 0.01
mode = "sync"
step = "fixed"

[map]
ground_half_extents = [500.0, 100.0]

[[agents]]
id = "ego"
start = { x = 0.0, y = 0.0 }
controller = { kind = "waypoints", speed = 5.0, path = [[0.0, 0.0], [400.0, 0.0]] }

[[agents.sensors]]
id = "imu"
kind = "imu"
rate = 100.0

[[agents.sensors]]
id = "gnss"
kind = "gnss"
rate = 10.0

[[agents]]
id = "car_2"
start = { x = 0.0, y = 10.0 }
controller = { kind = "waypoints", speed = 5.0, path = [[0.0, 10.0], [400.0, 10.0]] }
"#;
    write_file(dir, "record.toml", text)
}

/// What tests/interop/mcap_read.py reads in `file`.
fn report(file: &Path) -> Value {
    let script = repo_root().join("tests/interop/mcap_read.py");
    let out = run_ok(
        Command::new(ros_python()).arg(script).arg(file),
        Duration::from_secs(120),
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("mcap_read.py said {out}: {e}"))
}

fn topic<'a>(report: &'a Value, name: &str) -> &'a Value {
    let t = &report["topics"][name];
    assert!(t.is_object(), "{name} not recorded: {report:#}");
    t
}

fn count(topic: &Value) -> u64 {
    topic["count"].as_u64().expect("count")
}

/// Messages of every topic in a report.
fn total(report: &Value) -> u64 {
    report["topics"]
        .as_object()
        .expect("topics")
        .values()
        .map(count)
        .sum()
}

fn frames(topic: &Value) -> Vec<u64> {
    let mut frames: Vec<u64> = topic["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| f.as_u64().expect("frame"))
        .collect();
    frames.sort_unstable();
    frames
}

/// The frames 0..=FRAMES a sensor of `rate` fires on.
fn fired(rate: f64) -> Vec<u64> {
    let mut schedule = SensorSchedule::new(rate).expect("rate");
    (0..=FRAMES)
        .filter(|&f| schedule.due(f, f as i64 * DT_NS))
        .collect()
}

/// `convoy run --frames FRAMES --record FILE` of the test scenario; the run's state log.
fn record_run(d: u32, dir: &Path, file: &Path) -> PathBuf {
    let scenario = scenario(dir);
    let log = dir.join("states.jsonl");
    let frames = FRAMES.to_string();
    let record = file.display().to_string();
    let out = run_scenario(
        d,
        &scenario.display().to_string(),
        &["--frames", &frames, "--record", &record],
        &log,
        Duration::from_secs(180),
    );
    assert!(out.contains("bridge/record ready"), "{out}");
    log
}

#[test]
fn a_recorded_run_has_every_message_with_its_schema_time_and_qos() {
    watchdog("a_recorded_run_has_every_message", Duration::from_secs(300));
    let _turn = take_turn();
    let dir = fresh_dir("test-record", "run");
    let file = dir.join("run.mcap");
    let log = record_run(domain::RECORD_RUN, &dir, &file);
    let r = report(&file);
    assert!(r["stream_error"].is_null(), "{r:#}");
    assert_eq!(r["header"]["profile"], "convoy");
    let qos = &r["metadata"]["convoy.qos"];
    assert_eq!(qos["library"], "convoy", "{r:#}");
    assert!(qos["xml"]
        .as_str()
        .is_some_and(|x| x.contains("<qos_library")));
    let total = total(&r);
    assert_eq!(r["summary"]["message_count"].as_u64(), Some(total), "{r:#}");
    for (name, t) in r["topics"].as_object().expect("topics") {
        assert_eq!(t["schema_encoding"], "omgidl", "{name}");
        assert_eq!(t["message_encoding"], "cdr", "{name}");
        assert_eq!(t["metadata"]["convoy.type"], t["schema_name"], "{name}");
        assert!(t["metadata"]["convoy.class"].is_string(), "{name}");
        let profile = t["metadata"]["convoy.qos"].as_str().unwrap_or_default();
        assert!(
            profile.starts_with("qos/convoy.xml::convoy::"),
            "{name}: {profile}"
        );
        assert_eq!(
            t["stamps_match"].as_bool(),
            Some(true),
            "{name}: publish time is not the sim time"
        );
    }
    // The clock: every frame's tick (Tick 0 repeated during the handshake).
    let clock = frames(topic(&r, "convoy/clock"));
    let mut ticks = clock.clone();
    ticks.dedup();
    assert_eq!(ticks, (0..=FRAMES).collect::<Vec<_>>());
    // Each agent's states: the state log has one line per frame (a state that arrives again
    // is logged once); the recording keeps every copy written (frame 0's on every Tick 0 of
    // the handshake, a state written again when a frame stalled), so without its copies it
    // holds the very frames of the log.
    let logged = logged_frames(&log);
    for agent in ["ego", "car_2"] {
        let logged = logged.get(agent).expect("agent in the state log");
        assert_eq!(
            logged,
            &(0..=FRAMES).collect::<Vec<_>>(),
            "{agent}: the state log"
        );
        let mut recorded = frames(topic(&r, &format!("convoy/agent/{agent}/state")));
        recorded.dedup();
        assert_eq!(&recorded, logged, "{agent}'s recorded states");
    }
    // Each sensor: one sample per frame it fires on (the last frame's may trail the run's end).
    for (sensor, rate) in [("imu", 100.0), ("gnss", 10.0)] {
        let recorded = frames(topic(&r, &format!("convoy/sensor/ego/{sensor}")));
        let expected = fired(rate);
        let short = &expected[..expected.len() - 1];
        assert!(
            recorded == expected || recorded == short,
            "{sensor}: recorded frames {recorded:?}, fired on {expected:?}"
        );
    }
}

#[test]
fn a_replay_recorded_again_gives_the_same_messages() {
    watchdog("a_replay_recorded_again", Duration::from_secs(400));
    let _turn = take_turn();
    let dir = fresh_dir("test-record", "replay");
    let original = dir.join("original.mcap");
    record_run(domain::RECORD_ORIGINAL, &dir, &original);
    // A second recorder on another domain, listening before the replay starts.
    let again = dir.join("again.mcap");
    let d = domain::RECORD_REPLAY;
    let mut recorder = ChildGuard::spawn(
        "recorder of the replay",
        convoy_on(d)
            .args(["record", "--quiet", "--out"])
            .arg(&again)
            .stdout(Stdio::piped()),
    );
    let lines = recorder.stdout_lines();
    wait_for_line(&lines, Duration::from_secs(60), "recorder ready", |l| {
        l.starts_with("recording ")
    });
    let started = Instant::now();
    let out = run_ok(
        convoy_on(d)
            .args(["replay", "--settle", "30"])
            .arg(&original),
        Duration::from_secs(180),
    );
    let took = started.elapsed();
    assert!(out.contains("replayed "), "{out}");
    let status = recorder.interrupt(Duration::from_secs(20));
    assert!(status.is_some_and(|s| s.success()), "recorder: {status:?}");
    // Paced by simulation time: one simulated second takes about one second.
    assert!(took >= Duration::from_millis(500), "replay took {took:?}");
    let (a, b) = (report(&original), report(&again));
    assert!(b["stream_error"].is_null(), "{b:#}");
    let busy = |r: &Value| -> BTreeMap<String, Value> {
        r["topics"]
            .as_object()
            .expect("topics")
            .iter()
            .filter(|(name, t)| *name != "convoy/nodes" && count(t) > 0)
            .map(|(name, t)| (name.clone(), t.clone()))
            .collect()
    };
    let (a, b) = (busy(&a), busy(&b));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "topics differ"
    );
    for (name, t) in &a {
        for field in ["count", "bytes", "digest", "schema_name"] {
            assert_eq!(t[field], b[name][field], "{name}: {field}");
        }
    }
    assert!(a.contains_key("convoy/clock") && a.contains_key("convoy/sensor/ego/imu"));
}

/// A long run on `d` in the background (its output discarded) and a recorder of it whose
/// stdout and stderr lines come back; the recorder has written at least `messages` messages
/// (its progress line says so) when this returns.
fn recording_a_run(
    d: u32,
    dir: &Path,
    file: &Path,
    messages: u64,
) -> (ChildGuard, ChildGuard, std::sync::mpsc::Receiver<String>) {
    let scenario = scenario(dir);
    let run = ChildGuard::spawn(
        "convoy run",
        convoy_run(d, &scenario)
            .args(["--frames", "1000000"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let mut recorder = ChildGuard::spawn(
        "recorder",
        convoy_on(d)
            .args(["record", "--out"])
            .arg(file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let lines = recorder.all_lines();
    wait_for_line(&lines, Duration::from_secs(120), "progress", |l| {
        progress(l).is_some_and(|n| n >= messages)
    });
    (run, recorder, lines)
}

/// The message count of a recorder's progress line.
fn progress(line: &str) -> Option<u64> {
    let (_, rest) = line.split_once(".mcap: ")?;
    rest.split_once(" messages")?.0.parse().ok()
}

#[test]
fn a_recorder_stopped_with_ctrl_c_finishes_its_file() {
    watchdog("a_recorder_stopped_with_ctrl_c", Duration::from_secs(300));
    let _turn = take_turn();
    let d = domain::RECORD_INTERRUPT;
    let dir = fresh_dir("test-record", "interrupt");
    let file = dir.join("interrupted.mcap");
    let (mut run, mut recorder, lines) = recording_a_run(d, &dir, &file, 200);
    let status = recorder.interrupt(Duration::from_secs(20));
    assert!(status.is_some_and(|s| s.success()), "recorder: {status:?}");
    wait_for_line(&lines, Duration::from_secs(5), "summary", |l| {
        l.starts_with("wrote ")
    });
    run.stop(Duration::from_secs(20));
    let r = report(&file);
    assert!(r["stream_error"].is_null(), "{r:#}");
    let total = total(&r);
    assert!(total >= 200, "{r:#}");
    assert_eq!(r["summary"]["message_count"].as_u64(), Some(total), "{r:#}");
    wait_nodes_gone(d, Duration::from_secs(20));
}

#[test]
fn a_killed_recorder_leaves_a_file_readable_to_its_last_chunk() {
    watchdog("a_killed_recorder_leaves_a_file", Duration::from_secs(300));
    let _turn = take_turn();
    let d = domain::RECORD_KILL;
    let dir = fresh_dir("test-record", "kill");
    let file = dir.join("killed.mcap");
    let (mut run, mut recorder, lines) = recording_a_run(d, &dir, &file, 100);
    // A further progress line: a second later, so at least one chunk went to the disk.
    wait_for_line(&lines, Duration::from_secs(30), "progress", |l| {
        progress(l).is_some()
    });
    recorder.kill_now();
    run.stop(Duration::from_secs(20));
    let r = report(&file);
    let total = total(&r);
    assert!(total > 0, "nothing readable: {r:#}");
    assert!(
        r["summary"].is_null(),
        "a killed recorder wrote a summary: {r:#}"
    );
    // The replayer publishes what can be read, then says the file was cut short.
    let (ok, out, err) = convoy_tests::run_with_timeout(
        convoy_on(d)
            .args(["replay", "--rate", "0", "--settle", "0"])
            .arg(&file),
        Duration::from_secs(120),
    );
    assert!(!ok, "replay of a cut file succeeded:\n{out}");
    assert!(out.contains("replaying "), "{out}\n{err}");
    assert!(
        err.contains(&file.display().to_string()) && err.contains("truncated"),
        "{err}"
    );
    wait_nodes_gone(d, Duration::from_secs(20));
}

#[test]
fn bad_input_gets_an_error_naming_the_file() {
    watchdog("bad_input_gets_an_error", Duration::from_secs(300));
    let _turn = take_turn();
    let d = domain::RECORD_BAD_INPUT;
    let dir = fresh_dir("test-record", "bad");
    let limit = Duration::from_secs(60);
    let replay = |file: &Path, extra: &[&str]| {
        run_fails(
            convoy_on(d)
                .args(["replay", "--settle", "0", "--rate", "0"])
                .arg(file)
                .args(extra),
            limit,
        )
    };
    let named = |err: &str, file: &Path, what: &str| {
        assert!(
            err.contains(&file.display().to_string()) && err.contains(what),
            "expected '{what}' about {}: {err}",
            file.display()
        );
    };
    // No such file; a file that is not MCAP; an MCAP file of another tool.
    let missing = dir.join("missing.mcap");
    named(&replay(&missing, &[]), &missing, "cannot open");
    let text = write_file(&dir, "text.mcap", "this is not a recording\n");
    named(&replay(&text, &[]), &text, "not an MCAP file");
    let foreign = dir.join("foreign.mcap");
    let script = repo_root().join("tests/interop/mcap_read.py");
    run_ok(
        Command::new(ros_python())
            .arg(&script)
            .arg("--write-foreign")
            .arg(&foreign),
        limit,
    );
    named(
        &replay(&foreign, &[]),
        &foreign,
        "holds no convoy recording",
    );

    // The rest records a run.
    let scenario = scenario(&dir);
    let run = ChildGuard::spawn(
        "convoy run",
        convoy_run(d, &scenario)
            .args(["--frames", "1000000"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let record = |extra: &[&str], file: &Path, limit| {
        convoy_tests::run_with_timeout(
            convoy_on(d)
                .args(["record", "--quiet", "--out"])
                .arg(file)
                .args(extra),
            limit,
        )
    };
    // A pattern that names no convoy topic: a warning, and an empty recording.
    let empty = dir.join("empty.mcap");
    let (ok, out, err) = record(&["--duration", "2", "--topics", "nope/*"], &empty, limit);
    assert!(ok, "{out}\n{err}");
    assert!(err.contains("'nope/*' matches no convoy topic"), "{err}");
    let r = report(&empty);
    let counts: u64 = r["topics"]
        .as_object()
        .expect("topics")
        .values()
        .map(count)
        .sum();
    assert_eq!(counts, 0, "{r:#}");
    // A recording whose end (its summary) is cut off.
    let whole = dir.join("whole.mcap");
    let (ok, out, err) = record(&["--duration", "2"], &whole, limit);
    assert!(ok, "{out}\n{err}");
    // A disk that fills up: the recorder stops with an error naming the file.
    let disk = Tmpfs::mount(dir.join("small_disk"), "256k");
    let full = disk.0.join("full.mcap");
    let (ok, out, err) = record(&["--compression", "none"], &full, Duration::from_secs(120));
    assert!(!ok, "recording onto a full disk succeeded:\n{out}");
    named(&err, &full, "No space left on device");
    drop(disk);
    drop(run);
    wait_nodes_gone(d, Duration::from_secs(20));

    // Replayed as far as it reads (no run listens any more), then reported as truncated.
    let bytes = std::fs::read(&whole).expect("recording");
    let cut = dir.join("cut.mcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).expect("cut file");
    let err = replay(&cut, &[]);
    named(&err, &cut, "truncated");
}

#[test]
fn a_launch_file_adds_a_recorder_like_any_node() {
    let dir = fresh_dir("test-record", "launch");
    let scenario = scenario(&dir);
    let launch = convoy_tests::files::LaunchFile::new(domain::RECORD_RUN, &scenario)
        .node("coordinator", "local", &[])
        .node("agent", "local", &[])
        .node("record", "local", &[])
        .write(&dir, "launch.toml");
    let text = std::fs::read_to_string(&launch).expect("launch file")
        + "out = \"launched.mcap\"\ntopics = [\"convoy/agent/*/state\"]\n";
    std::fs::write(&launch, text).expect("launch file");
    let out = run_ok(
        convoy_tests::convoy()
            .args(["launch", "--check"])
            .arg(&launch),
        Duration::from_secs(60),
    );
    assert!(out.contains("bridge/record"), "{out}");
    // A recorder's settings on another kind of node are refused, naming the line.
    let wrong = write_file(
        &dir,
        "wrong.toml",
        &format!(
            "[run]\nscenario = \"{}\"\n\n[[nodes]]\nkind = \"coordinator\"\nhost = \"local\"\n\
             out = \"x.mcap\"\n\n[[nodes]]\nkind = \"agent\"\nhost = \"local\"\n",
            scenario.display()
        ),
    );
    let err = run_fails(
        convoy_tests::convoy()
            .args(["launch", "--check"])
            .arg(&wrong),
        Duration::from_secs(60),
    );
    assert!(
        err.contains("out and topics belong to record nodes"),
        "{err}"
    );
}
