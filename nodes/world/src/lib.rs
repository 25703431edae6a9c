//! convoy-world: the static world of a scenario, built the same way by every node that needs
//! it (agents for physics, sensor nodes for lidar and camera, the live view, the map exporter).
//!
//! Map files in (the scenario's `[map]`: ground and boxes, an OpenDRIVE road network, glTF
//! meshes); out come [`Surface`]s (triangles with a [`Material`]), the lane graph and lane
//! queries ([`RoadMap`]), where each agent starts, and a digest of the files that the
//! coordinator compares across nodes so that hosts with different copies of a map cannot run
//! silently apart (docs/DESIGN.md, "Worlds and maps").
//!
//! Ground and boxes stay analytic shapes in the nodes that use them (a cuboid collider, an
//! instanced box); this crate adds what only files can describe.

use std::path::PathBuf;
use std::time::Instant;

use convoy_core::scenario::{Scenario, StartPose};
use sha2::{Digest, Sha256};

pub mod colliders;
pub mod export;
pub mod gltf_mesh;
pub mod lanes;
pub mod roads;
mod straight_runs;
pub mod surface;

pub use lanes::{CentrePose, JunctionZone, LaneCentre, LanePos, LaneStart};
pub use roads::{MapSummary, RoadMap};
pub use surface::{Material, Surface, SurfaceMesh};
pub use xodr::LaneId;

/// How far below the lowest lane centre the ground plane lies under an OpenDRIVE map, so the
/// road is what cars, rays and cameras meet.
pub const GROUND_BELOW_ROADS: f64 = 0.1;

/// Why a world cannot be built. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error("{}: cannot read: {message}", file.display())]
    Read { file: PathBuf, message: String },
    #[error("{}: {message}", file.display())]
    OpenDrive { file: PathBuf, message: String },
    #[error(transparent)]
    Gltf(#[from] gltf_mesh::GltfError),
    #[error("{}: {message}", file.display())]
    Start { file: PathBuf, message: String },
    /// A scenario line that the world cannot satisfy (a lane start on a missing road, say).
    #[error("{file}:{line}: {message}")]
    Scenario {
        file: String,
        line: usize,
        message: String,
    },
}

/// One file of the world and the SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldFile {
    /// As the scenario names it (relative to the scenario's folder).
    pub name: String,
    pub path: PathBuf,
    pub sha256: [u8; 32],
}

impl WorldFile {
    /// The first 64 bits of the digest: what a node announces (`NodeStatus` counters).
    pub fn short_digest(&self) -> u64 {
        let mut first = [0u8; 8];
        first.copy_from_slice(&self.sha256[..8]);
        u64::from_be_bytes(first)
    }
}

/// Where an agent starts: position on the surface and heading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StartPlace {
    pub x: f64,
    pub y: f64,
    /// Height of the surface under the start (0 on the plane).
    pub z: f64,
    pub yaw: f64,
    /// The lane, for a lane start.
    pub lane: Option<LanePos>,
}

/// The static world of one scenario.
#[derive(Debug)]
pub struct World {
    pub files: Vec<WorldFile>,
    pub roads: Option<RoadMap>,
    /// Road surfaces, road marks and meshes (not the ground plane or the scenario's boxes), cut
    /// into tiles of [`surface::TILE`] metres.
    pub surfaces: Vec<Surface>,
    /// Height of the top of the ground plane.
    pub ground_z: f64,
    /// Milliseconds it took to read, bake and mesh the files.
    pub load_ms: f64,
    /// Trimesh shapes of the surfaces, built on first use ([`World::solid_shapes`]).
    solid: std::sync::OnceLock<Vec<colliders::StaticShape>>,
    all: std::sync::OnceLock<Vec<colliders::StaticShape>>,
}

/// Reads and hashes the scenario's map files, without baking them (what the coordinator needs).
pub fn world_files(scenario: &Scenario) -> Result<Vec<WorldFile>, WorldError> {
    let names = scenario
        .map
        .opendrive
        .iter()
        .chain(scenario.map.meshes.iter().map(|m| &m.file));
    names
        .map(|name| {
            let path = scenario.map_path(name);
            let bytes = std::fs::read(&path).map_err(|e| WorldError::Read {
                file: path.clone(),
                message: e.to_string(),
            })?;
            Ok(WorldFile {
                name: name.clone(),
                sha256: Sha256::digest(&bytes).into(),
                path,
            })
        })
        .collect()
}

/// `(name, first 64 bits of the SHA-256)` of every map file of the scenario: what a node
/// announces in its status and the coordinator compares.
pub fn file_digests(scenario: &Scenario) -> Result<Vec<(String, u64)>, WorldError> {
    Ok(world_files(scenario)?
        .iter()
        .map(|f| (f.name.clone(), f.short_digest()))
        .collect())
}

/// The surfaces of every glTF mesh the scenario places, in scenario order.
pub fn mesh_surfaces(scenario: &Scenario) -> Result<Vec<Surface>, WorldError> {
    let mut surfaces = Vec::new();
    for mesh in &scenario.map.meshes {
        let placement = gltf_mesh::Placement {
            position: mesh.position,
            yaw: mesh.yaw,
            scale: mesh.scale,
        };
        surfaces.extend(gltf_mesh::load(&scenario.map_path(&mesh.file), &placement)?);
    }
    Ok(surfaces)
}

impl World {
    /// The world of a scenario with no map files: the ground plane at z = 0 and nothing else.
    pub fn flat() -> World {
        World {
            files: Vec::new(),
            roads: None,
            surfaces: Vec::new(),
            ground_z: 0.0,
            load_ms: 0.0,
            solid: Default::default(),
            all: Default::default(),
        }
    }

    /// Reads, bakes and meshes every map file of `scenario`, and checks that every agent's
    /// start is on the map.
    pub fn load(scenario: &Scenario) -> Result<World, WorldError> {
        let started = Instant::now();
        let files = world_files(scenario)?;
        let roads = match &scenario.map.opendrive {
            Some(name) => Some(RoadMap::load(&scenario.map_path(name))?),
            None => None,
        };
        let mut surfaces = roads.as_ref().map(RoadMap::surfaces).unwrap_or_default();
        surfaces.extend(mesh_surfaces(scenario)?);
        let surfaces = surface::tiled(surfaces);
        let ground_z = roads
            .as_ref()
            .and_then(|r| r.network().min_elevation())
            .map_or(0.0, |z| f64::from(z) - GROUND_BELOW_ROADS);
        let world = World {
            files,
            roads,
            surfaces,
            ground_z: ground_z.min(0.0),
            load_ms: started.elapsed().as_secs_f64() * 1e3,
            solid: Default::default(),
            all: Default::default(),
        };
        for agent in &scenario.agents {
            world.start_of(&agent.start).map_err(|e| {
                let (file, line) = start_line(scenario, &agent.id);
                WorldError::Scenario {
                    file,
                    line,
                    message: format!("agent '{}': start: {e}", agent.id),
                }
            })?;
        }
        Ok(world)
    }

    /// The world of `scenario`: [`World::flat`] when it names no map files, else
    /// [`World::load`].
    pub fn for_scenario(scenario: &Scenario) -> Result<World, WorldError> {
        if scenario.has_map_files() {
            World::load(scenario)
        } else {
            Ok(World::flat())
        }
    }

    /// Where a start puts an agent.
    pub fn start_of(&self, start: &StartPose) -> Result<StartPlace, WorldError> {
        match start {
            StartPose::Pose { x, y, yaw } => Ok(StartPlace {
                x: *x,
                y: *y,
                z: self.ground_z,
                yaw: *yaw,
                lane: None,
            }),
            StartPose::Lane { road, lane, s } => {
                let roads = self.roads.as_ref().ok_or_else(|| WorldError::Start {
                    file: PathBuf::from("[map]"),
                    message: "a lane start needs an opendrive map".into(),
                })?;
                let found = roads.lane_start(road, *lane, *s)?;
                let [x, y, z] = found.pose.position;
                Ok(StartPlace {
                    x,
                    y,
                    z,
                    yaw: found.pose.yaw,
                    lane: Some(found.at),
                })
            }
        }
    }

    /// The digest of every file, as `(name, first 64 bits)`: what a node announces.
    pub fn digests(&self) -> Vec<(String, u64)> {
        self.files
            .iter()
            .map(|f| (f.name.clone(), f.short_digest()))
            .collect()
    }

    /// The surfaces cars stand on and hit, as shared trimesh shapes (built once).
    pub fn solid_shapes(&self) -> &[colliders::StaticShape] {
        self.solid
            .get_or_init(|| colliders::shapes(&self.surfaces, true))
    }

    /// Every surface, paint included, as shared trimesh shapes (what a lidar ray can hit).
    pub fn all_shapes(&self) -> &[colliders::StaticShape] {
        self.all
            .get_or_init(|| colliders::shapes(&self.surfaces, false))
    }

    /// Triangles in every surface.
    pub fn triangle_count(&self) -> usize {
        self.surfaces.iter().map(|s| s.mesh.triangles.len()).sum()
    }
}

/// The scenario file's name and the line of agent `id`'s `start` (its id's line when the start
/// cannot be found, 1 when the file cannot be read).
fn start_line(scenario: &Scenario, id: &str) -> (String, usize) {
    let file = scenario.file.display().to_string();
    let Ok(text) = std::fs::read_to_string(&scenario.file) else {
        return (file, 1);
    };
    let id_line = convoy_core::config::find_line(&text, &format!("\"{id}\""));
    let start = text
        .lines()
        .enumerate()
        .skip(id_line)
        .take_while(|(_, l)| !l.trim_start().starts_with("[[agents]]"))
        .find(|(_, l)| l.trim_start().starts_with("start"))
        .map_or(id_line, |(i, _)| i + 1);
    (file, start)
}
