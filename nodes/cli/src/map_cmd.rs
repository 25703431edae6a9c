//! `convoy map info FILE.xodr`: what an OpenDRIVE file holds, as convoy bakes it (roads,
//! junctions, lanes by type, lengths, bounds, load time), and optionally every driving lane's
//! centre line for an independent check of the geometry.

use std::time::Instant;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use convoy_world::RoadMap;

#[derive(Debug, Subcommand)]
pub enum MapCommand {
    /// Roads, junctions, lanes by type, total length and bounds of an OpenDRIVE file
    Info(MapInfoArgs),
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
