//! What a camera sees, as data: the static boxes of the map, the world's surfaces as triangle
//! meshes (flat-shaded, one colour and class each), and one box per agent, moved to each
//! frame's states.

use std::sync::Arc;

use convoy_world::World;

use super::gpu::{InstanceRaw, StaticVertex};
use super::*;

/// The world's static surfaces, as the camera draws them: every surface's flat-shaded triangles
/// in one vertex list (uploaded once), and per surface where its vertices are and the box
/// around them (a surface whose box is outside the camera's view is not drawn).
pub(super) struct StaticMeshes {
    pub(super) vertices: Vec<StaticVertex>,
    pub(super) parts: Vec<StaticPart>,
}

/// One surface of [`StaticMeshes`].
pub(super) struct StaticPart {
    /// Its vertices: `first..first + count`.
    pub(super) first: u32,
    pub(super) count: u32,
    /// Smallest and largest corner of the box around its vertices (world frame).
    pub(super) bounds: (Vec3, Vec3),
}

impl StaticMeshes {
    fn new(world: &World) -> StaticMeshes {
        let mut vertices = Vec::new();
        let mut parts = Vec::new();
        for surface in &world.surfaces {
            let [r, g, b] = surface.colour;
            let first = vertices.len();
            let class = u32::from(surface.material.semantic_class());
            flat_vertices(&surface.mesh, [r, g, b, 1.0], class, &mut vertices);
            let added = &vertices[first..];
            if added.is_empty() {
                continue;
            }
            let bounds = added.iter().fold(
                (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
                |(lo, hi), v| {
                    let p = Vec3::from(v.position);
                    (lo.min(p), hi.max(p))
                },
            );
            parts.push(StaticPart {
                first: first as u32,
                count: added.len() as u32,
                bounds,
            });
        }
        StaticMeshes { vertices, parts }
    }
}

/// Flat-shaded triangles of a surface, appended to `out` in its colour and class; normals
/// face up where the face is not vertical (both faces are drawn, and the light comes from
/// above).
fn flat_vertices(
    mesh: &convoy_world::SurfaceMesh,
    colour: [f32; 4],
    class: u32,
    out: &mut Vec<StaticVertex>,
) {
    for t in &mesh.triangles {
        let corners = t.map(|i| {
            mesh.vertices.get(i as usize).map_or(Vec3::ZERO, |v| {
                Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32)
            })
        });
        let mut n = (corners[1] - corners[0]).cross(corners[2] - corners[0]);
        if n.length_squared() <= 0.0 {
            continue;
        }
        n = n.normalize();
        if n.z < 0.0 {
            n = -n;
        }
        for c in corners {
            out.push(StaticVertex {
                position: c.to_array(),
                normal: n.to_array(),
                colour,
                class,
            });
        }
    }
}

/// One box to draw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct BoxInstance {
    pub(super) centre: Vec3,
    pub(super) half_extents: Vec3,
    pub(super) rotation: Quat,
    pub(super) colour: [f32; 3],
    pub(super) class: u8,
}

/// What a camera sees: static boxes, static meshes and one box per agent.
pub struct CameraScene {
    pub(super) statics: Vec<BoxInstance>,
    /// Shared so a renderer can tell a scene it already uploaded (by pointer) from a new one.
    pub(super) meshes: Arc<StaticMeshes>,
    pub(super) agents: BTreeMap<String, BoxInstance>,
}

pub(super) fn quat_of(state: &AgentState) -> Quat {
    let q = &state.pose.orientation;
    let r = Quat::from_xyzw(q.x as f32, q.y as f32, q.z as f32, q.w as f32);
    if r.is_finite() && r.length() > 0.5 {
        r.normalize()
    } else {
        Quat::IDENTITY
    }
}

pub(super) fn position_of(state: &AgentState) -> Vec3 {
    let p = &state.pose.position;
    Vec3::new(p.x as f32, p.y as f32, p.z as f32)
}

impl CameraScene {
    pub fn new(scenario: &Scenario, world: &World) -> CameraScene {
        let [hx, hy] = scenario.map.ground_half_extents;
        let mut statics = vec![BoxInstance {
            centre: Vec3::new(0.0, 0.0, world.ground_z as f32 - 0.05),
            half_extents: Vec3::new(hx as f32, hy as f32, 0.05),
            rotation: Quat::IDENTITY,
            colour: GROUND_COLOUR,
            class: CLASS_GROUND,
        }];
        for b in &scenario.map.boxes {
            let [x, y, z] = b.center;
            let [ex, ey, ez] = b.half_extents;
            statics.push(BoxInstance {
                centre: Vec3::new(x as f32, y as f32, z as f32),
                half_extents: Vec3::new(ex as f32, ey as f32, ez as f32),
                rotation: Quat::from_rotation_z(b.yaw as f32),
                colour: STATIC_COLOUR,
                class: CLASS_STATIC,
            });
        }
        let agents = scenario
            .agents
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let [ex, ey, ez] = a.vehicle.half_extents;
                (
                    a.id.clone(),
                    BoxInstance {
                        centre: Vec3::new(0.0, 0.0, -10_000.0),
                        half_extents: Vec3::new(ex as f32, ey as f32, ez as f32),
                        rotation: Quat::IDENTITY,
                        colour: AGENT_COLOURS[i % AGENT_COLOURS.len()],
                        class: CLASS_VEHICLE,
                    },
                )
            })
            .collect();
        let meshes = StaticMeshes::new(world);
        CameraScene {
            statics,
            meshes: Arc::new(meshes),
            agents,
        }
    }

    /// The colour agent `id` is drawn in.
    pub fn colour_of(&self, id: &str) -> Option<[f32; 3]> {
        self.agents.get(id).map(|b| b.colour)
    }

    /// Moves the agents' boxes to `states`; agents without a state are parked out of sight.
    pub fn place<'a>(&mut self, states: impl Iterator<Item = &'a AgentState>) {
        for b in self.agents.values_mut() {
            b.centre = Vec3::new(0.0, 0.0, -10_000.0);
        }
        for s in states {
            if let Some(b) = self.agents.get_mut(&s.agent_id) {
                b.centre = position_of(s);
                b.rotation = quat_of(s);
            }
        }
    }

    /// The boxes to draw: agents first and the ground (the first static) last, so that the
    /// ground's hidden fragments fail the depth test instead of being shaded.
    pub(super) fn instances(&self, skip_agent: &str) -> Vec<InstanceRaw> {
        self.agents
            .iter()
            .filter(|(id, _)| id.as_str() != skip_agent)
            .map(|(_, b)| b)
            .chain(self.statics.iter().rev())
            .map(InstanceRaw::from)
            .collect()
    }
}
