//! A writer at a steady pace, and what each of its writes did: how the slow-consumer tests
//! (tests/e2e/dds_layer.rs, tests/e2e/shm.rs) check that a reader that stops taking costs the
//! writer nothing beyond its QoS.

use std::time::{Duration, Instant};

use convoy_core::dds::Publisher;
use convoy_core::messages::Message;

/// One write of [`paced_writes`].
pub struct Write {
    pub seq: u64,
    /// When it started, from the test's t0.
    pub at: Duration,
    pub took: Duration,
    pub ok: bool,
}

/// Writes `sample(seq)` for each of `seqs`, one per `period` (a late or blocked write is not
/// made up for: the next one goes at once), until they run out or `until`; returns what each
/// write did (the sample is made before its write is timed).
pub fn paced_writes<M: Message>(
    writer: &Publisher<M>,
    seqs: impl Iterator<Item = u64>,
    sample: impl Fn(u64) -> M,
    period: Duration,
    t0: Instant,
    until: Instant,
) -> Vec<Write> {
    let mut log = Vec::new();
    let mut next = Instant::now();
    for seq in seqs {
        let now = Instant::now();
        if now >= until {
            break;
        }
        if next > now {
            std::thread::sleep(next - now);
        }
        let value = sample(seq);
        let started = Instant::now();
        let ok = writer.write(value).is_ok();
        log.push(Write {
            seq,
            at: started - t0,
            took: started.elapsed(),
            ok,
        });
        next = (next + period).max(Instant::now());
    }
    log
}
