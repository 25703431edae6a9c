//! Two more ways samples reach an application besides `Subscriber::take`: an async stream fed
//! by a reader thread of its own ([`Subscriber::into_stream`]), and a listener called in the
//! DDS receive thread the moment a sample arrives ([`Subscriber::into_listener`], and
//! [`Subscriber::into_view_listener`] with views read in place).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::endpoint::for_both;
use super::subscriber::{ReaderStats, Received, Subscriber, ViewInfo};
use crate::messages::Message;
use crate::views::Viewable;

impl<M: Message> Subscriber<M> {
    /// Turns this subscriber into an async stream, fed by a dedicated reader thread that
    /// blocks on the reader (no async wake-up chain on the hot path). The thread ends when
    /// the stream is dropped.
    pub fn into_stream(mut self) -> SampleStream<M> {
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        let stats = self.stats();
        let topic = self.endpoint.topic.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("reader {topic}"))
            .spawn(move || {
                while !tx.is_closed() {
                    for sample in self.take_wait(256, Duration::from_millis(100)) {
                        if tx.blocking_send(sample).is_err() {
                            return;
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!(topic = %topic, "cannot start a reader thread: {e}");
        }
        SampleStream { rx, stats, topic }
    }

    /// Hands every sample to `on_sample` in the DDS receive thread, the moment it arrives
    /// (DDS's `on_data_available` listener): no reader thread and no wake-up between the
    /// socket and the application, which a reply written from `on_sample` saves twice per
    /// round trip. `on_sample` must be quick and must not block: it runs where every other
    /// reader and writer of this node's participant is served, and a reliable write from it
    /// that finds the send window full fails at once. Stats, LIFESPAN, deadlines and the time
    /// filter apply as in [`Subscriber::take`]. The listener is removed when the returned
    /// handle drops.
    pub fn into_listener<F>(self, mut on_sample: F) -> Listening<M>
    where
        F: FnMut(Received<M>) + Send + 'static,
    {
        self.listen(Box::new(move |subscriber: &mut Subscriber<M>| {
            let batch = subscriber.take(LISTENER_BATCH);
            let taken = batch.len();
            batch.into_iter().for_each(&mut on_sample);
            taken
        }))
    }

    /// [`Subscriber::into_listener`] with each sample handed over as a view, as
    /// [`Subscriber::take_views`] reads them: a same-host writer's sample in its shared-memory
    /// slot, read in place. `on_view` runs while the slot is read: should the writer reuse the
    /// slot meanwhile (a writer lapping this reader by its whole ring), `on_view` has seen a
    /// mix of two samples, and the sample is counted lost afterwards.
    pub fn into_view_listener<F>(self, mut on_view: F) -> Listening<M>
    where
        M: Viewable,
        F: for<'a> FnMut(ViewInfo, M::View<'a>) + Send + 'static,
    {
        self.listen(Box::new(move |subscriber: &mut Subscriber<M>| {
            subscriber
                .take_views(LISTENER_BATCH, |info, view| on_view(info, view))
                .len()
        }))
    }

    /// Calls `take_batch` in the DDS receive thread whenever samples arrive (until it takes
    /// fewer than a batch), and once now for what arrived before.
    fn listen(self, take_batch: TakeBatch<M>) -> Listening<M> {
        let stats = self.stats();
        let shared = Arc::new(std::sync::Mutex::new(Some(ListenerState {
            subscriber: self,
            take_batch,
        })));
        let weak = Arc::downgrade(&shared);
        let listener: rustdds::DataListener = Arc::new(move || {
            if let Some(state) = weak.upgrade() {
                if let Ok(mut state) = state.lock() {
                    if let Some(state) = state.as_mut() {
                        state.deliver();
                    }
                }
            }
        });
        if let Ok(mut state) = shared.lock() {
            if let Some(state) = state.as_mut() {
                if let Some(lane) = &state.subscriber.lane {
                    let listener = Arc::clone(&listener);
                    for_both!(&lane.descriptors.reader, r => r.set_data_listener(Some(listener)));
                }
                for_both!(&state.subscriber.reader, r => r.set_data_listener(Some(listener)));
                // What arrived before the listener was set is not announced again.
                state.deliver();
            }
        }
        Listening { shared, stats }
    }
}

/// Samples a listener takes per round; it goes on until the reader is empty.
const LISTENER_BATCH: usize = 256;

struct ListenerState<M: Message> {
    subscriber: Subscriber<M>,
    take_batch: TakeBatch<M>,
}

/// A listener's step: takes a batch from the subscriber and hands it to the application;
/// returns how many it took.
type TakeBatch<M> = Box<dyn FnMut(&mut Subscriber<M>) -> usize + Send>;

impl<M: Message> ListenerState<M> {
    fn deliver(&mut self) {
        while (self.take_batch)(&mut self.subscriber) == LISTENER_BATCH {}
    }
}

/// A subscriber delivering to a listener; see [`Subscriber::into_listener`]. Dropping it
/// removes the listener (and drops the reader).
pub struct Listening<M: Message> {
    /// None once dropped: the state itself always drops in the owner's thread.
    shared: Arc<std::sync::Mutex<Option<ListenerState<M>>>>,
    stats: Arc<ReaderStats>,
}

impl<M: Message> Listening<M> {
    pub fn stats(&self) -> Arc<ReaderStats> {
        Arc::clone(&self.stats)
    }
}

impl<M: Message> Drop for Listening<M> {
    fn drop(&mut self) {
        // Take the state out under the lock (a call in flight finishes first), so the reader
        // and whatever the callback captured (a publisher, a node) drop here. Left in the
        // shared cell, they could drop in the receive thread, when a call still running there
        // held the last reference; dropping a participant's last handle in its own event loop
        // would join that very thread.
        let state = match self.shared.lock() {
            Ok(mut cell) => cell.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(state) = state {
            for_both!(&state.subscriber.reader, r => r.set_data_listener(None));
            if let Some(lane) = &state.subscriber.lane {
                for_both!(&lane.descriptors.reader, r => r.set_data_listener(None));
            }
        }
    }
}

/// An async stream of samples; see [`Subscriber::into_stream`].
pub struct SampleStream<M> {
    rx: tokio::sync::mpsc::Receiver<Received<M>>,
    stats: Arc<ReaderStats>,
    topic: String,
}

impl<M> SampleStream<M> {
    pub fn stats(&self) -> Arc<ReaderStats> {
        Arc::clone(&self.stats)
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }
}

impl<M> futures::Stream for SampleStream<M> {
    type Item = Received<M>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}
