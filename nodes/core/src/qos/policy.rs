//! The QoS of one endpoint after a profile is resolved ([`EndpointQos`]), and its mapping onto
//! rustdds.
//!
//! These types mirror the DDS policies the loader accepts, with one representation each:
//! durations are `std::time::Duration` with [`INFINITE`] (`Duration::MAX`) for DDS's
//! `DURATION_INFINITY`; resource limits keep DDS's `LENGTH_UNLIMITED` (-1). Optional durations
//! (`deadline`, `time_based_filter`, `lifespan`, `latency_budget`) are `None` when the profile
//! leaves them at the DDS default (infinite deadline and lifespan, zero filter and budget), so
//! "nothing to enforce" is one value and not two.
//!
//! [`EndpointQos::to_rustdds`] always sets history and resource limits: rustdds's defaults
//! (KEEP_LAST 1, 64 samples) silently drop reliable samples past its small cache.

use std::fmt;
use std::time::Duration;

/// DDS's `DURATION_INFINITY`.
pub const INFINITE: Duration = Duration::MAX;
/// DDS's `LENGTH_UNLIMITED` in [`ResourceLimits`].
pub const LENGTH_UNLIMITED: i32 = -1;
/// DDS's default RELIABILITY `max_blocking_time` (DDS 1.4, 2.2.3).
pub const DEFAULT_MAX_BLOCKING_TIME: Duration = Duration::from_millis(100);
/// `max_instances` when a profile does not give it: instances in convoy are nodes, agents,
/// sensors or world requests, and 1024 of one kind is beyond any run convoy targets.
pub const DEFAULT_MAX_INSTANCES: i32 = 1024;
/// `max_samples` (and `max_samples_per_instance`) for KEEP_ALL when a profile gives no bound:
/// large enough that a healthy reader never hits it, small enough that a stuck one cannot
/// exhaust memory with large samples.
pub const KEEP_ALL_MAX_SAMPLES: i32 = 100_000;

/// RELIABILITY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reliability {
    BestEffort,
    /// `max_blocking_time` may be [`INFINITE`].
    Reliable {
        max_blocking_time: Duration,
    },
}

/// DURABILITY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    Volatile,
    TransientLocal,
    Transient,
    Persistent,
}

/// HISTORY. The depth is at least 1 and at most `i32::MAX` (the loader checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    KeepLast(u32),
    KeepAll,
}

/// RESOURCE_LIMITS; each field is positive or [`LENGTH_UNLIMITED`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceLimits {
    pub max_samples: i32,
    pub max_instances: i32,
    pub max_samples_per_instance: i32,
}

impl ResourceLimits {
    /// The limits convoy uses when a profile gives none, derived from its history:
    /// KEEP_LAST d keeps d samples per instance for up to [`DEFAULT_MAX_INSTANCES`] instances
    /// (max_samples = d * instances, so the topic-wide cache never evicts another instance's
    /// samples); KEEP_ALL keeps up to [`KEEP_ALL_MAX_SAMPLES`].
    /// The limits of a topic without keys, which has exactly one instance: one instance, and
    /// no more samples than that instance may hold. rustdds keeps every sample of a topic up to
    /// `max_samples` in the reader's cache, so an unkeyed camera topic with the derived
    /// KEEP_LAST 8 limits (8 x 1024 samples) grew to gigabytes between collections and the
    /// reader fell behind.
    pub fn for_unkeyed(self) -> ResourceLimits {
        let max_samples = match (self.max_samples, self.max_samples_per_instance) {
            (LENGTH_UNLIMITED, per) => per,
            (all, LENGTH_UNLIMITED) => all,
            (all, per) => all.min(per),
        };
        ResourceLimits {
            max_samples,
            max_instances: 1,
            max_samples_per_instance: self.max_samples_per_instance,
        }
    }

    pub fn derived(history: History) -> ResourceLimits {
        match history {
            History::KeepLast(depth) => {
                let depth = i32::try_from(depth).unwrap_or(i32::MAX);
                ResourceLimits {
                    max_samples: depth.saturating_mul(DEFAULT_MAX_INSTANCES),
                    max_instances: DEFAULT_MAX_INSTANCES,
                    max_samples_per_instance: depth,
                }
            }
            History::KeepAll => ResourceLimits {
                max_samples: KEEP_ALL_MAX_SAMPLES,
                max_instances: DEFAULT_MAX_INSTANCES,
                max_samples_per_instance: KEEP_ALL_MAX_SAMPLES,
            },
        }
    }
}

/// The kind of LIVELINESS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LivelinessKind {
    Automatic,
    ManualByParticipant,
    ManualByTopic,
}

/// LIVELINESS: kind and lease (the lease may be [`INFINITE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveliness {
    pub kind: LivelinessKind,
    pub lease_duration: Duration,
}

/// OWNERSHIP and, for writers, OWNERSHIP_STRENGTH (readers carry strength 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    Shared,
    Exclusive(i32),
}

/// DESTINATION_ORDER.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DestinationOrder {
    ByReceptionTimestamp,
    BySourceTimestamp,
}

/// Every policy convoy applies to one endpoint (or topic), fully resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointQos {
    pub reliability: Reliability,
    pub durability: Durability,
    pub history: History,
    /// Always explicit: derived from `history` when a profile does not give them.
    pub resource_limits: ResourceLimits,
    /// None: no deadline (DDS's infinite default).
    pub deadline: Option<Duration>,
    /// minimum_separation; readers only (None elsewhere, and for a zero separation).
    pub time_based_filter: Option<Duration>,
    /// None: samples never expire. A reader carries its topic_qos lifespan, which is the one
    /// convoy drops stale samples by (DDS makes lifespan a writer policy, applied at readers).
    pub lifespan: Option<Duration>,
    /// None: DDS's default, AUTOMATIC with an infinite lease.
    pub liveliness: Option<Liveliness>,
    pub ownership: Ownership,
    pub destination_order: DestinationOrder,
    /// None: zero, DDS's default.
    pub latency_budget: Option<Duration>,
}

impl Default for EndpointQos {
    /// The DDS 1.4 defaults of a *DataReader* (and of a Topic): BEST_EFFORT, VOLATILE,
    /// KEEP_LAST 1, no deadline/filter/lifespan/budget, AUTOMATIC liveliness with an infinite
    /// lease, SHARED ownership, BY_RECEPTION_TIMESTAMP; resource limits derived from KEEP_LAST 1
    /// (see [`ResourceLimits::derived`]). A DataWriter's defaults differ only in reliability:
    /// see [`EndpointQos::writer_default`].
    fn default() -> EndpointQos {
        let history = History::KeepLast(1);
        EndpointQos {
            reliability: Reliability::BestEffort,
            durability: Durability::Volatile,
            history,
            resource_limits: ResourceLimits::derived(history),
            deadline: None,
            time_based_filter: None,
            lifespan: None,
            liveliness: None,
            ownership: Ownership::Shared,
            destination_order: DestinationOrder::ByReceptionTimestamp,
            latency_budget: None,
        }
    }
}

impl EndpointQos {
    /// The DDS 1.4 defaults of a DataWriter: the reader defaults, but RELIABLE with a 100 ms
    /// max_blocking_time.
    pub fn writer_default() -> EndpointQos {
        EndpointQos {
            reliability: Reliability::Reliable {
                max_blocking_time: DEFAULT_MAX_BLOCKING_TIME,
            },
            ..EndpointQos::default()
        }
    }

    /// The rustdds QoS for this endpoint. History, resource limits, reliability, durability,
    /// ownership and destination order are always set; the optional policies only when the
    /// profile gives them. `LENGTH_UNLIMITED` becomes `i32::MAX`: rustdds's reader cache takes
    /// a KEEP_ALL reader's `max_samples_per_instance` of -1 literally and drops every sample.
    pub fn to_rustdds(&self) -> rustdds::QosPolicies {
        use rustdds::policy;
        let limit = |n: i32| if n == LENGTH_UNLIMITED { i32::MAX } else { n };
        let mut builder = rustdds::QosPolicyBuilder::new()
            .reliability(match self.reliability {
                Reliability::BestEffort => policy::Reliability::BestEffort,
                Reliability::Reliable { max_blocking_time } => policy::Reliability::Reliable {
                    max_blocking_time: dds_duration(max_blocking_time),
                },
            })
            .durability(match self.durability {
                Durability::Volatile => policy::Durability::Volatile,
                Durability::TransientLocal => policy::Durability::TransientLocal,
                Durability::Transient => policy::Durability::Transient,
                Durability::Persistent => policy::Durability::Persistent,
            })
            .history(match self.history {
                History::KeepLast(depth) => policy::History::KeepLast {
                    depth: i32::try_from(depth).unwrap_or(i32::MAX),
                },
                History::KeepAll => policy::History::KeepAll,
            })
            .resource_limits(policy::ResourceLimits {
                max_samples: limit(self.resource_limits.max_samples),
                max_instances: limit(self.resource_limits.max_instances),
                max_samples_per_instance: limit(self.resource_limits.max_samples_per_instance),
            })
            .ownership(match self.ownership {
                Ownership::Shared => policy::Ownership::Shared,
                Ownership::Exclusive(strength) => policy::Ownership::Exclusive { strength },
            })
            .destination_order(match self.destination_order {
                DestinationOrder::ByReceptionTimestamp => {
                    policy::DestinationOrder::ByReceptionTimestamp
                }
                DestinationOrder::BySourceTimestamp => policy::DestinationOrder::BySourceTimeStamp,
            });
        // The optional policies still go to rustdds where convoy enforces them itself: they
        // travel in discovery, so other DDS implementations match against the real values.
        if let Some(period) = self.deadline {
            builder = builder.deadline(policy::Deadline(dds_duration(period)));
        }
        if let Some(separation) = self.time_based_filter {
            builder = builder.time_based_filter(policy::TimeBasedFilter {
                minimum_separation: dds_duration(separation),
            });
        }
        if let Some(duration) = self.lifespan {
            builder = builder.lifespan(policy::Lifespan {
                duration: dds_duration(duration),
            });
        }
        if let Some(liveliness) = self.liveliness {
            let lease_duration = dds_duration(liveliness.lease_duration);
            builder = builder.liveliness(match liveliness.kind {
                LivelinessKind::Automatic => policy::Liveliness::Automatic { lease_duration },
                LivelinessKind::ManualByParticipant => {
                    policy::Liveliness::ManualByParticipant { lease_duration }
                }
                LivelinessKind::ManualByTopic => {
                    policy::Liveliness::ManualByTopic { lease_duration }
                }
            });
        }
        if let Some(duration) = self.latency_budget {
            builder = builder.latency_budget(policy::LatencyBudget {
                duration: dds_duration(duration),
            });
        }
        builder.build()
    }
}

/// A rustdds duration; anything past its 32-bit seconds is its INFINITE.
fn dds_duration(d: Duration) -> rustdds::Duration {
    if d.as_secs() >= i32::MAX as u64 {
        rustdds::Duration::INFINITE
    } else {
        rustdds::Duration::from_std(d)
    }
}

/// A duration as `convoy qos show` prints it: `infinite`, `0`, `250 ms`, `2 s`, `1.5 s`.
pub fn format_duration(d: Duration) -> String {
    if d == INFINITE {
        return "infinite".to_string();
    }
    let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
    if secs == 0 && nanos == 0 {
        "0".to_string()
    } else if nanos == 0 {
        format!("{secs} s")
    } else if secs == 0 && nanos % 1_000_000 == 0 {
        format!("{} ms", nanos / 1_000_000)
    } else if secs == 0 && nanos % 1_000 == 0 {
        format!("{} us", nanos / 1_000)
    } else if secs == 0 && nanos < 1_000 {
        format!("{nanos} ns")
    } else {
        let frac = format!("{nanos:09}");
        format!("{secs}.{} s", frac.trim_end_matches('0'))
    }
}

impl fmt::Display for Reliability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reliability::BestEffort => f.write_str("BEST_EFFORT"),
            Reliability::Reliable { max_blocking_time } => write!(
                f,
                "RELIABLE (max_blocking_time {})",
                format_duration(*max_blocking_time)
            ),
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Durability::Volatile => "VOLATILE",
            Durability::TransientLocal => "TRANSIENT_LOCAL",
            Durability::Transient => "TRANSIENT",
            Durability::Persistent => "PERSISTENT",
        })
    }
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            History::KeepLast(depth) => write!(f, "KEEP_LAST {depth}"),
            History::KeepAll => f.write_str("KEEP_ALL"),
        }
    }
}

impl fmt::Display for ResourceLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = |v: i32| {
            if v == LENGTH_UNLIMITED {
                "LENGTH_UNLIMITED".to_string()
            } else {
                v.to_string()
            }
        };
        write!(
            f,
            "max_samples {}, max_instances {}, max_samples_per_instance {}",
            n(self.max_samples),
            n(self.max_instances),
            n(self.max_samples_per_instance)
        )
    }
}

impl fmt::Display for LivelinessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LivelinessKind::Automatic => "AUTOMATIC",
            LivelinessKind::ManualByParticipant => "MANUAL_BY_PARTICIPANT",
            LivelinessKind::ManualByTopic => "MANUAL_BY_TOPIC",
        })
    }
}

impl fmt::Display for Liveliness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, lease {}",
            self.kind,
            format_duration(self.lease_duration)
        )
    }
}

impl fmt::Display for Ownership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ownership::Shared => f.write_str("SHARED"),
            Ownership::Exclusive(strength) => write!(f, "EXCLUSIVE (strength {strength})"),
        }
    }
}

impl fmt::Display for DestinationOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DestinationOrder::ByReceptionTimestamp => "BY_RECEPTION_TIMESTAMP",
            DestinationOrder::BySourceTimestamp => "BY_SOURCE_TIMESTAMP",
        })
    }
}

impl fmt::Display for EndpointQos {
    /// One policy per line, each as `name  value`, every policy present (defaults included),
    /// so `convoy qos show` never leaves the reader guessing. A width (`{:4}`) indents each
    /// line by that many spaces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |d: Option<Duration>, none: &str| match d {
            Some(d) => format_duration(d),
            None => none.to_string(),
        };
        let prefix = f.width().unwrap_or(0);
        let pad = " ".repeat(prefix);
        let lines = [
            ("reliability", self.reliability.to_string()),
            ("durability", self.durability.to_string()),
            ("history", self.history.to_string()),
            ("resource_limits", self.resource_limits.to_string()),
            ("deadline", opt(self.deadline, "infinite (none)")),
            ("time_based_filter", opt(self.time_based_filter, "0 (none)")),
            ("lifespan", opt(self.lifespan, "infinite (none)")),
            (
                "liveliness",
                match self.liveliness {
                    Some(l) => l.to_string(),
                    None => "AUTOMATIC, lease infinite (default)".to_string(),
                },
            ),
            ("ownership", self.ownership.to_string()),
            ("destination_order", self.destination_order.to_string()),
            ("latency_budget", opt(self.latency_budget, "0 (none)")),
        ];
        for (name, value) in lines {
            writeln!(f, "{pad}{name:<19}{value}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_rustdds_always_sets_history_and_resource_limits() {
        for qos in [EndpointQos::default(), EndpointQos::writer_default()] {
            let dds = qos.to_rustdds();
            assert_eq!(
                dds.history(),
                Some(rustdds::policy::History::KeepLast { depth: 1 })
            );
            assert_eq!(
                dds.resource_limits(),
                Some(rustdds::policy::ResourceLimits {
                    max_samples: DEFAULT_MAX_INSTANCES,
                    max_instances: DEFAULT_MAX_INSTANCES,
                    max_samples_per_instance: 1,
                })
            );
            assert!(dds.reliability().is_some());
            assert!(dds.durability().is_some());
            assert!(dds.deadline().is_none());
        }
        let keep_all = EndpointQos {
            history: History::KeepAll,
            resource_limits: ResourceLimits {
                max_samples: LENGTH_UNLIMITED,
                max_instances: 4,
                max_samples_per_instance: LENGTH_UNLIMITED,
            },
            ..EndpointQos::default()
        };
        let dds = keep_all.to_rustdds();
        assert_eq!(dds.history(), Some(rustdds::policy::History::KeepAll));
        assert_eq!(
            dds.resource_limits(),
            Some(rustdds::policy::ResourceLimits {
                max_samples: i32::MAX,
                max_instances: 4,
                max_samples_per_instance: i32::MAX,
            })
        );
    }

    #[test]
    fn to_rustdds_maps_every_policy() {
        let qos = EndpointQos {
            reliability: Reliability::Reliable {
                max_blocking_time: INFINITE,
            },
            durability: Durability::TransientLocal,
            history: History::KeepLast(16),
            resource_limits: ResourceLimits::derived(History::KeepLast(16)),
            deadline: Some(Duration::from_millis(250)),
            time_based_filter: Some(Duration::from_millis(10)),
            lifespan: Some(Duration::from_secs(2)),
            liveliness: Some(Liveliness {
                kind: LivelinessKind::ManualByTopic,
                lease_duration: Duration::from_secs(3),
            }),
            ownership: Ownership::Exclusive(7),
            destination_order: DestinationOrder::BySourceTimestamp,
            latency_budget: Some(Duration::from_millis(1)),
        };
        use rustdds::policy as p;
        let dds = qos.to_rustdds();
        assert_eq!(
            dds.reliability(),
            Some(p::Reliability::Reliable {
                max_blocking_time: rustdds::Duration::INFINITE
            })
        );
        assert_eq!(dds.durability(), Some(p::Durability::TransientLocal));
        assert_eq!(dds.history(), Some(p::History::KeepLast { depth: 16 }));
        assert_eq!(
            dds.resource_limits().map(|r| r.max_samples_per_instance),
            Some(16)
        );
        assert_eq!(
            dds.deadline(),
            Some(p::Deadline(rustdds::Duration::from_millis(250)))
        );
        assert_eq!(
            dds.time_based_filter(),
            Some(p::TimeBasedFilter {
                minimum_separation: rustdds::Duration::from_millis(10)
            })
        );
        assert_eq!(
            dds.lifespan(),
            Some(p::Lifespan {
                duration: rustdds::Duration::from_secs(2)
            })
        );
        assert_eq!(
            dds.liveliness(),
            Some(p::Liveliness::ManualByTopic {
                lease_duration: rustdds::Duration::from_secs(3)
            })
        );
        assert_eq!(
            dds.ownership(),
            Some(p::Ownership::Exclusive { strength: 7 })
        );
        assert_eq!(
            dds.destination_order(),
            Some(p::DestinationOrder::BySourceTimeStamp)
        );
        assert_eq!(
            dds.latency_budget(),
            Some(p::LatencyBudget {
                duration: rustdds::Duration::from_millis(1)
            })
        );
    }

    #[test]
    fn unkeyed_topics_hold_one_instance() {
        let unkeyed = ResourceLimits::derived(History::KeepLast(8)).for_unkeyed();
        assert_eq!((unkeyed.max_samples, unkeyed.max_instances), (8, 1));
        let unlimited = ResourceLimits {
            max_samples: LENGTH_UNLIMITED,
            max_instances: LENGTH_UNLIMITED,
            max_samples_per_instance: 16,
        };
        assert_eq!(unlimited.for_unkeyed().max_samples, 16);
        let per_unlimited = ResourceLimits {
            max_samples: 256,
            max_instances: 4,
            max_samples_per_instance: LENGTH_UNLIMITED,
        };
        assert_eq!(per_unlimited.for_unkeyed().max_samples, 256);
    }

    #[test]
    fn derived_limits_cover_every_instance() {
        assert_eq!(
            ResourceLimits::derived(History::KeepLast(8)),
            ResourceLimits {
                max_samples: 8 * DEFAULT_MAX_INSTANCES,
                max_instances: DEFAULT_MAX_INSTANCES,
                max_samples_per_instance: 8,
            }
        );
        assert_eq!(
            ResourceLimits::derived(History::KeepLast(u32::MAX)).max_samples,
            i32::MAX
        );
        assert_eq!(
            ResourceLimits::derived(History::KeepAll).max_samples,
            KEEP_ALL_MAX_SAMPLES
        );
    }

    #[test]
    fn durations_print_readably() {
        assert_eq!(format_duration(INFINITE), "infinite");
        assert_eq!(format_duration(Duration::ZERO), "0");
        assert_eq!(format_duration(Duration::from_millis(100)), "100 ms");
        assert_eq!(format_duration(Duration::from_secs(2)), "2 s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(format_duration(Duration::from_micros(250)), "250 us");
        assert_eq!(format_duration(Duration::from_nanos(7)), "7 ns");
    }
}
