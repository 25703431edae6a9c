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

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use convoy_core::dds::{Node, Publisher, ReaderToken, Subscriber, WaitSet};
use convoy_core::messages::{
    AgentState, FrameDone, GnssFix, Image, Imu, Odometry, PointCloud, RadarScan, SensorAssignment,
    SensorKey, Tick,
};
use convoy_core::node::{NodeArgs, NodeContext, SensorNodeRole};
use convoy_core::scenario::{ClockMode, Scenario, SensorKind, SensorSpec};
use convoy_core::schedule::SensorSchedule;
use convoy_core::status::StatusBeacon;
use convoy_core::topics;

use crate::camera::{CameraScene, Renderer};
use crate::dispatcher::{Dispatcher, PublisherId};
use crate::lidar::LidarScene;
use crate::sampling::{self, CameraRig, FrameInput, Sample};

/// The longest the loop blocks without looking at the stop flag and its status.
const HOUSEKEEPING: Duration = Duration::from_millis(5);
/// Dispatcher queue length: room for every sensor of a busy frame and the next.
const QUEUE_CAPACITY: usize = 256;
/// How long the first frame a node sees waits for states: a node that joins a running
/// lockstep gets the current tick (TRANSIENT_LOCAL) but not the states written before it.
const JOIN_WAIT: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct SensorNodeConfig {
    pub node: NodeArgs,
    /// The node's name; it runs as DDS node `sensor/<name>` and assignments name it.
    pub name: String,
    pub role: SensorNodeRole,
    pub capacity: f64,
    /// Publishing threads (default: available cores).
    pub workers: Option<usize>,
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

/// Where a sensor's samples go.
enum Output {
    Imu(Arc<Publisher<Imu>>),
    Gnss(Arc<Publisher<GnssFix>>),
    Odometry(Arc<Publisher<Odometry>>),
    Radar(Arc<Publisher<RadarScan>>),
    Lidar(Arc<Publisher<PointCloud>>),
    Camera {
        rgb: Arc<Publisher<Image>>,
        depth: Option<Arc<Publisher<Image>>>,
        semantic: Option<Arc<Publisher<Image>>>,
    },
}

impl Output {
    fn create(node: &Node, agent: &str, spec: &SensorSpec) -> Result<Option<Output>> {
        use convoy_core::scenario::SensorKind::*;
        let extra = |on: bool, output: &str| -> Result<Option<Arc<Publisher<Image>>>> {
            if !on {
                return Ok(None);
            }
            let topic = topics::sensor_output(agent, &spec.id, output);
            Ok(Some(Arc::new(node.publisher(&topic)?)))
        };
        let id = spec.id.as_str();
        Ok(Some(match spec.kind {
            Imu => Output::Imu(Arc::new(node.publisher(&topics::sensor(agent, id))?)),
            Gnss => Output::Gnss(Arc::new(node.publisher(&topics::sensor(agent, id))?)),
            Odometry => Output::Odometry(Arc::new(node.publisher(&topics::sensor(agent, id))?)),
            Radar => Output::Radar(Arc::new(node.publisher(&topics::sensor(agent, id))?)),
            Lidar => Output::Lidar(Arc::new(node.publisher(&topics::sensor(agent, id))?)),
            Camera => Output::Camera {
                rgb: Arc::new(node.publisher(&topics::sensor(agent, id))?),
                depth: extra(spec.depth, "depth")?,
                semantic: extra(spec.semantic, "semantic")?,
            },
        }))
    }

    /// The publish job for `sample` (None when the kinds do not match, a bug).
    fn job(&self, sample: Sample) -> Option<crate::dispatcher::Job> {
        fn write<M: convoy_core::messages::Message>(
            publisher: &Arc<Publisher<M>>,
            message: M,
        ) -> crate::dispatcher::Job {
            let publisher = Arc::clone(publisher);
            Box::new(move || match publisher.write(message) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!("{e}");
                    false
                }
            })
        }
        Some(match (self, sample) {
            (Output::Imu(p), Sample::Imu(m)) => write(p, m),
            (Output::Gnss(p), Sample::Gnss(m)) => write(p, m),
            (Output::Odometry(p), Sample::Odometry(m)) => write(p, m),
            (Output::Radar(p), Sample::Radar(m)) => write(p, m),
            (Output::Lidar(p), Sample::Lidar(m)) => write(p, m),
            (
                Output::Camera {
                    rgb,
                    depth,
                    semantic,
                },
                Sample::Camera(pending),
            ) => {
                let (rgb, depth, semantic) = (Arc::clone(rgb), depth.clone(), semantic.clone());
                // The job (on a publishing thread) waits for the read-back, so the node goes
                // on rendering the next camera or frame meanwhile; it writes every output of
                // the frame, colour first, even when one fails.
                Box::new(move || {
                    let frame = match pending.finish() {
                        Ok(frame) => frame,
                        Err(e) => {
                            tracing::warn!("camera frame lost: {e}");
                            return false;
                        }
                    };
                    let mut ok = write(&rgb, frame.rgb)();
                    if let (Some(p), Some(m)) = (&depth, frame.depth) {
                        ok &= write(p, m)();
                    }
                    if let (Some(p), Some(m)) = (&semantic, frame.semantic) {
                        ok &= write(p, m)();
                    }
                    ok
                })
            }
            _ => return None,
        })
    }
}

/// A sensor this node runs.
struct Active {
    spec: SensorSpec,
    epoch: u32,
    output: Option<Output>,
    publisher: PublisherId,
    seq: u64,
}

/// A frame being worked on: due sensors waiting for states, then jobs in flight.
struct Work {
    tick: Tick,
    sensors: Vec<SensorKey>,
    started: Instant,
    /// Jobs handed to the dispatcher whose on_done has not come back.
    in_flight: usize,
    dispatched: bool,
    /// The first frame this node sees (its states may predate the node).
    first_seen: bool,
}

impl Work {
    fn new(tick: Tick, sensors: Vec<SensorKey>, first_seen: bool) -> Work {
        Work {
            tick,
            sensors,
            started: Instant::now(),
            in_flight: 0,
            dispatched: false,
            first_seen,
        }
    }
}

struct SensorNode {
    name: String,
    scenario: Scenario,
    specs: BTreeMap<SensorKey, SensorSpec>,
    node: Node,
    clock: Subscriber<Tick>,
    clock_token: ReaderToken,
    assignments: Subscriber<SensorAssignment>,
    assignments_token: ReaderToken,
    states: Vec<(String, Subscriber<AgentState>, ReaderToken)>,
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
    sync: bool,
    counters: Counters,
    stop: Arc<AtomicBool>,
    /// What lidar rays hit (map and agent boxes), when the scenario has a lidar.
    lidar_scene: Option<RefCell<LidarScene>>,
    /// The camera renderer, made when this node is first given a camera.
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
    let mut waitset = WaitSet::new().context("cannot create a wait set")?;
    let (_, waker) = waitset.waker().context("cannot create a wake-up")?;
    let mut clock = node.subscriber(&topics::clock())?;
    let clock_token = clock.attach(&mut waitset)?;
    let mut assignments = node.subscriber(&topics::assignments())?;
    let assignments_token = assignments.attach(&mut waitset)?;
    let mut states = Vec::new();
    for agent in scenario.agent_ids() {
        let mut sub = node.subscriber(&topics::agent_state(&agent))?;
        let token = sub.attach(&mut waitset)?;
        states.push((agent, sub, token));
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
        clock_token,
        assignments,
        assignments_token,
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
        counters: Counters::default(),
        stop: Arc::clone(&stop),
        lidar_scene: None,
        camera: None,
        published_any: false,
    };
    if s.specs.values().any(|spec| spec.kind == SensorKind::Lidar) {
        s.lidar_scene = Some(RefCell::new(LidarScene::new(&s.scenario)));
    }
    println!(
        "sensor node {} ({:?}, capacity {}) ready with {} publishing threads",
        config.name, config.role, config.capacity, workers
    );
    while !stop.load(Ordering::Relaxed) {
        s.waitset.wait(HOUSEKEEPING);
        s.service()?;
        s.advance()?;
        s.report()?;
    }
    // The final counters, for whoever watches NodeStatus (a short run may end between beats).
    s.set_counters();
    s.beacon.final_beat(Duration::from_millis(500));
    Ok(())
}

impl SensorNode {
    /// Takes everything that arrived.
    fn service(&mut self) -> Result<()> {
        if self.waitset.ready(self.assignments_token) {
            let changed: Vec<SensorAssignment> = self
                .assignments
                .take(1024)
                .into_iter()
                .map(|a| a.value)
                .collect();
            if !changed.is_empty() {
                self.apply_assignments(changed)?;
            }
        }
        for (agent, sub, token) in self.states.iter_mut() {
            if !self.waitset.ready(*token) {
                continue;
            }
            for s in sub.take(256) {
                if s.value.agent_id == *agent {
                    self.history
                        .entry(agent.clone())
                        .or_default()
                        .insert(s.value.frame, s.value);
                }
            }
        }
        if self.waitset.ready(self.clock_token) {
            for tick in self.clock.take(16) {
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
                let started = self.last_frame.as_ref().map(|(t, _)| t.frame);
                let queued = self.pending.back().map(|t| t.frame);
                if started.max(queued).is_some_and(|f| tick.frame <= f) {
                    continue;
                }
                self.pending.push_back(tick);
            }
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

    /// Records new assignments, starts and stops sensors, and catches up the last frame for
    /// sensors that arrived after its tick.
    fn apply_assignments(&mut self, changed: Vec<SensorAssignment>) -> Result<()> {
        let mut added = Vec::new();
        for a in changed {
            let key = SensorKey {
                agent_id: a.agent_id.clone(),
                sensor_id: a.sensor_id.clone(),
            };
            if self.book.get(&key).is_some_and(|old| old.epoch > a.epoch) {
                continue; // an older epoch arriving late
            }
            let mine = a.node_id == self.name;
            let Some(spec) = self.specs.get(&key).cloned() else {
                tracing::warn!(
                    "assignment for {}/{}, which the scenario does not have: ignored",
                    a.agent_id,
                    a.sensor_id
                );
                continue;
            };
            self.book.insert(key.clone(), a.clone());
            if mine && !self.active.contains_key(&key) {
                let topic = topics::sensor_name(&a.agent_id, &a.sensor_id);
                if spec.kind == SensorKind::Camera && self.camera.is_none() {
                    // No adapter is a configuration error: say what to install and stop.
                    let renderer = Renderer::new()?;
                    println!("camera renderer: {}", renderer.adapter);
                    self.camera = Some(RefCell::new(CameraRig {
                        renderer,
                        scene: CameraScene::new(&self.scenario),
                    }));
                }
                let output = Output::create(&self.node, &a.agent_id, &spec)?;
                if output.is_none() {
                    tracing::warn!(
                        "{}/{}: {:?} sensors are not made by this version; it stays silent",
                        a.agent_id,
                        a.sensor_id,
                        spec.kind
                    );
                }
                println!(
                    "running {}/{} ({:?} at {} Hz, epoch {}) on {topic}",
                    a.agent_id, a.sensor_id, spec.kind, spec.rate, a.epoch
                );
                self.active.insert(
                    key.clone(),
                    Active {
                        spec,
                        epoch: a.epoch,
                        output,
                        publisher: self.dispatcher.register_publisher(),
                        seq: 0,
                    },
                );
                added.push(key);
            } else if mine {
                if let Some(active) = self.active.get_mut(&key) {
                    active.epoch = a.epoch;
                }
            } else if self.active.remove(&key).is_some() {
                println!(
                    "{}/{} moved to {} (epoch {})",
                    a.agent_id, a.sensor_id, a.node_id, a.epoch
                );
            }
        }
        self.beacon.set_counter("sensors", self.active.len() as u64);
        let load = self.active.values().map(|a| a.spec.load).sum();
        self.beacon.set_load(load);
        self.beacon.beat_now();
        // Catch up: sensors that were due in the frame already started run for it now.
        if let Some((tick, due)) = self.last_frame.clone() {
            let late: Vec<SensorKey> = added.into_iter().filter(|k| due.contains(k)).collect();
            if !late.is_empty() && self.work.is_none() && self.pending.is_empty() {
                self.work = Some(Work::new(tick, late, false));
            }
        }
        Ok(())
    }

    /// Moves the current frame on: start the next tick, make samples once the states are
    /// here, acknowledge once every job is back.
    fn advance(&mut self) -> Result<()> {
        loop {
            if self.work.is_none() {
                if self.pending.len() > 1 {
                    // Free-running, a node that fell behind skips to the newest frame. In
                    // lockstep the coordinator only ticks N+1 once N is complete, so older
                    // pending ticks were complete without this node: a node that just joined
                    // and got a writer's backlog.
                    let skip = self.pending.len() - 1;
                    self.counters.frames_skipped += skip as u64;
                    self.pending.drain(..skip);
                }
                let Some(tick) = self.pending.pop_front() else {
                    return Ok(());
                };
                self.start(tick)?;
                continue;
            }
            let ready = self.dispatch()?;
            if !ready {
                return Ok(());
            }
            let Some(work) = self.work.as_ref() else {
                return Ok(());
            };
            if work.in_flight > 0 {
                return Ok(());
            }
            let frame = work.tick.frame;
            self.work = None;
            if self.sync {
                self.ack(frame)?;
            }
        }
    }

    /// Advances every schedule to `tick` and makes the frame's work (if a sensor of this node
    /// is due).
    fn start(&mut self, tick: Tick) -> Result<()> {
        let due: BTreeSet<SensorKey> = self
            .schedules
            .iter_mut()
            .filter_map(|(k, s)| s.due(tick.frame, tick.sim_time_ns).then(|| k.clone()))
            .collect();
        let mine: Vec<SensorKey> = due
            .iter()
            .filter(|k| self.active.contains_key(*k))
            .cloned()
            .collect();
        let first_seen = self.last_frame.is_none();
        self.last_frame = Some((tick.clone(), due));
        // States older than the previous frame are never needed again.
        let keep_from = tick.frame.saturating_sub(1);
        for by_frame in self.history.values_mut() {
            *by_frame = by_frame.split_off(&keep_from);
        }
        if !mine.is_empty() {
            self.work = Some(Work::new(tick, mine, first_seen));
        }
        Ok(())
    }

    /// The agents whose frame states the current work needs.
    fn needed_agents(&self, work: &Work) -> BTreeSet<String> {
        let mut need = BTreeSet::new();
        for key in &work.sensors {
            let Some(active) = self.active.get(key) else {
                continue;
            };
            if !work.tick.agents.contains(&key.agent_id) {
                continue; // the agent left the run: nothing to sense
            }
            need.insert(key.agent_id.clone());
            if sampling::needs_others(active.spec.kind) {
                need.extend(work.tick.agents.iter().cloned());
            }
        }
        need
    }

    /// Makes and queues the samples of the current work once its states are here (or the
    /// wait ran out). True once dispatched.
    fn dispatch(&mut self) -> Result<bool> {
        let Some(work) = self.work.as_ref() else {
            return Ok(true);
        };
        if work.dispatched {
            return Ok(true);
        }
        let frame = work.tick.frame;
        let need = self.needed_agents(work);
        let missing: Vec<&String> = need
            .iter()
            .filter(|a| self.history.get(*a).is_none_or(|f| !f.contains_key(&frame)))
            .collect();
        // Lockstep: a frame's states are on their way (the agents wrote them before their
        // FrameDone), so wait for them; only an agent that died (its lease) or states written
        // before this node joined (the first frame it sees) make it go on without. Free
        // running: a frame period at most, then the newest states there are.
        let limit = if !self.sync {
            Duration::from_secs_f64(
                self.scenario.scenario.dt / self.scenario.scenario.real_time_factor,
            )
        } else if work.first_seen {
            JOIN_WAIT
        } else {
            Duration::from_secs_f64(self.scenario.scenario.lease)
        };
        if !missing.is_empty() {
            if work.started.elapsed() < limit {
                return Ok(false);
            }
            if self.sync {
                tracing::warn!(
                    "frame {frame}: no state of {missing:?} after {limit:?}; making this frame's \
                     samples from what is here"
                );
            }
            self.counters.stale_states += 1;
        }
        let Some(mut work) = self.work.take() else {
            return Ok(true);
        };
        let mut in_flight = 0;
        for key in &work.sensors {
            let Some(sample) = self.sample(&work.tick, key) else {
                continue;
            };
            let Some(active) = self.active.get_mut(key) else {
                continue;
            };
            let Some(job) = active.output.as_ref().and_then(|o| o.job(sample)) else {
                continue;
            };
            active.seq += 1;
            self.counters.samples_made += 1;
            let tx = self.completions_tx.clone();
            let waker = Arc::clone(&self.waker);
            let frame = work.tick.frame;
            let on_done = Box::new(move |ok: bool| {
                let _ = tx.send((frame, ok));
                let _ = waker.wake();
            });
            // A job dropped at once has already reported through on_done.
            self.dispatcher.try_queue(active.publisher, job, on_done);
            in_flight += 1;
        }
        work.in_flight += in_flight;
        work.dispatched = true;
        self.work = Some(work);
        // Completions that raced in before in_flight was counted.
        self.take_completions();
        Ok(true)
    }

    /// The sample of `key` for `tick`, from the newest states at or before the frame.
    fn sample(&self, tick: &Tick, key: &SensorKey) -> Option<Sample> {
        let active = self.active.get(key)?;
        let latest = |agent: &str| -> Option<&AgentState> {
            self.history
                .get(agent)?
                .range(..=tick.frame)
                .next_back()
                .map(|(_, s)| s)
        };
        let own = latest(&key.agent_id)?;
        let previous = self
            .history
            .get(&key.agent_id)
            .and_then(|f| f.get(&own.frame.checked_sub(1)?));
        let others: Vec<AgentState> = if sampling::needs_others(active.spec.kind) {
            tick.agents
                .iter()
                .filter(|a| **a != key.agent_id)
                .filter_map(|a| latest(a).cloned())
                .collect()
        } else {
            Vec::new()
        };
        sampling::make_sample(
            &self.scenario,
            &key.agent_id,
            &active.spec,
            &FrameInput {
                tick,
                own,
                previous,
                others: &others,
                scene: self.lidar_scene.as_ref(),
                camera: self.camera.as_ref(),
            },
            active.seq,
        )
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
        }
        self.acked = Some(frame);
        Ok(())
    }

    /// NodeStatus counters: what ran and every reason a sample was dropped.
    fn report(&mut self) -> Result<()> {
        if !self.beacon.due() {
            return Ok(());
        }
        self.set_counters();
        self.beacon.beat()?;
        Ok(())
    }

    /// Copies the dispatcher's and the node's counters into the next status beat.
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
    }
}
