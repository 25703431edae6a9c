//! When a sensor fires: on simulation time, at its rate, at most one sample per frame.
//!
//! Sample `k` is due at `k / rate` seconds of simulation time. Due times are computed from `k`
//! in integer nanoseconds each time rather than by adding a period over and over, so a rate
//! whose period is not a whole number of nanoseconds (30 Hz) does not drift. A sensor fires on
//! the first frame whose sim time has reached its next due time; when a frame step is longer
//! than the sensor's period, the samples it skipped over are not made up (one per frame at
//! most), so a sensor faster than the frame rate fires on every frame.

/// Why a schedule could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error("sensor rate {0} Hz is not a positive, finite number")]
    BadRate(f64),
}

const NS_PER_S: i128 = 1_000_000_000;

/// The firing schedule of one sensor.
#[derive(Debug, Clone)]
pub struct SensorSchedule {
    rate_hz: f64,
    /// The rate as a whole number of hertz when it is one: then due times are exact integers.
    integral_rate: Option<i128>,
    /// Index of the next sample to take.
    next_k: i128,
    /// The frame that fired last, so a second call for the same frame does not fire again.
    last_frame: Option<u64>,
    /// Sim time of the last sample: time going backwards (a restarted run) restarts the schedule.
    last_time_ns: Option<i64>,
}

impl SensorSchedule {
    /// A schedule for a sensor of `rate_hz` samples per simulated second.
    pub fn new(rate_hz: f64) -> Result<Self, ScheduleError> {
        if !rate_hz.is_finite() || rate_hz <= 0.0 {
            return Err(ScheduleError::BadRate(rate_hz));
        }
        // Whole rates up to a GHz go through integer arithmetic; anything else through f64.
        let integral_rate = (rate_hz.fract() == 0.0 && rate_hz <= 1e9).then_some(rate_hz as i128);
        Ok(SensorSchedule {
            rate_hz,
            integral_rate,
            next_k: 0,
            last_frame: None,
            last_time_ns: None,
        })
    }

    pub fn rate_hz(&self) -> f64 {
        self.rate_hz
    }

    /// Sim time (ns) at which sample `k` is due: `ceil(k / rate)` seconds.
    fn due_ns(&self, k: i128) -> i128 {
        match self.integral_rate {
            Some(r) => (k * NS_PER_S + r - 1) / r,
            None => (k as f64 * 1e9 / self.rate_hz).ceil() as i128,
        }
    }

    /// The first sample index due strictly after `t_ns`.
    fn first_after(&self, t_ns: i128) -> i128 {
        let mut k = match self.integral_rate {
            Some(r) => (t_ns * r).div_euclid(NS_PER_S) + 1,
            None => (t_ns as f64 * self.rate_hz / 1e9).floor() as i128 + 1,
        };
        // f64 rounding can land one sample off in either direction; settle it exactly.
        while k > 0 && self.due_ns(k - 1) > t_ns {
            k -= 1;
        }
        while self.due_ns(k) <= t_ns {
            k += 1;
        }
        k
    }

    /// Whether the sensor takes a sample in `frame`, whose simulation time is `sim_time_ns`.
    /// Calling it again for the same frame answers false.
    pub fn due(&mut self, frame: u64, sim_time_ns: i64) -> bool {
        if self.last_frame == Some(frame) {
            return false;
        }
        if self.last_time_ns.is_some_and(|t| sim_time_ns < t) {
            // Simulation time went backwards (a new run): start counting again from here.
            self.next_k = 0;
        }
        let t = i128::from(sim_time_ns);
        if t < self.due_ns(self.next_k) {
            return false;
        }
        self.next_k = self.first_after(t);
        self.last_frame = Some(frame);
        self.last_time_ns = Some(sim_time_ns);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames (0-based) that fire within `frames` frames of `dt_ns` each.
    fn fired(rate: f64, dt_ns: i64, frames: u64) -> Vec<u64> {
        let mut s = SensorSchedule::new(rate).unwrap();
        (0..frames)
            .filter(|&f| s.due(f, f as i64 * dt_ns))
            .collect()
    }

    #[test]
    fn ten_hz_at_50ms_fires_every_second_frame() {
        let f = fired(10.0, 50_000_000, 40);
        assert_eq!(f, (0..40).step_by(2).collect::<Vec<_>>());
    }

    #[test]
    fn ten_hz_at_10ms_fires_every_tenth_frame() {
        let f = fired(10.0, 10_000_000, 100);
        assert_eq!(f, (0..100).step_by(10).collect::<Vec<_>>());
    }

    #[test]
    fn thirty_hz_at_10ms_has_gaps_of_three_or_four() {
        // 100 frames = one simulated second.
        let f = fired(30.0, 10_000_000, 100);
        assert_eq!(f.len(), 30);
        for w in f.windows(2) {
            let gap = w[1] - w[0];
            assert!(gap == 3 || gap == 4, "gap {gap} in {f:?}");
        }
        // Over a long run there is no drift: exactly 30 per simulated second.
        assert_eq!(fired(30.0, 10_000_000, 100_000).len(), 30_000);
    }

    #[test]
    fn non_integral_rate_does_not_drift() {
        // 7.5 Hz at 10 ms: 75 samples in ten seconds.
        assert_eq!(fired(7.5, 10_000_000, 1000).len(), 75);
    }

    #[test]
    fn faster_than_frames_fires_every_frame() {
        let f = fired(1000.0, 10_000_000, 50);
        assert_eq!(f, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn at_most_once_per_frame() {
        let mut s = SensorSchedule::new(1000.0).unwrap();
        assert!(s.due(0, 0));
        assert!(!s.due(0, 0));
        assert!(s.due(1, 10_000_000));
        assert!(!s.due(1, 10_000_000));
    }

    #[test]
    fn starting_mid_run_fires_at_once_then_on_rate() {
        let mut s = SensorSchedule::new(10.0).unwrap();
        assert!(s.due(123, 1_234_000_000));
        assert!(!s.due(124, 1_250_000_000));
        assert!(s.due(125, 1_300_000_000));
    }

    #[test]
    fn bad_rates_are_rejected() {
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(SensorSchedule::new(r).is_err());
        }
    }
}
