//! Several agents in one process (`convoy-agent --id a --id b ...`, `convoy run
//! --agents-per-process N`): a deployment choice, not a DDS one.
//!
//! Each agent stays a node of its own on the wire: its own endpoints and topics, its own status
//! beacon and lease, its own physics world and thread; the agents still exchange states only
//! through DDS, and results are bit-identical to one process per agent (the lockstep
//! determinism tests run both ways). They share one DDS participant, so its receive thread
//! steps every agent of the process one after the other as their Ticks arrive (and a Tick to
//! them is one datagram to their shared locator). What that saves is the operating system's
//! cost of a process per agent: on a host with fewer cores than agents, every frame switched
//! between all of the agents' processes, each of which came back to cold caches (an agent's
//! physics step takes ~13 µs hot and ~47 µs in a 16-process lockstep; git history of
//! docs/BENCHMARKS.md).
//!
//! What it costs: the agents of a process fail together, as SynChrono's agents on one MPI rank
//! do. An agent that fails stops the others (their nodes leave the run; the coordinator drops
//! them after their lease), because the participant they share would otherwise be forgotten
//! by the other nodes when the failed agent's status lapses; the process exits with an error
//! naming every agent that failed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};

use convoy_core::dds::Participant;
use convoy_core::node::load_scenario;
use convoy_world::World;

use crate::node::{run, AgentConfig};

/// Runs every agent of `configs` until each has finished: one on this thread with a
/// participant of its own; several on one participant, each on a thread of its own named after
/// it, with its log lines tagged `agent{id=...}`. `stop` ends them all (and is set when one
/// fails).
pub fn run_agents(mut configs: Vec<AgentConfig>, stop: Arc<AtomicBool>) -> Result<()> {
    match configs.len() {
        0 => bail!("no agent to run (give --id at least once)"),
        1 => {
            if let Some(config) = configs.pop() {
                return run(config, stop);
            }
        }
        _ => {}
    }
    let mut ids: Vec<&str> = configs.iter().map(|c| c.agent_id.as_str()).collect();
    ids.sort_unstable();
    if let Some(twice) = ids.windows(2).find(|w| w[0] == w[1]) {
        bail!("agent '{}' is given twice", twice[0]);
    }
    let shared = Participant::new(configs[0].node.domain)
        .map_err(|e| anyhow!("cannot join DDS for the agents of this process: {e}"))?;
    // One static world for all: its road meshes and trimesh shapes are shared, not rebuilt.
    let scenario = load_scenario(&configs[0].node)?;
    let world = Arc::new(World::for_scenario(&scenario)?);
    for config in &mut configs {
        config.participant = Some(shared.clone());
        config.world = Some(Arc::clone(&world));
    }
    let mut threads = Vec::with_capacity(configs.len());
    let mut failed = Vec::new();
    for config in configs {
        let id = config.agent_id.clone();
        let agent_stop = stop.clone();
        let thread = std::thread::Builder::new()
            // Linux keeps 15 bytes of a thread name: the id's end tells agents apart.
            .name(thread_name(&id))
            .spawn(move || {
                let span = tracing::info_span!("agent", id = %config.agent_id);
                let _entered = span.enter();
                let outcome = run(config, agent_stop.clone());
                if outcome.is_err() {
                    // The others leave too (see the module docs).
                    agent_stop.store(true, Ordering::Relaxed);
                }
                outcome
            });
        match thread {
            Ok(handle) => threads.push((id, handle)),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                failed.push(format!("agent {id}: cannot start its thread: {e}"));
            }
        }
    }
    for (id, handle) in threads {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failed.push(format!("agent {id}: {e:#}")),
            Err(_) => {
                stop.store(true, Ordering::Relaxed);
                failed.push(format!("agent {id}: panicked"));
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        bail!("{}", failed.join("; "))
    }
}

/// The agent's thread name: `a/` and as much of the id's end as fits in 15 bytes.
fn thread_name(id: &str) -> String {
    let mut start = id.len().saturating_sub(13);
    while !id.is_char_boundary(start) {
        start += 1;
    }
    format!("a/{}", &id[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_names_keep_the_end_of_the_id() {
        assert_eq!(thread_name("car_07"), "a/car_07");
        assert_eq!(thread_name("a_very_long_agent_name_12"), "a/agent_name_12");
        // 20 bytes: the cut falls inside a character and moves past it.
        assert_eq!(thread_name("ääääääääää"), "a/ääääää");
    }
}
