//! The sensor nodes' stage times, as `convoy bench sensors` prints and writes them: each sensor
//! node reports, in its NodeStatus counters, the p50, p99 and mean of every stage of its camera
//! images (`stage/WxH/<stage>/<stat>`) and of its frames (`stage/frame/<stage>/<stat>`); see
//! `convoy_sensor::stages` for what each stage covers.

use std::path::{Path, PathBuf};

use convoy_core::messages::Counter;

/// The stages of an image and of a frame, in the order they happen.
const IMAGE_STAGES: &[&str] = &["submit", "queue", "gpu", "map", "convert", "publish"];
const FRAME_STAGES: &[&str] = &["states", "dispatch", "images", "frame", "barrier"];

/// The CSV columns of the stage table (`<out>_stages.csv` beside `--out`).
pub const CSV_HEADER: &[&str] = &[
    "config",
    "sensor_nodes",
    "node",
    "scope",
    "stage",
    "count",
    "p50_ms",
    "p99_ms",
    "mean_ms",
    "total_s",
];

/// One stage of one node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageRow {
    pub node: String,
    /// `WxH` of a camera, or `frame`.
    pub scope: String,
    pub stage: String,
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub mean_ns: u64,
}

impl StageRow {
    /// Time spent in the stage over the run (count x mean), seconds.
    pub fn total_s(&self) -> f64 {
        self.count as f64 * self.mean_ns as f64 * 1e-9
    }

    /// Where the row sorts: cameras by size, then the frame; stages in the order they happen.
    fn rank(&self) -> (u8, u64, usize) {
        let position = |names: &[&str]| {
            names
                .iter()
                .position(|n| *n == self.stage)
                .unwrap_or(usize::MAX)
        };
        if self.scope == "frame" {
            return (1, 0, position(FRAME_STAGES));
        }
        let pixels = self
            .scope
            .split_once('x')
            .and_then(|(w, h)| Some(w.parse::<u64>().ok()? * h.parse::<u64>().ok()?));
        (0, pixels.unwrap_or(u64::MAX), position(IMAGE_STAGES))
    }
}

/// The stages in the counters of node `node`, cameras by size first, then the frame.
pub fn rows_of(node: &str, counters: &[Counter]) -> Vec<StageRow> {
    let mut rows: Vec<StageRow> = Vec::new();
    for c in counters {
        let Some(rest) = c.name.strip_prefix("stage/") else {
            continue;
        };
        let mut parts = rest.rsplitn(3, '/');
        let (Some(stat), Some(stage), Some(scope)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let at = match rows
            .iter()
            .position(|r| r.scope == scope && r.stage == stage)
        {
            Some(i) => i,
            None => {
                rows.push(StageRow {
                    node: node.to_string(),
                    scope: scope.to_string(),
                    stage: stage.to_string(),
                    ..StageRow::default()
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[at];
        match stat {
            "count" => row.count = c.value,
            "p50_ns" => row.p50_ns = c.value,
            "p99_ns" => row.p99_ns = c.value,
            "mean_ns" => row.mean_ns = c.value,
            _ => {}
        }
    }
    rows.sort_by_key(|r| (r.rank(), r.scope.clone(), r.stage.clone()));
    rows
}

/// Prints one node's stages under a heading.
pub fn print(heading: &str, rows: &[StageRow]) {
    if rows.is_empty() {
        return;
    }
    println!("  stages of {heading}:");
    println!(
        "    {:<10} {:<9} {:>7} {:>9} {:>9} {:>9} {:>8}",
        "scope", "stage", "count", "p50 ms", "p99 ms", "mean ms", "total s"
    );
    for r in rows {
        println!(
            "    {:<10} {:<9} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>8.2}",
            r.scope,
            r.stage,
            r.count,
            r.p50_ns as f64 * 1e-6,
            r.p99_ns as f64 * 1e-6,
            r.mean_ns as f64 * 1e-6,
            r.total_s()
        );
    }
}

/// A CSV record of `row` ([`CSV_HEADER`]).
pub fn csv(config: &str, sensor_nodes: usize, row: &StageRow) -> Vec<String> {
    vec![
        config.to_string(),
        sensor_nodes.to_string(),
        row.node.clone(),
        row.scope.clone(),
        row.stage.clone(),
        row.count.to_string(),
        format!("{:.4}", row.p50_ns as f64 * 1e-6),
        format!("{:.4}", row.p99_ns as f64 * 1e-6),
        format!("{:.4}", row.mean_ns as f64 * 1e-6),
        format!("{:.3}", row.total_s()),
    ]
}

/// Where the stage table goes beside `out`: `camera.csv` -> `camera_stages.csv`.
pub fn csv_path(out: &Path) -> PathBuf {
    let stem = out
        .file_stem()
        .map_or_else(|| "sensors".into(), |s| s.to_string_lossy().into_owned());
    let ext = out
        .extension()
        .map_or_else(|| "csv".into(), |e| e.to_string_lossy().into_owned());
    out.with_file_name(format!("{stem}_stages.{ext}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(name: &str, value: u64) -> Counter {
        Counter {
            name: name.into(),
            value,
        }
    }

    #[test]
    fn rows_come_from_the_stage_counters_in_stage_order() {
        let counters = [
            counter("published", 7),
            counter("stage/frame/barrier/count", 3),
            counter("stage/1440x960/publish/p50_ns", 4_000_000),
            counter("stage/1440x960/gpu/count", 2),
            counter("stage/1440x960/gpu/p50_ns", 9_000_000),
            counter("stage/1440x960/gpu/p99_ns", 12_000_000),
            counter("stage/1440x960/gpu/mean_ns", 10_000_000),
            counter("stage/180x120/submit/count", 5),
            counter("stage/frame/states/count", 3),
            counter("world/town.xodr", 99),
        ];
        let rows = rows_of("sensor/main", &counters);
        let names: Vec<String> = rows
            .iter()
            .map(|r| format!("{} {}", r.scope, r.stage))
            .collect();
        assert_eq!(
            names,
            [
                "180x120 submit",
                "1440x960 gpu",
                "1440x960 publish",
                "frame states",
                "frame barrier"
            ]
        );
        let gpu = &rows[1];
        assert_eq!(gpu.node, "sensor/main");
        assert_eq!(
            (gpu.count, gpu.p50_ns, gpu.p99_ns),
            (2, 9_000_000, 12_000_000)
        );
        assert!((gpu.total_s() - 0.02).abs() < 1e-12);
        let record = csv("1440x960, 2 agents", 1, gpu);
        assert_eq!(record[5..], ["2", "9.0000", "12.0000", "10.0000", "0.020"]);
    }

    #[test]
    fn the_stage_table_goes_beside_the_output() {
        assert_eq!(
            csv_path(Path::new("docs/bench/camera.csv")),
            Path::new("docs/bench/camera_stages.csv")
        );
        assert_eq!(csv_path(Path::new("out")), Path::new("out_stages.csv"));
    }
}
