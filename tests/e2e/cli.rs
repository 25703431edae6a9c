//! The `convoy` command as a user runs it: real processes on real DDS domains.

use std::sync::Arc;
use std::time::Duration;

use convoy_core::dds::{Node, Publisher};
use convoy_core::messages::Tick;
use convoy_core::qos::QosSet;
use convoy_core::topics::{self, TopicClass};
use convoy_tests::files::{fresh_dir, fresh_file, one_sided_qos, read_csv, LATENCY_CSV};
use convoy_tests::{
    convoy, convoy_on, convoy_run, domain, run_fails, run_ok, run_with_timeout, topic_list_until,
    wait_nodes_gone, watchdog,
};

const LIMIT: Duration = Duration::from_secs(60);
/// A bench's own time limit.
const BENCH_LIMIT: Duration = Duration::from_secs(200);

/// A Tick writer at ~100 Hz on its own thread until the returned guard is dropped.
struct TickSource {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TickSource {
    fn start(domain: u32) -> TickSource {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let node = Node::new(domain, "test/clock", Arc::new(QosSet::builtin())).expect("node");
            let clock: Publisher<Tick> = node.publisher(&topics::clock()).expect("publisher");
            let mut frame = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = clock.write(Tick {
                    frame,
                    sim_time_ns: frame as i64 * 10_000_000,
                    dt_ns: 10_000_000,
                    agents: vec!["ego".into()],
                    ..Tick::default()
                });
                frame += 1;
                // The pace of a 100 Hz clock, not a wait for a condition.
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        TickSource {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for TickSource {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn bad_input_gets_clear_errors() {
    // (the command line, what its error must say)
    let cases = [
        (
            "launch tests/fixtures/launch_unknown_host.toml --check",
            "launch_unknown_host.toml:6: node on unknown host 'nowhere'",
        ),
        (
            "launch tests/fixtures/launch_bridge.toml --check",
            "launch_bridge.toml:15: bridge 'ros2': no settings file",
        ),
        (
            "launch tests/fixtures/launch_two_mains.toml --check",
            "two sensor nodes are named 'main' (give each a `name`)",
        ),
        (
            "launch tests/fixtures/launch_agent_role.toml --check",
            "launch_agent_role.toml:9: role and capacity belong to sensor nodes",
        ),
        (
            "launch tests/fixtures/launch_adapter.toml --check",
            "launch_adapter.toml:11: unknown variant `tpu`, expected one of `auto`, `gpu`, `cpu`",
        ),
        (
            "launch tests/fixtures/launch_typo.toml --check",
            "launch_typo.toml:3: unknown field `duraton`",
        ),
        (
            "launch tests/fixtures/launch_no_agents_a_process.toml --check",
            "launch_no_agents_a_process.toml:3: '0': give a number of agents from 1 to 1024, or auto",
        ),
        (
            "run two_cars --agents-per-process 0",
            "'0': give a number of agents from 1 to 1024, or auto",
        ),
        (
            "bench lockstep --agents 2 --agents-per-process 65",
            "--agents-per-process 65 is out of range",
        ),
        (
            "qos show nodes/core/tests/qos_fixtures/unknown_policy.xml",
            "unknown_policy.xml:6: unknown policy 'deadlin'",
        ),
        // A run with a broken QoS file stops before touching the network.
        (
            "--qos nodes/core/tests/qos_fixtures/cycle.xml topic list",
            "cycle.xml:",
        ),
        (
            "topic echo not/a/topic --timeout 1",
            "'not/a/topic' is not a convoy topic",
        ),
        ("--domain 300 topic list", "domain ids are 0..=232"),
        (
            "qos show nodes/core/tests/qos_fixtures/does_not_exist.xml",
            "does_not_exist.xml",
        ),
        ("qos show qos/convoy.xml::nope", "nope"),
        ("bench latency --duration 0", "--duration 0 is out of range"),
        (
            "launch tests/fixtures/launch_encrypt_class.toml --check",
            "launch_encrypt_class.toml:4: encrypt: unknown topic class 'sensors'",
        ),
        (
            "launch tests/fixtures/launch_encrypt_unsecured.toml --check",
            "launch_encrypt_unsecured.toml:3: encrypt applies to secured runs: add secure = true",
        ),
        (
            "launch tests/fixtures/launch_view_bind.toml --check",
            "launch_view_bind.toml:16: bind 'localhost': expected HOST:PORT",
        ),
        (
            "view two_cars --bind 127.0.0.1:99999",
            "--bind '127.0.0.1:99999': expected HOST:PORT",
        ),
        ("view no_such_scenario.toml", "no_such_scenario.toml"),
    ];
    for (line, expected) in cases {
        let args: Vec<&str> = line.split_whitespace().collect();
        let err = run_fails(convoy().args(&args), LIMIT);
        assert!(
            err.contains(expected),
            "convoy {args:?}: stderr lacks '{expected}':\n{err}"
        );
        assert!(
            !err.contains("panicked"),
            "convoy {args:?} panicked:\n{err}"
        );
    }
}

#[test]
fn qos_show_prints_resolved_profiles() {
    let out = run_ok(convoy().args(["qos", "show", "qos/convoy.xml"]), LIMIT);
    for class in TopicClass::ALL {
        assert!(
            out.contains(class.profile_name()),
            "no profile '{class}' in:\n{out}"
        );
    }
    assert!(out.contains("RELIABLE"), "{out}");

    // A file of several libraries shows each.
    let out = run_ok(convoy().args(["qos", "show", "qos/experiments.xml"]), LIMIT);
    for library in ["best_effort", "reliable_keep_all", "deadline_watch"] {
        assert!(out.contains(library), "no library {library} in:\n{out}");
    }
}

#[test]
fn topic_list_shows_discovered_topics_with_types_and_counts() {
    watchdog("topic list", Duration::from_secs(120));
    let _ticks = TickSource::start(domain::CLI_LIST);
    // Discovery takes a moment: retry a few times, each listening 2 s (bounded).
    let out = topic_list_until(domain::CLI_LIST, "2", 10, "convoy/clock", |out| {
        let listed = out.contains("convoy/clock  [convoy::Tick]  1 writer");
        listed.then(|| out.to_string())
    });
    assert!(
        out.contains("reliability: RELIABLE"),
        "verbose QoS missing:\n{out}"
    );
    assert!(out.contains("TransientLocal"), "durability missing:\n{out}");
}

#[test]
fn topic_echo_decodes_samples_as_text_and_json() {
    watchdog("topic echo", Duration::from_secs(120));
    let _ticks = TickSource::start(domain::CLI_ECHO);
    let echo = || {
        let mut cmd = convoy_on(domain::CLI_ECHO);
        cmd.args(["topic", "echo", "convoy/clock", "--timeout", "30"]);
        cmd
    };
    let out = run_ok(echo().args(["--json", "-n", "3"]), LIMIT);
    let ticks: Vec<Tick> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a Tick: {l}: {e}")))
        .collect();
    assert_eq!(ticks.len(), 3, "{out}");
    assert!(ticks.windows(2).all(|w| w[0].frame < w[1].frame), "{out}");
    assert_eq!(ticks[0].agents, vec!["ego".to_string()]);

    let out = run_ok(echo().args(["-n", "1"]), LIMIT);
    assert!(
        out.contains("dt_ns: 10000000") && out.contains("agents: ['ego']"),
        "{out}"
    );
}

#[test]
fn topic_hz_reports_the_rate() {
    watchdog("topic hz", Duration::from_secs(120));
    let _ticks = TickSource::start(domain::CLI_HZ);
    let hz = ["topic", "hz", "convoy/clock", "--duration", "4"];
    let out = run_ok(convoy_on(domain::CLI_HZ).args(hz), LIMIT);
    let rates: Vec<f64> = out
        .lines()
        .filter_map(|l| l.strip_prefix("average rate: "))
        .filter_map(|r| r.trim().parse().ok())
        .collect();
    assert!(!rates.is_empty(), "no rate printed:\n{out}");
    // A 100 Hz source: the rate must be in its neighbourhood (a functional check, loose
    // enough for a loaded 2-core machine; not a speed assertion).
    let last = rates[rates.len() - 1];
    assert!((20.0..=150.0).contains(&last), "rate {last}:\n{out}");
}

#[test]
fn bench_latency_writes_csv_and_loses_nothing_on_a_reliable_profile() {
    watchdog("bench latency", Duration::from_secs(240));
    let csv = fresh_file("test-bench", "latency.csv");
    let out = run_ok(
        convoy_on(domain::CLI_BENCH)
            .args(["bench", "latency", "--sizes", "64,65536"])
            .args(["--duration", "0.5", "--burst", "10000", "--out"])
            .arg(&csv),
        BENCH_LIMIT,
    );
    assert!(out.contains("delivery listener"), "{out}");
    assert!(
        out.contains("burst: 10000 samples of 64 B sent back to back, 10000 received, 0 lost"),
        "{out}"
    );
    let (text, rows) = read_csv(&csv, LATENCY_CSV);
    assert_eq!(rows.len(), 2, "{text}");
    for (row, size) in rows.iter().zip(["64", "65536"]) {
        assert_eq!(row[0], size);
        assert!(row[1].ends_with("/bench"), "{text}");
        assert!(row[2].parse::<u64>().expect("round trips") > 0, "{text}");
        assert_eq!(row[8], "0", "lost samples on a reliable profile: {text}");
    }
}

#[test]
fn bench_latency_runs_ddsperf_beside_it() {
    watchdog("bench ddsperf", Duration::from_secs(240));
    let out = run_ok(
        convoy_on(domain::CLI_BENCH_DDSPERF)
            .args(["bench", "latency", "--sizes", "64", "--duration", "1"])
            .args(["--baseline", "ddsperf", "--delivery", "thread"]),
        BENCH_LIMIT,
    );
    // The other bench test runs the default delivery (listener); this one the reader thread.
    assert!(out.contains("delivery thread"), "{out}");
    assert!(out.contains("CycloneDDS ddsperf"), "{out}");
    let ratio_line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("64 ") && l.trim_end().ends_with('x'))
        .unwrap_or_else(|| panic!("no ratio row:\n{out}"));
    let ratio: f64 = ratio_line
        .split_whitespace()
        .last()
        .and_then(|r| r.trim_end_matches('x').parse().ok())
        .unwrap_or_else(|| panic!("bad ratio row: {ratio_line}"));
    assert!(ratio.is_finite() && ratio > 0.0, "{ratio_line}");
}

#[test]
fn bench_latency_counts_lost_pings_and_goes_on() {
    // Best effort over a link that drops 30% of datagrams: at full rate the answers' listener
    // writes each next ping, so a lost ping or answer ends that chain and the main thread must
    // count it lost and start the next one.
    watchdog("bench latency lossy", Duration::from_secs(240));
    let csv = fresh_file("test-bench", "latency-lossy.csv");
    let out = run_ok(
        convoy_on(domain::CLI_BENCH_LOSSY)
            .env("CONVOY_LINK", "loss_pct=30")
            .args(["--qos", "qos/experiments.xml::best_effort"])
            .args(["bench", "latency", "--sizes", "64", "--duration", "1"])
            .args(["--loss-timeout", "0.02", "--out"])
            .arg(&csv),
        BENCH_LIMIT,
    );
    assert!(out.contains("delivery listener"), "{out}");
    let (text, rows) = read_csv(&csv, LATENCY_CSV);
    assert_eq!(rows.len(), 1, "{text}");
    let round_trips: u64 = rows[0][2].parse().expect("round trips");
    let lost: u64 = rows[0][8].parse().expect("lost");
    // Half the round trips lose a datagram; each costs the 20 ms loss timeout.
    assert!(lost >= 3, "a 30% lossy link lost no pings: {text}");
    assert!(round_trips >= 5, "pinging stopped after a loss: {text}");
}

#[test]
fn a_missing_pong_side_is_reported_not_hung() {
    // `--role ping` with nobody answering must fail with a clear message in bounded time.
    watchdog("ping without pong", Duration::from_secs(120));
    let mut cmd = convoy_on(domain::CLI_PING_ALONE);
    cmd.args(["bench", "latency", "--role", "ping", "--sizes", "64"]);
    cmd.args(["--duration", "0.2", "--match-timeout", "2"]);
    let err = run_fails(&mut cmd, Duration::from_secs(90));
    assert!(err.contains("matched"), "{err}");
}

#[test]
fn assignments_plan_places_a_scenarios_sensors_offline() {
    let plan = || {
        let mut cmd = convoy();
        cmd.args(["assignments", "--plan", "launch/scenarios/two_cars.toml"]);
        cmd
    };
    let out = run_ok(
        plan().args(["--nodes", "main=1.0,c1=1.0,c2=0.5", "--json"]),
        LIMIT,
    );
    let list: Vec<serde_json::Value> = serde_json::from_str(out.trim()).expect("a JSON list");
    let node_of = |sensor: &str| {
        list.iter()
            .find(|p| p["sensor"] == sensor)
            .and_then(|p| p["node"].as_str())
            .map(String::from)
    };
    // Load / capacity, the main starting at 0.15, heaviest first: main_only imu -> main
    // (0.25); client_only top_lidar (1.0) -> c1 (c2 at capacity 0.5 would be 2.0); ego's
    // front_camera (0.3) -> main (0.55, vs c2 0.6, c1 1.3); ego's roof_lidar (0.3) -> c2 (0.6,
    // vs main 0.85, c1 1.3); radar (0.2) -> main (0.75, vs c2 1.0, c1 1.2); gnss (0.05) -> c2
    // (0.7, vs main 0.8, c1 1.05).
    for (sensor, node) in [
        ("imu", "main"),
        ("top_lidar", "c1"),
        ("front_camera", "main"),
        ("roof_lidar", "c2"),
        ("front_radar", "main"),
        ("gnss", "c2"),
    ] {
        assert_eq!(node_of(sensor).as_deref(), Some(node), "{out}");
    }

    let err = run_fails(plan().args(["--nodes", "main=x"]), LIMIT);
    assert!(err.contains("capacity 'x' is not a number"), "{err}");
}

#[test]
fn bench_sensors_measures_every_kind_end_to_end_and_writes_csv() {
    watchdog("bench sensors", Duration::from_secs(240));
    let csv = fresh_file("test-bench", "sensors.csv");
    run_ok(
        convoy_on(domain::CLI_BENCH_SENSORS)
            .args(["bench", "sensors", "--agents", "2", "--frames", "200"])
            .args(["--camera", "64x48", "--sensor-nodes", "1", "--out"])
            .arg(&csv),
        BENCH_LIMIT,
    );
    let header = "sensor,config,sensor_nodes,samples_per_s,points_per_s,p50_ms,p99_ms";
    // Read by Python's csv module: the camera's config has a comma inside, which must stay in
    // its one column (quoted) rather than shift the columns after it.
    let (text, rows) = read_csv(&csv, header);
    let kinds: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        kinds,
        ["camera", "imu", "gnss", "odometry", "radar"],
        "{text}"
    );
    assert_eq!(rows[0][1], "64x48, 2 agents", "{text}");
    assert!(text.contains("camera,\"64x48, 2 agents\",1,"), "{text}");
    assert_eq!(rows[1][1], "2 agents @100 Hz", "{text}");
    for row in &rows {
        assert_eq!(row[2], "1", "{text}");
        let per_s: f64 = row[3].parse().expect("samples/s");
        let p50: f64 = row[5].parse().expect("p50");
        assert!(per_s > 0.0 && p50 > 0.0, "{text}");
    }
    // Beside it, where the sensor node's time went: every stage of the camera's images and of
    // its frames, from its NodeStatus counters.
    let stages_csv = csv.with_file_name("sensors_stages.csv");
    let header = "config,sensor_nodes,node,scope,stage,count,p50_ms,p99_ms,mean_ms,total_s";
    let (text, rows) = read_csv(&stages_csv, header);
    let stages_of = |config: &str| -> Vec<String> {
        rows.iter()
            .filter(|r| r[0] == config)
            .map(|r| format!("{} {}", r[3], r[4]))
            .collect()
    };
    let frame = ["states", "dispatch", "images", "frame", "barrier"].map(|s| format!("frame {s}"));
    let camera =
        ["submit", "queue", "gpu", "map", "convert", "publish"].map(|s| format!("64x48 {s}"));
    let both: Vec<String> = camera.iter().chain(&frame).cloned().collect();
    assert_eq!(stages_of("64x48, 2 agents"), both, "{text}");
    assert_eq!(stages_of("2 agents @100 Hz"), frame, "{text}");
    for row in &rows {
        assert_eq!(
            (row[1].as_str(), row[2].as_str()),
            ("1", "sensor/main"),
            "{text}"
        );
        // Two cameras, or the frames, of 200 (the first may come before the bench's reader).
        let count: u64 = row[5].parse().expect("count");
        let p50: f64 = row[6].parse().expect("p50");
        let p99: f64 = row[7].parse().expect("p99");
        assert!(count >= 150 && p50 >= 0.0 && p99 >= p50, "{text}");
    }
}

/// A QoS file with a profile whose writers and readers never match each other (BEST_EFFORT
/// writers, RELIABLE readers) loads, with a warning naming file:line and the profile, as other
/// DDS implementations load it. A run that uses such a profile only for writers goes ahead (a
/// plain run writes the sensor topics, and reads none); a run that uses it for both ends (every
/// run reads the agents' states) stops at once with file:line, the profile and the topic.
#[test]
fn a_profile_whose_sides_cannot_match_serves_writers_and_stops_a_run_that_reads_it() {
    watchdog("one-sided QoS", Duration::from_secs(300));
    let dir = fresh_dir("test-cli", "one_sided_qos");
    let scenario = "launch/scenarios/two_cars.toml";

    let (sensor, line) = one_sided_qos(&dir, "sensor_one_sided.xml", "sensor");
    let warning = format!("{}:{line}: profile 'sensor'", sensor.display());
    let (ok, out, err) = run_with_timeout(convoy().args(["qos", "show"]).arg(&sensor), LIMIT);
    assert!(ok, "qos show refused the file:\n{out}\n{err}");
    assert!(err.contains(&warning), "no warning '{warning}':\n{err}");
    let (ok, out, err) = run_with_timeout(
        convoy_run(domain::QOS_ONE_SIDED, scenario)
            .args(["--frames", "20", "--qos"])
            .arg(&sensor),
        BENCH_LIMIT,
    );
    assert!(
        ok,
        "a run writing the sensor topics only failed:\n{out}\n{err}"
    );
    assert!(out.contains("done: 20 frames"), "{out}");
    assert!(
        format!("{out}{err}").contains(&warning),
        "no warning '{warning}':\n{out}\n{err}"
    );
    wait_nodes_gone(domain::QOS_ONE_SIDED, LIMIT);

    let (state, line) = one_sided_qos(&dir, "state_one_sided.xml", "state");
    let (ok, out, err) = run_with_timeout(
        convoy_run(domain::QOS_ONE_SIDED, scenario)
            .args(["--frames", "20", "--qos"])
            .arg(&state),
        BENCH_LIMIT,
    );
    assert!(
        !ok,
        "a run reading states it writes went ahead:\n{out}\n{err}"
    );
    let expected = format!(
        "{}:{line}: profile 'state' is used for both the writers and the readers of topic \
         'convoy/agent/",
        state.display()
    );
    let all = format!("{out}\n{err}");
    assert!(all.contains(&expected), "no '{expected}' in:\n{all}");
    assert!(
        all.contains("reliability (writer BEST_EFFORT, reader RELIABLE"),
        "{all}"
    );
    wait_nodes_gone(domain::QOS_ONE_SIDED, LIMIT);
}
