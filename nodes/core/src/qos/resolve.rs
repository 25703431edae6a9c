//! Inheritance: every profile of a file stacked on its base chain, then finalized.
//!
//! The layers for a profile P with base B, per endpoint kind (writers shown; readers alike):
//!
//! ```text
//! topic            = B.topic                      + P.topic_qos
//! writer (no filter) = B.writer(no filter)        + P.topic_qos + P.datawriter_qos
//! writer (filter f)  = B.writer(f, else no filter) + P.topic_qos + P.datawriter_qos
//!                                                               + P.datawriter_qos[f]
//! ```
//!
//! so a derived profile's every setting applies on top of everything its base resolved to, and
//! a filtered entry is its profile's unfiltered one with the filter's settings on top. Filters
//! P does not mention but B has are kept (with P's topic and unfiltered settings on top). A
//! profile always ends with an unfiltered writer and reader entry.
//!
//! The whole file is resolved, not only the selected library: an error anywhere in a QoS file
//! is reported at load, never left to surface in another run. A profile whose writers and
//! readers could not match each other is no error: it is noted as a [`QosWarning`] of its
//! library, and refused only where a run uses it for both ends of a topic ([`mismatch`]).

use std::collections::HashMap;

use super::error::{QosError, QosWarning};
use super::layer::{Context, Entity, Layer};
use super::parse::{RawDoc, RawEntry};
use super::policy::EndpointQos;
use super::ResolvedProfile;

/// A library with its profiles resolved, in file order.
#[derive(Debug)]
pub(crate) struct ResolvedLibrary {
    pub name: String,
    pub line: u32,
    pub profiles: Vec<ResolvedProfile>,
    /// Its profiles whose writers and readers could not match each other.
    pub warnings: Vec<QosWarning>,
}

type Entries = Vec<(Option<String>, Layer)>;

/// A profile's layers after inheritance, before defaults are filled in.
#[derive(Debug, Clone)]
struct Stacked {
    /// Qualified names of the bases, nearest first.
    chain: Vec<String>,
    topic: Layer,
    writers: Entries,
    readers: Entries,
}

impl Stacked {
    /// What a profile without base_name starts from: nothing set.
    fn root() -> Stacked {
        Stacked {
            chain: Vec::new(),
            topic: Layer::default(),
            writers: vec![(None, Layer::default())],
            readers: vec![(None, Layer::default())],
        }
    }
}

pub(crate) fn resolve(doc: &RawDoc, file: &str) -> Result<Vec<ResolvedLibrary>, QosError> {
    let mut resolver = Resolver {
        doc,
        file,
        memo: HashMap::new(),
    };
    let mut out = Vec::new();
    for (li, library) in doc.libraries.iter().enumerate() {
        let mut profiles = Vec::new();
        let mut warnings = Vec::new();
        for (pi, profile) in library.profiles.iter().enumerate() {
            let stacked = resolver.stacked(li, pi, &mut Vec::new())?;
            let resolved = finalize(
                file,
                &library.name,
                profile.name.as_str(),
                profile.line,
                stacked,
            )?;
            warnings.extend(one_sided(file, &resolved));
            profiles.push(resolved);
        }
        out.push(ResolvedLibrary {
            name: library.name.clone(),
            line: library.line,
            profiles,
            warnings,
        });
    }
    Ok(out)
}

struct Resolver<'a> {
    doc: &'a RawDoc,
    file: &'a str,
    memo: HashMap<(usize, usize), Stacked>,
}

impl Resolver<'_> {
    fn qualified(&self, (li, pi): (usize, usize)) -> String {
        let library = &self.doc.libraries[li];
        format!("{}::{}", library.name, library.profiles[pi].name)
    }

    /// Profile `pi` of library `li` stacked on its bases; `stack` holds the profiles being
    /// resolved further down the call chain, to catch cycles.
    fn stacked(
        &mut self,
        li: usize,
        pi: usize,
        stack: &mut Vec<(usize, usize)>,
    ) -> Result<Stacked, QosError> {
        if let Some(done) = self.memo.get(&(li, pi)) {
            return Ok(done.clone());
        }
        let doc = self.doc;
        let profile = &doc.libraries[li].profiles[pi];
        stack.push((li, pi));
        let base = match &profile.base {
            None => Stacked::root(),
            Some(base) => {
                let key = self.find_base(li, pi, &base.value, base.line)?;
                if let Some(start) = stack.iter().position(|&k| k == key) {
                    let mut names: Vec<String> =
                        stack[start..].iter().map(|&k| self.qualified(k)).collect();
                    names.push(self.qualified(key));
                    return Err(QosError::InheritanceCycle {
                        file: self.file.to_string(),
                        line: base.line,
                        chain: names.join(" -> "),
                    });
                }
                let mut stacked = self.stacked(key.0, key.1, stack)?;
                stacked.chain.insert(0, self.qualified(key));
                stacked
            }
        };
        stack.pop();
        let stacked = Stacked {
            chain: base.chain,
            topic: base.topic.over(&profile.topic),
            writers: combine(&base.writers, &profile.writers, &profile.topic),
            readers: combine(&base.readers, &profile.readers, &profile.topic),
        };
        self.memo.insert((li, pi), stacked.clone());
        Ok(stacked)
    }

    /// The profile a base_name names: `profile` in the same library, or `library::profile`.
    fn find_base(
        &self,
        li: usize,
        pi: usize,
        base: &str,
        line: u32,
    ) -> Result<(usize, usize), QosError> {
        let library = &self.doc.libraries[li];
        let missing = |reason: String| QosError::MissingBase {
            file: self.file.to_string(),
            line,
            profile: library.profiles[pi].name.clone(),
            base: base.to_string(),
            reason,
        };
        let (bl, name) = match base.split_once("::") {
            None => (li, base),
            Some((lib, name)) => {
                let Some(bl) = self.doc.libraries.iter().position(|l| l.name == lib) else {
                    let names: Vec<&str> =
                        self.doc.libraries.iter().map(|l| l.name.as_str()).collect();
                    return Err(missing(format!(
                        "this file has no QoS library '{lib}' (libraries: {})",
                        names.join(", ")
                    )));
                };
                (bl, name)
            }
        };
        let target = &self.doc.libraries[bl];
        match target.profiles.iter().position(|p| p.name == name) {
            Some(bp) => Ok((bl, bp)),
            None => {
                let names: Vec<&str> = target.profiles.iter().map(|p| p.name.as_str()).collect();
                Err(missing(format!(
                    "QoS library '{}' has no profile '{name}' (profiles: {})",
                    target.name,
                    names.join(", ")
                )))
            }
        }
    }
}

/// The entries of one endpoint kind after inheritance (see the module docs for the order).
fn combine(base: &Entries, own: &[RawEntry], topic: &Layer) -> Entries {
    let base_for = |filter: &Option<String>| {
        base.iter()
            .find(|(f, _)| f == filter)
            .or_else(|| base.iter().find(|(f, _)| f.is_none()))
            .map(|(_, layer)| *layer)
            .unwrap_or_default()
    };
    let general = own
        .iter()
        .find(|e| e.filter.is_none())
        .map(|e| e.layer)
        .unwrap_or_default();
    let mut out: Entries = Vec::new();
    // The profile's own filters first: they take precedence over its base's.
    for entry in own.iter().filter(|e| e.filter.is_some()) {
        let layer = base_for(&entry.filter)
            .over(topic)
            .over(&general)
            .over(&entry.layer);
        out.push((entry.filter.clone(), layer));
    }
    for (filter, layer) in base {
        if filter.is_some() && !own.iter().any(|e| &e.filter == filter) {
            out.push((filter.clone(), layer.over(topic).over(&general)));
        }
    }
    out.push((None, base_for(&None).over(topic).over(&general)));
    out
}

fn finalize(
    file: &str,
    library: &str,
    name: &str,
    line: u32,
    stacked: Stacked,
) -> Result<ResolvedProfile, QosError> {
    let context = |entity: String| Context {
        file,
        profile: name,
        profile_line: line,
        entity,
    };
    let label = |element: &str, filter: &Option<String>| match filter {
        Some(f) => format!("<{element} topic_filter='{f}'>"),
        None => format!("<{element}>"),
    };
    let topic = stacked
        .topic
        .finalize(Entity::Topic, &context("<topic_qos>".into()))?;
    let mut writer = Vec::new();
    for (filter, layer) in &stacked.writers {
        let qos = layer.finalize(Entity::Writer, &context(label("datawriter_qos", filter)))?;
        writer.push((filter.clone(), qos));
    }
    let mut reader = Vec::new();
    for (filter, layer) in &stacked.readers {
        let qos = layer.finalize(Entity::Reader, &context(label("datareader_qos", filter)))?;
        reader.push((filter.clone(), qos));
    }
    let profile = ResolvedProfile {
        name: name.to_string(),
        library: library.to_string(),
        line,
        base_chain: stacked.chain,
        topic,
        writer,
        reader,
    };
    Ok(profile)
}

/// The entries of `profile` whose writer and reader could not match each other, as warnings:
/// the file loads (a profile may serve one side only); [`mismatch`] refuses a use of both
/// sides for one topic.
fn one_sided(file: &str, profile: &ResolvedProfile) -> Vec<QosWarning> {
    let entry = |list: &[(Option<String>, EndpointQos)], filter: &Option<String>| {
        list.iter()
            .find(|(f, _)| f == filter)
            .or_else(|| list.iter().find(|(f, _)| f.is_none()))
            .map(|(_, q)| q.clone())
    };
    let mut filters: Vec<&Option<String>> = profile.writer.iter().map(|(f, _)| f).collect();
    for (f, _) in &profile.reader {
        if !filters.contains(&f) {
            filters.push(f);
        }
    }
    filters
        .into_iter()
        .filter_map(|filter| {
            let w = entry(&profile.writer, filter)?;
            let r = entry(&profile.reader, filter)?;
            Some(QosWarning {
                file: file.to_string(),
                line: profile.line,
                profile: profile.name.clone(),
                filter: filter.clone(),
                policy: mismatch(&w, &r)?,
            })
        })
        .collect()
}

/// Why a reader of QoS `r` would never match a writer of QoS `w` (DDS's requested-vs-offered
/// rules, as rustdds applies them): the policy, with both sides' values; None when they match.
pub(crate) fn mismatch(w: &EndpointQos, r: &EndpointQos) -> Option<String> {
    let id = w.to_rustdds().compliance_failure_wrt(&r.to_rustdds())?;
    let policy = snake_case(&format!("{id:?}"));
    let detail = match policy.as_str() {
        "reliability" => format!(" (writer {}, reader {})", w.reliability, r.reliability),
        "durability" => format!(" (writer {}, reader {})", w.durability, r.durability),
        "deadline" => format!(
            " (writer period {}, reader period {})",
            w.deadline
                .map_or("infinite".into(), super::policy::format_duration),
            r.deadline
                .map_or("infinite".into(), super::policy::format_duration)
        ),
        "ownership" => format!(" (writer {}, reader {})", w.ownership, r.ownership),
        "destination_order" => format!(
            " (writer {}, reader {})",
            w.destination_order, r.destination_order
        ),
        _ => String::new(),
    };
    Some(format!("{policy}{detail}"))
}

/// `LatencyBudget` -> `latency_budget`.
fn snake_case(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
