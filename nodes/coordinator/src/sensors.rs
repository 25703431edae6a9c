//! The coordinator's book of sensors (DESIGN.md, "Sensor assignment"): who runs each sensor
//! (with epochs), which sensor nodes owe FrameDone for a frame, and the gaps a failover leaves.
//! Plain data over explicit frames; the run loop feeds it registry changes and barrier results
//! and publishes what it returns.

use std::collections::{BTreeMap, BTreeSet};

use convoy_core::messages::{NodeStatus, SensorAssignment, SensorKey};
use convoy_core::node::{NodeId, SensorNodeRole};
use convoy_core::scenario::Scenario;
use convoy_core::schedule::SensorSchedule;

use crate::assignment::{assign, SensorDemand, SensorNode};

/// A sensor node as the registry knows it, in the assignment's terms; None for other nodes.
pub fn as_sensor_node(status: &NodeStatus) -> Option<SensorNode> {
    let role = SensorNodeRole::of(status.role)?;
    let id = NodeId::parse_node(&status.node_id).ok()?;
    let name = id.as_sensor()?;
    let capacity = if status.capacity.is_finite() && status.capacity > 0.0 {
        status.capacity
    } else {
        1.0
    };
    Some(SensorNode {
        id: name.to_string(),
        role,
        capacity,
        carried: 0.0,
    })
}

/// A sensor that moved to another node because its node was lost.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    pub key: SensorKey,
    pub from: String,
    pub to: Option<String>,
    pub epoch: u32,
    /// The last frame whose sample the old node acknowledged (sync mode).
    pub last_served: Option<u64>,
}

/// A sensor back on the air after a move: the frames in between had no sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Resumed {
    pub key: SensorKey,
    pub node: String,
    pub frame: u64,
    /// Frames after the last served one and before `frame`.
    pub gap_frames: u64,
    /// Samples that were due in the gap and never made.
    pub missed_samples: u64,
}

#[derive(Debug)]
struct Entry {
    demand: SensorDemand,
    schedule: SensorSchedule,
    /// Current owner (sensor node name) and epoch; None until placed.
    owner: Option<String>,
    epoch: u32,
    last_served: Option<u64>,
    /// Due samples not made since the last served frame (its node was gone).
    missed: u64,
    /// Set by a move; cleared (and reported) when the new owner serves a frame.
    moved: bool,
}

/// Every sensor of the scenario and its state.
#[derive(Debug)]
pub struct SensorBook {
    entries: BTreeMap<SensorKey, Entry>,
    /// Sensors due in the frame being completed, with their owners.
    due: Vec<(SensorKey, String)>,
}

impl SensorBook {
    pub fn new(scenario: &Scenario) -> SensorBook {
        let mut entries = BTreeMap::new();
        for agent in &scenario.agents {
            for spec in &agent.sensors {
                // Scenario validation has checked the rate.
                let Ok(schedule) = SensorSchedule::new(spec.rate) else {
                    continue;
                };
                let key = SensorKey {
                    agent_id: agent.id.clone(),
                    sensor_id: spec.id.clone(),
                };
                let entry = Entry {
                    demand: SensorDemand::of(&agent.id, spec),
                    schedule,
                    owner: None,
                    epoch: 0,
                    last_served: None,
                    missed: 0,
                    moved: false,
                };
                entries.insert(key, entry);
            }
        }
        SensorBook {
            entries,
            due: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many sensors each node runs now.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let mut counts = BTreeMap::new();
        for e in self.entries.values() {
            if let Some(owner) = &e.owner {
                *counts.entry(owner.clone()).or_insert(0) += 1;
            }
        }
        counts
    }

    /// Sensors no node runs.
    pub fn unplaced(&self) -> Vec<SensorKey> {
        self.entries
            .iter()
            .filter(|(_, e)| e.owner.is_none())
            .map(|(k, _)| k.clone())
            .collect()
    }

    pub fn assignment(&self, key: &SensorKey) -> Option<SensorAssignment> {
        let e = self.entries.get(key)?;
        Some(SensorAssignment {
            agent_id: key.agent_id.clone(),
            sensor_id: key.sensor_id.clone(),
            node_id: e.owner.clone()?,
            epoch: e.epoch,
            load: e.demand.load,
        })
    }

    /// Places every sensor without a live owner on `nodes` (the live sensor nodes), keeping
    /// the others where they are; returns the new assignments (epoch + 1 each) and the
    /// assignment's warnings. The first placement is this with no owner anywhere.
    pub fn place(&mut self, nodes: &[SensorNode]) -> (Vec<SensorAssignment>, Vec<String>) {
        let live: BTreeSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        let mut carried: BTreeMap<&str, f64> = BTreeMap::new();
        let mut orphans = Vec::new();
        for (key, e) in &self.entries {
            match &e.owner {
                Some(owner) if live.contains(owner.as_str()) => {
                    *carried.entry(owner.as_str()).or_insert(0.0) += e.demand.load;
                }
                _ => orphans.push((key.clone(), e.demand.clone())),
            }
        }
        if orphans.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let nodes: Vec<SensorNode> = nodes
            .iter()
            .map(|n| SensorNode {
                carried: carried.get(n.id.as_str()).copied().unwrap_or(0.0),
                ..n.clone()
            })
            .collect();
        let demands: Vec<SensorDemand> = orphans.iter().map(|(_, d)| d.clone()).collect();
        let plan = assign(&nodes, &demands);
        let mut changed = Vec::new();
        for p in plan.placements {
            let key = SensorKey {
                agent_id: p.agent,
                sensor_id: p.sensor,
            };
            if let Some(e) = self.entries.get_mut(&key) {
                e.owner = Some(p.node);
                e.epoch += 1;
                if let Some(a) = self.assignment(&key) {
                    changed.push(a);
                }
            }
        }
        (changed, plan.warnings)
    }

    /// A sensor node is gone: its sensors lose their owner (call [`SensorBook::place`] next).
    pub fn node_lost(&mut self, name: &str) -> Vec<Move> {
        let mut moves = Vec::new();
        for (key, e) in self.entries.iter_mut() {
            if e.owner.as_deref() == Some(name) {
                e.owner = None;
                e.moved = true;
                moves.push(Move {
                    key: key.clone(),
                    from: name.to_string(),
                    to: None,
                    epoch: e.epoch,
                    last_served: e.last_served,
                });
            }
        }
        moves
    }

    /// Which sensor nodes owe FrameDone for `frame` (every sensor's schedule advances here,
    /// once per frame, exactly as on the sensor nodes).
    pub fn frame_due(&mut self, frame: u64, sim_time_ns: i64) -> BTreeSet<String> {
        self.due.clear();
        let mut owing = BTreeSet::new();
        for (key, e) in self.entries.iter_mut() {
            if !e.schedule.due(frame, sim_time_ns) {
                continue;
            }
            match &e.owner {
                Some(owner) => {
                    owing.insert(owner.clone());
                    self.due.push((key.clone(), owner.clone()));
                }
                None => e.missed += 1,
            }
        }
        owing
    }

    /// The frame's barrier completed: `acked` nodes served their due sensors; the sensors of
    /// nodes that did not (they were lost meanwhile) missed this frame. Returns the sensors
    /// that resumed after a move.
    pub fn frame_complete(&mut self, frame: u64, acked: &BTreeSet<String>) -> Vec<Resumed> {
        let mut resumed = Vec::new();
        for (key, owner) in std::mem::take(&mut self.due) {
            let Some(e) = self.entries.get_mut(&key) else {
                continue;
            };
            if !acked.contains(&owner) || e.owner.as_deref() != Some(owner.as_str()) {
                e.missed += 1;
                continue;
            }
            if e.moved {
                e.moved = false;
                let gap_frames = match e.last_served {
                    Some(last) => frame.saturating_sub(last + 1),
                    None => frame,
                };
                resumed.push(Resumed {
                    key: key.clone(),
                    node: owner.clone(),
                    frame,
                    gap_frames,
                    missed_samples: e.missed,
                });
            }
            e.missed = 0;
            e.last_served = Some(frame);
        }
        resumed
    }
}

/// `agent/sensor`, as logs name a sensor.
pub fn sensor_name(key: &SensorKey) -> String {
    format!("{}/{}", key.agent_id, key.sensor_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        let text = include_str!("../tests/fixtures/book.toml");
        Scenario::from_str(text, "book.toml").expect("test scenario")
    }

    fn node(id: &str, role: SensorNodeRole) -> SensorNode {
        SensorNode {
            id: id.into(),
            role,
            capacity: 1.0,
            carried: 0.0,
        }
    }

    fn key(s: &str) -> SensorKey {
        SensorKey {
            agent_id: "ego".into(),
            sensor_id: s.into(),
        }
    }

    #[test]
    fn failover_moves_sensors_with_a_new_epoch_and_reports_the_gap() {
        let mut book = SensorBook::new(&scenario());
        let nodes = [
            node("main", SensorNodeRole::Main),
            node("c1", SensorNodeRole::Client),
        ];
        let (first, _) = book.place(&nodes);
        assert_eq!(first.len(), 2);
        assert_eq!(book.assignment(&key("radar")).unwrap().node_id, "c1");
        assert_eq!(book.assignment(&key("radar")).unwrap().epoch, 1);
        // Frames 0..=4: radar (10 Hz at dt 0.05) is due on even frames, imu on every frame.
        let all: BTreeSet<String> = ["main".to_string(), "c1".to_string()].into();
        for f in 0..=4u64 {
            let owing = book.frame_due(f, f as i64 * 50_000_000);
            assert_eq!(owing.contains("c1"), f % 2 == 0, "frame {f}");
            assert!(owing.contains("main"));
            book.frame_complete(f, &all);
        }
        // c1 dies during frame 6 (it never acknowledges it).
        let owing = book.frame_due(5, 250_000_000);
        assert!(!owing.contains("c1"));
        book.frame_complete(5, &all);
        let owing = book.frame_due(6, 300_000_000);
        assert!(owing.contains("c1"));
        let moves = book.node_lost("c1");
        assert_eq!(moves.len(), 1);
        assert_eq!(moves[0].last_served, Some(4));
        let main_only: BTreeSet<String> = ["main".to_string()].into();
        assert!(book.frame_complete(6, &main_only).is_empty());
        // Reassigned to the main (client_only with no client left), epoch 2.
        let (moved, warnings) = book.place(&nodes[..1]);
        assert_eq!(moved.len(), 1);
        assert_eq!((moved[0].node_id.as_str(), moved[0].epoch), ("main", 2));
        assert!(
            warnings.iter().any(|w| w.contains("client_only")),
            "{warnings:?}"
        );
        book.frame_due(7, 350_000_000);
        assert!(book.frame_complete(7, &main_only).is_empty());
        book.frame_due(8, 400_000_000);
        let resumed = book.frame_complete(8, &main_only);
        assert_eq!(resumed.len(), 1);
        assert_eq!(resumed[0].frame, 8);
        assert_eq!(
            resumed[0].gap_frames, 3,
            "frames 5, 6, 7 had no radar sample"
        );
        assert_eq!(resumed[0].missed_samples, 1, "only frame 6 was due");
    }

    #[test]
    fn nothing_moves_while_every_owner_lives() {
        let mut book = SensorBook::new(&scenario());
        let nodes = [
            node("main", SensorNodeRole::Main),
            node("c1", SensorNodeRole::Client),
        ];
        book.place(&nodes);
        let (again, _) = book.place(&nodes);
        assert!(again.is_empty());
        assert_eq!(
            book.counts(),
            [("c1".to_string(), 1), ("main".to_string(), 1)].into()
        );
    }

    #[test]
    fn sensors_wait_unplaced_until_a_node_comes() {
        let mut book = SensorBook::new(&scenario());
        let (none, _) = book.place(&[]);
        assert!(none.is_empty());
        assert_eq!(book.unplaced().len(), 2);
        let (placed, _) = book.place(&[node("main", SensorNodeRole::Main)]);
        assert_eq!(placed.len(), 2);
        assert!(book.unplaced().is_empty());
    }
}
