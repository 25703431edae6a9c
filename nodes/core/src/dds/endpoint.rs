//! What a typed publisher and a typed subscriber share: their topic and QoS (as convoy and as
//! rustdds see them), the creation of the keyed or unkeyed rustdds entity for their message
//! type, and the count of matched endpoints on the other side, which a node waits on.

use std::time::Duration;

use rustdds::dds::CreateError;
use rustdds::{DomainParticipant, QosPolicies};

use super::{discovery, poll_until, EndpointError, WaitError};
use crate::messages::Message;
use crate::qos::EndpointQos;

/// Which side of a topic an endpoint is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    Writer,
    Reader,
}

/// A rustdds writer or reader: rustdds has a keyed and an unkeyed twin of each, and a convoy
/// message type is one or the other ([`Message::KEYED`]).
pub(super) enum Twin<K, U> {
    Keyed(K),
    Unkeyed(U),
}

/// Runs the same code on whichever twin an entity is: the twins' methods share their names and
/// signatures but no trait.
macro_rules! for_both {
    ($twin:expr, $entity:ident => $body:expr) => {
        match $twin {
            $crate::dds::endpoint::Twin::Keyed($entity) => $body,
            $crate::dds::endpoint::Twin::Unkeyed($entity) => $body,
        }
    };
}
pub(super) use for_both;

/// The topic and QoS of one publisher or subscriber.
pub(super) struct Endpoint {
    side: Side,
    pub(super) topic: String,
    pub(super) qos: EndpointQos,
    /// `qos` as rustdds takes it; a reader's also announces its receive buffer.
    dds_qos: QosPolicies,
    participant: DomainParticipant,
}

impl Endpoint {
    pub(super) fn new(
        side: Side,
        participant: &DomainParticipant,
        topic: &str,
        qos: EndpointQos,
    ) -> Endpoint {
        let dds_qos = match side {
            Side::Writer => qos.to_rustdds(),
            Side::Reader => qos
                .to_rustdds()
                .with_user_data(super::announced_receive_buffer()),
        };
        // The run's partition (checked when the participant was made, so never an error
        // here; the default partition if it were).
        let dds_qos = dds_qos.with_partition(super::run_partitions().unwrap_or_default());
        Endpoint {
            side,
            topic: topic.to_string(),
            qos,
            dds_qos,
            participant: participant.clone(),
        }
    }

    /// Adds a `shm=` locality entry to what this endpoint announces in its USER_DATA
    /// (`shm_lane`; vendored rustdds change 58).
    pub(super) fn with_locality(mut self, entry: &[u8]) -> Endpoint {
        let mut data = self
            .dds_qos
            .user_data()
            .map(|u| u.value.clone())
            .unwrap_or_default();
        data.extend_from_slice(entry);
        self.dds_qos = self.dds_qos.clone().with_user_data(data);
        self
    }

    /// The keyed twin (`keyed`) or the unkeyed one (`unkeyed`) for `M`, made with this
    /// endpoint's QoS.
    pub(super) fn create<M: Message, K, U>(
        &self,
        keyed: impl FnOnce(Option<QosPolicies>) -> Result<K, CreateError>,
        unkeyed: impl FnOnce(Option<QosPolicies>) -> Result<U, CreateError>,
    ) -> Result<Twin<K, U>, EndpointError> {
        let qos = Some(self.dds_qos.clone());
        let created = if M::KEYED {
            keyed(qos).map(Twin::Keyed)
        } else {
            unkeyed(qos).map(Twin::Unkeyed)
        };
        created.map_err(|e| EndpointError::create::<M>(&self.topic, e))
    }

    /// How many writers this reader endpoint is matched with now, as discovery's tables have
    /// them (a publisher asks its own DDS writer instead: `Publisher::matched_readers`).
    pub(super) fn matched_writers(&self) -> usize {
        discovery::matched_writers(&self.participant, &self.topic, &self.dds_qos)
    }

    /// Blocks until `matched` counts at least `wanted` endpoints of the other side, or fails
    /// after `timeout` (a publisher or subscriber with a shared-memory lane counts the lane's
    /// too).
    pub(super) fn wait_until_matched(
        &self,
        wanted: usize,
        timeout: Duration,
        matched: impl Fn() -> usize,
    ) -> Result<(), WaitError> {
        if poll_until(timeout, || matched() >= wanted) {
            return Ok(());
        }
        Err(WaitError::MatchTimeout {
            topic: self.topic.clone(),
            what: match self.side {
                Side::Writer => "readers",
                Side::Reader => "writers",
            },
            wanted,
            matched: matched(),
            waited: timeout,
        })
    }
}
