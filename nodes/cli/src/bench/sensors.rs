//! `convoy bench sensors`: sensor samples per second and per-sample latency, end to end.
//!
//! Each configuration runs a generated scenario (the lockstep bench's ring of cars, each
//! carrying the measured sensors at the frame rate) through the same code path as `convoy
//! run`, with one or more sensor node processes. This process subscribes to the clock and to
//! every sensor topic, as any consumer would, and measures each sample's latency from the
//! arrival of its frame's tick to its own arrival — both seen here, on one clock — and the
//! samples per second over the run.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::launch::{HostAddress, SensorNodeLaunch};
use anyhow::{bail, Context, Result};
use convoy_core::dds::{Node, Subscriber, WaitSet};
use convoy_core::messages::{
    Counter, GnssFix, Image, Imu, Message, NodeStatus, Odometry, PointCloud, RadarScan,
    SensorHeader, Tick,
};
use convoy_core::node::SensorNodeRole;
use convoy_core::qos::{QosSet, QosSpec};
use convoy_core::scenario::{Distribution, SensorKind, SensorSpec};
use convoy_core::topics;

use super::lockstep::{ring_scenario, world_scenario};
use super::sensor_stages::{self, StageRow};
use super::{per_second, write_csv, ScratchDir, Stats};
use crate::args::{check_each, check_range, RunArgs, SensorsBenchArgs};
use crate::graph::run_until_done;
use crate::process::stop_flag;
use crate::run_cmd::{scenario_nodes, ExtraNodes};

/// CSV header shared with the camera and lidar measurements.
pub const CSV_HEADER: &[&str] = &[
    "sensor",
    "config",
    "sensor_nodes",
    "samples_per_s",
    "points_per_s",
    "p50_ms",
    "p99_ms",
];

/// `AxB`: two numbers (spaces around each are fine).
fn dims(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('x')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// `64x2048@10`: channels, columns, scans per second of simulation time.
fn parse_lidar(s: &str) -> Result<(u32, u32, f64)> {
    let parsed = s
        .split_once('@')
        .and_then(|(d, rate)| Some((dims(d)?, rate.trim().parse::<f64>().ok()?)));
    let Some(((channels, columns), rate)) = parsed else {
        bail!("--lidar '{s}': expected CHANNELSxCOLUMNS@HZ, e.g. 64x2048@10");
    };
    let valid = (1..=256).contains(&channels)
        && (1..=16384).contains(&columns)
        && rate > 0.0
        && rate.is_finite();
    if !valid {
        bail!("--lidar '{s}': channels 1-256, columns 1-16384, a positive rate");
    }
    Ok((channels, columns, rate))
}

fn parse_kind(s: &str) -> Result<SensorKind> {
    match SensorKind::from_name(s) {
        Some(
            kind @ (SensorKind::Imu | SensorKind::Gnss | SensorKind::Odometry | SensorKind::Radar),
        ) => Ok(kind),
        _ => bail!("--sensors '{s}': use imu, gnss, odometry and/or radar"),
    }
}

/// A sensor message this bench reads: its header, and how many points it carries.
trait Sensed: Message {
    fn header(&self) -> &SensorHeader;
    /// Points in a sample (clouds); 0 for other kinds.
    fn points(&self) -> u64 {
        0
    }
}

macro_rules! sensed {
    ($($ty:ty),*) => {$(
        impl Sensed for $ty {
            fn header(&self) -> &SensorHeader {
                &self.header
            }
        }
    )*};
}
sensed!(Imu, GnssFix, Odometry, RadarScan, Image);

impl Sensed for PointCloud {
    fn header(&self) -> &SensorHeader {
        &self.header
    }
    fn points(&self) -> u64 {
        u64::from(self.point_count)
    }
}

/// One sensor topic this process reads.
struct Probe<M: Message> {
    kind: SensorKind,
    sub: Subscriber<M>,
}

/// What one kind of sensor measured.
#[derive(Debug, Default, Clone)]
struct Tally {
    samples: u64,
    points: u64,
    latencies_ms: Vec<f64>,
    first: Option<Instant>,
    last: Option<Instant>,
}

trait Drain {
    fn drain(&mut self, ticks: &std::collections::BTreeMap<u64, Instant>, tallies: &mut [Tally]);
    fn attach(&mut self, ws: &mut WaitSet) -> Result<()>;
}

impl<M: Sensed> Drain for Probe<M> {
    fn drain(&mut self, ticks: &std::collections::BTreeMap<u64, Instant>, tallies: &mut [Tally]) {
        let now = Instant::now();
        for s in self.sub.take(1024) {
            let t = &mut tallies[self.kind as usize];
            t.samples += 1;
            t.points += s.value.points();
            t.first.get_or_insert(now);
            t.last = Some(now);
            let frame = s.value.header().frame;
            if let Some(tick_at) = ticks.get(&frame) {
                t.latencies_ms
                    .push(now.saturating_duration_since(*tick_at).as_secs_f64() * 1e3);
            }
        }
    }

    fn attach(&mut self, ws: &mut WaitSet) -> Result<()> {
        self.sub.attach(ws)?;
        Ok(())
    }
}

/// A reader of `agent`'s sensor of `kind` (the scenario names each sensor after its kind).
fn probe<M: Sensed>(node: &Node, agent: &str, kind: SensorKind) -> Result<Box<dyn Drain + Send>> {
    let sub = node.subscriber(&topics::sensor(agent, kind.as_str()))?;
    Ok(Box::new(Probe::<M> { kind, sub }))
}

fn write_scenario(dir: &ScratchDir, args: &SensorsBenchArgs, setup: &Setup) -> Result<PathBuf> {
    let mut scenario = match &args.world {
        Some(world) => world_scenario(args.agents, world)?,
        None => ring_scenario(args.agents),
    };
    scenario.scenario.name = "bench_sensors".into();
    for agent in &mut scenario.agents {
        agent.sensors = setup
            .plain
            .iter()
            .map(|&kind| SensorSpec {
                distribution: Distribution::MainOrClient,
                load: 0.1,
                ..SensorSpec::new(kind.as_str(), kind, args.rate)
            })
            .collect();
    }
    // The lidar goes on the first agent by id, the one `measure` listens to (a world's agents
    // need not be in id order in its file).
    let first_id = scenario.agent_ids().first().cloned();
    let first = scenario
        .agents
        .iter_mut()
        .find(|a| Some(&a.id) == first_id.as_ref());
    if let (Some((channels, columns, rate)), Some(first)) = (setup.lidar, first) {
        first.sensors.push(SensorSpec {
            distribution: Distribution::MainOrClient,
            range: Some(100.0),
            channels: Some(channels),
            columns: Some(columns),
            ..SensorSpec::new("lidar", SensorKind::Lidar, rate)
        });
    }
    if let Some((w, h)) = setup.camera {
        for agent in &mut scenario.agents {
            agent.sensors.push(SensorSpec {
                distribution: Distribution::MainOrClient,
                fov: Some(90.0),
                width: Some(w),
                height: Some(h),
                ..SensorSpec::new("camera", SensorKind::Camera, args.rate)
            });
        }
    }
    let text = toml::to_string(&scenario).context("cannot write a scenario")?;
    dir.write(&format!("bench_sensors_{}.toml", args.agents), text)
}

pub fn run(domain: u32, qos: Option<&QosSpec>, args: &SensorsBenchArgs) -> Result<()> {
    check_range("--agents", args.agents, 1..=32, "agents")?;
    if args.frames == 0 {
        bail!("--frames must be at least 1");
    }
    if !(args.rate.is_finite() && args.rate > 0.0) {
        bail!("--rate must be a positive number of hertz");
    }
    check_each(
        "--sensor-nodes",
        &args.sensor_nodes,
        1..=8,
        "sensor nodes per run",
    )?;
    let kinds = args
        .sensors
        .iter()
        .filter(|s| !s.is_empty() && s.as_str() != "none")
        .map(|s| parse_kind(s))
        .collect::<Result<Vec<_>>>()?;
    let lidar = args.lidar.as_deref().map(parse_lidar).transpose()?;
    let cameras = args
        .camera
        .iter()
        .map(|s| parse_resolution(s))
        .collect::<Result<Vec<_>>>()?;
    // One setup per camera resolution (cameras only), and one for the other sensors.
    let mut setups: Vec<Setup> = cameras
        .into_iter()
        .map(|res| Setup {
            plain: Vec::new(),
            lidar: None,
            camera: Some(res),
        })
        .collect();
    if !kinds.is_empty() || lidar.is_some() {
        setups.push(Setup {
            plain: kinds,
            lidar,
            camera: None,
        });
    }
    if setups.is_empty() {
        bail!("nothing to measure: give --sensors, --lidar and/or --camera");
    }
    let stop = stop_flag()?;
    let qos_set = crate::load_qos(qos)?;
    let mut rows = Vec::new();
    let mut stage_rows = Vec::new();
    println!(
        "{:<9} {:<22} {:>6} {:>10} {:>11} {:>8} {:>8}",
        "sensor", "config", "nodes", "samples/s", "points/s", "p50 ms", "p99 ms"
    );
    for setup in &setups {
        measure(
            domain,
            qos,
            args,
            setup,
            &qos_set,
            &stop,
            &mut rows,
            &mut stage_rows,
        )?;
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    if let Some(out) = &args.out {
        write_csv(out, CSV_HEADER, rows)?;
        println!("wrote {}", out.display());
        if !stage_rows.is_empty() {
            let path = sensor_stages::csv_path(out);
            write_csv(&path, sensor_stages::CSV_HEADER, stage_rows)?;
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}

/// Each sensor node's last NodeStatus counters, by node id.
type SensorCounters = std::collections::BTreeMap<String, Vec<Counter>>;

/// What one bench configuration carries.
struct Setup {
    plain: Vec<SensorKind>,
    lidar: Option<(u32, u32, f64)>,
    camera: Option<(u32, u32)>,
}

/// `640x480`: width and height.
fn parse_resolution(s: &str) -> Result<(u32, u32)> {
    let Some((w, h)) = dims(s) else {
        bail!("--camera '{s}': expected WIDTHxHEIGHT, e.g. 640x480");
    };
    if !(1..=8192).contains(&w) || !(1..=8192).contains(&h) {
        bail!("--camera '{s}': width and height must be 1 to 8192");
    }
    Ok((w, h))
}

/// Runs one setup with each number of sensor nodes, printing a row per kind and collecting it
/// as a CSV record, and each sensor node's stage times (`stage_rows`, CSV records).
#[allow(clippy::too_many_arguments)]
fn measure(
    domain: u32,
    qos: Option<&QosSpec>,
    args: &SensorsBenchArgs,
    setup: &Setup,
    qos_set: &Arc<QosSet>,
    stop: &Arc<AtomicBool>,
    rows: &mut Vec<Vec<String>>,
    stage_rows: &mut Vec<Vec<String>>,
) -> Result<()> {
    let dir = ScratchDir::new("convoy-bench-sensors")?;
    let (plain, lidar, camera) = (setup.plain.as_slice(), setup.lidar, setup.camera);
    let mut kinds: Vec<SensorKind> = plain.to_vec();
    kinds.extend(lidar.map(|_| SensorKind::Lidar));
    kinds.extend(camera.map(|_| SensorKind::Camera));
    let scenario_path = write_scenario(&dir, args, setup)?;
    let scenario = convoy_core::scenario::Scenario::load(&scenario_path)?;
    let config = format!("{} agents @{} Hz", args.agents, args.rate);
    for &count in &args.sensor_nodes {
        // This process is the consumer: its readers exist before the graph starts.
        let node = Node::new(domain, "bench/sensors", Arc::clone(qos_set))?;
        let mut clock: Subscriber<Tick> = node.subscriber(&topics::clock())?;
        // The sensor nodes' NodeStatus: their last beat carries their stage times.
        let mut statuses: Subscriber<NodeStatus> = node.subscriber(&topics::nodes())?;
        let mut probes: Vec<Box<dyn Drain + Send>> = Vec::new();
        if lidar.is_some() {
            if let Some(first) = scenario.agent_ids().first() {
                probes.push(probe::<PointCloud>(&node, first, SensorKind::Lidar)?);
            }
        }
        for agent in scenario.agent_ids() {
            if camera.is_some() {
                probes.push(probe::<Image>(&node, &agent, SensorKind::Camera)?);
            }
            for &kind in plain {
                probes.push(match kind {
                    SensorKind::Imu => probe::<Imu>(&node, &agent, kind)?,
                    SensorKind::Gnss => probe::<GnssFix>(&node, &agent, kind)?,
                    SensorKind::Odometry => probe::<Odometry>(&node, &agent, kind)?,
                    SensorKind::Radar => probe::<RadarScan>(&node, &agent, kind)?,
                    SensorKind::Lidar | SensorKind::Camera => continue,
                });
            }
        }
        let done = Arc::new(AtomicBool::new(false));
        let reader_done = Arc::clone(&done);
        let reader = std::thread::Builder::new()
            .name("bench-consumer".into())
            .spawn(move || -> Result<(Vec<Tally>, SensorCounters)> {
                let mut ws = WaitSet::new()?;
                let clock_token = clock.attach(&mut ws)?;
                let status_token = statuses.attach(&mut ws)?;
                let mut counters = SensorCounters::new();
                for p in probes.iter_mut() {
                    p.attach(&mut ws)?;
                }
                let mut ticks = std::collections::BTreeMap::new();
                let mut tallies = vec![Tally::default(); 6];
                let mut drain_until: Option<Instant> = None;
                loop {
                    ws.wait(Duration::from_millis(5));
                    if ws.ready(clock_token) {
                        let now = Instant::now();
                        for t in clock.take(64) {
                            ticks.entry(t.value.frame).or_insert(now);
                        }
                    }
                    for p in probes.iter_mut() {
                        p.drain(&ticks, &mut tallies);
                    }
                    if ws.ready(status_token) {
                        for s in statuses.take(256) {
                            if s.value.node_id.starts_with("sensor/") {
                                counters.insert(s.value.node_id, s.value.counters);
                            }
                        }
                    }
                    // Ticks older than a second of frames are no longer needed.
                    if ticks.len() > 4096 {
                        let keep = ticks.keys().nth(ticks.len() - 2048).copied();
                        if let Some(k) = keep {
                            ticks = ticks.split_off(&k);
                        }
                    }
                    if reader_done.load(Ordering::Relaxed) {
                        let until =
                            *drain_until.get_or_insert(Instant::now() + Duration::from_millis(500));
                        if Instant::now() > until {
                            return Ok((tallies, counters));
                        }
                    }
                }
            })
            .context("cannot start the consumer thread")?;
        // The first sensor node is the main one, the others its clients.
        let sensors: Vec<SensorNodeLaunch> = (0..count)
            .map(|i| match i {
                0 => SensorNodeLaunch::local("main".into(), SensorNodeRole::Main),
                _ => SensorNodeLaunch::local(format!("c{i}"), SensorNodeRole::Client),
            })
            .map(|node| SensorNodeLaunch {
                adapter: args.adapter,
                ..node
            })
            .collect();
        let run_args = RunArgs {
            scenario: scenario_path.clone(),
            frames: Some(args.frames),
            mode: Some("sync".into()),
            exchange: Some("relay".into()),
            ..RunArgs::default()
        };
        let nodes = scenario_nodes(
            domain,
            qos,
            &run_args,
            &ExtraNodes {
                sensors,
                ..Default::default()
            },
            &|_| HostAddress::Local,
        )?;
        eprintln!(
            "running {} frames: {} agents, {} sensor node(s), sensors {} at {} Hz ...",
            args.frames,
            args.agents,
            count,
            kinds
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(","),
            args.rate
        );
        let outcome = run_until_done(&nodes, "coordinator", stop, false, |_| {});
        done.store(true, Ordering::Relaxed);
        let (tallies, counters) = reader
            .join()
            .map_err(|_| anyhow::anyhow!("the consumer thread panicked"))??;
        outcome?;
        for &kind in &kinds {
            let t = &tallies[kind as usize];
            let seconds = match (t.first, t.last) {
                (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
                _ => 0.0,
            };
            let latency = Stats::of(t.latencies_ms.clone());
            let config = match (kind, lidar, camera) {
                (SensorKind::Lidar, Some((channels, columns, rate)), _) => {
                    format!("{channels}x{columns} @{rate} Hz")
                }
                (SensorKind::Camera, _, Some((w, h))) => {
                    format!("{w}x{h}, {} agents", args.agents)
                }
                _ => config.clone(),
            };
            let (name, p50, p99) = (kind.as_str(), latency.p50, latency.p99);
            let per_s = per_second(t.samples as f64, seconds);
            let points_per_s = per_second(t.points as f64, seconds);
            println!(
                "{name:<9} {config:<22} {count:>6} {per_s:>10.0} {points_per_s:>11.0} {p50:>8.3} {p99:>8.3}"
            );
            rows.push(vec![
                name.to_string(),
                config,
                count.to_string(),
                format!("{per_s:.1}"),
                format!("{points_per_s:.0}"),
                format!("{p50:.4}"),
                format!("{p99:.4}"),
            ]);
        }
        // Where each sensor node's time went (its last NodeStatus beat).
        let stage_config = match camera {
            Some((w, h)) => format!("{w}x{h}, {} agents", args.agents),
            None => config.clone(),
        };
        for (node_id, node_counters) in &counters {
            let stages: Vec<StageRow> = sensor_stages::rows_of(node_id, node_counters);
            sensor_stages::print(&format!("{node_id} ({count} node(s))"), &stages);
            stage_rows.extend(
                stages
                    .iter()
                    .map(|r| sensor_stages::csv(&stage_config, count, r)),
            );
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Ok(())
}
