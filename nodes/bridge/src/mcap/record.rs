//! The recorder (`convoy record`, and the `record` node of a run): convoy topics to one MCAP
//! file.
//!
//! Two threads. The caller's thread is the DDS side: it waits on every reader at once, takes
//! what arrived, and hands each sample to the file side through a bounded channel; it never
//! blocks on the disk, so a slow disk shows up as counted drops, not as a reader that falls
//! behind its writers (which would slow the whole lockstep run down). The writer thread owns
//! the MCAP writer: chunked, compressed, a chunk closed and flushed at least once a second so
//! that a recorder killed outright leaves a file readable up to its last complete chunk.
//!
//! The recorder is a DDS node (`bridge/NAME`) with a status beacon whose counters are its
//! messages, bytes and drops. Given the scenario, it subscribes to the run's topics before the
//! run starts and announces itself only once it matched the writers every run has before frame
//! 0 (the clock, the agents' states, the sensors' outputs): a coordinator told to wait for it
//! (`--wait-for`) then starts frame 0 with the recorder listening.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use convoy_core::dds::{Node, WaitSet};
use convoy_core::messages::NodeRole;
use convoy_core::node::NodeId;
use convoy_core::qos::QosSet;
use convoy_core::scenario::Scenario;
use convoy_core::status::StatusBeacon;

use super::scenario_topics;
use super::subscription::{self, RawSample, RawSubscription, TopicFilter};
use super::writer::{open_file, write_file, Progress, ToFile};
pub use super::writer::{RecordSummary, TopicCount};

/// Samples waiting for the writer thread; past this the DDS side drops and counts them.
const QUEUE: usize = 4096;
/// How often the DDS side looks for topics discovery found since.
const DISCOVERY_EVERY: Duration = Duration::from_millis(200);
/// The most samples taken from one reader at a time: more than a deep reader holds per
/// instance, so one wake-up empties it.
const TAKE: usize = 1024;
/// The DDS side's longest wait, so the stop flag and the beacon are looked at.
const WAIT: Duration = Duration::from_millis(50);

/// How chunks are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Compression {
    /// zstd (the default: the best ratio at camera rates on two cores)
    #[default]
    Zstd,
    /// lz4 (faster, larger files)
    Lz4,
    /// no compression
    None,
}

/// What a recorder is asked to do.
#[derive(Debug, Clone)]
pub struct RecordConfig {
    pub domain: u32,
    /// The QoS library the run uses: readers are made with it, and the file keeps it.
    pub qos: Arc<QosSet>,
    pub out: PathBuf,
    pub topics: TopicFilter,
    /// Stop after this long (from when the recorder is ready); None: until stopped.
    pub duration: Option<Duration>,
    pub compression: Compression,
    /// The run's scenario: its topics are subscribed at once, and the recorder is ready only
    /// when the writers every run has are matched.
    pub scenario: Option<Scenario>,
    /// The node's name: it runs as DDS node `bridge/NAME`.
    pub name: String,
    /// No progress line.
    pub quiet: bool,
    /// How long to wait for the scenario's writers before recording anyway.
    pub ready_timeout: Duration,
}

/// Records until `stop` is set or the duration passes; the file is finished either way.
pub fn run(config: &RecordConfig, stop: Arc<AtomicBool>) -> Result<RecordSummary> {
    let id = NodeId::bridge(&config.name);
    id.check()?;
    for pattern in config.topics.hopeless() {
        tracing::warn!("--topics '{pattern}' matches no convoy topic: it records nothing");
    }
    let node = Node::new(config.domain, &id.to_string(), Arc::clone(&config.qos))?;
    let mut beacon = StatusBeacon::new(&node, NodeRole::Bridge)?;
    if let Some(scenario) = &config.scenario {
        beacon.set_lease(Duration::from_secs_f64(scenario.scenario.lease));
    }
    let writer = open_file(&config.out, config.compression, &config.qos)?;
    let progress = Arc::new(Progress::default());
    let (tx, rx) = sync_channel(QUEUE);
    let file_side = {
        let progress = Arc::clone(&progress);
        let qos = Arc::clone(&config.qos);
        let out = config.out.clone();
        std::thread::Builder::new()
            .name("record writer".into())
            .spawn(move || write_file(writer, rx, &out, &qos, &progress))
            .context("cannot start the recorder's writer thread")?
    };
    let mut dds = DdsSide {
        node,
        filter: config.topics.clone(),
        subscriptions: Vec::new(),
        known: BTreeSet::new(),
        reported: BTreeSet::new(),
        waitset: WaitSet::new().context("cannot create a wait set")?,
        tx,
        progress: Arc::clone(&progress),
        batch: Vec::new(),
    };
    let recorded = dds.record(config, &stop, &mut beacon);
    let lost = subscription::lost_total(&dds.subscriptions);
    drop(dds);
    // The writer thread finishes the file once the channel is closed (dropped above).
    let written = file_side
        .join()
        .map_err(|_| anyhow::anyhow!("the recorder's writer thread panicked"))?;
    let mut summary = written?;
    recorded?;
    summary.drops = progress.queue_drops.load(Ordering::Relaxed) + lost;
    beacon.set_counter("drops", summary.drops);
    beacon.final_beat(Duration::from_millis(300));
    Ok(summary)
}

/// The DDS side of a recording.
struct DdsSide {
    node: Node,
    filter: TopicFilter,
    subscriptions: Vec<Box<dyn RawSubscription>>,
    known: BTreeSet<String>,
    reported: BTreeSet<String>,
    waitset: WaitSet,
    tx: SyncSender<ToFile>,
    progress: Arc<Progress>,
    batch: Vec<RawSample>,
}

impl DdsSide {
    fn record(
        &mut self,
        config: &RecordConfig,
        stop: &AtomicBool,
        beacon: &mut StatusBeacon,
    ) -> Result<()> {
        let required = match &config.scenario {
            Some(scenario) => self.subscribe_scenario(scenario)?,
            None => Vec::new(),
        };
        self.discover()?;
        let started = Instant::now();
        let mut announced = started;
        loop {
            let missing: Vec<&str> = required
                .iter()
                .filter(|&&i| self.subscriptions[i].matched_writers() == 0)
                .map(|&i| self.subscriptions[i].topic())
                .collect();
            if missing.is_empty() {
                break;
            }
            if started.elapsed() > config.ready_timeout {
                tracing::warn!(
                    "no writer of {} after {:?}: recording without them",
                    missing.join(", "),
                    config.ready_timeout
                );
                break;
            }
            if announced.elapsed() > Duration::from_secs(2) {
                announced = Instant::now();
                tracing::info!("waiting for writers of {}", missing.join(", "));
            }
            if stop.load(Ordering::Relaxed) {
                return self.drain();
            }
            self.round()?;
        }
        // Ready: the first beat tells a coordinator waiting for this node that it listens.
        // A closed stdout (a pipe whose reader left) must not stop the recording.
        let _ = writeln!(
            std::io::stdout(),
            "recording {} ({} topics so far) as {}",
            config.out.display(),
            self.subscriptions.len(),
            self.node.node_id()
        );
        let _ = std::io::stdout().flush();
        let ready = Instant::now();
        let mut last_discovery = ready;
        let mut last_progress = (ready, 0u64);
        loop {
            if stop.load(Ordering::Relaxed) || config.duration.is_some_and(|d| ready.elapsed() >= d)
            {
                break;
            }
            if last_discovery.elapsed() >= DISCOVERY_EVERY {
                last_discovery = Instant::now();
                self.discover()?;
            }
            self.round()?;
            if beacon.due() {
                beacon.set_counter("messages", self.progress.messages.load(Ordering::Relaxed));
                beacon.set_counter("bytes", self.progress.bytes.load(Ordering::Relaxed));
                beacon.set_counter("drops", self.drops());
            }
            beacon.beat()?;
            if !config.quiet && last_progress.0.elapsed() >= Duration::from_secs(1) {
                last_progress = self.print_progress(&config.out, last_progress);
            }
        }
        self.drain()
    }

    /// Subscribes to every topic of the scenario the filter takes; returns the indexes of the
    /// ones a run always has a writer of.
    fn subscribe_scenario(&mut self, scenario: &Scenario) -> Result<Vec<usize>> {
        let mut required = Vec::new();
        for topic in scenario_topics(scenario) {
            if !self.filter.matches(&topic.name) {
                continue;
            }
            if let Some(index) = self.subscribe(&topic.name, topic.type_name)? {
                if topic.required {
                    required.push(index);
                }
            }
        }
        Ok(required)
    }

    /// Subscribes to the matching topics discovery found since the last look.
    fn discover(&mut self) -> Result<()> {
        let found =
            subscription::discovered(&self.node, &self.filter, &self.known, &mut self.reported);
        for (topic, type_name) in found {
            self.subscribe(&topic, type_name)?;
        }
        Ok(())
    }

    /// A reader of `topic`, announced to the file side; its index, or None for a topic that is
    /// not convoy's or recorded already.
    fn subscribe(&mut self, topic: &str, type_name: &'static str) -> Result<Option<usize>> {
        if self.known.contains(topic) {
            return Ok(None);
        }
        let Some(opened) = subscription::open(&self.node, topic, type_name) else {
            return Ok(None);
        };
        let mut reader = opened?;
        reader
            .attach(&mut self.waitset)
            .with_context(|| format!("{topic}: cannot wait on its reader"))?;
        let index = self.subscriptions.len();
        let announce = ToFile::Channel {
            index,
            topic: topic.to_string(),
            type_name,
            class: reader.class(),
        };
        // Never dropped: a sample of a channel the file side does not know could not be written.
        if self.tx.send(announce).is_err() {
            bail!("the recording stopped (the writer thread ended)");
        }
        tracing::debug!("recording {topic} ({type_name})");
        self.known.insert(topic.to_string());
        self.subscriptions.push(reader);
        Ok(Some(index))
    }

    /// One wait on every reader, then what arrived to the file side. Fails when the file side
    /// ended (it failed: the disk is full, say).
    fn round(&mut self) -> Result<usize> {
        self.waitset.wait(WAIT);
        self.take(true)
    }

    /// Takes from every reader (only those the wait set marked, when `marked`).
    fn take(&mut self, marked: bool) -> Result<usize> {
        let mut batch = std::mem::take(&mut self.batch);
        for (index, reader) in self.subscriptions.iter_mut().enumerate() {
            let waitset = marked.then_some(&self.waitset);
            reader.take_into(waitset, TAKE, index, &mut batch);
        }
        let count = batch.len();
        for sample in batch.drain(..) {
            match self.tx.try_send(ToFile::Sample(sample)) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    self.progress.queue_drops.fetch_add(1, Ordering::Relaxed);
                }
                Err(TrySendError::Disconnected(_)) => {
                    bail!("the recording stopped (the writer thread ended)");
                }
            }
        }
        self.batch = batch;
        Ok(count)
    }

    /// After the stop: what is still on its way (the last frame's samples written just before
    /// the run ended), until the readers are quiet for a moment, 1 s at most.
    fn drain(&mut self) -> Result<()> {
        let until = Instant::now() + Duration::from_secs(1);
        let mut quiet = 0;
        while quiet < 3 && Instant::now() < until {
            self.waitset.wait(Duration::from_millis(30));
            if self.take(false)? == 0 {
                quiet += 1;
            } else {
                quiet = 0;
            }
        }
        Ok(())
    }

    fn drops(&self) -> u64 {
        self.progress.queue_drops.load(Ordering::Relaxed)
            + subscription::lost_total(&self.subscriptions)
    }

    /// The progress line on stderr: messages, bytes, MB/s since the last line, drops.
    fn print_progress(&self, out: &Path, (since, bytes_then): (Instant, u64)) -> (Instant, u64) {
        let messages = self.progress.messages.load(Ordering::Relaxed);
        let bytes = self.progress.bytes.load(Ordering::Relaxed);
        let rate = (bytes - bytes_then.min(bytes)) as f64 / since.elapsed().as_secs_f64() / 1e6;
        let _ = writeln!(
            std::io::stderr(),
            "recording {}: {messages} messages, {:.1} MB, {rate:.2} MB/s, {} drops",
            out.display(),
            bytes as f64 / 1e6,
            self.drops()
        );
        (Instant::now(), bytes)
    }
}
