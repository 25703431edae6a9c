//! `convoy bench world SCENARIO`: what building a scenario's world costs each node, in
//! milliseconds (median and slowest of `--repeat` rounds): reading and hashing the files (every
//! node, the coordinator only this), baking the OpenDRIVE roads, meshing surfaces and road
//! marks, loading glTF meshes, and the trimesh shapes an agent (solid surfaces) and a lidar (all
//! surfaces) build once per process.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use convoy_core::scenario::{resolve_path, Scenario};
use convoy_world::{colliders, file_digests, mesh_surfaces, RoadMap, World};

use super::{percentile, write_csv};

#[derive(Debug, Args)]
pub struct WorldBenchArgs {
    /// Scenario file (or a name under launch/scenarios/) whose [map] is measured
    pub scenario: PathBuf,
    /// Rounds measured
    #[arg(long, default_value_t = 10)]
    pub repeat: usize,
    /// Write the results as CSV (step,rounds,median_ms,max_ms)
    #[arg(long)]
    pub out: Option<PathBuf>,
}

const CSV_HEADER: [&str; 4] = ["step", "rounds", "median_ms", "max_ms"];

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

pub fn run(args: &WorldBenchArgs) -> Result<()> {
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let scenario = Scenario::load(&resolve_path(&args.scenario))?;
    if !scenario.has_map_files() {
        bail!(
            "{} names no map files (opendrive, meshes): nothing to measure",
            args.scenario.display()
        );
    }
    let steps = [
        "files read and hashed",
        "roads baked",
        "surfaces meshed",
        "glTF meshes loaded",
        "agent trimesh shapes",
        "lidar trimesh shapes",
        "whole world (agent)",
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); steps.len()];
    eprintln!(
        "measuring {} rounds of {}",
        args.repeat,
        args.scenario.display()
    );
    for _ in 0..args.repeat {
        let t = Instant::now();
        file_digests(&scenario)?;
        times[0].push(ms(t));
        let mut surfaces = Vec::new();
        if let Some(name) = &scenario.map.opendrive {
            let t = Instant::now();
            let roads = RoadMap::load(&scenario.map_path(name))?;
            times[1].push(ms(t));
            let t = Instant::now();
            surfaces = roads.surfaces();
            times[2].push(ms(t));
        }
        let t = Instant::now();
        surfaces.extend(mesh_surfaces(&scenario)?);
        times[3].push(ms(t));
        let t = Instant::now();
        let solid = colliders::shapes(&surfaces, true);
        times[4].push(ms(t));
        let t = Instant::now();
        let all = colliders::shapes(&surfaces, false);
        times[5].push(ms(t));
        drop((solid, all));
        let t = Instant::now();
        let world = World::load(&scenario)?;
        world.solid_shapes();
        times[6].push(ms(t));
    }
    let world = World::load(&scenario)?;
    println!(
        "{}: {} surfaces, {} triangles",
        args.scenario.display(),
        world.surfaces.len(),
        world.triangle_count()
    );
    println!("{:<24} {:>10} {:>10}", "step", "median ms", "max ms");
    let mut rows = Vec::new();
    for (step, mut t) in steps.iter().zip(times) {
        if t.is_empty() {
            continue;
        }
        t.sort_by(f64::total_cmp);
        let (median, max) = (percentile(&t, 0.5), t[t.len() - 1]);
        println!("{step:<24} {median:>10.1} {max:>10.1}");
        rows.push(vec![
            step.to_string(),
            t.len().to_string(),
            format!("{median:.2}"),
            format!("{max:.2}"),
        ]);
    }
    if let Some(out) = &args.out {
        write_csv(out, &CSV_HEADER, rows)?;
    }
    Ok(())
}
