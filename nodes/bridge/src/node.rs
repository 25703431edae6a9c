//! The bridge node's loop (`convoy-bridge`): convoy's clock, agent states and sensor topics in,
//! their ROS 2 counterparts out; `cmd_vel` from the stack in, convoy controls out; and, with
//! `hold_for_stack`, a place in the lockstep barrier.
//!
//! One thread waits on every reader at once (convoy's and the ROS subscriptions) and forwards
//! what arrived, so a sample crosses the bridge without a thread hop.
//!
//! Stack in the loop (CARLA's synchronous client): the bridge says in its NodeStatus
//! (`hold_for_stack` = 1) that it holds frames; the coordinator then owes frame N to the bridge
//! too. The bridge publishes `/clock` for frame N, and answers FrameDone N once every commanded
//! agent's `cmd_vel` arrived after that (or `stack_timeout` passed, which is logged and
//! counted). Before answering it waits until the agents' readers acknowledged the controls,
//! so the agent holds the command when Tick N+1 reaches it: closed-loop runs repeat exactly.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ros_msgs::{self as ros, RosMessage};
use anyhow::{Context as _, Result};
use convoy_core::dds::{Node, Publisher, ReaderToken, Subscriber, WaitSet};
use convoy_core::messages::{
    AgentState, Control, FrameDone, GnssFix, Image, Imu, Message, Odometry, PointCloud, Tick,
};
use convoy_core::node::{NodeArgs, NodeContext, NodeId};
use convoy_core::scenario::{Scenario, SensorKind};
use convoy_core::status::StatusBeacon;
use convoy_core::topics::{self, Topic, TopicClass};

use crate::config::{cmd_vel_topic, sensor_outputs, BridgeFile, PointCloudLayout, Ros2Settings};
use crate::convert::{self, Command, CommandLimits};
use crate::ros2::{RosQos, RosSide};

/// The longest the loop blocks without looking at the stop flag, its status and a held frame.
const HOUSEKEEPING: Duration = Duration::from_millis(50);
/// History of the ROS sensor writers (reliable streams need 8 or more).
const STREAM_DEPTH: i32 = 8;
/// How long a held frame waits for the agents to acknowledge the stack's controls.
const CONTROL_ACK_WAIT: Duration = Duration::from_secs(1);

/// What `convoy-bridge` is asked to do.
#[derive(Debug, Clone)]
pub struct BridgeNodeConfig {
    /// Scenario, convoy's DDS domain, QoS for convoy's topics.
    pub node: NodeArgs,
    /// The node's convoy name (it runs as DDS node `bridge/NAME`).
    pub name: String,
    /// The bridge settings file (none: defaults).
    pub settings: Option<PathBuf>,
    /// Overrides of the settings file.
    pub ros_domain: Option<u32>,
    pub node_name: Option<String>,
    pub hold_for_stack: Option<bool>,
}

impl BridgeNodeConfig {
    /// The settings file (or the defaults) with the command line's overrides, checked against
    /// the scenario.
    pub fn settings(&self, scenario: &Scenario) -> Result<Ros2Settings> {
        NodeId::bridge(&self.name).check()?;
        let (mut settings, source) = match &self.settings {
            Some(path) => (BridgeFile::load(path)?.ros2, path.display().to_string()),
            None => (Ros2Settings::default(), "bridge defaults".to_string()),
        };
        if let Some(d) = self.ros_domain {
            settings.domain = Some(d);
        }
        if let Some(n) = &self.node_name {
            settings.node_name = n.clone();
        }
        if let Some(h) = self.hold_for_stack {
            settings.hold_for_stack = h;
        }
        settings.validate(scenario, &source)?;
        Ok(settings)
    }
}

/// What the bridge counted, reported in its NodeStatus.
#[derive(Debug, Default)]
struct Counters {
    forwarded: u64,
    convert_errors: u64,
    publish_errors: u64,
    commands: u64,
    commands_clamped: u64,
    commands_rejected: u64,
    frames_held: u64,
    stack_timeouts: u64,
}

/// One convoy sensor topic forwarded to one ROS topic.
trait Forward {
    /// Takes what arrived and publishes it.
    fn forward(&mut self, waitset: &WaitSet, counters: &mut Counters);
}

struct Route<I: Message, O: RosMessage> {
    ros_topic: String,
    sub: Subscriber<I>,
    token: ReaderToken,
    out: ros2_client::Publisher<O>,
    convert: fn(I) -> Result<O, String>,
}

impl<I: Message, O: RosMessage> Forward for Route<I, O> {
    fn forward(&mut self, waitset: &WaitSet, counters: &mut Counters) {
        if !waitset.ready(self.token) {
            return;
        }
        for sample in self.sub.take(64) {
            match (self.convert)(sample.value) {
                Ok(message) => match self.out.publish(message) {
                    Ok(()) => counters.forwarded += 1,
                    Err(e) => {
                        counters.publish_errors += 1;
                        if counters.publish_errors.is_power_of_two() {
                            tracing::warn!(
                                "{}: cannot publish ({} so far): {e}",
                                self.ros_topic,
                                counters.publish_errors
                            );
                        }
                    }
                },
                Err(e) => {
                    counters.convert_errors += 1;
                    if counters.convert_errors.is_power_of_two() {
                        tracing::warn!(
                            "{}: sample not forwarded ({} so far): {e}",
                            self.ros_topic,
                            counters.convert_errors
                        );
                    }
                }
            }
        }
    }
}

/// A frame the stack owes a command for.
struct Held {
    frame: u64,
    since: Instant,
    waiting: BTreeSet<String>,
}

/// An agent driven by the stack.
struct Commanded {
    agent: String,
    ros_topic: String,
    sub: ros2_client::Subscription<ros::Twist>,
    token: ReaderToken,
    control: Publisher<Control>,
    clamped: u64,
    rejected: u64,
}

struct Bridge {
    node: Node,
    settings: Ros2Settings,
    waitset: WaitSet,
    routes: Vec<Box<dyn Forward>>,
    clock: Subscriber<Tick>,
    clock_token: ReaderToken,
    clock_out: ros2_client::Publisher<ros::Clock>,
    states: Vec<(String, Subscriber<AgentState>, ReaderToken)>,
    tf_out: ros2_client::Publisher<ros::TfMessage>,
    commanded: Vec<Commanded>,
    done: Publisher<FrameDone>,
    beacon: StatusBeacon,
    counters: Counters,
    last_frame: Option<u64>,
    held: Option<Held>,
    // Kept alive: the ROS node and its latched static transforms.
    _tf_static: ros2_client::Publisher<ros::TfMessage>,
    _ros: RosSide,
}

/// Runs a bridge node until `stop` is set.
pub fn run(config: BridgeNodeConfig, stop: Arc<AtomicBool>) -> Result<()> {
    let NodeContext {
        scenario,
        node,
        mut beacon,
    } = NodeContext::start(&config.node, NodeId::bridge(&config.name))?;
    let settings = config.settings(&scenario)?;
    let ros_domain = settings.domain.unwrap_or(config.node.domain);
    let mut ros = RosSide::new(&settings, ros_domain)?;
    let mut waitset = WaitSet::new().context("cannot create a wait set")?;
    let stream = RosQos::Stream {
        reliable: settings.reliable,
        depth: STREAM_DEPTH,
    };

    let mut routes: Vec<Box<dyn Forward>> = Vec::new();
    let mut static_transforms = Vec::new();
    let agents = settings.bridged_agents(&scenario);
    for agent in &agents {
        let Some(spec) = scenario.agent(agent) else {
            continue;
        };
        for sensor in &spec.sensors {
            static_transforms.push(convert::sensor_transform(
                agent,
                sensor,
                spec.vehicle.half_extents,
            ));
            for output in sensor_outputs(agent, sensor) {
                let mut make = RouteMaker {
                    node: &node,
                    ros: &mut ros,
                    waitset: &mut waitset,
                    qos: stream,
                    convoy_topic: &output.convoy_topic,
                    ros_topic: settings.ros_name(&output.ros_name),
                };
                let route = match (sensor.kind, settings.point_cloud) {
                    (SensorKind::Camera, _) => make.route(|m: Image| Ok(convert::image(m)))?,
                    (SensorKind::Lidar, PointCloudLayout::Xyzirc) => {
                        make.route(|m: PointCloud| {
                            convert::point_cloud(&m, PointCloudLayout::Xyzirc)
                                .map_err(|e| e.to_string())
                        })?
                    }
                    (SensorKind::Lidar, PointCloudLayout::Xyzi) => {
                        make.route(|m: PointCloud| {
                            convert::point_cloud(&m, PointCloudLayout::Xyzi)
                                .map_err(|e| e.to_string())
                        })?
                    }
                    (SensorKind::Imu, _) => make.route(|m: Imu| Ok(convert::imu(&m)))?,
                    (SensorKind::Gnss, _) => {
                        make.route(|m: GnssFix| Ok(convert::nav_sat_fix(&m)))?
                    }
                    (SensorKind::Odometry, _) => {
                        make.route(|m: Odometry| Ok(convert::odometry(&m)))?
                    }
                    (SensorKind::Radar, _) => continue,
                };
                routes.push(route);
            }
        }
    }

    let mut clock = node.subscriber(&topics::clock())?;
    // Free-running, /clock follows the newest tick; a held lockstep loses none.
    clock.latest_only();
    let clock_token = clock.attach(&mut waitset)?;
    let clock_out = ros.publisher::<ros::Clock>(
        &settings.ros_name("/clock"),
        RosQos::Clock {
            depth: STREAM_DEPTH,
        },
    )?;
    let tf_out = ros.publisher::<ros::TfMessage>(&settings.ros_name("/tf"), stream)?;
    let tf_static =
        ros.publisher::<ros::TfMessage>(&settings.ros_name("/tf_static"), RosQos::Latched)?;
    if !static_transforms.is_empty() {
        tf_static
            .publish(ros::TfMessage {
                transforms: static_transforms,
            })
            .map_err(|e| anyhow::anyhow!("cannot publish /tf_static: {e}"))?;
    }
    let mut states = Vec::new();
    for agent in &agents {
        let mut sub = node.subscriber(&topics::agent_state(agent))?;
        let token = sub.attach(&mut waitset)?;
        states.push((agent.clone(), sub, token));
    }
    let mut commanded = Vec::new();
    for agent in settings.commanded_agents(&scenario) {
        let ros_topic = settings.ros_name(&cmd_vel_topic(&agent));
        let mut sub = ros.subscription::<ros::Twist>(&ros_topic, stream)?;
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
    let done = node.publisher(&topics::frame_done())?;
    beacon.set_counter("hold_for_stack", u64::from(settings.hold_for_stack));
    beacon.beat_now();
    println!(
        "bridge {} ready: ROS node {} on ROS domain {ros_domain}, {} sensor topics, {} commanded \
         agents{}",
        config.name,
        ros.node_name(),
        routes.len(),
        commanded.len(),
        if settings.hold_for_stack {
            " (holding each frame for the stack)"
        } else {
            ""
        }
    );
    let mut bridge = Bridge {
        node,
        settings,
        waitset,
        routes,
        clock,
        clock_token,
        clock_out,
        states,
        tf_out,
        commanded,
        done,
        beacon,
        counters: Counters::default(),
        last_frame: None,
        held: None,
        _tf_static: tf_static,
        _ros: ros,
    };
    while !stop.load(Ordering::Relaxed) {
        let wait = bridge.held.as_ref().map_or(HOUSEKEEPING, |h| {
            bridge
                .stack_timeout()
                .saturating_sub(h.since.elapsed())
                .min(HOUSEKEEPING)
        });
        bridge.waitset.wait(wait);
        bridge.service(&stop)?;
    }
    bridge.set_counters();
    bridge.beacon.final_beat(Duration::from_millis(500));
    Ok(())
}

/// What every route of one sensor output is made from.
struct RouteMaker<'a> {
    node: &'a Node,
    ros: &'a mut RosSide,
    waitset: &'a mut WaitSet,
    qos: RosQos,
    convoy_topic: &'a str,
    ros_topic: String,
}

impl RouteMaker<'_> {
    /// A route from the convoy topic to the ROS topic through `convert`, attached to the wait
    /// set.
    fn route<I: Message, O: RosMessage>(
        &mut self,
        convert: fn(I) -> Result<O, String>,
    ) -> Result<Box<dyn Forward>> {
        let mut sub = self
            .node
            .subscriber::<I>(&Topic::new(self.convoy_topic, TopicClass::Sensor))?;
        let token = sub.attach(self.waitset)?;
        let out = self.ros.publisher::<O>(&self.ros_topic, self.qos)?;
        Ok(Box::new(Route {
            ros_topic: self.ros_topic.clone(),
            sub,
            token,
            out,
            convert,
        }))
    }
}

impl Bridge {
    fn stack_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.settings.stack_timeout)
    }

    fn service(&mut self, stop: &AtomicBool) -> Result<()> {
        // Commands before the clock: one that arrives with Tick N answered frame N-1 (the
        // stack answers /clock N only after the bridge published it, below).
        self.commands()?;
        self.clock()?;
        for (_, sub, token) in self.states.iter_mut() {
            if !self.waitset.ready(*token) {
                continue;
            }
            for s in sub.take(64) {
                let message = ros::TfMessage {
                    transforms: vec![convert::agent_transform(&s.value)],
                };
                if let Err(e) = self.tf_out.publish(message) {
                    self.counters.publish_errors += 1;
                    if self.counters.publish_errors.is_power_of_two() {
                        tracing::warn!("/tf: cannot publish: {e}");
                    }
                }
            }
        }
        for route in self.routes.iter_mut() {
            route.forward(&self.waitset, &mut self.counters);
        }
        self.release_held(stop)?;
        if self.beacon.due() {
            self.set_counters();
            self.beacon.beat()?;
        }
        Ok(())
    }

    /// `/clock` for each new frame; with `hold_for_stack`, the frame is held.
    fn clock(&mut self) -> Result<()> {
        if !self.waitset.ready(self.clock_token) {
            return Ok(());
        }
        for tick in self.clock.take(16) {
            let tick = tick.value;
            // Frame 0 is repeated during the coordinator's handshake; paused ticks repeat too.
            if self.last_frame.is_some_and(|f| tick.frame <= f) {
                // The coordinator sends a frame's Tick again when its barrier stalled: if
                // this bridge answered that frame already, its FrameDone was lost.
                let answered = self.last_frame == Some(tick.frame) && self.held.is_none();
                if self.settings.hold_for_stack && tick.frame > 0 && answered {
                    self.done
                        .write(FrameDone {
                            node_id: self.node.node_id().to_string(),
                            frame: tick.frame,
                        })
                        .context("cannot answer the barrier again")?;
                }
                continue;
            }
            self.last_frame = Some(tick.frame);
            if let Err(e) = self.clock_out.publish(convert::clock(&tick)) {
                tracing::warn!("/clock: cannot publish frame {}: {e}", tick.frame);
            }
            // The coordinator owes the bridge frames from 1 on (frame 0 is its handshake).
            if self.settings.hold_for_stack && tick.frame > 0 {
                if let Some(previous) = self.held.take() {
                    // A newer frame means the coordinator stopped waiting for that one.
                    tracing::info!(
                        "frame {} superseded by frame {}",
                        previous.frame,
                        tick.frame
                    );
                }
                self.held = Some(Held {
                    frame: tick.frame,
                    since: Instant::now(),
                    waiting: self.commanded.iter().map(|c| c.agent.clone()).collect(),
                });
            }
        }
        Ok(())
    }

    /// cmd_vel from the stack, checked and written as the agents' controls.
    fn commands(&mut self) -> Result<()> {
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
                        c.clamped += 1;
                        if c.clamped.is_power_of_two() {
                            tracing::warn!("{}: {why} ({} clamped so far)", c.ros_topic, c.clamped);
                        }
                        control
                    }
                    Command::Rejected(why) => {
                        self.counters.commands_rejected += 1;
                        c.rejected += 1;
                        if c.rejected.is_power_of_two() {
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
    fn release_held(&mut self, stop: &AtomicBool) -> Result<()> {
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
            .write_patiently(
                FrameDone {
                    node_id: self.node.node_id().to_string(),
                    frame: held.frame,
                },
                stop,
            )
            .context("cannot answer the barrier")?;
        Ok(())
    }

    fn set_counters(&mut self) {
        let c = &self.counters;
        let values: BTreeMap<&str, u64> = [
            ("forwarded", c.forwarded),
            ("convert_errors", c.convert_errors),
            ("publish_errors", c.publish_errors),
            ("commands", c.commands),
            ("commands_clamped", c.commands_clamped),
            ("commands_rejected", c.commands_rejected),
            ("frames_held", c.frames_held),
            ("stack_timeouts", c.stack_timeouts),
        ]
        .into_iter()
        .collect();
        for (name, value) in values {
            self.beacon.set_counter(name, value);
        }
    }
}
