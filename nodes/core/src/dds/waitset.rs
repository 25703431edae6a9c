//! DDS's WaitSet over mio readiness: convoy's readers, other sources (the bridge's ROS 2
//! subscriptions) and wakers that end a wait from another thread.

use std::sync::Arc;
use std::time::Duration;

use rustdds::mio1;

/// Waits on several readers at once (DDS's WaitSet): one thread blocks until any attached
/// reader has data or a timeout passes, then takes from each. Readiness is edge-triggered, so
/// after a wake the owner drains every attached reader; the timeout bounds any stall.
pub struct WaitSet {
    poll: mio1::Poll,
    events: mio1::Events,
    tokens: usize,
    /// Readers that signalled in the last wait, indexed by token.
    ready: Vec<bool>,
    /// True when the last wait timed out: callers then sweep every reader, which also
    /// catches data whose edge was consumed without a full drain.
    swept: bool,
}

/// Identifies an attached reader in a [`WaitSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReaderToken(usize);

impl WaitSet {
    pub fn new() -> std::io::Result<WaitSet> {
        Ok(WaitSet {
            poll: mio1::Poll::new()?,
            events: mio1::Events::with_capacity(64),
            tokens: 0,
            ready: vec![false],
            swept: true,
        })
    }

    fn next_token(&mut self) -> mio1::Token {
        self.tokens += 1;
        self.ready.push(true);
        mio1::Token(self.tokens)
    }

    /// Registers a readiness source with this set: a convoy reader (through
    /// [`super::Subscriber::attach`]) or one made outside this crate, such as a ROS 2
    /// subscription of the bridge.
    pub fn attach_source(
        &mut self,
        source: &mut impl mio1::event::Source,
    ) -> std::io::Result<ReaderToken> {
        let token = self.next_token();
        self.poll
            .registry()
            .register(source, token, mio1::Interest::READABLE)?;
        Ok(ReaderToken(token.0))
    }

    /// A waker that ends a [`WaitSet::wait`] from another thread (a worker that finished),
    /// with the token [`WaitSet::ready`] then reports.
    pub fn waker(&mut self) -> std::io::Result<(ReaderToken, Arc<mio1::Waker>)> {
        let token = self.next_token();
        let waker = mio1::Waker::new(self.poll.registry(), token)?;
        Ok((ReaderToken(token.0), Arc::new(waker)))
    }

    /// Blocks until an attached reader has data (true) or `timeout` passes (false).
    pub fn wait(&mut self, timeout: Duration) -> bool {
        self.ready.iter_mut().for_each(|r| *r = false);
        let woke = match self.poll.poll(&mut self.events, Some(timeout)) {
            Ok(()) => !self.events.is_empty(),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => false,
            Err(e) => {
                tracing::error!("waiting on readers failed: {e}");
                std::thread::sleep(timeout.min(Duration::from_millis(1)));
                false
            }
        };
        for event in self.events.iter() {
            if let Some(r) = self.ready.get_mut(event.token().0) {
                *r = true;
            }
        }
        self.swept = !woke;
        woke
    }

    /// Whether the reader of `token` should be read now: it signalled, or the last wait
    /// timed out (a sweep of every reader).
    pub fn ready(&self, token: ReaderToken) -> bool {
        self.swept || self.ready.get(token.0).copied().unwrap_or(true)
    }
}
