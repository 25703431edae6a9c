//! What DDS discovery knows about the domain: topics with their writers and readers, as
//! `convoy topic list` shows them.

use std::collections::BTreeMap;

use rustdds::{DomainParticipant, QosPolicies, GUID};

/// One remote (or local) writer or reader.
#[derive(Debug, Clone)]
pub struct EndpointInfo {
    pub guid: GUID,
    pub type_name: String,
    pub qos: QosPolicies,
}

/// A topic as discovery sees it.
#[derive(Debug, Clone, Default)]
pub struct TopicInfo {
    pub name: String,
    pub writers: Vec<EndpointInfo>,
    pub readers: Vec<EndpointInfo>,
}

impl TopicInfo {
    /// Every type name announced on this topic; more than one means a type conflict.
    pub fn type_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .writers
            .iter()
            .chain(&self.readers)
            .map(|e| e.type_name.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}

/// Topics with at least one discovered writer or reader, sorted by name.
pub fn topics(participant: &DomainParticipant) -> Vec<TopicInfo> {
    let mut by_name: BTreeMap<String, TopicInfo> = BTreeMap::new();
    for w in participant.discovered_writers() {
        let data = &w.publication_topic_data;
        let entry = by_name
            .entry(data.topic_name.clone())
            .or_insert_with(|| TopicInfo {
                name: data.topic_name.clone(),
                ..TopicInfo::default()
            });
        entry.writers.push(EndpointInfo {
            guid: data.key,
            type_name: data.type_name.clone(),
            qos: data.qos(),
        });
    }
    for r in participant.discovered_readers() {
        let data = &r.subscription_topic_data;
        let entry = by_name
            .entry(data.topic_name().clone())
            .or_insert_with(|| TopicInfo {
                name: data.topic_name().clone(),
                ..TopicInfo::default()
            });
        entry.readers.push(EndpointInfo {
            guid: data.key(),
            type_name: data.type_name().clone(),
            qos: data.qos(),
        });
    }
    by_name.into_values().collect()
}

/// The type name announced for `topic`, if any endpoint of it was discovered.
pub fn type_of(participant: &DomainParticipant, topic: &str) -> Option<String> {
    topics(participant)
        .into_iter()
        .find(|t| t.name == topic)
        .and_then(|t| t.type_names().first().map(|s| s.to_string()))
}

/// An endpoint's USER_DATA bytes (empty without the policy).
fn user_data(qos: &QosPolicies) -> &[u8] {
    qos.user_data().map_or(&[], |u| u.value.as_slice())
}

/// Discovered writers of `topic` whose offered QoS a reader requesting `requested` accepts.
pub fn matched_writers(
    participant: &DomainParticipant,
    topic: &str,
    requested: &QosPolicies,
) -> usize {
    participant
        .discovered_writers()
        .iter()
        .filter(|w| w.publication_topic_data.topic_name == topic)
        .filter(|w| rustdds::locality_allows(user_data(requested), &w.user_data))
        .filter(|w| {
            w.publication_topic_data
                .qos()
                .compliance_failure_wrt(requested)
                .is_none()
        })
        .count()
}
