//! Straight runs of a lane's surface as one quad: the road mesh with the ribs that add no shape
//! left out.
//!
//! The `xodr` crate tessellates every lane as a strip of ribs (one left and one right vertex per
//! centre-line sample, two triangles between neighbouring ribs) and samples even a straight
//! road every 2 m, so Town01 is ~21k road triangles. Every consumer pays per triangle: the
//! camera most (lavapipe sets up and bins each triangle for every image: ~0.5 µs each on the
//! 2-core machine, a third of a 1440x960 town image), then lidar trees and colliders. A rib
//! whose two vertices lie on the straight lines between the ribs kept either side of it adds
//! nothing to the surface, so it is left out.
//!
//! Neighbouring lanes share their border vertices; if one lane left out a rib that its
//! neighbour keeps, the kept vertex would sit on the middle of the other lane's edge (a
//! T-junction: the rasterizer can leave a pixel's crack there). So a vertex is left out only
//! where every lane that has a vertex at that place leaves it out: a rib that one lane must
//! keep locks its two places for every lane, and the passes repeat until no lane keeps a rib
//! that was not locked already.

use std::collections::HashMap;

use xodr::{Mesh, Point};

/// How far, in metres, a left-out vertex may lie from the straight edge that replaces it.
const TOLERANCE: f32 = 0.001;
/// The longest, in metres, one merged quad may get along the lane: surfaces are cut into
/// 50 m tiles by triangle centre, and a tile's box should stay near its tile.
const MAX_RUN: f32 = 25.0;
/// Places closer than this (metres) are one place, for the locks.
const SAME_PLACE: f32 = 0.01;
/// Twice the area, in square metres, below which a triangle is left out (as the crate does).
const MIN_AREA: f32 = 1e-6;

/// A hasher for grid cells: the default SipHash made finding the places of Town01's 21k
/// vertices a third of its whole world build; cells are not chosen by an adversary.
#[derive(Default)]
struct CellHasher(u64);

impl std::hash::Hasher for CellHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        // FxHash's step: rotate, mix in, multiply by an odd constant.
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type CellMap<V> = HashMap<Cell, V, std::hash::BuildHasherDefault<CellHasher>>;

/// A place on the 1 cm grid, for the locks.
type Cell = (i64, i64, i64);

fn cell(p: Point) -> Cell {
    let q = |v: f32| (f64::from(v) / f64::from(SAME_PLACE)).round() as i64;
    (q(p.x), q(p.y), q(p.z))
}

/// Which place each vertex of the mesh is at: vertices within [`SAME_PLACE`] of each other
/// (copies of one border vertex in two lanes) share a place, found once on the 1 cm grid (two
/// copies may round to neighbouring cells).
struct Places {
    of_vertex: Vec<u32>,
    count: usize,
}

impl Places {
    fn new(mesh: &Mesh) -> Places {
        let mut cells: CellMap<u32> = CellMap::default();
        let mut count = 0;
        let of_vertex = mesh
            .vertices
            .iter()
            .map(|p| {
                let (x, y, z) = cell(*p);
                if let Some(place) = cells.get(&(x, y, z)) {
                    return *place;
                }
                let near = (-1..=1)
                    .flat_map(|dx| {
                        (-1..=1).flat_map(move |dy| (-1..=1).map(move |dz| (dx, dy, dz)))
                    })
                    .find_map(|(dx, dy, dz)| cells.get(&(x + dx, y + dy, z + dz)).copied());
                let place = near.unwrap_or_else(|| {
                    count += 1;
                    count as u32 - 1
                });
                cells.insert((x, y, z), place);
                place
            })
            .collect();
        Places { of_vertex, count }
    }
}

/// The places locked: a vertex at a locked place is kept by every lane.
struct Locks<'a> {
    places: &'a Places,
    locked: Vec<bool>,
}

impl Locks<'_> {
    fn holds(&self, vertex: u32) -> bool {
        self.places
            .of_vertex
            .get(vertex as usize)
            .is_some_and(|p| self.locked[*p as usize])
    }

    /// Locks the place of `vertex`; true if it was not locked before.
    fn lock(&mut self, vertex: u32) -> bool {
        match self.places.of_vertex.get(vertex as usize) {
            Some(p) => !std::mem::replace(&mut self.locked[*p as usize], true),
            None => false,
        }
    }
}

/// Distance from `p` to the segment `a`-`b`.
fn off_segment(p: Point, a: Point, b: Point) -> f32 {
    let ab = b - a;
    let len2 = ab.dot(ab);
    let t = if len2 > 0.0 {
        ((p - a).dot(ab) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (p - (a + ab * t)).length()
}

/// One lane's strip: its first vertex (ribs are `[left, right]` pairs from there) and rib count.
struct Strip {
    base: u32,
    ribs: u32,
}

impl Strip {
    fn left_index(&self, rib: u32) -> u32 {
        self.base + 2 * rib
    }
    fn right_index(&self, rib: u32) -> u32 {
        self.base + 2 * rib + 1
    }
    fn left(&self, mesh: &Mesh, rib: u32) -> Point {
        mesh.vertices[self.left_index(rib) as usize]
    }
    fn right(&self, mesh: &Mesh, rib: u32) -> Point {
        mesh.vertices[self.right_index(rib) as usize]
    }

    /// Whether the ribs strictly between `from` and `to` lie on the straight edges between
    /// those two, within [`TOLERANCE`], over no more than [`MAX_RUN`].
    fn straight(&self, mesh: &Mesh, from: u32, to: u32) -> bool {
        let (l0, r0, l1, r1) = (
            self.left(mesh, from),
            self.right(mesh, from),
            self.left(mesh, to),
            self.right(mesh, to),
        );
        if (l1 - l0).length().max((r1 - r0).length()) > MAX_RUN {
            return false;
        }
        (from + 1..to).all(|k| {
            off_segment(self.left(mesh, k), l0, l1) <= TOLERANCE
                && off_segment(self.right(mesh, k), r0, r1) <= TOLERANCE
        })
    }

    /// The ribs kept: the first and the last, the locked ones, and each one past which the
    /// run from the last kept rib would not be straight.
    fn kept(&self, mesh: &Mesh, locks: &Locks) -> Vec<u32> {
        let mut kept = vec![0];
        let last = self.ribs - 1;
        for k in 1..last {
            let from = *kept.last().unwrap_or(&0);
            let locked = locks.holds(self.left_index(k)) || locks.holds(self.right_index(k));
            if locked || !self.straight(mesh, from, k + 1) {
                kept.push(k);
            }
        }
        kept.push(last);
        kept
    }

    /// Whether a rib this strip left out (not in `kept`, ascending) is at a locked place now.
    fn drops_a_lock(&self, kept: &[u32], locks: &Locks) -> bool {
        let mut kept = kept.iter().peekable();
        (0..self.ribs).any(|rib| {
            if kept.next_if_eq(&&rib).is_some() {
                return false;
            }
            locks.holds(self.left_index(rib)) || locks.holds(self.right_index(rib))
        })
    }
}

/// The two triangles of the quad `l0 r0 r1 l1`, split along the diagonal that keeps both
/// facing up (as the crate splits its quads).
fn quad(l0: Point, r0: Point, r1: Point, l1: Point) -> [[usize; 3]; 2] {
    let up =
        |a: Point, b: Point, c: Point| (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x) >= 0.0;
    if up(l0, r0, r1) && up(l0, r1, l1) {
        [[0, 1, 2], [0, 2, 3]]
    } else {
        [[0, 1, 3], [1, 2, 3]]
    }
}

/// Per lane span of `mesh` (in its order), the triangles of its surface with the straight runs
/// merged, as indices into `mesh.vertices`. A span that is not a strip of `[left, right]` ribs
/// keeps its own triangles.
pub fn merged_triangles(mesh: &Mesh) -> Vec<Vec<[u32; 3]>> {
    let strips: Vec<Option<Strip>> = mesh
        .lanes
        .iter()
        .map(|span| {
            let len = span.vertices.end.checked_sub(span.vertices.start)?;
            let whole = (span.vertices.end as usize) <= mesh.vertices.len();
            (len >= 4 && len % 2 == 0 && whole).then_some(Strip {
                base: span.vertices.start,
                ribs: len / 2,
            })
        })
        .collect();
    let places = Places::new(mesh);
    let mut locks = Locks {
        places: &places,
        locked: vec![false; places.count],
    };
    for strip in strips.iter().flatten() {
        for rib in [0, strip.ribs - 1] {
            locks.lock(strip.left_index(rib));
            locks.lock(strip.right_index(rib));
        }
    }
    // Each pass locks the ribs some lane keeps; a lane's choice only changes when a rib it
    // left out gets locked, so only those lanes are looked at again, and the passes end (at
    // worst with every rib locked).
    let mut kept: Vec<Option<Vec<u32>>> = strips.iter().map(|_| None).collect();
    let mut stale: Vec<bool> = strips.iter().map(Option::is_some).collect();
    while stale.iter().any(|s| *s) {
        for ((strip, kept), stale) in strips.iter().zip(&mut kept).zip(&stale) {
            if let (Some(strip), true) = (strip, *stale) {
                *kept = Some(strip.kept(mesh, &locks));
            }
        }
        for (strip, kept) in strips.iter().zip(&kept) {
            if let (Some(strip), Some(kept)) = (strip, kept) {
                for &rib in kept {
                    locks.lock(strip.left_index(rib));
                    locks.lock(strip.right_index(rib));
                }
            }
        }
        for ((strip, kept), stale) in strips.iter().zip(&kept).zip(&mut stale) {
            *stale = match (strip, kept) {
                (Some(strip), Some(kept)) => strip.drops_a_lock(kept, &locks),
                _ => false,
            };
        }
    }
    mesh.lanes
        .iter()
        .zip(strips.iter().zip(kept))
        .map(|(span, (strip, kept))| match (strip, kept) {
            (Some(strip), Some(kept)) => {
                let mut out = Vec::with_capacity(2 * kept.len());
                for pair in kept.windows(2) {
                    let (a, b) = (pair[0], pair[1]);
                    let corners = [
                        strip.base + 2 * a,
                        strip.base + 2 * a + 1,
                        strip.base + 2 * b + 1,
                        strip.base + 2 * b,
                    ];
                    let at = |i: u32| mesh.vertices[i as usize];
                    let split = quad(
                        at(corners[0]),
                        at(corners[1]),
                        at(corners[2]),
                        at(corners[3]),
                    );
                    for t in split {
                        let [i, j, k] = t.map(|c| corners[c]);
                        if (at(j) - at(i)).cross(at(k) - at(i)).length() >= MIN_AREA {
                            out.push([i, j, k]);
                        }
                    }
                }
                out
            }
            _ => {
                let (i0, i1) = (span.indices.start as usize, span.indices.end as usize);
                mesh.indices
                    .get(i0..i1)
                    .unwrap_or_default()
                    .chunks_exact(3)
                    .map(|t| [t[0], t[1], t[2]])
                    .collect()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use xodr::{LaneId, LaneSpan};

    /// A lane strip from its left and right edges, appended to `mesh` (indices as the crate
    /// makes them: two per quad).
    fn strip(mesh: &mut Mesh, lane: usize, left: &[[f32; 3]], right: &[[f32; 3]]) {
        let base = mesh.vertices.len() as u32;
        let first = mesh.indices.len() as u32;
        for (l, r) in left.iter().zip(right) {
            mesh.vertices.push(Point::from(*l));
            mesh.vertices.push(Point::from(*r));
        }
        for i in 0..left.len() as u32 - 1 {
            let (l0, r0, l1, r1) = (
                base + 2 * i,
                base + 2 * i + 1,
                base + 2 * i + 2,
                base + 2 * i + 3,
            );
            mesh.indices.extend_from_slice(&[l0, r0, r1, l0, r1, l1]);
        }
        mesh.lanes.push(LaneSpan {
            lane: LaneId(lane),
            vertices: base..mesh.vertices.len() as u32,
            indices: first..mesh.indices.len() as u32,
        });
    }

    fn area(mesh: &Mesh, triangles: &[[u32; 3]]) -> f32 {
        triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| mesh.vertices[i as usize]);
                (b - a).cross(c - a).length() / 2.0
            })
            .sum()
    }

    /// Points along x from 0 to `length` every `step`, at `y` (and `bend(x)` added to y).
    fn edge(length: f32, step: f32, y: f32, bend: impl Fn(f32) -> f32) -> Vec<[f32; 3]> {
        let n = (length / step).round() as usize;
        (0..=n)
            .map(|i| {
                let x = i as f32 * step;
                [x, y + bend(x), 0.0]
            })
            .collect()
    }

    #[test]
    fn a_straight_lane_is_one_quad_per_run_and_keeps_its_area() {
        let mut mesh = Mesh::default();
        strip(
            &mut mesh,
            0,
            &edge(20.0, 2.0, 3.5, |_| 0.0),
            &edge(20.0, 2.0, 0.0, |_| 0.0),
        );
        let merged = merged_triangles(&mesh);
        assert_eq!(merged[0].len(), 2, "{:?}", merged[0]);
        assert!((area(&mesh, &merged[0]) - 70.0).abs() < 1e-3);
        // Longer than MAX_RUN: cut into runs no longer than it.
        let mut long = Mesh::default();
        strip(
            &mut long,
            0,
            &edge(60.0, 2.0, 3.5, |_| 0.0),
            &edge(60.0, 2.0, 0.0, |_| 0.0),
        );
        let merged = merged_triangles(&long);
        assert_eq!(merged[0].len(), 6, "three runs of at most 25 m");
        assert!((area(&long, &merged[0]) - 210.0).abs() < 1e-2);
    }

    #[test]
    fn a_curve_keeps_its_ribs() {
        let mut mesh = Mesh::default();
        let bend = |x: f32| 0.01 * x * x;
        strip(
            &mut mesh,
            0,
            &edge(20.0, 2.0, 3.5, bend),
            &edge(20.0, 2.0, 0.0, bend),
        );
        let merged = merged_triangles(&mesh);
        assert_eq!(merged[0].len(), 20, "every quad of the curve stays");
    }

    #[test]
    fn a_rib_one_lane_keeps_is_kept_by_its_neighbour() {
        // Lane 0 is straight; lane 1 shares its right edge (y = 0) and widens along a curve,
        // so lane 1 keeps its ribs, and with them lane 0 keeps the ones on the shared edge:
        // no vertex of one lane may sit on the middle of the other's edge.
        let mut mesh = Mesh::default();
        strip(
            &mut mesh,
            0,
            &edge(20.0, 2.0, 3.5, |_| 0.0),
            &edge(20.0, 2.0, 0.0, |_| 0.0),
        );
        strip(
            &mut mesh,
            1,
            &edge(20.0, 2.0, 0.0, |_| 0.0),
            &edge(20.0, 2.0, -3.0, |x| -0.01 * x * x),
        );
        let merged = merged_triangles(&mesh);
        assert_eq!(merged[0].len(), 20);
        assert_eq!(merged[1].len(), 20);
        // A third lane alone beside them, straight, merges.
        strip(
            &mut mesh,
            2,
            &edge(20.0, 2.0, 20.0, |_| 0.0),
            &edge(20.0, 2.0, 17.0, |_| 0.0),
        );
        assert_eq!(merged_triangles(&mesh)[2].len(), 2);
    }

    #[test]
    fn a_lane_that_is_not_a_strip_keeps_its_triangles() {
        let mesh = Mesh {
            vertices: vec![
                Point::new(0.0, 0.0, 0.0),
                Point::new(1.0, 0.0, 0.0),
                Point::new(0.0, 1.0, 0.0),
            ],
            indices: vec![0, 1, 2],
            lanes: vec![LaneSpan {
                lane: LaneId(0),
                vertices: 0..3,
                indices: 0..3,
            }],
            ..Mesh::default()
        };
        assert_eq!(merged_triangles(&mesh), vec![vec![[0, 1, 2]]]);
    }
}
