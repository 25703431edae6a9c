//! Which sensors this node runs: assignments from `convoy/assignments` start a sensor here
//! (its writers) or stop it when it moved to
//! another node; newer epochs win. A sensor that arrives after its frame's tick is caught up on
//! that frame.

use super::output::Output;
use super::*;
use crate::dispatcher::PublisherId;

/// A sensor this node runs.
pub(super) struct Active {
    pub(super) spec: SensorSpec,
    epoch: u32,
    pub(super) output: Output,
    pub(super) publisher: PublisherId,
    pub(super) seq: u64,
}

impl SensorNode {
    /// Records new assignments, starts and stops sensors, and catches up the last frame for
    /// sensors that arrived after its tick.
    pub(super) fn apply_assignments(&mut self, changed: Vec<SensorAssignment>) -> Result<()> {
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
                let active = self.start_sensor(&a, spec)?;
                self.active.insert(key.clone(), active);
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

    /// Starts running the sensor `spec` that `a` gives this node.
    fn start_sensor(&mut self, a: &SensorAssignment, spec: SensorSpec) -> Result<Active> {
        let output = Output::create(&self.node, &a.agent_id, &spec)?;
        println!(
            "running {}/{} ({:?} at {} Hz, epoch {}) on {}",
            a.agent_id,
            a.sensor_id,
            spec.kind,
            spec.rate,
            a.epoch,
            topics::sensor_name(&a.agent_id, &a.sensor_id)
        );
        Ok(Active {
            spec,
            epoch: a.epoch,
            output,
            publisher: self.dispatcher.register_publisher(),
            seq: 0,
        })
    }
}
