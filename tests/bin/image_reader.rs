//! A convoy reader of camera images in a process of its own, for the tests that stop a reader
//! (SIGSTOP) and continue it: convoy's `Subscriber<Image>` with the sensor profile, taking
//! whatever is there every few milliseconds and checking every byte of every image against
//! the pattern its sequence number gives (`convoy_tests::images`).
//!
//! usage: convoy-test-image-reader DOMAIN TOPIC
//!
//! stdout, one line each: `READY` once a writer is matched; `GOT <seq> <whole 0|1>` per image
//! taken; `STATS <received> <lost> <decode_errors>` (its `ReaderStats`) whenever they changed;
//! `DONE` when stdin closes (the test is done with it), after a last `STATS`. stderr: convoy's
//! warnings (each sample dropped as undecodable, and why).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use convoy_core::dds::{Node, ReaderStats, Subscriber};
use convoy_core::messages::Image;
use convoy_core::qos::QosSet;
use convoy_core::topics::{Topic, TopicClass};
use convoy_tests::images::is_whole;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, domain, topic] = args.as_slice() else {
        return Err("usage: convoy-test-image-reader DOMAIN TOPIC".into());
    };
    let domain: u32 = domain.parse().map_err(|e| format!("domain: {e}"))?;
    // convoy's warnings (a sample that does not decode, and why) on stderr, for the test's log.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rustdds=error")),
        )
        .init();
    let node = Node::new(domain, "test/image-reader", Arc::new(QosSet::builtin()))
        .map_err(|e| e.to_string())?;
    let mut reader: Subscriber<Image> = node
        .subscriber(&Topic::new(topic.clone(), TopicClass::Sensor))
        .map_err(|e| e.to_string())?;
    reader
        .wait_for_match(1, Duration::from_secs(60))
        .map_err(|e| e.to_string())?;
    let done = Arc::new(AtomicBool::new(false));
    {
        // stdin closes when the test is done with this reader.
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
            done.store(true, Ordering::Relaxed);
        });
    }
    let stats = reader.stats();
    let counters = || {
        (
            ReaderStats::get(&stats.received),
            ReaderStats::get(&stats.lost),
            ReaderStats::get(&stats.decode_errors),
        )
    };
    let mut out = std::io::stdout().lock();
    let io = |e: std::io::Error| e.to_string();
    writeln!(out, "READY").map_err(io)?;
    out.flush().map_err(io)?;
    let mut reported = (0, 0, 0);
    while !done.load(Ordering::Relaxed) {
        for sample in reader.take_wait(64, Duration::from_millis(20)) {
            let image = &sample.value;
            writeln!(
                out,
                "GOT {} {}",
                image.header.seq,
                u8::from(is_whole(image))
            )
            .map_err(io)?;
        }
        let now = counters();
        if now != reported {
            reported = now;
            writeln!(out, "STATS {} {} {}", now.0, now.1, now.2).map_err(io)?;
        }
        out.flush().map_err(io)?;
    }
    let now = counters();
    writeln!(out, "STATS {} {} {}", now.0, now.1, now.2).map_err(io)?;
    writeln!(out, "DONE").map_err(io)?;
    out.flush().map_err(io)
}
