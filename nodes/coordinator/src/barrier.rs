//! The lockstep barrier of one frame, as plain data: who owes what for frame N, who is late.

use convoy_core::node::NodeId;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// What frame N is waiting for: FrameDone N from every node that owes it (sensor nodes, sync
/// clients, and member agents in the peer handshake of frame 0), and AgentState N from every
/// member agent in every later frame, which is also that agent's FrameDone (agents write no
/// FrameDone after the handshake: DESIGN.md, "Time, clock and determinism").
#[derive(Debug)]
pub struct Barrier {
    pub frame: u64,
    started: Instant,
    /// node ids that still owe FrameDone for this frame.
    owed_done: BTreeSet<String>,
    /// agent ids whose state for this frame is still missing (`by_state`).
    owed_state: BTreeSet<String>,
    /// Nodes already reported late for this frame (each is named once per frame).
    reported: BTreeSet<String>,
    /// Nodes that answered this frame.
    acked: BTreeSet<String>,
    /// How often the frame's Tick was sent again (see [`Barrier::ask_again_due`]).
    asked_again: u32,
}

impl Barrier {
    /// `by_state`: members owe their state instead of a FrameDone (every frame but the peer
    /// handshake).
    pub fn new(frame: u64, members: &[String], by_state: bool, now: Instant) -> Barrier {
        let (owed_done, owed_state) = if by_state {
            (BTreeSet::new(), members.iter().cloned().collect())
        } else {
            let done = members.iter().map(|a| NodeId::agent(a).to_string());
            (done.collect(), BTreeSet::new())
        };
        Barrier {
            frame,
            started: now,
            owed_done,
            owed_state,
            reported: BTreeSet::new(),
            acked: BTreeSet::new(),
            asked_again: 0,
        }
    }

    /// Other nodes that owe this frame (sensor nodes whose sensors are due).
    pub fn owe(&mut self, node_ids: impl IntoIterator<Item = String>) {
        self.owed_done.extend(node_ids);
    }

    pub fn frame_done(&mut self, node_id: &str, frame: u64) {
        if frame >= self.frame && self.owed_done.remove(node_id) {
            self.acked.insert(node_id.to_string());
        }
    }

    /// A non-agent node left (its lease lapsed): it owes nothing any more.
    pub fn remove_node(&mut self, node_id: &str) {
        self.owed_done.remove(node_id);
    }

    /// Nodes that answered this frame.
    pub fn acked(&self) -> &BTreeSet<String> {
        &self.acked
    }

    pub fn state(&mut self, agent_id: &str, frame: u64) {
        if frame >= self.frame && self.owed_state.remove(agent_id) {
            self.acked.insert(NodeId::agent(agent_id).to_string());
        }
    }

    /// A member left (its lease lapsed): nothing is owed by it any more.
    pub fn remove_member(&mut self, agent_id: &str) {
        self.owed_done.remove(&NodeId::agent(agent_id).to_string());
        self.owed_state.remove(agent_id);
    }

    pub fn complete(&self) -> bool {
        self.owed_done.is_empty() && self.owed_state.is_empty()
    }

    pub fn elapsed(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.started)
    }

    /// Nodes late past `timeout` not reported yet for this frame (and marks them reported).
    pub fn newly_late(&mut self, now: Instant, timeout: Duration) -> Vec<String> {
        if self.elapsed(now) < timeout {
            return Vec::new();
        }
        let late: Vec<String> = self
            .owed()
            .into_iter()
            .filter(|n| !self.reported.contains(n))
            .collect();
        self.reported.extend(late.iter().cloned());
        late
    }

    /// True once per `timeout` the frame has been waiting: the coordinator then sends the
    /// frame's Tick again, and every node writes again what it answered (a sample lost for
    /// good must not stop the run; DESIGN.md, "Time, clock and determinism").
    pub fn ask_again_due(&mut self, now: Instant, timeout: Duration) -> bool {
        let due = timeout.saturating_mul(self.asked_again + 1);
        if timeout.is_zero() || self.elapsed(now) < due {
            return false;
        }
        self.asked_again += 1;
        true
    }

    /// What the frame still waits for, for the log: `sensor/n (FrameDone), agent/b (state)`.
    pub fn waiting_for(&self) -> String {
        let done = self.owed_done.iter().map(|n| format!("{n} (FrameDone)"));
        let states = self
            .owed_state
            .iter()
            .map(|a| format!("{} (state)", NodeId::agent(a)));
        done.chain(states).collect::<Vec<_>>().join(", ")
    }

    /// The node ids that have not answered this frame.
    pub fn owed(&self) -> Vec<String> {
        let states = self.owed_state.iter().map(|a| NodeId::agent(a).to_string());
        let mut owed: Vec<String> = self.owed_done.iter().cloned().chain(states).collect();
        owed.sort();
        owed.dedup();
        owed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_handshake_completes_on_every_members_frame_done_and_names_the_late_once() {
        let t0 = Instant::now();
        let members = vec!["a".to_string(), "b".to_string()];
        let mut b = Barrier::new(5, &members, false, t0);
        b.frame_done("agent/a", 5);
        b.state("b", 5);
        assert!(
            !b.complete(),
            "a state is not a FrameDone in the peer handshake"
        );
        b.frame_done("agent/b", 4);
        assert!(!b.complete(), "an old frame does not count");
        let later = t0 + Duration::from_secs(2);
        assert_eq!(b.newly_late(later, Duration::from_secs(1)), vec!["agent/b"]);
        assert!(b.newly_late(later, Duration::from_secs(1)).is_empty());
        b.remove_member("b");
        assert!(b.complete());
    }

    #[test]
    fn a_frame_completes_on_every_members_state_and_what_other_nodes_owe() {
        let t0 = Instant::now();
        let members = vec!["a".to_string(), "b".to_string()];
        let mut b = Barrier::new(5, &members, true, t0);
        b.owe(["sensor/s1".to_string()]);
        b.state("a", 5);
        b.state("b", 4);
        assert!(!b.complete(), "an old state does not count");
        let later = t0 + Duration::from_secs(2);
        assert_eq!(
            b.newly_late(later, Duration::from_secs(1)),
            vec!["agent/b", "sensor/s1"]
        );
        b.state("b", 5);
        assert!(!b.complete(), "the sensor node still owes its FrameDone");
        b.frame_done("sensor/s1", 5);
        assert!(b.complete());
        let acked: Vec<&String> = b.acked().iter().collect();
        assert_eq!(acked, ["agent/a", "agent/b", "sensor/s1"]);
    }

    #[test]
    fn asks_again_once_per_timeout_and_names_what_is_missing() {
        let t0 = Instant::now();
        let members = vec!["a".to_string(), "b".to_string()];
        let mut b = Barrier::new(7, &members, false, t0);
        b.frame_done("agent/a", 7);
        let timeout = Duration::from_secs(1);
        assert!(!b.ask_again_due(t0 + Duration::from_millis(900), timeout));
        assert!(b.ask_again_due(t0 + Duration::from_millis(1100), timeout));
        assert!(!b.ask_again_due(t0 + Duration::from_millis(1900), timeout));
        assert!(b.ask_again_due(t0 + Duration::from_millis(2100), timeout));
        assert_eq!(b.waiting_for(), "agent/b (FrameDone)");
        let mut by_state = Barrier::new(7, &members, true, t0);
        by_state.state("a", 7);
        assert_eq!(by_state.waiting_for(), "agent/b (state)");
    }
}
