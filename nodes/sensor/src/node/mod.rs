//! The sensor node's DDS loop (DESIGN.md, "Sensor runtime"): register with role and capacity,
//! run exactly the sensors `convoy/assignments` gives this node, fire them on simulation time,
//! and in sync mode acknowledge every frame in which one of them was due.
//!
//! Frame N: Tick N arrives; every scenario sensor's schedule advances (also those of other
//! nodes, so a sensor that moves here later fires on the same frames the coordinator expects);
//! for the due sensors this node runs, wait (bounded) for the agent states of frame N, make
//! each sample from them, hand it to the dispatcher, and once every job reported back write
//! FrameDone N. An assignment that arrives after its frame's tick (a failover) is caught up on
//! that frame.
//!
//! Here: the node's set-up and what arrives. `assignments`: which sensors this node runs.
//! `frames`: the work of each frame. `output`: where the samples go.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use convoy_core::dds::{Node, Publisher, Subscriber, WaitSet};
use convoy_core::messages::{AgentState, FrameDone, SensorAssignment, SensorKey, Tick};
use convoy_core::node::{NodeArgs, NodeContext, SensorNodeRole};
use convoy_core::scenario::{ClockMode, Scenario, SensorKind, SensorSpec};
use convoy_core::schedule::SensorSchedule;
use convoy_core::status::announce_world_digests;
use convoy_core::status::StatusBeacon;
use convoy_core::topics;
use convoy_world::World;

use crate::camera::{AdapterChoice, CameraScene, Renderer};
use crate::dispatcher::Dispatcher;
use crate::lidar::LidarScene;
use crate::sampling::CameraRig;
use crate::stages::{FrameStage, StageTimes};

mod assignments;
mod frames;
mod output;

use assignments::Active;
use frames::Work;

/// The longest the loop blocks without looking at the stop flag and its status.
const HOUSEKEEPING: Duration = Duration::from_millis(5);
/// How long a stopping node waits for its readers to acknowledge its last samples (the
/// launcher's grace before SIGKILL is 3 s, and the final status beat waits up to 0.5 s).
const LAST_SAMPLES_WAIT: Duration = Duration::from_secs(1);
/// Dispatcher queue length: room for every sensor of a busy frame and the next.
const QUEUE_CAPACITY: usize = 256;

/// What `convoy-sensor` is asked to do: its command line.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "convoy-sensor",
    version,
    about = "a convoy sensor node: runs the sensors the coordinator assigns to it"
)]
pub struct SensorNodeConfig {
    #[command(flatten)]
    pub node: NodeArgs,
    /// This node's name (assignments and pins use it; it runs as DDS node sensor/NAME)
    #[arg(long, default_value = "main")]
    pub name: String,
    /// main (beside the coordinator; takes main_only sensors) or client
    #[arg(long, default_value = "main")]
    pub role: SensorNodeRole,
    /// How much sensor load this machine takes (1.0 = one typical machine)
    #[arg(long, default_value_t = 1.0)]
    pub capacity: f64,
    /// Publishing threads (default: available cores)
    #[arg(long)]
    pub workers: Option<usize>,
    /// The graphics adapter of the cameras: auto (a GPU when there is one, else the CPU), gpu
    /// (a hardware adapter; none is an error) or cpu (Mesa's lavapipe)
    #[arg(long, value_enum, default_value_t = AdapterChoice::Auto)]
    pub adapter: AdapterChoice,
}

impl SensorNodeConfig {
    pub fn validate(&self) -> Result<()> {
        if !(self.capacity.is_finite() && self.capacity > 0.0) {
            bail!("--capacity {} must be a positive number", self.capacity);
        }
        if self.workers == Some(0) {
            bail!("--workers must be at least 1");
        }
        Ok(())
    }
}

struct SensorNode {
    name: String,
    scenario: Scenario,
    specs: BTreeMap<SensorKey, SensorSpec>,
    node: Node,
    clock: Subscriber<Tick>,
    assignments: Subscriber<SensorAssignment>,
    states: Vec<(String, Subscriber<AgentState>)>,
    done: Publisher<FrameDone>,
    beacon: StatusBeacon,
    waitset: WaitSet,
    waker: Arc<rustdds::mio1::Waker>,
    dispatcher: Dispatcher,
    completions: mpsc::Receiver<(u64, bool)>,
    completions_tx: mpsc::Sender<(u64, bool)>,
    /// Newest assignment of every sensor (any node), by key.
    book: BTreeMap<SensorKey, SensorAssignment>,
    active: BTreeMap<SensorKey, Active>,
    /// Every scenario sensor's schedule, advanced on every frame this node sees.
    schedules: BTreeMap<SensorKey, SensorSchedule>,
    /// Agent -> frame -> state.
    history: BTreeMap<String, BTreeMap<u64, AgentState>>,
    pending: VecDeque<Tick>,
    work: Option<Work>,
    /// The last frame started, and the sensors that were due in it (for catching up).
    last_frame: Option<(Tick, BTreeSet<SensorKey>)>,
    /// The last frame acknowledged.
    acked: Option<u64>,
    /// When the last FrameDone was written, until the next tick came (the `barrier` stage).
    acked_at: Option<Instant>,
    /// Stage times of the frames and camera images (NodeStatus counters `stage/...`).
    stages: Arc<StageTimes>,
    sync: bool,
    counters: Counters,
    stop: Arc<AtomicBool>,
    /// The static world (roads, meshes), loaded at start when the scenario has a lidar or a
    /// camera (a flat world otherwise).
    world: Arc<World>,
    /// What lidar rays hit (map and agent boxes), when the scenario has a lidar.
    lidar_scene: Option<RefCell<LidarScene>>,
    /// The camera renderer, made at start when the scenario has a camera.
    camera: Option<RefCell<CameraRig>>,
    /// Whether a sample has been published (the first one triggers a status beat).
    published_any: bool,
}

#[derive(Debug, Default)]
struct Counters {
    frames_acked: u64,
    samples_made: u64,
    stale_states: u64,
    frames_skipped: u64,
}

pub fn run(config: SensorNodeConfig, stop: Arc<AtomicBool>) -> Result<()> {
    config.validate()?;
    let NodeContext {
        scenario,
        node,
        mut beacon,
    } = NodeContext::start_sensor_node(&config.node, &config.name, config.role)?;
    beacon.set_capacity(config.capacity);
    beacon.set_counter("sensors", 0);
    // Only lidars and cameras see the world; every node announces the digest of its files.
    let needs_world = scenario
        .agents
        .iter()
        .flat_map(|a| &a.sensors)
        .any(|spec| matches!(spec.kind, SensorKind::Lidar | SensorKind::Camera));
    let (world, digests) = if needs_world {
        let world = World::for_scenario(&scenario)?;
        let digests = world.digests();
        (world, digests)
    } else {
        (World::flat(), convoy_world::file_digests(&scenario)?)
    };
    announce_world_digests(&mut beacon, &digests);
    let mut waitset = WaitSet::new().context("cannot create a wait set")?;
    let (_, waker) = waitset.waker().context("cannot create a wake-up")?;
    let mut clock = node.subscriber(&topics::clock())?;
    clock.attach(&mut waitset)?;
    let mut assignments = node.subscriber(&topics::assignments())?;
    assignments.attach(&mut waitset)?;
    let mut states = Vec::new();
    for agent in scenario.agent_ids() {
        let mut sub = node.subscriber(&topics::agent_state(&agent))?;
        sub.attach(&mut waitset)?;
        states.push((agent, sub));
    }
    let workers = config
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let dispatcher = Dispatcher::new(workers, QUEUE_CAPACITY)?;
    let mut specs = BTreeMap::new();
    let mut schedules = BTreeMap::new();
    for agent in &scenario.agents {
        for spec in &agent.sensors {
            let key = SensorKey {
                agent_id: agent.id.clone(),
                sensor_id: spec.id.clone(),
            };
            schedules.insert(
                key.clone(),
                SensorSchedule::new(spec.rate).map_err(|e| anyhow!("{}: {e}", spec.id))?,
            );
            specs.insert(key, spec.clone());
        }
    }
    let (completions_tx, completions) = mpsc::channel();
    let mut s = SensorNode {
        name: config.name.clone(),
        sync: scenario.scenario.mode == ClockMode::Sync,
        scenario,
        specs,
        done: node.publisher(&topics::frame_done())?,
        node,
        clock,
        assignments,
        states,
        beacon,
        waitset,
        waker,
        dispatcher,
        completions,
        completions_tx,
        book: BTreeMap::new(),
        active: BTreeMap::new(),
        schedules,
        history: BTreeMap::new(),
        pending: VecDeque::new(),
        work: None,
        last_frame: None,
        acked: None,
        acked_at: None,
        stages: Arc::default(),
        counters: Counters::default(),
        stop: Arc::clone(&stop),
        world: Arc::new(world),
        lidar_scene: None,
        camera: None,
        published_any: false,
    };
    if s.specs.values().any(|spec| spec.kind == SensorKind::Lidar) {
        s.lidar_scene = Some(RefCell::new(LidarScene::new(&s.scenario, &s.world)));
    }
    if s.specs.values().any(|spec| spec.kind == SensorKind::Camera) {
        // At start, whichever sensors this node is given: the adapter is in the log from the
        // first line on, and one that is not there (no GPU for --adapter gpu, no Vulkan driver
        // at all) stops the node with what to do.
        let renderer = Renderer::with_adapter(config.adapter)?;
        println!("camera adapter: {}", renderer.adapter);
        s.camera = Some(RefCell::new(CameraRig {
            renderer,
            scene: CameraScene::new(&s.scenario, &s.world),
            stages: Arc::clone(&s.stages),
        }));
    }
    println!(
        "sensor node {} ({:?}, capacity {}) ready with {} publishing threads",
        config.name, config.role, config.capacity, workers
    );
    while !stop.load(Ordering::Relaxed) {
        s.waitset.wait(HOUSEKEEPING);
        s.service()?;
        s.advance()?;
        if s.beacon.due() {
            s.set_counters();
            s.beacon.beat()?;
        }
    }
    // What is queued is written, and what was written reaches its readers (bounded): a reader
    // that lost the last frame's samples (a full socket buffer on a loaded machine) gets them
    // repaired only while this node is still there.
    s.dispatcher.finish();
    let deadline = Instant::now() + LAST_SAMPLES_WAIT;
    let unacknowledged = s
        .active
        .iter()
        .filter(|(_, active)| !active.output.wait_for_acknowledgments(deadline))
        .map(|(key, _)| format!("{}/{}", key.agent_id, key.sensor_id))
        .collect::<Vec<_>>();
    if !unacknowledged.is_empty() {
        // Not a warning: a reader on a node that stopped first never acknowledges.
        tracing::info!(
            "stopping with samples not acknowledged by every reader after {:?}: {}",
            LAST_SAMPLES_WAIT,
            unacknowledged.join(", ")
        );
    }
    // The final counters, for whoever watches NodeStatus (a short run may end between beats).
    s.set_counters();
    s.beacon.final_beat(Duration::from_millis(500));
    Ok(())
}

impl SensorNode {
    /// Takes everything that arrived.
    fn service(&mut self) -> Result<()> {
        let changed: Vec<SensorAssignment> = self
            .assignments
            .take_ready(&self.waitset, 1024)
            .into_iter()
            .map(|a| a.value)
            .collect();
        if !changed.is_empty() {
            self.apply_assignments(changed)?;
        }
        for (agent, sub) in self.states.iter_mut() {
            for s in sub.take_ready(&self.waitset, 256) {
                if s.value.agent_id == *agent {
                    self.history
                        .entry(agent.clone())
                        .or_default()
                        .insert(s.value.frame, s.value);
                }
            }
        }
        for tick in self.clock.take_ready(&self.waitset, 16) {
            let tick = tick.value;
            self.dispatcher.set_paused(tick.paused);
            if tick.paused {
                continue;
            }
            if self.acked.is_some_and(|a| tick.frame == a) {
                // A repeated tick (the frame-0 handshake): our answer may have been
                // written before the coordinator's reader matched; answer again.
                self.ack(tick.frame)?;
                continue;
            }
            if let Some(at) = self.acked_at.take() {
                self.stages.frame(FrameStage::Barrier, at.elapsed());
            }
            let started = self.last_frame.as_ref().map(|(t, _)| t.frame);
            let queued = self.pending.back().map(|t| t.frame);
            if started.max(queued).is_some_and(|f| tick.frame <= f) {
                continue;
            }
            self.pending.push_back(tick);
        }
        self.take_completions();
        Ok(())
    }

    /// Counts the publish jobs that reported back against the current frame's work.
    fn take_completions(&mut self) {
        while let Ok((frame, ok)) = self.completions.try_recv() {
            // The first sample out is news for whoever watches NodeStatus (a short run can
            // end before the next beat): say so at once.
            if ok && !self.published_any {
                self.published_any = true;
                self.beacon.beat_now();
            }
            if let Some(work) = self.work.as_mut() {
                if work.tick.frame == frame {
                    work.in_flight = work.in_flight.saturating_sub(1);
                }
            }
        }
    }

    fn ack(&mut self, frame: u64) -> Result<()> {
        self.done
            .write_patiently(
                FrameDone {
                    node_id: self.node.node_id().to_string(),
                    frame,
                },
                &self.stop,
            )
            .context("cannot acknowledge a frame")?;
        if self.acked != Some(frame) {
            self.counters.frames_acked += 1;
            self.acked_at = Some(Instant::now());
        }
        self.acked = Some(frame);
        Ok(())
    }

    /// Copies the dispatcher's and the node's counters (NodeStatus: what ran and every reason a
    /// sample was dropped) into the next status beat.
    fn set_counters(&mut self) {
        let d = self.dispatcher.counts();
        let c = &self.counters;
        for (name, value) in [
            ("published", d.published),
            ("dropped_paused", d.paused),
            ("dropped_token_busy", d.token_busy),
            ("dropped_queue_full", d.queue_full),
            ("dropped_publisher_error", d.publisher_error),
            ("samples_made", c.samples_made),
            ("frames_acked", c.frames_acked),
            ("stale_states", c.stale_states),
            ("frames_skipped", c.frames_skipped),
        ] {
            self.beacon.set_counter(name, value);
        }
        for (name, value) in self.stages.counters() {
            self.beacon.set_counter(&name, value);
        }
    }
}
