//! Everything one agent process simulates: the ground, the static map boxes, the world's road
//! surfaces and meshes (trimesh colliders shared from [`convoy_world::World`]), its own
//! vehicle (a dynamic rigid body, see [`crate::vehicle`]) and every other agent as a kinematic
//! "zombie" box (SynChrono's scheme, DESIGN.md "Time, clock and determinism").
//!
//! Frame N of an agent: [`AgentWorld::set_zombies`] with the other agents' frame N-1 states,
//! [`AgentWorld::step`] with the control for frame N, then [`AgentWorld::state`] is frame N.
//!
//! How zombies move: each frame a zombie is placed at the pose it was received with *and* given
//! that state's twist as its kinematic velocity, so rapier moves it through the substeps. The
//! received state is from frame N-1, the time at which this step starts; moving it with its
//! velocity keeps it level in time with our own vehicle during the step (it ends near where the
//! other agent really is at frame N). The velocity also reaches the contact solver, so a crash
//! carries the zombie's motion: our car is pushed away at the zombie's speed. A zombie frozen at
//! its N-1 pose and teleported each frame would lag a frame behind, and with no velocity it
//! could only shove our car out of an overlap by penetration correction (tried: in a head-on
//! crash both cars then just stop dead against each other instead of being thrown back). Each
//! frame the zombie is put back exactly on the newest received pose, so extrapolation errors
//! never accumulate. Zombies have infinite mass: in A's world A bounces off B's zombie and in
//! B's world B off A's, so both agents feel the crash (a head-on crash of equal cars is thus
//! elastic-looking: each is thrown back at about the other's speed).
//!
//! Only zombies in reach of our vehicle are bodies in the physics world, brought in or taken
//! out at the start of each step (`zombies.rs`); a far zombie cannot touch our vehicle,
//! so leaving it out changes no result.
//!
//! Determinism: zombies (kept in `zombies.rs`) are removed, created, updated and brought
//! into or out of reach in agent-id order, whatever order the states come in; which zombies
//! are in reach depends only on the states and our own body; rapier runs with
//! `enhanced-determinism`.

use convoy_core::messages::{AgentState, Control, Pose as PoseMsg, Quat, Twist, Vec3};
use convoy_core::scenario::{Scenario, VehicleParams};
use convoy_world::{Material, World};
use rapier3d_f64::prelude::{
    CoefficientCombineRule, ColliderBuilder, InteractionGroups, PhysicsWorld, Pose, QueryFilter,
    Ray, Rotation, Vector,
};

use crate::vehicle::{heading, yaw_rotation, Command, Vehicle, BODY_FRICTION, GRAVITY};
use crate::zombies::{Reach, Zombies};

/// Thickness of the ground slab under z = 0 (thick, so nothing falls through it).
const GROUND_THICKNESS: f64 = 2.0;
/// How far above its resting height the body may be and still have its wheels on the ground.
const GROUNDED_TOLERANCE: f64 = 0.1;
/// The steepest grade (rise over run) a level body still counts as grounded on: on a slope the
/// level box rests on one edge, its centre that much higher per metre of half length.
const GROUNDED_GRADE: f64 = 0.12;
/// Collider user data of a road surface: a floor the car is held on, not a body it collides
/// with (see [`AgentWorld::step`]).
const ROAD_TAG: u128 = 1;
/// A car whose wheels are this far above a road or less (plus the grade allowance) is held on
/// it; higher, it is airborne and falls (metres).
const ROAD_SNAP: f64 = 0.15;
/// A car thrown upward faster than this is left to fly, not pulled onto the road (m/s).
const ROAD_SNAP_LIFT: f64 = 1.0;

/// A teleport looks for the surface under its target from this height down (metres; far above
/// any road, under any bridge deck a map would stack on it).
const TELEPORT_PROBE_HEIGHT: f64 = 1000.0;
/// A unit quaternion within this much of norm 1 is accepted (the same rule as
/// `convoy_core::world::check_command`, so coordinator and agent agree).
const UNIT_TOLERANCE: f64 = 1e-3;

/// Why the world cannot be built or a command cannot be carried out.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error("agent '{0}' is not in the scenario")]
    UnknownAgent(String),
    #[error("bad pose: {0}")]
    BadPose(String),
    #[error("position ({x}, {y}) is off the map (ground is ±{hx} x ±{hy} m)")]
    OffMap { x: f64, y: f64, hx: f64, hy: f64 },
    /// A scenario value this world cannot simulate (normally caught by `Scenario::validate`,
    /// checked again because a `Scenario` can also be built in code).
    #[error("invalid scenario: {0}")]
    InvalidScenario(String),
    #[error(transparent)]
    Map(#[from] convoy_world::WorldError),
}

/// The number of equal physics substeps for a frame of `dt` seconds: `ceil(dt / max_delta)`,
/// at least 1 and at most `max_n` (CARLA's substepping rule).
///
/// A ratio within 1e-9 of an integer counts as that integer, so 0.05 / 0.01 is 5 substeps even
/// where the division rounds up to 5.000000000000001. Non-finite or non-positive inputs give 1.
pub fn substeps(dt: f64, max_delta: f64, max_n: u32) -> u32 {
    let max_n = max_n.max(1);
    if !(dt.is_finite() && dt > 0.0 && max_delta.is_finite() && max_delta > 0.0) {
        return 1;
    }
    let n = (dt / max_delta - 1e-9).ceil();
    if n <= 1.0 {
        1
    } else if n >= f64::from(max_n) {
        max_n
    } else {
        // In range (1, max_n): the cast is exact.
        n as u32
    }
}

/// The vehicle parameters the drive model can work with.
fn check_vehicle(agent_id: &str, v: &VehicleParams) -> Result<(), WorldError> {
    let positive = [
        ("mass", v.mass),
        ("wheelbase", v.wheelbase),
        ("max_drive_force", v.max_drive_force),
        ("max_brake_force", v.max_brake_force),
        ("max_speed", v.max_speed),
        ("half_extents[0]", v.half_extents[0]),
        ("half_extents[1]", v.half_extents[1]),
        ("half_extents[2]", v.half_extents[2]),
    ];
    for (name, value) in positive {
        if !(value.is_finite() && value > 0.0) {
            return Err(WorldError::InvalidScenario(format!(
                "agent '{agent_id}': vehicle.{name} = {value} must be positive"
            )));
        }
    }
    // tan(max_steer) must be finite and positive, or full steer would turn the wrong way.
    if !(v.max_steer > 0.0 && v.max_steer < 1.5) {
        return Err(WorldError::InvalidScenario(format!(
            "agent '{agent_id}': vehicle.max_steer = {} rad must be in (0, 1.5)",
            v.max_steer
        )));
    }
    Ok(())
}

/// One agent's physics world.
pub struct AgentWorld {
    physics: PhysicsWorld,
    agent_id: String,
    vehicle: Vehicle,
    zombies: Zombies,
    ground_half_extents: [f64; 2],
    /// Height of the top of the ground plane.
    ground_z: f64,
    max_substep_delta: f64,
    max_substeps: u32,
    /// World-frame acceleration over the last step.
    accel: Vector,
    /// Substeps the last step took.
    last_substeps: u32,
}

impl std::fmt::Debug for AgentWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentWorld")
            .field("agent_id", &self.agent_id)
            .field("zombies", &self.zombies.ids())
            .finish_non_exhaustive()
    }
}

impl AgentWorld {
    /// Builds the world of agent `agent_id`: ground, map boxes, the static world's surfaces,
    /// and its vehicle at its start pose.
    pub fn new(
        scenario: &Scenario,
        world: &World,
        agent_id: &str,
    ) -> Result<AgentWorld, WorldError> {
        let spec = scenario
            .agent(agent_id)
            .ok_or_else(|| WorldError::UnknownAgent(agent_id.to_string()))?;
        let map = &scenario.map;
        let [hx, hy] = map.ground_half_extents;
        if !(hx.is_finite() && hx > 0.0 && hy.is_finite() && hy > 0.0) {
            return Err(WorldError::InvalidScenario(format!(
                "ground half extents {:?} must be positive",
                map.ground_half_extents
            )));
        }
        check_vehicle(agent_id, &spec.vehicle)?;
        let start = world.start_of(&spec.start)?;
        if ![start.x, start.y, start.z, start.yaw]
            .iter()
            .all(|v| v.is_finite())
        {
            return Err(WorldError::BadPose(format!(
                "start pose of '{agent_id}' is not finite"
            )));
        }
        if start.x.abs() > hx || start.y.abs() > hy {
            return Err(WorldError::OffMap {
                x: start.x,
                y: start.y,
                hx,
                hy,
            });
        }

        let mut physics = PhysicsWorld::new();
        physics.gravity = Vector::new(0.0, 0.0, -GRAVITY);

        // The ground is frictionless: the vehicle model supplies the tire forces. `Multiply`
        // outranks the default `Average`, so every pair with the ground gets 0 * mu = 0.
        let ground_z = world.ground_z;
        physics.insert_collider(
            ColliderBuilder::cuboid(hx, hy, GROUND_THICKNESS / 2.0)
                .translation(Vector::new(0.0, 0.0, ground_z - GROUND_THICKNESS / 2.0))
                .friction(0.0)
                .friction_combine_rule(CoefficientCombineRule::Multiply),
            None,
        );
        // Buildings and other meshes are walls a car slides along. Road surfaces are floors:
        // they collide with nothing (a box on a trimesh road touches a dozen triangles, each a
        // contact manifold for the solver: most of a town frame's physics); the car is held on
        // them by a ray down each substep instead (`hold_on_road`), which also keeps it out of
        // every seam between lane strips, sections and junction roads.
        for shape in world.solid_shapes() {
            let builder = ColliderBuilder::new(shape.shape.clone());
            let builder = match shape.material {
                Material::Building | Material::Vegetation => builder
                    .friction(BODY_FRICTION)
                    .friction_combine_rule(CoefficientCombineRule::Multiply),
                _ => builder
                    .collision_groups(InteractionGroups::none())
                    .user_data(ROAD_TAG),
            };
            physics.insert_collider(builder, None);
        }
        for b in &map.boxes {
            let [x, y, z] = b.center;
            let [ex, ey, ez] = b.half_extents;
            let valid = [x, y, z, b.yaw].iter().all(|v| v.is_finite())
                && [ex, ey, ez].iter().all(|e| e.is_finite() && *e > 0.0);
            if !valid {
                return Err(WorldError::InvalidScenario(format!(
                    "map box at {:?} needs finite values and positive half extents",
                    b.center
                )));
            }
            physics.insert_collider(
                ColliderBuilder::cuboid(ex, ey, ez)
                    .position(Pose::from_parts(Vector::new(x, y, z), yaw_rotation(b.yaw)))
                    .friction(BODY_FRICTION),
                None,
            );
        }

        let vehicle = Vehicle::spawn(
            &mut physics,
            &spec.vehicle,
            [start.x, start.y, start.z],
            start.yaw,
        );
        Ok(AgentWorld {
            physics,
            agent_id: agent_id.to_string(),
            vehicle,
            zombies: Zombies::default(),
            ground_half_extents: [hx, hy],
            ground_z,
            max_substep_delta: scenario.scenario.max_substep_delta,
            max_substeps: scenario.scenario.max_substeps,
            accel: Vector::ZERO,
            last_substeps: 0,
        })
    }

    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    pub fn vehicle(&self) -> &Vehicle {
        &self.vehicle
    }

    /// Mirrors the other agents: creates, updates or removes zombies so that exactly the agents
    /// in `states` (minus this agent itself) are mirrored, each as a kinematic box with its
    /// extents at its pose, moving with its twist (see the module docs); the next
    /// [`AgentWorld::step`] puts those in reach into the physics world.
    ///
    /// Deterministic: states are processed in agent-id order whatever order they come in. Two
    /// states of one agent: the newer frame wins. A state with a non-finite or degenerate
    /// pose, twist or extents cannot be placed: that agent has no zombie until a good state
    /// comes (logged). Returns whether the set of zombies changed (the caller logs it).
    pub fn set_zombies(&mut self, states: &[AgentState]) -> bool {
        self.zombies
            .mirror(&mut self.physics, &self.agent_id, states)
    }

    /// The agents mirrored as zombies, sorted.
    pub fn zombie_ids(&self) -> Vec<String> {
        self.zombies.ids()
    }

    /// The zombies that were in reach, and so bodies in the physics world, for the last step.
    pub fn zombies_in_reach(&self) -> Vec<String> {
        self.zombies.in_reach()
    }

    /// Puts the zombies that can touch our vehicle during a step of `dt` seconds into the
    /// physics world, and takes the others out ([`Zombies::bring_in_reach`]).
    fn bring_zombies_in_reach(&mut self, dt: f64) {
        let Some(own) = self.physics.bodies.get(self.vehicle.body()) else {
            return;
        };
        let [hx, hy, hz] = self.vehicle.params().half_extents;
        let vehicle = Reach {
            position: own.translation(),
            speed: own.linvel().length(),
            radius: Vector::new(hx, hy, hz).length(),
        };
        self.zombies.bring_in_reach(&mut self.physics, &vehicle, dt);
    }

    /// Applies `control` and advances physics by `dt` seconds in [`substeps`] equal substeps.
    /// A non-finite or non-positive `dt` advances nothing.
    pub fn step(&mut self, control: &Control, dt: f64) {
        if !(dt.is_finite() && dt > 0.0) {
            return;
        }
        let n = substeps(dt, self.max_substep_delta, self.max_substeps);
        let h = dt / f64::from(n);
        self.last_substeps = n;
        self.physics.integration_parameters.dt = h;
        self.bring_zombies_in_reach(dt);
        let command = Command::from_control(control);
        let before = self.linvel();
        for _ in 0..n {
            let grounded = self.grounded();
            self.vehicle
                .apply(&mut self.physics.bodies, &command, h, grounded);
            self.physics.step();
            self.hold_on_road();
        }
        self.accel = (self.linvel() - before) / dt;
    }

    /// How many physics substeps the last [`AgentWorld::step`] took (0 before the first).
    pub fn last_substeps(&self) -> u32 {
        self.last_substeps
    }

    fn linvel(&self) -> Vector {
        self.physics
            .bodies
            .get(self.vehicle.body())
            .map_or(Vector::ZERO, |b| b.linvel())
    }

    /// The road under the car (height and unit up normal), looked for from the body's top
    /// down to a little below its wheels; `None` off the roads.
    fn road_below(&self) -> Option<(f64, Vector)> {
        let body = self.physics.bodies.get(self.vehicle.body())?;
        let p = body.translation();
        let [hx, _, hz] = self.vehicle.params().half_extents;
        let from = Vector::new(p.x, p.y, p.z + hz);
        let reach = 2.0 * hz + ROAD_SNAP + GROUNDED_GRADE * hx;
        let is_road = |_, c: &rapier3d_f64::prelude::Collider| c.user_data == ROAD_TAG;
        let query = self
            .physics
            .query_pipeline_with_filter(QueryFilter::only_fixed().predicate(&is_road));
        let (_, hit) = query.cast_ray_and_get_normal(&Ray::new(from, -Vector::Z), reach, true)?;
        let normal = if hit.normal.z < 0.0 {
            -hit.normal
        } else {
            hit.normal
        };
        (normal.z > 0.5).then_some((from.z - hit.time_of_impact, normal))
    }

    /// Holds the car on the road under it: a car at or near the road's height (not thrown up
    /// in a crash) is put at its resting height on it, moving along the surface (its vertical
    /// velocity follows the grade). Off the roads nothing changes: the ground plane and boxes
    /// are colliders as before.
    fn hold_on_road(&mut self) {
        let Some((road, normal)) = self.road_below() else {
            return;
        };
        let rest = self.vehicle.rest_height();
        let [hx, _, _] = self.vehicle.params().half_extents;
        let Some(body) = self.physics.bodies.get_mut(self.vehicle.body()) else {
            return;
        };
        let p = body.translation();
        let v = body.linvel();
        let above = p.z - (road + rest);
        if above > ROAD_SNAP + GROUNDED_GRADE * hx || v.z > ROAD_SNAP_LIFT {
            return;
        }
        // Along the surface: dz = -(n.x dx + n.y dy) / n.z.
        let vz = -(normal.x * v.x + normal.y * v.y) / normal.z;
        body.set_translation(Vector::new(p.x, p.y, road + rest), true);
        body.set_linvel(Vector::new(v.x, v.y, vz), true);
    }

    /// The wheels touch the ground: over the map and not lifted (by a crash) or fallen.
    fn grounded(&self) -> bool {
        let Some(body) = self.physics.bodies.get(self.vehicle.body()) else {
            return false;
        };
        let p = body.translation();
        if !self.is_on_map(p.x, p.y) {
            return false;
        }
        let surface = match self.road_below() {
            Some((road, _)) => road,
            None => match self.surface_below(p) {
                Some(surface) => surface,
                None => return false,
            },
        };
        let [hx, _, hz] = self.vehicle.params().half_extents;
        let above = p.z - surface;
        above >= hz - GROUNDED_TOLERANCE && above <= hz + GROUNDED_TOLERANCE + GROUNDED_GRADE * hx
    }

    /// The height of the highest static surface (ground, road, mesh) under `p`, looking down
    /// from a little above it; `None` when nothing is within reach below.
    fn surface_below(&self, p: Vector) -> Option<f64> {
        let [_, _, hz] = self.vehicle.params().half_extents;
        let from = Vector::new(p.x, p.y, p.z + hz);
        let reach = 4.0 * hz + 2.0;
        let query = self
            .physics
            .query_pipeline_with_filter(QueryFilter::only_fixed());
        let (_, toi) = query.cast_ray(&Ray::new(from, -Vector::Z), reach, true)?;
        Some(from.z - toi)
    }

    /// The own vehicle's state now: pose, twist (world frame), acceleration over the last step
    /// (world frame, the velocity change over dt: kinematic, without gravity; zero before the
    /// first step and after a teleport) and half extents.
    pub fn state(&self, frame: u64, stamp_ns: i64) -> AgentState {
        let (pose, twist) = match self.physics.bodies.get(self.vehicle.body()) {
            Some(body) => {
                let p = body.translation();
                let q = body.rotation();
                let v = body.linvel();
                let w = body.angvel();
                (
                    PoseMsg {
                        position: Vec3::new(p.x, p.y, p.z),
                        orientation: Quat::new(q.x, q.y, q.z, q.w),
                    },
                    Twist {
                        linear: Vec3::new(v.x, v.y, v.z),
                        angular: Vec3::new(w.x, w.y, w.z),
                    },
                )
            }
            None => (PoseMsg::default(), Twist::default()),
        };
        let [ex, ey, ez] = self.vehicle.params().half_extents;
        AgentState {
            agent_id: self.agent_id.clone(),
            frame,
            stamp_ns,
            pose,
            twist,
            accel: Vec3::new(self.accel.x, self.accel.y, self.accel.z),
            extents: Vec3::new(ex, ey, ez),
        }
    }

    /// Puts the vehicle at rest on the surface at the pose's (x, y), heading where the pose's
    /// forward axis points. The pose's z, roll and pitch are ignored: the vehicle drives with
    /// roll and pitch locked, and a body placed in or above the surface would be thrown out of
    /// it or dropped. Rejects non-finite values, a non-unit quaternion and
    /// positions off the ground plane.
    pub fn teleport(&mut self, pose: PoseMsg) -> Result<(), WorldError> {
        let p = pose.position;
        let q = pose.orientation;
        if ![p.x, p.y, p.z, q.x, q.y, q.z, q.w]
            .iter()
            .all(|v| v.is_finite())
        {
            return Err(WorldError::BadPose("non-finite value".into()));
        }
        let norm = (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).sqrt();
        if (norm - 1.0).abs() > UNIT_TOLERANCE {
            return Err(WorldError::BadPose(format!(
                "orientation is not a unit quaternion (norm {norm})"
            )));
        }
        if !self.is_on_map(p.x, p.y) {
            let [hx, hy] = self.ground_half_extents;
            return Err(WorldError::OffMap {
                x: p.x,
                y: p.y,
                hx,
                hy,
            });
        }
        let yaw = heading(&Rotation::from_xyzw(
            q.x / norm,
            q.y / norm,
            q.z / norm,
            q.w / norm,
        ));
        // The highest surface under the target, looked for from well above any road.
        let probe = Vector::new(p.x, p.y, TELEPORT_PROBE_HEIGHT);
        let surface = self
            .physics
            .query_pipeline_with_filter(QueryFilter::only_fixed())
            .cast_ray(
                &Ray::new(probe, -Vector::Z),
                2.0 * TELEPORT_PROBE_HEIGHT,
                true,
            )
            .map_or(self.ground_z, |(_, toi)| probe.z - toi);
        let rest = surface + self.vehicle.rest_height();
        let Some(body) = self.physics.bodies.get_mut(self.vehicle.body()) else {
            return Err(WorldError::UnknownAgent(self.agent_id.clone()));
        };
        body.set_position(
            Pose::from_parts(Vector::new(p.x, p.y, rest), yaw_rotation(yaw)),
            true,
        );
        body.set_linvel(Vector::ZERO, true);
        body.set_angvel(Vector::ZERO, true);
        self.accel = Vector::ZERO;
        Ok(())
    }

    /// True when (x, y) is over the ground plane.
    pub fn is_on_map(&self, x: f64, y: f64) -> bool {
        let [hx, hy] = self.ground_half_extents;
        x.is_finite() && y.is_finite() && x.abs() <= hx && y.abs() <= hy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substep_counts() {
        assert_eq!(substeps(0.05, 0.01, 10), 5);
        assert_eq!(substeps(0.01, 0.01, 10), 1);
        assert_eq!(substeps(0.001, 0.01, 10), 1);
        assert_eq!(substeps(0.011, 0.01, 10), 2);
        assert_eq!(substeps(0.1, 0.01, 10), 10);
        assert_eq!(substeps(0.3, 0.01, 10), 10);
        assert_eq!(substeps(0.03, 0.01, 16), 3);
        assert_eq!(substeps(f64::NAN, 0.01, 10), 1);
        assert_eq!(substeps(0.05, 0.0, 10), 1);
        assert_eq!(substeps(0.05, 0.01, 0), 1);
    }
}
