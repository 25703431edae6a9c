//! The run as a Foxglove 3D scene: the scenario's ground and obstacles, each agent as a box
//! labelled with its id, a transform `world` -> agent per agent, and the map's road network and
//! meshes as triangles. Pure functions from convoy's data to Foxglove's well-known schemas; the
//! live view's loop decides when to send them.

use std::collections::BTreeMap;

use convoy_core::messages::{AgentState, Pose, Quat, Vec3};
use convoy_core::scenario::MapSpec;
use convoy_world::{Material, Surface};
use foxglove::messages::{
    Color, CubePrimitive, FrameTransform, FrameTransforms, Point3, Pose as FoxPose, Quaternion,
    SceneEntity, SceneUpdate, TextPrimitive, Timestamp, TriangleListPrimitive, Vector3,
};

/// The fixed frame every entity and transform hangs from.
pub const WORLD_FRAME: &str = "world";

/// Grey ground, brown obstacles, a distinct colour per agent.
const GROUND: Color = rgba(0.35, 0.37, 0.35, 1.0);
const OBSTACLE: Color = rgba(0.55, 0.42, 0.30, 1.0);
const AGENT_COLOURS: [Color; 6] = [
    rgba(0.12, 0.47, 0.71, 0.9),
    rgba(0.84, 0.15, 0.16, 0.9),
    rgba(0.17, 0.63, 0.17, 0.9),
    rgba(1.00, 0.50, 0.05, 0.9),
    rgba(0.58, 0.40, 0.74, 0.9),
    rgba(0.09, 0.75, 0.81, 0.9),
];
/// The ground is a thin slab whose top is the world's ground height.
const GROUND_THICKNESS: f64 = 0.05;

const fn rgba(r: f64, g: f64, b: f64, a: f64) -> Color {
    Color { r, g, b, a }
}

/// Simulation time as Foxglove's timestamp (sim time starts at 0; negative is clamped).
pub fn timestamp(sim_time_ns: i64) -> Timestamp {
    let ns = u64::try_from(sim_time_ns).unwrap_or(0);
    let sec = u32::try_from(ns / 1_000_000_000).unwrap_or(u32::MAX);
    Timestamp::new(sec, (ns % 1_000_000_000) as u32)
}

fn vector(v: Vec3) -> Vector3 {
    Vector3 {
        x: v.x,
        y: v.y,
        z: v.z,
    }
}

fn quaternion(q: Quat) -> Quaternion {
    Quaternion {
        x: q.x,
        y: q.y,
        z: q.z,
        w: q.w,
    }
}

fn pose(p: &Pose) -> FoxPose {
    FoxPose {
        position: Some(vector(p.position)),
        orientation: Some(quaternion(p.orientation)),
    }
}

/// A rotation of `yaw` radians about z.
fn yaw_pose(center: Vec3, yaw: f64) -> FoxPose {
    let (s, c) = (yaw / 2.0).sin_cos();
    pose(&Pose {
        position: center,
        orientation: Quat::new(0.0, 0.0, s, c),
    })
}

fn cube(pose: FoxPose, size: Vec3, color: Color) -> CubePrimitive {
    CubePrimitive {
        pose: Some(pose),
        size: Some(vector(size)),
        color: Some(color),
    }
}

fn entity(id: String, stamp: Timestamp) -> SceneEntity {
    SceneEntity {
        timestamp: Some(stamp),
        frame_id: WORLD_FRAME.to_string(),
        id,
        ..Default::default()
    }
}

/// The scenario's ground (its top at `ground_z`, the world's ground height) and obstacles:
/// entities `ground` and `obstacle/<i>`, which never move.
pub fn map_entities(map: &MapSpec, ground_z: f64) -> Vec<SceneEntity> {
    let stamp = timestamp(0);
    let [hx, hy] = map.ground_half_extents;
    let mut ground = entity("ground".into(), stamp);
    ground.cubes.push(cube(
        yaw_pose(Vec3::new(0.0, 0.0, ground_z - GROUND_THICKNESS / 2.0), 0.0),
        Vec3::new(2.0 * hx, 2.0 * hy, GROUND_THICKNESS),
        GROUND,
    ));
    let mut entities = vec![ground];
    for (i, b) in map.boxes.iter().enumerate() {
        let mut obstacle = entity(format!("obstacle/{i}"), stamp);
        let [cx, cy, cz] = b.center;
        let [hx, hy, hz] = b.half_extents;
        obstacle.cubes.push(cube(
            yaw_pose(Vec3::new(cx, cy, cz), b.yaw),
            Vec3::new(2.0 * hx, 2.0 * hy, 2.0 * hz),
            OBSTACLE,
        ));
        entities.push(obstacle);
    }
    entities
}

/// The map's road surfaces, road marks and meshes (`/map`): one entity `map/<material>` per
/// material (`map/asphalt`, `map/lane_marking`, `map/building`, ...) in the order of
/// [`Material`] (roads under marks under buildings), with one triangle list per surface, in the
/// surface's colour, in the world frame. No entities for a world without surfaces.
pub fn road_network(surfaces: &[Surface]) -> SceneUpdate {
    let stamp = timestamp(0);
    let mut by_material: BTreeMap<Material, SceneEntity> = BTreeMap::new();
    for surface in surfaces.iter().filter(|s| !s.mesh.is_empty()) {
        by_material
            .entry(surface.material)
            .or_insert_with(|| entity(format!("map/{}", surface.material.name()), stamp))
            .triangles
            .push(triangle_list(surface));
    }
    SceneUpdate {
        deletions: Vec::new(),
        entities: by_material.into_values().collect(),
    }
}

/// One surface as an indexed triangle list: its vertices once, three indices per triangle.
fn triangle_list(surface: &Surface) -> TriangleListPrimitive {
    let [r, g, b] = surface.colour.map(f64::from);
    TriangleListPrimitive {
        pose: Some(yaw_pose(Vec3::new(0.0, 0.0, 0.0), 0.0)),
        points: surface
            .mesh
            .vertices
            .iter()
            .map(|&[x, y, z]| Point3 { x, y, z })
            .collect(),
        color: Some(rgba(r, g, b, 1.0)),
        colors: Vec::new(),
        indices: surface.mesh.triangles.iter().flatten().copied().collect(),
    }
}

/// Agent `index`'s box at its state's pose, with its id written above it: entity `agent/<id>`.
pub fn agent_entity(index: usize, state: &AgentState) -> SceneEntity {
    let mut agent = entity(
        format!("agent/{}", state.agent_id),
        timestamp(state.stamp_ns),
    );
    let e = state.extents;
    agent.cubes.push(cube(
        pose(&state.pose),
        Vec3::new(2.0 * e.x, 2.0 * e.y, 2.0 * e.z),
        AGENT_COLOURS[index % AGENT_COLOURS.len()],
    ));
    let mut label = state.pose;
    label.position.z += 2.0 * e.z + 0.5;
    agent.texts.push(TextPrimitive {
        pose: Some(pose(&label)),
        billboard: true,
        font_size: 14.0,
        scale_invariant: true,
        color: Some(rgba(1.0, 1.0, 1.0, 1.0)),
        text: state.agent_id.clone(),
    });
    agent
}

/// One frame's scene: the map (so a client that connects late sees it) and every agent.
pub fn scene_update(map: &[SceneEntity], agents: &[(usize, &AgentState)]) -> SceneUpdate {
    let mut entities = map.to_vec();
    entities.extend(agents.iter().map(|(i, s)| agent_entity(*i, s)));
    SceneUpdate {
        deletions: Vec::new(),
        entities,
    }
}

/// `world` -> `<agent id>` for each agent, so sensor data in an agent's frame lands on its box.
pub fn transforms(agents: &[(usize, &AgentState)]) -> FrameTransforms {
    FrameTransforms {
        transforms: agents
            .iter()
            .map(|(_, s)| FrameTransform {
                timestamp: Some(timestamp(s.stamp_ns)),
                parent_frame_id: WORLD_FRAME.to_string(),
                child_frame_id: s.agent_id.clone(),
                translation: Some(vector(s.pose.position)),
                rotation: Some(quaternion(s.pose.orientation)),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convoy_core::scenario::BoxSpec;
    use convoy_world::SurfaceMesh;

    fn state(id: &str, x: f64) -> AgentState {
        AgentState {
            agent_id: id.into(),
            stamp_ns: 1_500_000_000,
            pose: Pose {
                position: Vec3::new(x, 2.0, 0.5),
                orientation: Quat::IDENTITY,
            },
            extents: Vec3::new(2.0, 1.0, 0.75),
            ..Default::default()
        }
    }

    #[test]
    fn an_agent_is_a_box_of_its_full_size_at_its_pose_with_its_id() {
        let s = state("ego", 3.0);
        let e = agent_entity(0, &s);
        assert_eq!(e.id, "agent/ego");
        assert_eq!(e.frame_id, WORLD_FRAME);
        let size = e.cubes[0].size.expect("size");
        assert_eq!((size.x, size.y, size.z), (4.0, 2.0, 1.5));
        let at = e.cubes[0].pose.and_then(|p| p.position).expect("pose");
        assert_eq!((at.x, at.y), (3.0, 2.0));
        assert_eq!(e.texts[0].text, "ego");
        assert_eq!(e.timestamp, Some(Timestamp::new(1, 500_000_000)));
    }

    #[test]
    fn a_frame_carries_the_map_every_agent_and_their_transforms() {
        let map = map_entities(
            &MapSpec {
                boxes: vec![BoxSpec {
                    center: [10.0, 0.0, 1.0],
                    half_extents: [1.0, 1.0, 1.0],
                    yaw: 0.5,
                }],
                ..MapSpec::default()
            },
            0.0,
        );
        assert_eq!(map.len(), 2);
        assert_eq!(map[1].id, "obstacle/0");
        let (a, b) = (state("a", 0.0), state("b", 5.0));
        let agents = [(0, &a), (1, &b)];
        let update = scene_update(&map, &agents);
        assert_eq!(update.entities.len(), map.len() + 2);
        assert_eq!(update.entities[0].id, "ground");
        let tf = transforms(&agents);
        assert_eq!(tf.transforms[1].child_frame_id, "b");
        assert_eq!(tf.transforms[1].translation.map(|t| t.x), Some(5.0));
    }

    #[test]
    fn the_ground_s_top_is_the_world_s_ground_height() {
        let map = map_entities(&MapSpec::default(), -0.1);
        let cube = &map[0].cubes[0];
        let z = cube.pose.and_then(|p| p.position).expect("pose").z;
        let h = cube.size.expect("size").z;
        assert!((z + h / 2.0 + 0.1).abs() < 1e-12, "top at {}", z + h / 2.0);
    }

    fn surface(material: Material, colour: [f32; 3], x: f64) -> Surface {
        Surface {
            material,
            colour,
            mesh: SurfaceMesh {
                vertices: vec![
                    [x, 0.0, 0.0],
                    [x + 1.0, 0.0, 0.0],
                    [x, 1.0, 0.0],
                    [x + 1.0, 1.0, 0.0],
                ],
                triangles: vec![[0, 1, 2], [1, 3, 2]],
            },
        }
    }

    #[test]
    fn the_road_network_is_one_entity_per_material_with_a_triangle_list_per_surface() {
        let surfaces = [
            surface(Material::Building, [0.5, 0.4, 0.3], 10.0),
            surface(Material::LaneMarking, [0.9, 0.9, 0.9], 0.0),
            surface(Material::Asphalt, [0.2, 0.2, 0.2], 0.0),
            surface(Material::Building, [0.1, 0.2, 0.3], 20.0),
            Surface {
                material: Material::Sidewalk,
                colour: [0.6; 3],
                mesh: SurfaceMesh::default(),
            },
        ];
        let update = road_network(&surfaces);
        let ids: Vec<&str> = update.entities.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["map/asphalt", "map/lane_marking", "map/building"]);
        let building = &update.entities[2];
        assert_eq!(building.frame_id, WORLD_FRAME);
        assert_eq!(building.triangles.len(), 2);
        let second = &building.triangles[1];
        assert_eq!(second.points.len(), 4);
        assert_eq!(second.points[3].x, 21.0);
        assert_eq!(second.indices, [0, 1, 2, 1, 3, 2]);
        let colour = second.color.expect("colour");
        assert_eq!((colour.b, colour.a), (f64::from(0.3f32), 1.0));
        assert!(road_network(&[]).entities.is_empty());
    }

    #[test]
    fn sim_time_before_zero_is_the_epoch() {
        assert_eq!(timestamp(-5), Timestamp::new(0, 0));
        assert_eq!(timestamp(2_000_000_001), Timestamp::new(2, 1));
    }
}
