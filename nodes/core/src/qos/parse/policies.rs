//! The policies inside a `*_qos` element: which ones convoy applies and where each may
//! appear (DDS 1.4, 2.2.3), and their values (enumerations, counts, durations) checked strictly.

use std::collections::HashMap;
use std::time::Duration;

use roxmltree::Node;

use super::{Parser, Result};
use crate::qos::error::QosError;
use crate::qos::layer::{At, HistoryKind, Layer, OwnershipKind, ReliabilityKind};
use crate::qos::policy::{
    DestinationOrder, Durability, LivelinessKind, INFINITE, LENGTH_UNLIMITED,
};

/// The `*_qos` elements of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QosKind {
    Topic,
    Writer,
    Reader,
    /// participant, publisher and subscriber QoS: convoy applies none of their policies, so
    /// they are accepted only empty. The element name is kept for messages.
    Container(&'static str),
}

impl QosKind {
    pub(super) fn element(self) -> &'static str {
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
    /// Each policy with its DDS-XML element name.
    const NAMES: [(Policy, &'static str); 12] = [
        (Policy::Reliability, "reliability"),
        (Policy::Durability, "durability"),
        (Policy::History, "history"),
        (Policy::ResourceLimits, "resource_limits"),
        (Policy::Deadline, "deadline"),
        (Policy::TimeBasedFilter, "time_based_filter"),
        (Policy::Lifespan, "lifespan"),
        (Policy::Liveliness, "liveliness"),
        (Policy::Ownership, "ownership"),
        (Policy::OwnershipStrength, "ownership_strength"),
        (Policy::DestinationOrder, "destination_order"),
        (Policy::LatencyBudget, "latency_budget"),
    ];

    fn name(self) -> &'static str {
        Policy::NAMES
            .iter()
            .find(|(p, _)| *p == self)
            .map_or("", |(_, name)| name)
    }

    fn from_name(name: &str) -> Option<Policy> {
        Policy::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(p, _)| *p)
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

impl<'d, 'input: 'd> Parser<'d, 'input> {
    /// The policies of one `*_qos` element as a layer.
    pub(super) fn qos(&self, node: Node<'d, 'input>, kind: QosKind) -> Result<Layer> {
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
                let known: Vec<&str> = Policy::NAMES
                    .iter()
                    .filter(|(p, _)| p.allowed_in().contains(&kind))
                    .map(|(_, name)| *name)
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
            let (unit, suffix, max) = if leaf == "sec" {
                ("seconds", "SEC", i32::MAX as u64 - 1)
            } else {
                ("nanoseconds", "NSEC", 999_999_999)
            };
            let part = if text == "DURATION_INFINITY"
                || text == format!("DURATION_INFINITE_{suffix}")
            {
                Part::Infinite
            } else if text == format!("DURATION_ZERO_{suffix}") {
                Part::Finite(0)
            } else {
                match parse_u64(&text).filter(|&n| n <= max) {
                    Some(n) => Part::Finite(n),
                    None => {
                        let expected = format!(
                            "{unit} from 0 to {max}, DURATION_INFINITE_{suffix}, DURATION_INFINITY or DURATION_ZERO_{suffix}"
                        );
                        return Err(self.bad_value(child, element, &text, &expected));
                    }
                }
            };
            if leaf == "sec" {
                sec = Some(part);
            } else {
                nanosec = Some(part);
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
