//! Typed data writer: one convoy message type on one topic.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustdds::{no_key, with_key, Topic};

use super::enforced::DeadlineClock;
use super::wire::{Wire, WireAdapter};
use super::{discovery, poll_until, EndpointError, WaitError};
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

enum Writer<M: Message> {
    Keyed(with_key::DataWriter<Wire<M>, WireAdapter<M>>),
    Unkeyed(no_key::DataWriter<Wire<M>, WireAdapter<M>>),
}

/// A typed publisher. Create it with [`super::Node::publisher`].
pub struct Publisher<M: Message> {
    writer: Writer<M>,
    topic: String,
    qos: EndpointQos,
    dds_qos: rustdds::QosPolicies,
    participant: rustdds::DomainParticipant,
    /// Offered DEADLINE, enforced by convoy (rustdds does not count misses).
    deadline: Option<Mutex<(DeadlineClock, u64)>>,
}

impl<M: Message> Publisher<M> {
    pub(super) fn create(
        participant: &rustdds::DomainParticipant,
        publisher: &rustdds::Publisher,
        dds_topic: &Topic,
        topic: &str,
        qos: EndpointQos,
    ) -> Result<Self, EndpointError> {
        let create_error = |e: rustdds::dds::CreateError| EndpointError::Create {
            topic: topic.to_string(),
            type_name: M::TYPE_NAME,
            reason: e.to_string(),
        };
        let dds_qos = qos.to_rustdds();
        let writer = if M::KEYED {
            Writer::Keyed(
                publisher
                    .create_datawriter::<Wire<M>, WireAdapter<M>>(dds_topic, Some(dds_qos.clone()))
                    .map_err(create_error)?,
            )
        } else {
            Writer::Unkeyed(
                publisher
                    .create_datawriter_no_key::<Wire<M>, WireAdapter<M>>(
                        dds_topic,
                        Some(dds_qos.clone()),
                    )
                    .map_err(create_error)?,
            )
        };
        let deadline = qos
            .deadline
            .map(|period| Mutex::new((DeadlineClock::new(period, Instant::now()), 0)));
        Ok(Publisher {
            writer,
            topic: topic.to_string(),
            qos,
            dds_qos,
            participant: participant.clone(),
            deadline,
        })
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn qos(&self) -> &EndpointQos {
        &self.qos
    }

    /// Publishes one message.
    pub fn write(&self, message: M) -> Result<(), PublishError> {
        let result = match &self.writer {
            Writer::Keyed(w) => w.write(Wire(message), None).map_err(drop_data),
            Writer::Unkeyed(w) => w.write(Wire(message), None).map_err(drop_data),
        };
        if let Some(deadline) = &self.deadline {
            if let Ok(mut guard) = deadline.lock() {
                let (clock, missed) = &mut *guard;
                *missed += clock.sample(Instant::now());
            }
        }
        result.map_err(|e| match e {
            WriteFailure::Encode(reason) => PublishError::Encode {
                topic: self.topic.clone(),
                reason,
            },
            WriteFailure::WouldBlock => PublishError::WouldBlock {
                topic: self.topic.clone(),
            },
            WriteFailure::Other(reason) => PublishError::Dds {
                topic: self.topic.clone(),
                reason,
            },
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
        let mut reported = false;
        loop {
            match self.write(message.clone()) {
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

    /// How many readers this writer is matched with now.
    pub fn matched_readers(&self) -> usize {
        discovery::matched_readers(&self.participant, &self.topic, &self.dds_qos)
    }

    /// Blocks until at least `readers` readers are matched, or fails after `timeout`.
    pub fn wait_for_match(&self, readers: usize, timeout: Duration) -> Result<(), WaitError> {
        if poll_until(timeout, || self.matched_readers() >= readers) {
            Ok(())
        } else {
            Err(WaitError::MatchTimeout {
                topic: self.topic.clone(),
                what: "readers",
                wanted: readers,
                matched: self.matched_readers(),
                waited: timeout,
            })
        }
    }

    /// Waits (bounded) until every matched reader acknowledged what was written.
    pub fn wait_for_acknowledgments(&self, timeout: Duration) -> bool {
        match &self.writer {
            Writer::Keyed(w) => w.wait_for_acknowledgments(timeout).unwrap_or(false),
            Writer::Unkeyed(w) => w.wait_for_acknowledgments(timeout).unwrap_or(false),
        }
    }
}

enum WriteFailure {
    Encode(String),
    WouldBlock,
    Other(String),
}

fn drop_data<D>(e: rustdds::dds::WriteError<D>) -> WriteFailure {
    use rustdds::dds::WriteError as W;
    match e {
        W::Serialization { reason, .. } => WriteFailure::Encode(reason),
        W::WouldBlock { .. } => WriteFailure::WouldBlock,
        W::Poisoned { reason, .. } | W::Internal { reason } => WriteFailure::Other(reason),
        W::Io(e) => WriteFailure::Other(e.to_string()),
    }
}
