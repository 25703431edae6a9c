//! Who may write what in a secured run: the topics each node's permissions grant lets it
//! publish (everyone in the run may subscribe to every convoy topic), and the governance's
//! topic rules per topic class. Expressions are DDS Security's fnmatch patterns over convoy's
//! topic names (topics.rs); a large-sample topic's shared-memory descriptors (`T/shm`) match
//! its topic's pattern.

use convoy_core::node::NodeId;
use convoy_core::topics::{self, TopicClass};

/// Every convoy topic: what any node of the run may read.
pub const ALL_TOPICS: &str = "convoy/*";

/// The topics `node` may publish. Every node publishes its status; an agent its own state and
/// control, its frame barrier and world replies; a sensor node sensor data and its barrier;
/// only the coordinator the clock and the assignments; bridges (autonomy stacks) the agents'
/// control, world requests and their barrier; tools (the CLI: world commands, benches) world
/// requests and bench traffic. World replies: the coordinator and the agent a command moved.
pub fn publish(node: &NodeId) -> Vec<String> {
    let mut out = vec![topics::NODES.to_string()];
    match node {
        NodeId::Coordinator => {
            out.extend([topics::CLOCK, topics::ASSIGNMENTS, topics::WORLD_REPLY].map(String::from))
        }
        NodeId::Agent(agent) => {
            out.push(topics::agent_state(agent).name().to_string());
            out.push(topics::agent_control(agent).name().to_string());
            out.push(topics::FRAME_DONE.to_string());
            // An agent answers the world commands addressed to it (teleport, set-control).
            out.push(topics::WORLD_REPLY.to_string());
        }
        NodeId::Sensor(_) => {
            out.push("convoy/sensor/*".to_string());
            out.push(topics::FRAME_DONE.to_string());
        }
        NodeId::Bridge(_) => {
            out.push(topics::agent_control("*").name().to_string());
            out.push(topics::WORLD_REQUEST.to_string());
            // A bridge holding the lockstep for its stack reports its frames done.
            out.push(topics::FRAME_DONE.to_string());
        }
        NodeId::Tool(_) => {
            out.push(topics::WORLD_REQUEST.to_string());
            out.push("convoy/bench/*".to_string());
        }
    }
    out
}

/// The topic expression of each class, for the governance's topic rules.
pub fn class_expression(class: TopicClass) -> String {
    match class {
        TopicClass::Clock => topics::CLOCK.to_string(),
        TopicClass::Barrier => topics::FRAME_DONE.to_string(),
        TopicClass::Status => topics::NODES.to_string(),
        TopicClass::State => topics::agent_state("*").name().to_string(),
        TopicClass::Control => topics::agent_control("*").name().to_string(),
        TopicClass::Assignment => topics::ASSIGNMENTS.to_string(),
        TopicClass::Sensor => "convoy/sensor/*".to_string(),
        TopicClass::World => "convoy/world/*".to_string(),
        TopicClass::Bench => "convoy/bench/*".to_string(),
    }
}

/// The directory name of an identity's files: its name with `/` as `_` (`agent/ego`:
/// `agent_ego`).
pub fn enclave_name(identity: &str) -> String {
    identity.replace('/', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, topic: &str) -> bool {
        convoy_core::qos::glob_matches(pattern, topic)
    }

    #[test]
    fn an_agent_writes_its_own_state_and_control_only() {
        let ego = publish(&NodeId::Agent("ego".into()));
        let may = |topic: &str| ego.iter().any(|p| matches(p, topic));
        assert!(may("convoy/agent/ego/state"));
        assert!(may("convoy/agent/ego/control"));
        assert!(may("convoy/frame_done"));
        assert!(!may("convoy/agent/car_2/state"));
        assert!(!may("convoy/clock"));
        assert!(!may("convoy/world/request"));
    }

    #[test]
    fn only_the_coordinator_writes_the_clock_and_assignments() {
        for node in [
            NodeId::Agent("ego".into()),
            NodeId::Sensor("main".into()),
            NodeId::Bridge("ros2".into()),
            NodeId::Tool("cli".into()),
        ] {
            let grant = publish(&node);
            for topic in ["convoy/clock", "convoy/assignments"] {
                assert!(
                    !grant.iter().any(|p| matches(p, topic)),
                    "{node} may write {topic}"
                );
            }
        }
        let coordinator = publish(&NodeId::Coordinator);
        assert!(coordinator.iter().any(|p| matches(p, "convoy/clock")));
        assert!(!coordinator
            .iter()
            .any(|p| matches(p, "convoy/world/request")));
    }

    #[test]
    fn every_class_expression_matches_its_topics_and_shm_descriptors() {
        let cases = [
            (TopicClass::State, "convoy/agent/ego/state"),
            (TopicClass::Sensor, "convoy/sensor/ego/front"),
            (TopicClass::Sensor, "convoy/sensor/ego/front/shm"),
            (TopicClass::World, "convoy/world/request"),
            (TopicClass::Bench, "convoy/bench/large/ping/shm"),
        ];
        for (class, topic) in cases {
            assert!(matches(&class_expression(class), topic), "{class}: {topic}");
        }
        assert!(!matches(
            &class_expression(TopicClass::State),
            "convoy/agent/ego/control"
        ));
    }
}
