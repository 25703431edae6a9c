//! One round of the loop's housekeeping: what arrived (FrameDone, states, statuses, world
//! requests), leases, nodes that left and the sensors that move with them.

use super::*;
use convoy_core::status::world_mismatch;

impl Coordinator {
    /// One round of waiting and handling everything that arrived, feeding `barrier`.
    pub(super) fn service_barrier(&mut self, barrier: &mut Barrier, wait: Duration) -> Result<()> {
        self.io.waitset.wait(wait);
        for done in self.io.done.take_ready(&self.io.waitset, 256) {
            barrier.frame_done(&done.value.node_id, done.value.frame);
        }
        let arrived = self.drain_states()?;
        for (agent, frame) in arrived {
            barrier.state(&agent, frame);
        }
        self.housekeeping(Some(barrier))
    }

    /// One round of waiting and handling everything but the barrier.
    pub(super) fn service(&mut self, wait: Duration) -> Result<()> {
        if !wait.is_zero() {
            self.io.waitset.wait(wait);
        }
        // FrameDone outside a barrier (startup, async) carries nothing to act on.
        let _ = self.io.done.take(256);
        self.drain_states()?;
        self.housekeeping(None)
    }

    pub(super) fn drain_states(&mut self) -> Result<Vec<(String, u64)>> {
        let mut arrived = Vec::new();
        let relay = self.relay();
        for (agent, sub) in self.io.states.iter_mut() {
            for s in sub.take_ready(&self.io.waitset, 256) {
                let state = s.value;
                if state.agent_id != *agent {
                    tracing::warn!("state of '{}' on {}'s topic ignored", state.agent_id, agent);
                    continue;
                }
                if let Some(log) = self.state_log.as_mut() {
                    log.write(&state)?;
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

    pub(super) fn housekeeping(&mut self, mut barrier: Option<&mut Barrier>) -> Result<()> {
        let now = Instant::now();
        // Registry, leases and commands change slowly: look at them every few milliseconds,
        // not on every sample of the hot path.
        if now.saturating_duration_since(self.last_housekeeping) < HOUSEKEEPING {
            return Ok(());
        }
        self.last_housekeeping = now;
        let mut sensor_joined = false;
        for sample in self.io.nodes.take(256) {
            if sample.value.role == NodeRole::Coordinator && !self.io.beacon.is_own(&sample.writer)
            {
                // The newcomer refuses to start; a run already past its handshake goes on
                // (the newcomer is about to stop) and says so.
                if self.frame == 0 {
                    bail!("{}", other_coordinator(&sample.value));
                }
                tracing::warn!("{}", other_coordinator(&sample.value));
            }
            let status = sample.value;
            if let Some(mismatch) = world_mismatch(&self.world_digests, &status) {
                bail!("refusing {}: {mismatch}", status.node_id);
            }
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
}

/// Why this coordinator refuses to go on: another one of its run id is live on its domain,
/// and two clocks would drive one run.
fn other_coordinator(status: &NodeStatus) -> String {
    let pid = status
        .counters
        .iter()
        .find(|c| c.name == convoy_core::status::PID_COUNTER)
        .map_or("unknown".to_string(), |c| c.value.to_string());
    let run = convoy_core::dds::run_scope::RunId::from_env()
        .ok()
        .flatten()
        .map_or("(none)".to_string(), |id| id.to_string());
    format!(
        "another coordinator of run {run} is live on this domain: node {} on host {}, \
         process {pid}; stop it, or give this run its own id (CONVOY_RUN_ID, or leave it \
         unset for a fresh one)",
        status.node_id, status.host
    )
}
