//! What an agent writes, and how a write that cannot go out at once waits for the agent's
//! own thread.
//!
//! The agent steps in its readers' listeners, in the DDS receive thread (see [`crate::node`]).
//! A reliable write there that finds its send window full fails at once: the acknowledgement
//! it would wait for is one only that thread can process. Such a write, and every write made
//! while the agent's state is locked by its own thread, goes into the [`Outbox`]; the agent's
//! thread writes it out, patiently, with the state unlocked, so the listener is never kept
//! waiting behind a blocked write. Writes leave in the order they were made: once one waits,
//! the ones after it wait too. A write that still finds the window full (a reader of a KEEP_ALL
//! topic that stopped reading: the QoS promises it every sample) stays first in line, and the
//! agent's thread goes on beating its status and serving commands between attempts: the
//! lockstep waits, as the QoS says it must, but the agent is not taken for dead.

use std::collections::VecDeque;
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
}

/// Writes the agent's thread still has to make, in order.
pub struct Outbox {
    outputs: Arc<Outputs>,
    waiting: VecDeque<Outgoing>,
    /// The agent's thread is writing what it took from `waiting`: later writes queue behind.
    flushing: bool,
    /// Wakes the agent's thread when a listener leaves something here.
    wake: Arc<Waker>,
    /// The topic whose write found its window full at the last attempt (reported once).
    blocked_on: Option<String>,
}

impl Outbox {
    pub fn new(outputs: Arc<Outputs>, wake: Arc<Waker>) -> Outbox {
        Outbox {
            outputs,
            waiting: VecDeque::new(),
            flushing: false,
            wake,
            blocked_on: None,
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

    /// Takes back what the last [`Outbox::take`] could not write (`left`, first in line again,
    /// before anything queued meanwhile); with nothing left a listener may write directly
    /// again. True when a write found its window still full.
    pub fn flushed(&mut self, left: Unwritten) -> bool {
        self.flushing = false;
        let Some(topic) = left.blocked_on else {
            if self.blocked_on.take().is_some() {
                tracing::info!("the agent's writes go out again");
            }
            return false;
        };
        if self.blocked_on.is_none() {
            tracing::warn!(
                "{topic}: a reader does not acknowledge (a node that died, or a stopped reader \
                 of a KEEP_ALL topic?); the write waits, the agent goes on serving"
            );
        }
        self.blocked_on = Some(topic);
        let mut writes = left.writes;
        writes.append(&mut self.waiting);
        self.waiting = writes;
        true
    }

    /// Whether writes wait (the agent's thread then does not sleep long).
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Whether writes wait or are being written by the agent's thread.
    pub fn holds_writes(&self) -> bool {
        self.flushing || !self.waiting.is_empty()
    }
}

/// Writes taken out of an [`Outbox`], made by the agent's thread with its state unlocked.
pub struct Flush {
    outputs: Arc<Outputs>,
    writes: VecDeque<Outgoing>,
}

/// What a [`Flush`] could not write: the write that found its window full, and those after it.
pub struct Unwritten {
    writes: VecDeque<Outgoing>,
    blocked_on: Option<String>,
}

impl Flush {
    /// Writes in order, each waiting at most its QoS's `max_blocking_time`, and stops at the
    /// first that finds its window still full.
    pub fn write(mut self) -> Result<Unwritten, PublishError> {
        while let Some(out) = self.writes.pop_front() {
            match out.write(&self.outputs) {
                Ok(()) => {}
                Err(PublishError::WouldBlock { topic }) => {
                    self.writes.push_front(out);
                    return Ok(Unwritten {
                        writes: self.writes,
                        blocked_on: Some(topic),
                    });
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Unwritten {
            writes: VecDeque::new(),
            blocked_on: None,
        })
    }
}
