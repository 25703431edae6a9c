//! QoS as data: OMG DDS-XML QoS libraries, loaded and resolved into one profile per topic class
//! (DESIGN.md, "QoS as data").
//!
//! A run selects one library of one file (`--qos FILE[::LIBRARY]`, [`QosSpec`]); each topic
//! class names a profile in it ([`crate::topics::TopicClass::profile_name`]); a profile gives a
//! topic QoS and writer/reader QoS, possibly per topic-name glob ([`ResolvedProfile`]). The
//! built-in default is `qos/convoy.xml` ([`QosSet::builtin`]).
//!
//! Rules (see [`parse`], [`layer`] and [`resolve`] for the details):
//! - every policy the loader accepts is applied, by rustdds or by convoy itself; everything
//!   else in a file (an unknown or unsupported policy, a policy where DDS does not allow it, a
//!   bad value) is an error that says `file:line: message`: never dropped silently;
//! - inheritance (`base_name="profile"` or `"library::profile"`) stacks per leaf: base first,
//!   then `topic_qos` (applies to writers and readers), then `datawriter_qos`/`datareader_qos`;
//! - [`EndpointQos::to_rustdds`] always sets history and resource limits, deriving the limits
//!   from the history where the file gives none, because rustdds's defaults silently drop
//!   reliable samples past its small cache;
//! - a profile whose own writers and readers could not match each other (say BEST_EFFORT
//!   writers, RELIABLE readers) loads, as in other DDS implementations, with a warning that
//!   names `file:line` and the profile ([`QosWarning`], [`QosSet::warnings`]): it may be meant
//!   for writers only. Where convoy uses it for both ends of one topic (convoy creates a reader
//!   of a topic: convoy writes every topic it reads, with the same file) that is an error
//!   naming `file:line`, the profile and the topic ([`QosSet::check_both_ends`]), never a reader
//!   that silently waits forever.
//!
//! Defaults for what a file leaves unset are DDS 1.4's per entity: readers and topics
//! BEST_EFFORT, writers RELIABLE (100 ms max_blocking_time), VOLATILE, KEEP_LAST 1.

mod error;
mod glob;
mod layer;
mod parse;
mod policy;
mod resolve;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;

pub use error::{QosError, QosWarning};
pub use glob::glob_matches;
pub use policy::{
    format_duration, DestinationOrder, Durability, EndpointQos, History, Liveliness,
    LivelinessKind, Ownership, Reliability, ResourceLimits, DEFAULT_MAX_BLOCKING_TIME,
    DEFAULT_MAX_INSTANCES, INFINITE, KEEP_ALL_MAX_SAMPLES, LENGTH_UNLIMITED,
};

use crate::topics::TopicClass;

/// The shipped defaults; `QosSet::builtin` parses them (a unit test guards that it can).
const BUILTIN_XML: &str = include_str!("../../../../qos/convoy.xml");
const BUILTIN_LABEL: &str = "qos/convoy.xml";
const BUILTIN_LIBRARY: &str = "convoy";

/// Which QoS library a run uses: `FILE` or `FILE::LIBRARY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosSpec {
    pub path: PathBuf,
    /// None: the file's only library (a file with several must be given one).
    pub library: Option<String>,
}

impl QosSpec {
    /// Splits at the last `::`; an empty library part means none. Never fails: use `FromStr`
    /// (what clap calls) to refuse empty parts.
    pub fn parse(s: &str) -> QosSpec {
        match s.rsplit_once("::") {
            Some((path, library)) => QosSpec {
                path: PathBuf::from(path),
                library: Some(library.to_string()).filter(|l| !l.is_empty()),
            },
            None => QosSpec {
                path: PathBuf::from(s),
                library: None,
            },
        }
    }
}

impl FromStr for QosSpec {
    type Err = QosError;

    fn from_str(s: &str) -> Result<QosSpec, QosError> {
        let bad = |reason: &str| QosError::BadSpec {
            spec: s.to_string(),
            reason: reason.to_string(),
        };
        if s.trim().is_empty() {
            return Err(bad("it is empty"));
        }
        if let Some((path, library)) = s.rsplit_once("::") {
            if path.is_empty() {
                return Err(bad("the file part is empty"));
            }
            if library.is_empty() {
                return Err(bad("the library part after '::' is empty"));
            }
        }
        Ok(QosSpec::parse(s))
    }
}

impl fmt::Display for QosSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(library) = &self.library {
            write!(f, "::{library}")?;
        }
        Ok(())
    }
}

/// One profile after inheritance, with every policy resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedProfile {
    /// e.g. "clock"
    pub name: String,
    pub library: String,
    /// The line of its `<qos_profile>`.
    pub line: u32,
    /// The bases, nearest first, each as `library::profile`.
    pub base_chain: Vec<String>,
    /// topic_qos after inheritance (for `create_topic`).
    pub topic: EndpointQos,
    /// (topic_filter, qos): the profile's own filters first, then its bases', then the
    /// unfiltered entry (None), which is always present.
    pub writer: Vec<(Option<String>, EndpointQos)>,
    pub reader: Vec<(Option<String>, EndpointQos)>,
}

impl ResolvedProfile {
    /// The writer QoS for `topic`: the first entry whose topic_filter glob matches, else the
    /// unfiltered one, else the topic QoS.
    pub fn writer_for(&self, topic: &str) -> &EndpointQos {
        select(&self.writer, topic).unwrap_or(&self.topic)
    }

    /// The reader QoS for `topic`, chosen as in [`ResolvedProfile::writer_for`].
    pub fn reader_for(&self, topic: &str) -> &EndpointQos {
        select(&self.reader, topic).unwrap_or(&self.topic)
    }
}

fn select<'a>(
    entries: &'a [(Option<String>, EndpointQos)],
    topic: &str,
) -> Option<&'a EndpointQos> {
    entries
        .iter()
        .find(|(f, _)| f.as_deref().is_some_and(|glob| glob_matches(glob, topic)))
        .or_else(|| entries.iter().find(|(f, _)| f.is_none()))
        .map(|(_, qos)| qos)
}

/// The selected library of one QoS file, resolved.
#[derive(Debug, Clone)]
pub struct QosSet {
    file: String,
    library: String,
    /// "FILE::LIBRARY", kept so that `source()` can lend it.
    source: String,
    library_line: u32,
    profiles: Vec<ResolvedProfile>,
    libraries: Vec<String>,
    /// The library's profiles whose writers and readers could not match each other.
    warnings: Vec<QosWarning>,
    /// The whole DDS-XML text the set was resolved from, shared by the file's libraries.
    text: std::sync::Arc<str>,
}

impl QosSet {
    /// Reads and resolves `spec`'s file and selects its library.
    pub fn load(spec: &QosSpec) -> Result<QosSet, QosError> {
        let (text, label) = read(&spec.path)?;
        QosSet::from_str(&text, &label, spec.library.as_deref())
    }

    /// Every library of `spec`'s file (or just the one it names), for `convoy qos show FILE`
    /// on a file that holds several.
    pub fn load_all(spec: &QosSpec) -> Result<Vec<QosSet>, QosError> {
        let (text, label) = read(&spec.path)?;
        match &spec.library {
            Some(library) => Ok(vec![QosSet::from_str(&text, &label, Some(library))?]),
            None => QosSet::all_from_str(&text, &label),
        }
    }

    /// Resolves `text` (called `file_label` in messages) and selects `library`, or the only
    /// library when None. The whole file is checked whichever library is selected; the selected
    /// library's warnings are logged.
    pub fn from_str(
        text: &str,
        file_label: &str,
        library: Option<&str>,
    ) -> Result<QosSet, QosError> {
        let (sets, root_line) = resolve_text(text, file_label)?;
        let available = sets
            .iter()
            .map(|s| s.library.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let count = sets.len();
        let mut sets = sets.into_iter();
        let selected = match library {
            Some(wanted) => {
                sets.find(|s| s.library == wanted)
                    .ok_or_else(|| QosError::UnknownLibrary {
                        file: file_label.to_string(),
                        line: root_line,
                        library: wanted.to_string(),
                        available,
                    })
            }
            None if count > 1 => Err(QosError::AmbiguousLibrary {
                file: file_label.to_string(),
                line: root_line,
                available,
            }),
            None => sets.next().ok_or_else(|| QosError::NoLibrary {
                file: file_label.to_string(),
                line: root_line,
            }),
        }?;
        selected.warn();
        Ok(selected)
    }

    /// Every library of `text`, each resolved, in file order.
    pub fn all_from_str(text: &str, file_label: &str) -> Result<Vec<QosSet>, QosError> {
        let (sets, root_line) = resolve_text(text, file_label)?;
        if sets.is_empty() {
            return Err(QosError::NoLibrary {
                file: file_label.to_string(),
                line: root_line,
            });
        }
        for set in &sets {
            set.warn();
        }
        Ok(sets)
    }

    /// Logs the warnings of this library, once per load.
    fn warn(&self) {
        for warning in &self.warnings {
            tracing::warn!("{warning}");
        }
    }

    /// The library's profiles whose writers and readers could not match each other: loaded,
    /// and usable for one side ([`QosWarning`]).
    pub fn warnings(&self) -> &[QosWarning] {
        &self.warnings
    }

    /// Refuses to use `class`'s profile for both the writers and the readers of `topic` where
    /// they could not match each other: the error names `file:line`, the profile, the topic and
    /// the policy. A node checks this when it creates a reader ([`crate::dds::Node`]): convoy
    /// writes every topic it reads, with the same file, so a reader is where both ends meet.
    pub fn check_both_ends(&self, class: TopicClass, topic: &str) -> Result<(), QosError> {
        let profile = self.for_class(class)?;
        match resolve::mismatch(profile.writer_for(topic), profile.reader_for(topic)) {
            None => Ok(()),
            Some(policy) => Err(QosError::Incompatible {
                file: self.file.clone(),
                line: profile.line,
                profile: profile.name.clone(),
                topic: topic.to_string(),
                policy,
            }),
        }
    }

    /// The shipped defaults: library "convoy" of qos/convoy.xml, compiled in.
    pub fn builtin() -> QosSet {
        static BUILTIN: OnceLock<QosSet> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                match QosSet::from_str(BUILTIN_XML, BUILTIN_LABEL, Some(BUILTIN_LIBRARY)) {
                    Ok(set) => set,
                    // The file is part of the build; the builtin unit test keeps it valid.
                    Err(e) => panic!("the built-in QoS file is broken: {e}"),
                }
            })
            .clone()
    }

    /// `FILE::LIBRARY`, e.g. "qos/convoy.xml::convoy".
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn library(&self) -> &str {
        &self.library
    }

    /// The file this set was loaded from, as messages name it.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The DDS-XML text this set was loaded from (the built-in file's for the defaults): what a
    /// recording keeps so that a replay restores the same QoS with
    /// `QosSet::from_str(text, label, Some(library))`.
    pub fn file_text(&self) -> &str {
        &self.text
    }

    /// The profile called `name`; the error names file, library, the profile and those there
    /// are.
    pub fn profile(&self, name: &str) -> Result<&ResolvedProfile, QosError> {
        self.profiles
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| QosError::UnknownProfile {
                file: self.file.clone(),
                line: self.library_line,
                library: self.library.clone(),
                profile: name.to_string(),
                available: self
                    .profiles
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The profile a topic class names.
    pub fn for_class(&self, class: TopicClass) -> Result<&ResolvedProfile, QosError> {
        self.profile(class.profile_name())
    }

    /// The profiles in file order.
    pub fn profiles(&self) -> impl Iterator<Item = &ResolvedProfile> {
        self.profiles.iter()
    }

    /// Every library name in the file, in file order.
    pub fn libraries(&self) -> &[String] {
        &self.libraries
    }
}

impl fmt::Display for QosSet {
    /// What `convoy qos show` prints: per profile its base chain and every resolved policy of
    /// its topic, writer and reader QoS (each filtered entry separately), one per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "QoS library {}", self.source)?;
        if self.libraries.len() > 1 {
            writeln!(f, "(libraries in this file: {})", self.libraries.join(", "))?;
        }
        for profile in &self.profiles {
            writeln!(f)?;
            writeln!(f, "profile {} (line {})", profile.name, profile.line)?;
            if profile.base_chain.is_empty() {
                writeln!(f, "  base: none")?;
            } else {
                writeln!(f, "  base: {}", profile.base_chain.join(" -> "))?;
            }
            writeln!(f, "  topic:")?;
            write!(f, "{:4}", profile.topic)?;
            for (kind, entries) in [("writer", &profile.writer), ("reader", &profile.reader)] {
                for (filter, qos) in entries {
                    match filter {
                        Some(glob) => writeln!(f, "  {kind} (topic_filter '{glob}'):")?,
                        None if entries.len() > 1 => writeln!(f, "  {kind} (other topics):")?,
                        None => writeln!(f, "  {kind}:")?,
                    }
                    write!(f, "{qos:4}")?;
                }
            }
        }
        Ok(())
    }
}

fn read(path: &Path) -> Result<(String, String), QosError> {
    let label = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((text, label)),
        Err(reason) => Err(QosError::Io {
            file: label,
            reason,
        }),
    }
}

/// Parses and resolves a whole file into one set per library, plus the root element's line.
fn resolve_text(text: &str, file_label: &str) -> Result<(Vec<QosSet>, u32), QosError> {
    let doc = parse::parse(text, file_label)?;
    let libraries = resolve::resolve(&doc, file_label)?;
    let names: Vec<String> = libraries.iter().map(|l| l.name.clone()).collect();
    let shared: std::sync::Arc<str> = text.into();
    let sets = libraries
        .into_iter()
        .map(|l| QosSet {
            file: file_label.to_string(),
            source: format!("{file_label}::{}", l.name),
            library: l.name,
            library_line: l.line,
            profiles: l.profiles,
            libraries: names.clone(),
            warnings: l.warnings,
            text: std::sync::Arc::clone(&shared),
        })
        .collect();
    Ok((sets, doc.root_line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_file_loads_with_every_class_profile() {
        let set = match QosSet::from_str(BUILTIN_XML, BUILTIN_LABEL, Some(BUILTIN_LIBRARY)) {
            Ok(set) => set,
            Err(e) => panic!("{e}"),
        };
        for class in TopicClass::ALL {
            assert!(set.for_class(class).is_ok(), "no profile for {class}");
        }
        let builtin = QosSet::builtin();
        assert_eq!(builtin.source(), "qos/convoy.xml::convoy");
        assert_eq!(builtin.library(), "convoy");
        assert_eq!(builtin.libraries(), ["convoy".to_string()]);
        assert_eq!(builtin.file_text(), BUILTIN_XML);
    }

    #[test]
    fn spec_round_trips() {
        let spec = QosSpec::parse("qos/experiments.xml::best_effort");
        assert_eq!(spec.path, PathBuf::from("qos/experiments.xml"));
        assert_eq!(spec.library.as_deref(), Some("best_effort"));
        assert_eq!(spec.to_string(), "qos/experiments.xml::best_effort");
        let plain = QosSpec::parse("my.xml");
        assert_eq!(plain.library, None);
        assert_eq!(plain.to_string(), "my.xml");
        assert_eq!(
            "a.xml::lib".parse::<QosSpec>().ok(),
            Some(QosSpec::parse("a.xml::lib"))
        );
        assert_eq!(QosSpec::parse("a.xml::").library, None);
        for bad in ["", "a.xml::", "::lib"] {
            assert!(bad.parse::<QosSpec>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn filters_select_the_first_matching_entry() {
        let qos = |depth| EndpointQos {
            history: History::KeepLast(depth),
            ..EndpointQos::default()
        };
        let profile = ResolvedProfile {
            name: "p".into(),
            library: "l".into(),
            line: 1,
            base_chain: vec![],
            topic: qos(1),
            writer: vec![
                (Some("convoy/sensor/ego/*".into()), qos(2)),
                (Some("convoy/sensor/*".into()), qos(3)),
                (None, qos(4)),
            ],
            reader: vec![(Some("convoy/agent/?/state".into()), qos(5))],
        };
        assert_eq!(
            profile.writer_for("convoy/sensor/ego/cam").history,
            History::KeepLast(2)
        );
        assert_eq!(
            profile.writer_for("convoy/sensor/car/cam").history,
            History::KeepLast(3)
        );
        assert_eq!(
            profile.writer_for("convoy/clock").history,
            History::KeepLast(4)
        );
        assert_eq!(
            profile.reader_for("convoy/agent/a/state").history,
            History::KeepLast(5)
        );
        // No unfiltered reader entry: the topic QoS.
        assert_eq!(
            profile.reader_for("convoy/agent/ab/state").history,
            History::KeepLast(1)
        );
    }
}
