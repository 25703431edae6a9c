//! The ping side of `convoy bench latency`: one ping in flight at a time, each timed from its
//! write to its answer's arrival on this process's monotonic clock.
//!
//! At a fixed rate, and with `--delivery thread`, the main thread writes each ping and waits
//! for its answer. At full rate through a listener the answer's listener writes the next ping
//! itself, in the DDS receive thread, as ddsperf's ping does; the main thread only watches the
//! clock and lost pings. Otherwise the receive thread woke the main thread for every answer,
//! which often ran at once, before the receive thread had left the channel's lock or the
//! writer's, and each such meeting cost two more context switches inside the next round trip.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use convoy_core::dds::{PublishError, Publisher, Subscriber};
use convoy_core::messages::BenchSample;

use super::echo::{Answer, Answers};
use crate::args::Delivery;

/// How often the main thread looks at a chain of pings: the clock and lost pings only.
const CHAIN_WATCH: Duration = Duration::from_millis(1);

/// Round trips measured over one stretch of pinging.
pub struct Measured {
    pub rtts_us: Vec<f64>,
    pub lost: u64,
    pub elapsed: Duration,
}

pub struct Pinger {
    pings: Arc<Publisher<BenchSample>>,
    /// The ping this thread refills for every round trip it writes.
    message: BenchSample,
    answers: Answers,
    chain: Arc<Mutex<Chain>>,
    /// Whether answers come to a listener, which can then write the next ping.
    chains: bool,
    epoch: Instant,
}

/// What the main thread and the answers' listener share.
#[derive(Default)]
struct Chain {
    next_seq: u64,
    /// The chained ping in flight and when it was written.
    in_flight: Option<(u64, Instant)>,
    /// While set, each answer to the ping in flight writes the next one with this payload.
    payload: Option<Vec<u8>>,
    /// The ping refilled for every write.
    message: BenchSample,
    /// The chain stops after this many round trips.
    limit: usize,
    rtts_us: Vec<f64>,
    /// When the chain reached its limit.
    ended: Option<Instant>,
    /// A write that failed in the listener; the main thread reports it.
    failed: Option<String>,
}

impl Chain {
    /// Writes the next chained ping; a ping that cannot be written ends the chain.
    fn write_next(
        &mut self,
        pings: &Publisher<BenchSample>,
        epoch: Instant,
    ) -> Result<(), PublishError> {
        if self.payload.is_none() {
            return Ok(());
        }
        let seq = self.take_seq();
        let sent = Instant::now();
        self.in_flight = Some((seq, sent));
        let payload = self.payload.as_deref().unwrap_or_default();
        let written = write_ping(pings, &mut self.message, (seq, sent, epoch), payload);
        if written.is_err() {
            self.payload = None;
        }
        written
    }

    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Takes an answer to the chained ping in flight (true), writing the next one unless the
    /// chain is at its limit; any other answer is left for the main thread (false).
    fn answered(
        &mut self,
        answer: &Answer,
        arrived: Instant,
        pings: &Publisher<BenchSample>,
        epoch: Instant,
    ) -> bool {
        let Some((seq, sent)) = self.in_flight else {
            return false;
        };
        if answer.seq != seq {
            return false;
        }
        self.in_flight = None;
        self.rtts_us.push(micros(arrived - sent));
        if self.rtts_us.len() >= self.limit {
            self.ended = Some(arrived);
        } else if let Err(e) = self.write_next(pings, epoch) {
            self.failed = Some(e.to_string());
        }
        true
    }
}

/// Writes ping `seq`, sent at `sent`, with `payload` from `message` refilled: on one host the
/// payload goes straight into the ping's shared-memory slot. A full writer history fails at
/// once (a listener writes pings too, and must not block).
fn write_ping(
    pings: &Publisher<BenchSample>,
    message: &mut BenchSample,
    (seq, sent, epoch): (u64, Instant, Instant),
    payload: &[u8],
) -> Result<(), PublishError> {
    message.seq = seq;
    message.sent_ns = sent.duration_since(epoch).as_nanos() as i64;
    let never = AtomicBool::new(false);
    message.payload.clear();
    pings.write_filled(
        message,
        payload.len(),
        |out| out.copy_from_slice(payload),
        &never,
        Some(sent),
    )
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

impl Pinger {
    pub fn new(
        pings: Publisher<BenchSample>,
        pongs: Subscriber<BenchSample>,
        delivery: Delivery,
    ) -> Pinger {
        let pings = Arc::new(pings);
        let chain = Arc::new(Mutex::new(Chain::default()));
        let epoch = Instant::now();
        let on_answer = {
            let (chain, pings) = (Arc::clone(&chain), Arc::clone(&pings));
            move |answer: &Answer, arrived: Instant| match chain.lock() {
                Ok(mut chain) => chain.answered(answer, arrived, &pings, epoch),
                Err(_) => false,
            }
        };
        Pinger {
            answers: Answers::new(pongs, delivery, on_answer),
            pings,
            message: BenchSample::default(),
            chain,
            chains: delivery == Delivery::Listener,
            epoch,
        }
    }

    /// Writes one sample outside any round trip (a burst, the stop sample).
    pub fn write(&self, sample: BenchSample) -> Result<(), PublishError> {
        self.pings.write(sample)
    }

    pub fn wait_for_acknowledgments(&self, timeout: Duration) {
        self.pings.wait_for_acknowledgments(timeout);
    }

    /// The next answer that no chain took, and when it arrived.
    pub fn next_answer(&mut self, timeout: Duration) -> Option<(Answer, Instant)> {
        self.answers.next(timeout)
    }

    /// One round trip written by this thread: Some(µs), or None when no answer came within
    /// `timeout`.
    pub fn round_trip(&mut self, payload: &[u8], timeout: Duration) -> Result<Option<f64>> {
        let seq = self.lock_chain()?.take_seq();
        let sent = Instant::now();
        write_ping(
            &self.pings,
            &mut self.message,
            (seq, sent, self.epoch),
            payload,
        )?;
        let until = sent + timeout;
        loop {
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            // Older answers (to pings already counted lost) are skipped.
            if let Some((answer, arrived)) = self.answers.next(until - now) {
                if answer.seq == seq {
                    return Ok(Some(micros(arrived.duration_since(sent))));
                }
            }
        }
    }

    /// Pings for `budget` or `limit` round trips, whichever ends first: one every `period`,
    /// or back to back when there is none.
    pub fn measure(
        &mut self,
        payload: &[u8],
        budget: Duration,
        limit: usize,
        period: Option<Duration>,
        loss_timeout: Duration,
    ) -> Result<Measured> {
        if period.is_none() && self.chains {
            return self.measure_chained(payload, budget, limit, loss_timeout);
        }
        let mut measured = Measured {
            rtts_us: Vec::new(),
            lost: 0,
            elapsed: Duration::ZERO,
        };
        let started = Instant::now();
        let mut next_ping = started;
        while started.elapsed() < budget && measured.rtts_us.len() < limit {
            if let Some(period) = period {
                let now = Instant::now();
                if next_ping > now {
                    std::thread::sleep(next_ping - now);
                }
                next_ping = next_ping.max(now) + period;
            }
            match self.round_trip(payload, loss_timeout)? {
                Some(us) => measured.rtts_us.push(us),
                None => measured.lost += 1,
            }
        }
        measured.elapsed = started.elapsed();
        Ok(measured)
    }

    fn measure_chained(
        &mut self,
        payload: &[u8],
        budget: Duration,
        limit: usize,
        loss_timeout: Duration,
    ) -> Result<Measured> {
        let started = Instant::now();
        {
            let mut chain = self.lock_chain()?;
            chain.rtts_us.clear();
            chain.ended = None;
            chain.limit = limit.max(1);
            chain.payload = Some(payload.to_vec());
            chain.write_next(&self.pings, self.epoch)?;
        }
        let mut lost = 0;
        loop {
            std::thread::sleep(CHAIN_WATCH);
            let mut chain = self.lock_chain()?;
            if let Some(failed) = chain.failed.take() {
                bail!("a ping written from the answers' listener failed: {failed}");
            }
            let ended = chain.ended.or_else(|| {
                let now = Instant::now();
                (now - started >= budget).then_some(now)
            });
            if let Some(ended) = ended {
                // An answer still in flight now goes to the main thread, which skips it.
                chain.payload = None;
                chain.in_flight = None;
                return Ok(Measured {
                    rtts_us: std::mem::take(&mut chain.rtts_us),
                    lost,
                    elapsed: ended - started,
                });
            }
            if let Some((_, sent)) = chain.in_flight {
                if sent.elapsed() > loss_timeout {
                    lost += 1;
                    chain.write_next(&self.pings, self.epoch)?;
                }
            }
        }
    }

    fn lock_chain(&self) -> Result<std::sync::MutexGuard<'_, Chain>> {
        match self.chain.lock() {
            Ok(chain) => Ok(chain),
            Err(_) => bail!("the answers' listener panicked"),
        }
    }
}
