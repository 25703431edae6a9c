//! An experiment's results as tidy rows: one observation per row (a cell's payload size, or
//! its ddsperf reference), every matrix coordinate a column, failed cells kept with their
//! reason. The CSV, the terminal table, the plots and the HTML report all read these.

use std::collections::BTreeMap;

use super::cells::Cell;
use super::file::{Bench, Experiment};

pub const CSV_HEADER: &[&str] = &[
    "cell",
    "repeat",
    "bench",
    "implementation",
    "qos",
    "link",
    "rate_hz",
    "size_bytes",
    "agents",
    "exchange",
    "status",
    "reason",
    "p50_us",
    "p90_us",
    "p99_us",
    "max_us",
    "per_s",
    "lost",
    "barrier_p50_us",
    "barrier_p99_us",
    "datagrams_per_frame",
    "agents_per_process",
];

/// One observation.
#[derive(Debug, Clone)]
pub struct ResultRow {
    pub cell: String,
    pub repeat: u32,
    pub bench: Bench,
    /// "convoy", or "ddsperf" for the reference measured in the same cell.
    pub implementation: String,
    pub qos: String,
    pub link: String,
    pub rate_hz: f64,
    pub size_bytes: usize,
    pub agents: usize,
    pub exchange: String,
    /// "ok" or "failed".
    pub status: String,
    pub reason: String,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Round trips per second (latency) or frames per second (lockstep).
    pub per_s: f64,
    pub lost: f64,
    pub barrier_p50_us: f64,
    pub barrier_p99_us: f64,
    pub datagrams_per_frame: f64,
    /// Lockstep: agents in each agent process (0 for latency rows).
    pub agents_per_process: u64,
}

impl ResultRow {
    /// The row of `cell` before any numbers: failed until proven otherwise.
    pub fn of(exp: &Experiment, cell: &Cell, id: &str) -> ResultRow {
        ResultRow {
            cell: id.to_string(),
            repeat: cell.repeat,
            bench: exp.bench,
            implementation: "convoy".into(),
            qos: cell.qos_label.clone(),
            link: cell.link_name(exp).to_string(),
            rate_hz: cell.rate_hz,
            size_bytes: cell.size,
            agents: cell.agents,
            exchange: cell.exchange.clone(),
            status: "failed".into(),
            reason: String::new(),
            p50_us: f64::NAN,
            p90_us: f64::NAN,
            p99_us: f64::NAN,
            max_us: f64::NAN,
            per_s: f64::NAN,
            lost: f64::NAN,
            barrier_p50_us: f64::NAN,
            barrier_p99_us: f64::NAN,
            datagrams_per_frame: f64::NAN,
            agents_per_process: match exp.bench {
                Bench::Latency => 0,
                Bench::Lockstep => cell.agents_per_process,
            },
        }
    }

    pub fn failed(mut self, reason: impl Into<String>) -> ResultRow {
        self.status = "failed".into();
        self.reason = reason.into();
        self
    }

    /// The rows a bench CSV (header first) gives for this cell.
    pub fn into_rows(self, csv: &[Vec<String>]) -> Vec<ResultRow> {
        let Some((header, rows)) = csv.split_first() else {
            return vec![self.failed("empty result CSV")];
        };
        let column = |row: &[String], name: &str| -> f64 {
            header
                .iter()
                .position(|h| h == name)
                .and_then(|i| row.get(i))
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN)
        };
        let text = |row: &[String], name: &str| -> String {
            header
                .iter()
                .position(|h| h == name)
                .and_then(|i| row.get(i))
                .cloned()
                .unwrap_or_default()
        };
        rows.iter()
            .map(|row| {
                let mut r = self.clone();
                r.status = "ok".into();
                match r.bench {
                    Bench::Latency => {
                        if text(row, "qos_profile") == "ddsperf" {
                            r.implementation = "ddsperf".into();
                        }
                        r.p50_us = column(row, "p50_us");
                        r.p90_us = column(row, "p90_us");
                        r.p99_us = column(row, "p99_us");
                        r.max_us = column(row, "max_us");
                        r.per_s = column(row, "msgs_per_s");
                        r.lost = column(row, "lost");
                    }
                    Bench::Lockstep => {
                        r.per_s = column(row, "frames_per_s");
                        r.barrier_p50_us = column(row, "barrier_p50_us");
                        r.barrier_p99_us = column(row, "barrier_p99_us");
                        r.datagrams_per_frame = column(row, "datagrams_per_frame");
                    }
                }
                r
            })
            .collect()
    }

    pub fn ok(&self) -> bool {
        self.status == "ok"
    }

    pub fn csv(&self) -> Vec<String> {
        let num = |v: f64| {
            if v.is_finite() {
                format!("{v:.1}")
            } else {
                String::new()
            }
        };
        let count = |v: usize| if v == 0 { String::new() } else { v.to_string() };
        vec![
            self.cell.clone(),
            self.repeat.to_string(),
            self.bench.name().to_string(),
            self.implementation.clone(),
            self.qos.clone(),
            self.link.clone(),
            format!("{}", self.rate_hz),
            count(self.size_bytes),
            count(self.agents),
            self.exchange.clone(),
            self.status.clone(),
            self.reason.clone(),
            num(self.p50_us),
            num(self.p90_us),
            num(self.p99_us),
            num(self.max_us),
            num(self.per_s),
            num(self.lost),
            num(self.barrier_p50_us),
            num(self.barrier_p99_us),
            num(self.datagrams_per_frame),
            count(self.agents_per_process as usize),
        ]
    }

    /// The series a plot line or table group belongs to: every coordinate but the x axis
    /// (size or agents) and the repeat.
    pub fn series(&self) -> String {
        match self.bench {
            Bench::Latency => {
                // ddsperf runs its own (reliable) settings whatever the cell's QoS file: one
                // series per link and rate.
                let mut s = if self.implementation == "ddsperf" {
                    "ddsperf (its reliable default)".to_string()
                } else {
                    format!("{} {}", self.implementation, self.qos)
                };
                if self.link != "host" {
                    s += &format!(", link {}", self.link);
                }
                if self.rate_hz > 0.0 {
                    s += &format!(", {} Hz", self.rate_hz);
                }
                s
            }
            Bench::Lockstep if self.agents_per_process > 1 => format!(
                "{} {}, {} agents a process",
                self.exchange, self.qos, self.agents_per_process
            ),
            Bench::Lockstep => format!("{} {}", self.exchange, self.qos),
        }
    }

    /// The x coordinate in plots and tables.
    pub fn x(&self) -> usize {
        match self.bench {
            Bench::Latency => self.size_bytes,
            Bench::Lockstep => self.agents,
        }
    }
}

/// The median of the repeats of each (series, x): what tables and plots show.
pub struct Summary {
    pub x: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub per_s: f64,
    pub lost: f64,
    pub datagrams_per_frame: f64,
    pub repeats_ok: usize,
    pub repeats_failed: usize,
}

pub fn summarise(rows: &[ResultRow]) -> BTreeMap<String, Vec<Summary>> {
    let mut groups: BTreeMap<(String, usize), Vec<&ResultRow>> = BTreeMap::new();
    for r in rows {
        groups.entry((r.series(), r.x())).or_default().push(r);
    }
    let mut out: BTreeMap<String, Vec<Summary>> = BTreeMap::new();
    for ((series, x), group) in groups {
        let ok: Vec<&&ResultRow> = group.iter().filter(|r| r.ok()).collect();
        let median = |f: &dyn Fn(&ResultRow) -> f64| {
            let mut v: Vec<f64> = ok.iter().map(|r| f(r)).filter(|v| v.is_finite()).collect();
            v.sort_by(f64::total_cmp);
            match v.len() {
                0 => f64::NAN,
                n if n % 2 == 0 => (v[n / 2 - 1] + v[n / 2]) / 2.0,
                n => v[n / 2],
            }
        };
        out.entry(series).or_default().push(Summary {
            x,
            p50_us: median(&|r| r.p50_us),
            p99_us: median(&|r| r.p99_us),
            per_s: median(&|r| r.per_s),
            lost: median(&|r| r.lost),
            datagrams_per_frame: median(&|r| r.datagrams_per_frame),
            repeats_ok: ok.len(),
            repeats_failed: group.len() - ok.len(),
        });
    }
    out
}

/// The terminal table: one line per series and x, medians over repeats.
pub fn table(bench: Bench, rows: &[ResultRow]) -> String {
    let mut out = String::new();
    match bench {
        Bench::Latency => {
            out += &format!(
                "{:<48} {:>9} {:>10} {:>10} {:>10} {:>6} {:>8}\n",
                "series", "size", "p50 us", "p99 us", "rt/s", "lost", "ok/runs"
            );
            for (series, points) in summarise(rows) {
                for p in points {
                    out += &format!(
                        "{:<48} {:>9} {:>10.1} {:>10.1} {:>10.1} {:>6} {:>8}\n",
                        series,
                        p.x,
                        p.p50_us,
                        p.p99_us,
                        p.per_s,
                        fmt_count(p.lost),
                        format!("{}/{}", p.repeats_ok, p.repeats_ok + p.repeats_failed)
                    );
                }
            }
        }
        Bench::Lockstep => {
            out += &format!(
                "{:<48} {:>7} {:>10} {:>12} {:>8}\n",
                "series", "agents", "frames/s", "dgrams/frame", "ok/runs"
            );
            for (series, points) in summarise(rows) {
                for p in points {
                    out += &format!(
                        "{:<48} {:>7} {:>10.1} {:>12.1} {:>8}\n",
                        series,
                        p.x,
                        p.per_s,
                        p.datagrams_per_frame,
                        format!("{}/{}", p.repeats_ok, p.repeats_ok + p.repeats_failed)
                    );
                }
            }
        }
    }
    out
}

fn fmt_count(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.0}")
    } else {
        "-".into()
    }
}
