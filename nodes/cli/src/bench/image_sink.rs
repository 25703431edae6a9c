//! The reader side of `convoy bench images`: the child process the writer drives ([`Sink`],
//! whichever reader it runs: convoy's, CycloneDDS's or rclpy's) and convoy's own reader, the
//! `--role sink` process ([`sink`]). The sink protocol is in the parent module's docs.

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use convoy_core::dds::{Node, Subscriber};
use convoy_core::messages;
use convoy_core::qos::QosSpec;
use convoy_core::topics::{Topic, TopicClass};

use super::images::{topic_for, WARMUP_SEQ};
use super::payload::{wall_ns, Pattern, Shape, ViewParts};
use super::ConvoyArgs;
use crate::args::{ImageReader, ImagesBenchArgs};
use crate::launch::HostAddress;
use crate::process::{read_lines, stop_child, stop_flag};

/// The rclpy reader, run with `--python` (`python -c`), so the bench needs no file on disk.
const RCLPY_SINK: &str = include_str!("rclpy_sink.py");
/// How long a sink keeps reading after the writer is done, for samples still in flight.
const SINK_GRACE: Duration = Duration::from_secs(3);

/// One sample as the sink saw it.
pub(super) struct Record {
    pub(super) seq: u64,
    pub(super) latency_us: f64,
    pub(super) whole: bool,
    pub(super) at: Instant,
}

/// The reader process and the lines it prints.
pub(super) struct Sink {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<(Instant, String)>,
    name: &'static str,
    ready: bool,
}

impl Sink {
    pub(super) fn spawn(
        domain: u32,
        qos: Option<&QosSpec>,
        args: &ImagesBenchArgs,
        shape: Shape,
        topic: &str,
        reliability: &str,
        depth: u32,
    ) -> Result<Sink> {
        // The foreign readers' arguments: DOMAIN TOPIC KIND RELIABILITY DEPTH COUNT BYTES.
        let foreign = |topic: &str| {
            [
                domain.to_string(),
                topic.to_string(),
                shape.kind().to_string(),
                reliability.to_string(),
                depth.to_string(),
                args.count.to_string(),
                shape.bytes().to_string(),
            ]
        };
        let mut command = match args.reader {
            ImageReader::Convoy => {
                let host = match &args.sink_netns {
                    Some(ns) => HostAddress::Netns(ns.clone()),
                    None => HostAddress::Local,
                };
                ConvoyArgs::new(domain, qos, &["bench", "images", "--role", "sink"])
                    .flag("--payload", shape)
                    .flag("--count", args.count)
                    .flag("--timeout", args.timeout)
                    .command(&host, "sink")?
            }
            ImageReader::Cyclone => {
                let program = args.cyclone_sink.clone().ok_or_else(|| {
                    anyhow!(
                        "--reader cyclone needs --cyclone-sink PATH (or CONVOY_CYCLONE_SINK): build it with \
                         tests/interop/build.sh OUTDIR, which writes OUTDIR/cyclone_sink"
                    )
                })?;
                let mut c = Command::new(program);
                c.args(foreign(topic));
                c
            }
            ImageReader::Rclpy => {
                let mut c = Command::new(&args.python);
                c.args(["-c", RCLPY_SINK])
                    .args(foreign(topic.trim_start_matches("rt")));
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
        read_lines(stdout, move |line| tx.send((Instant::now(), line)).is_ok());
        Ok(Sink {
            child,
            stdin,
            lines,
            name: args.reader.name(),
            ready: false,
        })
    }

    /// True once the sink has said READY (it took a warm-up sample); false after `timeout`.
    pub(super) fn wait_ready(&mut self, timeout: Duration) -> Result<bool> {
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
    pub(super) fn finish(mut self, timeout: Duration) -> Result<Vec<Record>> {
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
pub(super) fn sink(domain: u32, qos: Option<&QosSpec>, args: &ImagesBenchArgs) -> Result<()> {
    let Some(&shape) = args.payload.first() else {
        bail!("--role sink needs one --payload");
    };
    let node = crate::tool_node(domain, qos, "bench/images-sink")?;
    let topic = topic_for(shape, ImageReader::Convoy);
    match shape {
        Shape::Image { .. } => sink_loop::<messages::Image>(&node, &topic, shape, args),
        Shape::Cloud { .. } => sink_loop::<messages::PointCloud>(&node, &topic, shape, args),
    }
}

fn sink_loop<M: ViewParts>(
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
        // Each sample is checked where it lies (a same-host writer's ring slot: no copy of
        // the image out of it); only the outcome leaves the view.
        let checked = subscriber.take_views_wait(16, Duration::from_millis(50), |_, view| {
            let (seq, stamp, data) = M::view_parts(&view);
            let whole = seq != WARMUP_SEQ && data == pattern.sample(seq);
            (seq, stamp, whole, wall_ns())
        });
        for (seq, stamp, whole, now) in checked {
            if seq == WARMUP_SEQ {
                if !ready {
                    writeln!(out, "READY")?;
                    ready = true;
                }
                continue;
            }
            writeln!(
                out,
                "RECV {seq} {:.1} {}",
                now.saturating_sub(stamp) as f64 / 1000.0,
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
