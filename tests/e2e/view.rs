//! `convoy view`, the live view: a Foxglove WebSocket server next to a real run, read by clients
//! that share no code with it. A Python client (the `websockets` and `protobuf` packages,
//! message classes built from the advertised FileDescriptorSets) decodes the scene, a camera
//! image and a lidar cloud; Chromium, driven by Playwright, shows examples/live_view.html with
//! the scene's agents and the camera's image and writes a screenshot; on CARLA's Town01 both
//! get the road network (`/map`, triangles) and the page draws it under the cars; a client that
//! offers only the protocol's older name (`foxglove.websocket.v1`) is served as well; and a port
//! already taken is an error naming the address.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use convoy_core::scenario::Scenario;
use convoy_tests::files::{fresh_dir, town_without_sensors, write_file};
use convoy_tests::{
    convoy_on, convoy_run, domain, profile_dir, repo_root, ros_python, run_fails, run_with_timeout,
    take_turn, wait_for_line, watchdog, ChildGuard,
};
use convoy_world::World;

/// Two cars on a straight road, ego 20 m behind car_2, a box beside the road. Ego carries a
/// 160x120 camera and an 8 x 256 roof lidar, both at 10 Hz.
const SCENARIO: &str = r#"
[scenario]
name = "view"
seed = 7
dt = 0.05
mode = "sync"
step = "fixed"

[map]
ground_half_extents = [150.0, 50.0]
boxes = [
    { center = [40.0, 8.0, 1.5], half_extents = [3.0, 3.0, 1.5] },
]

[[agents]]
id = "ego"
start = { x = 0.0, y = 0.0 }
controller = { kind = "waypoints", speed = 2.0, path = [[0.0, 0.0], [140.0, 0.0]] }

[[agents.sensors]]
id = "front"
kind = "camera"
rate = 10.0
width = 160
height = 120
fov = 90.0

[[agents.sensors]]
id = "roof"
kind = "lidar"
rate = 10.0
channels = 8
columns = 256

[[agents]]
id = "car_2"
start = { x = 20.0, y = 0.0 }
controller = { kind = "waypoints", speed = 2.0, path = [[20.0, 0.0], [140.0, 0.0]] }
"#;

/// The browser the page test drives (Debian's `chromium`; scripts/setup.sh installs it).
const CHROMIUM: &str = "/usr/bin/chromium";

/// A fresh directory of the test's own with the scenario in it; the scenario's path.
fn scenario(name: &str) -> PathBuf {
    let dir = fresh_dir("test-view", name);
    write_file(&dir, "view.toml", SCENARIO)
}

/// launch/scenarios/town.toml (sixteen cars on CARLA's Town01, buildings beside road 8) without
/// its sensors and with its map paths made absolute, in a fresh directory of the test's own;
/// its path and its agents' ids.
fn town_scenario(name: &str) -> (PathBuf, Vec<String>) {
    let path = town_without_sensors(&fresh_dir("test-view", name));
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let ids = scenario.agents.iter().map(|a| a.id.clone()).collect();
    (path, ids)
}

/// A TCP port on 127.0.0.1 that nothing listens on (just now).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

/// `convoy view SCENARIO --bind ADDR` on domain `d`.
fn view_command(d: u32, scenario: &Path, bind: &str) -> Command {
    let mut cmd = convoy_on(d);
    cmd.arg("view").arg(scenario).args(["--bind", bind]);
    cmd
}

/// Starts the live view on `127.0.0.1:port` and waits for its `live view: ws://...` line;
/// returns it running, its stdout (kept open: the view writes there), and its address.
fn start_view(d: u32, scenario: &Path, port: u16) -> (ChildGuard, Receiver<String>, String) {
    let bind = format!("127.0.0.1:{port}");
    let (view, lines) =
        ChildGuard::spawn_with_stdout("convoy view", &mut view_command(d, scenario, &bind));
    let line = wait_for_line(&lines, Duration::from_secs(60), "live view line", |l| {
        l.starts_with("live view: ws://")
    });
    let url = line["live view: ".len()..].trim().to_string();
    assert_eq!(url, format!("ws://{bind}"), "{line}");
    (view, lines, url)
}

/// `convoy run` of the scenario, paced on the wall clock (async) for up to 600 s of simulated
/// time: the test stops it when done.
fn start_run(d: u32, scenario: &Path) -> (ChildGuard, Receiver<String>) {
    let mut cmd = convoy_run(d, scenario);
    cmd.args(["--mode", "async", "--duration", "600"]);
    ChildGuard::spawn_with_stdout("convoy run", &mut cmd)
}

/// Runs one of tests/interop's Python programs with the venv's Python, within `limit`; fails the
/// test unless it exits 0; returns the JSON it printed last.
fn python_json(script: &str, args: &[&str], limit: Duration) -> serde_json::Value {
    let mut cmd = Command::new(ros_python());
    cmd.current_dir(repo_root()).arg(script).args(args);
    let (ok, out, err) = run_with_timeout(&mut cmd, limit);
    assert!(ok, "{script} {args:?} failed:\n{out}\n{err}");
    let last = out.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{script} printed no JSON ({e}):\n{out}"))
}

#[test]
fn a_python_client_decodes_the_scene_a_camera_image_and_a_lidar_cloud() {
    watchdog("view client", Duration::from_secs(300));
    let _turn = take_turn();
    let d = domain::VIEW_CLIENT;
    let scenario = scenario("client");
    let (_view, _view_lines, url) = start_view(d, &scenario, free_port());
    let (mut run, _run_lines) = start_run(d, &scenario);
    let summary = python_json(
        "tests/interop/view_client.py",
        &["--url", &url, "--agents", "ego,car_2", "--timeout", "90"],
        Duration::from_secs(150),
    );
    run.stop(Duration::from_secs(15));
    eprintln!("view_client.py: {summary}");

    assert_eq!(summary["ok"], true, "{summary:#}");
    let channels: Vec<&str> = summary["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    for topic in [
        "/scene",
        "/tf",
        "/clock",
        "/assignments",
        "/ego/front/image",
        "/ego/roof/points",
    ] {
        assert!(channels.contains(&topic), "no {topic} in {channels:?}");
    }
    let scene = &summary["scene"];
    assert_eq!(
        scene["agents"],
        serde_json::json!(["car_2", "ego"]),
        "{scene}"
    );
    assert_eq!(scene["ground"], true, "{scene}");
    assert_eq!(scene["ground_top"], 0.0, "{scene}");
    assert_eq!(scene["obstacles"], 1, "{scene}");
    // No map files, no road network.
    assert!(!channels.contains(&"/map"), "{channels:?}");
    let image = &summary["image"];
    assert_eq!(image["topic"], "/ego/front/image", "{image}");
    assert_eq!(image["width"], 160, "{image}");
    assert_eq!(image["height"], 120, "{image}");
    assert_eq!(image["bytes"], 160 * 120 * 3, "{image}");
    let points = &summary["points"];
    assert_eq!(points["topic"], "/ego/roof/points", "{points}");
    assert_eq!(points["frame_id"], "ego", "{points}");
    assert!(points["count"].as_u64().unwrap_or(0) > 0, "{points}");
    let tf = &summary["tf_children"];
    assert_eq!(tf, &serde_json::json!(["car_2", "ego"]), "{summary:#}");
    assert!(summary["clock"]["frame"].as_u64().is_some(), "{summary:#}");
}

/// Sends a WebSocket upgrade request to the view at `url` (ws://HOST:PORT) offering `protocols`
/// (no header when `None`), or `raw` bytes instead when given; returns the answer's status line
/// and its `Sec-WebSocket-Protocol` value, lowercased ("" when absent), or "closed" for a
/// connection closed with no answer.
fn handshake(url: &str, protocols: Option<&str>, raw: Option<&[u8]>) -> (String, String) {
    let addr = url.trim_start_matches("ws://");
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    let request = match raw {
        Some(raw) => raw.to_vec(),
        None => {
            let protocol = protocols
                .map(|p| format!("Sec-WebSocket-Protocol: {p}\r\n"))
                .unwrap_or_default();
            format!(
                "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
                 {protocol}\r\n"
            )
            .into_bytes()
        }
    };
    stream
        .write_all(&request)
        .expect("send the upgrade request");
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&answer).to_lowercase();
    let status = text.lines().next().unwrap_or("closed").trim().to_string();
    let protocol = text
        .lines()
        .find_map(|l| l.strip_prefix("sec-websocket-protocol:"))
        .unwrap_or_default()
        .trim()
        .to_string();
    (status, protocol)
}

#[test]
fn a_client_offering_only_the_older_protocol_name_gets_the_scene_an_image_and_a_cloud() {
    watchdog("view old protocol", Duration::from_secs(300));
    let _turn = take_turn();
    let d = domain::VIEW_OLD_PROTOCOL;
    let scenario = scenario("old_protocol");
    let (mut view, _view_lines, url) = start_view(d, &scenario, free_port());

    // The handshake: the older name alone is answered with it (a browser fails a connection
    // whose protocol it did not offer); offered with the current one, the current one wins;
    // neither or none at all is refused (400), a broken request is not upgraded, and the view
    // goes on.
    let old = "foxglove.websocket.v1";
    let both = [
        "foxglove.websocket.v1, foxglove.sdk.v1",
        "foxglove.sdk.v1,foxglove.websocket.v1",
    ];
    let broken: [&[u8]; 2] = [
        b"GET / HTTP/1.1\r\nSec-WebSocket-Protocol: foxglove.websocket.v1\r\n\r\n",
        b"\x16\x03\x01 not http at all\r\n\r\n",
    ];
    let answers = [
        (Some(old), None, Some("101"), old),
        (Some(both[0]), None, Some("101"), "foxglove.sdk.v1"),
        (Some(both[1]), None, Some("101"), "foxglove.sdk.v1"),
        (Some("foxglove.websocket.v2"), None, Some("400"), ""),
        (None, None, Some("400"), ""),
        (None, Some(broken[0]), None, ""),
        (None, Some(broken[1]), None, ""),
    ];
    for (protocols, raw, status, protocol) in answers {
        let (got_status, got_protocol) = handshake(&url, protocols, raw);
        let what = format!("{protocols:?} {:?}", raw.map(String::from_utf8_lossy));
        match status {
            Some(status) => assert!(
                got_status.starts_with(&format!("http/1.1 {status} "))
                    || got_status == format!("http/1.1 {status}"),
                "{what}: status {got_status}, not {status}"
            ),
            None => assert!(!got_status.contains(" 101"), "{what}: {got_status}"),
        }
        assert_eq!(got_protocol, protocol, "{what}: status {got_status}");
    }
    assert!(
        matches!(view.child.try_wait(), Ok(None)),
        "the view exited after the handshakes"
    );

    let (mut run, _run_lines) = start_run(d, &scenario);
    let summary = python_json(
        "tests/interop/view_client.py",
        &[
            "--url",
            &url,
            "--agents",
            "ego,car_2",
            "--subprotocols",
            old,
            "--timeout",
            "90",
        ],
        Duration::from_secs(150),
    );
    run.stop(Duration::from_secs(15));
    eprintln!("view_client.py: {summary}");

    assert_eq!(summary["ok"], true, "{summary:#}");
    assert_eq!(summary["subprotocol"], old, "{summary:#}");
    assert!(
        summary["server_info"]["name"].as_str().is_some(),
        "{summary:#}"
    );
    let channels: Vec<&str> = summary["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    for topic in ["/scene", "/ego/front/image", "/ego/roof/points"] {
        assert!(channels.contains(&topic), "no {topic} in {channels:?}");
        assert!(
            summary["messages"][topic].as_u64().unwrap_or(0) >= 1,
            "no message on {topic}: {summary:#}"
        );
    }
    assert_eq!(
        summary["scene"]["agents"],
        serde_json::json!(["car_2", "ego"]),
        "{summary:#}"
    );
    assert_eq!(summary["image"]["topic"], "/ego/front/image", "{summary:#}");
    assert_eq!(summary["image"]["bytes"], 160 * 120 * 3, "{summary:#}");
    assert_eq!(
        summary["points"]["topic"], "/ego/roof/points",
        "{summary:#}"
    );
    assert!(
        summary["points"]["count"].as_u64().unwrap_or(0) > 0,
        "{summary:#}"
    );
}

#[test]
fn the_browser_page_draws_the_agents_and_the_camera_image() {
    watchdog("view browser", Duration::from_secs(300));
    let _turn = take_turn();
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: the live view's page test needs Debian's chromium \
         (apt-get install chromium; scripts/setup.sh installs it)"
    );
    let d = domain::VIEW_BROWSER;
    let scenario = scenario("browser");
    let (_view, _view_lines, url) = start_view(d, &scenario, free_port());
    let (mut run, _run_lines) = start_run(d, &scenario);
    // target/view-screenshot.png, next to the profile directories.
    let target = profile_dir()
        .parent()
        .map(PathBuf::from)
        .expect("target dir");
    let shot = target.join("view-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let shot_arg = shot.to_string_lossy().to_string();
    let summary = python_json(
        "tests/interop/view_browser.py",
        &["--ws", &url, "--screenshot", &shot_arg, "--timeout", "90"],
        Duration::from_secs(150),
    );
    run.stop(Duration::from_secs(15));
    eprintln!("view_browser.py: {summary}");

    assert_eq!(summary["ok"], true, "{summary:#}");
    let page = &summary["view"];
    assert!(page["scenes"].as_u64().unwrap_or(0) >= 1, "{page}");
    assert!(page["images"].as_u64().unwrap_or(0) >= 1, "{page}");
    assert_eq!(
        page["agents"],
        serde_json::json!(["car_2", "ego"]),
        "{page}"
    );
    assert_eq!(page["lastImage"]["width"], 160, "{page}");
    assert_eq!(page["lastImage"]["height"], 120, "{page}");

    // The screenshot shows what the page drew: the map canvas has the ground, the box and the
    // agents (and their labels) on its background, the camera canvas a rendered picture.
    let shot_png = Screenshot::read(&shot);
    assert!(
        shot_png.width >= 800 && shot_png.height >= 600,
        "screenshot {}x{}",
        shot_png.width,
        shot_png.height
    );
    let map = shot_png.colours_in(&summary["canvases"]["map"]);
    assert!(map >= 4, "the map canvas has {map} colours: not drawn");
    let camera = shot_png.colours_in(&summary["canvases"]["image"]);
    assert!(
        camera >= 3,
        "the camera canvas has {camera} colours: not drawn"
    );
}

#[test]
fn a_client_and_the_page_get_the_town_s_road_network_on_map() {
    watchdog("view town", Duration::from_secs(400));
    let _turn = take_turn();
    assert!(Path::new(CHROMIUM).exists(), "{CHROMIUM} is missing");
    let d = domain::VIEW_TOWN;
    let (scenario, agents) = town_scenario("town");
    assert_eq!(agents.len(), 16, "{agents:?}");
    // What the view should send: the same world, loaded here.
    let world = World::for_scenario(&Scenario::load(&scenario).expect("town.toml"))
        .expect("the town's world");
    let triangles = world.triangle_count();
    assert!(triangles > 10_000, "Town01 has {triangles} triangles");

    let (_view, view_lines, url) = start_view(d, &scenario, free_port());
    let line = wait_for_line(&view_lines, Duration::from_secs(10), "/map line", |l| {
        l.trim_start().starts_with("/map: ")
    });
    assert!(
        line.contains(&format!("{triangles} triangles")),
        "the view's /map is not the world's {triangles} triangles: {line}"
    );
    let (mut run, _run_lines) = start_run(d, &scenario);
    let client = python_json(
        "tests/interop/view_client.py",
        &[
            "--url",
            &url,
            "--agents",
            &agents.join(","),
            "--expect",
            "scene,map",
            "--timeout",
            "90",
        ],
        Duration::from_secs(150),
    );
    eprintln!("view_client.py: {client}");
    let target = profile_dir()
        .parent()
        .map(PathBuf::from)
        .expect("target dir");
    let shot = target.join("view-town-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let page = python_json(
        "tests/interop/view_browser.py",
        &[
            "--ws",
            &url,
            "--screenshot",
            &shot.to_string_lossy(),
            "--expect",
            "scene,map",
            "--settle",
            "2",
            "--timeout",
            "90",
        ],
        Duration::from_secs(150),
    );
    run.stop(Duration::from_secs(15));
    eprintln!("view_browser.py: {page}");

    // The client: /map with the road surfaces, the marks and the buildings, every triangle of
    // the world; /scene with the sixteen cars on a ground just under the roads.
    assert_eq!(client["ok"], true, "{client:#}");
    let map = &client["map"];
    for id in [
        "map/asphalt",
        "map/lane_marking",
        "map/sidewalk",
        "map/building",
    ] {
        assert!(
            map["entities"][id].as_u64().unwrap_or(0) > 0,
            "no {id}: {map}"
        );
    }
    assert_eq!(map["triangles"], triangles, "{map}");
    // Town01 is 407 x 341 m between x -6 and 401, y -335 and 6.
    let bounds: Vec<f64> = serde_json::from_value(map["bounds"].clone()).expect("bounds");
    assert!(
        bounds[0] < 0.0 && bounds[1] < -330.0 && bounds[2] > 400.0 && bounds[3] > 0.0,
        "{map}"
    );
    let scene = &client["scene"];
    let mut sorted = agents.clone();
    sorted.sort();
    assert_eq!(scene["agents"], serde_json::json!(sorted), "{scene}");
    let ground_top = scene["ground_top"].as_f64().expect("ground_top");
    assert!(
        (ground_top - world.ground_z).abs() < 1e-9 && world.ground_z < 0.0,
        "ground top {ground_top}, world ground {}",
        world.ground_z
    );

    // The page: the same map decoded and drawn once into its layer (not at every scene), the
    // cars over it, and a canvas of many colours (ground, roads, paint, buildings, cars).
    assert_eq!(page["ok"], true, "{page:#}");
    let view = &page["view"];
    assert_eq!(view["mapTriangles"], triangles, "{view}");
    let ids = view["mapEntities"].as_array().expect("mapEntities");
    assert!(ids.contains(&serde_json::json!("map/asphalt")), "{view}");
    assert!(
        ids.contains(&serde_json::json!("map/lane_marking")),
        "{view}"
    );
    assert_eq!(view["agents"], serde_json::json!(sorted), "{view}");
    let (draws, scenes) = (view["mapDraws"].as_u64(), view["scenes"].as_u64());
    assert!(
        draws.unwrap_or(0) >= 1 && draws.unwrap_or(0) * 4 <= scenes.unwrap_or(0).max(4),
        "the map was drawn {draws:?} times for {scenes:?} scenes: {view}"
    );
    let shot_png = Screenshot::read(&shot);
    let colours = shot_png.colours_in(&page["canvases"]["map"]);
    assert!(
        colours >= 8,
        "the map canvas has {colours} colours: {page:#}"
    );
}

/// A screenshot decoded to 8-bit pixels.
struct Screenshot {
    width: usize,
    height: usize,
    channels: usize,
    pixels: Vec<u8>,
}

impl Screenshot {
    fn read(path: &Path) -> Screenshot {
        let file = std::fs::File::open(path)
            .unwrap_or_else(|e| panic!("no screenshot {}: {e}", path.display()));
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().expect("a PNG");
        let mut pixels = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut pixels).expect("the PNG's image");
        Screenshot {
            width: info.width as usize,
            height: info.height as usize,
            channels: info.color_type.samples(),
            pixels,
        }
    }

    /// How many distinct colours the rectangle {x, y, width, height} (page pixels) holds.
    fn colours_in(&self, rect: &serde_json::Value) -> usize {
        let at = |key: &str| {
            rect[key]
                .as_u64()
                .unwrap_or_else(|| panic!("{key} in {rect}")) as usize
        };
        let (x0, y0) = (at("x"), at("y"));
        let (x1, y1) = (
            (x0 + at("width")).min(self.width),
            (y0 + at("height")).min(self.height),
        );
        let mut colours = std::collections::HashSet::new();
        for y in y0..y1 {
            for x in x0..x1 {
                let i = (y * self.width + x) * self.channels;
                colours.insert(self.pixels[i..i + self.channels.min(3)].to_vec());
            }
        }
        colours.len()
    }
}

#[test]
fn a_port_already_in_use_is_an_error_naming_the_address() {
    watchdog("view port in use", Duration::from_secs(120));
    let _turn = take_turn();
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = taken.local_addr().expect("local address").to_string();
    let scenario = scenario("port_in_use");
    let mut cmd = view_command(domain::VIEW_BROWSER, &scenario, &addr);
    let err = run_fails(&mut cmd, Duration::from_secs(60));
    assert!(
        err.contains(&addr),
        "the error does not name {addr}:\n{err}"
    );
}

#[test]
fn a_map_file_that_cannot_be_read_is_an_error_naming_it() {
    watchdog("view missing map", Duration::from_secs(120));
    let _turn = take_turn();
    let (town, _) = town_scenario("missing_map");
    let text = std::fs::read_to_string(&town).expect("town.toml");
    let missing = town.with_file_name("missing.xodr");
    let xodr = repo_root().join("launch/maps/town01/Town01.xodr");
    let text = text.replace(&xodr.display().to_string(), &missing.display().to_string());
    let scenario = write_file(town.parent().expect("dir"), "missing_map.toml", &text);
    let mut cmd = view_command(domain::VIEW_TOWN, &scenario, "127.0.0.1:0");
    let err = run_fails(&mut cmd, Duration::from_secs(60));
    assert!(
        err.contains(&missing.display().to_string()) && !err.contains("panicked"),
        "the error does not name {}:\n{err}",
        missing.display()
    );
}
