//! `convoy map export`: a scenario's world as the maps an autonomy stack reads. Autoware's map
//! folder: `lanelet2_map.osm` (the lanes, [`lanelet2`]), `pointcloud_map.pcd` or tiles in
//! `pointcloud_map/` with `pointcloud_map_metadata.yaml` ([`cloud`]), and
//! `map_projector_info.yaml` ([`geo`]).
//!
//! Nothing half-written is left looking finished: every file is written under a temporary name
//! in the output folder and renamed into place only when all of them are written; a failure
//! removes the temporary files.

mod borders;
pub mod cloud;
pub mod geo;
pub mod lanelet2;
mod osm;

use std::path::{Path, PathBuf};
use std::time::Instant;

use convoy_core::scenario::Scenario;

use crate::{World, WorldError};
pub use cloud::CloudPoint;
pub use geo::Projector;
pub use lanelet2::LaneletMap;

/// Why an export failed. Every message names the file or folder.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(
        "{}: the scenario has no OpenDRIVE map ([map] opendrive = \"FILE.xodr\"): there are no \
         lanes to export",
        file.display()
    )]
    NoRoads { file: PathBuf },
    #[error(transparent)]
    World(#[from] WorldError),
    #[error("{}: cannot write: {message}", path.display())]
    Write { path: PathBuf, message: String },
    #[error("spacing {0} m: the point-cloud spacing must be between 0.05 and 10 m")]
    Spacing(f64),
}

/// What to export and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportOptions {
    /// Point-cloud spacing (m).
    pub spacing: f64,
    /// Tile side (m) for the point cloud: `None` for tiles only when the cloud is wider than
    /// [`TILE_ABOVE`] metres (100 m tiles then), `Some(0.0)` for one file always.
    pub tile: Option<f64>,
}

/// A cloud wider than this (m, in x or y) is written as tiles by default.
pub const TILE_ABOVE: f64 = 300.0;
/// The default tile side (m).
pub const DEFAULT_TILE: f64 = 100.0;

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            spacing: 0.2,
            tile: None,
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportReport {
    pub lanelets: usize,
    pub crosswalks: usize,
    pub points: usize,
    /// Tiles written (0 for one file).
    pub tiles: usize,
    /// Each file and its size in bytes.
    pub files: Vec<(PathBuf, u64)>,
    pub projector: Projector,
    /// What the exporter could not express, each naming road and lane (or object).
    pub warnings: Vec<String>,
    pub lanelet_ms: f64,
    pub cloud_ms: f64,
}

/// The Lanelet2 map and the projector of a world (what the ROS 2 bridge publishes too).
pub fn lanelets(world: &World) -> Option<(LaneletMap, Projector, Vec<String>)> {
    let roads = world.roads.as_ref()?;
    let map = LaneletMap::build(roads);
    let proj = roads.network().geo_reference().proj.clone();
    let (projector, warning) = Projector::from_proj(proj.as_deref());
    let mut warnings = map.warnings.clone();
    warnings.extend(warning);
    Some((map, projector, warnings))
}

/// Exports the world of `scenario` (already built as `world`) into `out`.
pub fn export(
    scenario: &Scenario,
    world: &World,
    out: &Path,
    options: &ExportOptions,
) -> Result<ExportReport, ExportError> {
    if !(0.05..=10.0).contains(&options.spacing) {
        return Err(ExportError::Spacing(options.spacing));
    }
    let started = Instant::now();
    let (map, projector, warnings) = lanelets(world).ok_or_else(|| ExportError::NoRoads {
        file: scenario.file.clone(),
    })?;
    let osm = map.to_osm(&projector);
    let lanelet_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    let points = cloud::sample(world, scenario, options.spacing);
    let (wide_x, wide_y) = cloud::extent(&points);
    let tile = match options.tile {
        Some(t) if t > 0.0 => Some(t),
        Some(_) => None,
        None => (wide_x.max(wide_y) > TILE_ABOVE).then_some(DEFAULT_TILE),
    };
    let mut staged = Staging::new(out)?;
    staged.write("lanelet2_map.osm", osm.as_bytes())?;
    staged.write(
        "map_projector_info.yaml",
        projector.autoware_yaml().as_bytes(),
    )?;
    let mut tiles = 0;
    match tile {
        None => staged.write("pointcloud_map.pcd", &cloud::to_pcd(&points))?,
        Some(side) => {
            let mut metadata = format!("x_resolution: {side:.1}\ny_resolution: {side:.1}\n");
            for ((tx, ty), tile_points) in cloud::tiles(&points, side) {
                let (x0, y0) = (tx as f64 * side, ty as f64 * side);
                let name = format!("{x0:.0}_{y0:.0}.pcd");
                metadata.push_str(&format!("{name}: [{x0:.1}, {y0:.1}]\n"));
                staged.write(
                    &format!("pointcloud_map/{name}"),
                    &cloud::to_pcd(&tile_points),
                )?;
                tiles += 1;
            }
            staged.write("pointcloud_map_metadata.yaml", metadata.as_bytes())?;
        }
    }
    let cloud_ms = started.elapsed().as_secs_f64() * 1e3;
    let files = staged.commit()?;
    // The other form of the cloud, from an earlier export, would contradict this one.
    let stale: &[&str] = if tiles > 0 {
        &["pointcloud_map.pcd"]
    } else {
        &["pointcloud_map", "pointcloud_map_metadata.yaml"]
    };
    for name in stale {
        let path = out.join(name);
        let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
    }
    let crosswalks = map
        .lanelets
        .iter()
        .filter(|l| l.kind == lanelet2::LaneletKind::Crosswalk)
        .count();
    Ok(ExportReport {
        lanelets: map.lanelets.len() - crosswalks,
        crosswalks,
        points: points.len(),
        tiles,
        files,
        projector,
        warnings,
        lanelet_ms,
        cloud_ms,
    })
}

/// Files written under a temporary folder inside the output folder, moved into place together.
struct Staging {
    out: PathBuf,
    temp: PathBuf,
    names: Vec<String>,
    committed: bool,
}

impl Staging {
    fn new(out: &Path) -> Result<Staging, ExportError> {
        let fail = |path: &Path, e: std::io::Error| ExportError::Write {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(out).map_err(|e| fail(out, e))?;
        let temp = out.join(format!(".convoy-export-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&temp);
        std::fs::create_dir(&temp).map_err(|e| fail(out, e))?;
        Ok(Staging {
            out: out.to_path_buf(),
            temp,
            names: Vec::new(),
            committed: false,
        })
    }

    fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), ExportError> {
        let path = self.temp.join(name);
        let fail = |e: std::io::Error| ExportError::Write {
            path: self.out.join(name),
            message: e.to_string(),
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(fail)?;
        }
        std::fs::write(&path, bytes).map_err(fail)?;
        let top = name.split('/').next().unwrap_or(name).to_string();
        if !self.names.contains(&top) {
            self.names.push(top);
        }
        Ok(())
    }

    /// Moves every staged file (or folder) into the output folder, replacing what was there.
    fn commit(mut self) -> Result<Vec<(PathBuf, u64)>, ExportError> {
        let mut files = Vec::new();
        for name in &self.names {
            let (from, to) = (self.temp.join(name), self.out.join(name));
            if to.is_dir() {
                let _ = std::fs::remove_dir_all(&to);
            }
            std::fs::rename(&from, &to).map_err(|e| ExportError::Write {
                path: to.clone(),
                message: e.to_string(),
            })?;
            files.push((to.clone(), size_of(&to)));
        }
        self.committed = true;
        let _ = std::fs::remove_dir_all(&self.temp);
        Ok(files)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// Bytes in a file, or in every file of a folder.
fn size_of(path: &Path) -> u64 {
    if path.is_dir() {
        std::fs::read_dir(path)
            .map(|entries| entries.flatten().map(|e| size_of(&e.path())).sum::<u64>())
            .unwrap_or(0)
    } else {
        std::fs::metadata(path).map_or(0, |m| m.len())
    }
}
