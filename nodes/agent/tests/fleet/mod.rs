//! The agents of a scenario stepped in one process, without DDS: each agent's own world and
//! controller, every agent seeing the others' previous states as zombies (what the lockstep
//! does across processes). Shared by the physics and road tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use convoy_agent::controller::{from_spec, Controller};
use convoy_agent::world::AgentWorld;
use convoy_core::messages::{AgentState, Control};
use convoy_core::scenario::Scenario;
use convoy_world::World;

pub fn scenarios_dir() -> PathBuf {
    let mut dir: Option<&Path> = Some(Path::new(env!("CARGO_MANIFEST_DIR")));
    while let Some(d) = dir {
        let candidate = d.join("launch").join("scenarios");
        if candidate.is_dir() {
            return candidate;
        }
        dir = d.parent();
    }
    panic!("no launch/scenarios above {}", env!("CARGO_MANIFEST_DIR"));
}

pub fn load(name: &str) -> Scenario {
    let path = scenarios_dir().join(name);
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Every agent of a scenario, each in its own world, stepped in lockstep.
pub struct Fleet {
    pub worlds: Vec<AgentWorld>,
    pub controllers: Vec<Option<Box<dyn Controller + Send>>>,
    /// The states of the last frame, one per agent in id order.
    pub states: Vec<AgentState>,
    pub frame: u64,
    pub dt: f64,
    pub dt_ns: i64,
}

impl Fleet {
    pub fn new(scenario: &Scenario) -> Fleet {
        let ids = scenario.agent_ids();
        let map = Arc::new(World::for_scenario(scenario).unwrap_or_else(|e| panic!("{e}")));
        let worlds: Vec<AgentWorld> = ids
            .iter()
            .map(|id| AgentWorld::new(scenario, &map, id).expect("world"))
            .collect();
        let controllers = ids
            .iter()
            .map(|id| {
                let spec = scenario.agent(id).expect("agent");
                from_spec(scenario, spec, &map).unwrap_or_else(|e| panic!("{e}"))
            })
            .collect();
        let states = worlds.iter().map(|w| w.state(0, 0)).collect();
        Fleet {
            worlds,
            controllers,
            states,
            frame: 0,
            dt: scenario.scenario.dt,
            dt_ns: scenario.dt_ns(),
        }
    }

    /// One frame: every agent sees the others' previous states, applies its control (from its
    /// controller, or `external` for `kind = "external"`), steps and reports its new state.
    pub fn step(&mut self, external: &dyn Fn(usize, u64) -> Control) {
        self.frame += 1;
        let stamp = self.frame as i64 * self.dt_ns;
        let mut next = Vec::with_capacity(self.worlds.len());
        for (i, world) in self.worlds.iter_mut().enumerate() {
            world.set_zombies(&self.states);
            let control = match self.controllers[i].as_mut() {
                Some(c) => {
                    let others: Vec<AgentState> = (self.states.iter().enumerate())
                        .filter(|(j, _)| *j != i)
                        .map(|(_, s)| s.clone())
                        .collect();
                    c.control(&self.states[i], &others, self.frame)
                }
                None => external(i, self.frame),
            };
            world.step(&control, self.dt);
            next.push(world.state(self.frame, stamp));
        }
        self.states = next;
    }
}
