//! `convoy launch`: a graph over three network-namespace hosts, and QoS swapped per run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use convoy_tests::files::{
    lane_agents, read_csv, read_state_log, scratch_dir, shipped_scenario, write_file, LaunchFile,
    LATENCY_CSV,
};
use convoy_tests::{
    convoy, convoy_on, domain, find_node_process, netns, repo_root, run_fails, run_ok,
    run_with_timeout, sigkill, topic_list_until, wait_for_line, wait_nodes_gone, wait_until,
    watchdog, workspace_bin, ChildGuard, Namespaces,
};

/// The tests of this file run in parallel, each starting a graph of processes; the link-delay
/// test measures a round trip to within 10% and needs the 2-core machine to itself (under
/// their load the delay's sending thread and both ends wake milliseconds late). It takes this
/// lock alone, every other test shares it.
static MACHINE: RwLock<()> = RwLock::new(());

fn beside_others() -> RwLockReadGuard<'static, ()> {
    MACHINE
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn alone() -> RwLockWriteGuard<'static, ()> {
    MACHINE
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A four-car scenario and its launch file over three namespace hosts: the coordinator, a1 and
/// a2 on host a, b1 and b2 on host b, nothing on host c.
fn three_hosts(dir: &Path) -> PathBuf {
    three_hosts_named(dir, domain::LAUNCH_NETNS, "cvt")
}

/// [`three_hosts`] on `domain`, its namespaces named `{prefix}_a` .. `{prefix}_c`.
fn three_hosts_named(dir: &Path, domain: u32, prefix: &str) -> PathBuf {
    let cars = lane_agents(&["a1", "a2", "b1", "b2"]);
    let scenario = format!("[scenario]\nname = \"four_cars\"\ndt = 0.01\nlease = 1.5\n{cars}");
    write_file(dir, "four_cars.toml", &scenario);
    LaunchFile::new(domain, Path::new("four_cars.toml"))
        .host("a", &format!("netns:{prefix}_a"), &[])
        .host("b", &format!("netns:{prefix}_b"), &[])
        .host("c", &format!("netns:{prefix}_c"), &[])
        .node("coordinator", "a", &[])
        .node("agent", "a", &["a1", "a2"])
        .node("agent", "b", &["b1", "b2"])
        .write(dir, "three_hosts.toml")
}

/// `convoy launch FILE` of a run that goes on until it is stopped, logging at `log`, with the
/// environment variables `env`; its stdout's lines.
fn launch_until_stopped(
    file: &Path,
    log: &str,
    env: &[(&str, &str)],
) -> (ChildGuard, Receiver<String>) {
    ChildGuard::spawn_with_stdout(
        "convoy launch",
        convoy()
            .arg("launch")
            .arg(file)
            .args(["--frames", "1000000"])
            .env("RUST_LOG", log)
            .envs(env.iter().copied()),
    )
}

/// Whether `line` is a progress line of the lockstep with `agents` agents in the run.
fn progress(line: &str, agents: usize) -> bool {
    line.contains("] frame ") && line.contains(&format!("agents {agents}"))
}

/// `convoy --domain N` inside network namespace `ns`, with no domain, QoS or peers taken from
/// the environment.
fn convoy_in(ns: &str, domain: u32) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]).arg(workspace_bin("convoy"));
    cmd.args(["--domain", &domain.to_string()]);
    for var in ["CONVOY_DOMAIN", "CONVOY_QOS", "CONVOY_PEERS"] {
        cmd.env_remove(var);
    }
    cmd
}

fn namespaces() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("cvt_") && !n.starts_with("cvt_p"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_graph_over_three_namespace_hosts_runs_loses_an_agent_and_cleans_up() {
    let _machine = beside_others();
    watchdog("three hosts", Duration::from_secs(300));
    let dir = scratch_dir("three_hosts");
    let file = three_hosts(&dir);
    let d = domain::LAUNCH_NETNS;

    let out = run_ok(
        convoy().arg("launch").arg(&file).arg("--check"),
        Duration::from_secs(30),
    );
    assert!(
        out.contains("agent/b2") && out.contains("on b (netns:cvt_b)"),
        "{out}"
    );

    let _cleanup = Namespaces::up(&file);
    assert_eq!(namespaces().len(), 3);

    let (mut launch, lines) = launch_until_stopped(&file, "info,rustdds=off", &[]);
    let limit = Duration::from_secs(60);
    // Remote states arrive: a1 (host a) mirrors b1 and b2 (host b) as zombies, and the
    // lockstep runs, which needs every agent's state every frame across the bridge.
    wait_for_line(&lines, limit, "a1's zombies from both hosts", |l| {
        l.contains("agent/a1] ") && l.contains(r#"zombies now ["a2", "b1", "b2"]"#)
    });
    wait_for_line(&lines, limit, "lockstep progress", |l| progress(l, 4));

    // Kill the remote agent b2 outright.
    sigkill(find_node_process(d, "convoy-agent", "--id", "b2").expect("b2's process"));
    // Three things follow, in whatever order the nodes' outputs interleave: the coordinator
    // drops b2, a1 drops b2's zombie, and the lockstep goes on with three agents.
    let (mut left, mut zombie_gone, mut three) = (false, false, false);
    let after_b2 = "b2 leaving, its zombie gone and the lockstep going on with 3 agents";
    wait_for_line(&lines, limit, after_b2, |l| {
        left |= l.contains("agent b2 left the run");
        zombie_gone |= l.contains("agent/a1] ") && l.contains(r#"zombies now ["a2", "b1"]"#);
        three |= left && progress(l, 3);
        left && zombie_gone && three
    });

    launch.stop(Duration::from_secs(15));
    wait_nodes_gone(d, Duration::from_secs(10));
    netns("down", &file);
    assert!(
        namespaces().is_empty(),
        "namespaces left: {:?}",
        namespaces()
    );
}

/// Issue 41: the same graph with states sent once to the multicast group of their readers
/// (`CONVOY_MULTICAST=2`; each agent's state is read by four other nodes: the coordinator and
/// the other agents, a process each, on both hosts), across the namespaces' bridge: every
/// agent mirrors the others from both hosts and the lockstep, which needs every state every
/// frame, runs.
#[test]
fn states_cross_namespace_hosts_through_their_multicast_group() {
    let _machine = beside_others();
    watchdog("three hosts multicast", Duration::from_secs(300));
    let dir = scratch_dir("three_hosts_multicast");
    let d = domain::LAUNCH_NETNS_MULTICAST;
    let file = three_hosts_named(&dir, d, "cvm");
    let _cleanup = Namespaces::up(&file);
    let (mut launch, lines) =
        launch_until_stopped(&file, "info,rustdds=off", &[("CONVOY_MULTICAST", "2")]);
    let limit = Duration::from_secs(60);
    // Both lines come at frame 1, in whichever order the hosts' outputs interleave.
    let (mut a1_mirrors, mut b1_mirrors) = (false, false);
    wait_for_line(
        &lines,
        limit,
        "a1's and b1's zombies from both hosts",
        |l| {
            a1_mirrors |=
                l.contains("agent/a1] ") && l.contains(r#"zombies now ["a2", "b1", "b2"]"#);
            b1_mirrors |=
                l.contains("agent/b1] ") && l.contains(r#"zombies now ["a1", "a2", "b2"]"#);
            a1_mirrors && b1_mirrors
        },
    );
    wait_for_line(&lines, limit, "lockstep progress", |l| progress(l, 4));
    // Issue 41: host c joins late, with a reader of a1's state. Its node is heard by multicast a
    // moment after it matches, and from then on a1's states reach it through the group instead
    // of by unicast; it gets every one of them, without a gap at the switch.
    let (mut echo, samples) = ChildGuard::spawn_with_stdout(
        "topic echo on the late host",
        convoy_in("cvm_c", d).env("CONVOY_MULTICAST", "2").args([
            "topic",
            "echo",
            "--json",
            "convoy/agent/a1/state",
        ]),
    );
    let frames: Vec<u64> = (0..LATE_SAMPLES)
        .map(|i| {
            let line = wait_for_line(&samples, limit, &format!("a1's state {i} on host c"), |l| {
                state_frame(l).is_some()
            });
            state_frame(&line).unwrap_or_default()
        })
        .collect();
    assert!(
        frames.windows(2).all(|w| w[1] == w[0] + 1),
        "host c missed some of a1's states: frames {frames:?}"
    );
    eprintln!(
        "host c, joining late, got a1's states {:?}..={:?} in a row",
        frames.first(),
        frames.last()
    );
    echo.stop(Duration::from_secs(5));
    launch.stop(Duration::from_secs(15));
    wait_nodes_gone(d, Duration::from_secs(10));
    netns("down", &file);
}

/// States the late host must get in a row: well past the 3 s after which its multicast counts as
/// heard (the lockstep runs tens of frames a second here).
const LATE_SAMPLES: usize = 300;

/// An agent state's frame, from `convoy topic echo --json`.
fn state_frame(line: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    v["frame"].as_u64()
}

/// launch/three_hosts.toml as shipped, moved onto this test's namespaces and domain (and with
/// absolute paths, as it is copied elsewhere).
fn shipped_three_hosts(dir: &Path) -> PathBuf {
    let shipped = repo_root().join("launch/three_hosts.toml");
    let text = std::fs::read_to_string(&shipped).expect("launch/three_hosts.toml");
    let launch_dir = repo_root().join("launch");
    let text = text
        .replace("netns:convoy_", "netns:cvf_")
        .replace(
            "domain = 43",
            &format!("domain = {}", domain::SENSOR_FAILOVER),
        )
        .replace(
            "scenario = \"scenarios/",
            &format!("scenario = \"{}/scenarios/", launch_dir.display()),
        )
        .replace(
            "qos = \"../",
            &format!("qos = \"{}/../", launch_dir.display()),
        )
        .replace(
            "config = \"",
            &format!("config = \"{}/", launch_dir.display()),
        );
    assert!(text.contains("netns:cvf_c") && text.contains("kind = \"sensor\""));
    assert!(text.contains("netns:cvf_d") && text.contains("kind = \"bridge\""));
    write_file(dir, "three_hosts.toml", &text)
}

/// A sample's header frame, from `convoy topic echo --json`.
fn header_frame(line: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    v["header"]["frame"].as_u64()
}

/// Also the multi-host case of several agents a process: the 16 cars run as one agent process
/// on each of hosts a and b, and the lockstep, the sensors on three hosts and the failover
/// work as with a process per car.
#[test]
fn a_dead_client_sensor_nodes_sensors_move_to_the_main_and_resume() {
    let _machine = beside_others();
    watchdog("sensor failover", Duration::from_secs(300));
    let dir = scratch_dir("sensor_failover");
    let file = shipped_three_hosts(&dir);
    let d = domain::SENSOR_FAILOVER;
    // The shipped file runs each host's eight cars in one agent process.
    let plan = run_ok(
        convoy().arg("launch").arg(&file).arg("--check"),
        Duration::from_secs(30),
    );
    assert!(
        plan.contains("agents/car_00..car_07 on a") && plan.contains("agents/car_08..car_15 on b"),
        "{plan}"
    );
    let _cleanup = Namespaces::up(&file);

    let (mut launch, lines) = launch_until_stopped(&file, "warn,rustdds=off", &[]);
    let limit = Duration::from_secs(90);
    // The client on host c takes both client_only radars; the main the rest.
    for sensor in ["car_00/front_radar", "car_08/rear_radar"] {
        wait_for_line(&lines, limit, &format!("{sensor} placed on c"), |l| {
            l.contains(&format!("sensor {sensor} -> c ")) && l.contains("epoch 1")
        });
    }
    wait_for_line(&lines, limit, "lockstep progress", |l| progress(l, 16));
    // A subscriber on host a, in another process: the rear radar's samples.
    let (mut echo, samples) = ChildGuard::spawn_with_stdout(
        "topic echo",
        convoy_in("cvf_a", d)
            .args(["topic", "echo", "--json"])
            .arg("convoy/sensor/car_08/rear_radar"),
    );
    let first = wait_for_line(&samples, limit, "a rear radar sample from c", |l| {
        header_frame(l).is_some()
    });
    let before = header_frame(&first).unwrap_or(0);

    // Kill the client sensor node outright.
    sigkill(find_node_process(d, "convoy-sensor", "--name", "c").expect("sensor node c"));
    let killed = std::time::Instant::now();
    wait_for_line(&lines, limit, "the coordinator dropping c", |l| {
        l.contains("sensor node c left at frame")
    });
    // Reassigned within the lease (2 s) plus one second.
    wait_for_line(&lines, limit, "rear_radar moved to the main", |l| {
        l.contains("sensor car_08/rear_radar -> main ") && l.contains("epoch 2, failover")
    });
    let reassigned = killed.elapsed();
    assert!(
        reassigned < Duration::from_secs(3),
        "reassignment took {reassigned:?}, more than the 2 s lease plus 1 s"
    );
    // The gap is reported, and the run goes on with every agent.
    let resumed = wait_for_line(&lines, limit, "the rear radar resuming", |l| {
        l.contains("sensor car_08/rear_radar resumed on main at frame")
    });
    assert!(resumed.contains("gap of "), "{resumed}");
    wait_for_line(&lines, limit, "progress after the failover", |l| {
        progress(l, 16)
    });
    // The topic resumes: samples from frames after the kill reach the subscriber.
    let resumed_frame: u64 = resumed
        .split("at frame ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|f| f.trim().parse().ok())
        .expect("resumed frame");
    let later = wait_for_line(&samples, limit, "a rear radar sample from the main", |l| {
        header_frame(l).is_some_and(|f| f >= resumed_frame)
    });
    assert!(header_frame(&later).unwrap_or(0) > before);
    println!("reassigned {reassigned:?} after the kill; {resumed}");

    echo.terminate(Duration::from_secs(5));
    launch.stop(Duration::from_secs(15));
    wait_nodes_gone(d, Duration::from_secs(10));
}

/// The reliability the agent state writers announce, read back through discovery.
fn announced_reliability(domain: u32) -> String {
    let what = "convoy/agent/ego/state with a writer";
    topic_list_until(domain, "1", 15, what, |out| {
        // The block of the topic, up to the next topic line.
        let start = out.find("convoy/agent/ego/state  [")?;
        let block: Vec<&str> = out[start..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with(' '))
            .collect();
        let block = block.join("\n");
        block.contains("writer").then_some(block)
    })
}

#[test]
fn the_same_launch_file_runs_with_swapped_qos() {
    let _machine = beside_others();
    watchdog("qos swap", Duration::from_secs(300));
    let dir = scratch_dir("qos_swap");
    let scenario = shipped_scenario("two_cars.toml");
    for (d, qos, expected, other) in [
        (
            domain::LAUNCH_QOS_DEFAULT,
            None,
            "reliability: RELIABLE",
            "BEST_EFFORT",
        ),
        (
            domain::LAUNCH_QOS_BEST_EFFORT,
            Some("qos/experiments.xml::best_effort"),
            "reliability: BEST_EFFORT",
            "RELIABLE",
        ),
    ] {
        let file = LaunchFile::new(d, &scenario)
            .node("coordinator", "local", &[])
            .node("agent", "local", &[])
            .write(&dir, &format!("local_{d}.toml"));
        let mut cmd = convoy();
        cmd.arg("launch").arg(&file).args(["--duration", "100000"]);
        if let Some(q) = qos {
            cmd.args(["--with-qos", q]);
        }
        let (mut launch, lines) = ChildGuard::spawn_with_stdout("convoy launch", &mut cmd);
        wait_for_line(&lines, Duration::from_secs(60), "the run", |l| {
            l.contains("] frame ")
        });
        let block = announced_reliability(d);
        assert!(block.contains(expected), "QoS {qos:?}: {block}");
        assert!(!block.contains(other), "QoS {qos:?}: {block}");
        launch.terminate(Duration::from_secs(15));
        wait_nodes_gone(d, Duration::from_secs(10));
    }
}

/// An sshd of the test's own on 127.0.0.1 (Debian openssh-server), with keys made for the test.
struct Sshd {
    _daemon: ChildGuard,
    options: String,
}

fn start_sshd(dir: &Path, port: u16) -> Sshd {
    let keygen = |file: &Path| {
        let _ = std::fs::remove_file(file);
        let _ = std::fs::remove_file(file.with_extension("pub"));
        let status = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(file)
            .status()
            .expect("ssh-keygen (Debian openssh-client)");
        assert!(status.success(), "ssh-keygen failed");
    };
    let client_key = dir.join("id");
    let host_key = dir.join("host_key");
    keygen(&client_key);
    keygen(&host_key);
    // A fresh host key each run: forget the last run's.
    let _ = std::fs::remove_file(dir.join("known_hosts"));
    std::fs::copy(
        client_key.with_extension("pub"),
        dir.join("authorized_keys"),
    )
    .expect("keys");
    let config = write_file(
        dir,
        "sshd_config",
        &format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\n\
             PidFile {}\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             StrictModes no\nUsePAM no\n",
            host_key.display(),
            dir.join("authorized_keys").display(),
            dir.join("sshd.pid").display()
        ),
    );
    // sshd's privilege separation wants this directory.
    let _ = std::fs::create_dir_all("/run/sshd");
    let daemon = ChildGuard::spawn(
        "sshd",
        Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stderr(Stdio::null()),
    );
    wait_until("sshd listening", Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let options = format!(
        "-p {port} -i {} -o UserKnownHostsFile={} -o LogLevel=ERROR",
        client_key.display(),
        dir.join("known_hosts").display()
    );
    Sshd {
        _daemon: daemon,
        options,
    }
}

#[test]
fn nodes_run_on_an_ssh_host() {
    let _machine = beside_others();
    watchdog("ssh host", Duration::from_secs(300));
    let dir = scratch_dir("ssh");
    let d = domain::LAUNCH_SSH;
    let sshd = start_sshd(&dir, 22_000 + d as u16);
    let file = LaunchFile::new(d, &shipped_scenario("two_cars.toml"))
        .host("remote", "ssh://root@127.0.0.1", &[])
        .node("coordinator", "local", &[])
        .node("agent", "remote", &["ego"])
        .node("agent", "local", &[])
        .write(&dir, "ssh.toml");
    // Unsecured, then secured: the ssh host's node gets its own enclave over ssh.
    for secure in [false, true] {
        let log = dir.join(format!("states_{secure}.jsonl"));
        let mut launch = convoy();
        launch
            .arg("launch")
            .arg(&file)
            .args(["--frames", "300", "--state-log"])
            .arg(&log)
            .env("CONVOY_SSH_OPTS", &sshd.options);
        if secure {
            launch.arg("--secure");
        }
        let out = run_ok(&mut launch, Duration::from_secs(180));
        assert!(
            out.contains("agent/ego        on remote (ssh://root@127.0.0.1)"),
            "{out}"
        );
        assert!(out.contains("done: 300 frames"), "{out}");
        let states = read_state_log(&log);
        assert!(
            states.contains_key(&(300, "ego".to_string())),
            "no state of the ssh agent (secured: {secure})"
        );
        if secure {
            // The launcher's folder, and the ssh host's copy of its node's enclave
            // (/tmp/convoy-secure-RUN-agent_ego: this "remote" host shares /tmp), are gone.
            let folder = out
                .lines()
                .find_map(|l| l.split("identities in ").nth(1))
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_else(|| panic!("no secured: line:\n{out}"));
            let run_folder = Path::new(folder);
            let name = run_folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .expect("a folder name");
            let left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
                .expect("temp dir")
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&name))
                .collect();
            assert!(left.is_empty(), "left after the secured run: {left:?}");
        }
        wait_nodes_gone(d, Duration::from_secs(15));
    }
}

#[test]
fn bench_latency_runs_between_two_namespace_hosts_over_a_lossy_link() {
    let _machine = beside_others();
    watchdog("netns bench", Duration::from_secs(300));
    let dir = scratch_dir("netns_bench");
    let d = domain::LAUNCH_NETNS_BENCH;
    let lossy = ["link = { loss_pct = 2.0 }"];
    let file = LaunchFile::two_netns_hosts(d, ("cvt_px", &lossy), ("cvt_py", &[]))
        .write(&dir, "lossy.toml");
    let _cleanup = Namespaces::up(&file);
    let csv = dir.join("latency.csv");
    let _ = std::fs::remove_file(&csv);
    let out = run_ok(
        convoy_on(d)
            .args(["bench", "latency", "--netns-hosts"])
            .arg(&file)
            .args(["--sizes", "64", "--duration", "1", "--out"])
            .arg(&csv),
        Duration::from_secs(120),
    );
    assert!(
        out.contains("ping on host p (netns cvt_px), pong on host q (netns cvt_py)"),
        "{out}"
    );
    let (text, rows) = read_csv(&csv, LATENCY_CSV);
    let row = rows.first().expect("a row");
    assert!(row[2].parse::<u64>().expect("round trips") > 0, "{text}");
    // Reliable over a 2% lossy link: repaired, never lost.
    assert_eq!(row[8], "0", "{text}");
    netns("down", &file);
}

/// Drops every multicast datagram a namespace sends: a network without multicast.
fn block_multicast(ns: &str) {
    for rule in [
        "add table ip convoy_nomc",
        "add chain ip convoy_nomc out { type filter hook output priority 0 ; }",
        "add rule ip convoy_nomc out ip daddr 224.0.0.0/4 drop",
    ] {
        let status = Command::new("ip")
            .args(["netns", "exec", ns, "nft", rule])
            .status()
            .expect("nft (Debian nftables)");
        assert!(status.success(), "nft {rule} in {ns} failed");
    }
}

/// One latency bench between the two hosts: pong on q, ping on p, each with `peers` as
/// CONVOY_PEERS (None: unset). Returns whether the ping side succeeded, and its output.
fn ping_pong_without_multicast(peers: Option<(&str, &str)>) -> (bool, String) {
    let mut pong_cmd = convoy_in("cvu_q", domain::NO_MULTICAST);
    pong_cmd
        .args(["bench", "latency", "--role", "pong"])
        .stdout(Stdio::null());
    let mut ping_cmd = convoy_in("cvu_p", domain::NO_MULTICAST);
    ping_cmd
        .args(["bench", "latency", "--role", "ping", "--sizes", "64,65536"])
        .args(["--duration", "0.5", "--match-timeout", "6"]);
    if let Some((pong_peer, ping_peer)) = peers {
        pong_cmd.env("CONVOY_PEERS", pong_peer);
        ping_cmd.env("CONVOY_PEERS", ping_peer);
    }
    let _pong = ChildGuard::spawn("pong", &mut pong_cmd);
    let (ok, out, err) = run_with_timeout(&mut ping_cmd, Duration::from_secs(60));
    (ok, format!("{out}\n{err}"))
}

#[test]
fn static_discovery_peers_work_on_a_network_without_multicast() {
    let _machine = beside_others();
    watchdog("no multicast", Duration::from_secs(200));
    let dir = scratch_dir("no_multicast");
    let (p, q) = (["ip = \"10.77.251.1/24\""], ["ip = \"10.77.251.2/24\""]);
    let file = LaunchFile::two_netns_hosts(domain::NO_MULTICAST, ("cvu_p", &p), ("cvu_q", &q))
        .write(&dir, "two_hosts.toml");
    let _cleanup = Namespaces::up(&file);
    block_multicast("cvu_p");
    block_multicast("cvu_q");

    // Without peers nothing is found: discovery is multicast.
    let (ok, out) = ping_pong_without_multicast(None);
    assert!(
        !ok,
        "discovery worked without multicast and without peers:\n{out}"
    );
    assert!(out.contains("0 of 1 readers matched"), "{out}");

    // With each side naming the other, discovery and data go by unicast.
    let (ok, out) = ping_pong_without_multicast(Some(("10.77.251.1", "10.77.251.2")));
    assert!(ok, "bench over static peers failed:\n{out}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("64 ") || l.trim_start().starts_with("65536 "))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    for row in rows {
        assert!(row.trim_end().ends_with(" 0"), "lost samples: {row}");
    }
}

/// The p50 of `convoy bench latency --netns-hosts FILE --sizes 64` in µs, with the command's
/// output (stdout, then stderr).
fn round_trip_p50(file: &Path, domain: u32) -> (f64, String) {
    let (ok, out, err) = run_with_timeout(
        convoy_on(domain)
            .env("RUST_LOG", "warn,rustdds=error")
            .env_remove("CONVOY_LINK")
            .args(["bench", "latency", "--netns-hosts"])
            .arg(file)
            .args(["--sizes", "64", "--duration", "2"]),
        Duration::from_secs(120),
    );
    let all = format!("{out}\n{err}");
    assert!(ok, "bench latency over {} failed:\n{all}", file.display());
    let row: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .find(|words: &Vec<&str>| words.first() == Some(&"64"))
        .unwrap_or_else(|| panic!("no 64 B row:\n{all}"));
    let p50 = row[1].parse().unwrap_or_else(|_| panic!("p50 of {row:?}"));
    assert_eq!(row.last(), Some(&"0"), "lost round trips:\n{all}");
    (p50, all)
}

/// Issue 20: a launch file's 20 ms link delay on both hosts adds 40 ms (± 10%) to a 64 B round
/// trip between them — by netem where the kernel has it, otherwise by the emulation in convoy's
/// transport (vendored rustdds change 39), which `convoy netns up` says it uses.
#[test]
fn a_20_ms_link_delay_each_way_adds_40_ms_to_a_round_trip() {
    let _machine = alone();
    watchdog("link delay", Duration::from_secs(300));
    let dir = scratch_dir("link_delay");
    let d = domain::LINK_DELAY;
    let clean =
        LaunchFile::two_netns_hosts(d, ("cvd_p0", &[]), ("cvd_q0", &[])).write(&dir, "clean.toml");
    let link = ["link = { delay_ms = 20.0 }"];
    let delayed = LaunchFile::two_netns_hosts(d, ("cvd_p20", &link), ("cvd_q20", &link))
        .write(&dir, "delayed.toml");
    let _clean = Namespaces::up(&clean);
    let _delayed = Namespaces(delayed.clone());
    let up = run_ok(
        convoy().args(["netns", "up"]).arg(&delayed),
        Duration::from_secs(60),
    );
    let emulated = "link delay: emulated in convoy's transport (no netem in this kernel)";
    let said = |host: &str| {
        [emulated, "link delay: netem"]
            .into_iter()
            .find(|line| up.contains(&format!("host {host}: {line}")))
    };
    let (Some(p), Some(q)) = (said("p"), said("q")) else {
        panic!("netns up did not say how it delays:\n{up}");
    };
    assert_eq!(p, q, "{up}");

    let (without, _) = round_trip_p50(&clean, d);
    let (with, out) = round_trip_p50(&delayed, d);
    let added_ms = (with - without) / 1e3;
    eprintln!(
        "64 B round trip p50: {without:.1} µs without delay, {with:.1} µs with 20 ms each way \
         ({p}): +{added_ms:.2} ms"
    );
    assert!(
        (36.0..=44.0).contains(&added_ms),
        "20 ms each way added {added_ms:.2} ms to the round trip (p50 {without:.1} -> \
         {with:.1} µs):\n{out}"
    );
    if p == emulated {
        // Ping and pong each say which emulation they send through.
        let said = out
            .matches("link emulation in convoy's transport (CONVOY_LINK): ")
            .count();
        assert_eq!(said, 2, "{out}");
        assert!(out.contains("delay 20 ms to every other host"), "{out}");
    }
    netns("down", &delayed);
    netns("down", &clean);
}

/// A bad CONVOY_LINK stops a node at start with the variable, the entry and the bad key.
#[test]
fn a_bad_link_emulation_value_names_the_variable_and_the_key() {
    let _machine = beside_others();
    let err = run_fails(
        convoy_on(domain::LINK_BAD_VALUE)
            .env("CONVOY_LINK", "10.77.0.2:delay_ms=20,jiter_ms=2")
            .args(["topic", "list", "--wait", "1"]),
        Duration::from_secs(30),
    );
    assert!(
        err.contains(
            "CONVOY_LINK='10.77.0.2:delay_ms=20,jiter_ms=2': entry \
             '10.77.0.2:delay_ms=20,jiter_ms=2': unknown key 'jiter_ms' (keys: delay_ms, \
             jitter_ms, loss_pct, rate_mbit)"
        ),
        "{err}"
    );
    let err = run_fails(
        convoy_on(domain::LINK_BAD_VALUE)
            .env("CONVOY_LINK", "delay_ms=soon")
            .args(["topic", "list", "--wait", "1"]),
        Duration::from_secs(30),
    );
    assert!(
        err.contains("CONVOY_LINK='delay_ms=soon'")
            && err.contains("delay_ms='soon': expected a number 0..=60000 (ms)"),
        "{err}"
    );
}
