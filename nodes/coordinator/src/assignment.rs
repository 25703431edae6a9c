//! Sensor assignment (DESIGN.md, "Sensor assignment"): SVL's load balancing, made
//! deterministic and extended with capacities and pins. Plain data in, placements out; the
//! coordinator and `convoy assignments --plan` run the same function.
//!
//! Rules: every main node starts at load 0.15 (it also runs the simulation's own work), clients
//! at 0. Sensors are placed in groups — pinned first, then main_only, client_only,
//! main_or_client — heaviest first within a group, equal loads in (agent id, sensor id) order.
//! Each goes to the eligible node whose load / capacity would be least with the sensor added;
//! ties go to the smaller node id. client_only sensors with no client go to a main, with a
//! warning; a pin naming a node that is not there is placed by the rules, with a warning.

use convoy_core::node::SensorNodeRole;
use std::collections::BTreeMap;

use convoy_core::scenario::{Distribution, Scenario, SensorSpec};

/// The load a main node carries before any sensor (SVL's overhead).
pub const MAIN_OVERHEAD: f64 = 0.15;

#[derive(Debug, Clone, PartialEq)]
pub struct SensorNode {
    pub id: String,
    pub role: SensorNodeRole,
    pub capacity: f64,
    /// Sensor load the node already runs (sensors kept in place when only some move).
    pub carried: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SensorDemand {
    pub agent: String,
    pub sensor: String,
    pub distribution: Distribution,
    pub load: f64,
    pub pin: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub agent: String,
    pub sensor: String,
    pub node: String,
    pub load: f64,
}

/// The result: placements in the order they were made, and what the user should know.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub placements: Vec<Placement>,
    pub warnings: Vec<String>,
    /// Sensors no node can take (no sensor node at all, or main_only with no main).
    pub unplaced: Vec<(String, String)>,
}

impl SensorDemand {
    /// What sensor `spec` of `agent` asks of the assignment.
    pub fn of(agent: &str, spec: &SensorSpec) -> SensorDemand {
        SensorDemand {
            agent: agent.to_string(),
            sensor: spec.id.clone(),
            distribution: spec.distribution,
            load: spec.load,
            pin: spec.pin.clone(),
        }
    }
}

/// Every sensor of every agent in the scenario.
pub fn demands(scenario: &Scenario) -> Vec<SensorDemand> {
    scenario
        .agents
        .iter()
        .flat_map(|a| a.sensors.iter().map(|s| SensorDemand::of(&a.id, s)))
        .collect()
}

fn group(d: &SensorDemand) -> u8 {
    if d.pin.is_some() {
        return 0;
    }
    match d.distribution {
        Distribution::MainOnly => 1,
        Distribution::ClientOnly => 2,
        Distribution::MainOrClient => 3,
    }
}

/// Places `sensors` on `nodes`.
pub fn assign(nodes: &[SensorNode], sensors: &[SensorDemand]) -> Plan {
    let mut plan = Plan::default();
    let mut load: BTreeMap<&str, f64> = nodes
        .iter()
        .map(|n| {
            let start = if n.role == SensorNodeRole::Main {
                MAIN_OVERHEAD
            } else {
                0.0
            };
            (n.id.as_str(), start + n.carried)
        })
        .collect();
    let mut order: Vec<&SensorDemand> = sensors.iter().collect();
    order.sort_by(|a, b| {
        group(a)
            .cmp(&group(b))
            .then(b.load.total_cmp(&a.load))
            .then_with(|| a.agent.cmp(&b.agent))
            .then_with(|| a.sensor.cmp(&b.sensor))
    });
    let has_client = nodes.iter().any(|n| n.role == SensorNodeRole::Client);
    for s in order {
        let name = format!("{}/{}", s.agent, s.sensor);
        let pinned = s.pin.as_ref().and_then(|pin| {
            let found = nodes.iter().find(|n| &n.id == pin);
            if found.is_none() {
                plan.warnings.push(format!(
                    "{name} is pinned to '{pin}', which is not running: placed by load instead"
                ));
            }
            found
        });
        let eligible = |n: &&SensorNode| match s.distribution {
            Distribution::MainOnly => n.role == SensorNodeRole::Main,
            Distribution::ClientOnly if has_client => n.role == SensorNodeRole::Client,
            Distribution::ClientOnly | Distribution::MainOrClient => true,
        };
        if s.distribution == Distribution::ClientOnly && !has_client && pinned.is_none() {
            plan.warnings.push(format!(
                "{name} is client_only but no client sensor node runs: placed on a main"
            ));
        }
        let chosen = pinned.or_else(|| {
            nodes.iter().filter(eligible).min_by(|a, b| {
                let after = |n: &SensorNode| (load[n.id.as_str()] + s.load) / n.capacity;
                after(a).total_cmp(&after(b)).then_with(|| a.id.cmp(&b.id))
            })
        });
        match chosen {
            Some(node) => {
                if let Some(l) = load.get_mut(node.id.as_str()) {
                    *l += s.load;
                }
                plan.placements.push(Placement {
                    agent: s.agent.clone(),
                    sensor: s.sensor.clone(),
                    node: node.id.clone(),
                    load: s.load,
                });
            }
            None => {
                plan.warnings
                    .push(format!("{name}: no sensor node can take it"));
                plan.unplaced.push((s.agent.clone(), s.sensor.clone()));
            }
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, role: SensorNodeRole, capacity: f64) -> SensorNode {
        SensorNode {
            id: id.into(),
            role,
            capacity,
            carried: 0.0,
        }
    }

    fn sensor(agent: &str, id: &str, distribution: Distribution, load: f64) -> SensorDemand {
        SensorDemand {
            agent: agent.into(),
            sensor: id.into(),
            distribution,
            load,
            pin: None,
        }
    }

    fn placed(plan: &Plan) -> Vec<(String, String)> {
        plan.placements
            .iter()
            .map(|p| (format!("{}/{}", p.agent, p.sensor), p.node.clone()))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    use Distribution::*;
    use SensorNodeRole::*;

    /// SVL's example set over one main and two clients.
    #[test]
    fn svl_example_set() {
        let nodes = [
            node("c1", Client, 1.0),
            node("c2", Client, 1.0),
            node("main", Main, 1.0),
        ];
        let sensors = [
            sensor("ego", "lidar", ClientOnly, 1.0),
            sensor("ego", "radar", MainOrClient, 0.2),
            sensor("ego", "gnss", MainOrClient, 0.05),
            sensor("ego", "keyboard", MainOnly, 0.5),
        ];
        let plan = assign(&nodes, &sensors);
        // main_only first (keyboard -> main: 0.65), client_only (lidar -> c1, tie by id),
        // then radar (c2: 0.2 beats main 0.85 and c1 1.2), gnss (c2: 0.25).
        assert_eq!(
            placed(&plan),
            pairs(&[
                ("ego/keyboard", "main"),
                ("ego/lidar", "c1"),
                ("ego/radar", "c2"),
                ("ego/gnss", "c2"),
            ])
        );
        assert!(plan.warnings.is_empty());
    }

    #[test]
    fn capacities_keep_heavy_sensors_off_weak_machines() {
        let nodes = [
            node("big", Client, 2.0),
            node("main", Main, 1.0),
            node("small", Client, 0.5),
        ];
        let sensors = [
            sensor("a", "cam1", MainOrClient, 0.8),
            sensor("a", "cam2", MainOrClient, 0.8),
            sensor("b", "imu", MainOrClient, 0.1),
        ];
        let plan = assign(&nodes, &sensors);
        // cam1: big 0.4, main 0.95, small 1.6 -> big. cam2: big 0.8, main 0.95 -> big.
        // imu: big 0.85, main 0.25, small 0.2 -> small.
        assert_eq!(
            placed(&plan),
            pairs(&[("a/cam1", "big"), ("a/cam2", "big"), ("b/imu", "small")])
        );
    }

    #[test]
    fn pins_win_and_missing_pins_warn() {
        let nodes = [node("c1", Client, 1.0), node("main", Main, 1.0)];
        let mut lidar = sensor("ego", "lidar", ClientOnly, 1.0);
        lidar.pin = Some("main".into());
        let mut cam = sensor("ego", "cam", MainOrClient, 0.5);
        cam.pin = Some("gone".into());
        let plan = assign(
            &nodes,
            &[sensor("ego", "gnss", MainOrClient, 0.05), lidar, cam],
        );
        assert_eq!(
            placed(&plan),
            pairs(&[("ego/lidar", "main"), ("ego/cam", "c1"), ("ego/gnss", "c1")])
        );
        assert_eq!(plan.warnings.len(), 1);
        assert!(
            plan.warnings[0].contains("pinned to 'gone'"),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn with_no_clients_everything_goes_to_the_main_with_a_warning() {
        let nodes = [node("main", Main, 1.0)];
        let plan = assign(
            &nodes,
            &[
                sensor("ego", "lidar", ClientOnly, 1.0),
                sensor("ego", "radar", MainOrClient, 0.2),
            ],
        );
        assert_eq!(
            placed(&plan),
            pairs(&[("ego/lidar", "main"), ("ego/radar", "main")])
        );
        assert!(
            plan.warnings[0].contains("client_only"),
            "{:?}",
            plan.warnings
        );
        assert!(
            assign(&[], &[sensor("ego", "x", MainOnly, 0.1)])
                .unplaced
                .len()
                == 1
        );
    }

    #[test]
    fn equal_loads_go_in_agent_then_sensor_order() {
        let nodes = [node("c1", Client, 1.0), node("c2", Client, 1.0)];
        let plan = assign(
            &nodes,
            &[
                sensor("b", "s", MainOrClient, 0.5),
                sensor("a", "t", MainOrClient, 0.5),
                sensor("a", "s", MainOrClient, 0.5),
            ],
        );
        assert_eq!(
            placed(&plan),
            pairs(&[("a/s", "c1"), ("a/t", "c2"), ("b/s", "c1")])
        );
    }
}
