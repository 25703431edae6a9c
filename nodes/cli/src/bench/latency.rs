//! `convoy bench latency`: round trips between two processes over convoy's DDS layer, per
//! payload size, with CycloneDDS's `ddsperf` measured in the same run as the reference.
//!
//! The ping side writes `BenchSample`s on `convoy/bench/ping` one at a time and waits for the
//! pong side to echo each on `convoy/bench/pong` (at full rate the answer's listener writes the
//! next ping: `pinger.rs`); the round trip is measured on the ping side's monotonic
//! clock, so the two hosts' clocks never mix. A ping unanswered within
//! `--loss-timeout` counts as lost.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use convoy_core::dds::{Node, PublishError, Publisher, Subscriber};
use convoy_core::messages::BenchSample;
use convoy_core::qos::QosSpec;
use convoy_core::topics::{self, TopicClass};

use super::echo::{self, BURST_BASE, BURST_END, PONG_READY, STOP_SEQ};
use super::pinger::Pinger;
use super::{percentile, two_netns_hosts, write_csv, ConvoyArgs, Stats};
use crate::args::{check_each, check_range, Baseline, Delivery, LatencyArgs, Role};
use crate::launch::HostAddress;
use crate::process::{spawn_until_ready, StopOnDrop};

const MATCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Payloads of this size and up go as large samples (`convoy/bench/large/...`).
const LARGE_FROM: usize = 64 * 1024;
/// Round trips before measuring each size (connection warm-up, allocator, caches).
const WARMUP: Duration = Duration::from_millis(300);

/// One measured size (or one ddsperf reference row).
#[derive(Debug, Clone)]
pub struct LatencyRow {
    pub size_bytes: usize,
    pub qos_profile: String,
    pub round_trips: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub msgs_per_s: f64,
    pub lost: u64,
}

pub const CSV_HEADER: &[&str] = &[
    "size_bytes",
    "qos_profile",
    "round_trips",
    "p50_us",
    "p90_us",
    "p99_us",
    "max_us",
    "msgs_per_s",
    "lost",
];

impl LatencyRow {
    /// The row's CSV fields, in [`CSV_HEADER`]'s order.
    pub fn csv(&self) -> Vec<String> {
        vec![
            self.size_bytes.to_string(),
            self.qos_profile.clone(),
            self.round_trips.to_string(),
            format!("{:.1}", self.p50_us),
            format!("{:.1}", self.p90_us),
            format!("{:.1}", self.p99_us),
            format!("{:.1}", self.max_us),
            format!("{:.1}", self.msgs_per_s),
            self.lost.to_string(),
        ]
    }
}

pub fn run(domain: u32, qos: Option<&QosSpec>, args: &LatencyArgs) -> Result<()> {
    // Payloads above 64 MiB are not supported.
    check_each("--sizes", &args.sizes, 0..=64 << 20, "bytes")?;
    check_range("--duration", args.duration, 0.1..=3600.0, "seconds")?;
    check_range(
        "--match-timeout",
        args.match_timeout,
        0.1..=600.0,
        "seconds",
    )?;
    check_range("--loss-timeout", args.loss_timeout, 0.01..=60.0, "seconds")?;
    check_range(
        "--rate",
        args.rate,
        0.0..=1_000_000.0,
        "pings per second (0: full rate)",
    )?;
    match args.role {
        Role::Pong => pong(domain, qos, args.delivery),
        Role::Ping => ping_and_report(domain, qos, args),
        Role::Both if args.netns_hosts.is_some() => between_namespaces(domain, qos, args),
        Role::Both => {
            let _pong = spawn_pong(domain, qos, args.delivery, &HostAddress::Local)?;
            ping_and_report(domain, qos, args)
        }
    }
}

/// Ping on the launch file's first netns host, pong on its second (`convoy netns up FILE`
/// first): the round trip crosses the bridge and both hosts' link conditions.
fn between_namespaces(domain: u32, qos: Option<&QosSpec>, args: &LatencyArgs) -> Result<()> {
    let file = args.netns_hosts.as_ref().context("no launch file")?;
    if args.baseline.is_some() {
        bail!("--baseline runs on this host only; leave it out with --netns-hosts");
    }
    let [(ping_host, ping_ns), (pong_host, pong_ns)] = two_netns_hosts(file)?;
    println!(
        "ping on host {ping_host} (netns {ping_ns}), pong on host {pong_host} (netns {pong_ns})"
    );
    let _pong = spawn_pong(domain, qos, args.delivery, &HostAddress::Netns(pong_ns))?;
    let mut ping = ConvoyArgs::new(domain, qos, &["bench", "latency", "--role", "ping"])
        .list("--sizes", &args.sizes)
        .flag("--duration", args.duration)
        .flag("--round-trips", args.round_trips)
        .flag("--rate", args.rate)
        .flag("--burst", args.burst)
        .flag("--loss-timeout", args.loss_timeout)
        .flag("--match-timeout", args.match_timeout)
        .flag("--delivery", delivery_name(args.delivery))
        .out(args.out.as_deref())
        .samples_out(args.samples_out.as_deref())
        .command(&HostAddress::Netns(ping_ns), "ping")?;
    crate::process::run(&mut ping, "the ping side")
}

/// Answers every ping until a stop sample or Ctrl-C/SIGTERM.
fn pong(domain: u32, qos: Option<&QosSpec>, delivery: Delivery) -> Result<()> {
    let node = crate::tool_node(domain, qos, "bench/pong")?;
    let small = (
        node.subscriber(&topics::bench_ping())?,
        node.publisher(&topics::bench_pong())?,
    );
    let large = (
        node.subscriber(&topics::bench_large_ping())?,
        node.publisher(&topics::bench_large_pong())?,
    );
    echo::pong(vec![small, large], delivery)
}

fn delivery_name(delivery: Delivery) -> &'static str {
    match delivery {
        Delivery::Listener => "listener",
        Delivery::Thread => "thread",
    }
}

/// Starts `convoy bench latency --role pong` as a child and waits (bounded) until it is ready;
/// it is stopped when the result drops.
fn spawn_pong(
    domain: u32,
    qos: Option<&QosSpec>,
    delivery: Delivery,
    host: &HostAddress,
) -> Result<StopOnDrop> {
    let mut pong = ConvoyArgs::new(domain, qos, &["bench", "latency", "--role", "pong"])
        .flag("--delivery", delivery_name(delivery))
        .command(host, "pong")?;
    let ready = |line: &str| line == PONG_READY;
    let pong = spawn_until_ready(&mut pong, "the pong process", MATCH_TIMEOUT, ready)?;
    Ok(StopOnDrop(pong, Duration::from_secs(3)))
}

fn ping_and_report(domain: u32, qos: Option<&QosSpec>, args: &LatencyArgs) -> Result<()> {
    let node = crate::tool_node(domain, qos, "bench/ping")?;
    let label = format!(
        "{}/{}",
        node.qos().source(),
        TopicClass::Bench.profile_name()
    );
    eprintln!("waiting for the pong side on domain {domain} ...");
    let match_timeout = Duration::from_secs_f64(args.match_timeout);
    let connect = |pings, pongs| connect(pings, pongs, args.delivery, match_timeout, &node);
    let mut pinger = connect(topics::bench_ping(), topics::bench_pong())?;
    // Sizes from LARGE_FROM go as large samples (on one host through shared memory), on
    // their own topics, as images and clouds do.
    let mut large = if args.sizes.iter().any(|s| *s >= LARGE_FROM) {
        Some(connect(
            topics::bench_large_ping(),
            topics::bench_large_pong(),
        )?)
    } else {
        None
    };
    let loss_timeout = Duration::from_secs_f64(args.loss_timeout);

    println!(
        "convoy bench latency: domain {domain}, QoS {label}, delivery {}",
        delivery_name(args.delivery)
    );
    println!(
        "{:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>6}",
        "size", "p50 us", "p90 us", "p99 us", "max us", "rt/s", "MB/s", "lost"
    );
    let mut rows = Vec::new();
    let mut samples = Vec::new();
    for &size in &args.sizes {
        let sized = match large.as_mut() {
            Some(large) if size >= LARGE_FROM => large,
            _ => &mut pinger,
        };
        let (row, rtts) = measure_size(sized, size, args, loss_timeout, &label)?;
        samples.extend(
            rtts.into_iter()
                .map(|rtt| vec![size.to_string(), format!("{rtt:.1}")]),
        );
        println!(
            "{:>9} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1} {:>10.2} {:>6}",
            row.size_bytes,
            row.p50_us,
            row.p90_us,
            row.p99_us,
            row.max_us,
            row.msgs_per_s,
            row.msgs_per_s * 2.0 * size as f64 / 1e6,
            row.lost
        );
        rows.push(row);
    }

    if args.burst > 0 {
        burst(&mut pinger, args.burst, loss_timeout)?;
    }
    // Tell a pong we spawned (or one on another host) that we are done.
    let _ = pinger.write(BenchSample {
        seq: STOP_SEQ,
        ..BenchSample::default()
    });
    pinger.wait_for_acknowledgments(Duration::from_secs(1));

    if let Some(Baseline::Ddsperf) = args.baseline {
        let reference = ddsperf_rows(domain, &args.sizes, args.duration, args.rate)?;
        println!(
            "\nCycloneDDS ddsperf, same sizes, same machine (round trips: ddsperf prints halves):"
        );
        println!(
            "{:>9} {:>9} {:>9} {:>9} {:>9} {:>10}   {:>12}",
            "size", "p50 us", "p90 us", "p99 us", "max us", "rt/s", "convoy/ddsperf p50"
        );
        for r in &reference {
            let ours = rows.iter().find(|o| o.size_bytes == r.size_bytes);
            let ratio = ours.map_or(f64::NAN, |o| o.p50_us / r.p50_us);
            println!(
                "{:>9} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1}   {:>11.2}x",
                r.size_bytes, r.p50_us, r.p90_us, r.p99_us, r.max_us, r.msgs_per_s, ratio
            );
        }
        rows.extend(reference);
    }
    if let Some(out) = &args.out {
        write_csv(out, CSV_HEADER, rows.iter().map(LatencyRow::csv))?;
        eprintln!("wrote {}", out.display());
    }
    if let Some(out) = &args.samples_out {
        write_csv(out, &["size_bytes", "rtt_us"], samples)?;
        eprintln!("wrote {}", out.display());
    }
    Ok(())
}

/// A pinger on `pings`/`pongs`, once the pong side's endpoints matched and it answered.
fn connect(
    pings: topics::Topic<BenchSample>,
    pongs: topics::Topic<BenchSample>,
    delivery: Delivery,
    match_timeout: Duration,
    node: &Node,
) -> Result<Pinger> {
    let answers: Subscriber<BenchSample> = node.subscriber(&pongs)?;
    let writes: Publisher<BenchSample> = node.publisher(&pings)?;
    writes.wait_for_match(1, match_timeout)?;
    answers.wait_for_match(1, match_timeout)?;
    let mut pinger = Pinger::new(writes, answers, delivery);
    // The first answer proves the pong side's reader matched too (discovery is per endpoint).
    let first_answer = Instant::now();
    while pinger
        .round_trip(&[0u8; 8], Duration::from_millis(200))?
        .is_none()
    {
        if first_answer.elapsed() > match_timeout {
            bail!(
                "the pong side matched {} but never answered within {match_timeout:?}",
                pings.name()
            );
        }
    }
    Ok(pinger)
}

fn measure_size(
    pinger: &mut Pinger,
    size: usize,
    args: &LatencyArgs,
    loss_timeout: Duration,
    label: &str,
) -> Result<(LatencyRow, Vec<f64>)> {
    let payload: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    pinger.measure(&payload, WARMUP, usize::MAX, None, loss_timeout)?;
    let budget = Duration::from_secs_f64(args.duration);
    // At a fixed rate both sides go idle between pings: what a sensor at 1 kHz meets.
    let period = (args.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / args.rate));
    let limit = usize::try_from(args.round_trips).unwrap_or(usize::MAX);
    let measured = pinger.measure(&payload, budget, limit, period, loss_timeout)?;
    let (rtts, lost) = (measured.rtts_us, measured.lost);
    let elapsed = measured.elapsed.as_secs_f64();
    if rtts.len() as u64 >= args.round_trips && elapsed < args.duration {
        // Otherwise a profiler or a second tool timed by --duration misses the end of the run.
        eprintln!(
            "{size} B: stopped after {} round trips (--round-trips) in {elapsed:.1} s of --duration {}",
            args.round_trips, args.duration
        );
    }
    let (round_trips, stats) = (rtts.len() as u64, Stats::of(rtts.clone()));
    let row = LatencyRow {
        size_bytes: size,
        qos_profile: label.to_string(),
        round_trips,
        p50_us: stats.p50,
        p90_us: stats.p90,
        p99_us: stats.p99,
        max_us: stats.max,
        msgs_per_s: round_trips as f64 / elapsed,
        lost,
    };
    Ok((row, rtts))
}

/// Writes `count` samples back to back one way; the pong side counts what arrives. A reliable
/// profile must lose none. A full writer history (readers not acknowledging yet) is waited
/// out, as reliable back-pressure should be, not counted as loss.
fn burst(pinger: &mut Pinger, count: u64, loss_timeout: Duration) -> Result<()> {
    let started = Instant::now();
    let write = |sample: BenchSample| -> Result<()> {
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            match pinger.write(sample.clone()) {
                Err(PublishError::WouldBlock { .. }) if Instant::now() < give_up => continue,
                other => return Ok(other?),
            }
        }
    };
    for i in 0..count {
        write(BenchSample {
            seq: BURST_BASE + i,
            sent_ns: 0,
            payload: vec![0u8; 64],
        })?;
    }
    write(BenchSample {
        seq: BURST_END,
        ..BenchSample::default()
    })?;
    let sent_in = started.elapsed().as_secs_f64();
    let until = Instant::now() + loss_timeout.max(Duration::from_secs(10));
    let mut received = None;
    while received.is_none() && Instant::now() < until {
        if let Some((answer, _)) = pinger.next_answer(Duration::from_millis(50)) {
            if answer.seq == BURST_END {
                received = Some(answer.sent_ns as u64);
            }
        }
    }
    let Some(got) = received else {
        bail!(
            "the pong side did not report the burst count within {:?}",
            until - started
        );
    };
    println!(
        "burst: {count} samples of 64 B sent back to back, {got} received, {} lost, {:.0} samples/s",
        count.saturating_sub(got),
        count as f64 / sent_in
    );
    Ok(())
}

/// Runs `ddsperf pong` and `ddsperf ping size S` for every size, parsing its per-second lines.
fn ddsperf_rows(domain: u32, sizes: &[usize], seconds: f64, rate: f64) -> Result<Vec<LatencyRow>> {
    if Command::new("ddsperf").arg("-h").output().is_err() {
        bail!("ddsperf not found: install Debian's cyclonedds-tools (apt-get install cyclonedds-tools)");
    }
    let domain = domain.to_string();
    let pong = Command::new("ddsperf")
        .args(["-i", &domain, "pong"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start ddsperf pong")?;
    let _pong = StopOnDrop(pong, Duration::from_secs(1));
    let mut rows = Vec::new();
    // ddsperf counts whole seconds and drops the first (discovery): run one second more.
    let secs = (seconds.ceil() as u64).max(2) + 1;
    for &size in sizes {
        let mut ping = Command::new("ddsperf");
        ping.args(["-i", &domain, "-D", &secs.to_string(), "ping"]);
        if rate > 0.0 {
            ping.arg(format!("{rate}Hz"));
        }
        let out = ping
            .args(["size", &size.to_string()])
            .output()
            .context("cannot run ddsperf ping")?;
        let text = String::from_utf8_lossy(&out.stdout);
        match parse_ddsperf(&text, size) {
            Some(row) => rows.push(row),
            None => eprintln!("ddsperf printed no latency line for size {size}"),
        }
    }
    Ok(rows)
}

/// ddsperf prints half of each round trip: its ping records `(now - sent) / 2` per pong
/// (`update_roundtrip` in CycloneDDS's src/tools/ddsperf/ddsperf.c), a one-way estimate. Its
/// own count shows it: at full rate one ping is in flight and the next leaves as the pong is
/// taken, yet `cnt` per second is about half of 1 / p50 (18,700 a second with a p50 of 27 µs,
/// 2026-11-29). convoy's rows are whole round trips, so ddsperf's figures are doubled.
const DDSPERF_LATENCY_IS_HALF_A_ROUND_TRIP: f64 = 2.0;

/// Folds ddsperf's per-second lines (`... size 64 mean 29us min 9us 50% 29us 90% 39us 99% 58us
/// max 2094us cnt 16982`) into one row of round trips: medians of the per-second percentiles,
/// the largest max, each doubled (ddsperf prints half round trips).
pub fn parse_ddsperf(text: &str, size: usize) -> Option<LatencyRow> {
    let mut p50 = Vec::new();
    let mut p90 = Vec::new();
    let mut p99 = Vec::new();
    let mut max: f64 = 0.0;
    let mut count = 0u64;
    let mut seconds = 0u64;
    let round_trip = |half: f64| half * DDSPERF_LATENCY_IS_HALF_A_ROUND_TRIP;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let value = |key: &str| -> Option<f64> {
            let i = words.iter().position(|w| *w == key)?;
            words.get(i + 1)?.trim_end_matches("us").parse().ok()
        };
        if value("size") != Some(size as f64) {
            continue;
        }
        let (Some(a), Some(b), Some(c), Some(m), Some(n)) = (
            value("50%"),
            value("90%"),
            value("99%"),
            value("max"),
            value("cnt"),
        ) else {
            continue;
        };
        p50.push(round_trip(a));
        p90.push(round_trip(b));
        p99.push(round_trip(c));
        max = max.max(round_trip(m));
        count += n as u64;
        seconds += 1;
    }
    if seconds == 0 {
        return None;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        percentile(v, 0.5)
    };
    Some(LatencyRow {
        size_bytes: size,
        qos_profile: "ddsperf".into(),
        round_trips: count,
        p50_us: median(&mut p50),
        p90_us: median(&mut p90),
        p99_us: median(&mut p99),
        max_us: max,
        msgs_per_s: count as f64 / seconds as f64,
        lost: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ddsperf_lines() {
        let text = "\
[7303] participant vm:7303: new (self)
[7303] 2.000  vm:7291 size 64 mean 29.339us min 9.033us 50% 29.067us 90% 39.588us 99% 58.857us max 2094.630us cnt 16982
[7303] 2.000  rss:7.7MB vcsw:15608 ivcsw:1416 recvUC:8%+30%
[7303] 3.000  vm:7291 size 64 mean 37.222us min 10.905us 50% 33.964us 90% 48.366us 99% 70.945us max 1549.107us cnt 13401
";
        let row = parse_ddsperf(text, 64).expect("a row");
        assert_eq!(row.round_trips, 16982 + 13401);
        // ddsperf's figures are half round trips; the row holds whole ones.
        assert_eq!(row.p50_us, 2.0 * 29.067);
        assert_eq!(row.max_us, 2.0 * 2094.630);
        assert!(parse_ddsperf(text, 4096).is_none());
        assert_eq!(row.csv().len(), CSV_HEADER.len());
    }
}
