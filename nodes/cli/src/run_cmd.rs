//! `convoy run SCENARIO`: the coordinator and one process per agent on this host, with
//! progress, until the frame/duration limit or Ctrl-C; none is left behind.

use anyhow::{bail, Result};
use convoy_core::qos::QosSpec;
use convoy_core::scenario::{resolve_path, Scenario};

use crate::args::RunArgs;
use crate::graph::{run_until_done, sibling_binary, NodeProcess};
use crate::process::stop_flag;

/// The node processes of a scenario run: the coordinator, then the agents in id order.
pub fn scenario_nodes(
    domain: u32,
    qos: Option<&QosSpec>,
    args: &RunArgs,
) -> Result<Vec<NodeProcess>> {
    let path = resolve_path(&args.scenario);
    let scenario = Scenario::load(&path)?;
    let path_arg = path.display().to_string();
    let mut common = vec!["--domain".to_string(), domain.to_string()];
    if let Some(q) = qos {
        common.extend(["--qos".into(), q.to_string()]);
    }
    if let Some(mode) = &args.mode {
        common.extend(["--mode".into(), mode.clone()]);
    }
    if let Some(exchange) = &args.exchange {
        common.extend(["--exchange".into(), exchange.clone()]);
    }
    let mut coordinator_args = vec![path_arg.clone()];
    coordinator_args.extend(common.iter().cloned());
    if let Some(frames) = args.frames {
        coordinator_args.extend(["--frames".into(), frames.to_string()]);
    }
    if let Some(duration) = args.duration {
        coordinator_args.extend(["--duration".into(), duration.to_string()]);
    }
    if let Some(log) = &args.state_log {
        coordinator_args.extend(["--state-log".into(), log.display().to_string()]);
    }
    coordinator_args.extend(args.coordinator_args.iter().cloned());
    let mut nodes = vec![NodeProcess {
        id: "coordinator".into(),
        program: sibling_binary("convoy-coordinator")?,
        args: coordinator_args,
    }];
    let agent_bin = sibling_binary("convoy-agent")?;
    for id in scenario.agent_ids() {
        let mut agent_args = vec![path_arg.clone(), "--id".into(), id.clone()];
        agent_args.extend(common.iter().cloned());
        nodes.push(NodeProcess {
            id: format!("agent/{id}"),
            program: agent_bin.clone(),
            args: agent_args,
        });
    }
    Ok(nodes)
}

pub fn run(domain: u32, qos: Option<&QosSpec>, args: &RunArgs) -> Result<()> {
    if args.frames.is_none() && args.duration.is_none() {
        eprintln!("no --frames or --duration: running until Ctrl-C");
    }
    if let Some(d) = args.duration {
        if !(d > 0.0 && d.is_finite()) {
            bail!("--duration {d} must be a positive number of simulated seconds");
        }
    }
    let nodes = scenario_nodes(domain, qos, args)?;
    println!(
        "starting {} nodes on domain {domain}: {}",
        nodes.len(),
        nodes
            .iter()
            .map(|n| n.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let stop = stop_flag()?;
    run_until_done(&nodes, "coordinator", &stop, true, |_| {})
}
