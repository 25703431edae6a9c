//! `convoy-sensor`: parses arguments and runs one sensor node (see the library).

use std::process::ExitCode;

use clap::Parser;
use convoy_core::node::{NodeArgs, SensorNodeRole};
use convoy_sensor::node::{run, SensorNodeConfig};

#[derive(Debug, Parser)]
#[command(
    name = "convoy-sensor",
    version,
    about = "a convoy sensor node: runs the sensors the coordinator assigns to it"
)]
struct Args {
    #[command(flatten)]
    node: NodeArgs,
    /// This node's name (assignments and pins use it; it runs as DDS node sensor/NAME)
    #[arg(long, default_value = "main")]
    name: String,
    /// main (beside the coordinator; takes main_only sensors) or client
    #[arg(long, default_value = "main")]
    role: SensorNodeRole,
    /// How much sensor load this machine takes (1.0 = one typical machine)
    #[arg(long, default_value_t = 1.0)]
    capacity: f64,
    /// Publishing threads (default: available cores)
    #[arg(long)]
    workers: Option<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    convoy_core::node::node_main(|stop| {
        let config = SensorNodeConfig {
            node: args.node,
            name: args.name,
            role: args.role,
            capacity: args.capacity,
            workers: args.workers,
        };
        run(config, stop).map_err(|e| anyhow::anyhow!("{e:#}"))
    })
}
