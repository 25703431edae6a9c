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

    /// Publishes `message` with its trailing byte array (an image's pixels, a cloud's points)
    /// made by `fill`, `len` bytes, instead of the array `message` holds: where every reader
    /// takes this topic through shared memory, `fill` writes straight into the ring's slot
    /// (a camera's pixels are converted into the slot, with no buffer and copy in between);
    /// otherwise into `message`'s own array, which is then written as by
    /// [`Publisher::write_ref_patiently`] (with `stop` and `give_up`). Either way `message`
    /// keeps its array's allocation for the next call, holding what was sent when it went
    /// over DDS.
    pub fn write_filled(
        &self,
        message: &mut M,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
        stop: &std::sync::atomic::AtomicBool,
        give_up: Option<Instant>,
    ) -> Result<(), PublishError>
    where
        M: TrailingBytes,
    {
        if self.dds_readers() == 0 {
            if let Some(lane) = &self.lane {
                if let Ok(mut lane) = lane.lock() {
                    let readers = lane.readers();
                    if readers > 0 {
                        let bytes = std::mem::take(message.trailing_bytes());
                        let written = write_trailing_into(
                            (&mut lane, readers),
                            &self.endpoint.topic,
                            message,
                            len,
                            fill,
                        );
                        *message.trailing_bytes() = bytes;
                        return written;
                    }
                }
            }
        }
        let data = message.trailing_bytes();
        data.clear();
        data.resize(len, 0);
        fill(data);
        self.write_ref_patiently(message, stop, give_up)
    }

    /// The lane's part of a write, and whether DDS still has readers to serve.
    fn write_lane(&self, message: &M) -> Result<LaneWrite, PublishError> {
        let Some(lane) = &self.lane else {
            return Ok(LaneWrite::AlsoDds);
        };
        let Ok(mut lane) = lane.lock() else {
            return Ok(LaneWrite::AlsoDds);
        };
        let readers = lane.readers();
        if readers == 0 {
            return Ok(LaneWrite::AlsoDds);
        }
        lane.write(message, readers)?;
        Ok(if self.dds_readers() > 0 {
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
        self.write_ref_patiently(&message, stop, None)
    }

    /// [`Publisher::write_patiently`] from a borrowed sample (copied only for DDS readers: a
    /// writer whose readers all take it through shared memory copies it once, into the ring),
    /// giving up at `give_up` too.
    pub fn write_ref_patiently(
        &self,
        message: &M,
        stop: &std::sync::atomic::AtomicBool,
        give_up: Option<Instant>,
    ) -> Result<(), PublishError> {
        // The lane never blocks: it is written once, and only the DDS part waits.
        if let LaneWrite::Only = self.write_lane(message)? {
            return Ok(());
        }
        let mut reported = false;
        loop {
            match self.write_dds(message.clone()) {
                Err(PublishError::WouldBlock { topic }) => {
                    let late = give_up.is_some_and(|t| Instant::now() >= t);
                    if late || stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return Err(PublishError::WouldBlock { topic });
                    }
                    if !reported {
                        reported = true;
                        tracing::warn!(
                            "{topic}: a reader does not acknowledge (a node that died?); retrying"
                        );
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
        self.dds_readers() + self.lane_readers()
    }

    /// Readers the DDS writer is matched with: its own count (vendored rustdds change 84),
    /// cheap enough for every write, where scanning discovery's tables cost a twentieth of
    /// a 64 B round trip.
    fn dds_readers(&self) -> usize {
        for_both!(&self.writer, w => w.matched_readers())
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

/// A message whose last member is a byte array (`sequence<octet>`): the encoded sample is the
/// rest of the message, the array's length, then its bytes, so a writer can put the bytes
/// straight where the sample goes ([`Publisher::write_filled`]).
pub trait TrailingBytes: Message {
    fn trailing_bytes(&mut self) -> &mut Vec<u8>;
}

impl TrailingBytes for crate::messages::Image {
    fn trailing_bytes(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }
}

impl TrailingBytes for crate::messages::PointCloud {
    fn trailing_bytes(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }
}

impl TrailingBytes for crate::messages::BenchSample {
    fn trailing_bytes(&mut self) -> &mut Vec<u8> {
        &mut self.payload
    }
}

/// Writes `message` (its trailing array empty) with `len` bytes made by `fill` as its array
/// into the lane, for its `readers` same-host readers: [`trailing_head`], then `fill` into the
/// rest of the slot.
fn write_trailing_into(
    (lane, readers): (&mut WriterLane, usize),
    topic: &str,
    message: &impl TrailingBytes,
    len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> Result<(), PublishError> {
    let head = trailing_head(message, len).map_err(|reason| PublishError::Encode {
        topic: topic.to_string(),
        reason,
    })?;
    lane.write_with(head.len() + len, readers, |slot| {
        let (start, rest) = slot.split_at_mut(head.len());
        start.copy_from_slice(&head);
        fill(rest);
        true
    })
}

/// The encoded bytes of `message` (its trailing array empty) up to and with the count of a
/// `len`-byte array: what comes before the array's bytes in the sample.
fn trailing_head(message: &impl TrailingBytes, len: usize) -> Result<Vec<u8>, String> {
    let mut head = super::wire::encode(message).map_err(|e| e.to_string())?;
    // The head ends with the empty array's count (4 bytes, 0, aligned to 4: nothing follows).
    let count_at = head
        .len()
        .checked_sub(4)
        .filter(|at| head[*at..] == [0, 0, 0, 0])
        .ok_or_else(|| "the message does not end with its byte array".to_string())?;
    let count = u32::try_from(len).map_err(|_| format!("{len} bytes are too many for CDR"))?;
    head[count_at..].copy_from_slice(&count.to_le_bytes());
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{BenchSample, Image, PointCloud, PointField, SensorHeader};

    /// The head and the bytes are the sample as encoding it whole gives.
    fn same_as_whole<M: TrailingBytes>(mut message: M) {
        let whole = super::super::wire::encode(&message).expect("encode");
        let data = std::mem::take(message.trailing_bytes());
        let mut pieced = trailing_head(&message, data.len()).expect("head");
        pieced.extend_from_slice(&data);
        assert_eq!(pieced, whole, "{}", M::TYPE_NAME);
    }

    #[test]
    fn a_trailing_array_written_after_its_head_is_the_whole_sample() {
        let header = SensorHeader {
            agent: "ego".into(),
            sensor: "front".into(),
            frame: 1,
            stamp_ns: 2,
            seq: 3,
        };
        for n in [0usize, 1, 3, 7, 4096] {
            same_as_whole(Image {
                header: header.clone(),
                width: 1,
                height: 1,
                encoding: "rgb8".into(),
                step: 3,
                data: vec![7; n],
            });
            same_as_whole(PointCloud {
                header: header.clone(),
                point_count: 1,
                point_step: 16,
                fields: vec![PointField::default()],
                data: vec![9; n],
            });
            same_as_whole(BenchSample {
                seq: 5,
                sent_ns: 6,
                payload: vec![1; n],
            });
        }
    }
}
