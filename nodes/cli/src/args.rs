//! Command-line arguments of `convoy` (clap derive). Values are validated here where clap can
//! (ranges, lists), and by the command where it needs a file or the network.

use std::fmt::Display;
use std::ops::RangeInclusive;
use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, Parser, Subcommand};
use convoy_core::dds::MAX_DOMAIN_ID;
use convoy_core::qos::QosSpec;

use crate::grouping::AgentsPerProcess;

mod bench;
pub use bench::*;

#[derive(Debug, Parser)]
#[command(
    name = "convoy",
    version,
    about = "convoy: a distributed driving-simulation graph on DDS/RTPS",
    long_about = "convoy: a distributed driving-simulation graph on DDS/RTPS.\n\n\
        Tools to inspect a running graph (topic list/echo/hz), resolve QoS files (qos show)\n\
        and measure the transport (bench latency). RUST_LOG sets the log level."
)]
pub struct Cli {
    /// DDS domain id (0..=232), or `auto`: the first from 100 up that no DDS participant on
    /// this host uses
    #[arg(long, short = 'd', global = true, env = "CONVOY_DOMAIN", default_value_t = 0,
          value_parser = parse_domain)]
    pub domain: u32,
    /// QoS library: FILE or FILE::LIBRARY (default: the built-in qos/convoy.xml)
    #[arg(long, global = true, env = "CONVOY_QOS")]
    pub qos: Option<QosSpec>,
    /// Log more (info level)
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

fn parse_domain(s: &str) -> Result<u32, String> {
    if s == "auto" {
        let id = free_domain()?;
        eprintln!("domain auto: {id} (no DDS participant on this host uses it)");
        return Ok(id);
    }
    let id: u32 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a domain id: use a number 0..={MAX_DOMAIN_ID}"))?;
    convoy_core::dds::check_domain_id(id)
        .map(u32::from)
        .map_err(|e| e.to_string())
}

/// Fails unless a flag's value lies in `range`: "--duration 0 is out of range: use 0.1 to 3600
/// seconds". NaN lies in no range.
pub fn check_range<T: PartialOrd + Display>(
    flag: &str,
    value: T,
    range: RangeInclusive<T>,
    unit: &str,
) -> anyhow::Result<()> {
    if !range.contains(&value) {
        let (low, high) = range.into_inner();
        bail!("{flag} {value} is out of range: use {low} to {high} {unit}");
    }
    Ok(())
}

/// Fails unless a list flag has values and each lies in `range`.
pub fn check_each<T: PartialOrd + Display + Copy>(
    flag: &str,
    values: &[T],
    range: RangeInclusive<T>,
    unit: &str,
) -> anyhow::Result<()> {
    if values.is_empty() {
        bail!("{flag} is empty: give at least one value");
    }
    for &value in values {
        check_range(flag, value, range.clone(), unit)?;
    }
    Ok(())
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect topics on the domain: list, echo, hz
    #[command(subcommand)]
    Topic(TopicCommand),
    /// QoS libraries: show the resolved profiles of a DDS-XML file
    #[command(subcommand)]
    Qos(QosCommand),
    /// Run a scenario on this host: the coordinator and one process per agent
    Run(RunArgs),
    /// Bring up the whole graph a launch file describes, on every host it names
    Launch(LaunchArgs),
    /// Network namespaces for a launch file's netns hosts: up or down
    #[command(subcommand)]
    Netns(NetnsCommand),
    /// World commands to a running graph: pause, resume, teleport, control, state
    World(WorldArgs),
    /// Sensor assignments: `--plan` computes where a scenario's sensors would go
    Assignments(AssignmentsArgs),
    /// Record convoy topics to an MCAP file (schemas, QoS and sim time kept)
    Record(crate::record_cmd::RecordArgs),
    /// Publish a recording on DDS again, paced by its simulation time
    Replay(crate::record_cmd::ReplayArgs),
    /// Measure the transport and the lockstep
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Run a matrix of benches from an experiment file: table, CSV, HTML report with plots
    Experiment(crate::experiment::ExperimentArgs),
    /// Watch a run live: a Foxglove WebSocket server (scene, cameras, lidar, clock, assignments)
    View(ViewArgs),
    /// Maps: what an OpenDRIVE file holds, and a scenario's world exported for autonomy stacks
    #[command(subcommand)]
    Map(crate::map_cmd::MapCommand),
    /// DDS Security: a run's CA, each node's identity and permissions, the governance
    #[command(subcommand)]
    Security(crate::security::SecurityCommand),
}

/// Also what the benches and `convoy launch` run a scenario with (`Default`: none set).
#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// Scenario file (or a name under launch/scenarios/)
    pub scenario: PathBuf,
    /// Stop after this many frames
    #[arg(long, conflicts_with = "duration")]
    pub frames: Option<u64>,
    /// Stop after this many seconds of simulated time
    #[arg(long)]
    pub duration: Option<f64>,
    /// Clock mode (default: the scenario's)
    #[arg(long, value_parser = ["sync", "async"])]
    pub mode: Option<String>,
    /// State exchange (default: the scenario's)
    #[arg(long, value_parser = ["peer", "relay"])]
    pub exchange: Option<String>,
    /// Write one JSON line per agent per frame, as received over DDS
    #[arg(long)]
    pub state_log: Option<PathBuf>,
    /// Also start a ROS 2 bridge (convoy-bridge, DDS node bridge/ros2)
    #[arg(long)]
    pub bridge: bool,
    /// The bridge's settings file (implies --bridge)
    #[arg(long, value_name = "FILE")]
    pub bridge_config: Option<PathBuf>,
    /// Also record the run to FILE.mcap (a recorder node, bridge/record, that the run waits
    /// for before frame 0)
    #[arg(long, value_name = "FILE.mcap")]
    pub record: Option<PathBuf>,
    /// Run up to N agents of a host in each agent process (default 1), or `auto`: a host's
    /// agents spread evenly over as many processes as this machine has cores. Each agent is
    /// still a DDS node of its own (endpoints, state topic, status); the agents of a process
    /// share one DDS participant and fail together. On a host with fewer cores than agents the
    /// lockstep runs about twice as fast
    #[arg(long, value_name = "N|auto")]
    pub agents_per_process: Option<AgentsPerProcess>,
    /// The graphics adapter the sensor node renders cameras on: auto (a GPU when there is
    /// one), gpu (none is an error) or cpu (lavapipe)
    #[arg(long, value_enum, default_value_t = convoy_core::node::AdapterChoice::Auto)]
    pub adapter: convoy_core::node::AdapterChoice,
    /// DDS Security on every node: a fresh CA, each node's certificate and permissions (its
    /// own topics only) and the governance, made for this run and removed at its end
    /// (docs/SECURITY.md); payloads of states and sensors encrypted
    #[arg(long)]
    pub secure: bool,
    /// Extra arguments for the coordinator (benchmarks)
    #[arg(skip)]
    pub coordinator_args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// Launch file (TOML)
    pub file: PathBuf,
    /// Validate and print the plan (which node on which host, with which QoS); start nothing
    #[arg(long)]
    pub check: bool,
    /// Stop after this many seconds of simulated time (default: the file's, else until Ctrl-C)
    #[arg(long)]
    pub duration: Option<f64>,
    /// Stop after this many frames
    #[arg(long)]
    pub frames: Option<u64>,
    /// QoS library for every node: FILE or FILE::LIBRARY (default: the file's)
    #[arg(long = "with-qos")]
    pub qos: Option<QosSpec>,
    /// Write one JSON line per agent per frame, as the coordinator receives them
    #[arg(long)]
    pub state_log: Option<PathBuf>,
    /// DDS Security on every node, as the file's `[run] secure = true` (docs/SECURITY.md):
    /// the run's certificates are made here and sent to ssh hosts over ssh
    #[arg(long)]
    pub secure: bool,
}

#[derive(Debug, Subcommand)]
pub enum NetnsCommand {
    /// Create the namespaces, bridge, multicast routes and link conditions of FILE
    Up { file: PathBuf },
    /// Remove them
    Down { file: PathBuf },
}

#[derive(Debug, Args)]
pub struct AssignmentsArgs {
    /// Compute the placement of this scenario's sensors offline (no DDS)
    #[arg(long, value_name = "SCENARIO")]
    pub plan: Option<PathBuf>,
    /// Sensor nodes for --plan: ID=CAPACITY,...; ids starting with "main" are main nodes
    #[arg(long, value_delimiter = ',', default_value = "main=1.0")]
    pub nodes: Vec<String>,
    /// One JSON list of {sensor, agent, node, load} (live: also epoch)
    #[arg(long)]
    pub json: bool,
    /// Live table: seconds to collect assignments before printing
    #[arg(long, default_value_t = 2.0)]
    pub wait: f64,
    /// Live table: print it again every second until Ctrl-C
    #[arg(long)]
    pub watch: bool,
}

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Scenario of the run to watch (or a name under launch/scenarios/): its map and sensors
    pub scenario: PathBuf,
    /// Address the WebSocket server listens on (port 0: any free port)
    #[arg(long, default_value = "127.0.0.1:8765", value_name = "HOST:PORT")]
    pub bind: String,
    /// Node name on DDS (bridge/NAME)
    #[arg(long, default_value = "view")]
    pub name: String,
}

#[derive(Debug, Args)]
pub struct WorldArgs {
    /// Seconds to wait for the answer
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    #[command(subcommand)]
    pub command: WorldCommandArgs,
}

#[derive(Debug, Subcommand)]
pub enum WorldCommandArgs {
    /// Stop the clock
    Pause,
    /// Restart the clock
    Resume,
    /// Move an agent: AGENT X Y [Z] [--yaw RAD]
    Teleport {
        agent: String,
        #[arg(allow_negative_numbers = true)]
        x: f64,
        #[arg(allow_negative_numbers = true)]
        y: f64,
        #[arg(allow_negative_numbers = true, default_value_t = 0.0)]
        z: f64,
        #[arg(long, allow_negative_numbers = true, default_value_t = 0.0)]
        yaw: f64,
    },
    /// Set an agent's control (pedals, or --velocity/--yaw-rate)
    Control {
        agent: String,
        #[arg(long, default_value_t = 0.0)]
        throttle: f64,
        #[arg(long, default_value_t = 0.0)]
        brake: f64,
        #[arg(long, allow_negative_numbers = true, default_value_t = 0.0)]
        steer: f64,
        #[arg(long, allow_negative_numbers = true)]
        velocity: Option<f64>,
        #[arg(long, allow_negative_numbers = true)]
        yaw_rate: Option<f64>,
    },
    /// Print agent states (one agent, or all)
    State { agent: Option<String> },
}

#[derive(Debug, Subcommand)]
pub enum TopicCommand {
    /// Topics seen by discovery, with type and writer/reader counts
    List(ListArgs),
    /// Print the samples of a topic, decoded
    Echo(EchoArgs),
    /// Rate and jitter of a topic, like `ros2 topic hz`
    Hz(HzArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Also show each endpoint's QoS
    #[arg(long)]
    pub verbose: bool,
    /// Seconds to listen to discovery before printing
    #[arg(long, default_value_t = 2.0)]
    pub wait: f64,
}

#[derive(Debug, Args)]
pub struct EchoArgs {
    /// Topic name, e.g. convoy/clock or convoy/agent/ego/state
    pub topic: String,
    /// One JSON object per line instead of readable text
    #[arg(long)]
    pub json: bool,
    /// Stop after this many samples
    #[arg(long, short = 'n')]
    pub count: Option<u64>,
    /// Give up after this many seconds (default: run until Ctrl-C)
    #[arg(long)]
    pub timeout: Option<f64>,
    /// In text output, show at most this many elements of a long array
    #[arg(long, default_value_t = 16)]
    pub truncate: usize,
    /// Also write every received image as a PNG file in DIR (rgb8 colour, mono8 classes,
    /// 32FC1 depth as 16-bit millimetres), named AGENT_SENSOR_FRAME.png
    #[arg(long, value_name = "DIR")]
    pub save: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct HzArgs {
    /// Topic name
    pub topic: String,
    /// Number of most recent intervals the statistics cover
    #[arg(long, short = 'w', default_value_t = 1000)]
    pub window: usize,
    /// Stop after this many seconds (default: run until Ctrl-C)
    #[arg(long)]
    pub duration: Option<f64>,
}

#[derive(Debug, Subcommand)]
pub enum QosCommand {
    /// The resolved profiles of FILE (or one LIBRARY of it) after inheritance
    Show(QosShowArgs),
}

#[derive(Debug, Args)]
pub struct QosShowArgs {
    /// FILE or FILE::LIBRARY
    pub spec: QosSpec,
}

/// A domain no DDS participant on this host uses: one whose first participant's discovery
/// port (RTPS 9.6.1.1: 7400 + 250 x domain + 10) can be bound here. Runs on one domain stay
/// apart anyway (each run has its own partition); this keeps experiments off each other's
/// discovery traffic too.
fn free_domain() -> Result<u32, String> {
    let in_use = |d: u32| {
        let port = 7400 + 250 * d + 10;
        u16::try_from(port)
            .map(|port| std::net::UdpSocket::bind(("0.0.0.0", port)).is_err())
            .unwrap_or(true)
    };
    (100..=MAX_DOMAIN_ID)
        .chain(1..100)
        .find(|d| !in_use(*d))
        .ok_or_else(|| "--domain auto: every domain 1..=232 has a participant on this host".into())
}
