//! The ROS 2 side of the bridge, on the `ros2-client` crate: one ROS node (announced on
//! `ros_discovery_info` under the configured name) on its own DDS participant with convoy's
//! transport settings, and its publishers and subscriptions.
//!
//! Topics are created here rather than through ros2-client's `create_topic` so each endpoint
//! carries its type's hash in USER_DATA (`typehash=RIHS01_...;`, vendored rustdds change 18),
//! as rmw implementations do; ROS graph tools then show the type instead of an invalid one.
//! The node runs no spinner: convoy needs none of its parameter services or sim-time
//! subscription, and the spinner's own `/clock` reader (of a second type) would show in the
//! graph beside the bridge's `/clock` writer.

use crate::ros_msgs::{dds_topic, RosMessage};
use ros2_client::{Context, Name, Node, NodeName, NodeOptions, Publisher, Subscription};
use rustdds::policy::{Durability, History, Reliability, ResourceLimits};
use rustdds::{QosPolicies, QosPolicyBuilder, TopicKind};

use crate::config::Ros2Settings;

/// rcl_interfaces/ParameterEvent, which every ROS node publishes on `/parameter_events`.
const PARAMETER_EVENT_TYPE: &str = "rcl_interfaces::msg::dds_::ParameterEvent_";
const PARAMETER_EVENT_HASH: &str =
    "RIHS01_043e627780fcad87a22d225bc2a037361dba713fca6a6b9f4b869a5aa0393204";

/// Something on the ROS side could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum RosSetupError {
    #[error("cannot join ROS domain {domain}: {reason}")]
    Participant { domain: u32, reason: String },
    #[error("cannot create ROS node '{name}': {reason}")]
    Node { name: String, reason: String },
    #[error("cannot create ROS topic '{topic}' ({type_name}): {reason}")]
    Topic {
        topic: String,
        type_name: &'static str,
        reason: String,
    },
}

/// How a ROS endpoint is to behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RosQos {
    /// Sensor streams and `/clock`: KEEP_LAST `depth`, volatile; reliable or best-effort.
    Stream { reliable: bool, depth: i32 },
    /// `/tf_static`: reliable, transient-local, the latest message kept for late joiners.
    Latched,
    /// `/clock`: reliable, transient-local, the last `depth` ticks kept, so a stack that joins
    /// while a held frame waits still sees that frame's time.
    Clock { depth: i32 },
}

impl RosQos {
    fn policies(self) -> QosPolicies {
        let (reliable, durability, depth) = match self {
            RosQos::Stream { reliable, depth } => (reliable, Durability::Volatile, depth),
            RosQos::Latched => (true, Durability::TransientLocal, 1),
            RosQos::Clock { depth } => (true, Durability::TransientLocal, depth),
        };
        QosPolicyBuilder::new()
            .reliability(if reliable {
                Reliability::Reliable {
                    max_blocking_time: rustdds::Duration::from_millis(100),
                }
            } else {
                Reliability::BestEffort
            })
            .durability(durability)
            .history(History::KeepLast { depth })
            // rustdds sizes caches from these: one instance (ROS topics have no key).
            .resource_limits(ResourceLimits {
                max_samples: depth,
                max_instances: 1,
                max_samples_per_instance: depth,
            })
            .build()
    }
}

/// The bridge's ROS node.
pub struct RosSide {
    node: Node,
    // Dropping the context announces the node's departure; it outlives the node's endpoints.
    context: Context,
}

impl RosSide {
    /// Joins ROS domain `domain` as the node the settings name.
    pub fn new(settings: &Ros2Settings, domain: u32) -> Result<RosSide, RosSetupError> {
        let participant_error = |reason: String| RosSetupError::Participant { domain, reason };
        let participant = convoy_core::dds::participant(domain, convoy_core::dds::Peers::Foreign)
            .map_err(|e| participant_error(e.to_string()))?;
        // ros2-client's node creates `/parameter_events` itself, without a way to pass QoS:
        // its type hash comes from the participant (vendored rustdds change 21).
        participant.set_type_user_data(
            PARAMETER_EVENT_TYPE,
            format!("typehash={PARAMETER_EVENT_HASH};").into_bytes(),
        );
        let context = Context::from_domain_participant(participant)
            .map_err(|e| participant_error(e.to_string()))?;
        let node_error = |reason: String| RosSetupError::Node {
            name: settings.node_name.clone(),
            reason,
        };
        let name = NodeName::new(&settings.namespace, &settings.node_name)
            .map_err(|e| node_error(e.to_string()))?;
        let options = NodeOptions::new()
            .enable_rosout(false)
            .start_parameter_services(false);
        let node = context
            .new_node(name, options)
            .map_err(|e| node_error(format!("{e:?}")))?;
        Ok(RosSide { node, context })
    }

    /// The DDS topic of ROS topic `ros_name`, with `M`'s type hash in its endpoints' USER_DATA.
    fn topic<M: RosMessage>(
        &self,
        ros_name: &str,
        qos: RosQos,
    ) -> Result<rustdds::Topic, RosSetupError> {
        // Validates the name as ROS does.
        Name::parse(ros_name).map_err(topic_error::<M, _>(ros_name))?;
        self.context
            .domain_participant()
            .create_topic(
                dds_topic(ros_name),
                M::TYPE_NAME.to_string(),
                &qos.policies().with_user_data(M::user_data()),
                TopicKind::NoKey,
            )
            .map_err(topic_error::<M, _>(ros_name))
    }

    pub fn publisher<M: RosMessage>(
        &mut self,
        ros_name: &str,
        qos: RosQos,
    ) -> Result<Publisher<M>, RosSetupError> {
        let topic = self.topic::<M>(ros_name, qos)?;
        self.node
            .create_publisher(&topic, None)
            .map_err(topic_error::<M, _>(ros_name))
    }

    pub fn subscription<M: RosMessage>(
        &mut self,
        ros_name: &str,
        qos: RosQos,
    ) -> Result<Subscription<M>, RosSetupError> {
        let topic = self.topic::<M>(ros_name, qos)?;
        self.node
            .create_subscription(&topic, None)
            .map_err(topic_error::<M, _>(ros_name))
    }

    /// The node's fully qualified name, as ROS graph tools show it.
    pub fn node_name(&self) -> String {
        self.node.fully_qualified_name()
    }
}

/// What a failure to set up ROS topic `ros_name` of `M` becomes.
fn topic_error<M: RosMessage, E: std::fmt::Display>(
    ros_name: &str,
) -> impl Fn(E) -> RosSetupError + '_ {
    move |e| RosSetupError::Topic {
        topic: ros_name.to_string(),
        type_name: M::TYPE_NAME,
        reason: e.to_string(),
    }
}
