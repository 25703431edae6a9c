//! convoy change 35: a writer pushes a small sample from the application's own
//! thread.
//!
//! rustdds hands every sample to the participant's event loop: `write` stores
//! it in the send buffer and rings a doorbell, the event loop wakes, builds the
//! DATA (+ HEARTBEAT) datagram and sends it. On a loaded 2-core machine that
//! wake-up is a third of a 64 B round trip, and in a lockstep frame every agent
//! pays it for its state. Here the writing thread sends the datagram itself
//! when nothing stands in the way: the sample fits one datagram for every
//! matched reader, none of them needs pacing, each has one known unicast route,
//! none lives in this participant, nothing is queued or half-sent before it,
//! and the in-flight window has room. The event loop decides that, keeps it in
//! [`FastRoute`] (rebuilt after each of its actions on the writer) and holds
//! the lock while it pushes, so the two never push the same sample or out of
//! order; a writer that finds the lock taken or the route withdrawn rings the
//! doorbell as before. Repairs, GAPs, fragments and discovery stay in the event
//! loop.
//!
//! convoy change 52: ACKNACKs the participant's readers queued for a
//! destination ride in the datagram pushed there (`rtps::reply_batch`);
//! change 74: those for the members of a multicast group, in a sample pushed
//! to the group.

use std::{
  io,
  net::SocketAddr,
  sync::{
    atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering},
    Arc, Mutex, MutexGuard, TryLockError,
  },
  time::Instant,
};

#[allow(unused_imports)]
use log::{debug, trace};
use speedy::Endianness;

use crate::{
  network::link_emulation::EgressSocket,
  rtps::{
    constant::MULTICAST_DATAGRAM_MAX,
    message::RTPS_MESSAGE_HEADER_SIZE,
    reply_batch::{lock_batch, SharedReplyBatch},
    writer::asks_for_answer,
    writer_send_buffer::WriterSendBuffer,
    MessageBuilder,
  },
  structure::{
    guid::{EntityId, GUID},
    sequence_number::SequenceNumber,
  },
};

/// What the application thread may do without the event loop; set by the
/// event loop only.
#[derive(Clone, Debug)]
pub(crate) struct FastRoute {
  /// A handle on the participant's unicast send socket (through its link
  /// emulation, change 39, if it has one).
  pub socket: EgressSocket,
  /// One datagram goes to each (the matched readers' routes, deduplicated);
  /// shared with the Writer, which rebuilds the route after every action.
  pub destinations: Arc<[SocketAddr]>,
  /// Largest serialized payload that goes this way (one datagram, unpaced).
  pub max_payload: usize,
  /// Largest datagram (submessages, after the RTPS header) to any destination:
  /// ACKNACKs ride along only within it (change 52).
  pub datagram_budget: usize,
  pub writer_guid: GUID,
  /// Reliable writers: when the piggybacked HEARTBEAT asks for an answer.
  pub reliable: Option<ReliablePush>,
  /// The participant's queued ACKNACKs (change 52).
  pub replies: Option<SharedReplyBatch>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct ReliablePush {
  /// History depth (KEEP_LAST) or 16: half of it unacknowledged asks readers
  /// to answer (the rule of change 17).
  pub window: i64,
  /// The samples go to a multicast group (change 70: see
  /// [`asks_for_answer`](crate::rtps::writer::asks_for_answer)).
  pub to_group: bool,
  /// At most this many samples pushed and not acknowledged (change 14's byte
  /// window divided by `max_payload`); past it the event loop decides.
  pub max_unacked: i64,
}

/// The state both threads share, under one lock.
#[derive(Debug)]
pub(crate) struct FastPushState {
  pub route: Option<FastRoute>,
  /// The newest sample pushed in full, by either thread.
  pub last_sent: SequenceNumber,
  /// When the application thread last pushed one (the event loop's tail
  /// HEARTBEAT, change 32, counts silence from it).
  pub last_push_at: Option<Instant>,
  /// The event loop has a tail HEARTBEAT armed; if not, a push wakes it.
  pub tail_heartbeat_armed: bool,
}

/// Shared between a `DataWriter` and its RTPS `Writer` (inside the send
/// buffer both hold).
#[derive(Debug)]
pub(crate) struct FastPush {
  state: Mutex<FastPushState>,
  /// HEARTBEAT count of the writer: both threads send HEARTBEATs.
  heartbeat_count: AtomicI32,
  /// Samples pushed by the application thread (for tests and counters).
  pushed: AtomicU64,
  /// convoy change 84: how many readers the writer is matched with, set by
  /// the event loop whenever its readers change, so that the application can
  /// ask on every write without scanning discovery's tables.
  matched_readers: AtomicUsize,
}

/// What `try_push` did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FastPushOutcome {
  /// Not sent: ring the doorbell, the event loop pushes it.
  Declined,
  /// Sent; `wake_writer`: the event loop should still look at the writer (to
  /// arm its tail HEARTBEAT).
  Sent { wake_writer: bool },
}

impl FastPush {
  pub fn new() -> Self {
    FastPush {
      state: Mutex::new(FastPushState {
        route: None,
        last_sent: SequenceNumber::zero(),
        last_push_at: None,
        tail_heartbeat_armed: false,
      }),
      heartbeat_count: AtomicI32::new(1),
      pushed: AtomicU64::new(0),
      matched_readers: AtomicUsize::new(0),
    }
  }

  /// How many readers the writer is matched with (change 84).
  pub fn matched_readers(&self) -> usize {
    self.matched_readers.load(Ordering::Acquire)
  }

  pub fn set_matched_readers(&self, readers: usize) {
    self.matched_readers.store(readers, Ordering::Release);
  }

  pub fn next_heartbeat_count(&self) -> i32 {
    self.heartbeat_count.fetch_add(1, Ordering::SeqCst)
  }

  #[cfg(test)]
  pub fn peek_heartbeat_count(&self) -> i32 {
    self.heartbeat_count.load(Ordering::SeqCst)
  }

  #[cfg(test)]
  pub fn pushed(&self) -> u64 {
    self.pushed.load(Ordering::Relaxed)
  }

  /// The event loop's hold on the state for one of its actions on the writer.
  pub fn lock(&self) -> MutexGuard<'_, FastPushState> {
    // A poisoned lock means a thread panicked while pushing; the state is a
    // few plain values, still consistent at every await-free step.
    self
      .state
      .lock()
      .unwrap_or_else(std::sync::PoisonError::into_inner)
  }

  /// Push sample `seq` (just admitted into `buffer`) from this thread, if the
  /// event loop's route allows it and the event loop is not busy with the
  /// writer.
  pub fn try_push(&self, buffer: &WriterSendBuffer, seq: SequenceNumber) -> FastPushOutcome {
    let mut guard = match self.state.try_lock() {
      Ok(s) => s,
      Err(TryLockError::Poisoned(p)) => p.into_inner(),
      Err(TryLockError::WouldBlock) => return FastPushOutcome::Declined,
    };
    let state = &mut *guard;
    let Some(route) = state.route.as_ref() else {
      return FastPushOutcome::Declined;
    };
    if state.last_sent.plus_1() != seq {
      // Something before it is still queued in the event loop.
      return FastPushOutcome::Declined;
    }
    let Some(cc) = buffer.get_by_sn(seq) else {
      return FastPushOutcome::Declined;
    };
    if cc.data_value.payload_size() > route.max_payload
      || cc.write_options.to_single_reader().is_some()
    {
      return FastPushOutcome::Declined;
    }
    let endianness = Endianness::LittleEndian;
    let mut message = MessageBuilder::new();
    if let Some(ts) = cc.write_options.source_timestamp() {
      message = message.ts_msg(endianness, Some(ts));
    }
    message = message.data_msg(&cc, EntityId::UNKNOWN, route.writer_guid, endianness, None);
    if let Some(reliable) = route.reliable {
      let unacked = i64::from(seq) - i64::from(buffer.acked_before()) + 1;
      if unacked > reliable.max_unacked {
        return FastPushOutcome::Declined;
      }
      // Change 17: the piggybacked HEARTBEAT asks for an answer only when half
      // the window is unacknowledged, or on every fourth sample (change 70: not
      // to a multicast group).
      let wants_reply = asks_for_answer(unacked, reliable.window, seq, reliable.to_group);
      message = message.heartbeat_msg(
        route.writer_guid.entity_id,
        buffer.first_change_sequence_number(),
        seq,
        self.next_heartbeat_count(),
        endianness,
        EntityId::UNKNOWN,
        !wants_reply,
        false,
      );
    }
    let bytes = match message
      .add_header_and_build(route.writer_guid.prefix)
      .write_to_vec_fast(endianness)
    {
      Ok(b) => b,
      Err(e) => {
        debug!("fast push: serializing failed, the event loop sends it: {e:?}");
        return FastPushOutcome::Declined;
      }
    };
    let room = route
      .datagram_budget
      .saturating_sub(bytes.len().saturating_sub(RTPS_MESSAGE_HEADER_SIZE));
    let mut with_replies = Vec::new();
    for (i, dest) in route.destinations.iter().enumerate() {
      // Change 52: ACKNACKs queued for this destination go in the same
      // datagram. Should the send fail they are lost, as on the wire: the
      // writer's next HEARTBEAT asks again.
      // change 74: to a group, ACKNACKs to its members; the datagram stays
      // within what goes to a group.
      let room = if dest.ip().is_multicast() {
        room.min(MULTICAST_DATAGRAM_MAX.saturating_sub(bytes.len()))
      } else {
        room
      };
      let riding = route
        .replies
        .as_ref()
        .and_then(|batch| lock_batch(batch).take_riding(*dest, room));
      let datagram = match riding {
        Some(replies) => {
          with_replies.clear();
          with_replies.extend_from_slice(&bytes);
          with_replies.extend_from_slice(&replies);
          &with_replies
        }
        None => &bytes,
      };
      match route.socket.send_to(datagram, *dest) {
        Ok(_) => {}
        // A full socket before anything went out: the event loop queues it.
        Err(e) if e.kind() == io::ErrorKind::WouldBlock && i == 0 => {
          return FastPushOutcome::Declined;
        }
        // Later ones: a reliable reader asks again (its next HEARTBEAT, or the
        // tail HEARTBEAT, shows the gap); best-effort readers lose it, as they
        // would on the wire.
        Err(e) => trace!("fast push to {dest}: {e}"),
      }
    }
    state.last_sent = seq;
    state.last_push_at = Some(Instant::now());
    buffer.set_sent_frontier(seq);
    self.pushed.fetch_add(1, Ordering::Relaxed);
    FastPushOutcome::Sent {
      wake_writer: route.reliable.is_some() && !state.tail_heartbeat_armed,
    }
  }
}

impl Default for FastPush {
  fn default() -> Self {
    Self::new()
  }
}

#[cfg(test)]
mod tests {
  use std::{net::UdpSocket, time::Duration as StdDuration};

  use bytes::Bytes;

  use super::*;
  use crate::{
    dds::{ddsdata::DDSData, with_key::datawriter::WriteOptions},
    messages::submessages::submessages::{
      ACKNACK_Flags, AckNack, HEARTBEAT_Flags, InterpreterSubmessage, ReaderSubmessage,
      WriterSubmessage,
    },
    rtps::{reply_batch::ReplyBatch, writer_send_buffer::Admission, Message, SubmessageBody},
    structure::{
      guid::{EntityKind, GuidPrefix},
      locator::Locator,
      sequence_number::SequenceNumberSet,
    },
    RepresentationIdentifier, SerializedPayload,
  };

  fn buffer(guid: GUID) -> WriterSendBuffer {
    WriterSendBuffer::new(guid, "fast".into(), true, false, true, 64, 64, 64)
  }

  fn admit(buffer: &WriterSendBuffer, len: usize) -> SequenceNumber {
    let data = DDSData::new(SerializedPayload::new(
      RepresentationIdentifier::CDR_LE,
      vec![7; len],
    ));
    match buffer.admit_blocking(WriteOptions::default(), data, Some(StdDuration::ZERO)) {
      Admission::Admitted(sn) => sn,
      Admission::WouldBlock => panic!("no room"),
    }
  }

  #[test]
  fn a_small_sample_goes_out_from_the_writing_thread_with_its_heartbeat() {
    let guid = GUID::new(
      GuidPrefix::new(&[3; 12]),
      EntityId::new([0, 0, 1], EntityKind::WRITER_WITH_KEY_USER_DEFINED),
    );
    let buffer = buffer(guid);
    let fast = Arc::clone(buffer.fast_push());
    let reader = UdpSocket::bind("127.0.0.1:0").unwrap();
    reader
      .set_read_timeout(Some(StdDuration::from_secs(5)))
      .unwrap();
    // Change 52: an ACKNACK of this participant queued for the reader's
    // participant, which listens where the sample goes.
    let replies = Arc::new(Mutex::new(ReplyBatch::new(
      StdDuration::ZERO,
      StdDuration::ZERO,
    )));
    let their_prefix = GuidPrefix::new(&[4; 12]);
    lock_batch(&replies).push(
      their_prefix,
      &[Locator::from(reader.local_addr().unwrap())],
      &[],
      AckNack {
        reader_id: EntityId::new([0, 0, 2], EntityKind::READER_WITH_KEY_USER_DEFINED),
        writer_id: EntityId::new([0, 0, 9], EntityKind::WRITER_WITH_KEY_USER_DEFINED),
        reader_sn_state: SequenceNumberSet::new_empty(SequenceNumber::new(3)),
        count: 1,
      },
      enumflags2::make_bitflags!(ACKNACK_Flags::{Endianness | Final}),
    );
    let route = FastRoute {
      socket: EgressSocket::new(Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap()), None),
      destinations: vec![reader.local_addr().unwrap()].into(),
      max_payload: 1000,
      datagram_budget: 1400,
      writer_guid: guid,
      reliable: Some(ReliablePush {
        window: 16,
        to_group: false,
        max_unacked: 4,
      }),
      replies: Some(Arc::clone(&replies)),
    };

    // No route yet (the event loop has not allowed it): declined.
    let sn = admit(&buffer, 64);
    assert_eq!(fast.try_push(&buffer, sn), FastPushOutcome::Declined);
    // The event loop pushed it; now it allows the fast way.
    {
      let mut state = fast.lock();
      state.last_sent = sn;
      state.route = Some(route);
    }
    let sn = admit(&buffer, 64);
    assert_eq!(
      fast.try_push(&buffer, sn),
      FastPushOutcome::Sent { wake_writer: true },
      "no tail HEARTBEAT armed: the event loop must look"
    );
    let mut datagram = vec![0; 2048];
    let len = reader.recv(&mut datagram).unwrap();
    let message = Message::read_from_buffer(&Bytes::copy_from_slice(&datagram[..len])).unwrap();
    let mut kinds = Vec::new();
    for sub in message.submessages() {
      match sub.body {
        SubmessageBody::Writer(WriterSubmessage::Data(data, _)) => {
          assert_eq!(data.writer_sn, sn);
          kinds.push("DATA");
        }
        SubmessageBody::Writer(WriterSubmessage::Heartbeat(hb, flags)) => {
          assert_eq!((hb.first_sn, hb.last_sn), (SequenceNumber::new(1), sn));
          // Sample 2 of 16 unacknowledged, not a fourth: no answer wanted.
          assert!(flags.contains(HEARTBEAT_Flags::Final));
          kinds.push("HEARTBEAT");
        }
        SubmessageBody::Interpreter(InterpreterSubmessage::InfoDestination(dst, _)) => {
          assert_eq!(dst.guid_prefix, their_prefix);
          kinds.push("INFO_DST");
        }
        SubmessageBody::Reader(ReaderSubmessage::AckNack(ack, _)) => {
          assert_eq!(ack.reader_sn_state.base(), SequenceNumber::new(3));
          kinds.push("ACKNACK");
        }
        _ => {}
      }
    }
    // The queued ACKNACK rode along and left the batch.
    assert_eq!(kinds, ["DATA", "HEARTBEAT", "INFO_DST", "ACKNACK"]);
    assert_eq!(lock_batch(&replies).due_in(std::time::Instant::now()), None);
    assert_eq!(fast.lock().last_sent, sn);
    assert_eq!(fast.pushed(), 1);

    // Too large for one datagram: the event loop's.
    let big = admit(&buffer, 4000);
    assert_eq!(fast.try_push(&buffer, big), FastPushOutcome::Declined);
    // And what follows it waits for it (order).
    let next = admit(&buffer, 64);
    assert_eq!(fast.try_push(&buffer, next), FastPushOutcome::Declined);
    // Past the in-flight limit (4 unacknowledged samples): declined.
    fast.lock().last_sent = next;
    let over = admit(&buffer, 64);
    assert_eq!(fast.try_push(&buffer, over), FastPushOutcome::Declined);
  }
}
