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
use crate::args::{check_each, check_range, BenchSecurity, LockstepArgs, RunArgs};
use crate::graph::run_until_done;
use crate::grouping::AgentsPerProcess;
use crate::process::stop_flag;
use crate::run_cmd::{scenario_nodes, ExtraNodes};
use crate::security::run::{SecuredRun, DEFAULT_ENCRYPTED};
use convoy_core::dds::run_scope::RunId;

/// N cars spaced ~20 m apart on a circle, driving the same way at 8 m/s.
pub fn ring_scenario(agents: usize) -> Scenario {
    let radius = (agents as f64 * 20.0 / (2.0 * PI)).max(50.0);
    let path: Vec<[f64; 2]> = (0..48)
        .map(|i| {
            let a = 2.0 * PI * i as f64 / 48.0;
            [radius * a.cos(), radius * a.sin()]
        })
        .collect();
    let agents: Vec<AgentSpec> = (0..agents)
        .map(|i| {
            let a = 2.0 * PI * i as f64 / agents as f64;
            AgentSpec {
                id: format!("car_{i:02}"),
                start: StartPose::Pose {
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
        file: Default::default(),
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
            // 65 processes on 2 cores: a beat can wait seconds for a CPU during start-up.
            lease: (agents.len() as f64 * 0.25).max(5.0),
        },
        origin: Default::default(),
        map: Default::default(),
        agents,
    }
}

const CSV_HEADER: &[&str] = &[
    "agents",
    "exchange",
    "frames",
    "frames_per_s",
    "barrier_p50_us",
    "barrier_p99_us",
    "datagrams_per_frame",
    "agents_per_process",
    "security",
    "registered_s",
    "started_s",
];

/// The coordinator's RESULT line.
struct LockstepResult {
    frames: u64,
    fps: f64,
    barrier_p50_us: f64,
    barrier_p99_us: f64,
    /// UDP datagrams the host sent per frame (the whole graph runs here), if the kernel says.
    datagrams_per_frame: Option<f64>,
    /// Agents that left the run (their status lapsed): the frames did not wait for them.
    left: u64,
}

fn parse_result(line: &str) -> Option<LockstepResult> {
    let rest = line.strip_prefix("RESULT ")?;
    let field = |key: &str| -> Option<&str> {
        rest.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    };
    let frames: u64 = field("frames")?.parse().ok()?;
    let datagrams: Option<u64> = field("datagrams_sent").and_then(|d| d.parse().ok());
    Some(LockstepResult {
        frames,
        fps: field("fps")?.parse().ok()?,
        barrier_p50_us: field("barrier_p50_us")?.parse().ok()?,
        barrier_p99_us: field("barrier_p99_us")?.parse().ok()?,
        datagrams_per_frame: datagrams.map(|d| d as f64 / frames.max(1) as f64),
        left: field("left").and_then(|l| l.parse().ok()).unwrap_or(0),
    })
}

/// The most agents one configuration runs (SynChrono-style runs of hundreds of vehicles).
const MAX_AGENTS: usize = 256;

/// The coordinator's start-up timeout for `agents` agents, in seconds.
fn startup_timeout_s(agents: usize) -> u64 {
    60 + 5 * agents as u64
}

pub fn run(domain: u32, qos: Option<&QosSpec>, args: &LockstepArgs) -> Result<()> {
    check_each("--agents", &args.agents, 1..=MAX_AGENTS, "agents per run")?;
    for k in &args.agents_per_process {
        if let AgentsPerProcess::Count(k) = k {
            check_range("--agents-per-process", *k, 1..=64, "agents in a process")?;
        }
    }
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
        "{:>7} {:>9} {:>11} {:>8} {:>10} {:>14} {:>14} {:>16} {:>8}",
        "agents",
        "exchange",
        "agents/proc",
        "frames",
        "frames/s",
        "barrier p50 us",
        "barrier p99 us",
        "datagrams/frame",
        "security"
    );
    for &n in &args.agents {
        let generated = match &args.world {
            Some(world) => world_scenario(n, world)?,
            None => ring_scenario(n),
        };
        let text = toml::to_string(&generated).context("cannot write a scenario")?;
        let scenario = dir.write(&format!("bench_{}_{n}.toml", generated.scenario.name), text)?;
        for &per_process in &args.agents_per_process {
            let grouped = if per_process == AgentsPerProcess::Count(1) {
                String::new()
            } else {
                format!(", {per_process} agents a process")
            };
            for (exchange, security) in args
                .exchange
                .iter()
                .flat_map(|e| args.security.iter().map(move |s| (e, *s)))
            {
                // Only the lockstep is measured: no sensor nodes (and none waited for).
                let run_args = RunArgs {
                    scenario: scenario.clone(),
                    frames: Some(args.frames),
                    mode: Some("sync".into()),
                    exchange: Some(exchange.clone()),
                    // Start-up (processes, discovery among them) grows with the graph: 64 agents
                    // on 2 cores take minutes to find each other.
                    coordinator_args: vec![
                        "--result-line".into(),
                        "--startup-timeout".into(),
                        startup_timeout_s(n).to_string(),
                    ],
                    agents_per_process: Some(per_process),
                    ..RunArgs::default()
                };
                let mut nodes =
                    scenario_nodes(domain, qos, &run_args, &ExtraNodes::default(), &|_| {
                        HostAddress::Local
                    })?;
                // Kept until the run is over: dropping it removes the run's keys.
                let _secured = match security {
                    BenchSecurity::Secured => Some(SecuredRun::prepare(
                        &RunId::generate(),
                        domain,
                        &DEFAULT_ENCRYPTED.into(),
                        &mut nodes,
                    )?),
                    BenchSecurity::Open => None,
                };
                let mut result = None;
                let mut errors = Vec::new();
                let mut startup = Startup::new(n, exchange);
                let outcome = run_until_done(&nodes, "coordinator", &stop, false, |l| {
                    if let Some(r) = parse_result(&l.line) {
                        result = Some(r);
                    } else if l.line.contains("error")
                        || l.line.contains("barrier:")
                        || l.line.contains("still waiting")
                    {
                        errors.push(format!("[{}] {}", l.node, l.line));
                    } else if l.node == "coordinator" {
                        startup.observe(&l.line);
                    }
                });
                if let Err(e) = outcome {
                    bail!(
                        "{n} agents, {exchange}{grouped}, {security}: {e:#}\n{}",
                        errors.join("\n")
                    );
                }
                let Some(r) = result else {
                    bail!(
                        "{n} agents, {exchange}{grouped}, {security}: no result\n{}",
                        errors.join("\n")
                    );
                };
                // Frames without them measure a smaller graph (64 agents on 2 cores once "ran"
                // 400,000 frames/s with every agent gone during start-up).
                if r.left > 0 {
                    bail!(
                        "{n} agents, {exchange}{grouped}, {security}: {} agent(s) left the run (their status lapsed), so \
                         the frames did not measure {n} agents\n{}",
                        r.left,
                        errors.join("\n")
                    );
                }
                let datagrams = r
                    .datagrams_per_frame
                    .map_or_else(String::new, |d| format!("{d:.1}"));
                println!(
                    "{n:>7} {exchange:>9} {per_process:>11} {:>8} {:>10.1} {:>14.1} {:>14.1} \
                     {datagrams:>16} {security:>8}",
                    r.frames, r.fps, r.barrier_p50_us, r.barrier_p99_us
                );
                rows.push(vec![
                    n.to_string(),
                    exchange.to_string(),
                    r.frames.to_string(),
                    format!("{:.1}", r.fps),
                    format!("{:.1}", r.barrier_p50_us),
                    format!("{:.1}", r.barrier_p99_us),
                    datagrams,
                    per_process.to_string(),
                    security.to_string(),
                    seconds(startup.registered),
                    seconds(startup.started),
                ]);
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
            }
        }
    }
    match &args.out {
        Some(out) => write_csv(out, CSV_HEADER, rows),
        None => Ok(()),
    }
}

/// How long a run took to come up, from the coordinator's start-up lines: every agent
/// registered, then the frame-0 handshake (every agent holds every peer's initial state).
/// Printed as it happens: with 64 agent processes on 2 cores this is where the time goes.
struct Startup {
    launched: std::time::Instant,
    label: String,
    registered: Option<f64>,
    started: Option<f64>,
    /// When the last "waiting for" line was passed on (one every PROGRESS_EVERY).
    progress_at: f64,
}

/// How often a slow start-up says what it still waits for.
const PROGRESS_EVERY: f64 = 10.0;

impl Startup {
    fn new(agents: usize, exchange: &str) -> Startup {
        Startup {
            launched: std::time::Instant::now(),
            label: format!("{agents} agents, {exchange}"),
            registered: None,
            started: None,
            progress_at: 0.0,
        }
    }

    fn observe(&mut self, line: &str) {
        let at = self.launched.elapsed().as_secs_f64();
        if self.registered.is_none() && line.starts_with("all ") && line.ends_with("registered") {
            self.registered = Some(at);
            eprintln!("  {}: every agent registered after {at:.1} s", self.label);
        } else if self.started.is_none() && line.starts_with("frame 0:") {
            self.started = Some(at);
            eprintln!(
                "  {}: frame 0 (every agent holds every peer's state) after {at:.1} s",
                self.label
            );
        } else if line.starts_with("waiting for") && at - self.progress_at >= PROGRESS_EVERY {
            self.progress_at = at;
            eprintln!("  {} after {at:.0} s: {line}", self.label);
        }
    }
}

fn seconds(at: Option<f64>) -> String {
    at.map_or_else(String::new, |s| format!("{s:.1}"))
}

/// The bench's ring settings with the world of scenario `path` instead of the ring: its [map]
/// (file paths made absolute, since the generated scenario lives in a scratch folder) and its
/// first `n` agents without their sensors.
pub fn world_scenario(n: usize, path: &std::path::Path) -> Result<Scenario> {
    let source = Scenario::load(&convoy_core::scenario::resolve_path(path))?;
    if source.agents.len() < n {
        bail!(
            "{} has {} agents: fewer than the {n} asked for",
            path.display(),
            source.agents.len()
        );
    }
    let absolute = |name: &str| {
        let p = source.map_path(name);
        std::fs::canonicalize(&p).unwrap_or(p).display().to_string()
    };
    let mut scenario = ring_scenario(n);
    scenario.scenario.name = format!("{}_world", source.scenario.name);
    scenario.map = source.map.clone();
    scenario.map.opendrive = source.map.opendrive.as_deref().map(absolute);
    for mesh in &mut scenario.map.meshes {
        mesh.file = absolute(&mesh.file);
    }
    scenario.agents = source.agents[..n].to_vec();
    for agent in &mut scenario.agents {
        agent.sensors.clear();
    }
    Ok(scenario)
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
        let r = parse_result(
            "RESULT frames=10 seconds=1.0 fps=10.000 barrier_p50_us=5.0 barrier_p99_us=9.0 \
             datagrams_sent=250",
        )
        .expect("a result");
        assert_eq!(
            (r.frames, r.fps, r.barrier_p50_us, r.barrier_p99_us),
            (10, 10.0, 5.0, 9.0)
        );
        assert_eq!(r.datagrams_per_frame, Some(25.0));
        assert_eq!(r.left, 0);
        let left = parse_result(
            "RESULT frames=10 seconds=1.0 fps=10.000 barrier_p50_us=5.0 barrier_p99_us=9.0 \
             datagrams_sent=250 left=3",
        )
        .expect("a result");
        assert_eq!(left.left, 3);
        let unknown = parse_result(
            "RESULT frames=10 seconds=1.0 fps=10.000 barrier_p50_us=5.0 barrier_p99_us=9.0 \
             datagrams_sent=unknown",
        )
        .expect("a result");
        assert_eq!(unknown.datagrams_per_frame, None);
    }
}
