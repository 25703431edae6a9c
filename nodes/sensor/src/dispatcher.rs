//! Asynchronous publishing, after SVL's `BridgeMessageDispatcher`: a sensor hands over a
//! publish job and goes on with its frame; worker threads run the jobs.
//!
//! Each registered publisher holds an exclusive token: from the moment one of its jobs is
//! queued until that job has run, a new job for the same publisher is dropped rather than
//! queued behind it. That keeps one sensor's messages in order and stops a slow publisher from
//! filling the queue with stale samples. Jobs are also dropped while the dispatcher is paused
//! and when the queue is full. Every outcome is counted ([`DropCounts`]) for NodeStatus, and
//! the job's `on_done(bool)` runs exactly once whatever happens: `true` only when the job ran
//! and reported success. A job that returns `false` or panics is a publisher error; a panic is
//! caught so it cannot take a worker thread down.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// A publish job: converts and writes one message, returning whether that worked.
pub type Job = Box<dyn FnOnce() -> bool + Send>;
/// Told once how a job ended: `true` when it was published.
pub type OnDone = Box<dyn FnOnce(bool) + Send>;

/// A publisher registered with one [`Dispatcher`]; the handle of its exclusive token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublisherId(usize);

/// How many jobs were published, and how many were dropped for each reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct DropCounts {
    pub published: u64,
    pub paused: u64,
    pub token_busy: u64,
    pub queue_full: u64,
    /// The job returned false, panicked, or named a publisher this dispatcher does not know.
    pub publisher_error: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum DispatcherError {
    #[error("cannot start dispatcher worker thread: {0}")]
    Spawn(#[from] std::io::Error),
}

struct Queued {
    publisher: usize,
    job: Job,
    on_done: OnDone,
}

struct State {
    queue: VecDeque<Queued>,
    /// Per publisher: whether a job of it is queued or running (its token is taken).
    busy: Vec<bool>,
    paused: bool,
    shutdown: bool,
    counts: DropCounts,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
}

impl Shared {
    /// The state even if a thread panicked holding the lock: the state is only counters and
    /// a queue, each left consistent between statements, so carrying on is safe.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A pool of worker threads publishing jobs from a bounded queue.
pub struct Dispatcher {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    capacity: usize,
}

impl Dispatcher {
    /// Starts `workers` threads (0: one per available core) over a queue holding at most
    /// `queue_capacity` waiting jobs (at least one).
    pub fn new(workers: usize, queue_capacity: usize) -> Result<Self, DispatcherError> {
        let workers = if workers == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            workers
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                busy: Vec::new(),
                paused: false,
                shutdown: false,
                counts: DropCounts::default(),
            }),
            work: Condvar::new(),
        });
        let mut dispatcher = Dispatcher {
            shared,
            workers: Vec::with_capacity(workers),
            capacity: queue_capacity.max(1),
        };
        for i in 0..workers {
            let shared = Arc::clone(&dispatcher.shared);
            let handle = std::thread::Builder::new()
                .name(format!("sensor-publish-{i}"))
                .spawn(move || worker(&shared))?;
            // Pushed one at a time so a failed spawn still shuts the started ones down on drop.
            dispatcher.workers.push(handle);
        }
        Ok(dispatcher)
    }

    /// Registers a publisher and gives it its own exclusive token.
    pub fn register_publisher(&self) -> PublisherId {
        let mut st = self.shared.lock();
        st.busy.push(false);
        PublisherId(st.busy.len() - 1)
    }

    pub fn worker_count(&self) -> usize {
        self.workers.len()
    }

    pub fn queue_capacity(&self) -> usize {
        self.capacity
    }

    /// While paused every new job is dropped (simulation time is not moving, so nothing
    /// should be published); queued jobs still run.
    pub fn set_paused(&self, paused: bool) {
        self.shared.lock().paused = paused;
    }

    pub fn is_paused(&self) -> bool {
        self.shared.lock().paused
    }

    pub fn counts(&self) -> DropCounts {
        self.shared.lock().counts
    }

    /// Jobs waiting for a worker (not counting the ones running).
    pub fn queued(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Queues `job` for `publisher`. Returns true when it was queued; false when it was dropped
    /// at once, in which case `on_done(false)` has already run on this thread.
    pub fn try_queue(&self, publisher: PublisherId, job: Job, on_done: OnDone) -> bool {
        let mut st = self.shared.lock();
        let unknown = st.busy.get(publisher.0).is_none();
        let dropped = match st.busy.get(publisher.0) {
            None => Some(&mut st.counts.publisher_error),
            Some(_) if st.paused => Some(&mut st.counts.paused),
            Some(true) => Some(&mut st.counts.token_busy),
            Some(false) if st.shutdown || st.queue.len() >= self.capacity => {
                Some(&mut st.counts.queue_full)
            }
            Some(false) => None,
        };
        if let Some(count) = dropped {
            *count += 1;
            drop(st);
            if unknown {
                tracing::warn!(
                    publisher = publisher.0,
                    "job for an unknown publisher dropped"
                );
            }
            // Outside the lock: on_done may call back into the dispatcher.
            finish(on_done, false);
            return false;
        }
        st.busy[publisher.0] = true;
        st.queue.push_back(Queued {
            publisher: publisher.0,
            job,
            on_done,
        });
        drop(st);
        self.shared.work.notify_one();
        true
    }
}

/// Runs `on_done`, keeping a panic in it from unwinding into the caller or a worker.
fn finish(on_done: OnDone, ok: bool) {
    if catch_unwind(AssertUnwindSafe(move || on_done(ok))).is_err() {
        tracing::error!("sensor publish callback panicked");
    }
}

fn worker(shared: &Shared) {
    loop {
        let item = {
            let mut st = shared.lock();
            loop {
                if let Some(item) = st.queue.pop_front() {
                    break item;
                }
                // Only exit once the queue is drained, so every queued on_done still runs.
                if st.shutdown {
                    return;
                }
                st = shared.work.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        let ok = match catch_unwind(AssertUnwindSafe(item.job)) {
            Ok(ok) => ok,
            Err(_) => {
                tracing::error!(publisher = item.publisher, "sensor publish job panicked");
                false
            }
        };
        {
            let mut st = shared.lock();
            if ok {
                st.counts.published += 1;
            } else {
                st.counts.publisher_error += 1;
            }
            // The token is released before on_done, so on_done may queue the next message.
            if let Some(b) = st.busy.get_mut(item.publisher) {
                *b = false;
            }
        }
        finish(item.on_done, ok);
    }
}

impl Dispatcher {
    /// Lets the workers finish what is queued, then joins them; later jobs are refused as
    /// queue full. A node calls it before it stops, so its last samples are written.
    pub fn finish(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.work.notify_all();
        for handle in self.workers.drain(..) {
            if handle.join().is_err() {
                tracing::error!("sensor publish worker panicked");
            }
        }
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.finish();
    }
}
