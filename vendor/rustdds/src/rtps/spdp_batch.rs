//! convoy change 54: while only repeated announcements arrive on the discovery
//! multicast socket, the event loop reads it a few times a second instead of
//! waking for each datagram.
//!
//! Every participant announces itself every 2 s (change 53) to the multicast
//! group, so each of 64 participants on one host received 32 announcements a
//! second, nearly all repeats that only renew a lease (change 46), and its
//! receive thread woke for each: seven wake-ups in ten of an idle agent's event
//! loop, one in three during a 64-agent lockstep run. Now, after a read of the
//! socket that brought repeats and nothing else, the loop stops listening to it
//! for [`SPDP_BATCH`] and then reads what gathered meanwhile at once. A read
//! that brings anything else (a participant not known yet, a changed
//! announcement, endpoint discovery or liveliness data) ends the pause: the
//! socket is listened to again, so discovery runs at full speed while something
//! is happening. What a pause can delay is one message by at most
//! [`SPDP_BATCH`], far under a lease (5 s) and the announcement period (2 s).

use std::time::{Duration, Instant};

/// How long the loop leaves the discovery multicast socket unread after a read
/// that brought only repeated announcements.
pub(crate) const SPDP_BATCH: Duration = Duration::from_millis(250);

/// What the loop does with the socket after a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SocketInterest {
  /// Wake for its next datagram (registered in the poll).
  Listen,
  /// Leave it unread until the deadline (not registered).
  PauseUntil(Instant),
}

/// The pause state of the discovery multicast socket.
#[derive(Debug, Default)]
pub(crate) struct SpdpBatch {
  paused_until: Option<Instant>,
}

impl SpdpBatch {
  /// When the paused socket is to be read next; None while it is listened to.
  pub fn deadline(&self) -> Option<Instant> {
    self.paused_until
  }

  /// True when the socket is paused and its deadline has come.
  pub fn due(&self, now: Instant) -> bool {
    self.paused_until.is_some_and(|until| now >= until)
  }

  /// A read at `now` handled `datagrams`, and `only_repeats` says whether they
  /// were repeated announcements and nothing else: what to do with the socket
  /// until the next read.
  pub fn after_read(
    &mut self,
    now: Instant,
    datagrams: usize,
    only_repeats: bool,
  ) -> SocketInterest {
    if datagrams > 0 && only_repeats {
      let until = now + SPDP_BATCH;
      self.paused_until = Some(until);
      SocketInterest::PauseUntil(until)
    } else {
      self.paused_until = None;
      SocketInterest::Listen
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn repeats_pause_the_socket_and_anything_else_ends_the_pause() {
    let mut batch = SpdpBatch::default();
    let start = Instant::now();
    assert_eq!(batch.deadline(), None);
    assert!(!batch.due(start));

    assert_eq!(
      batch.after_read(start, 1, true),
      SocketInterest::PauseUntil(start + SPDP_BATCH)
    );
    assert!(!batch.due(start + SPDP_BATCH - Duration::from_millis(1)));
    assert!(batch.due(start + SPDP_BATCH));

    // Repeats gathered during the pause: paused again from the read.
    let later = start + SPDP_BATCH;
    assert_eq!(
      batch.after_read(later, 7, true),
      SocketInterest::PauseUntil(later + SPDP_BATCH)
    );
    // A new participant (or any other message) among them: listen again.
    let news = later + SPDP_BATCH;
    assert_eq!(batch.after_read(news, 3, false), SocketInterest::Listen);
    assert_eq!(batch.deadline(), None);
    assert!(!batch.due(news + SPDP_BATCH));
  }

  #[test]
  fn a_read_that_found_nothing_listens_again() {
    let mut batch = SpdpBatch::default();
    let start = Instant::now();
    batch.after_read(start, 2, true);
    // Nothing gathered during the pause: the domain went quiet, wake for the
    // next datagram instead of reading every pause.
    assert_eq!(
      batch.after_read(start + SPDP_BATCH, 0, true),
      SocketInterest::Listen
    );
    assert_eq!(batch.deadline(), None);
  }
}
