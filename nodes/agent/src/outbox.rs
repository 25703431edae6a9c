//! What an agent writes, and how a write that cannot go out at once waits for the agent's
//! own thread.
//!
//! The agent steps in its readers' listeners, in the DDS receive thread (see [`crate::node`]).
//! A reliable write there that finds its send window full fails at once: the acknowledgement
//! it would wait for is one only that thread can process. Such a write, and every write made
//! while the agent's state is locked by its own thread, goes into the [`Outbox`]; the agent's
//! thread writes it out, patiently, with the state unlocked, so the listener is never kept
//! waiting behind a blocked write. Writes leave in the order they were made: once one waits,
//! the ones after it wait too.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use convoy_core::dds::{in_listener, PublishError, Publisher, Waker};
use convoy_core::messages::{AgentState, FrameDone, WorldReply};

/// The agent's writers, shared by its listener and its own thread.
pub struct Outputs {
    pub state: Publisher<AgentState>,
    pub done: Publisher<FrameDone>,
    pub replies: Publisher<WorldReply>,
}

/// One write of the agent.
#[derive(Debug, Clone)]
pub enum Outgoing {
    State(AgentState),
    Done(FrameDone),
    Reply(WorldReply),
}

impl Outgoing {
    fn write(&self, outputs: &Outputs) -> Result<(), PublishError> {
        match self {
            Outgoing::State(s) => outputs.state.write(s.clone()),
            Outgoing::Done(d) => outputs.done.write(d.clone()),
            Outgoing::Reply(r) => outputs.replies.write(r.clone()),
        }
    }

    fn write_patiently(self, outputs: &Outputs, stop: &AtomicBool) -> Result<(), PublishError> {
        match self {
            Outgoing::State(s) => outputs.state.write_patiently(s, stop),
            Outgoing::Done(d) => outputs.done.write_patiently(d, stop),
            Outgoing::Reply(r) => outputs.replies.write(r),
        }
    }
}

/// Writes the agent's thread still has to make, in order.
pub struct Outbox {
    outputs: Arc<Outputs>,
    waiting: VecDeque<Outgoing>,
    /// The agent's thread is writing what it took from `waiting`: later writes queue behind.
    flushing: bool,
    /// Wakes the agent's thread when a listener leaves something here.
    wake: Arc<Waker>,
}

impl Outbox {
    pub fn new(outputs: Arc<Outputs>, wake: Arc<Waker>) -> Outbox {
        Outbox {
            outputs,
            waiting: VecDeque::new(),
            flushing: false,
            wake,
        }
    }

    /// Writes `out` now when this is a listener and nothing waits before it; otherwise (or
    /// when the send window is full) leaves it for the agent's thread.
    pub fn send(&mut self, out: Outgoing) -> Result<(), PublishError> {
        let listener = in_listener();
        if listener && self.waiting.is_empty() && !self.flushing {
            match out.write(&self.outputs) {
                Err(PublishError::WouldBlock { .. }) => {}
                other => return other,
            }
        }
        self.waiting.push_back(out);
        if listener {
            self.wake();
        }
        Ok(())
    }

    /// Wakes the agent's thread (a listener left work for it).
    pub fn wake(&self) {
        if let Err(e) = self.wake.wake() {
            tracing::error!("cannot wake the agent's thread: {e}");
        }
    }

    /// Hands the waiting writes to the agent's thread, which writes them with
    /// [`Flush::write`] and then calls [`Outbox::flushed`].
    pub fn take(&mut self) -> Flush {
        self.flushing = !self.waiting.is_empty();
        Flush {
            outputs: Arc::clone(&self.outputs),
            writes: std::mem::take(&mut self.waiting),
        }
    }

    /// The writes of the last [`Outbox::take`] are out: a listener may write directly again.
    pub fn flushed(&mut self) {
        self.flushing = false;
    }

    /// Whether writes wait (the agent's thread then does not sleep long).
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

/// Writes taken out of an [`Outbox`], made by the agent's thread with its state unlocked.
pub struct Flush {
    outputs: Arc<Outputs>,
    writes: VecDeque<Outgoing>,
}

impl Flush {
    pub fn write(self, stop: &AtomicBool) -> Result<(), PublishError> {
        for out in self.writes {
            out.write_patiently(&self.outputs, stop)?;
        }
        Ok(())
    }
}
