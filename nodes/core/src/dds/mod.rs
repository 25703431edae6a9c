//! The one typed DDS layer: a node handle over a rustdds participant, typed publishers and
//! subscribers built from a typed topic (name, message type, QoS class) and the run's QoS library.
//!
//! Layers, as in the DDS spec: [`Participant`] is the domain participant (with one publisher
//! and one subscriber entity), [`Node`] a convoy node on one (a process's only node, or one of
//! the agents that share it), [`Publisher`] a data writer, [`Subscriber`] a data reader, [`discovery`]
//! the built-in topics. Policies rustdds accepts but does not enforce (deadline,
//! time_based_filter, lifespan) are enforced here, in `enforced`.
//!
//! Hot paths read with `take(n)` (rustdds's `take_next_sample` scans its whole cache per call)
//! and block on the reader's mio readiness instead of spinning; async consumers get a stream fed
//! by a dedicated thread that does exactly that.

mod delivery;
pub mod discovery;
mod endpoint;
pub(crate) mod enforced;
mod node;
mod publisher;
pub mod run_scope;
pub mod security;
pub mod shm;
mod shm_lane;
mod subscriber;
pub mod transport;
mod waitset;
pub mod wire;

use std::time::{Duration, Instant};

use rustdds::DomainParticipant;

use crate::messages::Message;
use crate::qos::QosError;
use crate::topics::TopicClass;

pub use delivery::{Listening, SampleStream};
pub use node::{Node, Participant};
pub use publisher::{PublishError, Publisher, TrailingBytes};
/// Ends a [`WaitSet::wait`] from another thread ([`WaitSet::waker`]).
pub use rustdds::mio1::Waker;
pub use subscriber::{ReaderStats, Received, Subscriber, ViewInfo};
pub use transport::{TransportError, TransportSettings};
pub use waitset::{ReaderToken, WaitSet};

/// True while the calling thread runs a reader's listener (see [`Subscriber::into_listener`]):
/// it is the participant's receive thread, where a reliable write that finds its send window
/// full fails at once with [`PublishError::WouldBlock`] instead of waiting for an
/// acknowledgement only this thread could process.
pub fn in_listener() -> bool {
    rustdds::in_listener()
}

/// The largest DDS domain id whose RTPS ports (7400 + 250 * id + offsets) fit in 16 bits.
pub const MAX_DOMAIN_ID: u32 = 232;

/// Why a node could not start.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("domain id {0} is out of range: DDS domain ids are 0..={MAX_DOMAIN_ID} (RTPS ports must fit in 16 bits)")]
    DomainOutOfRange(u32),
    #[error("node id '{0}' is invalid: use 1-64 characters from [a-z0-9_/-]")]
    BadNodeId(String),
    #[error("cannot join DDS domain {domain}: {reason}")]
    Participant { domain: u32, reason: String },
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error(transparent)]
    Security(#[from] security::SecurityError),
    #[error("cannot join DDS domain {domain} with the security files in {} ({}): {reason}", dir.display(), security::SECURITY_ENV)]
    Secured {
        domain: u32,
        dir: std::path::PathBuf,
        reason: String,
    },
}

/// The receive buffer convoy asks for on every DDS socket, and below which the OS's ceiling
/// (`net.core.rmem_max`) is reported: a 1 MiB sample is ~17 datagrams arriving in one burst.
const WANTED_SOCKET_BUFFER: u64 = 8 * 1024 * 1024;

/// What every convoy reader announces in its USER_DATA (`rcvbuf=<bytes>;`, vendored rustdds
/// change 30): the receive buffer its sockets get, the smaller of what convoy asks for and the
/// OS's ceiling. A writer on the same host whose readers all announce one pushes samples up to
/// half of it unpaced: pacing is for readers with the OS's default 212 KB (stock ROS 2 nodes),
/// and between convoy processes it cost a 1 MiB round trip ~3.5 ms.
/// The partitions of this process's convoy endpoints ([`run_scope`]), read once.
pub(crate) fn run_partitions() -> Result<Vec<String>, String> {
    static PARTITIONS: std::sync::OnceLock<Result<Vec<String>, String>> =
        std::sync::OnceLock::new();
    PARTITIONS
        .get_or_init(|| run_scope::RunId::from_env().map(|id| run_scope::partitions(id.as_ref())))
        .clone()
}

pub(crate) fn announced_receive_buffer() -> Vec<u8> {
    static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let bytes = *BYTES.get_or_init(|| {
        read_sysctl("/proc/sys/net/core/rmem_max").map_or(0, |max| max.min(WANTED_SOCKET_BUFFER))
    });
    format!("rcvbuf={bytes};").into_bytes()
}

/// A numeric kernel setting, e.g. `/proc/sys/net/core/rmem_max`.
fn read_sysctl(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// UDP datagrams this host has sent so far (every process, all interfaces, loopback
/// included): `OutDatagrams` of `/proc/net/snmp`. None where the kernel does not say. Benchmarks
/// count the datagrams a run costs with it.
pub fn udp_datagrams_sent() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    parse_udp_out_datagrams(&snmp)
}

fn parse_udp_out_datagrams(snmp: &str) -> Option<u64> {
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next()?, udp.next()?);
    let column = names.split_whitespace().position(|n| n == "OutDatagrams")?;
    values.split_whitespace().nth(column)?.parse().ok()
}

/// Says once per process when the OS caps socket buffers below what large samples need.
fn report_socket_buffer_ceiling() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for (path, sysctl) in [
            ("/proc/sys/net/core/rmem_max", "net.core.rmem_max"),
            ("/proc/sys/net/core/wmem_max", "net.core.wmem_max"),
        ] {
            if let Some(max) = read_sysctl(path) {
                if max < WANTED_SOCKET_BUFFER / 2 {
                    tracing::warn!(
                        "{sysctl} = {max} caps DDS socket buffers below the {} MiB large samples \
                         need (bursts may be dropped and resent); raise it with \
                         `sysctl -w {sysctl}={WANTED_SOCKET_BUFFER}`",
                        WANTED_SOCKET_BUFFER >> 20
                    );
                }
            }
        }
    });
}

/// Says once per process which link emulation is in force (`CONVOY_LINK`): at warn, because
/// every datagram the node sends is delayed or dropped on purpose.
fn report_link_emulation(link: &rustdds::LinkEmulation) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        tracing::warn!(
            "link emulation in convoy's transport ({}): {}",
            transport::LINK_ENV,
            transport::describe_link(link)
        );
    });
}

/// A sensor topic has one writer (its sensor) and no keys: one instance, whose history depth
/// is the most samples worth keeping. Its cache is sized so (`ResourceLimits::for_unkeyed`);
/// with the derived limits of 1024 instances, rustdds kept up to 8,192 camera images per reader
/// (gigabytes) and the reader fell behind. Unkeyed topics with many writers (FrameDone) keep
/// the derived limits: there the samples of every writer must fit.
fn single_writer_stream<M: Message>(class: TopicClass) -> bool {
    !M::KEYED && class == TopicClass::Sensor
}

/// Why a publisher or subscriber could not be created.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error(transparent)]
    Qos(#[from] QosError),
    #[error("topic '{topic}': {type_name} cannot be created: {reason}")]
    Create {
        topic: String,
        type_name: &'static str,
        reason: String,
    },
}

impl EndpointError {
    fn create<M: Message>(topic: &str, reason: impl ToString) -> EndpointError {
        EndpointError::Create {
            topic: topic.to_string(),
            type_name: M::TYPE_NAME,
            reason: reason.to_string(),
        }
    }
}

/// A bounded wait ran out.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    #[error("topic '{topic}': {matched} of {wanted} {what} matched after {waited:?}; is the other side running on the same domain id and QoS-compatible?")]
    MatchTimeout {
        topic: String,
        what: &'static str,
        wanted: usize,
        matched: usize,
        waited: Duration,
    },
}

/// Validates a domain id given by a user.
pub fn check_domain_id(domain: u32) -> Result<u16, NodeError> {
    if domain > MAX_DOMAIN_ID {
        return Err(NodeError::DomainOutOfRange(domain));
    }
    u16::try_from(domain).map_err(|_| NodeError::DomainOutOfRange(domain))
}

fn check_node_id(id: &str) -> Result<(), NodeError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'/' | b'-')
        });
    if ok {
        Ok(())
    } else {
        Err(NodeError::BadNodeId(id.to_string()))
    }
}

/// Whose readers a participant's writers serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peers {
    /// convoy's own nodes: reliable writers keep the back-pressure, and the participant is
    /// secured when `CONVOY_SECURITY` names the node's files.
    Convoy,
    /// Readers convoy does not control (the bridge's ROS side): reliable KEEP_LAST writers
    /// replace their oldest samples instead of waiting for a reader's acknowledgement (vendored
    /// rustdds change 22), so a reader that died does not slow the others; never secured (ROS 2
    /// from PyPI has no DDS Security, and the run's permissions name only the run's domain).
    Foreign,
}

/// A DDS participant on `domain` with convoy's transport settings (docs/TRANSPORT.md, from
/// the environment): every participant a convoy process makes comes from here, the ROS 2
/// bridge's included.
pub fn participant(domain: u32, peers: Peers) -> Result<DomainParticipant, NodeError> {
    let keep_last_replaces = peers == Peers::Foreign;
    let domain_id = check_domain_id(domain)?;
    let fail = |e: &dyn std::fmt::Display| NodeError::Participant {
        domain,
        reason: e.to_string(),
    };
    let transport = TransportSettings::from_env()?;
    // A bad run id stops the node here, before any endpoint would use it.
    run_partitions().map_err(|e| fail(&e))?;
    report_socket_buffer_ceiling();
    if let Some(link) = &transport.link {
        report_link_emulation(link);
    }
    let secured = match peers {
        Peers::Convoy => security::from_lookup(|var| std::env::var(var).ok())?,
        Peers::Foreign => None,
    };
    let mut builder = rustdds::DomainParticipantBuilder::new(domain_id);
    if let Some(dir) = &secured {
        tracing::info!(
            "DDS Security on: identity and permissions from {}",
            dir.display()
        );
        builder = builder.builtin_security(security::config_files(dir));
    }
    builder
        .static_discovery_peers(transport.peers)
        .pacing(transport.pacing, transport.writer_pacing)
        .max_datagram_payload(transport.max_datagram)
        .fragment_size(transport.fragment_size)
        .max_unacked_bytes(transport.window)
        .application_thread_push(transport.fast_push)
        .receive_threads(transport.receive_threads)
        .multicast_user_data(transport.multicast)
        .ack_batching(transport.ack_hold)
        .ack_ride_hold(transport.ack_ride_hold)
        .link_emulation(transport.link)
        .participant_lease(transport.dds_lease)
        .keep_last_replaces_unacked(keep_last_replaces)
        .socket_receive_buffer_size(WANTED_SOCKET_BUFFER as usize)
        .socket_send_buffer_size(WANTED_SOCKET_BUFFER as usize)
        .build()
        .map_err(|e| match secured {
            Some(dir) => NodeError::Secured {
                domain,
                dir,
                reason: e.to_string(),
            },
            None => fail(&e),
        })
}

/// Polls `condition` until it holds or `timeout` passes: the bounded wait every discovery
/// step uses. rustdds's match events are lossy (its status channel holds four events) and its
/// matched-endpoint queries are unimplemented, so matching is observed by polling discovery.
pub(crate) fn poll_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::node::deepened;
    use super::parse_udp_out_datagrams;
    use crate::qos::{EndpointQos, History, ResourceLimits, KEEP_ALL_MAX_SAMPLES};

    #[test]
    fn udp_datagrams_sent_is_the_out_datagrams_column() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
                    Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\n\
                    Udp: 1200 3 0 987 0\n\
                    UdpLite: InDatagrams NoPorts InErrors OutDatagrams\nUdpLite: 0 0 0 0\n";
        assert_eq!(parse_udp_out_datagrams(snmp), Some(987));
        assert_eq!(parse_udp_out_datagrams("Ip: a\nIp: 1\n"), None);
        assert!(
            super::udp_datagrams_sent().is_some(),
            "Linux has /proc/net/snmp"
        );
    }

    #[test]
    fn a_deep_reader_keeps_at_least_its_depth_and_never_less_than_its_profile() {
        let clock = EndpointQos {
            history: History::KeepLast(1),
            resource_limits: ResourceLimits::derived(History::KeepLast(1)),
            ..EndpointQos::default()
        };
        let deep = deepened(clock, 64);
        assert_eq!(deep.history, History::KeepLast(64));
        assert_eq!(deep.resource_limits.max_samples_per_instance, 64);
        assert_eq!(deep.resource_limits.max_samples, 64 * 1024);
        let wide = EndpointQos {
            history: History::KeepLast(100),
            resource_limits: ResourceLimits::derived(History::KeepLast(100)),
            ..EndpointQos::default()
        };
        assert_eq!(deepened(wide.clone(), 64), wide);
        let all = EndpointQos {
            history: History::KeepAll,
            resource_limits: ResourceLimits::derived(History::KeepAll),
            ..EndpointQos::default()
        };
        let deep = deepened(all, 64);
        assert_eq!(deep.history, History::KeepAll);
        assert_eq!(
            deep.resource_limits.max_samples_per_instance,
            KEEP_ALL_MAX_SAMPLES
        );
    }
}
