//! The work of one frame: on its tick every schedule advances and the due sensors of this node
//! wait (bounded) for the frame's agent states; then each sample is made and handed to the
//! dispatcher, and once every job reported back the frame is acknowledged (sync mode).

use super::*;
use crate::sampling::{self, FrameInput, Sample};

/// How long the first frame a node sees waits for states: a node that joins a running
/// lockstep gets the current tick (TRANSIENT_LOCAL) but not the states written before it.
const JOIN_WAIT: Duration = Duration::from_secs(1);

/// A frame being worked on: due sensors waiting for states, then jobs in flight.
pub(super) struct Work {
    pub(super) tick: Tick,
    sensors: Vec<SensorKey>,
    started: Instant,
    /// When the frame's samples were all handed to the dispatcher.
    dispatched_at: Option<Instant>,
    /// Jobs handed to the dispatcher whose on_done has not come back.
    pub(super) in_flight: usize,
    dispatched: bool,
    /// The first frame this node sees (its states may predate the node).
    first_seen: bool,
}

impl Work {
    pub(super) fn new(tick: Tick, sensors: Vec<SensorKey>, first_seen: bool) -> Work {
        Work {
            tick,
            sensors,
            started: Instant::now(),
            dispatched_at: None,
            in_flight: 0,
            dispatched: false,
            first_seen,
        }
    }
}

impl SensorNode {
    /// Moves the current frame on: start the next tick, make samples once the states are
    /// here, acknowledge once every job is back.
    pub(super) fn advance(&mut self) -> Result<()> {
        loop {
            if self.work.is_none() {
                if self.pending.len() > 1 {
                    // Free-running, a node that fell behind skips to the newest frame. In
                    // lockstep the coordinator only ticks N+1 once N is complete, so older
                    // pending ticks were complete without this node: a node that just joined
                    // and got a writer's backlog.
                    let skip = self.pending.len() - 1;
                    self.counters.frames_skipped += skip as u64;
                    self.pending.drain(..skip);
                }
                let Some(tick) = self.pending.pop_front() else {
                    return Ok(());
                };
                self.start(tick);
                continue;
            }
            let ready = self.dispatch()?;
            if !ready {
                return Ok(());
            }
            let Some(work) = self.work.as_ref() else {
                return Ok(());
            };
            if work.in_flight > 0 {
                return Ok(());
            }
            let frame = work.tick.frame;
            let (started, dispatched_at) = (work.started, work.dispatched_at);
            self.work = None;
            if let Some(at) = dispatched_at {
                self.stages.frame(FrameStage::Images, at.elapsed());
            }
            if self.sync {
                self.ack(frame)?;
            }
            self.stages.frame(FrameStage::Frame, started.elapsed());
        }
    }

    /// Advances every schedule to `tick` and makes the frame's work (if a sensor of this node
    /// is due).
    fn start(&mut self, tick: Tick) {
        let due: BTreeSet<SensorKey> = self
            .schedules
            .iter_mut()
            .filter_map(|(k, s)| s.due(tick.frame, tick.sim_time_ns).then(|| k.clone()))
            .collect();
        let mine: Vec<SensorKey> = due
            .iter()
            .filter(|k| self.active.contains_key(*k))
            .cloned()
            .collect();
        let first_seen = self.last_frame.is_none();
        self.last_frame = Some((tick.clone(), due));
        // States older than the previous frame are never needed again.
        let keep_from = tick.frame.saturating_sub(1);
        for by_frame in self.history.values_mut() {
            *by_frame = by_frame.split_off(&keep_from);
        }
        if !mine.is_empty() {
            self.work = Some(Work::new(tick, mine, first_seen));
        }
    }

    /// The agents whose frame states the current work needs.
    fn needed_agents(&self, work: &Work) -> BTreeSet<String> {
        let mut need = BTreeSet::new();
        for key in &work.sensors {
            let Some(active) = self.active.get(key) else {
                continue;
            };
            if !work.tick.agents.contains(&key.agent_id) {
                continue; // the agent left the run: nothing to sense
            }
            need.insert(key.agent_id.clone());
            if active.spec.kind.spec().sees_others {
                need.extend(work.tick.agents.iter().cloned());
            }
        }
        need
    }

    /// Makes and queues the samples of the current work once its states are here (or the
    /// wait ran out). True once dispatched.
    fn dispatch(&mut self) -> Result<bool> {
        let Some(work) = self.work.as_ref() else {
            return Ok(true);
        };
        if work.dispatched {
            return Ok(true);
        }
        let frame = work.tick.frame;
        let need = self.needed_agents(work);
        let missing: Vec<&String> = need
            .iter()
            .filter(|a| self.history.get(*a).is_none_or(|f| !f.contains_key(&frame)))
            .collect();
        // Lockstep: a frame's states are on their way (the agents wrote them before their
        // FrameDone), so wait for them; only an agent that died (its lease) or states written
        // before this node joined (the first frame it sees) make it go on without. Free
        // running: a frame period at most, then the newest states there are.
        let limit = if !self.sync {
            Duration::from_secs_f64(
                self.scenario.scenario.dt / self.scenario.scenario.real_time_factor,
            )
        } else if work.first_seen {
            JOIN_WAIT
        } else {
            Duration::from_secs_f64(self.scenario.scenario.lease)
        };
        if !missing.is_empty() {
            if work.started.elapsed() < limit {
                return Ok(false);
            }
            if self.sync {
                tracing::warn!(
                    "frame {frame}: no state of {missing:?} after {limit:?}; making this frame's \
                     samples from what is here"
                );
            }
            self.counters.stale_states += 1;
        }
        let Some(mut work) = self.work.take() else {
            return Ok(true);
        };
        let dispatching = Instant::now();
        self.stages
            .frame(FrameStage::States, dispatching - work.started);
        // Every sample first: the cameras' frames are recorded, then go to the device in one
        // submission before any publishing job waits for its read-back.
        let mut made = Vec::with_capacity(work.sensors.len());
        for key in &work.sensors {
            let Some(sample) = self.sample(&work.tick, key) else {
                continue;
            };
            let Some(active) = self.active.get_mut(key) else {
                continue;
            };
            active.seq += 1;
            self.counters.samples_made += 1;
            made.push((key, sample));
        }
        if let Some(rig) = &self.camera {
            if let Err(e) = rig.borrow_mut().flush() {
                tracing::warn!("frame {}: camera frames lost: {e}", work.tick.frame);
            }
        }
        for (key, sample) in made {
            let Some(active) = self.active.get(key) else {
                continue;
            };
            let job = active.output.job(sample);
            let tx = self.completions_tx.clone();
            let waker = Arc::clone(&self.waker);
            let frame = work.tick.frame;
            let on_done = Box::new(move |ok: bool| {
                let _ = tx.send((frame, ok));
                let _ = waker.wake();
            });
            // A job dropped at once has already reported through on_done.
            self.dispatcher.try_queue(active.publisher, job, on_done);
            work.in_flight += 1;
        }
        work.dispatched = true;
        let dispatched_at = Instant::now();
        self.stages
            .frame(FrameStage::Dispatch, dispatched_at - dispatching);
        work.dispatched_at = Some(dispatched_at);
        self.work = Some(work);
        // Completions that raced in before in_flight was counted.
        self.take_completions();
        Ok(true)
    }

    /// The sample of `key` for `tick`, from the newest states at or before the frame.
    fn sample(&self, tick: &Tick, key: &SensorKey) -> Option<Sample> {
        let active = self.active.get(key)?;
        let latest = |agent: &str| -> Option<&AgentState> {
            self.history
                .get(agent)?
                .range(..=tick.frame)
                .next_back()
                .map(|(_, s)| s)
        };
        let own = latest(&key.agent_id)?;
        let previous = self
            .history
            .get(&key.agent_id)
            .and_then(|f| f.get(&own.frame.checked_sub(1)?));
        let others: Vec<AgentState> = if active.spec.kind.spec().sees_others {
            tick.agents
                .iter()
                .filter(|a| **a != key.agent_id)
                .filter_map(|a| latest(a).cloned())
                .collect()
        } else {
            Vec::new()
        };
        sampling::make_sample(
            &self.scenario,
            &key.agent_id,
            &active.spec,
            &FrameInput {
                tick,
                own,
                previous,
                others: &others,
                scene: self.lidar_scene.as_ref(),
                camera: self.camera.as_ref(),
            },
            active.seq,
        )
    }
}
