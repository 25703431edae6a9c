//! An OpenDRIVE road network loaded with the `xodr` crate (pinned: Cargo.toml), turned into what
//! convoy's nodes use: surfaces by lane type (asphalt, sidewalk, shoulder, border) and painted
//! road marks for physics, lidar and the camera, and the lane graph for `lane_follow` cars
//! (`lanes.rs`).
//!
//! The crate bakes every curve (line, arc, spiral, poly3, paramPoly3), lane section, width,
//! offset, elevation and superelevation into lane centre polylines and one surface mesh; what it
//! finds wrong or ignores in a file comes back as warnings, which are logged here with the file's
//! name (a map that loads with warnings still runs; one that does not parse is an error).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use xodr::{LaneId, LaneType, RoadNetwork};

use crate::surface::{Material, Surface, SurfaceMesh};
use crate::WorldError;

/// How far road marks float above the road (so the camera and the lidar see the paint first).
pub const MARK_LIFT: f64 = 0.01;

/// A loaded OpenDRIVE map.
pub struct RoadMap {
    pub(crate) net: RoadNetwork,
    pub(crate) file: PathBuf,
    /// (road id, lane id) -> the baked lanes of that OpenDRIVE lane, one per lane section,
    /// in section order.
    pub(crate) by_od_lane: BTreeMap<(String, i32), Vec<LaneId>>,
    /// Every drivable lane with the box around its centre line (x0, y0, x1, y1).
    pub(crate) driving_boxes: Vec<(LaneId, [f64; 4])>,
    /// Warnings the crate raised that are faults, not ignored features (counted for `map info`).
    pub warnings: usize,
}

impl std::fmt::Debug for RoadMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoadMap")
            .field("file", &self.file)
            .field("lanes", &self.net.lanes().len())
            .finish_non_exhaustive()
    }
}

/// What `convoy map info` prints about a map.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MapSummary {
    pub roads: usize,
    pub junctions: usize,
    /// Baked lanes (one per OpenDRIVE lane and lane section) by type.
    pub lanes_by_type: BTreeMap<String, usize>,
    /// Length of the roads' reference lines, metres.
    pub road_length: f64,
    /// Length of the driving lanes' centre lines, metres.
    pub driving_lane_length: f64,
    /// Smallest and largest corner of the box around every lane centre, metres.
    pub bounds: ([f64; 3], [f64; 3]),
    pub road_marks: usize,
    pub warnings: usize,
}

/// The material a lane of this type is drawn and scanned as.
pub fn lane_material(kind: &LaneType) -> Material {
    match kind {
        LaneType::Sidewalk | LaneType::Curb | LaneType::Biking | LaneType::Shared => {
            Material::Sidewalk
        }
        LaneType::Shoulder | LaneType::Stop => Material::Shoulder,
        LaneType::Border | LaneType::Median | LaneType::Restricted | LaneType::None => {
            Material::Border
        }
        _ => Material::Asphalt,
    }
}

impl RoadMap {
    /// Reads and bakes `path`. Errors name the file and, for XML faults, the line.
    pub fn load(path: &Path) -> Result<RoadMap, WorldError> {
        let started = Instant::now();
        let text = std::fs::read_to_string(path).map_err(|e| WorldError::Read {
            file: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let (net, provenance) = xodr::load_str_with(&text, |name| {
            let beside = path.parent().unwrap_or(Path::new(".")).join(name);
            std::fs::read_to_string(&beside).map_err(|e| format!("{}: {e}", beside.display()))
        })
        .map_err(|e| WorldError::OpenDrive {
            file: path.to_path_buf(),
            message: match &e {
                // roxmltree's message carries "at line:column".
                xodr::ImportError::Xml(xml) => format!("not well-formed XML: {xml}"),
                other => other.to_string(),
            },
        })?;
        if net.driving_lanes().next().is_none() {
            return Err(WorldError::OpenDrive {
                file: path.to_path_buf(),
                message: "the map has no driving lane (a truncated or empty file?)".into(),
            });
        }
        let mut warnings = 0;
        for warning in &provenance.warnings {
            if warning.is_ignored() {
                tracing::debug!("{}: {warning}", path.display());
            } else {
                warnings += 1;
                tracing::warn!("{}: {warning}", path.display());
            }
        }
        let mut by_od_lane: BTreeMap<(String, i32), Vec<(usize, LaneId)>> = BTreeMap::new();
        for lane in net.lanes() {
            let Some(at) = net.road_lane(lane.id) else {
                continue;
            };
            let Some(road) = net.road(at.road) else {
                continue;
            };
            by_od_lane
                .entry((road.od_id().to_string(), at.od_id))
                .or_default()
                .push((at.section, lane.id));
        }
        let by_od_lane = by_od_lane
            .into_iter()
            .map(|(key, mut lanes)| {
                lanes.sort_by_key(|(section, id)| (*section, id.0));
                (key, lanes.into_iter().map(|(_, id)| id).collect())
            })
            .collect();
        tracing::debug!(
            "{}: {} lanes baked in {:.0} ms",
            path.display(),
            net.lanes().len(),
            started.elapsed().as_secs_f64() * 1e3
        );
        let driving_boxes = net
            .lanes()
            .iter()
            .filter(|l| l.kind.is_drivable())
            .map(|l| {
                let mut b = [
                    f64::INFINITY,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    f64::NEG_INFINITY,
                ];
                for p in l.center.points() {
                    let (x, y) = (f64::from(p.x), f64::from(p.y));
                    b = [b[0].min(x), b[1].min(y), b[2].max(x), b[3].max(y)];
                }
                (l.id, b)
            })
            .collect();
        Ok(RoadMap {
            net,
            file: path.to_path_buf(),
            by_od_lane,
            driving_boxes,
            warnings,
        })
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The baked network, for queries this module does not wrap.
    pub fn network(&self) -> &RoadNetwork {
        &self.net
    }

    /// The road surface split by material, plus one surface of painted road marks.
    pub fn surfaces(&self) -> Vec<Surface> {
        let mesh = self.net.surface_mesh();
        let merged = crate::straight_runs::merged_triangles(&mesh);
        let mut by_material: BTreeMap<Material, SurfaceMesh> = BTreeMap::new();
        for (span, triangles) in mesh.lanes.iter().zip(merged) {
            let material = self
                .net
                .lane(span.lane)
                .map_or(Material::Asphalt, |l| lane_material(&l.kind));
            let out = by_material.entry(material).or_default();
            let base = out.vertices.len() as u32;
            let (v0, v1) = (span.vertices.start as usize, span.vertices.end as usize);
            let Some(vertices) = mesh.vertices.get(v0..v1) else {
                continue;
            };
            out.vertices.extend(
                vertices
                    .iter()
                    .map(|p| [f64::from(p.x), f64::from(p.y), f64::from(p.z)]),
            );
            for t in triangles {
                // Indices are into the whole mesh; this span's vertices start at v0.
                let local = t.map(|i| i.wrapping_sub(v0 as u32));
                if local.iter().all(|i| (*i as usize) < vertices.len()) {
                    out.triangles.push(local.map(|i| i + base));
                }
            }
        }
        let mut surfaces: Vec<Surface> = by_material
            .into_iter()
            .filter(|(_, mesh)| !mesh.is_empty())
            .map(|(material, mesh)| Surface {
                material,
                colour: material.colour(),
                mesh,
            })
            .collect();
        let marks = self.road_mark_mesh();
        if !marks.is_empty() {
            surfaces.push(Surface {
                material: Material::LaneMarking,
                colour: Material::LaneMarking.colour(),
                mesh: marks,
            });
        }
        surfaces
    }

    /// Every painted piece of every road mark, as two triangles each, lifted [`MARK_LIFT`].
    fn road_mark_mesh(&self) -> SurfaceMesh {
        let mut mesh = SurfaceMesh::default();
        for mark in self.net.road_marks() {
            for line in &mark.lines {
                for piece in &line.pieces {
                    let base = mesh.vertices.len() as u32;
                    mesh.vertices.extend(
                        piece
                            .iter()
                            .map(|p| [f64::from(p.x), f64::from(p.y), f64::from(p.z) + MARK_LIFT]),
                    );
                    mesh.triangles.push([base, base + 1, base + 2]);
                    mesh.triangles.push([base, base + 2, base + 3]);
                }
            }
        }
        mesh
    }

    /// Roads, junctions, lanes by type, lengths and bounds.
    pub fn summary(&self) -> MapSummary {
        let mut lanes_by_type = BTreeMap::new();
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        let mut driving_lane_length = 0.0;
        for lane in self.net.lanes() {
            *lanes_by_type
                .entry(lane.kind.as_str().to_string())
                .or_insert(0) += 1;
            if lane.kind.is_drivable() {
                driving_lane_length += f64::from(lane.center.length());
            }
            for p in lane.center.points() {
                for (i, v) in [p.x, p.y, p.z].into_iter().enumerate() {
                    lo[i] = lo[i].min(f64::from(v));
                    hi[i] = hi[i].max(f64::from(v));
                }
            }
        }
        let junctions: std::collections::BTreeSet<&str> = self
            .net
            .roads()
            .iter()
            .filter_map(|r| r.junction())
            .collect();
        MapSummary {
            roads: self.net.roads().len(),
            junctions: junctions.len(),
            lanes_by_type,
            road_length: self.net.roads().iter().map(|r| r.length()).sum(),
            driving_lane_length,
            bounds: (lo, hi),
            road_marks: self.net.road_marks().len(),
            warnings: self.warnings,
        }
    }
}
