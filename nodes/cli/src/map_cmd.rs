//! `convoy map info FILE.xodr`: what an OpenDRIVE file holds, as convoy bakes it (roads,
//! junctions, lanes by type, lengths, bounds, load time), and optionally every driving lane's
//! centre line for an independent check of the geometry. `convoy map export SCENARIO --out
//! DIR`: the scenario's world as Autoware's map folder (convoy_world::export).

use std::time::Instant;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use convoy_core::scenario::Scenario;
use convoy_world::export::{export as export_world, ExportOptions};
use convoy_world::{RoadMap, World};

#[derive(Debug, Subcommand)]
pub enum MapCommand {
    /// Roads, junctions, lanes by type, total length and bounds of an OpenDRIVE file
    Info(MapInfoArgs),
    /// Write a scenario's world as Autoware's map folder: lanelet2_map.osm, the point-cloud map
    /// (pointcloud_map.pcd, or tiles with their metadata) and map_projector_info.yaml
    Export(MapExportArgs),
}

#[derive(Debug, Args)]
pub struct MapExportArgs {
    /// The scenario whose world to export (needs [map] opendrive)
    pub scenario: PathBuf,
    /// The folder to write into (made if missing; files of an earlier export are replaced)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Point-cloud spacing in metres
    #[arg(long, default_value_t = 0.2)]
    pub spacing: f64,
    /// Point-cloud tile side in metres (0: one file); by default 100 m tiles when the cloud is
    /// wider than 300 m
    #[arg(long)]
    pub tile: Option<f64>,
    /// Print a JSON report instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MapInfoArgs {
    /// The OpenDRIVE file (.xodr)
    pub file: PathBuf,
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Also write every driving lane's centre line (road, section, lane id, points) as JSON to
    /// FILE: the input of the independent check tests/interop/xodr_centres.py
    #[arg(long, value_name = "FILE")]
    pub lane_centres: Option<PathBuf>,
}

pub fn info(args: &MapInfoArgs) -> Result<()> {
    let started = Instant::now();
    let map = RoadMap::load(&args.file)?;
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    let surfaces = map.surfaces();
    let mesh_ms = started.elapsed().as_secs_f64() * 1e3;
    let triangles: usize = surfaces.iter().map(|s| s.mesh.triangles.len()).sum();
    let summary = map.summary();
    if let Some(out) = &args.lane_centres {
        let centres = serde_json::json!({
            "file": args.file.display().to_string(),
            "lanes": map.driving_lane_centres(),
        });
        let text = serde_json::to_string(&centres)?;
        std::fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))?;
    }
    if args.json {
        let out = serde_json::json!({
            "file": args.file.display().to_string(),
            "summary": summary,
            "surface_triangles": triangles,
            "load_ms": load_ms,
            "mesh_ms": mesh_ms,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let (lo, hi) = summary.bounds;
    println!("{}", args.file.display());
    println!("  roads          {}", summary.roads);
    println!("  junctions      {}", summary.junctions);
    println!(
        "  lanes          {} ({})",
        summary.lanes_by_type.values().sum::<usize>(),
        summary
            .lanes_by_type
            .iter()
            .map(|(kind, n)| format!("{n} {kind}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  length         {:.1} m of road, {:.1} m of driving lanes",
        summary.road_length, summary.driving_lane_length
    );
    println!(
        "  bounds         x {:.1} .. {:.1}, y {:.1} .. {:.1}, z {:.2} .. {:.2} m ({:.0} x {:.0} m)",
        lo[0],
        hi[0],
        lo[1],
        hi[1],
        lo[2],
        hi[2],
        hi[0] - lo[0],
        hi[1] - lo[1]
    );
    println!("  road marks     {}", summary.road_marks);
    println!("  surface        {triangles} triangles");
    println!("  warnings       {}", summary.warnings);
    println!("  loaded in      {load_ms:.0} ms, meshed in {mesh_ms:.0} ms");
    Ok(())
}

pub fn export(args: &MapExportArgs) -> Result<()> {
    let scenario = Scenario::load(&convoy_core::scenario::resolve_path(&args.scenario))?;
    if scenario.map.opendrive.is_none() {
        anyhow::bail!(
            "{}: the scenario has no OpenDRIVE map ([map] opendrive = \"FILE.xodr\"): there are \
             no lanes to export",
            args.scenario.display()
        );
    }
    eprintln!("loading the world of {} ...", args.scenario.display());
    let world = World::load(&scenario)?;
    eprintln!(
        "exporting to {} (lanelets, point cloud at {} m) ...",
        args.out.display(),
        args.spacing
    );
    let options = ExportOptions {
        spacing: args.spacing,
        tile: args.tile,
    };
    let report = export_world(&scenario, &world, &args.out, &options)?;
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    if args.json {
        let out = serde_json::json!({
            "scenario": args.scenario.display().to_string(),
            "out": args.out.display().to_string(),
            "lanelets": report.lanelets,
            "crosswalks": report.crosswalks,
            "points": report.points,
            "tiles": report.tiles,
            "files": report.files.iter().map(|(p, n)| serde_json::json!({"path": p.display().to_string(), "bytes": n})).collect::<Vec<_>>(),
            "warnings": report.warnings,
            "lanelet_ms": report.lanelet_ms,
            "cloud_ms": report.cloud_ms,
            "world_ms": world.load_ms,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "{}: {} lanelets, {} crosswalks, {} points{} ({} warnings)",
        args.out.display(),
        report.lanelets,
        report.crosswalks,
        report.points,
        if report.tiles > 0 {
            format!(" in {} tiles", report.tiles)
        } else {
            String::new()
        },
        report.warnings.len()
    );
    for (path, bytes) in &report.files {
        println!(
            "  {:<40} {:>10.1} KB",
            path.display(),
            *bytes as f64 / 1024.0
        );
    }
    println!(
        "  world {:.0} ms, lanelets {:.0} ms, point cloud {:.0} ms",
        world.load_ms, report.lanelet_ms, report.cloud_ms
    );
    Ok(())
}
