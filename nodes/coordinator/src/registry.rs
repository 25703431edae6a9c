//! The registry of nodes seen on `convoy/nodes`, with leases: plain data over explicit times.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use convoy_core::messages::{NodeRole, NodeStatus};
use convoy_core::status::OwnAbsence;

#[derive(Debug, Clone)]
pub struct Entry {
    pub status: NodeStatus,
    pub last_seen: Instant,
}

#[derive(Debug, Default)]
pub struct Registry {
    nodes: BTreeMap<String, Entry>,
    absence: OwnAbsence,
}

impl Registry {
    /// Records a status; true when the node is new.
    pub fn seen(&mut self, status: NodeStatus, now: Instant) -> bool {
        let id = status.node_id.clone();
        self.nodes
            .insert(
                id,
                Entry {
                    status,
                    last_seen: now,
                },
            )
            .is_none()
    }

    /// Removes and returns the nodes silent for longer than `lease`. A stretch longer than a
    /// quarter lease since the previous call is the coordinator's own stall (stopped, or
    /// starved of CPU), not the nodes' silence: it does not count against them.
    pub fn expire(&mut self, now: Instant, lease: Duration) -> Vec<Entry> {
        self.absence.forgive(
            now,
            lease / 4,
            self.nodes.values_mut().map(|e| &mut e.last_seen),
        );
        let gone: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.last_seen) > lease)
            .map(|(id, _)| id.clone())
            .collect();
        gone.into_iter()
            .filter_map(|id| self.nodes.remove(&id))
            .collect()
    }

    pub fn status(&self, node_id: &str) -> Option<&NodeStatus> {
        self.nodes.get(node_id).map(|e| &e.status)
    }

    pub fn contains(&self, node_id: &str) -> bool {
        self.nodes.contains_key(node_id)
    }

    pub fn with_role(&self, role: NodeRole) -> impl Iterator<Item = &Entry> {
        self.nodes.values().filter(move |e| e.status.role == role)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_expire_after_their_lease() {
        let t0 = Instant::now();
        let mut r = Registry::default();
        let status = |id: &str| NodeStatus {
            node_id: id.into(),
            role: NodeRole::Agent,
            ..NodeStatus::default()
        };
        assert!(r.seen(status("agent/a"), t0));
        assert!(!r.seen(status("agent/a"), t0 + Duration::from_secs(1)));
        assert!(r.seen(status("agent/b"), t0));
        let gone = r.expire(t0 + Duration::from_millis(2500), Duration::from_secs(2));
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].status.node_id, "agent/b");
        assert!(r.contains("agent/a"));
    }

    #[test]
    fn the_coordinators_own_stall_does_not_expire_anyone() {
        let t0 = Instant::now();
        let lease = Duration::from_secs(2);
        let mut r = Registry::default();
        let status = NodeStatus {
            node_id: "agent/a".into(),
            role: NodeRole::Agent,
            ..NodeStatus::default()
        };
        r.seen(status, t0);
        assert!(r.expire(t0 + Duration::from_millis(10), lease).is_empty());
        // Stopped for 3 s: agent/a's beats are still on their way.
        assert!(r.expire(t0 + Duration::from_secs(3), lease).is_empty());
        // Looking again every 10 ms, it is gone once silent for a lease, of which at most a
        // quarter lease (the usual gap between looks) falls in the stall.
        let mut t = t0 + Duration::from_secs(3);
        let mut gone = Vec::new();
        while gone.is_empty() {
            t += Duration::from_millis(10);
            gone = r.expire(t, lease);
        }
        let after = t - (t0 + Duration::from_secs(3));
        assert!(
            after > Duration::from_millis(1400) && after < Duration::from_millis(2100),
            "{after:?}"
        );
    }
}
