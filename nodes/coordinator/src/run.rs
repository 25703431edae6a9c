//! The coordinator's loop: registry, clock (lockstep barrier or wall-clock pace), relay of
//! states, world commands, state log and progress.
//!
//! Frame 0 is a handshake: Tick 0 is repeated every [`HANDSHAKE_PERIOD`] until every agent
//! answered FrameDone 0 (an agent does so once it holds every peer's frame-0 state), because
//! discovery matching says nothing about when a first sample will get through.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use convoy_core::dds::{Publisher, ReaderToken, Subscriber, WaitSet};
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

/// How often Tick 0 is repeated until every agent answered it.
const HANDSHAKE_PERIOD: Duration = Duration::from_millis(20);
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
}

/// What a finished run measured.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub frames: u64,
    pub wall: Duration,
    /// Tick written -> barrier complete, per frame, in microseconds (sync mode).
    pub barrier_us: Vec<f64>,
    pub members_left: Vec<String>,
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
    states: Vec<(String, Subscriber<AgentState>, ReaderToken)>,
    beacon: StatusBeacon,
    waitset: WaitSet,
    done_token: ReaderToken,
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
    state_log: Option<std::io::BufWriter<std::fs::File>>,
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
}

pub fn run(config: &CoordinatorConfig, stop: Arc<AtomicBool>) -> Result<RunSummary> {
    let NodeContext {
        scenario,
        node,
        beacon,
        ..
    } = NodeContext::start(&config.node, NodeId::Coordinator)?;
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
        done_token: ReaderToken::default(),
    };
    io.done_token = io.done.attach(&mut io.waitset)?;
    // Registry and world requests are read every round (housekeeping), not on readiness.
    io.nodes.attach(&mut io.waitset)?;
    io.requests.attach(&mut io.waitset)?;
    for id in scenario.agent_ids() {
        let mut sub = node.subscriber(&topics::agent_state(&id))?;
        let token = sub.attach(&mut io.waitset)?;
        io.states.push((id, sub, token));
    }
    let state_log = match &config.state_log {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create state log {}", path.display()))?,
        )),
        None => None,
    };
    let sensors = SensorBook::new(&scenario);
    let mut c = Coordinator {
        sensors,
        sensor_nodes_seen: Default::default(),
        sensors_placed: false,
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
    c.startup(config.startup_timeout, config.sensor_nodes)?;
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

    /// Waits for every agent (and the sensor nodes) to register, places the sensors, then
    /// repeats Tick 0 until all answered.
    fn startup(&mut self, timeout: Duration, sensor_nodes: Option<usize>) -> Result<()> {
        let started = Instant::now();
        let mut announced = Instant::now() - Duration::from_secs(10);
        loop {
            self.service(HOUSEKEEPING)?;
            let missing: Vec<String> = self
                .members
                .iter()
                .filter(|a| !self.registry.contains(&NodeId::agent(*a).to_string()))
                .cloned()
                .collect();
            if missing.is_empty() {
                break;
            }
            if self.stopped() {
                bail!("stopped while waiting for agents");
            }
            if started.elapsed() > timeout {
                bail!(
                    "agents never registered within {timeout:?}: {} (are they running, on the \
                     same domain id?)",
                    missing.join(", ")
                );
            }
            if announced.elapsed() > Duration::from_secs(1) {
                announced = Instant::now();
                println!("waiting for agents: {}", missing.join(", "));
            }
        }
        println!("all {} agents registered", self.members.len());
        self.start_sensors(started, timeout, sensor_nodes)?;
        let mut barrier = Barrier::new(0, &self.members, self.relay(), Instant::now());
        if self.mode == ClockMode::Sync {
            let owing = self.sensors.frame_due(0, 0);
            barrier.owe(owing.iter().map(|n| NodeId::sensor(n).to_string()));
        }
        let mut last_tick = Instant::now() - HANDSHAKE_PERIOD;
        while !barrier.complete() {
            if last_tick.elapsed() >= HANDSHAKE_PERIOD {
                last_tick = Instant::now();
                self.write_tick(self.tick(0))?;
            }
            self.service_barrier(&mut barrier, HANDSHAKE_PERIOD.min(HOUSEKEEPING))?;
            if self.stopped() {
                bail!("stopped during the frame-0 handshake");
            }
            if started.elapsed() > timeout {
                bail!(
                    "frame 0 handshake incomplete after {timeout:?}: still waiting for {}",
                    barrier.owed().join(", ")
                );
            }
        }
        if self.mode == ClockMode::Sync {
            let acked = sensor_names(barrier.acked());
            self.sensors.frame_complete(0, &acked);
        }
        println!("frame 0: every agent holds every peer's initial state");
        Ok(())
    }

    /// Bridges that hold each frame for their stack's commands (NodeStatus counter
    /// `hold_for_stack` = 1): a lockstep frame also waits for their FrameDone.
    fn holding_bridges(&self) -> Vec<String> {
        self.registry
            .with_role(NodeRole::Bridge)
            .filter(|e| {
                e.status
                    .counters
                    .iter()
                    .any(|c| c.name == "hold_for_stack" && c.value > 0)
            })
            .map(|e| e.status.node_id.clone())
            .collect()
    }

    /// The live sensor nodes, in the assignment's terms.
    fn live_sensor_nodes(&self) -> Vec<crate::assignment::SensorNode> {
        self.registry
            .with_role(NodeRole::SensorMain)
            .chain(self.registry.with_role(NodeRole::SensorClient))
            .filter_map(|e| as_sensor_node(&e.status))
            .collect()
    }

    /// Startup for sensors: wait for `wanted` sensor nodes (default one when the scenario has
    /// sensors), place every sensor, publish the assignments, and wait until each node says
    /// (NodeStatus counter `sensors`) it holds all of its own, so frame 0 already has them.
    fn start_sensors(
        &mut self,
        started: Instant,
        timeout: Duration,
        wanted: Option<usize>,
    ) -> Result<()> {
        if self.sensors.is_empty() {
            self.sensors_placed = true;
            return Ok(());
        }
        let wanted = wanted.unwrap_or(1);
        let mut announced = Instant::now();
        while self.live_sensor_nodes().len() < wanted {
            if self.stopped() {
                bail!("stopped while waiting for sensor nodes");
            }
            if started.elapsed() > timeout {
                println!(
                    "warning: {} of {wanted} sensor nodes registered within {timeout:?}; going on \
                     with those",
                    self.live_sensor_nodes().len()
                );
                break;
            }
            if announced.elapsed() > Duration::from_secs(1) {
                announced = Instant::now();
                println!(
                    "waiting for sensor nodes: {} of {wanted} registered",
                    self.live_sensor_nodes().len()
                );
            }
            self.service(HOUSEKEEPING)?;
        }
        self.sensors_placed = true;
        self.place_sensors("start")?;
        // Each node confirms it holds its assignments before frame 0.
        let mut announced = Instant::now();
        loop {
            let expected = self.sensors.counts();
            let missing: Vec<String> = expected
                .iter()
                .filter(|(name, count)| {
                    let held = self
                        .registry
                        .status(&NodeId::sensor(name.as_str()).to_string())
                        .and_then(|s| s.counters.iter().find(|c| c.name == "sensors"))
                        .map(|c| c.value);
                    held != Some(**count)
                })
                .map(|(name, _)| name.clone())
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if self.stopped() {
                bail!("stopped while sensor nodes took their assignments");
            }
            if started.elapsed() > timeout {
                bail!(
                    "sensor nodes did not confirm their assignments within {timeout:?}: {}",
                    missing.join(", ")
                );
            }
            if announced.elapsed() > Duration::from_secs(1) {
                announced = Instant::now();
                println!(
                    "waiting for sensor nodes to take their sensors: {}",
                    missing.join(", ")
                );
            }
            self.service(HOUSEKEEPING)?;
        }
    }

    /// Places the sensors no live node runs and publishes the new assignments.
    fn place_sensors(&mut self, why: &str) -> Result<()> {
        let nodes = self.live_sensor_nodes();
        let (changed, warnings) = self.sensors.place(&nodes);
        for warning in warnings {
            println!("warning: {warning}");
        }
        for a in changed {
            println!(
                "sensor {}/{} -> {} (load {}, epoch {}, {why}, frame {})",
                a.agent_id, a.sensor_id, a.node_id, a.load, a.epoch, self.frame
            );
            self.io
                .assignments
                .write_patiently(a, &self.stop)
                .context("cannot publish a sensor assignment")?;
        }
        let unplaced = self.sensors.unplaced();
        if !unplaced.is_empty() {
            println!(
                "warning: no sensor node runs {}",
                unplaced
                    .iter()
                    .map(sensor_name)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        Ok(())
    }

    fn tick(&self, frame: u64) -> Tick {
        let dt_ns = self.scenario.dt_ns();
        let states = if self.relay() && frame > 0 {
            self.book
                .get(&(frame - 1))
                .map(|by_agent| {
                    self.members
                        .iter()
                        .filter_map(|a| by_agent.get(a).cloned())
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        Tick {
            frame,
            sim_time_ns: frame as i64 * dt_ns,
            dt_ns,
            paused: self.paused,
            agents: self.members.clone(),
            states,
        }
    }

    fn last_frame(&self, config: &CoordinatorConfig) -> u64 {
        let by_duration = config
            .duration
            .map(|d| (d / self.scenario.scenario.dt).round() as u64);
        match (config.frames, by_duration) {
            (Some(f), Some(d)) => f.min(d),
            (Some(f), None) => f,
            (None, Some(d)) => d,
            (None, None) => u64::MAX,
        }
    }

    fn run_frames(&mut self, config: &CoordinatorConfig) -> Result<RunSummary> {
        let last = self.last_frame(config);
        let started = Instant::now();
        let mut barrier_us = Vec::new();
        let mut last_progress = Instant::now();
        let mut progress_frame = 0;
        let dt = self.scenario.scenario.dt;
        let rtf = self.scenario.scenario.real_time_factor;
        let mut next_wall = Instant::now();
        let mut sim_time_ns: i64 = 0;
        let mut last_tick_wall = Instant::now();
        while self.frame < last && !self.stopped() {
            if self.paused {
                self.service(HOUSEKEEPING)?;
                next_wall = Instant::now();
                continue;
            }
            let frame = self.frame + 1;
            let mut tick = self.tick(frame);
            match self.mode {
                ClockMode::Sync => {
                    let owing = self.sensors.frame_due(frame, tick.sim_time_ns);
                    let written = Instant::now();
                    self.write_tick(tick.clone())?;
                    let mut barrier = Barrier::new(frame, &self.members, self.relay(), written);
                    barrier.owe(owing.iter().map(|n| NodeId::sensor(n).to_string()));
                    barrier.owe(self.holding_bridges());
                    while !barrier.complete() && !self.stopped() {
                        self.service_barrier(&mut barrier, HOUSEKEEPING)?;
                        self.ask_again_if_stalled(&mut barrier, &tick);
                    }
                    barrier_us.push(written.elapsed().as_secs_f64() * 1e6);
                    let acked = sensor_names(barrier.acked());
                    for r in self.sensors.frame_complete(frame, &acked) {
                        println!(
                            "sensor {} resumed on {} at frame {}: gap of {} frames, {} samples missed",
                            sensor_name(&r.key),
                            r.node,
                            r.frame,
                            r.gap_frames,
                            r.missed_samples
                        );
                    }
                }
                ClockMode::Async => {
                    // Wall-clock pace: frame N is due dt / rtf after frame N-1.
                    while Instant::now() < next_wall && !self.stopped() {
                        let left = next_wall.saturating_duration_since(Instant::now());
                        self.service(left.min(HOUSEKEEPING))?;
                    }
                    let now = Instant::now();
                    if self.scenario.scenario.step == StepMode::Variable {
                        let wall = now.saturating_duration_since(last_tick_wall).as_secs_f64();
                        tick.dt_ns = (wall * rtf * 1e9).round().max(1.0) as i64;
                    }
                    last_tick_wall = now;
                    sim_time_ns += tick.dt_ns;
                    tick.sim_time_ns = sim_time_ns;
                    // Keeps the schedules in step; nodes do not acknowledge in async mode.
                    self.sensors.frame_due(frame, sim_time_ns);
                    self.write_tick(tick)?;
                    next_wall += Duration::from_secs_f64(dt / rtf);
                    self.service(Duration::ZERO)?;
                }
            }
            self.frame = frame;
            // Relay needs frame N's states for Tick N+1 only.
            self.book = self.book.split_off(&frame);
            if config.progress && last_progress.elapsed() >= Duration::from_secs(1) {
                let wall = last_progress.elapsed().as_secs_f64();
                let frames = frame - progress_frame;
                println!(
                    "frame {frame}  sim {:.2} s  {:.0} frames/s  rtf {:.2}x  agents {}",
                    frame as f64 * dt,
                    frames as f64 / wall,
                    frames as f64 * dt / wall,
                    self.members.len()
                );
                last_progress = Instant::now();
                progress_frame = frame;
            }
        }
        Ok(RunSummary {
            frames: self.frame,
            wall: started.elapsed(),
            barrier_us,
            members_left: self.left.clone(),
        })
    }

    /// A frame that waited past its barrier timeout while the nodes it waits for are alive
    /// (the lease rule removes dead ones) lost a sample on the way: the Tick, a FrameDone or
    /// a state. Sends the same Tick again, once per timeout; nodes that finished the frame
    /// write their answer again (an agent its FrameDone and the state others wait for), and
    /// the run goes on with the same values, so determinism holds.
    fn ask_again_if_stalled(&mut self, barrier: &mut Barrier, tick: &Tick) {
        let timeout = Duration::from_secs_f64(self.scenario.scenario.barrier_timeout);
        if barrier.complete() || !barrier.ask_again_due(Instant::now(), timeout) {
            return;
        }
        println!(
            "barrier: frame {}: still waiting for {} after {:.1} s; sending tick {} again",
            tick.frame,
            barrier.waiting_for(),
            barrier.elapsed(Instant::now()).as_secs_f64(),
            tick.frame
        );
        // One attempt: a clock reader that does not acknowledge makes it fail after the
        // clock QoS's blocking time, and the next timeout tries again.
        if let Err(e) = self.io.clock.write(tick.clone()) {
            println!(
                "barrier: frame {}: cannot send the tick again: {e}",
                tick.frame
            );
        }
    }

    /// Writes a Tick, waiting out a full reliable history. A reader that never acknowledges
    /// (a node that died, until DDS discovery drops it after its participant lease) makes
    /// rustdds refuse the write; the loop keeps serving leases and commands meanwhile, so the
    /// run goes on as soon as the dead reader is gone.
    fn write_tick(&mut self, tick: Tick) -> Result<()> {
        let mut reported = false;
        loop {
            match self.io.clock.write(tick.clone()) {
                Ok(()) => return Ok(()),
                Err(convoy_core::dds::PublishError::WouldBlock { .. }) => {
                    if !reported {
                        reported = true;
                        println!(
                            "frame {}: a clock reader does not acknowledge (a node that died?); \
                             retrying until discovery drops it",
                            tick.frame
                        );
                    }
                    if self.stopped() {
                        bail!("stopped while frame {} could not be published", tick.frame);
                    }
                    self.service(HOUSEKEEPING)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Drains the last frame's states into the log (bounded), then flushes it.
    fn finish(&mut self) -> Result<()> {
        if self.state_log.is_some() {
            let until = Instant::now() + Duration::from_secs(3);
            while Instant::now() < until {
                let have = self
                    .members
                    .iter()
                    .all(|a| self.latest.get(a).is_some_and(|s| s.frame >= self.frame));
                if have {
                    break;
                }
                self.service(HOUSEKEEPING)?;
            }
        }
        if let Some(log) = self.state_log.as_mut() {
            log.flush().context("cannot write the state log")?;
        }
        Ok(())
    }

    /// One round of waiting and handling everything that arrived, feeding `barrier`.
    fn service_barrier(&mut self, barrier: &mut Barrier, wait: Duration) -> Result<()> {
        self.io.waitset.wait(wait);
        if self.io.waitset.ready(self.io.done_token) {
            for done in self.io.done.take(256) {
                barrier.frame_done(&done.value.node_id, done.value.frame);
            }
        }
        let arrived = self.drain_states()?;
        for (agent, frame) in arrived {
            barrier.state(&agent, frame);
        }
        self.housekeeping(Some(barrier))
    }

    /// One round of waiting and handling everything but the barrier.
    fn service(&mut self, wait: Duration) -> Result<()> {
        if !wait.is_zero() {
            self.io.waitset.wait(wait);
        }
        // FrameDone outside a barrier (startup, async) carries nothing to act on.
        let _ = self.io.done.take(256);
        self.drain_states()?;
        self.housekeeping(None)
    }

    fn drain_states(&mut self) -> Result<Vec<(String, u64)>> {
        let mut arrived = Vec::new();
        let relay = self.relay();
        for (agent, sub, token) in self.io.states.iter_mut() {
            if !self.io.waitset.ready(*token) {
                continue;
            }
            for s in sub.take(256) {
                let state = s.value;
                if state.agent_id != *agent {
                    tracing::warn!("state of '{}' on {}'s topic ignored", state.agent_id, agent);
                    continue;
                }
                if let Some(log) = self.state_log.as_mut() {
                    writeln!(log, "{}", state_log_line(&state))
                        .context("cannot write the state log")?;
                }
                arrived.push((agent.clone(), state.frame));
                if relay {
                    self.book
                        .entry(state.frame)
                        .or_default()
                        .insert(agent.clone(), state.clone());
                }
                if self
                    .latest
                    .get(agent)
                    .is_none_or(|l| l.frame <= state.frame)
                {
                    self.latest.insert(agent.clone(), state);
                }
            }
        }
        Ok(arrived)
    }

    fn housekeeping(&mut self, mut barrier: Option<&mut Barrier>) -> Result<()> {
        let now = Instant::now();
        // Registry, leases and commands change slowly: look at them every few milliseconds,
        // not on every sample of the hot path.
        if now.saturating_duration_since(self.last_housekeeping) < HOUSEKEEPING {
            return Ok(());
        }
        self.last_housekeeping = now;
        let mut sensor_joined = false;
        for status in self.io.nodes.take(256) {
            let status = status.value;
            if self.registry.seen(status.clone(), now) {
                tracing::info!("node {} ({:?}) registered", status.node_id, status.role);
                if let Some(n) = as_sensor_node(&status) {
                    if self.sensor_nodes_seen.insert(n.id.clone()) {
                        println!(
                            "sensor node {} registered ({:?}, capacity {})",
                            n.id, n.role, n.capacity
                        );
                    }
                    sensor_joined = true;
                }
            }
        }
        let lease = Duration::from_secs_f64(self.scenario.scenario.lease);
        let mut sensor_lost = false;
        for gone in self.registry.expire(now, lease) {
            let id = gone.status.node_id;
            let node = NodeId::parse_node(&id).ok();
            if let Some(name) = node.as_ref().and_then(NodeId::as_sensor) {
                self.sensor_nodes_seen.remove(name);
                if let Some(b) = barrier.as_deref_mut() {
                    b.remove_node(&id);
                }
                let moves = self.sensors.node_lost(name);
                println!(
                    "sensor node {name} left at frame {} (no status for {lease:?}); {} sensors to \
                     move",
                    self.frame,
                    moves.len()
                );
                for m in moves {
                    let last = m
                        .last_served
                        .map(|f| format!("last sample at frame {f}"))
                        .unwrap_or_else(|| "no sample acknowledged".into());
                    println!("sensor {} lost with {name} ({last})", sensor_name(&m.key));
                }
                sensor_lost = true;
                continue;
            }
            let Some(agent) = node.as_ref().and_then(NodeId::as_agent) else {
                // A bridge holding frames for its stack owes nothing any more.
                if let Some(b) = barrier.as_deref_mut() {
                    b.remove_node(&id);
                }
                println!("node {id} left (no status for {lease:?})");
                continue;
            };
            if let Some(pos) = self.members.iter().position(|m| m == agent) {
                self.members.remove(pos);
                self.left.push(agent.to_string());
                if let Some(b) = barrier.as_deref_mut() {
                    b.remove_member(agent);
                }
                println!(
                    "agent {agent} left the run at frame {} (no status for {lease:?}); {} agents go on",
                    self.frame,
                    self.members.len()
                );
            }
        }
        if let Some(b) = barrier {
            let timeout = Duration::from_secs_f64(self.scenario.scenario.barrier_timeout);
            for late in b.newly_late(now, timeout) {
                println!(
                    "barrier: frame {}: {late} has not finished after {:.1} s (barrier_timeout {} s); waiting",
                    b.frame,
                    b.elapsed(now).as_secs_f64(),
                    self.scenario.scenario.barrier_timeout
                );
            }
        }
        if self.sensors_placed
            && (sensor_lost || (sensor_joined && !self.sensors.unplaced().is_empty()))
        {
            self.place_sensors(if sensor_lost {
                "failover"
            } else {
                "node joined"
            })?;
        }
        for request in self.io.requests.take(64) {
            self.answer(request.value)?;
        }
        self.io.beacon.beat()?;
        Ok(())
    }

    fn reply(&self, request: &WorldRequest, status: ReplyStatus, message: String) -> Result<()> {
        self.io.replies.write(WorldReply {
            request_id: request.request_id.clone(),
            status,
            message,
            states: Vec::new(),
        })?;
        Ok(())
    }

    fn answer(&mut self, request: WorldRequest) -> Result<()> {
        if let Err(reason) = check_command(&self.scenario, &request.command) {
            return self.reply(&request, ReplyStatus::Failed, reason);
        }
        let agent = request.command.agent_id.clone();
        match request.command.kind {
            WorldCommandKind::Pause => {
                self.paused = true;
                // Tell everyone the clock stands (same frame, paused).
                self.write_tick(self.tick(self.frame))?;
                self.reply(
                    &request,
                    ReplyStatus::Success,
                    format!("paused at frame {}", self.frame),
                )
            }
            WorldCommandKind::Resume => {
                self.paused = false;
                self.reply(
                    &request,
                    ReplyStatus::Success,
                    format!("resumed at frame {}", self.frame),
                )
            }
            WorldCommandKind::GetState => {
                let states: Vec<AgentState> = self
                    .latest
                    .values()
                    .filter(|s| agent.is_empty() || s.agent_id == agent)
                    .cloned()
                    .collect();
                self.io.replies.write(WorldReply {
                    request_id: request.request_id.clone(),
                    status: ReplyStatus::Success,
                    message: format!("{} states at frame {}", states.len(), self.frame),
                    states,
                })?;
                Ok(())
            }
            WorldCommandKind::Teleport | WorldCommandKind::SetControl => {
                if !self.members.contains(&agent) {
                    return self.reply(
                        &request,
                        ReplyStatus::Failed,
                        format!("agent '{agent}' is not running"),
                    );
                }
                self.reply(
                    &request,
                    ReplyStatus::Pending,
                    format!("forwarded to agent/{agent}"),
                )
            }
        }
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

/// One line of `--state-log`: what a user plots or compares between runs.
pub fn state_log_line(s: &AgentState) -> String {
    let v = |v: &convoy_core::messages::Vec3| [v.x, v.y, v.z];
    let q = s.pose.orientation;
    serde_json::json!({
        "frame": s.frame,
        "sim_time_ns": s.stamp_ns,
        "agent": s.agent_id,
        "position": v(&s.pose.position),
        "orientation": [q.x, q.y, q.z, q.w],
        "linear_velocity": v(&s.twist.linear),
        "angular_velocity": v(&s.twist.angular),
    })
    .to_string()
}
