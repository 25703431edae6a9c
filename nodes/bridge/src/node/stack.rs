//! The stack in the loop (CARLA's synchronous client): the bridge says in its NodeStatus
//! (`hold_for_stack` = 1) that it holds frames; the coordinator then owes frame N to the bridge
//! too. The bridge publishes `/clock` for frame N, and answers FrameDone N once every commanded
//! agent's `cmd_vel` arrived after that (or `stack_timeout` passed, which is logged and
//! counted). Before answering it waits until the agents' readers acknowledged the controls,
//! so the agent holds the command when Tick N+1 reaches it: closed-loop runs repeat exactly.

use super::*;
use crate::config::cmd_vel_topic;
use crate::convert::{Command, CommandLimits};
use convoy_core::messages::Control;

/// How long a held frame waits for the agents to acknowledge the stack's controls.
const CONTROL_ACK_WAIT: Duration = Duration::from_secs(1);

/// A frame the stack owes a command for.
pub(super) struct Held {
    pub(super) frame: u64,
    pub(super) since: Instant,
    waiting: BTreeSet<String>,
}

/// An agent driven by the stack.
pub(super) struct Commanded {
    agent: String,
    ros_topic: String,
    sub: ros2_client::Subscription<ros::Twist>,
    token: ReaderToken,
    control: Publisher<Control>,
    clamped: u64,
    rejected: u64,
}

impl Commanded {
    /// The agents the stack drives: each one's `cmd_vel` subscription, attached to `waitset`,
    /// and its control writer.
    pub(super) fn all(
        node: &Node,
        ros: &mut RosSide,
        waitset: &mut WaitSet,
        settings: &Ros2Settings,
        scenario: &Scenario,
        qos: RosQos,
    ) -> Result<Vec<Commanded>> {
        let mut commanded = Vec::new();
        for agent in settings.commanded_agents(scenario) {
            let ros_topic = settings.ros_name(&cmd_vel_topic(&agent));
            let mut sub = ros.subscription::<ros::Twist>(&ros_topic, qos)?;
            let token = waitset
                .attach_source(&mut sub)
                .context("cannot wait on a ROS subscription")?;
            let control = node.publisher(&topics::agent_control(&agent))?;
            commanded.push(Commanded {
                agent,
                ros_topic,
                sub,
                token,
                control,
                clamped: 0,
                rejected: 0,
            });
        }
        Ok(commanded)
    }
}

impl Bridge {
    pub(super) fn stack_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.settings.stack_timeout)
    }

    /// Holds `frame` until the stack commanded every agent.
    pub(super) fn hold(&mut self, frame: u64) {
        if let Some(previous) = self.held.take() {
            // A newer frame means the coordinator stopped waiting for that one.
            tracing::info!("frame {} superseded by frame {frame}", previous.frame);
        }
        self.held = Some(Held {
            frame,
            since: Instant::now(),
            waiting: self.commanded.iter().map(|c| c.agent.clone()).collect(),
        });
    }

    /// cmd_vel from the stack, checked and written as the agents' controls.
    pub(super) fn commands(&mut self) -> Result<()> {
        let next_frame = self.last_frame.map_or(0, |f| f + 1);
        let limits = CommandLimits {
            max_speed: self.settings.max_speed,
            max_reverse_speed: self.settings.max_reverse_speed,
            max_yaw_rate: self.settings.max_yaw_rate,
        };
        for c in self.commanded.iter_mut() {
            if !self.waitset.ready(c.token) {
                continue;
            }
            loop {
                let twist = match c.sub.take() {
                    Ok(Some((twist, _))) => twist,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!("{}: unreadable command: {e}", c.ros_topic);
                        break;
                    }
                };
                self.counters.commands += 1;
                let control = match convert::command(&twist, next_frame, &limits) {
                    Command::Accepted(control) => control,
                    Command::Clamped(control, why) => {
                        self.counters.commands_clamped += 1;
                        if count(&mut c.clamped) {
                            tracing::warn!("{}: {why} ({} clamped so far)", c.ros_topic, c.clamped);
                        }
                        control
                    }
                    Command::Rejected(why) => {
                        self.counters.commands_rejected += 1;
                        if count(&mut c.rejected) {
                            tracing::warn!(
                                "{}: {why}: ignored, the agent keeps its last command ({} \
                                 rejected so far)",
                                c.ros_topic,
                                c.rejected
                            );
                        }
                        continue;
                    }
                };
                c.control
                    .write(control)
                    .with_context(|| format!("cannot forward {}", c.ros_topic))?;
                if let Some(held) = self.held.as_mut() {
                    held.waiting.remove(&c.agent);
                }
            }
        }
        Ok(())
    }

    /// Answers a held frame once the stack commanded every agent, or its time ran out.
    pub(super) fn release_held(&mut self, stop: &AtomicBool) -> Result<()> {
        let Some(held) = self.held.as_ref() else {
            return Ok(());
        };
        let timed_out = held.since.elapsed() >= self.stack_timeout();
        if !held.waiting.is_empty() && !timed_out {
            return Ok(());
        }
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        if !held.waiting.is_empty() {
            self.counters.stack_timeouts += 1;
            let missing: Vec<&str> = held.waiting.iter().map(String::as_str).collect();
            tracing::warn!(
                "frame {}: no cmd_vel for {} within stack_timeout {} s; the run goes on with \
                 the last command ({} timeouts so far)",
                held.frame,
                missing.join(", "),
                self.settings.stack_timeout,
                self.counters.stack_timeouts
            );
        }
        for c in &self.commanded {
            if !held.waiting.contains(&c.agent)
                && !c.control.wait_for_acknowledgments(CONTROL_ACK_WAIT)
            {
                tracing::warn!(
                    "frame {}: {} did not acknowledge its control within {CONTROL_ACK_WAIT:?}",
                    held.frame,
                    c.agent
                );
            }
        }
        self.counters.frames_held += 1;
        self.done
            .write_patiently(self.frame_done(held.frame), stop)
            .context("cannot answer the barrier")?;
        Ok(())
    }
}
