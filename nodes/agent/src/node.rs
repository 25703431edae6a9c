//! The agent node: its DDS endpoints, and where its frame logic ([`crate::lockstep`]) runs.
//!
//! The agent steps in the DDS receive thread: the clock reader's listener (and, in peer
//! exchange, each peer state reader's) hands the sample to the agent and steps the frame the
//! moment it can, so a frame costs no wake-up of a second thread between the socket and the
//! physics. The agent's own thread serves what is not on that path: world commands, a
//! controller node's commands, the status beacon, test stalls running out, and writes that
//! could not leave from the listener ([`crate::outbox`]). Both share the agent's state under a
//! mutex that neither holds while it waits for anything.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use convoy_core::dds::{Listening, Participant, WaitSet};
use convoy_core::messages::AgentState;
use convoy_core::node::{NodeArgs, NodeContext, NodeId};
use convoy_core::scenario::{ClockMode, Exchange};
use convoy_core::status::announce_world_digests;
use convoy_core::topics;
use convoy_world::World;

use crate::controller;
use crate::lockstep::{Agent, TestHooks};
use crate::outbox::{Outbox, Outputs};
use crate::world::AgentWorld;

/// The longest the agent's thread sleeps without looking at the stop flag: one status beat.
/// Commands, controls and writes to retry wake it; when nothing arrives it wakes only for its
/// beat (64 idle agents' threads waking every 50 ms took 9% of one CPU between them).
const HOUSEKEEPING: Duration = convoy_core::status::BEAT;

/// The pause before writing again what found its window full (each attempt itself waits up to
/// the topic's `max_blocking_time`).
const RETRY: Duration = Duration::from_millis(10);

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub node: NodeArgs,
    pub agent_id: String,
    pub hooks: TestHooks,
    /// The DDS participant this agent shares with the other agents of its process (none: it
    /// makes its own), see [`crate::group`].
    pub participant: Option<Participant>,
    /// The static world, loaded once for the agents of a process (none: the agent loads it).
    pub world: Option<Arc<World>>,
}

pub fn run(config: AgentConfig, stop: Arc<AtomicBool>) -> Result<()> {
    let NodeContext {
        scenario,
        node,
        mut beacon,
    } = match &config.participant {
        Some(shared) => {
            NodeContext::start_on(&config.node, NodeId::agent(&config.agent_id), shared)?
        }
        None => NodeContext::start(&config.node, NodeId::agent(&config.agent_id))?,
    };
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

    let mut waitset = WaitSet::new().context("cannot create a wait set")?;
    // A wake-up needs no token of its own: the thread looks at everything when it wakes.
    let (_, wake) = waitset.waker().context("cannot create a wake-up")?;
    let outputs = Arc::new(Outputs {
        state: node.publisher(&topics::agent_state(&id))?,
        done: node.publisher(&topics::frame_done())?,
        replies: node.publisher(&topics::world_reply())?,
    });
    let mut control = node.subscriber(&topics::agent_control(&id))?;
    let control_token = control.attach(&mut waitset)?;
    let mut requests = node.subscriber(&topics::world_request())?;
    requests.attach(&mut waitset)?;
    let clock = node.subscriber(&topics::clock())?;
    let mut peers = Vec::new();
    if peer_mode {
        for other in scenario.agent_ids().into_iter().filter(|a| *a != id) {
            let reader = node.subscriber::<AgentState>(&topics::agent_state(&other))?;
            peers.push((other, reader));
        }
    }

    let map = match &config.world {
        Some(shared) => Arc::clone(shared),
        None => Arc::new(World::for_scenario(&scenario)?),
    };
    announce_world_digests(&mut beacon, &map.digests());
    let world = AgentWorld::new(&scenario, &map, &id).map_err(|e| anyhow!("agent '{id}': {e}"))?;
    let controller = controller::from_spec(&scenario, &spec, &map)?;
    let agent = Arc::new(Mutex::new(Agent::new(
        id.clone(),
        scenario,
        world,
        controller,
        control,
        Outbox::new(outputs, wake),
        config.hooks.clone(),
    )));

    // From here on samples step the agent in the receive thread.
    let mut listening: Vec<Listening<AgentState>> = Vec::new();
    let mut peer_readers = BTreeMap::new();
    for (peer, reader) in peers {
        peer_readers.insert(peer.clone(), reader.stats());
        let shared = Arc::clone(&agent);
        listening.push(reader.into_listener(move |sample| {
            with_agent(&shared, |agent| agent.on_peer_state(&peer, sample.value))
        }));
    }
    lock(&agent)?.watch_peer_readers(peer_readers);
    let shared = Arc::clone(&agent);
    let clock = clock.into_listener(move |tick| with_agent(&shared, |a| a.on_tick(tick.value)));
    tracing::info!("agent {id} ready");

    let mut wait = HOUSEKEEPING;
    let result = loop {
        if stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        waitset.wait(wait);
        let commands = requests.take_ready(&waitset, 64);
        let flush = {
            let mut agent = lock(&agent)?;
            if let Some(failure) = agent.failure.take() {
                break Err(failure);
            }
            if waitset.ready(control_token) {
                agent.take_external_control();
            }
            for command in commands {
                agent.apply_command(command.value)?;
            }
            // A tick the listener left pending: a test stall ran out, or peer states are late.
            agent.act()?;
            wait = agent.next_wait(HOUSEKEEPING);
            agent.outbox.take()
        };
        beacon.beat()?;
        wait = wait.min(beacon.until_due());
        // Unlocked: a write that waits for an acknowledgement never holds up the listener.
        let unwritten = flush.write()?;
        let mut agent = lock(&agent)?;
        let blocked = agent.outbox.flushed(unwritten);
        if !agent.outbox.is_empty() {
            wait = if blocked { RETRY } else { Duration::ZERO };
        }
    };
    // The listeners go first: nothing steps the agent while it is taken apart.
    drop(clock);
    drop(listening);
    result
}

/// The agent's state, or an error when a listener panicked while holding it.
fn lock(agent: &Mutex<Agent>) -> Result<MutexGuard<'_, Agent>> {
    agent
        .lock()
        .map_err(|_| anyhow!("the agent's state was left inconsistent by a panic"))
}

/// Runs `f` on the agent from a listener. A poisoned state is reported by the agent's thread,
/// which ends the run; the listener then only stops stepping.
fn with_agent(agent: &Mutex<Agent>, f: impl FnOnce(&mut Agent)) {
    if let Ok(mut agent) = agent.lock() {
        f(&mut agent);
    }
}
