//! convoy change 76: a thread per user-traffic socket that blocks in the read.
//!
//! Before this change the participant's event loop polled every socket:
//! `epoll_wait` to learn one is readable, `recvmsg` for the datagram, another
//! `recvmsg` to learn the socket is empty, then the readers. Now each
//! user-traffic socket (unicast and multicast) has a thread that sleeps in
//! `recvmmsg` (`network::batch_receive`) and hands what it read to the readers
//! and their listeners itself, as CycloneDDS's receive threads do; the event
//! loop keeps the discovery sockets, timers, commands and write readiness.
//!
//! The readers, writers and proxies stay one piece of data, the
//! [`DPEventLoop`], which the loop and the receiving threads take turns at
//! behind one mutex ([`SharedLoop`]): a pass of either is what a pass of the
//! loop was, so nothing in the protocol code had to learn about threads. The
//! loop records when it will wake by itself before it sleeps
//! (`DPEventLoop::receive_pass` wakes it when a pass leaves something due
//! sooner); ACKNACKs a receiving thread reads are handed to the writers at the
//! end of its own pass.

use std::{
  sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Mutex, MutexGuard,
  },
  thread::JoinHandle,
};

use log::{error, warn};

use crate::{network::udp_listener::UDPListener, rtps::dp_event_loop::DPEventLoop};

/// The participant's protocol state, owned by whichever thread holds the lock.
pub(crate) struct LoopState(DPEventLoop);

// Safety: DPEventLoop is not Send because its readers and writers share
// `Rc<RefCell<..>>` handles (the timer, the UDP sender, the interface tables).
// Every such handle is created by and lives inside this one DPEventLoop, none
// leaves it, and once it is in the mutex no thread touches any part of it
// except while holding the mutex, which orders all those uses: no two threads
// ever use one of those handles at once.
unsafe impl Send for LoopState {}

impl LoopState {
  pub(crate) fn get_mut(&mut self) -> &mut DPEventLoop {
    &mut self.0
  }
}

/// The participant behind its lock, and whether its threads are to stop.
pub(crate) struct SharedLoop {
  state: Mutex<LoopState>,
  stopping: AtomicBool,
}

impl SharedLoop {
  pub(crate) fn new(event_loop: DPEventLoop) -> Arc<Self> {
    Arc::new(Self {
      state: Mutex::new(LoopState(event_loop)),
      stopping: AtomicBool::new(false),
    })
  }

  /// Takes the participant. A thread that panicked while holding it leaves it
  /// as it was (each pass leaves it consistent between datagrams): the others
  /// go on rather than stop the participant's traffic.
  pub(crate) fn lock(&self) -> MutexGuard<'_, LoopState> {
    self
      .state
      .lock()
      .unwrap_or_else(std::sync::PoisonError::into_inner)
  }
}

/// The receiving threads of one participant.
pub(crate) struct ReceiveThreads {
  shared: Arc<SharedLoop>,
  listeners: Vec<Arc<UDPListener>>,
  handles: Vec<JoinHandle<()>>,
}

impl ReceiveThreads {
  /// Starts a thread for each listener (blocking sockets, out of the poll).
  /// A thread that cannot be started leaves its socket unread, said in the log.
  pub(crate) fn start(
    shared: &Arc<SharedLoop>,
    listeners: Vec<UDPListener>,
    participant_id: u16,
  ) -> Self {
    let mut threads = Self {
      shared: Arc::clone(shared),
      listeners: Vec::new(),
      handles: Vec::new(),
    };
    for listener in listeners {
      let listener = Arc::new(listener);
      let (for_thread, shared) = (Arc::clone(&listener), Arc::clone(shared));
      let spawned = std::thread::Builder::new()
        .name(format!("RustDDS Participant {participant_id} receive"))
        .spawn(move || receive(&shared, &for_thread));
      match spawned {
        Ok(handle) => {
          threads.listeners.push(listener);
          threads.handles.push(handle);
        }
        Err(e) => error!("cannot start a receiving thread, a user traffic socket goes unread: {e}"),
      }
    }
    threads
  }

  /// Ends every thread's read and waits for the threads.
  pub(crate) fn stop(self) {
    self.shared.stopping.store(true, Ordering::Release);
    #[cfg(target_os = "linux")]
    for listener in &self.listeners {
      listener.wake_blocked_reader();
    }
    for handle in self.handles {
      if handle.join().is_err() {
        error!("a receiving thread panicked");
      }
    }
  }
}

/// Errors in a row after which a receiving thread gives its socket up.
const ERRORS_BEFORE_GIVING_UP: u32 = 1000;

#[cfg(target_os = "linux")]
fn receive(shared: &SharedLoop, listener: &UDPListener) {
  use crate::network::batch_receive::{BatchReceiver, BATCH};
  let mut batch = BatchReceiver::new();
  let mut datagrams = Vec::with_capacity(BATCH);
  let mut errors = 0u32;
  loop {
    let read = listener.receive_batch(&mut batch, true, &mut datagrams);
    if shared.stopping.load(Ordering::Acquire) {
      return;
    }
    if let Err(e) = read {
      if e.kind() == std::io::ErrorKind::Interrupted {
        continue;
      }
      errors += 1;
      if errors >= ERRORS_BEFORE_GIVING_UP {
        error!("user traffic socket given up after {errors} errors in a row, the last: {e}");
        return;
      }
      warn!("user traffic socket: {e}");
      // Whatever failed (ENOMEM, ENOBUFS) may pass; do not spin on it.
      std::thread::sleep(std::time::Duration::from_millis(1));
      continue;
    }
    errors = 0;
    if datagrams.is_empty() {
      continue;
    }
    let mut guard = shared.lock();
    let participant = guard.get_mut();
    // A full batch may have left more in the socket: those join this pass
    // (the readers' answers to all of them leave together at its end), as
    // when the event loop read a socket until it was empty.
    loop {
      let full = datagrams.len() == BATCH;
      participant.receive_datagrams(&mut datagrams);
      if !full
        || listener
          .receive_batch(&mut batch, false, &mut datagrams)
          .is_err()
        || datagrams.is_empty()
      {
        break;
      }
    }
    participant.end_receive_pass();
  }
}

#[cfg(not(target_os = "linux"))]
fn receive(_shared: &SharedLoop, _listener: &UDPListener) {}
