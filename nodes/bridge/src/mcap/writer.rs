//! The recorder's file side: the MCAP writer thread. It owns the file, adds a schema per convoy
//! type and a channel per topic as the DDS side announces them, writes each sample with its
//! receive and simulation times, closes and flushes a chunk at least once a second, and
//! finishes the file (summary, indexes) when the DDS side hangs up.

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use ::mcap::records::{MessageHeader, Metadata};
use ::mcap::write::NoSeek;
use anyhow::{Context as _, Result};
use convoy_core::messages::IDL;
use convoy_core::qos::QosSet;
use convoy_core::topics::TopicClass;

use super::record::Compression;
use super::subscription::RawSample;
use super::{channel_metadata, qos_metadata, META_QOS, PROFILE};
use super::{MESSAGE_ENCODING, SCHEMA_ENCODING};

/// The longest the file goes without a closed chunk and a flush to the disk.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// What one topic got in the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicCount {
    pub messages: u64,
    pub bytes: u64,
}

/// What a recording wrote.
#[derive(Debug, Clone, Default)]
pub struct RecordSummary {
    pub messages: u64,
    pub bytes: u64,
    /// Samples the file side could not take in time, plus samples the readers never saw.
    pub drops: u64,
    pub topics: BTreeMap<String, TopicCount>,
}

/// What the DDS side sends the writer thread: a new topic (always before its first sample),
/// or a sample.
pub(super) enum ToFile {
    Channel {
        index: usize,
        topic: String,
        type_name: &'static str,
        class: TopicClass,
    },
    Sample(RawSample),
}

/// Counters both sides update and the progress line and beacon read.
#[derive(Debug, Default)]
pub(super) struct Progress {
    pub(super) messages: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) queue_drops: AtomicU64,
}

pub(super) type McapWriter = ::mcap::Writer<NoSeek<BufWriter<std::fs::File>>>;

/// Creates the file and writes its header and the run's QoS library.
pub(super) fn open_file(path: &Path, compression: Compression, qos: &QosSet) -> Result<McapWriter> {
    // A recording's folder (target/demo/ for the demo) is made when missing.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "cannot create the folder of the recording {}",
                path.display()
            )
        })?;
    }
    let file = std::fs::File::create(path)
        .with_context(|| format!("cannot create the recording {}", path.display()))?;
    let compression = match compression {
        Compression::Zstd => Some(::mcap::Compression::Zstd),
        Compression::Lz4 => Some(::mcap::Compression::Lz4),
        Compression::None => None,
    };
    // Chunks are built in memory and written whole (no seeking back into the file): a file
    // cut short anywhere ends after its last complete chunk plus at most a partial one that a
    // reader recognises as such.
    let options = ::mcap::WriteOptions::new()
        .profile(PROFILE)
        .library(concat!("convoy record ", env!("CARGO_PKG_VERSION")))
        .compression(compression)
        .disable_seeking(true);
    let mut writer = options
        .create(NoSeek::new(BufWriter::new(file)))
        .map_err(|e| file_error(path, "cannot start", e))?;
    let metadata = Metadata {
        name: META_QOS.to_string(),
        metadata: qos_metadata(qos),
    };
    writer
        .write_metadata(&metadata)
        .map_err(|e| file_error(path, "cannot write to", e))?;
    Ok(writer)
}

/// An MCAP error on `path`, with the operating system's reason where there is one (the disk
/// is full, say) rather than the library's generic I/O message.
fn file_error(path: &Path, what: &str, e: ::mcap::McapError) -> anyhow::Error {
    let reason = match &e {
        ::mcap::McapError::Io(io) if io.kind() == std::io::ErrorKind::StorageFull => {
            format!("{io} (the disk is full)")
        }
        ::mcap::McapError::Io(io) => io.to_string(),
        other => other.to_string(),
    };
    anyhow::anyhow!(
        "{what} the recording {}: {reason}; the file holds what was written before, readable up \
         to its last complete chunk",
        path.display()
    )
}

/// The writer thread: channels and samples into the file until the channel closes, then the
/// file's summary. Counts what it wrote in `progress`.
pub(super) fn write_file(
    mut writer: McapWriter,
    rx: Receiver<ToFile>,
    path: &Path,
    qos: &QosSet,
    progress: &Progress,
) -> Result<RecordSummary> {
    let mut schemas: BTreeMap<&'static str, u16> = BTreeMap::new();
    // Subscription index -> (channel id, topic, next sequence number).
    let mut channels: Vec<Option<(u16, String, u32)>> = Vec::new();
    let mut summary = RecordSummary::default();
    let mut last_flush = Instant::now();
    let fail = |what: &str, e| file_error(path, what, e);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(ToFile::Channel {
                index,
                topic,
                type_name,
                class,
            }) => {
                let schema = match schemas.get(type_name) {
                    Some(&id) => id,
                    None => {
                        let id = writer
                            .add_schema(type_name, SCHEMA_ENCODING, IDL.as_bytes())
                            .map_err(|e| fail("cannot write to", e))?;
                        schemas.insert(type_name, id);
                        id
                    }
                };
                let metadata = channel_metadata(type_name, class, qos);
                let id = writer
                    .add_channel(schema, &topic, MESSAGE_ENCODING, &metadata)
                    .map_err(|e| fail("cannot write to", e))?;
                if channels.len() <= index {
                    channels.resize(index + 1, None);
                }
                summary.topics.entry(topic.clone()).or_default();
                channels[index] = Some((id, topic, 0));
            }
            Ok(ToFile::Sample(sample)) => {
                let Some(Some((id, topic, sequence))) = channels.get_mut(sample.channel) else {
                    continue;
                };
                let header = MessageHeader {
                    channel_id: *id,
                    sequence: *sequence,
                    log_time: sample.receive_ns,
                    publish_time: sample.sim_time_ns.unwrap_or(sample.receive_ns),
                };
                *sequence = sequence.wrapping_add(1);
                writer
                    .write_to_known_channel(&header, &sample.data)
                    .map_err(|e| fail("cannot write to", e))?;
                let bytes = sample.data.len() as u64;
                let count = summary.topics.entry(topic.clone()).or_default();
                count.messages += 1;
                count.bytes += bytes;
                summary.messages += 1;
                summary.bytes += bytes;
                progress.messages.fetch_add(1, Ordering::Relaxed);
                progress.bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if last_flush.elapsed() >= FLUSH_EVERY {
            last_flush = Instant::now();
            writer.flush().map_err(|e| fail("cannot write to", e))?;
        }
    }
    writer.finish().map_err(|e| fail("cannot finish", e))?;
    let file = writer
        .into_inner()
        .into_inner()
        .into_inner()
        .map_err(|e| fail("cannot finish", ::mcap::McapError::Io(e.into_error())))?;
    file.sync_all()
        .map_err(|e| fail("cannot finish", ::mcap::McapError::Io(e)))?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcap::catalog::{for_each_record, Catalog};
    use crate::mcap::CDR_LE_HEADER;
    use ::mcap::records::Record;
    use convoy_core::dds::wire;
    use convoy_core::messages::{Message, Tick};
    use std::sync::mpsc::sync_channel;

    /// Three ticks through the writer thread, read back by the replayer's own reading code.
    #[test]
    fn a_written_file_reads_back_and_a_cut_one_says_so() {
        let dir = std::env::temp_dir().join(format!("convoy-writer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let path = dir.join("ticks.mcap");
        let qos = QosSet::builtin();
        let writer = open_file(&path, Compression::Zstd, &qos).expect("open");
        let (tx, rx) = sync_channel(16);
        let channel = ToFile::Channel {
            index: 0,
            topic: "convoy/clock".into(),
            type_name: Tick::TYPE_NAME,
            class: TopicClass::Clock,
        };
        tx.send(channel).expect("send");
        for frame in 0..3u64 {
            let tick = Tick {
                frame,
                sim_time_ns: frame as i64 * 10,
                ..Tick::default()
            };
            let mut data = CDR_LE_HEADER.to_vec();
            data.extend(wire::encode(&tick).expect("encode"));
            let sample = RawSample {
                channel: 0,
                data,
                sim_time_ns: tick.sim_time_ns(),
                receive_ns: 1_000 + frame,
            };
            tx.send(ToFile::Sample(sample)).expect("send");
        }
        drop(tx);
        let summary = write_file(writer, rx, &path, &qos, &Progress::default()).expect("write");
        assert_eq!(summary.messages, 3);
        assert_eq!(summary.topics["convoy/clock"].messages, 3);

        let catalog = Catalog::open(&path).expect("catalog");
        assert_eq!(catalog.unfinished, None);
        assert_eq!(catalog.messages, Some(3));
        assert_eq!(catalog.qos.as_ref().map(|q| q.0.as_str()), Some("convoy"));
        let channels: Vec<_> = catalog.convoy_channels().collect();
        assert_eq!(channels.len(), 1);
        assert_eq!(channels[0].0.topic, "convoy/clock");
        assert_eq!(
            (channels[0].1, channels[0].2),
            (Tick::TYPE_NAME, TopicClass::Clock)
        );
        let mut times = Vec::new();
        let ended = for_each_record(&path, |record| {
            if let Record::Message { header, .. } = record {
                times.push((header.log_time, header.publish_time));
            }
            true
        })
        .expect("open");
        assert_eq!(ended, Ok(()));
        assert_eq!(times, [(1_000, 0), (1_001, 10), (1_002, 20)]);

        // Its summary cut off: catalogued from the data, and called truncated.
        let bytes = std::fs::read(&path).expect("read");
        let cut = dir.join("cut.mcap");
        std::fs::write(&cut, &bytes[..bytes.len() - 50]).expect("write");
        let catalog = Catalog::open(&cut).expect("catalog of a cut file");
        let why = catalog.unfinished.clone().unwrap_or_default();
        assert!(why.contains("truncated"), "{why}");
        assert_eq!(catalog.convoy_channels().count(), 1);
        assert!(Catalog::open(&dir.join("missing.mcap")).is_err());
        std::fs::write(&cut, b"not mcap").expect("write");
        let err = Catalog::open(&cut).expect_err("text accepted").to_string();
        assert!(
            err.contains("not an MCAP file") && err.contains("cut.mcap"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
