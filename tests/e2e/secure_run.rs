//! `convoy run --secure`: the launcher makes the run's certificates, every node joins with its
//! own identity, the run drives as an unsecured one does (same states, agents grouped in one
//! process or not), a user's tool reaches it with the run's tool identity while an outsider on
//! the same domain reads nothing and steers nothing, and no key is left behind.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use convoy_tests::files::{
    assert_same_states, file_mode, fresh_dir, fresh_file, read_state_log, write_file,
};
use convoy_tests::garbage::{domain_targets, replay_domain, send_garbage};
use convoy_tests::process::run_with_timeout;
use convoy_tests::{
    convoy_on, convoy_run, domain, repo_root, take_turn, wait_for_line, watchdog, ChildGuard,
};

const LIMIT: Duration = Duration::from_secs(120);

fn head_on() -> PathBuf {
    repo_root().join("launch/scenarios/head_on.toml")
}

/// The run's security folder and the tool identity's folder, from the launcher's `secured:`
/// line.
fn secured_paths(line: &str) -> (PathBuf, PathBuf) {
    let word_after = |marker: &str| -> PathBuf {
        let rest = line
            .split(marker)
            .nth(1)
            .unwrap_or_else(|| panic!("no '{marker}' in: {line}"));
        PathBuf::from(rest.split_whitespace().next().unwrap_or_default())
    };
    (word_after("identities in "), word_after("CONVOY_SECURITY="))
}

/// Runs head_on.toml for 300 frames on domain `d` with `extra` options, logging its states to
/// a fresh `log_name`; fails the test if the run fails. Returns the log.
fn head_on_states(d: u32, log_name: &str, extra: &[&str]) -> PathBuf {
    let log = fresh_file("secure_run", log_name);
    let (ok, out, err) = run_with_timeout(
        convoy_run(d, head_on())
            .args(extra)
            .args(["--frames", "300", "--state-log"])
            .arg(&log),
        LIMIT,
    );
    assert!(ok, "head_on {extra:?} failed:\n{out}\n{err}");
    log
}

#[test]
fn a_secured_run_gives_the_states_of_an_unsecured_one_and_leaves_no_key_behind() {
    watchdog("secured run", Duration::from_secs(300));
    let _turn = take_turn();
    let d = domain::SECURITY_RUN;
    let open_log = head_on_states(d, "open.jsonl", &[]);
    for grouping in ["1", "2"] {
        let secured_log = fresh_file("secure_run", &format!("secured_{grouping}.jsonl"));
        let (ok, out, err) = run_with_timeout(
            convoy_run(d, head_on())
                .args(["--secure", "--frames", "300"])
                .args(["--agents-per-process", grouping, "--state-log"])
                .arg(&secured_log),
            LIMIT,
        );
        assert!(
            ok,
            "the secured run ({grouping} a process) failed:\n{out}\n{err}"
        );
        let line = out
            .lines()
            .find(|l| l.starts_with("secured:"))
            .unwrap_or_else(|| panic!("no 'secured:' line:\n{out}"));
        let (dir, _) = secured_paths(line);
        assert!(
            !dir.exists(),
            "{} is left after the run: it holds the run's keys",
            dir.display()
        );
        // The two cars crash into each other: each agent's physics needs the other's states,
        // decrypted, every frame, for the run to repeat the unsecured one.
        assert_same_states(
            &read_state_log(&open_log),
            &read_state_log(&secured_log),
            &format!("secured run, {grouping} agent(s) a process"),
        );
    }
}

#[test]
fn the_run_tool_identity_reaches_a_secured_run_and_an_outsider_reads_and_steers_nothing() {
    watchdog("secured run, live", Duration::from_secs(300));
    let _turn = take_turn();
    let d = domain::SECURITY_RUN_LIVE;
    let (mut run, lines) = ChildGuard::spawn_with_stdout(
        "secured run",
        convoy_run(d, head_on())
            .args(["--secure", "--frames", "100000000", "--mode", "async"])
            .stderr(Stdio::null()),
    );
    let line = wait_for_line(&lines, LIMIT, "the secured: line", |l| {
        l.starts_with("secured:")
    });
    let (dir, tool) = secured_paths(&line);
    assert_eq!(file_mode(&dir), 0o700, "{}", dir.display());
    assert_eq!(file_mode(&tool.join("key.pem")), 0o600);
    // A `convoy` command on the run's domain with the security folder `enclave`, or none.
    let command_as = |enclave: Option<&Path>, args: &[&str]| {
        let mut cmd = convoy_on(d);
        match enclave {
            Some(dir) => cmd.env("CONVOY_SECURITY", dir),
            None => cmd.env_remove("CONVOY_SECURITY"),
        };
        run_with_timeout(cmd.args(args), LIMIT)
    };
    let tool_command = |args: &[&str]| command_as(Some(&tool), args);
    let outsider_command = |args: &[&str]| command_as(None, args);
    // With the run's tool identity: the agents' states, decrypted.
    let (ok, out, err) = tool_command(&[
        "topic",
        "echo",
        "convoy/agent/a/state",
        "-n",
        "3",
        "--timeout",
        "60",
    ]);
    assert!(ok, "the tool identity read no state:\n{out}\n{err}");
    assert!(out.contains("agent_id"), "{out}");
    // Without it: nothing is read, and a world command is answered by no one and moves nothing.
    let (_, out, err) = outsider_command(&[
        "topic",
        "echo",
        "convoy/agent/a/state",
        "-n",
        "1",
        "--timeout",
        "5",
    ]);
    assert!(
        !out.contains("agent_id"),
        "an outsider read a secured state:\n{out}\n{err}"
    );
    let (ok, out, err) =
        outsider_command(&["world", "--timeout", "5", "teleport", "a", "500", "500"]);
    assert!(!ok, "an outsider's teleport was answered:\n{out}\n{err}");
    let (ok, out, err) = tool_command(&["world", "--timeout", "30", "state", "a"]);
    assert!(ok, "the tool identity's world state failed:\n{out}\n{err}");
    assert!(
        !out.contains("500."),
        "the outsider's teleport moved agent a:\n{out}"
    );
    // The run's own coordinator identity, used for what its grant lacks (writing bench
    // traffic, as a stolen key would be used for anything): the writer is refused.
    let (ok, out, err) = command_as(
        Some(&dir.join("enclaves/coordinator")),
        &["bench", "latency", "--role", "pong"],
    );
    assert!(
        !ok,
        "the coordinator's identity wrote bench traffic:\n{out}\n{err}"
    );
    assert!(
        err.contains("Not allowed to create a DataWriter to topic convoy/bench/pong"),
        "{err}"
    );
    // With another run's certificates (a CA of its own, the same domain and names): nothing.
    let other = fresh_dir("secure_run", "other_run").join("run");
    let (ok, out, err) = run_with_timeout(
        convoy_on(d)
            .args(["security", "init"])
            .arg(&other)
            .args(["--domain", &d.to_string(), "--scenario"])
            .arg(head_on())
            .args(["--node", "cli"]),
        LIMIT,
    );
    assert!(ok, "{out}\n{err}");
    let (_, out, err) = command_as(
        Some(&other.join("enclaves/cli")),
        &[
            "topic",
            "echo",
            "convoy/agent/a/state",
            "-n",
            "1",
            "--timeout",
            "5",
        ],
    );
    assert!(
        !out.contains("agent_id"),
        "another run's certificates read a state:\n{out}\n{err}"
    );
    // Stopped by the user: the folder goes with the run.
    let status = run.interrupt(Duration::from_secs(30));
    assert!(status.is_some(), "the secured run did not stop on SIGINT");
    assert!(
        !dir.exists(),
        "{} is left after the run was interrupted",
        dir.display()
    );
}

/// Sixteen cars side by side, each driving its own straight lane: no sensors, so the run is
/// only the lockstep of 18 secured participants (or 4, grouped).
fn sixteen_lanes(dir: &Path) -> PathBuf {
    let mut text = String::from(
        "[scenario]\nname = \"sixteen_lanes\"\nseed = 7\ndt = 0.01\nmode = \"sync\"\nstep = \"fixed\"\n",
    );
    for i in 0..16 {
        let y = 5.0 * f64::from(i);
        text.push_str(&format!(
            "\n[[agents]]\nid = \"car_{i:02}\"\nstart = {{ x = 0.0, y = {y:.1}, yaw = 0.0 }}\n\
             controller = {{ kind = \"waypoints\", speed = 8.0, path = [[0.0, {y:.1}], [400.0, {y:.1}]] }}\n"
        ));
    }
    write_file(dir, "sixteen_lanes.toml", &text)
}

#[test]
fn sixteen_secured_agents_come_up_and_repeat_the_unsecured_run_grouped_or_not() {
    watchdog("sixteen secured agents", Duration::from_secs(600));
    let _turn = take_turn();
    let d = domain::SECURITY_RUN_SIXTEEN;
    let dir = fresh_dir("secure_run", "sixteen");
    let scenario = sixteen_lanes(&dir);
    let open_log = dir.join("open.jsonl");
    let (ok, out, err) = run_with_timeout(
        convoy_run(d, &scenario)
            .args([
                "--frames",
                "200",
                "--agents-per-process",
                "8",
                "--state-log",
            ])
            .arg(&open_log),
        LIMIT,
    );
    assert!(ok, "the unsecured run failed:\n{out}\n{err}");
    // 17 participants authenticating pairwise, and 2 agent processes whose 8 agents create
    // their endpoints on one participant at once: the two shapes that hung rustdds's
    // security (vendor/rustdds/CHANGES.md, changes 62 and 63).
    for grouping in ["1", "8"] {
        let secured_log = dir.join(format!("secured_{grouping}.jsonl"));
        let (ok, out, err) = run_with_timeout(
            convoy_run(d, &scenario)
                .args(["--secure", "--frames", "200"])
                .args(["--agents-per-process", grouping, "--state-log"])
                .arg(&secured_log),
            Duration::from_secs(240),
        );
        assert!(
            ok,
            "the secured run ({grouping} a process) failed:\n{out}\n{err}"
        );
        assert_same_states(
            &read_state_log(&open_log),
            &read_state_log(&secured_log),
            &format!("16 secured agents, {grouping} a process"),
        );
    }
}

#[test]
fn garbage_and_replayed_datagrams_leave_a_secured_run_running_and_its_states_unchanged() {
    watchdog(
        "secured run under hostile traffic",
        Duration::from_secs(300),
    );
    let _turn = take_turn();
    let d = domain::SECURITY_RUN_HOSTILE;
    let open_log = head_on_states(d, "hostile_open.jsonl", &[]);
    // While the secured run starts and runs: noise and RTPS-shaped garbage to every port of
    // the domain, and every datagram the run multicasts (its announcements, handshakes,
    // encrypted states) recorded and sent back, again and again, to every port.
    let stop = Arc::new(AtomicBool::new(false));
    let ports = domain_targets(d, 24).iter().map(|t| t.port()).collect();
    let garbage = send_garbage(d, ports, Arc::clone(&stop));
    let replayed = replay_domain(d, Arc::clone(&stop));
    let secured_log = fresh_file("secure_run", "hostile_secured.jsonl");
    let (ok, out, err) = run_with_timeout(
        convoy_run(d, head_on())
            .args(["--secure", "--frames", "300", "--state-log"])
            .arg(&secured_log),
        LIMIT,
    );
    stop.store(true, Ordering::Relaxed);
    let garbage_sent = garbage.join().expect("garbage thread");
    let replays_sent = replayed.join().expect("replay thread");
    assert!(
        ok,
        "the secured run failed under hostile traffic:\n{out}\n{err}"
    );
    assert!(
        garbage_sent > 100,
        "only {garbage_sent} garbage datagrams sent"
    );
    assert!(replays_sent > 100, "only {replays_sent} datagrams replayed");
    assert!(
        !out.contains("panicked") && !err.contains("panicked"),
        "a node panicked:\n{out}\n{err}"
    );
    assert_same_states(
        &read_state_log(&open_log),
        &read_state_log(&secured_log),
        "secured run under garbage and replays",
    );
}
