//! `convoy world ...`: world commands with request ids, answered Pending -> Success/Failed.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use convoy_core::dds::Node;
use convoy_core::messages::{
    Control, ControlMode, Pose, Quat, ReplyStatus, Vec3, WorldCommand, WorldCommandKind,
    WorldReply, WorldRequest,
};
use convoy_core::topics;

use crate::args::{check_range, WorldCommandArgs};

/// Builds the command a user typed.
pub fn command(args: &WorldCommandArgs) -> WorldCommand {
    let mut c = WorldCommand::default();
    match args {
        WorldCommandArgs::Pause => c.kind = WorldCommandKind::Pause,
        WorldCommandArgs::Resume => c.kind = WorldCommandKind::Resume,
        WorldCommandArgs::State { agent } => {
            c.kind = WorldCommandKind::GetState;
            c.agent_id = agent.clone().unwrap_or_default();
        }
        WorldCommandArgs::Teleport {
            agent,
            x,
            y,
            z,
            yaw,
        } => {
            c.kind = WorldCommandKind::Teleport;
            c.agent_id = agent.clone();
            let half = yaw / 2.0;
            c.pose = Pose {
                position: Vec3::new(*x, *y, *z),
                orientation: Quat::new(0.0, 0.0, half.sin(), half.cos()),
            };
        }
        WorldCommandArgs::Control {
            agent,
            throttle,
            brake,
            steer,
            velocity,
            yaw_rate,
        } => {
            c.kind = WorldCommandKind::SetControl;
            c.agent_id = agent.clone();
            c.control = match (velocity, yaw_rate) {
                (None, None) => Control {
                    mode: ControlMode::Pedals,
                    throttle: *throttle,
                    brake: *brake,
                    steer: *steer,
                    ..Control::default()
                },
                (v, w) => Control {
                    mode: ControlMode::Velocity,
                    linear_velocity: v.unwrap_or(0.0),
                    angular_velocity: w.unwrap_or(0.0),
                    ..Control::default()
                },
            };
        }
    }
    c
}

/// Sends one request and waits (bounded) for its final reply, printing Pending on the way.
pub fn send(node: &Node, command: WorldCommand, timeout: Duration) -> Result<WorldReply> {
    let requests = node.publisher::<WorldRequest>(&topics::world_request())?;
    let mut replies = node.subscriber::<WorldReply>(&topics::world_reply())?;
    let client = node.node_id().replace('/', "-");
    let request_id = format!("{client}-1");
    let request = WorldRequest {
        request_id: request_id.clone(),
        client,
        command,
    };
    let until = Instant::now() + timeout;
    let mut last_sent: Option<Instant> = None;
    let mut pending_shown = false;
    loop {
        if Instant::now() >= until {
            bail!(
                "no answer to {request_id} within {timeout:?}: is a coordinator running on domain {}?",
                node.domain_id()
            );
        }
        // Until the final answer, resend: a write may precede matching, with the coordinator
        // or with the agent that carries the command out (the coordinator's Pending says
        // nothing of the agent). An agent answers a repeated request id again without acting
        // twice; the coordinator's own commands do the same thing twice.
        if last_sent.is_none_or(|t| t.elapsed() > Duration::from_millis(250)) {
            requests.write(request.clone())?;
            last_sent = Some(Instant::now());
        }
        for reply in replies.take_wait(16, Duration::from_millis(50)) {
            let reply = reply.value;
            if reply.request_id != request_id {
                continue;
            }
            match reply.status {
                ReplyStatus::Pending => {
                    if !pending_shown {
                        println!("pending: {}", reply.message);
                    }
                    pending_shown = true;
                }
                ReplyStatus::Success | ReplyStatus::Failed => return Ok(reply),
            }
        }
    }
}

pub fn run(node: &Node, args: &WorldCommandArgs, timeout: f64) -> Result<()> {
    check_range("--timeout", timeout, 0.1..=600.0, "seconds")?;
    let reply = send(node, command(args), Duration::from_secs_f64(timeout))?;
    match reply.status {
        ReplyStatus::Success => {
            println!("success: {}", reply.message);
            for s in &reply.states {
                println!(
                    "{} frame {} position ({:.3}, {:.3}, {:.3}) velocity ({:.3}, {:.3}, {:.3})",
                    s.agent_id,
                    s.frame,
                    s.pose.position.x,
                    s.pose.position.y,
                    s.pose.position.z,
                    s.twist.linear.x,
                    s.twist.linear.y,
                    s.twist.linear.z
                );
            }
            Ok(())
        }
        _ => bail!("failed: {}", reply.message),
    }
}
