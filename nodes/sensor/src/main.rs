//! `convoy-sensor`: parses arguments and runs one sensor node (see the library).

use std::process::ExitCode;

use clap::Parser;
use convoy_sensor::node::{run, SensorNodeConfig};

fn main() -> ExitCode {
    let config = SensorNodeConfig::parse();
    convoy_core::node::node_main(|stop| run(config, stop).map_err(|e| anyhow::anyhow!("{e:#}")))
}
