//! The two ends of `convoy bench latency`'s round trip as they receive: the pong side echoing
//! pings, and the ping side waiting for each answer, through either delivery of
//! `--delivery`: a listener in the DDS receive thread (how ddsperf measures: the answer leaves
//! from the thread that received the ping, and the ping side timestamps an answer where it
//! arrives), or a thread blocked on the reader (how convoy's nodes read).

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;
use convoy_core::dds::{Listening, Publisher, Subscriber};
use convoy_core::messages::BenchSample;

use crate::args::Delivery;
use crate::process::stop_flag;

/// The line the pong process prints once its endpoints exist.
pub const PONG_READY: &str = "pong ready";
/// A ping with this sequence number tells the pong process to exit.
pub const STOP_SEQ: u64 = u64::MAX;
/// Burst samples are numbered from here so they never look like round-trip pings.
pub const BURST_BASE: u64 = 1 << 62;
/// Ends a burst: the pong side answers it with the number of burst samples it received.
pub const BURST_END: u64 = u64::MAX - 1;

/// What the pong side does with one ping.
enum Echo {
    Reply(BenchSample),
    Skip,
    Stop,
}

/// The pong side's rule, whichever thread applies it.
#[derive(Default)]
struct Echoer {
    burst_received: u64,
}

impl Echoer {
    fn echo(&mut self, ping: BenchSample) -> Echo {
        match ping.seq {
            STOP_SEQ => Echo::Stop,
            // Burst samples are counted, not echoed: the test is one-way delivery.
            BURST_END => Echo::Reply(BenchSample {
                seq: BURST_END,
                sent_ns: std::mem::take(&mut self.burst_received) as i64,
                payload: Vec::new(),
            }),
            seq if seq >= BURST_BASE => {
                self.burst_received += 1;
                Echo::Skip
            }
            _ => Echo::Reply(ping),
        }
    }
}

fn reply(pongs: &Publisher<BenchSample>, answer: BenchSample) {
    if let Err(e) = pongs.write(answer) {
        tracing::warn!("pong write failed: {e}");
    }
}

/// Answers every ping until a stop sample or Ctrl-C/SIGTERM.
pub fn pong(
    mut pings: Subscriber<BenchSample>,
    pongs: Publisher<BenchSample>,
    delivery: Delivery,
) -> Result<()> {
    let stop = stop_flag()?;
    let mut echoer = Echoer::default();
    match delivery {
        Delivery::Thread => {
            println!("{PONG_READY}");
            std::io::stdout().flush().ok();
            while !stop.load(Ordering::Relaxed) {
                for sample in pings.take_wait(256, Duration::from_millis(100)) {
                    match echoer.echo(sample.value) {
                        Echo::Reply(answer) => reply(&pongs, answer),
                        Echo::Skip => {}
                        Echo::Stop => return Ok(()),
                    }
                }
            }
        }
        Delivery::Listener => {
            let (stopped, stop_received) = mpsc::channel();
            let _listening = pings.into_listener(move |sample| match echoer.echo(sample.value) {
                Echo::Reply(answer) => reply(&pongs, answer),
                Echo::Skip => {}
                Echo::Stop => {
                    let _ = stopped.send(());
                }
            });
            println!("{PONG_READY}");
            std::io::stdout().flush().ok();
            while !stop.load(Ordering::Relaxed) {
                match stop_received.recv_timeout(Duration::from_millis(100)) {
                    Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                }
            }
        }
    }
    Ok(())
}

/// The ping side's answers, each with the instant it reached the application.
pub enum Answers {
    Thread {
        // Boxed: a subscriber is large beside the listener's handle.
        pongs: Box<Subscriber<BenchSample>>,
        waiting: VecDeque<(BenchSample, Instant)>,
    },
    Listener {
        _listening: Listening<BenchSample>,
        arrived: mpsc::Receiver<(BenchSample, Instant)>,
    },
}

impl Answers {
    /// With a listener, `on_answer` sees each answer first, in the receive thread, and keeps
    /// it by returning true; the rest wait for [`Answers::next`]. A reader thread has none.
    pub fn new<F>(pongs: Subscriber<BenchSample>, delivery: Delivery, mut on_answer: F) -> Answers
    where
        F: FnMut(&BenchSample, Instant) -> bool + Send + 'static,
    {
        match delivery {
            Delivery::Thread => Answers::Thread {
                pongs: Box::new(pongs),
                waiting: VecDeque::new(),
            },
            Delivery::Listener => {
                let (arrival, arrived) = mpsc::channel();
                let listening = pongs.into_listener(move |sample| {
                    let now = Instant::now();
                    if on_answer(&sample.value, now) {
                        return;
                    }
                    // The ping side is gone when this fails; nothing is waiting then.
                    let _ = arrival.send((sample.value, now));
                });
                Answers::Listener {
                    _listening: listening,
                    arrived,
                }
            }
        }
    }

    /// The next answer and when it arrived; None when none comes within `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Option<(BenchSample, Instant)> {
        match self {
            Answers::Thread { pongs, waiting } => {
                if waiting.is_empty() {
                    let batch = pongs.take_wait(16, timeout);
                    let now = Instant::now();
                    waiting.extend(batch.into_iter().map(|s| (s.value, now)));
                }
                waiting.pop_front()
            }
            Answers::Listener { arrived, .. } => arrived.recv_timeout(timeout).ok(),
        }
    }
}
