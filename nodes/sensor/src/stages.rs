//! Where a sensor node's camera time goes, stage by stage: cheap `Instant` stamps around each
//! stage of each camera image and of each frame, gathered in bounded histograms and reported as
//! NodeStatus counters (`convoy bench sensors` prints them as a table).
//!
//! Image stages, in order: `submit` (the node thread records the camera's draw and copies and
//! hands them to the queue), `queue` (the publish job waits for a publishing thread), `gpu` (the
//! job waits until the device finished the image), `map` (the read-back buffers are mapped and,
//! once read, given back), `convert` (rgba8 to rgb8, depth and classes into the messages' bytes)
//! and `publish` (the DDS writes). Frame stages, per frame in which a sensor of the node was
//! due: `states` (tick to the frame's agent states), `dispatch` (making the frame's samples,
//! the cameras' submits included), `images` (the last job back), `frame` (tick to FrameDone)
//! and `barrier` (FrameDone to the next tick: the rest of the lockstep).
//!
//! Counters: `stage/<scope>/<stage>/<stat>` with scope `WxH` (a camera size) or `frame`, stat
//! `count`, `p50_ns`, `p99_ns`, `mean_ns` (`convoy bench sensors` reads them back).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// A stage of one camera image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ImageStage {
    Submit,
    Queue,
    Gpu,
    Map,
    Convert,
    Publish,
}

impl ImageStage {
    pub const ALL: [ImageStage; 6] = [
        ImageStage::Submit,
        ImageStage::Queue,
        ImageStage::Gpu,
        ImageStage::Map,
        ImageStage::Convert,
        ImageStage::Publish,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ImageStage::Submit => "submit",
            ImageStage::Queue => "queue",
            ImageStage::Gpu => "gpu",
            ImageStage::Map => "map",
            ImageStage::Convert => "convert",
            ImageStage::Publish => "publish",
        }
    }
}

/// A stage of one frame of a sensor node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FrameStage {
    States,
    Dispatch,
    Images,
    Frame,
    Barrier,
}

impl FrameStage {
    pub const ALL: [FrameStage; 5] = [
        FrameStage::States,
        FrameStage::Dispatch,
        FrameStage::Images,
        FrameStage::Frame,
        FrameStage::Barrier,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FrameStage::States => "states",
            FrameStage::Dispatch => "dispatch",
            FrameStage::Images => "images",
            FrameStage::Frame => "frame",
            FrameStage::Barrier => "barrier",
        }
    }
}

/// Sub-buckets per power of two: values are kept within 1/32 (3%) of what they were.
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;

/// Durations in nanoseconds, in log-linear buckets: a fixed few kilobytes however long the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    sum_ns: u128,
}

fn bucket_of(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let shift = 63 - ns.leading_zeros() - SUB_BITS;
    let mantissa = ns >> shift; // SUB..2 SUB
    ((u64::from(shift) + 1) * SUB + (mantissa - SUB)) as usize
}

/// The smallest value of bucket `b` and its width.
fn bucket_range(b: usize) -> (u64, u64) {
    let b = b as u64;
    if b < SUB {
        return (b, 1);
    }
    let shift = b / SUB - 1;
    ((SUB + b % SUB) << shift, 1 << shift)
}

impl Histogram {
    pub fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let b = bucket_of(ns);
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
        self.count += 1;
        self.sum_ns += u128::from(ns);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn mean_ns(&self) -> u64 {
        match self.count {
            0 => 0,
            n => u64::try_from(self.sum_ns / u128::from(n)).unwrap_or(u64::MAX),
        }
    }

    /// The `q` quantile (0..=1), nanoseconds: the middle of the bucket it falls in.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let (lo, width) = bucket_range(b);
                return lo + width / 2;
            }
        }
        0
    }
}

#[derive(Debug, Default)]
struct Inner {
    images: BTreeMap<((u32, u32), ImageStage), Histogram>,
    frames: BTreeMap<FrameStage, Histogram>,
}

/// A node's stage histograms, shared by its loop, its renderer and its publishing threads.
#[derive(Debug, Default)]
pub struct StageTimes {
    inner: Mutex<Inner>,
}

impl StageTimes {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `d` for `stage` of an image of `size` (width, height).
    pub fn image(&self, size: (u32, u32), stage: ImageStage, d: Duration) {
        self.lock()
            .images
            .entry((size, stage))
            .or_default()
            .record(d);
    }

    pub fn frame(&self, stage: FrameStage, d: Duration) {
        self.lock().frames.entry(stage).or_default().record(d);
    }

    /// Every stage's NodeStatus counters (see the module doc).
    pub fn counters(&self) -> Vec<(String, u64)> {
        let inner = self.lock();
        let scoped = inner
            .images
            .iter()
            .map(|(((w, h), stage), hist)| (format!("{w}x{h}"), stage.name(), hist))
            .chain(
                inner
                    .frames
                    .iter()
                    .map(|(stage, hist)| ("frame".to_string(), stage.name(), hist)),
            );
        let mut out = Vec::new();
        for (scope, stage, hist) in scoped {
            let name = |stat: &str| format!("{COUNTER_PREFIX}{scope}/{stage}/{stat}");
            out.push((name("count"), hist.count()));
            out.push((name("p50_ns"), hist.quantile_ns(0.5)));
            out.push((name("p99_ns"), hist.quantile_ns(0.99)));
            out.push((name("mean_ns"), hist.mean_ns()));
        }
        out
    }
}

/// The prefix of the stage counters in NodeStatus.
pub const COUNTER_PREFIX: &str = "stage/";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_within_three_percent() {
        for ns in (0..5000u64).chain([65_536, 1_000_000, 123_456_789, u64::MAX / 3]) {
            let (lo, width) = bucket_range(bucket_of(ns));
            assert!(
                lo <= ns && ns < lo + width,
                "{ns} in [{lo}, {})",
                lo + width
            );
            assert!(
                width == 1 || width * 32 <= lo,
                "{ns}: width {width} at {lo}"
            );
        }
    }

    #[test]
    fn quantiles_and_mean_of_a_known_spread() {
        let mut h = Histogram::default();
        for us in 1..=100u64 {
            h.record(Duration::from_micros(us));
        }
        let near = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 0.04;
        assert!(near(h.quantile_ns(0.5), 50_000), "{}", h.quantile_ns(0.5));
        assert!(near(h.quantile_ns(0.99), 99_000), "{}", h.quantile_ns(0.99));
        assert_eq!(h.mean_ns(), 50_500);
        assert_eq!(h.count(), 100);
        assert_eq!(Histogram::default().quantile_ns(0.5), 0);
    }

    #[test]
    fn counters_name_scope_stage_and_statistic() {
        let t = StageTimes::default();
        t.image((1440, 960), ImageStage::Gpu, Duration::from_millis(2));
        t.frame(FrameStage::Barrier, Duration::from_millis(1));
        let counters = t.counters();
        let value = |name: &str| {
            counters
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .unwrap_or_else(|| panic!("no {name} in {counters:?}"))
        };
        assert_eq!(value("stage/1440x960/gpu/count"), 1);
        assert_eq!(value("stage/1440x960/gpu/mean_ns"), 2_000_000);
        let p50 = value("stage/1440x960/gpu/p50_ns") as f64;
        assert!((p50 - 2e6).abs() < 2e6 * 0.04, "{p50}");
        assert_eq!(
            value("stage/frame/barrier/p99_ns"),
            value("stage/frame/barrier/p50_ns")
        );
        assert_eq!(counters.len(), 8);
    }
}
