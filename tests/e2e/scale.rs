//! Graphs of many endpoints. Alone in its test binary: cargo runs test binaries one after the
//! other, so these start while no other test loads the machine's two cores (start-up with
//! thousands of endpoints under full load is an open problem; see docs/TRANSPORT.md,
//! "Thousands of endpoints at once").

use std::time::Duration;

use convoy_tests::{convoy_on, domain, run_with_timeout, watchdog};

/// 64 agents reading each other's states in two processes of 32: each process creates over
/// two thousand readers at start, faster than its DDS event loop and discovery take them in.
/// Creating a reader once failed on the full queue to the event loop, and an endpoint whose
/// announcement did not fit discovery's queue was never matched, so the run never started.
#[test]
fn sixty_four_agents_in_two_processes_start_and_step() {
    watchdog("64 peer", Duration::from_secs(300));
    let (ok, out, err) = run_with_timeout(
        convoy_on(domain::LOCKSTEP_SIXTY_FOUR_PEER).args([
            "bench",
            "lockstep",
            "--agents",
            "64",
            "--exchange",
            "peer",
            "--agents-per-process",
            "32",
            "--frames",
            "30",
        ]),
        Duration::from_secs(240),
    );
    assert!(ok, "bench failed\n{out}\n{err}");
    let row: Vec<&str> = out
        .lines()
        .find_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            (fields.first() == Some(&"64")).then_some(fields)
        })
        .unwrap_or_else(|| panic!("no 64-agent row\n{out}\n{err}"));
    assert_eq!(row[1..4], ["peer", "32", "30"], "{out}");
}
