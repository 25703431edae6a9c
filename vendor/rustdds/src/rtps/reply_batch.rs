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

use std::time::{Duration, Instant};

use enumflags2::BitFlags;
use log::error;
use speedy::Endianness;

use crate::{
  messages::{header::Header, submessages::submessages::*},
  network::udp_sender::UDPSender,
  rtps::Message,
  structure::{guid::GuidPrefix, locator::Locator},
};

/// A datagram stays below this many bytes of ACKNACKs; past it a second one
/// starts. An ACKNACK is 24 bytes plus its bitmap (up to 32), so this is about
/// twenty of them, well inside any path MTU.
const BATCH_BYTES: usize = 1200;


struct PendingReplies {
  destination: GuidPrefix,
  locators: Vec<Locator>,
  acknacks: Vec<(AckNack, BitFlags<ACKNACK_Flags>)>,
  bytes: usize,
}

/// The ACKNACKs a participant's readers produced in this pass, not sent yet.
pub(crate) struct ReplyBatch {
  hold: Duration,
  pending: Vec<PendingReplies>,
  /// When the oldest queued ACKNACK was queued.
  since: Option<Instant>,
  /// Something queued reports a loss or asks for a HEARTBEAT: send at the end of
  /// this pass, not after the hold.
  urgent: bool,
}

impl ReplyBatch {
  pub(crate) fn new(hold: Duration) -> ReplyBatch {
    ReplyBatch {
      hold,
      pending: Vec::new(),
      since: None,
      urgent: false,
    }
  }

  /// Queues `acknack` for `destination` at `locators`.
  pub(crate) fn push(
    &mut self,
    destination: GuidPrefix,
    locators: &[Locator],
    acknack: AckNack,
    flags: BitFlags<ACKNACK_Flags>,
  ) {
    // A NACK (something missing) or an ACKNACK that asks for a HEARTBEAT (no
    // final flag) starts a repair: it waits for nothing but the end of the pass.
    self.urgent |= !acknack.reader_sn_state.is_empty() || !flags.contains(ACKNACK_Flags::Final);
    self.since.get_or_insert_with(Instant::now);
    let size = 4 + acknack.len_serialized();
    let same_route = |p: &PendingReplies| p.destination == destination && p.locators == locators;
    for pending in self.pending.iter_mut().filter(|p| same_route(p)) {
      if let Some(older) = pending.acknacks.iter_mut().find(|(a, f)| {
        a.reader_id == acknack.reader_id && a.writer_id == acknack.writer_id && *f == flags
      }) {
        pending.bytes = pending.bytes + size - (4 + older.0.len_serialized());
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
        pending.acknacks.push((acknack, flags));
      }
      None => self.pending.push(PendingReplies {
        destination,
        locators: locators.to_vec(),
        acknacks: vec![(acknack, flags)],
        bytes: size,
      }),
    }
  }

  /// How long the event loop may wait before it must flush: zero when a flush
  /// is due, None with nothing queued.
  pub(crate) fn due_in(&self, now: Instant) -> Option<Duration> {
    let since = self.since?;
    if self.urgent {
      return Some(Duration::ZERO);
    }
    Some((since + self.hold).saturating_duration_since(now))
  }

  /// Sends what is queued: one datagram per destination and locator list.
  pub(crate) fn flush(&mut self, sender: &UDPSender, own_prefix: GuidPrefix) {
    self.since = None;
    self.urgent = false;
    for pending in self.pending.drain(..) {
      let mut message = Message::new(Header::new(own_prefix));
      message.add_submessage(
        InfoDestination {
          guid_prefix: pending.destination,
        }
        .create_submessage(BitFlags::from_flag(INFODESTINATION_Flags::Endianness)),
      );
      for (acknack, flags) in pending.acknacks {
        message.add_submessage(acknack.create_submessage(flags));
      }
      match message.write_to_vec_fast(Endianness::LittleEndian) {
        Ok(bytes) => sender.send_to_locator_list(&bytes, &pending.locators),
        Err(e) => error!("Failed to serialize a batch of ACKNACKs: {e:?}"),
      }
    }
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
    vec![Locator::from(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port))]
  }

  const FINAL: BitFlags<ACKNACK_Flags> =
    enumflags2::make_bitflags!(ACKNACK_Flags::{Endianness | Final});

  #[test]
  fn one_datagram_per_destination_and_the_newest_acknack_per_pair() {
    let mut batch = ReplyBatch::new(Duration::ZERO);
    let (a, b) = (GuidPrefix::new(&[1; 12]), GuidPrefix::new(&[2; 12]));
    let (r1, r2) = (
      EntityId::SEDP_BUILTIN_PUBLICATIONS_READER,
      EntityId::SPDP_BUILTIN_PARTICIPANT_READER,
    );
    let w = EntityId::SEDP_BUILTIN_PUBLICATIONS_WRITER;
    batch.push(a, &at(7000), ack(r1, w, 5, 1), FINAL);
    batch.push(a, &at(7000), ack(r2, w, 3, 1), FINAL);
    batch.push(b, &at(7001), ack(r1, w, 9, 1), FINAL);
    // A newer answer of r1 to the same writer at `a` replaces the older one.
    batch.push(a, &at(7000), ack(r1, w, 6, 2), FINAL);
    assert_eq!(batch.pending.len(), 2);
    let to_a = &batch.pending[0];
    assert_eq!(to_a.acknacks.len(), 2);
    assert_eq!(to_a.acknacks[0].0.reader_sn_state.base(), SequenceNumber::new(6));
    // Plain acknowledgements: due at the end of the pass (a zero hold).
    assert_eq!(batch.due_in(Instant::now()), Some(Duration::ZERO));
  }

  #[test]
  fn a_plain_acknowledgement_waits_out_the_hold_and_a_nack_does_not() {
    let w = EntityId::SEDP_BUILTIN_PUBLICATIONS_WRITER;
    let r = EntityId::SEDP_BUILTIN_PUBLICATIONS_READER;
    let dest = GuidPrefix::new(&[1; 12]);
    let mut batch = ReplyBatch::new(Duration::from_millis(50));
    assert_eq!(batch.due_in(Instant::now()), None);
    batch.push(dest, &at(7000), ack(r, w, 5, 1), FINAL);
    let wait = batch.due_in(Instant::now()).expect("queued");
    assert!(wait > Duration::from_millis(40), "{wait:?}");
    let mut missing = ack(r, w, 5, 2);
    missing.reader_sn_state =
      SequenceNumberSet::from_base_and_set(SequenceNumber::new(5), &[SequenceNumber::new(5)].into());
    batch.push(dest, &at(7001), missing, FINAL);
    assert_eq!(batch.due_in(Instant::now()), Some(Duration::ZERO));
  }

  #[test]
  fn a_full_datagram_starts_another() {
    let mut batch = ReplyBatch::new(Duration::ZERO);
    let dest = GuidPrefix::new(&[1; 12]);
    for key in 0..100u8 {
      let reader = EntityId::new([key, 0, 0], EntityKind::READER_WITH_KEY_USER_DEFINED);
      batch.push(dest, &at(7000), ack(reader, EntityId::SEDP_BUILTIN_PUBLICATIONS_WRITER, 1, 1), FINAL);
    }
    assert!(batch.pending.len() > 1);
    assert!(batch.pending.iter().all(|p| p.bytes <= BATCH_BYTES));
    assert_eq!(batch.pending.iter().map(|p| p.acknacks.len()).sum::<usize>(), 100);
  }
}
