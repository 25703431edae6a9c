//! Lidar: a spinning multi-channel range sensor, simulated by casting one ray per channel and
//! column through rapier3d's query pipeline against the scenario's static world (ground, map
//! boxes, road surfaces, road marks and meshes from convoy-world) and every agent's box as it
//! stands in the sample's frame.
//!
//! Intensity is the reflectivity of what the ray hit (each collider carries its
//! [`Material`] in its user data: paint is bright, asphalt dark, cars in between) times the
//! cosine of the angle of incidence, fading with range.
//!
//! [`LidarScene`] is the data: a collider set built once from the scenario, whose agent boxes
//! are moved to each frame's states before a scan. [`scan`](LidarScene::scan) is the algorithm:
//! channels x columns rays from the mount point, split over the machine's cores, each hit
//! becoming one point in the sensor's frame (x forward, y left, z up) with intensity, ring and
//! time offset. Range noise is drawn per column from a stream named after the sensor, the frame
//! and the column, so a scan is the same whichever node or thread makes it.

use std::collections::BTreeMap;

use convoy_core::messages::{AgentState, PointCloud, PointField, PointFieldType, SensorHeader};
use convoy_core::scenario::{Scenario, SensorSpec};
use convoy_world::{Material, World};
use rapier3d_f64::prelude::{
    ColliderBuilder, ColliderHandle, PhysicsWorld, Pose, QueryFilter, Ray, Rotation, Vector,
};

use crate::noise::Noise;

/// Bytes per point: x, y, z, intensity (f32), ring (u16, 2 bytes padding), time offset (f32).
pub const POINT_STEP: u32 = 24;
/// Where an agent's box waits when its state is not known for a frame: far below the ground.
const PARKED_Z: f64 = -10_000.0;
/// Collider user data of an agent's box (materials use their index in [`Material::ALL`]).
const VEHICLE_TAG: u128 = u128::MAX;
/// Lidar reflectivity of a car's body (painted metal).
const VEHICLE_REFLECTIVITY: f32 = 0.6;

/// The collider user data of a static surface of `material`.
fn material_tag(material: Material) -> u128 {
    Material::ALL
        .iter()
        .position(|m| *m == material)
        .map_or(0, |i| i as u128)
}

/// The reflectivity of what a collider with user data `tag` is made of.
fn reflectivity_of(tag: u128) -> f32 {
    if tag == VEHICLE_TAG {
        return VEHICLE_REFLECTIVITY;
    }
    usize::try_from(tag)
        .ok()
        .and_then(|i| Material::ALL.get(i))
        .map_or(Material::Ground.reflectivity(), |m| m.reflectivity())
}

/// A lidar's geometry and rate, from its [`SensorSpec`] (defaults: a 32-channel, 1024-column
/// roof lidar, +15..-25 degrees, 0.5-100 m).
#[derive(Debug, Clone, PartialEq)]
pub struct LidarParams {
    pub channels: u32,
    pub columns: u32,
    /// Elevation of the highest and lowest channel, radians.
    pub upper: f64,
    pub lower: f64,
    pub min_range: f64,
    pub max_range: f64,
    /// Mount point in the agent's body frame, metres.
    pub offset: [f64; 3],
    /// Rotations per second (one scan per sample).
    pub rate: f64,
    /// Standard deviation of the range noise, metres.
    pub range_sigma: f64,
}

/// Default range noise of the model (scaled by the sensor's `noise`).
pub const RANGE_SIGMA: f64 = 0.02;

impl LidarParams {
    /// The parameters of `spec` on an agent whose box has half height `half_height`.
    pub fn from_spec(spec: &SensorSpec, half_height: f64) -> LidarParams {
        LidarParams {
            channels: spec.channels.unwrap_or(32),
            columns: spec.columns.unwrap_or(1024),
            upper: spec.upper_fov.unwrap_or(15.0).to_radians(),
            lower: spec.lower_fov.unwrap_or(-25.0).to_radians(),
            min_range: spec.min_range.unwrap_or(0.5),
            max_range: spec.max_range(),
            // On the roof by default: 0.3 m above the box.
            offset: spec.mount_offset([0.0, 0.0, half_height]),
            rate: spec.rate,
            range_sigma: RANGE_SIGMA * spec.noise,
        }
    }

    /// Elevation of channel `ring` (0 = lowest), radians.
    pub fn elevation(&self, ring: u32) -> f64 {
        if self.channels <= 1 {
            return (self.upper + self.lower) / 2.0;
        }
        self.lower + (self.upper - self.lower) * f64::from(ring) / f64::from(self.channels - 1)
    }

    /// Azimuth of column `column` (0 = straight ahead, counter-clockwise), radians.
    pub fn azimuth(&self, column: u32) -> f64 {
        std::f64::consts::TAU * f64::from(column) / f64::from(self.columns.max(1))
    }
}

/// The static map and the agents' boxes, as colliders in one rapier world used for queries only
/// (nothing is ever stepped).
pub struct LidarScene {
    world: PhysicsWorld,
    agents: BTreeMap<String, ColliderHandle>,
}

fn rotation_of(state: &AgentState) -> Rotation {
    let q = &state.pose.orientation;
    let r = Rotation::from_xyzw(q.x, q.y, q.z, q.w);
    if r.is_finite() && r.length() > 0.5 {
        r.normalize()
    } else {
        Rotation::IDENTITY
    }
}

fn position_of(state: &AgentState) -> Vector {
    let p = &state.pose.position;
    Vector::new(p.x, p.y, p.z)
}

impl LidarScene {
    /// The scenario's ground, map boxes, the world's surfaces and one box per agent (parked
    /// until placed).
    pub fn new(scenario: &Scenario, statics: &World) -> LidarScene {
        let mut world = PhysicsWorld::new();
        let [hx, hy] = scenario.map.ground_half_extents;
        // The ground: a thin slab whose top is the world's ground height, as in the agents'
        // physics.
        world.insert_collider(
            ColliderBuilder::cuboid(hx, hy, 0.05)
                .translation(Vector::new(0.0, 0.0, statics.ground_z - 0.05))
                .user_data(material_tag(Material::Ground)),
            None,
        );
        for shape in statics.all_shapes() {
            world.insert_collider(
                ColliderBuilder::new(shape.shape.clone()).user_data(material_tag(shape.material)),
                None,
            );
        }
        for b in &scenario.map.boxes {
            let [x, y, z] = b.center;
            let [ex, ey, ez] = b.half_extents;
            let half_yaw = b.yaw / 2.0;
            let yaw = Rotation::from_xyzw(0.0, 0.0, half_yaw.sin(), half_yaw.cos());
            world.insert_collider(
                ColliderBuilder::cuboid(ex, ey, ez)
                    .position(Pose::from_parts(Vector::new(x, y, z), yaw))
                    .user_data(material_tag(Material::Building)),
                None,
            );
        }
        let mut agents = BTreeMap::new();
        for agent in &scenario.agents {
            let [ex, ey, ez] = agent.vehicle.half_extents;
            let handle = world.insert_collider(
                ColliderBuilder::cuboid(ex, ey, ez)
                    .translation(Vector::new(0.0, 0.0, PARKED_Z))
                    .user_data(VEHICLE_TAG),
                None,
            );
            agents.insert(agent.id.clone(), handle);
        }
        world.detect_collisions(&(), &());
        LidarScene { world, agents }
    }

    /// Moves every agent's box to its state in `states`; boxes of agents without a state are
    /// parked out of sight.
    fn place<'a>(&mut self, states: impl Iterator<Item = &'a AgentState>) {
        let mut placed: BTreeMap<&str, Pose> = BTreeMap::new();
        for s in states {
            placed.insert(
                &s.agent_id,
                Pose::from_parts(position_of(s), rotation_of(s)),
            );
        }
        for (agent, handle) in &self.agents {
            let pose = placed.get(agent.as_str()).copied().unwrap_or_else(|| {
                Pose::from_parts(Vector::new(0.0, 0.0, PARKED_Z), Rotation::IDENTITY)
            });
            if let Some(collider) = self.world.colliders.get_mut(*handle) {
                collider.set_position(pose);
            }
        }
        self.world.detect_collisions(&(), &());
    }

    /// One full rotation of the lidar on `own` (whose box the rays ignore), with the other
    /// agents where `others` says, as a point cloud in the sensor's frame.
    pub fn scan(
        &mut self,
        own: &AgentState,
        others: &[AgentState],
        params: &LidarParams,
        seed: u64,
        noise_stream: &str,
        header: SensorHeader,
    ) -> PointCloud {
        self.place(std::iter::once(own).chain(others.iter()));
        let rotation = rotation_of(own);
        let [ox, oy, oz] = params.offset;
        let origin = position_of(own) + rotation * Vector::new(ox, oy, oz);
        let own_collider = self.agents.get(&own.agent_id).copied();
        let columns = params.columns.max(1);
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, columns as usize);
        let per_thread = (columns as usize).div_ceil(threads);
        let world = &self.world;
        // Each thread casts the rays of a block of columns; blocks are joined in column order,
        // so the cloud does not depend on the number of threads.
        let blocks: Vec<Vec<u8>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let start = (t * per_thread) as u32;
                    let end = ((t + 1) * per_thread).min(columns as usize) as u32;
                    scope.spawn(move || {
                        let mut filter = QueryFilter::default();
                        if let Some(own) = own_collider {
                            filter = filter.exclude_collider(own);
                        }
                        let query = world.query_pipeline_with_filter(filter);
                        let mut out = Vec::new();
                        for column in start..end {
                            let mut noise = Noise::new(seed, &format!("{noise_stream}/{column}"));
                            let azimuth = params.azimuth(column);
                            let time_offset =
                                f64::from(column) / f64::from(columns) / params.rate.max(1e-6);
                            for ring in 0..params.channels {
                                let elevation = params.elevation(ring);
                                let local = Vector::new(
                                    elevation.cos() * azimuth.cos(),
                                    elevation.cos() * azimuth.sin(),
                                    elevation.sin(),
                                );
                                let ray = Ray::new(origin, rotation * local);
                                let Some((hit, intersection)) =
                                    query.cast_ray_and_get_normal(&ray, params.max_range, true)
                                else {
                                    continue;
                                };
                                let toi = intersection.time_of_impact;
                                let range = toi + noise.gaussian(params.range_sigma);
                                if range < params.min_range || toi > params.max_range {
                                    continue;
                                }
                                let point = local * range;
                                // What was hit, how squarely, and how far away.
                                let reflectivity = world
                                    .colliders
                                    .get(hit)
                                    .map_or(0.0, |c| reflectivity_of(c.user_data));
                                let incidence = intersection.normal.dot(ray.dir).abs();
                                let fade = (1.0 - 0.5 * range / params.max_range).clamp(0.0, 1.0);
                                let intensity =
                                    f64::from(reflectivity) * (0.5 + 0.5 * incidence) * fade;
                                for v in [point.x, point.y, point.z, intensity] {
                                    out.extend_from_slice(&(v as f32).to_le_bytes());
                                }
                                out.extend_from_slice(&(ring as u16).to_le_bytes());
                                out.extend_from_slice(&[0, 0]);
                                out.extend_from_slice(&(time_offset as f32).to_le_bytes());
                            }
                        }
                        out
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let data: Vec<u8> = blocks.concat();
        PointCloud {
            header,
            point_count: (data.len() / POINT_STEP as usize) as u32,
            point_step: POINT_STEP,
            fields: point_fields(),
            data,
        }
    }
}

/// The fields of every lidar point, in order.
pub fn point_fields() -> Vec<PointField> {
    let field = |name: &str, offset: u32, datatype: PointFieldType| PointField {
        name: name.into(),
        offset,
        datatype,
    };
    vec![
        field("x", 0, PointFieldType::Float32),
        field("y", 4, PointFieldType::Float32),
        field("z", 8, PointFieldType::Float32),
        field("intensity", 12, PointFieldType::Float32),
        field("ring", 16, PointFieldType::Uint16),
        field("time_offset", 20, PointFieldType::Float32),
    ]
}

/// One decoded point (tests, tools).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub intensity: f32,
    pub ring: u16,
    pub time_offset: f32,
}

/// The points of a cloud made by [`LidarScene::scan`].
pub fn points(cloud: &PointCloud) -> Vec<Point> {
    let f32_at = |c: &[u8], o: usize| f32::from_le_bytes([c[o], c[o + 1], c[o + 2], c[o + 3]]);
    cloud
        .data
        .chunks_exact(POINT_STEP as usize)
        .map(|c| Point {
            x: f32_at(c, 0),
            y: f32_at(c, 4),
            z: f32_at(c, 8),
            intensity: f32_at(c, 12),
            ring: u16::from_le_bytes([c[16], c[17]]),
            time_offset: f32_at(c, 20),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{state, two_cars, walled_yard};
    use convoy_world::World;

    fn params(channels: u32, columns: u32, noise: f64) -> LidarParams {
        LidarParams {
            channels,
            columns,
            upper: 10f64.to_radians(),
            lower: -10f64.to_radians(),
            min_range: 0.5,
            max_range: 100.0,
            offset: [0.0, 0.0, 1.0],
            rate: 10.0,
            range_sigma: RANGE_SIGMA * noise,
        }
    }

    /// The scan of frame `frame` (seed 7), its noise stream named as the node names it.
    fn scan(
        scene: &mut LidarScene,
        ego: &AgentState,
        others: &[AgentState],
        p: &LidarParams,
        frame: u64,
    ) -> PointCloud {
        let header = SensorHeader {
            agent: "ego".into(),
            sensor: "roof".into(),
            frame,
            stamp_ns: 300_000_000,
            seq: 0,
        };
        scene.scan(ego, others, p, 7, &format!("ego/roof#{frame}"), header)
    }

    #[test]
    fn a_wall_at_distance_d_returns_points_at_d() {
        let mut scene = LidarScene::new(&walled_yard(), &World::flat());
        let ego = state("ego", 3, 0.0, 0.0);
        let p = params(16, 360, 1.0);
        // car_2 parked out of the way: only the walls and the ground.
        let cloud = scan(&mut scene, &ego, &[], &p, 3);
        let pts = points(&cloud);
        // The rings nearest level, straight ahead: the wall's face is the plane x = 30 (the
        // sensor is at x = 0), so each of their points has x = 30 up to the noise.
        let ahead: Vec<&Point> = pts
            .iter()
            .filter(|q| q.y.abs() < 0.3 && q.z.abs() < 1.0 && q.x > 0.0)
            .collect();
        assert!(!ahead.is_empty(), "no point ahead");
        for q in ahead {
            assert!((f64::from(q.x) - 30.0).abs() < 5.0 * RANGE_SIGMA, "{q:?}");
        }
    }

    #[test]
    fn every_ring_has_a_point_per_column_in_a_closed_yard() {
        let mut scene = LidarScene::new(&walled_yard(), &World::flat());
        let ego = state("ego", 3, 0.0, 0.0);
        let p = params(8, 256, 1.0);
        let cloud = scan(&mut scene, &ego, &[], &p, 3);
        let pts = points(&cloud);
        assert_eq!(cloud.point_count as usize, pts.len());
        for ring in 0..8u16 {
            assert_eq!(
                pts.iter().filter(|q| q.ring == ring).count(),
                256,
                "ring {ring}"
            );
        }
    }

    #[test]
    fn nothing_beyond_max_range() {
        let mut scene = LidarScene::new(&two_cars(), &World::flat());
        let ego = state("ego", 3, 0.0, 0.0);
        let mut p = params(16, 180, 1.0);
        p.max_range = 20.0;
        let cloud = scan(&mut scene, &ego, &[], &p, 3);
        let pts = points(&cloud);
        // No walls: only the downward rays hit (the ground) and only within 20 m.
        assert!(!pts.is_empty());
        for q in &pts {
            let r = (q.x * q.x + q.y * q.y + q.z * q.z).sqrt();
            assert!(f64::from(r) <= 20.0 + 5.0 * RANGE_SIGMA, "{q:?}");
            assert!(q.z < 0.0, "an upward ray hit nothing but returned {q:?}");
        }
    }

    #[test]
    fn the_other_car_shows_up_where_it_is_and_the_own_box_does_not() {
        let mut scene = LidarScene::new(&two_cars(), &World::flat());
        let ego = state("ego", 3, 0.0, 0.0);
        let car = state("car_2", 3, 10.0, 0.0);
        let p = params(16, 720, 0.0);
        let cloud = scan(&mut scene, &ego, std::slice::from_ref(&car), &p, 3);
        let pts = points(&cloud);
        // The car's rear face is 10 - 2.25 m ahead (default half length 2.25 m).
        let on_car: Vec<&Point> = pts
            .iter()
            .filter(|q| q.x > 5.0 && q.x < 12.5 && q.y.abs() < 1.5 && q.z > -1.0)
            .collect();
        assert!(!on_car.is_empty(), "the car ahead returned no point");
        let nearest = on_car.iter().map(|q| q.x).fold(f32::MAX, f32::min);
        assert!(
            (f64::from(nearest) - 7.75).abs() < 0.05,
            "nearest x {nearest}"
        );
        // Without the car there, nothing returns from that place.
        let empty = scan(&mut scene, &ego, &[], &p, 3);
        assert!(!points(&empty)
            .iter()
            .any(|q| q.x > 5.0 && q.x < 12.5 && q.y.abs() < 1.5 && q.z > -1.0));
        // Its own box never returns a point (the mount is inside the roof's reach).
        assert!(!pts
            .iter()
            .any(|q| (q.x * q.x + q.y * q.y).sqrt() < 2.0 && q.z > -1.5));
    }

    #[test]
    fn a_scan_is_the_same_every_time() {
        let mut scene = LidarScene::new(&walled_yard(), &World::flat());
        let ego = state("ego", 3, 1.0, 2.0);
        let p = params(16, 512, 1.0);
        let a = scan(&mut scene, &ego, &[], &p, 3);
        let b = scan(&mut scene, &ego, &[], &p, 3);
        assert_eq!(a, b);
        let other_frame = scan(&mut scene, &ego, &[], &p, 4);
        assert_ne!(a.data, other_frame.data, "the noise is drawn per frame");
    }
}
