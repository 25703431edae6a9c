//! Where a sensor's samples go: a writer for each topic the sensor catalogue
//! (`convoy_core::sensor_catalogue`) lists for the sensor's kind, made for that topic's message
//! type, and the publish job that writes one sample's messages on them. Nothing here names a
//! kind: a new kind needs its catalogue entry and its model in `sampling.rs`, not a change here.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use convoy_core::dds::{Node, Publisher};
use convoy_core::messages::{visit_type, Message, MessageVisitor};
use convoy_core::scenario::SensorSpec;
use convoy_core::topics::{Topic, TopicClass};

use crate::dispatcher::Job;
use crate::sampling::{AnyMessage, Sample};
use crate::stages::ImageStage;

/// One sensor topic's writer, its message type erased.
trait Writer: Send + Sync {
    /// Writes one message of the topic's type and says whether that worked.
    fn write(&self, message: AnyMessage) -> bool;
    /// Waits (bounded) until every matched reader acknowledged what was written.
    fn wait_for_acknowledgments(&self, timeout: Duration) -> bool;
}

struct TypedWriter<M: Message>(Publisher<M>);

impl<M: Message> Writer for TypedWriter<M> {
    fn write(&self, message: AnyMessage) -> bool {
        let publisher = &self.0;
        let Ok(message) = message.downcast::<M>() else {
            let (topic, expected) = (publisher.topic(), M::TYPE_NAME);
            tracing::warn!(
                "{topic}: the sample is not a {expected} (sampling.rs and the sensor \
                 catalogue disagree)"
            );
            return false;
        };
        let written = publisher.write(*message);
        written.inspect_err(|e| tracing::warn!("{e}")).is_ok()
    }

    fn wait_for_acknowledgments(&self, timeout: Duration) -> bool {
        self.0.wait_for_acknowledgments(timeout)
    }
}

/// The writers of one sensor, one per output of its kind in catalogue order; None for an
/// output this sensor does not publish (a camera without depth).
pub(super) struct Output {
    writers: Arc<[Option<Box<dyn Writer>>]>,
}

impl Output {
    pub(super) fn create(node: &Node, agent: &str, spec: &SensorSpec) -> Result<Output> {
        let mut writers = Vec::new();
        for output in spec.kind.spec().outputs {
            let writer = (output.published)(spec).then(|| {
                let topic = output.topic_name(agent, &spec.id);
                visit_type(output.message, OpenWriter { node, topic })
                    .expect("the catalogue names convoy types only (its tests check)")
            });
            writers.push(writer.transpose()?);
        }
        Ok(Output {
            writers: writers.into(),
        })
    }

    /// Waits until `deadline` at most for every matched reader to acknowledge what this
    /// sensor wrote: a node about to stop calls it, so that a reader which lost the last
    /// samples still gets them repaired (a reliable writer that is gone repairs nothing).
    /// Whether all were acknowledged.
    pub(super) fn wait_for_acknowledgments(&self, deadline: Instant) -> bool {
        self.writers.iter().flatten().fold(true, |all, writer| {
            let left = deadline.saturating_duration_since(Instant::now());
            writer.wait_for_acknowledgments(left) && all
        })
    }

    /// The publish job for `sample`. It runs on a publishing thread and waits there for a
    /// camera's read-back, so the node goes on rendering the next camera or frame meanwhile;
    /// it writes every message of the sample, the main topic first, even when one fails.
    pub(super) fn job(&self, sample: Sample) -> Job {
        let writers = Arc::clone(&self.writers);
        Box::new(move || {
            let stages = sample.camera_stages();
            let messages = match sample.into_messages() {
                Ok(messages) => messages,
                Err(e) => {
                    tracing::warn!("camera frame lost: {e}");
                    return false;
                }
            };
            let start = std::time::Instant::now();
            let mut ok = true;
            for (writer, message) in writers.iter().zip(messages) {
                if let (Some(writer), Some(message)) = (writer, message) {
                    ok &= writer.write(message);
                }
            }
            if let Some((stages, size)) = stages {
                stages.image(size, ImageStage::Publish, start.elapsed());
            }
            ok
        })
    }
}

/// Opens the writer of one sensor topic, for the message type the catalogue names.
struct OpenWriter<'a> {
    node: &'a Node,
    topic: String,
}

impl MessageVisitor for OpenWriter<'_> {
    type Output = Result<Box<dyn Writer>>;

    fn visit<M: Message>(self) -> Result<Box<dyn Writer>> {
        let publisher = self
            .node
            .publisher(&Topic::<M>::new(self.topic, TopicClass::Sensor))?;
        Ok(Box::new(TypedWriter(publisher)))
    }
}
