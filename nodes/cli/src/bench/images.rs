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

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use convoy_bridge::ros_msgs;
use convoy_core::dds::{Node, Publisher};
use convoy_core::messages;
use convoy_core::qos::{History, QosSpec, Reliability};
use convoy_core::topics::{self, Topic, TopicClass};

use super::image_sink::{sink, Record, Sink};
use super::payload::{wall_ns, BenchPayload, Pattern, Shape};
use super::recorded::Recorder;
use super::{per_second, two_netns_hosts, write_csv, ConvoyArgs, Stats};
use crate::args::{check_range, ImageReader, ImagesBenchArgs, ImagesRole};
use crate::launch::HostAddress;
use crate::process::stop_flag;

/// The sequence number of warm-up samples, which the sinks take as "the path works".
pub(super) const WARMUP_SEQ: u64 = u64::MAX;
/// How often a warm-up sample is written until the sink has one.
const WARMUP_PERIOD: Duration = Duration::from_millis(100);

/// The DDS topic for a shape and reader kind.
pub(super) fn topic_for(shape: Shape, reader: ImageReader) -> String {
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
    /// With `--record`: the counted samples the recorder's file holds whole.
    pub recorded: Option<u64>,
}

impl ImagesResult {
    pub const CSV_HEADER: &'static [&'static str] = &[
        "payload",
        "bytes",
        "reader",
        "reliability",
        "rate_hz",
        "sent",
        "received",
        "whole",
        "send_per_s",
        "receive_per_s",
        "p50_ms",
        "p99_ms",
        "max_ms",
        "recorded_whole",
    ];

    /// The result's CSV fields, in [`ImagesResult::CSV_HEADER`]'s order.
    fn csv(&self) -> Vec<String> {
        vec![
            self.payload.clone(),
            self.bytes.to_string(),
            self.reader.clone(),
            self.reliability.clone(),
            self.rate_hz.to_string(),
            self.sent.to_string(),
            self.received.to_string(),
            self.whole.to_string(),
            format!("{:.1}", self.send_rate),
            format!("{:.1}", self.receive_rate),
            format!("{:.3}", self.p50_ms),
            format!("{:.3}", self.p99_ms),
            format!("{:.3}", self.max_ms),
            self.recorded.map_or(String::new(), |n| n.to_string()),
        ]
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
    check_range("--timeout", args.timeout, 0.1..=3600.0, "seconds")?;
    if args.record.is_some() && (args.reader == ImageReader::Rclpy || args.netns_hosts.is_some()) {
        bail!("--record records convoy's own topic on this host: use it with --reader convoy or cyclone, without --netns-hosts");
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
            match &args.out {
                Some(path) => {
                    write_csv(path, ImagesResult::CSV_HEADER, rows.iter().map(|r| r.csv()))
                }
                None => Ok(()),
            }
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
    let [(writer_host, writer_ns), (reader_host, reader_ns)] = two_netns_hosts(file)?;
    eprintln!("writer on host {writer_host} (netns {writer_ns}), reader on host {reader_host} (netns {reader_ns})");
    let mut writer = ConvoyArgs::new(domain, qos, &["bench", "images"])
        .list("--payload", &args.payload)
        .flag("--rate", args.rate)
        .flag("--count", args.count)
        .flag("--timeout", args.timeout)
        .flag("--sink-netns", reader_ns)
        .switch("--json", args.json)
        .out(args.out.as_deref())
        .command(&HostAddress::Netns(writer_ns), "writer")?;
    crate::process::run(&mut writer, "the writer side")
}

fn print_row(row: &ImagesResult, json: bool) {
    if json {
        println!("{}", serde_json::to_string(row).unwrap_or_default());
        return;
    }
    let recorded = row
        .recorded
        .map_or(String::new(), |n| format!("  recorded whole {n:>5}"));
    println!(
        "{:<16} {:>9} B  {:<7} {:<11} sent {:>5} ({:>6.1}/s)  received {:>5} ({:>6.1}/s)  whole {:>5}  latency p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms{recorded}",
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

/// The sensor profile's reliability ("reliable" or "best-effort") and depth: what the foreign
/// readers are told to use.
fn sensor_profile(node: &Node) -> Result<(&'static str, u32)> {
    let qos = node
        .qos()
        .for_class(TopicClass::Sensor)
        .map_err(|e| anyhow!("{e}"))?
        .writer_for(topics::BENCH_IMAGE)
        .clone();
    let reliability = match qos.reliability {
        Reliability::Reliable { .. } => "reliable",
        _ => "best-effort",
    };
    let depth = match qos.history {
        History::KeepLast(d) => d,
        History::KeepAll => 64,
    };
    Ok((reliability, depth))
}

fn measure(
    domain: u32,
    qos: Option<&QosSpec>,
    args: &ImagesBenchArgs,
    shape: Shape,
) -> Result<ImagesResult> {
    let node = crate::tool_node(domain, qos, "bench/images")?;
    let (reliability, depth) = sensor_profile(&node)?;
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
        reliability,
    );
    let recorder = match &args.record {
        Some(file) => Some(Recorder::spawn(
            domain,
            qos,
            &topic,
            file,
            args.record_compression,
        )?),
        None => None,
    };
    // The writer waits for the recorder as for the reader, so neither misses a counted sample.
    let readers = 1 + usize::from(recorder.is_some());
    let sink = Sink::spawn(domain, qos, args, shape, &topic, reliability, depth)?;
    // Each sample's bytes, for the writer and for the check of the recording.
    let pattern = Pattern::new(shape.bytes());
    let (sent, send_seconds, records) = match (args.reader, shape) {
        (ImageReader::Rclpy, Shape::Image { .. }) => {
            send::<ros_msgs::Image>(&node, &topic, (shape, &pattern), args, sink, readers)
        }
        (ImageReader::Rclpy, Shape::Cloud { .. }) => {
            send::<ros_msgs::PointCloud2>(&node, &topic, (shape, &pattern), args, sink, readers)
        }
        (_, Shape::Image { .. }) => {
            send::<messages::Image>(&node, &topic, (shape, &pattern), args, sink, readers)
        }
        (_, Shape::Cloud { .. }) => {
            send::<messages::PointCloud>(&node, &topic, (shape, &pattern), args, sink, readers)
        }
    }?;
    let recorded = match recorder {
        None => None,
        Some(recorder) => {
            let count = match shape {
                Shape::Image { .. } => recorder.finish::<messages::Image>(&topic, sent, &pattern),
                Shape::Cloud { .. } => {
                    recorder.finish::<messages::PointCloud>(&topic, sent, &pattern)
                }
            }?;
            if count.whole < sent {
                eprintln!(
                    "  the recorder holds {} of {sent} ({} whole)",
                    count.recorded, count.whole
                );
            }
            Some(count.whole)
        }
    };
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
    let latency = Stats::of(records.iter().map(|r| r.latency_us / 1000.0).collect());
    let receive_span = match (records.first(), records.last()) {
        (Some(first), Some(last)) => (last.at - first.at).as_secs_f64(),
        _ => 0.0,
    };
    // Rates count the intervals between the first and the last sample.
    Ok(ImagesResult {
        payload: shape.to_string(),
        bytes: shape.bytes(),
        reader: args.reader.name().into(),
        reliability: reliability.into(),
        rate_hz: args.rate,
        sent,
        received,
        whole,
        send_rate: per_second(sent.saturating_sub(1) as f64, send_seconds),
        receive_rate: per_second(received.saturating_sub(1) as f64, receive_span),
        p50_ms: latency.p50,
        p99_ms: latency.p99,
        max_ms: if received == 0 { 0.0 } else { latency.max },
        recorded,
    })
}

/// Warms the path up until `readers` readers are matched and the sink has a sample, writes
/// `count` samples at `rate`, and collects what the sink saw (the writer stays alive until
/// then: its last samples may still be on their way). Returns (sent, seconds between the first
/// and last write, records).
fn send<M: BenchPayload>(
    node: &Node,
    topic: &str,
    (shape, pattern): (Shape, &Pattern),
    args: &ImagesBenchArgs,
    mut sink: Sink,
    readers: usize,
) -> Result<(u64, f64, Vec<Record>)> {
    let publisher: Publisher<M> = node.publisher(&Topic::new(topic, TopicClass::Sensor))?;
    let match_timeout = Duration::from_secs_f64(args.timeout);
    if let Err(e) = warm_up(
        &publisher,
        pattern,
        shape,
        &mut sink,
        readers,
        match_timeout,
    ) {
        return Err(e.context(format!(
            "no {} reader took samples on {topic}",
            args.reader.name()
        )));
    }
    let stop = stop_flag()?;
    // Rate 0: as fast as the writer admits samples.
    let period = (args.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / args.rate));
    let start = Instant::now();
    let mut last_write = start;
    let mut sent = 0u64;
    let mut last_progress = Instant::now();
    let mut message = M::build(shape, 0, 0, pattern.sample(0).to_vec());
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
        last_write = Instant::now();
        // A reliable writer whose readers fall behind blocks here (back-pressure); a failed
        // write after max_blocking_time is retried until the bench's timeout, so a sample the
        // writer could not place is never counted as lost by the reader. The sample's bytes go
        // straight into a same-host reader's shared-memory slot (as a camera's pixels do), or
        // into one message refilled in place for DDS readers.
        let give_up = Instant::now() + match_timeout;
        let sample = (seq, wall_ns(), pattern.sample(seq));
        if let Err(e) = M::write_as(&publisher, &mut message, sample, &stop, give_up) {
            bail!("write of sample {seq} failed: {e}");
        }
        sent += 1;
        if last_progress.elapsed() > Duration::from_secs(2) {
            eprintln!("  {sent}/{} sent", args.count);
            last_progress = Instant::now();
        }
    }
    // A reliable writer's last samples may still be under repair (a lossy link, a loaded
    // host): the reader is told the writer is done once they are acknowledged, so its grace
    // period counts from delivery, not from the last write. Best-effort has nothing to wait for.
    if !publisher.wait_for_acknowledgments(match_timeout) {
        tracing::debug!("not every sample was acknowledged within {match_timeout:?}");
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
    readers: usize,
    timeout: Duration,
) -> Result<()> {
    publisher
        .wait_for_match(readers, timeout)
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
