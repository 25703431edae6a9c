//! `convoy-agent`: parses arguments and runs one agent, or several (see the library).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use convoy_agent::group::run_agents;
use convoy_agent::lockstep::TestHooks;
use convoy_agent::node::AgentConfig;
use convoy_core::node::NodeArgs;

#[derive(Debug, Parser)]
#[command(
    name = "convoy-agent",
    version,
    about = "one convoy agent: a vehicle with rapier3d physics"
)]
struct Args {
    #[command(flatten)]
    node: NodeArgs,
    /// Which agent of the scenario this process runs; repeat it to run several agents in this
    /// process (each its own DDS node, on one DDS participant they share; they fail together)
    #[arg(long, required = true)]
    id: Vec<String>,
    /// Test hook: stall before writing this frame's state and FrameDone (every agent here)
    #[arg(long, hide = true)]
    stall_at_frame: Option<u64>,
    /// Test hook: how long to stall, seconds
    #[arg(long, hide = true, default_value_t = 0.0)]
    stall_seconds: f64,
    /// Test hook: do not write this frame's state (as if it were lost for good)
    #[arg(long, hide = true)]
    drop_state_at_frame: Option<u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    convoy_core::node::node_main(|stop| {
        if !(0.0..=3600.0).contains(&args.stall_seconds) {
            anyhow::bail!("--stall-seconds {} is out of range", args.stall_seconds);
        }
        let hooks = TestHooks {
            stall_at_frame: args.stall_at_frame,
            stall_for: Duration::from_secs_f64(args.stall_seconds),
            drop_state_at_frame: args.drop_state_at_frame,
        };
        let configs = args
            .id
            .into_iter()
            .map(|agent_id| AgentConfig {
                node: args.node.clone(),
                agent_id,
                hooks: hooks.clone(),
                participant: None,
                world: None,
            })
            .collect();
        run_agents(configs, stop).map_err(|e| anyhow::anyhow!("{e:#}"))
    })
}
