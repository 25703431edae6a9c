//! The coordinator's loop: registry, clock (lockstep barrier or wall-clock pace), relay of
//! states, world commands, state log and progress.
//!
//! Frame 0 is a handshake: Tick 0 is repeated, every [`HANDSHAKE_PERIOD`] at first and less
//! often the longer it lasts, until every agent answered FrameDone 0 (an agent does so once
//! it holds every peer's frame-0 state), because discovery matching says nothing about when a
//! first sample will get through.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use convoy_core::dds::{Publisher, Subscriber, WaitSet};
use convoy_core::messages::{
    AgentState, FrameDone, NodeRole, NodeStatus, ReplyStatus, SensorAssignment, Tick,
    WorldCommandKind, WorldReply, WorldRequest,
};
use convoy_core::node::{NodeArgs, NodeContext, NodeId};
use convoy_core::scenario::{ClockMode, Exchange, Scenario, StepMode};
use convoy_core::status::StatusBeacon;
use convoy_core::topics;
use convoy_core::world::check_command;

use crate::barrier::Barrier;
use crate::registry::Registry;
use crate::sensors::{as_sensor_node, sensor_name, SensorBook};

mod frames;
mod service;
mod startup;
mod state_log;
mod world;

pub use state_log::state_log_line;
use state_log::StateLog;

/// How soon Tick 0 is first repeated while some agent has not answered it; each repeat
/// doubles the wait, up to [`HANDSHAKE_PERIOD_MAX`]. Every Tick 0 has every agent write its
/// initial state to every peer (n x (n-1) samples): at a fixed 20 ms, 64 agents in peer
/// exchange on a loaded machine sent so many that their DDS event loops had no time left for
/// the discovery the handshake waited on, and start-up took minutes.
const HANDSHAKE_PERIOD: Duration = Duration::from_millis(20);
const HANDSHAKE_PERIOD_MAX: Duration = Duration::from_millis(320);
/// The longest the loop blocks without looking at leases, commands and the stop flag.
const HOUSEKEEPING: Duration = Duration::from_millis(5);

/// What a coordinator run is told (command line or `convoy run`).
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    pub node: NodeArgs,
    /// Stop after this many frames (after frame 0).
    pub frames: Option<u64>,
    /// Stop after this much simulated time, seconds.
    pub duration: Option<f64>,
    pub state_log: Option<PathBuf>,
    /// How long to wait for every agent to register and answer Tick 0.
    pub startup_timeout: Duration,
    /// Print a progress line every second.
    pub progress: bool,
    /// How many sensor nodes to wait for before placing sensors (None: one when the scenario
    /// has sensors). More may join later; they get sensors no node runs.
    pub sensor_nodes: Option<usize>,
    /// Nodes that must report on convoy/nodes before frame 0 (a recorder of the run, so that
    /// it hears the run from its first tick).
    pub wait_for: Vec<NodeId>,
}

/// What a finished run measured.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub frames: u64,
    pub wall: Duration,
    /// Tick written -> barrier complete, per frame, in microseconds (sync mode).
    pub barrier_us: Vec<f64>,
    pub members_left: Vec<String>,
    /// UDP datagrams this host sent while the frames ran (every process: the whole graph when
    /// it runs on this host), if the kernel says.
    pub datagrams_sent: Option<u64>,
}

impl RunSummary {
    pub fn frames_per_second(&self) -> f64 {
        self.frames as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// (p50, p99) of the barrier latency, microseconds.
    pub fn barrier_percentiles(&self) -> (f64, f64) {
        let mut v = self.barrier_us.clone();
        v.sort_by(f64::total_cmp);
        let at = |p: f64| {
            if v.is_empty() {
                return f64::NAN;
            }
            let rank = (p * v.len() as f64).ceil() as usize;
            v[rank.clamp(1, v.len()) - 1]
        };
        (at(0.5), at(0.99))
    }
}

struct Endpoints {
    clock: Publisher<Tick>,
    done: Subscriber<FrameDone>,
    nodes: Subscriber<NodeStatus>,
    requests: Subscriber<WorldRequest>,
    replies: Publisher<WorldReply>,
    assignments: Publisher<SensorAssignment>,
    states: Vec<(String, Subscriber<AgentState>)>,
    beacon: StatusBeacon,
    waitset: WaitSet,
}

struct Coordinator {
    scenario: Scenario,
    mode: ClockMode,
    exchange: Exchange,
    io: Endpoints,
    registry: Registry,
    members: Vec<String>,
    /// Latest state of every agent (world get_state, progress).
    latest: BTreeMap<String, AgentState>,
    /// Relay: frame -> agent -> state, kept for the frames still needed.
    book: BTreeMap<u64, BTreeMap<String, AgentState>>,
    state_log: Option<StateLog>,
    paused: bool,
    frame: u64,
    left: Vec<String>,
    stop: Arc<AtomicBool>,
    last_housekeeping: Instant,
    sensors: SensorBook,
    /// Sensor nodes named in the live table, by name (the registry has them by node id).
    sensor_nodes_seen: std::collections::BTreeSet<String>,
    /// Placement starts once this many sensor nodes registered (startup).
    sensors_placed: bool,
    /// The digests of the scenario's map files, which every node's must match.
    world_digests: Vec<(String, u64)>,
}

pub fn run(config: &CoordinatorConfig, stop: Arc<AtomicBool>) -> Result<RunSummary> {
    let NodeContext {
        scenario,
        node,
        mut beacon,
    } = NodeContext::start(&config.node, NodeId::Coordinator)?;
    // Only the files are read and hashed here: the coordinator builds no world.
    let world_digests = convoy_world::file_digests(&scenario)?;
    convoy_core::status::announce_world_digests(&mut beacon, &world_digests);
    if !scenario.deterministic() {
        tracing::warn!(
            "mode {:?} with {:?} steps: this run is not reproducible (determinism needs sync + fixed)",
            scenario.scenario.mode,
            scenario.scenario.step
        );
    }
    let mut io = Endpoints {
        clock: node.publisher(&topics::clock())?,
        done: node.subscriber(&topics::frame_done())?,
        nodes: node.subscriber(&topics::nodes())?,
        requests: node.subscriber(&topics::world_request())?,
        replies: node.publisher(&topics::world_reply())?,
        assignments: node.publisher(&topics::assignments())?,
        states: Vec::new(),
        beacon,
        waitset: WaitSet::new().context("cannot create a wait set")?,
    };
    io.done.attach(&mut io.waitset)?;
    // Registry and world requests are read every round (housekeeping), not on readiness.
    io.nodes.attach(&mut io.waitset)?;
    io.requests.attach(&mut io.waitset)?;
    for id in scenario.agent_ids() {
        let mut sub = node.subscriber(&topics::agent_state(&id))?;
        sub.attach(&mut io.waitset)?;
        io.states.push((id, sub));
    }
    let state_log = config
        .state_log
        .as_deref()
        .map(StateLog::create)
        .transpose()?;
    let sensors = SensorBook::new(&scenario);
    let mut c = Coordinator {
        sensors,
        sensor_nodes_seen: Default::default(),
        sensors_placed: false,
        world_digests,
        mode: scenario.scenario.mode,
        exchange: scenario.scenario.exchange,
        members: scenario.agent_ids(),
        scenario,
        io,
        registry: Registry::default(),
        latest: BTreeMap::new(),
        book: BTreeMap::new(),
        state_log,
        paused: false,
        frame: 0,
        left: Vec::new(),
        stop,
        last_housekeeping: Instant::now() - HOUSEKEEPING,
    };
    c.startup(
        config.startup_timeout,
        config.sensor_nodes,
        &config.wait_for,
    )?;
    let summary = c.run_frames(config)?;
    c.finish()?;
    Ok(summary)
}

impl Coordinator {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn relay(&self) -> bool {
        self.exchange == Exchange::Relay && self.mode == ClockMode::Sync
    }
}

/// Sensor node names among barrier node ids.
fn sensor_names(
    node_ids: &std::collections::BTreeSet<String>,
) -> std::collections::BTreeSet<String> {
    node_ids
        .iter()
        .filter_map(|id| NodeId::parse_node(id).ok()?.as_sensor().map(str::to_string))
        .collect()
}
