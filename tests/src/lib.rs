//! Shared helpers of convoy's end-to-end suites: the domain id of every test (one place, so no
//! two tests ever share one), paths to the built executables, child processes that cannot
//! outlive their test ([`process`]), and bounded waits instead of sleeps. The files tests write
//! and read (scratch directories, scenario and launch files, CSV tables, state logs) are in
//! [`files`]; camera images a reader can tell torn from whole, in [`images`].

pub mod files;
pub mod garbage;
pub mod images;
pub mod paced;
pub mod process;
pub mod ros;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

pub use process::{
    find_node_process, processes_on_domain, run_fails, run_ok, run_with_timeout, sigkill,
    wait_nodes_gone, ChildGuard, Frozen,
};

/// Every DDS test's own domain id. Tests run in parallel; a shared domain would let one test's
/// traffic into another. Keep them unique and below 233.
pub mod domain {
    pub const INTEROP_CYCLONE: u32 = 11;
    pub const DECODE_ERRORS: u32 = 12;
    pub const DEADLINE: u32 = 13;
    pub const TIME_BASED_FILTER: u32 = 14;
    pub const RELIABLE_BURST: u32 = 15;
    pub const KEYED_INSTANCES: u32 = 16;
    pub const STREAM: u32 = 17;
    pub const READER_OVERWRITE: u32 = 18;
    pub const REDISCOVERY: u32 = 19;
    pub const FORGOTTEN_READER: u32 = 20;
    pub const FORGOTTEN_WRITER: u32 = 28;
    pub const CLI_LIST: u32 = 21;
    pub const CLI_ECHO: u32 = 22;
    pub const CLI_HZ: u32 = 23;
    pub const CLI_BENCH: u32 = 24;
    pub const CLI_BENCH_DDSPERF: u32 = 25;
    pub const CLI_PING_ALONE: u32 = 26;
    pub const CLI_BENCH_SENSORS: u32 = 27;
    pub const LOCKSTEP_PEER_A: u32 = 31;
    pub const LOCKSTEP_PEER_B: u32 = 32;
    pub const LOCKSTEP_RELAY: u32 = 33;
    pub const LOCKSTEP_ASYNC: u32 = 34;
    pub const LOCKSTEP_STALL: u32 = 35;
    pub const LOCKSTEP_CRASH: u32 = 36;
    pub const WORLD_COMMANDS: u32 = 37;
    pub const LOCKSTEP_COORDINATOR_STOPPED: u32 = 38;
    pub const LOCKSTEP_LOST_PEER: u32 = 39;
    pub const LOCKSTEP_LOST_RELAY: u32 = 40;
    pub const LOCKSTEP_KEEP_ALL_READER_STOPPED: u32 = 29;
    pub const LOCKSTEP_STRESS_QUIET: u32 = 48;
    pub const LOCKSTEP_STRESS_PEER: u32 = 49;
    pub const LOCKSTEP_STRESS_RELAY: u32 = 50;
    pub const LAUNCH_NETNS: u32 = 41;
    pub const LAUNCH_QOS_DEFAULT: u32 = 42;
    pub const LAUNCH_QOS_BEST_EFFORT: u32 = 43;
    pub const LAUNCH_SSH: u32 = 44;
    pub const LAUNCH_NETNS_BENCH: u32 = 45;
    pub const SENSOR_FAILOVER: u32 = 46;
    pub const NO_MULTICAST: u32 = 47;
    pub const SENSORS_SYNC: u32 = 51;
    pub const SENSORS_RESTART: u32 = 52;
    pub const SENSORS_ASYNC: u32 = 53;
    pub const SENSORS_LIDAR: u32 = 58;
    pub const SENSORS_CAMERA: u32 = 59;
    pub const LARGE_CONVOY: u32 = 54;
    pub const LARGE_CYCLONE: u32 = 55;
    pub const LARGE_RCLPY: u32 = 56;
    pub const LARGE_LOSSY: u32 = 57;
    pub const BRIDGE_SENSORS: u32 = 61;
    pub const BRIDGE_SENSORS_ROS: u32 = 62;
    pub const BRIDGE_LOCALHOST: u32 = 63;
    pub const BRIDGE_LOCALHOST_ROS: u32 = 64;
    pub const BRIDGE_COMMANDS: u32 = 65;
    pub const BRIDGE_HOLD: u32 = 66;
    pub const BRIDGE_HOLD_TIMEOUT: u32 = 67;
    pub const BRIDGE_DEAD_READER: u32 = 68;
    pub const RECORD_RUN: u32 = 71;
    pub const RECORD_ORIGINAL: u32 = 72;
    pub const RECORD_REPLAY: u32 = 73;
    pub const RECORD_INTERRUPT: u32 = 74;
    pub const RECORD_KILL: u32 = 75;
    pub const RECORD_BAD_INPUT: u32 = 76;
    pub const RECORD_ROS2_LIVE: u32 = 77;
    pub const RECORD_ROS2_REPLAY: u32 = 78;
    pub const VIEW_CLIENT: u32 = 79;
    pub const VIEW_BROWSER: u32 = 80;
    pub const SLOW_CONSUMER: u32 = 81;
    pub const SLOW_CONSUMER_STOPPED: u32 = 82;
    pub const STATE_LOG: u32 = 83;
    pub const QOS_ONE_SIDED: u32 = 84;
    pub const LINK_DELAY: u32 = 85;
    pub const LINK_BAD_VALUE: u32 = 86;
    pub const EXPERIMENT_LATENCY: u32 = 87;
    pub const EXPERIMENT_LOCKSTEP: u32 = 88;
    pub const EXPERIMENT_INTERRUPT: u32 = 89;
    pub const ISOLATION_LONE: u32 = 90;
    pub const ISOLATION_SHARED: u32 = 91;
    pub const ISOLATION_DUPLICATE: u32 = 92;
    pub const LOCKSTEP_GROUPED_PEER: u32 = 93;
    pub const LOCKSTEP_GROUPED_RELAY: u32 = 94;
    pub const LOCKSTEP_GROUP_FAILS: u32 = 95;
    pub const LOCKSTEP_GROUP_KILLED: u32 = 96;
    pub const LOCKSTEP_GROUPED_ALONE: u32 = 97;
    pub const LOCKSTEP_SIXTY_FOUR_PEER: u32 = 98;
    pub const CLI_BENCH_LOSSY: u32 = 99;
    pub const LOCKSTEP_SIXTY_FOUR_PEER_LOADED: u32 = 30;
    pub const TOWN_PEER_A: u32 = 100;
    pub const TOWN_PEER_B: u32 = 101;
    pub const TOWN_RELAY: u32 = 102;
    pub const TOWN_BAD_INPUT: u32 = 103;
    pub const TOWN_DIGEST: u32 = 104;
    pub const TOWN_SENSORS: u32 = 105;
    pub const VIEW_TOWN: u32 = 106;
    pub const VIEW_OLD_PROTOCOL: u32 = 107;
    pub const ROS2_MAP: u32 = 108;
    pub const ROS2_MAP_ROS: u32 = 109;
    pub const ROS2_LOCALISE: u32 = 110;
    pub const ROS2_LOCALISE_ROS: u32 = 111;
    pub const SHM_LANE: u32 = 112;
    pub const SHM_KILL: u32 = 113;
    pub const SHM_STOPPED_READER: u32 = 121;
    pub const SHM_IDLE_READERS: u32 = 122;
    pub const SHM_GARBAGE: u32 = 123;
    pub const SHM_TWO_RUNS: u32 = 124;
    pub const SHM_FIFO: u32 = 125;
    pub const SHM_HISTORY_LOST: u32 = 126;
    pub const SHM_TWO_WRITERS: u32 = 127;
    pub const SHM_SMALL_DEV_SHM: u32 = 128;
    pub const SHM_RECORDER: u32 = 129;
    pub const SECURITY_CYCLONE: u32 = 130;
    pub const SECURITY_NODES: u32 = 131;
    pub const SECURITY_TAMPERED: u32 = 132;
    pub const SECURITY_RUN: u32 = 133;
    pub const SECURITY_RUN_LIVE: u32 = 134;
    pub const SECURITY_RUN_SIXTEEN: u32 = 135;
    pub const SECURITY_RUN_HOSTILE: u32 = 136;
    pub const INTEROP_CYCLONE_SECURED: u32 = 137;
    pub const SECURITY_ROGUE_WRITER: u32 = 138;
    pub const LOCKSTEP_MULTICAST_OFF: u32 = 139;
    pub const LOCKSTEP_MULTICAST_ON: u32 = 140;
    pub const LAUNCH_NETNS_MULTICAST: u32 = 141;
    pub const SLOW_CONSUMER_JOINING: u32 = 142;
    pub const SENSORS_ADAPTER: u32 = 120;
}

/// The repository root (this crate lives in `tests/`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The cargo profile directory the running test was built into (target/debug).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/debug/deps/<test> -> target/debug
    exe.parent()
        .and_then(|deps| deps.parent())
        .map(PathBuf::from)
        .expect("test executable lives in target/<profile>/deps")
}

/// A binary of this workspace, built by `cargo build --workspace --bins` (the test command
/// does that before the tests run).
pub fn workspace_bin(name: &str) -> PathBuf {
    let path = profile_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The `convoy` command as a user runs it, from the repository root, with no domain or QoS
/// taken from the environment.
pub fn convoy() -> Command {
    let mut cmd = Command::new(workspace_bin("convoy"));
    cmd.current_dir(repo_root());
    cmd.env_remove("CONVOY_DOMAIN").env_remove("CONVOY_QOS");
    cmd
}

/// `convoy --domain N`: the command on the test's own domain.
pub fn convoy_on(domain: u32) -> Command {
    let mut cmd = convoy();
    cmd.args(["--domain", &domain.to_string()]);
    cmd
}

/// `convoy --domain N run SCENARIO`, for the test to add options to.
pub fn convoy_run(domain: u32, scenario: impl AsRef<OsStr>) -> Command {
    let mut cmd = convoy_on(domain);
    cmd.arg("run").arg(scenario);
    cmd
}

/// `convoy netns up|down FILE`, which must succeed (the suite runs as root).
pub fn netns(action: &str, file: &Path) {
    let (ok, out, err) = run_with_timeout(
        convoy().args(["netns", action]).arg(file),
        Duration::from_secs(60),
    );
    assert!(
        ok,
        "convoy netns {action} failed (the suite runs as root):\n{out}\n{err}"
    );
}

/// Tears a launch file's namespaces down even when the test fails half-way.
pub struct Namespaces(pub PathBuf);
impl Namespaces {
    /// `convoy netns up FILE`, guarded from the start: a half-made set is torn down too.
    pub fn up(file: &Path) -> Namespaces {
        let guard = Namespaces(file.to_path_buf());
        netns("up", file);
        guard
    }
}
impl Drop for Namespaces {
    fn drop(&mut self) {
        let _ = convoy().args(["netns", "down"]).arg(&self.0).output();
    }
}

/// Held by a test for its whole run so the CPU-heavy tests of one binary take turns (two cores:
/// several at once measure the machine, not convoy). A test that failed while holding it
/// poisons it; the next one still runs.
pub fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits for a line matching `pred` from `lines`, up to `timeout`; returns it, or every line
/// seen so far in the panic message.
pub fn wait_for_line(
    lines: &Receiver<String>,
    timeout: Duration,
    what: &str,
    pred: impl FnMut(&str) -> bool,
) -> String {
    let mut seen = lines_until(lines, timeout, what, pred);
    seen.pop().expect("the matching line")
}

/// As [`wait_for_line`], returning every line read, the matching one last.
pub fn lines_until(
    lines: &Receiver<String>,
    timeout: Duration,
    what: &str,
    mut pred: impl FnMut(&str) -> bool,
) -> Vec<String> {
    let until = Instant::now() + timeout;
    let mut seen = Vec::new();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                let found = pred(&line);
                seen.push(line);
                if found {
                    return seen;
                }
            }
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                panic!(
                    "no {what} within {timeout:?}; lines seen:\n{}",
                    seen.join("\n")
                )
            }
        }
    }
}

/// The Python of the venv scripts/ros-venv.sh makes with stock ROS 2 (rclpy, sensor_msgs, ...)
/// and CycloneDDS's binding from PyPI.
pub fn ros_python() -> PathBuf {
    let python = repo_root().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/ros-venv.sh (scripts/test.sh does)",
        python.display()
    );
    python
}

/// Polls `condition` every few milliseconds until it holds; panics naming `what` after
/// `timeout`. The bounded wait every test uses instead of a sleep.
pub fn wait_until(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let what = what.to_string();
    let until = Instant::now() + timeout;
    while !condition() {
        assert!(
            Instant::now() < until,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Fails a test that runs longer than its limit, on a watchdog thread (zenoh-style bounded
/// tests): a hang becomes a failure naming the test instead of a stuck CI job.
pub fn watchdog(test: &'static str, limit: Duration) {
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        eprintln!("test {test} exceeded its {limit:?} limit");
        std::process::exit(101);
    });
}

/// Writes `sample` every 20 ms until `reader` has taken at least one, then waits until the
/// writer's samples are acknowledged and drains them; returns how many the reader took.
///
/// Discovery matching is not delivery: a writer that sees a reader in discovery may write
/// before that reader has set up its side of the match, and a VOLATILE reader then never gets
/// the sample. Tests that count samples exactly do this first, as convoy's lockstep does with
/// its repeated Tick 0.
pub fn handshake<M: convoy_core::messages::Message>(
    writer: &convoy_core::dds::Publisher<M>,
    reader: &mut convoy_core::dds::Subscriber<M>,
    sample: M,
    timeout: Duration,
) -> usize {
    let until = Instant::now() + timeout;
    let mut taken = 0;
    while taken == 0 {
        assert!(
            Instant::now() < until,
            "no sample crossed from writer to reader on '{}' within {timeout:?}",
            writer.topic()
        );
        // A reader matched on the writer's side but not yet on its own acknowledges nothing,
        // and the writer's reliable window may fill meanwhile: back-pressure while discovery
        // completes (seen under the whole suite's load), waited out like any other; the
        // deadline above still bounds it.
        match writer.write(sample.clone()) {
            Ok(()) | Err(convoy_core::dds::PublishError::WouldBlock { .. }) => {}
            Err(e) => panic!("handshake write on '{}': {e}", writer.topic()),
        }
        taken += reader.take_wait(64, Duration::from_millis(20)).len();
    }
    assert!(
        writer.wait_for_acknowledgments(timeout),
        "handshake samples on '{}' not acknowledged",
        writer.topic()
    );
    taken + reader.take(1024).len()
}

/// `convoy run SCENARIO` to completion within `limit`, writing its `--state-log` to `log`;
/// fails the test if it fails or leaves a node behind; returns its output.
pub fn run_scenario(
    domain: u32,
    scenario: &str,
    extra: &[&str],
    log: &Path,
    limit: Duration,
) -> String {
    let (ok, out, err) = run_with_timeout(
        convoy_run(domain, scenario)
            .args(extra)
            .arg("--state-log")
            .arg(log),
        limit,
    );
    assert!(ok, "convoy run {scenario} {extra:?} failed:\n{out}\n{err}");
    assert!(
        processes_on_domain(domain).is_empty(),
        "nodes left behind: {:?}",
        processes_on_domain(domain)
    );
    out
}

/// `convoy topic list --verbose --wait SECONDS` on `domain`, again and again up to `tries`
/// times (discovery takes a moment), until `found` picks what the test wants from a listing.
pub fn topic_list_until<T>(
    domain: u32,
    wait_s: &str,
    tries: usize,
    what: &str,
    mut found: impl FnMut(&str) -> Option<T>,
) -> T {
    let mut last = String::new();
    for _ in 0..tries {
        let list = ["topic", "list", "--verbose", "--wait", wait_s];
        let out = run_ok(convoy_on(domain).args(list), Duration::from_secs(60));
        if let Some(it) = found(&out) {
            return it;
        }
        last = out;
    }
    panic!("{what} never listed:\n{last}");
}

/// Builds tests/interop's CycloneDDS programs (cyclone_peer, cyclone_sink) with `idlc` into
/// target/<profile>/interop; returns that directory.
pub fn cyclone_programs() -> PathBuf {
    let build_dir = profile_dir().join("interop");
    let built = Command::new("bash")
        .arg(repo_root().join("tests/interop/build.sh"))
        .arg(&build_dir)
        .status()
        .expect("run tests/interop/build.sh");
    assert!(built.success(), "building the CycloneDDS programs failed");
    build_dir
}

/// A CycloneDDS configuration (for `CYCLONEDDS_URI`) that secures a participant with
/// `enclave`'s files (one node's folder from `convoy security init`), using the plugins of
/// Debian's CycloneDDS; written into `out`.
pub fn cyclone_security_config(enclave: &Path, out: &Path) -> PathBuf {
    let plugins = "/usr/lib/x86_64-linux-gnu/libddsc0debian";
    let file = |name: &str| format!("file:{}", enclave.join(name).display());
    let xml = format!(
        r#"<CycloneDDS><Domain id="any"><Security>
  <Authentication><Library path="{plugins}/libdds_security_auth.so" initFunction="init_authentication" finalizeFunction="finalize_authentication"/>
    <IdentityCA>{}</IdentityCA><IdentityCertificate>{}</IdentityCertificate><PrivateKey>{}</PrivateKey></Authentication>
  <AccessControl><Library path="{plugins}/libdds_security_ac.so" initFunction="init_access_control" finalizeFunction="finalize_access_control"/>
    <PermissionsCA>{}</PermissionsCA><Governance>{}</Governance><Permissions>{}</Permissions></AccessControl>
  <Cryptographic><Library path="{plugins}/libdds_security_crypto.so" initFunction="init_crypto" finalizeFunction="finalize_crypto"/></Cryptographic>
</Security><Tracing><Verbosity>warning</Verbosity><OutputFile>stderr</OutputFile></Tracing></Domain></CycloneDDS>"#,
        file("identity_ca.cert.pem"),
        file("cert.pem"),
        file("key.pem"),
        file("permissions_ca.cert.pem"),
        file("governance.p7s"),
        file("permissions.p7s"),
    );
    let path = out.join(format!(
        "cyclone-{}.xml",
        enclave
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    std::fs::write(&path, xml).expect("cyclone config");
    path
}

/// [`cyclone_security_config`] with tests/interop's rogue access control plugin in place of
/// Debian's: the participant creates any writer, whatever its grant says (a DDS that skips its
/// own check), and is otherwise secured as a node with `enclave`'s files.
pub fn rogue_cyclone_security_config(enclave: &Path, out: &Path) -> PathBuf {
    let path = cyclone_security_config(enclave, out);
    let xml = std::fs::read_to_string(&path).expect("cyclone config");
    let builtin = r#"libdds_security_ac.so" initFunction="init_access_control" finalizeFunction="finalize_access_control""#;
    assert!(xml.contains(builtin), "{xml}");
    let rogue = format!(
        r#"{}" initFunction="init_rogue_access_control" finalizeFunction="finalize_rogue_access_control""#,
        cyclone_programs().join("rogue_access_control.so").display()
    );
    let xml = xml.replace(
        &format!("/usr/lib/x86_64-linux-gnu/libddsc0debian/{builtin}"),
        &rogue,
    );
    let rogue_path = path.with_extension("rogue.xml");
    std::fs::write(&rogue_path, xml).expect("rogue cyclone config");
    rogue_path
}
