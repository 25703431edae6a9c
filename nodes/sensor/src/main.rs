//! `convoy-sensor`: parses arguments and runs one sensor node (see the library).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use convoy_core::qos::QosSpec;
use convoy_core::scenario::ClockMode;
use convoy_sensor::node::{run, SensorNodeConfig, SensorNodeKind};

#[derive(Debug, Parser)]
#[command(
    name = "convoy-sensor",
    version,
    about = "a convoy sensor node: runs the sensors the coordinator assigns to it"
)]
struct Args {
    /// Scenario file (TOML)
    scenario: PathBuf,
    /// This node's name (assignments and pins use it; it runs as DDS node sensor/NAME)
    #[arg(long, default_value = "main")]
    name: String,
    /// main (beside the coordinator; takes main_only sensors) or client
    #[arg(long, default_value = "main")]
    role: SensorNodeKind,
    /// How much sensor load this machine takes (1.0 = one typical machine)
    #[arg(long, default_value_t = 1.0)]
    capacity: f64,
    /// DDS domain id
    #[arg(long, short = 'd', env = "CONVOY_DOMAIN", default_value_t = 0)]
    domain: u32,
    /// QoS library: FILE or FILE::LIBRARY
    #[arg(long, env = "CONVOY_QOS")]
    qos: Option<QosSpec>,
    /// Override the scenario's clock mode (sync|async)
    #[arg(long)]
    mode: Option<ClockMode>,
    /// Publishing threads (default: available cores)
    #[arg(long)]
    workers: Option<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    convoy_core::status::node_main(|stop| {
        let config = SensorNodeConfig {
            scenario: args.scenario,
            name: args.name,
            role: args.role,
            capacity: args.capacity,
            domain: args.domain,
            qos: args.qos,
            mode: args.mode,
            workers: args.workers,
        };
        run(config, stop).map_err(|e| anyhow::anyhow!("{e:#}"))
    })
}
