//! `convoy-bridge`: parses arguments and runs one bridge node (see the library).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use convoy_bridge::node::{run, BridgeNodeConfig};
use convoy_core::node::NodeArgs;

#[derive(Debug, Parser)]
#[command(
    name = "convoy-bridge",
    version,
    about = "a convoy bridge node: sensors, clock and tf out to ROS 2, cmd_vel back in"
)]
struct Args {
    #[command(flatten)]
    node: NodeArgs,
    /// Bridge settings file (TOML, `[ros2]` table); defaults without one
    #[arg(long)]
    config: Option<PathBuf>,
    /// This node's convoy name (it runs as DDS node bridge/NAME)
    #[arg(long, default_value = "ros2")]
    name: String,
    /// The ROS 2 domain (default: the settings file's, else convoy's domain)
    #[arg(long)]
    ros_domain: Option<u32>,
    /// The ROS node name (default: the settings file's, else convoy_bridge)
    #[arg(long)]
    node_name: Option<String>,
    /// Hold each lockstep frame until the stack's cmd_vel for it arrived
    #[arg(long)]
    hold_for_stack: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    convoy_core::node::node_main(|stop| {
        let config = BridgeNodeConfig {
            node: args.node,
            name: args.name,
            settings: args.config,
            ros_domain: args.ros_domain,
            node_name: args.node_name,
            hold_for_stack: args.hold_for_stack.then_some(true),
        };
        run(config, stop).map_err(|e| anyhow::anyhow!("{e:#}"))
    })
}
