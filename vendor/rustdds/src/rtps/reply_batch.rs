//! convoy change 41: a reader's ACKNACKs leave in batches, one datagram per
//! destination per event-loop pass.
//!
//! A reader answered every HEARTBEAT that asked with a datagram of its own, at
//! once, in the middle of the receive loop. A lockstep coordinator reading a
//! state and a FrameDone from each of sixteen agents (two writers per agent,
//! each sample carrying a HEARTBEAT that asks) sent 32 ACKNACK datagrams a
//! frame, two to each agent, one `sendto` each. The RTPS specification lets a
//! reader delay its answer ("the response may be delayed to avoid message
//! storms", 8.4.2.3.1). Here an ACKNACK waits for the end of the event loop's
//! pass over what arrived; a plain acknowledgement (nothing missing, no
//! HEARTBEAT asked for) may wait longer, up to the participant's hold
//! (`TransportTuning::ack_hold`, zero by default), for others. Every ACKNACK
//! queued meanwhile to one participant at one locator travels in one RTPS
//! message (INFO_DST, then the ACKNACKs), and a newer ACKNACK of the same reader
//! to the same writer replaces an older one (it reports at least as much).
//!
//! convoy change 52: queued ACKNACKs ride with DATA. A writer pushing a sample
//! from the application's thread (change 35) to a participant that has
//! ACKNACKs queued for it appends them (INFO_DST, then the ACKNACKs) to the
//! sample's datagram, and they leave the batch. In a lockstep an agent answers
//! the clock writer's HEARTBEAT in the same pass in which it steps and writes
//! its state to that same participant: the answer needed a datagram of its own.
//! The batch is shared between the event loop (its readers queue, it flushes)
//! and the writers' pushing threads.
//!
//! convoy change 74: ACKNACKs ride to a multicast group. Where the writer's
//! participant listens on a multicast group this participant pushes samples
//! to (each lockstep agent pushes its state to the group every frame), a plain
//! acknowledgement waits for the next of those pushes, up to twice the gap
//! between the last two (`GROUP_RIDE_HOLD_MAX` at most), and rides in it with
//! every other one waiting for that group: each behind an INFO_DST naming its
//! writer's participant, which the other members skip. A 64-agent lockstep
//! agent answered 63 state writers, each every eighth frame, with a datagram
//! of its own. When one runs out its hold, it leaves with every other one
//! waiting for the group in one datagram to the group; alone, by unicast.

use std::{
  collections::HashMap,
  net::SocketAddr,
  sync::{Arc, Mutex, MutexGuard},
  time::{Duration, Instant},
};

use enumflags2::BitFlags;
use log::error;
use speedy::Endianness;

use crate::{
  messages::{header::Header, submessages::submessages::*},
  network::udp_sender::UDPSender,
  rtps::{
    constant::{GROUP_RIDE_HOLD_MAX, MULTICAST_DATAGRAM_MAX},
    message::RTPS_MESSAGE_HEADER_SIZE,
    Message,
  },
  structure::{guid::GuidPrefix, locator::Locator},
};

/// The participant's batch, shared by its event loop and its writers (change
/// 52).
pub(crate) type SharedReplyBatch = Arc<Mutex<ReplyBatch>>;

/// Locks a shared batch. A poisoned lock means a thread panicked while queuing
/// or sending; what is queued stays valid (plain values).
pub(crate) fn lock_batch(batch: &SharedReplyBatch) -> MutexGuard<'_, ReplyBatch> {
  batch
    .lock()
    .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Destinations remembered before old ones are forgotten (change 52).
const MAX_RIDES: usize = 1024;

/// INFO_DST: submessage header (4) and a GUID prefix (12).
const INFO_DST_BYTES: usize = 16;

/// A datagram stays below this many bytes of ACKNACKs; past it a second one
/// starts. An ACKNACK is 24 bytes plus its bitmap (up to 32), so this is about
/// twenty of them, well inside any path MTU.
const BATCH_BYTES: usize = 1200;

#[derive(Debug)]
struct PendingReplies {
  destination: GuidPrefix,
  locators: Vec<Locator>,
  acknacks: Vec<(AckNack, BitFlags<ACKNACK_Flags>)>,
  bytes: usize,
  /// When these must leave if nothing took them along before.
  due: Instant,
  /// change 74: they wait for a sample pushed to this multicast group, where
  /// the destination listens too.
  group: Option<SocketAddr>,
}

/// change 74: when this participant last pushed a sample to a multicast group,
/// and the recent gap between its pushes there: the last one, or more when the
/// ones before were longer (each counts three quarters of the one before it).
/// A lockstep's frames vary (p99 twice p50 at 64 agents on 2 cores): a hold
/// from the last gap alone ran out before the next push, and the answer went
/// by unicast after all.
#[derive(Debug, Clone, Copy)]
struct GroupPushes {
  last: Instant,
  gap: Option<Duration>,
}

/// The ACKNACKs a participant's readers produced in this pass, not sent yet.
#[derive(Debug)]
pub(crate) struct ReplyBatch {
  hold: Duration,
  /// change 52: how long a plain acknowledgement may wait for a sample this
  /// participant pushes to the same destination (when it pushed one there
  /// within this long); zero: it does not wait for one.
  ride_hold: Duration,
  pending: Vec<PendingReplies>,
  /// change 52: when this participant last pushed a sample to each
  /// destination.
  rides: HashMap<SocketAddr, Instant>,
  /// change 74: the multicast groups this participant pushes samples to.
  group_pushes: HashMap<SocketAddr, GroupPushes>,
}

impl ReplyBatch {
  pub(crate) fn new(hold: Duration, ride_hold: Duration) -> ReplyBatch {
    ReplyBatch {
      hold,
      ride_hold,
      pending: Vec::new(),
      rides: HashMap::new(),
      group_pushes: HashMap::new(),
    }
  }

  /// Queues `acknack` for `destination` at `locators`; `groups`: the
  /// multicast locators where the destination listens as well (change 74).
  pub(crate) fn push(
    &mut self,
    destination: GuidPrefix,
    locators: &[Locator],
    groups: &[Locator],
    acknack: AckNack,
    flags: BitFlags<ACKNACK_Flags>,
  ) {
    let now = Instant::now();
    // A NACK (something missing) or an ACKNACK that asks for a HEARTBEAT (no
    // final flag) starts a repair: it waits for nothing but the end of the pass.
    // A plain acknowledgement waits out the hold, or the ride hold when samples
    // go to its destination (change 52): the next one takes it along; or the
    // group's hold when samples go to a group the destination listens on
    // (change 74).
    let urgent = !acknack.reader_sn_state.is_empty() || !flags.contains(ACKNACK_Flags::Final);
    let mut riding_group = None;
    let due = if urgent {
      now
    } else if self.rides_to(locators, now) {
      now + self.ride_hold.max(self.hold)
    } else if let Some((group, hold)) = self.group_ride(groups, now) {
      riding_group = Some(group);
      now + hold.max(self.hold)
    } else {
      now + self.hold
    };
    let size = 4 + acknack.len_serialized();
    let same_route = |p: &PendingReplies| p.destination == destination && p.locators == locators;
    for pending in self.pending.iter_mut().filter(|p| same_route(p)) {
      if let Some(older) = pending.acknacks.iter_mut().find(|(a, f)| {
        a.reader_id == acknack.reader_id && a.writer_id == acknack.writer_id && *f == flags
      }) {
        pending.bytes = pending.bytes + size - (4 + older.0.len_serialized());
        // change 52: the writer asked again while our answer waited for a
        // ride: it is waiting for it (a full window); it leaves now. change
        // 73: not one waiting for a group's next sample, which comes within
        // two gaps: a writer to a group asks on every sample past half its
        // window, and ours crossed its next one.
        pending.due = if riding_group.is_some() && pending.group == riding_group {
          pending.due.min(due)
        } else {
          now
        };
        *older = (acknack, flags);
        return;
      }
    }
    match self
      .pending
      .iter_mut()
      .find(|p| same_route(p) && p.bytes + size <= BATCH_BYTES)
    {
      Some(pending) => {
        pending.bytes += size;
        pending.due = pending.due.min(due);
        if riding_group.is_some() {
          pending.group = riding_group;
        }
        pending.acknacks.push((acknack, flags));
      }
      None => self.pending.push(PendingReplies {
        destination,
        locators: locators.to_vec(),
        acknacks: vec![(acknack, flags)],
        bytes: size,
        due,
        group: riding_group,
      }),
    }
  }

  /// change 74: the first of `groups` this participant pushes samples to
  /// regularly, and how long a plain acknowledgement may wait for its next one.
  fn group_ride(&self, groups: &[Locator], now: Instant) -> Option<(SocketAddr, Duration)> {
    if self.ride_hold.is_zero() {
      return None;
    }
    groups
      .iter()
      .filter(|l| l.is_udp())
      .map(|l| SocketAddr::from(*l))
      .filter(|group| group.ip().is_multicast())
      .find_map(|group| {
        let pushes = self.group_pushes.get(&group)?;
        let hold = (pushes.gap? * 2)
          .min(GROUP_RIDE_HOLD_MAX)
          .max(self.ride_hold);
        // Still pushing: the last push came within the hold.
        (now.saturating_duration_since(pushes.last) <= hold).then_some((group, hold))
      })
  }

  /// change 52: this participant pushed a sample to the one unicast locator in
  /// `locators` within the ride hold.
  fn rides_to(&self, locators: &[Locator], now: Instant) -> bool {
    if self.ride_hold.is_zero() {
      return false;
    }
    let [locator] = locators else {
      return false;
    };
    if !locator.is_udp() {
      return false;
    }
    self
      .rides
      .get(&SocketAddr::from(*locator))
      .is_some_and(|at| now.saturating_duration_since(*at) <= self.ride_hold)
  }

  /// How long the event loop may wait before it must flush: zero when a flush
  /// is due, None with nothing queued.
  pub(crate) fn due_in(&self, now: Instant) -> Option<Duration> {
    self
      .pending
      .iter()
      .map(|p| p.due.saturating_duration_since(now))
      .min()
  }

  /// Sends what is due by `now`: one datagram per destination and locator
  /// list; what may still wait for a sample to ride with stays.
  pub(crate) fn flush(&mut self, sender: &UDPSender, own_prefix: GuidPrefix, now: Instant) {
    self.flush_to_groups(sender, own_prefix, now);
    let mut index = 0;
    while index < self.pending.len() {
      if self.pending[index].due > now {
        index += 1;
        continue;
      }
      let mut pending = self.pending.swap_remove(index);
      let locators = std::mem::take(&mut pending.locators);
      match pending.message(own_prefix) {
        Ok(bytes) => sender.send_to_locator_list(&bytes, &locators),
        Err(e) => error!("Failed to serialize a batch of ACKNACKs: {e:?}"),
      }
    }
  }

  /// change 74: when something waiting for a group is due, everything waiting
  /// for that group leaves with it, in datagrams to the group; alone, it goes
  /// by unicast (the plain flush).
  fn flush_to_groups(&mut self, sender: &UDPSender, own_prefix: GuidPrefix, now: Instant) {
    let mut groups: Vec<SocketAddr> = self
      .pending
      .iter()
      .filter(|p| p.due <= now)
      .filter_map(|p| p.group)
      .collect();
    groups.sort_unstable();
    groups.dedup();
    for group in groups {
      if self
        .pending
        .iter()
        .filter(|p| p.group == Some(group))
        .count()
        < 2
      {
        continue;
      }
      loop {
        let room = MULTICAST_DATAGRAM_MAX - RTPS_MESSAGE_HEADER_SIZE;
        let Some(submessages) = self.take_for_group(group, room, |_| true) else {
          break;
        };
        let mut message =
          match Message::new(Header::new(own_prefix)).write_to_vec_fast(Endianness::LittleEndian) {
            Ok(header) => header,
            Err(e) => {
              error!("Failed to serialize an RTPS header: {e:?}");
              break;
            }
          };
        message.extend_from_slice(&submessages);
        sender.send_to_locator(&message, &Locator::from(group));
      }
    }
  }

  /// change 74: takes out the ACKNACKs waiting for `group` that `which`
  /// accepts, as submessages (an INFO_DST before each destination's) within
  /// `room` bytes; None if none fit.
  fn take_for_group(
    &mut self,
    group: SocketAddr,
    room: usize,
    which: impl Fn(&PendingReplies) -> bool,
  ) -> Option<Vec<u8>> {
    let mut submessages = Vec::new();
    let mut index = 0;
    while index < self.pending.len() {
      let pending = &self.pending[index];
      if pending.group != Some(group)
        || !which(pending)
        || submessages.len() + INFO_DST_BYTES + pending.bytes > room
      {
        index += 1;
        continue;
      }
      let pending = self.pending.swap_remove(index);
      match pending.message(GuidPrefix::UNKNOWN) {
        Ok(bytes) => submessages.extend_from_slice(&bytes[RTPS_MESSAGE_HEADER_SIZE..]),
        Err(e) => error!("Failed to serialize ACKNACKs: {e:?}"),
      }
    }
    (!submessages.is_empty()).then_some(submessages)
  }

  /// change 52: a sample is being pushed to `dest`: takes out the ACKNACKs
  /// queued for whoever listens there alone (one unicast locator), serialized
  /// as submessages (INFO_DST first) to append to its datagram, if they fit in
  /// `room` bytes. change 74: `dest` a multicast group: every ACKNACK waiting
  /// for it that fits.
  pub(crate) fn take_riding(&mut self, dest: SocketAddr, room: usize) -> Option<Vec<u8>> {
    if dest.ip().is_multicast() {
      if self.ride_hold.is_zero() {
        return None;
      }
      let now = Instant::now();
      let gap = self.group_pushes.get(&dest).map(|p| {
        let gap = now.saturating_duration_since(p.last);
        p.gap.map_or(gap, |before| gap.max(before * 3 / 4))
      });
      self
        .group_pushes
        .insert(dest, GroupPushes { last: now, gap });
      return self.take_for_group(dest, room, |_| true);
    }
    if !self.ride_hold.is_zero() {
      let now = Instant::now();
      if self.rides.len() > MAX_RIDES {
        let ride_hold = self.ride_hold;
        self
          .rides
          .retain(|_, at| now.saturating_duration_since(*at) <= ride_hold);
      }
      self.rides.insert(dest, now);
    }
    if self.pending.is_empty() {
      return None;
    }
    let locator = Locator::from(dest);
    let index = self.pending.iter().position(|p| {
      p.locators.len() == 1 && p.locators[0] == locator && INFO_DST_BYTES + p.bytes <= room
    })?;
    let pending = self.pending.swap_remove(index);
    match pending.message(GuidPrefix::UNKNOWN) {
      Ok(mut bytes) => {
        bytes.drain(..RTPS_MESSAGE_HEADER_SIZE);
        Some(bytes)
      }
      Err(e) => {
        error!("Failed to serialize ACKNACKs: {e:?}");
        None
      }
    }
  }
}

impl PendingReplies {
  /// An RTPS message from `own_prefix`: INFO_DST, then the ACKNACKs.
  fn message(self, own_prefix: GuidPrefix) -> Result<Vec<u8>, speedy::Error> {
    let mut message = Message::new(Header::new(own_prefix));
    message.add_submessage(
      InfoDestination {
        guid_prefix: self.destination,
      }
      .create_submessage(BitFlags::from_flag(INFODESTINATION_Flags::Endianness)),
    );
    for (acknack, flags) in self.acknacks {
      message.add_submessage(acknack.create_submessage(flags));
    }
    message.write_to_vec_fast(Endianness::LittleEndian)
  }
}

#[cfg(test)]
mod tests {
  use std::net::{Ipv4Addr, SocketAddr};

  use super::*;
  use crate::structure::{
    guid::{EntityId, EntityKind},
    sequence_number::{SequenceNumber, SequenceNumberSet},
  };

  fn ack(reader_id: EntityId, writer_id: EntityId, base: i64, count: i32) -> AckNack {
    AckNack {
      reader_id,
      writer_id,
      reader_sn_state: SequenceNumberSet::new_empty(SequenceNumber::new(base)),
      count,
    }
  }

  fn at(port: u16) -> Vec<Locator> {
    vec![Locator::from(SocketAddr::new(
      Ipv4Addr::LOCALHOST.into(),
      port,
    ))]
  }

  const FINAL: BitFlags<ACKNACK_Flags> =
    enumflags2::make_bitflags!(ACKNACK_Flags::{Endianness | Final});

  #[test]
  fn one_datagram_per_destination_and_the_newest_acknack_per_pair() {
    let mut batch = ReplyBatch::new(Duration::ZERO, Duration::ZERO);
    let (a, b) = (GuidPrefix::new(&[1; 12]), GuidPrefix::new(&[2; 12]));
    let (r1, r2) = (
      EntityId::SEDP_BUILTIN_PUBLICATIONS_READER,
      EntityId::SPDP_BUILTIN_PARTICIPANT_READER,
    );
    let w = EntityId::SEDP_BUILTIN_PUBLICATIONS_WRITER;
    batch.push(a, &at(7000), &[], ack(r1, w, 5, 1), FINAL);
    batch.push(a, &at(7000), &[], ack(r2, w, 3, 1), FINAL);
    batch.push(b, &at(7001), &[], ack(r1, w, 9, 1), FINAL);
    // A newer answer of r1 to the same writer at `a` replaces the older one.
    batch.push(a, &at(7000), &[], ack(r1, w, 6, 2), FINAL);
    assert_eq!(batch.pending.len(), 2);
    let to_a = &batch.pending[0];
    assert_eq!(to_a.acknacks.len(), 2);
    assert_eq!(
      to_a.acknacks[0].0.reader_sn_state.base(),
      SequenceNumber::new(6)
    );
    // Plain acknowledgements: due at the end of the pass (a zero hold).
    assert_eq!(batch.due_in(Instant::now()), Some(Duration::ZERO));
  }

  #[test]
  fn a_plain_acknowledgement_waits_out_the_hold_and_a_nack_does_not() {
    let w = EntityId::SEDP_BUILTIN_PUBLICATIONS_WRITER;
    let r = EntityId::SEDP_BUILTIN_PUBLICATIONS_READER;
    let dest = GuidPrefix::new(&[1; 12]);
    let mut batch = ReplyBatch::new(Duration::from_millis(50), Duration::ZERO);
    assert_eq!(batch.due_in(Instant::now()), None);
    batch.push(dest, &at(7000), &[], ack(r, w, 5, 1), FINAL);
    let wait = batch.due_in(Instant::now()).expect("queued");
    assert!(wait > Duration::from_millis(40), "{wait:?}");
    let mut missing = ack(r, w, 5, 2);
    missing.reader_sn_state = SequenceNumberSet::from_base_and_set(
      SequenceNumber::new(5),
      &[SequenceNumber::new(5)].into(),
    );
    batch.push(dest, &at(7001), &[], missing, FINAL);
    assert_eq!(batch.due_in(Instant::now()), Some(Duration::ZERO));
  }

  #[test]
  fn a_full_datagram_starts_another() {
    let mut batch = ReplyBatch::new(Duration::ZERO, Duration::ZERO);
    let dest = GuidPrefix::new(&[1; 12]);
    for key in 0..100u8 {
      let reader = EntityId::new([key, 0, 0], EntityKind::READER_WITH_KEY_USER_DEFINED);
      batch.push(
        dest,
        &at(7000),
        &[],
        ack(reader, EntityId::SEDP_BUILTIN_PUBLICATIONS_WRITER, 1, 1),
        FINAL,
      );
    }
    assert!(batch.pending.len() > 1);
    assert!(batch.pending.iter().all(|p| p.bytes <= BATCH_BYTES));
    assert_eq!(
      batch
        .pending
        .iter()
        .map(|p| p.acknacks.len())
        .sum::<usize>(),
      100
    );
  }

  fn submessage_kinds(datagram: &[u8]) -> Vec<&'static str> {
    let message = Message::read_from_buffer(&bytes::Bytes::copy_from_slice(datagram)).unwrap();
    message
      .submessages()
      .iter()
      .map(|sub| match &sub.body {
        crate::rtps::SubmessageBody::Interpreter(_) => "INFO",
        crate::rtps::SubmessageBody::Reader(_) => "ACKNACK",
        crate::rtps::SubmessageBody::Writer(_) => "WRITER",
        #[allow(unreachable_patterns)]
        _ => "OTHER",
      })
      .collect()
  }

  #[test]
  fn acknacks_for_a_destination_ride_with_a_sample_pushed_there() {
    let w = EntityId::SEDP_BUILTIN_PUBLICATIONS_WRITER;
    let r = EntityId::SEDP_BUILTIN_PUBLICATIONS_READER;
    let dest = GuidPrefix::new(&[1; 12]);
    let here: SocketAddr = "127.0.0.1:7000".parse().unwrap();
    let mut batch = ReplyBatch::new(Duration::ZERO, Duration::ZERO);
    batch.push(dest, &at(7000), &[], ack(r, w, 5, 1), FINAL);
    batch.push(dest, &at(7001), &[], ack(r, w, 6, 1), FINAL);
    // Not where the sample goes, or no room: they stay.
    assert!(batch
      .take_riding("127.0.0.1:7002".parse().unwrap(), 1000)
      .is_none());
    assert!(batch.take_riding(here, 20).is_none());
    let riding = batch
      .take_riding(here, 1000)
      .expect("the ACKNACK for 7000 rides");
    assert_eq!(batch.pending.len(), 1, "the one for 7001 stays");
    // Appended to a message, it reads as INFO_DST then the ACKNACK, for `dest`.
    let mut datagram = Message::new(Header::new(GuidPrefix::new(&[2; 12])))
      .write_to_vec_fast(Endianness::LittleEndian)
      .unwrap();
    datagram.extend_from_slice(&riding);
    assert_eq!(submessage_kinds(&datagram), ["INFO", "ACKNACK"]);
  }

  #[test]
  fn a_plain_acknowledgement_waits_for_a_ride_only_where_samples_go() {
    let w = EntityId::SEDP_BUILTIN_PUBLICATIONS_WRITER;
    let r = EntityId::SEDP_BUILTIN_PUBLICATIONS_READER;
    let dest = GuidPrefix::new(&[1; 12]);
    // A long hold: the checks below see it still held however slowly a loaded machine runs
    // them (a 20 ms hold failed once under a parallel build).
    let mut batch = ReplyBatch::new(Duration::ZERO, Duration::from_secs(10));
    // Nothing was pushed to 7000: due at the end of the pass.
    batch.push(dest, &at(7000), &[], ack(r, w, 5, 1), FINAL);
    assert_eq!(batch.due_in(Instant::now()), Some(Duration::ZERO));
    let sender = UDPSender::new(0).unwrap();
    batch.flush(&sender, GuidPrefix::new(&[2; 12]), Instant::now());
    assert_eq!(batch.due_in(Instant::now()), None);
    // A sample went to 7000: the next plain acknowledgement waits for another.
    assert!(batch
      .take_riding("127.0.0.1:7000".parse().unwrap(), 1000)
      .is_none());
    batch.push(dest, &at(7000), &[], ack(r, w, 6, 2), FINAL);
    let wait = batch.due_in(Instant::now()).expect("queued");
    assert!(wait > Duration::from_secs(5), "{wait:?}");
    // A flush now leaves it queued; a NACK to another locator goes at once.
    batch.flush(&sender, GuidPrefix::new(&[2; 12]), Instant::now());
    assert_eq!(batch.pending.len(), 1);
    let mut missing = ack(r, w, 5, 3);
    missing.reader_sn_state = SequenceNumberSet::from_base_and_set(
      SequenceNumber::new(5),
      &[SequenceNumber::new(5)].into(),
    );
    batch.push(dest, &at(7001), &[], missing, FINAL);
    assert_eq!(
      batch.due_in(Instant::now()),
      Some(Duration::ZERO),
      "a NACK does not wait"
    );
    batch.flush(&sender, GuidPrefix::new(&[2; 12]), Instant::now());
    assert!(batch.due_in(Instant::now()).expect("still held") > Duration::from_secs(5));
    // The writer asks again while the answer waits: it leaves at once.
    batch.push(dest, &at(7000), &[], ack(r, w, 7, 4), FINAL);
    assert_eq!(batch.due_in(Instant::now()), Some(Duration::ZERO));
  }

  #[test]
  fn acknacks_for_a_group_ride_together_with_a_sample_pushed_there() {
    let w = EntityId::new([0, 0, 9], EntityKind::WRITER_WITH_KEY_USER_DEFINED);
    let r = EntityId::new([0, 0, 2], EntityKind::READER_WITH_KEY_USER_DEFINED);
    let (a, b, c) = (
      GuidPrefix::new(&[1; 12]),
      GuidPrefix::new(&[2; 12]),
      GuidPrefix::new(&[3; 12]),
    );
    let group: SocketAddr = "239.255.0.1:7401".parse().unwrap();
    let in_group = &[Locator::from(group)];
    // A destination listening on two groups, one this participant pushes to.
    let discovery_group: SocketAddr = "239.255.0.1:7400".parse().unwrap();
    let in_both = &[Locator::from(discovery_group), Locator::from(group)];
    // A long ride hold, so that a loaded machine still sees them held.
    let mut batch = ReplyBatch::new(Duration::ZERO, Duration::from_secs(10));
    // Nothing was pushed to the group yet: nothing waits for it.
    batch.push(a, &at(7000), in_group, ack(r, w, 5, 1), FINAL);
    assert_eq!(batch.due_in(Instant::now()), Some(Duration::ZERO));
    assert!(
      batch.take_riding(group, 1000).is_none(),
      "not waiting for it"
    );
    assert!(batch.take_riding(group, 1000).is_none());
    let sender = UDPSender::new(0).unwrap();
    batch.flush(&sender, c, Instant::now());
    assert_eq!(batch.due_in(Instant::now()), None);
    // Two pushes to the group: plain acknowledgements to its members wait.
    batch.push(a, &at(7000), in_group, ack(r, w, 6, 2), FINAL);
    batch.push(b, &at(7001), in_both, ack(r, w, 7, 1), FINAL);
    assert!(batch.due_in(Instant::now()).expect("queued") > Duration::from_secs(5));
    // The writer asks again: the answer still waits for the group's sample.
    batch.push(a, &at(7000), in_group, ack(r, w, 7, 3), FINAL);
    assert!(batch.due_in(Instant::now()).expect("queued") > Duration::from_secs(5));
    // One to a participant outside the group does not wait.
    batch.push(c, &at(7002), &[], ack(r, w, 1, 1), FINAL);
    assert_eq!(batch.due_in(Instant::now()), Some(Duration::ZERO));
    batch.flush(&sender, a, Instant::now());
    // The next sample to the group takes both along, each after its INFO_DST.
    let riding = batch.take_riding(group, 1000).expect("they ride");
    assert!(batch.pending.is_empty());
    let mut datagram = Message::new(Header::new(c))
      .write_to_vec_fast(Endianness::LittleEndian)
      .unwrap();
    datagram.extend_from_slice(&riding);
    assert_eq!(
      submessage_kinds(&datagram),
      ["INFO", "ACKNACK", "INFO", "ACKNACK"]
    );
    // Only what fits rides; the rest waits for the next one.
    batch.push(a, &at(7000), in_group, ack(r, w, 8, 4), FINAL);
    batch.push(b, &at(7001), in_group, ack(r, w, 8, 2), FINAL);
    let one = INFO_DST_BYTES + batch.pending[0].bytes;
    let riding = batch.take_riding(group, one).expect("one rides");
    assert_eq!(riding.len(), one);
    assert_eq!(batch.pending.len(), 1);
    // Past the hold, what still waits leaves: several in one datagram to the
    // group, one by unicast. Either way the batch is empty.
    batch.push(a, &at(7000), in_group, ack(r, w, 9, 5), FINAL);
    batch.flush(&sender, c, Instant::now() + Duration::from_secs(11));
    assert!(batch.pending.is_empty());
  }
}
