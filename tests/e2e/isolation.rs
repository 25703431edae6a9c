//! Runs kept apart: every run has a run id and lives in its own DDS partition, so two runs on
//! one host and domain never see each other's samples; a second coordinator of the same run id
//! refuses to start; `--domain auto` picks a domain no participant here uses.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use convoy_tests::files::{assert_same_states, fresh_dir, read_state_log};
use convoy_tests::{
    convoy, convoy_run, domain, find_node_process, run_scenario, run_with_timeout, watchdog,
    ChildGuard,
};

const LIMIT: Duration = Duration::from_secs(180);
const FRAMES: u64 = 60;

fn line_count(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .count()
}

/// Two demos started at once on one domain (as a new user would, twice): each logs exactly
/// what a lone run logs, one line per agent per frame.
#[test]
fn two_runs_on_one_domain_each_log_a_lone_run() {
    watchdog("two runs", Duration::from_secs(400));
    let dir = fresh_dir("test-isolation", "two_runs");
    let frames = FRAMES.to_string();
    let lone = dir.join("lone.jsonl");
    run_scenario(
        domain::ISOLATION_LONE,
        "two_cars",
        &["--frames", &frames],
        &lone,
        LIMIT,
    );
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    let mut first = ChildGuard::spawn(
        "first run",
        convoy_run(domain::ISOLATION_SHARED, "two_cars")
            .args(["--frames", &frames, "--state-log"])
            .arg(&a)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let (ok, out, err) = run_with_timeout(
        convoy_run(domain::ISOLATION_SHARED, "two_cars")
            .args(["--frames", &frames, "--state-log"])
            .arg(&b),
        LIMIT,
    );
    assert!(ok, "second run failed:\n{out}\n{err}");
    let mut status = None;
    convoy_tests::wait_until("the first run's end", LIMIT, || {
        status = first.child.try_wait().ok().flatten();
        status.is_some()
    });
    let status = status.expect("exit status");
    assert!(status.success(), "first run failed: {status}");
    let expected = read_state_log(&lone);
    assert_eq!(line_count(&lone), 2 * (FRAMES as usize + 1));
    for log in [&a, &b] {
        assert_eq!(
            line_count(log),
            2 * (FRAMES as usize + 1),
            "{}",
            log.display()
        );
        assert_same_states(&expected, &read_state_log(log), &log.display().to_string());
    }
}

/// A coordinator that meets another of its run id on its domain refuses to start and names
/// the other's host and process; the run already going goes on.
#[test]
fn a_second_coordinator_of_the_same_run_refuses_to_start() {
    watchdog("duplicate run id", Duration::from_secs(300));
    let d = domain::ISOLATION_DUPLICATE;
    let mut first = ChildGuard::spawn(
        "first run",
        convoy_run(d, "two_cars")
            .env("CONVOY_RUN_ID", "twice")
            .args(["--duration", "600"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    // Past its handshake: a running run, not one starting beside the second.
    let lines = first.all_lines();
    let mut seen = String::new();
    while !seen.contains("every agent holds every peer's initial state") {
        match lines.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => seen += &(line + "\n"),
            Err(_) => panic!("the first run did not get past frame 0:\n{seen}"),
        }
    }
    let pid = find_any_coordinator(d).expect("coordinator pid");
    let (ok, out, err) = run_with_timeout(
        convoy_run(d, "two_cars")
            .env("CONVOY_RUN_ID", "twice")
            .args(["--frames", "20"]),
        LIMIT,
    );
    let all = format!("{out}\n{err}");
    assert!(!ok, "the second run started:\n{all}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    assert!(
        all.contains("another coordinator of run twice is live on this domain")
            && all.contains(&format!("on host {}, process {pid}", host.trim())),
        "{all}"
    );
    assert!(
        find_any_coordinator(d) == Some(pid),
        "the first run's coordinator is gone"
    );
    first.stop(Duration::from_secs(10));
}

fn find_any_coordinator(domain: u32) -> Option<i32> {
    find_node_process(
        domain,
        "convoy-coordinator",
        "--domain",
        &domain.to_string(),
    )
}

/// `--domain auto` passes over a domain whose first participant's port is taken here.
#[test]
fn domain_auto_picks_a_domain_nobody_here_uses() {
    // Domain 100's first participant's discovery port: taken, as a participant would.
    let held = std::net::UdpSocket::bind(("0.0.0.0", 7400 + 250 * 100 + 10));
    let (ok, out, err) = run_with_timeout(
        convoy()
            .args(["--domain", "auto", "qos", "show"])
            .arg(convoy_tests::repo_root().join("qos/convoy.xml")),
        Duration::from_secs(30),
    );
    assert!(ok, "{out}\n{err}");
    let chosen: u32 = err
        .lines()
        .find_map(|l| l.strip_prefix("domain auto: "))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no chosen domain:\n{err}"));
    if held.is_ok() {
        assert_ne!(chosen, 100, "{err}");
    }
    assert!((1..=232).contains(&chosen), "{err}");
}
