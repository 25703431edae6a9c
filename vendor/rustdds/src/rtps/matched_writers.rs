//! convoy change 47: a reader's matched writers, indexed by writer entity id
//! as well.
//!
//! A DATA addressed to no reader in particular (reader id UNKNOWN: every
//! sample a writer pushes to all its readers, and discovery's announcements)
//! is handed to each local reader that has matched a writer of that entity id.
//! The message receiver asked every reader, and each reader scanned all its
//! matched writers for the entity id: a reader of built-in topics matches one
//! writer per remote participant, so among 64 participants each datagram cost
//! hundreds of map steps per reader before any work (a tenth of an idle
//! participant's receive thread). Here the count of matched writers per entity
//! id is kept as writers come and go, and the question is one lookup.
//!
//! convoy change 50: the set of entity ids a reader matched changes rarely
//! (discovery), and a process-wide generation number counts those changes, so
//! the message receiver can keep, per writer entity id, the readers to offer a
//! DATA to, and rebuild that only after a change (`generation`). A writer proxy
//! taken out for a moment and put back (`lend`, `give_back`, once per DATA)
//! changes nothing there.
//!
//! convoy change 86: the message receiver offers a user writer's DATA only to
//! the readers that matched that very writer (its GUID), so the generation now
//! moves whenever a reader matches or loses any writer, not only when an
//! entity id comes or goes.

use std::{
  collections::{btree_map, BTreeMap},
  sync::atomic::{AtomicU64, Ordering},
};

use crate::{
  rtps::rtps_writer_proxy::RtpsWriterProxy,
  structure::guid::{EntityId, GuidPrefix, GUID},
};

/// Bumped whenever some reader's set of matched writers changes.
static WRITER_SETS_GENERATION: AtomicU64 = AtomicU64::new(0);

/// convoy changes 50, 86: the number of changes to any reader's set of matched
/// writers so far (in this process). Readers are matched in the thread that
/// reads this, so a change there is seen by its next read.
pub(crate) fn generation() -> u64 {
  WRITER_SETS_GENERATION.load(Ordering::Relaxed)
}

fn writer_sets_changed() {
  WRITER_SETS_GENERATION.fetch_add(1, Ordering::Relaxed);
}

#[derive(Default)]
pub(crate) struct MatchedWriters {
  by_guid: BTreeMap<GUID, RtpsWriterProxy>,
  /// How many of `by_guid` have each entity id (never zero).
  entity_counts: BTreeMap<EntityId, usize>,
}

impl MatchedWriters {
  pub fn len(&self) -> usize {
    self.by_guid.len()
  }

  pub fn get(&self, guid: &GUID) -> Option<&RtpsWriterProxy> {
    self.by_guid.get(guid)
  }

  pub fn get_mut(&mut self, guid: &GUID) -> Option<&mut RtpsWriterProxy> {
    self.by_guid.get_mut(guid)
  }

  pub fn contains_key(&self, guid: &GUID) -> bool {
    self.by_guid.contains_key(guid)
  }

  /// Whether a writer with this entity id (of any participant) is matched.
  pub fn contains_entity(&self, entity_id: EntityId) -> bool {
    self.entity_counts.contains_key(&entity_id)
  }

  pub fn values_mut(&mut self) -> btree_map::ValuesMut<'_, GUID, RtpsWriterProxy> {
    self.by_guid.values_mut()
  }

  pub fn iter_mut(&mut self) -> btree_map::IterMut<'_, GUID, RtpsWriterProxy> {
    self.by_guid.iter_mut()
  }

  /// The writers of one participant.
  pub fn guids_of(&self, prefix: GuidPrefix) -> impl Iterator<Item = GUID> + '_ {
    self.by_guid.range(prefix.range()).map(|(guid, _)| *guid)
  }

  pub fn insert(&mut self, guid: GUID, proxy: RtpsWriterProxy) -> Option<RtpsWriterProxy> {
    let previous = self.by_guid.insert(guid, proxy);
    if previous.is_none() {
      *self.entity_counts.entry(guid.entity_id).or_insert(0) += 1;
      writer_sets_changed();
    }
    previous
  }

  /// Takes a writer's proxy out to work on it beside its reader; `give_back`
  /// puts it back. Meanwhile the writer still counts as matched by entity id.
  pub fn lend(&mut self, guid: &GUID) -> Option<RtpsWriterProxy> {
    self.by_guid.remove(guid)
  }

  /// Puts back a proxy taken with `lend`; returns one that took its place
  /// meanwhile (none should).
  pub fn give_back(&mut self, guid: GUID, proxy: RtpsWriterProxy) -> Option<RtpsWriterProxy> {
    self.by_guid.insert(guid, proxy)
  }

  pub fn remove(&mut self, guid: &GUID) -> Option<RtpsWriterProxy> {
    let removed = self.by_guid.remove(guid)?;
    if let btree_map::Entry::Occupied(mut count) = self.entity_counts.entry(guid.entity_id) {
      *count.get_mut() -= 1;
      if *count.get() == 0 {
        count.remove();
      }
    }
    writer_sets_changed();
    Some(removed)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn proxy(guid: GUID) -> RtpsWriterProxy {
    RtpsWriterProxy::new(guid, vec![], vec![], EntityId::UNKNOWN)
  }

  #[test]
  fn the_entity_index_follows_inserts_and_removals() {
    let entity = EntityId::SEDP_BUILTIN_PUBLICATIONS_WRITER;
    let a = GUID::new(GuidPrefix::new(&[1; 12]), entity);
    let b = GUID::new(GuidPrefix::new(&[2; 12]), entity);
    let mut writers = MatchedWriters::default();
    assert!(!writers.contains_entity(entity));
    writers.insert(a, proxy(a));
    writers.insert(b, proxy(b));
    writers.insert(a, proxy(a)); // replaces: still two
    assert_eq!(writers.len(), 2);
    assert!(writers.remove(&a).is_some());
    assert!(writers.remove(&a).is_none());
    assert!(writers.contains_entity(entity), "b is still matched");
    assert!(!writers.contains_entity(EntityId::SEDP_BUILTIN_SUBSCRIPTIONS_WRITER));
    writers.remove(&b);
    assert!(!writers.contains_entity(entity));
    assert_eq!(writers.guids_of(GuidPrefix::new(&[2; 12])).count(), 0);
  }

  // Tests running in parallel match readers too, so the generation is only
  // checked to move. A loan leaves it alone (it leaves the entity counts
  // alone, which is what is checked for the loan).
  #[test]
  fn the_generation_moves_when_a_writer_comes_or_goes_and_a_loan_keeps_it_matched() {
    let entity = EntityId::SEDP_BUILTIN_SUBSCRIPTIONS_WRITER;
    let a = GUID::new(GuidPrefix::new(&[3; 12]), entity);
    let b = GUID::new(GuidPrefix::new(&[4; 12]), entity);
    let mut writers = MatchedWriters::default();
    let before = generation();
    writers.insert(a, proxy(a));
    assert!(generation() > before, "a first writer of the entity id");
    let lent = writers.lend(&a).expect("matched");
    assert!(writers.contains_entity(entity), "still matched while lent");
    assert!(writers.give_back(a, lent).is_none());
    assert_eq!(writers.len(), 1);
    let before = generation();
    writers.insert(b, proxy(b));
    assert!(
      generation() > before,
      "a second writer of the entity id (change 86)"
    );
    let before = generation();
    writers.remove(&a);
    assert!(
      generation() > before,
      "a writer gone, another of its entity id left"
    );
    assert!(writers.contains_entity(entity), "b is still matched");
    let before = generation();
    writers.remove(&b);
    assert!(generation() > before, "the last writer of the entity id");
    assert!(!writers.contains_entity(entity));
  }
}
