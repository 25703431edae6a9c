//! Every DDS topic name convoy uses, built in one place (DESIGN.md, "Topics").
//!
//! A topic has a name, a message type and a class; the class names the QoS profile that a run's
//! QoS library gives it. [`Topic`] carries the three together, so a publisher of the wrong
//! type or profile for a topic does not compile. Nothing else in convoy formats a topic name
//! by hand.

use std::fmt;
use std::marker::PhantomData;

use crate::messages::{
    AgentState, BenchSample, Control, FrameDone, Message, NodeStatus, SensorAssignment, Tick,
    WorldReply, WorldRequest,
};

/// A topic: its name, the message type `M` it carries and its QoS class.
pub struct Topic<M> {
    name: String,
    class: TopicClass,
    message: PhantomData<fn() -> M>,
}

impl<M: Message> Topic<M> {
    /// A topic by name, for what the builders below do not cover (benchmarks, tools and tests
    /// that pick their own names).
    pub fn new(name: impl Into<String>, class: TopicClass) -> Topic<M> {
        Topic {
            name: name.into(),
            class,
            message: PhantomData,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn class(&self) -> TopicClass {
        self.class
    }
}

impl<M> Clone for Topic<M> {
    fn clone(&self) -> Self {
        Topic {
            name: self.name.clone(),
            class: self.class,
            message: PhantomData,
        }
    }
}

impl<M> fmt::Debug for Topic<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.class)
    }
}

impl<M> fmt::Display for Topic<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// The QoS class of a topic: each names a profile in the selected QoS library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TopicClass {
    Clock,
    Barrier,
    Status,
    State,
    Control,
    Assignment,
    Sensor,
    World,
    /// `convoy bench` traffic; its profile is the one the bench is asked to measure.
    Bench,
}

impl TopicClass {
    pub const ALL: [TopicClass; 9] = [
        TopicClass::Clock,
        TopicClass::Barrier,
        TopicClass::Status,
        TopicClass::State,
        TopicClass::Control,
        TopicClass::Assignment,
        TopicClass::Sensor,
        TopicClass::World,
        TopicClass::Bench,
    ];

    /// The profile name this class looks up in a QoS library.
    pub fn profile_name(self) -> &'static str {
        match self {
            TopicClass::Clock => "clock",
            TopicClass::Barrier => "barrier",
            TopicClass::Status => "status",
            TopicClass::State => "state",
            TopicClass::Control => "control",
            TopicClass::Assignment => "assignment",
            TopicClass::Sensor => "sensor",
            TopicClass::World => "world",
            TopicClass::Bench => "bench",
        }
    }
}

impl fmt::Display for TopicClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.profile_name())
    }
}

/// Why a name cannot be a convoy id or topic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicNameError {
    #[error("{what} id '{id}' is invalid: use 1-64 characters from [a-z0-9_]")]
    BadId { what: &'static str, id: String },
    #[error("'{0}' is not a convoy topic (try `convoy topic list`)")]
    Unknown(String),
}

/// Checks an agent or sensor id: `[a-z0-9_]+`, at most 64 characters.
pub fn check_id(what: &'static str, id: &str) -> Result<(), TopicNameError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(TopicNameError::BadId {
            what,
            id: id.to_string(),
        })
    }
}

pub const CLOCK: &str = "convoy/clock";
pub const FRAME_DONE: &str = "convoy/frame_done";
pub const NODES: &str = "convoy/nodes";
pub const ASSIGNMENTS: &str = "convoy/assignments";
pub const WORLD_REQUEST: &str = "convoy/world/request";
pub const WORLD_REPLY: &str = "convoy/world/reply";
pub const BENCH_PING: &str = "convoy/bench/ping";
pub const BENCH_PONG: &str = "convoy/bench/pong";
/// The latency bench's large samples (64 KiB and up): like images and clouds, and unlike
/// the small pings, these take the shared-memory lane to a reader on the same host.
pub const BENCH_LARGE_PING: &str = "convoy/bench/large/ping";
pub const BENCH_LARGE_PONG: &str = "convoy/bench/large/pong";
/// `convoy bench images`: camera-sized images and lidar-sized point clouds.
pub const BENCH_IMAGE: &str = "convoy/bench/image";
pub const BENCH_CLOUD: &str = "convoy/bench/cloud";

/// `convoy/clock`: the coordinator's Tick.
pub fn clock() -> Topic<Tick> {
    Topic::new(CLOCK, TopicClass::Clock)
}

/// `convoy/frame_done`: every participant's FrameDone (the lockstep barrier).
pub fn frame_done() -> Topic<FrameDone> {
    Topic::new(FRAME_DONE, TopicClass::Barrier)
}

/// `convoy/nodes`: every node's NodeStatus.
pub fn nodes() -> Topic<NodeStatus> {
    Topic::new(NODES, TopicClass::Status)
}

/// `convoy/assignments`: which sensor node runs which sensor.
pub fn assignments() -> Topic<SensorAssignment> {
    Topic::new(ASSIGNMENTS, TopicClass::Assignment)
}

pub fn world_request() -> Topic<WorldRequest> {
    Topic::new(WORLD_REQUEST, TopicClass::World)
}

pub fn world_reply() -> Topic<WorldReply> {
    Topic::new(WORLD_REPLY, TopicClass::World)
}

pub fn bench_ping() -> Topic<BenchSample> {
    Topic::new(BENCH_PING, TopicClass::Bench)
}

pub fn bench_pong() -> Topic<BenchSample> {
    Topic::new(BENCH_PONG, TopicClass::Bench)
}

pub fn bench_large_ping() -> Topic<BenchSample> {
    Topic::new(BENCH_LARGE_PING, TopicClass::Bench)
}

pub fn bench_large_pong() -> Topic<BenchSample> {
    Topic::new(BENCH_LARGE_PONG, TopicClass::Bench)
}

/// `convoy/agent/<a>/state`
pub fn agent_state(agent: &str) -> Topic<AgentState> {
    Topic::new(format!("convoy/agent/{agent}/state"), TopicClass::State)
}

/// `convoy/agent/<a>/control`
pub fn agent_control(agent: &str) -> Topic<Control> {
    Topic::new(format!("convoy/agent/{agent}/control"), TopicClass::Control)
}

/// `convoy/sensor/<a>/<s>`; its message type is the sensor kind's (see the sensor catalogue).
pub fn sensor<M: Message>(agent: &str, sensor: &str) -> Topic<M> {
    Topic::new(sensor_name(agent, sensor), TopicClass::Sensor)
}

/// `convoy/sensor/<a>/<s>_<output>`: a camera's extra outputs (`depth`, `semantic`).
pub fn sensor_output<M: Message>(agent: &str, sensor: &str, output: &str) -> Topic<M> {
    Topic::new(
        sensor_output_name(agent, sensor, output),
        TopicClass::Sensor,
    )
}

/// The name of [`sensor`]'s topic, where the name alone is wanted (bridges, listings).
pub fn sensor_name(agent: &str, sensor: &str) -> String {
    format!("convoy/sensor/{agent}/{sensor}")
}

/// The name of [`sensor_output`]'s topic.
pub fn sensor_output_name(agent: &str, sensor: &str, output: &str) -> String {
    format!("convoy/sensor/{agent}/{sensor}_{output}")
}

/// What a topic name means to convoy: its class and the message type it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnownTopic {
    Clock,
    FrameDone,
    Nodes,
    Assignments,
    WorldRequest,
    WorldReply,
    BenchPing,
    BenchPong,
    BenchLargePing,
    BenchLargePong,
    /// `convoy bench images`' samples: sensor data, so a recorder takes them as it would a
    /// camera's or a lidar's.
    BenchImage,
    BenchCloud,
    AgentState {
        agent: String,
    },
    AgentControl {
        agent: String,
    },
    /// The message type of a sensor topic depends on the sensor; discovery tells it.
    Sensor {
        agent: String,
        sensor: String,
    },
}

impl KnownTopic {
    /// Parses a topic name; anything that is not a convoy topic is an error that says so.
    pub fn parse(name: &str) -> Result<KnownTopic, TopicNameError> {
        let unknown = || TopicNameError::Unknown(name.to_string());
        let fixed = match name {
            CLOCK => Some(KnownTopic::Clock),
            FRAME_DONE => Some(KnownTopic::FrameDone),
            NODES => Some(KnownTopic::Nodes),
            ASSIGNMENTS => Some(KnownTopic::Assignments),
            WORLD_REQUEST => Some(KnownTopic::WorldRequest),
            WORLD_REPLY => Some(KnownTopic::WorldReply),
            BENCH_PING => Some(KnownTopic::BenchPing),
            BENCH_PONG => Some(KnownTopic::BenchPong),
            BENCH_LARGE_PING => Some(KnownTopic::BenchLargePing),
            BENCH_LARGE_PONG => Some(KnownTopic::BenchLargePong),
            BENCH_IMAGE => Some(KnownTopic::BenchImage),
            BENCH_CLOUD => Some(KnownTopic::BenchCloud),
            _ => None,
        };
        if let Some(topic) = fixed {
            return Ok(topic);
        }
        let parts: Vec<&str> = name.split('/').collect();
        let topic = match parts.as_slice() {
            ["convoy", "agent", agent, "state"] => KnownTopic::AgentState {
                agent: agent.to_string(),
            },
            ["convoy", "agent", agent, "control"] => KnownTopic::AgentControl {
                agent: agent.to_string(),
            },
            ["convoy", "sensor", agent, sensor] => {
                check_id("sensor", sensor).map_err(|_| unknown())?;
                KnownTopic::Sensor {
                    agent: agent.to_string(),
                    sensor: sensor.to_string(),
                }
            }
            _ => return Err(unknown()),
        };
        if let KnownTopic::AgentState { agent }
        | KnownTopic::AgentControl { agent }
        | KnownTopic::Sensor { agent, .. } = &topic
        {
            check_id("agent", agent).map_err(|_| unknown())?;
        }
        Ok(topic)
    }

    pub fn class(&self) -> TopicClass {
        match self {
            KnownTopic::Clock => TopicClass::Clock,
            KnownTopic::FrameDone => TopicClass::Barrier,
            KnownTopic::Nodes => TopicClass::Status,
            KnownTopic::Assignments => TopicClass::Assignment,
            KnownTopic::WorldRequest | KnownTopic::WorldReply => TopicClass::World,
            KnownTopic::BenchPing
            | KnownTopic::BenchPong
            | KnownTopic::BenchLargePing
            | KnownTopic::BenchLargePong => TopicClass::Bench,
            KnownTopic::AgentState { .. } => TopicClass::State,
            KnownTopic::AgentControl { .. } => TopicClass::Control,
            KnownTopic::Sensor { .. } | KnownTopic::BenchImage | KnownTopic::BenchCloud => {
                TopicClass::Sensor
            }
        }
    }

    /// The IDL type this topic carries, where the name alone decides it.
    pub fn type_name(&self) -> Option<&'static str> {
        use crate::messages::*;
        Some(match self {
            KnownTopic::Clock => Tick::TYPE_NAME,
            KnownTopic::FrameDone => FrameDone::TYPE_NAME,
            KnownTopic::Nodes => NodeStatus::TYPE_NAME,
            KnownTopic::Assignments => SensorAssignment::TYPE_NAME,
            KnownTopic::WorldRequest => WorldRequest::TYPE_NAME,
            KnownTopic::WorldReply => WorldReply::TYPE_NAME,
            KnownTopic::BenchPing
            | KnownTopic::BenchPong
            | KnownTopic::BenchLargePing
            | KnownTopic::BenchLargePong => BenchSample::TYPE_NAME,
            KnownTopic::AgentState { .. } => AgentState::TYPE_NAME,
            KnownTopic::AgentControl { .. } => Control::TYPE_NAME,
            KnownTopic::BenchImage => Image::TYPE_NAME,
            KnownTopic::BenchCloud => PointCloud::TYPE_NAME,
            KnownTopic::Sensor { .. } => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_and_parser_agree() {
        assert_eq!(
            KnownTopic::parse(agent_state("car_1").name()),
            Ok(KnownTopic::AgentState {
                agent: "car_1".into()
            })
        );
        assert_eq!(
            KnownTopic::parse(&sensor_name("ego", "front_cam")).map(|t| t.class()),
            Ok(TopicClass::Sensor)
        );
        assert_eq!(
            KnownTopic::parse(CLOCK).map(|t| t.class()),
            Ok(TopicClass::Clock)
        );
    }

    #[test]
    fn rejects_what_is_not_a_convoy_topic() {
        for bad in [
            "rt/clock",
            "convoy/agent/Ego/state",
            "convoy/agent//state",
            "convoy/sensor/ego",
            "convoy/agent/ego/state/x",
        ] {
            assert!(KnownTopic::parse(bad).is_err(), "{bad} accepted");
        }
        assert!(check_id("agent", "a-b").is_err());
        assert!(check_id("agent", &"a".repeat(65)).is_err());
    }
}
