//! `convoy record` (convoy topics to an MCAP file) and `convoy replay FILE` (a recording back
//! onto DDS): the arguments checked and turned into the bridge's recorder and replayer
//! (`convoy_bridge::mcap`), and their summaries printed. Their arguments are declared here,
//! beside the code that checks them.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use convoy_bridge::mcap::record::{self, RecordConfig, RecordSummary};
use convoy_bridge::mcap::replay::{self, ReplayConfig, ReplaySummary};
use convoy_bridge::mcap::subscription::TopicFilter;
use convoy_core::qos::QosSpec;
use convoy_core::scenario::{resolve_path, Scenario};

use crate::args::check_range;
use crate::load_qos;
use crate::process::stop_flag;

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Topics to record: glob patterns (`*` any run of characters), e.g. 'convoy/agent/*/state'
    /// (default: every convoy topic)
    #[arg(long, num_args = 1.., value_name = "PATTERN")]
    pub topics: Vec<String>,
    /// The file to write (default: convoy-YYYYMMDD-HHMMSS.mcap in this directory)
    #[arg(long, short = 'o', value_name = "FILE.mcap")]
    pub out: Option<PathBuf>,
    /// Stop after this many seconds (default: until Ctrl-C)
    #[arg(long)]
    pub duration: Option<f64>,
    /// Chunk compression
    #[arg(long, value_enum, default_value_t)]
    pub compression: convoy_bridge::mcap::record::Compression,
    /// The run's scenario: its topics are recorded from the start, and the recorder reports
    /// ready (on convoy/nodes) once the writers a run has before frame 0 are matched
    #[arg(long, value_name = "SCENARIO")]
    pub scenario: Option<PathBuf>,
    /// This recorder's name (it runs as DDS node bridge/NAME)
    #[arg(long, default_value = "record")]
    pub name: String,
    /// No progress line (the summary is still printed)
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recording (an MCAP file written by `convoy record`)
    pub file: PathBuf,
    /// Simulated seconds per second: 2 plays twice as fast; 0 as fast as readers take it
    #[arg(long, default_value_t = 1.0)]
    pub rate: f64,
    /// Start over at the end, until Ctrl-C
    #[arg(long = "loop")]
    pub looped: bool,
    /// Topics to replay: glob patterns (default: every recorded convoy topic but convoy/nodes,
    /// which is replayed only when named)
    #[arg(long, num_args = 1.., value_name = "PATTERN")]
    pub topics: Vec<String>,
    /// Seconds to wait for readers to match before the first message
    #[arg(long, default_value_t = 2.0)]
    pub settle: f64,
}

/// How long a recorder given the scenario waits for the run's writers.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

pub fn record(domain: u32, qos: Option<&QosSpec>, args: &RecordArgs) -> Result<()> {
    if let Some(d) = args.duration {
        check_range("--duration", d, 0.1..=86_400.0, "seconds")?;
    }
    let scenario = match &args.scenario {
        Some(path) => Some(Scenario::load(&resolve_path(path))?),
        None => None,
    };
    let config = RecordConfig {
        domain,
        qos: load_qos(qos)?,
        out: args.out.clone().unwrap_or_else(default_out),
        topics: TopicFilter::new(args.topics.clone()),
        duration: args.duration.map(Duration::from_secs_f64),
        compression: args.compression,
        scenario,
        name: args.name.clone(),
        quiet: args.quiet,
        ready_timeout: READY_TIMEOUT,
    };
    let stop = stop_flag()?;
    let summary = record::run(&config, stop)?;
    print_recorded(&config.out, &summary);
    Ok(())
}

pub fn replay(domain: u32, qos: Option<&QosSpec>, args: &ReplayArgs) -> Result<()> {
    check_range(
        "--rate",
        args.rate,
        0.0..=1e6,
        "(simulated seconds per second)",
    )?;
    check_range("--settle", args.settle, 0.0..=600.0, "seconds")?;
    let config = ReplayConfig {
        file: args.file.clone(),
        domain,
        fallback_qos: load_qos(qos)?,
        rate: args.rate,
        looped: args.looped,
        topics: TopicFilter::new(args.topics.clone()),
        settle: Duration::from_secs_f64(args.settle),
    };
    let stop = stop_flag()?;
    // Its errors name the file already.
    let summary = replay::run(&config, stop)?;
    print_replayed(&summary);
    Ok(())
}

/// The summary of a recording: totals, then one line per topic. A closed stdout (a pipe whose
/// reader left) loses the summary, not the recording.
fn print_recorded(out: &std::path::Path, summary: &RecordSummary) {
    let mut text = format!(
        "wrote {}: {} messages, {:.1} MB, {} drops\n",
        out.display(),
        summary.messages,
        summary.bytes as f64 / 1e6,
        summary.drops
    );
    let width = summary.topics.keys().map(String::len).max().unwrap_or(0);
    for (topic, count) in &summary.topics {
        let _ = writeln!(
            text,
            "  {topic:<width$}  {:>8} messages  {:>10.3} MB",
            count.messages,
            count.bytes as f64 / 1e6
        );
    }
    let _ = std::io::stdout().write_all(text.as_bytes());
}

/// The summary of a replay: totals, then one line per topic with what did not go out.
fn print_replayed(summary: &ReplaySummary) {
    let mut text = format!(
        "replayed {} messages ({} pass{})\n",
        summary.published,
        summary.passes,
        if summary.passes == 1 { "" } else { "es" }
    );
    let width = summary.topics.keys().map(String::len).max().unwrap_or(0);
    for (topic, t) in &summary.topics {
        let _ = write!(text, "  {topic:<width$}  {:>8} published", t.published);
        if t.decode_errors > 0 {
            let _ = write!(text, ", {} not decodable", t.decode_errors);
        }
        if t.publish_errors > 0 {
            let _ = write!(text, ", {} not published", t.publish_errors);
        }
        text.push('\n');
    }
    let _ = std::io::stdout().write_all(text.as_bytes());
}

/// `convoy-YYYYMMDD-HHMMSS.mcap` (UTC) in the working directory.
fn default_out() -> PathBuf {
    PathBuf::from(format!("convoy-{}.mcap", crate::stamp::utc_stamp_now()))
}
