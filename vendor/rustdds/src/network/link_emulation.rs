//! convoy change 39: link emulation in the transport.
//!
//! Delay, jitter, loss and a rate limit on every datagram a participant sends,
//! per destination host, for experiments on a machine whose kernel has no
//! netem qdisc. Both send paths go through it: the event loop's `UDPSender`
//! and a writer's push from the application thread (change 35). A datagram is
//! dropped (loss), or sent at once (no delay and no rate towards its host), or
//! handed to the participant's emulation thread, which sends it from the same
//! socket when it is due.
//!
//! The model follows netem on an interface's egress, per destination host:
//! - loss: each datagram is dropped with the given probability (before it
//!   takes any link time);
//! - rate: a datagram occupies its host's link for its size (plus 28 bytes of
//!   IPv4 and UDP header) at the rate, after the datagrams before it;
//! - delay and jitter: it arrives `delay` after it left the link, plus a
//!   uniform draw in `[-jitter, +jitter]` (netem's default distribution), but
//!   never before the datagram sent to the same host before it: datagrams to
//!   one host keep their order (netem reorders with jitter unless it also
//!   has a rate; this does not).
//! - a queue of at most `QUEUE_LIMIT_BYTES` waiting bytes; past it datagrams
//!   are dropped (netem's `limit`, counted in bytes here).
//!
//! With no emulation configured nothing of this runs: the send paths test one
//! `Option` and call `send_to` as before.

use std::{
  cmp::{Ordering as CmpOrdering, Reverse},
  collections::{BTreeMap, BinaryHeap, HashMap},
  io,
  net::{IpAddr, SocketAddr, UdpSocket},
  sync::{Arc, Condvar, Mutex, MutexGuard},
  thread,
  time::{Duration, Instant},
};

#[allow(unused_imports)]
use log::{debug, error, info, trace, warn};

/// IPv4 and UDP headers: counted against a rate limit, as a link carries them.
const HEADER_BYTES: usize = 28;

/// Most bytes of datagrams waiting in the emulation; more are dropped.
pub(crate) const QUEUE_LIMIT_BYTES: usize = 64 * 1024 * 1024;

/// How long the emulation thread retries a due datagram whose socket is full
/// before dropping it.
const FULL_SOCKET_PATIENCE: Duration = Duration::from_secs(1);

/// The conditions towards one destination host. All zero: none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkConditions {
  /// Added to every datagram's delivery.
  pub delay: Duration,
  /// Each datagram's delay varies uniformly by up to this much either way
  /// (never below zero, never overtaking the datagram before it).
  pub jitter: Duration,
  /// Datagrams dropped, in parts per million.
  pub loss_ppm: u32,
  /// Link rate in bits per second; 0: unlimited.
  pub rate_bps: u64,
}

impl LinkConditions {
  /// No delay, no jitter, no loss, no rate limit.
  pub fn is_none(&self) -> bool {
    *self == LinkConditions::default()
  }

  /// Whether a datagram may wait (anything but loss).
  fn delays(&self) -> bool {
    !self.delay.is_zero() || !self.jitter.is_zero() || self.rate_bps > 0
  }
}

/// Link emulation of a participant's sends (convoy change 39), set with
/// `DomainParticipantBuilder::link_emulation`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkEmulation {
  /// Conditions towards every host not in `hosts`; None: none.
  pub default: Option<LinkConditions>,
  /// Conditions per destination host (all zero: that host is not emulated).
  pub hosts: BTreeMap<IpAddr, LinkConditions>,
  /// Seed of the loss and jitter draws; None: a random one.
  pub seed: Option<u64>,
}

impl LinkEmulation {
  /// The conditions towards `host`, if any.
  pub fn conditions_for(&self, host: IpAddr) -> Option<&LinkConditions> {
    self
      .hosts
      .get(&host)
      .or(self.default.as_ref())
      .filter(|c| !c.is_none())
  }

  /// Whether any destination has conditions.
  pub fn is_active(&self) -> bool {
    self.default.is_some_and(|c| !c.is_none()) || self.hosts.values().any(|c| !c.is_none())
  }
}

/// What happens to one datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
  Drop,
  /// No conditions that delay towards its host: send it now.
  SendNow,
  /// Send it at this time.
  SendAt(Instant),
}

/// splitmix64: small, fast, good enough for loss and jitter draws, and
/// reproducible from a seed.
#[derive(Debug)]
struct Draws(u64);

impl Draws {
  fn next_u64(&mut self) -> u64 {
    self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = self.0;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
  }

  /// Uniform in [0, 1).
  fn unit(&mut self) -> f64 {
    (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
  }
}

/// The link towards one destination host.
#[derive(Debug, Clone, Copy)]
struct HostLink {
  /// When the link is free of the datagrams before (rate).
  free_at: Instant,
  /// When the last datagram to this host is delivered (order).
  last_due: Instant,
}

/// The scheduling decisions, apart from sockets and threads (unit-tested with
/// made-up times).
#[derive(Debug)]
pub(crate) struct LinkScheduler {
  config: LinkEmulation,
  links: HashMap<IpAddr, HostLink>,
  draws: Draws,
}

impl LinkScheduler {
  pub(crate) fn new(config: LinkEmulation) -> LinkScheduler {
    let seed = config.seed.unwrap_or_else(rand::random);
    LinkScheduler {
      config,
      links: HashMap::new(),
      draws: Draws(seed),
    }
  }

  /// What becomes of a datagram of `len` bytes to `host` sent at `now`.
  pub(crate) fn decide(&mut self, host: IpAddr, len: usize, now: Instant) -> Verdict {
    let Some(c) = self.config.conditions_for(host).copied() else {
      return Verdict::SendNow;
    };
    if c.loss_ppm > 0 && self.draws.unit() * 1e6 < f64::from(c.loss_ppm) {
      return Verdict::Drop;
    }
    if !c.delays() {
      return Verdict::SendNow;
    }
    let link = self.links.entry(host).or_insert(HostLink {
      free_at: now,
      last_due: now,
    });
    let mut left = now;
    if c.rate_bps > 0 {
      let bits = ((len + HEADER_BYTES) * 8) as f64;
      let start = link.free_at.max(now);
      left = start + Duration::from_secs_f64(bits / c.rate_bps as f64);
      link.free_at = left;
    }
    let mut due = left + c.delay;
    if !c.jitter.is_zero() {
      // Uniform in [-jitter, +jitter].
      let offset = c.jitter.as_secs_f64() * (2.0 * self.draws.unit() - 1.0);
      let delay = (c.delay.as_secs_f64() + offset).max(0.0);
      due = left + Duration::from_secs_f64(delay);
    }
    // Never before the datagram to the same host before it.
    due = due.max(link.last_due);
    link.last_due = due;
    Verdict::SendAt(due)
  }
}

/// A datagram waiting for its time.
#[derive(Debug)]
struct Waiting {
  due: Instant,
  /// Order of arrival: among equal due times, the first in goes first.
  seq: u64,
  socket: Arc<UdpSocket>,
  addr: SocketAddr,
  bytes: Vec<u8>,
}

impl PartialEq for Waiting {
  fn eq(&self, other: &Self) -> bool {
    (self.due, self.seq) == (other.due, other.seq)
  }
}
impl Eq for Waiting {}
impl PartialOrd for Waiting {
  fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
    Some(self.cmp(other))
  }
}
impl Ord for Waiting {
  fn cmp(&self, other: &Self) -> CmpOrdering {
    (self.due, self.seq).cmp(&(other.due, other.seq))
  }
}

#[derive(Debug)]
struct State {
  scheduler: LinkScheduler,
  queue: BinaryHeap<Reverse<Waiting>>,
  queued_bytes: usize,
  next_seq: u64,
  /// The last handle is gone: send what is queued, then end.
  closing: bool,
  overflow_reported: bool,
}

#[derive(Debug)]
struct Shared {
  state: Mutex<State>,
  wake: Condvar,
}

impl Shared {
  fn lock(&self) -> MutexGuard<'_, State> {
    self
      .state
      .lock()
      .unwrap_or_else(std::sync::PoisonError::into_inner)
  }
}

/// A participant's running link emulation: the scheduler, the queue of
/// delayed datagrams and the thread that sends them. Shared (`Arc`) by the
/// participant's `UDPSender` and its writers' application-thread pushes; the
/// thread ends once the last handle is dropped and the queue is empty.
#[derive(Debug)]
pub(crate) struct LinkEmulator {
  shared: Arc<Shared>,
}

impl LinkEmulator {
  /// Starts the emulation thread; None when `config` emulates nothing.
  pub(crate) fn start(config: &LinkEmulation) -> Option<Arc<LinkEmulator>> {
    if !config.is_active() {
      return None;
    }
    let shared = Arc::new(Shared {
      state: Mutex::new(State {
        scheduler: LinkScheduler::new(config.clone()),
        queue: BinaryHeap::new(),
        queued_bytes: 0,
        next_seq: 0,
        closing: false,
        overflow_reported: false,
      }),
      wake: Condvar::new(),
    });
    let for_thread = Arc::clone(&shared);
    let spawned = thread::Builder::new()
      .name("RustDDS link emulation".into())
      .spawn(move || run(&for_thread));
    if let Err(e) = spawned {
      error!("link emulation: cannot start its thread ({e}); sending without it");
      return None;
    }
    info!("link emulation in force: {config:?}");
    Some(Arc::new(LinkEmulator { shared }))
  }

  /// Sends `buffer` to `addr` from `socket` as the link would: now, later (from
  /// the emulation thread) or never. A datagram taken for later counts as
  /// sent; only one sent now can report `WouldBlock`.
  pub(crate) fn send_to(
    &self,
    socket: &Arc<UdpSocket>,
    buffer: &[u8],
    addr: SocketAddr,
  ) -> io::Result<usize> {
    let mut state = self.shared.lock();
    match state
      .scheduler
      .decide(addr.ip(), buffer.len(), Instant::now())
    {
      Verdict::Drop => Ok(buffer.len()),
      Verdict::SendNow => {
        drop(state);
        socket.send_to(buffer, addr)
      }
      Verdict::SendAt(due) => {
        if state.queued_bytes + buffer.len() > QUEUE_LIMIT_BYTES {
          if !state.overflow_reported {
            state.overflow_reported = true;
            warn!(
              "link emulation: more than {QUEUE_LIMIT_BYTES} bytes waiting; dropping datagrams \
               (a rate below what the writers send?)"
            );
          }
          return Ok(buffer.len());
        }
        let seq = state.next_seq;
        state.next_seq += 1;
        state.queued_bytes += buffer.len();
        let earliest = state.queue.peek().is_none_or(|Reverse(w)| due < w.due);
        state.queue.push(Reverse(Waiting {
          due,
          seq,
          socket: Arc::clone(socket),
          addr,
          bytes: buffer.to_vec(),
        }));
        drop(state);
        if earliest {
          self.shared.wake.notify_one();
        }
        Ok(buffer.len())
      }
    }
  }

  /// Datagrams waiting (tests).
  #[cfg(test)]
  fn waiting(&self) -> usize {
    self.shared.lock().queue.len()
  }
}

impl Drop for LinkEmulator {
  fn drop(&mut self) {
    self.shared.lock().closing = true;
    self.shared.wake.notify_one();
  }
}

/// The emulation thread: sends each waiting datagram at its time.
fn run(shared: &Shared) {
  let mut state = shared.lock();
  loop {
    let now = Instant::now();
    let next_due = state.queue.peek().map(|Reverse(w)| w.due);
    match next_due {
      None if state.closing => return,
      None => {
        state = shared
          .wake
          .wait(state)
          .unwrap_or_else(std::sync::PoisonError::into_inner);
      }
      Some(due) if due > now => {
        state = shared
          .wake
          .wait_timeout(state, due - now)
          .unwrap_or_else(std::sync::PoisonError::into_inner)
          .0;
      }
      Some(_) => {
        let Some(Reverse(w)) = state.queue.pop() else {
          continue;
        };
        state.queued_bytes -= w.bytes.len();
        drop(state);
        send_due(&w);
        state = shared.lock();
      }
    }
  }
}

fn send_due(w: &Waiting) {
  let give_up = Instant::now() + FULL_SOCKET_PATIENCE;
  loop {
    match w.socket.send_to(&w.bytes, w.addr) {
      Ok(_) => return,
      // The socket is non-blocking and shared with the event loop: wait for
      // room, as the datagram would have waited in a full qdisc.
      Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < give_up => {
        thread::sleep(Duration::from_micros(100));
      }
      Err(e) => {
        debug!("link emulation: sending to {} failed: {e}", w.addr);
        return;
      }
    }
  }
}

/// A send socket, with the participant's link emulation if it has one: what
/// `UDPSender` and a writer's application-thread push send through.
#[derive(Clone, Debug)]
pub(crate) struct EgressSocket {
  socket: Arc<UdpSocket>,
  link: Option<Arc<LinkEmulator>>,
}

impl EgressSocket {
  pub(crate) fn new(socket: Arc<UdpSocket>, link: Option<Arc<LinkEmulator>>) -> EgressSocket {
    EgressSocket { socket, link }
  }

  /// `UdpSocket::send_to`, through the emulation if there is one.
  #[inline]
  pub(crate) fn send_to(&self, buffer: &[u8], addr: SocketAddr) -> io::Result<usize> {
    match &self.link {
      None => self.socket.send_to(buffer, addr),
      Some(link) => link.send_to(&self.socket, buffer, addr),
    }
  }
}

#[cfg(test)]
mod tests {
  use std::net::Ipv4Addr;

  use super::*;

  const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 77, 0, 1));
  const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 77, 0, 2));
  const MS: Duration = Duration::from_millis(1);

  fn everywhere(c: LinkConditions) -> LinkScheduler {
    LinkScheduler::new(LinkEmulation {
      default: Some(c),
      hosts: BTreeMap::new(),
      seed: Some(39),
    })
  }

  fn due(v: Verdict) -> Instant {
    match v {
      Verdict::SendAt(t) => t,
      other => panic!("expected a delayed send, got {other:?}"),
    }
  }

  #[test]
  fn a_delay_delays_every_datagram_by_exactly_that() {
    let mut s = everywhere(LinkConditions {
      delay: 20 * MS,
      ..Default::default()
    });
    let t0 = Instant::now();
    for i in 0..10 {
      let now = t0 + i * MS;
      assert_eq!(due(s.decide(A, 64, now)), now + 20 * MS);
    }
  }

  #[test]
  fn jitter_stays_within_its_bounds_and_spreads_over_them() {
    let mut s = everywhere(LinkConditions {
      delay: 20 * MS,
      jitter: 5 * MS,
      ..Default::default()
    });
    let t0 = Instant::now();
    let mut delays = Vec::new();
    // 30 ms apart: the datagram before is always delivered already, so order
    // never holds one back and each delay is the draw itself.
    for i in 0..10_000 {
      let now = t0 + i * 30 * MS;
      delays.push((due(s.decide(A, 64, now)) - now).as_secs_f64() * 1e3);
    }
    let (min, max) = delays
      .iter()
      .fold((f64::MAX, f64::MIN), |(lo, hi), d| (lo.min(*d), hi.max(*d)));
    let mean = delays.iter().sum::<f64>() / delays.len() as f64;
    assert!(min >= 15.0 && max <= 25.0, "{min}..{max}");
    assert!(
      min < 15.1 && max > 24.9,
      "uniform over the whole range: {min}..{max}"
    );
    assert!((mean - 20.0).abs() < 0.1, "mean {mean}");
    // Uniform: about a tenth of the draws in each tenth of the range.
    let low = delays.iter().filter(|d| **d < 16.0).count();
    assert!((800..1200).contains(&low), "{low} of 10000 in 15-16 ms");
  }

  #[test]
  fn jitter_never_reorders_datagrams_to_one_host() {
    let mut s = everywhere(LinkConditions {
      delay: 10 * MS,
      jitter: 8 * MS,
      ..Default::default()
    });
    let t0 = Instant::now();
    let mut last = [t0, t0];
    for i in 0..5_000u32 {
      let now = t0 + Duration::from_micros(u64::from(i) * 50);
      let host = if i % 3 == 0 { B } else { A };
      let d = due(s.decide(host, 64, now));
      let k = usize::from(host == B);
      assert!(
        d >= last[k],
        "datagram {i} to {host} overtakes the one before"
      );
      // Its own draw, or held back behind the datagram before it.
      assert!((d >= now + 2 * MS && d <= now + 18 * MS) || d == last[k]);
      last[k] = d;
    }
  }

  #[test]
  fn loss_drops_the_given_share() {
    let mut s = everywhere(LinkConditions {
      loss_ppm: 100_000, // 10 %
      ..Default::default()
    });
    let now = Instant::now();
    let n = 100_000;
    let mut dropped = 0;
    for _ in 0..n {
      match s.decide(A, 64, now) {
        Verdict::Drop => dropped += 1,
        // Loss alone never holds a datagram back.
        Verdict::SendNow => {}
        v => panic!("{v:?}"),
      }
    }
    let share = f64::from(dropped) / f64::from(n);
    assert!((share - 0.10).abs() < 0.005, "{share}");
  }

  #[test]
  fn a_rate_spaces_datagrams_by_their_size_per_host() {
    let mut s = everywhere(LinkConditions {
      rate_bps: 1_000_000,
      delay: 5 * MS,
      ..Default::default()
    });
    let t0 = Instant::now();
    // 972 B + 28 B of headers = 8000 bits: 8 ms each at 1 Mbit/s.
    for i in 1..=10u32 {
      assert_eq!(due(s.decide(A, 972, t0)), t0 + i * 8 * MS + 5 * MS);
    }
    // Another host has a link of its own.
    assert_eq!(due(s.decide(B, 972, t0)), t0 + 13 * MS);
    // An idle link starts from now, not from when it was last busy.
    let later = t0 + 500 * MS;
    assert_eq!(due(s.decide(A, 972, later)), later + 13 * MS);
  }

  #[test]
  fn hosts_get_their_own_conditions_and_a_listed_host_with_none_is_spared() {
    let mut hosts = BTreeMap::new();
    hosts.insert(A, LinkConditions::default());
    hosts.insert(
      B,
      LinkConditions {
        delay: 3 * MS,
        ..Default::default()
      },
    );
    let config = LinkEmulation {
      default: Some(LinkConditions {
        delay: 20 * MS,
        ..Default::default()
      }),
      hosts,
      seed: Some(1),
    };
    assert!(config.is_active());
    let mut s = LinkScheduler::new(config);
    let now = Instant::now();
    assert_eq!(s.decide(A, 64, now), Verdict::SendNow);
    assert_eq!(due(s.decide(B, 64, now)), now + 3 * MS);
    let other = IpAddr::V4(Ipv4Addr::new(239, 255, 0, 1));
    assert_eq!(due(s.decide(other, 64, now)), now + 20 * MS);

    assert!(!LinkEmulation::default().is_active());
    assert!(LinkEmulator::start(&LinkEmulation::default()).is_none());
  }

  #[test]
  fn delayed_datagrams_arrive_late_and_in_order_through_the_thread() {
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
      .set_read_timeout(Some(Duration::from_secs(5)))
      .unwrap();
    let to = receiver.local_addr().unwrap();
    let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
    socket.set_nonblocking(true).unwrap();
    let link = LinkEmulator::start(&LinkEmulation {
      default: Some(LinkConditions {
        delay: 20 * MS,
        jitter: 5 * MS,
        ..Default::default()
      }),
      hosts: BTreeMap::new(),
      seed: Some(7),
    })
    .expect("active");
    let egress = EgressSocket::new(Arc::clone(&socket), Some(Arc::clone(&link)));

    let start = Instant::now();
    for i in 0..50u8 {
      assert_eq!(egress.send_to(&[i; 16], to).unwrap(), 16);
    }
    assert!(link.waiting() > 0, "nothing waited");
    // Dropping the last handle sends what waits before the thread ends.
    drop(egress);
    drop(link);
    let mut buf = [0u8; 64];
    for i in 0..50u8 {
      let n = receiver.recv(&mut buf).expect("every datagram arrives");
      assert_eq!(&buf[..n], &[i; 16], "out of order");
      if i == 0 {
        let waited = start.elapsed();
        assert!(waited >= 15 * MS, "the first came after {waited:?}");
      }
    }
    assert!(start.elapsed() < Duration::from_secs(1));

    // Without an emulation the socket sends at once.
    let plain = EgressSocket::new(socket, None);
    plain.send_to(&[9; 4], to).unwrap();
    let n = receiver.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], &[9; 4]);
  }
}
