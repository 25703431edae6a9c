//! The arguments every node binary takes, declared once (`#[command(flatten)]` in each main).

use std::path::PathBuf;

use crate::qos::QosSpec;
use crate::scenario::{ClockMode, Exchange};

/// Scenario, domain, QoS and the scenario overrides every node of a run is started with
/// (`convoy run` and `convoy launch` pass the same ones to all, so every node sees the same
/// scenario).
#[derive(Debug, Clone, clap::Args)]
pub struct NodeArgs {
    /// Scenario file (TOML)
    pub scenario: PathBuf,
    /// DDS domain id
    #[arg(long, short = 'd', env = "CONVOY_DOMAIN", default_value_t = 0)]
    pub domain: u32,
    /// QoS library: FILE or FILE::LIBRARY (default: the built-in profiles)
    #[arg(long, env = "CONVOY_QOS")]
    pub qos: Option<QosSpec>,
    /// Override the scenario's clock mode (sync|async)
    #[arg(long)]
    pub mode: Option<ClockMode>,
    /// Override the scenario's state exchange (peer|relay)
    #[arg(long)]
    pub exchange: Option<Exchange>,
}

impl NodeArgs {
    /// Arguments for `scenario` on `domain`, no QoS file, no overrides (tests, tools).
    pub fn new(scenario: impl Into<PathBuf>, domain: u32) -> NodeArgs {
        NodeArgs {
            scenario: scenario.into(),
            domain,
            qos: None,
            mode: None,
            exchange: None,
        }
    }
}
