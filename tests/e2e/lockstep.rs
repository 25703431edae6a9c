//! Agents and coordinator as separate processes: lockstep determinism, peer vs relay, one
//! process per agent vs several agents a process, the state log's one line per agent per frame, async mode, late and dead agents, a coordinator
//! stopped for longer than the lease, a stopped KEEP_ALL reader of a state, crashes felt by both
//! sides, world commands.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use convoy_tests::files::{
    assert_same_states, fresh_file, lane_agents, logged_frames, read_state_log,
};
use convoy_tests::{
    convoy_on, convoy_run, domain, lines_until, run_with_timeout, wait_for_line, wait_nodes_gone,
    wait_until, watchdog, workspace_bin, ChildGuard,
};

const RUN_LIMIT: Duration = Duration::from_secs(240);

fn scratch(name: &str) -> PathBuf {
    fresh_file("test-lockstep", name)
}

/// `convoy run` to completion within RUN_LIMIT; returns its output.
fn run_scenario(domain: u32, scenario: &str, extra: &[&str], log: &Path) -> String {
    convoy_tests::run_scenario(domain, scenario, extra, log, RUN_LIMIT)
}

#[test]
fn lockstep_runs_are_bit_identical_and_peer_equals_relay() {
    watchdog("determinism", Duration::from_secs(600));
    let frames = "300";
    let scenario = "launch/scenarios/sixteen_cars.toml";
    let a = scratch("peer_a.jsonl");
    let b = scratch("peer_b.jsonl");
    let r = scratch("relay.jsonl");
    let out = run_scenario(domain::LOCKSTEP_PEER_A, scenario, &["--frames", frames], &a);
    assert!(out.contains("done: 300 frames"), "{out}");
    run_scenario(domain::LOCKSTEP_PEER_B, scenario, &["--frames", frames], &b);
    run_scenario(
        domain::LOCKSTEP_RELAY,
        scenario,
        &["--frames", frames, "--exchange", "relay"],
        &r,
    );
    let a = read_state_log(&a);
    let b = read_state_log(&b);
    let r = read_state_log(&r);
    // Every agent at every frame 0..=300, as received over DDS.
    assert_eq!(a.len(), 16 * 301, "states missing from the first run's log");
    let moved = a
        .iter()
        .filter(|((f, _), _)| *f == 300)
        .zip(a.iter().filter(|((f, _), _)| *f == 0))
        .all(|((_, end), (_, start))| end["position"] != start["position"]);
    assert!(moved, "cars did not move");
    assert_same_states(&a, &b, "second peer run");
    assert_same_states(&a, &r, "relay run");
}

/// Agents that share a process (and its DDS participant) step exactly as agents with a process
/// each: the same 16-car runs with 8 agents a process (peer: agents read the states of agents
/// in their own participant and in the other) and `auto` (relay: on CI's two cores two
/// processes of eight, one Tick datagram to each) log the very states of one process per agent.
#[test]
fn agents_sharing_a_process_give_the_same_states() {
    watchdog("grouped determinism", Duration::from_secs(600));
    let frames = "300";
    let scenario = "launch/scenarios/sixteen_cars.toml";
    let alone = scratch("alone.jsonl");
    let peer = scratch("grouped_peer.jsonl");
    let relay = scratch("grouped_relay.jsonl");
    run_scenario(
        domain::LOCKSTEP_GROUPED_ALONE,
        scenario,
        &["--frames", frames],
        &alone,
    );
    let out = run_scenario(
        domain::LOCKSTEP_GROUPED_PEER,
        scenario,
        &["--frames", frames, "--agents-per-process", "8"],
        &peer,
    );
    assert!(out.contains("done: 300 frames"), "{out}");
    // The launcher names each process by its agents.
    assert!(out.contains("agents/car_00..car_07"), "{out}");
    run_scenario(
        domain::LOCKSTEP_GROUPED_RELAY,
        scenario,
        &[
            "--frames",
            frames,
            "--exchange",
            "relay",
            "--agents-per-process",
            "auto",
        ],
        &relay,
    );
    let alone = read_state_log(&alone);
    assert_eq!(alone.len(), 16 * 301, "states missing from the log");
    assert_same_states(&alone, &read_state_log(&peer), "8 agents a process, peer");
    assert_same_states(
        &alone,
        &read_state_log(&relay),
        "auto agents a process, relay",
    );
}

/// A process of two agents killed outright: both leave the run after their lease, the agent in
/// a process of its own drops both zombies, and the lockstep goes on with it alone.
#[test]
fn a_killed_process_of_two_agents_leaves_the_run_with_both() {
    watchdog("grouped kill", Duration::from_secs(300));
    let scenario = three_cars("group_killed.toml");
    let d = domain::LOCKSTEP_GROUP_KILLED;
    let (coordinator, coord_lines) = start_coordinator(&scenario, d);
    let mut a = start_agent(&scenario, d, "a", &[]);
    let a_lines = a.all_lines();
    let mut pair = start_agent(&scenario, d, "b", &["--id", "c"]);
    let limit = Duration::from_secs(60);
    wait_for_line(&coord_lines, limit, "progress with three agents", |l| {
        progress_frame(l).is_some_and(|f| f > 30)
    });
    wait_for_line(&a_lines, limit, "b and c as a's zombies", |l| {
        l.contains(r#"zombies now ["b", "c"]"#)
    });
    pair.kill_now();
    let (mut b_left, mut c_left) = (false, false);
    wait_for_line(&coord_lines, limit, "b and c leaving", |l| {
        b_left |= l.contains("agent b left the run");
        c_left |= l.contains("agent c left the run");
        b_left && c_left
    });
    wait_for_line(&a_lines, limit, "a's zombies gone", |l| {
        l.contains("zombies now []")
    });
    wait_for_frames(&coord_lines, limit, 2, "frames after b and c left");
    drop(coordinator);
    drop(a);
    wait_nodes_gone(d, Duration::from_secs(10));
}

/// The agents of one process fail together: one that cannot start (an id the scenario lacks)
/// stops the others, and the process exits with an error naming it. An id given twice is
/// refused before anything starts.
#[test]
fn an_agent_that_fails_stops_the_others_of_its_process() {
    watchdog("grouped failure", Duration::from_secs(120));
    let scenario = three_cars("group_fails.toml");
    let d = domain::LOCKSTEP_GROUP_FAILS;
    let (ok, out, err) = run_with_timeout(
        node_cmd("convoy-agent", &scenario, d).args(["--id", "a", "--id", "nosuch", "--id", "b"]),
        Duration::from_secs(60),
    );
    assert!(!ok, "the process succeeded:\n{out}\n{err}");
    assert!(
        err.contains("agent nosuch:") && err.contains("no agent 'nosuch'"),
        "the failed agent is not named:\n{out}\n{err}"
    );
    assert!(
        !err.contains("agent a:") && !err.contains("agent b:"),
        "the agents stopped by it are reported as failed:\n{err}"
    );
    let (ok, _, err) = run_with_timeout(
        node_cmd("convoy-agent", &scenario, d).args(["--id", "a", "--id", "a"]),
        Duration::from_secs(60),
    );
    assert!(!ok && err.contains("agent 'a' is given twice"), "{err}");
    wait_nodes_gone(d, Duration::from_secs(10));
}

/// `--state-log` has one line per agent per frame, in either exchange. Agents write some states
/// more than once: the frame-0 state on every Tick 0 of the handshake (peer exchange: until each
/// holds every peer's, a few ticks), a state asked for again when a frame stalled. The log
/// once had a line per copy, so a peer run's log began with every agent's frame 0 repeated.
#[test]
fn the_state_log_has_one_line_per_agent_per_frame() {
    watchdog("state log lines", Duration::from_secs(300));
    let frames = 30;
    // One domain, one run after the other: each run ends with every node gone.
    for exchange in ["peer", "relay"] {
        let log = scratch(&format!("one_line_{exchange}.jsonl"));
        run_scenario(
            domain::STATE_LOG,
            "launch/scenarios/two_cars.toml",
            &["--frames", &frames.to_string(), "--exchange", exchange],
            &log,
        );
        let logged = logged_frames(&log);
        let agents: Vec<&str> = logged.keys().map(String::as_str).collect();
        assert_eq!(agents, ["car_2", "ego"], "{exchange}: agents in the log");
        for (agent, lines) in &logged {
            assert_eq!(
                lines,
                &(0..=frames).collect::<Vec<u64>>(),
                "{exchange}: {agent}'s lines, by frame"
            );
        }
    }
}

#[test]
fn async_mode_runs_at_wall_clock_pace() {
    watchdog("async", Duration::from_secs(300));
    let log = scratch("async.jsonl");
    let out = run_scenario(
        domain::LOCKSTEP_ASYNC,
        "launch/scenarios/two_cars.toml",
        &["--mode", "async", "--duration", "1.5"],
        &log,
    );
    assert!(out.contains("done: 150 frames"), "{out}");
    let states = read_state_log(&log);
    assert!(states.keys().any(|(_, a)| a == "ego") && states.keys().any(|(_, a)| a == "car_2"));
    assert!(states.len() > 20, "only {} states", states.len());
}

/// Three cars on three lanes, a short barrier timeout and lease, as `name` in the scratch
/// directory.
fn three_cars(name: &str) -> PathBuf {
    let path = scratch(name);
    let header =
        "[scenario]\nname = \"three_cars\"\ndt = 0.01\nbarrier_timeout = 0.5\nlease = 2.0\n";
    let scenario = format!("{header}{}", lane_agents(&["a", "b", "c"]));
    std::fs::write(&path, scenario).expect("write scenario");
    path
}

fn node_cmd(bin: &str, scenario: &Path, domain: u32) -> Command {
    let mut cmd = Command::new(workspace_bin(bin));
    cmd.arg(scenario)
        .args(["--domain", &domain.to_string()])
        .env("RUST_LOG", "info,rustdds=error")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The coordinator of a run of `scenario` that goes on until stopped; every line it prints.
fn start_coordinator(scenario: &Path, d: u32) -> (ChildGuard, Receiver<String>) {
    let mut cmd = node_cmd("convoy-coordinator", scenario, d);
    let mut coordinator = ChildGuard::spawn("coordinator", cmd.args(["--frames", "100000"]));
    let lines = coordinator.all_lines();
    (coordinator, lines)
}

/// Waits until the coordinator has printed `count` more frame lines: the run goes on.
fn wait_for_frames(coord_lines: &Receiver<String>, limit: Duration, count: usize, what: &str) {
    let mut frames = 0;
    wait_for_line(coord_lines, limit, what, |l| {
        frames += usize::from(l.starts_with("frame "));
        frames >= count
    });
}

/// Agent `id` of `scenario`, with further options `args`.
fn start_agent(scenario: &Path, d: u32, id: &str, args: &[&str]) -> ChildGuard {
    let mut cmd = node_cmd("convoy-agent", scenario, d);
    ChildGuard::spawn(&format!("agent {id}"), cmd.args(["--id", id]).args(args))
}

#[test]
fn a_late_agent_is_named_and_a_dead_agent_leaves_the_barrier() {
    watchdog("stall and death", Duration::from_secs(300));
    let scenario = three_cars("three_cars.toml");
    let d = domain::LOCKSTEP_STALL;
    let (coordinator, coord_lines) = start_coordinator(&scenario, d);
    let mut a = start_agent(&scenario, d, "a", &[]);
    let a_lines = a.all_lines();
    let stall = ["--stall-at-frame", "50", "--stall-seconds", "1.2"];
    let b = start_agent(&scenario, d, "b", &stall);
    let mut c = start_agent(&scenario, d, "c", &[]);

    let limit = Duration::from_secs(60);
    wait_for_line(&coord_lines, limit, "the stall report", |l| {
        l.contains("barrier: frame 50: agent/b has not finished")
    });
    wait_for_line(&coord_lines, limit, "progress after the stall", |l| {
        progress_frame(l).is_some_and(|f| f > 60)
    });

    // Kill c outright: no goodbye, its status just stops.
    c.kill_now();
    wait_for_line(&coord_lines, limit, "c leaving", |l| {
        l.contains("agent c left the run")
    });
    wait_for_line(&a_lines, limit, "c's zombie removed from a's world", |l| {
        l.contains("zombies now") && l.contains("\"b\"") && !l.contains("\"c\"")
    });
    // The run goes on without c.
    wait_for_frames(&coord_lines, limit, 2, "frames after c left");
    drop(coordinator);
    drop(a);
    drop(b);
    wait_nodes_gone(d, Duration::from_secs(10));
}

/// A state lost for good (agent b's test hook skips writing its frame-20 state) stalls the
/// frame that needs it until the barrier timeout; the coordinator then sends that frame's tick
/// again, b writes the state again, and the run goes on with the very states of a run that
/// lost nothing (issue 21). The coordinator's barrier 20 waits for it in both exchanges (an
/// agent's state is its FrameDone), and in peer the agents stepping frame 21 too.
#[test]
fn a_state_lost_for_good_is_asked_for_again_and_the_run_repeats() {
    watchdog("lost state", Duration::from_secs(300));
    let scenario = three_cars("three_cars_lost.toml");
    let scenario_arg = scenario.to_string_lossy().to_string();
    for (exchange, d, stalled) in [
        ("peer", domain::LOCKSTEP_LOST_PEER, 20),
        ("relay", domain::LOCKSTEP_LOST_RELAY, 20),
    ] {
        let quiet = scratch(&format!("lost_quiet_{exchange}.jsonl"));
        run_scenario(
            d,
            &scenario_arg,
            &["--frames", "40", "--exchange", exchange],
            &quiet,
        );
        let lossy = scratch(&format!("lost_lossy_{exchange}.jsonl"));
        let agents: Vec<ChildGuard> = ["a", "b", "c"]
            .iter()
            .map(|id| {
                let mut cmd = node_cmd("convoy-agent", &scenario, d);
                cmd.args(["--id", id, "--exchange", exchange])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                if *id == "b" {
                    cmd.args(["--drop-state-at-frame", "20"]);
                }
                ChildGuard::spawn(&format!("agent {id}"), &mut cmd)
            })
            .collect();
        let (ok, out, err) = run_with_timeout(
            node_cmd("convoy-coordinator", &scenario, d)
                .args(["--frames", "40", "--exchange", exchange, "--state-log"])
                .arg(&lossy),
            RUN_LIMIT,
        );
        drop(agents);
        assert!(
            ok,
            "{exchange}: the run with a lost state did not finish:\n{out}\n{err}"
        );
        assert!(
            out.contains(&format!("sending tick {stalled} again")),
            "{exchange}: no tick sent again for frame {stalled}:\n{out}"
        );
        let quiet = read_state_log(&quiet);
        assert_eq!(
            quiet.len(),
            3 * 41,
            "{exchange}: states missing from the quiet run"
        );
        let lost = format!("{exchange}: the run that lost a state");
        assert_same_states(&quiet, &read_state_log(&lossy), &lost);
    }
}

/// The newest frame in a coordinator progress line ("frame N  sim ...").
fn progress_frame(line: &str) -> Option<u64> {
    line.strip_prefix("frame ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A coordinator stopped (SIGSTOP) for longer than the lease, as a starved process on a loaded
/// machine is, then continued: the agents, which dropped its DDS participant meanwhile, find it
/// again, and it does not take its own stall for the agents' silence. The run goes on with all
/// three.
#[test]
fn a_coordinator_stopped_past_the_lease_goes_on_with_every_agent() {
    watchdog("coordinator stopped", Duration::from_secs(300));
    let scenario = three_cars("three_cars_stopped.toml");
    let d = domain::LOCKSTEP_COORDINATOR_STOPPED;
    let (coordinator, coord_lines) = start_coordinator(&scenario, d);
    let _agents: Vec<ChildGuard> = ["a", "b", "c"]
        .into_iter()
        .map(|id| start_agent(&scenario, d, id, &[]))
        .collect();
    let limit = Duration::from_secs(60);
    let mut paused_at = 0;
    wait_for_line(&coord_lines, limit, "frame 20", |l| {
        paused_at = progress_frame(l).unwrap_or(0);
        paused_at > 20
    });
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &coordinator.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} failed");
    };
    signal("-STOP");
    // The stimulus itself: stopped for 1.5 leases (the scenario's lease is 2 s).
    std::thread::sleep(Duration::from_secs(3));
    signal("-CONT");
    // 200 frames on, every agent still in the run, nobody declared gone.
    let lines = lines_until(&coord_lines, limit, "200 frames after the stop", |l| {
        progress_frame(l).is_some_and(|f| f > paused_at + 200)
    });
    let gone: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("left the run") || l.contains(" left ("))
        .collect();
    assert!(gone.is_empty(), "nodes declared gone: {gone:?}");
    let last = lines
        .iter()
        .rev()
        .find(|l| progress_frame(l).is_some())
        .expect("a progress line");
    assert!(last.contains("agents 3"), "{last}");
}

/// convoy's QoS library with the agent state topic KEEP_ALL (at most 32 unacknowledged
/// samples): a reader of it is promised every sample, so a writer must wait for it.
fn keep_all_state_qos() -> PathBuf {
    let builtin = std::fs::read_to_string(convoy_tests::repo_root().join("qos/convoy.xml"))
        .expect("read qos/convoy.xml");
    let keep_last = "<qos_profile name=\"state\" base_name=\"reliable_stream\">\n      \
                     <topic_qos>\n        \
                     <history><kind>KEEP_LAST_HISTORY_QOS</kind><depth>16</depth></history>";
    let keep_all = "<qos_profile name=\"state\" base_name=\"reliable_stream\">\n      \
                    <topic_qos>\n        \
                    <history><kind>KEEP_ALL_HISTORY_QOS</kind></history>\n        \
                    <resource_limits><max_samples>32</max_samples>\
                    <max_samples_per_instance>32</max_samples_per_instance></resource_limits>";
    assert!(
        builtin.contains(keep_last),
        "qos/convoy.xml's state profile changed: update this test's copy"
    );
    let path = scratch("keep_all_state.xml");
    std::fs::write(&path, builtin.replace(keep_last, keep_all)).expect("write the QoS file");
    path
}

/// A reader of agent a's state stopped (SIGSTOP) while the state topic is KEEP_ALL: the QoS
/// promises that reader every sample, so a's writes wait, and the lockstep with them. a steps
/// in its DDS receive thread, which must never wait: the write waits in a's outbox instead,
/// and a's own thread goes on beating its status, so a is not taken for dead however long the
/// reader stays stopped. Once the reader runs again, the run completes with every agent and
/// the very states of a run without that reader.
#[test]
fn a_stopped_keep_all_reader_holds_the_lockstep_not_the_agent() {
    watchdog("stopped KEEP_ALL reader", Duration::from_secs(300));
    let scenario = three_cars("three_cars_keep_all.toml");
    let scenario_arg = scenario.to_string_lossy().to_string();
    let qos = keep_all_state_qos();
    let d = domain::LOCKSTEP_KEEP_ALL_READER_STOPPED;
    let frames = "1000";
    let run = ["--frames", frames, "--exchange", "relay"];

    let quiet = scratch("keep_all_quiet.jsonl");
    let (ok, out, err) = run_with_timeout(
        convoy_run(d, &scenario_arg)
            .env("CONVOY_QOS", &qos)
            .args(run)
            .arg("--state-log")
            .arg(&quiet),
        RUN_LIMIT,
    );
    assert!(ok, "the quiet run failed:\n{out}\n{err}");
    wait_nodes_gone(d, Duration::from_secs(10));

    let limit = Duration::from_secs(60);
    let mut echo = ChildGuard::spawn(
        "topic echo",
        convoy_on(d)
            .env("CONVOY_QOS", &qos)
            .args(["topic", "echo", "convoy/agent/a/state"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let echo_lines = echo.all_lines();
    let mut agents: Vec<ChildGuard> = ["a", "b", "c"]
        .into_iter()
        .map(|id| {
            let mut cmd = node_cmd("convoy-agent", &scenario, d);
            cmd.env("CONVOY_QOS", &qos)
                .args(["--id", id, "--exchange", "relay"]);
            ChildGuard::spawn(&format!("agent {id}"), &mut cmd)
        })
        .collect();
    let a_lines = agents[0].all_lines();
    // The run takes about a second: it starts only once discovery shows a's state writer and
    // the echo's reader (the echo's announcement reached the network, and a with it), or a
    // slow echo could match only after the run's end and see no state at all.
    wait_until(
        "a's state writer and the echo's reader discovered",
        limit,
        || {
            let (_, out, _) = run_with_timeout(
                convoy_on(d)
                    .env("CONVOY_QOS", &qos)
                    .args(["topic", "list", "--wait", "1"]),
                Duration::from_secs(30),
            );
            out.lines().any(|l| {
                l.starts_with("convoy/agent/a/state ") && l.contains(" 1 writer, 1 reader")
            })
        },
    );
    let stalled = scratch("keep_all_stalled.jsonl");
    let mut cmd = node_cmd("convoy-coordinator", &scenario, d);
    cmd.env("CONVOY_QOS", &qos)
        .args(run)
        .arg("--state-log")
        .arg(&stalled);
    let mut coordinator = ChildGuard::spawn("coordinator", &mut cmd);
    let coord_lines = coordinator.all_lines();

    wait_for_line(&echo_lines, limit, "a state of a at the echo", |_| true);
    let signal = |sig: libc::c_int| {
        // SAFETY: kill(2) on the echo's pid, which this test spawned and still holds.
        let sent = unsafe { libc::kill(echo.child.id() as libc::pid_t, sig) };
        assert_eq!(sent, 0, "kill({sig}) of the echo failed");
    };
    signal(libc::SIGSTOP);
    wait_for_line(&a_lines, limit, "a's write waiting in its outbox", |l| {
        l.contains("convoy/agent/a/state: a reader does not acknowledge")
    });
    wait_for_line(&coord_lines, limit, "the lockstep waiting for a", |l| {
        l.contains("still waiting for agent/a")
    });
    // The stimulus: the reader stays stopped for longer than the lease (2 s), so an agent
    // whose status stopped with its writes would be declared gone.
    std::thread::sleep(Duration::from_secs(3));
    signal(libc::SIGCONT);
    let lines = lines_until(&coord_lines, RUN_LIMIT, "the run's end", |l| {
        l.starts_with(&format!("done: {frames} frames"))
    });
    let gone: Vec<&String> = lines.iter().filter(|l| l.contains("left")).collect();
    assert!(gone.is_empty(), "nodes declared gone: {gone:?}");
    assert!(
        coordinator
            .child
            .wait()
            .is_ok_and(|status| status.success()),
        "the coordinator failed"
    );
    drop(agents.drain(..));
    drop(echo);
    wait_nodes_gone(d, Duration::from_secs(10));

    let quiet = read_state_log(&quiet);
    assert_eq!(quiet.len(), 3 * 1001, "states missing from the quiet run");
    assert_same_states(
        &quiet,
        &read_state_log(&stalled),
        "the run with a stopped reader",
    );
}

#[test]
fn a_head_on_crash_is_felt_by_both_agents() {
    watchdog("crash", Duration::from_secs(300));
    let log = scratch("head_on.jsonl");
    run_scenario(
        domain::LOCKSTEP_CRASH,
        "launch/scenarios/head_on.toml",
        &["--duration", "6"],
        &log,
    );
    let states = read_state_log(&log);
    let agents: Vec<String> = {
        let mut a: Vec<String> = states.keys().map(|(_, a)| a.clone()).collect();
        a.sort();
        a.dedup();
        a
    };
    assert_eq!(agents.len(), 2, "{agents:?}");
    let x = |v: &serde_json::Value| v["position"][0].as_f64().expect("x");
    let vx = |v: &serde_json::Value| v["linear_velocity"][0].as_f64().expect("vx");
    let last = states.keys().map(|(f, _)| *f).max().expect("frames");
    let mut min_gap = f64::MAX;
    let mut speed_before = [0.0f64; 2];
    let mut reversed = [false; 2];
    for frame in 0..=last {
        let (Some(s0), Some(s1)) = (
            states.get(&(frame, agents[0].clone())),
            states.get(&(frame, agents[1].clone())),
        ) else {
            continue;
        };
        min_gap = min_gap.min((x(s0) - x(s1)).abs());
        for (i, s) in [s0, s1].into_iter().enumerate() {
            let v = vx(s).abs();
            if frame < 50 || v > speed_before[i] {
                speed_before[i] = speed_before[i].max(v);
            }
        }
        // Each heads toward the other; after the impact each moves away or stands.
        if frame > 10 {
            let toward0 = vx(s0) * (x(s1) - x(s0)).signum();
            let toward1 = vx(s1) * (x(s0) - x(s1)).signum();
            reversed[0] |= toward0 < 0.5;
            reversed[1] |= toward1 < 0.5;
        }
    }
    // Half lengths 2.25 + 2.25: the boxes touch at 4.5 m; they never pass through.
    assert!(
        min_gap > 4.0,
        "the cars interpenetrated: closest {min_gap:.2} m"
    );
    assert!(
        speed_before.iter().all(|v| *v > 3.0),
        "they never drove: {speed_before:?}"
    );
    assert!(
        reversed.iter().all(|r| *r),
        "a car did not feel the crash: {reversed:?}"
    );
}

#[test]
fn world_commands_answer_with_request_ids() {
    watchdog("world commands", Duration::from_secs(300));
    let d = domain::WORLD_COMMANDS;
    let (mut run, lines) = ChildGuard::spawn_with_stdout(
        "convoy run",
        convoy_run(d, "launch/scenarios/two_cars.toml").args(["--duration", "100000"]),
    );
    wait_for_line(&lines, Duration::from_secs(60), "the first frames", |l| {
        l.contains("] frame ")
    });
    let world = |args: &[&str]| {
        run_with_timeout(
            convoy_on(d).args(["world", "--timeout", "20"]).args(args),
            Duration::from_secs(60),
        )
    };
    let (ok, out, err) = world(&["teleport", "ego", "10", "-3", "--yaw", "1.0"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("pending: forwarded to agent/ego") || out.contains("success"),
        "{out}"
    );
    assert!(out.contains("success: ego teleported"), "{out}");

    for (args, expected) in [
        (&["teleport", "nope", "1", "2"][..], "unknown agent 'nope'"),
        (&["teleport", "ego", "NaN", "0"][..], "non-finite"),
        (&["teleport", "ego", "100000", "0"][..], "off the map"),
        (&["control", "ego", "--throttle", "2"][..], "out of range"),
    ] {
        let (ok, out, err) = world(args);
        assert!(!ok, "world {args:?} succeeded: {out}");
        assert!(err.contains(expected), "world {args:?}: {err}");
    }

    let (ok, out, err) = world(&["pause"]);
    assert!(ok && out.contains("success: paused at frame"), "{out}{err}");
    let (ok, out, err) = world(&["state", "ego"]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("ego frame"), "{out}");
    let (ok, out, err) = world(&["resume"]);
    assert!(ok && out.contains("success: resumed"), "{out}{err}");
    run.stop(Duration::from_secs(10));
    wait_nodes_gone(d, Duration::from_secs(10));
}
