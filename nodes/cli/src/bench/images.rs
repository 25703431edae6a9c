//! `convoy bench images`: camera images and lidar point clouds from a convoy writer to a reader
//! in another process — convoy's own, CycloneDDS's, or a stock rclpy subscriber — counting what
//! arrives whole and how late.
//!
//! The writer (this process) fills every sample with a pattern that depends on its sequence
//! number and stamps it with the wall clock just before `write`; the reader (a child process)
//! checks every byte, takes its latency against the same host's wall clock and prints one line
//! per sample (the sink protocol below), so the three readers are measured the same way. For
//! convoy and CycloneDDS readers the samples are convoy's `Image`/`PointCloud`; for rclpy they
//! are `sensor_msgs/Image`/`PointCloud2` on `rt/convoy/bench/...`. Reliability and depth come
//! from the sensor profile of the QoS in use (`--qos`), and the foreign readers are told the
//! same.
//!
//! Sink protocol (stdout, one line each): `READY` once the reader has matched the writer;
//! `RECV <seq> <latency_us> <whole 0|1>` per sample; `DONE` at exit. The sink exits after
//! `--count` samples, or a grace period after its stdin closes (the writer is done).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use convoy_core::dds::{Node, Publisher, Subscriber};
use convoy_core::messages::{self, Message, PointFieldType, SensorHeader};
use convoy_core::qos::{QosSpec, Reliability};
use convoy_core::ros_msgs;
use convoy_core::topics::{self, Topic, TopicClass};

use super::latency::percentile;
use crate::args::{ImageReader, ImagesBenchArgs, ImagesRole};
use crate::process::{stop_child, stop_flag};
use crate::run_cmd::on_host;
use convoy_core::launch::{HostAddress, LaunchFile};

/// The rclpy reader, run with `--python` (`python -c`), so the bench needs no file on disk.
const RCLPY_SINK: &str = include_str!("rclpy_sink.py");
/// How long a sink keeps reading after the writer is done, for samples still in flight.
const SINK_GRACE: Duration = Duration::from_secs(3);
/// Bytes per lidar point: x, y, z, intensity as f32.
const POINT_STEP: u32 = 16;
/// The sequence number of warm-up samples, which the sinks take as "the path works".
const WARMUP_SEQ: u64 = u64::MAX;
/// How often a warm-up sample is written until the sink has one.
const WARMUP_PERIOD: Duration = Duration::from_millis(100);

/// What one sample is: an rgb8 image or a point cloud of rings x points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Image { width: u32, height: u32 },
    Cloud { rings: u32, points: u32 },
}

impl Shape {
    /// Payload bytes of one sample.
    pub fn bytes(&self) -> usize {
        match *self {
            Shape::Image { width, height } => width as usize * height as usize * 3,
            Shape::Cloud { rings, points } => {
                rings as usize * points as usize * POINT_STEP as usize
            }
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Image { width, height } => write!(f, "image:{width}x{height}"),
            Shape::Cloud { rings, points } => write!(f, "cloud:{rings}x{points}"),
        }
    }
}

impl FromStr for Shape {
    type Err = String;
    /// `image:640x480` (rgb8) or `cloud:64x2048` (rings x points per ring).
    fn from_str(s: &str) -> Result<Shape, String> {
        let usage = || format!("'{s}': expected image:WIDTHxHEIGHT or cloud:RINGSxPOINTS");
        let (kind, dims) = s.split_once(':').ok_or_else(usage)?;
        let (a, b) = dims.split_once('x').ok_or_else(usage)?;
        let a: u32 = a.parse().map_err(|_| usage())?;
        let b: u32 = b.parse().map_err(|_| usage())?;
        if a == 0 || b == 0 || u64::from(a) * u64::from(b) > 64 * 1024 * 1024 {
            return Err(format!(
                "'{s}': each side must be positive and the sample at most 64 Mi elements"
            ));
        }
        match kind {
            "image" => Ok(Shape::Image {
                width: a,
                height: b,
            }),
            "cloud" => Ok(Shape::Cloud {
                rings: a,
                points: b,
            }),
            _ => Err(usage()),
        }
    }
}

/// The byte pattern of sample `seq`: byte i is `(31 seq + 7 i) mod 256`. It is a window into
/// one buffer of `(7 i) mod 256`, so making (and checking) a sample is one copy (compare).
pub struct Pattern {
    base: Vec<u8>,
    len: usize,
}

impl Pattern {
    pub fn new(len: usize) -> Pattern {
        let base = (0..len + 256).map(|i| (i * 7) as u8).collect();
        Pattern { base, len }
    }

    /// 7 * 183 = 1 (mod 256): the window offset k with 7 k = 31 seq (mod 256).
    fn offset(seq: u64) -> usize {
        ((seq.wrapping_mul(31) % 256) * 183 % 256) as usize
    }

    pub fn sample(&self, seq: u64) -> &[u8] {
        let k = Self::offset(seq);
        &self.base[k..k + self.len]
    }
}

/// A type the bench can send: it carries a sequence number, a wall-clock stamp and the bytes.
pub(crate) trait BenchPayload: Message {
    fn build(shape: Shape, seq: u64, stamp_ns: i64, data: Vec<u8>) -> Self;
    /// (sequence number, stamp, payload bytes)
    fn parts(&self) -> (u64, i64, &[u8]);
}

impl BenchPayload for messages::Image {
    fn build(shape: Shape, seq: u64, stamp_ns: i64, data: Vec<u8>) -> Self {
        let (width, height) = match shape {
            Shape::Image { width, height } => (width, height),
            Shape::Cloud { rings, points } => (points, rings),
        };
        messages::Image {
            header: bench_header(seq, stamp_ns),
            width,
            height,
            encoding: "rgb8".into(),
            step: width * 3,
            data,
        }
    }
    fn parts(&self) -> (u64, i64, &[u8]) {
        (self.header.seq, self.header.stamp_ns, &self.data)
    }
}

impl BenchPayload for messages::PointCloud {
    fn build(_shape: Shape, seq: u64, stamp_ns: i64, data: Vec<u8>) -> Self {
        let fields = ["x", "y", "z", "intensity"]
            .iter()
            .enumerate()
            .map(|(i, name)| messages::PointField {
                name: (*name).into(),
                offset: 4 * i as u32,
                datatype: PointFieldType::Float32,
            })
            .collect();
        messages::PointCloud {
            header: bench_header(seq, stamp_ns),
            point_count: (data.len() / POINT_STEP as usize) as u32,
            point_step: POINT_STEP,
            fields,
            data,
        }
    }
    fn parts(&self) -> (u64, i64, &[u8]) {
        (self.header.seq, self.header.stamp_ns, &self.data)
    }
}

fn bench_header(seq: u64, stamp_ns: i64) -> SensorHeader {
    SensorHeader {
        agent: "bench".into(),
        sensor: "bench".into(),
        frame: seq,
        stamp_ns,
        seq,
    }
}

/// ROS messages carry the sequence number in `frame_id` (ROS 2 headers have no seq).
impl BenchPayload for ros_msgs::Image {
    fn build(shape: Shape, seq: u64, stamp_ns: i64, data: Vec<u8>) -> Self {
        let (width, height) = match shape {
            Shape::Image { width, height } => (width, height),
            Shape::Cloud { rings, points } => (points, rings),
        };
        ros_msgs::Image {
            header: ros_header(seq, stamp_ns),
            height,
            width,
            encoding: "rgb8".into(),
            is_bigendian: 0,
            step: width * 3,
            data,
        }
    }
    fn parts(&self) -> (u64, i64, &[u8]) {
        let seq = self.header.frame_id.parse().unwrap_or(u64::MAX);
        (seq, self.header.stamp.as_ns(), &self.data)
    }
}

impl BenchPayload for ros_msgs::PointCloud2 {
    fn build(shape: Shape, seq: u64, stamp_ns: i64, data: Vec<u8>) -> Self {
        let (rings, points) = match shape {
            Shape::Cloud { rings, points } => (rings, points),
            Shape::Image { width, height } => (height, width),
        };
        let fields = ["x", "y", "z", "intensity"]
            .iter()
            .enumerate()
            .map(|(i, name)| ros_msgs::PointField {
                name: (*name).into(),
                offset: 4 * i as u32,
                datatype: ros_msgs::PointField::FLOAT32,
                count: 1,
            })
            .collect();
        ros_msgs::PointCloud2 {
            header: ros_header(seq, stamp_ns),
            height: rings,
            width: points,
            fields,
            is_bigendian: false,
            point_step: POINT_STEP,
            row_step: points * POINT_STEP,
            data,
            is_dense: true,
        }
    }
    fn parts(&self) -> (u64, i64, &[u8]) {
        let seq = self.header.frame_id.parse().unwrap_or(u64::MAX);
        (seq, self.header.stamp.as_ns(), &self.data)
    }
}

fn ros_header(seq: u64, stamp_ns: i64) -> ros_msgs::Header {
    ros_msgs::Header {
        stamp: ros_msgs::Time::from_ns(stamp_ns),
        frame_id: seq.to_string(),
    }
}

pub(crate) fn wall_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The DDS topic for a shape and reader kind.
fn topic_for(shape: Shape, reader: ImageReader) -> String {
    let convoy_topic = match shape {
        Shape::Image { .. } => topics::BENCH_IMAGE,
        Shape::Cloud { .. } => topics::BENCH_CLOUD,
    };
    match reader {
        ImageReader::Rclpy => ros_msgs::dds_topic(convoy_topic),
        ImageReader::Convoy | ImageReader::Cyclone => convoy_topic.to_string(),
    }
}

/// One run's result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ImagesResult {
    pub payload: String,
    pub bytes: usize,
    pub reader: String,
    pub reliability: String,
    pub rate_hz: f64,
    pub sent: u64,
    pub received: u64,
    pub whole: u64,
    pub send_rate: f64,
    pub receive_rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl ImagesResult {
    pub const CSV_HEADER: &'static str =
        "payload,bytes,reader,reliability,rate_hz,sent,received,whole,send_per_s,receive_per_s,p50_ms,p99_ms,max_ms";

    fn csv(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{:.1},{:.1},{:.3},{:.3},{:.3}",
            self.payload,
            self.bytes,
            self.reader,
            self.reliability,
            self.rate_hz,
            self.sent,
            self.received,
            self.whole,
            self.send_rate,
            self.receive_rate,
            self.p50_ms,
            self.p99_ms,
            self.max_ms
        )
    }
}

pub fn run(domain: u32, qos: Option<&QosSpec>, args: &ImagesBenchArgs) -> Result<()> {
    if !(args.rate >= 0.0 && args.rate.is_finite()) {
        bail!(
            "--rate {}: must be 0 (as fast as the writer admits) or a positive rate",
            args.rate
        );
    }
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    match args.role {
        ImagesRole::Sink => sink(domain, qos, args),
        ImagesRole::Writer if args.netns_hosts.is_some() => between_namespaces(domain, qos, args),
        ImagesRole::Writer => {
            let mut rows = Vec::new();
            for &payload in &args.payload {
                let row = measure(domain, qos, args, payload)?;
                print_row(&row, args.json);
                rows.push(row);
            }
            if let Some(path) = &args.out {
                let mut text = String::from(ImagesResult::CSV_HEADER);
                text.push('\n');
                for row in &rows {
                    text.push_str(&row.csv());
                    text.push('\n');
                }
                std::fs::write(path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            Ok(())
        }
    }
}

/// Runs the writer side in the launch file's first netns host, telling it to start the convoy
/// reader in the second (`convoy netns up FILE` first).
fn between_namespaces(domain: u32, qos: Option<&QosSpec>, args: &ImagesBenchArgs) -> Result<()> {
    let file = args.netns_hosts.as_ref().context("no launch file")?;
    if args.reader != ImageReader::Convoy {
        bail!(
            "--netns-hosts runs a convoy reader only; leave out --reader {}",
            args.reader.name()
        );
    }
    let launch = LaunchFile::load(file)?;
    let hosts = launch.netns_hosts();
    let [(writer_host, writer_ns), (reader_host, reader_ns), ..] = hosts.as_slice() else {
        bail!("{}: --netns-hosts needs two netns hosts", file.display());
    };
    for ns in [writer_ns, reader_ns] {
        if !std::path::Path::new("/run/netns").join(ns).exists() {
            bail!(
                "netns {ns} does not exist: run `convoy netns up {}` first",
                file.display()
            );
        }
    }
    eprintln!("writer on host {writer_host} (netns {writer_ns}), reader on host {reader_host} (netns {reader_ns})");
    let exe = std::env::current_exe().context("cannot find the convoy executable")?;
    let mut words: Vec<String> = vec!["--domain".into(), domain.to_string()];
    if let Some(spec) = qos {
        words.extend(["--qos".into(), spec.to_string()]);
    }
    let payloads: Vec<String> = args.payload.iter().map(Shape::to_string).collect();
    words.extend(["bench", "images", "--payload"].map(String::from));
    words.push(payloads.join(","));
    words.extend([
        "--rate".into(),
        args.rate.to_string(),
        "--count".into(),
        args.count.to_string(),
    ]);
    words.extend([
        "--timeout".into(),
        args.timeout.to_string(),
        "--sink-netns".into(),
        reader_ns.clone(),
    ]);
    if args.json {
        words.push("--json".into());
    }
    if let Some(out) = &args.out {
        let out = std::path::absolute(out).unwrap_or_else(|_| out.clone());
        words.extend(["--out".into(), out.display().to_string()]);
    }
    let node = on_host(
        &HostAddress::Netns(writer_ns.clone()),
        "writer",
        &exe,
        words,
    );
    let status = Command::new(&node.program)
        .args(&node.args)
        .stdin(Stdio::null())
        .status()
        .context("cannot start the writer in its namespace")?;
    if !status.success() {
        bail!("the writer side failed ({status})");
    }
    Ok(())
}

fn print_row(row: &ImagesResult, json: bool) {
    if json {
        println!("{}", serde_json::to_string(row).unwrap_or_default());
        return;
    }
    println!(
        "{:<16} {:>9} B  {:<7} {:<11} sent {:>5} ({:>6.1}/s)  received {:>5} ({:>6.1}/s)  whole {:>5}  latency p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms",
        row.payload,
        row.bytes,
        row.reader,
        row.reliability,
        row.sent,
        row.send_rate,
        row.received,
        row.receive_rate,
        row.whole,
        row.p50_ms,
        row.p99_ms,
        row.max_ms
    );
}

/// The sensor profile's reliability and depth: what the foreign readers are told to use.
fn sensor_profile(node: &Node) -> Result<(bool, u32)> {
    let qos = node
        .qos()
        .for_class(TopicClass::Sensor)
        .map_err(|e| anyhow!("{e}"))?
        .writer_for(topics::BENCH_IMAGE)
        .clone();
    let reliable = matches!(qos.reliability, Reliability::Reliable { .. });
    let depth = match qos.history {
        convoy_core::qos::History::KeepLast(d) => d,
        convoy_core::qos::History::KeepAll => 64,
    };
    Ok((reliable, depth))
}

fn measure(
    domain: u32,
    qos: Option<&QosSpec>,
    args: &ImagesBenchArgs,
    shape: Shape,
) -> Result<ImagesResult> {
    let node = Node::new(
        domain,
        &format!("bench/images/{}", std::process::id()),
        crate::load_qos(qos)?,
    )?;
    let (reliable, depth) = sensor_profile(&node)?;
    let topic = topic_for(shape, args.reader);
    eprintln!(
        "{shape}: {} bytes x {} at {} to a {} reader ({}, depth {depth}) on {topic}",
        shape.bytes(),
        args.count,
        if args.rate > 0.0 {
            format!("{} Hz", args.rate)
        } else {
            "full speed".into()
        },
        args.reader.name(),
        if reliable { "reliable" } else { "best-effort" },
    );
    let sink = Sink::spawn(domain, qos, args, shape, &topic, reliable, depth)?;
    let (sent, send_seconds, records) = match (args.reader, shape) {
        (ImageReader::Rclpy, Shape::Image { .. }) => {
            send::<ros_msgs::Image>(&node, &topic, shape, args, sink)
        }
        (ImageReader::Rclpy, Shape::Cloud { .. }) => {
            send::<ros_msgs::PointCloud2>(&node, &topic, shape, args, sink)
        }
        (_, Shape::Image { .. }) => send::<messages::Image>(&node, &topic, shape, args, sink),
        (_, Shape::Cloud { .. }) => send::<messages::PointCloud>(&node, &topic, shape, args, sink),
    }?;
    let received = records.len() as u64;
    if received < sent {
        let seen: std::collections::BTreeSet<u64> = records.iter().map(|r| r.seq).collect();
        let missing: Vec<String> = (0..sent)
            .filter(|s| !seen.contains(s))
            .take(12)
            .map(|s| s.to_string())
            .collect();
        eprintln!(
            "  {} of {sent} did not arrive; the first: {}",
            sent - received,
            missing.join(" ")
        );
    }
    let whole = records.iter().filter(|r| r.whole).count() as u64;
    let mut latencies: Vec<f64> = records.iter().map(|r| r.latency_us / 1000.0).collect();
    latencies.sort_by(f64::total_cmp);
    let receive_span = match (records.first(), records.last()) {
        (Some(first), Some(last)) if records.len() > 1 => (last.at - first.at).as_secs_f64(),
        _ => 0.0,
    };
    Ok(ImagesResult {
        payload: shape.to_string(),
        bytes: shape.bytes(),
        reader: args.reader.name().into(),
        reliability: if reliable { "reliable" } else { "best-effort" }.into(),
        rate_hz: args.rate,
        sent,
        received,
        whole,
        send_rate: if send_seconds > 0.0 {
            (sent.saturating_sub(1)) as f64 / send_seconds
        } else {
            0.0
        },
        receive_rate: if receive_span > 0.0 {
            (received - 1) as f64 / receive_span
        } else {
            0.0
        },
        p50_ms: percentile(&latencies, 0.50),
        p99_ms: percentile(&latencies, 0.99),
        max_ms: latencies.last().copied().unwrap_or(0.0),
    })
}

/// Warms the path up until the sink has a sample, writes `count` samples at `rate`, and
/// collects what the sink saw (the writer stays alive until then: its last samples may still be
/// on their way). Returns (sent, seconds between the first and last write, records).
fn send<M: BenchPayload>(
    node: &Node,
    topic: &str,
    shape: Shape,
    args: &ImagesBenchArgs,
    mut sink: Sink,
) -> Result<(u64, f64, Vec<Record>)> {
    let publisher: Publisher<M> = node.publisher(&Topic::new(topic, TopicClass::Sensor))?;
    let match_timeout = Duration::from_secs_f64(args.timeout);
    let pattern = Pattern::new(shape.bytes());
    if let Err(e) = warm_up(&publisher, &pattern, shape, &mut sink, match_timeout) {
        return Err(e.context(format!(
            "no {} reader took samples on {topic}",
            args.reader.name()
        )));
    }
    let stop = stop_flag()?;
    let period = if args.rate > 0.0 {
        Some(Duration::from_secs_f64(1.0 / args.rate))
    } else {
        None
    };
    let start = Instant::now();
    let mut last_write = start;
    let mut sent = 0u64;
    let mut last_progress = Instant::now();
    for seq in 0..args.count {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(period) = period {
            let due = start + period.mul_f64(seq as f64);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        let data = pattern.sample(seq).to_vec();
        last_write = Instant::now();
        let message = M::build(shape, seq, wall_ns(), data);
        // A reliable writer whose readers fall behind blocks here (back-pressure); a failed
        // write after max_blocking_time is retried until the bench's timeout, so a sample the
        // writer could not place is never counted as lost by the reader.
        let give_up = Instant::now() + match_timeout;
        let mut message = Some(message);
        while let Some(m) = message.take() {
            match publisher.write(m.clone()) {
                Ok(()) => {}
                Err(e) if Instant::now() < give_up && !stop.load(Ordering::Relaxed) => {
                    tracing::debug!("write of sample {seq} waits: {e}");
                    message = Some(m);
                }
                Err(e) => bail!("write of sample {seq} failed: {e}"),
            }
        }
        sent += 1;
        if last_progress.elapsed() > Duration::from_secs(2) {
            eprintln!("  {sent}/{} sent", args.count);
            last_progress = Instant::now();
        }
    }
    let records = sink.finish(match_timeout)?;
    Ok((sent, (last_write - start).as_secs_f64(), records))
}

/// Writes warm-up samples (not counted) until the sink says it took one: discovery is done
/// both ways and the data path works, so the first counted sample is not lost to matching.
fn warm_up<M: BenchPayload>(
    publisher: &Publisher<M>,
    pattern: &Pattern,
    shape: Shape,
    sink: &mut Sink,
    timeout: Duration,
) -> Result<()> {
    publisher
        .wait_for_match(1, timeout)
        .map_err(|e| anyhow!("{e}"))?;
    let until = Instant::now() + timeout;
    while Instant::now() < until {
        let warm = M::build(shape, WARMUP_SEQ, wall_ns(), pattern.sample(0).to_vec());
        if let Err(e) = publisher.write(warm) {
            tracing::debug!("warm-up write: {e}");
        }
        if sink.wait_ready(WARMUP_PERIOD)? {
            return Ok(());
        }
    }
    bail!("no warm-up sample arrived within {timeout:?}")
}

/// One sample as the sink saw it.
struct Record {
    seq: u64,
    latency_us: f64,
    whole: bool,
    at: Instant,
}

/// The reader process and the lines it prints.
struct Sink {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<(Instant, String)>,
    name: &'static str,
    ready: bool,
}

impl Sink {
    fn spawn(
        domain: u32,
        qos: Option<&QosSpec>,
        args: &ImagesBenchArgs,
        shape: Shape,
        topic: &str,
        reliable: bool,
        depth: u32,
    ) -> Result<Sink> {
        let reliability = if reliable { "reliable" } else { "best-effort" };
        let mut command = match args.reader {
            ImageReader::Convoy => {
                let exe = std::env::current_exe().context("cannot find the convoy executable")?;
                let mut words: Vec<String> = vec!["--domain".into(), domain.to_string()];
                if let Some(spec) = qos {
                    words.extend(["--qos".into(), spec.to_string()]);
                }
                words.extend(["bench", "images", "--role", "sink", "--payload"].map(String::from));
                words.push(shape.to_string());
                words.extend(["--count".into(), args.count.to_string()]);
                words.extend(["--timeout".into(), args.timeout.to_string()]);
                let host = match &args.sink_netns {
                    Some(ns) => HostAddress::Netns(ns.clone()),
                    None => HostAddress::Local,
                };
                let node = on_host(&host, "sink", &exe, words);
                let mut c = Command::new(node.program);
                c.args(node.args);
                c
            }
            ImageReader::Cyclone => {
                let program = args.cyclone_sink.clone().ok_or_else(|| {
                    anyhow!(
                        "--reader cyclone needs --cyclone-sink PATH (or CONVOY_CYCLONE_SINK): build it with \
                         tests/interop/build.sh OUTDIR, which writes OUTDIR/cyclone_sink"
                    )
                })?;
                let mut c = Command::new(program);
                let kind = match shape {
                    Shape::Image { .. } => "image",
                    Shape::Cloud { .. } => "cloud",
                };
                c.args([
                    &domain.to_string(),
                    topic,
                    kind,
                    reliability,
                    &depth.to_string(),
                    &args.count.to_string(),
                ]);
                c.args([&shape.bytes().to_string()]);
                c
            }
            ImageReader::Rclpy => {
                let mut c = Command::new(&args.python);
                let kind = match shape {
                    Shape::Image { .. } => "image",
                    Shape::Cloud { .. } => "cloud",
                };
                let ros_topic = topic.trim_start_matches("rt");
                c.args([
                    "-c",
                    RCLPY_SINK,
                    &domain.to_string(),
                    ros_topic,
                    kind,
                    reliability,
                ]);
                c.args([
                    &depth.to_string(),
                    &args.count.to_string(),
                    &shape.bytes().to_string(),
                ]);
                c
            }
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| {
                format!(
                    "cannot start the {} reader ({:?})",
                    args.reader.name(),
                    command.get_program()
                )
            })?;
        let stdout = child.stdout.take().context("reader has no stdout")?;
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Ok(Sink {
            child,
            stdin,
            lines,
            name: args.reader.name(),
            ready: false,
        })
    }

    /// True once the sink has said READY (it took a warm-up sample); false after `timeout`.
    fn wait_ready(&mut self, timeout: Duration) -> Result<bool> {
        let until = Instant::now() + timeout;
        while !self.ready {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((_, line)) if line == "READY" => self.ready = true,
                Ok((_, line)) => tracing::debug!("{} reader: {line}", self.name),
                Err(mpsc::RecvTimeoutError::Timeout) => return Ok(false),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().context("waiting for the reader")?;
                    bail!(
                        "the {} reader exited before it was ready ({status}); its error is above",
                        self.name
                    )
                }
            }
        }
        Ok(true)
    }

    /// Tells the sink the writer is done (stdin closes) and collects its records.
    fn finish(mut self, timeout: Duration) -> Result<Vec<Record>> {
        self.stdin.take();
        let until = Instant::now() + timeout + SINK_GRACE;
        let mut records = Vec::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((_, line)) if line == "DONE" => break,
                Ok((at, line)) => {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    if let ["RECV", seq, latency, whole] = fields.as_slice() {
                        records.push(Record {
                            seq: seq.parse().unwrap_or(u64::MAX),
                            latency_us: latency.parse().unwrap_or(f64::NAN),
                            whole: *whole == "1",
                            at,
                        });
                    } else {
                        tracing::debug!("{} reader: {line}", self.name);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.kill();
                    bail!(
                        "the {} reader did not finish within {:?}",
                        self.name,
                        timeout + SINK_GRACE
                    )
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let status = self.child.wait().context("waiting for the reader")?;
        if !status.success() {
            bail!("the {} reader failed ({status})", self.name);
        }
        Ok(records)
    }

    fn kill(&mut self) {
        self.stdin.take();
        stop_child(&mut self.child, Duration::from_secs(1));
    }
}

/// A sink left behind by an error is stopped, never orphaned.
impl Drop for Sink {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

/// `--role sink`: convoy's own reader.
fn sink(domain: u32, qos: Option<&QosSpec>, args: &ImagesBenchArgs) -> Result<()> {
    let Some(&shape) = args.payload.first() else {
        bail!("--role sink needs one --payload");
    };
    let node = Node::new(
        domain,
        &format!("bench/images-sink/{}", std::process::id()),
        crate::load_qos(qos)?,
    )?;
    let topic = topic_for(shape, ImageReader::Convoy);
    match shape {
        Shape::Image { .. } => sink_loop::<messages::Image>(&node, &topic, shape, args),
        Shape::Cloud { .. } => sink_loop::<messages::PointCloud>(&node, &topic, shape, args),
    }
}

fn sink_loop<M: BenchPayload>(
    node: &Node,
    topic: &str,
    shape: Shape,
    args: &ImagesBenchArgs,
) -> Result<()> {
    let mut subscriber: Subscriber<M> = node.subscriber(&Topic::new(topic, TopicClass::Sensor))?;
    subscriber
        .wait_for_match(1, Duration::from_secs_f64(args.timeout))
        .map_err(|e| anyhow!("no writer matched {topic}: {e}"))?;
    let writer_done = Arc::new(AtomicBool::new(false));
    {
        // stdin closes when the writer is done.
        let writer_done = writer_done.clone();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
            writer_done.store(true, Ordering::Relaxed);
        });
    }
    let stop = stop_flag()?;
    let mut out = std::io::stdout().lock();
    let pattern = Pattern::new(shape.bytes());
    let mut ready = false;
    let mut received = 0u64;
    let mut done_at: Option<Instant> = None;
    while received < args.count && !stop.load(Ordering::Relaxed) {
        if writer_done.load(Ordering::Relaxed) {
            let at = *done_at.get_or_insert_with(Instant::now);
            if at.elapsed() > SINK_GRACE {
                break;
            }
        }
        for sample in subscriber.take_wait(16, Duration::from_millis(50)) {
            let now = wall_ns();
            let (seq, stamp, data) = sample.value.parts();
            if seq == WARMUP_SEQ {
                if !ready {
                    writeln!(out, "READY")?;
                    ready = true;
                }
                continue;
            }
            let whole = data == pattern.sample(seq);
            writeln!(
                out,
                "RECV {seq} {:.1} {}",
                (now - stamp) as f64 / 1000.0,
                u8::from(whole)
            )?;
            received += 1;
        }
        out.flush()?;
    }
    writeln!(out, "DONE")?;
    out.flush()?;
    Ok(())
}

impl ImageReader {
    pub fn name(&self) -> &'static str {
        match self {
            ImageReader::Convoy => "convoy",
            ImageReader::Cyclone => "cyclone",
            ImageReader::Rclpy => "rclpy",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_and_size() {
        let image: Shape = "image:640x480".parse().expect("image");
        assert_eq!(image.bytes(), 921_600);
        let cloud: Shape = "cloud:64x2048".parse().expect("cloud");
        assert_eq!(cloud.bytes(), 64 * 2048 * 16);
        assert!("image:640".parse::<Shape>().is_err());
        assert!("video:1x1".parse::<Shape>().is_err());
        assert!("image:0x5".parse::<Shape>().is_err());
    }

    #[test]
    fn pattern_matches_its_formula() {
        let p = Pattern::new(1000);
        for seq in [0u64, 1, 7, 255, 256, 12345] {
            let s = p.sample(seq);
            for (i, &b) in s.iter().enumerate() {
                assert_eq!(
                    b,
                    (seq.wrapping_mul(31) as usize + 7 * i) as u8,
                    "seq {seq} byte {i}"
                );
            }
        }
    }
}
