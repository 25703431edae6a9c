//! `lane_follow`: a car that drives the OpenDRIVE lane graph by itself.
//!
//! Each frame, from its own state and the other agents' states of the previous frame (the same
//! inputs on every host, so runs stay bit-identical):
//!
//! - **Where it is**: the rear axle projected onto the current lane; past the lane's end it moves
//!   on to the next lane of its plan. The plan is extended lane by lane: at a fork the next lane
//!   is the one leading to the next road of `route`, or else a draw from the agent's seeded
//!   stream (the scenario seed and the agent id), so turns differ between cars and runs with
//!   different seeds, never between two runs with the same one.
//! - **Steering**: the bicycle model referenced at the rear axle (which does not slide sideways),
//!   commanded as a curvature: the lane's own curvature ahead (feed-forward) plus feedback on the
//!   lateral and heading errors, critically damped over [`TRACK_DISTANCE`] metres of travel. It
//!   goes out as a yaw rate (velocity control), which the vehicle model limits to what its
//!   steering can do.
//! - **Speed**: the target speed, lowered for the curvature ahead (at most [`LATERAL_ACCEL`]),
//!   for the car ahead on its path (a stopping distance at [`PLANNED_DECEL`] that ends `gap`
//!   metres behind it), and before a junction another car holds.
//! - **Junctions**: one car at a time in a junction. A car near a junction (inside its zone, or
//!   within [`JUNCTION_APPROACH`] metres of it heading in) claims it; among the claimants the one
//!   nearest to the zone goes (ties by agent id), the others stop at the zone's edge. Every agent
//!   ranks the same frame's states, so all agree on who goes.

use std::collections::VecDeque;
use std::sync::Arc;

use convoy_core::messages::{AgentState, Control, ControlMode};
use convoy_core::scenario::VehicleParams;
use convoy_world::{JunctionZone, LaneId, LanePos, RoadMap, World};

use crate::controller::Controller;
use crate::detmath;

/// Metres of travel over which lateral and heading errors are corrected (critically damped).
pub const TRACK_DISTANCE: f64 = 4.0;
/// Lateral acceleration planned for in curves, m/s².
pub const LATERAL_ACCEL: f64 = 2.0;
/// Deceleration planned for stops (behind a car, before a junction), m/s². The vehicle brakes
/// harder than this, so a plan made a frame late still stops in time.
pub const PLANNED_DECEL: f64 = 2.5;
/// How far ahead a junction is claimed, metres from its zone.
pub const JUNCTION_APPROACH: f64 = 12.0;
/// A car this far to the side of the path (centre to centre, metres) is on it.
const PATH_HALF_WIDTH: f64 = 2.2;
/// How far along its path a car looks for curves and cars, metres.
const HORIZON: f64 = 60.0;
/// Where the stop before a junction zone ends, metres before its edge.
const JUNCTION_STOP_MARGIN: f64 = 1.0;
/// Below this distance-to-go the car stands still, metres.
const STANDSTILL_DISTANCE: f64 = 0.3;

/// A point of the path ahead: distance along it from the car, position, travel yaw and its
/// unit vector (computed once: every other car is tested against every point).
#[derive(Debug, Clone, Copy)]
struct PathPoint {
    d: f64,
    p: [f64; 3],
    yaw: f64,
    dir: [f64; 2],
}

/// A small deterministic random stream (SplitMix64): the same draws on every host.
#[derive(Debug, Clone)]
pub struct TurnStream(u64);

impl TurnStream {
    /// The stream of agent `agent_id` in a run seeded `seed`.
    pub fn new(seed: u64, agent_id: &str) -> TurnStream {
        // FNV-1a of the id, mixed with the seed.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in agent_id.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        TurnStream(h ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// One of `n` choices (n > 0).
    pub fn pick(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The `lane_follow` controller of one agent.
pub struct LaneFollower {
    world: Arc<World>,
    agent_id: String,
    speed: f64,
    gap: f64,
    route: Vec<String>,
    /// Index into `route` of the next road to head for.
    route_next: usize,
    turns: TurnStream,
    /// The lane the car is on, then the lanes it will take, in order.
    plan: VecDeque<LaneId>,
    /// Progress on `plan[0]`, metres from its entry.
    s: f64,
    junctions: Vec<JunctionZone>,
    half_wheelbase: f64,
    half_length: f64,
}

impl std::fmt::Debug for LaneFollower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneFollower")
            .field("agent_id", &self.agent_id)
            .field("plan", &self.plan)
            .field("s", &self.s)
            .finish_non_exhaustive()
    }
}

/// Why a `lane_follow` controller cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum LaneFollowError {
    #[error("agent '{0}': lane_follow needs an OpenDRIVE map ([map] opendrive)")]
    NoMap(String),
    #[error("agent '{0}': lane_follow needs a lane start (start = {{ road, lane, s }})")]
    NoLaneStart(String),
    #[error(transparent)]
    World(#[from] convoy_world::WorldError),
}

/// What the controller plans for one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Target speed, m/s.
    pub speed: f64,
    /// Commanded path curvature, 1/m (positive turns left).
    pub curvature: f64,
    /// The curvature at the current speed, rad/s.
    pub yaw_rate: f64,
}

impl LaneFollower {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        world: Arc<World>,
        agent_id: &str,
        start: &convoy_core::scenario::StartPose,
        vehicle: &VehicleParams,
        speed: f64,
        gap: f64,
        route: &[String],
        seed: u64,
    ) -> Result<LaneFollower, LaneFollowError> {
        let roads = world
            .roads
            .as_ref()
            .ok_or_else(|| LaneFollowError::NoMap(agent_id.to_string()))?;
        let place = world.start_of(start)?;
        let at = place
            .lane
            .ok_or_else(|| LaneFollowError::NoLaneStart(agent_id.to_string()))?;
        let junctions = roads.junction_zones();
        // A route that starts with the start road: head for the road after it.
        let route_next = usize::from(
            route.first().map(String::as_str) == roads.od_lane(at.lane).map(|(road, _)| road),
        );
        Ok(LaneFollower {
            world: Arc::clone(&world),
            agent_id: agent_id.to_string(),
            speed,
            gap,
            route: route.to_vec(),
            route_next,
            turns: TurnStream::new(seed, agent_id),
            plan: VecDeque::from([at.lane]),
            s: at.s,
            junctions,
            half_wheelbase: vehicle.wheelbase / 2.0,
            half_length: vehicle.half_extents[0],
        })
    }

    fn roads(&self) -> &RoadMap {
        // `new` refused a world without roads.
        self.world
            .roads
            .as_ref()
            .expect("a LaneFollower is only made for a world with roads")
    }

    /// Appends the next lane after the last planned one; false at a dead end.
    fn extend_plan(&mut self) -> bool {
        let Some(&last) = self.plan.back() else {
            return false;
        };
        let next = self.roads().next_lanes(last);
        if next.is_empty() {
            return false;
        }
        let choice = self.route_choice(&next).unwrap_or_else(|| {
            let i = self.turns.pick(next.len());
            next[i]
        });
        self.plan.push_back(choice);
        true
    }

    /// The lane of `next` that leads to the route's next road: itself on it, or (through a
    /// junction) one whose successor is on it. Advances the route when the lane is on it.
    fn route_choice(&mut self, next: &[LaneId]) -> Option<LaneId> {
        let target = self.route.get(self.route_next)?.clone();
        let roads = self.roads();
        let on_road = |lane: LaneId| roads.od_lane(lane).is_some_and(|(r, _)| r == target);
        if let Some(&lane) = next.iter().find(|l| on_road(**l)) {
            self.route_next += 1;
            return Some(lane);
        }
        next.iter()
            .copied()
            .find(|l| roads.next_lanes(*l).into_iter().any(on_road))
    }

    /// Points along the plan from progress `s` on `plan[0]`, every `step` metres up to
    /// `distance`.
    fn path_ahead(&mut self, distance: f64, step: f64) -> Vec<PathPoint> {
        let mut out = Vec::new();
        let mut travelled = 0.0;
        let mut index = 0;
        let mut s = self.s;
        while travelled <= distance {
            while index >= self.plan.len() {
                if !self.extend_plan() {
                    return out;
                }
            }
            let lane = self.plan[index];
            let length = self.roads().lane_length(lane);
            if s > length {
                s -= length;
                index += 1;
                continue;
            }
            let pose = self.roads().centre(LanePos { lane, s });
            out.push(PathPoint {
                d: travelled,
                p: pose.position,
                yaw: pose.yaw,
                dir: [detmath::cos(pose.yaw), detmath::sin(pose.yaw)],
            });
            travelled += step;
            s += step;
        }
        out
    }

    /// Moves along the plan to where the rear axle is.
    fn localise(&mut self, rear: [f64; 3]) {
        for _ in 0..4 {
            let Some(&lane) = self.plan.front() else {
                return;
            };
            let roads = self.roads();
            let length = roads.lane_length(lane);
            let Some((s, _)) = roads.project(lane, rear) else {
                return;
            };
            self.s = s;
            if s < length - 1e-3 {
                return;
            }
            // Past the end: carry on onto the next lane.
            if self.plan.len() < 2 && !self.extend_plan() {
                self.s = length;
                return;
            }
            self.plan.pop_front();
            self.s = 0.0;
        }
    }

    /// The speed and curvature for the next frame. `others` may hold this agent's own state
    /// too (a relay Tick carries every agent's): it is left out.
    pub fn plan(&mut self, state: &AgentState, others: &[AgentState]) -> Plan {
        let others: Vec<&AgentState> = others
            .iter()
            .filter(|o| o.agent_id != self.agent_id)
            .collect();
        let p = &state.pose.position;
        let yaw = heading_of(state);
        let (sin, cos) = (detmath::sin(yaw), detmath::cos(yaw));
        let v = state.twist.linear.x * cos + state.twist.linear.y * sin;
        let rear = [
            p.x - self.half_wheelbase * cos,
            p.y - self.half_wheelbase * sin,
            p.z,
        ];
        self.localise(rear);
        let path = self.path_ahead(HORIZON, 1.0);
        let Some(&PathPoint {
            p: here,
            yaw: path_yaw,
            dir: [path_cos, path_sin],
            ..
        }) = path.first()
        else {
            return Plan {
                speed: 0.0,
                curvature: 0.0,
                yaw_rate: 0.0,
            };
        };

        // Steering: feed-forward curvature of the lane at the rear axle plus feedback.
        let lateral = -(rear[0] - here[0]) * path_sin + (rear[1] - here[1]) * path_cos;
        let heading_error = wrap(yaw - path_yaw);
        let k_ref = curvature_at(&path, 0);
        let k1 = 1.0 / (TRACK_DISTANCE * TRACK_DISTANCE);
        let k2 = 2.0 / TRACK_DISTANCE;
        let curvature = k_ref - k1 * lateral - k2 * heading_error;

        // Speed: curves ahead.
        let mut speed = self.speed;
        for i in 0..path.len() {
            let d = path[i].d;
            let k = curvature_at(&path, i).abs().max(1e-6);
            let v_curve = (LATERAL_ACCEL / k).sqrt();
            speed = speed.min(stop_speed(d, v_curve));
        }
        // Cars ahead on the path.
        if let Some(d) = self.nearest_on_path(&path, &others) {
            speed = speed.min(stop_speed(d - self.gap, 0.0));
        }
        // A junction someone else holds.
        if let Some(d) = self.junction_wait([p.x, p.y], yaw, &others, &path) {
            speed = speed.min(stop_speed(d, 0.0));
        }
        Plan {
            speed,
            curvature,
            yaw_rate: v.max(0.0) * curvature,
        }
    }

    /// Bumper-to-bumper distance to the nearest other car on the path ahead.
    fn nearest_on_path(&self, path: &[PathPoint], others: &[&AgentState]) -> Option<f64> {
        let mut nearest: Option<f64> = None;
        let start = path.first()?.p;
        let reach = path.last().map_or(0.0, |l| l.d) + PATH_HALF_WIDTH + 1.0;
        for other in others {
            let o = &other.pose.position;
            // A car farther away than the path is long cannot be on it.
            if distance([o.x, o.y], [start[0], start[1]]) > reach {
                continue;
            }
            for &PathPoint { d, p, dir, .. } in path {
                let dx = o.x - p[0];
                let dy = o.y - p[1];
                let [cos, sin] = dir;
                let along = dx * cos + dy * sin;
                let across = -dx * sin + dy * cos;
                // The path point nearest the other car (within a step of the path).
                if along.abs() <= 0.5 && across.abs() <= PATH_HALF_WIDTH && (o.z - p[2]).abs() < 3.0
                {
                    let gap = d - self.half_wheelbase - self.half_length - other.extents.x;
                    nearest = Some(nearest.map_or(gap, |n: f64| n.min(gap)));
                    break;
                }
            }
        }
        nearest
    }

    /// When another car holds the junction ahead of this car (at `me`, heading `yaw`): the
    /// distance to stop before its zone.
    fn junction_wait(
        &self,
        me: [f64; 2],
        yaw: f64,
        others: &[&AgentState],
        path: &[PathPoint],
    ) -> Option<f64> {
        // The first junction zone the path enters.
        let (zone, entry) = path.iter().find_map(|&PathPoint { d, p, .. }| {
            self.junctions
                .iter()
                .find(|z| distance(z.centre, [p[0], p[1]]) <= z.radius)
                .map(|z| (z, d))
        })?;
        let my_rank = claim(zone, me, yaw)?;
        if distance(zone.centre, me) <= zone.radius {
            // Already inside: carry on through.
            return None;
        }
        let first = others
            .iter()
            .filter_map(|o| {
                let at = [o.pose.position.x, o.pose.position.y];
                claim(zone, at, heading_of(o)).map(|rank| (rank, o.agent_id.as_str()))
            })
            .chain(std::iter::once((my_rank, self.agent_id.as_str())))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)))?;
        if first.1 == self.agent_id {
            return None;
        }
        Some(entry - self.half_wheelbase - self.half_length - JUNCTION_STOP_MARGIN)
    }
}

/// How near a car at `at` heading `yaw` is to holding `zone`: its distance to the zone's edge
/// (negative inside), or `None` when it does not claim the zone (too far, or heading away).
fn claim(zone: &JunctionZone, at: [f64; 2], yaw: f64) -> Option<f64> {
    let d = distance(zone.centre, at) - zone.radius;
    if d <= 0.0 {
        return Some(d);
    }
    let towards =
        (zone.centre[0] - at[0]) * detmath::cos(yaw) + (zone.centre[1] - at[1]) * detmath::sin(yaw);
    (d <= JUNCTION_APPROACH && towards > 0.0).then_some(d)
}

fn heading_of(state: &AgentState) -> f64 {
    let q = &state.pose.orientation;
    detmath::atan2(
        2.0 * (q.w * q.z + q.x * q.y),
        1.0 - 2.0 * (q.y * q.y + q.z * q.z),
    )
}

/// Plane distance (`sqrt` is exact IEEE; `hypot` would come from the host's libm).
fn distance(a: [f64; 2], b: [f64; 2]) -> f64 {
    let (dx, dy) = (a[0] - b[0], a[1] - b[1]);
    (dx * dx + dy * dy).sqrt()
}

/// The highest speed from which a car stops within `distance` metres at [`PLANNED_DECEL`],
/// arriving at `end_speed`.
fn stop_speed(distance: f64, end_speed: f64) -> f64 {
    let distance = distance.max(0.0);
    if end_speed <= 0.0 && distance <= STANDSTILL_DISTANCE {
        return 0.0;
    }
    (end_speed * end_speed + 2.0 * PLANNED_DECEL * distance).sqrt()
}

/// Angle wrapped into (-pi, pi].
fn wrap(a: f64) -> f64 {
    let two_pi = 2.0 * std::f64::consts::PI;
    let mut a = a % two_pi;
    if a > std::f64::consts::PI {
        a -= two_pi;
    } else if a <= -std::f64::consts::PI {
        a += two_pi;
    }
    a
}

/// Curvature of the path at point `i` from the headings one point either side (1/m).
fn curvature_at(path: &[PathPoint], i: usize) -> f64 {
    let a = i.saturating_sub(1);
    let b = (i + 1).min(path.len().saturating_sub(1));
    if b <= a {
        return 0.0;
    }
    let ds = path[b].d - path[a].d;
    if ds <= 0.0 {
        return 0.0;
    }
    wrap(path[b].yaw - path[a].yaw) / ds
}

impl Controller for LaneFollower {
    fn control(&mut self, state: &AgentState, others: &[AgentState], _frame: u64) -> Control {
        let plan = self.plan(state, others);
        Control {
            mode: ControlMode::Velocity,
            linear_velocity: plan.speed,
            angular_velocity: plan.yaw_rate,
            ..Control::default()
        }
    }
}
