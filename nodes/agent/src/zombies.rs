//! The other agents as an agent's physics world mirrors them ("zombies", SynChrono's scheme;
//! [`crate::world`] says how they move): the newest usable state of each, and a kinematic body
//! only while it is in reach of the vehicle.
//!
//! Only zombies in reach are bodies: at the start of each step a zombie is put in the physics
//! world when its bounding sphere can come within contact distance of the vehicle's during the
//! step, and taken out when it cannot. A far zombie cannot touch the vehicle, so leaving it out
//! changes no result, and a world of 64 agents spread along a road steps with the few
//! neighbours it has instead of 63 bodies to integrate and keep in the broad phase each
//! substep. Zombies are kept and visited in agent-id order (determinism).

use std::collections::BTreeMap;

use convoy_core::messages::AgentState;
use rapier3d_f64::prelude::{
    ColliderBuilder, ColliderHandle, PhysicsWorld, Pose, RigidBodyBuilder, RigidBodyHandle,
    Rotation, SharedShape, Vector,
};

use crate::vehicle::{BODY_FRICTION, SOFT_CCD_PREDICTION};

/// Room added to the reach of a zombie beyond what its and our bodies can travel in a step:
/// covers the soft-CCD prediction distance of both bodies (the broad phase pairs bodies that
/// far apart) and what a contact can add to our speed within the step.
const REACH_MARGIN: f64 = 2.0 * SOFT_CCD_PREDICTION + 1.0;

/// Another agent mirrored in this world: its newest usable state, and its body while in reach.
#[derive(Debug, Clone)]
struct Zombie {
    placement: ZombiePlacement,
    body: Option<ZombieBody>,
}

/// A zombie's kinematic body and box collider in the physics world.
#[derive(Debug, Clone)]
struct ZombieBody {
    body: RigidBodyHandle,
    collider: ColliderHandle,
    extents: [f64; 3],
}

/// Every other agent this world mirrors, by agent id.
#[derive(Debug, Default)]
pub(crate) struct Zombies {
    by_id: BTreeMap<String, Zombie>,
}

/// The vehicle as the reach rule sees it: where it is, how fast it goes, how far from its
/// centre its body reaches.
pub(crate) struct Reach {
    pub position: Vector,
    pub speed: f64,
    pub radius: f64,
}

impl Zombies {
    /// See [`crate::world::AgentWorld::set_zombies`]; `own_id`'s state is not mirrored.
    pub(crate) fn mirror(
        &mut self,
        physics: &mut PhysicsWorld,
        own_id: &str,
        states: &[AgentState],
    ) -> bool {
        // A Tick carries its states sorted by agent id, one each: merge them with the zombies
        // (also sorted) as they are. Any other order or repeats go through a sorted map first.
        let sorted = states.windows(2).all(|w| w[0].agent_id < w[1].agent_id);
        if sorted {
            return self.merge(physics, own_id, states.iter());
        }
        let mut wanted: BTreeMap<&str, &AgentState> = BTreeMap::new();
        for state in states {
            wanted
                .entry(state.agent_id.as_str())
                .and_modify(|kept| {
                    if state.frame > kept.frame {
                        *kept = state;
                    }
                })
                .or_insert(state);
        }
        self.merge(physics, own_id, wanted.into_values())
    }

    /// [`Zombies::mirror`] for `wanted` in increasing agent-id order, one state each: one pass
    /// over the zombies, which are in the same order.
    fn merge<'a>(
        &mut self,
        physics: &mut PhysicsWorld,
        own_id: &str,
        wanted: impl Iterator<Item = &'a AgentState>,
    ) -> bool {
        let mut wanted = wanted.filter(|s| s.agent_id != own_id).peekable();
        let mut new: Vec<(&AgentState, ZombiePlacement)> = Vec::new();
        let mut changed = false;
        self.by_id.retain(|id, zombie| {
            // States of agents before this zombie's id have no zombie yet.
            while let Some(state) = wanted.next_if(|s| s.agent_id.as_str() < id.as_str()) {
                if let Some(placement) = usable_placement(own_id, state) {
                    new.push((state, placement));
                }
            }
            let keep = match wanted.next_if(|s| s.agent_id == *id) {
                Some(state) => match usable_placement(own_id, state) {
                    Some(placement) => {
                        zombie.placement = placement;
                        true
                    }
                    None => false,
                },
                // No state for this agent: it left.
                None => false,
            };
            if !keep {
                changed = true;
                if let Some(body) = zombie.body.take() {
                    physics.remove_body(body.body);
                }
            }
            keep
        });
        for state in wanted {
            if let Some(placement) = usable_placement(own_id, state) {
                new.push((state, placement));
            }
        }
        changed |= !new.is_empty();
        for (state, placement) in new {
            self.by_id.insert(
                state.agent_id.clone(),
                Zombie {
                    placement,
                    body: None,
                },
            );
        }
        changed
    }

    /// The agents mirrored, sorted.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.by_id.keys().cloned().collect()
    }

    /// The zombies that were in reach, and so bodies in the physics world, for the last step.
    pub(crate) fn in_reach(&self) -> Vec<String> {
        self.by_id
            .iter()
            .filter(|(_, z)| z.body.is_some())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Puts the zombies that can touch `vehicle` during a step of `dt` seconds into the
    /// physics world at their newest placement, and takes the others out.
    ///
    /// A zombie is in reach when the distance between its centre and the vehicle's is at most
    /// the sum of both bounding-sphere radii, what both travel in `dt` at their speeds, what a
    /// contact could add to the vehicle's (the fastest body's speed, twice: a crash can throw
    /// it back at up to the sum of two speeds) and [`REACH_MARGIN`].
    pub(crate) fn bring_in_reach(&mut self, physics: &mut PhysicsWorld, vehicle: &Reach, dt: f64) {
        let fastest = self
            .by_id
            .values()
            .map(|z| z.placement.linvel.length())
            .fold(vehicle.speed, f64::max);
        for zombie in self.by_id.values_mut() {
            let placement = &zombie.placement;
            let [ex, ey, ez] = placement.extents;
            let reach = vehicle.radius
                + Vector::new(ex, ey, ez).length()
                + (vehicle.speed + placement.linvel.length() + 2.0 * fastest) * dt
                + REACH_MARGIN;
            let in_reach = placement.pose.translation.distance(vehicle.position) <= reach;
            match (in_reach, zombie.body.as_mut()) {
                (true, Some(body)) => body.place(physics, placement),
                (true, None) => zombie.body = Some(ZombieBody::insert(physics, placement)),
                (false, Some(body)) => {
                    physics.remove_body(body.body);
                    zombie.body = None;
                }
                (false, None) => {}
            }
        }
    }
}

/// Where `state`'s agent goes as a zombie, or `None` (logged) when its pose, twist or extents
/// are non-finite or degenerate: that agent then has no zombie until a good state comes.
fn usable_placement(own_id: &str, state: &AgentState) -> Option<ZombiePlacement> {
    let placement = ZombiePlacement::from_state(state);
    if placement.is_none() {
        tracing::warn!(
            "agent '{own_id}': frame {} state of '{}' has a non-finite or degenerate pose, \
             twist or extents; no zombie for it this frame",
            state.frame,
            state.agent_id
        );
    }
    placement
}

impl ZombieBody {
    /// A new kinematic body with a box collider at `placement`.
    fn insert(physics: &mut PhysicsWorld, placement: &ZombiePlacement) -> ZombieBody {
        let [ex, ey, ez] = placement.extents;
        let body = RigidBodyBuilder::kinematic_velocity_based()
            .pose(placement.pose)
            .linvel(placement.linvel)
            .angvel(placement.angvel)
            .can_sleep(false)
            // Zombies need soft CCD too: rapier only counts a body's velocity in the
            // speculative contact margin when that body has a soft-CCD prediction.
            .soft_ccd_prediction(SOFT_CCD_PREDICTION);
        let collider = ColliderBuilder::cuboid(ex, ey, ez).friction(BODY_FRICTION);
        let (body, collider) = physics.insert(body, collider);
        ZombieBody {
            body,
            collider,
            extents: placement.extents,
        }
    }

    /// Moves the body to `placement`, reshaping its collider if the extents changed.
    fn place(&mut self, physics: &mut PhysicsWorld, placement: &ZombiePlacement) {
        if self.extents != placement.extents {
            let [ex, ey, ez] = placement.extents;
            if let Some(collider) = physics.colliders.get_mut(self.collider) {
                collider.set_shape(SharedShape::cuboid(ex, ey, ez));
            }
            self.extents = placement.extents;
        }
        if let Some(body) = physics.bodies.get_mut(self.body) {
            body.set_position(placement.pose, true);
            body.set_linvel(placement.linvel, true);
            body.set_angvel(placement.angvel, true);
        }
    }
}

/// Where and how a zombie goes this frame, checked and converted from an [`AgentState`].
#[derive(Debug, Clone)]
struct ZombiePlacement {
    pose: Pose,
    linvel: Vector,
    angvel: Vector,
    extents: [f64; 3],
}

impl ZombiePlacement {
    fn from_state(state: &AgentState) -> Option<ZombiePlacement> {
        let p = state.pose.position;
        let q = state.pose.orientation;
        let v = state.twist.linear;
        let w = state.twist.angular;
        let e = state.extents;
        let values = [
            p.x, p.y, p.z, q.x, q.y, q.z, q.w, v.x, v.y, v.z, w.x, w.y, w.z,
        ];
        if !values.iter().all(|x| x.is_finite()) {
            return None;
        }
        if ![e.x, e.y, e.z].iter().all(|h| h.is_finite() && *h > 0.0) {
            return None;
        }
        let norm = (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).sqrt();
        if norm < 1e-6 {
            return None;
        }
        Some(ZombiePlacement {
            pose: Pose::from_parts(
                Vector::new(p.x, p.y, p.z),
                Rotation::from_xyzw(q.x / norm, q.y / norm, q.z / norm, q.w / norm),
            ),
            linvel: Vector::new(v.x, v.y, v.z),
            angvel: Vector::new(w.x, w.y, w.z),
            extents: [e.x, e.y, e.z],
        })
    }
}
