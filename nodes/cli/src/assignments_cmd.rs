//! `convoy assignments --plan SCENARIO --nodes main=1.0,c1=1.0,c2=0.5 [--json]`: where a
//! scenario's sensors would go, computed offline by the coordinator's own assignment code.

use anyhow::{bail, Context, Result};
use convoy_coordinator::assignment::{assign, demands, SensorNode, SensorNodeRole};
use convoy_core::scenario::{resolve_path, Scenario};

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
    })
}

pub fn run(args: &AssignmentsArgs) -> Result<()> {
    let Some(scenario) = &args.plan else {
        bail!(
            "the live assignment table needs sensor nodes, which this convoy version does not run \
             yet; use --plan SCENARIO --nodes ... to compute a placement"
        );
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
