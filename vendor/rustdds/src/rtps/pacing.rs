//! convoy change 8: writer-side pacing, and the transport settings a participant
//! is built with.
//!
//! A large sample leaves a writer as a burst of datagrams (a 640x480 rgb8 image
//! is ~15 datagrams of 64 KB on loopback). A receiver whose socket buffer is the
//! OS default (Linux: 212 KB, which Fast DDS and most ROS 2 users keep) drops
//! most of such a burst when its receive thread is not already running, and a
//! best-effort sample with one lost datagram is lost. Pacing spreads the burst:
//! every datagram of user data a writer pushes is charged to a token bucket of
//! the writer and one of the participant; when either is empty the writer stops
//! at that exact fragment and resumes from the event loop's timer when the
//! bucket has refilled (the same resumable cursor that socket back-pressure
//! uses). Control traffic (heartbeats, ACKNACKs, discovery, repairs) is never
//! paced.

use std::{
  cell::RefCell,
  net::IpAddr,
  rc::Rc,
  time::{Duration, Instant},
};

use crate::{
  network::link_emulation::LinkEmulation,
  rtps::constant::{FRAGMENT_SIZE, MAX_UDP_DATAGRAM_BUDGET},
};

/// At most `bytes_per_period` bytes of datagrams in any `period` (a token
/// bucket of that size, refilled continuously at that rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacingRate {
  bytes_per_period: usize,
  period: Duration,
}

impl PacingRate {
  /// None when either is zero (no pacing).
  pub fn new(bytes_per_period: usize, period: Duration) -> Option<PacingRate> {
    (bytes_per_period > 0 && !period.is_zero()).then_some(PacingRate {
      bytes_per_period,
      period,
    })
  }

  pub fn bytes_per_period(&self) -> usize {
    self.bytes_per_period
  }

  pub fn period(&self) -> Duration {
    self.period
  }

  fn bytes_per_second(&self) -> f64 {
    self.bytes_per_period as f64 / self.period.as_secs_f64()
  }
}

/// Transport settings of a participant beyond the DDS QoS (convoy changes 5, 8,
/// 9 and later), set with `DomainParticipantBuilder`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportTuning {
  /// Hosts announced to by unicast SPDP (change 5).
  pub static_peers: Vec<IpAddr>,
  /// Pacing of all user-data writers of the participant together.
  pub participant_pacing: Option<PacingRate>,
  /// Pacing of each user-data writer.
  pub writer_pacing: Option<PacingRate>,
  /// Upper bound of a datagram's RTPS bytes, whatever the path MTU allows.
  pub max_datagram_payload: usize,
  /// Serialized-payload bytes per DATAFRAG fragment.
  pub fragment_size: usize,
  /// convoy change 14: a reliable writer pushes a new sample only while the
  /// samples it pushed and a reader has not acknowledged hold fewer bytes than
  /// this (a sample larger than it goes when nothing is in flight). None: no
  /// limit but the history depth.
  pub max_unacked_bytes: Option<usize>,
  /// convoy change 22: a reliable KEEP_LAST writer replaces its oldest samples
  /// when its window is full, acknowledged or not (DDS's KEEP_LAST), instead of
  /// blocking the application until a reader acknowledges.
  pub keep_last_replaces_unacked: bool,
  /// convoy change 35: a writer may send a small sample from the thread that
  /// writes it (`rtps::fast_push`) when nothing needs the event loop.
  pub application_thread_push: bool,
  /// convoy change 39: delay, jitter, loss and rate applied to every datagram
  /// the participant sends, per destination host (`network::link_emulation`).
  /// None: datagrams go straight to the socket.
  pub link_emulation: Option<LinkEmulation>,
  /// convoy change 41: readers' ACKNACKs leave batched at the end of the
  /// receive loop's pass, one datagram per destination; a plain
  /// acknowledgement waits up to this long beyond the pass for others
  /// (`rtps::reply_batch`; zero by default). None: each ACKNACK is sent as it
  /// is made.
  pub ack_hold: Option<std::time::Duration>,
  /// convoy change 52: a plain acknowledgement to a participant this one
  /// pushed a sample to within this long waits up to this long for the next
  /// such sample, and rides in its datagram (`rtps::reply_batch`). Zero: it
  /// waits only for what the same pass pushes.
  pub ack_ride_hold: std::time::Duration,
  /// convoy change 69: a user writer sends a sample once to a multicast group
  /// when the group reaches readers in at least this many participants. None:
  /// never (once to each reader).
  pub multicast_user_data: Option<usize>,
  /// convoy change 76: the user-traffic sockets are read by a thread each that
  /// blocks in the read (`recvmmsg`) and hands samples to the readers itself;
  /// the event loop keeps discovery, timers and commands. False: the event loop
  /// polls them too, as before (and on systems other than Linux).
  pub receive_threads: bool,
  /// convoy change 82: the lease this participant announces in SPDP: how long
  /// the others keep it after its last announcement (or other traffic).
  pub participant_lease: std::time::Duration,
}

/// convoy change 52: the default [`TransportTuning::ack_ride_hold`]: longer
/// than a lockstep frame of 64 agents on two cores (~16 ms), so the
/// coordinator's acknowledgement of a state rides with the next tick, well
/// under the 200 ms after which a writer takes a silent reader for stopped.
pub const DEFAULT_ACK_RIDE_HOLD: std::time::Duration = std::time::Duration::from_millis(20);

/// convoy change 69: the default [`TransportTuning::multicast_user_data`].
/// Every participant on the group gets the datagram, reader or not (a lockstep
/// coordinator parses and drops every agent's state), and the sender gets its
/// own back; on one 2-core host, 8 agents in peer exchange ran 15-20% slower
/// through the group than with 7 unicast copies, 32 agents as fast. Below this
/// many reader participants the copies are cheaper.
pub const DEFAULT_MULTICAST_PARTICIPANTS: usize = 16;

/// convoy changes 1 and 53: the default [`TransportTuning::participant_lease`],
/// two and a half SPDP periods (2 s): a participant that dies stops blocking
/// reliable writers within seconds.
pub const DEFAULT_PARTICIPANT_LEASE: std::time::Duration = std::time::Duration::from_secs(5);

/// convoy change 82: the shortest [`TransportTuning::participant_lease`], two
/// SPDP periods (an announcement lost on the way does not end the lease).
pub const MIN_PARTICIPANT_LEASE: std::time::Duration = std::time::Duration::from_secs(4);

impl Default for TransportTuning {
  fn default() -> Self {
    TransportTuning {
      static_peers: Vec::new(),
      participant_pacing: None,
      writer_pacing: None,
      max_datagram_payload: MAX_UDP_DATAGRAM_BUDGET,
      fragment_size: FRAGMENT_SIZE,
      max_unacked_bytes: None,
      keep_last_replaces_unacked: false,
      application_thread_push: true,
      link_emulation: None,
      ack_hold: Some(std::time::Duration::ZERO),
      ack_ride_hold: DEFAULT_ACK_RIDE_HOLD,
      multicast_user_data: Some(DEFAULT_MULTICAST_PARTICIPANTS),
      receive_threads: true,
      participant_lease: DEFAULT_PARTICIPANT_LEASE,
    }
  }
}

/// A token bucket of bytes.
#[derive(Debug)]
pub(crate) struct TokenBucket {
  rate: PacingRate,
  /// May go below zero: a datagram larger than the bucket is let through when
  /// the bucket is full, leaving a debt.
  tokens: f64,
  refilled_at: Instant,
}

impl TokenBucket {
  pub(crate) fn new(rate: PacingRate, now: Instant) -> TokenBucket {
    TokenBucket {
      rate,
      tokens: rate.bytes_per_period as f64,
      refilled_at: now,
    }
  }

  fn refill(&mut self, now: Instant) {
    let elapsed = now.saturating_duration_since(self.refilled_at).as_secs_f64();
    self.tokens = (self.tokens + elapsed * self.rate.bytes_per_second())
      .min(self.rate.bytes_per_period as f64);
    self.refilled_at = now;
  }

  /// How long until `bytes` may go (zero: now).
  fn wait_for(&mut self, bytes: usize, now: Instant) -> Duration {
    self.refill(now);
    let need = bytes.min(self.rate.bytes_per_period) as f64;
    if self.tokens >= need {
      Duration::ZERO
    } else {
      Duration::from_secs_f64((need - self.tokens) / self.rate.bytes_per_second())
    }
  }

  fn take(&mut self, bytes: usize) {
    self.tokens -= bytes as f64;
  }
}

/// The buckets one writer's datagrams are charged to.
#[derive(Debug, Default)]
pub(crate) struct Pacer {
  writer: Option<TokenBucket>,
  participant: Option<Rc<RefCell<TokenBucket>>>,
}

impl Pacer {
  pub(crate) fn new(
    writer: Option<PacingRate>,
    participant: Option<Rc<RefCell<TokenBucket>>>,
    now: Instant,
  ) -> Pacer {
    Pacer {
      writer: writer.map(|rate| TokenBucket::new(rate, now)),
      participant,
    }
  }

  pub(crate) fn is_active(&self) -> bool {
    self.writer.is_some() || self.participant.is_some()
  }

  /// How long until a datagram of `bytes` may go (zero: now); charges nothing.
  pub(crate) fn ready_in(&mut self, bytes: usize, now: Instant) -> Duration {
    let writer_wait = self
      .writer
      .as_mut()
      .map_or(Duration::ZERO, |b| b.wait_for(bytes, now));
    let participant_wait = self
      .participant
      .as_ref()
      .map_or(Duration::ZERO, |b| b.borrow_mut().wait_for(bytes, now));
    writer_wait.max(participant_wait)
  }

  /// Charges a datagram that went out to every bucket.
  pub(crate) fn charge(&mut self, bytes: usize) {
    if let Some(b) = self.writer.as_mut() {
      b.take(bytes);
    }
    if let Some(b) = self.participant.as_ref() {
      b.borrow_mut().take(bytes);
    }
  }

  /// Zero when a datagram of `bytes` may go now, and then it is charged to
  /// every bucket; otherwise how long to wait before asking again.
  pub(crate) fn admit(&mut self, bytes: usize, now: Instant) -> Duration {
    let wait = self.ready_in(bytes, now);
    if wait.is_zero() {
      self.charge(bytes);
    }
    wait
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn rate(bytes: usize, micros: u64) -> PacingRate {
    PacingRate::new(bytes, Duration::from_micros(micros)).expect("rate")
  }

  #[test]
  fn zero_rate_means_no_pacing() {
    assert!(PacingRate::new(0, Duration::from_millis(1)).is_none());
    assert!(PacingRate::new(1000, Duration::ZERO).is_none());
    assert!(!Pacer::default().is_active());
  }

  #[test]
  fn a_full_bucket_lets_a_burst_through_then_paces_at_the_rate() {
    let t0 = Instant::now();
    // 100 KB per ms = 100 MB/s
    let mut pacer = Pacer::new(Some(rate(100_000, 1000)), None, t0);
    assert_eq!(pacer.admit(60_000, t0), Duration::ZERO);
    // 40 KB left: a second 60 KB datagram waits for 20 KB = 200 us.
    let wait = pacer.admit(60_000, t0);
    assert!((wait.as_secs_f64() - 200e-6).abs() < 1e-6, "{wait:?}");
    assert_eq!(pacer.admit(60_000, t0 + wait), Duration::ZERO);
  }

  #[test]
  fn a_datagram_larger_than_the_bucket_goes_when_it_is_full() {
    let t0 = Instant::now();
    let mut pacer = Pacer::new(Some(rate(10_000, 1000)), None, t0);
    assert_eq!(pacer.admit(64_000, t0), Duration::ZERO);
    // 54 KB of debt plus a full bucket: 6.4 ms at 10 MB/s.
    let wait = pacer.admit(64_000, t0);
    assert!((wait.as_secs_f64() - 6.4e-3).abs() < 1e-6, "{wait:?}");
  }

  #[test]
  fn the_participant_bucket_is_shared_by_writers() {
    let t0 = Instant::now();
    let shared = Rc::new(RefCell::new(TokenBucket::new(rate(100_000, 1000), t0)));
    let mut a = Pacer::new(None, Some(shared.clone()), t0);
    let mut b = Pacer::new(Some(rate(1_000_000, 1000)), Some(shared), t0);
    assert_eq!(a.admit(80_000, t0), Duration::ZERO);
    // b's own bucket is full, but the participant's has only 20 KB.
    assert!(b.admit(80_000, t0) > Duration::ZERO);
    // A refused datagram is not charged anywhere.
    assert_eq!(b.admit(20_000, t0), Duration::ZERO);
  }
}
