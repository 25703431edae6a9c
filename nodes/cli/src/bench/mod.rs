//! `convoy bench ...`: performance measurements whose numbers go to docs/BENCHMARKS.md.

pub mod bridge;
mod image_sink;
pub mod images;
pub mod latency;
pub mod lockstep;
pub mod payload;
pub mod sensors;

use anyhow::Result;
use convoy_core::qos::QosSpec;

use crate::args::BenchCommand;

pub fn run(domain: u32, qos: Option<&QosSpec>, command: &BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Latency(args) => latency::run(domain, qos, args),
        BenchCommand::Lockstep(args) => lockstep::run(domain, qos, args),
        BenchCommand::Sensors(args) => sensors::run(domain, qos, args),
        BenchCommand::Images(args) => images::run(domain, qos, args),
        BenchCommand::Bridge(args) => bridge::run(domain, qos, args),
    }
}
