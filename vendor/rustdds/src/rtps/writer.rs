use std::{
  cell::RefCell,
  cmp::{max, min},
  collections::{BTreeMap, BTreeSet},
  net::SocketAddr,
  ops::Bound::Included,
  rc::Rc,
  sync::{mpsc::TrySendError, Arc},
};

#[allow(unused_imports)]
use log::{debug, error, info, trace, warn};
use speedy::Endianness;
use mio1::Token;

use crate::{
  dds::{
    qos::{
      policy,
      policy::{History, Reliability},
      HasQoSPolicy, QosPolicies,
    },
    statusevents::{
      CountWithChange, DataWriterStatus, DomainParticipantStatusEvent, StatusChannelSender,
    },
  },
  messages::submessages::submessages::AckSubmessage,
  network::{link_emulation::EgressSocket, udp_sender::UDPSender, util::IfAddr},
  polling::SharedTimer,
  rtps::{
    constant::{
      DEFAULT_WRITER_MAX_SAMPLES, FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE, FRAGMENT_SIZE,
      MAX_UDP_DATAGRAM_BUDGET,
      GROUP_RIDE_HOLD_MAX, HEARTBEAT_PERIOD_FAST, HEARTBEAT_PERIOD_SLOW,
      HEARTBEAT_SUBMESSAGE_SERIALIZED_SIZE,
      MIN_MULTICAST_PARTICIPANTS, MULTICAST_DATAGRAM_MAX, MULTICAST_HEARD_WITHIN,
      NACK_RESPONSE_DELAY, NACK_SUPPRESSION_DURATION, REPAIR_BATCH_MAX_BYTES, REPAIR_FRAGS_ROUND_BYTES,
      REPAIR_INTERVAL_DEFAULT, REPAIR_INTERVAL_MAX, REPAIR_INTERVAL_MIN, TAIL_HEARTBEATS_PER_SILENCE,
      STOPPED_READER_PATIENCE, TAIL_HEARTBEAT_DELAY,
    },
    fast_push::{FastPushState, FastRoute, ReliablePush},
    outbound::{SocketId, TrafficClass},
    pacing::Pacer,
    reply_batch::SharedReplyBatch,
    rtps_reader_proxy::RtpsReaderProxy,
    timed_event::DpTimerEvent,
    transmit::{DefaultRouteSelector, InterfaceObservations, RouteKey},
    writer_send_buffer::WriterSendBuffer,
    Message, MessageBuilder,
  },
  structure::{
    cache_change::CacheChange,
    duration::Duration,
    entity::RTPSEntity,
    guid::{EntityId, GuidPrefix, GUID},
    locator::Locator,
    sequence_number::{FragmentNumber, SequenceNumber},
    time::Timestamp,
  },
};
#[cfg(feature = "security")]
use crate::{
  rtps::Submessage,
  security::{security_plugins::SecurityPluginsHandle, SecurityResult},
};
#[cfg(not(feature = "security"))]
use crate::no_security::SecurityPluginsHandle;

#[derive(PartialEq, Eq, Clone, Copy)]
pub enum DeliveryMode {
  Unicast,
  Multicast,
}

/// nonblocking-transmit: how far into the current push-mode sample we have
/// transmitted. Lets a large (fragmented) sample resume from the exact point
/// where the socket last returned WouldBlock, instead of restarting.
/// (see src/rtps/nonblocking_transmit_design.md)
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub(crate) enum SampleCursor {
  /// Nothing of this sample has been transmitted yet (fresh DATA, or the first
  /// DATAFRAG together with any leading GAP).
  Fresh,
  /// Resume DATAFRAG transmission starting at this fragment number, then the
  /// trailing HEARTBEAT.
  Frag(FragmentNumber),
  /// All fragments sent; only the trailing HEARTBEAT of a fragmented sample
  /// remains.
  Heartbeat,
}

/// Item 1 (DATA aggregation): outcome of attempting to coalesce one or more
/// consecutive unfragmented multicast-to-all samples into a single datagram.
pub(crate) enum BatchOutcome {
  /// The aggregated datagram was accepted by every socket. `last_seq` is the
  /// highest sequence number included in the batch.
  Sent { last_seq: SequenceNumber },
  /// A socket returned WouldBlock and back-pressure applies (reliable, or a
  /// best-effort sample that opted in to blocking). The whole datagram is
  /// all-or-nothing: `last_sent` is left unchanged so the batch is rebuilt and
  /// resent from its first sequence number on the next write-readiness wake.
  Blocked { blocked: BTreeSet<SocketId> },
  /// A socket returned WouldBlock for a best-effort batch that must not block;
  /// the whole datagram is dropped and we advance past it. `last_seq` is the
  /// highest sequence number in the dropped batch.
  Dropped { last_seq: SequenceNumber },
}

/// nonblocking-transmit: outcome of a resumable bulk send of one cache change.
pub(crate) enum SendProgress {
  /// The whole sample (all fragments + trailing HEARTBEAT) was transmitted.
  Complete,
  /// A socket returned WouldBlock. `cursor` is where to resume, `blocked` names
  /// the sockets to arm for write readiness.
  Blocked {
    cursor: SampleCursor,
    blocked: BTreeSet<SocketId>,
  },
  /// convoy change 8: a pacing bucket is empty. Resume at `cursor` after `wait`.
  Paced {
    cursor: SampleCursor,
    wait: std::time::Duration,
  },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimedEvent {
  Heartbeat,
  CacheCleaning,
  SendRepairData { to_reader: GUID },
  SendRepairFrags { to_reader: GUID },
  /// convoy change 8: the pacing wait is over; go on pushing.
  ResumePush,
  /// convoy change 32: the writer fell silent after a push; ask readers that
  /// have not acknowledged it whether they have it.
  TailHeartbeat,
  /// convoy change 36: the application waits for room in the window; look
  /// for readers that stopped answering.
  StoppedReaderCheck,
}

// This is used to construct an actual Writer.
// Ingredients are sendable between threads, whereas the Writer is not.
pub(crate) struct WriterIngredients {
  pub guid: GUID,
  /// Shared, flow-controlled buffer of outgoing samples. The producer end is
  /// held by the `DataWriter`; this clone is the consumer end for the Writer.
  pub send_buffer: WriterSendBuffer,
  pub topic_name: String,
  pub(crate) like_stateless: bool, // Usually false (see like_stateless attribute of Writer)
  pub qos_policies: QosPolicies,
  pub status_sender: StatusChannelSender<DataWriterStatus>,

  pub(crate) security_plugins: Option<SecurityPluginsHandle>,
}

pub(crate) struct Writer {
  pub endianness: Endianness,
  /// Configures the mode in which the
  /// Writer operates. If
  /// pushMode==true, then the Writer
  /// will push changes to the reader. If
  /// pushMode==false, changes will
  /// only be announced via heartbeats
  /// and only be sent as response to the
  /// request of a reader
  pub push_mode: bool,
  /// Protocol tuning parameter that
  /// allows the RTPS Writer to
  /// repeatedly announce the
  /// availability of data by sending a
  /// Heartbeat Message.
  pub heartbeat_period: Option<Duration>,
  /// Faster Heartbeat period used while some matched reader still has
  /// unacknowledged samples. `None` for BestEffort (no periodic Heartbeat).
  pub heartbeat_period_fast: Option<Duration>,
  /// duration to launch cache change remove from DDSCache
  pub cache_cleaning_period: Duration,
  /// Protocol tuning parameter that
  /// allows the RTPS Writer to delay
  /// the response to a request for data
  /// from a negative acknowledgment.
  pub nack_response_delay: std::time::Duration,
  pub nackfrag_response_delay: std::time::Duration,

  /// Protocol tuning parameter that
  /// allows the RTPS Writer to ignore
  /// requests for data from negative
  /// acknowledgments that arrive ‘too
  /// soon’ after the corresponding
  /// change is sent.
  // TODO: use this
  #[allow(dead_code)]
  pub nack_suppression_duration: std::time::Duration,

  /// Largest serialized payload advertised at writer creation (discovery
  /// metadata fallback). Transmit decisions use
  /// [`Self::max_unfragmented_serialized_payload`] instead.
  #[allow(dead_code)]
  pub data_max_size_serialized: usize,

  my_guid: GUID,

  /// The RTPS ReaderProxy class represents the information an RTPS
  /// StatefulWriter maintains on each matched RTPS Reader
  readers: BTreeMap<GUID, RtpsReaderProxy>,
  // convoy change 31: how far each reader of a participant we lost (or
  // forgot) had acknowledged. A participant that is alive is found again at
  // its next SPDP announcement, with the same reader GUIDs; such a reader is
  // no late joiner, and what it has not acknowledged is still owed to it.
  readers_of_lost_participants: BTreeMap<GUID, SequenceNumber>,
  matched_readers_count_total: i32, // all matches ever, never decremented
  requested_incompatible_qos_count: i32, // how many times some Reader requested incompatible QoS

  // Sending mechanism
  udp_sender: Rc<UDPSender>,

  // Extra fixed unicast destinations that every outgoing message from this
  // writer is *also* sent to, bypassing route selection. Empty for all writers
  // except the built-in SPDP participant writer, which uses it for the
  // "localhost SPDP peers" (127.0.0.1:<well-known SPDP ports>) so same-host
  // participants discover each other with no external network. Unlike loopback
  // locators discovered from peers, these are unconditional (they are how we
  // bootstrap same-host discovery in the first place). See
  // `src/rtps/loopback_same_host_design.md`.
  extra_unicast_destinations: Vec<Locator>,

  // Whether route selection may prefer a same-host peer's loopback locator.
  // Mirrors the participant-builder `same_host_loopback` knob; `true` by
  // default. Passed into `DefaultRouteSelector` on every route resolution.
  prefer_loopback_same_host: bool,

  // Interface-aware transmit: per-remote observed receive interfaces/addresses,
  // shared (intra-thread) with the MessageReceiver that records them. Consulted
  // when (re)resolving each reader proxy's SendRoute.
  interface_observations: Rc<RefCell<InterfaceObservations>>,

  // Snapshot of the local interface table (shared, read-only), used to resolve
  // each matched reader's per-peer path-MTU budget when its locators change.
  local_interfaces: Rc<[IfAddr]>,

  // Minimum per-peer datagram-payload budget over all matched readers. The
  // aggregated / packed datagram is a single packet shared by every reader
  // (sent to `EntityId::UNKNOWN`), so it must fit the smallest reader's path
  // MTU. Recomputed whenever a reader is added, updated, or removed. Falls back
  // to `FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE` when there are no matched readers.
  min_datagram_payload: usize,

  // By default, this writer is a StatefulWriter (see RTPS spec section 8.4.9)
  // If like_stateless is true, then the writer mimics the behavior of a Best-Effort
  // StatelessWriter. This behavior is needed only for a single built-in discovery topic of
  // Secure DDS (topic DCPSParticipantStatelessMessage).
  // The basic idea in mimicking BestEffort & Stateless is:
  //  1. Make sure no heartbeats, acknacks, or anything related to Reliable behavior is processed
  //  2. Use the RtpsReaderProxies merely as locators, do not utilize/modify their state
  // Note that unlike the Best-Effort StatelessWriter in the specification, here we don't send
  // GAP messages. But this shouldn't matter since the expected remote Reader is also BestEffort &
  // Stateless, and therefore does not process GAP messages at all.
  like_stateless: bool,

  /// Writer can only read/write to this topic DDSHistoryCache.
  my_topic_name: String,

  /// Shared, flow-controlled buffer of outgoing samples. Filled by the
  /// `DataWriter` (admission + sequence numbering), drained/transmitted here.
  send_buffer: WriterSendBuffer,
  /// Highest sequence number this Writer has fully transmitted (push mode).
  /// Samples with `seq` in `(last_sent, send_buffer.last]` are pending send.
  last_sent: SequenceNumber,
  /// nonblocking-transmit: transmit progress within the sample `last_sent + 1`
  /// (the one currently being pushed). `Fresh` unless a large sample was
  /// interrupted mid-way by a full socket.
  sample_cursor: SampleCursor,
  /// nonblocking-transmit: sockets on which the last push attempt hit
  /// WouldBlock. Drained by the event loop, which enqueues this writer on those
  /// sockets' round-robin queues and arms write readiness.
  blocked_sockets: BTreeSet<SocketId>,

  /// Contains timer that needs to be set to timeout with duration of
  /// self.heartbeat_period timed_event_handler sends notification when timer
  /// is up via mio channel to poll in Dp_eventWrapper this also handles
  /// writers cache cleaning timeouts.
  pub(crate) timed_event_timer: SharedTimer<DpTimerEvent>,

  qos_policies: QosPolicies,

  // Used for sending status info about messages sent
  status_sender: StatusChannelSender<DataWriterStatus>,
  // offered_deadline_status: OfferedDeadlineMissedStatus,
  participant_status_sender: StatusChannelSender<DomainParticipantStatusEvent>,

  security_plugins: Option<SecurityPluginsHandle>,

  // convoy change 8: the token buckets pushed datagrams are charged to, and
  // whether a ResumePush is armed.
  pacer: RefCell<Pacer>,
  // convoy change 30: samples up to this size are pushed unpaced: every matched
  // reader is on this host and announced a receive buffer of at least twice it.
  unpaced_up_to: usize,
  resume_push_scheduled: bool,
  // convoy change 32: a TailHeartbeat is scheduled; when this writer last
  // pushed a sample; HEARTBEATs sent for the same silence so far.
  tail_heartbeat_scheduled: bool,
  last_push_at: std::time::Instant,
  tail_heartbeats_sent: u32,
  // convoy change 70: the times between this writer's last pushes (a ring),
  // and whether its samples go to a multicast group (`shared_multicast_group`).
  push_gaps: [std::time::Duration; PUSH_GAPS_KEPT],
  push_gaps_next: usize,
  pushes_to_group: bool,
  // convoy change 36: a StoppedReaderCheck is armed.
  stopped_reader_check_scheduled: bool,
  // convoy change 9: datagram cap and fragment size from the participant.
  datagram_cap: usize,
  fragment_size: usize,
  // convoy change 14: the in-flight limit of a reliable writer, and whether the
  // push stopped at it (an ACKNACK then resumes it).
  max_unacked_bytes: Option<usize>,
  window_full: bool,
  // convoy change 35: where a push from the application thread goes (one
  // datagram per destination), None while some matched reader cannot be
  // reached that way; and the socket it goes out of.
  fast_destinations: Option<Arc<[SocketAddr]>>,
  /// convoy change 69: a sample for readers of several participants that
  /// share a multicast group goes once to the group (`shared_multicast_group`)
  /// when it reaches readers in at least this many participants.
  multicast_user_data: Option<usize>,
  fast_socket: EgressSocket,
  // Inside `synced_with_fast_push` (which holds the lock and publishes the
  // route when the action ends).
  fast_push_held: bool,
  // The participant allows it (TransportTuning::application_thread_push).
  application_thread_push: bool,
  // convoy change 52: the participant's queued ACKNACKs, which ride with the
  // samples this writer pushes to their destination.
  reply_batch: Option<SharedReplyBatch>,
}

/// convoy change 70: how many of a writer's last gaps between pushes its
/// rhythm is the shortest of. The shortest, not the last: a lockstep stalled on
/// a lost sample makes one long gap, and a rhythm taken from it made the next
/// loss wait twice as long, and the next four times (a lossy 16-agent run took
/// 10 times as long).
const PUSH_GAPS_KEPT: usize = 4;

/// convoy change 70: the tail HEARTBEAT's delay for a writer whose pushes come
/// `push_gap` apart (see `Writer::tail_heartbeat_delay`).
fn tail_heartbeat_delay_after(push_gap: std::time::Duration) -> std::time::Duration {
  (push_gap * 2).clamp(
    TAIL_HEARTBEAT_DELAY,
    std::time::Duration::from(HEARTBEAT_PERIOD_SLOW).max(TAIL_HEARTBEAT_DELAY),
  )
}

/// convoy change 92: how long a writer must have been silent, when its tail
/// HEARTBEAT's timer fires, for the HEARTBEAT to go (else it waits for the rest
/// of `delay`): half the fixed TAIL_HEARTBEAT_DELAY (change 32), but the whole
/// of a delay that follows a slower rhythm (change 70: twice the shortest gap
/// between pushes). The timer first fires TAIL_HEARTBEAT_DELAY after a push, so
/// a writer whose pushes came 25-50 ms apart sent its tail HEARTBEAT after 50 ms
/// of silence, not after twice its rhythm: 64 lockstep agents on two cores
/// (frames of 35-85 ms) sent 14 a frame to the group, each read by every member.
fn tail_heartbeat_due_after(delay: std::time::Duration) -> std::time::Duration {
  if delay > TAIL_HEARTBEAT_DELAY {
    delay
  } else {
    delay / 2
  }
}

/// convoy change 17: whether the HEARTBEAT that goes with sample `sn` asks
/// readers to answer, `unacked` samples of a `window` not acknowledged yet:
/// when half the window is unacknowledged (the writer would soon wait), and on
/// every fourth sample. convoy change 70: not on every fourth sample when the
/// samples go to a multicast group. Each reader of the group answers with a
/// datagram of its own, so a writer with N readers drew N answers every fourth
/// sample (64 lockstep agents: 1,000 ACKNACKs a frame); a reader that lacks
/// something answers any HEARTBEAT, and half the window still asks in time.
/// convoy change 89: a writer to a group asks when half its window is first
/// unacknowledged, then not again before three quarters. Its readers' answers
/// wait for a ride (change 74), up to a frame of a lockstep; meanwhile each
/// further sample asked again, and a reader that had answered already (its
/// ride had left) answered once more: at 64 lockstep agents the group carried
/// two ACKNACKs per reader and writer every eight frames (1,046 a frame), each
/// read by every member. An answer lost, the asking resumes at three quarters,
/// and the tail HEARTBEAT asks past half (`tail_heartbeat_may_be_final`).
pub(crate) fn asks_for_answer(
  unacked: i64,
  window: i64,
  sn: SequenceNumber,
  to_group: bool,
) -> bool {
  if to_group {
    let half = (window + 1) / 2;
    unacked == half || unacked * 4 >= window * 3
  } else {
    unacked * 2 >= window || i64::from(sn) % 4 == 0
  }
}

impl Writer {
  pub fn new(
    i: WriterIngredients,
    udp_sender: Rc<UDPSender>,
    timed_event_timer: SharedTimer<DpTimerEvent>,
    participant_status_sender: StatusChannelSender<DomainParticipantStatusEvent>,
    interface_observations: Rc<RefCell<InterfaceObservations>>,
    local_interfaces: Rc<[IfAddr]>,
  ) -> Self {
    let fast_socket = udp_sender.unicast_socket_handle();
    // If writer should behave statelessly, only BestEffort QoS is currently
    // supported
    if i.like_stateless && i.qos_policies.is_reliable() {
      panic!("RustDDS internal bug: attempted to create a stateless-like Writer with Reliable QoS");
    }

    let heartbeat_period = i
      .qos_policies
      .reliability
      .and_then(|reliability| {
        if matches!(reliability, Reliability::Reliable { .. }) {
          Some(HEARTBEAT_PERIOD_SLOW)
        } else {
          None
        }
      })
      .map(|hbp| {
        // What is the logic here? Which spec section?
        if let Some(policy::Liveliness::ManualByTopic { lease_duration }) =
          i.qos_policies.liveliness
        {
          let std_dur = lease_duration;
          std_dur / 3
        } else {
          hbp
        }
      });

    // Faster Heartbeat period used while some reader is still behind. Never
    // slower than the (possibly liveliness-shortened) slow period.
    let heartbeat_period_fast = heartbeat_period.map(|slow| min(HEARTBEAT_PERIOD_FAST, slow));

    // TODO: Configuration value
    let cache_cleaning_period = Duration::from_secs(6);

    // Start periodic Heartbeat
    if let Some(period) = heartbeat_period {
      timed_event_timer.borrow_mut().set_timeout(
        std::time::Duration::from(period),
        DpTimerEvent::Writer {
          entity_id: i.guid.entity_id,
          event: TimedEvent::Heartbeat,
        },
      );
    }
    // start periodic cache cleaning
    timed_event_timer.borrow_mut().set_timeout(
      std::time::Duration::from(cache_cleaning_period),
      DpTimerEvent::Writer {
        entity_id: i.guid.entity_id,
        event: TimedEvent::CacheCleaning,
      },
    );

    Self {
      endianness: Endianness::LittleEndian,
      push_mode: true,
      heartbeat_period,
      heartbeat_period_fast,
      cache_cleaning_period,
      nack_response_delay: NACK_RESPONSE_DELAY, // default value from dp_event_loop
      nackfrag_response_delay: NACK_RESPONSE_DELAY, // default value from dp_event_loop
      nack_suppression_duration: NACK_SUPPRESSION_DURATION,
      // Conservative fallback for any discovery advertisement of max sample size.
      data_max_size_serialized: FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE,
      my_guid: i.guid,
      readers: BTreeMap::new(),
      readers_of_lost_participants: BTreeMap::new(),
      matched_readers_count_total: 0,
      requested_incompatible_qos_count: 0,
      udp_sender,
      extra_unicast_destinations: Vec::new(),
      prefer_loopback_same_host: true,
      interface_observations,
      local_interfaces,
      min_datagram_payload: FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE,
      my_topic_name: i.topic_name,
      send_buffer: i.send_buffer,
      last_sent: SequenceNumber::zero(),
      sample_cursor: SampleCursor::Fresh,
      blocked_sockets: BTreeSet::new(),
      timed_event_timer,
      like_stateless: i.like_stateless,
      qos_policies: i.qos_policies,
      status_sender: i.status_sender,
      participant_status_sender,

      security_plugins: i.security_plugins,
      pacer: RefCell::new(Pacer::default()),
      unpaced_up_to: 0,
      resume_push_scheduled: false,
      tail_heartbeat_scheduled: false,
      last_push_at: std::time::Instant::now(),
      tail_heartbeats_sent: 0,
      push_gaps: [std::time::Duration::ZERO; PUSH_GAPS_KEPT],
      push_gaps_next: 0,
      pushes_to_group: false,
      stopped_reader_check_scheduled: false,
      datagram_cap: MAX_UDP_DATAGRAM_BUDGET,
      fragment_size: FRAGMENT_SIZE,
      max_unacked_bytes: None,
      window_full: false,
      fast_destinations: None,
      multicast_user_data: None,
      fast_socket,
      reply_batch: None,
      fast_push_held: false,
      // Built-in writers never get `set_transport`, and are excluded anyway.
      application_thread_push: true,
    }
  }

  /// convoy changes 8, 9: the participant's pacing buckets, datagram cap and
  /// fragment size for this (user-data) writer. Set before any reader matches.
  pub(crate) fn set_transport(
    &mut self,
    pacer: Pacer,
    datagram_cap: usize,
    fragment_size: usize,
    max_unacked_bytes: Option<usize>,
    application_thread_push: bool,
    multicast_user_data: Option<usize>,
  ) {
    self.application_thread_push = application_thread_push;
    self.multicast_user_data = multicast_user_data;
    self.pacer = RefCell::new(pacer);
    self.datagram_cap = datagram_cap;
    self.fragment_size = fragment_size;
    self.max_unacked_bytes = max_unacked_bytes;
  }

  /// convoy change 71: the liveliness writer (DCPSParticipantMessage) of a
  /// participant without security plugins uses a shared multicast group as user
  /// writers do (`shared_multicast_group`). Other built-in writers never do.
  pub(crate) fn set_multicast_liveliness(&mut self, multicast: Option<usize>) {
    if self.my_guid.entity_id == EntityId::P2P_BUILTIN_PARTICIPANT_MESSAGE_WRITER
      && self.security_plugins.is_none()
    {
      self.multicast_user_data = multicast;
    }
  }

  /// convoy change 14: bytes of samples pushed out but not yet acknowledged by
  /// every matched reader.
  fn unacked_bytes(&self) -> usize {
    let first = self.send_buffer.first_change_sequence_number();
    let replaces = self.send_buffer.replaces_unacked();
    let now = std::time::Instant::now();
    let Some(oldest_unacked) = self
      .readers
      .values()
      .filter(|rp| !self.stopped_reader(rp, now))
      .map(|rp| rp.all_acked_before)
      // convoy change 22: a reader already behind the kept history (replaced samples it
      // never acknowledged: it is gone or far behind) does not hold the window shut.
      .filter(|acked| !replaces || *acked >= first)
      .min()
    else {
      return 0;
    };
    let mut bytes = 0;
    let mut sn = max(oldest_unacked, self.send_buffer.first_change_sequence_number());
    while sn <= self.last_sent {
      if let Some(cc) = self.send_buffer.get_by_sn(sn) {
        bytes += cc.data_value.payload_size();
      }
      sn = sn.plus_1();
    }
    bytes
  }

  /// convoy change 14: whether the push stopped at a full in-flight window
  /// since the last call; the event loop calls this after an ACKNACK.
  pub(crate) fn take_window_reopened(&mut self) -> bool {
    std::mem::take(&mut self.window_full)
  }

  /// Entity id encoded as a mio token. The internal poll no longer registers
  /// per-writer tokens; the doorbell ready queue carries the id instead.
  #[allow(dead_code)]
  pub fn entity_token(&self) -> Token {
    self.guid().entity_id.as_token()
  }

  pub fn is_reliable(&self) -> bool {
    self.qos_policies.is_reliable()
  }

  /// convoy change 44: the participants of the matched readers (one entry per
  /// reader).
  pub fn reader_participants(&self) -> impl Iterator<Item = GuidPrefix> + '_ {
    self.readers.keys().map(|guid| guid.prefix)
  }

  /// Lists the known local (same DomainParticipant) ReaderProxies
  /// Note that local non-matching Readers are not here.
  pub fn local_readers(&self) -> Vec<EntityId> {
    let min = GUID::new_with_prefix_and_id(self.my_guid.prefix, EntityId::MIN);
    let max = GUID::new_with_prefix_and_id(self.my_guid.prefix, EntityId::MAX);

    self
      .readers
      .range((Included(min), Included(max)))
      .filter_map(|(guid, _)| {
        if guid.prefix == self.my_guid.prefix {
          Some(guid.entity_id)
        } else {
          None
        }
      })
      .collect()
  }

  // --------------------------------------------------------------
  // --------------------------------------------------------------
  // --------------------------------------------------------------

  // Schedule a timed event for this Writer on the event loop's shared timer.
  // The payload is tagged with this Writer's EntityId so the event loop can
  // route the fired event back to this Writer.
  fn schedule_timed_event(&self, after: std::time::Duration, event: TimedEvent) {
    self.timed_event_timer.borrow_mut().set_timeout(
      after,
      DpTimerEvent::Writer {
        entity_id: self.my_guid.entity_id,
        event,
      },
    );
  }

  // Time between repair rounds for one reader. See REPAIR_INTERVAL_DEFAULT.
  fn repair_interval(&self) -> std::time::Duration {
    repair_interval_for(self.qos_policies.deadline().map(|dl| dl.0))
  }

  // Arm SendRepairData for `reader_guid` unless one is already pending, so one
  // reader never has two repair rounds running in parallel.
  fn schedule_repair_data(&mut self, reader_guid: GUID, after: std::time::Duration) {
    if let Some(rp) = self.lookup_reader_proxy_mut(reader_guid) {
      if !rp.repair_data_scheduled {
        rp.repair_data_scheduled = true;
        self.schedule_timed_event(
          after,
          TimedEvent::SendRepairData {
            to_reader: reader_guid,
          },
        );
      }
    }
  }

  // Same as schedule_repair_data, for SendRepairFrags.
  fn schedule_repair_frags(&mut self, reader_guid: GUID, after: std::time::Duration) {
    if let Some(rp) = self.lookup_reader_proxy_mut(reader_guid) {
      if !rp.repair_frags_scheduled {
        rp.repair_frags_scheduled = true;
        self.schedule_timed_event(
          after,
          TimedEvent::SendRepairFrags {
            to_reader: reader_guid,
          },
        );
      }
    }
  }

  // Whether the socket a unicast repair to this reader goes out on already has
  // queued control datagrams. Repairs are never dropped, so sending more there
  // would only lengthen the queue; the round waits for the next interval.
  fn repair_backlogged(&self, reader_guid: GUID) -> bool {
    let Some(rp) = self.readers.get(&reader_guid) else {
      return false;
    };
    // Same choice as send_message_to_readers makes for DeliveryMode::Unicast.
    let route = rp.send_route();
    let uses_unicast = if route.fallback {
      rp.unicast_locator_list.iter().any(Locator::is_udp)
    } else {
      route.unicast.is_some()
    };
    if uses_unicast {
      self.udp_sender.control_backlogged(SocketId::Unicast)
    } else {
      self
        .udp_sender
        .socket_ids()
        .into_iter()
        .filter(|id| matches!(id, SocketId::Multicast(_)))
        .any(|id| self.udp_sender.control_backlogged(id))
    }
  }

  // Handle a single timed event. The shared timer is drained by the event loop,
  // which dispatches each expired event to the addressed Writer.
  pub fn handle_timed_event(&mut self, event: TimedEvent) {
    self.synced_with_fast_push(|w| w.handle_timed_event_now(event));
  }

  fn handle_timed_event_now(&mut self, event: TimedEvent) {
    match event {
      TimedEvent::Heartbeat => {
        // convoy change 37: a user writer that pushed within the fast period
        // needs no periodic HEARTBEAT: its samples carry theirs (every fourth
        // asks for an answer, and a reader missing something answers any), and
        // the tail HEARTBEAT asks once it falls silent. Readers are behind by
        // the samples not asked about yet nearly all the time, so a writer
        // pushing every 100 ms drew a HEARTBEAT and every reader's answer per
        // sample.
        // change 70: within its own rhythm too, when that is slower.
        let pushing = self.my_guid.entity_id.kind().is_user_defined()
          && self.heartbeat_period_fast.is_some_and(|fast| {
            self.last_push_at.elapsed()
              < std::time::Duration::from(fast).max(self.tail_heartbeat_delay())
          });
        let readers_behind = if pushing {
          true
        } else {
          self.handle_heartbeat_tick(false)
        };
        // ^^ false = This is automatic heartbeat by timer, not manual by application
        // call.
        // Adaptive period: reschedule sooner (fast) while some reader still has
        // unacknowledged data so repair is prompted quickly, and back off to the
        // slow period once everyone is caught up to keep idle traffic low.
        let next_period = if readers_behind && self.pushes_to_group {
          // convoy change 75: a group's readers may hold a plain
          // acknowledgement for their own next push to it (change 74); asking
          // again sooner drew nothing but another HEARTBEAT to the whole group
          // (a liveliness writer asked its 64 readers ten times a second).
          self.heartbeat_period_fast.map(|fast| {
            fast.max(Duration::from(
              GROUP_RIDE_HOLD_MAX + std::time::Duration::from_millis(100),
            ))
          })
        } else if readers_behind {
          self.heartbeat_period_fast.or(self.heartbeat_period)
        } else {
          self.heartbeat_period
        };
        if let Some(period) = next_period {
          self.schedule_timed_event(std::time::Duration::from(period), TimedEvent::Heartbeat);
        }
      }
      TimedEvent::CacheCleaning => {
        self.handle_cache_cleaning();
        self.schedule_timed_event(
          std::time::Duration::from(self.cache_cleaning_period),
          TimedEvent::CacheCleaning,
        );
      }
      TimedEvent::SendRepairData {
        to_reader: reader_guid,
      } => {
        match self.lookup_reader_proxy_mut(reader_guid) {
          Some(rp) => rp.repair_data_scheduled = false,
          None => return, // reader is gone
        }
        // Do not add to a send socket that already holds queued control
        // datagrams: back off and try again in the next round.
        if !self.repair_backlogged(reader_guid) {
          self.handle_repair_data_send(reader_guid);
        }
        if self
          .readers
          .get(&reader_guid)
          .is_some_and(|rp| rp.repair_mode)
        {
          self.schedule_repair_data(reader_guid, self.repair_interval());
        }
      }
      TimedEvent::SendRepairFrags {
        to_reader: reader_guid,
      } => {
        match self.lookup_reader_proxy_mut(reader_guid) {
          Some(rp) => rp.repair_frags_scheduled = false,
          None => return, // reader is gone
        }
        let mut paced = None;
        if !self.repair_backlogged(reader_guid) {
          paced = self.handle_repair_frags_send(reader_guid);
        }
        if self
          .readers
          .get(&reader_guid)
          .is_some_and(RtpsReaderProxy::repair_frags_requested)
        {
          // convoy change 10: a round stopped by pacing goes on when the
          // bucket has refilled, not a whole repair interval later.
          let next = paced.unwrap_or_else(|| self.repair_interval());
          self.schedule_repair_frags(reader_guid, next);
        }
      } // SendRepairFrags
      TimedEvent::ResumePush => {
        self.resume_push_scheduled = false;
        self.process_pending_now();
      }
      TimedEvent::TailHeartbeat => {
        self.tail_heartbeat_scheduled = false;
        self.tail_heartbeat();
      }
      TimedEvent::StoppedReaderCheck => {
        self.stopped_reader_check_scheduled = false;
        self.refresh_acked_frontier();
        self.watch_waiting_admission(STOPPED_READER_PATIENCE / 4);
      }
    } // match
  } // fn

  /// This is called by dp_wrapper every time cacheCleaning message is received.
  fn handle_cache_cleaning(&mut self) {
    // Upper bound on retained samples. Use the Writer QoS ResourceLimits if it
    // specifies a positive max_samples; otherwise fall back to a generous
    // default so that a reliable Writer keeps unacknowledged samples available
    // for repair instead of evicting them eagerly. This is only a memory-safety
    // backstop, not a normal operating limit.
    let resource_limit = self
      .qos_policies
      .resource_limits()
      .map(|rl| rl.max_samples)
      .filter(|&max_samples| max_samples > 0)
      .map_or(DEFAULT_WRITER_MAX_SAMPLES, |max_samples| {
        max_samples as usize
      });

    match self.qos_policies.history {
      None => {
        // DDS Specification says this is the default History policy
        self.remove_all_acked_changes_but_keep_depth(Some(1), resource_limit);
      }
      Some(History::KeepAll) => {
        self.remove_all_acked_changes_but_keep_depth(None, resource_limit);
      }
      Some(History::KeepLast { depth: d }) => {
        self.remove_all_acked_changes_but_keep_depth(Some(d as usize), resource_limit);
      }
    }
  }

  // --------------------------------------------------------------
  // --------------------------------------------------------------
  // --------------------------------------------------------------
  // Per-peer UDP-payload budget (bytes for RTPS submessages in one datagram)
  // for a send: the specific reader's resolved path-MTU budget for a directed
  // send, or the writer-wide minimum over all matched readers for a
  // multicast-to-all send (one datagram shared by every reader).
  fn datagram_budget(&self, target_reader_opt: Option<&RtpsReaderProxy>) -> usize {
    match target_reader_opt {
      Some(reader) => reader.max_datagram_payload(),
      None => self.min_datagram_payload,
    }
  }

  /// Largest serialized payload that fits in one unfragmented DATA submessage
  /// within the per-peer datagram budget. Fragmentation is triggered only when
  /// the payload exceeds this, not when it exceeds [`FRAGMENT_SIZE`].
  fn max_unfragmented_serialized_payload(
    &self,
    target_reader_opt: Option<&RtpsReaderProxy>,
  ) -> usize {
    let budget = self.datagram_budget(target_reader_opt);
    let hb_reserve = if self.is_reliable() && !self.like_stateless {
      HEARTBEAT_SUBMESSAGE_SERIALIZED_SIZE
    } else {
      0
    };
    budget
      .saturating_sub(hb_reserve)
      .saturating_sub(DATA_SUBMESSAGE_OVERHEAD)
  }

  fn num_frags_and_frag_size(&self, payload_size: usize) -> (u32, u16) {
    let fragment_size = self.fragment_size as u32;
    let data_size = payload_size as u32; // TODO: overflow check
                                         // Formula from RTPS spec v2.5 Section "8.3.8.3.5 Logical Interpretation"
    let num_frags =
      (data_size / fragment_size) + u32::from(!data_size.is_multiple_of(fragment_size)); // rounding up
    debug!("Fragmenting {data_size} to {num_frags} x {fragment_size}");
    // TODO: Check fragment_size overflow
    (num_frags, fragment_size as u16)
  }

  // The DataWriter has admitted one or more new samples into the shared send
  // buffer and rung the doorbell. Transmit every sample we have not sent yet.
  //
  // nonblocking-transmit: this is also the resume entry point. When a socket
  // returns WouldBlock mid-way, we stop and remember exactly where (`last_sent`
  // + `sample_cursor`); the event loop re-invokes us on write readiness. Large
  // (fragmented) samples resume from the exact fragment, never restart. Blocked
  // sockets are recorded in `blocked_sockets` for the event loop to schedule.
  // Prune a completed / dropped / skipped sequence number from every matched
  // reader's `unsent_changes` set. Historically this was only done on the NACK
  // repair path (`mark_change_sent`), so a best-effort push (which never gets
  // ACKNACKs) left `unsent_changes` growing by one entry per sample forever.
  // Pruning here keeps the per-reader bookkeeping bounded on the push path too.
  fn mark_change_sent_to_all_readers(&mut self, sequence_number: SequenceNumber) {
    if self.like_stateless {
      return;
    }
    for reader in self.readers.values_mut() {
      reader.mark_change_sent(sequence_number);
    }
  }

  // Item 1: is this sample eligible for the DATA-coalescing fast path?
  // We only coalesce unfragmented samples that go to every matched reader
  // (multicast-to-all). Fragmented or single-reader samples keep the existing
  // per-sample / per-fragment path.
  fn is_aggregatable(&self, cc: &CacheChange) -> bool {
    cc.data_value.payload_size() <= self.max_unfragmented_serialized_payload(None)
      && cc.write_options.to_single_reader().is_none()
  }

  // Item 1: greedily coalesce consecutive unfragmented multicast-to-all samples
  // starting at `first_seq` (up to `last_available`) into a single RTPS
  // datagram, then send it once. Returns None if the first sample is not
  // eligible (so the caller uses the per-sample path); otherwise the batch
  // outcome. The datagram is all-or-nothing on WouldBlock.
  fn try_send_aggregated_batch(
    &mut self,
    first_seq: SequenceNumber,
    last_available: SequenceNumber,
  ) -> Option<BatchOutcome> {
    // Peek the first sample. If it is missing (evicted) or not eligible, defer
    // to the per-sample path, which knows how to skip / fragment / route it.
    let first_cc = self.send_buffer.get_by_sn(first_seq)?;
    if !self.is_aggregatable(&first_cc) {
      return None;
    }

    let is_reliable = self.is_reliable();
    // Reserve room for the single trailing HEARTBEAT (reliable only).
    let hb_reserve = if is_reliable && !self.like_stateless {
      HEARTBEAT_SUBMESSAGE_SERIALIZED_SIZE
    } else {
      0
    };

    let mut builder = MessageBuilder::new();
    let mut last_seq = first_seq;
    let mut count: i32 = 0;
    // The batch back-pressures (rather than dropping) if the writer is reliable
    // or any included best-effort sample opted in to blocking.
    let mut may_block = is_reliable;
    // Whether a preceding INFO_TS in this datagram is still "active". An INFO_TS
    // applies to every following DATA until the next INFO_TS, so a timestamped
    // sample followed by a non-timestamped one must emit an invalidating INFO_TS
    // to avoid the latter inheriting the former's timestamp.
    let mut ts_active = false;

    let mut seq = first_seq;
    while seq <= last_available {
      let Some(cc) = self.send_buffer.get_by_sn(seq) else {
        // A gap in the buffer (evicted). Stop the batch here and let the
        // per-sample path handle the missing sequence number next.
        break;
      };
      if !self.is_aggregatable(&cc) {
        break;
      }

      // Build this sample's INFO_TS? + DATA submessages and check the budget.
      let mut sample = MessageBuilder::new();
      let sample_ts_active = match cc.write_options.source_timestamp() {
        Some(src_ts) => {
          sample = sample.ts_msg(self.endianness, Some(src_ts));
          true
        }
        None => {
          if ts_active {
            // Invalidate the previous timestamp so this DATA is not stamped.
            sample = sample.ts_msg(self.endianness, None);
          }
          false
        }
      };
      sample = sample.data_msg(
        &cc,
        EntityId::UNKNOWN, // multicast-to-all
        self.my_guid,
        self.endianness,
        self.security_plugins.as_ref(),
      );

      // Always include the first sample (even if it alone exceeds the budget, so
      // we make progress); otherwise stop before overflowing the datagram. The
      // budget is the minimum per-peer path-MTU over all matched readers, since
      // this datagram is multicast to all of them.
      if count > 0
        && builder.len_serialized() + sample.submessage_bytes_len() + hb_reserve
          > self.min_datagram_payload
      {
        break;
      }

      builder.append(sample);
      ts_active = sample_ts_active;
      last_seq = seq;
      count += 1;
      if cc.write_options.best_effort_may_block() {
        may_block = true;
      }
      seq = seq.plus_1();
    }

    // One trailing HEARTBEAT for the whole datagram (reliable writers only).
    if hb_reserve > 0 {
      builder = builder.heartbeat_msg(
        self.entity_id(),
        self.send_buffer.first_change_sequence_number(),
        self.announced_last_sn(Some(last_seq)),
        self.next_heartbeat_count(),
        self.endianness,
        EntityId::UNKNOWN, // to all readers
        !self.piggyback_wants_reply(last_seq, false), // final_flag (change 17)
        false,             // liveliness_flag
      );
    }

    let message = builder.add_header_and_build(self.my_guid.prefix);
    let blocked = self.send_message_to_readers(
      DeliveryMode::Multicast,
      message,
      &mut self.readers.values(),
      TrafficClass::Bulk,
    );

    if blocked.is_empty() {
      Some(BatchOutcome::Sent { last_seq })
    } else if may_block {
      Some(BatchOutcome::Blocked { blocked })
    } else {
      Some(BatchOutcome::Dropped { last_seq })
    }
  }

  pub fn process_pending(&mut self) {
    self.synced_with_fast_push(Self::process_pending_now);
  }

  fn process_pending_now(&mut self) {
    self.watch_waiting_admission(STOPPED_READER_PATIENCE);
    self.process_pending_samples();
    // convoy change 20: someone waits for acknowledgements (`wait_for_acknowledgments`):
    // ask the readers now instead of at the next periodic heartbeat (piggybacked heartbeats
    // ask for answers only now and then, change 17).
    if self.send_buffer.take_ack_request() && self.is_reliable() {
      self.handle_heartbeat_tick(false);
    }
  }

  fn process_pending_samples(&mut self) {
    // The doorbell enqueues this writer's id and then wakes. A sample admitted
    // while we are here pushes another id, so the next wake runs us again. The
    // shared buffer's `last_seq` is the source of truth.
    loop {
      let last_available = self.send_buffer.last_change_sequence_number();
      if self.last_sent >= last_available {
        break;
      }
      let sequence_number = self.last_sent.plus_1();

      // Item 1 (DATA aggregation): coalesce several consecutive small samples
      // into one datagram to amortize the per-sample RTPS header + syscall.
      // Only engaged when starting a sample fresh (no mid-fragment resume),
      // in push mode, and with security off (per-reader crypto complicates
      // batching). `try_send_aggregated_batch` returns None when the first
      // sample is not eligible (fragmented or destined to a single reader), in
      // which case we fall through to the per-sample path below.
      if self.push_mode
        && self.sample_cursor == SampleCursor::Fresh
        && self.security_plugins.is_none()
      {
        match self.try_send_aggregated_batch(sequence_number, last_available) {
          Some(BatchOutcome::Sent { last_seq }) | Some(BatchOutcome::Dropped { last_seq }) => {
            // Coalesced samples are multicast-to-all, so per-reader `unsent`
            // bookkeeping is a no-op (notify + mark_sent cancel out); just
            // advance the frontier. Leaves `unsent_changes` empty on the push
            // path, exactly like the per-sample path after the Item 5 fix.
            self.last_sent = last_seq;
            self.sample_cursor = SampleCursor::Fresh;
            self.send_buffer.set_sent_frontier(last_seq);
            // Only best-effort batches are dropped, and it skips those.
            self.pushed_reliably();
            continue;
          }
          Some(BatchOutcome::Blocked { blocked }) => {
            // All-or-nothing: do not advance `last_sent`; the event loop resumes
            // us on write readiness and the batch is rebuilt from `sequence_number`.
            self.blocked_sockets.extend(blocked);
            return;
          }
          None => { /* first sample not aggregatable; use the per-sample path */ }
        }
      }

      // Fetch an owned clone of the sample (cheap, Bytes-backed) so we hold the
      // buffer lock only momentarily and can serialize/send without it.
      let Some(cc) = self.send_buffer.get_by_sn(sequence_number) else {
        // The sample is gone (e.g. evicted). Skip it; readers that need it will
        // be told via GAP during repair.
        self.last_sent = sequence_number;
        self.sample_cursor = SampleCursor::Fresh;
        self.send_buffer.set_sent_frontier(sequence_number);
        self.mark_change_sent_to_all_readers(sequence_number);
        continue;
      };
      let write_options = cc.write_options.clone();

      // convoy change 14: a reliable writer starts a new sample only while the
      // bytes in flight (pushed, not acknowledged) leave room for it.
      if self.sample_cursor == SampleCursor::Fresh && self.is_reliable() && !self.like_stateless {
        if let Some(limit) = self.max_unacked_bytes {
          let in_flight = self.unacked_bytes();
          if in_flight > 0 && in_flight + cc.data_value.payload_size() > limit {
            self.window_full = true;
            return;
          }
        }
      }

      // Notify reader proxies once per sample (only when starting it fresh).
      if self.sample_cursor == SampleCursor::Fresh && !self.like_stateless {
        for reader in self.readers.values_mut() {
          reader.notify_new_cache_change(sequence_number);

          // If the data is meant for a single reader only, set others as pending
          // GAP for this sequence number.
          if let Some(single_reader_guid) = write_options.to_single_reader() {
            if reader.remote_reader_guid != single_reader_guid {
              reader.insert_pending_gap(sequence_number);
            }
          }
        }
      }

      if self.push_mode {
        // Send data (DATA or DATAFRAGs) and a Heartbeat, resuming from the
        // current fragment cursor. Compute the send in an inner scope so the
        // immutable borrow of `self.readers` (target reader) is released before
        // we mutate our cursor/frontier below.
        let cursor = self.sample_cursor;
        // Best-effort has no acknowledgement/repair semantics, so a heartbeat
        // per sample is pure overhead (an extra submessage built and sent for
        // every DATA). Only reliable writers piggyback a heartbeat here;
        // best-effort skips it entirely.
        let send_also_heartbeat = self.is_reliable();
        let (_fragmented, progress) = {
          let target_reader_opt = match write_options.to_single_reader() {
            Some(guid) => self.readers.get(&guid), // Sending only to this reader
            None => None,                          // Sending to all matched readers
          };
          // Built-in (discovery) writers carry low-volume, delivery-critical
          // SEDP/SPDP data. Their initial push must not be dropped on WouldBlock:
          // under a flat-out user writer the send socket is perpetually congested,
          // so a dropped DiscoveredWriterData would have to be recovered by the
          // reliable heartbeat/ACKNACK/repair chain - which is itself starved
          // (the shared timer barely fires under load), leaving the remote
          // endpoint permanently undiscovered. Route discovery pushes through the
          // never-dropped Control queue (strict priority in on_socket_writable)
          // so discovery completes regardless of user-data congestion. User
          // writers keep the flow-controlled Bulk path.
          let push_class = if self.my_guid.entity_id.kind().is_built_in() {
            TrafficClass::Control
          } else {
            TrafficClass::Bulk
          };
          self.send_cache_change_from(
            &cc,
            send_also_heartbeat,
            target_reader_opt,
            cursor,
            push_class,
          )
        };
        match progress {
          SendProgress::Complete => {
            self.last_sent = sequence_number;
            self.sample_cursor = SampleCursor::Fresh;
            self.send_buffer.set_sent_frontier(sequence_number);
            self.mark_change_sent_to_all_readers(sequence_number);
            self.pushed_reliably();
          }
          SendProgress::Blocked { cursor, blocked } => {
            // Reliable writers always back-pressure. Best-effort writers only if
            // this sample opted in via `best_effort_may_block`; otherwise the
            // DDS default applies and we drop the (rest of the) sample and move
            // on to fresher data (spec v1.4 2.2.2.4.2.11).
            if self.is_reliable() || write_options.best_effort_may_block() {
              // Stop here; resume on write readiness. Back-pressure to the
              // application follows from `sent_frontier` not advancing.
              self.sample_cursor = cursor;
              self.blocked_sockets.extend(blocked);
              return;
            }
            // Drop: advance past this sample without recording blocked sockets,
            // so no write-readiness back-pressure is applied. The unsent
            // remainder is discarded and later evicted by cache cleaning.
            self.last_sent = sequence_number;
            self.sample_cursor = SampleCursor::Fresh;
            self.send_buffer.set_sent_frontier(sequence_number);
            self.mark_change_sent_to_all_readers(sequence_number);
          }
          SendProgress::Paced { cursor, wait } => {
            // convoy change 8: stop at this datagram; the timer resumes the
            // push (best-effort samples too: pacing delays, never drops).
            self.sample_cursor = cursor;
            if !self.resume_push_scheduled {
              self.resume_push_scheduled = true;
              self.schedule_timed_event(wait, TimedEvent::ResumePush);
            }
            return;
          }
        }
      } else {
        // Send Heartbeat only (control).
        // Readers will ask for the DATA with ACKNACK, if they are interested.
        let final_flag = false; // false = request that readers acknowledge with ACKNACK.
        let liveliness_flag = false; // This is not a manual liveliness assertion (DDS API call), but side-effect of
        let hb_message = MessageBuilder::new()
          .heartbeat_msg(
            self.entity_id(), // from Writer
            self.send_buffer.first_change_sequence_number(),
            self.send_buffer.last_change_sequence_number(),
            self.next_heartbeat_count(),
            self.endianness,
            EntityId::UNKNOWN, // to Reader
            final_flag,
            liveliness_flag,
          )
          .add_header_and_build(self.my_guid.prefix);
        self.send_message_to_readers(
          DeliveryMode::Multicast,
          hb_message,
          &mut self.readers.values(),
          TrafficClass::Control,
        );
        self.last_sent = sequence_number;
        self.sample_cursor = SampleCursor::Fresh;
        self.send_buffer.set_sent_frontier(sequence_number);
      }
    }
  }

  /// convoy change 32: a reliable user writer pushed a sample. Its HEARTBEAT
  /// went with it (asking for no answer, mostly), so a reader that lost the
  /// datagram learns of the loss from the next sample's HEARTBEAT, but a
  /// sample after which the writer falls silent (a lockstep agent's state,
  /// then nothing until the next frame, which waits for that state) was only
  /// repaired at the next periodic HEARTBEAT, up to a second later.
  fn pushed_reliably(&mut self) {
    self.pushed_reliably_at(std::time::Instant::now());
  }

  fn pushed_reliably_at(&mut self, at: std::time::Instant) {
    if !self.is_reliable() || !self.my_guid.entity_id.kind().is_user_defined() {
      return;
    }
    self.push_gaps[self.push_gaps_next] = at.saturating_duration_since(self.last_push_at);
    self.push_gaps_next = (self.push_gaps_next + 1) % PUSH_GAPS_KEPT;
    self.last_push_at = at;
    self.tail_heartbeats_sent = 0;
    if !self.tail_heartbeat_scheduled {
      self.tail_heartbeat_scheduled = true;
      self.schedule_timed_event(TAIL_HEARTBEAT_DELAY, TimedEvent::TailHeartbeat);
    }
  }

  /// convoy change 32: once the writer has been silent for half the delay (the
  /// whole of a delay that follows a slow rhythm, change 92), a HEARTBEAT (that
  /// needs an answer, but see change 88) goes to the readers if one of them has not
  /// acknowledged everything; again each delay while one is behind, a few
  /// times, then the periodic HEARTBEAT carries on. A writer that keeps pushing
  /// sends none: its samples' own HEARTBEATs reveal any gap.
  fn tail_heartbeat(&mut self) {
    let silent = self.last_push_at.elapsed();
    let delay = self.tail_heartbeat_delay();
    if silent < tail_heartbeat_due_after(delay) {
      self.tail_heartbeat_scheduled = true;
      self.schedule_timed_event(delay - silent, TimedEvent::TailHeartbeat);
      return;
    }
    if self.tail_heartbeats_sent >= TAIL_HEARTBEATS_PER_SILENCE {
      return;
    }
    let final_flag = self.tail_heartbeat_may_be_final();
    if self.heartbeat_readers_behind(false, final_flag) {
      self.tail_heartbeats_sent += 1;
      self.tail_heartbeat_scheduled = true;
      self.schedule_timed_event(delay, TimedEvent::TailHeartbeat);
    }
  }

  /// convoy change 70: how long this writer must be silent before its tail
  /// HEARTBEAT asks the readers behind whether they lack something (and before
  /// a periodic one does): TAIL_HEARTBEAT_DELAY, or twice its rhythm (the
  /// shortest of its last gaps between pushes) when that is longer, up to the
  /// slow HEARTBEAT period. A lockstep writer pushes once a frame; where frames
  /// take longer than the delay (64 agent processes on two cores: 150 ms) every
  /// frame's silence drew a HEARTBEAT that every reader answered, most of the
  /// traffic of the run, to find losses that the next frame's sample finds
  /// anyway. A writer that falls
  /// silent for longer than its rhythm (a lockstep stalled on its lost sample)
  /// is still asked within two of its periods.
  fn tail_heartbeat_delay(&self) -> std::time::Duration {
    let rhythm = self.push_gaps.iter().min().copied().unwrap_or_default();
    tail_heartbeat_delay_after(rhythm)
  }

  /// convoy change 26: the newest sample this writer has started to push (its
  /// fragments go only to the readers matched when it started).
  fn pushed_or_pushing(&self) -> SequenceNumber {
    match self.sample_cursor {
      SampleCursor::Fresh => self.last_sent,
      SampleCursor::Frag(_) | SampleCursor::Heartbeat => self.last_sent.plus_1(),
    }
  }

  /// convoy change 25: the first fragment of `seq_num` this writer has not
  /// pushed yet (None: all of it is out). A reader answering a HEARTBEAT while
  /// a large sample is still being paced out asks for every fragment it lacks,
  /// including those not sent yet; repairing them sent them twice (a 1440x960
  /// camera stream spent a fifth of its sensor node's DDS thread there).
  fn frags_not_pushed_from(&self, seq_num: SequenceNumber) -> Option<FragmentNumber> {
    if seq_num <= self.last_sent {
      return None;
    }
    if seq_num > self.last_sent.plus_1() {
      return Some(FragmentNumber::new(1));
    }
    match self.sample_cursor {
      SampleCursor::Fresh => Some(FragmentNumber::new(1)),
      SampleCursor::Frag(next) => Some(next),
      SampleCursor::Heartbeat => None,
    }
  }

  /// nonblocking-transmit: drain and return the sockets on which the last push
  /// attempt hit WouldBlock, so the event loop can enqueue this writer for a
  /// round-robin resume on write readiness.
  pub fn take_blocked_sockets(&mut self) -> BTreeSet<SocketId> {
    std::mem::take(&mut self.blocked_sockets)
  }

  // Returns a boolean telling if the data had to be fragmented. This one-shot
  // wrapper is used by the repair path (ACKNACK response). Repair is a
  // reliability action: it must actually reach the reader, so it goes through
  // the never-dropped `Control` queue rather than the best-effort `Bulk` path.
  // Dropping repair on WouldBlock livelocks under sustained send congestion -
  // the reader re-NACKs, the retransmit is dropped again, and reliable data
  // (e.g. builtin SEDP DiscoveredWriterData) never gets delivered while a
  // flat-out writer keeps the socket blocked.
  fn send_cache_change(
    &self,
    cc: &CacheChange,
    send_also_heartbeat: bool,
    target_reader_opt: Option<&RtpsReaderProxy>,
  ) -> bool {
    let (fragmentation_needed, _progress) = self.send_cache_change_from(
      cc,
      send_also_heartbeat,
      target_reader_opt,
      SampleCursor::Fresh,
      TrafficClass::Control,
    );
    fragmentation_needed
  }

  // Resumable bulk send of one cache change starting at `cursor`. Returns
  // whether the sample is fragmented and how far the send got (Complete, or
  // Blocked with the cursor to resume from and the sockets that blocked).
  fn send_cache_change_from(
    &self,
    cc: &CacheChange,
    send_also_heartbeat: bool,
    target_reader_opt: Option<&RtpsReaderProxy>,
    cursor: SampleCursor,
    class: TrafficClass,
  ) -> (bool, SendProgress) {
    // First make sure that if the data is meant for a single reader only, we do
    // not accidentally send it to everyone.
    if let Some(single_reader_guid) = cc.write_options.to_single_reader() {
      match target_reader_opt {
        None => {
          error!(
            "Data is meant for the single reader {single_reader_guid:?} but a proxy for this \
             reader was not provided. Not sending anything."
          );
          return (false, SendProgress::Complete);
        }
        Some(target_reader) => {
          if single_reader_guid != target_reader.remote_reader_guid {
            error!(
              "We were asked to send data meant for the reader {single_reader_guid:?} to a \
               different reader {:?}. Not gonna happen.",
              target_reader.remote_reader_guid
            );
            return (false, SendProgress::Complete);
          }
        }
      }
    }

    let messages_to_send =
      FragmentationIter::new_resume(self, cc, target_reader_opt, send_also_heartbeat, cursor);
    let fragmentation_needed = messages_to_send.fragmentation_needed();

    // Send the messages, either to all readers or just one, stopping at the
    // first message that a socket could not accept.
    for (resume_cursor, msg) in messages_to_send {
      // convoy change 8: pushed user data waits for the pacing buckets; the
      // datagram is not sent, and the push resumes at it.
      if class == TrafficClass::Bulk
        && self.pacer.borrow().is_active()
        && cc.data_value.payload_size() > self.unpaced_up_to
      {
        let wait = self
          .pacer
          .borrow_mut()
          .admit(msg.datagram_len(), std::time::Instant::now());
        if !wait.is_zero() {
          return (
            fragmentation_needed,
            SendProgress::Paced {
              cursor: resume_cursor,
              wait,
            },
          );
        }
      }
      let blocked = match target_reader_opt {
        None => self.send_message_to_readers(
          DeliveryMode::Multicast,
          msg,
          &mut self.readers.values(),
          class,
        ),
        Some(reader_proxy) => self.send_message_to_readers(
          DeliveryMode::Unicast,
          msg,
          &mut std::iter::once(reader_proxy),
          class,
        ),
      };
      if !blocked.is_empty() {
        return (
          fragmentation_needed,
          SendProgress::Blocked {
            cursor: resume_cursor,
            blocked,
          },
        );
      }
    }
    (fragmentation_needed, SendProgress::Complete)
  }

  // --------------------------------------------------------------
  // --------------------------------------------------------------
  // --------------------------------------------------------------

  /// This is called periodically.
  ///
  /// Returns `true` if some matched reader still has unacknowledged data (i.e.
  /// a HEARTBEAT was sent to prompt repair), so the caller can reschedule the
  /// next periodic heartbeat sooner. Returns `false` when all readers are
  /// caught up.
  pub fn handle_heartbeat_tick(&mut self, is_manual_assertion: bool) -> bool {
    // Reliable Stateful Writer (that tracks Readers by ReaderProxy) will not set
    // the final flag.
    self.heartbeat_readers_behind(is_manual_assertion, false)
  }

  /// convoy change 88: whether a tail HEARTBEAT (change 32) may go with the
  /// final flag set, so that only readers that lack a sample answer it: when
  /// the writer's samples go to a multicast group and less than half its
  /// window is unacknowledged (the samples' own HEARTBEATs ask no sooner). The tail
  /// HEARTBEAT is there to reveal a lost last sample, and a reader missing one
  /// answers any HEARTBEAT; a reader that has everything has nothing to say
  /// that the writer needs before its samples ask at half the window. Every
  /// reader of the group answered every tail HEARTBEAT: at 64 lockstep agents
  /// on two cores a frame that ran twice as long as the writer's shortest drew
  /// one from most of the 64 state writers, and 63 answers to each.
  fn tail_heartbeat_may_be_final(&self) -> bool {
    if !self.pushes_to_group {
      return false;
    }
    self.unacked_through(self.announced_last_sn(None)) * 2 < self.piggyback_window()
  }

  /// A HEARTBEAT to the readers that lack something (convoy change 37), asking
  /// them to answer unless `final_flag`; false when none lacks anything.
  fn heartbeat_readers_behind(&mut self, is_manual_assertion: bool, final_flag: bool) -> bool {
    if self.like_stateless {
      info!(
        "Ignoring handling heartbeat tick in a stateless-like Writer, since it currently supports \
         only BestEffort QoS. topic={:?}",
        self.my_topic_name
      );
      return false;
    }
    // convoy change 36: a reader may have stopped answering since the last
    // ACKNACK; a writer waiting on it goes on.
    self.refresh_acked_frontier();
    let liveliness_flag = is_manual_assertion; // RTPS spec "8.3.7.5 Heartbeat"

    trace!(
      "heartbeat tick in topic {:?} have {} readers",
      self.topic_name(),
      self.readers.len()
    );

    let first_change = self.send_buffer.first_change_sequence_number();
    let last_change = self.announced_last_sn(None);

    if self
      .readers
      .values()
      .all(|rp| last_change < rp.all_acked_before)
    {
      trace!("heartbeat tick: all readers have all available data.");
      false
    } else {
      debug!(
        "Writer {:?} topic={:} HEARTBEAT {:?} to {:?}",
        self.guid().entity_id,
        self.topic_name(),
        first_change,
        last_change,
      );

      // In the volatile key exchange topic we cannot send to multiple readers by any
      // means, so we handle that separately.
      if self.entity_id() == EntityId::P2P_BUILTIN_PARTICIPANT_VOLATILE_SECURE_WRITER {
        // convoy change 65: each reader's HEARTBEAT names it (INFO_DST and the
        // reader id). CycloneDDS trusts the first sequence number of a key
        // exchange HEARTBEAT only when it is addressed to its reader; an
        // unaddressed first one makes it skip everything written before, and key
        // tokens written before its reader matched (a race with the end of the
        // handshake) were then never repaired, so no sample ever crossed.
        for rp in self.readers.values() {
          if last_change < rp.all_acked_before {
            // Everything we have has been acknowledged already. Do nothing.
          } else {
            let addressed = MessageBuilder::new()
              .dst_submessage(self.endianness, rp.remote_reader_guid.prefix)
              .ts_msg(self.endianness, Some(Timestamp::now()))
              .heartbeat_msg(
                self.entity_id(),
                first_change,
                last_change,
                self.next_heartbeat_count(),
                self.endianness,
                rp.remote_reader_guid.entity_id,
                final_flag,
                liveliness_flag,
              )
              .add_header_and_build(self.my_guid.prefix);
            self.send_control_to_readers(
              DeliveryMode::Unicast,
              addressed,
              &mut std::iter::once(rp),
            );
          }
        }
      } else {
        // the interface to .heartbeat_msg is silly: we give ref to ourself
        // and that function then queries us.
        let hb_message = MessageBuilder::new()
          .ts_msg(self.endianness, Some(Timestamp::now()))
          .heartbeat_msg(
            self.entity_id(), // from Writer
            first_change,
            last_change,
            self.next_heartbeat_count(),
            self.endianness,
            EntityId::UNKNOWN, // to Reader
            final_flag,
            liveliness_flag,
          )
          .add_header_and_build(self.my_guid.prefix);

        // convoy change 37: only to the readers that lack something. Each reader
        // that gets it must answer, and one that has everything answers with
        // nothing new: with 32 agents exchanging states the periodic and tail
        // HEARTBEATs of every state writer went to all 32 readers while one was
        // behind, and the answers were most of the traffic (48,000 datagrams a
        // lockstep frame). A reader of the same participant as one behind still
        // gets it (one datagram per destination) and answers, as before.
        self.send_control_to_readers(
          DeliveryMode::Multicast,
          hb_message,
          &mut self
            .readers
            .values()
            .filter(|rp| last_change >= rp.all_acked_before),
        );
      }
      true
    }
  }

  /// When receiving an ACKNACK Message indicating a Reader is missing some data
  /// samples, the Writer must respond by either sending the missing data
  /// samples, sending a GAP message when the sample is not relevant, or
  /// sending a HEARTBEAT message when the sample is no longer available
  pub fn handle_ack_nack(
    &mut self,
    reader_guid_prefix: GuidPrefix,
    ack_submessage: &AckSubmessage,
  ) {
    self.synced_with_fast_push(|w| w.handle_ack_nack_now(reader_guid_prefix, ack_submessage));
  }

  fn handle_ack_nack_now(
    &mut self,
    reader_guid_prefix: GuidPrefix,
    ack_submessage: &AckSubmessage,
  ) {
    // sanity check
    if !self.is_reliable() || self.like_stateless {
      // Stateless-like Writer currently supports only BestEffort QoS, so ignore
      // acknack also for it
      warn!(
        "Writer {:x?} is best effort or stateless-like! It should not handle acknack messages!",
        self.entity_id()
      );
      return;
    }

    match ack_submessage {
      AckSubmessage::AckNack(ref an) => {
        // Update the ReaderProxy
        let last_seq = self.send_buffer.last_change_sequence_number(); // to avoid borrow problems

        // sanity check requested sequence numbers
        if let Some(0) = an.reader_sn_state.iter().next().map(i64::from) {
          warn!("Request for SN zero! : {an:?}");
        }

        let reader_guid = GUID::new(reader_guid_prefix, an.reader_id);

        // sanity check
        if an.reader_sn_state.base() < SequenceNumber::from(1) {
          // This check is based on RTPS v2.5 Spec
          // Section "8.3.5.5 SequenceNumberSet" and
          // Section "8.3.8.1.3 Validity".
          // But apparently some RTPS implementations send ACKNACK with
          // reader_sn_state.base = 0 to indicate they have matched the writer,
          // so seeing these once per new writer should be ok.
          debug!(
            "ACKNACK SequenceNumberSet minimum must be >= 1, got {:?} from {:?} topic {:?}",
            an.reader_sn_state.base(),
            reader_guid,
            self.topic_name()
          );
        }

        let my_topic = self.my_topic_name.clone(); // for debugging

        let mut start_repair = false;
        let mut advanced = false;
        let mut follows_stream = false;
        let is_volatile = self.qos_policies.is_volatile();
        let pushed_or_pushing = self.pushed_or_pushing();

        if let Some(reader_proxy) = self.lookup_reader_proxy_mut(reader_guid) {
          if reader_proxy.last_acknack_count == Some(an.count) {
            trace!(
              "Ignoring duplicate ACKNACK count={} from {:?} topic={:?}",
              an.count,
              reader_guid,
              my_topic
            );
            return;
          }
          // convoy change 16: a reader's first ACKNACK (its preemptive one on
          // matching) never counts as following the stream.
          let first_acknack = reader_proxy.last_acknack_count.is_none();
          follows_stream = !first_acknack;
          // convoy change 23
          let newer_count = reader_proxy
            .last_acknack_count
            .is_some_and(|last| an.count > last);
          reader_proxy.last_acknack_count = Some(an.count);
          reader_proxy.heard_from_at = std::time::Instant::now();
          // convoy change 94: a reader answers first once it has matched this
          // writer; what was pushed before then it lost and must have repaired.
          // Until it has, it is still joining and holds back no one.
          if first_acknack {
            reader_proxy.joins_after = pushed_or_pushing;
          }

          // Mark requested SNs as "unsent changes"

          //TODO: We should drop SNs in "pending gap" from unsent changes
          let acked_before = reader_proxy.all_acked_before;
          reader_proxy.handle_ack_nack(ack_submessage, last_seq, newer_count, is_volatile);
          // convoy change 16: whether this ACKNACK moved the acknowledgement on.
          advanced = !first_acknack && reader_proxy.all_acked_before > acked_before;

          // Sanity Check: if the reader asked for something we did not even advertise
          // yet. TODO: This
          // checks the stored unset_changes, not presently received ACKNACK.
          if cfg!(debug_assertions) {
            if let Some(req_high) = reader_proxy.unsent_changes_iter().next_back() {
              if req_high > last_seq {
                warn!(
                  "ReaderProxy {:?} thinks we need to send {:?} but I have only up to {:?}",
                  reader_proxy.remote_reader_guid,
                  reader_proxy.unsent_changes_debug(),
                  last_seq
                );
              }
            }
            // Sanity Check 2
            if an.reader_sn_state.base() > last_seq.plus_1() {
              warn!(
                "ACKNACK from {:?} acks {:?}, but I have only up to {:?} count={:?} topic={:?}",
                reader_proxy.remote_reader_guid, an.reader_sn_state, last_seq, an.count, my_topic
              );
            }
            // Sanity check 3
            if let Some(max_req_sn) = an.reader_sn_state.iter().next_back() {
              if max_req_sn > last_seq {
                warn!(
                  "ACKNACK from {:?} requests {:?} but I have only up to {:?}",
                  reader_proxy.remote_reader_guid,
                  an.reader_sn_state.iter().collect::<Vec<SequenceNumber>>(),
                  last_seq
                );
              }
            }
          }

          // if we cannot send more data, we are done.
          // This is to prevent empty "repair data" messages from being sent.
          if reader_proxy.all_acked_before > last_seq {
            reader_proxy.repair_mode = false;
          } else if reader_proxy.first_unsent_change().is_some()
            || !reader_proxy.get_pending_gap().is_empty()
          {
            reader_proxy.repair_mode = true;
            start_repair = true;
          }
          // convoy change 55: otherwise the reader acknowledged everything up
          // to samples written since its ACKNACK left (a lockstep agent's
          // state answered by the coordinator's ACKNACK riding on the next
          // tick) and asked for nothing: no round, so no timer to wake for
          // 5 ms later with nothing to send. A sample that is lost after all
          // is NACKed after the next HEARTBEAT, as before.
        } // if have reader_proxy

        // Every Writer, built-in or user, answers after nack_response_delay
        // (RTPS v2.5 Section 8.4.7.1.1), so that ACKNACKs arriving close
        // together are served by one repair round. If a round is already
        // pending, it also serves what this ACKNACK requested.
        if start_repair {
          self.schedule_repair_data(reader_guid, self.nack_response_delay);
        }
        if is_volatile {
          self.repair_rather_than_gap(reader_guid);
        }

        // See if we need to respond by GAP message
        if let Some(reader_proxy) = self.readers.get(&reader_guid) {
          if !reader_proxy.get_pending_gap().is_empty() {
            let gap_message = MessageBuilder::new()
              .gap_msg(
                reader_proxy.get_pending_gap(),
                self.my_guid.entity_id,
                self.endianness,
                reader_guid,
              )
              .add_header_and_build(self.my_guid.prefix);
            self.send_control_to_readers(
              DeliveryMode::Unicast,
              gap_message,
              &mut std::iter::once(reader_proxy),
            );
          }

          // An ACKNACK that requests nothing although the reader has not acknowledged
          // everything means the reader does not know what we have, typically a
          // preemptive ACKNACK from a reader that matched us after our HEARTBEAT.
          // Answer now instead of at the next heartbeat period.
          // convoy change 16: ... but not when the ACKNACK moved the
          // acknowledgement on: that reader follows the stream, and the newer
          // samples on their way carry heartbeats of their own. (An ACKNACK for
          // sample n that crossed sample n+1 drew an extra HEARTBEAT, and with
          // it an extra ACKNACK, on nearly every sample of a steady stream.)
          let announced = self.announced_last_sn(None);
          // convoy change 70: ... nor when all it lacks is the newest sample,
          // pushed less than a tail HEARTBEAT's delay ago: that one is on its
          // way with a HEARTBEAT of its own, and the tail HEARTBEAT follows.
          // A reader's answer to the previous sample's HEARTBEAT that crossed
          // the next sample drew a HEARTBEAT and another ACKNACK: 64 lockstep
          // agents in peer exchange on two cores sent 33 such pairs per agent
          // a frame.
          let pushing = self.last_push_at.elapsed() < self.tail_heartbeat_delay();
          let newest_in_flight = reader_proxy.all_acked_before == announced && pushing;
          // convoy change 91: ... nor, for a writer to a multicast group, when a
          // reader that follows the stream (not its first ACKNACK) answers late
          // while the writer goes on pushing: the answers to a group writer wait
          // for a ride (change 74), up to two of the writer's periods, so one
          // often lacked the two newest samples, and every such answer drew a
          // HEARTBEAT by unicast and another answer (27 a frame at 64 lockstep
          // agents). The samples' own HEARTBEATs tell the reader what there is.
          let late_answer_to_group = self.pushes_to_group && follows_stream && pushing;
          if an.reader_sn_state.iter().next().is_none()
            && reader_proxy.all_acked_before <= announced
            && !advanced
            && !newest_in_flight
            && !late_answer_to_group
          {
            let hb_message = MessageBuilder::new()
              .ts_msg(self.endianness, Some(Timestamp::now()))
              .heartbeat_msg(
                self.entity_id(),
                self.send_buffer.first_change_sequence_number(),
                announced,
                self.next_heartbeat_count(),
                self.endianness,
                reader_guid.entity_id,
                false, // final_flag: request ACKNACK
                false, // liveliness_flag
              )
              .add_header_and_build(self.my_guid.prefix);
            self.send_control_to_readers(
              DeliveryMode::Unicast,
              hb_message,
              &mut std::iter::once(reader_proxy),
            );
          }
        }
      } // AckNack
      AckSubmessage::NackFrag(ref nackfrag) => {
        // NackFrag is negative acknowledgement only, i.e. requesting missing fragments.
        let reader_guid = GUID::new(reader_guid_prefix, nackfrag.reader_id);
        let not_pushed_from = self.frags_not_pushed_from(nackfrag.writer_sn);
        let Some(reader_proxy) = self.lookup_reader_proxy_mut(reader_guid) else {
          return;
        };
        if reader_proxy.last_nackfrag_count == Some(nackfrag.count) {
          trace!(
            "Ignoring duplicate NACK_FRAG count={} from {:?}",
            nackfrag.count,
            reader_guid
          );
          return;
        }
        reader_proxy.last_nackfrag_count = Some(nackfrag.count);
        // convoy change 36: a reader asking for fragments is answering.
        reader_proxy.heard_from_at = std::time::Instant::now();
        if reader_proxy.get_pending_gap().contains(&nackfrag.writer_sn) {
          // convoy change 26: a sample we announce to this reader as a GAP is not
          // repaired for it (it holds only fragments sent before it matched).
          return;
        }
        reader_proxy.mark_frags_requested(
          nackfrag.writer_sn,
          &nackfrag.fragment_number_state,
          not_pushed_from,
          std::time::Instant::now(),
        );
        self.schedule_repair_frags(reader_guid, self.nackfrag_response_delay);
      }
    }

    // Acknowledgement frontier may have advanced: push it into the shared send
    // buffer so any back-pressured producer (or `wait_for_acknowledgments`
    // waiter) can make progress.
    self.refresh_acked_frontier();
  }

  // Recompute the reliable acknowledgement frontier (the smallest
  // `all_acked_before` over all matched reliable readers) and publish it to the
  // shared send buffer. Called whenever acknowledgements arrive or the set of
  // matched readers changes. `None` means there are no reliable readers, so the
  // writer is never back-pressured.
  //
  // A reader proxy reports `acked_up_to_before == 0` until its first ACKNACK;
  // `WriterSendBuffer::set_acked_frontier` reads that as 1, since sequence
  // numbers start at 1.
  //
  // TODO: On first match the first missed sample is only recovered via
  // periodic-heartbeat repair, which can take ~1 s under load.
  fn refresh_acked_frontier(&self) {
    if self.like_stateless {
      // Stateless-like writer is BestEffort: never throttle, never wait.
      self.send_buffer.set_acked_frontier(None);
      return;
    }
    let now = std::time::Instant::now();
    let frontier = self
      .readers
      .values()
      .filter(|rp| rp.qos().is_reliable() && !self.stopped_reader(rp, now))
      .map(RtpsReaderProxy::acked_up_to_before)
      .min();
    self.send_buffer.set_acked_frontier(frontier);
  }

  /// convoy change 36: while the application waits for room in a KEEP_LAST
  /// window, look again `after` for readers that stopped answering (a writer
  /// blocked on them pushes nothing, so no HEARTBEAT would come soon).
  fn watch_waiting_admission(&mut self, after: std::time::Duration) {
    if self.stopped_reader_check_scheduled
      || !self.send_buffer.admission_waiting()
      || !self.passes_stopped_readers()
    {
      return;
    }
    self.stopped_reader_check_scheduled = true;
    self.schedule_timed_event(after, TimedEvent::StoppedReaderCheck);
  }

  /// convoy change 81: a reader matched by this VOLATILE writer after it had
  /// pushed samples is told, by a GAP, that those are not for it (a late
  /// joiner). But a reader that acknowledges past the oldest sample this
  /// writer still holds has been receiving them: through the multicast group,
  /// before its SEDP announcement reached this participant. What it asks for
  /// from there on is repaired, not GAPed. The GAP told a lockstep agent that
  /// the peer state it waited for was irrelevant; it never got it, and 64
  /// agent processes stood still until the barrier timeout (10 s).
  fn repair_rather_than_gap(&mut self, reader_guid: GUID) {
    let Some(reader) = self.readers.get(&reader_guid) else {
      return;
    };
    if reader.get_pending_gap().is_empty()
      || reader.all_acked_before <= self.send_buffer.first_change_sequence_number()
    {
      return;
    }
    // Only samples still held, and none meant for another reader alone.
    let repairable: Vec<SequenceNumber> = reader
      .get_pending_gap()
      .iter()
      .copied()
      .filter(|sn| {
        self
          .send_buffer
          .get_by_sn(*sn)
          .is_some_and(|cc| cc.write_options.to_single_reader().is_none())
      })
      .collect();
    if let Some(reader) = self.readers.get_mut(&reader_guid) {
      reader.remove_pending_gap(&repairable);
    }
  }

  /// convoy change 36: a reader of this KEEP_LAST writer that has stopped
  /// answering (`RtpsReaderProxy::stopped_answering`) holds back neither
  /// admission nor the push (change 14's window): KEEP_LAST promises a writer
  /// that never waits on its history, and a reader whose process is frozen or
  /// dead (matched until its lease lapses, seconds) stalled every other reader
  /// of the writer that long. A reader that answers keeps its back-pressure, so
  /// a slow but live reader still slows the writer instead of losing samples.
  /// The kept history (the History depth) is still repaired to a reader that
  /// comes back; older samples it missed are GAPs.
  ///
  /// convoy change 94: nor does a reader still joining
  /// (`RtpsReaderProxy::joining`). This side matches a new reader when its
  /// SEDP announcement arrives; the reader's side matches this writer when
  /// this writer's arrives, which may be much later on a loaded machine, and
  /// until then it drops what this writer sends and answers nothing. A new
  /// reader also starts with nothing acknowledged, so the window shut at its
  /// match: every reader that joined a running 1 kHz stream stalled its writer
  /// 32-56 ms (until the tail HEARTBEAT drew its answer), and past
  /// `max_blocking_time` writes failed, lost to every reader (CI: the sensor
  /// node dropped a sample as a test's readers joined). Once it has
  /// acknowledged what was pushed before its first ACKNACK (when it had
  /// matched this writer: what came before it dropped, and gets repaired) it
  /// holds the window as any reader; what it misses before then is what a
  /// KEEP_LAST writer replaced.
  fn stopped_reader(&self, reader: &RtpsReaderProxy, now: std::time::Instant) -> bool {
    self.passes_stopped_readers()
      && (reader.joining()
        || reader.stopped_answering(self.last_sent, now, STOPPED_READER_PATIENCE))
  }

  /// convoy change 36: user KEEP_LAST writers go on without readers that
  /// stopped answering; KEEP_ALL and built-in writers wait for every reader.
  fn passes_stopped_readers(&self) -> bool {
    matches!(self.qos_policies.history, Some(History::KeepLast { .. }))
      && self.my_guid.entity_id.kind().is_user_defined()
  }

  // Send out missing data

  fn handle_repair_data_send(&mut self, to_reader: GUID) {
    if self.like_stateless {
      warn!(
        "Not sending repair data in a stateless-like Writer, since it currently supports only \
         BestEffort behavior. topic={:?}",
        self.my_topic_name
      );
      return;
    }
    // Note: here we remove the reader from our reader map temporarily.
    // Then we can mutate both the reader and other fields in self.
    // Doing a .get_mut() on the reader map would make self immutable.
    if let Some(mut reader_proxy) = self.readers.remove(&to_reader) {
      // We use a worker function to ensure that afterwards we can insert the
      // reader_proxy back. This technique ensures that all return paths lead to
      // re-insertion.
      let frags_queued = self.handle_repair_data_send_worker(&mut reader_proxy);
      // insert reader back
      if let Some(rp) = self
        .readers
        .insert(reader_proxy.remote_reader_guid, reader_proxy)
      {
        // This should really not happen.
        error!("Reader proxy was duplicated somehow??? {rp:?}");
      }
      if frags_queued {
        self.schedule_repair_frags(to_reader, std::time::Duration::ZERO);
      }
    }
  }

  // Returns the pacing wait when the round stopped for it (convoy change 10).
  fn handle_repair_frags_send(&mut self, to_reader: GUID) -> Option<std::time::Duration> {
    if self.like_stateless {
      warn!(
        "Not sending repair frags in a stateless-like Writer, since it currently supports only \
         BestEffort behavior. topic={:?}",
        self.my_topic_name
      );
      return None;
    }

    // see similar function above
    if let Some(mut reader_proxy) = self.readers.remove(&to_reader) {
      let paced = self.handle_repair_frags_send_worker(&mut reader_proxy);
      if let Some(rp) = self
        .readers
        .insert(reader_proxy.remote_reader_guid, reader_proxy)
      {
        // this is an internal logic error, or maybe out of memory
        error!("Reader proxy was duplicated somehow??? (frags) {rp:?}");
      }
      return paced;
    }
    None
  }

  // One repair round for a reader: send its unsent changes, lowest first, until
  // REPAIR_BATCH_MAX_BYTES have gone out (at least one change) or nothing is
  // left, which ends repair mode. GAPs and unfragmented DATA are packed into
  // datagrams of the reader's path-MTU budget; a fragmented sample goes out on
  // its own.
  // Returns true when a fragmented sample was queued for the fragment repair
  // (convoy change 13), which the caller then schedules.
  fn handle_repair_data_send_worker(&mut self, reader_proxy: &mut RtpsReaderProxy) -> bool {
    // Note: The reader_proxy is now removed from readers map
    let reader_guid = reader_proxy.remote_reader_guid;
    let mut frags_queued = false;

    debug!(
      "Repair data send to {reader_guid:?}. ReaderProxy Unsent changes: {:?}",
      reader_proxy.unsent_changes_debug()
    );

    // Security encodes each message for its readers as a whole, so with
    // security on every sample keeps a message of its own.
    let coalesce = self.security_plugins.is_none();
    let mut datagram: Option<MessageBuilder> = None;
    // Whether an INFO_TS in `datagram` still applies to the next DATA.
    let mut ts_active = false;
    let mut pending_gap_sent = false;
    let mut round_bytes = 0;

    while round_bytes < REPAIR_BATCH_MAX_BYTES {
      let Some(unsent_sn) = reader_proxy.first_unsent_change() else {
        break;
      };
      let first_available = self.send_buffer.first_change_sequence_number();
      let pending_gaps = reader_proxy.get_pending_gap().clone();

      let mut gap = MessageBuilder::new();
      let mut cache_change = None;
      if unsent_sn < first_available {
        // Reader is requesting older than what we actually have. Notify that they are
        // gone.
        debug!(
          "Reader {reader_guid:?} requested too old data {unsent_sn:?}. I have only from \
           {first_available:?}. Topic {:?}",
          self.my_topic_name
        );
        gap = gap.gap_msg_before(
          first_available,
          self.entity_id(),
          self.endianness,
          reader_guid,
        );
        reader_proxy.remove_from_unsent_set_all_before(first_available);
      } else if !pending_gaps.contains(&unsent_sn) {
        match self.send_buffer.get_by_sn(unsent_sn) {
          Some(cc) => cache_change = Some(cc),
          None => {
            // we are running out of excuses
            error!(
              "handle_repair_data_send_worker {:?} seq.number {:?} missing. first_change={:?}",
              self.my_guid, unsent_sn, first_available
            );
            gap = gap.gap_msg(
              &BTreeSet::from([unsent_sn]),
              self.entity_id(),
              self.endianness,
              reader_guid,
            );
            reader_proxy.mark_change_sent(unsent_sn);
          }
        }
      }
      // SNs we are not going to send to this reader: announce them once per
      // round, together with the first change that goes out.
      if !pending_gaps.is_empty() && (!pending_gap_sent || pending_gaps.contains(&unsent_sn)) {
        gap = gap.gap_msg(
          &pending_gaps,
          self.entity_id(),
          self.endianness,
          reader_guid,
        );
        for sn in &pending_gaps {
          reader_proxy.mark_change_sent(*sn);
        }
        pending_gap_sent = true;
      }
      let gap_len = gap.submessage_bytes_len();
      if gap_len > 0 {
        round_bytes += gap_len;
        self.add_to_repair_datagram(&mut datagram, gap, 0, reader_proxy);
      }

      let Some(cc) = cache_change else {
        continue;
      };
      let payload_size = cc.data_value.payload_size();
      if coalesce && payload_size > self.max_unfragmented_serialized_payload(Some(reader_proxy)) {
        // convoy change 13: a fragmented sample requested whole goes to the
        // fragment repair, which packs it into path-MTU datagrams and paces
        // them. Sent here at once, it was a burst of the whole sample through
        // the unpaced control queue, overflowing the very reader that had just
        // lost datagrams.
        let (num_frags, _) = self.num_frags_and_frag_size(payload_size);
        reader_proxy.request_all_frags(unsent_sn, num_frags);
        frags_queued = true;
        round_bytes += payload_size + DATA_SUBMESSAGE_OVERHEAD;
      } else if !coalesce {
        // Keep the order: whatever is packed so far goes first.
        self.flush_repair_datagram(&mut datagram, reader_proxy);
        ts_active = false;
        // This emits the whole sample, including every fragment when it does
        // not fit one datagram. A later NACK_FRAG is what arms SendRepairFrags.
        self.send_cache_change(&cc, false, Some(reader_proxy));
        round_bytes += payload_size + DATA_SUBMESSAGE_OVERHEAD;
      } else {
        let source_timestamp = cc.write_options.source_timestamp();
        let mut data = MessageBuilder::new();
        if source_timestamp.is_some() {
          data = data.ts_msg(self.endianness, source_timestamp);
        }
        data = data.data_msg(
          &cc,
          reader_guid.entity_id,
          self.my_guid,
          self.endianness,
          self.security_plugins.as_ref(),
        );
        // An INFO_TS applies to every following DATA in the datagram, so a DATA
        // without a timestamp after one with must invalidate it.
        let invalidate_len = if source_timestamp.is_none() && ts_active {
          SUBMESSAGE_INFO_TS_INVALIDATE_SIZE
        } else {
          0
        };
        round_bytes += data.submessage_bytes_len();
        self.add_to_repair_datagram(&mut datagram, data, invalidate_len, reader_proxy);
        ts_active = source_timestamp.is_some();
      }
      reader_proxy.mark_change_sent(unsent_sn);
    }

    self.flush_repair_datagram(&mut datagram, reader_proxy);
    if reader_proxy.first_unsent_change().is_none() {
      reader_proxy.repair_mode = false;
    }
    frags_queued
  } // fn

  // Append `part` to the repair datagram being built for `reader_proxy`, first
  // sending the datagram if `part` (plus `invalidate_len` bytes for an INFO_TS
  // invalidation) would not fit the reader's path-MTU budget. A fresh datagram
  // starts with INFO_DST and takes `part` even if it alone is too large. When
  // the part joins an existing datagram and `invalidate_len > 0`, an
  // invalidating INFO_TS goes in front of it.
  fn add_to_repair_datagram(
    &self,
    datagram: &mut Option<MessageBuilder>,
    part: MessageBuilder,
    invalidate_len: usize,
    reader_proxy: &RtpsReaderProxy,
  ) {
    let fits = datagram.as_ref().is_some_and(|d| {
      d.len_serialized() + invalidate_len + part.submessage_bytes_len()
        <= reader_proxy.max_datagram_payload()
    });
    if !fits {
      self.flush_repair_datagram(datagram, reader_proxy);
    }
    let started_new = datagram.is_none();
    let d = datagram.get_or_insert_with(|| {
      MessageBuilder::new().dst_submessage(self.endianness, reader_proxy.remote_reader_guid.prefix)
    });
    if !started_new && invalidate_len > 0 {
      d.append(MessageBuilder::new().ts_msg(self.endianness, None));
    }
    d.append(part);
  }

  fn flush_repair_datagram(
    &self,
    datagram: &mut Option<MessageBuilder>,
    reader_proxy: &RtpsReaderProxy,
  ) {
    if let Some(d) = datagram.take() {
      self.send_control_to_readers(
        DeliveryMode::Unicast,
        d.add_header_and_build(self.my_guid.prefix),
        &mut std::iter::once(reader_proxy),
      );
    }
  }

  // convoy change 10: answers a reader's NACK_FRAGs with only the fragments it
  // asked for, packed as runs of consecutive fragments into DATAFRAG
  // submessages and those into datagrams of the reader's path-MTU budget (64 KB
  // on loopback), up to REPAIR_FRAGS_ROUND_BYTES a round and charged to the
  // pacing buckets like pushed data. Returns the pacing wait when a bucket ran
  // dry before the round was done. (rustdds sent one fragment per datagram and 8
  // a round: ~1 MB/s of repair, so a large sample missing a datagram took
  // seconds to complete and was usually replaced before it did.)
  fn handle_repair_frags_send_worker(
    &mut self,
    reader_proxy: &mut RtpsReaderProxy, /* This is mutable proxy temporarily detached from the
                                         * set of reader proxies */
  ) -> Option<std::time::Duration> {
    let reader_guid = reader_proxy.remote_reader_guid;
    let budget = reader_proxy.max_datagram_payload();
    let fragment_size = self.fragment_size as u16;
    let mut round_bytes = 0usize;
    let mut datagram = MessageBuilder::new();
    let mut pending_frags: Vec<(SequenceNumber, u32, u32)> = Vec::new();

    // convoy change 27: while the pacing bucket cannot take a full datagram,
    // wait before walking the requests and building datagrams that could not go.
    let wait = self
      .pacer
      .borrow_mut()
      .ready_in(budget, std::time::Instant::now());
    if !wait.is_zero() {
      return Some(wait);
    }

    for (seq_num, first, count) in reader_proxy.requested_frag_runs() {
      let Some(cache_change) = self.send_buffer.get_by_sn(seq_num) else {
        // Replaced (KEEP_LAST) or removed: nothing to resend. The reader learns
        // it is gone from the next HEARTBEAT, whose first sequence number has
        // moved past it.
        debug!("repair frags: {seq_num:?} is no longer in the send buffer, topic={:?}", self.my_topic_name);
        reader_proxy.mark_frags_sent(seq_num, first, count, None);
        continue;
      };
      if let Some(single_reader_guid) = cache_change.write_options.to_single_reader() {
        if single_reader_guid != reader_guid {
          error!(
            "We were asked to send datafrags meant for the reader {single_reader_guid:?} to a \
             different reader {reader_guid:?}. Not gonna happen."
          );
          return None;
        }
      }
      let data_size = cache_change.data_value.payload_size();
      let num_frags = (data_size as u32).div_ceil(u32::from(fragment_size)).max(1);
      let mut frag = first;
      let end = (first + count).min(num_frags + 1);
      while frag < end {
        let k = frags_per_datafrag(datagram.len_serialized(), budget, frag, num_frags, fragment_size, data_size)
          .min(end - frag);
        let submessage = MessageBuilder::new().data_frag_msg(
          &cache_change,
          reader_guid.entity_id,
          self.my_guid,
          FragmentNumber::new(frag),
          k as u16,
          fragment_size,
          data_size as u32,
          self.endianness,
          self.security_plugins.as_ref(),
        );
        if !pending_frags.is_empty()
          && datagram.len_serialized() + submessage.submessage_bytes_len() > budget
        {
          // The datagram is full: send it (pacing permitting) and start another.
          match self.flush_repair_frags(reader_proxy, &mut datagram, &mut pending_frags) {
            Ok(bytes) => round_bytes += bytes,
            Err(wait) => return Some(wait),
          }
          if round_bytes >= REPAIR_FRAGS_ROUND_BYTES {
            return None;
          }
          continue; // rebuild this run's submessage for the empty datagram
        }
        datagram.append(submessage);
        pending_frags.push((seq_num, frag, k));
        frag += k;
      }
    }
    match self.flush_repair_frags(reader_proxy, &mut datagram, &mut pending_frags) {
      Ok(_) => {
        // Everything asked for went out. A NACK_FRAG names at most 256
        // fragments, so ask the reader now what it still lacks (a HEARTBEAT
        // wants an answer) instead of waiting for the next periodic one: a
        // large sample missing many datagrams is repaired in round trips, not
        // in heartbeat periods.
        if !reader_proxy.repair_frags_requested() {
          let hb_message = MessageBuilder::new()
            .heartbeat_msg(
              self.entity_id(),
              self.send_buffer.first_change_sequence_number(),
              self.announced_last_sn(None),
              self.next_heartbeat_count(),
              self.endianness,
              reader_guid.entity_id,
              false, // final_flag: request ACKNACK / NACK_FRAG
              false, // liveliness_flag
            )
            .add_header_and_build(self.my_guid.prefix);
          self.send_control_to_readers(
            DeliveryMode::Unicast,
            hb_message,
            &mut std::iter::once(&*reader_proxy),
          );
        }
        None
      }
      Err(wait) => Some(wait),
    }
  }

  // convoy change 10: sends one repair datagram of DATAFRAGs to the reader,
  // unless a pacing bucket says to wait (Err(wait), nothing sent or marked).
  fn flush_repair_frags(
    &mut self,
    reader_proxy: &mut RtpsReaderProxy,
    datagram: &mut MessageBuilder,
    pending_frags: &mut Vec<(SequenceNumber, u32, u32)>,
  ) -> Result<usize, std::time::Duration> {
    if pending_frags.is_empty() {
      return Ok(0);
    }
    let bytes = datagram.len_serialized();
    let wait = self
      .pacer
      .borrow_mut()
      .ready_in(bytes, std::time::Instant::now());
    if !wait.is_zero() {
      *datagram = MessageBuilder::new();
      pending_frags.clear();
      return Err(wait);
    }
    self.pacer.borrow_mut().charge(bytes);
    let message = std::mem::take(datagram).add_header_and_build(self.my_guid.prefix);
    // Repair frags must reach the reader: the never-dropped Control queue
    // (dropping them on WouldBlock livelocks under congestion).
    let _blocked = self.send_message_to_readers(
      DeliveryMode::Unicast,
      message,
      &mut std::iter::once(&*reader_proxy),
      TrafficClass::Control,
    );
    let now = std::time::Instant::now();
    for (seq_num, first, count) in pending_frags.drain(..) {
      reader_proxy.mark_frags_sent(seq_num, first, count, Some(now));
    }
    Ok(bytes)
  }

  /// Removes permanently cacheChanges from DDSCache.
  /// CacheChanges can be safely removed only if they are acked by all readers.
  /// (Reliable) Depth is QoS policy History depth.
  /// Returns SequenceNumbers of removed CacheChanges
  /// This is called repeatedly by handle_cache_cleaning action.
  fn remove_all_acked_changes_but_keep_depth(
    &mut self,
    depth: Option<usize>,
    resource_limit: usize,
  ) {
    let first_keeper = if !self.like_stateless {
      // Regular stateful writer behavior
      // All readers have acked up to this point (SequenceNumber)
      let acked_by_all_readers = self
        .readers
        .values()
        .map(RtpsReaderProxy::acked_up_to_before)
        .min()
        .unwrap_or_else(SequenceNumber::zero);
      // If all readers have acked all up to before 5, and depth is 5, we need
      // to keep samples 0..4, i.e. from acked_up_to_before - depth .
      let depth_keeper = if let Some(depth) = depth {
        max(
          acked_by_all_readers - SequenceNumber::from(depth),
          self.send_buffer.first_change_sequence_number(),
        )
      } else {
        // try to keep all
        self.send_buffer.first_change_sequence_number()
      };
      // Never evict samples that some matched (reliable) reader has not yet
      // acknowledged: clamp the keeper to at most the all-acked point so that
      // unacknowledged samples remain available for repair. The resource-limit
      // backstop below still bounds memory if a reader falls hopelessly behind.
      min(depth_keeper, acked_by_all_readers)
    } else {
      // Stateless-like writer currently supports only BestEffort behavior, so here we
      // make it explicit that it does not care about acked sequence numbers
      let depth = depth.unwrap_or(0);
      max(
        self.send_buffer.last_change_sequence_number() - SequenceNumber::from(depth),
        self.send_buffer.first_change_sequence_number(),
      )
    };
    // Memory-safety backstop: never retain more than `resource_limit` samples,
    // even if that forces eviction of still-unacknowledged data.
    let first_keeper = max(
      max(
        first_keeper,
        self.send_buffer.last_change_sequence_number() - SequenceNumber::from(resource_limit),
      ),
      SequenceNumber::zero(),
    );
    debug!(
      "WriterSendBuffer: cleaning before {first_keeper:?} topic={:?}",
      self.topic_name()
    );
    // actual cleaning
    self.send_buffer.remove_changes_before(first_keeper);
  }

  // convoy change 17: whether the HEARTBEAT that goes with pushed sample `sn`
  // asks readers to answer (final flag clear). Readers answered every sample;
  // now they do when the sample is fragmented (large samples are acknowledged
  // one by one: the in-flight window of change 14 waits on that), when half
  // the history window is unacknowledged, and on every fourth sample. A reader
  // missing something answers any HEARTBEAT anyway, final flag or not.
  fn piggyback_wants_reply(&self, sn: SequenceNumber, fragmented: bool) -> bool {
    if fragmented {
      return true;
    }
    let window = self.piggyback_window();
    asks_for_answer(self.unacked_through(sn), window, sn, self.pushes_to_group)
  }

  /// The samples up to `sn` that some reader has not acknowledged (counted from
  /// the reader furthest behind; `sn` itself included).
  fn unacked_through(&self, sn: SequenceNumber) -> i64 {
    let oldest_unacked = self
      .readers
      .values()
      .map(|rp| rp.all_acked_before)
      .min()
      .unwrap_or(sn);
    i64::from(sn) - i64::from(oldest_unacked) + 1
  }

  /// change 17: the samples a piggybacked HEARTBEAT counts against: half of
  /// them unacknowledged and it asks for an answer. The History depth, or 16.
  fn piggyback_window(&self) -> i64 {
    match self.qos_policies.history {
      Some(History::KeepLast { depth }) => i64::from(depth.max(1)),
      _ => 16,
    }
  }

  // convoy change 11: the last sequence number a HEARTBEAT announces. A push
  // mode writer announces only samples it has pushed out in full (plus
  // `just_sent`, the sample whose trailing heartbeat this is): announcing one
  // still on its way (a large paced sample takes milliseconds) made readers
  // NACK its fragments in flight and the writer resend them, doubling the load
  // exactly when it was highest.
  fn announced_last_sn(&self, just_sent: Option<SequenceNumber>) -> SequenceNumber {
    let last_change = self.send_buffer.last_change_sequence_number();
    if !self.push_mode {
      return last_change;
    }
    let pushed = just_sent.map_or(self.last_sent, |sn| max(sn, self.last_sent));
    // Never below first - 1 (the "nothing available" announcement).
    let nothing = self.send_buffer.first_change_sequence_number() - SequenceNumber::from(1);
    max(min(last_change, pushed), nothing)
  }

  pub(crate) fn next_heartbeat_count(&self) -> i32 {
    // convoy change 35: shared with the application thread's pushes.
    self.send_buffer.fast_push().next_heartbeat_count()
  }

  #[cfg(feature = "security")]
  fn security_encode(
    &self,
    message: Message,
    readers: &[&RtpsReaderProxy],
  ) -> SecurityResult<Message> {
    // If we have security plugins, use them, otherwise pass through
    if let Some(security_plugins_handle) = &self.security_plugins {
      // Get the source and destination GUIDs
      let source_guid = self.guid();
      let destination_guid_list: Vec<GUID> = readers
        .iter()
        .map(|reader_proxy| reader_proxy.remote_reader_guid)
        .collect();
      // Destructure
      let Message {
        header,
        submessages,
      } = message;

      // Encode submessages
      SecurityResult::<Vec<Vec<Submessage>>>::from_iter(submessages.iter().map(|submessage| {
        security_plugins_handle
          .get_plugins()
          .encode_datawriter_submessage(submessage.clone(), &source_guid, &destination_guid_list)
          // Convert each encoding output to a Vec of 1 or 3 submessages
          .map(Vec::from)
      }))
      // Flatten and convert back to Message
      .map(|encoded_submessages| Message {
        header,
        submessages: encoded_submessages.concat(),
      })
      // Encode message
      .and_then(|message| {
        // Convert GUIDs to GuidPrefixes
        let source_guid_prefix = source_guid.prefix;
        let destination_guid_prefix_list: Vec<GuidPrefix> = destination_guid_list
          .iter()
          .map(|guid| guid.prefix)
          .collect();
        // Encode message
        security_plugins_handle.get_plugins().encode_message(
          message,
          &source_guid_prefix,
          &destination_guid_prefix_list,
        )
      })
    } else {
      Ok(message)
    }
  }

  // nonblocking-transmit: `class` selects the queueing policy. `Control`
  // datagrams go through the never-dropped per-socket control queue; `Bulk`
  // datagrams are attempted non-blocking and the sockets that returned
  // WouldBlock are returned so the caller can stop and arm write readiness.
  // Returns the set of blocked sockets (always empty for `Control`).
  fn send_message_to_readers(
    &self,
    preferred_mode: DeliveryMode,
    message: Message,
    readers: &mut dyn Iterator<Item = &RtpsReaderProxy>,
    class: TrafficClass,
  ) -> BTreeSet<SocketId> {
    // Interface-aware transmit (see src/rtps/transmit_design.md): each reader
    // carries a pre-resolved `SendRoute`. When the route is known we emit a
    // single datagram per distinct destination (`RouteKey`), targeting one
    // interface for multicast. When the route is unknown/ambiguous we fall back
    // to the legacy path (send to every advertised locator on every interface)
    // so reachability is preserved.

    // The readers, materialized: `security_encode` takes a slice, and a shared
    // multicast group (convoy change 69) is chosen among them.
    let readers = readers.collect::<Vec<_>>();

    let mut blocked: BTreeSet<SocketId> = BTreeSet::new();

    #[cfg(feature = "security")]
    let encoded = self.security_encode(message, &readers);
    #[cfg(not(feature = "security"))]
    let encoded: Result<Message, ()> = Ok(message);

    match encoded {
      Ok(message) => {
        let buffer = match message.write_to_vec_fast(self.endianness) {
          Ok(b) => b,
          Err(e) => {
            error!("Failed to serialize RTPS message for send: {e:?}");
            return blocked;
          }
        };

        // convoy change 43: the multicast groups this message went to.
        let multicast_sent: std::cell::RefCell<Vec<Locator>> = std::cell::RefCell::default();
        // De-duplication of narrowed (interface-aware) sends across readers.
        let mut sent_routes: BTreeSet<RouteKey> = BTreeSet::new();
        // De-duplication of legacy (all-interface) sends across readers.
        let mut sent_legacy: BTreeSet<Locator> = BTreeSet::new();

        macro_rules! emit_multicast {
          ($mc:expr, $iface:expr) => {{
            multicast_sent.borrow_mut().push($mc);
            if sent_routes.insert(RouteKey::Multicast($mc, $iface)) {
              match class {
                TrafficClass::Control => self
                  .udp_sender
                  .send_to_multicast_locator_via(&buffer, &$mc, &$iface),
                TrafficClass::Bulk => blocked.extend(
                  self
                    .udp_sender
                    .try_send_to_multicast_locator_via(&buffer, &$mc, &$iface),
                ),
              }
            } else {
              trace!("Already sent to multicast {:?} via {:?}", $mc, $iface);
            }
          }};
        }
        macro_rules! emit_unicast {
          ($uc:expr) => {
            if sent_routes.insert(RouteKey::Unicast($uc)) {
              match class {
                TrafficClass::Control => self.udp_sender.send_to_locator(&buffer, &$uc),
                TrafficClass::Bulk => {
                  blocked.extend(self.udp_sender.try_send_to_locator(&buffer, &$uc));
                }
              }
            } else {
              trace!("Already sent to unicast {:?}", $uc);
            }
          };
        }
        macro_rules! send_legacy {
          ($locs:expr) => {
            for loc in $locs.iter() {
              // convoy change 43: nor to a unicast locator a narrowed route
              // already sent to (an SPDP localhost peer that is also a
              // discovered participant got every announcement twice).
              if SocketAddr::from(*loc).ip().is_multicast() {
                multicast_sent.borrow_mut().push(*loc);
              }
              if !sent_routes.contains(&RouteKey::Unicast(*loc)) && sent_legacy.insert(*loc) {
                match class {
                  TrafficClass::Control => self.udp_sender.send_to_locator(&buffer, loc),
                  TrafficClass::Bulk => {
                    blocked.extend(self.udp_sender.try_send_to_locator(&buffer, loc));
                  }
                }
              } else {
                trace!("Already sent to {:?}", loc);
              }
            }
          };
        }

        // convoy change 43: a built-in writer's message (a periodic SPDP
        // announcement, a liveliness message, a discovery sample) goes to the
        // discovery multicast group anyway, and that reaches every participant
        // whose own multicast reaches us. A unicast copy to each of those as well
        // doubled what every participant received and parsed each second (with
        // 64 on a host, over 8,000 datagrams a second). Those copies wait here,
        // and go only to the readers whose multicast group this message did not
        // reach after all.
        let skip_if_multicast_sent = self.my_guid.entity_id.kind().is_built_in();
        let mut held_back: Vec<&RtpsReaderProxy> = Vec::new();
        // convoy change 69: a user sample (or its HEARTBEAT) for the readers of
        // several participants that share a multicast group goes there once;
        // those readers get nothing by unicast. Repairs (to one reader) stay
        // unicast.
        let group = match preferred_mode {
          DeliveryMode::Multicast if buffer.len() <= MULTICAST_DATAGRAM_MAX => {
            self.shared_multicast_group(readers.iter().copied())
          }
          _ => None,
        };
        let reached = match group {
          Some((group_locator, reached)) => {
            send_legacy!([group_locator]);
            reached
          }
          None => BTreeSet::new(),
        };
        let readers = readers
          .into_iter()
          .filter(|reader| !reached.contains(&reader.remote_reader_guid));
        let mut send_to_reader = |reader: &RtpsReaderProxy| {
          let route = reader.send_route();

          if route.fallback {
            // Unknown/ambiguous route: preserve reachability using the legacy
            // all-locators/all-interfaces path with the original precedence.
            match (
              preferred_mode,
              reader
                .unicast_locator_list
                .iter()
                .find(|l| Locator::is_udp(l)),
              reader
                .multicast_locator_list
                .iter()
                .find(|l| Locator::is_udp(l)),
            ) {
              (DeliveryMode::Multicast, _, Some(_)) => send_legacy!(reader.multicast_locator_list),
              (DeliveryMode::Unicast, Some(_), _) => send_legacy!(reader.unicast_locator_list),
              (_, _, Some(_)) => send_legacy!(reader.multicast_locator_list),
              (_, Some(_), _) => send_legacy!(reader.unicast_locator_list),
              (_, None, None) => warn!("send_message_to_readers: No locators for {reader:?}"),
            }
            return;
          }

          // Narrowed route: reuse the multicast/unicast preference precedence.
          match (preferred_mode, route.multicast, route.unicast) {
            (DeliveryMode::Multicast, Some((mc, iface)), _) => emit_multicast!(mc, iface),
            (DeliveryMode::Unicast, _, Some(uc)) => emit_unicast!(uc),
            (_, _, Some(uc)) => emit_unicast!(uc),
            (_, Some((mc, iface)), _) => emit_multicast!(mc, iface),
            (_, None, None) => {
              warn!("send_message_to_readers: resolved route has no destination for {reader:?}");
            }
          }
        };
        if skip_if_multicast_sent {
          let observations = self.interface_observations.borrow();
          for reader in readers {
            if observations
              .multicast_heard_within(reader.remote_reader_guid.prefix, MULTICAST_HEARD_WITHIN)
            {
              held_back.push(reader);
            } else {
              send_to_reader(reader);
            }
          }
        } else {
          readers.into_iter().for_each(&mut send_to_reader);
        }
        let groups_reached = multicast_sent.take();
        let (covered, uncovered): (Vec<&RtpsReaderProxy>, Vec<&RtpsReaderProxy>) =
          held_back.into_iter().partition(|reader| {
            reader
              .multicast_locator_list
              .iter()
              .any(|group| groups_reached.contains(group))
          });
        uncovered.into_iter().for_each(&mut send_to_reader);
        // Nor to a localhost SPDP peer port below that is one of those covered.
        for reader in covered {
          sent_legacy.extend(reader.unicast_locator_list.iter().copied());
          sent_legacy.extend(reader.loopback_unicast_locators.iter().copied());
        }

        // Fixed extra unicast destinations (SPDP localhost peers): send the same
        // datagram unconditionally, deduplicated against everything already sent.
        send_legacy!(self.extra_unicast_destinations);
      }
      Err(e) => error!("Failed to send message to readers. Encoding failed: {e:?}"),
    }
    blocked
  }

  // Kept for readability at call sites that fire a single control message and
  // do not care about back-pressure (heartbeats, GAPs, repair control).
  fn send_control_to_readers(
    &self,
    preferred_mode: DeliveryMode,
    message: Message,
    readers: &mut dyn Iterator<Item = &RtpsReaderProxy>,
  ) {
    let _ = self.send_message_to_readers(preferred_mode, message, readers, TrafficClass::Control);
  }

  #[allow(dead_code)] // symmetry with send_control_to_readers; reserved for future direct bulk sends
  fn send_bulk_to_readers(
    &self,
    preferred_mode: DeliveryMode,
    message: Message,
    readers: &mut dyn Iterator<Item = &RtpsReaderProxy>,
  ) -> BTreeSet<SocketId> {
    self.send_message_to_readers(preferred_mode, message, readers, TrafficClass::Bulk)
  }

  // Send status to DataWriter or however is listening
  fn send_status(&self, status: DataWriterStatus) {
    self
      .status_sender
      .try_send_impl(status)
      .unwrap_or_else(|e| match e {
        // TODO: dead code. `StatusChannelSender::try_send` currently converts a
        // full channel into `Ok(())` (dropping the event), so this arm is never
        // reached. Kept because the handling is correct if `try_send` is ever
        // made to return `Full` again (cf. PR #442).
        TrySendError::Full(_) => (), // This is normal in case there is no receiver
        TrySendError::Disconnected(_) => {
          debug!("send_status - status receiver is disconnected");
        }
      });
  }

  /// Set the fixed unicast destinations every outgoing message is also sent to
  /// (in addition to matched readers), bypassing route selection. Used only for
  /// the built-in SPDP writer's "localhost SPDP peers". See
  /// [`Self::extra_unicast_destinations`].
  pub fn set_extra_unicast_destinations(&mut self, locators: Vec<Locator>) {
    self.extra_unicast_destinations = locators;
  }

  /// Enable/disable preferring a same-host peer's loopback locator during route
  /// selection. See the participant-builder `same_host_loopback` knob.
  pub fn set_prefer_loopback_same_host(&mut self, enabled: bool) {
    self.prefer_loopback_same_host = enabled;
  }

  /// convoy change 52: the participant's ACKNACK batch; what is queued for a
  /// destination rides with the next sample pushed there.
  pub(crate) fn set_reply_batch(&mut self, batch: SharedReplyBatch) {
    self.reply_batch = Some(batch);
  }

  pub fn update_reader_proxy(
    &mut self,
    reader_proxy: &RtpsReaderProxy,
    requested_qos: &QosPolicies,
  ) {
    debug!(
      "update_reader_proxy topic={:?} reader_proxy={reader_proxy:?}",
      self.my_topic_name
    );
    // convoy change 40: see Reader::update_writer_proxy.
    if !self.qos_policies.partitions_match(requested_qos) {
      return;
    }
    match self.qos_policies.compliance_failure_wrt(requested_qos) {
      // matched QoS
      None => {
        let new_reader = self.matched_reader_update(reader_proxy);
        // A (possibly new) reliable reader changes the acknowledgement frontier
        // and thus the back-pressure window.
        self.refresh_acked_frontier();
        if new_reader {
          self.matched_readers_count_total += 1;
          self.send_status(DataWriterStatus::PublicationMatched {
            // total: How many matches have been detected ever?
            total: CountWithChange::new(self.matched_readers_count_total, 1),
            // current: How many readers we are matched with?
            current: CountWithChange::new(self.readers.len() as i32, 1),
            reader: reader_proxy.remote_reader_guid,
          });
          self.send_participant_status(DomainParticipantStatusEvent::RemoteReaderMatched {
            local_writer: self.my_guid,
            remote_reader: reader_proxy.remote_reader_guid,
          });
          // Reliable: send an initial HEARTBEAT to the newly matched reader so it
          // can request the samples we already hold (repair/late-join). This runs
          // synchronously on the discovery-match event in the event loop, so it
          // does NOT depend on the periodic heartbeat timer - which is CPU-starved
          // under a flat-out user writer, leaving the timer to fire seldom or
          // never. Without this prompt, a reader that matches after our initial
          // send burst is never told what we have and never NACKs, so reliable
          // data (notably builtin SEDP DiscoveredWriterData) is never delivered
          // and the endpoints stay unmatched. Unicast to just the new reader.
          if self.is_reliable() && !self.like_stateless {
            let new_reader_guid = reader_proxy.remote_reader_guid;
            let first = self.send_buffer.first_change_sequence_number();
            let last = self.announced_last_sn(None);
            let hb_message = MessageBuilder::new()
              .ts_msg(self.endianness, Some(Timestamp::now()))
              .heartbeat_msg(
                self.entity_id(),
                first,
                last,
                self.next_heartbeat_count(),
                self.endianness,
                EntityId::UNKNOWN,
                false, // final_flag: require the reader to respond with ACKNACK
                false, // liveliness_flag
              )
              .add_header_and_build(self.my_guid.prefix);
            if let Some(rp) = self.readers.get(&new_reader_guid) {
              self.send_control_to_readers(
                DeliveryMode::Unicast,
                hb_message,
                &mut std::iter::once(rp),
              );
            }
          }
          // convoy change 49: a participant discovered just now learns of this
          // one before anything else from it arrives (see `send_newest_to`).
          if self.my_guid.entity_id == EntityId::SPDP_BUILTIN_PARTICIPANT_WRITER {
            self.send_newest_to(reader_proxy.remote_reader_guid);
          }
          info!(
            "Matched new remote reader on topic={:?} reader={:?}",
            self.topic_name(),
            reader_proxy.remote_reader_guid
          );
          debug!("Reader details: {:?}", reader_proxy);
        }
      }
      Some(bad_policy_id) => {
        // QoS not compliant :(
        warn!(
          "update_reader_proxy - QoS mismatch {:?} topic={:?}",
          bad_policy_id,
          self.topic_name()
        );
        info!(
          "Reader QoS={:?} Writer QoS={:?}",
          requested_qos, self.qos_policies
        );

        self.requested_incompatible_qos_count += 1;
        self.send_status(DataWriterStatus::OfferedIncompatibleQos {
          count: CountWithChange::new(self.requested_incompatible_qos_count, 1),
          last_policy_id: bad_policy_id,
          reader: reader_proxy.remote_reader_guid,
          requested_qos: Box::new(requested_qos.clone()),
          offered_qos: Box::new(self.qos_policies.clone()),
        });
        self.send_participant_status(DomainParticipantStatusEvent::RemoteReaderQosIncompatible {
          local_writer: self.my_guid,
          remote_reader: reader_proxy.remote_reader_guid,
          requested_qos: Box::new(requested_qos.clone()),
          offered_qos: Box::new(self.qos_policies.clone()),
        });
      }
    } // match
  }

  /// convoy change 49: send the newest sample to one reader now. The SPDP
  /// writer does this for the SPDP reader of a participant discovered just
  /// now, before the event loop matches our SEDP writers with it (which send it
  /// our endpoints at once). Our announcement otherwise followed 10 ms later
  /// (the quick response) or at the next period, so the SEDP data arrived at a
  /// participant that did not know us yet: Fast DDS takes such data into its
  /// discovery reader, finds no participant for it and drops it, and now and
  /// then did not take the repaired samples either, so a ROS 2 node never saw
  /// some or all of a bridge's publishers.
  fn send_newest_to(&self, reader_guid: GUID) {
    let Some(reader) = self.readers.get(&reader_guid) else {
      return;
    };
    let newest = self.send_buffer.last_change_sequence_number();
    if let Some(cc) = self.send_buffer.get_by_sn(newest) {
      self.send_cache_change(&cc, false, Some(reader));
    }
  }

  // Update the given reader proxy. Preserve data we are tracking.
  // return value: true = reader was new, false = reader was previously known
  fn matched_reader_update(&mut self, updated_reader_proxy: &RtpsReaderProxy) -> bool {
    let mut is_new = false;
    // Get these in advance to work with the borrow checker.
    let is_volatile = self.qos().is_volatile();
    let pushed_or_pushing = self.pushed_or_pushing();
    // convoy change 31: a reader matched again after its participant was lost
    // gets a GAP only for what it acknowledged before; the rest it asks for
    // (the HEARTBEAT below) and gets while this writer still holds it.
    let gap_up_to = if self
      .readers
      .contains_key(&updated_reader_proxy.remote_reader_guid)
    {
      pushed_or_pushing
    } else {
      match self
        .readers_of_lost_participants
        .remove(&updated_reader_proxy.remote_reader_guid)
      {
        Some(acked_before) => min(
          pushed_or_pushing,
          SequenceNumber::from(i64::from(acked_before) - 1),
        ),
        None => pushed_or_pushing,
      }
    };
    // Capture the interface set once; resolution consults current observations.
    let multicast_ifaces = self.udp_sender.multicast_interfaces();
    let selector = DefaultRouteSelector::new(self.prefer_loopback_same_host);
    self
      .readers
      .entry(updated_reader_proxy.remote_reader_guid)
      .and_modify(|rp| {
        rp.update(updated_reader_proxy, &self.my_topic_name);
        // Locators may have changed; refresh the interface-aware send route and
        // the per-peer path-MTU budget.
        rp.resolve_send_route(
          &self.interface_observations.borrow(),
          &multicast_ifaces,
          &selector,
        );
        rp.resolve_path_mtu(&self.local_interfaces, self.datagram_cap);
      })
      .or_insert_with(|| {
        is_new = true;
        let mut new_proxy = updated_reader_proxy.clone();
        // Ensure loopback stays in the gated bucket even for proxies that
        // arrive with it inline (e.g. the built-in get_builtin_reader_proxy path).
        new_proxy.normalize_loopback();
        if is_volatile {
          // With Durabilty::Volatile QoS we won't send the sequence numbers which existed
          // before matching with this reader. Therefore we set the reader as pending GAP
          // for all existing sequence numbers
          // convoy change 26: ... that have gone out already. Samples written but not yet
          // pushed (the user thread writes into the shared buffer while this loop
          // matches) will be pushed to this reader as to every other; announcing them
          // as a GAP too told the reader "irrelevant" about a sample it was receiving
          // (a Fast DDS reader then never acknowledged anything again).
          new_proxy.set_pending_gap_up_to(gap_up_to);
        }
        new_proxy.resolve_send_route(
          &self.interface_observations.borrow(),
          &multicast_ifaces,
          &selector,
        );
        new_proxy.resolve_path_mtu(&self.local_interfaces, self.datagram_cap);
        new_proxy
      });
    // A reader was added or its locators changed: refresh the writer-wide
    // minimum datagram budget used for packing.
    self.recompute_reader_limits();
    is_new
  }

  /// Recompute [`min_datagram_payload`](Self::min_datagram_payload) as the
  /// minimum per-peer budget over all matched readers. The aggregated/packed
  /// datagram is one packet multicast to every reader, so it must fit the
  /// smallest path MTU. With no matched readers, fall back to the default.
  fn recompute_reader_limits(&mut self) {
    // convoy change 84: the count the application reads on each write.
    self
      .send_buffer
      .fast_push()
      .set_matched_readers(self.readers.len());
    self.min_datagram_payload = self
      .readers
      .values()
      .map(RtpsReaderProxy::max_datagram_payload)
      .min()
      .unwrap_or(FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE);
    // convoy change 30
    self.unpaced_up_to = self
      .readers
      .values()
      .map(RtpsReaderProxy::takes_unpaced_up_to)
      .min()
      .unwrap_or(0);
    let group = self.shared_multicast_group(self.readers.values());
    self.pushes_to_group = group.is_some();
    self.fast_destinations = self.compute_fast_destinations(group.as_ref());
    // Matching, unmatching and route changes happen outside the synced actions:
    // the application thread sees the new readers from its next push on (a
    // sample it pushed meanwhile reaches a new reader by repair, like any
    // sample a reader missed).
    if !self.fast_push_held {
      let fast = Arc::clone(self.send_buffer.fast_push());
      let mut state = fast.lock();
      state.route = self.fast_route();
    }
  }

  /// convoy change 69: the multicast group through which one datagram reaches
  /// the most of `readers`' participants, and those readers; None when no group
  /// reaches as many of them as `multicast_user_data` asks. A reader counts when its
  /// participant's multicast was heard lately (so multicast reaches it both
  /// ways), it advertises a UDPv4 group and it is not in this participant. A
  /// peer-exchange state went by unicast to each of N-1 readers, N^2 datagrams a
  /// frame; through the group it is N. Every participant on the group gets the
  /// datagram; one that has no matching reader drops it unread. convoy change
  /// 71: the liveliness writer's readers too (in an unsecured participant), whose
  /// group is the discovery multicast group.
  fn shared_multicast_group<'a>(
    &self,
    readers: impl IntoIterator<Item = &'a RtpsReaderProxy>,
  ) -> Option<(Locator, BTreeSet<GUID>)> {
    // Set for user writers (`set_transport`) and the liveliness writer
    // (`set_multicast_liveliness`) only.
    let min_participants = self
      .multicast_user_data?
      .max(MIN_MULTICAST_PARTICIPANTS);
    let observations = self.interface_observations.borrow();
    let mut groups: BTreeMap<Locator, (BTreeSet<GUID>, BTreeSet<GuidPrefix>)> = BTreeMap::new();
    for reader in readers {
      let prefix = reader.remote_reader_guid.prefix;
      if prefix == self.my_guid.prefix
        || !observations.multicast_heard_within(prefix, MULTICAST_HEARD_WITHIN)
      {
        continue;
      }
      if let Some(group) = reader
        .multicast_locator_list
        .iter()
        .find(|l| matches!(l, Locator::UdpV4(_)))
      {
        let (guids, prefixes) = groups.entry(*group).or_default();
        guids.insert(reader.remote_reader_guid);
        prefixes.insert(prefix);
      }
    }
    groups
      .into_iter()
      .filter(|(_, (_, prefixes))| prefixes.len() >= min_participants)
      .max_by_key(|(_, (_, prefixes))| prefixes.len())
      .map(|(group, (guids, _))| (group, guids))
  }

  /// convoy change 35: the destinations of a sample pushed to every matched
  /// reader, if each reader has exactly one known unicast route (what
  /// `send_message_to_readers` would send to), none is in this participant
  /// and nothing else is special about this writer.
  /// `group`: `shared_multicast_group` of all matched readers.
  fn compute_fast_destinations(
    &self,
    group: Option<&(Locator, BTreeSet<GUID>)>,
  ) -> Option<Arc<[SocketAddr]>> {
    if !self.application_thread_push
      || !self.push_mode
      || self.like_stateless
      || self.security_plugins.is_some()
      || !self.my_guid.entity_id.kind().is_user_defined()
      || !self.extra_unicast_destinations.is_empty()
      || self.readers.is_empty()
    {
      return None;
    }
    let mut destinations = Vec::new();
    // convoy change 69: the readers a shared multicast group reaches get the
    // sample through it.
    if let Some((Locator::UdpV4(addr), _)) = group {
      destinations.push(SocketAddr::from(*addr));
    }
    for reader in self.readers.values() {
      if reader.remote_reader_guid.prefix == self.my_guid.prefix {
        return None;
      }
      if group.is_some_and(|(_, reached)| reached.contains(&reader.remote_reader_guid))
      {
        continue;
      }
      let route = reader.send_route();
      if route.fallback || route.multicast.is_some() {
        return None;
      }
      let Some(Locator::UdpV4(addr)) = route.unicast else {
        return None;
      };
      let addr = SocketAddr::from(addr);
      if !destinations.contains(&addr) {
        destinations.push(addr);
      }
    }
    Some(destinations.into())
  }

  /// convoy change 35: what the application thread may push now, if anything.
  fn fast_route(&self) -> Option<FastRoute> {
    let destinations = self.fast_destinations.as_ref()?;
    let pushing_now = self.sample_cursor != SampleCursor::Fresh
      || !self.blocked_sockets.is_empty()
      || self.window_full
      || self.resume_push_scheduled
      || self.udp_sender.control_backlogged(SocketId::Unicast);
    if pushing_now {
      return None;
    }
    let mut max_payload = self.max_unfragmented_serialized_payload(None);
    if self.pacer.borrow().is_active() {
      max_payload = min(max_payload, self.unpaced_up_to);
    }
    // convoy change 69: what goes to a multicast group fits an interface's MTU
    // (the headers of a DATA and its HEARTBEAT take under 200 bytes).
    if destinations.iter().any(|d| d.ip().is_multicast()) {
      max_payload = min(max_payload, MULTICAST_DATAGRAM_MAX - 200);
    }
    if max_payload == 0 {
      return None;
    }
    let reliable = self.is_reliable().then(|| ReliablePush {
      window: self.piggyback_window(),
      to_group: self.pushes_to_group,
      max_unacked: self.max_unacked_bytes.map_or(i64::MAX, |limit| {
        i64::try_from(limit / max_payload)
          .unwrap_or(i64::MAX)
          .max(1)
      }),
    });
    Some(FastRoute {
      socket: self.fast_socket.clone(),
      destinations: Arc::clone(destinations),
      max_payload,
      datagram_budget: self.datagram_budget(None),
      writer_guid: self.my_guid,
      reliable,
      replies: self.reply_batch.clone(),
    })
  }

  /// convoy change 35: runs one event-loop action on this writer while the
  /// application thread cannot push: first the samples it pushed are taken in
  /// (as if this loop had pushed them), then the route it may use next is
  /// rebuilt from the writer's state after the action.
  fn synced_with_fast_push<R>(&mut self, action: impl FnOnce(&mut Self) -> R) -> R {
    let fast = Arc::clone(self.send_buffer.fast_push());
    let mut state = fast.lock();
    self.take_in_fast_pushes(&state);
    self.fast_push_held = true;
    let result = action(self);
    self.fast_push_held = false;
    self.publish_fast_state(&mut state);
    result
  }

  /// The newest sample pushed to the readers (or past them: none matched).
  #[cfg(test)]
  pub(crate) fn last_sent(&self) -> SequenceNumber {
    self.last_sent
  }

  fn take_in_fast_pushes(&mut self, state: &FastPushState) {
    if state.last_sent <= self.last_sent {
      return;
    }
    self.last_sent = state.last_sent;
    self.pushed_reliably_at(state.last_push_at.unwrap_or_else(std::time::Instant::now));
  }

  fn publish_fast_state(&self, state: &mut FastPushState) {
    state.last_sent = max(state.last_sent, self.last_sent);
    state.tail_heartbeat_armed = self.tail_heartbeat_scheduled;
    state.route = self.fast_route();
  }

  /// Refresh the [`SendRoute`](crate::rtps::transmit::SendRoute) of every
  /// matched reader belonging to `prefix`. Called when fresh interface
  /// observations for that participant may have arrived (e.g. periodic SPDP).
  pub fn recompute_routes_for(&mut self, prefix: GuidPrefix) {
    let multicast_ifaces = self.udp_sender.multicast_interfaces();
    let selector = DefaultRouteSelector::new(self.prefer_loopback_same_host);
    let mut resolved_any = false;
    {
      let observations = self.interface_observations.borrow();
      for rp in self.readers.values_mut() {
        if rp.remote_reader_guid.prefix == prefix {
          rp.resolve_send_route(&observations, &multicast_ifaces, &selector);
          rp.resolve_path_mtu(&self.local_interfaces, self.datagram_cap);
          resolved_any = true;
        }
      }
    }
    // convoy change 42: the writer-wide limits depend on the readers only.
    if resolved_any {
      self.recompute_reader_limits();
    }
  }

  fn matched_reader_remove(&mut self, guid: GUID) -> Option<RtpsReaderProxy> {
    let removed = self.readers.remove(&guid);
    if let Some(ref removed_reader) = removed {
      info!(
        "Removed reader proxy. topic={:?} reader={:?}",
        self.topic_name(),
        removed_reader.remote_reader_guid,
      );
      debug!("Removed reader proxy details: {removed_reader:?}");
    }
    #[cfg(feature = "security")]
    if let Some(security_plugins_handle) = &self.security_plugins {
      security_plugins_handle
        .get_plugins()
        .unregister_remote_reader(&self.my_guid, &guid)
        .unwrap_or_else(|e| error!("{e}"));
    }
    removed
  }

  pub fn reader_lost(&mut self, guid: GUID) {
    if self.readers.contains_key(&guid) {
      info!(
        "reader_lost topic={:?} reader={:?}",
        self.topic_name(),
        guid
      );
      self.matched_reader_remove(guid);
      // Removing a reader may relax (raise) the writer-wide minimum budget.
      self.recompute_reader_limits();
      // self.matched_readers_count_total -= 1; // this never decreases
      self.send_status(DataWriterStatus::PublicationMatched {
        total: CountWithChange::new(self.matched_readers_count_total, 0),
        current: CountWithChange::new(self.readers.len() as i32, -1),
        reader: guid,
      });
    }
    // A matched reader going away may complete a pending wait_for_acknowledgments
    // and may relax back-pressure: recompute the acknowledgement frontier.
    self.refresh_acked_frontier();
  }

  // Entire remote participant was lost.
  // Remove all remote readers belonging to it.
  pub fn participant_lost(&mut self, guid_prefix: GuidPrefix) {
    let lost_readers: Vec<GUID> = self
      .readers
      .range(guid_prefix.range())
      .map(|(g, _)| *g)
      .collect();
    // convoy change 31: remember how far they got, bounded (a reader past the
    // bound that comes back is treated as a late joiner, as before).
    const MAX_REMEMBERED_READERS: usize = 4096;
    if self.my_guid.entity_id.kind().is_user_defined() {
      for reader in &lost_readers {
        if let Some(rp) = self.readers.get(reader) {
          if self.readers_of_lost_participants.len() >= MAX_REMEMBERED_READERS {
            self.readers_of_lost_participants.pop_first();
          }
          self
            .readers_of_lost_participants
            .insert(*reader, rp.all_acked_before);
        }
      }
    }
    for reader in lost_readers {
      self.reader_lost(reader);
    }
  }

  fn lookup_reader_proxy_mut(&mut self, guid: GUID) -> Option<&mut RtpsReaderProxy> {
    self.readers.get_mut(&guid)
  }

  /// convoy change 58: this writer's USER_DATA (empty when it has none).
  pub fn user_data(&self) -> &[u8] {
    self.qos_policies.user_data().map_or(&[], |u| u.value.as_slice())
  }

  pub fn topic_name(&self) -> &String {
    &self.my_topic_name
  }

  fn send_participant_status(&self, event: DomainParticipantStatusEvent) {
    self
      .participant_status_sender
      .try_send(event)
      .unwrap_or_else(|e| error!("Cannot report participant status: {e:?}"));
  }

  // TODO
  // This is placeholder for not-yet-implemented feature.
  //
  // pub fn reset_offered_deadline_missed_status(&mut self) {
  //   self.offered_deadline_status.reset_change();
  // }
}

impl RTPSEntity for Writer {
  fn guid(&self) -> GUID {
    self.my_guid
  }
}

impl HasQoSPolicy for Writer {
  fn qos(&self) -> QosPolicies {
    self.qos_policies.clone()
  }
}

// Serialized overhead of one DATA submessage excluding its serialized payload
// and inline QoS. Conservative fixed fields only; underestimating inline QoS
// causes earlier fragmentation (safe), never datagram overflow.
const DATA_SUBMESSAGE_OVERHEAD: usize = 48;

// An invalidating INFO_TS is a bare submessage header.
const SUBMESSAGE_INFO_TS_INVALIDATE_SIZE: usize = 4;

// Serialized overhead of one DATAFRAG submessage excluding its payload:
// submessage header (4) + extraFlags (2) + octetsToInlineQos (2) + readerId (4)
// + writerId (4) + writerSN (8) + fragmentStartingNum (4) +
// fragmentsInSubmessage (2) + fragmentSize (2) + sampleSize (4) = 36 bytes.
// Inline QoS (e.g. related sample identity) would add more; ignoring it only
// risks a slight overestimate, which degrades to benign IP fragmentation rather
// than data loss.
const DATAFRAG_SUBMESSAGE_OVERHEAD: usize = 36;

// A fifth of a finite, positive Deadline, clamped to
// [REPAIR_INTERVAL_MIN, REPAIR_INTERVAL_MAX]. No Deadline, INFINITE, zero or
// negative give REPAIR_INTERVAL_DEFAULT.
fn repair_interval_for(deadline: Option<Duration>) -> std::time::Duration {
  match deadline {
    Some(d) if d != Duration::INFINITE && d > Duration::ZERO => {
      std::time::Duration::from(d / 5).clamp(REPAIR_INTERVAL_MIN, REPAIR_INTERVAL_MAX)
    }
    _ => REPAIR_INTERVAL_DEFAULT,
  }
}

// Adaptive packing: how many contiguous fragments (starting at 1-based `start`)
// to place in a single DATAFRAG submessage so the datagram stays within
// `budget` bytes. `header_len` is the datagram size already committed (RTPS
// header + optional INFO_TS/INFO_DST). The fragment *size* is constant; only
// the count adapts. Always returns at least 1 (we emit progress even if a lone
// fragment exceeds the budget, letting IP fragmentation handle the overflow).
fn frags_per_datafrag(
  header_len: usize,
  budget: usize,
  start: u32,
  num_frags: u32,
  fragment_size: u16,
  data_size: usize,
) -> u32 {
  let fragment_size = fragment_size as usize;
  let remaining_frags = num_frags - (start - 1);
  // Bytes available in this datagram for the DATAFRAG payload.
  let payload_cap = budget
    .saturating_sub(header_len)
    .saturating_sub(DATAFRAG_SUBMESSAGE_OVERHEAD);
  // Bytes from the first fragment of this run to the end of the sample.
  let start_byte = (start as usize - 1) * fragment_size;
  let bytes_to_end = data_size.saturating_sub(start_byte);

  let k = if payload_cap >= bytes_to_end {
    // The rest of the sample (including a shorter final fragment) fits.
    remaining_frags
  } else {
    // Only whole fragments fit; take as many as the budget allows (>= 1).
    ((payload_cap / fragment_size) as u32).max(1)
  };
  k.min(remaining_frags)
}

struct FragmentationIter<'a> {
  writer: &'a Writer,
  cache_change: &'a CacheChange,
  target_reader_opt: Option<&'a RtpsReaderProxy>,
  reader_entity_id: EntityId,
  send_heartbeat: bool,
  finished: bool,
  state: FragmentationIterState,
}

impl<'a> FragmentationIter<'a> {
  // nonblocking-transmit: build an iterator that resumes at `cursor`. `Fresh`
  // yields everything (leading GAP for a single reader, all DATAFRAGs, trailing
  // HEARTBEAT, or a single DATA for an unfragmented sample). `Frag(n)` skips the
  // GAP and earlier fragments and resumes at fragment `n`. `Heartbeat` yields
  // only the trailing HEARTBEAT.
  fn new_resume(
    writer: &'a Writer,
    cache_change: &'a CacheChange,
    target_reader_opt: Option<&'a RtpsReaderProxy>,
    send_heartbeat: bool,
    cursor: SampleCursor,
  ) -> Self {
    // The EntityId of the destination
    let reader_entity_id =
      target_reader_opt.map_or(EntityId::UNKNOWN, |p| p.remote_reader_guid.entity_id);

    let data_size = cache_change.data_value.payload_size();
    let fragmentation_needed =
      data_size > writer.max_unfragmented_serialized_payload(target_reader_opt);

    let state = if fragmentation_needed {
      let fragmented = match cursor {
        SampleCursor::Fresh => FragmentedState::TargetReader,
        SampleCursor::Frag(start) => {
          let (num_frags, fragment_size) = writer.num_frags_and_frag_size(data_size);
          FragmentedState::Fragments {
            next: u32::from(start),
            num_frags,
            fragment_size,
          }
        }
        SampleCursor::Heartbeat => FragmentedState::Heartbeat,
      };
      FragmentationIterState::Fragmented(fragmented, data_size)
    } else {
      FragmentationIterState::Unfragmented
    };

    Self {
      writer,
      cache_change,
      target_reader_opt,
      state,
      reader_entity_id,
      finished: false,
      send_heartbeat,
    }
  }

  fn fragmentation_needed(&self) -> bool {
    matches!(self.state, FragmentationIterState::Fragmented(..))
  }
}

enum FragmentationIterState {
  Fragmented(FragmentedState, usize),
  Unfragmented,
}

enum FragmentedState {
  TargetReader,
  // Adaptive-packing DATAFRAG cursor: the next 1-based fragment number to send,
  // the total fragment count, and the (constant) fragment size. Each `next()`
  // emits one datagram carrying a single DATAFRAG submessage that packs as many
  // contiguous fragments as the destination's path-MTU budget allows.
  Fragments {
    next: u32,
    num_frags: u32,
    fragment_size: u16,
  },
  Heartbeat,
}

impl<'a> Iterator for FragmentationIter<'a> {
  // nonblocking-transmit: each item carries the cursor to resume from should
  // this message be the one that a socket cannot accept.
  type Item = (SampleCursor, Message);
  fn next(&mut self) -> Option<Self::Item> {
    if self.finished {
      return None;
    }

    let cc = self.cache_change;
    let writer = self.writer;
    let target_reader_opt = self.target_reader_opt;
    let reader_entity_id = self.reader_entity_id;
    let send_heartbeat = self.send_heartbeat;

    match &mut self.state {
      FragmentationIterState::Fragmented(state, data_size) => {
        // fragmentation_needed: We need to send DATAFRAGs
        match state {
          FragmentedState::TargetReader => {
            let (num_frags, fragment_size) = writer.num_frags_and_frag_size(*data_size);
            *state = FragmentedState::Fragments {
              next: 1,
              num_frags,
              fragment_size,
            };

            // If sending to a single reader, add a GAP message with pending gaps if any
            if let Some(reader) = target_reader_opt {
              if !reader.get_pending_gap().is_empty() {
                let gap_msg = MessageBuilder::new()
                  .dst_submessage(writer.endianness, reader.remote_reader_guid.prefix)
                  .gap_msg(
                    reader.get_pending_gap(),
                    writer.entity_id(),
                    writer.endianness,
                    reader.remote_reader_guid,
                  )
                  .add_header_and_build(writer.my_guid.prefix);
                // Leading GAP: if it blocks, resume from Fresh (re-send GAP too).
                return Some((SampleCursor::Fresh, gap_msg));
              }
            }
            self.next()
          }
          FragmentedState::Fragments {
            next,
            num_frags,
            fragment_size,
          } => {
            if *next <= *num_frags {
              let start = *next;
              let fragment_size = *fragment_size;
              let num_frags = *num_frags;
              let data_size = *data_size;

              let mut message_builder = MessageBuilder::new(); // fresh builder

              if let Some(src_ts) = cc.write_options.source_timestamp() {
                // Add timestamp (applies to the DATAFRAG that follows).
                message_builder = message_builder.ts_msg(writer.endianness, Some(src_ts));
              }

              if let Some(reader) = target_reader_opt {
                // Add info_destination
                message_builder = message_builder
                  .dst_submessage(writer.endianness, reader.remote_reader_guid.prefix);
              }

              // Per-peer datagram budget: the destination reader's path-MTU
              // budget for a directed send, or the writer-wide minimum (over all
              // matched readers) for a multicast-to-all send.
              let budget = writer.datagram_budget(target_reader_opt);
              // How many contiguous fragments (starting at `start`) fit in one
              // DATAFRAG submessage within the remaining datagram budget. Fragment
              // *size* is constant (RTPS rule); only the *count* per submessage
              // adapts to the path MTU.
              let k = frags_per_datafrag(
                message_builder.len_serialized(),
                budget,
                start,
                num_frags,
                fragment_size,
                data_size,
              );

              let sample_size_u32 = match u32::try_from(data_size) {
                Ok(n) => n,
                Err(_) => {
                  error!("sample_to_samplestream: data_size {data_size} does not fit in u32");
                  return None;
                }
              };

              message_builder = message_builder.data_frag_msg(
                cc,
                reader_entity_id, // reader
                writer.my_guid,
                FragmentNumber::new(start),
                k as u16,
                fragment_size,
                sample_size_u32,
                writer.endianness,
                writer.security_plugins.as_ref(),
              );

              *next = start + k;
              let datafrag_msg = message_builder.add_header_and_build(writer.my_guid.prefix);
              // If this datagram blocks, resume from its first fragment next time
              // (the same K is recomputed deterministically).
              return Some((SampleCursor::Frag(FragmentNumber::new(start)), datafrag_msg));
            }
            *state = FragmentedState::Heartbeat;
            self.next()
          }
          FragmentedState::Heartbeat => {
            self.finished = true;

            // Add HEARTBEAT message if needed
            if send_heartbeat && !writer.like_stateless {
              // convoy change 17: a fragmented sample's heartbeat asks for an answer.
              let final_flag = !writer.piggyback_wants_reply(self.cache_change.sequence_number, true);
              let liveliness_flag = false; // This is not a manual liveliness assertion (DDS API call), but side-effect of
                                           // writing new data.
              let hb_msg = MessageBuilder::new()
                .heartbeat_msg(
                  writer.entity_id(), // from Writer
                  writer.send_buffer.first_change_sequence_number(),
                  writer.announced_last_sn(Some(self.cache_change.sequence_number)),
                  writer.next_heartbeat_count(),
                  writer.endianness,
                  reader_entity_id, // to Reader
                  final_flag,
                  liveliness_flag,
                )
                .add_header_and_build(writer.my_guid.prefix);
              // Trailing HEARTBEAT: if it blocks, resume from Heartbeat only.
              return Some((SampleCursor::Heartbeat, hb_msg));
            }
            None
          }
        }
      }
      FragmentationIterState::Unfragmented => {
        // We can send DATA
        let mut message_builder = MessageBuilder::new();

        // If DataWriter sent us a source timestamp, then add that.
        // Timestamp has to go before Data to have effect on Data.
        if let Some(src_ts) = cc.write_options.source_timestamp() {
          message_builder = message_builder.ts_msg(writer.endianness, Some(src_ts));
        }

        if let Some(reader) = target_reader_opt {
          // Add info_destination
          message_builder =
            message_builder.dst_submessage(writer.endianness, reader.remote_reader_guid.prefix);

          // If the reader is pending GAPs on any sequence numbers, add a GAP
          if !reader.get_pending_gap().is_empty() {
            message_builder = message_builder.gap_msg(
              reader.get_pending_gap(),
              writer.entity_id(),
              writer.endianness,
              reader.remote_reader_guid,
            );
          }
        }

        // Add the DATA submessage
        message_builder = message_builder.data_msg(
          cc,
          reader_entity_id,
          writer.my_guid,
          writer.endianness,
          writer.security_plugins.as_ref(),
        );

        // Add HEARTBEAT if needed
        if send_heartbeat && !writer.like_stateless {
          // convoy change 17: not every sample's heartbeat asks for an answer.
          let final_flag = !writer.piggyback_wants_reply(self.cache_change.sequence_number, false);
          let liveliness_flag = false; // This is not a manual liveliness assertion (DDS API call), but side-effect of
                                       // writing new data.
          message_builder = message_builder.heartbeat_msg(
            writer.entity_id(),
            writer.send_buffer.first_change_sequence_number(),
            writer.announced_last_sn(Some(self.cache_change.sequence_number)),
            writer.next_heartbeat_count(),
            writer.endianness,
            reader_entity_id, // to Reader
            final_flag,
            liveliness_flag,
          );
        }

        let data_message = message_builder.add_header_and_build(writer.my_guid.prefix);
        self.finished = true;
        // Unfragmented DATA (+HEARTBEAT): if it blocks, resume from Fresh.
        Some((SampleCursor::Fresh, data_message))
      }
    }
  }
}

// -------------------------------------------------------------------------------------
// -------------------------------------------------------------------------------------
// -------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {

  // convoy change 70
  #[test]
  fn a_writer_to_a_group_asks_only_when_half_its_window_is_unacknowledged() {
    use super::asks_for_answer;
    use crate::structure::sequence_number::SequenceNumber;
    let sn = SequenceNumber::from(8);
    assert!(asks_for_answer(1, 16, sn, false), "every fourth sample, unicast");
    assert!(!asks_for_answer(1, 16, sn, true), "not to a group");
    assert!(asks_for_answer(8, 16, SequenceNumber::from(9), true));
    assert!(!asks_for_answer(7, 16, SequenceNumber::from(9), true));
    // convoy change 89: once at half, then from three quarters on.
    for unacked in 9..12 {
      assert!(!asks_for_answer(unacked, 16, SequenceNumber::from(10), true));
    }
    for unacked in 12..=16 {
      assert!(asks_for_answer(unacked, 16, SequenceNumber::from(10), true));
    }
    assert!(asks_for_answer(1, 1, SequenceNumber::from(10), true), "a window of one");
    assert!(asks_for_answer(3, 5, SequenceNumber::from(10), true), "odd: 3 of 5");
  }

  // convoy change 70
  #[test]
  fn the_tail_heartbeat_waits_out_two_of_the_writer_s_periods() {
    use std::time::Duration as D;

    use super::{tail_heartbeat_delay_after, HEARTBEAT_PERIOD_SLOW, TAIL_HEARTBEAT_DELAY};
    assert_eq!(tail_heartbeat_delay_after(D::ZERO), TAIL_HEARTBEAT_DELAY);
    assert_eq!(tail_heartbeat_delay_after(D::from_millis(5)), TAIL_HEARTBEAT_DELAY);
    assert_eq!(tail_heartbeat_delay_after(D::from_millis(150)), D::from_millis(300));
    assert_eq!(
      tail_heartbeat_delay_after(D::from_secs(10)),
      D::from(HEARTBEAT_PERIOD_SLOW)
    );
  }

  // convoy change 92
  #[test]
  fn a_slow_writer_s_tail_heartbeat_waits_out_its_whole_delay() {
    use std::time::Duration as D;

    use super::{tail_heartbeat_delay_after, tail_heartbeat_due_after, TAIL_HEARTBEAT_DELAY};
    assert_eq!(
      tail_heartbeat_due_after(TAIL_HEARTBEAT_DELAY),
      TAIL_HEARTBEAT_DELAY / 2
    );
    // Pushes 35 ms apart: 70 ms of silence, not the 50 ms of the timer's first round.
    let delay = tail_heartbeat_delay_after(D::from_millis(35));
    assert_eq!(delay, D::from_millis(70));
    assert_eq!(tail_heartbeat_due_after(delay), delay);
  }
  use std::thread;

  use byteorder::LittleEndian;
  use log::info;

  use super::frags_per_datafrag;

  // At a 1500-byte-MTU budget, a two-fragment "1 KB" sample (its serialized form
  // is slightly over the 1024-byte fragment size) packs BOTH fragments into one
  // DATAFRAG submessage, so it goes out in a single datagram instead of two.
  #[test]
  fn small_mtu_packs_1k_sample_into_one_datafrag() {
    // header_len 20 (RTPS header only), budget 1452, fragment size 1024,
    // sample 1036 bytes => 2 fragments.
    assert_eq!(frags_per_datafrag(20, 1452, 1, 2, 1024, 1036), 2);
  }

  // A large sample at a 1500-byte MTU can only fit one 1024-byte fragment per
  // datagram (2 * 1024 would overflow), so K collapses to 1.
  #[test]
  fn small_mtu_large_sample_one_fragment_per_datagram() {
    assert_eq!(frags_per_datafrag(20, 1452, 1, 10, 1024, 10240), 1);
  }

  // A jumbo-frame budget packs several whole fragments per DATAFRAG.
  #[test]
  fn jumbo_mtu_packs_several_fragments() {
    // budget 8952 (9000 MTU - 48), header 20 => payload_cap 8900 => 8 * 1024.
    assert_eq!(frags_per_datafrag(20, 8952, 1, 10, 1024, 10240), 8);
  }

  // The final run (including the shorter tail fragment) is taken whole when it
  // fits.
  #[test]
  fn tail_run_includes_partial_last_fragment() {
    // Fragments 9 and 10 of a 10240-byte sample: 1024 + (partial) with a large
    // budget => both fit.
    assert_eq!(frags_per_datafrag(20, 100_000, 9, 10, 1024, 10240), 2);
  }

  // A pathologically small budget still emits at least one fragment (progress),
  // accepting benign IP fragmentation for the overflow.
  #[test]
  fn tiny_budget_still_emits_one_fragment() {
    assert_eq!(frags_per_datafrag(20, 100, 1, 5, 1024, 5120), 1);
  }

  // K never exceeds the number of fragments actually remaining.
  #[test]
  fn k_capped_by_remaining_fragments() {
    assert_eq!(frags_per_datafrag(20, 100_000, 1, 3, 1024, 2600), 3);
  }

  use crate::{
    dds::{
      participant::DomainParticipant, qos::QosPolicies, topic::TopicKind,
      with_key::datawriter::DataWriter,
    },
    serialization::CDRSerializerAdapter,
    test::{random_data::*, test_domain::test_domain_id},
  };

  #[test]
  fn test_writer_receives_datawriter_cache_change_notifications() {
    let domain_participant =
      DomainParticipant::new(test_domain_id(0)).expect("Failed to create participant");
    let qos = QosPolicies::qos_none();
    let _default_dw_qos = QosPolicies::qos_none();

    let publisher = domain_participant
      .create_publisher(&qos)
      .expect("Failed to create publisher");
    let topic = domain_participant
      .create_topic(
        "Aasii".to_string(),
        "Huh?".to_string(),
        &qos,
        TopicKind::WithKey,
      )
      .expect("Failed to create topic");
    let data_writer: DataWriter<RandomData, CDRSerializerAdapter<RandomData, LittleEndian>> =
      publisher
        .create_datawriter(&topic, None)
        .expect("Failed to create datawriter");

    let data = RandomData {
      a: 4,
      b: "Fobar".to_string(),
    };

    let data2 = RandomData {
      a: 2,
      b: "Fobar".to_string(),
    };

    let data3 = RandomData {
      a: 3,
      b: "Fobar".to_string(),
    };

    let write_result = data_writer.write(data, None);
    info!("writerResult:  {write_result:?}");

    data_writer
      .write(data2, None)
      .expect("Unable to write data");

    info!("writerResult:  {write_result:?}");
    let write_result = data_writer.write(data3, None);

    thread::sleep(std::time::Duration::from_millis(100));
    info!("writerResult:  {write_result:?}");
  }

  #[test]
  fn repair_interval_is_fifth_of_deadline_clamped() {
    use super::{repair_interval_for, Duration};
    // DDS Durations count 2^-32 s, so a fifth may be off by a nanosecond.
    let interval_ms = |deadline: Option<Duration>| {
      (repair_interval_for(deadline).as_micros() as f64 / 1000.0).round() as u64
    };
    assert_eq!(interval_ms(Some(Duration::from_millis(50))), 10);
    assert_eq!(interval_ms(Some(Duration::from_secs(1))), 100);
    assert_eq!(interval_ms(Some(Duration::from_millis(1))), 1);
    assert_eq!(interval_ms(Some(Duration::from_millis(200))), 40);
    assert_eq!(interval_ms(None), 10);
    assert_eq!(interval_ms(Some(Duration::INFINITE)), 10);
    assert_eq!(interval_ms(Some(Duration::ZERO)), 10);
  }

  // Repair (ACKNACK response) tests. The Writer runs without an event loop, so
  // the tests poll the shared timer themselves and hand SendRepairData to the
  // Writer as the event loop would.
  mod repair {
    use std::{
      cell::RefCell,
      net::SocketAddr,
      rc::Rc,
      time::{Duration as StdDuration, Instant},
    };

    use super::super::*;
    use crate::{
      dds::{
        ddsdata::DDSData,
        qos::{policy::Durability, QosPolicyBuilder},
        statusevents::{sync_status_channel, StatusChannelReceiver},
        with_key::datawriter::WriteOptions,
      },
      discovery::discovery::Discovery,
      messages::submessages::{
        elements::serialized_payload::SerializedPayload,
        submessages::{AckNack, NackFrag},
      },
      polling::new_shared_timer,
      rtps::writer_send_buffer::Admission,
      structure::{
        guid::EntityKind,
        sequence_number::{FragmentNumberSet, SequenceNumberSet},
      },
      RepresentationIdentifier,
    };

    struct Fixture {
      writer: Writer,
      reader_guid: GUID,
      timer: SharedTimer<DpTimerEvent>,
      _status: StatusChannelReceiver<DataWriterStatus>,
      _participant_status: StatusChannelReceiver<DomainParticipantStatusEvent>,
    }

    impl Fixture {
      // A reliable Writer that holds samples 1..=sample_count of `payload_len`
      // bytes and is matched with one remote reader. Without a locator the
      // reader gets nothing on the wire, but the repair bookkeeping runs.
      fn new(
        writer_id: EntityId,
        writer_qos: QosPolicies,
        reader_id: EntityId,
        reader_qos: &QosPolicies,
        sample_count: i64,
        payload_len: usize,
        reader_locator: Option<SocketAddr>,
      ) -> Self {
        let guid = GUID::new(GuidPrefix::new(&[1; 12]), writer_id);
        let send_buffer = WriterSendBuffer::new(
          guid,
          "repair_test".to_string(),
          true, // reliable
          writer_id.kind().is_built_in(),
          false,
          DEFAULT_WRITER_MAX_SAMPLES,
          DEFAULT_WRITER_MAX_SAMPLES,
          DEFAULT_WRITER_MAX_SAMPLES,
        );
        for _ in 0..sample_count {
          let data = DDSData::new(SerializedPayload::new(
            RepresentationIdentifier::CDR_LE,
            vec![0; payload_len],
          ));
          assert!(matches!(
            send_buffer.admit_blocking(WriteOptions::default(), data, Some(StdDuration::ZERO)),
            Admission::Admitted(_)
          ));
        }
        let (status_sender, status) = sync_status_channel(4).unwrap();
        let (participant_status_sender, participant_status) = sync_status_channel(16).unwrap();
        let timer = new_shared_timer();
        let reader_guid = GUID::new(GuidPrefix::new(&[2; 12]), reader_id);
        // A reader on this host is sent to at its loopback locator once its
        // participant was heard from loopback.
        let mut observations = InterfaceObservations::default();
        if let Some(addr) = reader_locator.filter(|a| a.ip().is_loopback()) {
          observations.record(reader_guid.prefix, None, addr);
        }
        let mut writer = Writer::new(
          WriterIngredients {
            guid,
            send_buffer,
            topic_name: "repair_test".to_string(),
            like_stateless: false,
            qos_policies: writer_qos,
            status_sender,
            security_plugins: None,
          },
          Rc::new(UDPSender::new(0).unwrap()),
          Rc::clone(&timer),
          participant_status_sender,
          Rc::new(RefCell::new(observations)),
          Rc::from(Vec::<IfAddr>::new()),
        );
        let mut reader_proxy = RtpsReaderProxy::new(reader_guid, reader_qos.clone(), false);
        reader_proxy
          .unicast_locator_list
          .extend(reader_locator.map(Locator::from));
        writer.update_reader_proxy(&reader_proxy, reader_qos);
        assert!(
          writer.readers.contains_key(&reader_guid),
          "reader did not match"
        );
        Self {
          writer,
          reader_guid,
          timer,
          _status: status,
          _participant_status: participant_status,
        }
      }

      // A built-in SEDP publications Writer and a remote SEDP publications
      // reader, with the QoS Discovery gives them.
      fn sedp(sample_count: i64, payload_len: usize) -> Self {
        Self::new(
          EntityId::SEDP_BUILTIN_PUBLICATIONS_WRITER,
          Discovery::builtin_publisher_qos(),
          EntityId::SEDP_BUILTIN_PUBLICATIONS_READER,
          &Discovery::builtin_subscriber_qos(),
          sample_count,
          payload_len,
          None,
        )
      }

      fn user(sample_count: i64, payload_len: usize, reader_locator: Option<SocketAddr>) -> Self {
        let qos = QosPolicyBuilder::new()
          .reliability(Reliability::Reliable {
            max_blocking_time: Duration::from_millis(100),
          })
          .history(History::KeepAll)
          .durability(Durability::TransientLocal)
          .build();
        Self::new(
          EntityId::new([0, 0, 1], EntityKind::WRITER_WITH_KEY_USER_DEFINED),
          qos.clone(),
          EntityId::new([0, 0, 2], EntityKind::READER_WITH_KEY_USER_DEFINED),
          &qos,
          sample_count,
          payload_len,
          reader_locator,
        )
      }

      fn reader_proxy(&self) -> &RtpsReaderProxy {
        &self.writer.readers[&self.reader_guid]
      }

      fn unsent(&self) -> usize {
        self.reader_proxy().unsent_changes_count()
      }

      // The reader has received nothing and requests `requested`.
      fn ack_nack(&mut self, requested: impl IntoIterator<Item = i64>, count: i32) {
        let requested: BTreeSet<SequenceNumber> =
          requested.into_iter().map(SequenceNumber::new).collect();
        let ack_nack = AckNack {
          reader_id: self.reader_guid.entity_id,
          writer_id: self.writer.my_guid.entity_id,
          reader_sn_state: SequenceNumberSet::from_base_and_set(SequenceNumber::new(1), &requested),
          count,
        };
        self
          .writer
          .handle_ack_nack(self.reader_guid.prefix, &AckSubmessage::AckNack(ack_nack));
      }

      // Timed events addressed to our reader that expire within `max_wait`.
      // This keeps SendRepairFrags, which next_repair_event skips.
      fn reader_events(&self, max_wait: StdDuration) -> Vec<TimedEvent> {
        let give_up = Instant::now() + max_wait;
        let mut found = Vec::new();
        loop {
          while let Some(fired) = self.timer.borrow_mut().poll() {
            if let DpTimerEvent::Writer { event, .. } = fired {
              let to_reader = match event {
                TimedEvent::SendRepairData { to_reader }
                | TimedEvent::SendRepairFrags { to_reader } => Some(to_reader),
                TimedEvent::Heartbeat
                | TimedEvent::CacheCleaning
                | TimedEvent::ResumePush
                | TimedEvent::TailHeartbeat
                | TimedEvent::StoppedReaderCheck => None,
              };
              if to_reader == Some(self.reader_guid) {
                found.push(event);
              }
            }
          }
          if Instant::now() >= give_up {
            return found;
          }
          std::thread::sleep(StdDuration::from_millis(1));
        }
      }

      // The next SendRepairData timeout scheduled for our reader, waiting up to
      // `max_wait` for it to expire. Other timeouts are skipped.
      fn next_repair_event(&self, max_wait: StdDuration) -> Option<TimedEvent> {
        let give_up = Instant::now() + max_wait;
        loop {
          while let Some(fired) = self.timer.borrow_mut().poll() {
            if let DpTimerEvent::Writer {
              event: TimedEvent::SendRepairData { to_reader },
              ..
            } = fired
            {
              if to_reader == self.reader_guid {
                return Some(TimedEvent::SendRepairData { to_reader });
              }
            }
          }
          if Instant::now() >= give_up {
            return None;
          }
          std::thread::sleep(StdDuration::from_millis(1));
        }
      }

      // Run one repair round; returns how many changes it sent.
      fn repair_round(&mut self) -> usize {
        let event = self
          .next_repair_event(StdDuration::from_secs(5))
          .expect("SendRepairData was not scheduled");
        let before = self.unsent();
        self.writer.handle_timed_event(event);
        before - self.unsent()
      }
    }

    // convoy change 49: the SPDP writer sends a reader matched just now its
    // newest announcement at once (the event loop matches the SEDP writers with
    // that participant right after, and they send it our endpoints).
    #[test]
    fn a_new_spdp_reader_gets_the_newest_announcement_at_once() {
      use bytes::Bytes;

      use crate::{
        messages::submessages::submessages::WriterSubmessage,
        rtps::{Message, SubmessageBody},
      };

      let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
      socket
        .set_read_timeout(Some(StdDuration::from_secs(5)))
        .unwrap();
      let spdp_qos = Discovery::create_spdp_participant_qos();
      let _f = Fixture::new(
        EntityId::SPDP_BUILTIN_PARTICIPANT_WRITER,
        spdp_qos.clone(),
        EntityId::SPDP_BUILTIN_PARTICIPANT_READER,
        &spdp_qos,
        3,
        16,
        Some(socket.local_addr().unwrap()),
      );
      let mut datagram = vec![0; 2048];
      let len = socket
        .recv(&mut datagram)
        .expect("the new reader got no announcement");
      let message = Message::read_from_buffer(&Bytes::copy_from_slice(&datagram[..len])).unwrap();
      let sent: Vec<SequenceNumber> = message
        .submessages()
        .into_iter()
        .filter_map(|sub| match sub.body {
          SubmessageBody::Writer(WriterSubmessage::Data(data, _)) => Some(data.writer_sn),
          _ => None,
        })
        .collect();
      assert_eq!(sent, [SequenceNumber::new(3)]);
    }

    // Built-in and user Writers alike answer an ACKNACK only after
    // nack_response_delay, from the SendRepairData timer.
    #[test]
    fn acknack_schedules_repair_after_nack_response_delay() {
      for mut f in [Fixture::sedp(5, 8), Fixture::user(5, 8, None)] {
        f.writer.nack_response_delay = StdDuration::from_millis(200);
        f.ack_nack(1..=5, 1);
        assert_eq!(f.unsent(), 5, "repaired on the ACKNACK");
        assert!(f.reader_proxy().repair_mode);
        assert!(
          f.next_repair_event(StdDuration::from_millis(100)).is_none(),
          "repair before nack_response_delay"
        );
        assert_eq!(f.repair_round(), 5);
        assert!(!f.reader_proxy().repair_mode);
      }
    }

    // A round stops once REPAIR_BATCH_MAX_BYTES have gone out and the next
    // round continues where it stopped.
    #[test]
    fn repair_round_is_byte_limited_and_continues() {
      // 1000-byte samples: the eighth crosses 8 KiB.
      let mut f = Fixture::user(20, 1000, None);
      f.writer.nack_response_delay = StdDuration::ZERO;
      f.ack_nack(1..=20, 1);
      assert_eq!(f.repair_round(), 8);
      assert_eq!(f.repair_round(), 8);
      assert!(f.reader_proxy().repair_mode);
      assert_eq!(f.repair_round(), 4);
      assert!(!f.reader_proxy().repair_mode);
      assert!(f.next_repair_event(StdDuration::from_millis(50)).is_none());

      // Small SEDP-sized samples: many per round, still more than one round.
      let mut f = Fixture::sedp(250, 64);
      f.writer.nack_response_delay = StdDuration::ZERO;
      f.ack_nack(1..=250, 1);
      let first = f.repair_round();
      assert!(first > 50 && first < 250, "first round sent {first}");
      while f.reader_proxy().repair_mode {
        f.repair_round();
      }
      assert_eq!(f.unsent(), 0);
    }

    // convoy change 13: a fragmented sample requested whole is not sent at once
    // through the control queue; it is queued, all its fragments, for the paced
    // fragment repair, which is armed for this reader.
    #[test]
    fn repair_round_queues_a_fragmented_sample_for_the_fragment_repair() {
      let mut f = Fixture::user(3, 20_000, None);
      f.writer.nack_response_delay = StdDuration::ZERO;
      f.ack_nack(1..=3, 1);
      f.repair_round();
      assert!(f.reader_proxy().repair_frags_requested());
      assert!(f
        .reader_events(StdDuration::from_millis(50))
        .iter()
        .any(|event| matches!(event, TimedEvent::SendRepairFrags { .. })));
    }

    // convoy change 55: an ACKNACK that acknowledges part of what was written
    // and requests nothing starts no repair round.
    #[test]
    fn a_plain_acknowledgement_of_part_schedules_no_repair() {
      let mut f = Fixture::user(5, 8, None);
      f.writer.nack_response_delay = StdDuration::ZERO;
      let ack_nack = AckNack {
        reader_id: f.reader_guid.entity_id,
        writer_id: f.writer.my_guid.entity_id,
        reader_sn_state: SequenceNumberSet::new_empty(SequenceNumber::new(4)),
        count: 1,
      };
      f.writer
        .handle_ack_nack(f.reader_guid.prefix, &AckSubmessage::AckNack(ack_nack));
      assert_eq!(f.unsent(), 0);
      assert!(!f.reader_proxy().repair_mode);
      assert!(f.next_repair_event(StdDuration::from_millis(50)).is_none());
      // Asking for one is repaired as before.
      f.ack_nack([4], 2);
      assert_eq!(f.repair_round(), 1);
    }

    // A repeated ACKNACK count is a copy and changes nothing; a new count does.
    #[test]
    fn duplicate_acknack_count_is_ignored() {
      let mut f = Fixture::user(5, 8, None);
      f.writer.nack_response_delay = StdDuration::ZERO;
      f.ack_nack(1..=5, 1);
      assert_eq!(f.repair_round(), 5);

      f.ack_nack(1..=5, 1);
      assert_eq!(f.unsent(), 0);
      assert!(!f.reader_proxy().repair_mode);
      assert!(f.next_repair_event(StdDuration::from_millis(50)).is_none());

      f.ack_nack(1..=5, 2);
      assert_eq!(f.unsent(), 5);
      assert_eq!(f.repair_round(), 5);
    }

    // convoy change 26: a VOLATILE writer announces to a reader matched now, as a
    // GAP, only the samples it has pushed; samples written but not yet pushed go to
    // the new reader too, and are never both pushed and GAPed to it.
    #[test]
    fn volatile_writer_gaps_to_a_new_reader_only_what_it_pushed() {
      let qos = QosPolicyBuilder::new()
        .reliability(Reliability::Reliable {
          max_blocking_time: Duration::from_millis(100),
        })
        .history(History::KeepAll)
        .durability(Durability::Volatile)
        .build();
      let reader_id = EntityId::new([0, 0, 2], EntityKind::READER_WITH_KEY_USER_DEFINED);
      let mut f = Fixture::new(
        EntityId::new([0, 0, 1], EntityKind::WRITER_WITH_KEY_USER_DEFINED),
        qos.clone(),
        reader_id,
        &qos,
        3,
        8,
        None,
      );
      // Written before the match, not yet pushed: for this reader, not a GAP.
      assert!(f.reader_proxy().get_pending_gap().is_empty());
      f.writer.process_pending();
      assert_eq!(f.writer.last_sent, SequenceNumber::new(3));

      // Pushed before the match: a GAP for a reader that matches now.
      let late = GUID::new(GuidPrefix::new(&[3; 12]), reader_id);
      f.writer
        .update_reader_proxy(&RtpsReaderProxy::new(late, qos.clone(), false), &qos);
      let gap: Vec<i64> = f.writer.readers[&late]
        .get_pending_gap()
        .iter()
        .map(|sn| i64::from(*sn))
        .collect();
      assert_eq!(gap, [1, 2, 3]);

      // Its NACK_FRAG for a GAPed sample draws no fragment repair.
      let nack_frag = NackFrag {
        reader_id,
        writer_id: f.writer.my_guid.entity_id,
        writer_sn: SequenceNumber::new(2),
        fragment_number_state: FragmentNumberSet::from_base_and_set(
          FragmentNumber::new(1),
          &BTreeSet::from([FragmentNumber::new(1)]),
        ),
        count: 1,
      };
      f.writer
        .handle_ack_nack(late.prefix, &AckSubmessage::NackFrag(nack_frag));
      assert!(!f.writer.readers[&late].repair_frags_requested());
    }

    // convoy change 81: a reader matched after samples were pushed, which shows
    // (by acknowledging them) that it received them anyway, through the
    // multicast group, gets what it asks for repaired, not GAPed; a reader that
    // acknowledges nothing is a late joiner and is GAPed as before.
    #[test]
    fn a_new_reader_that_was_receiving_is_repaired_not_gaped() {
      let qos = QosPolicyBuilder::new()
        .reliability(Reliability::Reliable {
          max_blocking_time: Duration::from_millis(100),
        })
        .history(History::KeepLast { depth: 16 })
        .durability(Durability::Volatile)
        .build();
      let reader_id = EntityId::new([0, 0, 2], EntityKind::READER_WITH_KEY_USER_DEFINED);
      let mut f = Fixture::new(
        EntityId::new([0, 0, 1], EntityKind::WRITER_WITH_KEY_USER_DEFINED),
        qos.clone(),
        reader_id,
        &qos,
        3,
        8,
        None,
      );
      f.writer.process_pending();
      let acknack = |base: i64, missing: &[i64], count: i32| {
        AckSubmessage::AckNack(AckNack {
          reader_id,
          writer_id: EntityId::new([0, 0, 1], EntityKind::WRITER_WITH_KEY_USER_DEFINED),
          reader_sn_state: SequenceNumberSet::from_base_and_set(
            SequenceNumber::new(base),
            &missing.iter().copied().map(SequenceNumber::new).collect(),
          ),
          count,
        })
      };
      let pending_gap = |writer: &Writer, reader: GUID| -> Vec<i64> {
        writer.readers[&reader]
          .get_pending_gap()
          .iter()
          .map(|sn| i64::from(*sn))
          .collect()
      };

      // Received 1 and 2 by multicast before this writer knew it; asks for 3.
      let receiving = GUID::new(GuidPrefix::new(&[3; 12]), reader_id);
      f.writer
        .update_reader_proxy(&RtpsReaderProxy::new(receiving, qos.clone(), false), &qos);
      assert_eq!(pending_gap(&f.writer, receiving), [1, 2, 3]);
      f.writer
        .handle_ack_nack(receiving.prefix, &acknack(3, &[3], 1));
      assert!(
        pending_gap(&f.writer, receiving).is_empty(),
        "3 was GAPed to a reader that was receiving"
      );
      assert_eq!(
        f.writer.readers[&receiving].first_unsent_change(),
        Some(SequenceNumber::new(3)),
        "3 is repaired"
      );

      // A late joiner that has nothing asks for everything: all of it a GAP.
      let late = GUID::new(GuidPrefix::new(&[4; 12]), reader_id);
      f.writer
        .update_reader_proxy(&RtpsReaderProxy::new(late, qos.clone(), false), &qos);
      f.writer
        .handle_ack_nack(late.prefix, &acknack(1, &[1, 2, 3], 1));
      assert_eq!(pending_gap(&f.writer, late), [1, 2, 3]);
    }

    // convoy change 94: a reader matched while a KEEP_LAST writer's samples go
    // out (its side may not know the writer yet) holds back neither the
    // acknowledgement frontier nor so the window, until it has acknowledged
    // what was pushed before it first answered; then it holds it as any reader.
    #[test]
    fn a_joining_reader_holds_back_no_one_until_it_has_caught_up() {
      let qos = QosPolicyBuilder::new()
        .reliability(Reliability::Reliable {
          max_blocking_time: Duration::from_millis(100),
        })
        .history(History::KeepLast { depth: 8 })
        .durability(Durability::Volatile)
        .build();
      let reader_id = EntityId::new([0, 0, 2], EntityKind::READER_WITH_KEY_USER_DEFINED);
      let mut f = Fixture::new(
        EntityId::new([0, 0, 1], EntityKind::WRITER_WITH_KEY_USER_DEFINED),
        qos.clone(),
        reader_id,
        &qos,
        3,
        8,
        None,
      );
      let acked_all_before = |base: i64, count: i32| {
        AckSubmessage::AckNack(AckNack {
          reader_id,
          writer_id: EntityId::new([0, 0, 1], EntityKind::WRITER_WITH_KEY_USER_DEFINED),
          reader_sn_state: SequenceNumberSet::new_empty(SequenceNumber::new(base)),
          count,
        })
      };
      let write_and_push = |f: &mut Fixture| {
        let data = DDSData::new(SerializedPayload::new(
          RepresentationIdentifier::CDR_LE,
          vec![0; 8],
        ));
        let admitted = f.writer.send_buffer.admit_blocking(
          WriteOptions::default(),
          data,
          Some(StdDuration::ZERO),
        );
        assert!(matches!(admitted, Admission::Admitted(_)));
        f.writer.process_pending();
      };
      let acked_through = |f: &Fixture, sn: i64| {
        f.writer
          .send_buffer
          .is_acked_through(SequenceNumber::new(sn))
      };
      let first = f.reader_guid;
      f.writer.process_pending();
      f.writer
        .handle_ack_nack(first.prefix, &acked_all_before(4, 1));
      assert!(acked_through(&f, 3));

      // A reader matches now.
      let late = GUID::new(GuidPrefix::new(&[3; 12]), reader_id);
      f.writer
        .update_reader_proxy(&RtpsReaderProxy::new(late, qos.clone(), false), &qos);
      assert!(f.writer.readers[&late].joining());
      assert!(
        acked_through(&f, 3),
        "a reader matched now holds back 1..=3"
      );
      // 4 and 5 go out; only the first reader has matched this writer.
      write_and_push(&mut f);
      write_and_push(&mut f);
      f.writer
        .handle_ack_nack(first.prefix, &acked_all_before(6, 2));
      assert!(
        acked_through(&f, 5),
        "a reader that never answered holds back 4..=5"
      );

      // It answers (it has matched this writer), having received nothing: it
      // is GAPed 1..=3 and repaired 4..=5, and holds back no one meanwhile.
      f.writer
        .handle_ack_nack(late.prefix, &acked_all_before(1, 1));
      assert!(f.writer.readers[&late].joining());
      assert!(acked_through(&f, 5));
      // Caught up: from now on it holds the window as the first reader does.
      f.writer
        .handle_ack_nack(late.prefix, &acked_all_before(6, 2));
      assert!(!f.writer.readers[&late].joining());
      write_and_push(&mut f);
      f.writer
        .handle_ack_nack(first.prefix, &acked_all_before(7, 3));
      assert!(!acked_through(&f, 6), "the caught-up reader lacks 6");
      f.writer
        .handle_ack_nack(late.prefix, &acked_all_before(7, 3));
      assert!(acked_through(&f, 6));
    }

    // convoy change 31: a reader whose participant was lost and found again is
    // GAPed only what it acknowledged before; a reader never seen is a late
    // joiner and is GAPed everything pushed.
    #[test]
    fn a_reader_matched_again_is_gaped_only_what_it_acknowledged() {
      let qos = QosPolicyBuilder::new()
        .reliability(Reliability::Reliable {
          max_blocking_time: Duration::from_millis(100),
        })
        .history(History::KeepAll)
        .durability(Durability::Volatile)
        .build();
      let reader_id = EntityId::new([0, 0, 2], EntityKind::READER_WITH_KEY_USER_DEFINED);
      let mut f = Fixture::new(
        EntityId::new([0, 0, 1], EntityKind::WRITER_WITH_KEY_USER_DEFINED),
        qos.clone(),
        reader_id,
        &qos,
        3,
        8,
        None,
      );
      f.writer.process_pending();
      // The reader has 1 and asks for nothing more yet.
      f.writer.handle_ack_nack(
        f.reader_guid.prefix,
        &AckSubmessage::AckNack(AckNack {
          reader_id,
          writer_id: f.writer.my_guid.entity_id,
          reader_sn_state: SequenceNumberSet::from_base_and_set(
            SequenceNumber::new(2),
            &BTreeSet::new(),
          ),
          count: 1,
        }),
      );
      assert_eq!(f.reader_proxy().all_acked_before, SequenceNumber::new(2));

      f.writer.participant_lost(f.reader_guid.prefix);
      assert!(!f.writer.readers.contains_key(&f.reader_guid));
      f.writer
        .update_reader_proxy(&RtpsReaderProxy::new(f.reader_guid, qos.clone(), false), &qos);
      let gap: Vec<i64> = f
        .reader_proxy()
        .get_pending_gap()
        .iter()
        .map(|sn| i64::from(*sn))
        .collect();
      assert_eq!(gap, [1], "samples 2 and 3 are still owed to it");

      let stranger = GUID::new(GuidPrefix::new(&[3; 12]), reader_id);
      f.writer
        .update_reader_proxy(&RtpsReaderProxy::new(stranger, qos.clone(), false), &qos);
      let gap: Vec<i64> = f.writer.readers[&stranger]
        .get_pending_gap()
        .iter()
        .map(|sn| i64::from(*sn))
        .collect();
      assert_eq!(gap, [1, 2, 3]);
    }

    // convoy change 84: the count the application reads on each write follows
    // the writer's matched readers, as they are matched and lost.
    #[test]
    fn the_matched_reader_count_follows_the_writers_readers() {
      let mut f = Fixture::user(0, 8, None);
      let matched = |f: &Fixture| f.writer.send_buffer.fast_push().matched_readers();
      assert_eq!(matched(&f), 1);
      let reader_id = f.reader_guid.entity_id;
      let qos = f.writer.qos_policies.clone();
      let second = GUID::new(GuidPrefix::new(&[3; 12]), reader_id);
      f.writer
        .update_reader_proxy(&RtpsReaderProxy::new(second, qos.clone(), false), &qos);
      assert_eq!(matched(&f), 2);
      // Matched again (an updated announcement) is still one reader.
      f.writer
        .update_reader_proxy(&RtpsReaderProxy::new(second, qos.clone(), false), &qos);
      assert_eq!(matched(&f), 2);
      f.writer.reader_lost(second);
      assert_eq!(matched(&f), 1);
      f.writer.participant_lost(f.reader_guid.prefix);
      assert_eq!(matched(&f), 0);
    }

    // convoy change 32: a reliable user writer that falls silent after a push
    // sends HEARTBEATs soon after, a bounded number, while its reader has not
    // acknowledged; none once the reader has.
    #[test]
    fn a_silent_writer_asks_soon_whether_its_last_sample_arrived() {
      let tail_events = |f: &Fixture, max_wait: StdDuration| {
        let give_up = Instant::now() + max_wait;
        let mut count = 0;
        loop {
          while let Some(fired) = f.timer.borrow_mut().poll() {
            if let DpTimerEvent::Writer {
              event: TimedEvent::TailHeartbeat,
              ..
            } = fired
            {
              count += 1;
            }
          }
          if count > 0 || Instant::now() >= give_up {
            return count;
          }
          std::thread::sleep(StdDuration::from_millis(1));
        }
      };
      let heartbeats_sent = |f: &Fixture| f.writer.send_buffer.fast_push().peek_heartbeat_count();

      let mut f = Fixture::user(3, 8, None);
      f.writer.process_pending();
      let before = heartbeats_sent(&f);
      let mut rounds = 0;
      while tail_events(&f, TAIL_HEARTBEAT_DELAY * 4) > 0 {
        f.writer.handle_timed_event(TimedEvent::TailHeartbeat);
        rounds += 1;
        assert!(rounds <= TAIL_HEARTBEATS_PER_SILENCE + 1, "never stops");
      }
      assert_eq!(
        heartbeats_sent(&f) - before,
        TAIL_HEARTBEATS_PER_SILENCE as i32,
        "one HEARTBEAT per tail round while the reader is behind"
      );

      // A reader that has everything is not asked.
      let mut f = Fixture::user(3, 8, None);
      f.writer.process_pending();
      f.writer.handle_ack_nack(
        f.reader_guid.prefix,
        &AckSubmessage::AckNack(AckNack {
          reader_id: f.reader_guid.entity_id,
          writer_id: f.writer.my_guid.entity_id,
          reader_sn_state: SequenceNumberSet::from_base_and_set(
            SequenceNumber::new(4),
            &BTreeSet::new(),
          ),
          count: 1,
        }),
      );
      let before = heartbeats_sent(&f);
      assert_eq!(tail_events(&f, TAIL_HEARTBEAT_DELAY * 4), 1);
      f.writer.handle_timed_event(TimedEvent::TailHeartbeat);
      assert_eq!(heartbeats_sent(&f), before);
      assert_eq!(tail_events(&f, TAIL_HEARTBEAT_DELAY * 2), 0);
    }

    // convoy change 91: a late plain answer from a reader that follows a group
    // writer's stream draws no HEARTBEAT while the writer pushes; a reader's
    // first ACKNACK, and one to a writer that sends each reader its own copy,
    // still do.
    #[test]
    fn a_late_answer_to_a_pushing_group_writer_draws_no_heartbeat() {
      let mut f = Fixture::user(4, 8, None);
      f.writer.process_pending();
      f.writer.pushes_to_group = true;
      f.writer.last_push_at = Instant::now();
      let heartbeats_sent = |f: &Fixture| f.writer.send_buffer.fast_push().peek_heartbeat_count();
      let answer = |f: &mut Fixture, base: i64, count: i32| {
        f.writer.handle_ack_nack(
          f.reader_guid.prefix,
          &AckSubmessage::AckNack(AckNack {
            reader_id: f.reader_guid.entity_id,
            writer_id: f.writer.my_guid.entity_id,
            reader_sn_state: SequenceNumberSet::from_base_and_set(
              SequenceNumber::new(base),
              &BTreeSet::new(),
            ),
            count,
          }),
        );
      };
      let before = heartbeats_sent(&f);
      answer(&mut f, 1, 1);
      assert_eq!(heartbeats_sent(&f), before + 1, "the first ACKNACK is answered");
      answer(&mut f, 2, 2);
      assert_eq!(heartbeats_sent(&f), before + 1, "one that moves on is not");
      answer(&mut f, 2, 3);
      assert_eq!(heartbeats_sent(&f), before + 1, "nor a late one to a group writer");
      f.writer.pushes_to_group = false;
      answer(&mut f, 2, 4);
      assert_eq!(heartbeats_sent(&f), before + 2, "a late one to a unicast writer is");
    }

    // convoy change 88: a group writer's tail HEARTBEAT asks for no answer
    // while less than half its window is unacknowledged; otherwise, and for a
    // writer that sends each reader its own copy, it asks.
    #[test]
    fn a_group_writer_s_tail_heartbeat_asks_only_past_half_its_window() {
      // KEEP_ALL: a window of 16. A reader that never answered acknowledged
      // nothing before 0, so n samples are n + 1 unacknowledged
      // (`unacked_through`, as for the samples' own HEARTBEATs).
      let mut f = Fixture::user(6, 8, None);
      f.writer.process_pending();
      assert!(!f.writer.tail_heartbeat_may_be_final(), "unicast: asks");
      f.writer.pushes_to_group = true;
      assert!(f.writer.tail_heartbeat_may_be_final(), "7 of 16 unacknowledged");

      let mut f = Fixture::user(7, 8, None);
      f.writer.process_pending();
      f.writer.pushes_to_group = true;
      assert!(!f.writer.tail_heartbeat_may_be_final(), "8 of 16 unacknowledged");
    }

    // While the reader's send socket has queued control datagrams, a round
    // sends nothing and re-arms; once the queue drains, repair proceeds.
    #[test]
    fn repair_waits_for_control_backlog() {
      // A loopback locator would not be used before route resolution.
      let mut f = Fixture::user(5, 8, Some(SocketAddr::from(([192, 0, 2, 1], 9))));
      f.writer.nack_response_delay = StdDuration::ZERO;
      f.writer
        .udp_sender
        .inject_control_backlog(SocketId::Unicast);
      f.ack_nack(1..=5, 1);
      assert_eq!(f.repair_round(), 0);
      assert!(f.reader_proxy().repair_mode);

      f.writer.udp_sender.flush_control(SocketId::Unicast);
      assert_eq!(f.repair_round(), 5);
      assert!(!f.reader_proxy().repair_mode);
    }
  }
}
