//! What a recording holds, read before its messages are streamed: its channels (topic, convoy
//! type, QoS class) and the QoS library it was recorded with; and the one linear pass over a
//! file that both this and the replayer's stream use.
//!
//! A finished file is catalogued from its summary section (a seek to the end, no decompression).
//! A file without one (the recorder was killed, the disk filled up) is scanned from the start
//! for its schema, channel and metadata records, as far as it can be read; why it has no
//! summary is kept, and the replayer reports it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use ::mcap::records::Record;
use ::mcap::sans_io::{LinearReadEvent, LinearReader, SummaryReadEvent, SummaryReader};
use ::mcap::McapError;
use anyhow::{bail, Context as _, Result};
use convoy_core::topics::TopicClass;

use super::subscription::convoy_type;
use super::{class_named, META_CLASS, META_QOS, META_TYPE, QOS_LIBRARY, QOS_XML};
use super::{MESSAGE_ENCODING, SCHEMA_ENCODING};

/// One channel of a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedChannel {
    pub id: u16,
    pub topic: String,
    /// The convoy type and QoS class when the channel is a convoy recording's; otherwise why not.
    pub convoy: Result<(&'static str, TopicClass), String>,
}

/// What a recording holds.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub path: PathBuf,
    pub channels: BTreeMap<u16, RecordedChannel>,
    /// The recorded QoS library: (library name, DDS-XML text).
    pub qos: Option<(String, String)>,
    /// Messages in the file, when its summary says.
    pub messages: Option<u64>,
    /// Why the file has no summary to read (cut short); None for a finished file.
    pub unfinished: Option<String>,
}

/// How a linear pass over a file ended, when not at its proper end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadProblem {
    /// About where it happened (bytes read so far).
    pub at_byte: u64,
    pub message: String,
}

impl Catalog {
    /// Reads what `path` holds; fails, naming the file, for anything that is not an MCAP file.
    pub fn open(path: &Path) -> Result<Catalog> {
        let mut file = File::open(path)
            .with_context(|| format!("cannot open the recording {}", path.display()))?;
        let mut magic = [0u8; 8];
        let starts = file.read_exact(&mut magic).is_ok() && magic[..] == *::mcap::MAGIC;
        if !starts {
            bail!(
                "{} is not an MCAP file: it does not start with the MCAP magic bytes",
                path.display()
            );
        }
        let mut catalog = Catalog {
            path: path.to_path_buf(),
            ..Catalog::default()
        };
        match read_summary(&mut file) {
            Ok(Some(summary)) => {
                catalog.messages = summary.stats.as_ref().map(|s| s.message_count);
                for channel in summary.channels.values() {
                    let schema = channel.schema.as_ref();
                    catalog.add_channel(
                        channel.id,
                        &channel.topic,
                        schema.map(|s| (s.name.as_str(), s.encoding.as_str())),
                        &channel.message_encoding,
                        &channel.metadata,
                    );
                }
                for index in &summary.metadata_indexes {
                    if index.name == META_QOS {
                        catalog.read_qos_at(&mut file, index.offset, index.length)?;
                    }
                }
                return Ok(catalog);
            }
            // Finished by a writer that left the summary out: the records are in the data.
            Ok(None) => {}
            Err(e) => catalog.unfinished = Some(describe(&e)),
        }
        catalog.scan()?;
        Ok(catalog)
    }

    /// The channels a replay can publish: convoy's.
    pub fn convoy_channels(
        &self,
    ) -> impl Iterator<Item = (&RecordedChannel, &'static str, TopicClass)> {
        self.channels
            .values()
            .filter_map(|c| c.convoy.as_ref().ok().map(|&(t, k)| (c, t, k)))
    }

    /// Records what a channel record says, with its schema's name and encoding.
    fn add_channel(
        &mut self,
        id: u16,
        topic: &str,
        schema: Option<(&str, &str)>,
        message_encoding: &str,
        metadata: &BTreeMap<String, String>,
    ) {
        let convoy = convoy_channel(schema, message_encoding, metadata);
        self.channels.insert(
            id,
            RecordedChannel {
                id,
                topic: topic.to_string(),
                convoy,
            },
        );
    }

    /// Reads the `convoy.qos` metadata record of `length` bytes at `offset`.
    fn read_qos_at(&mut self, file: &mut File, offset: u64, length: u64) -> Result<()> {
        let label = format!("{}: cannot read its QoS record", self.path.display());
        let bad = || label.clone();
        let length = usize::try_from(length).with_context(bad)?;
        // Opcode and record length come first (1 + 8 bytes).
        if !(9..=(64 << 20)).contains(&length) {
            bail!("{}: its QoS record has an impossible length", bad());
        }
        let mut record = vec![0u8; length];
        file.seek(SeekFrom::Start(offset)).with_context(bad)?;
        file.read_exact(&mut record).with_context(bad)?;
        if let Record::Metadata(m) =
            ::mcap::parse_record(record[0], &record[9..]).with_context(bad)?
        {
            self.keep_qos(&m.metadata);
        }
        Ok(())
    }

    fn keep_qos(&mut self, metadata: &BTreeMap<String, String>) {
        if let (Some(library), Some(xml)) = (metadata.get(QOS_LIBRARY), metadata.get(QOS_XML)) {
            self.qos = Some((library.clone(), xml.clone()));
        }
    }

    /// Collects schemas, channels and the QoS record from the start of the file, as far as it
    /// can be read.
    fn scan(&mut self) -> Result<()> {
        let mut schemas: BTreeMap<u16, (String, String)> = BTreeMap::new();
        let path = self.path.clone();
        let ended = for_each_record(&path, |record| {
            match record {
                Record::Schema { header, .. } => {
                    schemas.insert(header.id, (header.name, header.encoding));
                }
                Record::Channel(c) => {
                    let schema = schemas
                        .get(&c.schema_id)
                        .map(|(n, e)| (n.as_str(), e.as_str()));
                    self.add_channel(c.id, &c.topic, schema, &c.message_encoding, &c.metadata);
                }
                Record::Metadata(m) if m.name == META_QOS => self.keep_qos(&m.metadata),
                _ => {}
            }
            true
        })?;
        if let Err(problem) = ended {
            self.unfinished.get_or_insert(problem.message);
        }
        Ok(())
    }
}

/// A channel's convoy type and class, or why it is not a convoy recording's channel.
fn convoy_channel(
    schema: Option<(&str, &str)>,
    message_encoding: &str,
    metadata: &BTreeMap<String, String>,
) -> Result<(&'static str, TopicClass), String> {
    let Some((schema_name, schema_encoding)) = schema else {
        return Err("it has no schema".into());
    };
    if schema_encoding != SCHEMA_ENCODING || message_encoding != MESSAGE_ENCODING {
        return Err(format!(
            "its schema is {schema_encoding:?} and its messages {message_encoding:?}, not \
             {SCHEMA_ENCODING} and {MESSAGE_ENCODING}"
        ));
    }
    let type_name = metadata.get(META_TYPE).map_or(schema_name, String::as_str);
    let Some(type_name) = convoy_type(type_name) else {
        return Err(format!("{type_name} is not a convoy type"));
    };
    let Some(class) = metadata
        .get(META_CLASS)
        .map(String::as_str)
        .and_then(class_named)
    else {
        return Err(format!("its metadata has no valid {META_CLASS}"));
    };
    Ok((type_name, class))
}

/// The summary section of `file`; None when the file says it has none; an error when its end
/// cannot be read as an MCAP footer (the file was cut short).
fn read_summary(file: &mut File) -> std::result::Result<Option<::mcap::Summary>, McapError> {
    let size = file.metadata()?.len();
    let mut reader = SummaryReader::new_with_options(
        ::mcap::sans_io::SummaryReaderOptions::default().with_file_size(size),
    );
    while let Some(event) = reader.next_event() {
        match event? {
            SummaryReadEvent::ReadRequest(n) => {
                let read = file.read(reader.insert(n))?;
                reader.notify_read(read);
            }
            SummaryReadEvent::SeekRequest(to) => {
                let at = file.seek(to)?;
                reader.notify_seeked(at);
            }
        }
    }
    Ok(reader.finish())
}

/// Why a file could not be read to its end, in words a user acts on.
pub fn describe(e: &McapError) -> String {
    match e {
        McapError::UnexpectedEof | McapError::BadMagic | McapError::BadFooter => {
            "it is truncated: it ends before its summary (was the recorder killed, or the disk \
             full?)"
                .to_string()
        }
        McapError::Io(io) => format!("cannot read it: {io}"),
        other => format!("it is corrupt: {other}"),
    }
}

/// Hands every record of `path` to `each`, in file order, decompressing chunks, until `each`
/// returns false or the file ends. The outer error is for a file that cannot be opened; the
/// inner one says where and why a file that could be opened stopped before its proper end.
pub fn for_each_record(
    path: &Path,
    mut each: impl FnMut(Record<'_>) -> bool,
) -> Result<std::result::Result<(), ReadProblem>> {
    let file = File::open(path)
        .with_context(|| format!("cannot open the recording {}", path.display()))?;
    let mut file = BufReader::with_capacity(1 << 20, file);
    let mut reader = LinearReader::new();
    let mut at_byte = 0u64;
    let problem = |at_byte, e: &McapError| ReadProblem {
        at_byte,
        message: describe(e),
    };
    while let Some(event) = reader.next_event() {
        match event {
            Ok(LinearReadEvent::ReadRequest(n)) => {
                let read = match file.read(reader.insert(n)) {
                    Ok(read) => read,
                    Err(e) => return Ok(Err(problem(at_byte, &McapError::Io(e)))),
                };
                at_byte += read as u64;
                reader.notify_read(read);
            }
            Ok(LinearReadEvent::Record { opcode, data }) => {
                let record = match ::mcap::parse_record(opcode, data) {
                    Ok(record) => record,
                    Err(e) => return Ok(Err(problem(at_byte, &e))),
                };
                if !each(record) {
                    return Ok(Ok(()));
                }
            }
            Err(e) => return Ok(Err(problem(at_byte, &e))),
        }
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_are_convoy_only_with_every_marker() {
        let meta = BTreeMap::from([
            (META_TYPE.to_string(), "convoy::Tick".to_string()),
            (META_CLASS.to_string(), "clock".to_string()),
        ]);
        let schema = Some(("convoy::Tick", SCHEMA_ENCODING));
        assert_eq!(
            convoy_channel(schema, MESSAGE_ENCODING, &meta),
            Ok(("convoy::Tick", TopicClass::Clock))
        );
        assert!(convoy_channel(None, MESSAGE_ENCODING, &meta).is_err());
        assert!(convoy_channel(Some(("x", "jsonschema")), "json", &meta).is_err());
        let other = BTreeMap::from([(META_TYPE.to_string(), "std_msgs::String".to_string())]);
        let err = convoy_channel(schema, MESSAGE_ENCODING, &other).expect_err("accepted");
        assert!(err.contains("not a convoy type"), "{err}");
    }
}
