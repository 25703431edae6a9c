//! The two ends of `convoy bench latency`'s round trip as they receive: the pong side echoing
//! pings, and the ping side waiting for each answer, through either delivery of
//! `--delivery`: a listener in the DDS receive thread (how ddsperf measures: the answer leaves
//! from the thread that received the ping, and the ping side timestamps an answer where it
//! arrives), or a thread blocked on the reader (how convoy's nodes read).

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::Result;
use convoy_core::dds::{Listening, Publisher, Subscriber};
use convoy_core::messages::BenchSample;
use convoy_core::views::BenchSampleView;

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
enum Echo<'a> {
    /// Answer with this sequence number, stamp and payload.
    Reply(u64, i64, &'a [u8]),
    Skip,
    Stop,
}

/// The pong side's rule, whichever thread applies it.
#[derive(Default)]
struct Echoer {
    burst_received: u64,
}

impl Echoer {
    fn echo<'a>(&mut self, ping: &BenchSampleView<'a>) -> Echo<'a> {
        match ping.seq {
            STOP_SEQ => Echo::Stop,
            // Burst samples are counted, not echoed: the test is one-way delivery.
            BURST_END => Echo::Reply(
                BURST_END,
                std::mem::take(&mut self.burst_received) as i64,
                &[],
            ),
            seq if seq >= BURST_BASE => {
                self.burst_received += 1;
                Echo::Skip
            }
            seq => Echo::Reply(seq, ping.sent_ns, ping.payload),
        }
    }
}

/// The pong side's writer and the one answer it refills for every ping.
struct Ponger {
    pongs: Publisher<BenchSample>,
    answer: BenchSample,
    echoer: Echoer,
    /// Never set: an answer is tried once (a listener must not block), not waited for.
    patience: AtomicBool,
}

impl Ponger {
    /// Answers `ping` as the rule says (the payload copied straight from the ping to the
    /// answer's shared-memory slot on one host); true for the stop sample.
    fn answer(&mut self, ping: &BenchSampleView<'_>) -> bool {
        let (seq, sent_ns, payload) = match self.echoer.echo(ping) {
            Echo::Reply(seq, sent_ns, payload) => (seq, sent_ns, payload),
            Echo::Skip => return false,
            Echo::Stop => return true,
        };
        self.answer.seq = seq;
        self.answer.sent_ns = sent_ns;
        let written = self.pongs.write_filled(
            &mut self.answer,
            payload.len(),
            |out| out.copy_from_slice(payload),
            &self.patience,
            Some(Instant::now()),
        );
        if let Err(e) = written {
            tracing::warn!("pong write failed: {e}");
        }
        false
    }
}

/// Answers every ping on each (pings, pongs) pair until a stop sample or Ctrl-C/SIGTERM.
/// Each ping is read as a view and answered from it while it is read (on one host: from its
/// shared-memory slot to the answer's, one copy).
pub fn pong(
    pairs: Vec<(Subscriber<BenchSample>, Publisher<BenchSample>)>,
    delivery: Delivery,
) -> Result<()> {
    let stop = stop_flag()?;
    let (stopped, stop_received) = mpsc::channel();
    let mut listening = Vec::new();
    let mut threads = Vec::new();
    for (mut pings, pongs) in pairs {
        let mut ponger = Ponger {
            pongs,
            answer: BenchSample::default(),
            echoer: Echoer::default(),
            patience: AtomicBool::new(false),
        };
        let stopped = stopped.clone();
        match delivery {
            Delivery::Thread => {
                let stop = Arc::clone(&stop);
                threads.push(std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let stops =
                            pings.take_views_wait(256, Duration::from_millis(100), |_, ping| {
                                ponger.answer(&ping)
                            });
                        if stops.contains(&true) {
                            let _ = stopped.send(());
                            return;
                        }
                    }
                }));
            }
            Delivery::Listener => {
                listening.push(pings.into_view_listener(move |_, ping| {
                    if ponger.answer(&ping) {
                        let _ = stopped.send(());
                    }
                }));
            }
        }
    }
    println!("{PONG_READY}");
    std::io::stdout().flush().ok();
    while !stop.load(Ordering::Relaxed) {
        match stop_received.recv_timeout(Duration::from_millis(100)) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    // The answering threads see the flag within their 100 ms wait.
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        let _ = thread.join();
    }
    Ok(())
}

/// An answer as the ping side needs it: which ping, and the stamp it carries back.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    pub seq: u64,
    pub sent_ns: i64,
}

impl Answer {
    fn of(view: &BenchSampleView<'_>) -> Answer {
        Answer {
            seq: view.seq,
            sent_ns: view.sent_ns,
        }
    }
}

/// The ping side's answers, each with the instant it reached the application.
pub enum Answers {
    Thread {
        // Boxed: a subscriber is large beside the listener's handle.
        pongs: Box<Subscriber<BenchSample>>,
        waiting: VecDeque<(Answer, Instant)>,
    },
    Listener {
        _listening: Listening<BenchSample>,
        arrived: mpsc::Receiver<(Answer, Instant)>,
    },
}

impl Answers {
    /// With a listener, `on_answer` sees each answer first, in the receive thread, and keeps
    /// it by returning true; the rest wait for [`Answers::next`]. A reader thread has none.
    pub fn new<F>(pongs: Subscriber<BenchSample>, delivery: Delivery, mut on_answer: F) -> Answers
    where
        F: FnMut(&Answer, Instant) -> bool + Send + 'static,
    {
        match delivery {
            Delivery::Thread => Answers::Thread {
                pongs: Box::new(pongs),
                waiting: VecDeque::new(),
            },
            Delivery::Listener => {
                let (arrival, arrived) = mpsc::channel();
                // Answers are read as views: the payload is never copied out.
                let listening = pongs.into_view_listener(move |_, view| {
                    let now = Instant::now();
                    let answer = Answer::of(&view);
                    if on_answer(&answer, now) {
                        return;
                    }
                    // The ping side is gone when this fails; nothing is waiting then.
                    let _ = arrival.send((answer, now));
                });
                Answers::Listener {
                    _listening: listening,
                    arrived,
                }
            }
        }
    }

    /// The next answer and when it arrived; None when none comes within `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Option<(Answer, Instant)> {
        match self {
            Answers::Thread { pongs, waiting } => {
                if waiting.is_empty() {
                    let batch = pongs.take_views_wait(16, timeout, |_, view| Answer::of(&view));
                    let now = Instant::now();
                    waiting.extend(batch.into_iter().map(|a| (a, now)));
                }
                waiting.pop_front()
            }
            Answers::Listener { arrived, .. } => arrived.recv_timeout(timeout).ok(),
        }
    }
}
