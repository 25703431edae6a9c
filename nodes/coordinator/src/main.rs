//! `convoy-coordinator`: parses arguments and runs the coordinator (see the library).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use convoy_coordinator::{run, CoordinatorConfig};
use convoy_core::node::{NodeArgs, NodeId};

#[derive(Debug, Parser)]
#[command(
    name = "convoy-coordinator",
    version,
    about = "convoy's clock, registry and world commands"
)]
struct Args {
    #[command(flatten)]
    node: NodeArgs,
    /// Stop after this many frames
    #[arg(long)]
    frames: Option<u64>,
    /// Stop after this many seconds of simulated time
    #[arg(long)]
    duration: Option<f64>,
    /// Write every agent state received, one JSON line each
    #[arg(long)]
    state_log: Option<PathBuf>,
    /// Seconds to wait for every agent at start
    #[arg(long, default_value_t = 60.0)]
    startup_timeout: f64,
    /// Sensor nodes to wait for before placing sensors (default: 1 when the scenario has
    /// sensors); nodes that join later take sensors no node runs
    #[arg(long)]
    sensor_nodes: Option<usize>,
    /// Before frame 0, wait until this node (e.g. bridge/record, a recorder) reports on
    /// convoy/nodes; repeatable
    #[arg(long = "wait-for", value_name = "NODE_ID", value_parser = parse_node_id)]
    wait_for: Vec<NodeId>,
    /// Print a final RESULT line for `convoy bench lockstep`
    #[arg(long, hide = true)]
    result_line: bool,
}

/// A graph node's id (coordinator, agent/ID, sensor/NAME, bridge/NAME), checked.
fn parse_node_id(text: &str) -> Result<NodeId, String> {
    let id = NodeId::parse_node(text).map_err(|e| e.to_string())?;
    id.check().map_err(|e| e.to_string())?;
    Ok(id)
}

fn main() -> ExitCode {
    let args = Args::parse();
    convoy_core::node::node_main(|stop| {
        if !(0.1..=3600.0).contains(&args.startup_timeout) {
            anyhow::bail!(
                "--startup-timeout {} is out of range (0.1 to 3600 s)",
                args.startup_timeout
            );
        }
        let config = CoordinatorConfig {
            node: args.node,
            frames: args.frames,
            duration: args.duration,
            state_log: args.state_log,
            startup_timeout: Duration::from_secs_f64(args.startup_timeout),
            progress: true,
            sensor_nodes: args.sensor_nodes,
            wait_for: args.wait_for,
        };
        let summary = run(&config, stop).map_err(|e| anyhow::anyhow!("{e:#}"))?;
        let (p50, p99) = summary.barrier_percentiles();
        println!(
            "done: {} frames in {:.2} s ({:.0} frames/s); barrier p50 {:.0} us, p99 {:.0} us",
            summary.frames,
            summary.wall.as_secs_f64(),
            summary.frames_per_second(),
            p50,
            p99
        );
        if args.result_line {
            println!(
                "RESULT frames={} seconds={:.6} fps={:.3} barrier_p50_us={:.1} barrier_p99_us={:.1} \
                 datagrams_sent={} left={}",
                summary.frames,
                summary.wall.as_secs_f64(),
                summary.frames_per_second(),
                p50,
                p99,
                summary
                    .datagrams_sent
                    .map_or_else(|| "unknown".to_string(), |d| d.to_string()),
                summary.members_left.len()
            );
        }
        Ok(())
    })
}
