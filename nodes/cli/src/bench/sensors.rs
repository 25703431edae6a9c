//! `convoy bench sensors`: sensor samples per second and per-sample latency, end to end.
//!
//! Each configuration runs a generated scenario (the lockstep bench's ring of cars, each
//! carrying the measured sensors at the frame rate) through the same code path as `convoy
//! run`, with one or more sensor node processes. This process subscribes to the clock and to
//! every sensor topic, as any consumer would, and measures each sample's latency from the
//! arrival of its frame's tick to its own arrival — both seen here, on one clock — and the
//! samples per second over the run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::launch::{HostAddress, SensorNodeLaunch};
use anyhow::{bail, Context, Result};
use convoy_core::dds::{Node, Subscriber, WaitSet};
use convoy_core::messages::{
    GnssFix, Image, Imu, Message, Odometry, PointCloud, RadarScan, SensorHeader, Tick,
};
use convoy_core::node::SensorNodeRole;
use convoy_core::qos::QosSpec;
use convoy_core::scenario::{Distribution, SensorKind, SensorSpec};
use convoy_core::topics::{self, Topic};

use crate::args::{RunArgs, SensorsBenchArgs};
use crate::bench::latency::percentile;
use crate::bench::lockstep::ring_scenario;
use crate::graph::run_until_done;
use crate::process::stop_flag;
use crate::run_cmd::scenario_nodes;

/// CSV header shared with the camera and lidar measurements.
pub const CSV_HEADER: &str = "sensor,config,sensor_nodes,samples_per_s,points_per_s,p50_ms,p99_ms";

/// `64x2048@10`: channels, columns, scans per second of simulation time.
fn parse_lidar(s: &str) -> Result<(u32, u32, f64)> {
    let usage = || anyhow::anyhow!("--lidar '{s}': expected CHANNELSxCOLUMNS@HZ, e.g. 64x2048@10");
    let (dims, rate) = s.split_once('@').ok_or_else(usage)?;
    let (channels, columns) = dims.split_once('x').ok_or_else(usage)?;
    let channels: u32 = channels.trim().parse().map_err(|_| usage())?;
    let columns: u32 = columns.trim().parse().map_err(|_| usage())?;
    let rate: f64 = rate.trim().parse().map_err(|_| usage())?;
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

/// One sensor topic this process reads, with how to find a sample's header.
struct Probe<M: Message> {
    kind: SensorKind,
    sub: Subscriber<M>,
    header: fn(&M) -> &SensorHeader,
    /// Points in a sample (clouds); 0 for other kinds.
    points: fn(&M) -> u64,
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

impl<M: Message> Drain for Probe<M> {
    fn drain(&mut self, ticks: &std::collections::BTreeMap<u64, Instant>, tallies: &mut [Tally]) {
        let now = Instant::now();
        for s in self.sub.take(1024) {
            let t = &mut tallies[self.kind as usize];
            t.samples += 1;
            t.points += (self.points)(&s.value);
            t.first.get_or_insert(now);
            t.last = Some(now);
            let frame = (self.header)(&s.value).frame;
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

fn probe<M: Message>(
    node: &Node,
    topic: &Topic<M>,
    kind: SensorKind,
    header: fn(&M) -> &SensorHeader,
) -> Result<Box<dyn Drain + Send>> {
    probe_points(node, topic, kind, header, |_| 0)
}

fn probe_points<M: Message>(
    node: &Node,
    topic: &Topic<M>,
    kind: SensorKind,
    header: fn(&M) -> &SensorHeader,
    points: fn(&M) -> u64,
) -> Result<Box<dyn Drain + Send>> {
    Ok(Box::new(Probe {
        kind,
        sub: node.subscriber(topic)?,
        header,
        points,
    }))
}

fn write_scenario(
    dir: &Path,
    args: &SensorsBenchArgs,
    kinds: &[SensorKind],
    lidar: Option<(u32, u32, f64)>,
    camera: Option<(u32, u32)>,
) -> Result<PathBuf> {
    let mut scenario = ring_scenario(args.agents);
    scenario.scenario.name = "bench_sensors".into();
    for agent in &mut scenario.agents {
        agent.sensors = kinds
            .iter()
            .map(|&kind| SensorSpec {
                distribution: Distribution::MainOrClient,
                load: 0.1,
                ..SensorSpec::new(kind.as_str(), kind, args.rate)
            })
            .collect();
    }
    if let (Some((channels, columns, rate)), Some(first)) = (lidar, scenario.agents.first_mut()) {
        first.sensors.push(SensorSpec {
            distribution: Distribution::MainOrClient,
            range: Some(100.0),
            channels: Some(channels),
            columns: Some(columns),
            ..SensorSpec::new("lidar", SensorKind::Lidar, rate)
        });
    }
    if let Some((w, h)) = camera {
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
    let path = dir.join(format!("bench_sensors_{}.toml", args.agents));
    let text = toml::to_string(&scenario).context("cannot write a scenario")?;
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

struct Row {
    kind: SensorKind,
    config: String,
    sensor_nodes: usize,
    per_s: f64,
    points_per_s: f64,
    p50: f64,
    p99: f64,
}

pub fn run(domain: u32, qos: Option<&QosSpec>, args: &SensorsBenchArgs) -> Result<()> {
    if !(1..=32).contains(&args.agents) {
        bail!("--agents takes 1 to 32 agents");
    }
    if args.frames == 0 {
        bail!("--frames must be at least 1");
    }
    if !(args.rate.is_finite() && args.rate > 0.0) {
        bail!("--rate must be a positive number of hertz");
    }
    if args.sensor_nodes.is_empty() || args.sensor_nodes.iter().any(|&n| n == 0 || n > 8) {
        bail!("--sensor-nodes takes 1 to 8 sensor nodes per run");
    }
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
    println!(
        "{:<9} {:<22} {:>6} {:>10} {:>11} {:>8} {:>8}",
        "sensor", "config", "nodes", "samples/s", "points/s", "p50 ms", "p99 ms"
    );
    for setup in &setups {
        measure(domain, qos, args, setup, &qos_set, &stop, &mut rows)?;
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    if let Some(out) = &args.out {
        let mut csv = String::from(CSV_HEADER);
        csv.push('\n');
        for r in &rows {
            csv.push_str(&format!(
                "{},{},{},{:.1},{:.0},{:.4},{:.4}\n",
                r.kind.as_str(),
                r.config,
                r.sensor_nodes,
                r.per_s,
                r.points_per_s,
                r.p50,
                r.p99
            ));
        }
        std::fs::write(out, csv).with_context(|| format!("cannot write {}", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

/// What one bench configuration carries.
struct Setup {
    plain: Vec<SensorKind>,
    lidar: Option<(u32, u32, f64)>,
    camera: Option<(u32, u32)>,
}

/// `640x480`: width and height.
fn parse_resolution(s: &str) -> Result<(u32, u32)> {
    let usage = || anyhow::anyhow!("--camera '{s}': expected WIDTHxHEIGHT, e.g. 640x480");
    let (w, h) = s.split_once('x').ok_or_else(usage)?;
    let w: u32 = w.trim().parse().map_err(|_| usage())?;
    let h: u32 = h.trim().parse().map_err(|_| usage())?;
    if !(1..=8192).contains(&w) || !(1..=8192).contains(&h) {
        bail!("--camera '{s}': width and height must be 1 to 8192");
    }
    Ok((w, h))
}

/// Runs one setup with each number of sensor nodes, printing and collecting a row per kind.
fn measure(
    domain: u32,
    qos: Option<&QosSpec>,
    args: &SensorsBenchArgs,
    setup: &Setup,
    qos_set: &Arc<convoy_core::qos::QosSet>,
    stop: &Arc<std::sync::atomic::AtomicBool>,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("convoy-bench-sensors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let Setup {
        plain,
        lidar,
        camera,
    } = setup;
    let (plain, lidar, camera) = (plain.as_slice(), *lidar, *camera);
    let mut kinds: Vec<SensorKind> = plain.to_vec();
    if lidar.is_some() {
        kinds.push(SensorKind::Lidar);
    }
    if camera.is_some() {
        kinds.push(SensorKind::Camera);
    }
    let scenario_path = write_scenario(&dir, args, plain, lidar, camera)?;
    let scenario = convoy_core::scenario::Scenario::load(&scenario_path)?;
    let config = format!("{} agents @{} Hz", args.agents, args.rate);
    for &count in &args.sensor_nodes {
        // This process is the consumer: its readers exist before the graph starts.
        let node = Node::new(domain, "bench/sensors", Arc::clone(qos_set))?;
        let mut clock: Subscriber<Tick> = node.subscriber(&topics::clock())?;
        let mut probes: Vec<Box<dyn Drain + Send>> = Vec::new();
        if lidar.is_some() {
            if let Some(first) = scenario.agent_ids().first() {
                probes.push(probe_points::<PointCloud>(
                    &node,
                    &topics::sensor(first, "lidar"),
                    SensorKind::Lidar,
                    |m| &m.header,
                    |m| u64::from(m.point_count),
                )?);
            }
        }
        if camera.is_some() {
            for agent in scenario.agent_ids() {
                probes.push(probe::<Image>(
                    &node,
                    &topics::sensor(&agent, "camera"),
                    SensorKind::Camera,
                    |m| &m.header,
                )?);
            }
        }
        for agent in scenario.agent_ids() {
            for &kind in plain {
                let (agent, id) = (agent.as_str(), kind.as_str());
                probes.push(match kind {
                    SensorKind::Imu => {
                        probe::<Imu>(&node, &topics::sensor(agent, id), kind, |m| &m.header)?
                    }
                    SensorKind::Gnss => {
                        probe::<GnssFix>(&node, &topics::sensor(agent, id), kind, |m| &m.header)?
                    }
                    SensorKind::Odometry => {
                        probe::<Odometry>(&node, &topics::sensor(agent, id), kind, |m| &m.header)?
                    }
                    SensorKind::Radar => {
                        probe::<RadarScan>(&node, &topics::sensor(agent, id), kind, |m| &m.header)?
                    }
                    SensorKind::Lidar | SensorKind::Camera => continue,
                });
            }
        }
        let done = Arc::new(AtomicBool::new(false));
        let reader_done = Arc::clone(&done);
        let reader = std::thread::Builder::new()
            .name("bench-consumer".into())
            .spawn(move || -> Result<Vec<Tally>> {
                let mut ws = WaitSet::new()?;
                let clock_token = clock.attach(&mut ws)?;
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
                            return Ok(tallies);
                        }
                    }
                }
            })
            .context("cannot start the consumer thread")?;
        let sensors: Vec<SensorNodeLaunch> = (0..count)
            .map(|i| SensorNodeLaunch {
                name: if i == 0 {
                    "main".into()
                } else {
                    format!("c{i}")
                },
                role: if i == 0 {
                    SensorNodeRole::Main
                } else {
                    SensorNodeRole::Client
                },
                capacity: 1.0,
                host: "local".into(),
            })
            .collect();
        let run_args = RunArgs {
            scenario: scenario_path.clone(),
            frames: Some(args.frames),
            duration: None,
            mode: Some("sync".into()),
            exchange: Some("relay".into()),
            state_log: None,
            bridge: false,
            bridge_config: None,
            coordinator_args: Vec::new(),
        };
        let nodes = scenario_nodes(domain, qos, &run_args, &sensors, &[], &|_| {
            HostAddress::Local
        })?;
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
        let tallies = reader
            .join()
            .map_err(|_| anyhow::anyhow!("the consumer thread panicked"))??;
        outcome?;
        for &kind in &kinds {
            let t = &tallies[kind as usize];
            let seconds = match (t.first, t.last) {
                (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
                _ => 0.0,
            };
            let mut lat = t.latencies_ms.clone();
            lat.sort_by(f64::total_cmp);
            let config = match (kind, lidar, camera) {
                (SensorKind::Lidar, Some((channels, columns, rate)), _) => {
                    format!("{channels}x{columns} @{rate} Hz")
                }
                (SensorKind::Camera, _, Some((w, h))) => {
                    format!("{w}x{h}, {} agents", args.agents)
                }
                _ => config.clone(),
            };
            let row = Row {
                kind,
                config,
                sensor_nodes: count,
                per_s: if seconds > 0.0 {
                    t.samples as f64 / seconds
                } else {
                    0.0
                },
                points_per_s: if seconds > 0.0 {
                    t.points as f64 / seconds
                } else {
                    0.0
                },
                p50: percentile(&lat, 0.5),
                p99: percentile(&lat, 0.99),
            };
            println!(
                "{:<9} {:<22} {:>6} {:>10.0} {:>11.0} {:>8.3} {:>8.3}",
                row.kind.as_str(),
                row.config,
                row.sensor_nodes,
                row.per_s,
                row.points_per_s,
                row.p50,
                row.p99
            );
            rows.push(row);
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
