//! QoS policies convoy enforces itself because rustdds accepts but does not act on them:
//! DEADLINE (count periods in which an instance got no sample), TIME_BASED_FILTER (a reader
//! drops samples of an instance closer than the minimum separation) and LIFESPAN (a reader drops
//! samples older than the lifespan by their source timestamp).
//!
//! Plain data and pure functions over explicit instants, so the rules are unit-tested without
//! clocks or sockets; the publisher and subscriber feed them real times.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Counts missed deadline periods of one instance.
///
/// A deadline is missed once for every whole `period` that passes without a sample; a gap of
/// 2.5 periods is two misses. Misses are counted as soon as they are observed (`observe`), not
/// only when the next sample finally arrives, so a silent writer shows up while it is silent.
#[derive(Debug, Clone)]
pub struct DeadlineClock {
    period: Duration,
    last_sample: Instant,
    /// Misses already counted in the current gap.
    counted_in_gap: u64,
}

impl DeadlineClock {
    pub fn new(period: Duration, start: Instant) -> Self {
        DeadlineClock {
            period,
            last_sample: start,
            counted_in_gap: 0,
        }
    }

    fn misses_in_gap(&self, now: Instant) -> u64 {
        let gap = now.saturating_duration_since(self.last_sample);
        if self.period.is_zero() {
            return 0;
        }
        (gap.as_nanos() / self.period.as_nanos()) as u64
    }

    /// New misses up to `now`, not counted before.
    pub fn observe(&mut self, now: Instant) -> u64 {
        let total = self.misses_in_gap(now);
        let new = total.saturating_sub(self.counted_in_gap);
        self.counted_in_gap = total;
        new
    }

    /// A sample arrived at `now`: counts the misses of the gap it closes, starts a new gap.
    pub fn sample(&mut self, now: Instant) -> u64 {
        let new = self.observe(now);
        self.last_sample = now;
        self.counted_in_gap = 0;
        new
    }
}

/// Deadline clocks per instance key, for readers of keyed topics.
#[derive(Debug)]
pub struct InstanceDeadlines<K: Ord> {
    period: Duration,
    /// An unkeyed topic has one instance, which is owed samples from creation on.
    single: Option<DeadlineClock>,
    instances: BTreeMap<K, DeadlineClock>,
}

impl<K: Ord> InstanceDeadlines<K> {
    pub fn new(period: Duration, keyed: bool, now: Instant) -> Self {
        InstanceDeadlines {
            period,
            single: (!keyed).then(|| DeadlineClock::new(period, now)),
            instances: BTreeMap::new(),
        }
    }

    /// A sample of instance `key` arrived at `now`; returns the misses it revealed.
    pub fn sample(&mut self, key: K, now: Instant) -> u64 {
        if let Some(clock) = self.single.as_mut() {
            return clock.sample(now);
        }
        let period = self.period;
        // A keyed instance is owed samples only from its first sample on.
        self.instances
            .entry(key)
            .or_insert_with(|| DeadlineClock::new(period, now))
            .sample(now)
    }

    /// Misses observed up to `now` on every instance, not counted before.
    pub fn observe(&mut self, now: Instant) -> u64 {
        let single = self.single.as_mut().map_or(0, |c| c.observe(now));
        single
            + self
                .instances
                .values_mut()
                .map(|c| c.observe(now))
                .sum::<u64>()
    }
}

/// TIME_BASED_FILTER for one reader: per instance, a sample closer than `min_separation` to
/// the last accepted one (by source time) is dropped.
#[derive(Debug)]
pub struct TimeFilter<K: Ord> {
    min_separation: Duration,
    last_accepted_ns: BTreeMap<K, i64>,
}

impl<K: Ord> TimeFilter<K> {
    pub fn new(min_separation: Duration) -> Self {
        TimeFilter {
            min_separation,
            last_accepted_ns: BTreeMap::new(),
        }
    }

    /// True when the sample of `key` stamped `stamp_ns` passes the filter (and is recorded).
    pub fn accept(&mut self, key: K, stamp_ns: i64) -> bool {
        let min = i64::try_from(self.min_separation.as_nanos()).unwrap_or(i64::MAX);
        match self.last_accepted_ns.get_mut(&key) {
            Some(last) if stamp_ns.saturating_sub(*last) < min => false,
            Some(last) => {
                *last = stamp_ns;
                true
            }
            None => {
                self.last_accepted_ns.insert(key, stamp_ns);
                true
            }
        }
    }
}

/// LIFESPAN: a sample whose source time is more than `lifespan` before `now_ns` has expired.
pub fn expired(lifespan: Duration, source_ns: i64, now_ns: i64) -> bool {
    let age = now_ns.saturating_sub(source_ns);
    age > i64::try_from(lifespan.as_nanos()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn deadline_counts_whole_periods_while_silent() {
        let t0 = Instant::now();
        let mut clock = DeadlineClock::new(10 * MS, t0);
        assert_eq!(clock.sample(t0 + 5 * MS), 0);
        // 25 ms of silence after the sample at 5 ms: two misses, seen before the next sample.
        assert_eq!(clock.observe(t0 + 30 * MS), 2);
        assert_eq!(clock.observe(t0 + 31 * MS), 0, "counted twice");
        // The sample at 36 ms closes a 31 ms gap: one more miss.
        assert_eq!(clock.sample(t0 + 36 * MS), 1);
        assert_eq!(clock.sample(t0 + 40 * MS), 0);
    }

    #[test]
    fn keyed_instances_are_owed_samples_after_their_first() {
        let t0 = Instant::now();
        let mut deadlines = InstanceDeadlines::<u32>::new(10 * MS, true, t0);
        assert_eq!(deadlines.observe(t0 + 100 * MS), 0);
        deadlines.sample(1, t0 + 100 * MS);
        deadlines.sample(2, t0 + 100 * MS);
        assert_eq!(deadlines.sample(1, t0 + 105 * MS), 0);
        assert_eq!(
            deadlines.observe(t0 + 121 * MS),
            3,
            "1 missed once, 2 twice"
        );

        let mut single = InstanceDeadlines::<()>::new(10 * MS, false, t0);
        assert_eq!(single.observe(t0 + 25 * MS), 2);
    }

    #[test]
    fn time_filter_drops_samples_closer_than_the_separation() {
        let mut filter = TimeFilter::<&str>::new(10 * MS);
        let ms = 1_000_000;
        assert!(filter.accept("a", 0));
        assert!(!filter.accept("a", 5 * ms));
        assert!(filter.accept("b", 5 * ms), "instances are filtered apart");
        assert!(filter.accept("a", 10 * ms));
        assert!(!filter.accept("a", 19 * ms));
        assert!(filter.accept("a", 21 * ms));
    }

    #[test]
    fn lifespan_expires_old_samples() {
        assert!(!expired(10 * MS, 0, 10_000_000));
        assert!(expired(10 * MS, 0, 10_000_001));
    }
}
