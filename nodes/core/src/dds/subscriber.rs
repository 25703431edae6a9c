//! Typed data reader: one convoy message type on one topic.
//!
//! Reading never fails from the caller's point of view: a payload that does not decode as the
//! topic's type (another program writing a different type under a convoy topic name) is counted
//! in [`ReaderStats::decode_errors`], logged with the topic name, and skipped; the node goes on.
//! Taking here (whole values or views read in place); a stream or a listener: `delivery.rs`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustdds::mio1;
use rustdds::{no_key, with_key, GUID};
use rustdds::{ReadCondition, SampleInfo, Timestamp, Topic};

use super::endpoint::{for_both, Endpoint, Twin};
use super::enforced::{expired, InstanceDeadlines, TimeFilter};
use super::shm_lane::ReaderLane;
use super::waitset::{ReaderToken, WaitSet};
use super::wire::{self, Wire, WireAdapter};
use super::{EndpointError, WaitError};
use crate::messages::Message;
use crate::qos::EndpointQos;
use crate::views::Viewable;

/// Where a sample handed to [`Subscriber::take_views`]'s reader came from.
#[derive(Debug, Clone, Copy)]
pub struct ViewInfo {
    pub source_timestamp: Option<Timestamp>,
    pub writer: GUID,
}

/// A sample as it reached a reader: decoded by rustdds (from the network), or its encoded
/// bytes where they lie (a same-host writer's ring slot).
enum Arrived<'a, M> {
    Decoded(M),
    Encoded(&'a [u8]),
}

/// One sample as the application sees it.
#[derive(Debug, Clone)]
pub struct Received<M> {
    pub value: M,
    pub source_timestamp: Option<Timestamp>,
    pub writer: GUID,
}

/// What a reader has seen, shared with whoever reports it (NodeStatus, `topic hz`, tests).
#[derive(Debug, Default)]
pub struct ReaderStats {
    pub received: AtomicU64,
    pub decode_errors: AtomicU64,
    /// Dropped by TIME_BASED_FILTER.
    pub filtered: AtomicU64,
    /// Dropped by LIFESPAN.
    pub expired: AtomicU64,
    /// Requested-deadline periods with no sample, summed over instances.
    pub deadline_missed: AtomicU64,
    /// Samples a reliable writer sent that this reader never got: gaps in the writer's
    /// sequence numbers, e.g. a KEEP_LAST reader history overwritten before the application
    /// took it. On a keyed KEEP_LAST topic a newer sample replacing an older one of the same
    /// instance counts here too.
    pub lost: AtomicU64,
}

impl ReaderStats {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

type Reader<M> = Twin<
    with_key::DataReader<Wire<M>, WireAdapter<M>>,
    no_key::DataReader<Wire<M>, WireAdapter<M>>,
>;

/// A typed subscriber. Create it with [`super::Node::subscriber`].
pub struct Subscriber<M: Message> {
    pub(super) reader: Reader<M>,
    pub(super) endpoint: Endpoint,
    stats: Arc<ReaderStats>,
    deadlines: Option<InstanceDeadlines<M::Key>>,
    time_filter: Option<TimeFilter<M::Key>>,
    /// Created on the first blocking wait.
    poll: Option<mio1::Poll>,
    /// Its token in the wait set it is attached to, if any.
    token: Option<ReaderToken>,
    /// Decode errors logged so far, to keep a flood of bad samples from flooding the log.
    logged_errors: u64,
    /// The last sequence number seen from each writer, to count what never arrived.
    last_seq: BTreeMap<GUID, i64>,
    reliable: bool,
    logged_loss: bool,
    /// Same-host writers' shared memory, for a large-sample topic (`shm_lane`).
    pub(super) lane: Option<Box<ReaderLane>>,
    /// The lane's token in the wait set this reader is attached to.
    lane_token: Option<ReaderToken>,
}

const READER_TOKEN: mio1::Token = mio1::Token(0);
const LANE_TOKEN: mio1::Token = mio1::Token(1);
/// Decode errors logged one by one before the log switches to every 1000th.
const LOGGED_ERRORS_IN_FULL: u64 = 10;
/// Decode errors skipped within one `take` before it returns what it has.
const MAX_ERRORS_PER_TAKE: usize = 1024;

impl<M: Message> Subscriber<M> {
    pub(super) fn create(
        endpoint: Endpoint,
        subscriber: &rustdds::Subscriber,
        dds_topic: &Topic,
    ) -> Result<Self, EndpointError> {
        let reader = endpoint.create::<M, _, _>(
            |qos| subscriber.create_datareader(dds_topic, qos),
            |qos| subscriber.create_datareader_no_key(dds_topic, qos),
        )?;
        let qos = &endpoint.qos;
        let now = Instant::now();
        let reliable = matches!(qos.reliability, crate::qos::Reliability::Reliable { .. });
        Ok(Subscriber {
            reader,
            deadlines: qos
                .deadline
                .map(|period| InstanceDeadlines::new(period, M::KEYED, now)),
            time_filter: qos.time_based_filter.map(TimeFilter::new),
            endpoint,
            stats: Arc::new(ReaderStats::default()),
            poll: None,
            token: None,
            logged_errors: 0,
            last_seq: BTreeMap::new(),
            reliable,
            logged_loss: false,
            lane: None,
            lane_token: None,
        })
    }

    /// Gives this subscriber its shared-memory lane.
    pub(super) fn with_lane(mut self, lane: ReaderLane) -> Self {
        self.lane = Some(Box::new(lane));
        self
    }

    pub fn topic(&self) -> &str {
        &self.endpoint.topic
    }

    pub fn qos(&self) -> &EndpointQos {
        &self.endpoint.qos
    }

    pub fn stats(&self) -> Arc<ReaderStats> {
        Arc::clone(&self.stats)
    }

    /// Declares that this reader wants the latest samples only (a bridge following the clock
    /// while it forwards large samples): samples overwritten before they were taken are still
    /// counted in the stats, but not reported as falling behind.
    pub fn latest_only(&mut self) {
        self.logged_loss = true;
    }

    /// Takes up to `max` samples that are there now, without blocking.
    pub fn take(&mut self, max: usize) -> Vec<Received<M>> {
        self.take_made(max, |arrived, info| {
            let value = match arrived {
                Arrived::Decoded(value) => value,
                Arrived::Encoded(bytes) => wire::decode::<M>(
                    M::TYPE_NAME,
                    bytes,
                    rustdds::RepresentationIdentifier::CDR_LE,
                )?,
            };
            Ok((
                value.key(),
                Received {
                    value,
                    source_timestamp: info.source_timestamp,
                    writer: info.writer,
                },
            ))
        })
    }

    /// What [`Subscriber::take`] and [`Subscriber::take_views`] share: up to `max` samples,
    /// those from the network decoded by rustdds and those in a same-host writer's ring as
    /// their bytes in the slot, each made into an `R` (with its instance's key) by `make`,
    /// and kept where [`Subscriber::admit`] delivers it.
    fn take_made<R>(
        &mut self,
        max: usize,
        mut make: impl FnMut(Arrived<'_, M>, ViewInfo) -> Result<(M::Key, R), wire::WireError>,
    ) -> Vec<R> {
        let mut made: Vec<(M::Key, R, Option<Timestamp>)> = Vec::new();
        for (value, info) in self.take_network(max) {
            let meta = ViewInfo {
                source_timestamp: info.source_timestamp(),
                writer: info.writer_guid(),
            };
            match make(Arrived::Decoded(value), meta) {
                Ok((key, r)) => made.push((key, r, meta.source_timestamp)),
                Err(e) => self.count_decode_error(&e.to_string()),
            }
        }
        if let Some(mut lane) = self.lane.take() {
            let room = max.saturating_sub(made.len());
            let stats = Arc::clone(&self.stats);
            let mut from_lane = Vec::new();
            lane.take_with(
                room,
                &stats,
                |reason| self.count_decode_error(reason),
                |bytes, source_timestamp, writer| {
                    let info = ViewInfo {
                        source_timestamp,
                        writer,
                    };
                    make(Arrived::Encoded(bytes), info)
                },
                &mut from_lane,
            );
            made.extend(
                from_lane
                    .into_iter()
                    .map(|((key, r), source_timestamp, _)| (key, r, source_timestamp)),
            );
            self.lane = Some(lane);
        }
        let now = Instant::now();
        let now_ns = timestamp_ns(Timestamp::now());
        let mut out = Vec::with_capacity(made.len());
        for (key, r, source_timestamp) in made {
            if self.admit(&key, source_timestamp, now, now_ns) {
                out.push(r);
            }
        }
        self.observe_deadlines();
        out
    }

    /// The samples rustdds has now (up to `max`), each decoded; ones that do not decode are
    /// counted and skipped.
    fn take_network(&mut self, max: usize) -> Vec<(M, SampleInfo)> {
        let mut raw: Vec<(M, SampleInfo)> = Vec::new();
        let mut errors = 0;
        while raw.len() < max && errors < MAX_ERRORS_PER_TAKE {
            match self.take_raw(max - raw.len(), &mut raw) {
                Ok(()) => break,
                Err(rustdds::dds::ReadError::Deserialization { reason }) => {
                    errors += 1;
                    self.count_decode_error(&reason);
                }
                Err(rustdds::dds::ReadError::UnknownKey { .. }) => {}
                Err(other) => {
                    tracing::error!(topic = %self.endpoint.topic, "DDS read failed: {other}");
                    break;
                }
            }
            // rustdds has advanced past the bad sample: the loop reads what follows it.
        }
        self.count_gaps(&raw);
        raw
    }

    /// Whether a sample of instance `key` from `source_timestamp` is delivered: not when its
    /// LIFESPAN has passed or the TIME_BASED_FILTER holds it back (each counted); a delivered
    /// one is counted received and feeds the instance's deadline.
    fn admit(
        &mut self,
        key: &M::Key,
        source_timestamp: Option<Timestamp>,
        now: Instant,
        now_ns: i64,
    ) -> bool {
        let source_ns = source_timestamp.map(timestamp_ns);
        if let (Some(lifespan), Some(source_ns)) = (self.endpoint.qos.lifespan, source_ns) {
            if expired(lifespan, source_ns, now_ns) {
                self.stats.expired.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
        if let Some(deadlines) = self.deadlines.as_mut() {
            let missed = deadlines.sample(key.clone(), now);
            self.stats
                .deadline_missed
                .fetch_add(missed, Ordering::Relaxed);
        }
        if let Some(filter) = self.time_filter.as_mut() {
            if !filter.accept(key.clone(), source_ns.unwrap_or(now_ns)) {
                self.stats.filtered.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
        self.stats.received.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Takes up to `max` samples, waiting up to `timeout` for the first to arrive.
    pub fn take_wait(&mut self, max: usize, timeout: Duration) -> Vec<Received<M>> {
        self.wait_for(timeout, |s| s.take(max))
    }

    /// Calls `take` until it gives something or `timeout` passes, blocking on the reader in
    /// between.
    fn wait_for<T>(
        &mut self,
        timeout: Duration,
        mut take: impl FnMut(&mut Self) -> Vec<T>,
    ) -> Vec<T> {
        let deadline = Instant::now() + timeout;
        loop {
            let batch = take(self);
            if !batch.is_empty() {
                return batch;
            }
            let now = Instant::now();
            if now >= deadline {
                return batch;
            }
            if !self.block(deadline - now) {
                // No readiness to wait on: fall back to a short pause, still bounded.
                std::thread::sleep(Duration::from_millis(1).min(deadline - now));
            }
        }
    }

    /// Takes up to `max` samples that are there now, handing each to `read` as a view borrowed
    /// from where its bytes lie: for a same-host writer's sample, its shared-memory slot (a
    /// 4 MB image read in place, not copied out); for one that came over the network, its
    /// decoded value. Returns what `read` made of each sample delivered (LIFESPAN, the time
    /// filter and the stats apply as in [`Subscriber::take`]). What `read` made of a slot the
    /// writer reused while it ran is dropped and the sample counted lost, so `read` should
    /// work out a result, not act on the sample.
    pub fn take_views<R>(
        &mut self,
        max: usize,
        mut read: impl for<'a> FnMut(ViewInfo, M::View<'a>) -> R,
    ) -> Vec<R>
    where
        M: Viewable,
    {
        self.take_made(max, |arrived, info| {
            let made = match arrived {
                Arrived::Decoded(value) => read(info, value.view()),
                Arrived::Encoded(bytes) => read(
                    info,
                    wire::decode(
                        M::TYPE_NAME,
                        bytes,
                        rustdds::RepresentationIdentifier::CDR_LE,
                    )?,
                ),
            };
            Ok(((), made))
        })
    }

    /// [`Subscriber::take_views`], waiting up to `timeout` for the first sample to arrive.
    pub fn take_views_wait<R>(
        &mut self,
        max: usize,
        timeout: Duration,
        mut read: impl for<'a> FnMut(ViewInfo, M::View<'a>) -> R,
    ) -> Vec<R>
    where
        M: Viewable,
    {
        self.wait_for(timeout, |s| s.take_views(max, &mut read))
    }

    /// Waits (bounded) for the next sample; `None` when `timeout` passes first.
    pub fn next_timeout(&mut self, timeout: Duration) -> Option<Received<M>> {
        self.take_wait(1, timeout).into_iter().next()
    }

    /// Requested-deadline misses observed so far (also kept in [`ReaderStats`]).
    pub fn deadline_missed(&mut self) -> u64 {
        self.observe_deadlines();
        ReaderStats::get(&self.stats.deadline_missed)
    }

    /// How many writers this reader is matched with now (same-host writers through its lane
    /// included).
    pub fn matched_writers(&self) -> usize {
        self.endpoint.matched_writers()
            + self
                .lane
                .as_ref()
                .map_or(0, |l| l.descriptors.matched_writers())
    }

    /// Blocks until at least `writers` writers are matched, or fails after `timeout`.
    pub fn wait_for_match(&self, writers: usize, timeout: Duration) -> Result<(), WaitError> {
        self.endpoint
            .wait_until_matched(writers, timeout, || self.matched_writers())
    }

    /// Counts samples skipped in each reliable writer's sequence (see [`ReaderStats::lost`]).
    fn count_gaps(&mut self, samples: &[(M, SampleInfo)]) {
        if !self.reliable {
            return;
        }
        let mut lost = 0;
        for (_, info) in samples {
            let id = info.sample_identity();
            let seq = i64::from(id.sequence_number);
            if let Some(last) = self.last_seq.insert(id.writer_guid, seq) {
                lost += u64::try_from(seq - last - 1).unwrap_or(0);
            }
        }
        if lost == 0 {
            return;
        }
        let total = self.stats.lost.fetch_add(lost, Ordering::Relaxed) + lost;
        // Replacement within an instance is what a keyed KEEP_LAST topic is for; on an
        // unkeyed topic a gap means the reader fell behind its history depth.
        if !M::KEYED && !self.logged_loss {
            self.logged_loss = true;
            tracing::warn!(
                topic = %self.endpoint.topic,
                lost = total,
                "reliable samples overwritten before they were taken: the reader fell behind \
                 its history depth (deepen it or use KEEP_ALL in the QoS profile)"
            );
        }
    }

    fn observe_deadlines(&mut self) {
        if let Some(deadlines) = self.deadlines.as_mut() {
            let missed = deadlines.observe(Instant::now());
            self.stats
                .deadline_missed
                .fetch_add(missed, Ordering::Relaxed);
        }
    }

    fn count_decode_error(&mut self, reason: &str) {
        let n = self.stats.decode_errors.fetch_add(1, Ordering::Relaxed) + 1;
        self.logged_errors += 1;
        if self.logged_errors <= LOGGED_ERRORS_IN_FULL || n.is_multiple_of(1000) {
            tracing::warn!(
                topic = %self.endpoint.topic,
                expected = M::TYPE_NAME,
                decode_errors = n,
                "dropped a sample that does not decode: {reason}"
            );
        }
    }

    fn take_raw(
        &mut self,
        max: usize,
        out: &mut Vec<(M, SampleInfo)>,
    ) -> Result<(), rustdds::dds::ReadError> {
        match &mut self.reader {
            Twin::Keyed(r) => {
                for sample in r.take(max, ReadCondition::any())? {
                    let info = sample.sample_info().clone();
                    if let Some(Wire(value)) = sample.into_value().value() {
                        out.push((value, info));
                    }
                }
            }
            Twin::Unkeyed(r) => {
                for sample in r.take(max, ReadCondition::any())? {
                    let info = sample.sample_info().clone();
                    out.push((sample.into_value().0, info));
                }
            }
        }
        Ok(())
    }

    /// Registers this reader's readiness with a [`WaitSet`]; the set then wakes when data
    /// arrives here. A reader is registered with one wait set at most and never uses its own
    /// blocking wait afterwards.
    pub fn attach(&mut self, waitset: &mut WaitSet) -> std::io::Result<ReaderToken> {
        let token = for_both!(&mut self.reader, r => waitset.attach_source(r))?;
        self.token = Some(token);
        if let Some(lane) = self.lane.as_mut() {
            self.lane_token = Some(lane.descriptors.attach(waitset)?);
        }
        Ok(token)
    }

    /// As [`Subscriber::take`] when `waitset`, the set this reader is attached to, says it
    /// should be read now ([`WaitSet::ready`]); nothing otherwise.
    pub fn take_ready(&mut self, waitset: &WaitSet, max: usize) -> Vec<Received<M>> {
        let lane_ready = self.lane_token.is_some_and(|t| waitset.ready(t));
        match self.token {
            Some(token) if !waitset.ready(token) && !lane_ready => Vec::new(),
            _ => self.take(max),
        }
    }

    /// [`Subscriber::take_views`] when the wait set says this reader (or its lane) has data.
    pub fn take_ready_views<R>(
        &mut self,
        waitset: &WaitSet,
        max: usize,
        read: impl for<'a> FnMut(ViewInfo, M::View<'a>) -> R,
    ) -> Vec<R>
    where
        M: Viewable,
    {
        let lane_ready = self.lane_token.is_some_and(|t| waitset.ready(t));
        match self.token {
            Some(token) if !waitset.ready(token) && !lane_ready => Vec::new(),
            _ => self.take_views(max, read),
        }
    }

    /// Blocks until the reader signals new data or `timeout` passes. False when no poller
    /// could be set up (then the caller pauses briefly instead).
    fn block(&mut self, timeout: Duration) -> bool {
        if self.poll.is_none() {
            let Ok(poll) = mio1::Poll::new() else {
                return false;
            };
            let registry = poll.registry();
            let registered = for_both!(&mut self.reader, r => registry.register(r, READER_TOKEN, mio1::Interest::READABLE));
            if registered.is_err() {
                return false;
            }
            if let Some(lane) = self.lane.as_mut() {
                let registered = for_both!(&mut lane.descriptors.reader, r => registry.register(r, LANE_TOKEN, mio1::Interest::READABLE));
                if registered.is_err() {
                    return false;
                }
            }
            self.poll = Some(poll);
        }
        let Some(poll) = self.poll.as_mut() else {
            return false;
        };
        let mut events = mio1::Events::with_capacity(4);
        poll.poll(&mut events, Some(timeout)).is_ok()
    }
}

/// Nanoseconds since the Unix epoch of an RTPS timestamp (32.32 fixed-point seconds).
pub fn timestamp_ns(ts: Timestamp) -> i64 {
    let ticks = ts.to_ticks();
    let secs = (ticks >> 32) as i64;
    let frac = ((ticks & 0xffff_ffff) * 1_000_000_000) >> 32;
    secs.saturating_mul(1_000_000_000)
        .saturating_add(frac as i64)
}
