//! Graphs of many endpoints. Alone in its test binary: cargo runs test binaries one after the
//! other, so these start while no other test loads the machine's two cores, and they run one
//! at a time: one on an idle machine, one beside a known load (docs/TRANSPORT.md, "Thousands
//! of endpoints at once").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use convoy_tests::{convoy_on, domain, run_with_timeout, watchdog};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Threads that keep the CPUs busy until dropped: other work on the same machine.
struct CpuHogs {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl CpuHogs {
    fn start(count: usize) -> CpuHogs {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        CpuHogs { stop, threads }
    }
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The fields of `convoy bench lockstep`'s row for `agents` agents in its output `out`.
fn agents_row<'a>(out: &'a str, agents: &str) -> Vec<&'a str> {
    out.lines()
        .find_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            (fields.first() == Some(&agents)).then_some(fields)
        })
        .unwrap_or_else(|| panic!("no {agents}-agent row\n{out}"))
}

/// `convoy bench lockstep` with 64 agents in peer exchange, two processes of 32, for `frames`
/// frames; asserts the row names them all.
fn sixty_four_peer(domain: u32, frames: &str, limit: Duration) {
    let (ok, out, err) = run_with_timeout(
        convoy_on(domain).args([
            "bench",
            "lockstep",
            "--agents",
            "64",
            "--exchange",
            "peer",
            "--agents-per-process",
            "32",
            "--frames",
            frames,
        ]),
        limit,
    );
    assert!(ok, "bench failed\n{out}\n{err}");
    let row = agents_row(&out, "64");
    assert_eq!(row[1..4], ["peer", "32", frames], "{out}\n{err}");
}

/// 64 agents reading each other's states in two processes of 32: each process creates over
/// two thousand readers at start, faster than its DDS event loop and discovery take them in.
/// Creating a reader once failed on the full queue to the event loop, and an endpoint whose
/// announcement did not fit discovery's queue was never matched, so the run never started.
#[test]
fn sixty_four_agents_in_two_processes_start_and_step() {
    let _alone = one_at_a_time();
    watchdog("64 peer", Duration::from_secs(300));
    sixty_four_peer(
        domain::LOCKSTEP_SIXTY_FOUR_PEER,
        "30",
        Duration::from_secs(240),
    );
}

/// The same start-up while four busy threads compete for the two cores. Tick 0 was repeated
/// every 20 ms until the handshake completed, and every repeat had each agent write its state
/// to its 63 peers: under this load that traffic left the DDS event loops no time for the
/// discovery the handshake waited on, and the run made 2 frames in 180 s. The repeats now
/// back off (20 ms doubling to 320 ms); it starts in seconds.
#[test]
fn sixty_four_agents_start_while_other_work_fills_both_cores() {
    let _alone = one_at_a_time();
    watchdog("64 peer loaded", Duration::from_secs(300));
    let _hogs = CpuHogs::start(4);
    sixty_four_peer(
        domain::LOCKSTEP_SIXTY_FOUR_PEER_LOADED,
        "10",
        Duration::from_secs(150),
    );
}

/// Datagrams per frame of `convoy bench lockstep` with 8 agents in peer exchange, one process
/// each, with `CONVOY_MULTICAST` set to `multicast` (8 agents are below the default threshold,
/// so the multicast run sets it to 2 nodes).
fn eight_peer_datagrams_per_frame(domain: u32, multicast: &str) -> f64 {
    let (ok, out, err) = run_with_timeout(
        convoy_on(domain)
            .env("CONVOY_MULTICAST", multicast)
            .args(["bench", "lockstep", "--agents", "8", "--exchange", "peer"])
            .args(["--agents-per-process", "1", "--frames", "300"]),
        Duration::from_secs(150),
    );
    assert!(ok, "bench failed\n{out}\n{err}");
    let row = agents_row(&out, "8");
    assert_eq!(row[1..4], ["peer", "1", "300"], "{out}\n{err}");
    row[7]
        .parse()
        .unwrap_or_else(|_| panic!("datagrams per frame '{}'\n{out}", row[7]))
}

/// Issue 41: in peer exchange each agent's state goes once to the multicast group its seven
/// readers share (vendored rustdds change 69), not once to each: 8 state datagrams a frame
/// instead of 56. With multicast off (`CONVOY_MULTICAST=off`) it is the other way, so the
/// difference is the group's doing; both runs complete every frame of the lockstep.
#[test]
fn peer_states_go_once_to_the_multicast_group() {
    let _alone = one_at_a_time();
    watchdog("multicast peer", Duration::from_secs(360));
    let unicast = eight_peer_datagrams_per_frame(domain::LOCKSTEP_MULTICAST_OFF, "off");
    let multicast = eight_peer_datagrams_per_frame(domain::LOCKSTEP_MULTICAST_ON, "2");
    // 48 of the unicast run's datagrams a frame are states the group replaces by 8.
    assert!(
        unicast - multicast >= 30.0,
        "multicast {multicast} datagrams a frame against {unicast} unicast"
    );
}
