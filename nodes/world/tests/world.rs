//! convoy-world on real files: the hill test map (grade, bank, two lane sections, marks), the
//! shipped Town01, and the errors bad files give.

use std::path::{Path, PathBuf};

use convoy_core::scenario::{Scenario, StartPose};
use convoy_world::{Material, RoadMap, World, WorldError};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn town01() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../launch/maps/town01/Town01.xodr")
}

/// A fresh directory for one test's files, removed when the test ends.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("convoy-world-{name}-"))
        .tempdir()
        .expect("scratch dir")
}

/// A scenario in `dir` with `map` as its [map] lines and one agent starting at `start`.
fn scenario_in(dir: &Path, map: &str, start: &str) -> Scenario {
    let text = format!(
        "[scenario]\nname = \"t\"\ndt = 0.05\n\n[map]\n{map}\n\n[[agents]]\nid = \"car\"\n\
         start = {start}\ncontroller = {{ kind = \"external\" }}\n"
    );
    let path = dir.join("scenario.toml");
    std::fs::write(&path, text).expect("write scenario");
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_hill_has_its_grade_bank_lane_sections_and_marks() {
    let map = RoadMap::load(&fixture("hill.xodr")).expect("hill.xodr");
    let summary = map.summary();
    assert_eq!(summary.roads, 1);
    // Two driving lanes and two sidewalks, in each of two lane sections.
    assert_eq!(summary.lanes_by_type.get("driving"), Some(&4));
    assert_eq!(summary.lanes_by_type.get("sidewalk"), Some(&4));
    assert!(
        (summary.bounds.1[2] - 10.0).abs() < 0.3,
        "{:?}",
        summary.bounds
    );

    // Lane -1 runs along +x, climbing 5% between s = 50 and 250.
    let low = map.lane_start("1", -1, 100.0).expect("start at s 100");
    let high = map.lane_start("1", -1, 200.0).expect("start at s 200");
    let rise = high.pose.position[2] - low.pose.position[2];
    assert!((rise - 5.0).abs() < 0.05, "rise over 100 m: {rise}");
    assert!(
        low.pose.yaw.abs() < 1e-3,
        "lane -1 heads +x: {}",
        low.pose.yaw
    );
    assert!((low.pose.position[1] + 1.75).abs() < 0.01, "{:?}", low.pose);
    // The second lane section is wider: its lane centre is further out.
    assert!(
        (high.pose.position[1] + 1.875).abs() < 0.01,
        "{:?}",
        high.pose
    );
    // Lane 1 runs the other way.
    let back = map.lane_start("1", 1, 100.0).expect("lane 1");
    assert!((back.pose.yaw.abs() - std::f64::consts::PI).abs() < 1e-3);

    let surfaces = map.surfaces();
    let kinds: Vec<Material> = surfaces.iter().map(|s| s.material).collect();
    assert!(kinds.contains(&Material::Asphalt), "{kinds:?}");
    assert!(kinds.contains(&Material::Sidewalk), "{kinds:?}");
    assert!(kinds.contains(&Material::LaneMarking), "{kinds:?}");
    // Marks lie on the road, a little above it.
    let marks = surfaces
        .iter()
        .find(|s| s.material == Material::LaneMarking)
        .expect("marks");
    let (lo, hi) = marks.mesh.bounds().expect("mark bounds");
    assert!(lo[2] > -0.01 && hi[2] < 10.5, "{lo:?} {hi:?}");
}

#[test]
fn lanes_follow_each_other_through_sections_and_town01_junctions() {
    let map = RoadMap::load(&fixture("hill.xodr")).expect("hill.xodr");
    let first = map.lane_start("1", -1, 10.0).expect("start").at.lane;
    let next = map.next_lanes(first);
    assert_eq!(
        next.len(),
        1,
        "one lane follows lane -1 of the first section"
    );
    assert_eq!(map.od_lane(next[0]), Some(("1", -1)));

    let town = RoadMap::load(&town01()).expect("Town01");
    let summary = town.summary();
    assert_eq!(summary.roads, 98);
    assert_eq!(summary.junctions, 12);
    // Every driving lane outside a junction leads somewhere: Town01 has no dead ends.
    let dead_ends: Vec<_> = town
        .driving_lane_centres()
        .iter()
        .filter(|c| {
            let start = town.lane_start(&c.road, c.lane, 0.5);
            start.is_ok_and(|s| town.next_lanes(s.at.lane).is_empty())
        })
        .map(|c| (c.road.clone(), c.lane))
        .collect();
    assert!(dead_ends.is_empty(), "dead ends: {dead_ends:?}");
    assert_eq!(town.junction_zones().len(), 12);
}

#[test]
fn a_world_loads_roads_and_meshes_and_digests_its_files() {
    let scratch = scratch("digest");
    let dir = scratch.path();
    std::fs::copy(fixture("hill.xodr"), dir.join("hill.xodr")).expect("copy");
    let scenario = scenario_in(
        dir,
        "opendrive = \"hill.xodr\"",
        "{ road = \"1\", lane = -1, s = 100.0 }",
    );
    let world = World::load(&scenario).expect("world");
    assert_eq!(world.files.len(), 1);
    let place = world
        .start_of(&scenario.agents[0].start)
        .expect("lane start");
    assert!((place.z - 2.75).abs() < 0.05, "start height {}", place.z);
    assert!(world.ground_z < 0.0);
    let before = world.digests();
    // A different copy of the map has a different digest.
    let text = std::fs::read_to_string(dir.join("hill.xodr")).expect("read");
    std::fs::write(
        dir.join("hill.xodr"),
        text.replace("a=\"3.5\"", "a=\"3.6\""),
    )
    .expect("write");
    let after = World::load(&scenario).expect("world").digests();
    assert_eq!(before[0].0, "hill.xodr");
    assert_ne!(before[0].1, after[0].1);
}

#[test]
fn bad_maps_and_starts_fail_naming_the_file_and_line() {
    let scratch = scratch("bad");
    let dir = scratch.path();
    // A truncated file: XML error with its line.
    let text = std::fs::read_to_string(fixture("hill.xodr")).expect("read");
    std::fs::write(dir.join("cut.xodr"), &text[..text.len() / 2]).expect("write");
    let err = RoadMap::load(&dir.join("cut.xodr")).expect_err("truncated map loaded");
    let msg = err.to_string();
    assert!(msg.contains("cut.xodr") && msg.contains("XML"), "{msg}");

    // Not OpenDRIVE at all.
    std::fs::write(dir.join("empty.xodr"), "<OpenDRIVE></OpenDRIVE>").expect("write");
    let msg = RoadMap::load(&dir.join("empty.xodr"))
        .expect_err("empty map loaded")
        .to_string();
    assert!(msg.contains("empty.xodr"), "{msg}");

    // A missing file.
    let msg = RoadMap::load(&dir.join("nope.xodr"))
        .expect_err("missing map")
        .to_string();
    assert!(
        msg.contains("nope.xodr") && msg.contains("cannot read"),
        "{msg}"
    );

    // A start on a road or lane that does not exist names the scenario line.
    std::fs::copy(fixture("hill.xodr"), dir.join("hill.xodr")).expect("copy");
    for (start, wants) in [
        ("{ road = \"9\", lane = -1, s = 1.0 }", "no road '9'"),
        ("{ road = \"1\", lane = -3, s = 1.0 }", "has no lane -3"),
        ("{ road = \"1\", lane = -2, s = 1.0 }", "sidewalk"),
        ("{ road = \"1\", lane = -1, s = 400.0 }", "off road '1'"),
    ] {
        let scenario = scenario_in(dir, "opendrive = \"hill.xodr\"", start);
        let err = World::load(&scenario).expect_err(start);
        let msg = err.to_string();
        assert!(
            matches!(err, WorldError::Scenario { line: 10, .. }),
            "{msg}"
        );
        assert!(
            msg.contains("scenario.toml:10:") && msg.contains(wants),
            "{msg}"
        );
    }

    // A glTF whose buffer is missing names the mesh file and the buffer.
    std::fs::write(
        dir.join("house.gltf"),
        r#"{"asset":{"version":"2.0"},"buffers":[{"uri":"house.bin","byteLength":36}]}"#,
    )
    .expect("write gltf");
    let scenario = scenario_in(
        dir,
        "meshes = [{ file = \"house.gltf\" }]",
        "{ x = 0.0, y = 0.0 }",
    );
    let msg = World::load(&scenario)
        .expect_err("missing buffer")
        .to_string();
    assert!(
        msg.contains("house.gltf") && msg.contains("house.bin"),
        "{msg}"
    );
    // Draco compression is refused by name.
    std::fs::write(
        dir.join("draco.gltf"),
        r#"{"asset":{"version":"2.0"},"extensionsUsed":["KHR_draco_mesh_compression"],"extensionsRequired":["KHR_draco_mesh_compression"]}"#,
    )
    .expect("write gltf");
    let scenario = scenario_in(
        dir,
        "meshes = [{ file = \"draco.gltf\" }]",
        "{ x = 0.0, y = 0.0 }",
    );
    let msg = World::load(&scenario).expect_err("draco").to_string();
    assert!(
        msg.contains("draco.gltf") && msg.contains("KHR_draco_mesh_compression"),
        "{msg}"
    );
}

#[test]
fn a_lane_start_needs_a_map_and_a_lane_follower_a_lane_start() {
    let text = "[scenario]\nname = \"t\"\ndt = 0.05\n\n[[agents]]\nid = \"car\"\n\
                start = { road = \"1\", lane = -1, s = 5.0 }\n\
                controller = { kind = \"external\" }\n";
    let err = Scenario::from_str(text, "t.toml").expect_err("lane start without a map");
    assert!(err.to_string().contains("names no opendrive file"), "{err}");
    let text = "[scenario]\nname = \"t\"\ndt = 0.05\n\n[[agents]]\nid = \"car\"\n\
                start = { x = 1.0, y = 2.0 }\n\
                controller = { kind = \"lane_follow\", speed = 5.0 }\n";
    let err = Scenario::from_str(text, "t.toml").expect_err("lane_follow without a lane start");
    assert!(err.to_string().contains("needs a lane start"), "{err}");
    let text = "[scenario]\nname = \"t\"\ndt = 0.05\n\n[[agents]]\nid = \"car\"\n\
                start = { x = 1.0, road = \"1\" }\ncontroller = { kind = \"external\" }\n";
    let err = Scenario::from_str(text, "t.toml").expect_err("mixed start");
    assert!(err.to_string().starts_with("t.toml:7:"), "{err}");
    let ok = "[scenario]\nname = \"t\"\ndt = 0.05\n[map]\nopendrive = \"m.xodr\"\n\
              [[agents]]\nid = \"car\"\nstart = { road = \"1\", lane = -1, s = 5.0 }\n\
              controller = { kind = \"lane_follow\", speed = 5.0, route = [\"1\"] }\n";
    let s = Scenario::from_str(ok, "t.toml").expect("valid lane scenario");
    assert_eq!(
        s.agents[0].start,
        StartPose::Lane {
            road: "1".into(),
            lane: -1,
            s: 5.0
        }
    );
}

/// The hill as Lanelet2: one lanelet per driving lane and section, bounds shared across the
/// road (one centre line for both directions), sections joined point to point (what routing
/// reads as "follows"), the file's 50 km/h, bounds typed from the marks; Town01's junction
/// lanes carry a turn direction.
#[test]
fn the_hill_exports_as_lanelets_that_share_bounds_and_points() {
    use convoy_world::export::lanelet2::{BoundKind, LaneletMap};
    let map = LaneletMap::build(&RoadMap::load(&fixture("hill.xodr")).expect("hill.xodr"));
    assert_eq!(map.lanelets.len(), 4, "{:?}", map.warnings);
    let lane = |section: usize, id: i32| {
        map.lanelets
            .iter()
            .find(|l| {
                l.origin
                    .as_ref()
                    .is_some_and(|o| o.section == section && o.lane == id)
            })
            .expect("lanelet")
    };
    let (right, left) = (lane(0, -1), lane(0, 1));
    // The centre line is one line string, the left bound of both directions.
    assert_eq!(right.left, left.left);
    assert_eq!(
        map.ways[right.left].kind,
        BoundKind::Line {
            thick: false,
            subtype: "dashed"
        }
    );
    assert_eq!(
        map.ways[right.right].kind,
        BoundKind::Line {
            thick: false,
            subtype: "solid"
        }
    );
    assert_eq!(right.speed_limit_kmh, Some(50.0));
    // Section 0 of lane -1 ends where section 1 starts, point for point.
    let next = lane(1, -1);
    let end = |w: usize| *map.ways[w].nodes.last().expect("nodes");
    let start = |w: usize| map.ways[w].nodes[0];
    assert_eq!(end(right.left), start(next.left));
    assert_eq!(end(right.right), start(next.right));
    // Travel on lane 1 runs against the reference line: its bounds, in travel order, go -x.
    let bound = map.bound(left, true);
    assert!(bound[0][0] > bound[bound.len() - 1][0]);
    // The width step at s = 150 is written down, naming road and lane.
    assert!(map
        .warnings
        .iter()
        .any(|w| w.contains("road '1' lane -1 (section 0) ends 0.25 m")));

    let town = LaneletMap::build(&RoadMap::load(&town01()).expect("Town01"));
    let turns = |t: &str| town.lanelets.iter().filter(|l| l.turn == Some(t)).count();
    assert!(turns("left") > 10 && turns("right") > 10 && turns("straight") > 10);
    assert!(town.warnings.is_empty(), "{:?}", town.warnings);
}

/// A stop-line signal (StVO 294) becomes a Lanelet2 stop line across the lane it applies to,
/// with a stop-sign regulatory element on that lanelet.
#[test]
fn a_stop_line_signal_becomes_a_lanelet2_stop_line() {
    use convoy_world::export::lanelet2::{BoundKind, LaneletMap};
    let scratch = scratch("stop_line");
    let dir = scratch.path();
    let text = std::fs::read_to_string(fixture("hill.xodr")).expect("read");
    let signal = "<signals><signal s=\"100.0\" t=\"-3.6\" id=\"9\" name=\"stop\" dynamic=\"no\" \
                  orientation=\"+\" zOffset=\"0.0\" country=\"DE\" type=\"294\" subtype=\"-1\" \
                  value=\"-1\" height=\"0.1\" width=\"3.5\"><validity fromLane=\"-1\" \
                  toLane=\"-1\"/></signal></signals>\n  </road>";
    let with_stop = text.replacen("</road>", signal, 1);
    assert_ne!(with_stop, text);
    std::fs::write(dir.join("stop.xodr"), with_stop).expect("write");
    let map = LaneletMap::build(&RoadMap::load(&dir.join("stop.xodr")).expect("stop.xodr"));
    let stopped: Vec<_> = map
        .lanelets
        .iter()
        .filter(|l| !l.stops.is_empty())
        .collect();
    assert_eq!(stopped.len(), 1, "{:?}", map.warnings);
    let origin = stopped[0].origin.as_ref().expect("origin");
    assert_eq!((origin.section, origin.lane), (0, -1));
    let (line, _sign) = stopped[0].stops[0];
    assert_eq!(map.ways[line].kind, BoundKind::StopLine);
    // Across the lane at s = 100: x = 100, from the centre line to the lane's outer border.
    let ends: Vec<[f64; 3]> = map.ways[line]
        .nodes
        .iter()
        .map(|&n| map.points[n])
        .collect();
    for p in &ends {
        assert!((p[0] - 100.0).abs() < 0.05, "{ends:?}");
    }
    let ys: Vec<f64> = ends.iter().map(|p| p[1]).collect();
    assert!((ys[0] - ys[1]).abs() > 3.0, "{ends:?}");
}
