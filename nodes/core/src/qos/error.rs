//! Everything that can be wrong with a QoS file, each said as `file:line: message`, and what a
//! file may hold although some uses of it cannot work ([`QosWarning`]).
//!
//! The line is where the user has to look: the element, attribute or value at fault (for a
//! base_name problem, the `base_name` attribute). Only an unreadable file (no line to give) and
//! a malformed `--qos` argument (no file yet) lack one.

/// Why a QoS file, library or profile cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum QosError {
    /// The reason is in the message, not a `source()`: the nodes print an error with its
    /// chain of sources, which said the reason twice.
    #[error("{file}: cannot read QoS file: {reason}")]
    Io {
        file: String,
        reason: std::io::Error,
    },

    #[error("{file}:{line}: malformed XML: {message}")]
    Xml {
        file: String,
        line: u32,
        message: String,
    },

    /// `what` is "policy" inside a `*_qos` element, "element" elsewhere.
    #[error("{file}:{line}: unknown {what} '{element}' in <{parent}> (known: {known})")]
    UnknownElement {
        file: String,
        line: u32,
        what: &'static str,
        element: String,
        parent: String,
        known: String,
    },

    #[error("{file}:{line}: unknown attribute '{attribute}' on <{element}> (known: {known})")]
    UnknownAttribute {
        file: String,
        line: u32,
        attribute: String,
        element: String,
        known: String,
    },

    #[error("{file}:{line}: <{element}> needs a '{attribute}' attribute")]
    MissingAttribute {
        file: String,
        line: u32,
        attribute: String,
        element: String,
    },

    #[error("{file}:{line}: unexpected text '{text}' in <{element}>")]
    UnexpectedText {
        file: String,
        line: u32,
        element: String,
        text: String,
    },

    #[error("{file}:{line}: bad value '{value}' for {element}: expected {expected}")]
    BadValue {
        file: String,
        line: u32,
        /// `<depth> in <history>`
        element: String,
        value: String,
        expected: String,
    },

    #[error(
        "{file}:{line}: bad value '{value}' for attribute '{attribute}' of <{element}>: expected {expected}"
    )]
    BadAttribute {
        file: String,
        line: u32,
        attribute: String,
        element: String,
        value: String,
        expected: &'static str,
    },

    #[error(
        "{file}:{line}: policy '{policy}' in <{qos}> is not supported by convoy (rustdds cannot apply it and convoy does not enforce it): remove it"
    )]
    UnsupportedPolicy {
        file: String,
        line: u32,
        policy: String,
        qos: String,
    },

    /// A DDS-XML feature convoy does not implement (said in `what`).
    #[error("{file}:{line}: {what} is not supported by convoy")]
    Unsupported {
        file: String,
        line: u32,
        what: String,
    },

    #[error("{file}:{line}: policy '{policy}' is not allowed in <{qos}> (DDS allows it in {allowed_in})")]
    MisplacedPolicy {
        file: String,
        line: u32,
        policy: String,
        qos: String,
        allowed_in: String,
    },

    #[error("{file}:{line}: duplicate <{element}> in <{parent}> (first at line {first_line})")]
    DuplicateElement {
        file: String,
        line: u32,
        element: String,
        parent: String,
        first_line: u32,
    },

    #[error("{file}:{line}: duplicate QoS library '{library}' (first at line {first_line})")]
    DuplicateLibrary {
        file: String,
        line: u32,
        library: String,
        first_line: u32,
    },

    #[error(
        "{file}:{line}: duplicate profile '{profile}' in QoS library '{library}' (first at line {first_line})"
    )]
    DuplicateProfile {
        file: String,
        line: u32,
        library: String,
        profile: String,
        first_line: u32,
    },

    #[error("{file}:{line}: profile '{profile}' has base_name '{base}', which names no profile: {reason}")]
    MissingBase {
        file: String,
        line: u32,
        profile: String,
        base: String,
        reason: String,
    },

    #[error("{file}:{line}: inheritance cycle through base_name: {chain}")]
    InheritanceCycle {
        file: String,
        line: u32,
        /// `lib::a -> lib::b -> lib::a`
        chain: String,
    },

    #[error("{file}:{line}: no <qos_library> in this file")]
    NoLibrary { file: String, line: u32 },

    #[error(
        "{file}:{line}: this file holds several QoS libraries ({available}): choose one with {file}::LIBRARY"
    )]
    AmbiguousLibrary {
        file: String,
        line: u32,
        available: String,
    },

    #[error("{file}:{line}: no QoS library '{library}' in this file (libraries: {available})")]
    UnknownLibrary {
        file: String,
        line: u32,
        library: String,
        available: String,
    },

    #[error(
        "{file}:{line}: QoS library '{library}' has no profile '{profile}' (profiles: {available})"
    )]
    UnknownProfile {
        file: String,
        line: u32,
        library: String,
        profile: String,
        available: String,
    },

    /// Policies that contradict each other once inheritance is applied (DDS's
    /// INCONSISTENT_POLICY), e.g. a history depth above max_samples_per_instance.
    #[error("{file}:{line}: profile '{profile}', {entity}: {message}")]
    Inconsistent {
        file: String,
        line: u32,
        profile: String,
        /// `datawriter_qos`, `datareader_qos [topic_filter 'x']`, `topic_qos`
        entity: String,
        message: String,
    },

    /// A profile whose writers and readers could never match each other (DDS's
    /// INCOMPATIBLE_QOS), used for both ends of one topic: convoy writes every topic it reads,
    /// with the same file, so its reader would wait forever (in a lockstep graph, a hang). The
    /// file itself loads (with a [`QosWarning`]): a profile may serve one side only.
    #[error(
        "{file}:{line}: profile '{profile}' is used for both the writers and the readers of topic '{topic}', and they would never match: the reader requests more than the writer offers for {policy}"
    )]
    Incompatible {
        file: String,
        line: u32,
        profile: String,
        topic: String,
        policy: String,
    },

    #[error("bad QoS spec '{spec}': {reason} (expected FILE or FILE::LIBRARY)")]
    BadSpec { spec: String, reason: String },
}

/// A profile whose writers and readers could never match each other (DDS's INCOMPATIBLE_QOS),
/// e.g. BEST_EFFORT writers and RELIABLE readers. Other DDS implementations load such a file,
/// and so does convoy: a profile may be meant for writers only (their readers elsewhere, with
/// their own QoS). It is said when the file loads; a use of the profile for both ends of one
/// topic is refused then ([`QosError::Incompatible`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosWarning {
    pub file: String,
    /// The line of the profile's `<qos_profile>`.
    pub line: u32,
    pub profile: String,
    /// The `topic_filter` of the writer and reader entries that cannot match, if any.
    pub filter: Option<String>,
    /// The policy the reader asks more of, with both sides' values.
    pub policy: String,
}

impl std::fmt::Display for QosWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: profile '{}'", self.file, self.line, self.profile)?;
        if let Some(filter) = &self.filter {
            write!(f, " (topic_filter '{filter}')")?;
        }
        write!(
            f,
            ": its readers would never match its writers: the reader requests more than the \
             writer offers for {}. Fine for a profile used for writers only (or readers only); \
             a run that uses it for both ends of one topic is refused",
            self.policy
        )
    }
}

impl QosError {
    /// The line the error points at, where it has one.
    pub fn line(&self) -> Option<u32> {
        use QosError::*;
        match self {
            Io { .. } | BadSpec { .. } => None,
            Xml { line, .. }
            | UnknownElement { line, .. }
            | UnknownAttribute { line, .. }
            | MissingAttribute { line, .. }
            | UnexpectedText { line, .. }
            | BadValue { line, .. }
            | BadAttribute { line, .. }
            | UnsupportedPolicy { line, .. }
            | Unsupported { line, .. }
            | MisplacedPolicy { line, .. }
            | DuplicateElement { line, .. }
            | DuplicateLibrary { line, .. }
            | DuplicateProfile { line, .. }
            | MissingBase { line, .. }
            | InheritanceCycle { line, .. }
            | NoLibrary { line, .. }
            | AmbiguousLibrary { line, .. }
            | UnknownLibrary { line, .. }
            | UnknownProfile { line, .. }
            | Inconsistent { line, .. }
            | Incompatible { line, .. } => Some(*line),
        }
    }

    /// The file the error is about (None for a malformed `--qos` argument).
    pub fn file(&self) -> Option<&str> {
        use QosError::*;
        match self {
            BadSpec { .. } => None,
            Io { file, .. }
            | Xml { file, .. }
            | UnknownElement { file, .. }
            | UnknownAttribute { file, .. }
            | MissingAttribute { file, .. }
            | UnexpectedText { file, .. }
            | BadValue { file, .. }
            | BadAttribute { file, .. }
            | UnsupportedPolicy { file, .. }
            | Unsupported { file, .. }
            | MisplacedPolicy { file, .. }
            | DuplicateElement { file, .. }
            | DuplicateLibrary { file, .. }
            | DuplicateProfile { file, .. }
            | MissingBase { file, .. }
            | InheritanceCycle { file, .. }
            | NoLibrary { file, .. }
            | AmbiguousLibrary { file, .. }
            | UnknownLibrary { file, .. }
            | UnknownProfile { file, .. }
            | Inconsistent { file, .. }
            | Incompatible { file, .. } => Some(file),
        }
    }
}

#[cfg(test)]
mod tests {
    /// Other errors embed QosError (`#[from]`), and clippy's result_large_err flags any error
    /// of 128 bytes or more: keep the largest variant below that.
    #[test]
    fn stays_small_enough_to_embed() {
        assert!(std::mem::size_of::<super::QosError>() <= 120);
    }
}
