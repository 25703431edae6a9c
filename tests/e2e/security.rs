//! `convoy security init`: the files of a secured run, checked by independent tools — OpenSSL
//! (certificate chains, S/MIME signatures) and CycloneDDS's own DDS Security plugins (the
//! Debian build's libdds_security_{auth,ac,crypto}), which must accept a node's identity,
//! permissions and governance for the run's domain and refuse them for another, or tampered.
//! Then convoy's own nodes secured with them (`CONVOY_SECURITY`): they talk, an outsider on the
//! same domain sees and reaches nothing, and tampered or missing files stop a node at start.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use convoy_tests::files::{file_mode, fresh_dir};
use convoy_tests::{
    convoy, convoy_on, cyclone_programs, cyclone_security_config, domain, repo_root,
    rogue_cyclone_security_config, run_fails, run_ok, run_with_timeout, take_turn, watchdog,
    ChildGuard,
};

const LIMIT: Duration = Duration::from_secs(60);

/// `convoy security init` of two_cars.toml's nodes and a ROS 2 bridge into a new folder.
fn init(name: &str, domain: u32) -> PathBuf {
    let dir = fresh_dir("security", name).join("run");
    let scenario = repo_root().join("launch/scenarios/two_cars.toml");
    run_ok(
        convoy()
            .args(["security", "init"])
            .arg(&dir)
            .args(["--domain", &domain.to_string(), "--scenario"])
            .arg(&scenario)
            .args(["--node", "bridge/ros2"]),
        LIMIT,
    );
    dir
}

fn openssl(args: &[&str], dir: &Path) -> (bool, String) {
    let (ok, out, err) =
        run_with_timeout(Command::new("openssl").args(args).current_dir(dir), LIMIT);
    (ok, format!("{out}{err}"))
}

#[test]
fn every_node_gets_a_chained_identity_and_signed_documents_and_keys_stay_private() {
    watchdog("security init", Duration::from_secs(120));
    let dir = init("files", domain::SECURITY_CYCLONE);
    assert_eq!(file_mode(&dir), 0o700);
    assert_eq!(file_mode(&dir.join("ca.key.pem")), 0o600);
    let nodes = [
        "coordinator",
        "agent_ego",
        "agent_car_2",
        "sensor_main",
        "bridge_ros2",
        "cli",
    ];
    for node in nodes {
        let enclave = dir.join("enclaves").join(node);
        assert_eq!(file_mode(&enclave), 0o700, "{node}");
        assert_eq!(file_mode(&enclave.join("key.pem")), 0o600, "{node}");
        let (ok, out) = openssl(
            &["verify", "-CAfile", "identity_ca.cert.pem", "cert.pem"],
            &enclave,
        );
        assert!(
            ok,
            "{node}'s certificate does not chain to the run's CA: {out}"
        );
        for document in ["permissions.p7s", "governance.p7s"] {
            let (ok, out) = openssl(
                &[
                    "smime",
                    "-verify",
                    "-text",
                    "-in",
                    document,
                    "-CAfile",
                    "permissions_ca.cert.pem",
                    "-out",
                    "/dev/null",
                ],
                &enclave,
            );
            assert!(ok, "{node}'s {document} does not verify: {out}");
        }
        // The grant names the certificate's subject, with a validity around now.
        let (ok, subject) = openssl(
            &[
                "x509", "-in", "cert.pem", "-noout", "-subject", "-nameopt", "RFC2253",
            ],
            &enclave,
        );
        assert!(ok, "{subject}");
        let permissions =
            std::fs::read_to_string(enclave.join("permissions.xml")).expect("permissions.xml");
        let cn = node.replacen('_', "/", usize::from(node != "cli"));
        assert!(
            subject.contains(&format!("O=convoy run run,CN={cn}"))
                && permissions.contains(&format!(
                    "<subject_name>O=convoy run run,CN={cn}</subject_name>"
                )),
            "{node}: subject {subject} against\n{permissions}"
        );
    }
    let ego = std::fs::read_to_string(dir.join("enclaves/agent_ego/permissions.xml"))
        .expect("permissions.xml");
    assert!(
        ego.contains("<topic>convoy/agent/ego/state</topic>"),
        "{ego}"
    );
    assert!(
        !ego.contains("car_2"),
        "ego may write another agent's topics:\n{ego}"
    );
    // A second init into the same folder is refused: keys are never written over.
    let again = run_fails(
        convoy()
            .args(["security", "init"])
            .arg(&dir)
            .args(["--node", "cli"]),
        LIMIT,
    );
    assert!(again.contains("not empty"), "{again}");
}

#[test]
fn bad_arguments_are_errors_that_name_them() {
    let dir = fresh_dir("security", "bad").join("run");
    let cases: [(&[&str], &str); 4] = [
        (
            &["--node", "agent/ego", "--encrypt", "sensors"],
            "unknown topic class 'sensors'",
        ),
        (&["--node", "agent/e,go"], "node id 'agent/e,go'"),
        (
            &["--node", "agent/ego", "--valid-hours", "0"],
            "--valid-hours 0",
        ),
        (&[], "no nodes"),
    ];
    for (args, message) in cases {
        let err = run_fails(
            convoy().args(["security", "init"]).arg(&dir).args(args),
            LIMIT,
        );
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!dir.exists(), "{args:?} left {}", dir.display());
    }
}

/// What `ddsperf` secured by `config` says on `domain`: whether its participant was made
/// (it then fails at its own topics, which convoy's governance does not list), and its output.
fn cyclone_participant(config: &Path, domain: u32) -> (bool, String) {
    let (_, out, err) = run_with_timeout(
        Command::new("ddsperf")
            .env("CYCLONEDDS_URI", format!("file://{}", config.display()))
            .args(["-D", "1", "-i", &domain.to_string(), "pub"]),
        LIMIT,
    );
    let text = format!("{out}{err}");
    let refused = text.contains("dds_create_participant");
    let admitted = text.contains("dds_create_topic") && !refused;
    (admitted, text)
}

#[test]
fn cyclone_dds_security_admits_a_node_on_the_run_domain_only() {
    watchdog("security with cyclone", Duration::from_secs(120));
    let d = domain::SECURITY_CYCLONE;
    let dir = init("cyclone", d);
    let enclave = dir.join("enclaves/agent_ego");
    let scratch = fresh_dir("security", "cyclone-config");
    let config = cyclone_security_config(&enclave, &scratch);
    let (admitted, text) = cyclone_participant(&config, d);
    assert!(
        admitted,
        "Cyclone refused the run's own files on domain {d}:\n{text}"
    );
    let (admitted, text) = cyclone_participant(&config, d + 1);
    assert!(!admitted, "Cyclone admitted domain {}:\n{text}", d + 1);
    assert!(text.contains("governance"), "{text}");

    // One changed byte in the signed permissions: refused.
    let tampered_dir = fresh_dir("security", "cyclone-tampered");
    for file in [
        "identity_ca.cert.pem",
        "permissions_ca.cert.pem",
        "governance.p7s",
        "cert.pem",
        "key.pem",
        "permissions.p7s",
    ] {
        std::fs::copy(enclave.join(file), tampered_dir.join(file)).expect("copy");
    }
    let permissions = std::fs::read_to_string(tampered_dir.join("permissions.p7s")).expect("p7s");
    let changed = permissions.replacen(
        "<topic>convoy/agent/ego/state</topic>",
        "<topic>convoy/agent/*/state</topic>",
        1,
    );
    assert_ne!(changed, permissions);
    std::fs::write(tampered_dir.join("permissions.p7s"), changed).expect("write");
    let config = cyclone_security_config(&tampered_dir, &scratch);
    let (admitted, text) = cyclone_participant(&config, d);
    assert!(!admitted, "Cyclone admitted tampered permissions:\n{text}");
}

/// `convoy bench latency --role ping` for one 64 B round-trip run on `domain`, secured with
/// `enclave` or not; (succeeded, stdout and stderr).
fn ping(domain: u32, enclave: Option<&Path>, match_timeout: &str) -> (bool, String) {
    let mut cmd = convoy_on(domain);
    cmd.args(["bench", "latency", "--role", "ping", "--sizes", "64"])
        .args(["--duration", "1", "--match-timeout", match_timeout]);
    match enclave {
        Some(dir) => cmd.env("CONVOY_SECURITY", dir),
        None => cmd.env_remove("CONVOY_SECURITY"),
    };
    let (ok, out, err) = run_with_timeout(&mut cmd, LIMIT);
    (ok, format!("{out}{err}"))
}

/// The topics an unsecured `convoy topic list` discovers on `domain` within 2 s.
fn unsecured_topic_list(domain: u32) -> String {
    let (_, out, err) = run_with_timeout(
        convoy_on(domain)
            .env_remove("CONVOY_SECURITY")
            .args(["topic", "list", "--wait", "2"]),
        LIMIT,
    );
    format!("{out}{err}")
}

fn pong(domain: u32, enclave: Option<&Path>) -> ChildGuard {
    let mut cmd = convoy_on(domain);
    cmd.args(["bench", "latency", "--role", "pong"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match enclave {
        Some(dir) => cmd.env("CONVOY_SECURITY", dir),
        None => cmd.env_remove("CONVOY_SECURITY"),
    };
    ChildGuard::spawn("pong", &mut cmd)
}

#[test]
fn secured_nodes_talk_and_an_unsecured_participant_sees_and_reaches_nothing() {
    watchdog("secured nodes", Duration::from_secs(240));
    let _turn = take_turn();
    let d = domain::SECURITY_NODES;
    let dir = init("nodes", d);
    let cli = dir.join("enclaves/cli");
    let secured_pong = pong(d, Some(&cli));
    // Two secured participants (rustdds's builtin plugins) authenticate, exchange keys and
    // measure round trips through encrypted discovery and signed bench samples.
    let (ok, text) = ping(d, Some(&cli), "60");
    assert!(ok, "a secured ping got no answer:\n{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("64 "))
        .unwrap_or_else(|| panic!("no 64 B row:\n{text}"));
    let round_trips_per_s: f64 = row
        .split_whitespace()
        .nth(5)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    assert!(round_trips_per_s > 0.0, "{row}");
    // Without the run's certificates: no topic is seen and no reader answers.
    let seen = unsecured_topic_list(d);
    assert!(
        !seen.contains("convoy/bench"),
        "an outsider saw the run's topics:\n{seen}"
    );
    let (ok, text) = ping(d, None, "3");
    assert!(!ok, "an unsecured ping was answered:\n{text}");
    assert!(text.contains("0 of 1 readers matched"), "{text}");
    // The same outsider sees an unsecured pong's topics: the listing itself works.
    drop(secured_pong);
    let _open_pong = pong(d, None);
    let seen = lines_until_seen(d, "convoy/bench/ping");
    assert!(seen.contains("convoy/bench/ping"), "{seen}");
}

/// An unsecured topic listing of `domain` until it shows `topic` (bounded: a few tries).
fn lines_until_seen(domain: u32, topic: &str) -> String {
    let mut seen = String::new();
    for _ in 0..10 {
        seen = unsecured_topic_list(domain);
        if seen.contains(topic) {
            break;
        }
    }
    seen
}

#[test]
fn a_tampered_or_missing_security_file_stops_the_node_naming_the_folder() {
    let d = domain::SECURITY_TAMPERED;
    let dir = init("tampered", d);
    let cli = dir.join("enclaves/cli");
    let permissions = cli.join("permissions.p7s");
    let text = std::fs::read_to_string(&permissions).expect("permissions.p7s");
    let widened = text.replacen(
        "<topic>convoy/bench/*</topic>",
        "<topic>convoy/*</topic>",
        1,
    );
    assert_ne!(widened, text);
    std::fs::write(&permissions, widened).expect("write");
    let (ok, out) = ping(d, Some(&cli), "2");
    assert!(!ok, "a node started with tampered permissions:\n{out}");
    assert!(
        out.contains(&format!("with the security files in {}", cli.display()))
            && out.contains("signature"),
        "{out}"
    );
    std::fs::remove_file(cli.join("key.pem")).expect("remove key");
    let (ok, out) = ping(d, Some(&cli), "2");
    assert!(!ok, "{out}");
    assert!(out.contains("key.pem is missing"), "{out}");
}

/// Issue 40's "a node whose grant lacks a topic cannot write it", at the readers: a CycloneDDS
/// participant with the run's coordinator certificate and grant, but an access control plugin
/// that skips its own writer check (tests/interop/rogue_access_control.c), announces writers
/// for the clock (its grant allows it) and for an agent's state (its grant does not). A secured
/// convoy reader takes the clock from it and refuses the state writer: nothing arrives.
#[test]
fn readers_refuse_a_writer_whose_grant_lacks_its_topic() {
    watchdog("rogue writer", Duration::from_secs(180));
    let _turn = take_turn();
    let d = domain::SECURITY_ROGUE_WRITER;
    let dir = init("rogue-writer", d);
    let scratch = fresh_dir("security", "rogue-writer-config");
    let config = rogue_cyclone_security_config(&dir.join("enclaves/coordinator"), &scratch);
    let (_peer, lines) = ChildGuard::spawn_with_stdout(
        "rogue cyclone writer",
        Command::new(cyclone_programs().join("cyclone_peer"))
            .env("CYCLONEDDS_URI", format!("file://{}", config.display()))
            .args([&d.to_string(), "120", "write"])
            .args(["Tick=convoy/clock", "AgentState=convoy/agent/ego/state"]),
    );
    // Both writers exist: the peer's own check, which would refuse the state, is off.
    let mut writers = Vec::new();
    while writers.len() < 2 {
        let line = lines
            .recv_timeout(LIMIT)
            .unwrap_or_else(|_| panic!("the rogue peer made writers {writers:?} only"));
        if let Some(topic) = line.strip_prefix("WRITER ") {
            writers.push(topic.to_string());
        }
    }
    let echo = |topic: &str, seconds: &str| {
        run_with_timeout(
            convoy_on(d)
                .env("CONVOY_SECURITY", dir.join("enclaves/cli"))
                .args(["topic", "echo", topic, "--count", "1", "--timeout", seconds]),
            LIMIT,
        )
    };
    let (ok, out, err) = echo("convoy/clock", "40");
    assert!(
        ok,
        "the coordinator identity's clock did not arrive:\n{out}\n{err}"
    );
    assert!(out.contains("frame"), "{out}");
    // The same participant, already discovered: its state writer is refused.
    let (ok, out, err) = echo("convoy/agent/ego/state", "8");
    assert!(
        !ok,
        "a state written with the coordinator's grant arrived:\n{out}"
    );
    assert!(err.contains("no sample"), "{err}");
}
