//! The agent's DDS loop: follow the clock, exchange states, step the world, report.
//!
//! Step N (DESIGN.md, "Time, clock and determinism"): take the frame N-1 states of every other
//! member of Tick N (peer: from their state topics, waiting for any that are missing; relay:
//! from the Tick itself), move the zombies to them, apply this frame's control, step physics to
//! frame N, publish AgentState N, then FrameDone N (peer; in relay the coordinator reads the
//! state anyway, and it stands for FrameDone N: one datagram a frame less each way, and no
//! acknowledgement of it). Nothing here depends on arrival timing, so a lockstep run is
//! reproducible bit for bit.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use convoy_core::dds::{Publisher, ReaderToken, Subscriber, WaitSet};
use convoy_core::messages::{
    AgentState, Control, FrameDone, ReplyStatus, Tick, WorldCommandKind, WorldReply, WorldRequest,
};
use convoy_core::node::{NodeArgs, NodeContext, NodeId};
use convoy_core::scenario::{ClockMode, Exchange, Scenario};
use convoy_core::status::StatusBeacon;
use convoy_core::topics;
use convoy_core::world::check_command;

use crate::controller::{self, Controller};
use crate::world::AgentWorld;

/// The longest the loop blocks without looking at commands and the stop flag.
const HOUSEKEEPING: Duration = Duration::from_millis(50);

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub node: NodeArgs,
    pub agent_id: String,
    /// Test hook: before writing this frame's state and FrameDone, stall for `stall_for`.
    pub stall_at_frame: Option<u64>,
    pub stall_for: Duration,
    /// Test hook: skip writing this frame's state, as if it were lost for good on the way.
    pub drop_state_at_frame: Option<u64>,
}

struct Io {
    state: Publisher<AgentState>,
    done: Publisher<FrameDone>,
    replies: Publisher<WorldReply>,
    beacon: StatusBeacon,
    clock: Subscriber<Tick>,
    control: Subscriber<Control>,
    requests: Subscriber<WorldRequest>,
    /// Peer exchange: every other agent's state topic, in agent-id order.
    peers: Vec<(String, Subscriber<AgentState>, ReaderToken)>,
    waitset: WaitSet,
    clock_token: ReaderToken,
    control_token: ReaderToken,
    requests_token: ReaderToken,
}

struct Agent {
    id: String,
    scenario: Scenario,
    world: AgentWorld,
    controller: Option<Box<dyn Controller + Send>>,
    external: Control,
    /// Controls from a controller node (a bridge) not applied yet, by the frame they are for.
    pending_controls: BTreeMap<u64, Control>,
    io: Io,
    /// Other agents' states by agent and frame (peer exchange).
    peer_states: BTreeMap<String, BTreeMap<u64, AgentState>>,
    /// The newest Tick not yet acted on.
    pending: Option<Tick>,
    /// The last frame this agent stepped to (and reported done).
    done_frame: Option<u64>,
    /// The states this agent wrote for its last two frames, to write again when the
    /// coordinator asks (a repeated Tick; see [`Agent::answer_again`]).
    written: BTreeMap<u64, AgentState>,
    /// When the current pending tick started waiting for peer states.
    waiting_since: Option<Instant>,
    reported_wait: bool,
    config: AgentConfig,
    stop: Arc<AtomicBool>,
}

pub fn run(config: AgentConfig, stop: Arc<AtomicBool>) -> Result<()> {
    let NodeContext {
        scenario,
        node,
        beacon,
    } = NodeContext::start(&config.node, NodeId::agent(&config.agent_id))?;
    let spec = scenario
        .agent(&config.agent_id)
        .ok_or_else(|| {
            anyhow!(
                "{}: no agent '{}' (agents: {})",
                config.node.scenario.display(),
                config.agent_id,
                scenario.agent_ids().join(", ")
            )
        })?
        .clone();
    let id = config.agent_id.clone();
    let peer_mode =
        scenario.scenario.exchange == Exchange::Peer || scenario.scenario.mode == ClockMode::Async;
    let mut io = Io {
        state: node.publisher(&topics::agent_state(&id))?,
        done: node.publisher(&topics::frame_done())?,
        replies: node.publisher(&topics::world_reply())?,
        beacon,
        clock: node.subscriber(&topics::clock())?,
        control: node.subscriber(&topics::agent_control(&id))?,
        requests: node.subscriber(&topics::world_request())?,
        peers: Vec::new(),
        waitset: WaitSet::new().context("cannot create a wait set")?,
        clock_token: ReaderToken::default(),
        control_token: ReaderToken::default(),
        requests_token: ReaderToken::default(),
    };
    io.clock_token = io.clock.attach(&mut io.waitset)?;
    io.control_token = io.control.attach(&mut io.waitset)?;
    io.requests_token = io.requests.attach(&mut io.waitset)?;
    if peer_mode {
        for other in scenario.agent_ids().into_iter().filter(|a| *a != id) {
            let mut sub = node.subscriber(&topics::agent_state(&other))?;
            let token = sub.attach(&mut io.waitset)?;
            io.peers.push((other, sub, token));
        }
    }
    let world = AgentWorld::new(&scenario, &id).map_err(|e| anyhow!("agent '{id}': {e}"))?;
    let mut agent = Agent {
        controller: controller::from_spec(&spec.controller, &spec.vehicle),
        external: Control::default(),
        pending_controls: BTreeMap::new(),
        id,
        scenario,
        world,
        io,
        peer_states: BTreeMap::new(),
        pending: None,
        done_frame: None,
        written: BTreeMap::new(),
        waiting_since: None,
        reported_wait: false,
        config,
        stop: Arc::clone(&stop),
    };
    tracing::info!("agent {} ready", agent.id);
    while !stop.load(Ordering::Relaxed) {
        agent.io.waitset.wait(HOUSEKEEPING);
        agent.service()?;
        agent.act()?;
    }
    Ok(())
}

impl Agent {
    fn sync(&self) -> bool {
        self.scenario.scenario.mode == ClockMode::Sync
    }

    fn relay(&self) -> bool {
        self.sync() && self.scenario.scenario.exchange == Exchange::Relay
    }

    /// Takes everything that arrived.
    fn service(&mut self) -> Result<()> {
        let waitset = &self.io.waitset;
        for (peer, sub, token) in self.io.peers.iter_mut() {
            if !waitset.ready(*token) {
                continue;
            }
            for s in sub.take(256) {
                if s.value.agent_id == *peer {
                    self.peer_states
                        .entry(peer.clone())
                        .or_default()
                        .insert(s.value.frame, s.value);
                }
            }
        }
        if self.io.waitset.ready(self.io.control_token) {
            self.take_external_control();
        }
        if self.io.waitset.ready(self.io.requests_token) {
            for request in self.io.requests.take(64) {
                self.apply_command(request.value)?;
            }
        }
        let ticks = if self.io.waitset.ready(self.io.clock_token) {
            self.io.clock.take(16)
        } else {
            Vec::new()
        };
        for tick in ticks {
            let tick = tick.value;
            if tick.paused {
                continue;
            }
            let newer = self.pending.as_ref().is_none_or(|p| tick.frame >= p.frame);
            if newer {
                self.pending = Some(tick);
            }
        }
        self.io.beacon.beat()?;
        Ok(())
    }

    /// Teleport and set-control addressed to this agent; the coordinator answers the rest.
    fn apply_command(&mut self, request: WorldRequest) -> Result<()> {
        let command = &request.command;
        if command.agent_id != self.id
            || !matches!(
                command.kind,
                WorldCommandKind::Teleport | WorldCommandKind::SetControl
            )
        {
            return Ok(());
        }
        // Invalid requests get their Failed reply from the coordinator.
        if check_command(&self.scenario, command).is_err() {
            return Ok(());
        }
        let (status, message) = match command.kind {
            WorldCommandKind::Teleport => match self.world.teleport(command.pose) {
                Ok(()) => (ReplyStatus::Success, format!("{} teleported", self.id)),
                Err(e) => (ReplyStatus::Failed, e.to_string()),
            },
            _ => {
                self.external = command.control.clone();
                (ReplyStatus::Success, format!("{} control set", self.id))
            }
        };
        self.io.replies.write(WorldReply {
            request_id: request.request_id,
            status,
            message,
            states: Vec::new(),
        })?;
        Ok(())
    }

    /// Acts on the pending tick when it can (a tick that must wait for peer states stays
    /// pending).
    fn act(&mut self) -> Result<()> {
        let Some(tick) = self.pending.take() else {
            return Ok(());
        };
        if tick.frame == 0 {
            return self.handshake(&tick);
        }
        if self.done_frame.is_some_and(|d| tick.frame <= d) {
            if self.done_frame == Some(tick.frame) {
                return self.answer_again(tick.frame);
            }
            return Ok(());
        }
        let Some(zombies) = self.zombie_states(&tick) else {
            self.report_wait(&tick);
            self.pending = Some(tick);
            return Ok(());
        };
        self.waiting_since = None;
        self.reported_wait = false;
        // Relay: the tick's own states (64 agents: 13 KB) are not copied.
        self.step(&tick, &zombies)
    }

    /// The coordinator sent Tick N again: frame N stalled past its barrier timeout although
    /// this agent finished it, so something this agent wrote was lost on the way (or is held
    /// up behind a lost sample). Write again what others may still wait for: the state they
    /// need for frame N (peer: N-1, which the agents still stepping N wait for; relay: N,
    /// which the coordinator needs for Tick N+1 and counts as done), and FrameDone N (peer).
    /// Readers keep states by frame, so a copy that was not lost changes nothing.
    fn answer_again(&mut self, frame: u64) -> Result<()> {
        let needed = if self.relay() { frame } else { frame - 1 };
        if let Some(state) = self.written.get(&needed) {
            self.io.state.write_patiently(state.clone(), &self.stop)?;
        }
        self.report_done(frame)?;
        tracing::info!("frame {frame}: asked again; wrote state {needed} again");
        Ok(())
    }

    /// FrameDone N, except in relay exchange, where the state of frame N just written is the
    /// coordinator's sign that this agent finished it.
    fn report_done(&mut self, frame: u64) -> Result<()> {
        if self.relay() {
            return Ok(());
        }
        let done = FrameDone {
            node_id: NodeId::agent(&self.id).to_string(),
            frame,
        };
        self.io.done.write_patiently(done, &self.stop)?;
        Ok(())
    }

    /// Frame 0: publish the initial state on every Tick 0 (peers may have matched late), and
    /// report done once every peer's initial state is here.
    fn handshake(&mut self, tick: &Tick) -> Result<()> {
        if self.done_frame.is_some() {
            return Ok(());
        }
        let state = self.world.state(0, tick.sim_time_ns);
        self.written.insert(0, state.clone());
        self.io.state.write(state)?;
        if !self.relay() && self.peer_states_for(tick, 0).is_some() {
            self.io.done.write(FrameDone {
                node_id: NodeId::agent(&self.id).to_string(),
                frame: 0,
            })?;
        }
        Ok(())
    }

    /// The other members' states of frame N-1, or None while one is missing (sync peer).
    /// Relay: the tick's states as they are (this agent's own is among them;
    /// [`AgentWorld::set_zombies`] leaves it out).
    fn zombie_states<'t>(&self, tick: &'t Tick) -> Option<Cow<'t, [AgentState]>> {
        if self.relay() {
            return Some(Cow::Borrowed(&tick.states));
        }
        if self.sync() {
            return self.peer_states_for(tick, tick.frame - 1).map(Cow::Owned);
        }
        // async: whatever each member last sent.
        Some(Cow::Owned(
            tick.agents
                .iter()
                .filter(|a| **a != self.id)
                .filter_map(|a| {
                    self.peer_states
                        .get(a)
                        .and_then(|by_frame| by_frame.values().next_back().cloned())
                })
                .collect(),
        ))
    }

    fn peer_states_for(&self, tick: &Tick, frame: u64) -> Option<Vec<AgentState>> {
        tick.agents
            .iter()
            .filter(|a| **a != self.id)
            .map(|a| self.peer_states.get(a).and_then(|f| f.get(&frame)).cloned())
            .collect()
    }

    fn report_wait(&mut self, tick: &Tick) {
        let since = *self.waiting_since.get_or_insert_with(Instant::now);
        let timeout = Duration::from_secs_f64(self.scenario.scenario.barrier_timeout);
        if !self.reported_wait && since.elapsed() > timeout {
            self.reported_wait = true;
            let missing: Vec<&String> = tick
                .agents
                .iter()
                .filter(|a| **a != self.id)
                .filter(|a| {
                    self.peer_states
                        .get(*a)
                        .and_then(|f| f.get(&(tick.frame - 1)))
                        .is_none()
                })
                .collect();
            tracing::warn!(
                "frame {}: still waiting for the frame {} state of {:?} after {:.1} s",
                tick.frame,
                tick.frame - 1,
                missing,
                since.elapsed().as_secs_f64()
            );
        }
    }

    /// Keeps the controls a controller node (a bridge) published for this agent, by frame.
    fn take_external_control(&mut self) {
        for sample in self.io.control.take(256) {
            self.pending_controls
                .insert(sample.value.frame, sample.value);
        }
        // A controller far ahead (or a stale one) must not grow this without bound.
        while self.pending_controls.len() > 256 {
            self.pending_controls.pop_first();
        }
    }

    /// The control for `frame`: the newest one stamped for it or an earlier frame. A control
    /// for a later frame waits: a stack answering `/clock` N (for frame N+1) faster than this
    /// agent steps frame N must not change frame N.
    fn external_control_for(&mut self, frame: u64) -> Control {
        let later = self.pending_controls.split_off(&(frame + 1));
        if let Some((_, newest)) = self.pending_controls.pop_last() {
            self.external = newest;
        }
        self.pending_controls = later;
        self.external.clone()
    }

    fn step(&mut self, tick: &Tick, zombies: &[AgentState]) -> Result<()> {
        if self.world.set_zombies(zombies) {
            let now = self.world.zombie_ids();
            tracing::info!("frame {}: zombies now {:?}", tick.frame, now);
        }
        let now_state = self
            .world
            .state(tick.frame - 1, tick.sim_time_ns - tick.dt_ns);
        let control = match self.controller.as_mut() {
            Some(c) => c.control(&now_state, tick.frame),
            None => {
                // A bridge holding the lockstep for its stack answers frame N only once this
                // agent's reader acknowledged the stack's control for N+1, but the wait set
                // that woke us for Tick N+1 may not have seen that control yet: read it now,
                // or the frame steps with the previous command and closed-loop runs differ.
                self.take_external_control();
                self.external_control_for(tick.frame)
            }
        };
        self.world.step(&control, tick.dt_ns as f64 * 1e-9);
        let state = self.world.state(tick.frame, tick.sim_time_ns);
        self.written.insert(tick.frame, state.clone());
        while self.written.len() > 2 {
            self.written.pop_first();
        }
        // The state is this frame's report in relay exchange, so a stall comes before it.
        if self.config.stall_at_frame == Some(tick.frame) {
            tracing::warn!(
                "stalling {:?} at frame {} (test hook)",
                self.config.stall_for,
                tick.frame
            );
            std::thread::sleep(self.config.stall_for);
        }
        if self.config.drop_state_at_frame == Some(tick.frame) {
            tracing::warn!("not writing the state of frame {} (test hook)", tick.frame);
        } else {
            self.io.state.write_patiently(state, &self.stop)?;
        }
        self.report_done(tick.frame)?;
        self.done_frame = Some(tick.frame);
        // Frames before N-1 are never needed again.
        let keep_from = tick.frame.saturating_sub(1);
        for by_frame in self.peer_states.values_mut() {
            *by_frame = by_frame.split_off(&keep_from);
        }
        Ok(())
    }
}
