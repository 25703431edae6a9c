//! Typed data writer: one convoy message type on one topic.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustdds::{no_key, with_key, Topic};

use super::endpoint::{for_both, Endpoint, Twin};
use super::enforced::DeadlineClock;
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
        })
    }

    pub fn topic(&self) -> &str {
        &self.endpoint.topic
    }

    pub fn qos(&self) -> &EndpointQos {
        &self.endpoint.qos
    }

    /// Publishes one message.
    pub fn write(&self, message: M) -> Result<(), PublishError> {
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
        self.endpoint.matched()
    }

    /// Blocks until at least `readers` readers are matched, or fails after `timeout`.
    pub fn wait_for_match(&self, readers: usize, timeout: Duration) -> Result<(), WaitError> {
        self.endpoint.wait_for_match(readers, timeout)
    }

    /// Waits (bounded) until every matched reader acknowledged what was written.
    pub fn wait_for_acknowledgments(&self, timeout: Duration) -> bool {
        for_both!(&self.writer, w => w.wait_for_acknowledgments(timeout).unwrap_or(false))
    }
}
