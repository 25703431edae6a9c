//! The domain participant and the convoy node on it: where every endpoint gets its QoS from
//! the run's library and its rustdds topic (split from `mod.rs`, which keeps the transport
//! settings every participant is built with).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rustdds::{DomainParticipant, QosPolicies, TopicKind};

use super::endpoint::{Endpoint, Side};
use super::shm_lane::{self, ReaderLane, WriterLane};
use super::{
    check_domain_id, check_node_id, participant, single_writer_stream, EndpointError, NodeError,
    Publisher, Subscriber,
};
use crate::messages::{Message, ShmSample};
use crate::qos::QosSet;
use crate::topics::{Topic, TopicClass};

/// A DDS domain participant that one node, or several nodes of one process, join
/// ([`Node::join`]): the participant with its one publisher and one subscriber entity, and the
/// topics created on it.
///
/// Nodes that share a participant share its threads: its receive thread runs the listeners of
/// all of them one after the other, with warm caches, where a participant each would switch
/// threads (and, a process each, address spaces) per sample. A writer also sends one datagram
/// to a locator its matched readers share, so a Tick to 16 agents in one participant is one
/// datagram. On the wire the nodes stay apart: each has its own endpoints, topics and status.
#[derive(Clone)]
pub struct Participant {
    inner: Arc<ParticipantInner>,
}

struct ParticipantInner {
    participant: DomainParticipant,
    publisher: rustdds::Publisher,
    subscriber: rustdds::Subscriber,
    domain_id: u16,
    topics: Mutex<HashMap<String, rustdds::Topic>>,
}

impl std::fmt::Debug for Participant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Participant")
            .field("domain_id", &self.inner.domain_id)
            .field("guid", &rustdds::RTPSEntity::guid(&self.inner.participant))
            .finish_non_exhaustive()
    }
}

impl Participant {
    /// Joins `domain` with convoy's transport settings ([`super::participant`]).
    pub fn new(domain: u32) -> Result<Participant, NodeError> {
        let domain_id = check_domain_id(domain)?;
        let fail = |e: &dyn std::fmt::Display| NodeError::Participant {
            domain,
            reason: e.to_string(),
        };
        let participant = participant(domain, super::Peers::Convoy)?;
        let publisher = participant
            .create_publisher(&QosPolicies::qos_none())
            .map_err(|e| fail(&e))?;
        let subscriber = participant
            .create_subscriber(&QosPolicies::qos_none())
            .map_err(|e| fail(&e))?;
        Ok(Participant {
            inner: Arc::new(ParticipantInner {
                participant,
                publisher,
                subscriber,
                domain_id,
                topics: Mutex::new(HashMap::new()),
            }),
        })
    }

    pub fn domain_id(&self) -> u16 {
        self.inner.domain_id
    }
}

/// One convoy node's presence on a DDS domain.
#[derive(Clone)]
pub struct Node {
    participant: Participant,
    node_id: Arc<str>,
    qos: Arc<QosSet>,
}

impl Node {
    /// Joins `domain` as `node_id` on a participant of its own, taking every endpoint's QoS
    /// from `qos`.
    pub fn new(domain: u32, node_id: &str, qos: Arc<QosSet>) -> Result<Node, NodeError> {
        check_domain_id(domain)?;
        check_node_id(node_id)?;
        Node::join(&Participant::new(domain)?, node_id, qos)
    }

    /// Joins as `node_id` on `participant`, which other nodes of this process may use too
    /// (their topics then come from the first node that created each: the nodes of a
    /// participant take one QoS library).
    pub fn join(
        participant: &Participant,
        node_id: &str,
        qos: Arc<QosSet>,
    ) -> Result<Node, NodeError> {
        check_node_id(node_id)?;
        Ok(Node {
            participant: participant.clone(),
            node_id: node_id.into(),
            qos,
        })
    }

    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    pub fn domain_id(&self) -> u16 {
        self.participant.domain_id()
    }

    pub fn qos(&self) -> &QosSet {
        &self.qos
    }

    pub fn participant(&self) -> &DomainParticipant {
        &self.participant.inner.participant
    }

    /// Drops the remote participant that wrote with `writer` now, as if its DDS lease had
    /// lapsed: for a node whose convoy status lease has lapsed (it died), so this node's
    /// reliable writers stop waiting for acknowledgements from its readers at once rather
    /// than for the rest of the participant lease. A node that is in fact alive is
    /// rediscovered at its next announcement. Never forgets this node itself.
    pub fn forget_participant_of(&self, writer: rustdds::GUID) {
        let prefix = writer.prefix;
        if prefix == rustdds::RTPSEntity::guid(&self.participant.inner.participant).prefix {
            return;
        }
        if let Err(e) = self
            .participant
            .inner
            .participant
            .forget_participant(prefix)
        {
            tracing::warn!("cannot drop the participant of a dead node: {e:?}");
        }
    }

    /// A publisher on `topic` with the writer QoS of its class's profile. For a large-sample
    /// topic also its shared-memory lane to same-host readers (`shm_lane`).
    pub fn publisher<M: Message>(&self, topic: &Topic<M>) -> Result<Publisher<M>, EndpointError> {
        let (endpoint, dds_topic) = self.endpoint(topic, Side::Writer, None)?;
        let Some((host, run)) = lane_for(topic) else {
            return Publisher::create(endpoint, &self.participant.inner.publisher, &dds_topic);
        };
        let depth = shm_lane::depth_of(&endpoint.qos);
        // A late joiner is owed a TRANSIENT_LOCAL writer's history: its slots keep their turn.
        let reuse = endpoint.qos.durability == crate::qos::Durability::Volatile;
        let (lane, lane_topic) = self.lane_endpoint(topic, &endpoint, Side::Writer, None, host)?;
        let descriptors = Publisher::create(lane, &self.participant.inner.publisher, &lane_topic)?;
        let endpoint = endpoint.with_locality(&shm_lane::locality("net", host));
        Ok(
            Publisher::create(endpoint, &self.participant.inner.publisher, &dds_topic)?.with_lane(
                WriterLane::new(descriptors, run, topic.name(), depth, reuse),
            ),
        )
    }

    /// A subscriber on `topic` with the reader QoS of its class's profile. Refused where the
    /// profile's writers of `topic` could never match it ([`QosSet::check_both_ends`]).
    pub fn subscriber<M: Message>(&self, topic: &Topic<M>) -> Result<Subscriber<M>, EndpointError> {
        self.subscriber_with(topic, None)
    }

    fn subscriber_with<M: Message>(
        &self,
        topic: &Topic<M>,
        depth: Option<u32>,
    ) -> Result<Subscriber<M>, EndpointError> {
        let (endpoint, dds_topic) = self.endpoint(topic, Side::Reader, depth)?;
        let Some((host, _)) = lane_for(topic) else {
            return Subscriber::create(endpoint, &self.participant.inner.subscriber, &dds_topic);
        };
        let (lane, lane_topic) = self.lane_endpoint(topic, &endpoint, Side::Reader, depth, host)?;
        let descriptors =
            Subscriber::create(lane, &self.participant.inner.subscriber, &lane_topic)?;
        let endpoint = endpoint.with_locality(&shm_lane::locality("net", host));
        Ok(
            Subscriber::create(endpoint, &self.participant.inner.subscriber, &dds_topic)?
                .with_lane(ReaderLane::new(descriptors)),
        )
    }

    /// The endpoint of `topic`'s descriptors (`T/shm`): `endpoint`'s QoS (the topic's own),
    /// announced as the ring lane of `host`.
    fn lane_endpoint<M: Message>(
        &self,
        topic: &Topic<M>,
        endpoint: &Endpoint,
        side: Side,
        depth: Option<u32>,
        host: &str,
    ) -> Result<(Endpoint, rustdds::Topic), EndpointError> {
        let name = shm_lane::ring_topic(topic.name());
        let dds_topic = self.topic::<ShmSample>(&name, topic.class(), depth)?;
        let lane = Endpoint::new(
            side,
            &self.participant.inner.participant,
            &name,
            endpoint.qos.clone(),
        )
        .with_locality(&shm_lane::locality("ring", host));
        Ok((lane, dds_topic))
    }

    /// A subscriber as [`Node::subscriber`] whose KEEP_LAST history holds at least `depth`
    /// samples per instance, its resource limits (and the topic's sample cache) raised to match:
    /// for a reader that must not lose a burst its profile's depth would overwrite before it
    /// takes them (a recorder: the clock keeps 1 tick, and a writer may write the next before
    /// the recorder's thread ran).
    pub fn deep_subscriber<M: Message>(
        &self,
        topic: &Topic<M>,
        depth: u32,
    ) -> Result<Subscriber<M>, EndpointError> {
        self.subscriber_with(topic, Some(depth))
    }

    /// The writer or reader (`side`) QoS of `topic`'s profile (deepened to `depth`, when given),
    /// its resource limits cut to one instance where the stream has one writer and no key, and
    /// the rustdds topic.
    fn endpoint<M: Message>(
        &self,
        topic: &Topic<M>,
        side: Side,
        depth: Option<u32>,
    ) -> Result<(Endpoint, rustdds::Topic), EndpointError> {
        if side == Side::Reader {
            // Convoy writes every topic it reads, with this same QoS file (a run gives every
            // node one library): a reader whose profile's writers could never match it would
            // wait forever, so here is where a profile used for both ends is refused.
            self.qos.check_both_ends(topic.class(), topic.name())?;
        }
        let profile = self.qos.for_class(topic.class())?;
        let mut qos = match side {
            Side::Writer => profile.writer_for(topic.name()),
            Side::Reader => profile.reader_for(topic.name()),
        }
        .clone();
        if let Some(depth) = depth {
            qos = deepened(qos, depth);
        }
        if single_writer_stream::<M>(topic.class()) {
            qos.resource_limits = qos.resource_limits.for_unkeyed();
        }
        let dds_topic = self.topic::<M>(topic.name(), topic.class(), depth)?;
        let endpoint = Endpoint::new(side, &self.participant.inner.participant, topic.name(), qos);
        Ok((endpoint, dds_topic))
    }

    /// The rustdds topic for `name`, created once per participant; created again (with its topic QoS
    /// deepened) for a deep reader: rustdds then raises the topic's cache limits, never lowers
    /// them.
    fn topic<M: Message>(
        &self,
        name: &str,
        class: TopicClass,
        depth: Option<u32>,
    ) -> Result<rustdds::Topic, EndpointError> {
        let create_error = |reason: String| EndpointError::create::<M>(name, reason);
        let mut topics = self
            .participant
            .inner
            .topics
            .lock()
            .map_err(|_| create_error("topic table poisoned".into()))?;
        if let Some(topic) = topics.get(name) {
            use rustdds::TopicDescription;
            if topic.get_type().name() != M::TYPE_NAME {
                return Err(create_error(format!(
                    "this participant already uses the topic with type {}",
                    topic.get_type().name()
                )));
            }
            if depth.is_none() {
                return Ok(topic.clone());
            }
        }
        let mut topic_qos = self.qos.for_class(class)?.topic.clone();
        if let Some(depth) = depth {
            topic_qos = deepened(topic_qos, depth);
        }
        if single_writer_stream::<M>(class) {
            // rustdds sizes the topic's sample cache from the topic QoS (see for_unkeyed).
            topic_qos.resource_limits = topic_qos.resource_limits.for_unkeyed();
        }
        let topic_qos = topic_qos.to_rustdds();
        let kind = if M::KEYED {
            TopicKind::WithKey
        } else {
            TopicKind::NoKey
        };
        let topic = self
            .participant
            .inner
            .participant
            .create_topic(name.to_string(), M::TYPE_NAME.to_string(), &topic_qos, kind)
            .map_err(|e| create_error(e.to_string()))?;
        topics.insert(name.to_string(), topic.clone());
        Ok(topic)
    }
}

/// `qos` with a KEEP_LAST history of at least `depth` and resource limits that hold it (each
/// limit raised, never lowered; unlimited ones stay so). KEEP_ALL keeps everything already.
pub(super) fn deepened(mut qos: crate::qos::EndpointQos, depth: u32) -> crate::qos::EndpointQos {
    use crate::qos::{History, DEFAULT_MAX_INSTANCES, LENGTH_UNLIMITED};
    if let History::KeepLast(d) = qos.history {
        qos.history = History::KeepLast(d.max(depth));
    }
    let depth = i32::try_from(depth).unwrap_or(i32::MAX);
    let limits = &mut qos.resource_limits;
    let raise = |limit: &mut i32, wanted: i32| {
        if *limit != LENGTH_UNLIMITED && *limit < wanted {
            *limit = wanted;
        }
    };
    raise(&mut limits.max_samples_per_instance, depth);
    let instances = match limits.max_instances {
        LENGTH_UNLIMITED => DEFAULT_MAX_INSTANCES,
        n => n.max(1),
    };
    raise(&mut limits.max_samples, depth.saturating_mul(instances));
    qos
}

/// The host key and ring run name when `topic`'s samples take a shared-memory lane here.
fn lane_for<M: Message>(topic: &Topic<M>) -> Option<&'static (String, String)> {
    if shm_lane::rides_shm(M::TYPE_NAME, topic.name()) {
        shm_lane::lane_host()
    } else {
        None
    }
}
