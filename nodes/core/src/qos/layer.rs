//! One layer of QoS settings as a `*_qos` element writes them, and how layers stack.
//!
//! Inheritance works per leaf, as in DDS-XML implementations: a derived profile that writes
//! `<reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>` keeps its base's
//! max_blocking_time. So a layer holds every leaf as an `Option` (with the line that set it, for
//! error messages), layers stack with [`Layer::over`], and only the final stack is turned into
//! an [`EndpointQos`] by [`Layer::finalize`], which fills in the DDS defaults and derives the
//! resource limits from the *resulting* history (a derived profile that only deepens the
//! history gets limits that follow it).

use std::time::Duration;

use super::error::QosError;
use super::policy::*;

/// A value and the line of the file that set it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<T> {
    pub value: T,
    pub line: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReliabilityKind {
    BestEffort,
    Reliable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HistoryKind {
    KeepLast,
    KeepAll,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OwnershipKind {
    Shared,
    Exclusive,
}

/// What a QoS applies to; decides the DDS defaults and which policies are meaningful.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entity {
    Topic,
    Writer,
    Reader,
}

/// Every leaf a `*_qos` element can set; `None` = not set by this layer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Layer {
    pub reliability: Option<At<ReliabilityKind>>,
    pub max_blocking_time: Option<At<Duration>>,
    pub durability: Option<At<Durability>>,
    pub history: Option<At<HistoryKind>>,
    pub depth: Option<At<u32>>,
    pub max_samples: Option<At<i32>>,
    pub max_instances: Option<At<i32>>,
    pub max_samples_per_instance: Option<At<i32>>,
    pub deadline: Option<At<Duration>>,
    pub time_based_filter: Option<At<Duration>>,
    pub lifespan: Option<At<Duration>>,
    pub liveliness: Option<At<LivelinessKind>>,
    pub lease_duration: Option<At<Duration>>,
    pub ownership: Option<At<OwnershipKind>>,
    pub ownership_strength: Option<At<i32>>,
    pub destination_order: Option<At<DestinationOrder>>,
    pub latency_budget: Option<At<Duration>>,
}

macro_rules! stack {
    ($below:expr, $top:expr; $($field:ident),* $(,)?) => {
        Layer { $($field: $top.$field.or($below.$field)),* }
    };
}

/// Where a finalize error is reported: file, profile and the element kind it concerns.
pub(crate) struct Context<'a> {
    pub file: &'a str,
    pub profile: &'a str,
    pub profile_line: u32,
    pub entity: String,
}

impl Layer {
    /// `top` stacked on `self`: every leaf `top` sets wins.
    pub fn over(&self, top: &Layer) -> Layer {
        stack!(self, top;
            reliability, max_blocking_time, durability, history, depth, max_samples,
            max_instances, max_samples_per_instance, deadline, time_based_filter, lifespan,
            liveliness, lease_duration, ownership, ownership_strength, destination_order,
            latency_budget,
        )
    }

    /// The QoS this stack of layers gives `entity`: DDS defaults for what no layer set,
    /// resource limits derived from the history where not given, and DDS's consistency rules
    /// checked (depth <= max_samples_per_instance <= max_samples, time_based_filter <= deadline).
    pub fn finalize(&self, entity: Entity, cx: &Context<'_>) -> Result<EndpointQos, QosError> {
        let inconsistent = |line: u32, message: String| QosError::Inconsistent {
            file: cx.file.to_string(),
            line,
            profile: cx.profile.to_string(),
            entity: cx.entity.clone(),
            message,
        };
        let line_of = |a: Option<u32>, b: Option<u32>| {
            a.into_iter().chain(b).max().unwrap_or(cx.profile_line)
        };

        let reliability = match self.reliability.map(|r| r.value) {
            Some(ReliabilityKind::BestEffort) => Reliability::BestEffort,
            Some(ReliabilityKind::Reliable) => Reliability::Reliable {
                max_blocking_time: self
                    .max_blocking_time
                    .map_or(DEFAULT_MAX_BLOCKING_TIME, |d| d.value),
            },
            // DDS 1.4: writers default to RELIABLE, readers and topics to BEST_EFFORT.
            None if entity == Entity::Writer => Reliability::Reliable {
                max_blocking_time: self
                    .max_blocking_time
                    .map_or(DEFAULT_MAX_BLOCKING_TIME, |d| d.value),
            },
            None => Reliability::BestEffort,
        };

        let history = match self.history.map(|h| h.value) {
            Some(HistoryKind::KeepAll) => History::KeepAll,
            Some(HistoryKind::KeepLast) | None => {
                History::KeepLast(self.depth.map_or(1, |d| d.value))
            }
        };

        // Resource limits: what the layers give, the rest derived from the history so that
        // rustdds never falls back to its own small defaults (see ResourceLimits::derived).
        let given = |f: Option<At<i32>>| f.map(|a| a.value);
        let max_instances = given(self.max_instances).unwrap_or(DEFAULT_MAX_INSTANCES);
        let max_samples_per_instance =
            given(self.max_samples_per_instance).unwrap_or(match history {
                History::KeepLast(depth) => i32::try_from(depth).unwrap_or(i32::MAX),
                History::KeepAll => match given(self.max_samples) {
                    Some(n) if n != LENGTH_UNLIMITED => n.min(KEEP_ALL_MAX_SAMPLES),
                    _ => KEEP_ALL_MAX_SAMPLES,
                },
            });
        let max_samples = given(self.max_samples).unwrap_or(match history {
            History::KeepLast(_) => {
                if max_samples_per_instance == LENGTH_UNLIMITED || max_instances == LENGTH_UNLIMITED
                {
                    LENGTH_UNLIMITED
                } else {
                    max_samples_per_instance.saturating_mul(max_instances)
                }
            }
            History::KeepAll if max_samples_per_instance == LENGTH_UNLIMITED => LENGTH_UNLIMITED,
            History::KeepAll => max_samples_per_instance.max(KEEP_ALL_MAX_SAMPLES),
        });

        if let (History::KeepLast(depth), Some(msp)) = (history, self.max_samples_per_instance) {
            if msp.value != LENGTH_UNLIMITED && i64::from(depth) > i64::from(msp.value) {
                return Err(inconsistent(
                    line_of(self.depth.map(|d| d.line), Some(msp.line)),
                    format!(
                        "history depth {depth}{} exceeds resource_limits max_samples_per_instance {} (line {}): DDS requires depth <= max_samples_per_instance",
                        self.depth.map_or(String::new(), |d| format!(" (line {})", d.line)),
                        msp.value,
                        msp.line
                    ),
                ));
            }
        }
        if max_samples != LENGTH_UNLIMITED
            && max_samples_per_instance != LENGTH_UNLIMITED
            && max_samples < max_samples_per_instance
        {
            let why = match self.max_samples_per_instance {
                Some(msp) => format!("max_samples_per_instance {} (line {})", msp.value, msp.line),
                None => {
                    format!("max_samples_per_instance {max_samples_per_instance} (from {history})")
                }
            };
            return Err(inconsistent(
                line_of(
                    self.max_samples.map(|m| m.line),
                    self.max_samples_per_instance
                        .map(|m| m.line)
                        .or(self.depth.map(|d| d.line)),
                ),
                format!(
                    "resource_limits max_samples {max_samples} is below {why}: DDS requires max_samples >= max_samples_per_instance"
                ),
            ));
        }

        let deadline = self.deadline.map(|d| d.value).filter(|&d| d != INFINITE);
        let time_based_filter = match entity {
            Entity::Reader => self
                .time_based_filter
                .map(|d| d.value)
                .filter(|d| !d.is_zero()),
            Entity::Topic | Entity::Writer => None,
        };
        if let (Some(separation), Some(period)) = (time_based_filter, deadline) {
            if separation > period {
                let (tbf, dl) = (self.time_based_filter, self.deadline);
                return Err(inconsistent(
                    line_of(tbf.map(|t| t.line), dl.map(|d| d.line)),
                    format!(
                        "time_based_filter minimum_separation {} exceeds deadline period {}: DDS requires minimum_separation <= deadline",
                        format_duration(separation),
                        format_duration(period)
                    ),
                ));
            }
        }

        let liveliness = if self.liveliness.is_none() && self.lease_duration.is_none() {
            None
        } else {
            Some(Liveliness {
                kind: self
                    .liveliness
                    .map_or(LivelinessKind::Automatic, |k| k.value),
                lease_duration: self.lease_duration.map_or(INFINITE, |d| d.value),
            })
        };

        let ownership = match self.ownership.map(|o| o.value) {
            None | Some(OwnershipKind::Shared) => Ownership::Shared,
            // Strength is a writer policy: readers and topics carry 0.
            Some(OwnershipKind::Exclusive) => Ownership::Exclusive(match entity {
                Entity::Writer => self.ownership_strength.map_or(0, |s| s.value),
                Entity::Topic | Entity::Reader => 0,
            }),
        };

        Ok(EndpointQos {
            reliability,
            durability: self.durability.map_or(Durability::Volatile, |d| d.value),
            history,
            resource_limits: ResourceLimits {
                max_samples,
                max_instances,
                max_samples_per_instance,
            },
            deadline,
            time_based_filter,
            lifespan: self.lifespan.map(|d| d.value).filter(|&d| d != INFINITE),
            liveliness,
            ownership,
            destination_order: self
                .destination_order
                .map_or(DestinationOrder::ByReceptionTimestamp, |d| d.value),
            latency_budget: self
                .latency_budget
                .map(|d| d.value)
                .filter(|d| !d.is_zero()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> Context<'static> {
        Context {
            file: "t.xml",
            profile: "p",
            profile_line: 1,
            entity: "datawriter_qos".into(),
        }
    }

    fn at<T>(value: T, line: u32) -> Option<At<T>> {
        Some(At { value, line })
    }

    #[test]
    fn empty_stack_gives_the_dds_defaults() {
        let empty = Layer::default();
        assert_eq!(
            empty.finalize(Entity::Reader, &cx()).ok(),
            Some(EndpointQos::default())
        );
        assert_eq!(
            empty.finalize(Entity::Writer, &cx()).ok(),
            Some(EndpointQos::writer_default())
        );
    }

    #[test]
    fn top_layer_wins_per_leaf() {
        let base = Layer {
            reliability: at(ReliabilityKind::Reliable, 2),
            max_blocking_time: at(Duration::from_millis(500), 3),
            depth: at(8, 4),
            ..Layer::default()
        };
        let top = Layer {
            depth: at(32, 10),
            ..Layer::default()
        };
        let qos = base.over(&top).finalize(Entity::Reader, &cx()).ok();
        let qos = qos.as_ref();
        assert_eq!(
            qos.map(|q| q.reliability),
            Some(Reliability::Reliable {
                max_blocking_time: Duration::from_millis(500)
            })
        );
        assert_eq!(qos.map(|q| q.history), Some(History::KeepLast(32)));
        // Derived limits follow the resulting depth, not the base's.
        assert_eq!(
            qos.map(|q| q.resource_limits),
            Some(ResourceLimits::derived(History::KeepLast(32)))
        );
    }

    #[test]
    fn depth_above_max_samples_per_instance_is_inconsistent() {
        let layer = Layer {
            depth: at(16, 7),
            max_samples_per_instance: at(8, 12),
            ..Layer::default()
        };
        let err = layer.finalize(Entity::Writer, &cx()).err();
        assert_eq!(err.as_ref().and_then(QosError::line), Some(12));
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("depth 16 (line 7) exceeds"), "{text}");
    }

    #[test]
    fn max_samples_below_the_per_instance_count_is_inconsistent() {
        let layer = Layer {
            depth: at(16, 7),
            max_samples: at(4, 9),
            ..Layer::default()
        };
        let err = layer.finalize(Entity::Writer, &cx()).err();
        assert_eq!(err.as_ref().and_then(QosError::line), Some(9));
    }

    #[test]
    fn keep_all_bounds_follow_what_is_given() {
        let layer = Layer {
            history: at(HistoryKind::KeepAll, 3),
            max_samples: at(500, 4),
            ..Layer::default()
        };
        let qos = layer.finalize(Entity::Reader, &cx()).ok();
        assert_eq!(
            qos.map(|q| q.resource_limits),
            Some(ResourceLimits {
                max_samples: 500,
                max_instances: DEFAULT_MAX_INSTANCES,
                max_samples_per_instance: 500,
            })
        );
    }

    #[test]
    fn reader_only_and_writer_only_policies_stay_where_they_belong() {
        let layer = Layer {
            time_based_filter: at(Duration::from_millis(5), 2),
            ownership: at(OwnershipKind::Exclusive, 3),
            ownership_strength: at(9, 4),
            ..Layer::default()
        };
        let writer = layer.finalize(Entity::Writer, &cx()).ok();
        let reader = layer.finalize(Entity::Reader, &cx()).ok();
        assert_eq!(
            writer.as_ref().map(|q| (q.time_based_filter, q.ownership)),
            Some((None, Ownership::Exclusive(9)))
        );
        assert_eq!(
            reader.as_ref().map(|q| (q.time_based_filter, q.ownership)),
            Some((Some(Duration::from_millis(5)), Ownership::Exclusive(0)))
        );
    }
}
