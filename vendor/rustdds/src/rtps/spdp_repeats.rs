//! What keeps a remote participant's lease in the receive thread, without
//! waking discovery.
//!
//! convoy change 46: an SPDP announcement that repeats the last one delivered
//! from its participant refreshes the lease in the receive thread and goes no
//! further.
//!
//! Every participant announces itself periodically (changes 1, 53) to every
//! other. Each announcement went into the SPDP reader's cache, woke the
//! discovery thread, was deserialised there and compared with what the
//! discovery database held (change 42), and was nearly always the same. Among
//! 64 idle participants on one host that was a third of what the domain cost:
//! one discovery wake-up and one parameter-list parse per announcement
//! received, 4,000 a second. A repeat is now recognised by its bytes: the
//! serialized payload equals the last one delivered from the same participant
//! and the participant is still in the discovery database (a participant
//! forgotten or lapsed since is delivered again, so it is rediscovered as
//! before).
//!
//! convoy change 53: any RTPS message from a known participant renews its
//! lease too, at most once per [`RENEW_INTERVAL`] (one discovery-database lock
//! a second per remote participant, whatever its traffic). A participant that
//! talks to this one stays alive by its traffic; announcements are what keeps
//! the quiet ones, so they can come every 2 s against a 5 s lease.

use std::{
  collections::HashMap,
  sync::{Arc, RwLock},
  time::{Duration, Instant},
};

use bytes::Bytes;
use enumflags2::BitFlags;

use crate::{
  discovery::discovery_db::{discovery_db_write, DiscoveryDB},
  messages::submessages::submessages::{DATA_Flags, Data},
  structure::guid::GuidPrefix,
};

/// Past this many remembered participants the memory starts again (a domain
/// with this many live participants only pays one delivery each for it).
const MAX_REMEMBERED: usize = 4096;

/// The least time between two lease renewals by the same participant's
/// traffic: far under the 5 s lease, far over a message's interval.
pub(crate) const RENEW_INTERVAL: Duration = Duration::from_secs(1);

/// The last announcement delivered from each remote participant.
#[derive(Default)]
pub(crate) struct SpdpRepeats {
  /// None: not in use (unit tests of the message receiver without discovery).
  discovery_db: Option<Arc<RwLock<DiscoveryDB>>>,
  last_delivered: HashMap<GuidPrefix, Bytes>,
  /// When each remote participant's traffic last renewed its lease (or was
  /// found unknown to the database).
  last_renewed: HashMap<GuidPrefix, Instant>,
}

impl SpdpRepeats {
  pub fn new(discovery_db: Arc<RwLock<DiscoveryDB>>) -> Self {
    Self {
      discovery_db: Some(discovery_db),
      last_delivered: HashMap::new(),
      last_renewed: HashMap::new(),
    }
  }

  /// The payload of a plain announcement (data, no inline QoS: a disposal or
  /// an unregistration carries inline QoS and is never a repeat).
  fn plain_payload(data: &Data, flags: BitFlags<DATA_Flags>) -> Option<&Bytes> {
    if data.inline_qos.is_some() || !flags.contains(DATA_Flags::Data) {
      return None;
    }
    data.serialized_payload.as_ref()
  }

  /// True if `data` from `from` repeats the last announcement delivered from
  /// it and the participant is still known: its lease has been refreshed, and
  /// the announcement needs no further handling.
  pub fn refresh_if_repeat(
    &self,
    from: GuidPrefix,
    data: &Data,
    flags: BitFlags<DATA_Flags>,
  ) -> bool {
    let Some(db) = self.discovery_db.as_ref() else {
      return false;
    };
    let Some(payload) = Self::plain_payload(data, flags) else {
      return false;
    };
    if self.last_delivered.get(&from) != Some(payload) {
      return false;
    }
    discovery_db_write(db).refresh_lease_if_known(from)
  }

  /// A message from remote participant `from` arrived at `now`: renew its
  /// lease if it is known and the last renewal was [`RENEW_INTERVAL`] ago.
  /// Returns whether the database was asked.
  pub fn renew_on_traffic(&mut self, from: GuidPrefix, now: Instant) -> bool {
    let Some(db) = self.discovery_db.as_ref() else {
      return false;
    };
    if let Some(last) = self.last_renewed.get(&from) {
      if now.saturating_duration_since(*last) < RENEW_INTERVAL {
        return false;
      }
    } else if self.last_renewed.len() >= MAX_REMEMBERED {
      self.last_renewed.clear();
    }
    // Known or not, the next look is a second away: a participant this one
    // forgot is found again by its announcement, not by its traffic.
    self.last_renewed.insert(from, now);
    discovery_db_write(db).refresh_lease_if_known(from);
    true
  }

  /// `data` from `from` went to the SPDP reader: remember it (a copy, so the
  /// receive buffer it came in is not held).
  pub fn delivered(&mut self, from: GuidPrefix, data: &Data, flags: BitFlags<DATA_Flags>) {
    if self.discovery_db.is_none() {
      return;
    }
    match Self::plain_payload(data, flags) {
      Some(payload) => {
        if self.last_delivered.len() >= MAX_REMEMBERED && !self.last_delivered.contains_key(&from) {
          self.last_delivered.clear();
        }
        self
          .last_delivered
          .insert(from, Bytes::copy_from_slice(payload));
      }
      None => {
        self.last_delivered.remove(&from);
      }
    }
  }
}

#[cfg(test)]
mod tests {

  use super::*;
  use crate::{
    dds::statusevents::sync_status_channel,
    structure::{
      guid::{EntityId, GUID},
      sequence_number::SequenceNumber,
    },
    test::test_data::spdp_participant_data,
  };

  fn announcement(payload: &'static [u8]) -> Data {
    Data {
      reader_id: EntityId::SPDP_BUILTIN_PARTICIPANT_READER,
      writer_id: EntityId::SPDP_BUILTIN_PARTICIPANT_WRITER,
      writer_sn: SequenceNumber::from(1),
      inline_qos: None,
      serialized_payload: Some(Bytes::from_static(payload)),
    }
  }

  /// A discovery database that knows one remote participant, and its prefix.
  fn database_with_a_participant() -> (Arc<RwLock<DiscoveryDB>>, GuidPrefix) {
    let (topic_updated_sender, _topic_updated) = std::sync::mpsc::sync_channel::<()>(4);
    let (status_sender, _status_receiver) = sync_status_channel(16).unwrap();
    let mut db = DiscoveryDB::new(
      GUID::new_participant_guid(),
      topic_updated_sender,
      status_sender,
    );
    let data = spdp_participant_data().unwrap();
    db.update_participant(&data);
    (Arc::new(RwLock::new(db)), data.participant_guid.prefix)
  }

  #[test]
  fn a_repeat_of_a_known_participant_refreshes_its_lease_and_stops() {
    let (db, remote) = database_with_a_participant();
    let mut repeats = SpdpRepeats::new(Arc::clone(&db));
    let flags = DATA_Flags::Endianness | DATA_Flags::Data;
    let first = announcement(b"announcement one");
    assert!(
      !repeats.refresh_if_repeat(remote, &first, flags),
      "nothing delivered yet"
    );
    repeats.delivered(remote, &first, flags);
    let before = Instant::now();
    assert!(repeats.refresh_if_repeat(remote, &announcement(b"announcement one"), flags));
    let life = db.read().unwrap().participant_life_sign(remote).unwrap();
    assert!(life >= before, "the lease was refreshed");
    assert!(
      !repeats.refresh_if_repeat(remote, &announcement(b"announcement two"), flags),
      "a changed announcement is delivered"
    );
    let other = GuidPrefix::new(&[8; 12]);
    repeats.delivered(other, &first, flags);
    assert!(
      !repeats.refresh_if_repeat(other, &first, flags),
      "a participant the database does not know (lapsed, forgotten) is delivered again"
    );
  }

  #[test]
  fn traffic_renews_a_known_participants_lease_once_a_second() {
    let (db, remote) = database_with_a_participant();
    let mut repeats = SpdpRepeats::new(Arc::clone(&db));
    let life = |who: GuidPrefix| db.read().unwrap().participant_life_sign(who);
    // Message times are the caller's; the database stamps a renewal with its own clock.
    let start = Instant::now() + Duration::from_secs(10);
    let before = Instant::now();
    assert!(repeats.renew_on_traffic(remote, start));
    let renewed = life(remote).unwrap();
    assert!(renewed >= before, "the lease was renewed");
    assert!(
      !repeats.renew_on_traffic(remote, start + Duration::from_millis(999)),
      "within a second of the last renewal the database is not asked"
    );
    assert_eq!(life(remote), Some(renewed));
    assert!(repeats.renew_on_traffic(remote, start + RENEW_INTERVAL));
    assert!(life(remote).unwrap() >= renewed);

    let stranger = GuidPrefix::new(&[8; 12]);
    let known = life(remote);
    assert!(repeats.renew_on_traffic(stranger, start));
    assert!(
      life(stranger).is_none(),
      "traffic from a participant the database does not know (lapsed, forgotten) adds nothing"
    );
    assert_eq!(life(remote), known, "nor touches another's lease");
    assert!(!repeats.renew_on_traffic(stranger, start + Duration::from_millis(10)));

    let mut without_discovery = SpdpRepeats::default();
    assert!(!without_discovery.renew_on_traffic(remote, start));
  }

  #[test]
  fn a_disposal_is_never_a_repeat_and_forgets_the_last_announcement() {
    let (db, remote) = database_with_a_participant();
    let mut repeats = SpdpRepeats::new(db);
    let flags = DATA_Flags::Endianness | DATA_Flags::Data;
    let plain = announcement(b"announcement");
    repeats.delivered(remote, &plain, flags);
    let key_only = DATA_Flags::Endianness | DATA_Flags::Key;
    assert!(!repeats.refresh_if_repeat(remote, &plain, key_only));
    repeats.delivered(remote, &plain, key_only);
    assert!(!repeats.refresh_if_repeat(remote, &plain, flags));
  }
}
