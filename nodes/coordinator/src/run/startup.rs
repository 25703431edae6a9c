//! Start-up: every agent and the sensor nodes register, the sensors are placed and held, then
//! Tick 0 is repeated until every member answered (the frame-0 handshake).

use super::*;

impl Coordinator {
    /// Waits for every agent (and the sensor nodes) to register, places the sensors, waits for
    /// the nodes of `wait_for`, then repeats Tick 0 until all answered.
    pub(super) fn startup(
        &mut self,
        timeout: Duration,
        sensor_nodes: Option<usize>,
        wait_for: &[NodeId],
    ) -> Result<()> {
        let started = Instant::now();
        let mut announced = Instant::now() - Duration::from_secs(10);
        loop {
            self.service(HOUSEKEEPING)?;
            let missing: Vec<String> = self
                .members
                .iter()
                .filter(|a| !self.registry.contains(&NodeId::agent(*a).to_string()))
                .cloned()
                .collect();
            if missing.is_empty() {
                break;
            }
            if self.stopped() {
                bail!("stopped while waiting for agents");
            }
            if started.elapsed() > timeout {
                bail!(
                    "agents never registered within {timeout:?}: {} (are they running, on the \
                     same domain id?)",
                    missing.join(", ")
                );
            }
            if announced.elapsed() > Duration::from_secs(1) {
                announced = Instant::now();
                println!("waiting for agents: {}", missing.join(", "));
            }
        }
        println!("all {} agents registered", self.members.len());
        self.start_sensors(started, timeout, sensor_nodes)?;
        self.wait_for_nodes(wait_for, started, timeout)?;
        let mut barrier = Barrier::new(0, &self.members, self.relay(), Instant::now());
        if self.mode == ClockMode::Sync {
            let owing = self.sensors.frame_due(0, 0);
            barrier.owe(owing.iter().map(|n| NodeId::sensor(n).to_string()));
        }
        let mut period = HANDSHAKE_PERIOD;
        let mut next_tick = Instant::now();
        while !barrier.complete() {
            if Instant::now() >= next_tick {
                self.write_tick(self.tick(0))?;
                next_tick = Instant::now() + period;
                period = (period * 2).min(HANDSHAKE_PERIOD_MAX);
            }
            self.service_barrier(&mut barrier, HOUSEKEEPING)?;
            if self.stopped() {
                bail!("stopped during the frame-0 handshake");
            }
            if started.elapsed() > timeout {
                bail!(
                    "frame 0 handshake incomplete after {timeout:?}: still waiting for {}",
                    barrier.owed().join(", ")
                );
            }
        }
        if self.mode == ClockMode::Sync {
            let acked = sensor_names(barrier.acked());
            self.sensors.frame_complete(0, &acked);
        }
        println!("frame 0: every agent holds every peer's initial state");
        Ok(())
    }

    /// Waits (bounded by the start-up timeout) until each node of `wanted` has reported on
    /// convoy/nodes: a node that must see the run from its first tick (a recorder) reports only
    /// once it listens.
    fn wait_for_nodes(
        &mut self,
        wanted: &[NodeId],
        started: Instant,
        timeout: Duration,
    ) -> Result<()> {
        let mut announced = Instant::now();
        loop {
            let missing: Vec<String> = wanted
                .iter()
                .map(NodeId::to_string)
                .filter(|id| !self.registry.contains(id))
                .collect();
            if missing.is_empty() {
                if !wanted.is_empty() {
                    println!(
                        "{} ready",
                        wanted
                            .iter()
                            .map(NodeId::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                return Ok(());
            }
            if self.stopped() {
                bail!("stopped while waiting for {}", missing.join(", "));
            }
            if started.elapsed() > timeout {
                bail!(
                    "{} never reported on convoy/nodes within {timeout:?} (is it running, on the \
                     same domain id? it was named with --wait-for)",
                    missing.join(", ")
                );
            }
            if announced.elapsed() > Duration::from_secs(1) {
                announced = Instant::now();
                println!("waiting for {}", missing.join(", "));
            }
            self.service(HOUSEKEEPING)?;
        }
    }

    /// Bridges that hold each frame for their stack's commands (NodeStatus counter
    /// `hold_for_stack` = 1): a lockstep frame also waits for their FrameDone.
    pub(super) fn holding_bridges(&self) -> Vec<String> {
        self.registry
            .with_role(NodeRole::Bridge)
            .filter(|e| {
                e.status
                    .counters
                    .iter()
                    .any(|c| c.name == "hold_for_stack" && c.value > 0)
            })
            .map(|e| e.status.node_id.clone())
            .collect()
    }

    /// The live sensor nodes, in the assignment's terms.
    pub(super) fn live_sensor_nodes(&self) -> Vec<crate::assignment::SensorNode> {
        self.registry
            .with_role(NodeRole::SensorMain)
            .chain(self.registry.with_role(NodeRole::SensorClient))
            .filter_map(|e| as_sensor_node(&e.status))
            .collect()
    }

    /// Startup for sensors: wait for `wanted` sensor nodes (default one when the scenario has
    /// sensors), place every sensor, publish the assignments, and wait until each node says
    /// (NodeStatus counter `sensors`) it holds all of its own, so frame 0 already has them.
    pub(super) fn start_sensors(
        &mut self,
        started: Instant,
        timeout: Duration,
        wanted: Option<usize>,
    ) -> Result<()> {
        if self.sensors.is_empty() {
            self.sensors_placed = true;
            return Ok(());
        }
        let wanted = wanted.unwrap_or(1);
        let mut announced = Instant::now();
        while self.live_sensor_nodes().len() < wanted {
            if self.stopped() {
                bail!("stopped while waiting for sensor nodes");
            }
            if started.elapsed() > timeout {
                println!(
                    "warning: {} of {wanted} sensor nodes registered within {timeout:?}; going on \
                     with those",
                    self.live_sensor_nodes().len()
                );
                break;
            }
            if announced.elapsed() > Duration::from_secs(1) {
                announced = Instant::now();
                println!(
                    "waiting for sensor nodes: {} of {wanted} registered",
                    self.live_sensor_nodes().len()
                );
            }
            self.service(HOUSEKEEPING)?;
        }
        self.sensors_placed = true;
        self.place_sensors("start")?;
        // Each node confirms it holds its assignments before frame 0.
        let mut announced = Instant::now();
        loop {
            let expected = self.sensors.counts();
            let missing: Vec<String> = expected
                .iter()
                .filter(|(name, count)| {
                    let held = self
                        .registry
                        .status(&NodeId::sensor(name.as_str()).to_string())
                        .and_then(|s| s.counters.iter().find(|c| c.name == "sensors"))
                        .map(|c| c.value);
                    held != Some(**count)
                })
                .map(|(name, _)| name.clone())
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if self.stopped() {
                bail!("stopped while sensor nodes took their assignments");
            }
            if started.elapsed() > timeout {
                bail!(
                    "sensor nodes did not confirm their assignments within {timeout:?}: {}",
                    missing.join(", ")
                );
            }
            if announced.elapsed() > Duration::from_secs(1) {
                announced = Instant::now();
                println!(
                    "waiting for sensor nodes to take their sensors: {}",
                    missing.join(", ")
                );
            }
            self.service(HOUSEKEEPING)?;
        }
    }

    /// Places the sensors no live node runs and publishes the new assignments.
    pub(super) fn place_sensors(&mut self, why: &str) -> Result<()> {
        let nodes = self.live_sensor_nodes();
        let (changed, warnings) = self.sensors.place(&nodes);
        for warning in warnings {
            println!("warning: {warning}");
        }
        for a in changed {
            println!(
                "sensor {}/{} -> {} (load {}, epoch {}, {why}, frame {})",
                a.agent_id, a.sensor_id, a.node_id, a.load, a.epoch, self.frame
            );
            self.io
                .assignments
                .write_patiently(a, &self.stop)
                .context("cannot publish a sensor assignment")?;
        }
        let unplaced = self.sensors.unplaced();
        if !unplaced.is_empty() {
            println!(
                "warning: no sensor node runs {}",
                unplaced
                    .iter()
                    .map(sensor_name)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        Ok(())
    }
}
