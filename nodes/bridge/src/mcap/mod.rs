//! Recordings: convoy topics to an MCAP file (`convoy record`) and back onto DDS
//! (`convoy replay`), the second bridge format beside ROS 2 on the same typed subscription layer.
//!
//! The file layout (DESIGN.md, "Bridges"), which the replayer relies on and any MCAP reader
//! understands:
//! - profile `convoy`; one schema per convoy type, named as DDS announces it
//!   (`convoy::AgentState`), schema encoding `omgidl`, its data the whole of `idl/convoy.idl`;
//! - one channel per topic, message encoding `cdr`; each message is the full CDR payload as it
//!   crossed DDS, its 4-byte encapsulation header included (little-endian plain CDR);
//! - channel metadata: `convoy.type` (the type name), `convoy.class` (the QoS class of the topic)
//!   and `convoy.qos` (the profile it was written with, `FILE::LIBRARY::PROFILE`);
//! - one metadata record `convoy.qos` with `library` and `xml`, the DDS-XML QoS library the run
//!   used, so a replay writes every topic with the QoS it was recorded with;
//! - log time = when the recorder received the message, publish time = the message's simulation
//!   time (its stamp), or the receive time for a message without one.
//!
//! - [`subscription`]: which topics to record (patterns, discovery) and type-erased readers;
//! - [`record`]: the recorder (reader thread, writer thread, progress, summary);
//! - [`replay`]: the replayer (pacing by simulation time, recorded QoS); [`catalog`] reads what
//!   a file holds before its messages are streamed.

pub mod catalog;
pub mod record;
pub mod replay;
pub mod subscription;
mod writer;

use std::collections::BTreeMap;

use convoy_core::qos::QosSet;
use convoy_core::scenario::Scenario;
use convoy_core::topics::{self, KnownTopic, TopicClass};

/// The MCAP header's profile of a convoy recording.
pub const PROFILE: &str = "convoy";
/// Every channel's message encoding.
pub const MESSAGE_ENCODING: &str = "cdr";
/// Every schema's encoding: the OMG IDL of `idl/convoy.idl`.
pub const SCHEMA_ENCODING: &str = "omgidl";
/// The encapsulation header of little-endian plain CDR (XCDR1), which starts every message.
pub const CDR_LE_HEADER: [u8; 4] = [0x00, 0x01, 0x00, 0x00];
/// The same header of big-endian plain CDR (another DDS may write it; convoy reads both).
pub const CDR_BE_HEADER: [u8; 4] = [0x00, 0x00, 0x00, 0x00];

/// Channel metadata: the convoy type name on the channel.
pub const META_TYPE: &str = "convoy.type";
/// Channel metadata: the topic's QoS class (a profile name of the QoS library).
pub const META_CLASS: &str = "convoy.class";
/// Channel metadata: `FILE::LIBRARY::PROFILE` the topic was written with; also the name of the
/// file-level metadata record that holds the library itself.
pub const META_QOS: &str = "convoy.qos";
/// Keys of the file-level `convoy.qos` metadata record.
pub const QOS_LIBRARY: &str = "library";
pub const QOS_XML: &str = "xml";

/// The metadata of one recorded topic's channel.
pub fn channel_metadata(
    type_name: &str,
    class: TopicClass,
    qos: &QosSet,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (META_TYPE.to_string(), type_name.to_string()),
        (META_CLASS.to_string(), class.profile_name().to_string()),
        (
            META_QOS.to_string(),
            format!("{}::{}", qos.source(), class.profile_name()),
        ),
    ])
}

/// The file-level `convoy.qos` record: the library name and the DDS-XML text it came from.
pub fn qos_metadata(qos: &QosSet) -> BTreeMap<String, String> {
    BTreeMap::from([
        (QOS_LIBRARY.to_string(), qos.library().to_string()),
        (QOS_XML.to_string(), qos.file_text().to_string()),
    ])
}

/// The QoS class of a convoy topic name; None for a name that is not one.
pub fn class_of(topic: &str) -> Option<TopicClass> {
    KnownTopic::parse(topic).ok().map(|t| t.class())
}

/// The class named by a channel's `convoy.class` metadata.
pub fn class_named(name: &str) -> Option<TopicClass> {
    TopicClass::ALL
        .into_iter()
        .find(|c| c.profile_name() == name)
}

/// One topic a scenario's run writes, with its type; `required` when a run always has a writer
/// of it before frame 0 (the clock, every agent's state, every sensor's outputs): a recorder of
/// the run waits for those before it says it is ready, so it misses none of their samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedTopic {
    pub name: String,
    pub type_name: &'static str,
    pub required: bool,
}

/// Every topic a run of `scenario` writes: the clock, the barrier, the registry, assignments,
/// world requests and replies, each agent's state and control, and each sensor's outputs (as
/// the sensor catalogue names them).
pub fn scenario_topics(scenario: &Scenario) -> Vec<ExpectedTopic> {
    use convoy_core::messages::*;
    let fixed = |name: &str, type_name, required| ExpectedTopic {
        name: name.to_string(),
        type_name,
        required,
    };
    let mut out = vec![
        fixed(topics::CLOCK, Tick::TYPE_NAME, true),
        fixed(topics::FRAME_DONE, FrameDone::TYPE_NAME, false),
        fixed(topics::NODES, NodeStatus::TYPE_NAME, false),
        fixed(topics::ASSIGNMENTS, SensorAssignment::TYPE_NAME, false),
        fixed(topics::WORLD_REQUEST, WorldRequest::TYPE_NAME, false),
        fixed(topics::WORLD_REPLY, WorldReply::TYPE_NAME, false),
    ];
    for agent in &scenario.agents {
        let state = topics::agent_state(&agent.id);
        out.push(fixed(state.name(), AgentState::TYPE_NAME, true));
        let control = topics::agent_control(&agent.id);
        out.push(fixed(control.name(), Control::TYPE_NAME, false));
        for sensor in &agent.sensors {
            for output in sensor.kind.spec().outputs {
                if (output.published)(sensor) {
                    out.push(ExpectedTopic {
                        name: output.topic_name(&agent.id, &sensor.id),
                        type_name: output.message,
                        // A sensor node makes its writers when it is given the sensor, which
                        // a run does before frame 0 (and before it waits for its recorders).
                        required: true,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_trip_through_their_names() {
        for class in TopicClass::ALL {
            assert_eq!(class_named(class.profile_name()), Some(class));
        }
        assert_eq!(class_of("convoy/agent/ego/state"), Some(TopicClass::State));
        assert_eq!(class_of("rt/clock"), None);
    }

    #[test]
    fn metadata_names_the_profile_and_keeps_the_library() {
        let qos = QosSet::builtin();
        let meta = channel_metadata("convoy::Tick", TopicClass::Clock, &qos);
        assert_eq!(meta[META_QOS], "qos/convoy.xml::convoy::clock");
        assert_eq!(meta[META_CLASS], "clock");
        let file = qos_metadata(&qos);
        assert_eq!(file[QOS_LIBRARY], "convoy");
        assert!(file[QOS_XML].contains("<qos_profile name=\"clock\">"));
    }
}
