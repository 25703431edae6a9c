//! What an agent does with each Tick: the frame logic of the lockstep, apart from where it
//! runs (the listeners and the agent's thread, [`crate::node`]).
//!
//! Step N (DESIGN.md, "Time, clock and determinism"): take the frame N-1 states of every other
//! member of Tick N (peer: from their state topics, waiting for any that are missing; relay:
//! from the Tick itself), move the zombies to them, apply this frame's control, step physics to
//! frame N, publish AgentState N. The coordinator reads every state anyway, so AgentState N
//! stands for FrameDone N in both exchanges (one datagram a frame less each way, and no
//! acknowledgement of it); only the peer handshake of frame 0 is answered with a FrameDone.
//! Nothing here depends on arrival timing, so a lockstep run is reproducible bit for bit.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use convoy_core::dds::{ReaderStats, Subscriber};
use convoy_core::messages::{
    AgentState, Control, FrameDone, ReplyStatus, Tick, WorldCommandKind, WorldReply, WorldRequest,
};
use convoy_core::node::NodeId;
use convoy_core::scenario::{ClockMode, Exchange, Scenario};
use convoy_core::world::check_command;

use crate::controller::Controller;
use crate::outbox::{Outbox, Outgoing};
use crate::world::AgentWorld;

/// Test hooks that make an agent misbehave on purpose.
#[derive(Debug, Clone, Default)]
pub struct TestHooks {
    /// Before stepping this frame (and so before writing its state and FrameDone), stall for
    /// `stall_for`. The agent goes on serving commands and acknowledgements meanwhile; it is
    /// late, not dead.
    pub stall_at_frame: Option<u64>,
    pub stall_for: Duration,
    /// Skip writing this frame's state, as if it were lost for good on the way.
    pub drop_state_at_frame: Option<u64>,
}

pub struct Agent {
    pub(crate) id: String,
    scenario: Scenario,
    world: AgentWorld,
    controller: Option<Box<dyn Controller + Send>>,
    external: Control,
    /// Controls from a controller node (a bridge) not applied yet, by the frame they are for.
    pending_controls: BTreeMap<u64, Control>,
    /// This agent's control topic (a controller node's commands).
    control: Subscriber<Control>,
    pub(crate) outbox: Outbox,
    /// Other agents' states by agent and frame (peer exchange).
    peer_states: BTreeMap<String, BTreeMap<u64, AgentState>>,
    /// The newest Tick not yet acted on.
    pending: Option<Tick>,
    /// The last frame this agent stepped to (and reported done).
    done_frame: Option<u64>,
    /// The states this agent wrote for its last two frames, to write again when the
    /// coordinator asks (a repeated Tick; see [`Agent::answer_again`]).
    written: BTreeMap<u64, AgentState>,
    /// What each peer's state reader has seen (peer exchange), named when a state is late.
    peer_readers: BTreeMap<String, Arc<ReaderStats>>,
    /// When the current pending tick started waiting for peer states.
    waiting_since: Option<Instant>,
    reported_wait: bool,
    hooks: TestHooks,
    /// When the stall of [`TestHooks::stall_at_frame`] ends, once it began.
    stalled_until: Option<Instant>,
    /// The first error met in a listener; the agent's thread ends the run with it.
    pub(crate) failure: Option<anyhow::Error>,
    /// The replies to the newest world requests this agent carried out (each names its
    /// request id).
    answered: VecDeque<WorldReply>,
}

/// How many answered world requests an agent remembers to answer a repeat without acting
/// twice (a client repeats for a few seconds at most).
const ANSWERS_KEPT: usize = 64;

impl Agent {
    pub fn new(
        id: String,
        scenario: Scenario,
        world: AgentWorld,
        controller: Option<Box<dyn Controller + Send>>,
        control: Subscriber<Control>,
        outbox: Outbox,
        hooks: TestHooks,
    ) -> Agent {
        Agent {
            id,
            scenario,
            world,
            controller,
            external: Control::default(),
            pending_controls: BTreeMap::new(),
            control,
            outbox,
            peer_states: BTreeMap::new(),
            pending: None,
            done_frame: None,
            written: BTreeMap::new(),
            peer_readers: BTreeMap::new(),
            waiting_since: None,
            reported_wait: false,
            hooks,
            stalled_until: None,
            failure: None,
            answered: VecDeque::new(),
        }
    }

    /// The counters of each peer's state reader, for the report of a late state.
    pub fn watch_peer_readers(&mut self, readers: BTreeMap<String, Arc<ReaderStats>>) {
        self.peer_readers = readers;
    }

    /// A Tick arrived (listener): keep it if it is the newest, and act on it.
    pub fn on_tick(&mut self, tick: Tick) {
        if tick.paused {
            return;
        }
        if self.pending.as_ref().is_none_or(|p| tick.frame >= p.frame) {
            self.pending = Some(tick);
        }
        self.act_or_fail();
    }

    /// Another agent's state arrived (listener, peer exchange): keep it by frame, and act on
    /// a Tick that waited for it.
    pub fn on_peer_state(&mut self, peer: &str, state: AgentState) {
        if state.agent_id != peer {
            return;
        }
        // Known peers are looked up, not keyed anew: no id copied per sample.
        match self.peer_states.get_mut(peer) {
            Some(by_frame) => {
                by_frame.insert(state.frame, state);
            }
            None => {
                let by_frame = BTreeMap::from([(state.frame, state)]);
                self.peer_states.insert(peer.to_string(), by_frame);
            }
        }
        self.act_or_fail();
    }

    /// [`Agent::act`] from a listener, which has no caller to return an error to: the first
    /// error stops the stepping and wakes the agent's thread to end the run with it.
    fn act_or_fail(&mut self) {
        if self.failure.is_some() {
            return;
        }
        if let Err(e) = self.act() {
            self.failure = Some(e);
            self.outbox.wake();
        }
    }

    /// How long the agent's thread may sleep before [`Agent::act`] has something to do
    /// without a sample arriving: at most `longest`, less while a test stall runs out.
    pub fn next_wait(&self, longest: Duration) -> Duration {
        match self.stalled_until {
            Some(until) if self.hooks.stall_at_frame.is_some() => {
                until.saturating_duration_since(Instant::now()).min(longest)
            }
            _ => longest,
        }
    }

    /// The test stall at `frame`: true while it runs (the tick stays pending).
    fn stalling(&mut self, frame: u64) -> bool {
        if self.hooks.stall_at_frame != Some(frame) {
            return false;
        }
        let stall_for = self.hooks.stall_for;
        let until = *self.stalled_until.get_or_insert_with(|| {
            tracing::warn!("stalling {stall_for:?} at frame {frame} (test hook)");
            Instant::now() + stall_for
        });
        if Instant::now() < until {
            return true;
        }
        self.hooks.stall_at_frame = None;
        false
    }

    fn sync(&self) -> bool {
        self.scenario.scenario.mode == ClockMode::Sync
    }

    fn relay(&self) -> bool {
        self.sync() && self.scenario.scenario.exchange == Exchange::Relay
    }

    /// Teleport and set-control addressed to this agent; the coordinator answers the rest.
    pub fn apply_command(&mut self, request: WorldRequest) -> Result<()> {
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
        // A client sends its request again until it has the final answer (its first copies
        // may reach this agent before discovery matched them): answer a repeat, act once.
        if let Some(reply) = self
            .answered
            .iter()
            .find(|reply| reply.request_id == request.request_id)
        {
            let again = reply.clone();
            self.outbox.send(Outgoing::Reply(again))?;
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
        let reply = WorldReply {
            request_id: request.request_id,
            status,
            message,
            states: Vec::new(),
        };
        self.answered.push_back(reply.clone());
        if self.answered.len() > ANSWERS_KEPT {
            self.answered.pop_front();
        }
        self.outbox.send(Outgoing::Reply(reply))?;
        Ok(())
    }

    /// Acts on the pending tick when it can (a tick that must wait for peer states stays
    /// pending).
    pub fn act(&mut self) -> Result<()> {
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
            self.report_wait(&tick, tick.frame - 1);
            self.pending = Some(tick);
            return Ok(());
        };
        self.waiting_since = None;
        self.reported_wait = false;
        if self.stalling(tick.frame) {
            self.pending = Some(tick);
            return Ok(());
        }
        // Relay: the tick's own states (64 agents: 13 KB) are not copied.
        self.step(&tick, &zombies)
    }

    /// The coordinator sent Tick N again: frame N stalled past its barrier timeout although
    /// this agent finished it, so something this agent wrote was lost on the way (or is held
    /// up behind a lost sample). Write again what others may still wait for: state N, the
    /// coordinator's sign that this agent finished N, and in peer exchange state N-1 too,
    /// which the agents still stepping N wait for. Readers keep states by frame, so a copy
    /// that was not lost changes nothing.
    fn answer_again(&mut self, frame: u64) -> Result<()> {
        if self.outbox.holds_writes() {
            // What the others miss has not left yet: a reader holds this agent's writes (see
            // crate::outbox). Another copy would only queue behind it.
            tracing::info!("frame {frame}: asked again; its states still wait to go out");
            return Ok(());
        }
        let first = if self.relay() { frame } else { frame - 1 };
        for needed in first..=frame {
            if let Some(state) = self.written.get(&needed) {
                self.outbox.send(Outgoing::State(state.clone()))?;
            }
        }
        tracing::info!("frame {frame}: asked again; wrote states {first}..={frame} again");
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
        self.outbox.send(Outgoing::State(state))?;
        if self.relay() {
            return Ok(());
        }
        if self.peer_states_for(tick, 0).is_some() {
            self.waiting_since = None;
            self.reported_wait = false;
            self.outbox.send(Outgoing::Done(FrameDone {
                node_id: NodeId::agent(&self.id).to_string(),
                frame: 0,
            }))?;
        } else {
            self.report_wait(tick, 0);
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

    /// Names, once per wait longer than the barrier timeout, the members whose state of
    /// `frame` has not come (the state a tick of frame N waits for is N-1's; the handshake
    /// waits for the initial states, frame 0).
    fn report_wait(&mut self, tick: &Tick, frame: u64) {
        let since = *self.waiting_since.get_or_insert_with(Instant::now);
        let timeout = Duration::from_secs_f64(self.scenario.scenario.barrier_timeout);
        if !self.reported_wait && since.elapsed() > timeout {
            self.reported_wait = true;
            let missing: Vec<String> = tick
                .agents
                .iter()
                .filter(|a| **a != self.id)
                .filter(|a| {
                    self.peer_states
                        .get(*a)
                        .and_then(|f| f.get(&frame))
                        .is_none()
                })
                .map(|a| self.describe_peer(a))
                .collect();
            tracing::warn!(
                "frame {}: still waiting for the frame {frame} state of {} after {:.1} s",
                tick.frame,
                missing.join(", "),
                since.elapsed().as_secs_f64()
            );
        }
    }

    /// A peer named in a late-state report, with what its state reader has seen: whether
    /// anything reached it at all, or the samples were lost on the way (DDS) or after.
    fn describe_peer(&self, peer: &str) -> String {
        let newest = self
            .peer_states
            .get(peer)
            .and_then(|f| f.keys().next_back())
            .map_or("none".to_string(), |f| f.to_string());
        match self.peer_readers.get(peer) {
            Some(stats) => format!(
                "{peer} (newest frame {newest}; its reader received {}, lost {})",
                ReaderStats::get(&stats.received),
                ReaderStats::get(&stats.lost)
            ),
            None => format!("{peer} (newest frame {newest})"),
        }
    }

    /// Keeps the controls a controller node (a bridge) published for this agent, by frame.
    pub fn take_external_control(&mut self) {
        for sample in self.control.take(256) {
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
            Some(c) => c.control(&now_state, zombies, tick.frame),
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
        if self.hooks.drop_state_at_frame == Some(tick.frame) {
            tracing::warn!("not writing the state of frame {} (test hook)", tick.frame);
        } else {
            self.outbox.send(Outgoing::State(state))?;
        }
        self.done_frame = Some(tick.frame);
        // Frames before N-1 are never needed again.
        let keep_from = tick.frame.saturating_sub(1);
        for by_frame in self.peer_states.values_mut() {
            *by_frame = by_frame.split_off(&keep_from);
        }
        Ok(())
    }
}
