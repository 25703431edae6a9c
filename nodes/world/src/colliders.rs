//! The world's surfaces as rapier trimesh shapes, built once per process and shared (a
//! [`SharedShape`] is reference-counted) by every physics world that needs them: each agent's,
//! and the lidar's scene.
//!
//! Internal edges are fixed (parry's `FIX_INTERNAL_EDGES`): a box sliding over a road made of
//! many triangles would otherwise catch on the seams between them (between lane strips, lane
//! sections and junction roads), which is the classic "ghost collision" of trimesh ground.

use rapier3d_f64::prelude::{SharedShape, TriMeshFlags, Vector};

use crate::surface::{Material, Surface};

/// One static shape and what it is made of.
#[derive(Clone)]
pub struct StaticShape {
    pub shape: SharedShape,
    pub material: Material,
}

impl std::fmt::Debug for StaticShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticShape")
            .field("material", &self.material)
            .finish_non_exhaustive()
    }
}

/// Whether cars stand on this material (road marks are paint: 1 cm above the road for the eye
/// and the lidar, but a car must not bump over them).
pub fn is_solid(material: Material) -> bool {
    material != Material::LaneMarking
}

/// A trimesh shape per surface; `solid_only` leaves out paint (for physics).
pub fn shapes(surfaces: &[Surface], solid_only: bool) -> Vec<StaticShape> {
    surfaces
        .iter()
        .filter(|s| !solid_only || is_solid(s.material))
        .filter(|s| !s.mesh.is_empty())
        .filter_map(|s| {
            let vertices: Vec<Vector> = s
                .mesh
                .vertices
                .iter()
                .map(|v| Vector::new(v[0], v[1], v[2]))
                .collect();
            let fixed = SharedShape::trimesh_with_flags(
                vertices.clone(),
                s.mesh.triangles.clone(),
                TriMeshFlags::FIX_INTERNAL_EDGES,
            );
            let shape = match fixed {
                Ok(shape) => Some(shape),
                Err(e) => {
                    // A mesh that is not an oriented manifold cannot have its edges fixed; it
                    // still collides, with seams.
                    tracing::warn!(
                        "{} surface: internal edges not fixed ({e:?})",
                        s.material.name()
                    );
                    SharedShape::trimesh(vertices, s.mesh.triangles.clone()).ok()
                }
            }?;
            Some(StaticShape {
                shape,
                material: s.material,
            })
        })
        .collect()
}
