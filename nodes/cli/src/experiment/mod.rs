//! `convoy experiment FILE.toml`: a matrix of `convoy bench` runs (QoS profiles, payload
//! sizes, rates and link conditions for round trips; agents and exchange for lockstep;
//! repeats and warm-up), with a progress line and ETA, a summary table, and a results folder:
//! the tidy `results.csv`, `report.html` with plots, the plots as PNG, the experiment file and
//! the machine's facts, and each cell's own output under `cells/`.
//!
//! Each cell runs as a child process (its own process group), so a cell that crashes, hangs
//! past `cell_timeout_s` or finds no peer is recorded as failed with its reason and the sweep
//! goes on. `results.csv` is rewritten after every cell, so Ctrl-C leaves the finished cells
//! readable; it also ends the running cell's processes and takes down the namespaces a link
//! brought up.

mod cells;
mod file;
mod machine;
mod plots;
mod report;
mod results;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

use cells::{Cell, CellFiles, CellOutcome};
pub use file::{Bench, Experiment};
use results::ResultRow;

#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// The experiment file (see launch/experiments/*.toml)
    pub file: PathBuf,
    /// Results folder (default: results/NAME-YYYYMMDD-HHMMSS)
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Check the file and list the cells, run nothing
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(domain: u32, args: &ExperimentArgs) -> Result<()> {
    let exp = Experiment::load(&args.file)?;
    let cells = cells::expand(&exp);
    if args.dry_run {
        println!(
            "{}: {} cells ({} bench{})",
            args.file.display(),
            cells.len(),
            exp.bench.name(),
            if exp.warmup > 0 {
                format!(", {} warm-up runs first", exp.warmup)
            } else {
                String::new()
            }
        );
        for cell in &cells {
            println!("  {}", cell.id(&exp));
        }
        return Ok(());
    }
    let dir = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!("{}-{}", exp.name, crate::stamp::utc_stamp_now()))
    });
    let cells_dir = dir.join("cells");
    std::fs::create_dir_all(&cells_dir)
        .with_context(|| format!("cannot create {}", cells_dir.display()))?;
    std::fs::write(dir.join("experiment.toml"), &exp.text)
        .with_context(|| format!("cannot write {}", dir.join("experiment.toml").display()))?;
    let machine = machine::Machine::now();
    std::fs::write(
        dir.join("machine.json"),
        serde_json::to_string_pretty(&machine)? + "\n",
    )
    .context("cannot write machine.json")?;
    let stop = crate::process::stop_flag()?;

    println!(
        "convoy experiment {}: {} cells, results in {}",
        exp.name,
        cells.len(),
        dir.display()
    );
    let mut sweep = Sweep::new(&exp, &dir, domain, cells.len(), &stop);
    let mut by_link: BTreeMap<Option<usize>, Vec<&Cell>> = BTreeMap::new();
    for cell in &cells {
        by_link.entry(cell.link).or_default().push(cell);
    }
    let mut warmups_left = exp.warmup;
    for (link, group) in by_link {
        if sweep.interrupted() {
            break;
        }
        let links = match link {
            Some(l) => match LinkUp::new(&exp, l, &dir) {
                Ok(up) => Some(up),
                Err(e) => {
                    for cell in &group {
                        sweep.record_failure(cell, &format!("link set-up failed: {e:#}"));
                    }
                    continue;
                }
            },
            None => None,
        };
        let link_file = links.as_ref().map(|l| l.file.as_path());
        while warmups_left > 0 && !sweep.interrupted() {
            warmups_left -= 1;
            if let Some(first) = group.first() {
                sweep.warm_up(first, link_file)?;
            }
        }
        for cell in group {
            if sweep.interrupted() {
                break;
            }
            sweep.run_cell(cell, link_file)?;
        }
    }
    sweep.finish(&machine)
}

/// The sweep in progress: rows so far, progress, where things go.
struct Sweep<'a> {
    exp: &'a Experiment,
    dir: &'a Path,
    domain: u32,
    total: usize,
    done: usize,
    started: Instant,
    rows: Vec<ResultRow>,
    /// Round trips of each latency series and size, for the CDFs.
    samples: BTreeMap<usize, BTreeMap<String, Vec<f64>>>,
    stop: &'a AtomicBool,
    bar: Option<indicatif::ProgressBar>,
}

impl<'a> Sweep<'a> {
    fn new(
        exp: &'a Experiment,
        dir: &'a Path,
        domain: u32,
        total: usize,
        stop: &'a AtomicBool,
    ) -> Sweep<'a> {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} cells, {elapsed} spent, ETA {eta}  {msg}",
            ) {
                bar.set_style(style);
            }
            bar
        });
        Sweep {
            exp,
            dir,
            domain,
            total,
            done: 0,
            started: Instant::now(),
            rows: Vec::new(),
            samples: BTreeMap::new(),
            stop,
            bar,
        }
    }

    fn interrupted(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// A line above the progress bar, or on its own where stderr is no terminal.
    fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn eta(&self) -> String {
        if self.done == 0 {
            return "unknown".into();
        }
        let per_cell = self.started.elapsed().as_secs_f64() / self.done as f64;
        let left = per_cell * (self.total - self.done) as f64;
        format!("{}m{:02}s", (left / 60.0) as u64, (left % 60.0) as u64)
    }

    /// Runs `cell` with its output in `folder/ID/`.
    fn execute(
        &self,
        cell: &Cell,
        link_file: Option<&Path>,
        folder: &str,
    ) -> Result<(CellFiles, CellOutcome)> {
        let files = CellFiles::new(&self.dir.join(folder), &cell.id(self.exp))?;
        let command = cells::command(self.exp, cell, self.domain, link_file, &files)?;
        let timeout = Duration::from_secs_f64(self.exp.cell_timeout_s);
        let outcome = cells::run(command, &files, timeout, self.stop)?;
        Ok((files, outcome))
    }

    fn warm_up(&mut self, cell: &Cell, link_file: Option<&Path>) -> Result<()> {
        self.say(&format!("warm-up: {}", cell.id(self.exp)));
        self.execute(cell, link_file, "warmup")?;
        Ok(())
    }

    fn run_cell(&mut self, cell: &Cell, link_file: Option<&Path>) -> Result<()> {
        let id = cell.id(self.exp);
        if let Some(bar) = &self.bar {
            bar.set_message(id.clone());
        }
        let began = Instant::now();
        let base = ResultRow::of(self.exp, cell, &id);
        let (files, outcome) = self.execute(cell, link_file, "cells")?;
        let verdict = match outcome {
            CellOutcome::Interrupted => return Ok(()),
            CellOutcome::Failed(reason) => {
                self.rows.push(base.failed(reason.clone()));
                format!("FAILED: {reason}")
            }
            CellOutcome::Rows(csv) => {
                let rows = base.into_rows(&csv);
                if self.exp.bench == Bench::Latency {
                    if let Some(convoy) = rows.iter().find(|r| r.implementation == "convoy") {
                        self.samples
                            .entry(cell.size)
                            .or_default()
                            .entry(convoy.series())
                            .or_default()
                            .extend(cells::read_samples(&files.samples));
                    }
                }
                let first = rows.first().map(|r| match self.exp.bench {
                    Bench::Latency => format!("p50 {:.1} µs", r.p50_us),
                    Bench::Lockstep => format!("{:.1} frames/s", r.per_s),
                });
                self.rows.extend(rows);
                format!("ok, {}", first.unwrap_or_default())
            }
        };
        self.done += 1;
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
        self.say(&format!(
            "[{}/{}] {id}: {verdict} ({:.1} s; ETA {})",
            self.done,
            self.total,
            began.elapsed().as_secs_f64(),
            self.eta()
        ));
        self.write_csv()
    }

    fn record_failure(&mut self, cell: &Cell, reason: &str) {
        let id = cell.id(self.exp);
        self.rows
            .push(ResultRow::of(self.exp, cell, &id).failed(reason.to_string()));
        self.done += 1;
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
        self.say(&format!(
            "[{}/{}] {id}: FAILED: {reason}",
            self.done, self.total
        ));
    }

    fn write_csv(&self) -> Result<()> {
        crate::bench::write_csv(
            &self.dir.join("results.csv"),
            results::CSV_HEADER,
            self.rows.iter().map(ResultRow::csv),
        )
    }

    fn finish(self, machine: &machine::Machine) -> Result<()> {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let interrupted = self.interrupted();
        self.write_csv()?;
        println!("\n{}", results::table(self.exp.bench, &self.rows));
        let figures = self.plots();
        let html = report::html(self.exp, machine, &self.rows, &figures, interrupted);
        let page = self.dir.join("report.html");
        std::fs::write(&page, html).with_context(|| format!("cannot write {}", page.display()))?;
        let failed = self.rows.iter().filter(|r| !r.ok()).count();
        println!(
            "results: {}\nreport:  {}\n{} rows, {} failed",
            self.dir.join("results.csv").display(),
            page.display(),
            self.rows.len(),
            failed
        );
        if interrupted {
            bail!(
                "interrupted: {} of {} cells finished; their results are in {}",
                self.done,
                self.total,
                self.dir.display()
            );
        }
        Ok(())
    }

    /// Every plot the bench has; one that cannot be drawn is left out with a warning, so a
    /// plotting problem never costs the results.
    fn plots(&self) -> Vec<report::Figure> {
        let ok: Vec<ResultRow> = self.rows.iter().filter(|r| r.ok()).cloned().collect();
        let mut charts = Vec::new();
        match self.exp.bench {
            Bench::Latency => {
                charts.push(plots::latency_percentiles(&ok));
                for (size, series) in &self.samples {
                    charts.push(plots::latency_cdf(*size, series));
                }
            }
            Bench::Lockstep => charts.push(plots::lockstep_rates(&ok)),
        }
        let mut figures = Vec::new();
        for chart in charts {
            match plots::render(&chart, self.dir) {
                Ok((svg, png)) => {
                    println!("plot:    {}", png.display());
                    figures.push(report::Figure {
                        svg,
                        png_name: png
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default(),
                        title: chart.title.clone(),
                    });
                }
                Err(e) => eprintln!("warning: {e:#}"),
            }
        }
        figures
    }
}

/// A link's namespaces, up while the value lives (taken down on drop, also on Ctrl-C or an
/// error).
struct LinkUp {
    file: PathBuf,
}

impl LinkUp {
    fn new(exp: &Experiment, link: usize, dir: &Path) -> Result<LinkUp> {
        let hosts = exp.hosts.as_ref().context("links need hosts")?;
        let link = &exp.links[link];
        let links_dir = dir.join("links");
        std::fs::create_dir_all(&links_dir)?;
        let file = links_dir.join(format!("{}.toml", link.name));
        cells::write_link_file(hosts, link, &file)?;
        // Left over from an interrupted run, or another link of this sweep.
        let _ = crate::launch_cmd::netns_down(&file);
        let up = LinkUp { file };
        crate::launch_cmd::netns_up(&up.file)?;
        Ok(up)
    }
}

impl Drop for LinkUp {
    fn drop(&mut self) {
        if let Err(e) = crate::launch_cmd::netns_down(&self.file) {
            eprintln!("warning: {e:#}");
        }
    }
}
