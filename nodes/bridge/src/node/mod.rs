//! The bridge node's loop (`convoy-bridge`): convoy's clock, agent states and sensor topics in,
//! their ROS 2 counterparts out; `cmd_vel` from the stack in, convoy controls out; and, with
//! `hold_for_stack`, a place in the lockstep barrier.
//!
//! One thread waits on every reader at once (convoy's and the ROS subscriptions) and forwards
//! what arrived, so a sample crosses the bridge without a thread hop.
//!
//! Here: set-up, the loop, `/clock` and `/tf`. `routes`: the sensor topics. `stack`: the stack
//! in the loop. `map`: the scenario's map (`/map/lanes`, `/map/points`), once, latched.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use convoy_core::dds::{Node, Publisher, ReaderToken, Subscriber, WaitSet};
use convoy_core::messages::{AgentState, FrameDone, Tick};
use convoy_core::node::{NodeArgs, NodeContext, NodeId};
use convoy_core::scenario::Scenario;
use convoy_core::status::StatusBeacon;
use convoy_core::topics;

use crate::config::{BridgeFile, Ros2Settings};
use crate::convert;
use crate::ros2::{RosQos, RosSide};
use crate::ros_msgs::{self as ros, RosMessage};

mod map;
mod routes;
mod stack;

use map::MapOut;
use routes::Forward;
use stack::{Commanded, Held};

/// The longest the loop blocks without looking at the stop flag, its status and a held frame.
const HOUSEKEEPING: Duration = Duration::from_millis(50);
/// History of the ROS sensor writers (reliable streams need 8 or more).
const STREAM_DEPTH: i32 = 8;

/// What `convoy-bridge` is asked to do: its command line. The last three override the settings
/// file.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "convoy-bridge",
    version,
    about = "a convoy bridge node: sensors, clock and tf out to ROS 2, cmd_vel back in"
)]
pub struct BridgeNodeConfig {
    #[command(flatten)]
    pub node: NodeArgs,
    /// Bridge settings file (TOML, `[ros2]` table); defaults without one
    #[arg(long = "config", value_name = "CONFIG")]
    pub settings: Option<PathBuf>,
    /// This node's convoy name (it runs as DDS node bridge/NAME)
    #[arg(long, default_value = "ros2")]
    pub name: String,
    /// The ROS 2 domain (default: the settings file's, else convoy's domain)
    #[arg(long)]
    pub ros_domain: Option<u32>,
    /// The ROS node name (default: the settings file's, else convoy_bridge)
    #[arg(long)]
    pub node_name: Option<String>,
    /// Hold each lockstep frame until the stack's cmd_vel for it arrived
    #[arg(long, num_args = 0, default_missing_value = "true")]
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

/// Counts one more of a failure that may repeat every sample; true on the 1st, 2nd, 4th,
/// 8th... time, when it is worth a log line.
fn count(counter: &mut u64) -> bool {
    *counter += 1;
    counter.is_power_of_two()
}

struct Bridge {
    node: Node,
    settings: Ros2Settings,
    waitset: WaitSet,
    routes: Vec<Box<dyn Forward>>,
    clock: Subscriber<Tick>,
    clock_out: ros2_client::Publisher<ros::Clock>,
    states: Vec<(String, Subscriber<AgentState>)>,
    tf_out: ros2_client::Publisher<ros::TfMessage>,
    commanded: Vec<Commanded>,
    done: Publisher<FrameDone>,
    beacon: StatusBeacon,
    counters: Counters,
    last_frame: Option<u64>,
    held: Option<Held>,
    /// The map's latched publishers (a scenario with an OpenDRIVE map).
    map: Option<MapOut>,
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

    let routes =
        routes::sensor_routes(&node, &mut ros, &mut waitset, &settings, &scenario, stream)?;
    let agents = settings.bridged_agents(&scenario);
    let static_transforms: Vec<_> = agents
        .iter()
        .filter_map(|agent| scenario.agent(agent))
        .flat_map(|agent| {
            let half_extents = agent.vehicle.half_extents;
            agent
                .sensors
                .iter()
                .map(move |sensor| convert::sensor_transform(&agent.id, sensor, half_extents))
        })
        .collect();
    let mut clock = node.subscriber(&topics::clock())?;
    // Free-running, /clock follows the newest tick; a held lockstep loses none.
    clock.latest_only();
    clock.attach(&mut waitset)?;
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
        sub.attach(&mut waitset)?;
        states.push((agent.clone(), sub));
    }
    let commanded = Commanded::all(&node, &mut ros, &mut waitset, &settings, &scenario, stream)?;
    let map = MapOut::start(&scenario, &settings, &mut ros, &mut beacon)?;
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
        clock_out,
        states,
        tf_out,
        commanded,
        done,
        beacon,
        counters: Counters::default(),
        last_frame: None,
        held: None,
        map,
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

impl Bridge {
    fn frame_done(&self, frame: u64) -> FrameDone {
        FrameDone {
            node_id: self.node.node_id().to_string(),
            frame,
        }
    }

    fn service(&mut self, stop: &AtomicBool) -> Result<()> {
        // Commands before the clock: one that arrives with Tick N answered frame N-1 (the
        // stack answers /clock N only after the bridge published it, below).
        self.commands()?;
        self.clock()?;
        for (_, sub) in self.states.iter_mut() {
            for s in sub.take_ready(&self.waitset, 64) {
                let message = ros::TfMessage {
                    transforms: vec![convert::agent_transform(&s.value)],
                };
                if let Err(e) = self.tf_out.publish(message) {
                    if count(&mut self.counters.publish_errors) {
                        tracing::warn!("/tf: cannot publish: {e}");
                    }
                }
            }
        }
        for route in self.routes.iter_mut() {
            route.forward(&self.waitset, &mut self.counters);
        }
        if let Some(map) = &mut self.map {
            map.publish_when_built(&mut self.counters);
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
        for tick in self.clock.take_ready(&self.waitset, 16) {
            let tick = tick.value;
            // Frame 0 is repeated during the coordinator's handshake; paused ticks repeat too.
            if self.last_frame.is_some_and(|f| tick.frame <= f) {
                // The coordinator sends a frame's Tick again when its barrier stalled: if
                // this bridge answered that frame already, its FrameDone was lost.
                let answered = self.last_frame == Some(tick.frame) && self.held.is_none();
                if self.settings.hold_for_stack && tick.frame > 0 && answered {
                    self.done
                        .write(self.frame_done(tick.frame))
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
                self.hold(tick.frame);
            }
        }
        Ok(())
    }

    fn set_counters(&mut self) {
        let c = &self.counters;
        // In name order, as NodeStatus has always listed them.
        for (name, value) in [
            ("commands", c.commands),
            ("commands_clamped", c.commands_clamped),
            ("commands_rejected", c.commands_rejected),
            ("convert_errors", c.convert_errors),
            ("forwarded", c.forwarded),
            ("frames_held", c.frames_held),
            ("publish_errors", c.publish_errors),
            ("stack_timeouts", c.stack_timeouts),
        ] {
            self.beacon.set_counter(name, value);
        }
    }
}
