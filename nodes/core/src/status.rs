//! Every node's presence on `convoy/nodes`: a NodeStatus written at start and then every
//! [`beat_period`], so the coordinator's registry sees it alive; silence past the scenario's
//! lease means the node is gone (a killed process stops beating at once).
//!
//! The beacon of every node but an agent also watches the other nodes' beats. When one falls
//! silent past the lease, this node tells DDS to drop that node's participant at once:
//! otherwise this node's reliable writers keep waiting for the dead node's readers to
//! acknowledge until the (longer) DDS participant lease lapses, and a lockstep run or a
//! reassigned sensor stalls meanwhile.
//!
//! Nodes beat eight times a lease, four times a second under the default 2 s lease and at
//! least once a second under a long one ([`beat_period`]).
//!
//! Agents do not watch: every node beats (four times a second under the default lease), so
//! with every node reading every beat the status traffic grows with the square of the nodes
//! (64 agents: 65 x 64 beats and as many acknowledgements, 33,000 datagrams a second, which
//! kept a 64-agent run on two cores from getting through start-up). What an agent writes is
//! read by the coordinator, by tools and, peer to peer, by other agents; a KEEP_LAST writer
//! whose reader stopped answering goes on without it after 200 ms (rustdds change 36), and
//! the coordinator, which watches, takes a silent agent out of the run.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::dds::{EndpointError, Node, PublishError, Publisher, Subscriber};
use crate::messages::{Counter, NodeRole, NodeStatus};
use crate::node::hostname;
use crate::topics;

/// How often a node repeats its status under the default 2 s lease (and at most: see
/// [`beat_period`]).
pub const BEAT: Duration = Duration::from_millis(250);

/// The longest status period, however long the lease: counters and a sensor node's load
/// reach the coordinator at least this often.
pub const LONGEST_BEAT: Duration = Duration::from_secs(1);

/// How often a node beats under `lease`: eight beats a lease, between [`BEAT`] and
/// [`LONGEST_BEAT`]. A long lease is what large runs set (the lockstep bench gives 64 agents
/// 16 s), and four beats a second from each of their nodes were a tenth of the datagrams of a
/// 64-agent frame on two cores, to keep a 16 s lease alive.
pub fn beat_period(lease: Duration) -> Duration {
    (lease / 8).clamp(BEAT, LONGEST_BEAT)
}

/// The status lease when the scenario does not set one (DESIGN.md: 2 s).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(2);
/// The status counter that carries the node's process id.
pub const PID_COUNTER: &str = "pid";

/// A watcher's own absence: the process was stopped, or starved of CPU on a loaded machine,
/// and did not look at its peers for a while. Peers' silence over that stretch says nothing
/// about them (their beats are on their way, or queued in a reader that did not run either),
/// so a lease check subtracts it instead of declaring every peer gone at once.
#[derive(Debug, Default)]
pub struct OwnAbsence {
    last_look: Option<Instant>,
}

impl OwnAbsence {
    /// Records a look at `now`. When the gap since the previous look was longer than `usual`,
    /// moves each peer's `last_heard` on by the excess (never past `now`), so that stretch
    /// does not count against the peer's lease.
    pub fn forgive<'a>(
        &mut self,
        now: Instant,
        usual: Duration,
        last_heard: impl IntoIterator<Item = &'a mut Instant>,
    ) {
        let away = self.last_look.map_or(Duration::ZERO, |last| {
            now.saturating_duration_since(last).saturating_sub(usual)
        });
        self.last_look = Some(now);
        if !away.is_zero() {
            for at in last_heard {
                *at = (*at + away).min(now);
            }
        }
    }
}

pub struct StatusBeacon {
    node: Node,
    publisher: Publisher<NodeStatus>,
    /// Beats a slow reader kept from going out in time (each replaced by the next).
    beats_skipped: u64,
    status: NodeStatus,
    last: Option<Instant>,
    /// None for an agent (see the module doc).
    peers: Option<Subscriber<NodeStatus>>,
    /// Other nodes' last beat: node id -> (writer of its status, when seen).
    seen: BTreeMap<String, (rustdds::GUID, Instant)>,
    lease: Duration,
    absence: OwnAbsence,
}

impl StatusBeacon {
    pub fn new(node: &Node, role: NodeRole) -> Result<StatusBeacon, EndpointError> {
        Ok(StatusBeacon {
            node: node.clone(),
            peers: match role {
                NodeRole::Agent => None,
                _ => Some(node.subscriber(&topics::nodes())?),
            },
            seen: BTreeMap::new(),
            lease: DEFAULT_LEASE,
            absence: OwnAbsence::default(),
            publisher: node.publisher(&topics::nodes())?,
            beats_skipped: 0,
            status: NodeStatus {
                node_id: node.node_id().to_string(),
                role,
                host: hostname(),
                capacity: 1.0,
                load: 0.0,
                // Names the process to whoever must tell two nodes apart (a coordinator
                // meeting another of its run).
                counters: vec![Counter {
                    name: PID_COUNTER.into(),
                    value: u64::from(std::process::id()),
                }],
            },
            last: None,
        })
    }

    /// Whether `writer` (of a status sample) is on this node's participant: this node itself,
    /// or an agent sharing its process (`convoy_agent::group`; the coordinator, which asks,
    /// never shares its participant).
    pub fn is_own(&self, writer: &rustdds::GUID) -> bool {
        writer.prefix == rustdds::RTPSEntity::guid(self.node.participant()).prefix
    }

    /// The silence after which another node counts as gone (the scenario's `lease`).
    pub fn set_lease(&mut self, lease: Duration) {
        self.lease = lease;
    }

    /// This node's capacity (sensor nodes: how much sensor load it takes, 1.0 = one machine).
    pub fn set_capacity(&mut self, capacity: f64) {
        self.status.capacity = capacity;
    }

    /// The load this node carries now (sensor nodes: the sum of their sensors' loads).
    pub fn set_load(&mut self, load: f64) {
        self.status.load = load;
    }

    /// Writes a last beat with the final counters and waits (bounded) until the readers have it:
    /// a node that stops reports what it did, even when its run was shorter than a beat period.
    pub fn final_beat(&mut self, wait: Duration) {
        self.last = None;
        if self.beat().is_ok() {
            self.publisher.wait_for_acknowledgments(wait);
        }
    }

    /// Makes the next [`StatusBeacon::beat`] write at once (something others wait on changed).
    pub fn beat_now(&mut self) {
        self.last = None;
    }

    /// Sets a counter reported with the next beat.
    pub fn set_counter(&mut self, name: &str, value: u64) {
        match self.status.counters.iter_mut().find(|c| c.name == name) {
            Some(c) => c.value = value,
            None => self.status.counters.push(Counter {
                name: name.to_string(),
                value,
            }),
        }
    }

    /// Whether the next [`StatusBeacon::beat`] writes: counters worth gathering only then.
    pub fn due(&self) -> bool {
        let period = beat_period(self.lease);
        self.last.is_none_or(|last| last.elapsed() >= period)
    }

    /// How long until the next [`StatusBeacon::beat`] writes (zero when one is due).
    pub fn until_due(&self) -> Duration {
        let period = beat_period(self.lease);
        self.last
            .map_or(Duration::ZERO, |last| period.saturating_sub(last.elapsed()))
    }

    /// Writes the status when a beat is due, and drops the DDS participants of nodes that
    /// fell silent; cheap to call every loop iteration.
    pub fn beat(&mut self) -> Result<(), PublishError> {
        if !self.due() {
            return Ok(());
        }
        let now = Instant::now();
        self.last = Some(now);
        self.watch_peers(now);
        match self.publisher.write(self.status.clone()) {
            // A beat that a slow reader has not acknowledged in time is superseded by the next
            // one (KEEP_LAST 1): the node goes on. On an overloaded host (64 agents on 2 cores)
            // nodes died of it during start-up. Readers judge liveness by the beats that arrive.
            Err(PublishError::WouldBlock { topic }) => {
                self.beats_skipped += 1;
                if self.beats_skipped == 1 {
                    tracing::warn!(
                        "{topic}: a status beat was not acknowledged in time; skipped (the next \
                         one replaces it)"
                    );
                }
                Ok(())
            }
            other => other,
        }
    }

    fn watch_peers(&mut self, now: Instant) {
        let Some(peers) = self.peers.as_mut() else {
            return;
        };
        for status in peers.take(256) {
            if status.value.node_id == self.status.node_id {
                continue;
            }
            let before = self
                .seen
                .insert(status.value.node_id.clone(), (status.writer, now));
            if let Some((old, _)) = before {
                if old.prefix != status.writer.prefix {
                    // The node restarted under the same id: its old participant is dead.
                    tracing::debug!(
                        "node {} restarted: dropping its old participant",
                        status.value.node_id
                    );
                    self.node.forget_participant_of(old);
                }
            }
        }
        let lease = self.lease;
        // This node's own stall is not the peers' silence (see OwnAbsence).
        self.absence.forgive(
            now,
            beat_period(lease) + lease / 4,
            self.seen.values_mut().map(|(_, at)| at),
        );
        let gone: Vec<String> = self
            .seen
            .iter()
            .filter(|(_, (_, at))| now.saturating_duration_since(*at) > lease)
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            if let Some((writer, _)) = self.seen.remove(&id) {
                tracing::debug!("node {id} silent for {lease:?}: dropping its DDS participant");
                self.node.forget_participant_of(writer);
            }
        }
    }
}

/// The prefix of the status counters that carry a node's world digest: `world/<file>` = the
/// first 64 bits of the SHA-256 of a map file, as the scenario names it (convoy-world computes
/// them). The coordinator compares them with its own (DESIGN.md, "Worlds and maps").
pub const WORLD_COUNTER_PREFIX: &str = "world/";

/// Puts a world's file digests (`(name, digest)`) in the node's status.
pub fn announce_world_digests(beacon: &mut StatusBeacon, digests: &[(String, u64)]) {
    for (name, digest) in digests {
        beacon.set_counter(&format!("{WORLD_COUNTER_PREFIX}{name}"), *digest);
    }
}

/// Why a node's world differs from `own` (the coordinator's digests), naming the file, the node
/// and its host; `None` when they agree or the node announces no world (a node that does not
/// load one: a bridge without a view, a tool).
pub fn world_mismatch(own: &[(String, u64)], status: &NodeStatus) -> Option<String> {
    let theirs: BTreeMap<&str, u64> = status
        .counters
        .iter()
        .filter_map(|c| {
            c.name
                .strip_prefix(WORLD_COUNTER_PREFIX)
                .map(|n| (n, c.value))
        })
        .collect();
    if theirs.is_empty() {
        return None;
    }
    let ours: BTreeMap<&str, u64> = own.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let who = format!("node {} on host {}", status.node_id, status.host);
    for (name, digest) in &ours {
        match theirs.get(name) {
            None => return Some(format!("{who} has no map file '{name}' in its world")),
            Some(d) if d != digest => {
                return Some(format!(
                    "map file '{name}' differs on {who} (digest {d:016x}, the coordinator's \
                     {digest:016x}): every host must have the same copy"
                ))
            }
            Some(_) => {}
        }
    }
    theirs.keys().find(|n| !ours.contains_key(*n)).map(|name| {
        format!("{who} loads map file '{name}', which the coordinator's scenario does not name")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_beat_eight_times_a_lease_within_bounds() {
        assert_eq!(beat_period(DEFAULT_LEASE), BEAT);
        assert_eq!(beat_period(Duration::from_millis(500)), BEAT);
        assert_eq!(
            beat_period(Duration::from_secs(4)),
            Duration::from_millis(500)
        );
        assert_eq!(beat_period(Duration::from_secs(16)), LONGEST_BEAT);
    }
}
