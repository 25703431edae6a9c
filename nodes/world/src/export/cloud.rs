//! The world as a point-cloud map: every surface (roads, paint, meshes, the scenario's boxes,
//! and the ground near them) sampled on a lattice at a set spacing and thinned to one point per
//! voxel of that size, with the material's reflectivity as intensity; written as binary PCD
//! (`x y z intensity`, float32), one file or square tiles with Autoware's metadata file.

use std::collections::{BTreeMap, HashSet};

use convoy_core::scenario::Scenario;

use crate::{Material, World};

/// How far (m) around roads, meshes and boxes the ground plane is sampled: a lidar near the
/// road sees that much of it, and the whole plane (a kilometre square by default) is not worth
/// its size.
pub const GROUND_MARGIN: f64 = 8.0;

/// A surface lower than this (m) over the ground hides the ground under it.
const HIDES_GROUND: f64 = 0.5;

/// One point of the map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CloudPoint {
    pub xyz: [f32; 3],
    pub intensity: f32,
}

/// Samples triangle `t` at about `spacing` metres, handing each point to `out`.
fn sample_triangle(t: [[f64; 3]; 3], spacing: f64, mut out: impl FnMut([f64; 3])) {
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let len = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let (u, v) = (sub(t[1], t[0]), sub(t[2], t[0]));
    let steps = ((len(u).max(len(v)).max(len(sub(t[2], t[1]))) / spacing).ceil() as usize).max(1);
    // A lattice in barycentric coordinates: i along u, j along v, i + j <= steps.
    for i in 0..=steps {
        for j in 0..=(steps - i) {
            let (a, b) = (i as f64 / steps as f64, j as f64 / steps as f64);
            out([
                t[0][0] + a * u[0] + b * v[0],
                t[0][1] + a * u[1] + b * v[1],
                t[0][2] + a * u[2] + b * v[2],
            ]);
        }
    }
}

/// Keeps the first point met in each voxel of side `spacing`: an even density whatever the
/// triangles looked like, in a deterministic order.
struct Thinner {
    spacing: f64,
    seen: HashSet<(i64, i64, i64)>,
    points: Vec<CloudPoint>,
}

impl Thinner {
    fn add(&mut self, p: [f64; 3], intensity: f32) {
        let key = (
            (p[0] / self.spacing).floor() as i64,
            (p[1] / self.spacing).floor() as i64,
            (p[2] / self.spacing).floor() as i64,
        );
        if self.seen.insert(key) {
            self.points.push(CloudPoint {
                xyz: [p[0] as f32, p[1] as f32, p[2] as f32],
                intensity,
            });
        }
    }
}

/// The corners of a scenario box's faces as triangles.
fn box_triangles(center: [f64; 3], half: [f64; 3], yaw: f64) -> Vec<[[f64; 3]; 3]> {
    let (s, c) = yaw.sin_cos();
    let corner = |dx: f64, dy: f64, dz: f64| {
        let (x, y, z) = (dx * half[0], dy * half[1], dz * half[2]);
        [
            center[0] + c * x - s * y,
            center[1] + s * x + c * y,
            center[2] + z,
        ]
    };
    let faces: [[(f64, f64, f64); 4]; 6] = [
        [(1., -1., -1.), (1., 1., -1.), (1., 1., 1.), (1., -1., 1.)],
        [
            (-1., -1., -1.),
            (-1., 1., -1.),
            (-1., 1., 1.),
            (-1., -1., 1.),
        ],
        [(-1., 1., -1.), (1., 1., -1.), (1., 1., 1.), (-1., 1., 1.)],
        [
            (-1., -1., -1.),
            (1., -1., -1.),
            (1., -1., 1.),
            (-1., -1., 1.),
        ],
        [(-1., -1., 1.), (1., -1., 1.), (1., 1., 1.), (-1., 1., 1.)],
        [
            (-1., -1., -1.),
            (1., -1., -1.),
            (1., 1., -1.),
            (-1., 1., -1.),
        ],
    ];
    let mut out = Vec::new();
    for face in faces {
        let q = face.map(|(x, y, z)| corner(x, y, z));
        out.push([q[0], q[1], q[2]]);
        out.push([q[0], q[2], q[3]]);
    }
    out
}

/// Samples every surface of the world and the scenario's boxes, and the ground within
/// [`GROUND_MARGIN`] of them where nothing lies on it.
pub fn sample(world: &World, scenario: &Scenario, spacing: f64) -> Vec<CloudPoint> {
    let mut thin = Thinner {
        spacing,
        seen: HashSet::new(),
        points: Vec::new(),
    };
    // Ground cells (GROUND_MARGIN wide) that something stands in or near.
    let cell = GROUND_MARGIN;
    let mut near: HashSet<(i64, i64)> = HashSet::new();
    // Spacing-sized columns where a surface lies on or just over the ground (a road, a
    // sidewalk, a floor): the ground under them is hidden from every lidar, and a map with a
    // second layer 10 cm under the road pulls a surface fit down.
    let column = |x: f64, y: f64| ((x / spacing).floor() as i64, (y / spacing).floor() as i64);
    let mut covered: HashSet<(i64, i64)> = HashSet::new();
    let ground_z = world.ground_z;
    let mut mark = |p: [f64; 3]| {
        if p[2] < ground_z + HIDES_GROUND {
            covered.insert(column(p[0], p[1]));
        }
        let (cx, cy) = ((p[0] / cell).floor() as i64, (p[1] / cell).floor() as i64);
        for dx in -1..=1 {
            for dy in -1..=1 {
                near.insert((cx + dx, cy + dy));
            }
        }
    };
    // Paint first: it lies a centimetre over the asphalt, in the same voxels, and a map for
    // localisation wants the bright marks, not the road under them.
    let mut surfaces: Vec<&crate::Surface> = world.surfaces.iter().collect();
    surfaces.sort_by_key(|s| s.material != Material::LaneMarking);
    for surface in surfaces {
        let intensity = surface.material.reflectivity();
        let v = &surface.mesh.vertices;
        for t in &surface.mesh.triangles {
            let Some(tri) = (|| {
                Some([
                    *v.get(t[0] as usize)?,
                    *v.get(t[1] as usize)?,
                    *v.get(t[2] as usize)?,
                ])
            })() else {
                continue;
            };
            sample_triangle(tri, spacing, |p| {
                mark(p);
                thin.add(p, intensity);
            });
        }
    }
    for b in &scenario.map.boxes {
        // The lidar gives a box the ground's reflectivity (it carries no material); so does
        // the map, so intensities match what a scan sees.
        let intensity = Material::Ground.reflectivity();
        for tri in box_triangles(b.center, b.half_extents, b.yaw) {
            sample_triangle(tri, spacing, |p| {
                mark(p);
                thin.add(p, intensity);
            });
        }
    }
    // The ground last: where a road lies on it, the road's points already hold the voxels.
    let [hx, hy] = scenario.map.ground_half_extents;
    let intensity = Material::Ground.reflectivity();
    let mut cells: Vec<(i64, i64)> = near.into_iter().collect();
    cells.sort_unstable();
    let steps = (cell / spacing).round().max(1.0) as i64;
    for (cx, cy) in cells {
        for i in 0..steps {
            for j in 0..steps {
                let x = cx as f64 * cell + (i as f64 + 0.5) * cell / steps as f64;
                let y = cy as f64 * cell + (j as f64 + 0.5) * cell / steps as f64;
                let (kx, ky) = column(x, y);
                // The lattice of a surface can miss a column, so a neighbour covered counts.
                let hidden = [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)]
                    .iter()
                    .any(|(dx, dy)| covered.contains(&(kx + dx, ky + dy)));
                if x.abs() <= hx && y.abs() <= hy && !hidden {
                    thin.add([x, y, world.ground_z], intensity);
                }
            }
        }
    }
    thin.points
}

/// Binary PCD (v0.7) of `points`: fields x y z intensity, float32.
pub fn to_pcd(points: &[CloudPoint]) -> Vec<u8> {
    let header = format!(
        "# .PCD v0.7 - Point Cloud Data file format (convoy map export)\nVERSION 0.7\nFIELDS x y z \
         intensity\nSIZE 4 4 4 4\nTYPE F F F F\nCOUNT 1 1 1 1\nWIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 \
         0 1 0 0 0\nPOINTS {n}\nDATA binary\n",
        n = points.len()
    );
    let mut out = Vec::with_capacity(header.len() + points.len() * 16);
    out.extend_from_slice(header.as_bytes());
    for p in points {
        for v in [p.xyz[0], p.xyz[1], p.xyz[2], p.intensity] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Points split into square tiles of side `tile` metres, keyed by the tile's lower-left corner
/// (in tile units), in order.
pub fn tiles(points: &[CloudPoint], tile: f64) -> BTreeMap<(i64, i64), Vec<CloudPoint>> {
    let mut out: BTreeMap<(i64, i64), Vec<CloudPoint>> = BTreeMap::new();
    for p in points {
        let key = (
            (f64::from(p.xyz[0]) / tile).floor() as i64,
            (f64::from(p.xyz[1]) / tile).floor() as i64,
        );
        out.entry(key).or_default().push(*p);
    }
    out
}

/// The plan extent (m) of a cloud: (width in x, width in y).
pub fn extent(points: &[CloudPoint]) -> (f64, f64) {
    let mut lo = [f64::INFINITY; 2];
    let mut hi = [f64::NEG_INFINITY; 2];
    for p in points {
        for k in 0..2 {
            lo[k] = lo[k].min(f64::from(p.xyz[k]));
            hi[k] = hi[k].max(f64::from(p.xyz[k]));
        }
    }
    if points.is_empty() {
        (0.0, 0.0)
    } else {
        (hi[0] - lo[0], hi[1] - lo[1])
    }
}
