//! `convoy bench images --record FILE`: a recorder (`convoy record`, in its own process, as in a
//! run) beside the bench's reader, and what it wrote checked sample by sample afterwards — the
//! figure is how many of the counted samples are in the file, whole.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use convoy_bridge::mcap::catalog::{for_each_record, Catalog};
use convoy_bridge::mcap::record::Compression;
use convoy_bridge::mcap::CDR_LE_HEADER;
use convoy_core::dds::wire;
use convoy_core::qos::QosSpec;
use mcap::records::Record;

use super::images::WARMUP_SEQ;
use super::payload::{Pattern, ViewParts};
use super::ConvoyArgs;
use crate::launch::HostAddress;
use crate::process::StopOnDrop;

/// How long the recorder may take to close its file once told to stop (its queue drained,
/// chunks compressed and written).
const CLOSE_GRACE: Duration = Duration::from_secs(60);

/// The recorder process of one bench run.
pub(super) struct Recorder {
    child: StopOnDrop,
    file: PathBuf,
}

/// What the recorder wrote of the counted samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RecordedCount {
    /// Counted samples (not warm-ups) in the file with every byte as written.
    pub whole: u64,
    /// Counted samples in the file at all.
    pub recorded: u64,
}

impl Recorder {
    /// Starts `convoy record` on `topic` alone, to `file` (replaced). It subscribes once
    /// discovery shows the bench's writer; the writer waits for it to match.
    pub(super) fn spawn(
        domain: u32,
        qos: Option<&QosSpec>,
        topic: &str,
        file: &Path,
        compression: Compression,
    ) -> Result<Recorder> {
        if file.exists() {
            std::fs::remove_file(file)
                .with_context(|| format!("cannot replace the recording {}", file.display()))?;
        }
        // The name `convoy record --compression` takes: clap's, from the same enum.
        let compression = clap::ValueEnum::to_possible_value(&compression)
            .map(|v| v.get_name().to_string())
            .context("a compression without a name")?;
        let mut command = ConvoyArgs::new(domain, qos, &["record", "--quiet", "--topics", topic])
            .flag("--out", file.display())
            .flag("--compression", compression)
            .flag("--name", "bench_recorder")
            .command(&HostAddress::Local, "recorder")?;
        let child = command
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start the recorder (convoy record)")?;
        Ok(Recorder {
            child: StopOnDrop(child, CLOSE_GRACE),
            file: file.to_path_buf(),
        })
    }

    /// Stops the recorder (SIGTERM: it drains its queue and closes the file) and counts the
    /// samples `0..sent` of `topic` it wrote, checking each against `pattern`.
    pub(super) fn finish<M: ViewParts>(
        self,
        topic: &str,
        sent: u64,
        pattern: &Pattern,
    ) -> Result<RecordedCount> {
        let Recorder { child, file } = self;
        let status = stopped(child)?;
        if !status.success() {
            bail!("the recorder failed ({status}); see its messages above");
        }
        count_recorded::<M>(&file, topic, sent, pattern)
    }
}

/// Stops the child the way a user's Ctrl-C does and waits for it to close its file.
fn stopped(mut child: StopOnDrop) -> Result<std::process::ExitStatus> {
    crate::process::stop_child(&mut child.0, child.1);
    child.0.wait().context("cannot wait for the recorder")
}

/// The counted samples of `topic` in the MCAP `file`: each decoded, its sequence number below
/// `sent`, and whole when its bytes are `pattern`'s for that number. A sample recorded twice
/// counts once.
fn count_recorded<M: ViewParts>(
    file: &Path,
    topic: &str,
    sent: u64,
    pattern: &Pattern,
) -> Result<RecordedCount> {
    let catalog = Catalog::open(file)?;
    let channels: BTreeSet<u16> = catalog
        .channels
        .values()
        .filter(|c| c.topic == topic)
        .map(|c| c.id)
        .collect();
    let (mut recorded, mut whole) = (BTreeSet::new(), BTreeSet::new());
    let mut undecodable = 0u64;
    let ended = for_each_record(file, |record| {
        if let Record::Message { header, data } = record {
            if channels.contains(&header.channel_id) {
                match decode::<M>(&data) {
                    Some((seq, bytes)) if seq != WARMUP_SEQ && seq < sent => {
                        recorded.insert(seq);
                        if bytes == pattern.sample(seq) {
                            whole.insert(seq);
                        }
                    }
                    Some(_) => {}
                    None => undecodable += 1,
                }
            }
        }
        true
    })?;
    if let Err(problem) = ended {
        bail!(
            "{}: the recording ends early at byte {}: {}",
            file.display(),
            problem.at_byte,
            problem.message
        );
    }
    if undecodable > 0 {
        eprintln!(
            "  {undecodable} recorded samples on {topic} could not be decoded as {}",
            M::TYPE_NAME
        );
    }
    Ok(RecordedCount {
        whole: whole.len() as u64,
        recorded: recorded.len() as u64,
    })
}

/// (sequence number, payload) of one recorded message: plain little-endian CDR after its
/// encapsulation header, as the recorder writes it.
fn decode<M: ViewParts>(data: &[u8]) -> Option<(u64, Vec<u8>)> {
    let body = data.strip_prefix(&CDR_LE_HEADER[..])?;
    let view: M::View<'_> = wire::decode(
        M::TYPE_NAME,
        body,
        rustdds::RepresentationIdentifier::CDR_LE,
    )
    .ok()?;
    let (seq, _, bytes) = M::view_parts(&view);
    Some((seq, bytes.to_vec()))
}
