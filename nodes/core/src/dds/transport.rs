//! convoy's transport settings: what a node's DDS participant is built with beyond QoS —
//! static discovery peers, pacing, datagram and fragment sizes, link emulation — read from
//! `CONVOY_*` environment variables (a launch file's `[transport]` table sets them for every
//! node it starts). docs/TRANSPORT.md says what each does and which values suit which network.

use std::net::IpAddr;
use std::time::Duration;

use rustdds::{LinkConditions, LinkEmulation, PacingRate};

/// Static unicast discovery peers: hosts every node announces itself to by unicast besides
/// multicast (networks without multicast; Fast DDS peers limited to unicast discovery).
pub const PEERS_ENV: &str = "CONVOY_PEERS";
/// Pacing of all of a node's writers together: `BYTES/PERIOD` (`128KiB/250us`) or `off`.
pub const PACING_ENV: &str = "CONVOY_PACING";
/// Pacing of each writer: `BYTES/PERIOD` or `off` (the default).
pub const WRITER_PACING_ENV: &str = "CONVOY_WRITER_PACING";
/// Largest datagram a writer sends, whatever the path MTU allows: `BYTES`.
pub const MAX_DATAGRAM_ENV: &str = "CONVOY_MAX_DATAGRAM";
/// Payload bytes per DATAFRAG fragment: `BYTES`.
pub const FRAGMENT_SIZE_ENV: &str = "CONVOY_FRAGMENT_SIZE";
/// Bytes a reliable writer may have pushed and not yet acknowledged: `BYTES` or `off`.
pub const WINDOW_ENV: &str = "CONVOY_WINDOW";
/// Whether a writer sends a small sample from the thread that writes it: `on` (the default)
/// or `off` (every sample goes through the node's DDS event loop; for comparisons).
pub const FAST_PUSH_ENV: &str = "CONVOY_FAST_PUSH";
/// Whether each node's user-traffic sockets are read by a thread each that blocks in the read
/// and hands samples to the readers: `on` (the default) or `off` (the DDS event loop polls
/// them with the discovery sockets; for comparisons). docs/TRANSPORT.md, "A thread per socket
/// that blocks in the read".
pub const RECEIVE_THREADS_ENV: &str = "CONVOY_RECEIVE_THREADS";
/// Same-host shared memory for large samples (images, clouds): `on` (the default) or `off`
/// (every sample over UDP, as to another host; for comparisons). docs/TRANSPORT.md, "Same-host
/// shared memory for large samples".
pub const SHM_ENV: &str = "CONVOY_SHM";
/// A sample for readers in many nodes that share a multicast group goes once, to the group
/// (vendored rustdds change 69): `on` (when the group reaches 16 nodes' readers or more), a
/// number (the least number of nodes, 2 or more) or `off` (once to each reader, as before).
/// Nodes whose multicast is not heard (`CONVOY_PEERS` networks) get unicast either way.
pub const MULTICAST_ENV: &str = "CONVOY_MULTICAST";
/// ACKNACK batching (vendored rustdds change 41): the ACKNACKs a node's readers make in one
/// pass of its receive loop leave together, one datagram per destination node. The value is
/// how much longer a plain acknowledgement may wait to join others: a duration (`0us`, the
/// default; `150us`) or `off` (every ACKNACK in its own datagram, as before).
pub const ACK_HOLD_ENV: &str = "CONVOY_ACK_HOLD";
/// ACKNACKs ride with samples (vendored rustdds change 52): a plain acknowledgement to a node
/// this one pushes samples to waits up to this long for the next one and travels in its
/// datagram (a lockstep coordinator's acknowledgement of a state rides with the next tick): a
/// duration (`20ms`, the default) or `0us` (only what the same pass of the receive loop sends
/// takes it along).
pub const ACK_RIDE_ENV: &str = "CONVOY_ACK_RIDE";
/// Link emulation of everything a node sends (vendored rustdds change 39): delay, jitter, loss
/// and rate, for all destinations (`delay_ms=20,jitter_ms=2`) or per destination host
/// (`10.77.0.2:delay_ms=20;*:delay_ms=5`); `off` (the default): none. For experiments on a
/// kernel without netem; `convoy netns up` sets it for a namespace host's nodes there.
pub const LINK_ENV: &str = "CONVOY_LINK";
/// The lease a node's DDS participant announces (vendored rustdds change 82): how long the
/// other nodes keep it after they last heard from it (default 5 s; 4s..=600s). Longer where a
/// host runs many more busy processes than it has cores: a live node can then go unheard for
/// longer than 5 s, and every match with it is dropped and made again. Give every node of a
/// run the same value.
pub const DDS_LEASE_ENV: &str = "CONVOY_DDS_LEASE";

/// The default node pacing: 128 KiB per 250 µs (~500 MiB/s). A receiver with the OS's default
/// 212 KB socket buffer (stock Fast DDS / ROS 2) keeps up with it; a 640x480 rgb8 image leaves
/// in ~1.6 ms instead of one burst that such a receiver mostly drops.
pub const DEFAULT_PACING: (usize, Duration) = (128 * 1024, Duration::from_micros(250));
/// The default datagram cap (the UDP limit less a margin); the path MTU lowers it per reader.
pub const DEFAULT_MAX_DATAGRAM: usize = 65_000;
/// The default fragment size: one fragment per 1500-byte-MTU datagram.
pub const DEFAULT_FRAGMENT_SIZE: usize = 1280;
/// The default in-flight window of a reliable writer: the 8 MiB receive buffer convoy's
/// readers ask for (two 1440x960 rgb8 images). More in flight than a stalled reader can queue
/// is dropped and repaired while new samples keep coming: the stream collapses instead of
/// slowing down.
pub const DEFAULT_WINDOW: usize = 8 * 1024 * 1024;

/// The default hold of a plain acknowledgement beyond the receive loop's pass: none. A hold
/// of 150 µs joins more (an agent's state and FrameDone arrive tens of microseconds apart)
/// but delays the acknowledgement a depth-1 clock writer waits for before its next tick:
/// 4-agent lockstep ran slower with it (git history of docs/BENCHMARKS.md, issue 19).
pub const DEFAULT_ACK_HOLD: Duration = Duration::ZERO;

/// A bad `CONVOY_*` value, with the variable and the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}='{value}': {reason}")]
pub struct TransportError {
    pub var: &'static str,
    pub value: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TransportSettings {
    pub peers: Vec<IpAddr>,
    pub pacing: Option<PacingRate>,
    pub writer_pacing: Option<PacingRate>,
    pub max_datagram: usize,
    pub fragment_size: usize,
    pub window: Option<usize>,
    pub fast_push: bool,
    /// User-traffic sockets read by blocking threads of their own.
    pub receive_threads: bool,
    /// Large samples to same-host readers through shared memory.
    pub shm: bool,
    /// A sample for the readers of at least this many nodes once to their multicast group;
    /// None: never.
    pub multicast: Option<usize>,
    /// None: ACKNACKs are not batched.
    pub ack_hold: Option<Duration>,
    pub ack_ride_hold: Duration,
    /// None: no link emulation.
    pub link: Option<LinkEmulation>,
    /// The lease the node's participant announces.
    pub dds_lease: Duration,
}

impl Default for TransportSettings {
    fn default() -> Self {
        TransportSettings {
            peers: Vec::new(),
            pacing: PacingRate::new(DEFAULT_PACING.0, DEFAULT_PACING.1),
            writer_pacing: None,
            max_datagram: DEFAULT_MAX_DATAGRAM,
            fragment_size: DEFAULT_FRAGMENT_SIZE,
            window: Some(DEFAULT_WINDOW),
            fast_push: true,
            receive_threads: true,
            shm: true,
            multicast: Some(rustdds::DEFAULT_MULTICAST_PARTICIPANTS),
            ack_hold: Some(DEFAULT_ACK_HOLD),
            ack_ride_hold: rustdds::DEFAULT_ACK_RIDE_HOLD,
            link: None,
            dds_lease: rustdds::DEFAULT_PARTICIPANT_LEASE,
        }
    }
}

impl TransportSettings {
    /// The defaults, overridden by whichever `CONVOY_*` variables are set.
    pub fn from_env() -> Result<TransportSettings, TransportError> {
        Self::from_lookup(|var| std::env::var(var).ok())
    }

    /// As [`Self::from_env`], with the variables from `lookup` (tests, launch files).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<TransportSettings, TransportError> {
        let mut settings = TransportSettings::default();
        if let Some(v) = lookup(PEERS_ENV) {
            settings.peers = parse_peers(&v)?;
        }
        if let Some(v) = lookup(PACING_ENV) {
            settings.pacing = parse_pacing(PACING_ENV, &v)?;
        }
        if let Some(v) = lookup(WRITER_PACING_ENV) {
            settings.writer_pacing = parse_pacing(WRITER_PACING_ENV, &v)?;
        }
        if let Some(v) = lookup(MAX_DATAGRAM_ENV) {
            settings.max_datagram = parse_bounded(MAX_DATAGRAM_ENV, &v, 512, DEFAULT_MAX_DATAGRAM)?;
        }
        if let Some(v) = lookup(FRAGMENT_SIZE_ENV) {
            settings.fragment_size = parse_bounded(FRAGMENT_SIZE_ENV, &v, 256, 60_000)?;
        }
        if let Some(v) = lookup(WINDOW_ENV) {
            settings.window = if v.trim().eq_ignore_ascii_case("off") {
                None
            } else {
                Some(parse_bounded(WINDOW_ENV, &v, 64 * 1024, 1 << 30)?)
            };
        }
        if let Some(v) = lookup(FAST_PUSH_ENV) {
            settings.fast_push = on_off(FAST_PUSH_ENV, &v)?;
        }
        if let Some(v) = lookup(RECEIVE_THREADS_ENV) {
            settings.receive_threads = on_off(RECEIVE_THREADS_ENV, &v)?;
        }
        if let Some(v) = lookup(SHM_ENV) {
            settings.shm = on_off(SHM_ENV, &v)?;
        }
        if let Some(v) = lookup(MULTICAST_ENV) {
            settings.multicast = match v.trim().to_ascii_lowercase().as_str() {
                "on" => Some(rustdds::DEFAULT_MULTICAST_PARTICIPANTS),
                "off" => None,
                n => match n.parse::<usize>() {
                    Ok(n) if n >= 2 => Some(n),
                    _ => {
                        return Err(error(
                            MULTICAST_ENV,
                            &v,
                            "expected on, off or a number of nodes (2 or more)",
                        ))
                    }
                },
            };
        }
        if let Some(v) = lookup(ACK_HOLD_ENV) {
            settings.ack_hold = parse_ack_hold(&v)?;
        }
        if let Some(v) = lookup(ACK_RIDE_ENV) {
            settings.ack_ride_hold =
                parse_hold(ACK_RIDE_ENV, &v, "expected a duration (0us, 20ms)")?;
        }
        if let Some(v) = lookup(LINK_ENV) {
            settings.link = parse_link(&v)?;
        }
        if let Some(v) = lookup(DDS_LEASE_ENV) {
            settings.dds_lease = match parse_period(&v) {
                Some(lease) if (MIN_DDS_LEASE..=MAX_DDS_LEASE).contains(&lease) => lease,
                _ => {
                    return Err(error(
                        DDS_LEASE_ENV,
                        &v,
                        "expected a duration from 4s to 600s (e.g. 20s)",
                    ))
                }
            };
        }
        Ok(settings)
    }
}

/// A switch: `on` or `off`, any case.
fn on_off(var: &'static str, value: &str) -> Result<bool, TransportError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(error(var, value, "expected on or off")),
    }
}

fn error(var: &'static str, value: &str, reason: impl Into<String>) -> TransportError {
    TransportError {
        var,
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// `10.0.0.2,10.0.0.3` (empty: none).
fn parse_peers(value: &str) -> Result<Vec<IpAddr>, TransportError> {
    value
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.parse().map_err(|_| {
                error(
                    PEERS_ENV,
                    value,
                    format!("'{e}' is not an IP address (use a comma-separated list, e.g. 10.0.0.2,10.0.0.3)"),
                )
            })
        })
        .collect()
}

/// The keys of one host's link conditions, as a launch file's `link` names them.
const LINK_KEYS: &str = "delay_ms, jitter_ms, loss_pct, rate_mbit";

/// `off` (or empty): none. Otherwise `;`-separated entries `[HOST:]KEY=VALUE,...`, HOST an IP
/// address or `*` (every host no other entry names; an entry without HOST is that too), KEY
/// one of [`LINK_KEYS`]; `HOST:off` leaves that host out.
fn parse_link(value: &str) -> Result<Option<LinkEmulation>, TransportError> {
    let v = value.trim();
    if v.is_empty() || v.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let fail = |reason: String| error(LINK_ENV, value, reason);
    let mut link = LinkEmulation::default();
    for entry in v.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        // The host ends at the last ':' before the first '=' (an IPv6 address has colons).
        let head = entry.find('=').map_or(entry, |i| &entry[..i]);
        let (host, conditions) = match head.rfind(':') {
            Some(i) => (Some(entry[..i].trim()), entry[i + 1..].trim()),
            None => (None, entry),
        };
        let conditions = parse_conditions(conditions)
            .map_err(|reason| fail(format!("entry '{entry}': {reason}")))?;
        match host {
            None | Some("*") => {
                if link.default.is_some() {
                    return Err(fail(format!(
                        "entry '{entry}': a second entry for every other host (give `*` once)"
                    )));
                }
                link.default = Some(conditions);
            }
            Some(h) => {
                let ip: IpAddr = h.trim_matches(['[', ']']).parse().map_err(|_| {
                    fail(format!(
                        "entry '{entry}': '{h}' is not an IP address or * (e.g. \
                         10.77.0.2:delay_ms=20;*:delay_ms=5)"
                    ))
                })?;
                if link.hosts.insert(ip, conditions).is_some() {
                    return Err(fail(format!("entry '{entry}': {ip} is named twice")));
                }
            }
        }
    }
    Ok(link.is_active().then_some(link))
}

/// `delay_ms=20,jitter_ms=2,loss_pct=1,rate_mbit=100` (any of them; absent: 0), or `off`.
fn parse_conditions(text: &str) -> Result<LinkConditions, String> {
    let mut c = LinkConditions::default();
    if text.eq_ignore_ascii_case("off") {
        return Ok(c);
    }
    let mut seen = Vec::new();
    for pair in text.split(',').map(str::trim) {
        let Some((key, number)) = pair.split_once('=') else {
            return Err(format!(
                "'{pair}' is not KEY=VALUE (keys: {LINK_KEYS}; or off)"
            ));
        };
        let (key, number) = (key.trim(), number.trim());
        let (max, unit) = match key {
            "delay_ms" | "jitter_ms" => (60_000.0, "ms"),
            "loss_pct" => (100.0, "%"),
            "rate_mbit" => (100_000.0, "Mbit/s"),
            _ => return Err(format!("unknown key '{key}' (keys: {LINK_KEYS})")),
        };
        if seen.contains(&key) {
            return Err(format!("{key} is given twice"));
        }
        seen.push(key);
        let x: f64 = number
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && (0.0..=max).contains(x))
            .ok_or_else(|| format!("{key}='{number}': expected a number 0..={max} ({unit})"))?;
        match key {
            "delay_ms" => c.delay = Duration::from_secs_f64(x / 1e3),
            "jitter_ms" => c.jitter = Duration::from_secs_f64(x / 1e3),
            "loss_pct" => c.loss_ppm = (x * 1e4).round() as u32,
            _ => c.rate_bps = (x * 1e6).round() as u64,
        }
    }
    Ok(c)
}

/// One line saying what a link emulation does, for the node's log: `delay 20 ms ± 2 ms to
/// every host; none to 127.0.0.1`.
pub fn describe_link(link: &LinkEmulation) -> String {
    let mut parts = Vec::new();
    for (ip, c) in &link.hosts {
        parts.push(format!("{} to {ip}", describe_conditions(c)));
    }
    if let Some(c) = &link.default {
        let whom = if link.hosts.is_empty() {
            "every host"
        } else {
            "every other host"
        };
        parts.push(format!("{} to {whom}", describe_conditions(c)));
    }
    parts.join("; ")
}

fn describe_conditions(c: &LinkConditions) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut parts = Vec::new();
    if !c.delay.is_zero() || !c.jitter.is_zero() {
        let mut delay = format!("delay {} ms", ms(c.delay));
        if !c.jitter.is_zero() {
            delay += &format!(" ± {} ms", ms(c.jitter));
        }
        parts.push(delay);
    }
    if c.loss_ppm > 0 {
        parts.push(format!("loss {}%", f64::from(c.loss_ppm) / 1e4));
    }
    if c.rate_bps > 0 {
        parts.push(format!("rate {} Mbit/s", c.rate_bps as f64 / 1e6));
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// `128KiB/250us`, `1MB/2ms`, `off`.
fn parse_pacing(var: &'static str, value: &str) -> Result<Option<PacingRate>, TransportError> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("off") || v == "0" {
        return Ok(None);
    }
    let usage = "expected BYTES/PERIOD (e.g. 128KiB/250us, 1MB/2ms) or off";
    let (bytes, period) = v.split_once('/').ok_or_else(|| error(var, value, usage))?;
    let bytes = parse_bytes(bytes).ok_or_else(|| error(var, value, usage))?;
    let period = parse_period(period).ok_or_else(|| error(var, value, usage))?;
    if bytes < 1500 {
        return Err(error(
            var,
            value,
            "at least one 1500-byte datagram per period",
        ));
    }
    if period < Duration::from_micros(50) || period > Duration::from_secs(1) {
        return Err(error(var, value, "the period must be 50us..1s"));
    }
    Ok(PacingRate::new(bytes, period))
}

fn parse_ack_hold(value: &str) -> Result<Option<Duration>, TransportError> {
    if value.trim().eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    parse_hold(
        ACK_HOLD_ENV,
        value,
        "expected a duration (0us, 150us) or off",
    )
    .map(Some)
}

/// The bounds of [`DDS_LEASE_ENV`]: rustdds's shortest (two SPDP announcement periods); at
/// most ten minutes (a dead node's participant is kept that long by nodes that do not watch
/// statuses).
const MIN_DDS_LEASE: Duration = rustdds::MIN_PARTICIPANT_LEASE;
const MAX_DDS_LEASE: Duration = Duration::from_secs(600);

/// How long an acknowledgement may wait (`CONVOY_ACK_HOLD`, `CONVOY_ACK_RIDE`): a duration of
/// at most 100 ms; `expected` says what else `var` takes.
fn parse_hold(var: &'static str, value: &str, expected: &str) -> Result<Duration, TransportError> {
    match parse_period(value) {
        Some(hold) if hold <= Duration::from_millis(100) => Ok(hold),
        Some(_) => Err(error(var, value, "at most 100ms")),
        None => Err(error(var, value, expected)),
    }
}

fn parse_bounded(
    var: &'static str,
    value: &str,
    min: usize,
    max: usize,
) -> Result<usize, TransportError> {
    let n = parse_bytes(value)
        .ok_or_else(|| error(var, value, "expected a byte count (e.g. 1400, 60KiB)"))?;
    if n < min || n > max {
        return Err(error(var, value, format!("must be {min}..={max} bytes")));
    }
    Ok(n)
}

/// `1400`, `64KiB`, `1MB` (KB/MB are decimal, KiB/MiB binary).
fn parse_bytes(s: &str) -> Option<usize> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: usize = number.parse().ok()?;
    let factor = match unit.trim() {
        "" | "B" => 1,
        "KB" | "kB" => 1000,
        "KiB" => 1024,
        "MB" => 1_000_000,
        "MiB" => 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(factor)
}

/// `250us`, `2ms`, `1s`.
fn parse_period(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = s.split_at(split);
    let n: u64 = number.parse().ok()?;
    match unit {
        "us" => Some(Duration::from_micros(n)),
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<TransportSettings, TransportError> {
        TransportSettings::from_lookup(|k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn defaults_pace_the_node_and_not_each_writer() {
        let s = settings(&[]).expect("defaults");
        let pacing = s.pacing.expect("node pacing on by default");
        assert_eq!(pacing.bytes_per_period(), 128 * 1024);
        assert_eq!(pacing.period(), Duration::from_micros(250));
        assert_eq!(s.writer_pacing, None);
        assert_eq!((s.max_datagram, s.fragment_size), (65_000, 1280));
        assert_eq!(s.window, Some(8 * 1024 * 1024));
        assert!(s.fast_push && s.receive_threads);
        assert!(s.shm);
        assert!(!settings(&[(SHM_ENV, "off")]).expect("shm off").shm);
        assert!(settings(&[(SHM_ENV, "maybe")]).is_err());
        let multicast = |v: &str| settings(&[(MULTICAST_ENV, v)]).map(|s| s.multicast);
        assert_eq!(
            settings(&[]).expect("defaults").multicast,
            Some(rustdds::DEFAULT_MULTICAST_PARTICIPANTS)
        );
        assert_eq!(multicast("off"), Ok(None));
        assert_eq!(multicast("4"), Ok(Some(4)));
        assert!(multicast("1").is_err());
        assert!(multicast("sometimes").is_err());
        assert_eq!(
            settings(&[]).expect("defaults").dds_lease,
            Duration::from_secs(5)
        );
    }

    #[test]
    fn the_dds_lease_is_a_duration_of_seconds_to_minutes() {
        let lease = |v: &str| settings(&[(DDS_LEASE_ENV, v)]).map(|s| s.dds_lease);
        assert_eq!(lease("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(lease("4000ms"), Ok(Duration::from_secs(4)));
        for bad in ["1s", "3999ms", "601s", "20", "long"] {
            let e = lease(bad).expect_err(bad);
            assert_eq!(e.var, DDS_LEASE_ENV);
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn variables_override_the_defaults() {
        let s = settings(&[
            (PEERS_ENV, "10.0.0.2, 10.0.0.3"),
            (PACING_ENV, "off"),
            (WRITER_PACING_ENV, "1MB/2ms"),
            (MAX_DATAGRAM_ENV, "1400"),
            (FRAGMENT_SIZE_ENV, "8KiB"),
            (WINDOW_ENV, "off"),
            (FAST_PUSH_ENV, "off"),
            (RECEIVE_THREADS_ENV, "off"),
        ])
        .expect("valid");
        assert_eq!(s.peers.len(), 2);
        assert_eq!(s.pacing, None);
        let w = s.writer_pacing.expect("writer pacing");
        assert_eq!(
            (w.bytes_per_period(), w.period()),
            (1_000_000, Duration::from_millis(2))
        );
        assert_eq!((s.max_datagram, s.fragment_size), (1400, 8192));
        assert_eq!(s.window, None);
        assert!(!s.fast_push);
        assert!(!s.receive_threads);
    }

    #[test]
    fn bad_values_name_the_variable_and_the_value() {
        let e = settings(&[(PACING_ENV, "fast")]).expect_err("bad pacing");
        assert_eq!(e.var, PACING_ENV);
        assert!(
            e.to_string()
                .starts_with("CONVOY_PACING='fast': expected BYTES/PERIOD"),
            "{e}"
        );
        let e = settings(&[(PEERS_ENV, "10.0.0.2,hostb")]).expect_err("bad peer");
        assert!(
            e.to_string().contains("'hostb' is not an IP address"),
            "{e}"
        );
        let e = settings(&[(MAX_DATAGRAM_ENV, "100000")]).expect_err("too big");
        assert!(e.to_string().contains("512..=65000"), "{e}");
        assert!(settings(&[(PACING_ENV, "100B/1ms")]).is_err());
        assert!(settings(&[(PACING_ENV, "1MB/10ns")]).is_err());
        assert!(settings(&[(FRAGMENT_SIZE_ENV, "12XB")]).is_err());
        let e = settings(&[(ACK_HOLD_ENV, "soon")]).expect_err("bad hold");
        assert_eq!(
            e.to_string(),
            "CONVOY_ACK_HOLD='soon': expected a duration (0us, 150us) or off"
        );
        assert_eq!(
            settings(&[(ACK_HOLD_ENV, "off")]).expect("off").ack_hold,
            None
        );
        assert_eq!(
            settings(&[(ACK_HOLD_ENV, "0us")]).expect("zero").ack_hold,
            Some(Duration::ZERO)
        );
        assert_eq!(
            settings(&[(ACK_RIDE_ENV, "0us")])
                .expect("zero")
                .ack_ride_hold,
            Duration::ZERO
        );
        let e = settings(&[(ACK_RIDE_ENV, "1s")]).expect_err("too long");
        assert_eq!(e.to_string(), "CONVOY_ACK_RIDE='1s': at most 100ms");
        let e = settings(&[(FAST_PUSH_ENV, "yes")]).expect_err("bad switch");
        assert_eq!(e.to_string(), "CONVOY_FAST_PUSH='yes': expected on or off");
    }

    #[test]
    fn link_emulation_for_every_host_or_per_host() {
        assert_eq!(settings(&[]).expect("defaults").link, None);
        assert_eq!(settings(&[(LINK_ENV, "off")]).expect("off").link, None);
        assert_eq!(settings(&[(LINK_ENV, "delay_ms=0")]).expect("0").link, None);

        let s = settings(&[(LINK_ENV, "delay_ms=20,jitter_ms=2,loss_pct=1,rate_mbit=100")]);
        let link = s.expect("valid").link.expect("active");
        let c = link.default.expect("every host");
        assert_eq!(c.delay, Duration::from_millis(20));
        assert_eq!(c.jitter, Duration::from_millis(2));
        assert_eq!((c.loss_ppm, c.rate_bps), (10_000, 100_000_000));
        assert!(link.hosts.is_empty());
        assert_eq!(
            describe_link(&link),
            "delay 20 ms ± 2 ms, loss 1%, rate 100 Mbit/s to every host"
        );

        let s = settings(&[(
            LINK_ENV,
            "127.0.0.1:off; 10.77.0.2:delay_ms=20 ;*:delay_ms=5.5;fe80::1:loss_pct=0.5",
        )]);
        let link = s.expect("valid").link.expect("active");
        let host = |h: &str| link.hosts[&h.parse::<IpAddr>().expect("ip")];
        assert!(host("127.0.0.1").is_none());
        assert_eq!(host("10.77.0.2").delay, Duration::from_millis(20));
        assert_eq!(host("fe80::1").loss_ppm, 5_000);
        assert_eq!(
            link.default.expect("others").delay,
            Duration::from_micros(5_500)
        );
        assert_eq!(
            describe_link(&link),
            "delay 20 ms to 10.77.0.2; none to 127.0.0.1; loss 0.5% to fe80::1; \
             delay 5.5 ms to every other host"
        );
    }

    #[test]
    fn a_bad_link_value_names_the_variable_the_entry_and_the_key() {
        let e = settings(&[(LINK_ENV, "delay_ms=20,jiter_ms=2")]).expect_err("typo");
        assert_eq!(e.var, LINK_ENV);
        assert_eq!(
            e.to_string(),
            "CONVOY_LINK='delay_ms=20,jiter_ms=2': entry 'delay_ms=20,jiter_ms=2': unknown key \
             'jiter_ms' (keys: delay_ms, jitter_ms, loss_pct, rate_mbit)"
        );
        let e = settings(&[(LINK_ENV, "10.77.0.2:delay_ms=fast")]).expect_err("not a number");
        assert!(
            e.to_string()
                .ends_with("delay_ms='fast': expected a number 0..=60000 (ms)"),
            "{e}"
        );
        let e = settings(&[(LINK_ENV, "loss_pct=150")]).expect_err("over 100 %");
        assert!(e.to_string().contains("loss_pct='150'"), "{e}");
        let e = settings(&[(LINK_ENV, "hostb:delay_ms=1")]).expect_err("not an address");
        assert!(
            e.to_string().contains("'hostb' is not an IP address or *"),
            "{e}"
        );
        let e = settings(&[(LINK_ENV, "delay_ms")]).expect_err("no value");
        assert!(e.to_string().contains("'delay_ms' is not KEY=VALUE"), "{e}");
        let e = settings(&[(LINK_ENV, "delay_ms=1;*:delay_ms=2")]).expect_err("two defaults");
        assert!(e.to_string().contains("give `*` once"), "{e}");
        let e = settings(&[(LINK_ENV, "delay_ms=1,delay_ms=2")]).expect_err("twice");
        assert!(e.to_string().contains("delay_ms is given twice"), "{e}");
    }
}
