use std::{
  cmp::max,
  collections::{BTreeMap, BTreeSet},
  net::SocketAddr,
  time::{Duration, Instant},
};

use bit_vec::BitVec;
#[allow(unused_imports)]
use log::{debug, error, info, trace, warn};

use crate::{
  dds::{participant::DomainParticipant, qos::QosPolicies},
  discovery::sedp_messages::DiscoveredReaderData,
  messages::submessages::submessage::AckSubmessage,
  network::util::{path_mtu_payload_for_peer, IfAddr},
  rtps::{
    constant::*,
    transmit::{InterfaceObservations, InterfaceSelector, RouteSelector, SendRoute},
  },
  structure::{
    guid::{EntityId, GUID},
    locator::Locator,
    sequence_number::{FragmentNumber, FragmentNumberSet, SequenceNumber, SequenceNumberRange},
  },
};
use super::reader::ReaderIngredients;

/// convoy change 27: how long a fragment resent to a reader is not resent again
/// on request. A reader asks at every HEARTBEAT for what it lacks, and the
/// HEARTBEATs of the samples pushed meanwhile reach it before the repair does:
/// without a hold-off every one of them had the same hole sent again (a camera
/// stream that lost 46 MB to a full receive buffer was sent 2 GB of repairs). A
/// resent fragment that is lost too is asked for, and sent, once this has passed.
pub const REPAIR_RESEND_HOLDOFF: Duration = Duration::from_millis(10);

#[derive(Debug, PartialEq, Eq, Clone)]
/// ReaderProxy class represents the information an RTPS StatefulWriter
/// maintains on each matched RTPS Reader
//
// TODO: Maybe more of the members could be made private.
pub(crate) struct RtpsReaderProxy {
  /// Identifies the remote matched RTPS Reader that is represented by the
  /// ReaderProxy
  pub remote_reader_guid: GUID,
  /// Identifies the group to which the matched Reader belongs
  pub remote_group_entity_id: EntityId,
  /// List of unicast locators (transport, address, port combinations) that can
  /// be used to send messages to the matched RTPS Reader. The list may be empty
  pub unicast_locator_list: Vec<Locator>,
  /// List of multicast locators (transport, address, port combinations) that
  /// can be used to send messages to the matched RTPS Reader. The list may be
  /// empty
  pub multicast_locator_list: Vec<Locator>,

  /// Loopback unicast locators the reader advertised (e.g. `127.0.0.1`). These
  /// are kept out of `unicast_locator_list` so the legacy all-locators fallback
  /// never sends to a *remote* host's loopback, but are retained here so route
  /// selection can prefer them once the peer is positively confirmed to be on
  /// the same host. See `src/rtps/loopback_same_host_design.md`.
  pub loopback_unicast_locators: Vec<Locator>,

  /// Specifies whether the remote matched RTPS Reader expects in-line QoS to be
  /// sent along with any data.
  expects_in_line_qos: bool,
  /// Specifies whether the remote Reader is responsive to the Writer
  is_active: bool,

  // Reader has positively acked all SequenceNumbers _before_ this.
  // This is directly the same as readerSNState.base in ACKNACK submessage.
  pub all_acked_before: SequenceNumber,

  // List of SequenceNumbers to be sent to Reader. Both unsent and requested by ACKNACK.
  unsent_changes: BTreeSet<SequenceNumber>,

  // Messages that we are not going to send to this Reader.
  // We will send the SNs as GAP until they have been acked.
  // This is to be used in Reliable mode only.
  pending_gap: BTreeSet<SequenceNumber>,
  // true = send repair data messages due to NACKs, buffer messages by DataWriter
  // false = send data messages directly from DataWriter
  pub repair_mode: bool,
  // A SendRepairData / SendRepairFrags timer for this reader is pending. Keeps
  // each reader to one repair round at a time, however many ACKNACKs arrive.
  pub repair_data_scheduled: bool,
  pub repair_frags_scheduled: bool,
  // Count of the last ACKNACK / NACK_FRAG accepted from this reader. A reader
  // sends one ACKNACK to each of our locators; the copies carry the same count.
  pub last_acknack_count: Option<i32>,
  pub last_nackfrag_count: Option<i32>,
  qos: QosPolicies,
  frags_requested: BTreeMap<SequenceNumber, BitVec>,
  // convoy change 27: fragments resent to this reader per sample, and when the
  // last of them went. A request for one of them within REPAIR_RESEND_HOLDOFF
  // of that is not served again: it crossed the resent copy on its way.
  frags_resent: BTreeMap<SequenceNumber, (Instant, BitVec)>,

  // Interface-aware transmit: the resolved send destination for this reader,
  // recomputed when locators or observations change. Defaults to the fallback
  // (legacy all-locators) route until resolved.
  send_route: SendRoute,

  // Per-peer path-MTU budget: the number of bytes available for RTPS
  // submessages in one datagram sent to this reader, derived from the local
  // egress interface's MTU (same-subnet peer) or the conservative default
  // (`FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE`) for peers behind a router / unresolved.
  // Recomputed alongside `send_route`. Used to bound submessage packing and
  // multi-fragment DATAFRAG datagrams. An overestimate only causes IP
  // fragmentation, never data loss.
  max_datagram_payload: usize,

  // convoy change 30: the receive buffer the reader says it has (`rcvbuf=<bytes>;`
  // in its USER_DATA), if it says so.
  announced_receive_buffer: Option<usize>,

  // convoy change 36: when this reader was matched or last sent an ACKNACK.
  pub heard_from_at: Instant,

  // convoy change 94: the reader is still joining (see `joining`) until it
  // acknowledges past this: what the writer had pushed when the reader first
  // answered (it had matched the writer by then). Before that answer it has
  // acknowledged nothing (0), so it is joining whatever this holds.
  pub joins_after: SequenceNumber,
}

/// convoy change 30: the receive buffer a reader announces in its USER_DATA as
/// `rcvbuf=<bytes>;` (convoy's readers do; other readers say nothing).
pub fn receive_buffer_from_user_data(user_data: &[u8]) -> Option<usize> {
  let text = std::str::from_utf8(user_data).ok()?;
  let start = text.find("rcvbuf=")? + "rcvbuf=".len();
  let digits: &str = text[start..].split(';').next()?;
  digits.trim().parse().ok()
}

/// convoy change 30: a reader on this host is reached through loopback, whose
/// datagram budget is far above any network's MTU (see `resolve_path_mtu`).
const SAME_HOST_DATAGRAM_PAYLOAD: usize = 16 * 1024;

impl RtpsReaderProxy {
  pub fn new(remote_reader_guid: GUID, qos: QosPolicies, expects_in_line_qos: bool) -> Self {
    Self {
      remote_reader_guid,
      remote_group_entity_id: EntityId::UNKNOWN,
      unicast_locator_list: Vec::default(),
      multicast_locator_list: Vec::default(),
      loopback_unicast_locators: Vec::default(),
      expects_in_line_qos,
      is_active: true,
      all_acked_before: SequenceNumber::zero(),
      unsent_changes: BTreeSet::new(),
      pending_gap: BTreeSet::new(),
      repair_mode: false,
      repair_data_scheduled: false,
      repair_frags_scheduled: false,
      last_acknack_count: None,
      last_nackfrag_count: None,
      qos,
      frags_requested: BTreeMap::new(),
      frags_resent: BTreeMap::new(),
      send_route: SendRoute::default(),
      max_datagram_payload: FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE,
      announced_receive_buffer: None,
      heard_from_at: Instant::now(),
      joins_after: SequenceNumber::zero(),
    }
  }

  /// convoy change 36: the reader lacks a sample pushed up to `last_sent` and
  /// has sent no ACKNACK for `patience` (its process is stopped, or gone and its
  /// lease not lapsed yet).
  pub fn stopped_answering(
    &self,
    last_sent: SequenceNumber,
    now: Instant,
    patience: Duration,
  ) -> bool {
    self.all_acked_before <= last_sent
      && now.saturating_duration_since(self.heard_from_at) > patience
  }

  /// convoy change 94: the reader has not answered yet, or not yet acknowledged
  /// what the writer had pushed when it first answered.
  /// Its participant may not know the writer yet (SEDP reaches the two sides
  /// at different times): it drops the writer's samples and answers nothing
  /// until it does, and then has those samples repaired.
  pub fn joining(&self) -> bool {
    self.all_acked_before <= self.joins_after
  }

  // We get a (discovery) update on the properties of this remote Reader.
  // Update those properties that Discovery tells us, but keep run-time data.
  pub fn update(&mut self, update: &Self, topic: &str) {
    self.announced_receive_buffer = update.announced_receive_buffer;
    if self.remote_reader_guid != update.remote_reader_guid {
      error!("Update tried to change ReaderProxy GUID!"); // This is like
                                                          // changing primary
                                                          // key
                                                          // Refuse to update
    }
    if self.remote_group_entity_id != update.remote_group_entity_id {
      error!("Update tried to change ReaderProxy group entity id!"); // almost the same?
                                                                     // Refuse to update
    }

    if self.unicast_locator_list != update.unicast_locator_list
      || self.multicast_locator_list != update.multicast_locator_list
    {
      info!("Update changes Locators in ReaderProxy. topic={topic:?}");
      info!(
        "Unicast:\n  Old={:?}\n  New={:?}",
        self.unicast_locator_list, update.unicast_locator_list
      );
      info!(
        "Multicast:\n Old={:?}\n  New={:?}",
        self.multicast_locator_list, update.multicast_locator_list
      );
      // The incoming proxy may carry loopback either inline (built-in path via
      // `get_builtin_reader_proxy`) or already split into its bucket (discovered
      // path). Recombine both before splitting so the invariant holds regardless
      // of how `update` was constructed.
      let combined: Vec<Locator> = update
        .unicast_locator_list
        .iter()
        .chain(update.loopback_unicast_locators.iter())
        .copied()
        .collect();
      let (unicasts, loopbacks) = Self::split_loopback(&combined);
      self.unicast_locator_list = unicasts;
      self.loopback_unicast_locators = loopbacks;
      self
        .multicast_locator_list
        .clone_from(&update.multicast_locator_list);
    }

    self.expects_in_line_qos = update.expects_in_line_qos;

    // Apply QoS policies that are defined (only).
    // Undefined policies do not modify.
    let updated_qos = self.qos.modify_by(&update.qos);

    if self.qos != updated_qos {
      warn!("Update changes QoS in ReaderProxy topic={topic:?}.");
      info!(
        "  details:\n  Old: {:?}\n  New: {:?}",
        self.qos, updated_qos
      );
      self.qos = updated_qos;
    }
  }

  pub fn qos(&self) -> &QosPolicies {
    &self.qos
  }

  pub fn expects_inline_qos(&self) -> bool {
    self.expects_in_line_qos
  }

  pub fn unsent_changes_iter(
    &self,
  ) -> impl std::iter::DoubleEndedIterator<Item = SequenceNumber> + '_ {
    self.unsent_changes.iter().cloned()
  }

  // used to produce log messages
  pub fn unsent_changes_debug(&self) -> Vec<SequenceNumber> {
    self.unsent_changes_iter().collect()
  }

  pub fn first_unsent_change(&self) -> Option<SequenceNumber> {
    self.unsent_changes_iter().next()
  }

  pub fn mark_change_sent(&mut self, seq_num: SequenceNumber) {
    self.unsent_changes.remove(&seq_num);
  }

  // Changes are actually sent (via DATA/DATAFRAG) or reported missing as GAP
  pub fn remove_from_unsent_set_all_before(&mut self, before_seq_num: SequenceNumber) {
    // The handy split_off function "Returns everything after the given key,
    // including the key."
    self.unsent_changes = self.unsent_changes.split_off(&before_seq_num);
  }

  pub fn from_reader(reader: &ReaderIngredients, domain_participant: &DomainParticipant) -> Self {
    let mut self_locators = domain_participant.self_locators(); // This clones a map of locator lists.
    let (unicast_token, multicast_token) = if reader.guid.entity_id.kind().is_user_defined() {
      (USER_TRAFFIC_LISTENER_TOKEN, USER_TRAFFIC_MUL_LISTENER_TOKEN)
    } else {
      (DISCOVERY_LISTENER_TOKEN, DISCOVERY_MUL_LISTENER_TOKEN)
    };
    let unicast_locator_list = self_locators.remove(&unicast_token).unwrap_or_default();
    let multicast_locator_list = self_locators.remove(&multicast_token).unwrap_or_default();
    Self {
      remote_reader_guid: reader.guid,
      remote_group_entity_id: EntityId::UNKNOWN, // TODO
      unicast_locator_list,
      multicast_locator_list,
      // `from_reader` builds the proxy we *advertise* for a local reader (via
      // SEDP), so loopback stays in `unicast_locator_list` here; the bucket is
      // only meaningful for proxies used as live send destinations.
      loopback_unicast_locators: Vec::new(),
      expects_in_line_qos: false,
      is_active: true,
      all_acked_before: SequenceNumber::zero(),
      unsent_changes: BTreeSet::new(),
      pending_gap: BTreeSet::new(),
      repair_mode: false,
      repair_data_scheduled: false,
      repair_frags_scheduled: false,
      last_acknack_count: None,
      last_nackfrag_count: None,
      qos: reader.qos_policy.clone(),
      frags_requested: BTreeMap::new(),
      frags_resent: BTreeMap::new(),
      send_route: SendRoute::default(),
      max_datagram_payload: FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE,
      announced_receive_buffer: None,
      heard_from_at: Instant::now(),
      joins_after: SequenceNumber::zero(),
    }
  }

  fn discovered_or_default(drd: &[Locator], default: &[Locator]) -> Vec<Locator> {
    if drd.is_empty() {
      default.to_vec()
    } else {
      drd.to_vec()
    }
  }

  // OpenDDS (and RustDDS itself) advertise the loopback address as a Locator,
  // which is problematic if we are *not* on the same host. Rather than discard
  // it outright, partition the advertised unicast locators into non-loopback
  // (returned first, used by the normal/fallback send path) and loopback
  // (returned second, used only once the peer is confirmed same-host). See
  // `src/rtps/loopback_same_host_design.md`.
  fn split_loopback(locators: &[Locator]) -> (Vec<Locator>, Vec<Locator>) {
    locators.iter().copied().partition(|l| !l.is_loopback())
  }

  /// Enforce the loopback-bucket invariant: any loopback address in
  /// `unicast_locator_list` is moved into `loopback_unicast_locators`.
  /// Idempotent. Applied to freshly-inserted proxies (e.g. the built-in
  /// `get_builtin_reader_proxy` path, which fills `unicast_locator_list`
  /// inline) so loopback is never used by the non-same-host send path. See
  /// `src/rtps/loopback_same_host_design.md`.
  pub fn normalize_loopback(&mut self) {
    if self.unicast_locator_list.iter().any(Locator::is_loopback) {
      let combined: Vec<Locator> = self
        .unicast_locator_list
        .iter()
        .chain(self.loopback_unicast_locators.iter())
        .copied()
        .collect();
      let (unicasts, loopbacks) = Self::split_loopback(&combined);
      self.unicast_locator_list = unicasts;
      self.loopback_unicast_locators = loopbacks;
    }
  }

  pub fn from_discovered_reader_data(
    discovered_reader_data: &DiscoveredReaderData,
    default_unicast_locators: &[Locator],
    default_multicast_locators: &[Locator],
  ) -> Self {
    let advertised_unicast = Self::discovered_or_default(
      &discovered_reader_data.reader_proxy.unicast_locator_list,
      default_unicast_locators,
    );
    let (unicast_locator_list, loopback_unicast_locators) =
      Self::split_loopback(&advertised_unicast);

    let multicast_locator_list = Self::discovered_or_default(
      &discovered_reader_data.reader_proxy.multicast_locator_list,
      default_multicast_locators,
    );

    Self {
      remote_reader_guid: discovered_reader_data.reader_proxy.remote_reader_guid,
      remote_group_entity_id: EntityId::UNKNOWN, // TODO
      unicast_locator_list,
      multicast_locator_list,
      loopback_unicast_locators,
      expects_in_line_qos: discovered_reader_data.reader_proxy.expects_inline_qos,
      is_active: true,
      all_acked_before: SequenceNumber::zero(),
      unsent_changes: BTreeSet::new(),
      pending_gap: BTreeSet::new(),
      repair_mode: false,
      repair_data_scheduled: false,
      repair_frags_scheduled: false,
      last_acknack_count: None,
      last_nackfrag_count: None,
      qos: discovered_reader_data.subscription_topic_data.qos(),
      frags_requested: BTreeMap::new(),
      frags_resent: BTreeMap::new(),
      send_route: SendRoute::default(),
      max_datagram_payload: FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE,
      announced_receive_buffer: receive_buffer_from_user_data(&discovered_reader_data.user_data),
      heard_from_at: Instant::now(),
      joins_after: SequenceNumber::zero(),
    }
  }

  /// The currently resolved [`SendRoute`] for this reader.
  pub fn send_route(&self) -> SendRoute {
    self.send_route
  }

  /// Recompute this reader's [`SendRoute`] from its advertised locators and the
  /// per-participant [`InterfaceObservations`], using `selector`.
  pub fn resolve_send_route(
    &mut self,
    observations: &InterfaceObservations,
    local_multicast_ifaces: &[InterfaceSelector],
    selector: &dyn RouteSelector,
  ) {
    let observed = observations.get(self.remote_reader_guid.prefix);
    self.send_route = selector.select(
      &self.unicast_locator_list,
      &self.multicast_locator_list,
      &self.loopback_unicast_locators,
      observed,
      local_multicast_ifaces,
    );
  }

  /// The per-peer datagram-payload budget (bytes for RTPS submessages in one
  /// datagram) resolved for this reader. Defaults to
  /// [`FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE`] until [`resolve_path_mtu`] runs.
  ///
  /// [`resolve_path_mtu`]: Self::resolve_path_mtu
  pub fn max_datagram_payload(&self) -> usize {
    self.max_datagram_payload
  }

  /// Recompute this reader's
  /// [`max_datagram_payload`](Self::max_datagram_payload) from its advertised
  /// unicast locators and the local interface table.
  ///
  /// We take the minimum budget over all of the reader's unicast locators
  /// (including the loopback bucket) so that whichever path the [`SendRoute`]
  /// ends up using, the datagram fits. A loopback locator resolves to the
  /// (typically large) loopback-interface MTU, so it never lowers the minimum;
  /// its only effect is to give a same-host-only peer (which advertises *only*
  /// loopback) the large loopback budget instead of the conservative default.
  /// When the reader advertises no unicast locators at all, we keep the
  /// default.
  ///
  /// # Design note: current vs. ideal (future work)
  ///
  /// What could be improved: today a peer only gets a larger-than-fallback
  /// budget if *every* advertised unicast address clears the bar (IPv4,
  /// same-subnet as a local interface, OS-reported MTU > 1500), or if it
  /// advertises loopback only. Ideally it should suffice that the *single
  /// locator we actually send to* has a large MTU (e.g. one jumbo-frame
  /// same-subnet address should win even when the peer also advertises an
  /// ordinary 1500-MTU address).
  ///
  /// Why we take the conservative `min` now: the budget is a single per-reader
  /// scalar, fixed here and consumed at message-build time, and the resulting
  /// datagram can legitimately be sent to *all* of the peer's locators (the
  /// `SendRoute { fallback: true }` path in `Writer::send_message_to_readers`,
  /// and the multicast-to-all path via `min_datagram_payload`). So it must fit
  /// the smallest MTU among them; an overestimate would cause IP fragmentation
  /// on the copies aimed at the smaller-MTU locators.
  ///
  /// Three things missing before "some locator suffices" would be correct:
  /// 1. MTU resolved *per chosen route/locator* rather than as this per-reader
  ///    `min` scalar decoupled from route selection.
  /// 2. A route selector that *deterministically prefers* the large-MTU locator
  ///    (today `DefaultRouteSelector::select_unicast` narrows by observed
  ///    source IP, not by subnet/MTU, and otherwise falls back to all
  ///    locators).
  /// 3. A guarantee that a datagram built with the larger budget is sent to
  ///    *only* that one locator (today the fallback and multicast-to-all paths
  ///    reuse one datagram across many locators).
  pub fn resolve_path_mtu(&mut self, local_interfaces: &[IfAddr], datagram_cap: usize) {
    // convoy change 3: a route narrowed to one unicast locator (no multicast, no
    // fallback) sends every datagram for this reader to that locator only (point
    // 3 above), so its own path MTU is the budget. This is what lets a same-host
    // peer, routed over loopback (MTU 64 KiB), get datagrams of up to a UDP
    // datagram instead of 1452 bytes because it also advertised a LAN address.
    if let SendRoute {
      unicast: Some(locator),
      multicast: None,
      fallback: false,
    } = self.send_route
    {
      if locator.is_udp() {
        let budget = path_mtu_payload_for_peer(local_interfaces, SocketAddr::from(locator).ip());
        self.max_datagram_payload = budget.min(MAX_UDP_DATAGRAM_BUDGET).min(datagram_cap);
        return;
      }
    }
    let budget = self
      .unicast_locator_list
      .iter()
      .chain(self.loopback_unicast_locators.iter())
      .filter(|l| l.is_udp())
      .map(|l| path_mtu_payload_for_peer(local_interfaces, SocketAddr::from(*l).ip()))
      .min();
    self.max_datagram_payload = budget
      .unwrap_or(FALLBACK_MAX_AGGREGATED_DATAGRAM_SIZE)
      .min(datagram_cap);
  }

  /// `newer_count`: this ACKNACK's count is above the last one accepted from
  /// this reader (not the first, not a stale one overtaken by a newer one).
  /// `writer_is_volatile`: the writer keeps no history for readers that match
  /// late (DURABILITY VOLATILE).
  pub fn handle_ack_nack(
    &mut self,
    ack_submessage: &AckSubmessage,
    last_available: SequenceNumber,
    newer_count: bool,
    writer_is_volatile: bool,
  ) {
    match ack_submessage {
      AckSubmessage::AckNack(acknack) => {
        // Eliminate case that base = 0
        let new_all_acked_before = max(acknack.reader_sn_state.base(), SequenceNumber::from(1));
        // Sending acknack with sn_state base = 0 should not happen.
        // This is not allowed by  SequenceNumberSet
        // validity rules (RTPS Spec v2.5 "8.3.5.5 SequenceNumberSet")
        //
        // The correct way to acknowledge that nothing has been received is to
        // send ACKNACK with reader_sn_state.base = 1 and empty set contents.
        // This means everything before 1 has been received, but since
        // sequence numbering starts at 1 by definition
        // (in Section 8.3.5.4 SequenceNumber), it means "nothing"
        //
        // This is logged in `writer` object.

        // Ignore ACKNACK whose readerSNState.base claims ack beyond last_seq + 1 (the
        // writer's last change sequence number). Matches reliable writer/reader
        // semantics; a forged base would otherwise pin all_acked_before and
        // block real ACKNACKs (issue #405).
        let max_plausible_acked_before = last_available.plus_1();
        if new_all_acked_before > max_plausible_acked_before {
          warn!(
            "Ignoring ACKNACK: base {:?} implies ack through unsent data (last sent seq={:?}, max \
             plausible all-acked-before {:?}) reader={:x?}",
            new_all_acked_before,
            last_available,
            max_plausible_acked_before,
            self.remote_reader_guid
          );
          return;
        }

        // convoy change 23: a reader that acknowledged more before and now asks
        // from an earlier base has lost its state about us: its participant
        // dropped ours (a lease that lapsed on its side only, or
        // `forget_participant`) and found it again, so it matched us afresh. We
        // still hold it as matched and all acknowledged; without this it would
        // never get our history again (a reliable writer with nothing unacked
        // sends no HEARTBEAT, and requests below all_acked_before were ignored).
        // Built-in SEDP writers hit this hardest: the reader's participant never
        // learnt our endpoints again. Start it over as a newly matched reader.
        // Such a reader continues its ACKNACK count (convoy's rustdds readers
        // remember it): a stale ACKNACK, overtaken on the way by a newer one,
        // carries an older count and is ignored below as before.
        if new_all_acked_before < self.all_acked_before && newer_count {
          info!(
            "Reader {:x?} acknowledges from {:?} after {:?}: it lost its state, starting it over",
            self.remote_reader_guid, new_all_acked_before, self.all_acked_before
          );
          self.all_acked_before = new_all_acked_before;
          self.unsent_changes.clear();
          self.pending_gap.clear();
          if writer_is_volatile {
            // As for a reader matched now: what we wrote before is not for it.
            self.set_pending_gap_up_to(last_available);
          } else {
            for nack_sn in acknack.reader_sn_state.iter() {
              if nack_sn <= last_available {
                self.unsent_changes.insert(nack_sn);
              }
            }
          }
          return;
        }

        // RTPS ack state is monotonic for a matched reader. Other implementations
        // (e.g. FastDDS) may send a preemptive ACKNACK on discovery with a lower
        // readerSNState.base — ignore rather than regress all_acked_before.
        if new_all_acked_before < self.all_acked_before {
          debug!(
            "Ignoring ACKNACK that would move all_acked_before backwards: old={:?} new={:?} \
             reader={:x?} count={}",
            self.all_acked_before, new_all_acked_before, self.remote_reader_guid, acknack.count
          );
          for nack_sn in acknack.reader_sn_state.iter() {
            if nack_sn >= self.all_acked_before {
              self.unsent_changes.insert(nack_sn);
            }
          }
          return;
        }
        self.remove_from_unsent_set_all_before(new_all_acked_before);
        self.all_acked_before = new_all_acked_before;

        // Insert the requested changes. These are (by construction) greater
        // then new_all_acked_before.
        for nack_sn in acknack.reader_sn_state.iter() {
          self.unsent_changes.insert(nack_sn);
        }
        // sanity check
        if let Some(&high) = self.unsent_changes.iter().next_back() {
          if high > last_available {
            warn!(
              "ReaderProxy {:?} asks for {:?} but I have only up to {:?}. Truncating request. \
               ACKNACK = {:?}",
              self.remote_reader_guid, self.unsent_changes, last_available, acknack
            );
            // Requesting something which is not yet available is unreasonable.
            // Ignore the request from last_available + 1 onwards.
            self.unsent_changes.split_off(&last_available.plus_1());
          }
        }
        // AckNack also clears pending_gap
        self.pending_gap = self.pending_gap.split_off(&self.all_acked_before);
      }

      AckSubmessage::NackFrag(_nack_frag) => {
        // TODO
        error!("NACKFRAG not implemented");
      }
    }
  }

  pub fn insert_pending_gap(&mut self, seq_num: SequenceNumber) {
    self.pending_gap.insert(seq_num);
  }

  /// convoy change 81: `sequence_numbers` are no longer to be GAPed to this
  /// reader (the writer repairs them instead).
  pub fn remove_pending_gap(&mut self, sequence_numbers: &[SequenceNumber]) {
    for sn in sequence_numbers {
      self.pending_gap.remove(sn);
    }
  }

  pub fn set_pending_gap_up_to(&mut self, last_gap_sn: SequenceNumber) {
    // form SN range from 1 to last_gap_sn (inclusive)
    let gap_sn_range = SequenceNumberRange::new(SequenceNumber::new(1), last_gap_sn);
    // Convert to a set and insert the SNs to pending_gap
    let gap_sn_set = BTreeSet::from_iter(gap_sn_range);
    self.pending_gap.extend(gap_sn_set);
  }

  pub fn get_pending_gap(&self) -> &BTreeSet<SequenceNumber> {
    &self.pending_gap
  }

  /// this should be called every time a new CacheChange is set to RTPS writer
  /// HistoryCache
  pub fn notify_new_cache_change(&mut self, sequence_number: SequenceNumber) {
    if sequence_number == SequenceNumber::from(0) {
      error!(
        "new cache change with {:?}! bad! my GUID = {:?}",
        sequence_number, self.remote_reader_guid
      );
    }
    self.unsent_changes.insert(sequence_number);

    // Memory-safety backstop: never let this set grow without bound. In normal
    // operation it is pruned as samples are pushed (see Writer::process_pending)
    // or acknowledged (handle_ack_nack), but a best-effort flood sends no
    // ACKNACKs, so cap the set and drop the oldest (least-useful-to-resend)
    // entries if it ever exceeds the cap.
    while self.unsent_changes.len() > MAX_UNSENT_CHANGES_PER_READER {
      if let Some(&oldest) = self.unsent_changes.iter().next() {
        self.unsent_changes.remove(&oldest);
      } else {
        break;
      }
    }
  }

  #[cfg(test)]
  pub fn unsent_changes_count(&self) -> usize {
    self.unsent_changes.len()
  }

  pub fn acked_up_to_before(&self) -> SequenceNumber {
    self.all_acked_before
  }

  // Fragment handling

  /// convoy change 25: fragments from `not_pushed_from` on (the writer has not
  /// sent them yet; None: it sent them all) are left out of the request.
  ///
  /// convoy change 27: so are fragments resent less than REPAIR_RESEND_HOLDOFF
  /// before `now`.
  pub fn mark_frags_requested(
    &mut self,
    seq_num: SequenceNumber,
    frag_nums: &FragmentNumberSet,
    not_pushed_from: Option<FragmentNumber>,
    now: Instant,
  ) {
    self
      .frags_resent
      .retain(|_, (at, _)| now.saturating_duration_since(*at) < REPAIR_RESEND_HOLDOFF);
    let resent = self.frags_resent.get(&seq_num).map(|(_, bits)| bits);
    let wanted: Vec<FragmentNumber> = frag_nums
      .iter()
      .filter(|f| not_pushed_from.is_none_or(|limit| *f < limit))
      .filter(|f| resent.is_none_or(|bits| !bits.get(usize::from(*f) - 1).unwrap_or(false)))
      .collect();
    if wanted.is_empty() {
      return;
    }
    let req_set = self
      .frags_requested
      .entry(seq_num)
      .or_insert_with(|| BitVec::with_capacity(64)); // default capacity out of hat

    for f in wanted {
      // -1 because FragmentNumbers start at 1
      let idx = usize::from(f) - 1;
      // The bit vector must be long enough to address `idx`. Grow it (filling
      // with `false`) whenever a requested fragment number exceeds the current
      // length, otherwise `set()` would be out of bounds. Note that a freshly
      // inserted `BitVec` has length 0 regardless of its capacity.
      if idx >= req_set.len() {
        req_set.grow(idx + 1 - req_set.len(), false);
      }
      req_set.set(idx, true);
    }
  }

  /// convoy change 13: asks for every fragment of a sample (a fragmented sample
  /// requested whole by ACKNACK), so it is resent by the paced fragment repair.
  pub fn request_all_frags(&mut self, seq_num: SequenceNumber, num_frags: u32) {
    let mut bits = BitVec::with_capacity(num_frags as usize);
    bits.grow(num_frags as usize, true);
    self.frags_requested.insert(seq_num, bits);
  }

  /// Fragments `first..first + count` (1-based) of `seq_num` are no longer
  /// requested: they went out (`resent_at`: in a repair at that time) or the
  /// sample is gone.
  pub fn mark_frags_sent(
    &mut self,
    seq_num: SequenceNumber,
    first: u32,
    count: u32,
    resent_at: Option<Instant>,
  ) {
    // -1 because FragmentNumbers start at 1
    let range = (first as usize).saturating_sub(1)..(first + count) as usize - 1;
    let mut frag_map_emptied = false;
    if let Some(frag_map) = self.frags_requested.get_mut(&seq_num) {
      let len = frag_map.len();
      for idx in range.start.min(len)..range.end.min(len) {
        frag_map.set(idx, false);
      }
      frag_map_emptied = frag_map.none();
    }
    if frag_map_emptied {
      self.frags_requested.remove(&seq_num);
    }
    if let Some(at) = resent_at {
      let (when, bits) = self
        .frags_resent
        .entry(seq_num)
        .or_insert_with(|| (at, BitVec::new()));
      *when = at;
      if bits.len() < range.end {
        bits.grow(range.end - bits.len(), false);
      }
      for idx in range {
        bits.set(idx, true);
      }
    }
  }

  /// convoy change 10: every requested fragment, as runs of consecutive
  /// fragments: (sequence number, first 1-based fragment number, count), lowest
  /// first.
  ///
  /// convoy change 27: a word of the bit vector at a time (a 4 MB sample has
  /// 3,240 fragments, and the repair asks for the runs every round).
  pub fn requested_frag_runs(&self) -> Vec<(SequenceNumber, u32, u32)> {
    let mut runs = Vec::new();
    for (sn, bits) in &self.frags_requested {
      let len = bits.len();
      let mut run: Option<(u32, u32)> = None;
      for (word_index, word) in bits.blocks().enumerate() {
        let base = word_index * 32;
        if word == 0 && run.is_none() {
          continue; // nothing requested in this word
        }
        if word == u32::MAX && base + 32 <= len {
          if let Some((_, count)) = run.as_mut() {
            *count += 32; // the current run goes on through the whole word
            continue;
          }
        }
        for bit in 0..32 {
          let idx = base + bit;
          if idx >= len {
            break;
          }
          let requested = word & (1 << bit) != 0;
          let frag = idx as u32 + 1;
          match (requested, run) {
            (true, Some((first, count))) => run = Some((first, count + 1)),
            (true, None) => run = Some((frag, 1)),
            (false, Some((first, count))) => {
              runs.push((*sn, first, count));
              run = None;
            }
            (false, None) => {}
          }
        }
      }
      if let Some((first, count)) = run {
        runs.push((*sn, first, count));
      }
    }
    runs
  }

  /// convoy change 30: samples up to this size may reach this reader unpaced:
  /// half the receive buffer it announced, if it is on this host (a burst
  /// crosses no link); 0 otherwise.
  pub fn takes_unpaced_up_to(&self) -> usize {
    match self.announced_receive_buffer {
      Some(bytes) if self.max_datagram_payload >= SAME_HOST_DATAGRAM_PAYLOAD => bytes / 2,
      _ => 0,
    }
  }

  pub fn repair_frags_requested(&self) -> bool {
    self.frags_requested.values().any(|rf| rf.any())
  }
}

// convoy change 10: FragBitVecIterator (one sample's requested fragments)
// gave way to RtpsReaderProxy::requested_frag_runs.

// pub enum ChangeForReaderStatusKind {
//   UNSENT,
//   NACKNOWLEDGED,
//   REQUESTED,
//   ACKNOWLEDGED,
//   UNDERWAY,
// }

// ///The RTPS ChangeForReader is an association class that maintains
// information of a CacheChange in the RTPS ///Writer HistoryCache as it
// pertains to the RTPS Reader represented by the ReaderProxy pub struct
// RTPSChangeForReader {   ///Indicates the status of a CacheChange relative to
// the RTPS Reader represented by the ReaderProxy.   pub kind:
// ChangeForReaderStatusKind,   ///Indicates whether the change is relevant to
// the RTPS Reader represented by the ReaderProxy.   pub is_relevant: bool,
// }

// impl RTPSChangeForReader {
//   pub fn new() -> RTPSChangeForReader {
//     RTPSChangeForReader {
//       kind: ChangeForReaderStatusKind::UNSENT,
//       is_relevant: true,
//     }
//   }
// }

#[cfg(test)]
mod bounded_unsent_tests {
  use super::*;
  use crate::structure::guid::GuidPrefix;

  fn test_proxy() -> RtpsReaderProxy {
    let guid = GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN);
    RtpsReaderProxy::new(guid, QosPolicies::default(), false)
  }

  // Regression: the push path (Writer::process_pending) now prunes each sample
  // from unsent_changes via mark_change_sent, so a best-effort flood (no
  // ACKNACKs) does not leave one entry per sample behind. Model that here.
  #[test]
  fn unsent_changes_do_not_grow_when_pruned_on_push() {
    let mut rp = test_proxy();
    for i in 1..=50_000 {
      let sn = SequenceNumber::new(i);
      rp.notify_new_cache_change(sn);
      rp.mark_change_sent(sn); // Writer::process_pending does this on
                               // Complete/drop.
    }
    assert_eq!(
      rp.unsent_changes_count(),
      0,
      "unsent_changes should be empty after every sample is marked sent"
    );
  }

  // Regression / safety net: even if pruning never happened (pathological peer),
  // the hard cap must keep unsent_changes bounded.
  #[test]
  fn unsent_changes_bounded_by_hard_cap() {
    let mut rp = test_proxy();
    let n = (MAX_UNSENT_CHANGES_PER_READER as i64) * 4;
    for i in 1..=n {
      rp.notify_new_cache_change(SequenceNumber::new(i));
    }
    assert!(
      rp.unsent_changes_count() <= MAX_UNSENT_CHANGES_PER_READER,
      "unsent_changes exceeded cap {}: {} entries",
      MAX_UNSENT_CHANGES_PER_READER,
      rp.unsent_changes_count()
    );
  }
}

#[cfg(test)]
mod acknack_tests {
  use super::*;
  use crate::{
    messages::submessages::{ack_nack::AckNack, submessage::AckSubmessage},
    structure::{guid::GuidPrefix, sequence_number::SequenceNumberSet},
  };

  #[test]
  fn acknack_with_base_beyond_sent_data_does_not_advance_all_acked_before() {
    let guid = GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN);
    let mut rp = RtpsReaderProxy::new(guid, QosPolicies::default(), false);
    rp.all_acked_before = SequenceNumber::from(10);

    let forged_base = SequenceNumber::new(4_611_686_018_427_387_993);
    let ack = AckNack {
      reader_id: EntityId::UNKNOWN,
      writer_id: EntityId::UNKNOWN,
      reader_sn_state: SequenceNumberSet::new_empty(forged_base),
      count: 1,
    };

    rp.handle_ack_nack(
      &AckSubmessage::AckNack(ack),
      SequenceNumber::from(100),
      false,
      false,
    );

    assert_eq!(rp.all_acked_before, SequenceNumber::from(10));
  }

  #[test]
  fn acknack_with_valid_base_updates_all_acked_before() {
    let guid = GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN);
    let mut rp = RtpsReaderProxy::new(guid, QosPolicies::default(), false);

    let ack = AckNack {
      reader_id: EntityId::UNKNOWN,
      writer_id: EntityId::UNKNOWN,
      reader_sn_state: SequenceNumberSet::new_empty(SequenceNumber::from(50)),
      count: 1,
    };

    rp.handle_ack_nack(
      &AckSubmessage::AckNack(ack),
      SequenceNumber::from(100),
      false,
      false,
    );

    assert_eq!(rp.all_acked_before, SequenceNumber::from(50));
  }

  #[test]
  fn acknack_with_backwards_base_does_not_regress_all_acked_before() {
    let guid = GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN);
    let mut rp = RtpsReaderProxy::new(guid, QosPolicies::default(), false);
    rp.all_acked_before = SequenceNumber::from(4);

    let ack = AckNack {
      reader_id: EntityId::UNKNOWN,
      writer_id: EntityId::UNKNOWN,
      reader_sn_state: SequenceNumberSet::new_empty(SequenceNumber::from(2)),
      count: 0,
    };

    rp.handle_ack_nack(
      &AckSubmessage::AckNack(ack),
      SequenceNumber::from(3),
      false,
      false,
    );

    assert_eq!(rp.all_acked_before, SequenceNumber::from(4));
  }

  fn acknack(base: i64, requested: &[i64], count: i32) -> AckSubmessage {
    let requested: BTreeSet<SequenceNumber> = requested
      .iter()
      .map(|sn| SequenceNumber::from(*sn))
      .collect();
    let set = SequenceNumberSet::from_base_and_set(SequenceNumber::from(base), &requested);
    AckSubmessage::AckNack(AckNack {
      reader_id: EntityId::UNKNOWN,
      writer_id: EntityId::UNKNOWN,
      reader_sn_state: set,
      count,
    })
  }

  // convoy change 23
  #[test]
  fn a_reader_that_lost_its_state_is_served_from_the_start_again() {
    let guid = GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN);
    let mut rp = RtpsReaderProxy::new(guid, QosPolicies::default(), false);
    let last = SequenceNumber::from(10);
    rp.handle_ack_nack(&acknack(11, &[], 7), last, false, false);
    assert_eq!(rp.all_acked_before, SequenceNumber::from(11));
    // Its participant forgot ours and matched again: it asks from 1, its count goes on.
    rp.handle_ack_nack(&acknack(1, &[], 8), last, true, false);
    assert_eq!(rp.all_acked_before, SequenceNumber::from(1));
    // Answering its HEARTBEAT it asks for everything, and gets it.
    let everything: Vec<i64> = (1..=10).collect();
    rp.handle_ack_nack(&acknack(1, &everything, 9), last, true, false);
    assert_eq!(
      rp.unsent_changes_iter().collect::<Vec<_>>(),
      (1..=10).map(SequenceNumber::from).collect::<Vec<_>>()
    );
  }

  // convoy change 23
  #[test]
  fn a_volatile_writer_gaps_what_a_restarted_reader_missed() {
    let guid = GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN);
    let mut rp = RtpsReaderProxy::new(guid, QosPolicies::default(), false);
    let last = SequenceNumber::from(10);
    rp.handle_ack_nack(&acknack(11, &[], 7), last, false, true);
    rp.handle_ack_nack(&acknack(1, &[], 8), last, true, true);
    assert_eq!(rp.all_acked_before, SequenceNumber::from(1));
    assert_eq!(rp.get_pending_gap().len(), 10);
    assert_eq!(rp.unsent_changes_iter().count(), 0);
  }

  // convoy change 23: an ACKNACK overtaken by a newer one is no restart.
  #[test]
  fn a_stale_acknack_does_not_start_the_reader_over() {
    let guid = GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN);
    let mut rp = RtpsReaderProxy::new(guid, QosPolicies::default(), false);
    let last = SequenceNumber::from(10);
    rp.handle_ack_nack(&acknack(11, &[], 7), last, false, true);
    rp.handle_ack_nack(&acknack(5, &[], 6), last, false, true);
    assert_eq!(rp.all_acked_before, SequenceNumber::from(11));
    assert!(rp.get_pending_gap().is_empty());
  }
}

#[cfg(test)]
mod unpaced_tests {
  use super::*;
  use crate::structure::guid::GuidPrefix;

  // convoy change 30
  #[test]
  fn announced_receive_buffer_is_read_from_user_data() {
    assert_eq!(receive_buffer_from_user_data(b"rcvbuf=4194304;"), Some(4_194_304));
    assert_eq!(
      receive_buffer_from_user_data(b"typehash=RIHS01_ab;rcvbuf=8388608;"),
      Some(8_388_608)
    );
    assert_eq!(receive_buffer_from_user_data(b"typehash=RIHS01_ab;"), None);
    assert_eq!(receive_buffer_from_user_data(b"rcvbuf=lots;"), None);
    assert_eq!(receive_buffer_from_user_data(&[0xff, 0xfe]), None);
  }

  // convoy change 30: only a reader on this host that announced its buffer
  // takes samples unpaced, up to half that buffer.
  #[test]
  fn only_same_host_readers_with_a_buffer_take_samples_unpaced() {
    let mut rp = RtpsReaderProxy::new(
      GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN),
      QosPolicies::default(),
      false,
    );
    rp.max_datagram_payload = 65_000;
    assert_eq!(rp.takes_unpaced_up_to(), 0, "announced nothing");
    rp.announced_receive_buffer = Some(4 << 20);
    assert_eq!(rp.takes_unpaced_up_to(), 2 << 20);
    rp.max_datagram_payload = 1452;
    assert_eq!(rp.takes_unpaced_up_to(), 0, "across a network");
  }
}

#[cfg(test)]
mod frag_repair_tests {
  use super::*;
  use crate::structure::guid::GuidPrefix;

  fn proxy() -> RtpsReaderProxy {
    RtpsReaderProxy::new(
      GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN),
      QosPolicies::default(),
      false,
    )
  }

  fn frags(first: u32, set: impl IntoIterator<Item = u32>) -> FragmentNumberSet {
    FragmentNumberSet::from_base_and_set(
      FragmentNumber::new(first),
      &set.into_iter().map(FragmentNumber::new).collect(),
    )
  }

  // convoy change 27: the word-at-a-time scan finds the same runs as a bit
  // at a time, across word boundaries and up to the vector's end.
  #[test]
  fn requested_frag_runs_span_words() {
    let mut rp = proxy();
    let sn = SequenceNumber::new(3);
    let wanted: Vec<u32> = (5..=7).chain(30..=100).chain(129..=129).chain(190..=200).collect();
    rp.mark_frags_requested(sn, &frags(5, wanted.iter().copied()), None, Instant::now());
    assert_eq!(
      rp.requested_frag_runs(),
      [(sn, 5, 3), (sn, 30, 71), (sn, 129, 1), (sn, 190, 11)]
    );
    rp.request_all_frags(SequenceNumber::new(4), 70);
    assert_eq!(rp.requested_frag_runs()[4], (SequenceNumber::new(4), 1, 70));
  }

  // convoy change 27: fragments resent moments ago are not requested again
  // until REPAIR_RESEND_HOLDOFF has passed; others are.
  #[test]
  fn a_fragment_resent_moments_ago_is_not_resent_on_request() {
    let mut rp = proxy();
    let sn = SequenceNumber::new(9);
    let t0 = Instant::now();
    rp.mark_frags_requested(sn, &frags(10, 10..20), None, t0);
    rp.mark_frags_sent(sn, 10, 10, Some(t0));
    assert!(!rp.repair_frags_requested());

    // The same hole asked for again, with one more fragment: only that one.
    rp.mark_frags_requested(sn, &frags(10, 10..21), None, t0 + Duration::from_millis(2));
    assert_eq!(rp.requested_frag_runs(), [(sn, 20, 1)]);
    rp.mark_frags_sent(sn, 20, 1, None);

    // After the hold-off a lost resend is served again.
    let later = t0 + REPAIR_RESEND_HOLDOFF + Duration::from_millis(1);
    rp.mark_frags_requested(sn, &frags(10, 10..20), None, later);
    assert_eq!(rp.requested_frag_runs(), [(sn, 10, 10)]);
  }
}

#[cfg(test)]
mod route_tests {
  use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};

  use super::*;
  use crate::{
    discovery::sedp_messages::ReaderProxy,
    rtps::transmit::{DefaultRouteSelector, InterfaceObservations, InterfaceSelector},
    structure::guid::GuidPrefix,
  };

  fn udp(ip: [u8; 4], port: u16) -> Locator {
    Locator::UdpV4(SocketAddrV4::new(
      Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3]),
      port,
    ))
  }

  fn iface(ip: [u8; 4]) -> InterfaceSelector {
    InterfaceSelector::Ip(IpAddr::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3])))
  }

  fn proxy_with_prefix(prefix: GuidPrefix) -> RtpsReaderProxy {
    let guid = GUID::new(prefix, EntityId::UNKNOWN);
    RtpsReaderProxy::new(guid, QosPolicies::default(), false)
  }

  #[test]
  fn resolve_falls_back_without_observation() {
    let mut rp = proxy_with_prefix(GuidPrefix::UNKNOWN);
    rp.unicast_locator_list = vec![udp([10, 0, 0, 5], 7410)];
    let observations = InterfaceObservations::new();
    rp.resolve_send_route(
      &observations,
      &[iface([10, 0, 0, 1])],
      &DefaultRouteSelector::default(),
    );
    assert!(rp.send_route().fallback);
  }

  #[test]
  fn resolve_narrows_with_observation() {
    let prefix = GuidPrefix::new(&[9; 12]);
    let mut rp = proxy_with_prefix(prefix);
    rp.unicast_locator_list = vec![udp([10, 0, 0, 5], 7410)];
    rp.multicast_locator_list = vec![udp([239, 255, 0, 1], 7401)];

    let mut observations = InterfaceObservations::new();
    observations.record(
      prefix,
      Some(iface([10, 0, 0, 1])),
      SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 5)), 7410),
    );

    rp.resolve_send_route(
      &observations,
      &[iface([10, 0, 0, 1])],
      &DefaultRouteSelector::default(),
    );

    let route = rp.send_route();
    assert!(!route.fallback);
    assert_eq!(route.unicast, Some(udp([10, 0, 0, 5], 7410)));
    assert_eq!(
      route.multicast,
      Some((udp([239, 255, 0, 1], 7401), iface([10, 0, 0, 1])))
    );
  }

  #[test]
  fn update_partitions_loopback_into_bucket() {
    let prefix = GuidPrefix::new(&[7; 12]);
    let mut rp = proxy_with_prefix(prefix);

    // An incoming update carrying a loopback and a LAN locator inline (as the
    // built-in reader-proxy path does).
    let mut update = proxy_with_prefix(prefix);
    update.unicast_locator_list = vec![udp([127, 0, 0, 1], 7413), udp([10, 0, 0, 5], 7413)];

    rp.update(&update, "topic");

    // Loopback is kept out of the normal list but retained in the bucket.
    assert_eq!(rp.unicast_locator_list, vec![udp([10, 0, 0, 5], 7413)]);
    assert_eq!(
      rp.loopback_unicast_locators,
      vec![udp([127, 0, 0, 1], 7413)]
    );
  }

  #[test]
  fn normalize_loopback_moves_inline_loopback_to_bucket() {
    // Mimics a freshly built built-in reader proxy with loopback inline.
    let mut rp = proxy_with_prefix(GuidPrefix::new(&[5; 12]));
    rp.unicast_locator_list = vec![udp([127, 0, 0, 1], 7410), udp([10, 0, 0, 5], 7410)];
    rp.normalize_loopback();
    assert_eq!(rp.unicast_locator_list, vec![udp([10, 0, 0, 5], 7410)]);
    assert_eq!(
      rp.loopback_unicast_locators,
      vec![udp([127, 0, 0, 1], 7410)]
    );
    // Idempotent.
    rp.normalize_loopback();
    assert_eq!(rp.unicast_locator_list, vec![udp([10, 0, 0, 5], 7410)]);
    assert_eq!(
      rp.loopback_unicast_locators,
      vec![udp([127, 0, 0, 1], 7410)]
    );
  }

  #[test]
  fn discovery_record_keeps_bucket_loopback() {
    // A remote reader bound only to loopback, e.g. CycloneDDS on `lo`.
    let mut rp = proxy_with_prefix(GuidPrefix::new(&[9; 12]));
    rp.loopback_unicast_locators = vec![udp([127, 0, 0, 1], 7413)];

    let record = ReaderProxy::from(rp);
    assert_eq!(record.unicast_locator_list, vec![udp([127, 0, 0, 1], 7413)]);
  }

  #[test]
  fn same_host_route_selects_bucket_loopback() {
    let prefix = GuidPrefix::new(&[8; 12]);
    let mut rp = proxy_with_prefix(prefix);
    rp.unicast_locator_list = vec![udp([10, 0, 0, 5], 7413)];
    rp.loopback_unicast_locators = vec![udp([127, 0, 0, 1], 7413)];

    let mut observations = InterfaceObservations::new();
    observations.record(
      prefix,
      None,
      SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 7410),
    );

    rp.resolve_send_route(&observations, &[], &DefaultRouteSelector::default());

    let route = rp.send_route();
    assert!(!route.fallback);
    assert_eq!(route.unicast, Some(udp([127, 0, 0, 1], 7413)));
  }
}

#[cfg(test)]
mod stopped_reader_tests {
  use super::*;
  use crate::structure::guid::GuidPrefix;

  #[test]
  fn a_reader_is_stopped_only_while_behind_and_silent() {
    let mut rp = RtpsReaderProxy::new(
      GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN),
      QosPolicies::default(),
      false,
    );
    let patience = Duration::from_millis(40);
    let heard = Instant::now();
    rp.heard_from_at = heard;
    rp.all_acked_before = SequenceNumber::new(5); // has 1..=4
    let later = heard + Duration::from_millis(100);
    // Has everything pushed: never stopped, however long silent.
    assert!(!rp.stopped_answering(SequenceNumber::new(4), later, patience));
    // Lacks sample 5: stopped once silent for longer than the patience.
    assert!(!rp.stopped_answering(SequenceNumber::new(5), heard + patience, patience));
    assert!(rp.stopped_answering(SequenceNumber::new(5), later, patience));
    // It answers again: back in.
    rp.heard_from_at = later;
    assert!(!rp.stopped_answering(SequenceNumber::new(5), later, patience));
  }

  #[test]
  fn a_reader_joins_once_it_acknowledges_past_what_was_pushed_when_it_first_answered() {
    let mut rp = RtpsReaderProxy::new(
      GUID::new(GuidPrefix::UNKNOWN, EntityId::UNKNOWN),
      QosPolicies::default(),
      false,
    );
    // Matched before anything was pushed: joining until its first ACKNACK.
    assert!(rp.joining());
    rp.all_acked_before = SequenceNumber::new(1);
    assert!(!rp.joining());
    // First answered after 1..=10 were pushed: that ACKNACK of nothing, sent
    // on matching, does not make it a member yet.
    rp.joins_after = SequenceNumber::new(10);
    assert!(rp.joining());
    rp.all_acked_before = SequenceNumber::new(10);
    assert!(rp.joining());
    rp.all_acked_before = SequenceNumber::new(11);
    assert!(!rp.joining());
  }
}
