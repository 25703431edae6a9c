//! `convoy launch`: a graph over three network-namespace hosts, and QoS swapped per run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use convoy_tests::{
    convoy, domain, find_node_process, netns, processes_on_domain, repo_root, run_with_timeout,
    scratch_dir, wait_for_line, wait_until, watchdog, workspace_bin, ChildGuard, Namespaces,
};

const FOUR_CARS: &str = r#"
[scenario]
name = "four_cars"
dt = 0.01
lease = 1.5

[[agents]]
id = "a1"
start = { x = 0.0, y = 0.0 }
controller = { kind = "waypoints", speed = 5.0, path = [[0.0, 0.0], [400.0, 0.0]] }

[[agents]]
id = "a2"
start = { x = 0.0, y = 10.0 }
controller = { kind = "waypoints", speed = 5.0, path = [[0.0, 10.0], [400.0, 10.0]] }

[[agents]]
id = "b1"
start = { x = 0.0, y = 20.0 }
controller = { kind = "waypoints", speed = 5.0, path = [[0.0, 20.0], [400.0, 20.0]] }

[[agents]]
id = "b2"
start = { x = 0.0, y = 30.0 }
controller = { kind = "waypoints", speed = 5.0, path = [[0.0, 30.0], [400.0, 30.0]] }
"#;

fn three_hosts(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("four_cars.toml"), FOUR_CARS).expect("scenario");
    let launch = format!(
        r#"
[run]
domain = {}
scenario = "four_cars.toml"

[hosts.a]
address = "netns:cvt_a"

[hosts.b]
address = "netns:cvt_b"

[hosts.c]
address = "netns:cvt_c"

[[nodes]]
kind = "coordinator"
host = "a"

[[nodes]]
kind = "agent"
host = "a"
agents = ["a1", "a2"]

[[nodes]]
kind = "agent"
host = "b"
agents = ["b1", "b2"]
"#,
        domain::LAUNCH_NETNS
    );
    let path = dir.join("three_hosts.toml");
    std::fs::write(&path, launch).expect("launch file");
    path
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
    watchdog("three hosts", Duration::from_secs(300));
    let dir = scratch_dir("three_hosts");
    let file = three_hosts(&dir);
    let d = domain::LAUNCH_NETNS;

    let (ok, out, err) = run_with_timeout(
        convoy().args(["launch"]).arg(&file).arg("--check"),
        Duration::from_secs(30),
    );
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("agent/b2") && out.contains("on b (netns:cvt_b)"),
        "{out}"
    );

    netns("up", &file);
    let _cleanup = Namespaces(file.clone());
    assert_eq!(namespaces().len(), 3);

    let mut launch = ChildGuard::spawn(
        "convoy launch",
        convoy()
            .args(["launch"])
            .arg(&file)
            .args(["--frames", "1000000"])
            .env("RUST_LOG", "info,rustdds=off")
            .stdout(Stdio::piped()),
    );
    let lines = launch.stdout_lines();
    let limit = Duration::from_secs(60);
    // Remote states arrive: a1 (host a) mirrors b1 and b2 (host b) as zombies, and the
    // lockstep runs, which needs every agent's state every frame across the bridge.
    wait_for_line(&lines, limit, "a1's zombies from both hosts", |l| {
        l.contains("agent/a1] ") && l.contains(r#"zombies now ["a2", "b1", "b2"]"#)
    });
    wait_for_line(&lines, limit, "lockstep progress", |l| {
        l.contains("] frame ") && l.contains("agents 4")
    });

    // Kill the remote agent b2 outright.
    let pid = find_node_process(d, "convoy-agent", "--id", "b2").expect("b2's process");
    // SAFETY: kill(2) with SIGKILL on a process of this test's own graph.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    // Three things follow, in whatever order the nodes' outputs interleave: the coordinator
    // drops b2, a1 drops b2's zombie, and the lockstep goes on with three agents.
    let mut left = false;
    let mut zombie_gone = false;
    let mut three = false;
    let mut seen = Vec::new();
    let until = std::time::Instant::now() + limit;
    while !(left && zombie_gone && three) {
        let wait = until.saturating_duration_since(std::time::Instant::now());
        let Ok(l) = lines.recv_timeout(wait) else {
            panic!(
                "after killing b2: left {left}, zombie gone {zombie_gone}, 3 agents {three}; lines:\n{}",
                seen.join("\n")
            );
        };
        left |= l.contains("agent b2 left the run");
        zombie_gone |= l.contains("agent/a1] ") && l.contains(r#"zombies now ["a2", "b1"]"#);
        three |= left && l.contains("] frame ") && l.contains("agents 3");
        seen.push(l);
    }

    let status = launch.terminate(Duration::from_secs(15));
    assert!(status.is_some(), "convoy launch did not stop on SIGTERM");
    wait_until("no node left", Duration::from_secs(10), || {
        processes_on_domain(d).is_empty()
    });
    netns("down", &file);
    assert!(
        namespaces().is_empty(),
        "namespaces left: {:?}",
        namespaces()
    );
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
    let path = dir.join("three_hosts.toml");
    std::fs::write(&path, text).expect("launch file");
    path
}

/// A sample's header frame, from `convoy topic echo --json`.
fn header_frame(line: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    v["header"]["frame"].as_u64()
}

#[test]
fn a_dead_client_sensor_nodes_sensors_move_to_the_main_and_resume() {
    watchdog("sensor failover", Duration::from_secs(300));
    let dir = scratch_dir("sensor_failover");
    let file = shipped_three_hosts(&dir);
    let d = domain::SENSOR_FAILOVER;
    netns("up", &file);
    let _cleanup = Namespaces(file.clone());

    let mut launch = ChildGuard::spawn(
        "convoy launch",
        convoy()
            .args(["launch"])
            .arg(&file)
            .args(["--frames", "1000000"])
            .env("RUST_LOG", "warn,rustdds=off")
            .stdout(Stdio::piped()),
    );
    let lines = launch.stdout_lines();
    let limit = Duration::from_secs(90);
    // The client on host c takes both client_only radars; the main the rest.
    for sensor in ["car_00/front_radar", "car_08/rear_radar"] {
        wait_for_line(&lines, limit, &format!("{sensor} placed on c"), |l| {
            l.contains(&format!("sensor {sensor} -> c ")) && l.contains("epoch 1")
        });
    }
    wait_for_line(&lines, limit, "lockstep progress", |l| {
        l.contains("] frame ") && l.contains("agents 16")
    });
    // A subscriber on host a, in another process: the rear radar's samples.
    let mut echo = ChildGuard::spawn(
        "topic echo",
        Command::new("ip")
            .args(["netns", "exec", "cvf_a"])
            .arg(workspace_bin("convoy"))
            .args(["--domain", &d.to_string(), "topic", "echo", "--json"])
            .arg("convoy/sensor/car_08/rear_radar")
            .stdout(Stdio::piped()),
    );
    let samples = echo.stdout_lines();
    let first = wait_for_line(&samples, limit, "a rear radar sample from c", |l| {
        header_frame(l).is_some()
    });
    let before = header_frame(&first).unwrap_or(0);

    // Kill the client sensor node outright.
    let pid = find_node_process(d, "convoy-sensor", "--name", "c").expect("sensor node c");
    // SAFETY: kill(2) with SIGKILL on a process of this test's own graph.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
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
        l.contains("] frame ") && l.contains("agents 16")
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
    let status = launch.terminate(Duration::from_secs(15));
    assert!(status.is_some(), "convoy launch did not stop on SIGTERM");
    wait_until("no node left", Duration::from_secs(10), || {
        processes_on_domain(d).is_empty()
    });
}

/// The reliability the agent state writers announce, read back through discovery.
fn announced_reliability(domain: u32) -> String {
    let mut last = String::new();
    for _ in 0..15 {
        let (ok, out, err) = run_with_timeout(
            convoy().args([
                "--domain",
                &domain.to_string(),
                "topic",
                "list",
                "--verbose",
                "--wait",
                "1",
            ]),
            Duration::from_secs(60),
        );
        assert!(ok, "{err}");
        // The block of the topic, up to the next topic line.
        if let Some(start) = out.find("convoy/agent/ego/state  [") {
            let block: String = out[start..]
                .lines()
                .skip(1)
                .take_while(|l| l.starts_with(' '))
                .collect::<Vec<_>>()
                .join("\n");
            if block.contains("writer") {
                return block;
            }
        }
        last = out;
    }
    panic!("convoy/agent/ego/state never listed with a writer:\n{last}");
}

#[test]
fn the_same_launch_file_runs_with_swapped_qos() {
    watchdog("qos swap", Duration::from_secs(300));
    let dir = scratch_dir("qos_swap");
    let scenario = repo_root().join("launch/scenarios/two_cars.toml");
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
        let file = dir.join(format!("local_{d}.toml"));
        std::fs::write(
            &file,
            format!(
                "[run]\ndomain = {d}\nscenario = \"{}\"\n\n[[nodes]]\nkind = \"coordinator\"\nhost = \"local\"\n\n[[nodes]]\nkind = \"agent\"\nhost = \"local\"\n",
                scenario.display()
            ),
        )
        .expect("launch file");
        let mut cmd = convoy();
        cmd.arg("launch").arg(&file).args(["--duration", "100000"]);
        if let Some(q) = qos {
            cmd.args(["--with-qos", q]);
        }
        let mut launch = ChildGuard::spawn("convoy launch", cmd.stdout(Stdio::piped()));
        let lines = launch.stdout_lines();
        wait_for_line(&lines, Duration::from_secs(60), "the run", |l| {
            l.contains("] frame ")
        });
        let block = announced_reliability(d);
        assert!(block.contains(expected), "QoS {qos:?}: {block}");
        assert!(!block.contains(other), "QoS {qos:?}: {block}");
        launch.terminate(Duration::from_secs(15));
        wait_until("no node left", Duration::from_secs(10), || {
            processes_on_domain(d).is_empty()
        });
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
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\n\
             PidFile {}\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             StrictModes no\nUsePAM no\n",
            host_key.display(),
            dir.join("authorized_keys").display(),
            dir.join("sshd.pid").display()
        ),
    )
    .expect("sshd_config");
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
    watchdog("ssh host", Duration::from_secs(300));
    let dir = scratch_dir("ssh");
    let d = domain::LAUNCH_SSH;
    let sshd = start_sshd(&dir, 22_000 + d as u16);
    let scenario = repo_root().join("launch/scenarios/two_cars.toml");
    let file = dir.join("ssh.toml");
    std::fs::write(
        &file,
        format!(
            "[run]\ndomain = {d}\nscenario = \"{}\"\n\n[hosts.remote]\naddress = \"ssh://root@127.0.0.1\"\n\n\
             [[nodes]]\nkind = \"coordinator\"\nhost = \"local\"\n\n\
             [[nodes]]\nkind = \"agent\"\nhost = \"remote\"\nagents = [\"ego\"]\n\n\
             [[nodes]]\nkind = \"agent\"\nhost = \"local\"\n",
            scenario.display()
        ),
    )
    .expect("launch file");
    let log = dir.join("states.jsonl");
    let (ok, out, err) = run_with_timeout(
        convoy()
            .arg("launch")
            .arg(&file)
            .args(["--frames", "300", "--state-log"])
            .arg(&log)
            .env("CONVOY_SSH_OPTS", &sshd.options),
        Duration::from_secs(120),
    );
    assert!(ok, "launch over ssh failed:\n{out}\n{err}");
    assert!(
        out.contains("agent/ego        on remote (ssh://root@127.0.0.1)"),
        "{out}"
    );
    assert!(out.contains("done: 300 frames"), "{out}");
    let states = convoy_tests::read_state_log(&log);
    assert!(
        states.contains_key(&(300, "ego".to_string())),
        "no state of the ssh agent"
    );
    wait_until("no node left", Duration::from_secs(15), || {
        processes_on_domain(d).is_empty()
    });
}

#[test]
fn bench_latency_runs_between_two_namespace_hosts_over_a_lossy_link() {
    watchdog("netns bench", Duration::from_secs(300));
    let dir = scratch_dir("netns_bench");
    let d = domain::LAUNCH_NETNS_BENCH;
    let file = dir.join("lossy.toml");
    std::fs::write(
        &file,
        format!(
            "[run]\ndomain = {d}\nscenario = \"{}\"\n\n\
             [hosts.p]\naddress = \"netns:cvt_px\"\nlink = {{ loss_pct = 2.0 }}\n\n\
             [hosts.q]\naddress = \"netns:cvt_py\"\n\n\
             [[nodes]]\nkind = \"coordinator\"\nhost = \"p\"\n\n\
             [[nodes]]\nkind = \"agent\"\nhost = \"q\"\n",
            repo_root().join("launch/scenarios/two_cars.toml").display()
        ),
    )
    .expect("launch file");
    netns("up", &file);
    let _cleanup = Namespaces(file.clone());
    let csv = dir.join("latency.csv");
    let _ = std::fs::remove_file(&csv);
    let (ok, out, err) = run_with_timeout(
        convoy()
            .args(["bench", "latency", "--netns-hosts"])
            .arg(&file)
            .args([
                "--domain",
                &d.to_string(),
                "--sizes",
                "64",
                "--duration",
                "1",
                "--out",
            ])
            .arg(&csv),
        Duration::from_secs(120),
    );
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("ping on host p (netns cvt_px), pong on host q (netns cvt_py)"),
        "{out}"
    );
    let text = std::fs::read_to_string(&csv).expect("csv");
    let row: Vec<&str> = text.lines().nth(1).expect("a row").split(',').collect();
    assert!(row[2].parse::<u64>().expect("round trips") > 0, "{text}");
    // Reliable over a 2% lossy link: repaired, never lost.
    assert_eq!(row[8], "0", "{text}");
    netns("down", &file);
}

/// Drops every multicast datagram a namespace sends: a network without multicast.
fn block_multicast(ns: &str) {
    for args in [
        vec!["add", "table", "ip", "convoy_nomc"],
        vec![
            "add",
            "chain",
            "ip",
            "convoy_nomc",
            "out",
            "{ type filter hook output priority 0 ; }",
        ],
        vec![
            "add",
            "rule",
            "ip",
            "convoy_nomc",
            "out",
            "ip",
            "daddr",
            "224.0.0.0/4",
            "drop",
        ],
    ] {
        let status = Command::new("ip")
            .args(["netns", "exec", ns, "nft"])
            .args(&args)
            .status()
            .expect("nft (Debian nftables)");
        assert!(status.success(), "nft {args:?} in {ns} failed");
    }
}

/// One latency bench between the two hosts: pong on q, ping on p, each with `peers` as
/// CONVOY_PEERS (None: unset). Returns whether the ping side succeeded, and its output.
fn ping_pong_without_multicast(peers: Option<(&str, &str)>) -> (bool, String) {
    let d = domain::NO_MULTICAST.to_string();
    let bin = workspace_bin("convoy");
    let mut pong_cmd = Command::new("ip");
    pong_cmd
        .args(["netns", "exec", "cvu_q"])
        .arg(&bin)
        .args(["--domain", &d, "bench", "latency", "--role", "pong"])
        .stdout(Stdio::null());
    let mut ping_cmd = Command::new("ip");
    ping_cmd
        .args(["netns", "exec", "cvu_p"])
        .arg(&bin)
        .args([
            "--domain", &d, "bench", "latency", "--role", "ping", "--sizes", "64,65536",
        ])
        .args(["--duration", "0.5", "--match-timeout", "6"]);
    for cmd in [&mut pong_cmd, &mut ping_cmd] {
        cmd.env_remove("CONVOY_PEERS").env_remove("CONVOY_DOMAIN");
    }
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
    watchdog("no multicast", Duration::from_secs(200));
    let dir = scratch_dir("no_multicast");
    let file = dir.join("two_hosts.toml");
    let scenario = repo_root().join("launch/scenarios/two_cars.toml");
    std::fs::write(
        &file,
        format!(
            "[run]\ndomain = {}\nscenario = \"{}\"\n\n[hosts.p]\naddress = \"netns:cvu_p\"\nip = \"10.77.251.1/24\"\n\n\
             [hosts.q]\naddress = \"netns:cvu_q\"\nip = \"10.77.251.2/24\"\n\n\
             [[nodes]]\nkind = \"coordinator\"\nhost = \"p\"\n\n[[nodes]]\nkind = \"agent\"\nhost = \"q\"\n",
            domain::NO_MULTICAST,
            scenario.display()
        ),
    )
    .expect("launch file");
    netns("up", &file);
    let _cleanup = Namespaces(file.clone());
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
