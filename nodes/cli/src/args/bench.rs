//! `convoy bench ...` arguments: what each benchmark measures and how (clap derive, validated
//! as in the parent module).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use crate::grouping::AgentsPerProcess;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Round-trip latency and throughput between two processes
    Latency(LatencyArgs),
    /// Lockstep frames per second and barrier latency for N agent processes
    Lockstep(LockstepArgs),
    /// Sensor samples per second and latency from frame tick to a subscriber process
    Sensors(SensorsBenchArgs),
    /// Camera images and lidar clouds to a convoy, CycloneDDS or rclpy reader: loss and latency
    Images(ImagesBenchArgs),
    /// What the ROS 2 bridge adds: the same sensor stream read directly and through convoy-bridge
    Bridge(BridgeBenchArgs),
    /// What building a scenario's world (OpenDRIVE roads, meshes, trimesh shapes) costs a node
    World(crate::bench::world::WorldBenchArgs),
}

#[derive(Debug, Args)]
pub struct BridgeBenchArgs {
    /// What each sample is: image:WxH (rgb8) or cloud:RINGSxPOINTS (x, y, z, intensity f32)
    #[arg(long, default_value = "image:640x480")]
    pub payload: crate::bench::payload::Shape,
    /// Samples per second
    #[arg(long, default_value_t = 30.0)]
    pub rate: f64,
    /// Samples counted (after the warm-up)
    #[arg(long, default_value_t = 300)]
    pub count: u64,
    /// Seconds of warm-up traffic before counting (discovery of the bridge's path)
    #[arg(long, default_value_t = 3.0)]
    pub warmup: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImageReader {
    /// `convoy bench images --role sink` in another process
    Convoy,
    /// CycloneDDS (tests/interop/build.sh builds cyclone_sink)
    Cyclone,
    /// A stock rclpy subscriber (sensor_msgs/Image, PointCloud2) on Fast DDS
    Rclpy,
}

impl ImageReader {
    pub fn name(&self) -> &'static str {
        match self {
            ImageReader::Convoy => "convoy",
            ImageReader::Cyclone => "cyclone",
            ImageReader::Rclpy => "rclpy",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImagesRole {
    /// Spawn the reader and send (the default)
    Writer,
    /// convoy's reader, started by the writer side
    Sink,
}

#[derive(Debug, Args)]
pub struct ImagesBenchArgs {
    /// What each sample is, comma separated for several runs: image:WxH (rgb8) or
    /// cloud:RINGSxPOINTS (x, y, z, intensity as f32)
    #[arg(long, value_delimiter = ',', default_value = "image:640x480")]
    pub payload: Vec<crate::bench::payload::Shape>,
    /// Samples per second (0: as fast as the writer admits them)
    #[arg(long, default_value_t = 30.0)]
    pub rate: f64,
    /// Samples per run
    #[arg(long, default_value_t = 150)]
    pub count: u64,
    /// Who reads: convoy, cyclone or rclpy (reliability and depth: the QoS's sensor profile)
    #[arg(long, value_enum, default_value_t = ImageReader::Convoy)]
    pub reader: ImageReader,
    /// The CycloneDDS reader program (`--reader cyclone`)
    #[arg(long, env = "CONVOY_CYCLONE_SINK")]
    pub cyclone_sink: Option<PathBuf>,
    /// A python with rclpy and sensor_msgs (`--reader rclpy`; scripts/ros-venv.sh makes .venv)
    #[arg(long, env = "CONVOY_ROS_PYTHON", default_value = ".venv/bin/python")]
    pub python: PathBuf,
    /// Seconds to wait for discovery, and for a blocked write, before giving up
    #[arg(long, default_value_t = 20.0)]
    pub timeout: f64,
    /// One JSON object per run instead of a table line
    #[arg(long)]
    pub json: bool,
    /// Write the results as CSV
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write on this launch file's first netns host and read (convoy reader) on its second
    /// (after `convoy netns up FILE`): samples cross the bridge and the link conditions
    #[arg(long, value_name = "LAUNCH_FILE")]
    pub netns_hosts: Option<PathBuf>,
    /// Also record the topic with `convoy record` (its own process, beside the reader) to this
    /// MCAP file, then count the samples it holds whole (the `recorded` column)
    #[arg(long, value_name = "FILE.mcap")]
    pub record: Option<PathBuf>,
    /// The recorder's chunk compression (with --record)
    #[arg(long, value_enum, default_value_t, requires = "record")]
    pub record_compression: convoy_bridge::mcap::record::Compression,
    #[arg(long, value_enum, default_value_t = ImagesRole::Writer, hide = true)]
    pub role: ImagesRole,
    /// The network namespace the writer starts the convoy reader in (set by --netns-hosts)
    #[arg(long, hide = true)]
    pub sink_netns: Option<String>,
}

#[derive(Debug, Args)]
pub struct SensorsBenchArgs {
    /// Agents in the generated scenario, each carrying every measured sensor
    #[arg(long, default_value_t = 4)]
    pub agents: usize,
    /// Sensor kinds to measure, comma separated (none: an empty list, e.g. with --lidar)
    #[arg(long, value_delimiter = ',', default_value = "imu,gnss,odometry,radar")]
    pub sensors: Vec<String>,
    /// Also one roof lidar on the first agent: CHANNELSxCOLUMNS@HZ (e.g. 64x2048@10)
    #[arg(long, value_name = "CHANNELSxCOLUMNS@HZ")]
    pub lidar: Option<String>,
    /// Cameras, one run per resolution: a camera on every agent at --rate (e.g.
    /// 180x120,640x480,1440x960)
    #[arg(long, value_delimiter = ',', value_name = "WxH")]
    pub camera: Vec<String>,
    /// Sensor rate, Hz of simulation time (100 = every frame at dt 0.01)
    #[arg(long, default_value_t = 100.0)]
    pub rate: f64,
    /// Numbers of sensor node processes, comma separated (one run each)
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub sensor_nodes: Vec<usize>,
    /// Frames per run
    #[arg(long, default_value_t = 2000)]
    pub frames: u64,
    /// Put the sensors' agents in this scenario's world (its [map] and first N agents, as
    /// `bench lockstep --world`) instead of the flat ring
    #[arg(long, value_name = "SCENARIO")]
    pub world: Option<PathBuf>,
    /// The sensor nodes' camera adapter: auto (a GPU when there is one), gpu or cpu (lavapipe)
    #[arg(long, value_enum, default_value = "auto")]
    pub adapter: convoy_core::node::AdapterChoice,
    /// Write the results as CSV (sensor,config,sensor_nodes,samples_per_s,points_per_s,p50_ms,p99_ms),
    /// and each sensor node's stage times beside it (OUT_stages.csv: config,sensor_nodes,node,
    /// scope,stage,count,p50_ms,p99_ms,mean_ms,total_s)
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LockstepArgs {
    /// Numbers of agents, comma separated
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16")]
    pub agents: Vec<usize>,
    /// Exchanges to measure, comma separated
    #[arg(long, value_delimiter = ',', default_value = "peer,relay")]
    pub exchange: Vec<String>,
    /// Frames per run
    #[arg(long, default_value_t = 2000)]
    pub frames: u64,
    /// Agents in each agent process, comma separated (numbers or auto): each value is measured
    /// (`convoy run --agents-per-process`)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1",
        value_name = "N|auto"
    )]
    pub agents_per_process: Vec<AgentsPerProcess>,
    /// Run each configuration open, secured (`convoy run --secure`: DDS Security on every
    /// node, state payloads encrypted), or both, comma separated
    #[arg(long, value_delimiter = ',', default_value = "open")]
    pub security: Vec<BenchSecurity>,
    /// Drive this scenario's world instead of the flat ring: its [map] and its first N agents
    /// (starts and controllers, e.g. lane_follow cars on Town01), at the bench's settings (dt
    /// 0.01), so frames/s compare with the ring's
    #[arg(long, value_name = "SCENARIO")]
    pub world: Option<PathBuf>,
    /// Write the results as CSV
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Whether a bench's run is secured (`--security`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchSecurity {
    Open,
    Secured,
}

impl std::fmt::Display for BenchSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            BenchSecurity::Open => "open",
            BenchSecurity::Secured => "secured",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Delivery {
    /// The DDS receive thread hands each sample to the application (`Subscriber::into_listener`)
    Listener,
    /// A thread blocked on the reader takes each sample (`Subscriber::take_wait`)
    Thread,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// Spawn the pong process and run ping here
    Both,
    /// Send pings and measure (run `--role pong` on the other host)
    Ping,
    /// Answer pings until stopped
    Pong,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Baseline {
    /// CycloneDDS's ddsperf (Debian cyclonedds-tools) at the same sizes
    Ddsperf,
}

#[derive(Debug, Args)]
pub struct LatencyArgs {
    /// Payload sizes in bytes, comma separated
    #[arg(long, value_delimiter = ',', default_value = "64,4096,65536,1048576")]
    pub sizes: Vec<usize>,
    /// Seconds of measuring per size
    #[arg(long, default_value_t = 3.0)]
    pub duration: f64,
    /// At most this many round trips per size
    #[arg(long, default_value_t = 100_000)]
    pub round_trips: u64,
    /// Pings per second (e.g. 1000: one every millisecond, both sides idle between); 0 sends
    /// the next ping as soon as the answer arrives (full rate). ddsperf runs at the same rate.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Which side(s) of the round trip this process runs
    #[arg(long, value_enum, default_value_t = Role::Both)]
    pub role: Role,
    /// How samples reach the application on both sides: a listener in the DDS receive
    /// thread (as ddsperf measures), or a thread blocked on the reader (as convoy's nodes read)
    #[arg(long, value_enum, default_value_t = Delivery::Listener)]
    pub delivery: Delivery,
    /// A reference measured in the same run
    #[arg(long, value_enum)]
    pub baseline: Option<Baseline>,
    /// Write the results as CSV
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write every measured round trip as CSV (size_bytes, rtt_us): for latency CDFs
    #[arg(long, value_name = "FILE")]
    pub samples_out: Option<PathBuf>,
    /// Also send a burst of this many samples one way and count what arrives (0: skip)
    #[arg(long, default_value_t = 0)]
    pub burst: u64,
    /// Seconds a ping may go unanswered before it counts as lost
    #[arg(long, default_value_t = 2.0)]
    pub loss_timeout: f64,
    /// Seconds to wait for the other side to be discovered
    #[arg(long, default_value_t = 30.0)]
    pub match_timeout: f64,
    /// Run ping on this launch file's first netns host and pong on its second (after
    /// `convoy netns up FILE`): the round trip crosses the bridge and the link conditions
    #[arg(long, value_name = "LAUNCH_FILE")]
    pub netns_hosts: Option<PathBuf>,
}
