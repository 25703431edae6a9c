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

use roxmltree::{Document, Node};

use super::error::QosError;
use super::layer::{At, Layer};

mod policies;
mod profile;

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
