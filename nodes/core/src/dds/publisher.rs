//! Typed data writer: one convoy message type on one topic.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustdds::{no_key, with_key, Topic};

use super::endpoint::{for_both, Endpoint, Twin};
use super::enforced::DeadlineClock;
use super::shm_lane::WriterLane;
use super::wire::{Wire, WireAdapter};
use super::{EndpointError, WaitError};
use crate::messages::Message;
use crate::qos::EndpointQos;

/// Why a write failed. The message is handed back where rustdds returns it.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("topic '{topic}': cannot encode the message: {reason}")]
    Encode { topic: String, reason: String },
    #[error("topic '{topic}': the reliable writer's history is full and readers did not acknowledge in time (raise history depth or max_blocking_time in the QoS profile)")]
    WouldBlock { topic: String },
    #[error("topic '{topic}': DDS write failed: {reason}")]
    Dds { topic: String, reason: String },
}

type Writer<M> = Twin<
    with_key::DataWriter<Wire<M>, WireAdapter<M>>,
    no_key::DataWriter<Wire<M>, WireAdapter<M>>,
>;

/// A typed publisher. Create it with [`super::Node::publisher`].
pub struct Publisher<M: Message> {
    writer: Writer<M>,
    endpoint: Endpoint,
    /// Offered DEADLINE, enforced by convoy (rustdds does not count misses).
    deadline: Option<Mutex<(DeadlineClock, u64)>>,
    /// Same-host readers' shared memory, for a large-sample topic (`shm_lane`).
    lane: Option<Box<Mutex<WriterLane>>>,
}

impl<M: Message> Publisher<M> {
    pub(super) fn create(
        endpoint: Endpoint,
        publisher: &rustdds::Publisher,
        dds_topic: &Topic,
    ) -> Result<Self, EndpointError> {
        let writer = endpoint.create::<M, _, _>(
            |qos| publisher.create_datawriter(dds_topic, qos),
            |qos| publisher.create_datawriter_no_key(dds_topic, qos),
        )?;
        let deadline = endpoint
            .qos
            .deadline
            .map(|period| Mutex::new((DeadlineClock::new(period, Instant::now()), 0)));
        Ok(Publisher {
            writer,
            endpoint,
            deadline,
            lane: None,
        })
    }

    /// Gives this publisher its shared-memory lane.
    pub(super) fn with_lane(mut self, lane: WriterLane) -> Self {
        self.lane = Some(Box::new(Mutex::new(lane)));
        self
    }

    pub fn topic(&self) -> &str {
        &self.endpoint.topic
    }

    pub fn qos(&self) -> &EndpointQos {
        &self.endpoint.qos
    }

    /// Publishes one message: to same-host readers through shared memory when this topic has
    /// a lane and such a reader is matched, over DDS to every other reader (and over DDS when
    /// no reader is matched at all, as ever).
    pub fn write(&self, message: M) -> Result<(), PublishError> {
        match self.write_lane(&message)? {
            LaneWrite::Only => Ok(()),
            LaneWrite::AlsoDds => self.write_dds(message),
        }
    }

    /// The lane's part of a write, and whether DDS still has readers to serve.
    fn write_lane(&self, message: &M) -> Result<LaneWrite, PublishError> {
        let Some(lane) = &self.lane else {
            return Ok(LaneWrite::AlsoDds);
        };
        let Ok(mut lane) = lane.lock() else {
            return Ok(LaneWrite::AlsoDds);
        };
        if !lane.wanted() {
            return Ok(LaneWrite::AlsoDds);
        }
        lane.write(message)?;
        Ok(if self.endpoint.matched() > 0 {
            LaneWrite::AlsoDds
        } else {
            LaneWrite::Only
        })
    }

    /// The DDS part of a write.
    fn write_dds(&self, message: M) -> Result<(), PublishError> {
        let result = for_both!(&self.writer, w => w.write(Wire(message), None));
        if let Some(deadline) = &self.deadline {
            if let Ok(mut guard) = deadline.lock() {
                let (clock, missed) = &mut *guard;
                *missed += clock.sample(Instant::now());
            }
        }
        result.map_err(|e| {
            use rustdds::dds::WriteError as W;
            let topic = self.endpoint.topic.clone();
            match e {
                W::Serialization { reason, .. } => PublishError::Encode { topic, reason },
                W::WouldBlock { .. } => PublishError::WouldBlock { topic },
                W::Poisoned { reason, .. } | W::Internal { reason } => {
                    PublishError::Dds { topic, reason }
                }
                W::Io(e) => PublishError::Dds {
                    topic,
                    reason: e.to_string(),
                },
            }
        })
    }

    /// Writes a sample, waiting out a full reliable history until `stop` is set. A reader that
    /// died keeps matching (never acknowledging) until discovery drops it, and until then
    /// rustdds refuses writes: the writer's frame takes longer, it does not fail. The wait is
    /// named once in the log.
    pub fn write_patiently(
        &self,
        message: M,
        stop: &std::sync::atomic::AtomicBool,
    ) -> Result<(), PublishError> {
        // The lane never blocks: it is written once, and only the DDS part waits.
        if let LaneWrite::Only = self.write_lane(&message)? {
            return Ok(());
        }
        let mut reported = false;
        loop {
            match self.write_dds(message.clone()) {
                Err(PublishError::WouldBlock { topic }) => {
                    if !reported {
                        reported = true;
                        tracing::warn!(
                            "{topic}: a reader does not acknowledge (a node that died?); retrying"
                        );
                    }
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return Err(PublishError::WouldBlock { topic });
                    }
                }
                other => return other,
            }
        }
    }

    /// Offered-deadline periods that passed without a write, up to now.
    pub fn deadline_missed(&self) -> u64 {
        let Some(deadline) = &self.deadline else {
            return 0;
        };
        match deadline.lock() {
            Ok(mut guard) => {
                let (clock, missed) = &mut *guard;
                *missed += clock.observe(Instant::now());
                *missed
            }
            Err(_) => 0,
        }
    }

    /// How many readers this writer is matched with now (same-host readers through its lane
    /// included).
    pub fn matched_readers(&self) -> usize {
        self.endpoint.matched() + self.lane_readers()
    }

    fn lane_readers(&self) -> usize {
        self.lane
            .as_ref()
            .and_then(|l| l.lock().ok().map(|l| l.descriptors().matched_readers()))
            .unwrap_or(0)
    }

    /// Blocks until at least `readers` readers are matched, or fails after `timeout`.
    pub fn wait_for_match(&self, readers: usize, timeout: Duration) -> Result<(), WaitError> {
        self.endpoint
            .wait_until_matched(readers, timeout, || self.matched_readers())
    }

    /// Waits (bounded) until every matched reader acknowledged what was written (the lane's
    /// descriptors included).
    pub fn wait_for_acknowledgments(&self, timeout: Duration) -> bool {
        let dds =
            for_both!(&self.writer, w => w.wait_for_acknowledgments(timeout).unwrap_or(false));
        let lane = match &self.lane {
            Some(lane) => lane
                .lock()
                .map(|l| l.descriptors().wait_for_acknowledgments(timeout))
                .unwrap_or(false),
            None => true,
        };
        dds && lane
    }
}

/// What a write leaves to DDS once the lane had its part.
enum LaneWrite {
    /// Every matched reader was served through the lane.
    Only,
    AlsoDds,
}
