//! The experiment file: what `convoy experiment FILE.toml` sweeps. Parsed by the one TOML
//! loader (`convoy_core::config`, unknown keys refused with their line), then checked as a
//! whole before anything runs: every QoS file loads, every link condition is possible, every
//! axis belongs to the bench, and links have namespace hosts to run on. Paths are relative to
//! the experiment file's folder, as in launch files.
//!
//! ```toml
//! [experiment]
//! name = "latency"
//! bench = "latency"            # or "lockstep"
//! repeats = 3                  # each cell this many times
//! warmup = 1                   # runs of the first cell before the matrix, not recorded
//!
//! [matrix]
//! qos = ["../../qos/convoy.xml::convoy", "../../qos/experiments.xml::best_effort"]
//! sizes = [64, 4096]           # latency: payload bytes
//! rate_hz = [0, 1000]          # latency: pings per second (0: full rate)
//! links = ["clean", "wan"]     # latency: names of [links.*]; needs `hosts`
//! agents = [4, 16]             # lockstep
//! exchange = ["peer", "relay"] # lockstep
//! agents_per_process = [1, 8]  # lockstep, optional (default [1]): agents in each agent process
//!
//! [latency]
//! duration_s = 3
//! baseline = "ddsperf"
//!
//! # with `hosts = "loss_0.toml"` in [experiment]: a launch file whose first two netns hosts
//! # run ping and pong and carry the links
//! [links.wan]                  # per host of that file, or `all`
//! all = { delay_ms = 20, jitter_ms = 2 }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use convoy_core::config::{self, ConfigError};
use convoy_core::qos::{QosSet, QosSpec};
use serde::Deserialize;

use crate::launch::{LaunchFile, LinkSpec};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExperimentSpec {
    experiment: Header,
    #[serde(default)]
    matrix: MatrixSpec,
    #[serde(default)]
    latency: LatencySpec,
    #[serde(default)]
    lockstep: LockstepSpec,
    #[serde(default)]
    links: BTreeMap<String, BTreeMap<String, LinkSpec>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    name: String,
    bench: Bench,
    #[serde(default = "one")]
    repeats: u32,
    #[serde(default)]
    warmup: u32,
    #[serde(default = "default_cell_timeout")]
    cell_timeout_s: f64,
    /// A launch file whose first two netns hosts carry the links.
    hosts: Option<String>,
}

fn one() -> u32 {
    1
}

fn default_cell_timeout() -> f64 {
    300.0
}

/// Which `convoy bench` the cells run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bench {
    Latency,
    Lockstep,
}

impl Bench {
    pub fn name(self) -> &'static str {
        match self {
            Bench::Latency => "latency",
            Bench::Lockstep => "lockstep",
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixSpec {
    #[serde(default)]
    qos: Vec<String>,
    #[serde(default)]
    sizes: Vec<usize>,
    #[serde(default)]
    rate_hz: Vec<f64>,
    #[serde(default)]
    links: Vec<String>,
    #[serde(default)]
    agents: Vec<usize>,
    #[serde(default)]
    exchange: Vec<String>,
    #[serde(default)]
    agents_per_process: Vec<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct LatencySpec {
    duration_s: f64,
    loss_timeout_s: f64,
    baseline: Option<String>,
}

impl Default for LatencySpec {
    fn default() -> Self {
        LatencySpec {
            duration_s: 3.0,
            loss_timeout_s: 2.0,
            baseline: None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct LockstepSpec {
    frames: u64,
}

impl Default for LockstepSpec {
    fn default() -> Self {
        LockstepSpec { frames: 1000 }
    }
}

/// A named link condition: per host name of the hosts file (or `all`).
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub name: String,
    pub per_host: BTreeMap<String, LinkSpec>,
}

impl Link {
    /// "clean" when the link adds nothing, else the name as written.
    pub fn is_clean(&self) -> bool {
        self.per_host.values().all(|l| *l == LinkSpec::default())
    }
}

/// A checked experiment, ready to expand into cells.
#[derive(Debug)]
pub struct Experiment {
    pub file: PathBuf,
    pub text: String,
    pub name: String,
    pub bench: Bench,
    pub repeats: u32,
    pub warmup: u32,
    pub cell_timeout_s: f64,
    /// Each with its label (file name and library) and resolved against the file's folder; one
    /// ("default", None) when the file names none.
    pub qos: Vec<(String, Option<QosSpec>)>,
    pub sizes: Vec<usize>,
    pub rates_hz: Vec<f64>,
    /// Empty: on this host, no link conditions.
    pub links: Vec<Link>,
    pub hosts: Option<PathBuf>,
    pub agents: Vec<usize>,
    pub exchanges: Vec<String>,
    /// Agents in each agent process (`convoy bench lockstep --agents-per-process`); `[1]` when
    /// the file gives none.
    pub agents_per_process: Vec<u64>,
    pub duration_s: f64,
    pub loss_timeout_s: f64,
    pub ddsperf: bool,
    pub frames: u64,
}

impl Experiment {
    pub fn load(path: &Path) -> Result<Experiment, ConfigError> {
        let (text, file) = config::read(path, "experiment file")?;
        let spec: ExperimentSpec = config::parse(&text, &file)?;
        let base = path.parent().unwrap_or(Path::new("."));
        let invalid = |needle: &str, message: String| ConfigError::Invalid {
            file: file.clone(),
            line: config::find_line(&text, needle),
            message,
        };
        let header = &spec.experiment;
        let m = &spec.matrix;
        if header.name.trim().is_empty()
            || !header
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(invalid(
                "name",
                format!(
                    "name = {:?}: use letters, digits, '-', '_' or '.' (it names the results folder)",
                    header.name
                ),
            ));
        }
        if !(1..=1000).contains(&header.repeats) {
            return Err(invalid(
                "repeats",
                format!("repeats = {} is out of range 1..=1000", header.repeats),
            ));
        }
        if header.warmup > 100 {
            return Err(invalid(
                "warmup",
                format!("warmup = {} is out of range 0..=100", header.warmup),
            ));
        }
        if !(header.cell_timeout_s.is_finite() && (1.0..=86_400.0).contains(&header.cell_timeout_s))
        {
            return Err(invalid(
                "cell_timeout_s",
                format!(
                    "cell_timeout_s = {} is out of range 1..=86400 seconds",
                    header.cell_timeout_s
                ),
            ));
        }

        // Axes of the other bench are a mistake, not something to ignore.
        let other_axes = match header.bench {
            Bench::Latency => vec![
                ("agents", !m.agents.is_empty()),
                ("exchange", !m.exchange.is_empty()),
                ("agents_per_process", !m.agents_per_process.is_empty()),
            ],
            Bench::Lockstep => vec![
                ("sizes", !m.sizes.is_empty()),
                ("rate_hz", !m.rate_hz.is_empty()),
                ("links", !m.links.is_empty()),
            ],
        };
        for (axis, given) in other_axes {
            if given {
                return Err(invalid(
                    &format!("{axis} ="),
                    format!(
                        "matrix.{axis} does not apply to bench = \"{}\"",
                        header.bench.name()
                    ),
                ));
            }
        }

        let mut qos = Vec::new();
        for label in &m.qos {
            let mut qspec = QosSpec::parse(label);
            qspec.path = base.join(&qspec.path);
            QosSet::load_all(&qspec)
                .map_err(|e| invalid(&format!("\"{label}\""), format!("qos {label:?}: {e}")))?;
            qos.push((short_label(label), Some(qspec)));
        }
        if qos.is_empty() {
            // The QoS every node uses without --qos.
            qos.push(("default".to_string(), None));
        }

        let hosts = header.hosts.as_ref().map(|h| base.join(h));
        // The netns host names of `hosts`, which the links may name.
        let mut host_names = Vec::new();
        if let Some(h) = &hosts {
            let launch =
                LaunchFile::load(h).map_err(|e| invalid("hosts", format!("hosts: {e}")))?;
            host_names = launch.netns_hosts().into_iter().map(|(n, _)| n).collect();
            if host_names.len() < 2 {
                return Err(invalid(
                    "hosts",
                    format!("hosts: {} has fewer than two netns hosts", h.display()),
                ));
            }
        }
        let mut links = Vec::new();
        for (name, per_host) in &spec.links {
            let section = format!("[links.{name}]");
            for (host, l) in per_host {
                if let Some(problem) = l.problem() {
                    return Err(invalid(
                        &section,
                        format!("link '{name}', {host}: {problem}"),
                    ));
                }
                if l.jitter_ms > l.delay_ms {
                    return Err(invalid(
                        &section,
                        format!(
                            "link '{name}', {host}: jitter_ms = {} exceeds delay_ms = {} (a \
                             datagram cannot leave before it was sent)",
                            l.jitter_ms, l.delay_ms
                        ),
                    ));
                }
            }
        }
        for name in &m.links {
            let Some(per_host) = spec.links.get(name) else {
                return Err(invalid(
                    &format!("\"{name}\""),
                    format!("matrix.links names '{name}', which no [links.{name}] defines"),
                ));
            };
            links.push(Link {
                name: name.clone(),
                per_host: per_host.clone(),
            });
        }
        if !links.is_empty() && hosts.is_none() {
            return Err(invalid(
                "links",
                "matrix.links needs `hosts = \"LAUNCH_FILE\"` (namespace hosts to put the links on)"
                    .into(),
            ));
        }
        if let Some(h) = &hosts {
            for link in &links {
                for host in link.per_host.keys() {
                    if host != "all" && !host_names.contains(host) {
                        return Err(invalid(
                            &format!("[links.{}]", link.name),
                            format!(
                                "link '{}': no netns host '{host}' in {} (hosts: {}, or all)",
                                link.name,
                                h.display(),
                                host_names.join(", ")
                            ),
                        ));
                    }
                }
            }
        }

        let rates_hz = if m.rate_hz.is_empty() && header.bench == Bench::Latency {
            vec![0.0]
        } else {
            m.rate_hz.clone()
        };
        for r in &rates_hz {
            if !(r.is_finite() && (0.0..=1_000_000.0).contains(r)) {
                return Err(invalid(
                    "rate_hz",
                    format!("rate_hz {r} is out of range 0..=1000000 (0: full rate)"),
                ));
            }
        }
        for s in &m.sizes {
            if *s > 64 << 20 {
                return Err(invalid(
                    "sizes",
                    format!("size {s} is above 64 MiB, the largest sample convoy sends"),
                ));
            }
        }
        for a in &m.agents {
            if !(1..=256).contains(a) {
                return Err(invalid(
                    "agents",
                    format!("agents {a} is out of range 1..=256"),
                ));
            }
        }
        for k in &m.agents_per_process {
            if !(1..=64).contains(k) {
                return Err(invalid(
                    "agents_per_process",
                    format!("agents_per_process {k} is out of range 1..=64"),
                ));
            }
        }
        for e in &m.exchange {
            if e != "peer" && e != "relay" {
                return Err(invalid(
                    &format!("\"{e}\""),
                    format!("exchange '{e}': use \"peer\" or \"relay\""),
                ));
            }
        }
        match header.bench {
            Bench::Latency if m.sizes.is_empty() => {
                return Err(invalid(
                    "[matrix]",
                    "bench = \"latency\" needs matrix.sizes (payload bytes)".into(),
                ))
            }
            Bench::Lockstep if m.agents.is_empty() || m.exchange.is_empty() => {
                return Err(invalid(
                    "[matrix]",
                    "bench = \"lockstep\" needs matrix.agents and matrix.exchange".into(),
                ))
            }
            _ => {}
        }
        let lat = &spec.latency;
        if !(lat.duration_s.is_finite() && (0.1..=3600.0).contains(&lat.duration_s)) {
            return Err(invalid(
                "duration_s",
                format!("duration_s = {} is out of range 0.1..=3600", lat.duration_s),
            ));
        }
        if !(lat.loss_timeout_s.is_finite() && (0.01..=60.0).contains(&lat.loss_timeout_s)) {
            return Err(invalid(
                "loss_timeout_s",
                format!(
                    "loss_timeout_s = {} is out of range 0.01..=60",
                    lat.loss_timeout_s
                ),
            ));
        }
        let ddsperf = match lat.baseline.as_deref() {
            None => false,
            Some("ddsperf") => true,
            Some(other) => {
                return Err(invalid(
                    "baseline",
                    format!("baseline = {other:?}: the one baseline is \"ddsperf\""),
                ))
            }
        };
        if ddsperf && hosts.is_some() {
            return Err(invalid(
                "baseline",
                "baseline = \"ddsperf\" runs on this host only; leave it out with hosts".into(),
            ));
        }
        if !(1..=10_000_000).contains(&spec.lockstep.frames) {
            return Err(invalid(
                "frames",
                format!(
                    "frames = {} is out of range 1..=10000000",
                    spec.lockstep.frames
                ),
            ));
        }

        Ok(Experiment {
            file: path.to_path_buf(),
            text: text.clone(),
            name: header.name.clone(),
            bench: header.bench,
            repeats: header.repeats,
            warmup: header.warmup,
            cell_timeout_s: header.cell_timeout_s,
            qos,
            sizes: m.sizes.clone(),
            rates_hz,
            links,
            hosts,
            agents: m.agents.clone(),
            exchanges: m.exchange.clone(),
            agents_per_process: if m.agents_per_process.is_empty() {
                vec![1]
            } else {
                m.agents_per_process.clone()
            },
            duration_s: lat.duration_s,
            loss_timeout_s: lat.loss_timeout_s,
            ddsperf,
            frames: spec.lockstep.frames,
        })
    }
}

/// A QoS entry as tables and plots name it: the file's name and the library
/// (`../../qos/convoy.xml::convoy` -> `convoy.xml::convoy`).
fn short_label(label: &str) -> String {
    let (path, library) = match label.rsplit_once("::") {
        Some((path, library)) => (path, format!("::{library}")),
        None => (label, String::new()),
    };
    let name = Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
    format!("{name}{library}")
}
