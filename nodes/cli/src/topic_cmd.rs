//! `convoy topic list|echo|hz`: what a DDS or ROS user expects to poke a running graph with.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use tokio::time::sleep_until;

use convoy_core::dds::{discovery, Node, SampleStream};
use convoy_core::messages::{visit_type, Message, MessageVisitor};
use convoy_core::topics::{KnownTopic, Topic};

use crate::args::{check_range, EchoArgs, HzArgs, ListArgs};
use crate::render;

/// How long echo/hz wait for discovery to name a sensor topic's type.
const TYPE_DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

pub fn list(node: &Node, args: &ListArgs) -> Result<()> {
    check_range("--wait", args.wait, 0.0..=3600.0, "seconds")?;
    // Discovery has no "complete" signal: listen for the requested time.
    std::thread::sleep(Duration::from_secs_f64(args.wait));
    let topics = discovery::topics(node.participant());
    if topics.is_empty() {
        println!(
            "no topics discovered on domain {} within {}s",
            node.domain_id(),
            args.wait
        );
        return Ok(());
    }
    for topic in &topics {
        let types = topic.type_names().join(" | ");
        println!(
            "{}  [{}]  {} writer{}, {} reader{}",
            topic.name,
            types,
            topic.writers.len(),
            plural(topic.writers.len()),
            topic.readers.len(),
            plural(topic.readers.len())
        );
        if args.verbose {
            for (kind, endpoints) in [("writer", &topic.writers), ("reader", &topic.readers)] {
                for e in endpoints {
                    println!("    {kind} {:?}", e.guid);
                    for line in qos_lines(&e.qos) {
                        println!("        {line}");
                    }
                }
            }
        }
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The QoS an endpoint announced, one policy per line.
fn qos_lines(qos: &rustdds::QosPolicies) -> Vec<String> {
    let mut lines = Vec::new();
    lines.push(format!(
        "reliability: {}",
        match qos.reliability() {
            Some(rustdds::policy::Reliability::Reliable { max_blocking_time }) => format!(
                "RELIABLE (max_blocking_time {:?})",
                max_blocking_time.to_std()
            ),
            Some(rustdds::policy::Reliability::BestEffort) => "BEST_EFFORT".into(),
            None => "default".into(),
        }
    ));
    lines.push(format!(
        "durability: {}",
        qos.durability()
            .map_or("default".into(), |d| format!("{d:?}"))
    ));
    if let Some(h) = qos.history() {
        lines.push(format!("history: {h:?}"));
    }
    if let Some(d) = qos.deadline() {
        lines.push(format!("deadline: {:?}", d.0.to_std()));
    }
    if let Some(l) = qos.liveliness() {
        lines.push(format!("liveliness: {l:?}"));
    }
    if let Some(l) = qos.lifespan() {
        lines.push(format!("lifespan: {:?}", l.duration.to_std()));
    }
    if let Some(o) = qos.ownership() {
        lines.push(format!("ownership: {o:?}"));
    }
    lines
}

/// The message type of `topic`: from its name, or (sensor topics) from discovery.
fn topic_type(node: &Node, topic: &str) -> Result<String> {
    let known = KnownTopic::parse(topic)?;
    if let Some(name) = known.type_name() {
        return Ok(name.to_string());
    }
    let started = Instant::now();
    while started.elapsed() < TYPE_DISCOVERY_TIMEOUT {
        if let Some(name) = discovery::type_of(node.participant(), topic) {
            return Ok(name);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!(
        "no writer or reader of '{topic}' discovered on domain {} within {:?}: its type cannot be \
         told from the name alone (is the graph running on this domain?)",
        node.domain_id(),
        TYPE_DISCOVERY_TIMEOUT
    )
}

/// What echo and hz do with a topic's samples once its type is known.
trait SampleTask {
    async fn run<M: Message>(self, samples: SampleStream<M>) -> Result<()>;
}

/// Subscribes to `topic` with the type discovery or the name gives, then runs `task` on it.
fn with_samples<T: SampleTask>(
    node: &Node,
    topic: &str,
    runtime: &tokio::runtime::Runtime,
    task: T,
) -> Result<()> {
    /// (node, topic, runtime, task)
    struct Visit<'a, T>(&'a Node, &'a str, &'a tokio::runtime::Runtime, T);
    impl<T: SampleTask> MessageVisitor for Visit<'_, T> {
        type Output = Result<()>;
        fn visit<M: Message>(self) -> Result<()> {
            let Visit(node, topic, runtime, task) = self;
            let class = KnownTopic::parse(topic)?.class();
            let samples = node
                .subscriber::<M>(&Topic::new(topic, class))
                .with_context(|| format!("cannot subscribe to '{topic}'"))?
                .into_stream();
            runtime.block_on(task.run(samples))
        }
    }
    let type_name = topic_type(node, topic)?;
    visit_type(&type_name, Visit(node, topic, runtime, task)).unwrap_or_else(|| {
        bail!("topic '{topic}' carries type '{type_name}', which is not a convoy message type")
    })
}

fn stop_at(seconds: Option<f64>) -> Result<tokio::time::Instant> {
    let far = Duration::from_secs(100 * 365 * 24 * 3600);
    let wait = match seconds {
        Some(s) if !(0.0..=1e9).contains(&s) => bail!("{s} seconds is not a valid duration"),
        Some(s) => Duration::from_secs_f64(s),
        None => far,
    };
    Ok(tokio::time::Instant::now() + wait)
}

pub fn echo(node: &Node, args: &EchoArgs, runtime: &tokio::runtime::Runtime) -> Result<()> {
    struct Echo<'a>(&'a EchoArgs);
    impl SampleTask for Echo<'_> {
        async fn run<M: Message>(self, mut samples: SampleStream<M>) -> Result<()> {
            let args = self.0;
            let stop = stop_at(args.timeout)?;
            let mut seen = 0u64;
            loop {
                tokio::select! {
                    sample = samples.next() => {
                        let Some(sample) = sample else { break };
                        if let Some(dir) = &args.save {
                            let any: &dyn std::any::Any = &sample.value;
                            if let Some(image) = any.downcast_ref::<convoy_core::messages::Image>() {
                                match crate::png_save::save(dir, image) {
                                    Ok(path) => eprintln!("saved {}", path.display()),
                                    Err(e) => eprintln!("cannot save frame {}: {e:#}", image.header.frame),
                                }
                            }
                        }
                        if args.json {
                            println!("{}", render::json_line(&sample.value));
                        } else {
                            println!("{}", render::text(&sample.value, args.truncate));
                        }
                        seen += 1;
                        if args.count.is_some_and(|n| seen >= n) {
                            break;
                        }
                    }
                    _ = sleep_until(stop) => break,
                    _ = tokio::signal::ctrl_c() => break,
                }
            }
            let errors = samples
                .stats()
                .decode_errors
                .load(std::sync::atomic::Ordering::Relaxed);
            if errors > 0 {
                eprintln!(
                    "{errors} samples on '{}' did not decode as {}",
                    args.topic,
                    M::TYPE_NAME
                );
            }
            if seen == 0 && args.count.is_some() {
                bail!("no sample on '{}' before the timeout", args.topic);
            }
            Ok(())
        }
    }
    with_samples(node, &args.topic, runtime, Echo(args))
}

/// Inter-arrival statistics over a sliding window, as `ros2 topic hz` prints them.
#[derive(Debug, Default)]
pub struct RateWindow {
    window: usize,
    intervals: std::collections::VecDeque<f64>,
    last: Option<Instant>,
}

impl RateWindow {
    pub fn new(window: usize) -> Self {
        RateWindow {
            window: window.max(1),
            ..RateWindow::default()
        }
    }

    pub fn arrival(&mut self, at: Instant) {
        if let Some(last) = self.last {
            self.intervals
                .push_back(at.saturating_duration_since(last).as_secs_f64());
            while self.intervals.len() > self.window {
                self.intervals.pop_front();
            }
        }
        self.last = Some(at);
    }

    /// (rate Hz, min s, max s, std dev s, intervals), or None before two samples.
    pub fn summary(&self) -> Option<(f64, f64, f64, f64, usize)> {
        let n = self.intervals.len();
        if n == 0 {
            return None;
        }
        let mean = self.intervals.iter().sum::<f64>() / n as f64;
        let min = self.intervals.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.intervals.iter().copied().fold(0.0, f64::max);
        let var = self
            .intervals
            .iter()
            .map(|x| (x - mean).powi(2))
            .sum::<f64>()
            / n as f64;
        let rate = if mean > 0.0 {
            1.0 / mean
        } else {
            f64::INFINITY
        };
        Some((rate, min, max, var.sqrt(), n))
    }
}

pub fn hz(node: &Node, args: &HzArgs, runtime: &tokio::runtime::Runtime) -> Result<()> {
    struct Hz<'a>(&'a HzArgs);
    impl SampleTask for Hz<'_> {
        async fn run<M: Message>(self, mut samples: SampleStream<M>) -> Result<()> {
            let args = self.0;
            let stop = stop_at(args.duration)?;
            let mut window = RateWindow::new(args.window);
            let mut report = tokio::time::interval(Duration::from_secs(1));
            report.tick().await;
            let mut printed = false;
            loop {
                tokio::select! {
                    sample = samples.next() => {
                        if sample.is_none() { break; }
                        window.arrival(Instant::now());
                    }
                    _ = report.tick() => {
                        match window.summary() {
                            Some((rate, min, max, std, n)) => {
                                printed = true;
                                println!(
                                    "average rate: {rate:.3}\n\tmin: {min:.6}s max: {max:.6}s std dev: {std:.6}s window: {n}"
                                );
                            }
                            None => println!("no new messages on '{}'", args.topic),
                        }
                    }
                    _ = sleep_until(stop) => break,
                    _ = tokio::signal::ctrl_c() => break,
                }
            }
            if !printed {
                bail!(
                    "fewer than two samples on '{}': no rate to report",
                    args.topic
                );
            }
            Ok(())
        }
    }
    with_samples(node, &args.topic, runtime, Hz(args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_window_reports_rate_and_jitter() {
        let t0 = Instant::now();
        let mut w = RateWindow::new(3);
        assert!(w.summary().is_none());
        for ms in [0u64, 10, 20, 30, 50] {
            w.arrival(t0 + Duration::from_millis(ms));
        }
        let (rate, min, max, _std, n) = w.summary().expect("summary");
        assert_eq!(n, 3, "window keeps the last 3 intervals");
        assert!((rate - 1.0 / (0.040 / 3.0)).abs() < 1e-6, "{rate}");
        assert!((min - 0.010).abs() < 1e-9 && (max - 0.020).abs() < 1e-9);
    }
}
