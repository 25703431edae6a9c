//! `convoy bench bridge`: what the ROS 2 bridge adds. A writer publishes camera images (or
//! lidar clouds) on a convoy sensor topic, stamped with the wall clock; a `convoy-bridge`
//! process turns them into sensor_msgs; two readers in this process take the same stream at
//! once, one on the convoy topic (no bridge) and one as a ROS 2 subscriber (rustdds, plain CDR,
//! `rt/...`) of the bridge's output. Latency is arrival minus the stamp (the bridge keeps
//! it), so the difference of the two medians is the bridge's cost, measured on the same
//! samples; images/s and points/s are counted on both sides.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use convoy_bridge::config::sensor_outputs;
use convoy_bridge::ros_msgs::{self, dds_topic};
use convoy_core::dds::Node;
use convoy_core::messages;
use convoy_core::qos::QosSpec;
use convoy_core::scenario::{SensorKind, SensorSpec};
use convoy_core::topics::{Topic, TopicClass};

use super::payload::{wall_ns, BenchPayload, Shape};
use super::{per_second, ScratchDir, Stats};
use crate::args::{check_range, BridgeBenchArgs};
use crate::graph::sibling_binary;
use crate::process::{spawn_until_ready, StopOnDrop};

/// The bench's agent and sensor names (the bridge's ROS topics follow from them).
const AGENT: &str = "bench";
const CAMERA: &str = "cam";
const LIDAR: &str = "lidar";
/// How long convoy-bridge may take to say it is ready.
const BRIDGE_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// One side's arrivals: (stamp, latency, arrival) per distinct sample.
#[derive(Default)]
struct Arrivals {
    stamps: BTreeSet<i64>,
    samples: Vec<(i64, f64, Instant)>,
}

impl Arrivals {
    fn record(&mut self, stamp_ns: i64) {
        if stamp_ns <= 0 || !self.stamps.insert(stamp_ns) {
            return;
        }
        let latency_ms = (wall_ns() - stamp_ns) as f64 / 1e6;
        self.samples.push((stamp_ns, latency_ms, Instant::now()));
    }

    /// (received, per second, p50 ms, p99 ms) of the samples stamped at or after `from_ns`.
    fn summary(&self, from_ns: i64) -> (usize, f64, f64, f64) {
        let counted: Vec<&(i64, f64, Instant)> =
            self.samples.iter().filter(|s| s.0 >= from_ns).collect();
        let n = counted.len();
        let span = match (counted.first(), counted.last()) {
            (Some(a), Some(b)) => b.2.saturating_duration_since(a.2).as_secs_f64(),
            _ => 0.0,
        };
        let latency = Stats::of(counted.iter().map(|s| s.1).collect());
        let rate = per_second(n.saturating_sub(1) as f64, span);
        (n, rate, latency.p50, latency.p99)
    }
}

pub fn run(domain: u32, qos: Option<&QosSpec>, args: &BridgeBenchArgs) -> Result<()> {
    check_range("--warmup", args.warmup, 0.0..=600.0, "seconds")?;
    let shape = args.payload;
    let dir = ScratchDir::new("convoy-bench-bridge")?;
    let (sensor, kind, extra) = match shape {
        Shape::Image { width, height } => (
            CAMERA,
            SensorKind::Camera,
            format!("width = {width}\nheight = {height}\n"),
        ),
        Shape::Cloud { rings, points } => (
            LIDAR,
            SensorKind::Lidar,
            format!("channels = {rings}\ncolumns = {points}\n"),
        ),
    };
    let scenario = dir.write(
        "scenario.toml",
        format!(
            "[scenario]\nname = \"bench_bridge\"\nseed = 1\ndt = 0.05\n\n[[agents]]\nid = \
             \"{AGENT}\"\nstart = {{ x = 0.0, y = 0.0 }}\ncontroller = {{ kind = \"external\" \
             }}\n[[agents.sensors]]\nid = \"{sensor}\"\nkind = \"{}\"\nrate = 10.0\n{extra}",
            kind.as_str()
        ),
    )?;
    // x, y, z, intensity float32 in and out: the bytes cross unchanged.
    let settings = dir.write(
        "bridge.toml",
        "[ros2]\nnode_name = \"convoy_bench_bridge\"\npoint_cloud = \"xyzi\"\n",
    )?;
    let mut command = Command::new(sibling_binary("convoy-bridge")?);
    command
        .arg(&scenario)
        .args([
            "--domain",
            &domain.to_string(),
            "--name",
            "bench",
            "--config",
        ])
        .arg(&settings)
        .stderr(Stdio::inherit());
    if let Some(q) = qos {
        command.args(["--qos", &q.to_string()]);
    }
    let ready = |line: &str| line.contains(" ready: ");
    let bridge = spawn_until_ready(&mut command, "convoy-bridge", BRIDGE_READY_TIMEOUT, ready)?;
    let bridge = StopOnDrop(bridge, Duration::from_secs(5));

    let spec = SensorSpec::new(sensor, kind, 10.0);
    let output = sensor_outputs(AGENT, &spec)
        .into_iter()
        .next()
        .context("the bench sensor has no bridged output")?;
    let ros_topic = dds_topic(&output.ros_name);
    let topics = (output.convoy_topic.as_str(), ros_topic.as_str());
    let (direct, via, counted_from) = match shape {
        Shape::Image { .. } => {
            measure::<messages::Image, ros_msgs::Image>(domain, qos, args, topics, |seq| {
                (seq % 251) as u8
            })?
        }
        Shape::Cloud { .. } => measure::<messages::PointCloud, ros_msgs::PointCloud2>(
            domain,
            qos,
            args,
            topics,
            |_| 0,
        )?,
    };
    drop(bridge);
    let points = match shape {
        Shape::Cloud { rings, points } => f64::from(rings * points),
        Shape::Image { .. } => 0.0,
    };
    let (dn, drate, dp50, dp99) = direct.summary(counted_from);
    let (vn, vrate, vp50, vp99) = via.summary(counted_from);
    let total = args.count as usize;
    println!("{shape}  path            received   per s  points/s   p50 ms   p99 ms");
    for (name, n, rate, p50, p99) in [
        ("convoy reader ", dn, drate, dp50, dp99),
        ("through bridge", vn, vrate, vp50, vp99),
    ] {
        println!(
            "{shape}  {name}  {n:>5}/{total:<5} {rate:>6.1} {:>9.0} {p50:>8.2} {p99:>8.2}",
            rate * points
        );
    }
    println!(
        "{shape}  bridge adds p50 {:.2} ms; delivers {:.0}% of the direct rate",
        vp50 - dp50,
        if drate > 0.0 {
            100.0 * vrate / drate
        } else {
            0.0
        }
    );
    Ok(())
}

/// Writes the stream (warm-up, then `args.count` samples of bytes `fill(seq)` at `args.rate`)
/// on the convoy topic while a convoy reader of it and a ROS reader of the bridge's output
/// take it; returns both sides' arrivals and the first counted stamp.
fn measure<In: BenchPayload, Out: BenchPayload>(
    domain: u32,
    qos: Option<&QosSpec>,
    args: &BridgeBenchArgs,
    (convoy_topic, ros_topic): (&str, &str),
    fill: impl Fn(u64) -> u8,
) -> Result<(Arrivals, Arrivals, i64)> {
    let shape = args.payload;
    let qos = crate::load_qos(qos)?;
    let writer_node = Node::new(domain, "bench/bridge/writer", qos.clone())?;
    let direct_node = Node::new(domain, "bench/bridge/direct", qos.clone())?;
    let ros_node = Node::new(domain, "bench/bridge/ros", qos)?;
    let stop = Arc::new(AtomicBool::new(false));
    // Readers first, on threads of their own.
    let direct = read_arrivals::<In>(direct_node, convoy_topic, stop.clone());
    let via_bridge = read_arrivals::<Out>(ros_node, ros_topic, stop.clone());
    let writer = writer_node.publisher::<In>(&Topic::new(convoy_topic, TopicClass::Sensor))?;
    let bytes = shape.bytes();
    eprintln!(
        "{shape}: {bytes} bytes x {} at {} Hz, {convoy_topic} -> convoy-bridge -> {ros_topic}",
        args.count, args.rate
    );
    let period = Duration::from_secs_f64(1.0 / args.rate.max(0.1));
    // Writes a sample every period, numbered on from the last, while `more(written so far)`.
    let mut seq = 0u64;
    let mut send = |more: &dyn Fn(u64) -> bool| -> Result<()> {
        let (mut next, mut written) = (Instant::now(), 0);
        while more(written) {
            writer.write(In::build(shape, seq, wall_ns(), vec![fill(seq); bytes]))?;
            (seq, written) = (seq + 1, written + 1);
            next += period;
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        Ok(())
    };
    // Warm-up: discovery of both readers and of the bridge's path (not counted).
    let warm_until = Instant::now() + Duration::from_secs_f64(args.warmup);
    send(&|_| Instant::now() < warm_until)?;
    // Let the warm-up samples drain, then count from here.
    std::thread::sleep(Duration::from_millis(300));
    let counted_from = wall_ns();
    send(&|written| written < args.count)?;
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    let collect = |h: std::thread::JoinHandle<Result<Arrivals>>| -> Result<Arrivals> {
        h.join()
            .map_err(|_| anyhow::anyhow!("reader thread panicked"))?
    };
    Ok((collect(direct)?, collect(via_bridge)?, counted_from))
}

/// A reader of `topic` on its own thread, recording each distinct sample's stamp until `stop`.
fn read_arrivals<M: BenchPayload>(
    node: Node,
    topic: &str,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Result<Arrivals>> {
    let topic = topic.to_string();
    std::thread::spawn(move || {
        let mut arrivals = Arrivals::default();
        let mut sub = node.subscriber::<M>(&Topic::new(topic, TopicClass::Sensor))?;
        while !stop.load(Ordering::Relaxed) {
            for s in sub.take_wait(16, Duration::from_millis(20)) {
                arrivals.record(s.value.parts().1);
            }
        }
        Ok(arrivals)
    })
}
