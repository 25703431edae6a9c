//! The world as triangles: every static surface (ground, boxes, roads, road marks, meshes) is a
//! [`SurfaceMesh`] with one [`Material`], so physics (trimesh colliders), lidar (intensity by
//! material), the camera (colour and semantic class) and the live view all read one list.

use serde::Serialize;

/// What a surface is made of. Decides lidar intensity, camera colour and semantic class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Material {
    /// The flat ground plane of the scenario.
    Ground,
    /// A driving lane (and any lane a car may use: parking, bidirectional, entry/exit ramps).
    Asphalt,
    /// Sidewalks, walkways, curbs.
    Sidewalk,
    /// Shoulders and stop lanes.
    Shoulder,
    /// Borders, medians, restricted lanes.
    Border,
    /// A painted road mark.
    LaneMarking,
    /// A building: glTF meshes and the scenario's boxes.
    Building,
    /// Grass, trees and everything else that is not road or building.
    Vegetation,
}

impl Material {
    pub const ALL: [Material; 8] = [
        Material::Ground,
        Material::Asphalt,
        Material::Sidewalk,
        Material::Shoulder,
        Material::Border,
        Material::LaneMarking,
        Material::Building,
        Material::Vegetation,
    ];

    /// Lidar reflectivity in [0, 1]: paint is retro-reflective, asphalt dark.
    pub fn reflectivity(self) -> f32 {
        match self {
            Material::Ground => 0.25,
            Material::Asphalt => 0.12,
            Material::Sidewalk => 0.35,
            Material::Shoulder => 0.18,
            Material::Border => 0.3,
            Material::LaneMarking => 0.9,
            Material::Building => 0.5,
            Material::Vegetation => 0.4,
        }
    }

    /// The colour the camera draws it in (linear RGB), unless a mesh brings its own.
    pub fn colour(self) -> [f32; 3] {
        match self {
            Material::Ground => [0.35, 0.35, 0.33],
            Material::Asphalt => [0.20, 0.20, 0.22],
            Material::Sidewalk => [0.62, 0.60, 0.56],
            Material::Shoulder => [0.30, 0.29, 0.28],
            Material::Border => [0.45, 0.42, 0.36],
            Material::LaneMarking => [0.92, 0.92, 0.90],
            Material::Building => [0.75, 0.72, 0.66],
            Material::Vegetation => [0.25, 0.45, 0.20],
        }
    }

    /// The id in the camera's semantic image (mono8). 0 sky, 1 ground, 2 static, 3 vehicle are
    /// the classes convoy had before maps; the rest are new (docs/DESIGN.md, Topics).
    pub fn semantic_class(self) -> u8 {
        match self {
            Material::Ground => CLASS_GROUND,
            Material::Asphalt | Material::Shoulder => CLASS_ROAD,
            Material::Sidewalk | Material::Border => CLASS_SIDEWALK,
            Material::LaneMarking => CLASS_LANE_MARKING,
            Material::Building => CLASS_BUILDING,
            Material::Vegetation => CLASS_OTHER,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Material::Ground => "ground",
            Material::Asphalt => "asphalt",
            Material::Sidewalk => "sidewalk",
            Material::Shoulder => "shoulder",
            Material::Border => "border",
            Material::LaneMarking => "lane_marking",
            Material::Building => "building",
            Material::Vegetation => "vegetation",
        }
    }
}

/// Semantic class ids (the camera's `_semantic` image). Stable: stacks train on them.
pub const CLASS_SKY: u8 = 0;
pub const CLASS_GROUND: u8 = 1;
pub const CLASS_STATIC: u8 = 2;
pub const CLASS_VEHICLE: u8 = 3;
pub const CLASS_ROAD: u8 = 4;
pub const CLASS_SIDEWALK: u8 = 5;
pub const CLASS_LANE_MARKING: u8 = 6;
pub const CLASS_BUILDING: u8 = 7;
pub const CLASS_OTHER: u8 = 8;

/// One static surface: triangles of one material, in the world frame (x east, y north, z up,
/// metres).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SurfaceMesh {
    pub vertices: Vec<[f64; 3]>,
    pub triangles: Vec<[u32; 3]>,
}

impl SurfaceMesh {
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }

    /// Appends `other`, renumbering its indices.
    pub fn append(&mut self, other: &SurfaceMesh) {
        let base = self.vertices.len() as u32;
        self.vertices.extend_from_slice(&other.vertices);
        self.triangles
            .extend(other.triangles.iter().map(|t| t.map(|i| i + base)));
    }

    /// Smallest and largest corner of the axis-aligned box around the vertices.
    pub fn bounds(&self) -> Option<([f64; 3], [f64; 3])> {
        let first = *self.vertices.first()?;
        Some(self.vertices.iter().fold((first, first), |(lo, hi), v| {
            (
                [lo[0].min(v[0]), lo[1].min(v[1]), lo[2].min(v[2])],
                [hi[0].max(v[0]), hi[1].max(v[1]), hi[2].max(v[2])],
            )
        }))
    }
}

/// A mesh with what it is made of and the colour to draw it in.
#[derive(Debug, Clone, PartialEq)]
pub struct Surface {
    pub material: Material,
    /// Linear RGB: the material's colour, or a glTF primitive's base colour.
    pub colour: [f32; 3],
    pub mesh: SurfaceMesh,
}

/// The side of the square tiles surfaces are cut into, metres.
pub const TILE: f64 = 50.0;

/// Cuts every surface into square tiles of [`TILE`] metres by triangle centroid (same material
/// and colour, renumbered vertices), in a stable order: surface order, then tile row and column.
///
/// Why: a town-sized surface is one bounding box around the whole town, so every car's
/// broad phase pairs it with the whole road, every lidar ray walks the whole road's tree, and
/// the camera draws the roads behind it. Tiles let each of them skip what is far away.
pub fn tiled(surfaces: Vec<Surface>) -> Vec<Surface> {
    let mut out = Vec::new();
    for surface in surfaces {
        // Per tile: its mesh and where each of the surface's vertices went in it.
        type Tile = (SurfaceMesh, std::collections::HashMap<u32, u32>);
        let mut tiles: std::collections::BTreeMap<(i64, i64), Tile> = Default::default();
        let vertices = &surface.mesh.vertices;
        for t in &surface.mesh.triangles {
            let Some(corners) = t
                .iter()
                .map(|i| vertices.get(*i as usize).copied())
                .collect::<Option<Vec<[f64; 3]>>>()
            else {
                continue;
            };
            let cx = (corners[0][0] + corners[1][0] + corners[2][0]) / 3.0;
            let cy = (corners[0][1] + corners[1][1] + corners[2][1]) / 3.0;
            let key = ((cy / TILE).floor() as i64, (cx / TILE).floor() as i64);
            let (mesh, remap) = tiles.entry(key).or_default();
            let mut local = [0u32; 3];
            for (k, i) in t.iter().enumerate() {
                local[k] = *remap.entry(*i).or_insert_with(|| {
                    mesh.vertices.push(corners[k]);
                    mesh.vertices.len() as u32 - 1
                });
            }
            mesh.triangles.push(local);
        }
        out.extend(tiles.into_values().map(|(mesh, _)| Surface {
            material: surface.material,
            colour: surface.colour,
            mesh,
        }));
    }
    out
}
