//! convoy's transport settings: what a node's DDS participant is built with beyond QoS —
//! static discovery peers, pacing, datagram and fragment sizes — read from `CONVOY_*`
//! environment variables (a launch file's `[transport]` table sets them for every node it
//! starts). docs/TRANSPORT.md says what each does and which values suit which network.

use std::net::IpAddr;
use std::time::Duration;

use rustdds::PacingRate;

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
            settings.fast_push = match v.trim().to_ascii_lowercase().as_str() {
                "on" => true,
                "off" => false,
                _ => return Err(error(FAST_PUSH_ENV, &v, "expected on or off")),
            };
        }
        Ok(settings)
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
        assert!(s.fast_push);
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
        let e = settings(&[(FAST_PUSH_ENV, "yes")]).expect_err("bad switch");
        assert_eq!(e.to_string(), "CONVOY_FAST_PUSH='yes': expected on or off");
    }
}
