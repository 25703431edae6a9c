//! World commands (DESIGN.md, "Topics": `convoy/world/request|reply`): the checks every party
//! applies to a request before acting on it, so the coordinator (which answers) and the agent
//! (which carries out teleport and set-control) never disagree about what is valid.

use crate::messages::{ControlMode, WorldCommand, WorldCommandKind};
use crate::scenario::Scenario;

/// Why a command is refused; the text goes back to the client in a Failed reply.
pub fn check_command(scenario: &Scenario, command: &WorldCommand) -> Result<(), String> {
    let needs_agent = matches!(
        command.kind,
        WorldCommandKind::Teleport | WorldCommandKind::SetControl
    );
    if (needs_agent || !command.agent_id.is_empty()) && scenario.agent(&command.agent_id).is_none()
    {
        return Err(format!(
            "unknown agent '{}' (agents: {})",
            command.agent_id,
            scenario.agent_ids().join(", ")
        ));
    }
    match command.kind {
        WorldCommandKind::Teleport => {
            let p = &command.pose;
            let values = [
                p.position.x,
                p.position.y,
                p.position.z,
                p.orientation.x,
                p.orientation.y,
                p.orientation.z,
                p.orientation.w,
            ];
            if values.iter().any(|v| !v.is_finite()) {
                return Err("teleport pose has a non-finite value".into());
            }
            let q = p.orientation;
            let norm = (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).sqrt();
            if (norm - 1.0).abs() > 1e-3 {
                return Err(format!(
                    "teleport orientation is not a unit quaternion (norm {norm})"
                ));
            }
            let [hx, hy] = scenario.map.ground_half_extents;
            if p.position.x.abs() > hx || p.position.y.abs() > hy {
                return Err(format!(
                    "teleport target ({}, {}) is off the map (ground is ±{hx} x ±{hy} m)",
                    p.position.x, p.position.y
                ));
            }
        }
        WorldCommandKind::SetControl => {
            let c = &command.control;
            let values = [
                c.throttle,
                c.brake,
                c.steer,
                c.linear_velocity,
                c.angular_velocity,
            ];
            if values.iter().any(|v| !v.is_finite()) {
                return Err("control has a non-finite value".into());
            }
            if c.mode == ControlMode::Pedals
                && (!(0.0..=1.0).contains(&c.throttle)
                    || !(0.0..=1.0).contains(&c.brake)
                    || !(-1.0..=1.0).contains(&c.steer))
            {
                return Err(format!(
                    "pedal control out of range: throttle {} and brake {} must be in [0, 1], \
                     steer {} in [-1, 1]",
                    c.throttle, c.brake, c.steer
                ));
            }
        }
        WorldCommandKind::Pause | WorldCommandKind::Resume | WorldCommandKind::GetState => {}
    }
    Ok(())
}
