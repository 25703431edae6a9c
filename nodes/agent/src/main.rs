//! `convoy-agent`: parses arguments and runs one agent (see the library).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use convoy_agent::node::{run, AgentConfig};
use convoy_core::qos::QosSpec;
use convoy_core::scenario::{ClockMode, Exchange};

#[derive(Debug, Parser)]
#[command(
    name = "convoy-agent",
    version,
    about = "one convoy agent: a vehicle with rapier3d physics"
)]
struct Args {
    /// Scenario file (TOML)
    scenario: PathBuf,
    /// Which agent of the scenario this process is
    #[arg(long)]
    id: String,
    /// DDS domain id
    #[arg(long, short = 'd', env = "CONVOY_DOMAIN", default_value_t = 0)]
    domain: u32,
    /// QoS library: FILE or FILE::LIBRARY
    #[arg(long, env = "CONVOY_QOS")]
    qos: Option<QosSpec>,
    /// Override the scenario's clock mode (sync|async)
    #[arg(long, value_parser = ["sync", "async"])]
    mode: Option<String>,
    /// Override the scenario's state exchange (peer|relay)
    #[arg(long, value_parser = ["peer", "relay"])]
    exchange: Option<String>,
    /// Test hook: stall before reporting this frame done
    #[arg(long, hide = true)]
    stall_at_frame: Option<u64>,
    /// Test hook: how long to stall, seconds
    #[arg(long, hide = true, default_value_t = 0.0)]
    stall_seconds: f64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    convoy_core::status::init_logging("info");
    let stop = match convoy_core::status::stop_flag() {
        Ok(flag) => flag,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if !(0.0..=3600.0).contains(&args.stall_seconds) {
        eprintln!(
            "error: --stall-seconds {} is out of range",
            args.stall_seconds
        );
        return ExitCode::FAILURE;
    }
    let config = AgentConfig {
        scenario: args.scenario,
        agent_id: args.id,
        domain: args.domain,
        qos: args.qos,
        mode: args.mode.map(|m| {
            if m == "async" {
                ClockMode::Async
            } else {
                ClockMode::Sync
            }
        }),
        exchange: args.exchange.map(|e| {
            if e == "relay" {
                Exchange::Relay
            } else {
                Exchange::Peer
            }
        }),
        stall_at_frame: args.stall_at_frame,
        stall_for: Duration::from_secs_f64(args.stall_seconds),
    };
    match run(config, stop) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
