//! The live view (`convoy view`, launch-file node `foxglove`): a Foxglove WebSocket server that
//! shows a run as it happens, a second bridge format beside ROS 2 on the same subscriptions.
//!
//! Channels (Foxglove's well-known schemas, protobuf; DESIGN.md "Bridges"):
//! - `/scene` SceneUpdate: the ground, the obstacles and every agent as a labelled box, once per
//!   frame; `/tf` FrameTransforms: `world` -> agent, so clouds in an agent's frame sit on its box.
//! - `/map` SceneUpdate: the scenario's road network and meshes (convoy-world's surfaces), one
//!   `map/<material>` entity of triangle lists per material. Town01 is about a megabyte: it is
//!   not sent with every frame but to each client as it subscribes, and again every MAP_PERIOD.
//!   A scenario without map files has no `/map`.
//! - cameras: RawImage on `/<agent>/<sensor>/image` (and `/depth`, `/semantic` when made), and
//!   the colour image as JPEG on `/<agent>/<sensor>/image/compressed` (encoded only while a
//!   client subscribes to it: `jpeg`);
//!   lidars: PointCloud on `/<agent>/<sensor>/points`, in the agent's frame.
//! - `/clock` and `/assignments` as JSON; the server's time follows the simulation clock.
//!
//! `scene` and `sensors` turn convoy messages into Foxglove ones; this file is the node's loop.

pub mod jpeg;
pub mod scene;
pub mod sensors;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use convoy_core::dds::{Node, Subscriber, WaitSet};
use convoy_core::messages::{AgentState, Image, Message, PointCloud, SensorAssignment, Tick};
use convoy_core::node::{NodeArgs, NodeContext, NodeId};
use convoy_core::scenario::{Scenario, SensorKind};
use convoy_core::sensor_catalogue::sensor_topics;
use convoy_core::topics::{self, Topic, TopicClass};
use convoy_world::World;
use foxglove::messages::{FrameTransforms, RawImage, SceneEntity, SceneUpdate};
use foxglove::websocket::{Capability, ChannelView, Client, ServerListener};
use foxglove::{Channel, Context, Encode, RawChannel, Schema, WebSocketServerHandle};
use jpeg::JpegTwin;

/// The longest the loop blocks without looking at the stop flag and its status.
const HOUSEKEEPING: Duration = Duration::from_millis(20);
/// Samples taken from one reader per pass: a camera at 30 Hz never has more waiting.
const TAKE: usize = 64;
/// How often the scene is sent when some agent stopped sending states.
const SCENE_PERIOD: Duration = Duration::from_millis(100);
/// How often the map is sent again to every client subscribed to `/map` (each also gets it as it
/// subscribes): a client that dropped what it had (Foxglove clears its scene when time jumps back,
/// as when a new run starts under a running view) has it back within this.
const MAP_PERIOD: Duration = Duration::from_secs(10);
/// How often the assignment table is sent again, for clients that connected after a change.
const TABLE_PERIOD: Duration = Duration::from_secs(1);
/// How often the server's time follows the clock. Time goes on the SDK's control queue, which
/// disconnects a client once full: at every tick (100 Hz) a client busy with large images
/// filled it in seconds.
const TIME_PERIOD: Duration = Duration::from_millis(250);
/// Messages queued per client (the SDK's default is 1024): past it the oldest data are
/// dropped, so a slow client costs at most this many camera frames of memory, and control
/// messages (time, 4 a second) have half a minute before the client is disconnected.
const CLIENT_BACKLOG: usize = 128;

/// Where the live view listens and what it is called on DDS (`bridge/<name>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewSettings {
    pub name: String,
    pub host: String,
    pub port: u16,
}

impl Default for ViewSettings {
    fn default() -> Self {
        ViewSettings {
            name: "view".into(),
            host: "127.0.0.1".into(),
            port: 8765,
        }
    }
}

/// Why the live view could not start.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("cannot serve the live view on {host}:{port}: {reason}")]
    Serve {
        host: String,
        port: u16,
        reason: String,
    },
}

/// Serves the live view of the run on `args`' domain until `stop` is set.
pub fn run(args: &NodeArgs, settings: &ViewSettings, stop: Arc<AtomicBool>) -> Result<()> {
    let NodeContext {
        scenario,
        node,
        mut beacon,
    } = NodeContext::start(args, NodeId::bridge(&settings.name))?;
    let world = World::for_scenario(&scenario).with_context(|| {
        format!(
            "the live view cannot load the world of {}",
            scenario.file.display()
        )
    })?;
    // The view draws this world: the coordinator checks it is the run's.
    convoy_core::status::announce_world_digests(&mut beacon, &world.digests());
    let context = Context::new();
    let map = MapOut::new(&context, &world)?.map(Arc::new);
    let server = serve(&context, settings, map.clone())?;
    let mut view = LiveView::new(&node, &context, &scenario, world.ground_z, map)?;
    println!("live view: ws://{}:{}", settings.host, server.port());
    println!(
        "  open it in Foxglove (Open connection, Foxglove WebSocket) with docs/foxglove_layout.json, \
         or examples/live_view.html?ws=ws://{}:{}",
        settings.host,
        server.port()
    );
    if let Some(map) = &view.map_out {
        println!(
            "  /map: {} triangles in {} entities, {} kB, sent as a client subscribes and every {} s",
            map.triangles,
            map.entities,
            map.bytes.len() / 1000,
            MAP_PERIOD.as_secs()
        );
    }
    while !stop.load(Ordering::Relaxed) {
        view.waitset.wait(HOUSEKEEPING);
        view.pass(&server);
        if beacon.due() {
            beacon.set_counter("clients", server.client_count() as u64);
            view.counters.report(&mut beacon);
            beacon.beat()?;
        }
    }
    view.counters.report(&mut beacon);
    beacon.final_beat(Duration::from_millis(300));
    // Clients are dropped with the process; nothing is owed to them.
    server.stop().detach_all();
    Ok(())
}

/// Starts the WebSocket server (which sends `map` to each client that subscribes to it); an
/// address in use or not ours is an error naming it.
fn serve(
    context: &Arc<Context>,
    settings: &ViewSettings,
    map: Option<Arc<MapOut>>,
) -> Result<WebSocketServerHandle> {
    let mut server = context
        .websocket_server()
        .name("convoy")
        .bind(settings.host.clone(), settings.port)
        .capabilities([Capability::Time])
        .message_backlog_size(CLIENT_BACKLOG);
    if let Some(map) = map {
        server = server.listener(Arc::new(MapOnSubscribe(map)));
    }
    server.start_blocking().map_err(|e| {
        let reason = match e {
            foxglove::FoxgloveError::Bind(io) => io.to_string(),
            other => other.to_string(),
        };
        ViewError::Serve {
            host: settings.host.clone(),
            port: settings.port,
            reason,
        }
        .into()
    })
}

/// The map's `/map` channel and its SceneUpdate, encoded once.
struct MapOut {
    channel: Arc<RawChannel>,
    bytes: Vec<u8>,
    entities: usize,
    triangles: usize,
}

impl MapOut {
    /// `/map` with `world`'s surfaces; None (no channel) for a world without any.
    fn new(context: &Arc<Context>, world: &World) -> Result<Option<MapOut>> {
        let update = scene::road_network(&world.surfaces);
        if update.entities.is_empty() {
            return Ok(None);
        }
        let mut bytes = Vec::with_capacity(update.encoded_len().unwrap_or(0));
        update
            .encode(&mut bytes)
            .context("cannot encode the live view's /map")?;
        let channel = context
            .channel_builder("/map")
            .build::<SceneUpdate>()
            .into_inner();
        Ok(Some(MapOut {
            channel,
            bytes,
            entities: update.entities.len(),
            triangles: world.triangle_count(),
        }))
    }
}

/// Sends the map to a client as it subscribes to `/map`, so nobody waits for the next resend.
struct MapOnSubscribe(Arc<MapOut>);

impl ServerListener for MapOnSubscribe {
    fn on_subscribe(&self, client: Client, channel: ChannelView) {
        let map = &self.0;
        if channel.id() == map.channel.id() {
            map.channel.log_to_sink(&map.bytes, client.sink_id());
        }
    }
}

/// What the view has sent, for NodeStatus.
#[derive(Debug, Default)]
struct Counters {
    scenes: u64,
    images: u64,
    clouds: u64,
    /// Periodic sends of `/map` to every subscriber (not the ones on subscribing).
    maps: u64,
}

impl Counters {
    fn report(&self, beacon: &mut convoy_core::status::StatusBeacon) {
        beacon.set_counter("scenes", self.scenes);
        beacon.set_counter("maps", self.maps);
        beacon.set_counter("images", self.images);
        beacon.set_counter("clouds", self.clouds);
    }
}

/// One convoy sensor topic shown on one Foxglove channel.
trait Route {
    /// Takes what arrived and logs it; how many were sent.
    fn forward(&mut self) -> u64;
    fn kind(&self) -> SensorKind;
}

struct SensorRoute<I: Message, O: Encode> {
    kind: SensorKind,
    sub: Subscriber<I>,
    out: Channel<O>,
    convert: fn(I) -> O,
}

/// A camera's colour image: raw, and its JPEG twin for clients that subscribe to that.
struct CameraRoute {
    sub: Subscriber<Image>,
    raw: Channel<RawImage>,
    jpeg: JpegTwin,
}

impl Route for CameraRoute {
    fn forward(&mut self) -> u64 {
        let mut sent = 0;
        for sample in self.sub.take(TAKE) {
            self.jpeg.offer(&sample.value);
            self.raw.log(&sensors::raw_image(sample.value));
            sent += 1;
        }
        sent
    }

    fn kind(&self) -> SensorKind {
        SensorKind::Camera
    }
}

impl<I: Message, O: Encode> Route for SensorRoute<I, O> {
    fn forward(&mut self) -> u64 {
        let mut sent = 0;
        for sample in self.sub.take(TAKE) {
            self.out.log(&(self.convert)(sample.value));
            sent += 1;
        }
        sent
    }

    fn kind(&self) -> SensorKind {
        self.kind
    }
}

struct LiveView {
    waitset: WaitSet,
    clock: Subscriber<Tick>,
    states: Vec<Subscriber<AgentState>>,
    assignments: Subscriber<SensorAssignment>,
    routes: Vec<Box<dyn Route>>,
    /// The newest state of each agent, in the scenario's order (its index picks the colour).
    latest: Vec<Option<AgentState>>,
    /// Every sensor's newest assignment.
    book: BTreeMap<(String, String), SensorAssignment>,
    /// The ground and the scenario's boxes, sent with every scene.
    map: Vec<SceneEntity>,
    /// The road network and meshes on `/map`, and when it was last sent to every subscriber.
    map_out: Option<Arc<MapOut>>,
    map_sent: Instant,
    scene: Channel<SceneUpdate>,
    tf: Channel<FrameTransforms>,
    clock_out: Arc<RawChannel>,
    assignments_out: Arc<RawChannel>,
    /// The frame of the last scene sent, and when.
    shown_frame: Option<u64>,
    scene_sent: Instant,
    /// When the assignment table was last sent (a client that connects later gets it too).
    table_sent: Instant,
    /// When the server's time was last set.
    time_sent: Instant,
    counters: Counters,
}

/// A JSON channel, with a JSON schema naming its fields (Foxglove's Raw Messages panel).
fn json_channel(
    context: &Arc<Context>,
    topic: &str,
    schema: &'static str,
) -> Result<Arc<RawChannel>> {
    context
        .channel_builder(topic)
        .message_encoding("json")
        .schema(Schema::new(
            format!("convoy{}", topic.replace('/', ".")),
            "jsonschema",
            schema.as_bytes(),
        ))
        .build_raw()
        .with_context(|| format!("cannot open the live view's {topic} channel"))
}

const CLOCK_SCHEMA: &str = r#"{"type":"object","properties":{"frame":{"type":"integer"},"sim_time_ns":{"type":"integer"},"paused":{"type":"boolean"}}}"#;
const ASSIGNMENTS_SCHEMA: &str = r#"{"type":"object","properties":{"rows":{"type":"array","items":{"type":"object","properties":{"agent":{"type":"string"},"sensor":{"type":"string"},"node":{"type":"string"},"epoch":{"type":"integer"},"load":{"type":"number"}}}}}}"#;

impl LiveView {
    fn new(
        node: &Node,
        context: &Arc<Context>,
        scenario: &Scenario,
        ground_z: f64,
        map_out: Option<Arc<MapOut>>,
    ) -> Result<LiveView> {
        let mut waitset = WaitSet::new().context("cannot create a wait set")?;
        let mut clock = node.subscriber(&topics::clock())?;
        // A viewer follows the newest tick: the frames do not wait for it, so it may skip one.
        clock.latest_only();
        clock.attach(&mut waitset)?;
        let mut assignments = node.subscriber(&topics::assignments())?;
        assignments.attach(&mut waitset)?;
        let mut states = Vec::new();
        for agent in scenario.agent_ids() {
            let mut sub = node.subscriber(&topics::agent_state(&agent))?;
            sub.attach(&mut waitset)?;
            states.push(sub);
        }
        let mut routes: Vec<Box<dyn Route>> = Vec::new();
        for agent in &scenario.agents {
            for spec in &agent.sensors {
                for topic in sensor_topics(&agent.id, spec) {
                    // Images and clouds are drawn, under the names the catalogue gives them
                    // on ROS 2 (`/<a>/<s>/image`, `.../depth`, `.../points`); the rest is not.
                    let Some(out_topic) = topic.ros_name else {
                        continue;
                    };
                    let (w, name) = (&mut waitset, topic.name);
                    if topic.message == Image::TYPE_NAME && topic.suffix.is_empty() {
                        let sub = attached::<Image>(node, w, name)?;
                        let jpeg_topic = format!("{out_topic}/compressed");
                        let jpeg = JpegTwin::start(context.channel_builder(&jpeg_topic).build())
                            .context("cannot start a JPEG encoding thread")?;
                        let raw = context.channel_builder(&out_topic).build();
                        routes.push(Box::new(CameraRoute { sub, raw, jpeg }));
                    } else if topic.message == Image::TYPE_NAME {
                        let sub = attached(node, w, name)?;
                        let out = context.channel_builder(&out_topic).build();
                        let convert = sensors::raw_image;
                        routes.push(Box::new(SensorRoute {
                            kind: spec.kind,
                            sub,
                            out,
                            convert,
                        }));
                    } else if topic.message == PointCloud::TYPE_NAME {
                        let sub = attached(node, w, name)?;
                        let out = context.channel_builder(&out_topic).build();
                        let convert = sensors::point_cloud;
                        routes.push(Box::new(SensorRoute {
                            kind: spec.kind,
                            sub,
                            out,
                            convert,
                        }));
                    }
                }
            }
        }
        Ok(LiveView {
            waitset,
            clock,
            latest: vec![None; states.len()],
            states,
            assignments,
            routes,
            book: BTreeMap::new(),
            map: scene::map_entities(&scenario.map, ground_z),
            map_out,
            map_sent: Instant::now(),
            scene: context.channel_builder("/scene").build(),
            tf: context.channel_builder("/tf").build(),
            clock_out: json_channel(context, "/clock", CLOCK_SCHEMA)?,
            assignments_out: json_channel(context, "/assignments", ASSIGNMENTS_SCHEMA)?,
            shown_frame: None,
            scene_sent: Instant::now(),
            table_sent: Instant::now(),
            time_sent: Instant::now(),
            counters: Counters::default(),
        })
    }

    /// Takes everything that arrived and sends what changed.
    fn pass(&mut self, server: &WebSocketServerHandle) {
        for tick in self.clock.take(TAKE) {
            let tick = tick.value;
            let clock = serde_json::json!({
                "frame": tick.frame,
                "sim_time_ns": tick.sim_time_ns,
                "paused": tick.paused,
            });
            self.clock_out.log(clock.to_string().as_bytes());
            if self.time_sent.elapsed() >= TIME_PERIOD {
                server.broadcast_time(u64::try_from(tick.sim_time_ns).unwrap_or(0));
                self.time_sent = Instant::now();
            }
        }
        for (latest, sub) in self.latest.iter_mut().zip(&mut self.states) {
            let newest = sub
                .take(TAKE)
                .into_iter()
                .map(|s| s.value)
                .max_by_key(|s| s.frame);
            if let Some(newest) = newest {
                *latest = Some(newest);
            }
        }
        self.send_scene();
        if let Some(map) = &self.map_out {
            if self.map_sent.elapsed() >= MAP_PERIOD {
                if map.channel.has_sinks() {
                    map.channel.log(&map.bytes);
                    self.counters.maps += 1;
                }
                self.map_sent = Instant::now();
            }
        }
        let changed = self.assignments.take(1024);
        if !changed.is_empty() || self.table_sent.elapsed() >= TABLE_PERIOD {
            for a in changed {
                let a = a.value;
                self.book
                    .insert((a.agent_id.clone(), a.sensor_id.clone()), a);
            }
            self.assignments_out
                .log(self.assignment_table().to_string().as_bytes());
            self.table_sent = Instant::now();
        }
        for route in &mut self.routes {
            let sent = route.forward();
            match route.kind() {
                SensorKind::Camera => self.counters.images += sent,
                _ => self.counters.clouds += sent,
            }
        }
    }

    /// Sends the scene once every agent's state of a newer frame is here (one update per
    /// frame, not one per agent), or, when some agent stopped sending (it left the run), once
    /// per SCENE_PERIOD with what is here.
    fn send_scene(&mut self) {
        let frames = self.latest.iter().map(|s| s.as_ref().map(|s| s.frame));
        let complete = frames
            .clone()
            .collect::<Option<Vec<u64>>>()
            .and_then(|f| f.into_iter().min());
        let newest = frames.flatten().max();
        let Some(newest) = newest else {
            return; // no state yet
        };
        let frame_done = complete.is_some_and(|f| self.shown_frame.is_none_or(|s| f > s));
        let stale =
            newest > self.shown_frame.unwrap_or(0) && self.scene_sent.elapsed() >= SCENE_PERIOD;
        if !(frame_done || stale) {
            return;
        }
        let agents: Vec<(usize, &AgentState)> = self
            .latest
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, s.as_ref()?)))
            .collect();
        self.scene.log(&scene::scene_update(&self.map, &agents));
        self.tf.log(&scene::transforms(&agents));
        self.counters.scenes += 1;
        self.shown_frame = Some(complete.unwrap_or(newest));
        self.scene_sent = Instant::now();
    }

    /// The sensor assignments as rows: which node runs each sensor.
    fn assignment_table(&self) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = self
            .book
            .values()
            .map(|a| {
                serde_json::json!({
                    "agent": a.agent_id,
                    "sensor": a.sensor_id,
                    "node": a.node_id,
                    "epoch": a.epoch,
                    "load": a.load,
                })
            })
            .collect();
        serde_json::json!({ "rows": rows })
    }
}

/// A subscriber of sensor topic `topic`, attached to `waitset`.
fn attached<M: Message>(
    node: &Node,
    waitset: &mut WaitSet,
    topic: String,
) -> Result<Subscriber<M>> {
    let mut sub = node.subscriber(&Topic::<M>::new(topic, TopicClass::Sensor))?;
    sub.attach(waitset)?;
    Ok(sub)
}
