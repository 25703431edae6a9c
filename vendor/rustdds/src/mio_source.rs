// PollEventSource and PollEventSender are an event communication channel that
// carries no data. The receiver is always a mio 1.2 `Source`, and also a mio
// 0.8 `Source` when that optional compatibility feature is enabled.
//
// The internal reactors do not use this channel.

use std::sync::{
  atomic::{AtomicBool, Ordering},
  Arc, Mutex,
};

macro_rules! socketpair_bridge {
  ($modname:ident, $mio:ident) => {
    mod $modname {
      use std::{
        io,
        io::{Read, Write},
        sync::{Arc, Mutex},
      };
      #[cfg(not(target_os = "windows"))]
      use std::os::fd::OwnedFd;
      #[cfg(target_os = "windows")]
      use std::{thread::sleep, time::Duration};

      #[allow(unused_imports)]
      use log::{debug, error, info};
      #[cfg(not(target_os = "windows"))]
      use socketpair::{socketpair_stream, SocketpairStream};

      pub struct Source {
        pub(super) rec: Mutex<$mio::net::TcpStream>,
      }

      #[derive(Clone)]
      pub struct Sender {
        send: Arc<Mutex<$mio::net::TcpStream>>,
      }

      #[cfg(not(target_os = "windows"))]
      fn set_non_blocking(s: SocketpairStream) -> io::Result<SocketpairStream> {
        let owned_fd = OwnedFd::from(s);
        let std_socket = std::net::TcpStream::from(owned_fd);
        std_socket.set_nonblocking(true)?;
        Ok(SocketpairStream::from(OwnedFd::from(std_socket)))
      }

      #[cfg(not(target_os = "windows"))]
      pub fn make() -> io::Result<(Source, Sender)> {
        let (rec_sps, send_sps) = socketpair_stream()?;
        let rec_sps = set_non_blocking(rec_sps)?;
        let send_sps = set_non_blocking(send_sps)?;
        let rec = $mio::net::TcpStream::from_std(std::net::TcpStream::from(OwnedFd::from(rec_sps)));
        let send =
          $mio::net::TcpStream::from_std(std::net::TcpStream::from(OwnedFd::from(send_sps)));
        Ok((
          Source {
            rec: Mutex::new(rec),
          },
          Sender {
            send: Arc::new(Mutex::new(send)),
          },
        ))
      }

      #[cfg(target_os = "windows")]
      pub fn make() -> io::Result<(Source, Sender)> {
        let listener = $mio::net::TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
        let addr = listener.local_addr()?;
        let rec = $mio::net::TcpStream::connect(addr)?;
        let mut accepted = listener.accept();
        while accepted.is_err() {
          sleep(Duration::from_millis(100));
          accepted = listener.accept();
        }
        let (send, _addr_send) = accepted?;
        debug!("IPC socket: {addr:#?} <-> {_addr_send:#?}");
        Ok((
          Source {
            rec: Mutex::new(rec),
          },
          Sender {
            send: Arc::new(Mutex::new(send)),
          },
        ))
      }

      impl Sender {
        pub fn send(&self) {
          match self.send.lock().unwrap().write(&[0xcc]) {
            Ok(_b) => {}
            Err(e) => info!("PollEventSender.send: {e}"),
          }
        }
      }

      impl Source {
        // convoy change 38: the sender writes a byte only when none is
        // pending, so one read normally empties the pair; a full buffer means
        // more may follow (another reader of the pair, or a slow drain).
        pub fn drain(&self) {
          let mut buf = [0u8; 64];
          let rec = self.rec.lock().unwrap();
          loop {
            match (&*rec).read(&mut buf) {
              Ok(n) if n == buf.len() => continue,
              Ok(_) => return,
              Err(err) => match err.kind() {
                io::ErrorKind::WouldBlock => return,
                io::ErrorKind::Interrupted => continue,
                other_kind => {
                  info!("PollEventSource.drain(): {other_kind}");
                  return;
                }
              },
            }
          }
        }
      }

      impl $mio::event::Source for Source {
        fn register(
          &mut self,
          registry: &$mio::Registry,
          token: $mio::Token,
          interests: $mio::Interest,
        ) -> io::Result<()> {
          self
            .rec
            .lock()
            .unwrap()
            .register(registry, token, interests)
        }

        fn reregister(
          &mut self,
          registry: &$mio::Registry,
          token: $mio::Token,
          interests: $mio::Interest,
        ) -> io::Result<()> {
          self
            .rec
            .lock()
            .unwrap()
            .reregister(registry, token, interests)
        }

        fn deregister(&mut self, registry: &$mio::Registry) -> io::Result<()> {
          self.rec.lock().unwrap().deregister(registry)
        }
      }
    }
  };
}

#[cfg(feature = "mio_08")]
socketpair_bridge!(bridge_08, mio_08);
socketpair_bridge!(bridge_1, mio1);

/// convoy change 38: a function the participant's receive thread calls each
/// time a reader's cache changes (see [`PollEventSource::set_listener`]).
pub type DataListener = Arc<dyn Fn() + Send + Sync>;

/// What the two ends of one poll channel share.
#[derive(Default)]
struct PollShared {
  /// A byte is in the socket pair (or about to be) that no drain has read:
  /// the sender writes another only when this was false (convoy change 38).
  pending: AtomicBool,
  /// Fast check for `listener`, read on every send.
  has_listener: AtomicBool,
  listener: Mutex<Option<DataListener>>,
}

std::thread_local! {
  /// True while this thread runs a reader's listener (convoy change 38).
  static IN_LISTENER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True when the calling thread is running a reader's listener: it is a
/// participant's receive thread, so a write from it must not wait for an
/// acknowledgement that only this thread could process. Public since convoy
/// change 51: an application whose listener and other threads share state
/// learns from it which of its writes may fail at once with `WouldBlock`.
pub fn in_listener() -> bool {
  IN_LISTENER.with(|flag| flag.get())
}

pub struct PollEventSource {
  #[cfg(feature = "mio_08")]
  mio08: bridge_08::Source,
  mio1: bridge_1::Source,
  shared: Arc<PollShared>,
}

#[derive(Clone)]
pub struct PollEventSender {
  #[cfg(feature = "mio_08")]
  mio08: bridge_08::Sender,
  mio1: bridge_1::Sender,
  shared: Arc<PollShared>,
}

pub fn make_poll_channel() -> std::io::Result<(PollEventSource, PollEventSender)> {
  #[cfg(feature = "mio_08")]
  let (mio08_source, mio08_sender) = bridge_08::make()?;
  let (mio1_source, mio1_sender) = bridge_1::make()?;
  let shared = Arc::new(PollShared::default());
  Ok((
    PollEventSource {
      #[cfg(feature = "mio_08")]
      mio08: mio08_source,
      mio1: mio1_source,
      shared: Arc::clone(&shared),
    },
    PollEventSender {
      #[cfg(feature = "mio_08")]
      mio08: mio08_sender,
      mio1: mio1_sender,
      shared,
    },
  ))
}

impl PollEventSender {
  /// Signals the reader: runs its listener, if it has one, in this thread,
  /// then makes the pair readable unless it already is.
  pub fn send(&self) {
    if self.shared.has_listener.load(Ordering::Acquire) {
      let listener = self.shared.listener.lock().unwrap().clone();
      if let Some(listener) = listener {
        IN_LISTENER.with(|flag| flag.set(true));
        listener();
        IN_LISTENER.with(|flag| flag.set(false));
        // A reader with a listener is not polled: no byte, no system call.
        return;
      }
    }
    // convoy change 38: one byte per wake-up, not per sample. A drain reads
    // before it clears `pending`, and the reader takes after draining, so a
    // sample that finds `pending` set is taken by the read that follows.
    if self.shared.pending.swap(true, Ordering::SeqCst) {
      return;
    }
    #[cfg(feature = "mio_08")]
    self.mio08.send();
    self.mio1.send();
  }
}

impl PollEventSource {
  /// Drain sent bytes so the socketpair can trigger again. Call before acting
  /// on the event.
  pub fn drain(&self) {
    // Nothing was written since the last drain: no system call. A byte written
    // after this check stays for the next drain (its sample is in the cache
    // before the byte, so the take that follows sees it).
    if !self.shared.pending.load(Ordering::SeqCst) {
      return;
    }
    #[cfg(feature = "mio_08")]
    self.mio08.drain();
    self.mio1.drain();
    self.shared.pending.store(false, Ordering::SeqCst);
  }

  /// convoy change 38: `listener` runs in the participant's receive thread
  /// each time this reader's cache changes, in place of the poll readiness
  /// (a reader with a listener is not polled); `None` removes it. It must not block: it may take from the reader and write (a
  /// write that finds a reliable window full fails at once instead of waiting).
  pub fn set_listener(&self, listener: Option<DataListener>) {
    let present = listener.is_some();
    *self.shared.listener.lock().unwrap() = listener;
    self.shared.has_listener.store(present, Ordering::Release);
  }
}

#[cfg(feature = "mio_08")]
impl mio_08::event::Source for PollEventSource {
  fn register(
    &mut self,
    registry: &mio_08::Registry,
    token: mio_08::Token,
    interests: mio_08::Interest,
  ) -> std::io::Result<()> {
    self.mio08.register(registry, token, interests)
  }

  fn reregister(
    &mut self,
    registry: &mio_08::Registry,
    token: mio_08::Token,
    interests: mio_08::Interest,
  ) -> std::io::Result<()> {
    self.mio08.reregister(registry, token, interests)
  }

  fn deregister(&mut self, registry: &mio_08::Registry) -> std::io::Result<()> {
    self.mio08.deregister(registry)
  }
}

impl mio1::event::Source for PollEventSource {
  fn register(
    &mut self,
    registry: &mio1::Registry,
    token: mio1::Token,
    interests: mio1::Interest,
  ) -> std::io::Result<()> {
    self.mio1.register(registry, token, interests)
  }

  fn reregister(
    &mut self,
    registry: &mio1::Registry,
    token: mio1::Token,
    interests: mio1::Interest,
  ) -> std::io::Result<()> {
    self.mio1.reregister(registry, token, interests)
  }

  fn deregister(&mut self, registry: &mio1::Registry) -> std::io::Result<()> {
    self.mio1.deregister(registry)
  }
}

/// Bounded reader-notification queue with optional mio 0.6 readiness.
#[derive(Clone)]
pub(crate) struct NotificationSender {
  sender: std::sync::mpsc::SyncSender<()>,
  #[cfg(feature = "mio_06")]
  legacy_sender: mio_extras::channel::SyncSender<()>,
}

pub(crate) struct NotificationReceiver {
  receiver: std::sync::mpsc::Receiver<()>,
  #[cfg(feature = "mio_06")]
  legacy_receiver: mio_extras::channel::Receiver<()>,
}

pub(crate) fn notification_channel(capacity: usize) -> (NotificationSender, NotificationReceiver) {
  let (sender, receiver) = std::sync::mpsc::sync_channel(capacity);
  #[cfg(feature = "mio_06")]
  let (legacy_sender, legacy_receiver) = mio_extras::channel::sync_channel(capacity);
  (
    NotificationSender {
      sender,
      #[cfg(feature = "mio_06")]
      legacy_sender,
    },
    NotificationReceiver {
      receiver,
      #[cfg(feature = "mio_06")]
      legacy_receiver,
    },
  )
}

impl NotificationSender {
  pub(crate) fn try_send(&self, value: ()) -> Result<(), std::sync::mpsc::TrySendError<()>> {
    self.sender.try_send(value)?;
    #[cfg(feature = "mio_06")]
    let _ = self.legacy_sender.try_send(());
    Ok(())
  }
}

impl NotificationReceiver {
  pub(crate) fn try_recv(&self) -> Result<(), std::sync::mpsc::TryRecvError> {
    self.receiver.try_recv()
  }
}

#[cfg(feature = "mio_06")]
impl mio_06::Evented for NotificationReceiver {
  fn register(
    &self,
    poll: &mio_06::Poll,
    token: mio_06::Token,
    interest: mio_06::Ready,
    opts: mio_06::PollOpt,
  ) -> std::io::Result<()> {
    self.legacy_receiver.register(poll, token, interest, opts)
  }

  fn reregister(
    &self,
    poll: &mio_06::Poll,
    token: mio_06::Token,
    interest: mio_06::Ready,
    opts: mio_06::PollOpt,
  ) -> std::io::Result<()> {
    self.legacy_receiver.reregister(poll, token, interest, opts)
  }

  fn deregister(&self, poll: &mio_06::Poll) -> std::io::Result<()> {
    self.legacy_receiver.deregister(poll)
  }
}

#[cfg(test)]
mod tests {
  use std::sync::atomic::AtomicUsize;

  use super::*;

  fn readable_bytes(source: &PollEventSource) -> usize {
    use std::io::Read;
    let rec = source.mio1.rec.lock().unwrap();
    let mut buf = [0u8; 64];
    (&*rec).read(&mut buf).unwrap_or(0)
  }

  // convoy change 38: one byte per wake-up, however many samples arrive.
  #[test]
  fn signals_coalesce_until_drained() {
    let (source, sender) = make_poll_channel().unwrap();
    for _ in 0..5 {
      sender.send();
    }
    assert_eq!(readable_bytes(&source), 1);
    // The byte was read behind the drain's back: `pending` still says one is
    // there, so the drain clears it and the next signal writes again.
    source.drain();
    sender.send();
    sender.send();
    source.drain();
    assert_eq!(readable_bytes(&source), 0);
    sender.send();
    assert_eq!(readable_bytes(&source), 1);
  }

  // convoy change 38: a listener runs in the signalling thread, knows it, and
  // replaces the byte.
  #[test]
  fn a_listener_runs_in_the_signalling_thread_instead_of_the_byte() {
    let (source, sender) = make_poll_channel().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let inside = Arc::new(AtomicBool::new(false));
    let (c, i) = (calls.clone(), inside.clone());
    source.set_listener(Some(Arc::new(move || {
      c.fetch_add(1, Ordering::SeqCst);
      i.store(in_listener(), Ordering::SeqCst);
    })));
    sender.send();
    sender.send();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(inside.load(Ordering::SeqCst));
    assert!(!in_listener());
    assert_eq!(readable_bytes(&source), 0);
    source.set_listener(None);
    sender.send();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(readable_bytes(&source), 1);
  }
}
