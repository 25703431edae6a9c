//! `convoy bench ...`: performance measurements whose numbers go to docs/BENCHMARKS.md, and
//! what the benches share: their statistics, CSV files, scratch directories and the second
//! `convoy` process some of them start.

pub mod bridge;
mod echo;
mod image_sink;
pub mod images;
pub mod latency;
pub mod lockstep;
pub mod payload;
mod pinger;
mod recorded;
mod sensor_stages;
pub mod sensors;
pub mod world;

use std::borrow::Cow;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use convoy_core::qos::QosSpec;

use crate::args::BenchCommand;
use crate::launch::{HostAddress, LaunchFile};
use crate::launch_cmd::netns_exists;
use crate::node_process::NodeProcess;

pub fn run(domain: u32, qos: Option<&QosSpec>, command: &BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Latency(args) => latency::run(domain, qos, args),
        BenchCommand::Lockstep(args) => lockstep::run(domain, qos, args),
        BenchCommand::Sensors(args) => sensors::run(domain, qos, args),
        BenchCommand::Images(args) => images::run(domain, qos, args),
        BenchCommand::Bridge(args) => bridge::run(domain, qos, args),
        BenchCommand::World(args) => world::run(args),
    }
}

/// The value below which `p` of the sorted samples lie (nearest rank).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The percentiles every bench reports, of one set of measurements (NaN when it is empty).
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Stats {
    pub fn of(mut values: Vec<f64>) -> Stats {
        values.sort_by(f64::total_cmp);
        Stats {
            p50: percentile(&values, 0.50),
            p90: percentile(&values, 0.90),
            p99: percentile(&values, 0.99),
            max: values.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// `count` per second over `seconds`; 0 when no time passed (fewer than two samples).
pub fn per_second(count: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count / seconds
    } else {
        0.0
    }
}

/// One CSV field as RFC 4180 writes it: as it is, or in double quotes with every quote inside
/// doubled where it holds a comma, a quote or a line break. A bench's text columns (the sensors
/// bench's `640x480, 2 agents`, a QoS file's path) would otherwise shift every column after them
/// for a CSV reader.
pub fn csv_field(field: &str) -> Cow<'_, str> {
    if field.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", field.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(field)
    }
}

/// One CSV record: the fields, each as [`csv_field`] writes it, separated by commas.
pub fn csv_record<S: AsRef<str>>(fields: &[S]) -> String {
    fields
        .iter()
        .map(|f| csv_field(f.as_ref()))
        .collect::<Vec<_>>()
        .join(",")
}

/// Writes a CSV file: the header's column names, then one record per row, each field quoted
/// where RFC 4180 needs it ([`csv_field`]). Every bench writes its CSV through here.
pub fn write_csv(
    path: &Path,
    header: &[&str],
    rows: impl IntoIterator<Item = Vec<String>>,
) -> Result<()> {
    let mut text = csv_record(header);
    text.push('\n');
    for row in rows {
        text.push_str(&csv_record(&row));
        text.push('\n');
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// A directory of this process's generated files (scenarios, settings), removed on drop so
/// that a failed run leaves none behind either.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new(name: &str) -> Result<ScratchDir> {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(ScratchDir(dir))
    }

    /// Writes the file `name` in the directory and returns its path.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> Result<PathBuf> {
        let path = self.0.join(name);
        std::fs::write(&path, contents)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The command line of another `convoy` process a bench starts (a pong, a reader, the writer
/// in a namespace): this process's domain and QoS, the bench's words, then its flags.
pub struct ConvoyArgs(Vec<String>);

impl ConvoyArgs {
    pub fn new(domain: u32, qos: Option<&QosSpec>, words: &[&str]) -> ConvoyArgs {
        let mut args = vec!["--domain".to_string(), domain.to_string()];
        if let Some(spec) = qos {
            args.extend(["--qos".into(), spec.to_string()]);
        }
        args.extend(words.iter().map(|w| w.to_string()));
        ConvoyArgs(args)
    }

    /// `FLAG VALUE`.
    pub fn flag(mut self, flag: &str, value: impl Display) -> ConvoyArgs {
        self.0.extend([flag.to_string(), value.to_string()]);
        self
    }

    /// `FLAG A,B,...`.
    pub fn list<T: Display>(self, flag: &str, values: &[T]) -> ConvoyArgs {
        let values: Vec<String> = values.iter().map(T::to_string).collect();
        self.flag(flag, values.join(","))
    }

    /// `FLAG` alone, when `on`.
    pub fn switch(mut self, flag: &str, on: bool) -> ConvoyArgs {
        if on {
            self.0.push(flag.to_string());
        }
        self
    }

    /// `--out PATH`, made absolute: the other process may run in another working directory.
    pub fn out(self, out: Option<&Path>) -> ConvoyArgs {
        self.path("--out", out)
    }

    /// `--samples-out PATH`, made absolute.
    pub fn samples_out(self, out: Option<&Path>) -> ConvoyArgs {
        self.path("--samples-out", out)
    }

    /// `FLAG PATH` with the path made absolute, when there is one.
    fn path(self, flag: &str, path: Option<&Path>) -> ConvoyArgs {
        match path {
            Some(path) => {
                let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
                self.flag(flag, path.display())
            }
            None => self,
        }
    }

    /// The command that runs this `convoy` on `host` (`id` names it there), stdin closed.
    pub fn command(self, host: &HostAddress, id: &str) -> Result<Command> {
        let exe = std::env::current_exe().context("cannot find the convoy executable")?;
        let mut command = NodeProcess::on(host, id, &exe, self.0).command();
        command.stdin(Stdio::null());
        Ok(command)
    }
}

/// (host, namespace) of a launch file's first two netns hosts (`--netns-hosts`), whose
/// namespaces must exist: `convoy netns up FILE` makes them.
pub fn two_netns_hosts(file: &Path) -> Result<[(String, String); 2]> {
    let hosts = LaunchFile::load(file)?.netns_hosts();
    let [first, second, ..] = hosts.as_slice() else {
        bail!("{}: --netns-hosts needs two netns hosts", file.display());
    };
    for (_, ns) in [first, second] {
        if !netns_exists(ns) {
            bail!(
                "netns {ns} does not exist: run `convoy netns up {}` first",
                file.display()
            );
        }
    }
    Ok([first.clone(), second.clone()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 1.0), 100.0);
        assert!(percentile(&[], 0.5).is_nan());
        let stats = Stats::of(v.into_iter().rev().collect());
        assert_eq!((stats.p50, stats.p90, stats.max), (50.0, 90.0, 100.0));
        assert!(Stats::of(Vec::new()).max.is_nan());
    }

    #[test]
    fn csv_fields_are_quoted_as_rfc_4180_says() {
        assert_eq!(csv_field("imu"), "imu");
        assert_eq!(csv_field(""), "");
        assert_eq!(csv_field("64x48, 2 agents"), "\"64x48, 2 agents\"");
        assert_eq!(csv_field(r#"say "hi""#), r#""say ""hi""""#);
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("cr\r"), "\"cr\r\"");
        assert_eq!(
            csv_record(&["camera", "64x48, 2 agents", "1", "a\"b"]),
            "camera,\"64x48, 2 agents\",1,\"a\"\"b\""
        );

        let dir = ScratchDir::new("convoy-csv-test").expect("scratch dir");
        let path = dir.0.join("t.csv");
        let rows = vec![
            vec!["camera".to_string(), "64x48, 2 agents".into(), "1".into()],
            vec!["imu".to_string(), "2 agents @100 Hz".into(), "1".into()],
        ];
        write_csv(&path, &["sensor", "config", "sensor_nodes"], rows).expect("written");
        let text = std::fs::read_to_string(&path).expect("read back");
        assert_eq!(
            text,
            "sensor,config,sensor_nodes\n\
             camera,\"64x48, 2 agents\",1\n\
             imu,2 agents @100 Hz,1\n"
        );
    }
}
