//! The matrix as cells, and one cell run: a `convoy bench` child process of this same
//! executable in its own process group (so a timeout or Ctrl-C ends it and whatever it
//! started), its output kept in the cell's folder, its CSV read back into result rows. A cell
//! that fails says why; the sweep goes on.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use convoy_core::qos::QosSpec;

use super::file::{Bench, Experiment, Link};
use crate::bench::ConvoyArgs;
use crate::launch::HostAddress;

/// One run of the matrix.
#[derive(Debug, Clone)]
pub struct Cell {
    /// 1-based, in run order.
    pub index: usize,
    pub repeat: u32,
    pub qos_label: String,
    pub qos: Option<QosSpec>,
    /// Index into `Experiment::links`; None: this host, no link.
    pub link: Option<usize>,
    pub rate_hz: f64,
    pub size: usize,
    pub agents: usize,
    pub exchange: String,
    /// Lockstep: agents in each agent process.
    pub agents_per_process: u64,
}

impl Cell {
    /// A folder name that says what the cell is.
    pub fn id(&self, exp: &Experiment) -> String {
        let what = match exp.bench {
            Bench::Latency => format!(
                "{}-{}B-{}hz{}",
                slug(&self.qos_label),
                self.size,
                self.rate_hz,
                self.link
                    .map(|l| format!("-{}", slug(&exp.links[l].name)))
                    .unwrap_or_default()
            ),
            Bench::Lockstep => format!(
                "{}-{}-{}agents{}",
                slug(&self.qos_label),
                self.exchange,
                self.agents,
                if self.agents_per_process > 1 {
                    format!("-{}aproc", self.agents_per_process)
                } else {
                    String::new()
                }
            ),
        };
        format!("{:03}-{what}-r{}", self.index, self.repeat)
    }

    pub fn link_name<'a>(&self, exp: &'a Experiment) -> &'a str {
        self.link.map_or("host", |l| exp.links[l].name.as_str())
    }
}

fn slug(s: &str) -> String {
    let slug: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    slug.trim_matches('_').to_string()
}

/// Every cell, links outermost (each link is set up once), repeats innermost.
pub fn expand(exp: &Experiment) -> Vec<Cell> {
    let links: Vec<Option<usize>> = if exp.links.is_empty() {
        vec![None]
    } else {
        (0..exp.links.len()).map(Some).collect()
    };
    let mut cells = Vec::new();
    let mut push = |cell: Cell| {
        let mut cell = cell;
        cell.index = cells.len() + 1;
        cells.push(cell);
    };
    for link in links {
        for (label, qos) in &exp.qos {
            let base = Cell {
                index: 0,
                repeat: 1,
                qos_label: label.clone(),
                qos: qos.clone(),
                link,
                rate_hz: 0.0,
                size: 0,
                agents: 0,
                exchange: String::new(),
                agents_per_process: 1,
            };
            match exp.bench {
                Bench::Latency => {
                    for &rate_hz in &exp.rates_hz {
                        for &size in &exp.sizes {
                            for repeat in 1..=exp.repeats {
                                push(Cell {
                                    repeat,
                                    rate_hz,
                                    size,
                                    ..base.clone()
                                });
                            }
                        }
                    }
                }
                Bench::Lockstep => {
                    for &agents_per_process in &exp.agents_per_process {
                        for exchange in &exp.exchanges {
                            for &agents in &exp.agents {
                                for repeat in 1..=exp.repeats {
                                    push(Cell {
                                        repeat,
                                        agents,
                                        exchange: exchange.clone(),
                                        agents_per_process,
                                        ..base.clone()
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    cells
}

/// What a cell produced: its bench's CSV rows (header first), or why it failed.
pub enum CellOutcome {
    Rows(Vec<Vec<String>>),
    Failed(String),
    Interrupted,
}

/// The files of one cell.
pub struct CellFiles {
    pub dir: PathBuf,
    pub csv: PathBuf,
    pub samples: PathBuf,
}

impl CellFiles {
    pub fn new(cells_dir: &Path, id: &str) -> Result<CellFiles> {
        let dir = cells_dir.join(id);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(CellFiles {
            csv: dir.join("result.csv"),
            samples: dir.join("samples.csv"),
            dir,
        })
    }
}

/// The `convoy bench` command line of a cell.
pub fn command(
    exp: &Experiment,
    cell: &Cell,
    domain: u32,
    link_file: Option<&Path>,
    files: &CellFiles,
) -> Result<Command> {
    let args = match exp.bench {
        Bench::Latency => {
            let mut args = ConvoyArgs::new(domain, cell.qos.as_ref(), &["bench", "latency"])
                .flag("--sizes", cell.size)
                .flag("--duration", exp.duration_s)
                .flag("--rate", cell.rate_hz)
                .flag("--loss-timeout", exp.loss_timeout_s)
                .out(Some(&files.csv))
                .samples_out(Some(&files.samples));
            if exp.ddsperf {
                args = args.flag("--baseline", "ddsperf");
            }
            if let Some(file) = link_file {
                args = args.flag(
                    "--netns-hosts",
                    std::path::absolute(file)
                        .unwrap_or_else(|_| file.to_path_buf())
                        .display(),
                );
            }
            args
        }
        Bench::Lockstep => ConvoyArgs::new(domain, cell.qos.as_ref(), &["bench", "lockstep"])
            .flag("--agents", cell.agents)
            .flag("--exchange", &cell.exchange)
            .flag("--agents-per-process", cell.agents_per_process)
            .flag("--frames", exp.frames)
            .out(Some(&files.csv)),
    };
    args.command(&HostAddress::Local, "experiment")
}

/// Runs a cell's command to its end, its timeout or Ctrl-C (`stop`).
pub fn run(
    mut command: Command,
    files: &CellFiles,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<CellOutcome> {
    use std::os::unix::process::CommandExt;
    let stdout = File::create(files.dir.join("stdout.txt")).context("cannot create stdout.txt")?;
    let stderr = File::create(files.dir.join("stderr.txt")).context("cannot create stderr.txt")?;
    let mut child = command
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        // Its own process group: Ctrl-C reaches this process only, which ends the group
        // (the bench and the pong, agents or coordinator it started) itself.
        .process_group(0)
        .spawn()
        .context("cannot start the bench")?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().context("cannot wait for the bench")? {
            break status;
        }
        if stop.load(Ordering::Relaxed) {
            end_group(&mut child);
            return Ok(CellOutcome::Interrupted);
        }
        if started.elapsed() > timeout {
            end_group(&mut child);
            return Ok(CellOutcome::Failed(format!(
                "timed out after {:.0} s",
                timeout.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if !status.success() {
        let stderr = std::fs::read_to_string(files.dir.join("stderr.txt")).unwrap_or_default();
        let reason = stderr
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with("error"))
            .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("no message")
            .trim()
            .to_string();
        return Ok(CellOutcome::Failed(format!("{status}: {reason}")));
    }
    let text = match std::fs::read_to_string(&files.csv) {
        Ok(text) => text,
        Err(e) => return Ok(CellOutcome::Failed(format!("no result CSV: {e}"))),
    };
    let rows = parse_csv(&text);
    if rows.len() < 2 {
        return Ok(CellOutcome::Failed("the bench wrote no result row".into()));
    }
    Ok(CellOutcome::Rows(rows))
}

/// SIGTERM to the cell's process group, then SIGKILL to what is left after 3 s.
fn end_group(child: &mut Child) {
    let Ok(pgid) = i32::try_from(child.id()) else {
        let _ = child.kill();
        return;
    };
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
    unsafe {
        libc::kill(-pgid, libc::SIGTERM);
    }
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above; the group may be gone already (ESRCH), which is fine.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.wait();
}

/// Reads the CSV the benches write (`bench::write_csv`: RFC 4180 quoting).
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// The round trips of a latency cell's samples file, in µs.
pub fn read_samples(path: &Path) -> Vec<f64> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    parse_csv(&text)
        .iter()
        .skip(1)
        .filter_map(|r| r.get(1).and_then(|v| v.parse().ok()))
        .collect()
}

/// A copy of the hosts launch file with `link` on its netns hosts, written to `out`: the
/// scenario and QoS paths made absolute, since the copy lives elsewhere.
pub fn write_link_file(hosts: &Path, link: &Link, out: &Path) -> Result<()> {
    let text = std::fs::read_to_string(hosts)
        .with_context(|| format!("cannot read {}", hosts.display()))?;
    let mut doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("{}: not TOML", hosts.display()))?;
    let base = hosts.parent().unwrap_or(Path::new("."));
    let absolute = |p: &str| {
        let joined = base.join(p);
        std::path::absolute(&joined)
            .unwrap_or(joined)
            .display()
            .to_string()
    };
    if let Some(toml::Value::Table(run)) = doc.get_mut("run") {
        for key in ["scenario", "qos"] {
            if let Some(toml::Value::String(p)) = run.get(key) {
                let (path, library) = match p.rsplit_once("::") {
                    Some((path, lib)) if key == "qos" => (path.to_string(), format!("::{lib}")),
                    _ => (p.clone(), String::new()),
                };
                run.insert(
                    key.into(),
                    toml::Value::String(format!("{}{library}", absolute(&path))),
                );
            }
        }
    }
    if let Some(toml::Value::Table(host_table)) = doc.get_mut("hosts") {
        for (name, host) in host_table.iter_mut() {
            let Some(host) = host.as_table_mut() else {
                continue;
            };
            let is_netns = host
                .get("address")
                .and_then(|a| a.as_str())
                .is_some_and(|a| a.starts_with("netns:"));
            if !is_netns {
                continue;
            }
            match link.per_host.get(name).or_else(|| link.per_host.get("all")) {
                Some(spec) => {
                    let value = toml::Value::try_from(spec).context("link to TOML")?;
                    host.insert("link".into(), value);
                }
                None => {
                    host.remove("link");
                }
            }
        }
    }
    let header = format!(
        "# Written by `convoy experiment`: {} with link '{}'.\n",
        hosts.display(),
        link.name
    );
    let body = toml::to_string(&doc).context("launch file to TOML")?;
    std::fs::write(out, header + &body).with_context(|| format!("cannot write {}", out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_reads_back_quoted_fields() {
        let rows = parse_csv("a,b,c\n1,\"x, y\",\"say \"\"hi\"\"\"\n2,,z\n");
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1], vec!["1", "x, y", "say \"hi\""]);
        assert_eq!(rows[2], vec!["2", "", "z"]);
    }
}
