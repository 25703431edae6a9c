//! `convoy bench lockstep`: frames per second and barrier latency of the lockstep clock with N
//! agent processes (real rapier physics) on this host, for each state exchange.
//!
//! Each configuration runs a generated scenario (N cars on a circular road) through the same
//! code path as `convoy run`; the coordinator reports its own measurements in a RESULT line.

use std::f64::consts::PI;

use crate::launch::HostAddress;
use anyhow::{bail, Context, Result};
use convoy_core::qos::QosSpec;
use convoy_core::scenario::{
    AgentSpec, ControllerSpec, Scenario, Settings, StartPose, VehicleParams,
};

use super::{write_csv, ScratchDir};
use crate::args::{check_each, LockstepArgs, RunArgs};
use crate::graph::run_until_done;
use crate::process::stop_flag;
use crate::run_cmd::{scenario_nodes, ExtraNodes};

/// N cars spaced ~20 m apart on a circle, driving the same way at 8 m/s.
pub fn ring_scenario(agents: usize) -> Scenario {
    let radius = (agents as f64 * 20.0 / (2.0 * PI)).max(50.0);
    let path: Vec<[f64; 2]> = (0..48)
        .map(|i| {
            let a = 2.0 * PI * i as f64 / 48.0;
            [radius * a.cos(), radius * a.sin()]
        })
        .collect();
    let agents = (0..agents)
        .map(|i| {
            let a = 2.0 * PI * i as f64 / agents as f64;
            AgentSpec {
                id: format!("car_{i:02}"),
                start: StartPose {
                    x: radius * a.cos(),
                    y: radius * a.sin(),
                    yaw: a + PI / 2.0,
                },
                vehicle: VehicleParams::default(),
                controller: ControllerSpec::Waypoints {
                    speed: 8.0,
                    path: path.clone(),
                    looped: true,
                },
                sensors: Vec::new(),
            }
        })
        .collect();
    Scenario {
        scenario: Settings {
            name: "bench_ring".into(),
            seed: 1,
            dt: 0.01,
            mode: Default::default(),
            step: Default::default(),
            exchange: Default::default(),
            real_time_factor: 1.0,
            max_substep_delta: 0.01,
            max_substeps: 10,
            barrier_timeout: 10.0,
            lease: 5.0,
        },
        origin: Default::default(),
        map: Default::default(),
        agents,
    }
}

const CSV_HEADER: &str = "agents,exchange,frames,frames_per_s,barrier_p50_us,barrier_p99_us";

fn parse_result(line: &str) -> Option<(u64, f64, f64, f64)> {
    let rest = line.strip_prefix("RESULT ")?;
    let field = |key: &str| -> Option<&str> {
        rest.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    };
    Some((
        field("frames")?.parse().ok()?,
        field("fps")?.parse().ok()?,
        field("barrier_p50_us")?.parse().ok()?,
        field("barrier_p99_us")?.parse().ok()?,
    ))
}

pub fn run(domain: u32, qos: Option<&QosSpec>, args: &LockstepArgs) -> Result<()> {
    check_each("--agents", &args.agents, 1..=64, "agents per run")?;
    for e in &args.exchange {
        if e != "peer" && e != "relay" {
            bail!("--exchange '{e}': use peer and/or relay");
        }
    }
    if args.frames == 0 {
        bail!("--frames must be at least 1");
    }
    let dir = ScratchDir::new("convoy-bench")?;
    let stop = stop_flag()?;
    let mut rows = Vec::new();
    println!(
        "{:>7} {:>9} {:>8} {:>10} {:>14} {:>14}",
        "agents", "exchange", "frames", "frames/s", "barrier p50 us", "barrier p99 us"
    );
    for &n in &args.agents {
        let text = toml::to_string(&ring_scenario(n)).context("cannot write a scenario")?;
        let scenario = dir.write(&format!("bench_ring_{n}.toml"), text)?;
        for exchange in &args.exchange {
            // Only the lockstep is measured: no sensor nodes (and none waited for).
            let run_args = RunArgs {
                scenario: scenario.clone(),
                frames: Some(args.frames),
                mode: Some("sync".into()),
                exchange: Some(exchange.clone()),
                coordinator_args: vec!["--result-line".into()],
                ..RunArgs::default()
            };
            let nodes = scenario_nodes(domain, qos, &run_args, &ExtraNodes::default(), &|_| {
                HostAddress::Local
            })?;
            let mut result = None;
            let mut errors = Vec::new();
            let outcome = run_until_done(&nodes, "coordinator", &stop, false, |l| {
                if let Some(r) = parse_result(&l.line) {
                    result = Some(r);
                } else if l.line.contains("error") || l.line.contains("barrier:") {
                    errors.push(format!("[{}] {}", l.node, l.line));
                }
            });
            if let Err(e) = outcome {
                bail!("{n} agents, {exchange}: {e:#}\n{}", errors.join("\n"));
            }
            let Some((frames, fps, p50, p99)) = result else {
                bail!("{n} agents, {exchange}: no result\n{}", errors.join("\n"));
            };
            println!("{n:>7} {exchange:>9} {frames:>8} {fps:>10.1} {p50:>14.1} {p99:>14.1}");
            rows.push(format!(
                "{n},{exchange},{frames},{fps:.1},{p50:.1},{p99:.1}"
            ));
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
        }
    }
    match &args.out {
        Some(out) => write_csv(out, CSV_HEADER, rows),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_scenarios_are_valid_and_parse_back() {
        for n in [1, 2, 16, 64] {
            let s = ring_scenario(n);
            let text = toml::to_string(&s).expect("toml");
            let back = Scenario::from_str(&text, "ring.toml").expect("valid");
            assert_eq!(back.agents.len(), n);
        }
        assert_eq!(
            parse_result(
                "RESULT frames=10 seconds=1.0 fps=10.000 barrier_p50_us=5.0 barrier_p99_us=9.0"
            ),
            Some((10, 10.0, 5.0, 9.0))
        );
    }
}
