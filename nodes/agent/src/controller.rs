//! Built-in controllers: turn the vehicle's state into a [`Control`] each frame.
//!
//! [`WaypointFollower`] (`kind = "waypoints"` in a scenario) follows a polyline with pure
//! pursuit and holds its speed with a PI controller on throttle and brake;
//! [`LaneFollower`] (`kind = "lane_follow"`) drives the OpenDRIVE lane graph
//! (`lane_follow.rs`). `kind = "external"` has no built-in controller: the node applies
//! `convoy/agent/<a>/control` instead.
//!
//! Controllers are deterministic state machines: their only inputs are the states they are
//! given (time comes from `stamp_ns`, never from a clock).

use convoy_core::messages::{AgentState, Control, ControlMode};
use std::sync::Arc;

use convoy_core::scenario::{AgentSpec, ControllerSpec, Scenario, VehicleParams};
use convoy_world::World;

use crate::lane_follow::{LaneFollowError, LaneFollower};

use crate::detmath;

/// Something that drives the vehicle.
pub trait Controller {
    /// The control for `frame`, from the vehicle's state at the end of the previous frame and
    /// the other agents' states of that frame.
    fn control(&mut self, state: &AgentState, others: &[AgentState], frame: u64) -> Control;
}

/// The controller a scenario asks for; `None` for `external` (controls come from DDS).
///
/// The vehicle's parameters are needed to turn a path curvature into a steer value in
/// [-1, 1] (wheelbase and largest steering angle).
pub fn from_spec(
    scenario: &Scenario,
    agent: &AgentSpec,
    world: &Arc<World>,
) -> Result<Option<Box<dyn Controller + Send>>, LaneFollowError> {
    Ok(match &agent.controller {
        ControllerSpec::Waypoints {
            speed,
            path,
            looped,
        } => Some(Box::new(WaypointFollower::new(
            path,
            *looped,
            *speed,
            &agent.vehicle,
        ))),
        ControllerSpec::LaneFollow { speed, route, gap } => Some(Box::new(LaneFollower::new(
            Arc::clone(world),
            &agent.id,
            &agent.start,
            &agent.vehicle,
            *speed,
            *gap,
            route,
            scenario.scenario.seed,
        )?)),
        ControllerSpec::External => None,
    })
}

/// Look-ahead distance: `LOOKAHEAD_BASE + LOOKAHEAD_TIME * speed`, within the bounds (m, s).
const LOOKAHEAD_BASE: f64 = 4.0;
const LOOKAHEAD_TIME: f64 = 0.5;
const LOOKAHEAD_MIN: f64 = 4.0;
const LOOKAHEAD_MAX: f64 = 20.0;
/// Lateral acceleration the follower plans for in curves, m/s² (comfortable, well inside the
/// tires' grip).
const MAX_LATERAL_ACCEL: f64 = 4.0;
/// Deceleration planned for stopping at the end of an open path, m/s².
const STOP_DECEL: f64 = 2.0;
/// Within this distance of the end of an open path the car just holds the brake, m.
const STOP_DISTANCE: f64 = 0.5;
/// Below this speed a car that should stand still holds the brake, m/s.
const STANDSTILL: f64 = 0.3;
/// PI gains on the speed error (m/s), output in [-1, 1]: positive throttle, negative brake.
const KP: f64 = 0.5;
const KI: f64 = 0.2;
/// Projection search window along the path from the last progress point, m: looking only near
/// where the car was keeps it on the right part of a path that passes close to itself.
const SEARCH_BEHIND: f64 = 5.0;
const SEARCH_AHEAD: f64 = 40.0;
/// Farther than this from the path (pushed off in a crash, teleported) the whole path is
/// searched again, m.
const REACQUIRE_DISTANCE: f64 = 10.0;

/// A polyline with arc lengths; closed when looped.
#[derive(Debug, Clone)]
struct Path {
    points: Vec<[f64; 2]>,
    /// Arc length at the start of each segment (segment i goes from point i to point i+1,
    /// wrapping to point 0 when looped).
    starts: Vec<f64>,
    length: f64,
    looped: bool,
}

impl Path {
    fn new(raw: &[[f64; 2]], looped: bool) -> Path {
        let mut points: Vec<[f64; 2]> = Vec::with_capacity(raw.len());
        for p in raw {
            if !(p[0].is_finite() && p[1].is_finite()) {
                continue;
            }
            // Zero-length segments have no direction: drop repeated points.
            if points.last().is_some_and(|q| dist(*q, *p) < 1e-9) {
                continue;
            }
            points.push(*p);
        }
        // A looped path closes itself; a repeated first point would be a zero-length segment.
        if looped && points.len() > 2 && dist(points[0], points[points.len() - 1]) < 1e-9 {
            points.pop();
        }
        let segments = match points.len() {
            0 | 1 => 0,
            n if looped => n,
            n => n - 1,
        };
        let mut starts = Vec::with_capacity(segments);
        let mut length = 0.0;
        for i in 0..segments {
            starts.push(length);
            length += dist(points[i], points[(i + 1) % points.len()]);
        }
        Path {
            points,
            starts,
            length,
            looped,
        }
    }

    fn segments(&self) -> usize {
        self.starts.len()
    }

    fn segment(&self, i: usize) -> ([f64; 2], [f64; 2]) {
        let n = self.points.len();
        (self.points[i % n], self.points[(i + 1) % n])
    }

    /// Closest point of segment `i` to `p`: (distance, arc length there).
    fn project_on(&self, i: usize, p: [f64; 2]) -> (f64, f64) {
        let (a, b) = self.segment(i);
        let ab = [b[0] - a[0], b[1] - a[1]];
        let len2 = ab[0] * ab[0] + ab[1] * ab[1];
        let t = if len2 > 0.0 {
            (((p[0] - a[0]) * ab[0] + (p[1] - a[1]) * ab[1]) / len2).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let c = [a[0] + t * ab[0], a[1] + t * ab[1]];
        (dist(c, p), self.starts[i] + t * len2.sqrt())
    }

    /// The closest point to `p` among the segments `indices`: (segment, distance, arc length).
    /// Ties go to the first, so the answer never depends on anything but the inputs.
    fn closest(
        &self,
        p: [f64; 2],
        indices: impl Iterator<Item = usize>,
    ) -> Option<(usize, f64, f64)> {
        let mut best: Option<(usize, f64, f64)> = None;
        for i in indices {
            let (d, s) = self.project_on(i, p);
            if best.is_none_or(|(_, bd, _)| d < bd) {
                best = Some((i, d, s));
            }
        }
        best
    }

    /// The segments from SEARCH_BEHIND metres before segment `from` to SEARCH_AHEAD metres after.
    fn window(&self, from: usize) -> Vec<usize> {
        let n = self.segments();
        let mut out = Vec::new();
        let seg_len = |i: usize| {
            let (a, b) = self.segment(i);
            dist(a, b)
        };
        // Behind.
        let mut back = 0.0;
        let mut i = from;
        while back < SEARCH_BEHIND && out.len() < n {
            let prev = if i > 0 {
                i - 1
            } else if self.looped {
                n - 1
            } else {
                break;
            };
            if prev == from {
                break;
            }
            back += seg_len(prev);
            out.push(prev);
            i = prev;
        }
        out.reverse();
        // `from` itself, then SEARCH_AHEAD metres of the segments after it (however long
        // `from` is, the car may be near its end).
        out.push(from);
        let mut ahead = 0.0;
        let mut i = from;
        while ahead < SEARCH_AHEAD && out.len() < n {
            i += 1;
            if i == n {
                if !self.looped {
                    break;
                }
                i = 0;
            }
            if i == from {
                break;
            }
            out.push(i);
            ahead += seg_len(i);
        }
        out
    }

    /// The point at arc length `s` (wrapped on a loop, clamped on an open path).
    fn point_at(&self, s: f64) -> [f64; 2] {
        if self.segments() == 0 {
            return self.points.first().copied().unwrap_or([0.0, 0.0]);
        }
        let s = if self.looped {
            s.rem_euclid(self.length)
        } else {
            s.clamp(0.0, self.length)
        };
        // The last segment starting at or before s.
        let i = self
            .starts
            .partition_point(|start| *start <= s)
            .saturating_sub(1);
        let (a, b) = self.segment(i);
        let len = dist(a, b);
        let t = if len > 0.0 {
            ((s - self.starts[i]) / len).clamp(0.0, 1.0)
        } else {
            0.0
        };
        [a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])]
    }
}

fn dist(a: [f64; 2], b: [f64; 2]) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    (dx * dx + dy * dy).sqrt()
}

/// Pure pursuit on a polyline plus PI speed control (throttle/brake).
///
/// Steering aims the rear axle at the path point one look-ahead distance further along (the
/// rear axle is where the bicycle model's path curvature is exact: on a circle pure pursuit
/// then holds the circle). Speed: `speed`, lowered in curves to keep lateral acceleration near
/// 4 m/s², and on an open path ramped down to stop at its end, where the car holds the brake.
#[derive(Debug, Clone)]
pub struct WaypointFollower {
    path: Path,
    speed: f64,
    wheelbase: f64,
    max_steer: f64,
    /// The segment the car was last closest to.
    progress: Option<usize>,
    integral: f64,
    last_stamp_ns: Option<i64>,
}

impl WaypointFollower {
    pub fn new(
        path: &[[f64; 2]],
        looped: bool,
        speed: f64,
        vehicle: &VehicleParams,
    ) -> WaypointFollower {
        WaypointFollower {
            path: Path::new(path, looped),
            speed: if speed.is_finite() {
                speed.max(0.0)
            } else {
                0.0
            },
            wheelbase: vehicle.wheelbase,
            max_steer: vehicle.max_steer,
            progress: None,
            integral: 0.0,
            last_stamp_ns: None,
        }
    }

    /// Projects the rear axle onto the path: (distance, arc length), updating the progress.
    fn locate(&mut self, rear: [f64; 2]) -> Option<(f64, f64)> {
        let n = self.path.segments();
        let near = self
            .progress
            .and_then(|from| self.path.closest(rear, self.path.window(from).into_iter()));
        let found = match near {
            Some(hit) if hit.1 <= REACQUIRE_DISTANCE => Some(hit),
            _ => self.path.closest(rear, 0..n),
        };
        let (segment, d, s) = found?;
        self.progress = Some(segment);
        Some((d, s))
    }

    /// The PI output in [-1, 1] for a speed error, integrating over `dt` seconds.
    fn speed_control(&mut self, error: f64, dt: f64) -> f64 {
        let unclamped = KP * error + KI * self.integral;
        // Anti-windup: stop integrating while the output is saturated in the error's direction.
        let saturated = (unclamped >= 1.0 && error > 0.0) || (unclamped <= -1.0 && error < 0.0);
        if !saturated {
            self.integral = (self.integral + error * dt).clamp(-1.0 / KI, 1.0 / KI);
        }
        (KP * error + KI * self.integral).clamp(-1.0, 1.0)
    }
}

impl Controller for WaypointFollower {
    fn control(&mut self, state: &AgentState, _others: &[AgentState], frame: u64) -> Control {
        let stop = Control {
            frame,
            mode: ControlMode::Pedals,
            throttle: 0.0,
            brake: 1.0,
            ..Control::default()
        };
        let dt = match self.last_stamp_ns {
            Some(last) if state.stamp_ns > last => {
                (state.stamp_ns.saturating_sub(last) as f64 * 1e-9).min(1.0)
            }
            _ => 0.0,
        };
        self.last_stamp_ns = Some(state.stamp_ns);

        let p = state.pose.position;
        let q = state.pose.orientation;
        let v = state.twist.linear;
        let yaw = detmath::atan2(
            2.0 * (q.w * q.z + q.x * q.y),
            1.0 - 2.0 * (q.y * q.y + q.z * q.z),
        );
        if ![p.x, p.y, yaw, v.x, v.y].iter().all(|x| x.is_finite()) {
            return stop;
        }
        let (sin, cos) = (detmath::sin(yaw), detmath::cos(yaw));
        let forward_speed = v.x * cos + v.y * sin;
        let rear = [
            p.x - cos * self.wheelbase / 2.0,
            p.y - sin * self.wheelbase / 2.0,
        ];
        let Some((_, s)) = self.locate(rear) else {
            return stop;
        };

        let lookahead = (LOOKAHEAD_BASE + LOOKAHEAD_TIME * forward_speed.abs())
            .clamp(LOOKAHEAD_MIN, LOOKAHEAD_MAX);
        let target = self.path.point_at(s + lookahead);
        let (dx, dy) = (target[0] - rear[0], target[1] - rear[1]);
        // The target in the vehicle's frame; only its lateral offset matters for the arc.
        let ahead = dx * cos + dy * sin;
        let left = -dx * sin + dy * cos;
        let d2 = ahead * ahead + left * left;
        let curvature = if d2 > 1e-12 { 2.0 * left / d2 } else { 0.0 };
        let steer_angle = detmath::atan(curvature * self.wheelbase);
        let steer = (steer_angle / self.max_steer).clamp(-1.0, 1.0);

        let mut target_speed = self.speed;
        if curvature.abs() > 1e-9 {
            target_speed = target_speed.min((MAX_LATERAL_ACCEL / curvature.abs()).sqrt());
        }
        if !self.path.looped {
            let remaining = self.path.length - s;
            if remaining <= STOP_DISTANCE {
                target_speed = 0.0;
            } else {
                let ramp = (2.0 * STOP_DECEL * (remaining - STOP_DISTANCE)).sqrt();
                target_speed = target_speed.min(ramp);
            }
        }

        if target_speed <= 0.0 && forward_speed.abs() < STANDSTILL {
            self.integral = 0.0;
            return Control { steer, ..stop };
        }
        let u = self.speed_control(target_speed - forward_speed, dt);
        Control {
            frame,
            mode: ControlMode::Pedals,
            throttle: u.max(0.0),
            brake: (-u).max(0.0),
            steer,
            linear_velocity: 0.0,
            angular_velocity: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_arc_lengths_and_points() {
        let square = [
            [0.0, 0.0],
            [10.0, 0.0],
            [10.0, 10.0],
            [0.0, 10.0],
            [0.0, 0.0],
        ];
        let looped = Path::new(&square, true);
        assert_eq!(looped.segments(), 4);
        assert_eq!(looped.length, 40.0);
        assert_eq!(looped.point_at(45.0), [5.0, 0.0]);
        assert_eq!(looped.point_at(-5.0), [0.0, 5.0]);
        let open = Path::new(&square, false);
        assert_eq!(open.segments(), 4);
        assert_eq!(open.point_at(100.0), [0.0, 0.0]);
        assert_eq!(open.point_at(15.0), [10.0, 5.0]);
    }

    #[test]
    fn degenerate_paths_do_not_panic() {
        let v = VehicleParams::default();
        let mut f = WaypointFollower::new(&[[1.0, 1.0], [1.0, 1.0]], true, 5.0, &v);
        let c = f.control(&AgentState::default(), &[], 1);
        assert_eq!(c.brake, 1.0);
        let mut f = WaypointFollower::new(&[], false, 5.0, &v);
        let c = f.control(&AgentState::default(), &[], 1);
        assert_eq!(c.brake, 1.0);
    }

    #[test]
    fn steers_towards_a_path_on_the_left() {
        let v = VehicleParams::default();
        let mut f = WaypointFollower::new(&[[0.0, 5.0], [100.0, 5.0]], false, 10.0, &v);
        let c = f.control(&AgentState::default(), &[], 1);
        assert!(c.steer > 0.0, "{c:?}");
        assert!(c.throttle > 0.0, "{c:?}");
        assert_eq!(c.frame, 1);
    }
}
