//! `convoy assignments`: the live table of which sensor node runs which sensor (read from the
//! TRANSIENT_LOCAL `convoy/assignments` and the node registry), and
//! `convoy assignments --plan SCENARIO --nodes main=1.0,c1=1.0,c2=0.5 [--json]`: where a
//! scenario's sensors would go, computed offline by the coordinator's own assignment code.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use convoy_coordinator::assignment::{assign, demands, SensorNode};
use convoy_core::dds::Node;
use convoy_core::messages::{NodeStatus, SensorAssignment, SensorKey};
use convoy_core::node::{NodeId, SensorNodeRole};
use convoy_core::scenario::{resolve_path, Scenario};
use convoy_core::topics;

use crate::args::AssignmentsArgs;

/// Parses `ID=CAPACITY`; ids starting with "main" are main nodes.
pub fn parse_node(spec: &str) -> Result<SensorNode> {
    let (id, capacity) = spec
        .split_once('=')
        .with_context(|| format!("--nodes '{spec}': use ID=CAPACITY, e.g. main=1.0"))?;
    let capacity: f64 = capacity
        .parse()
        .with_context(|| format!("--nodes '{spec}': capacity '{capacity}' is not a number"))?;
    if !(capacity.is_finite() && capacity > 0.0) {
        bail!("--nodes '{spec}': capacity must be positive");
    }
    if id.is_empty() {
        bail!("--nodes '{spec}': empty node id");
    }
    let role = if id.starts_with("main") {
        SensorNodeRole::Main
    } else {
        SensorNodeRole::Client
    };
    Ok(SensorNode {
        id: id.to_string(),
        role,
        capacity,
        carried: 0.0,
    })
}

/// The live table: what the coordinator assigned, and whether each node still beats.
pub fn live(node: &Node, args: &AssignmentsArgs) -> Result<()> {
    if !(args.wait.is_finite() && args.wait > 0.0 && args.wait <= 3600.0) {
        bail!("--wait {} must be between 0 and 3600 seconds", args.wait);
    }
    let mut assignments = node.subscriber::<SensorAssignment>(&topics::assignments())?;
    let mut nodes = node.subscriber::<NodeStatus>(&topics::nodes())?;
    let mut book: BTreeMap<SensorKey, SensorAssignment> = BTreeMap::new();
    let mut seen: BTreeMap<String, (NodeStatus, Instant)> = BTreeMap::new();
    let stop = crate::process::stop_flag()?;
    let mut next_print = Instant::now() + Duration::from_secs_f64(args.wait);
    loop {
        for a in assignments.take_wait(1024, Duration::from_millis(50)) {
            let key = SensorKey {
                agent_id: a.value.agent_id.clone(),
                sensor_id: a.value.sensor_id.clone(),
            };
            if book.get(&key).is_none_or(|old| old.epoch <= a.value.epoch) {
                book.insert(key, a.value);
            }
        }
        for s in nodes.take(256) {
            seen.insert(s.value.node_id.clone(), (s.value, Instant::now()));
        }
        if Instant::now() >= next_print {
            print_live(&book, &seen, args.json);
            if !args.watch || stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(());
            }
            next_print = Instant::now() + Duration::from_secs(1);
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
    }
}

fn print_live(
    book: &BTreeMap<SensorKey, SensorAssignment>,
    seen: &BTreeMap<String, (NodeStatus, Instant)>,
    json: bool,
) {
    // A node is up while it beats (NodeStatus every 250 ms; a lease without one: gone).
    let state = |name: &str| match seen.get(&NodeId::sensor(name).to_string()) {
        Some((_, at)) if at.elapsed() < convoy_core::status::DEFAULT_LEASE => "up",
        Some(_) => "silent",
        None => "unseen",
    };
    if json {
        let list: Vec<serde_json::Value> = book
            .values()
            .map(|a| {
                serde_json::json!({"sensor": a.sensor_id, "agent": a.agent_id, "node": a.node_id,
                    "load": a.load, "epoch": a.epoch, "node_state": state(&a.node_id)})
            })
            .collect();
        println!("{}", serde_json::Value::Array(list));
        return;
    }
    if book.is_empty() {
        println!("no sensor assignments (is a coordinator with sensors running on this domain?)");
        return;
    }
    println!(
        "{:<28} {:<12} {:>5} {:>6}  node",
        "sensor", "node", "load", "epoch"
    );
    for a in book.values() {
        println!(
            "{:<28} {:<12} {:>5.2} {:>6}  {}",
            format!("{}/{}", a.agent_id, a.sensor_id),
            a.node_id,
            a.load,
            a.epoch,
            state(&a.node_id)
        );
    }
}

pub fn plan(args: &AssignmentsArgs) -> Result<()> {
    let Some(scenario) = &args.plan else {
        bail!("--plan SCENARIO is required");
    };
    let scenario = Scenario::load(&resolve_path(scenario))?;
    let nodes = args
        .nodes
        .iter()
        .map(|n| parse_node(n))
        .collect::<Result<Vec<_>>>()?;
    let plan = assign(&nodes, &demands(&scenario));
    for warning in &plan.warnings {
        eprintln!("warning: {warning}");
    }
    if args.json {
        let list: Vec<serde_json::Value> = plan
            .placements
            .iter()
            .map(|p| {
                serde_json::json!({"sensor": p.sensor, "agent": p.agent, "node": p.node, "load": p.load})
            })
            .collect();
        println!("{}", serde_json::Value::Array(list));
        return Ok(());
    }
    println!(
        "{:<12} {:<16} {:<12} {:>5}",
        "agent", "sensor", "node", "load"
    );
    for p in &plan.placements {
        println!(
            "{:<12} {:<16} {:<12} {:>5.2}",
            p.agent, p.sensor, p.node, p.load
        );
    }
    for (agent, sensor) in &plan.unplaced {
        println!("{agent:<12} {sensor:<16} {:<12}", "(unplaced)");
    }
    Ok(())
}
