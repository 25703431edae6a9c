//! `convoy-bridge`: parses arguments and runs one bridge node (see the library).

use std::process::ExitCode;

use clap::Parser;
use convoy_bridge::node::{run, BridgeNodeConfig};

fn main() -> ExitCode {
    let config = BridgeNodeConfig::parse();
    convoy_core::node::node_main(|stop| run(config, stop).map_err(|e| anyhow::anyhow!("{e:#}")))
}
