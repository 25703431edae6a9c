//! The structure of a DDS-XML QoS file: the root, libraries, profiles and their `*_qos`
//! elements with topic filters, each checked for unknown or repeated elements and attributes.

use std::collections::HashMap;

use roxmltree::Node;

use super::policies::QosKind;
use super::{Parser, RawDoc, RawEntry, RawLibrary, RawProfile, Result};
use crate::qos::error::QosError;
use crate::qos::layer::{At, Layer};

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

impl<'d, 'input: 'd> Parser<'d, 'input> {
    pub(super) fn document(&self) -> Result<RawDoc> {
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
}
