//! The replayer (`convoy replay FILE`): a recording back onto DDS, as the run wrote it.
//!
//! Each recorded convoy topic gets a writer of its type with the QoS it was recorded with (the
//! file's QoS library and the channel's class), so a bridge or a stack cannot tell a replay from
//! a live run. Messages go out in file (receive) order, paced by their simulation time divided
//! by `rate`: a message stamped `t` leaves `t / rate` after the first stamped one (a message
//! without a stamp goes out at once, in its place among the others). The registry
//! (`convoy/nodes`) is left out unless asked for by name: replayed statuses would announce
//! nodes that are not running.
//!
//! Before the first message the replayer waits (`settle`, bounded) until every writer matched
//! a reader, since a reader that joins later misses what was written before. A file cut short
//! is replayed as far as it can be read, and then reported as an error naming it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::mcap::records::Record;
use anyhow::{bail, Context as _, Result};
use convoy_core::dds::{wire, Node, PublishError, Publisher};
use convoy_core::messages::{visit_type, Message, MessageVisitor};
use convoy_core::qos::QosSet;
use convoy_core::topics::{self, Topic, TopicClass};
use rustdds::RepresentationIdentifier;

use super::catalog::{for_each_record, Catalog};
use super::subscription::TopicFilter;
use super::{CDR_BE_HEADER, CDR_LE_HEADER};

/// What a replay is asked to do.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    pub file: PathBuf,
    pub domain: u32,
    /// The QoS for a file that does not carry its own (not written by `convoy record`).
    pub fallback_qos: Arc<QosSet>,
    /// Simulated seconds per wall-clock second; 0 (or anything not positive): as fast as the
    /// readers take it.
    pub rate: f64,
    /// Start over at the end, until stopped.
    pub looped: bool,
    pub topics: TopicFilter,
    /// The longest wait for readers before the first message.
    pub settle: Duration,
}

/// Why a recorded message did not go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwritten {
    /// Its bytes are not a valid message of the channel's type.
    Decode,
    /// DDS refused it (or the replay was stopped while a reader held it up).
    Publish,
}

/// What one topic's replay did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicReplay {
    pub published: u64,
    pub decode_errors: u64,
    pub publish_errors: u64,
}

/// What a replay did.
#[derive(Debug, Clone, Default)]
pub struct ReplaySummary {
    pub published: u64,
    pub passes: u32,
    pub topics: BTreeMap<String, TopicReplay>,
}

/// Replays `config.file` until its end (or, looping, until `stop`); fails for a file that is
/// not a convoy recording, and after the replay for one that was cut short.
pub fn run(config: &ReplayConfig, stop: Arc<AtomicBool>) -> Result<ReplaySummary> {
    let path = &config.file;
    let catalog = Catalog::open(path)?;
    let label = path.display().to_string();
    if catalog.convoy_channels().next().is_none() {
        let why: Vec<String> = catalog
            .channels
            .values()
            .filter_map(|c| c.convoy.as_ref().err().map(|e| format!("{}: {e}", c.topic)))
            .collect();
        bail!(
            "{label} holds no convoy recording: none of its {} channels has a convoy schema \
             (omgidl + cdr with convoy.type){}",
            catalog.channels.len(),
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({})", why.join("; "))
            }
        );
    }
    for c in catalog.channels.values() {
        if let Err(why) = &c.convoy {
            tracing::warn!("{label}: channel {} skipped: {why}", c.topic);
        }
    }
    let qos = match &catalog.qos {
        Some((library, xml)) => Arc::new(
            QosSet::from_str(xml, &format!("{label} (recorded QoS)"), Some(library))
                .with_context(|| format!("{label}: its recorded QoS library cannot be used"))?,
        ),
        None => {
            tracing::warn!(
                "{label} carries no QoS library: replaying with {}",
                config.fallback_qos.source()
            );
            Arc::clone(&config.fallback_qos)
        }
    };
    let node = Node::new(
        config.domain,
        &format!("replay/{}", std::process::id()),
        qos,
    )?;
    let mut writers: BTreeMap<u16, Box<dyn RawPublisher>> = BTreeMap::new();
    for (channel, type_name, class) in catalog.convoy_channels() {
        let topic = channel.topic.as_str();
        let status = topic == topics::NODES && !config.topics.names(topics::NODES);
        if status || !config.topics.matches(topic) {
            continue;
        }
        let open = OpenPublisher {
            node: &node,
            topic,
            class,
        };
        if let Some(writer) = visit_type(type_name, open) {
            writers.insert(channel.id, writer?);
        }
    }
    if writers.is_empty() {
        let recorded: Vec<&str> = catalog
            .channels
            .values()
            .map(|c| c.topic.as_str())
            .collect();
        bail!(
            "--topics {} selects none of the topics of {label} ({})",
            config.topics.patterns().join(" "),
            recorded.join(", ")
        );
    }
    settle(&writers, config.settle, &stop);
    let _ = writeln!(
        std::io::stdout(),
        "replaying {label}: {} topics{} at rate {}",
        writers.len(),
        catalog
            .messages
            .map_or(String::new(), |m| format!(", {m} messages")),
        if config.rate > 0.0 {
            config.rate.to_string()
        } else {
            "as fast as possible".into()
        }
    );
    let mut summary = ReplaySummary::default();
    let mut cut_short = catalog.unfinished.clone();
    loop {
        summary.passes += 1;
        let mut pace = Pace::new(config.rate);
        let ended = for_each_record(path, |record| {
            if let Record::Message { header, data } = record {
                if let Some(writer) = writers.get(&header.channel_id) {
                    let outcome = replay_one(writer.as_ref(), &data, &mut pace, &stop);
                    let count = summary
                        .topics
                        .entry(writer.topic().to_string())
                        .or_default();
                    match outcome {
                        Ok(()) => {
                            count.published += 1;
                            summary.published += 1;
                        }
                        Err(Unwritten::Decode) => count.decode_errors += 1,
                        Err(Unwritten::Publish) => count.publish_errors += 1,
                    }
                }
            }
            !stop.load(Ordering::Relaxed)
        })?;
        if let Err(problem) = ended {
            cut_short = Some(format!("{} (at byte {})", problem.message, problem.at_byte));
        }
        if !config.looped || stop.load(Ordering::Relaxed) {
            break;
        }
    }
    // Readers get the last messages before this process (and its writers) goes away.
    let until = Instant::now() + Duration::from_secs(5);
    for writer in writers.values() {
        let left = until.saturating_duration_since(Instant::now());
        writer.wait_for_acknowledgments(left);
    }
    if let Some(why) = cut_short {
        bail!(
            "{label}: {why}; replayed the {} messages that could be read",
            summary.published
        );
    }
    Ok(summary)
}

/// Decodes one recorded message, waits for its time and publishes it.
fn replay_one(
    writer: &dyn RawPublisher,
    data: &[u8],
    pace: &mut Pace,
    stop: &AtomicBool,
) -> Result<(), Unwritten> {
    let ready = writer.prepare(data).map_err(|e| {
        tracing::debug!(topic = writer.topic(), "recorded message not replayed: {e}");
        Unwritten::Decode
    })?;
    pace.wait(ready.sim_time_ns(), stop);
    ready.publish(stop).map_err(|e| {
        tracing::warn!("{e}");
        Unwritten::Publish
    })
}

/// Waits until every writer matched a reader, `settle` at most; says which did not.
fn settle(writers: &BTreeMap<u16, Box<dyn RawPublisher>>, settle: Duration, stop: &AtomicBool) {
    let until = Instant::now() + settle;
    loop {
        let unmatched: Vec<&str> = writers
            .values()
            .filter(|w| w.matched_readers() == 0)
            .map(|w| w.topic())
            .collect();
        if unmatched.is_empty() || stop.load(Ordering::Relaxed) {
            return;
        }
        if Instant::now() >= until {
            tracing::info!(
                "no reader of {} yet: replaying anyway",
                unmatched.join(", ")
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Pacing by simulation time: a stamped message leaves `(t - t0) / rate` after the first.
struct Pace {
    rate: f64,
    /// (wall clock, sim time) of the message the pace counts from.
    base: Option<(Instant, u64)>,
    /// The newest stamp seen.
    last: u64,
}

/// How far simulation time must go back for the pace to start over (a recording of a run that
/// restarted). Less is the file's receive order: a camera frame arrives after ticks newer than
/// it, and goes out at once; starting over for it slowed a 5x replay to 3x.
const RESTART: u64 = 1_000_000_000;

impl Pace {
    fn new(rate: f64) -> Pace {
        Pace {
            rate,
            base: None,
            last: 0,
        }
    }

    /// Sleeps until the message stamped `sim_ns` is due; returns at once for an unstamped
    /// message, a message older than one already sent, at an unpaced rate, or when `stop` is
    /// set. Time going back by more than [`RESTART`] starts the pace again from there.
    fn wait(&mut self, sim_ns: Option<u64>, stop: &AtomicBool) {
        let Some(sim) = sim_ns else { return };
        if !(self.rate > 0.0 && self.rate.is_finite()) {
            return;
        }
        let (wall0, sim0) = match self.base {
            Some(base) if sim.saturating_add(RESTART) >= self.last => base,
            _ => {
                self.base = Some((Instant::now(), sim));
                self.last = sim;
                return;
            }
        };
        self.last = self.last.max(sim);
        let offset = Duration::from_secs_f64(sim.saturating_sub(sim0) as f64 / 1e9 / self.rate);
        let due = wall0 + offset;
        loop {
            let now = Instant::now();
            if now >= due || stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep((due - now).min(Duration::from_millis(50)));
        }
    }
}

/// A writer of one topic whose type is known only from the file.
trait RawPublisher {
    fn topic(&self) -> &str;
    /// Decodes a recorded message (CDR with its encapsulation header) for publishing.
    fn prepare<'a>(&'a self, data: &[u8]) -> Result<Box<dyn Ready + 'a>, String>;
    fn matched_readers(&self) -> usize;
    fn wait_for_acknowledgments(&self, timeout: Duration) -> bool;
}

/// A decoded message, ready to go out.
trait Ready {
    fn sim_time_ns(&self) -> Option<u64>;
    fn publish(self: Box<Self>, stop: &AtomicBool) -> Result<(), PublishError>;
}

struct Typed<M: Message>(Publisher<M>);

struct ReadyMessage<'a, M: Message> {
    writer: &'a Publisher<M>,
    value: M,
}

impl<M: Message> Ready for ReadyMessage<'_, M> {
    fn sim_time_ns(&self) -> Option<u64> {
        self.value.sim_time_ns()
    }

    fn publish(self: Box<Self>, stop: &AtomicBool) -> Result<(), PublishError> {
        // A reliable reader that holds the writer's history up makes this wait, not drop.
        let ReadyMessage { writer, value } = *self;
        writer.write_patiently(value, stop)
    }
}

impl<M: Message> RawPublisher for Typed<M> {
    fn topic(&self) -> &str {
        self.0.topic()
    }

    fn prepare<'a>(&'a self, data: &[u8]) -> Result<Box<dyn Ready + 'a>, String> {
        let (header, body) = data
            .split_at_checked(4)
            .ok_or_else(|| format!("{} bytes: no CDR header", data.len()))?;
        let encoding = if header[..2] == CDR_LE_HEADER[..2] {
            RepresentationIdentifier::CDR_LE
        } else if header[..2] == CDR_BE_HEADER[..2] {
            RepresentationIdentifier::CDR_BE
        } else {
            return Err(format!("not plain CDR (header {header:02x?})"));
        };
        let value: M = wire::decode(M::TYPE_NAME, body, encoding).map_err(|e| e.to_string())?;
        Ok(Box::new(ReadyMessage {
            writer: &self.0,
            value,
        }))
    }

    fn matched_readers(&self) -> usize {
        self.0.matched_readers()
    }

    fn wait_for_acknowledgments(&self, timeout: Duration) -> bool {
        self.0.wait_for_acknowledgments(timeout)
    }
}

/// Opens the writer of one recorded topic for its type.
struct OpenPublisher<'a> {
    node: &'a Node,
    topic: &'a str,
    class: TopicClass,
}

impl MessageVisitor for OpenPublisher<'_> {
    type Output = Result<Box<dyn RawPublisher>>;

    fn visit<M: Message>(self) -> Self::Output {
        let topic = Topic::<M>::new(self.topic, self.class);
        let writer = self.node.publisher(&topic)?;
        Ok(Box::new(Typed(writer)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pace_follows_sim_time_over_rate() {
        let stop = AtomicBool::new(false);
        let mut pace = Pace::new(0.0);
        let started = Instant::now();
        pace.wait(Some(0), &stop);
        pace.wait(Some(10_000_000_000), &stop);
        assert!(started.elapsed() < Duration::from_secs(1), "rate 0 waited");

        let mut pace = Pace::new(1000.0);
        pace.wait(Some(0), &stop);
        pace.wait(None, &stop);
        // 50 ms of sim time at 1000x: 50 us.
        pace.wait(Some(50_000_000), &stop);
        // A little backwards (receive order): at once, the pace goes on.
        pace.wait(Some(10_000_000), &stop);
        assert_eq!(pace.last, 50_000_000);
        // Ahead again: due 60 ms after the base at 1000x, not after the older stamp.
        pace.wait(Some(60_000_000), &stop);
        // Far backwards (a restarted run): starts over without waiting.
        pace.wait(Some(0), &stop);
        pace.wait(Some(2_000_000_000), &stop);
        pace.wait(Some(0), &stop);
        assert_eq!(pace.last, 0);
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
