//! The drive model: a dynamic box on rapier that drives by tire impulses.
//!
//! The body is one cuboid (the scenario's half extents and mass) that rests on the ground under
//! gravity. Its contact with the ground is frictionless: the tires are modelled here instead,
//! as velocity changes applied before every physics substep (a planar "ray-cast vehicle" without
//! the rays, since the map is flat):
//!
//! - longitudinal: drive `throttle * max_drive_force`, capped at `max_speed`; brake
//!   `brake * max_brake_force` plus rolling resistance and air drag, always towards zero speed
//!   and never past it (braking does not reverse; Pedals has no reverse gear, a negative
//!   Velocity command does reverse);
//! - yaw: the bicycle model, yaw rate `v * tan(steer * max_steer) / wheelbase`;
//! - lateral: the rear axle rolls without side slip, so the centre's lateral velocity is
//!   `yaw_rate * wheelbase / 2` (the body turns about its rear axle like a car);
//! - every tire correction is limited by friction: longitudinal and lateral together stay
//!   within the friction circle `mu * m * g`, yaw within the moment those forces can make.
//!
//! Because the tire corrections are force-limited while contacts are not, a crash wins over the
//! tires: a car hit by a zombie is pushed back or spun, then the tires bring it back in line.
//! Roll and pitch are locked (no suspension): this keeps the box upright and stable at
//! dt 0.01-0.05 s without a suspension model. On an OpenDRIVE road the body does not rest on a
//! collider but is held at its resting height over the road by a ray down each substep
//! (`AgentWorld::hold_on_road`), following the road's elevation with a level body.

use convoy_core::messages::{Control, ControlMode};
use convoy_core::scenario::VehicleParams;
use rapier3d_f64::prelude::{
    ColliderBuilder, ColliderHandle, PhysicsWorld, Pose, RigidBodyBuilder, RigidBodyHandle,
    RigidBodySet, Rotation, Vector,
};

use crate::detmath;

/// m/s²; +z is up (DESIGN.md: x east, y north, z up).
pub const GRAVITY: f64 = 9.81;
/// Tire-road friction coefficient (dry asphalt).
pub const TIRE_FRICTION: f64 = 1.0;
/// Rolling resistance coefficient: a coasting car slows by ~0.15 m/s².
pub const ROLLING_RESISTANCE: f64 = 0.015;
/// 0.5 * air density * drag coefficient * frontal area, kg/m (a mid-size car).
pub const AIR_DRAG: f64 = 0.4;
/// Friction of the body in contacts with other bodies and walls (metal on metal, roughly).
pub const BODY_FRICTION: f64 = 0.5;
/// Soft-CCD look-ahead, metres per substep: contacts with zombies and walls are created this far
/// ahead of the body's motion, so two cars closing at 2 x 40 m/s still meet surface to surface
/// instead of sinking into each other for a substep (rapier's speculative contacts).
pub const SOFT_CCD_PREDICTION: f64 = 1.0;

/// What the vehicle does this frame: a [`Control`] made safe to apply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Command {
    /// throttle and brake in [0, 1], steer in [-1, 1] (positive turns left).
    Pedals {
        throttle: f64,
        brake: f64,
        steer: f64,
    },
    /// Forward speed (m/s, negative reverses) and yaw rate (rad/s, positive turns left).
    Velocity { speed: f64, yaw_rate: f64 },
}

impl Command {
    /// Clamps pedal values into range. A control with a non-finite value cannot be applied
    /// meaningfully, so it becomes a full stop rather than a panic or a NaN in the physics.
    pub fn from_control(control: &Control) -> Command {
        let values = [
            control.throttle,
            control.brake,
            control.steer,
            control.linear_velocity,
            control.angular_velocity,
        ];
        if values.iter().any(|v| !v.is_finite()) {
            return Command::STOP;
        }
        match control.mode {
            ControlMode::Pedals => Command::Pedals {
                throttle: control.throttle.clamp(0.0, 1.0),
                brake: control.brake.clamp(0.0, 1.0),
                steer: control.steer.clamp(-1.0, 1.0),
            },
            ControlMode::Velocity => Command::Velocity {
                speed: control.linear_velocity,
                yaw_rate: control.angular_velocity,
            },
        }
    }

    /// Full brake, wheels straight.
    pub const STOP: Command = Command::Pedals {
        throttle: 0.0,
        brake: 1.0,
        steer: 0.0,
    };
}

/// Planar velocity in the vehicle's frame: forward, left (m/s) and yaw rate (rad/s).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Planar {
    pub forward: f64,
    pub left: f64,
    pub yaw_rate: f64,
}

/// The velocity change the tires make in one substep of `h` seconds, in the vehicle's frame.
///
/// Pure function of the parameters, the command and the current planar velocity, so the model
/// can be tested without rapier.
pub fn tire_response(params: &VehicleParams, command: &Command, v: Planar, h: f64) -> Planar {
    let m = params.mass;
    let wheelbase = params.wheelbase;
    // The largest velocity change the tires can make in this substep (friction circle).
    let grip = TIRE_FRICTION * GRAVITY * h;

    let forward = match *command {
        Command::Pedals {
            throttle, brake, ..
        } => {
            // Drive up to max_speed; a car already faster (pushed) just gets no drive.
            let driven = v.forward + throttle * params.max_drive_force / m * h;
            let driven = driven.min(v.forward.max(params.max_speed));
            let resistance = ROLLING_RESISTANCE * GRAVITY + AIR_DRAG * v.forward * v.forward / m;
            let retard = (brake * params.max_brake_force / m + resistance) * h;
            toward_zero(driven, retard)
        }
        Command::Velocity { speed, .. } => {
            let target = speed.clamp(-params.max_speed, params.max_speed);
            // Speeding up in the direction of travel uses the engine, anything else the brakes.
            let speeding_up = target * v.forward >= 0.0 && target.abs() > v.forward.abs();
            let force = if speeding_up {
                params.max_drive_force
            } else {
                params.max_brake_force
            };
            let step = force / m * h;
            v.forward + (target - v.forward).clamp(-step, step)
        }
    };
    let d_forward = (forward - v.forward).clamp(-grip, grip);
    let forward = v.forward + d_forward;

    let max_turn = forward.abs() * detmath::tan(params.max_steer) / wheelbase;
    let yaw_target = match *command {
        Command::Pedals { steer, .. } => {
            forward * detmath::tan(steer * params.max_steer) / wheelbase
        }
        // A car cannot turn on the spot: the commanded yaw rate is limited to what full steer
        // gives at the current speed.
        Command::Velocity { yaw_rate, .. } => yaw_rate.clamp(-max_turn, max_turn),
    };
    // Yaw is turned by the axles' lateral forces acting half a wheelbase from the centre.
    let yaw_grip = TIRE_FRICTION * m * GRAVITY * (wheelbase / 2.0) * h / yaw_inertia(params);
    let d_yaw = (yaw_target - v.yaw_rate).clamp(-yaw_grip, yaw_grip);

    // The rear axle does not slide sideways: the centre moves sideways at yaw_rate * L/2.
    let lateral_target = (v.yaw_rate + d_yaw) * wheelbase / 2.0;
    let lateral_grip = (grip * grip - d_forward * d_forward).max(0.0).sqrt();
    let d_left = (lateral_target - v.left).clamp(-lateral_grip, lateral_grip);

    Planar {
        forward: d_forward,
        left: d_left,
        yaw_rate: d_yaw,
    }
}

/// Moves `v` towards zero by at most `by` (>= 0) without crossing it.
fn toward_zero(v: f64, by: f64) -> f64 {
    if v > 0.0 {
        (v - by).max(0.0)
    } else {
        (v + by).min(0.0)
    }
}

/// Moment of inertia about the vertical axis of a uniform box with the vehicle's extents.
pub fn yaw_inertia(params: &VehicleParams) -> f64 {
    let [hx, hy, _] = params.half_extents;
    params.mass * (hx * hx + hy * hy) / 3.0
}

/// Heading of a rotation: the angle of its forward (+x) axis in the ground plane.
pub fn heading(rotation: &Rotation) -> f64 {
    let forward = *rotation * Vector::X;
    detmath::atan2(forward.y, forward.x)
}

/// A rotation about +z by `yaw` radians (sine and cosine from libm, for cross-host determinism).
pub fn yaw_rotation(yaw: f64) -> Rotation {
    let half = 0.5 * yaw;
    Rotation::from_xyzw(0.0, 0.0, detmath::sin(half), detmath::cos(half))
}

/// This agent's own vehicle: its rigid body in the world and its parameters.
#[derive(Debug, Clone)]
pub struct Vehicle {
    params: VehicleParams,
    body: RigidBodyHandle,
    collider: ColliderHandle,
}

impl Vehicle {
    /// Adds the vehicle's body to `world`, resting on the ground (z = 0) at (x, y), heading `yaw`.
    pub fn spawn(
        world: &mut PhysicsWorld,
        params: &VehicleParams,
        surface: [f64; 3],
        yaw: f64,
    ) -> Vehicle {
        let [hx, hy, hz] = params.half_extents;
        let [x, y, z] = surface;
        let pose = Pose::from_parts(Vector::new(x, y, z + hz), yaw_rotation(yaw));
        let body = RigidBodyBuilder::dynamic()
            .pose(pose)
            .enabled_rotations(false, false, true)
            // The tires act every substep; a sleeping body would ignore them.
            .can_sleep(false)
            .soft_ccd_prediction(SOFT_CCD_PREDICTION);
        let collider = ColliderBuilder::cuboid(hx, hy, hz)
            .mass(params.mass)
            .friction(BODY_FRICTION)
            .restitution(0.0);
        let (body, collider) = world.insert(body, collider);
        Vehicle {
            params: *params,
            body,
            collider,
        }
    }

    pub fn params(&self) -> &VehicleParams {
        &self.params
    }

    pub fn body(&self) -> RigidBodyHandle {
        self.body
    }

    pub fn collider(&self) -> ColliderHandle {
        self.collider
    }

    /// Height of the body's centre above the surface it rests on.
    pub fn rest_height(&self) -> f64 {
        self.params.half_extents[2]
    }

    /// Applies one substep of tire impulses for `command`; nothing when the wheels are off the
    /// ground (`grounded` false: fallen off the map, or airborne).
    pub fn apply(&self, bodies: &mut RigidBodySet, command: &Command, h: f64, grounded: bool) {
        if !(grounded && h.is_finite() && h > 0.0) {
            return;
        }
        let Some(body) = bodies.get_mut(self.body) else {
            return;
        };
        let yaw = heading(body.rotation());
        let (sin, cos) = (detmath::sin(yaw), detmath::cos(yaw));
        let linvel = body.linvel();
        let angvel = body.angvel();
        let planar = Planar {
            forward: linvel.x * cos + linvel.y * sin,
            left: -linvel.x * sin + linvel.y * cos,
            yaw_rate: angvel.z,
        };
        let d = tire_response(&self.params, command, planar, h);
        let dv = Vector::new(
            d.forward * cos - d.left * sin,
            d.forward * sin + d.left * cos,
            0.0,
        );
        body.set_linvel(linvel + dv, true);
        body.set_angvel(Vector::new(angvel.x, angvel.y, angvel.z + d.yaw_rate), true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> VehicleParams {
        VehicleParams::default()
    }

    #[test]
    fn full_throttle_accelerates_at_drive_force_over_mass() {
        let p = params();
        let d = tire_response(
            &p,
            &Command::Pedals {
                throttle: 1.0,
                brake: 0.0,
                steer: 0.0,
            },
            Planar::default(),
            0.01,
        );
        let resistance = ROLLING_RESISTANCE * GRAVITY * 0.01;
        assert!((d.forward - (p.max_drive_force / p.mass * 0.01 - resistance)).abs() < 1e-12);
        assert_eq!(d.left, 0.0);
        assert_eq!(d.yaw_rate, 0.0);
    }

    #[test]
    fn brake_stops_without_reversing_and_holds() {
        let p = params();
        let brake = Command::Pedals {
            throttle: 0.0,
            brake: 1.0,
            steer: 0.0,
        };
        let slow = Planar {
            forward: 0.01,
            ..Planar::default()
        };
        let d = tire_response(&p, &brake, slow, 0.01);
        assert_eq!(slow.forward + d.forward, 0.0);
        let backwards = Planar {
            forward: -0.01,
            ..Planar::default()
        };
        let d = tire_response(&p, &brake, backwards, 0.01);
        assert_eq!(backwards.forward + d.forward, 0.0);
        // Throttle weaker than the brake: the car stays put.
        let both = Command::Pedals {
            throttle: 0.5,
            brake: 1.0,
            steer: 0.0,
        };
        let d = tire_response(&p, &both, Planar::default(), 0.01);
        assert_eq!(d.forward, 0.0);
    }

    #[test]
    fn speed_is_capped() {
        let p = params();
        let at_cap = Planar {
            forward: p.max_speed,
            ..Planar::default()
        };
        let d = tire_response(
            &p,
            &Command::Pedals {
                throttle: 1.0,
                brake: 0.0,
                steer: 0.0,
            },
            at_cap,
            0.01,
        );
        assert!(d.forward <= 0.0);
        let d = tire_response(
            &p,
            &Command::Velocity {
                speed: 1e9,
                yaw_rate: 0.0,
            },
            at_cap,
            0.01,
        );
        assert_eq!(d.forward, 0.0);
    }

    #[test]
    fn steering_follows_the_bicycle_model() {
        let p = params();
        let v = 10.0;
        let steer = 0.5;
        let yaw_rate = v * (steer * p.max_steer).tan() / p.wheelbase;
        // Start in the steady turn: the tires should keep it (only resistance changes speed).
        let turning = Planar {
            forward: v,
            left: yaw_rate * p.wheelbase / 2.0,
            yaw_rate,
        };
        let d = tire_response(
            &p,
            &Command::Pedals {
                throttle: 0.0,
                brake: 0.0,
                steer,
            },
            turning,
            0.01,
        );
        assert!(d.yaw_rate.abs() < 1e-3, "{d:?}");
        assert!(d.left.abs() < 1e-3, "{d:?}");
    }

    #[test]
    fn side_slip_is_removed_within_grip() {
        let p = params();
        let sliding = Planar {
            forward: 0.0,
            left: 5.0,
            yaw_rate: 0.0,
        };
        let d = tire_response(
            &p,
            &Command::Pedals {
                throttle: 0.0,
                brake: 0.0,
                steer: 0.0,
            },
            sliding,
            0.01,
        );
        assert!(
            (d.left + TIRE_FRICTION * GRAVITY * 0.01).abs() < 1e-12,
            "{d:?}"
        );
    }

    #[test]
    fn velocity_mode_cannot_turn_on_the_spot() {
        let p = params();
        let d = tire_response(
            &p,
            &Command::Velocity {
                speed: 0.0,
                yaw_rate: 1.0,
            },
            Planar::default(),
            0.01,
        );
        assert_eq!(d.yaw_rate, 0.0);
    }

    #[test]
    fn non_finite_control_stops() {
        let control = Control {
            throttle: f64::NAN,
            ..Control::default()
        };
        assert_eq!(Command::from_control(&control), Command::STOP);
    }
}
