//! What a recorder subscribes to: the topic patterns it is given ([`TopicFilter`]), the topics
//! discovery shows a writer of, and one type-erased reader per topic ([`RawSubscription`]) over
//! the typed subscriber, handing back each sample as the CDR bytes that crossed DDS.

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use convoy_core::dds::{
    discovery, wire, EndpointError, Node, ReaderStats, Subscriber, ViewInfo, WaitSet,
};
use convoy_core::messages::{visit_type, Image, Message, MessageVisitor, PointCloud, TYPE_NAMES};
use convoy_core::qos::glob_matches;
use convoy_core::topics::{KnownTopic, Topic, TopicClass};
use convoy_core::views::Viewable;

use super::{class_of, CDR_LE_HEADER};

/// How many samples per instance a recorder's reader keeps before it takes them: a burst of
/// that many (a tick, its states and a camera frame arriving while the recorder's thread is
/// not running) is not lost to a shallow profile.
pub const READER_DEPTH: u32 = 64;

/// The first part of every convoy topic name, and the families that follow it.
const ROOT: &str = "convoy/";
const FAMILIES: [&str; 8] = [
    "clock",
    "frame_done",
    "nodes",
    "assignments",
    "world",
    "bench",
    "agent",
    "sensor",
];

/// The topics a recorder takes: glob patterns (`*` any run of characters, `?` one), as
/// `--topics` gives them; every convoy topic when none is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicFilter {
    patterns: Vec<String>,
    default: bool,
}

impl TopicFilter {
    /// The pattern of every convoy topic.
    pub const ALL: &'static str = "convoy/*";

    /// A filter of `patterns`; none given means every convoy topic.
    pub fn new(patterns: Vec<String>) -> TopicFilter {
        if patterns.is_empty() {
            return TopicFilter {
                patterns: vec![Self::ALL.to_string()],
                default: true,
            };
        }
        TopicFilter {
            patterns,
            default: false,
        }
    }

    /// Whether the patterns were given (false: the default, every convoy topic).
    pub fn is_default(&self) -> bool {
        self.default
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether any pattern matches `topic`.
    pub fn matches(&self, topic: &str) -> bool {
        self.patterns.iter().any(|p| glob_matches(p, topic))
    }

    /// Whether a pattern names `topic` exactly, without wildcards (a topic left out unless
    /// asked for by name: the replayer's `convoy/nodes`).
    pub fn names(&self, topic: &str) -> bool {
        !self.default && self.patterns.iter().any(|p| p == topic)
    }

    /// The patterns that can never match a convoy topic (a typo, another system's names): the
    /// recorder warns that they record nothing.
    pub fn hopeless(&self) -> Vec<&str> {
        self.patterns
            .iter()
            .map(String::as_str)
            .filter(|p| hopeless(p))
            .collect()
    }
}

/// True when `pattern` matches no convoy topic: without wildcards, when it is not a convoy
/// topic name; with them, when the literal text before the first wildcard already leaves
/// `convoy/` or names no topic family.
pub fn hopeless(pattern: &str) -> bool {
    let literal_end = pattern.find(['*', '?']).unwrap_or(pattern.len());
    let literal = &pattern[..literal_end];
    if literal_end == pattern.len() {
        return KnownTopic::parse(pattern).is_err();
    }
    if literal.len() < ROOT.len() {
        return !ROOT.starts_with(literal);
    }
    let Some(rest) = literal.strip_prefix(ROOT) else {
        return true;
    };
    match rest.split_once('/') {
        Some((family, _)) => !FAMILIES.contains(&family),
        None => !FAMILIES.iter().any(|f| f.starts_with(rest)),
    }
}

/// One recorded sample: the CDR payload with its encapsulation header, its simulation time and
/// when it was received (nanoseconds since the Unix epoch).
#[derive(Debug, Clone)]
pub struct RawSample {
    /// The recorder's index of the subscription it came from.
    pub channel: usize,
    pub data: Vec<u8>,
    pub sim_time_ns: Option<u64>,
    pub receive_ns: u64,
}

/// A reader of one topic whose type is known only at run time (from discovery or the scenario).
pub trait RawSubscription {
    fn topic(&self) -> &str;
    fn type_name(&self) -> &'static str;
    fn class(&self) -> TopicClass;
    /// Registers the reader with the recorder's wait set.
    fn attach(&mut self, waitset: &mut WaitSet) -> std::io::Result<()>;
    /// Takes up to `max` samples (only when `waitset` says so, when given) into `out`, tagged
    /// with `channel`; returns how many.
    fn take_into(
        &mut self,
        waitset: Option<&WaitSet>,
        max: usize,
        channel: usize,
        out: &mut Vec<RawSample>,
    ) -> usize;
    /// Writers matched now.
    fn matched_writers(&self) -> usize;
    /// Samples a reliable writer sent that the reader never saw (see `ReaderStats::lost`).
    fn lost(&self) -> u64;
}

struct Typed<M: Message> {
    reader: Subscriber<M>,
    class: TopicClass,
    /// Samples that would not encode again (cannot happen for a decoded value; logged once).
    encode_errors: u64,
}

impl<M: Message> RawSubscription for Typed<M> {
    fn topic(&self) -> &str {
        self.reader.topic()
    }

    fn type_name(&self) -> &'static str {
        M::TYPE_NAME
    }

    fn class(&self) -> TopicClass {
        self.class
    }

    fn attach(&mut self, waitset: &mut WaitSet) -> std::io::Result<()> {
        self.reader.attach(waitset).map(|_| ())
    }

    fn take_into(
        &mut self,
        waitset: Option<&WaitSet>,
        max: usize,
        channel: usize,
        out: &mut Vec<RawSample>,
    ) -> usize {
        let taken = match waitset {
            Some(waitset) => self.reader.take_ready(waitset, max),
            None => self.reader.take(max),
        };
        let encoded = taken
            .iter()
            .map(|sample| (cdr_sample(&sample.value), sample.value.sim_time_ns()))
            .collect();
        self.record(encoded, channel, out)
    }

    fn matched_writers(&self) -> usize {
        self.reader.matched_writers()
    }

    fn lost(&self) -> u64 {
        ReaderStats::get(&self.reader.stats().lost)
    }
}

impl<M: Message> Typed<M> {
    /// Hands the samples taken, each encoded (or why not) with its simulation time, to `out`
    /// as `channel`'s; returns how many went. One that would not encode is logged once.
    fn record(&mut self, encoded: Vec<Encoded>, channel: usize, out: &mut Vec<RawSample>) -> usize {
        if encoded.is_empty() {
            return 0;
        }
        let receive_ns = now_ns();
        let mut count = 0;
        for (data, sim_time_ns) in encoded {
            match data {
                Ok(data) => {
                    out.push(RawSample {
                        channel,
                        data,
                        sim_time_ns,
                        receive_ns,
                    });
                    count += 1;
                }
                Err(e) => {
                    self.encode_errors += 1;
                    if self.encode_errors == 1 {
                        tracing::warn!(topic = %self.reader.topic(), "sample not recorded: {e}");
                    }
                }
            }
        }
        count
    }
}

/// A sample taken for the file: its MCAP message bytes (or why it would not encode) and its
/// simulation time.
type Encoded = (Result<Vec<u8>, String>, Option<u64>);

/// The sample as an MCAP message: the CDR encapsulation header, then the sample encoded
/// straight behind it.
fn cdr_sample<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, String> {
    let mut data = Vec::with_capacity(CDR_LE_HEADER.len());
    data.extend_from_slice(&CDR_LE_HEADER);
    wire::encode_append(value, &mut data).map_err(|e| e.to_string())?;
    Ok(data)
}

/// A reader of a large-sample type (images, clouds) that records each sample from a view: a
/// same-host writer's sample is copied once, from its shared-memory slot into the message the
/// recorder writes (decoding it and encoding it again cost two more 4 MB copies an image).
struct Viewed<M: Viewable>(Typed<M>);

impl<M: Viewable> RawSubscription for Viewed<M> {
    fn topic(&self) -> &str {
        self.0.topic()
    }

    fn type_name(&self) -> &'static str {
        M::TYPE_NAME
    }

    fn class(&self) -> TopicClass {
        self.0.class
    }

    fn attach(&mut self, waitset: &mut WaitSet) -> std::io::Result<()> {
        self.0.attach(waitset)
    }

    fn take_into(
        &mut self,
        waitset: Option<&WaitSet>,
        max: usize,
        channel: usize,
        out: &mut Vec<RawSample>,
    ) -> usize {
        let record =
            |_: ViewInfo, view: M::View<'_>| (cdr_sample(&view), M::view_sim_time_ns(&view));
        let taken = match waitset {
            Some(waitset) => self.0.reader.take_ready_views(waitset, max, record),
            None => self.0.reader.take_views(max, record),
        };
        self.0.record(taken, channel, out)
    }

    fn matched_writers(&self) -> usize {
        self.0.matched_writers()
    }

    fn lost(&self) -> u64 {
        self.0.lost()
    }
}

/// Nanoseconds since the Unix epoch, now (0 on a clock set before 1970).
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Opens a deep reader of one topic for its type.
struct Open<'a> {
    node: &'a Node,
    topic: &'a str,
    class: TopicClass,
}

impl MessageVisitor for Open<'_> {
    type Output = Result<Box<dyn RawSubscription>, EndpointError>;

    fn visit<M: Message>(self) -> Self::Output {
        Ok(Box::new(self.typed::<M>()?))
    }
}

impl Open<'_> {
    fn typed<M: Message>(&self) -> Result<Typed<M>, EndpointError> {
        let topic = Topic::<M>::new(self.topic, self.class);
        let reader = self.node.deep_subscriber(&topic, READER_DEPTH)?;
        Ok(Typed {
            reader,
            class: self.class,
            encode_errors: 0,
        })
    }
}

/// A reader of `topic` for the convoy type `type_name`; None when `topic` is not a convoy
/// topic or `type_name` not a convoy type.
pub fn open(
    node: &Node,
    topic: &str,
    type_name: &str,
) -> Option<Result<Box<dyn RawSubscription>, EndpointError>> {
    let class = class_of(topic)?;
    let open = Open { node, topic, class };
    // Images and clouds are recorded from views (the same-host ones straight from their slot).
    let viewed = |typed: Result<Box<dyn RawSubscription>, EndpointError>| Some(typed);
    match type_name {
        Image::TYPE_NAME => viewed(open.typed::<Image>().map(|t| Box::new(Viewed(t)) as _)),
        PointCloud::TYPE_NAME => {
            viewed(open.typed::<PointCloud>().map(|t| Box::new(Viewed(t)) as _))
        }
        _ => visit_type(type_name, open),
    }
}

/// The convoy type names as `'static` strings (discovery hands out owned ones).
pub fn convoy_type(name: &str) -> Option<&'static str> {
    TYPE_NAMES.iter().copied().find(|t| *t == name)
}

/// Topics that discovery shows a writer of, with the convoy type the writer announces, that
/// `filter` takes and that are not in `known` yet. A writer of another type under a convoy name
/// is left out and named once (`reported`).
pub fn discovered(
    node: &Node,
    filter: &TopicFilter,
    known: &BTreeSet<String>,
    reported: &mut BTreeSet<String>,
) -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    for topic in discovery::topics(node.participant()) {
        if topic.writers.is_empty() || known.contains(&topic.name) || !filter.matches(&topic.name) {
            continue;
        }
        if class_of(&topic.name).is_none() {
            continue;
        }
        let announced = topic.writers.iter().map(|w| w.type_name.as_str());
        match announced.clone().find_map(convoy_type) {
            Some(type_name) => found.push((topic.name.clone(), type_name)),
            None => {
                if reported.insert(topic.name.clone()) {
                    let types: Vec<&str> = announced.collect();
                    tracing::warn!(
                        "{}: not recorded: its writers announce {} (not a convoy type)",
                        topic.name,
                        types.join(", ")
                    );
                }
            }
        }
    }
    found
}

/// Counts what a set of subscriptions lost, for the recorder's drops.
pub fn lost_total(subscriptions: &[Box<dyn RawSubscription>]) -> u64 {
    subscriptions.iter().map(|s| s.lost()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_filter_takes_every_convoy_topic() {
        let all = TopicFilter::new(Vec::new());
        assert!(all.is_default());
        assert!(all.matches("convoy/clock"));
        assert!(all.matches("convoy/sensor/ego/front_camera"));
        assert!(!all.matches("rt/clock"));
        assert!(all.hopeless().is_empty());
        assert!(!all.names("convoy/nodes"));
    }

    #[test]
    fn patterns_that_match_no_convoy_topic_are_hopeless() {
        for ok in [
            "convoy/clock",
            "convoy/agent/*/state",
            "convoy/sensor/ego/*",
            "*",
            "conv*",
            "convoy/ag*",
            "*/state",
        ] {
            assert!(!hopeless(ok), "{ok} called hopeless");
        }
        for bad in [
            "rt/clock",
            "convoy/agnet/*",
            "convoy/clocks",
            "nope/*",
            "convoy/x*",
        ] {
            assert!(hopeless(bad), "{bad} not called hopeless");
        }
        let filter = TopicFilter::new(vec!["convoy/nodes".into(), "rt/*".into()]);
        assert_eq!(filter.hopeless(), ["rt/*"]);
        assert!(filter.names("convoy/nodes"));
    }
}
