//! The frame loop: ticks, the lockstep barrier (asking again when it stalls), the run's end.

use super::*;

impl Coordinator {
    pub(super) fn tick(&self, frame: u64) -> Tick {
        let dt_ns = self.scenario.dt_ns();
        let states = if self.relay() && frame > 0 {
            self.book
                .get(&(frame - 1))
                .map(|by_agent| {
                    self.members
                        .iter()
                        .filter_map(|a| by_agent.get(a).cloned())
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        Tick {
            frame,
            sim_time_ns: frame as i64 * dt_ns,
            dt_ns,
            paused: self.paused,
            agents: self.members.clone(),
            states,
        }
    }

    pub(super) fn last_frame(&self, config: &CoordinatorConfig) -> u64 {
        let by_duration = config
            .duration
            .map(|d| (d / self.scenario.scenario.dt).round() as u64);
        match (config.frames, by_duration) {
            (Some(f), Some(d)) => f.min(d),
            (Some(f), None) => f,
            (None, Some(d)) => d,
            (None, None) => u64::MAX,
        }
    }

    pub(super) fn run_frames(&mut self, config: &CoordinatorConfig) -> Result<RunSummary> {
        let last = self.last_frame(config);
        let started = Instant::now();
        let datagrams_at_start = convoy_core::dds::udp_datagrams_sent();
        let mut barrier_us = Vec::new();
        let mut last_progress = Instant::now();
        let mut progress_frame = 0;
        let dt = self.scenario.scenario.dt;
        let rtf = self.scenario.scenario.real_time_factor;
        let mut next_wall = Instant::now();
        let mut sim_time_ns: i64 = 0;
        let mut last_tick_wall = Instant::now();
        while self.frame < last && !self.stopped() {
            if self.paused {
                self.service(HOUSEKEEPING)?;
                next_wall = Instant::now();
                continue;
            }
            let frame = self.frame + 1;
            let mut tick = self.tick(frame);
            match self.mode {
                ClockMode::Sync => {
                    let owing = self.sensors.frame_due(frame, tick.sim_time_ns);
                    let written = Instant::now();
                    self.write_tick(tick.clone())?;
                    // Every member's AgentState N is its answer, in both exchanges (the
                    // coordinator reads every state anyway).
                    let mut barrier = Barrier::new(frame, &self.members, true, written);
                    barrier.owe(owing.iter().map(|n| NodeId::sensor(n).to_string()));
                    barrier.owe(self.holding_bridges());
                    while !barrier.complete() && !self.stopped() {
                        self.service_barrier(&mut barrier, HOUSEKEEPING)?;
                        self.ask_again_if_stalled(&mut barrier, &tick);
                    }
                    barrier_us.push(written.elapsed().as_secs_f64() * 1e6);
                    let acked = sensor_names(barrier.acked());
                    for r in self.sensors.frame_complete(frame, &acked) {
                        println!(
                            "sensor {} resumed on {} at frame {}: gap of {} frames, {} samples missed",
                            sensor_name(&r.key),
                            r.node,
                            r.frame,
                            r.gap_frames,
                            r.missed_samples
                        );
                    }
                }
                ClockMode::Async => {
                    // Wall-clock pace: frame N is due dt / rtf after frame N-1.
                    while Instant::now() < next_wall && !self.stopped() {
                        let left = next_wall.saturating_duration_since(Instant::now());
                        self.service(left.min(HOUSEKEEPING))?;
                    }
                    let now = Instant::now();
                    if self.scenario.scenario.step == StepMode::Variable {
                        let wall = now.saturating_duration_since(last_tick_wall).as_secs_f64();
                        tick.dt_ns = (wall * rtf * 1e9).round().max(1.0) as i64;
                    }
                    last_tick_wall = now;
                    sim_time_ns += tick.dt_ns;
                    tick.sim_time_ns = sim_time_ns;
                    // Keeps the schedules in step; nodes do not acknowledge in async mode.
                    self.sensors.frame_due(frame, sim_time_ns);
                    self.write_tick(tick)?;
                    next_wall += Duration::from_secs_f64(dt / rtf);
                    self.service(Duration::ZERO)?;
                }
            }
            self.frame = frame;
            // Relay needs frame N's states for Tick N+1 only.
            self.book = self.book.split_off(&frame);
            if config.progress && last_progress.elapsed() >= Duration::from_secs(1) {
                let wall = last_progress.elapsed().as_secs_f64();
                let frames = frame - progress_frame;
                println!(
                    "frame {frame}  sim {:.2} s  {:.0} frames/s  rtf {:.2}x  agents {}",
                    frame as f64 * dt,
                    frames as f64 / wall,
                    frames as f64 * dt / wall,
                    self.members.len()
                );
                last_progress = Instant::now();
                progress_frame = frame;
            }
        }
        Ok(RunSummary {
            frames: self.frame,
            wall: started.elapsed(),
            barrier_us,
            members_left: self.left.clone(),
            datagrams_sent: convoy_core::dds::udp_datagrams_sent()
                .zip(datagrams_at_start)
                .map(|(end, start)| end.saturating_sub(start)),
        })
    }

    /// A frame that waited past its barrier timeout while the nodes it waits for are alive
    /// (the lease rule removes dead ones) lost a sample on the way: the Tick, a FrameDone or
    /// a state. Sends the same Tick again, once per timeout; nodes that finished the frame
    /// write their answer again (an agent its state, and in peer exchange the state before it,
    /// which the other agents wait for), and
    /// the run goes on with the same values, so determinism holds.
    ///
    /// The Tick sent again names only the agents still in the run: a peer-exchange agent
    /// waits for the state of every agent its tick names, and an agent that died after its
    /// state for the frame reached the coordinator but not the others would otherwise be
    /// waited for for ever (the barrier dropped it; the others never finished the frame).
    pub(super) fn ask_again_if_stalled(&mut self, barrier: &mut Barrier, tick: &Tick) {
        let timeout = Duration::from_secs_f64(self.scenario.scenario.barrier_timeout);
        if barrier.complete() || !barrier.ask_again_due(Instant::now(), timeout) {
            return;
        }
        println!(
            "barrier: frame {}: still waiting for {} after {:.1} s; sending tick {} again",
            tick.frame,
            barrier.waiting_for(),
            barrier.elapsed(Instant::now()).as_secs_f64(),
            tick.frame
        );
        // One attempt: a clock reader that does not acknowledge makes it fail after the
        // clock QoS's blocking time, and the next timeout tries again.
        let mut again = tick.clone();
        again.agents.retain(|agent| self.members.contains(agent));
        if let Err(e) = self.io.clock.write(again) {
            println!(
                "barrier: frame {}: cannot send the tick again: {e}",
                tick.frame
            );
        }
    }

    /// Writes a Tick, waiting out a full reliable history. A reader that never acknowledges
    /// (a node that died, until DDS discovery drops it after its participant lease) makes
    /// rustdds refuse the write; the loop keeps serving leases and commands meanwhile, so the
    /// run goes on as soon as the dead reader is gone.
    pub(super) fn write_tick(&mut self, tick: Tick) -> Result<()> {
        let mut reported = false;
        loop {
            match self.io.clock.write(tick.clone()) {
                Ok(()) => return Ok(()),
                Err(convoy_core::dds::PublishError::WouldBlock { .. }) => {
                    if !reported {
                        reported = true;
                        println!(
                            "frame {}: a clock reader does not acknowledge (a node that died?); \
                             retrying until discovery drops it",
                            tick.frame
                        );
                    }
                    if self.stopped() {
                        bail!("stopped while frame {} could not be published", tick.frame);
                    }
                    self.service(HOUSEKEEPING)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Drains the last frame's states into the log (bounded), then flushes it.
    pub(super) fn finish(&mut self) -> Result<()> {
        if self.state_log.is_some() {
            let until = Instant::now() + Duration::from_secs(3);
            while Instant::now() < until {
                let have = self
                    .members
                    .iter()
                    .all(|a| self.latest.get(a).is_some_and(|s| s.frame >= self.frame));
                if have {
                    break;
                }
                self.service(HOUSEKEEPING)?;
            }
        }
        if let Some(log) = self.state_log.as_mut() {
            log.flush()?;
        }
        Ok(())
    }
}
