//! idl/convoy.idl and convoy-core's Rust types agree, proven against an independent DDS:
//! CycloneDDS with types generated from the IDL by `idlc` (tests/interop/cyclone_peer.c).
//!
//! Both sides build the same canonical sample of each type independently. convoy writes its
//! samples on `interop/to_cyclone/<Type>`; the peer compares every field and prints
//! `OK <Type>` or `MISMATCH ...`. The peer writes its samples on `interop/from_cyclone/<Type>`;
//! this test compares every field with `==`. The same exchange runs again in a secured run,
//! both sides with DDS Security and the run's certificates, the payloads encrypted.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use convoy_core::dds::security::SECURITY_ENV;
use convoy_core::dds::{Node, Publisher, Subscriber};
use convoy_core::messages::*;
use convoy_core::qos::QosSet;
use convoy_core::topics::{Topic, TopicClass};
use convoy_tests::files::fresh_dir;
use convoy_tests::{
    convoy, cyclone_programs, cyclone_security_config, domain, run_ok, take_turn, watchdog,
    ChildGuard,
};

const QOS: &str = r#"<dds><qos_library name="interop">
  <qos_profile name="bench">
    <datawriter_qos>
      <reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>
      <history><kind>KEEP_LAST_HISTORY_QOS</kind><depth>8</depth></history>
    </datawriter_qos>
    <datareader_qos>
      <reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>
      <history><kind>KEEP_LAST_HISTORY_QOS</kind><depth>8</depth></history>
    </datareader_qos>
  </qos_profile>
</qos_library></dds>"#;

fn state(id: &str, frame: u64, x: f64) -> AgentState {
    AgentState {
        agent_id: id.into(),
        frame,
        stamp_ns: frame as i64 * 10_000_000,
        pose: Pose {
            position: Vec3::new(x, -2.25, 0.125),
            orientation: Quat::new(0.0, 0.0, 0.38268343236508984, 0.9238795325112867),
        },
        twist: Twist {
            linear: Vec3::new(3.0, 0.5, -0.0625),
            angular: Vec3::new(0.01, -0.02, 0.3),
        },
        accel: Vec3::new(0.25, -9.81, 1e-9),
        extents: Vec3::new(2.25, 1.0, 0.75),
    }
}

fn header(sensor: &str, seq: u64) -> SensorHeader {
    SensorHeader {
        agent: "ego".into(),
        sensor: sensor.into(),
        frame: 43,
        stamp_ns: 430_000_000,
        seq,
    }
}

fn tick() -> Tick {
    Tick {
        frame: 43,
        sim_time_ns: 430_000_000,
        dt_ns: 10_000_000,
        paused: true,
        agents: vec!["car_2".into(), "ego".into()],
        states: vec![state("car_2", 42, 11.5), state("ego", 42, 1.5)],
    }
}

fn node_status() -> NodeStatus {
    NodeStatus {
        node_id: "sensor-main".into(),
        role: NodeRole::SensorMain,
        host: "host-a".into(),
        capacity: 1.5,
        load: 0.65,
        counters: vec![
            Counter {
                name: "dropped_token_busy".into(),
                value: 3,
            },
            Counter {
                name: "published".into(),
                value: u64::MAX,
            },
        ],
    }
}

fn image() -> Image {
    Image {
        header: header("front_cam", 7),
        width: 64,
        height: 48,
        encoding: "rgb8".into(),
        step: 192,
        data: (0..9216u32).map(|i| ((i * 7 + 3) % 256) as u8).collect(),
    }
}

fn point_cloud() -> PointCloud {
    let field = |name: &str, offset, datatype| PointField {
        name: name.into(),
        offset,
        datatype,
    };
    PointCloud {
        header: header("top_lidar", 8),
        point_count: 1000,
        point_step: 16,
        fields: vec![
            field("x", 0, PointFieldType::Float32),
            field("y", 4, PointFieldType::Float32),
            field("z", 8, PointFieldType::Float32),
            field("intensity", 12, PointFieldType::Uint8),
            field("return_type", 13, PointFieldType::Uint8),
            field("channel", 14, PointFieldType::Uint16),
        ],
        data: (0..16000u32).map(|i| ((i * 13 + 1) % 251) as u8).collect(),
    }
}

fn gnss() -> GnssFix {
    let mut covariance = [0.0; 9];
    for (i, c) in covariance.iter_mut().enumerate() {
        *c = (i + 1) as f64 * 0.5;
    }
    GnssFix {
        header: header("gnss", 9),
        latitude: 48.137154,
        longitude: 11.576124,
        altitude: 519.25,
        position_covariance: covariance,
    }
}

fn world_request() -> WorldRequest {
    WorldRequest {
        request_id: "cli-1-7".into(),
        client: "cli-1".into(),
        command: WorldCommand {
            kind: WorldCommandKind::Teleport,
            agent_id: "ego".into(),
            pose: Pose {
                position: Vec3::new(10.0, 0.0, 0.5),
                orientation: Quat::IDENTITY,
            },
            control: Control {
                frame: 0,
                mode: ControlMode::Velocity,
                throttle: 0.5,
                brake: 0.0,
                steer: -0.25,
                linear_velocity: 5.5,
                angular_velocity: -0.125,
            },
        },
    }
}

/// One type's two directions.
trait Check {
    fn name(&self) -> &'static str;
    fn send(&self);
    /// Some(true) when the peer's sample arrived and equals ours; Some(false) on a mismatch.
    fn receive(&mut self) -> Option<Result<(), String>>;
}

struct Pair<M: Message + PartialEq> {
    name: &'static str,
    canonical: M,
    to: Publisher<M>,
    from: Subscriber<M>,
}

impl<M: Message + PartialEq> Check for Pair<M> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn send(&self) {
        self.to
            .write(self.canonical.clone())
            .unwrap_or_else(|e| panic!("write {}: {e}", self.name));
    }
    fn receive(&mut self) -> Option<Result<(), String>> {
        let got = self.from.take(8).into_iter().last()?;
        Some(if got.value == self.canonical {
            Ok(())
        } else {
            Err(format!(
                "{}: cyclone wrote\n{:?}\nconvoy expected\n{:?}",
                self.name, got.value, self.canonical
            ))
        })
    }
}

/// Where the samples go: `{prefix}to_cyclone/<Type>` and `{prefix}from_cyclone/<Type>`.
fn pair<M: Message + PartialEq>(
    node: &Node,
    prefix: &str,
    name: &'static str,
    canonical: M,
) -> Box<dyn Check> {
    let topic =
        |direction: &str| Topic::new(format!("{prefix}{direction}/{name}"), TopicClass::Bench);
    Box::new(Pair {
        name,
        canonical,
        to: node.publisher(&topic("to_cyclone")).expect("publisher"),
        from: node.subscriber(&topic("from_cyclone")).expect("subscriber"),
    })
}

#[test]
fn rust_types_and_idl_agree_with_cyclonedds() {
    let _turn = take_turn();
    watchdog(
        "rust_types_and_idl_agree_with_cyclonedds",
        Duration::from_secs(120),
    );
    exchange_every_type(domain::INTEROP_CYCLONE, "interop/", None);
}

/// The same exchange in a secured run (issue 40): `convoy security init` makes the files, the
/// peer is a CycloneDDS participant with Debian's DDS Security plugins and a tool's identity,
/// convoy's node has the `cli` identity, and the bench class is encrypted. Every type crosses
/// both ways: handshake, permissions, key exchange and AES-GCM payloads agree between rustdds
/// and CycloneDDS. Without the run's files on the convoy side nothing would cross (the
/// outsider tests in secure_run.rs).
#[test]
fn secured_cyclonedds_and_convoy_exchange_every_type_encrypted() {
    let _turn = take_turn();
    watchdog(
        "secured_cyclonedds_and_convoy_exchange_every_type_encrypted",
        Duration::from_secs(180),
    );
    let d = domain::INTEROP_CYCLONE_SECURED;
    let dir = fresh_dir("interop", "cyclone-secured").join("run");
    run_ok(
        convoy()
            .args(["security", "init"])
            .arg(&dir)
            .args(["--domain", &d.to_string()])
            .args(["--node", "cli", "--node", "tool/cyclone"])
            .args(["--encrypt", "bench,state,sensor"]),
        Duration::from_secs(60),
    );
    let peer_config = cyclone_security_config(&dir.join("enclaves/tool_cyclone"), &dir);
    let secured = Secured {
        convoy_enclave: &dir.join("enclaves/cli"),
        peer_config: &peer_config,
    };
    exchange_every_type(d, "convoy/bench/", Some(secured));
}

/// The files of both sides of a secured exchange.
struct Secured<'a> {
    /// The convoy node's folder (`CONVOY_SECURITY`).
    convoy_enclave: &'a Path,
    /// The peer's CycloneDDS configuration (`CYCLONEDDS_URI`).
    peer_config: &'a Path,
}

/// convoy and cyclone_peer write their canonical samples of every type on topics under
/// `prefix` until each side has received every type whole; both secured where `secured` says.
fn exchange_every_type(domain: u32, prefix: &str, secured: Option<Secured>) {
    let peer_seconds = 60;
    let mut peer_command = Command::new(cyclone_programs().join("cyclone_peer"));
    peer_command
        .arg(domain.to_string())
        .arg(peer_seconds.to_string())
        .arg(format!("{prefix}to_cyclone/"))
        .arg(format!("{prefix}from_cyclone/"));
    if let Some(secured) = &secured {
        peer_command.env(
            "CYCLONEDDS_URI",
            format!("file://{}", secured.peer_config.display()),
        );
    }
    let (mut peer, lines) = ChildGuard::spawn_with_stdout("cyclone_peer", &mut peer_command);

    let qos = QosSet::from_str(QOS, "interop.xml", None).expect("test QoS");
    // The participant reads CONVOY_SECURITY once, when it is made; the tests of this file take
    // turns, so no other test's node sees the variable.
    if let Some(secured) = &secured {
        std::env::set_var(SECURITY_ENV, secured.convoy_enclave);
    }
    let node = Node::new(domain, "interop/convoy", Arc::new(qos));
    std::env::remove_var(SECURITY_ENV);
    let node = node.expect("node");
    let mut checks: Vec<Box<dyn Check>> = vec![
        pair(&node, prefix, "Tick", tick()),
        pair(&node, prefix, "AgentState", state("ego", 42, 1.5)),
        pair(
            &node,
            prefix,
            "FrameDone",
            FrameDone {
                node_id: "agent/ego".into(),
                frame: 43,
            },
        ),
        pair(&node, prefix, "NodeStatus", node_status()),
        pair(
            &node,
            prefix,
            "SensorAssignment",
            SensorAssignment {
                agent_id: "ego".into(),
                sensor_id: "front_cam".into(),
                node_id: "sensor-client-1".into(),
                epoch: u32::MAX,
                load: 0.35,
            },
        ),
        pair(&node, prefix, "Image", image()),
        pair(&node, prefix, "PointCloud", point_cloud()),
        pair(&node, prefix, "GnssFix", gnss()),
        pair(&node, prefix, "WorldRequest", world_request()),
    ];

    let all: BTreeSet<&str> = checks.iter().map(|c| c.name()).collect();
    let mut peer_ok: BTreeSet<String> = BTreeSet::new();
    let mut convoy_ok: BTreeSet<&str> = BTreeSet::new();
    let mut peer_all_ok = false;
    let until = Instant::now() + Duration::from_secs(50);
    while !(peer_all_ok && convoy_ok.len() == all.len()) {
        assert!(
            Instant::now() < until,
            "interop incomplete: peer OK {peer_ok:?}, convoy received {convoy_ok:?} of {all:?}"
        );
        for check in &checks {
            check.send();
        }
        for check in checks.iter_mut() {
            match check.receive() {
                Some(Ok(())) => {
                    convoy_ok.insert(check.name());
                }
                Some(Err(mismatch)) => panic!("{mismatch}"),
                None => {}
            }
        }
        while let Ok(line) = lines.recv_timeout(Duration::from_millis(100)) {
            assert!(!line.starts_with("MISMATCH"), "cyclone peer: {line}");
            if let Some(name) = line.strip_prefix("OK ") {
                peer_ok.insert(name.to_string());
            }
            if line == "ALL OK" {
                peer_all_ok = true;
            }
        }
    }
    assert_eq!(
        peer_ok,
        all.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );
    let status = peer.terminate(Duration::from_secs(5));
    assert!(
        status.is_some_and(|s| s.success()),
        "cyclone peer exit status {status:?} (3 means a mismatch was seen)"
    );
}
