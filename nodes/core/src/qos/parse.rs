//! DDS-XML text to the raw model: libraries, profiles and the layers their `*_qos` elements
//! write, checked element by element.
//!
//! OMG DDS-XML 1.0 ("DDS Consolidated XML Syntax"), the QoS building block: a `<dds>` root (or a
//! lone `<qos_library>` root, as in the OMG's own example file) holding `<qos_library name>`s of
//! `<qos_profile name base_name>`s. Every element, attribute and value is checked here, and
//! anything convoy would not apply is an error naming its line: a QoS file that says something
//! convoy silently ignores would make a latency experiment measure the wrong thing.
//!
//! Namespaces are ignored (elements match by local name), so files with or without
//! `xmlns="http://www.omg.org/spec/DDS-XML"` read the same; `xsi:*` attributes (schema
//! locations) are allowed on the root.

use std::collections::HashMap;
use std::time::Duration;

use roxmltree::{Document, Node};

use super::error::QosError;
use super::layer::{At, HistoryKind, Layer, OwnershipKind, ReliabilityKind};
use super::policy::{DestinationOrder, Durability, LivelinessKind, INFINITE, LENGTH_UNLIMITED};

const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// A whole file, as written.
#[derive(Debug)]
pub(crate) struct RawDoc {
    pub root_line: u32,
    pub libraries: Vec<RawLibrary>,
}

#[derive(Debug)]
pub(crate) struct RawLibrary {
    pub name: String,
    pub line: u32,
    pub profiles: Vec<RawProfile>,
}

#[derive(Debug)]
pub(crate) struct RawProfile {
    pub name: String,
    pub line: u32,
    /// The base_name value and the line of the attribute.
    pub base: Option<At<String>>,
    pub topic: Layer,
    pub writers: Vec<RawEntry>,
    pub readers: Vec<RawEntry>,
}

/// One `<datawriter_qos>` or `<datareader_qos>`, with the topic filter that selects it.
#[derive(Debug)]
pub(crate) struct RawEntry {
    pub filter: Option<String>,
    pub layer: Layer,
    pub line: u32,
}

/// The `*_qos` elements of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QosKind {
    Topic,
    Writer,
    Reader,
    /// participant, publisher and subscriber QoS: convoy applies none of their policies, so
    /// they are accepted only empty. The element name is kept for messages.
    Container(&'static str),
}

impl QosKind {
    fn element(self) -> &'static str {
        match self {
            QosKind::Topic => "topic_qos",
            QosKind::Writer => "datawriter_qos",
            QosKind::Reader => "datareader_qos",
            QosKind::Container(name) => name,
        }
    }
}

/// The policies convoy applies (rustdds, or convoy itself where rustdds does not enforce).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Policy {
    Reliability,
    Durability,
    History,
    ResourceLimits,
    Deadline,
    TimeBasedFilter,
    Lifespan,
    Liveliness,
    Ownership,
    OwnershipStrength,
    DestinationOrder,
    LatencyBudget,
}

impl Policy {
    const ALL: [Policy; 12] = [
        Policy::Reliability,
        Policy::Durability,
        Policy::History,
        Policy::ResourceLimits,
        Policy::Deadline,
        Policy::TimeBasedFilter,
        Policy::Lifespan,
        Policy::Liveliness,
        Policy::Ownership,
        Policy::OwnershipStrength,
        Policy::DestinationOrder,
        Policy::LatencyBudget,
    ];

    fn name(self) -> &'static str {
        match self {
            Policy::Reliability => "reliability",
            Policy::Durability => "durability",
            Policy::History => "history",
            Policy::ResourceLimits => "resource_limits",
            Policy::Deadline => "deadline",
            Policy::TimeBasedFilter => "time_based_filter",
            Policy::Lifespan => "lifespan",
            Policy::Liveliness => "liveliness",
            Policy::Ownership => "ownership",
            Policy::OwnershipStrength => "ownership_strength",
            Policy::DestinationOrder => "destination_order",
            Policy::LatencyBudget => "latency_budget",
        }
    }

    fn from_name(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Where DDS 1.4 (2.2.3, "Supported QoS") lets the policy appear.
    fn allowed_in(self) -> &'static [QosKind] {
        match self {
            Policy::TimeBasedFilter => &[QosKind::Reader],
            Policy::Lifespan => &[QosKind::Topic, QosKind::Writer],
            Policy::OwnershipStrength => &[QosKind::Writer],
            _ => &[QosKind::Topic, QosKind::Writer, QosKind::Reader],
        }
    }

    fn allowed_in_text(self) -> String {
        let names: Vec<String> = self
            .allowed_in()
            .iter()
            .map(|k| format!("<{}>", k.element()))
            .collect();
        names.join(", ")
    }
}

/// Standard DDS (and common vendor) policies convoy recognises but does not apply: rustdds
/// ignores them and convoy does not implement them, so a file naming one is refused rather
/// than run with a QoS other than the one it asks for.
const UNSUPPORTED_POLICIES: &[&str] = &[
    "presentation",
    "partition",
    "user_data",
    "topic_data",
    "group_data",
    "transport_priority",
    "durability_service",
    "writer_data_lifecycle",
    "reader_data_lifecycle",
    "entity_factory",
    "representation",
    "data_representation",
    "type_consistency",
    "property",
    "data_tag",
];

/// Other DDS-XML building blocks that may share a file with QoS libraries.
const OTHER_BUILDING_BLOCKS: &[&str] = &[
    "types",
    "domain_library",
    "domain_participant_library",
    "application_library",
];

const PARTICIPANT_QOS: &[&str] = &[
    "participant_qos",
    "domainparticipant_qos",
    "domain_participant_qos",
];

pub(crate) fn parse(text: &str, file: &str) -> std::result::Result<RawDoc, QosError> {
    let doc = Document::parse(text).map_err(|e| QosError::Xml {
        file: file.to_string(),
        line: e.pos().row,
        message: e.to_string(),
    })?;
    Parser { doc: &doc, file }.document()
}

struct Parser<'d, 'input> {
    doc: &'d Document<'input>,
    file: &'d str,
}

type Result<T> = std::result::Result<T, QosError>;

impl<'d, 'input: 'd> Parser<'d, 'input> {
    fn line(&self, node: Node<'_, '_>) -> u32 {
        self.doc.text_pos_at(node.range().start).row
    }

    fn name<'n>(node: Node<'n, '_>) -> &'n str {
        node.tag_name().name()
    }

    fn document(&self) -> Result<RawDoc> {
        let root = self.doc.root_element();
        let root_line = self.line(root);
        let libraries = match Self::name(root) {
            "dds" => {
                self.attributes(root, &[], true)?;
                let mut libraries: Vec<RawLibrary> = Vec::new();
                for child in self.elements(root)? {
                    match Self::name(child) {
                        "qos_library" => libraries.push(self.library(child)?),
                        other if OTHER_BUILDING_BLOCKS.contains(&other) => {
                            return Err(QosError::Unsupported {
                                file: self.file.to_string(),
                                line: self.line(child),
                                what: format!(
                                    "<{other}> in a QoS file (convoy reads only <qos_library>)"
                                ),
                            })
                        }
                        other => {
                            return Err(self.unknown_element(child, other, "dds", "qos_library"))
                        }
                    }
                }
                libraries
            }
            "qos_library" => vec![self.library(root)?],
            other => {
                return Err(self.unknown_element(root, other, "document root", "dds, qos_library"))
            }
        };
        let mut seen: HashMap<&str, u32> = HashMap::new();
        for library in &libraries {
            if let Some(first_line) = seen.insert(&library.name, library.line) {
                return Err(QosError::DuplicateLibrary {
                    file: self.file.to_string(),
                    line: library.line,
                    library: library.name.clone(),
                    first_line,
                });
            }
        }
        Ok(RawDoc {
            root_line,
            libraries,
        })
    }

    fn library(&self, node: Node<'d, 'input>) -> Result<RawLibrary> {
        let attrs = self.attributes(node, &["name"], self.doc.root_element() == node)?;
        let name = self.name_attribute(node, &attrs)?;
        let mut profiles: Vec<RawProfile> = Vec::new();
        for child in self.elements(node)? {
            match Self::name(child) {
                "qos_profile" => {
                    let profile = self.profile(child)?;
                    if let Some(first) = profiles.iter().find(|p| p.name == profile.name) {
                        return Err(QosError::DuplicateProfile {
                            file: self.file.to_string(),
                            line: profile.line,
                            library: name.clone(),
                            profile: profile.name.clone(),
                            first_line: first.line,
                        });
                    }
                    profiles.push(profile);
                }
                other => {
                    return Err(self.unknown_element(child, other, "qos_library", "qos_profile"))
                }
            }
        }
        Ok(RawLibrary {
            name,
            line: self.line(node),
            profiles,
        })
    }

    fn profile(&self, node: Node<'d, 'input>) -> Result<RawProfile> {
        let attrs = self.attributes(node, &["name", "base_name"], false)?;
        let name = self.name_attribute(node, &attrs)?;
        let base = match attrs.get("base_name") {
            None => None,
            Some((value, line)) => {
                let (library, profile) = match value.split_once("::") {
                    Some((library, profile)) => (Some(library), profile),
                    None => (None, value.as_str()),
                };
                if profile.is_empty()
                    || library.is_some_and(str::is_empty)
                    || profile.contains("::")
                    || value.trim() != value
                {
                    return Err(QosError::BadAttribute {
                        file: self.file.to_string(),
                        line: *line,
                        attribute: "base_name".into(),
                        element: "qos_profile".into(),
                        value: value.clone(),
                        expected: "PROFILE or LIBRARY::PROFILE",
                    });
                }
                Some(At {
                    value: value.clone(),
                    line: *line,
                })
            }
        };

        let mut topic: Option<(Layer, u32)> = None;
        let mut writers: Vec<RawEntry> = Vec::new();
        let mut readers: Vec<RawEntry> = Vec::new();
        for child in self.elements(node)? {
            let element = Self::name(child);
            match element {
                "topic_qos" => {
                    self.qos_attributes(child, false)?;
                    if let Some((_, first_line)) = topic {
                        return Err(self.duplicate(child, "topic_qos", "qos_profile", first_line));
                    }
                    topic = Some((self.qos(child, QosKind::Topic)?, self.line(child)));
                }
                "datawriter_qos" | "datareader_qos" => {
                    let filter = self.qos_attributes(child, true)?;
                    self.entry(child, filter, &mut writers, &mut readers)?;
                }
                "topic_filter" => {
                    let attrs = self.attributes(child, &["name"], false)?;
                    let filter = self.filter_value(child, attrs.get("name"), "topic_filter", "name")?;
                    for inner in self.elements(child)? {
                        match Self::name(inner) {
                            "datawriter_qos" | "datareader_qos" => {
                                if self.qos_attributes(inner, true)?.is_some() {
                                    return Err(QosError::Unsupported {
                                        file: self.file.to_string(),
                                        line: self.line(inner),
                                        what: "a topic_filter attribute inside a <topic_filter> element".into(),
                                    });
                                }
                                self.entry(inner, Some(filter.clone()), &mut writers, &mut readers)?;
                            }
                            "topic_qos" => {
                                return Err(QosError::Unsupported {
                                    file: self.file.to_string(),
                                    line: self.line(inner),
                                    what: "<topic_qos> inside <topic_filter> (convoy has one topic QoS per profile; filter <datawriter_qos>/<datareader_qos>)".into(),
                                })
                            }
                            other => {
                                return Err(self.unknown_element(
                                    inner,
                                    other,
                                    "topic_filter",
                                    "datawriter_qos, datareader_qos",
                                ))
                            }
                        }
                    }
                }
                "publisher_qos" | "subscriber_qos" => {
                    let kind = if element == "publisher_qos" {
                        QosKind::Container("publisher_qos")
                    } else {
                        QosKind::Container("subscriber_qos")
                    };
                    self.qos_attributes(child, false)?;
                    self.qos(child, kind)?;
                }
                other if PARTICIPANT_QOS.contains(&other) => {
                    let kind = PARTICIPANT_QOS
                        .iter()
                        .find(|&&p| p == other)
                        .map_or(QosKind::Container("participant_qos"), |&p| QosKind::Container(p));
                    self.qos_attributes(child, false)?;
                    self.qos(child, kind)?;
                }
                other => {
                    return Err(self.unknown_element(
                        child,
                        other,
                        "qos_profile",
                        "topic_qos, datawriter_qos, datareader_qos, topic_filter, participant_qos, publisher_qos, subscriber_qos",
                    ))
                }
            }
        }
        Ok(RawProfile {
            name,
            line: self.line(node),
            base,
            topic: topic.map(|(layer, _)| layer).unwrap_or_default(),
            writers,
            readers,
        })
    }

    /// A writer or reader QoS of a profile; one per filter (and one unfiltered) per kind.
    fn entry(
        &self,
        node: Node<'d, 'input>,
        filter: Option<String>,
        writers: &mut Vec<RawEntry>,
        readers: &mut Vec<RawEntry>,
    ) -> Result<()> {
        let (kind, list) = if Self::name(node) == "datawriter_qos" {
            (QosKind::Writer, writers)
        } else {
            (QosKind::Reader, readers)
        };
        if let Some(first) = list.iter().find(|e| e.filter == filter) {
            let element = match &filter {
                Some(f) => format!("{} topic_filter='{f}'", kind.element()),
                None => format!("{} (without topic_filter)", kind.element()),
            };
            return Err(self.duplicate(node, &element, "qos_profile", first.line));
        }
        let layer = self.qos(node, kind)?;
        list.push(RawEntry {
            filter,
            layer,
            line: self.line(node),
        });
        Ok(())
    }

    /// Checks the attributes of a `*_qos` element; returns its topic_filter where allowed.
    fn qos_attributes(
        &self,
        node: Node<'d, 'input>,
        filter_allowed: bool,
    ) -> Result<Option<String>> {
        for attr in node.attributes() {
            let name = attr.name();
            let line = self.doc.text_pos_at(attr.range().start).row;
            match name {
                "topic_filter" if filter_allowed => {}
                "topic_filter" => {
                    return Err(QosError::Unsupported {
                        file: self.file.to_string(),
                        line,
                        what: format!(
                            "a topic_filter on <{}> (convoy has one topic QoS per profile; filter <datawriter_qos>/<datareader_qos>)",
                            Self::name(node)
                        ),
                    })
                }
                "name" | "base_name" => {
                    return Err(QosError::Unsupported {
                        file: self.file.to_string(),
                        line,
                        what: format!(
                            "attribute '{name}' on <{}> (named QoS elements; inherit whole profiles with <qos_profile base_name=..>)",
                            Self::name(node)
                        ),
                    })
                }
                _ => {
                    return Err(QosError::UnknownAttribute {
                        file: self.file.to_string(),
                        line,
                        attribute: name.to_string(),
                        element: Self::name(node).to_string(),
                        known: if filter_allowed { "topic_filter" } else { "none" }.to_string(),
                    })
                }
            }
        }
        match node.attribute_node("topic_filter") {
            None => Ok(None),
            Some(attr) => {
                let line = self.doc.text_pos_at(attr.range().start).row;
                self.filter_value(
                    node,
                    Some(&(attr.value().to_string(), line)),
                    Self::name(node),
                    "topic_filter",
                )
                .map(Some)
            }
        }
    }

    fn filter_value(
        &self,
        node: Node<'d, 'input>,
        value: Option<&(String, u32)>,
        element: &str,
        attribute: &str,
    ) -> Result<String> {
        match value {
            None => Err(QosError::MissingAttribute {
                file: self.file.to_string(),
                line: self.line(node),
                attribute: attribute.to_string(),
                element: element.to_string(),
            }),
            Some((v, line)) if v.trim().is_empty() => Err(QosError::BadAttribute {
                file: self.file.to_string(),
                line: *line,
                attribute: attribute.to_string(),
                element: element.to_string(),
                value: v.clone(),
                expected: "a topic name glob ('*' any run, '?' one character)",
            }),
            Some((v, _)) => Ok(v.trim().to_string()),
        }
    }

    /// The policies of one `*_qos` element as a layer.
    fn qos(&self, node: Node<'d, 'input>, kind: QosKind) -> Result<Layer> {
        let mut layer = Layer::default();
        let mut seen: HashMap<Policy, u32> = HashMap::new();
        for child in self.elements(node)? {
            let name = Self::name(child);
            let line = self.line(child);
            let Some(policy) = Policy::from_name(name) else {
                if UNSUPPORTED_POLICIES.contains(&name) {
                    return Err(QosError::UnsupportedPolicy {
                        file: self.file.to_string(),
                        line,
                        policy: name.to_string(),
                        qos: kind.element().to_string(),
                    });
                }
                let known: Vec<&str> = Policy::ALL
                    .into_iter()
                    .filter(|p| p.allowed_in().contains(&kind))
                    .map(Policy::name)
                    .collect();
                let known = if known.is_empty() {
                    format!(
                        "none (convoy applies no <{}> policy; leave it empty)",
                        kind.element()
                    )
                } else {
                    known.join(", ")
                };
                return Err(QosError::UnknownElement {
                    file: self.file.to_string(),
                    line,
                    what: "policy",
                    element: name.to_string(),
                    parent: kind.element().to_string(),
                    known,
                });
            };
            if !policy.allowed_in().contains(&kind) {
                return Err(QosError::MisplacedPolicy {
                    file: self.file.to_string(),
                    line,
                    policy: name.to_string(),
                    qos: kind.element().to_string(),
                    allowed_in: policy.allowed_in_text(),
                });
            }
            if let Some(first_line) = seen.insert(policy, line) {
                return Err(self.duplicate(child, name, kind.element(), first_line));
            }
            self.policy(child, policy, &mut layer)?;
        }
        Ok(layer)
    }

    fn policy(&self, node: Node<'d, 'input>, policy: Policy, layer: &mut Layer) -> Result<()> {
        let name = policy.name();
        match policy {
            Policy::Reliability => {
                for (leaf, child) in self.fields(node, name, &["kind", "max_blocking_time"])? {
                    match leaf {
                        "kind" => {
                            layer.reliability = Some(self.enumerated(
                                child,
                                name,
                                &[
                                    ("BEST_EFFORT_RELIABILITY_QOS", ReliabilityKind::BestEffort),
                                    ("RELIABLE_RELIABILITY_QOS", ReliabilityKind::Reliable),
                                ],
                            )?)
                        }
                        _ => {
                            layer.max_blocking_time =
                                Some(self.duration(child, name, Positive::ZeroOk)?)
                        }
                    }
                }
            }
            Policy::Durability => {
                for (_, child) in self.fields(node, name, &["kind"])? {
                    layer.durability = Some(self.enumerated(
                        child,
                        name,
                        &[
                            ("VOLATILE_DURABILITY_QOS", Durability::Volatile),
                            ("TRANSIENT_LOCAL_DURABILITY_QOS", Durability::TransientLocal),
                            ("TRANSIENT_DURABILITY_QOS", Durability::Transient),
                            ("PERSISTENT_DURABILITY_QOS", Durability::Persistent),
                        ],
                    )?);
                }
            }
            Policy::History => {
                for (leaf, child) in self.fields(node, name, &["kind", "depth"])? {
                    match leaf {
                        "kind" => {
                            layer.history = Some(self.enumerated(
                                child,
                                name,
                                &[
                                    ("KEEP_LAST_HISTORY_QOS", HistoryKind::KeepLast),
                                    ("KEEP_ALL_HISTORY_QOS", HistoryKind::KeepAll),
                                ],
                            )?)
                        }
                        _ => {
                            let At { value, line } = self.count(child, name, false)?;
                            // count() refuses 0, negatives and anything past i32::MAX.
                            layer.depth = Some(At {
                                value: u32::try_from(value).unwrap_or(u32::MAX),
                                line,
                            });
                        }
                    }
                }
            }
            Policy::ResourceLimits => {
                for (leaf, child) in self.fields(
                    node,
                    name,
                    &["max_samples", "max_instances", "max_samples_per_instance"],
                )? {
                    let value = Some(self.count(child, name, true)?);
                    match leaf {
                        "max_samples" => layer.max_samples = value,
                        "max_instances" => layer.max_instances = value,
                        _ => layer.max_samples_per_instance = value,
                    }
                }
            }
            Policy::Deadline => {
                for (_, child) in self.fields(node, name, &["period"])? {
                    layer.deadline = Some(self.duration(child, name, Positive::Required)?);
                }
            }
            Policy::TimeBasedFilter => {
                for (_, child) in self.fields(node, name, &["minimum_separation"])? {
                    layer.time_based_filter = Some(self.duration(child, name, Positive::ZeroOk)?);
                }
            }
            Policy::Lifespan => {
                for (_, child) in self.fields(node, name, &["duration"])? {
                    layer.lifespan = Some(self.duration(child, name, Positive::Required)?);
                }
            }
            Policy::Liveliness => {
                for (leaf, child) in self.fields(node, name, &["kind", "lease_duration"])? {
                    match leaf {
                        "kind" => {
                            layer.liveliness = Some(self.enumerated(
                                child,
                                name,
                                &[
                                    ("AUTOMATIC_LIVELINESS_QOS", LivelinessKind::Automatic),
                                    (
                                        "MANUAL_BY_PARTICIPANT_LIVELINESS_QOS",
                                        LivelinessKind::ManualByParticipant,
                                    ),
                                    (
                                        "MANUAL_BY_TOPIC_LIVELINESS_QOS",
                                        LivelinessKind::ManualByTopic,
                                    ),
                                ],
                            )?)
                        }
                        _ => {
                            layer.lease_duration =
                                Some(self.duration(child, name, Positive::Required)?)
                        }
                    }
                }
            }
            Policy::Ownership => {
                for (_, child) in self.fields(node, name, &["kind"])? {
                    layer.ownership = Some(self.enumerated(
                        child,
                        name,
                        &[
                            ("SHARED_OWNERSHIP_QOS", OwnershipKind::Shared),
                            ("EXCLUSIVE_OWNERSHIP_QOS", OwnershipKind::Exclusive),
                        ],
                    )?);
                }
            }
            Policy::OwnershipStrength => {
                for (_, child) in self.fields(node, name, &["value"])? {
                    let (text, line) = self.value(child, name)?;
                    let value = parse_i32(&text).ok_or_else(|| {
                        self.bad_value(child, name, &text, "a whole number (DDS long)")
                    })?;
                    layer.ownership_strength = Some(At { value, line });
                }
            }
            Policy::DestinationOrder => {
                for (_, child) in self.fields(node, name, &["kind"])? {
                    layer.destination_order = Some(self.enumerated(
                        child,
                        name,
                        &[
                            (
                                "BY_RECEPTION_TIMESTAMP_DESTINATIONORDER_QOS",
                                DestinationOrder::ByReceptionTimestamp,
                            ),
                            (
                                "BY_SOURCE_TIMESTAMP_DESTINATIONORDER_QOS",
                                DestinationOrder::BySourceTimestamp,
                            ),
                        ],
                    )?);
                }
            }
            Policy::LatencyBudget => {
                for (_, child) in self.fields(node, name, &["duration"])? {
                    layer.latency_budget = Some(self.duration(child, name, Positive::ZeroOk)?);
                }
            }
        }
        Ok(())
    }

    /// The child elements of a policy (or duration), each known and given at most once.
    fn fields(
        &self,
        node: Node<'d, 'input>,
        parent: &str,
        known: &[&'static str],
    ) -> Result<Vec<(&'static str, Node<'d, 'input>)>> {
        self.attributes(node, &[], false)?;
        let mut out: Vec<(&'static str, Node<'d, 'input>)> = Vec::new();
        for child in self.elements(node)? {
            let name = Self::name(child);
            let Some(&leaf) = known.iter().find(|&&k| k == name) else {
                return Err(self.unknown_element(child, name, parent, &known.join(", ")));
            };
            if let Some((_, first)) = out.iter().find(|(l, _)| *l == leaf) {
                return Err(self.duplicate(child, leaf, parent, self.line(*first)));
            }
            out.push((leaf, child));
        }
        Ok(out)
    }

    /// The trimmed text of a leaf element and its line.
    fn value(&self, node: Node<'d, 'input>, parent: &str) -> Result<(String, u32)> {
        self.attributes(node, &[], false)?;
        let mut text = String::new();
        for child in node.children() {
            if child.is_element() {
                return Err(self.bad_value(
                    node,
                    parent,
                    &format!("<{}>", Self::name(child)),
                    "a value, not an element",
                ));
            }
            if let Some(t) = child.text().filter(|_| child.is_text()) {
                text.push_str(t);
            }
        }
        let text = text.trim().to_string();
        if text.is_empty() {
            return Err(self.bad_value(node, parent, "", "a value (the element is empty)"));
        }
        Ok((text, self.line(node)))
    }

    fn enumerated<T: Copy>(
        &self,
        node: Node<'d, 'input>,
        parent: &str,
        options: &[(&str, T)],
    ) -> Result<At<T>> {
        let (text, line) = self.value(node, parent)?;
        match options.iter().find(|(name, _)| *name == text) {
            Some(&(_, value)) => Ok(At { value, line }),
            None => {
                let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
                Err(self.bad_value(node, parent, &text, &format!("one of {}", names.join(", "))))
            }
        }
    }

    /// A positive count up to i32::MAX; with `unlimited`, also `LENGTH_UNLIMITED` (-1).
    fn count(&self, node: Node<'d, 'input>, parent: &str, unlimited: bool) -> Result<At<i32>> {
        let (text, line) = self.value(node, parent)?;
        if unlimited && text == "LENGTH_UNLIMITED" {
            return Ok(At {
                value: LENGTH_UNLIMITED,
                line,
            });
        }
        let expected = if unlimited {
            "LENGTH_UNLIMITED or a whole number from 1 to 2147483647"
        } else {
            "a whole number from 1 to 2147483647"
        };
        match parse_u64(&text).and_then(|n| i32::try_from(n).ok()) {
            Some(value) if value >= 1 => Ok(At { value, line }),
            _ => Err(self.bad_value(node, parent, &text, expected)),
        }
    }

    /// A DDS-XML duration: `<sec>` and/or `<nanosec>` (either may be absent, meaning 0), each
    /// a number or one of the standard's constants.
    fn duration(
        &self,
        node: Node<'d, 'input>,
        policy: &str,
        positive: Positive,
    ) -> Result<At<Duration>> {
        let element = Self::name(node);
        let line = self.line(node);
        let fields = self.fields(node, element, &["sec", "nanosec"])?;
        if fields.is_empty() {
            return Err(self.bad_value(
                node,
                policy,
                "",
                "<sec> and/or <nanosec> (or DURATION_INFINITY in both)",
            ));
        }
        #[derive(PartialEq)]
        enum Part {
            Infinite,
            Finite(u64),
        }
        let (mut sec, mut nanosec) = (None, None);
        for (leaf, child) in fields {
            let (text, _) = self.value(child, element)?;
            if leaf == "sec" {
                sec = Some(match text.as_str() {
                    "DURATION_INFINITY" | "DURATION_INFINITE_SEC" => Part::Infinite,
                    "DURATION_ZERO_SEC" => Part::Finite(0),
                    _ => match parse_u64(&text).filter(|&s| s < i32::MAX as u64) {
                        Some(s) => Part::Finite(s),
                        None => {
                            return Err(self.bad_value(
                                child,
                                element,
                                &text,
                                "seconds from 0 to 2147483646, DURATION_INFINITE_SEC, DURATION_INFINITY or DURATION_ZERO_SEC",
                            ))
                        }
                    },
                });
            } else {
                nanosec = Some(match text.as_str() {
                    "DURATION_INFINITY" | "DURATION_INFINITE_NSEC" => Part::Infinite,
                    "DURATION_ZERO_NSEC" => Part::Finite(0),
                    _ => match parse_u64(&text).filter(|&n| n < 1_000_000_000) {
                        Some(n) => Part::Finite(n),
                        None => {
                            return Err(self.bad_value(
                                child,
                                element,
                                &text,
                                "nanoseconds from 0 to 999999999, DURATION_INFINITE_NSEC, DURATION_INFINITY or DURATION_ZERO_NSEC",
                            ))
                        }
                    },
                });
            }
        }
        let value = match (sec, nanosec) {
            (Some(Part::Infinite), None | Some(Part::Infinite)) | (None, Some(Part::Infinite)) => {
                INFINITE
            }
            (Some(Part::Infinite), Some(_)) | (Some(_), Some(Part::Infinite)) => {
                return Err(self.bad_value(
                    node,
                    policy,
                    "a finite part with an infinite one",
                    "<sec> and <nanosec> both infinite, or both finite",
                ))
            }
            (s, n) => {
                let secs = match s {
                    Some(Part::Finite(s)) => s,
                    _ => 0,
                };
                let nanos = match n {
                    Some(Part::Finite(n)) => n,
                    _ => 0,
                };
                Duration::new(secs, u32::try_from(nanos).unwrap_or(0))
            }
        };
        if positive == Positive::Required && value.is_zero() {
            return Err(self.bad_value(
                node,
                policy,
                "0",
                "a duration greater than zero (DURATION_INFINITY for none)",
            ));
        }
        Ok(At { value, line })
    }

    /// Child elements, refusing non-blank text between them.
    fn elements(&self, node: Node<'d, 'input>) -> Result<Vec<Node<'d, 'input>>> {
        let mut out = Vec::new();
        for child in node.children() {
            if child.is_element() {
                out.push(child);
            } else if child.is_text() {
                let text = child.text().unwrap_or_default().trim();
                if !text.is_empty() {
                    let shown: String = text.chars().take(40).collect();
                    return Err(QosError::UnexpectedText {
                        file: self.file.to_string(),
                        line: self.line(child),
                        element: Self::name(node).to_string(),
                        text: shown,
                    });
                }
            }
        }
        Ok(out)
    }

    /// The attributes of an element, refusing unknown ones (`xsi:*` allowed on the root).
    fn attributes(
        &self,
        node: Node<'d, 'input>,
        known: &[&str],
        root: bool,
    ) -> Result<HashMap<String, (String, u32)>> {
        let mut out = HashMap::new();
        for attr in node.attributes() {
            let line = self.doc.text_pos_at(attr.range().start).row;
            if root && attr.namespace() == Some(XSI) {
                continue;
            }
            if attr.namespace().is_some() || !known.contains(&attr.name()) {
                return Err(QosError::UnknownAttribute {
                    file: self.file.to_string(),
                    line,
                    attribute: attr.name().to_string(),
                    element: Self::name(node).to_string(),
                    known: if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    },
                });
            }
            out.insert(attr.name().to_string(), (attr.value().to_string(), line));
        }
        Ok(out)
    }

    /// The `name` of a library or profile: required, no surrounding blanks, no `::`.
    fn name_attribute(
        &self,
        node: Node<'d, 'input>,
        attrs: &HashMap<String, (String, u32)>,
    ) -> Result<String> {
        let element = Self::name(node);
        match attrs.get("name") {
            None => Err(QosError::MissingAttribute {
                file: self.file.to_string(),
                line: self.line(node),
                attribute: "name".into(),
                element: element.to_string(),
            }),
            Some((value, line)) => {
                if value.is_empty() || value.trim() != value || value.contains("::") {
                    Err(QosError::BadAttribute {
                        file: self.file.to_string(),
                        line: *line,
                        attribute: "name".into(),
                        element: element.to_string(),
                        value: value.clone(),
                        expected: "a non-empty name without '::' or surrounding blanks",
                    })
                } else {
                    Ok(value.clone())
                }
            }
        }
    }

    fn unknown_element(
        &self,
        node: Node<'_, '_>,
        name: &str,
        parent: &str,
        known: &str,
    ) -> QosError {
        QosError::UnknownElement {
            file: self.file.to_string(),
            line: self.line(node),
            what: "element",
            element: name.to_string(),
            parent: parent.to_string(),
            known: known.to_string(),
        }
    }

    fn duplicate(
        &self,
        node: Node<'_, '_>,
        element: &str,
        parent: &str,
        first_line: u32,
    ) -> QosError {
        QosError::DuplicateElement {
            file: self.file.to_string(),
            line: self.line(node),
            element: element.to_string(),
            parent: parent.to_string(),
            first_line,
        }
    }

    fn bad_value(&self, node: Node<'_, '_>, parent: &str, value: &str, expected: &str) -> QosError {
        QosError::BadValue {
            file: self.file.to_string(),
            line: self.line(node),
            element: format!("<{}> in <{parent}>", Self::name(node)),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Positive {
    /// Zero means "off" (max_blocking_time, time_based_filter, latency_budget).
    ZeroOk,
    /// Zero would be nonsense (a zero deadline, lifespan or lease): refused.
    Required,
}

/// Digits only: no sign, no blanks inside, no hex; None on overflow.
fn parse_u64(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// An optional '-' then digits, within i32.
fn parse_i32(text: &str) -> Option<i32> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let n = i64::try_from(parse_u64(digits)?).ok()?;
    i32::try_from(if negative { -n } else { n }).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_strictly() {
        assert_eq!(parse_u64("42"), Some(42));
        for bad in ["", "+1", "-1", "1 2", "0x10", "1.0", "99999999999999999999"] {
            assert_eq!(parse_u64(bad), None, "{bad}");
        }
        assert_eq!(parse_i32("-5"), Some(-5));
        assert_eq!(parse_i32("2147483647"), Some(i32::MAX));
        assert_eq!(parse_i32("-2147483648"), Some(i32::MIN));
        assert_eq!(parse_i32("2147483648"), None);
        assert_eq!(parse_i32("--1"), None);
    }
}
