//! Cars on OpenDRIVE roads, in one process (no DDS): a car climbs a 5% grade and crosses lane
//! sections without falling through a seam; `lane_follow` cars on Town01 keep their lanes,
//! never touch, keep moving, and give the same trajectories every run.

use std::path::{Path, PathBuf};

use convoy_core::messages::{AgentState, Control};
use convoy_core::scenario::Scenario;
use convoy_world::World;

mod fleet;
use fleet::Fleet;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn no_external(_: usize, _: u64) -> Control {
    Control::default()
}

/// A scenario text in the world crate's fixtures folder (so `hill.xodr` resolves).
fn hill_scenario(agents: &str) -> Scenario {
    // Only read while loading (the map's path is absolute): removed on return.
    let scratch = tempfile::Builder::new()
        .prefix("convoy-agent-roads-")
        .tempdir()
        .expect("scratch");
    let dir = scratch.path();
    let map = repo().join("nodes/world/tests/fixtures/hill.xodr");
    let text = format!(
        "[scenario]\nname = \"hill\"\nseed = 3\ndt = 0.05\n\n[map]\nopendrive = \"{}\"\n\n{agents}",
        map.display()
    );
    let path = dir.join(format!("hill_{}.toml", agents.len()));
    std::fs::write(&path, text).expect("write");
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn yaw(s: &AgentState) -> f64 {
    let q = &s.pose.orientation;
    (2.0 * (q.w * q.z + q.x * q.y)).atan2(1.0 - 2.0 * (q.y * q.y + q.z * q.z))
}

#[test]
fn a_car_climbs_a_five_percent_grade_across_lane_sections() {
    let scenario = hill_scenario(
        "[[agents]]\nid = \"car\"\nstart = { road = \"1\", lane = -1, s = 10.0 }\n\
         controller = { kind = \"lane_follow\", speed = 10.0 }\n",
    );
    let world = World::load(&scenario).expect("world");
    let roads = world.roads.as_ref().expect("roads");
    let mut fleet = Fleet::new(&scenario);
    let mut worst_deviation = 0.0_f64;
    let mut lowest_clearance = f64::INFINITY;
    let mut highest_clearance = f64::NEG_INFINITY;
    let mut top = None;
    for _ in 0..600 {
        fleet.step(&no_external);
        let s = &fleet.states[0];
        let p = [s.pose.position.x, s.pose.position.y, s.pose.position.z];
        if p[0] > 280.0 {
            break;
        }
        // Height of the body's bottom over the road under it (the road at the car's x; from
        // s = 230 the road banks 3%, which lowers lane -1's centre, 1.875 m right of the
        // reference line, by up to 1.875 * tan(0.03)).
        let bank = if p[0] < 230.0 {
            0.0
        } else {
            1.875 * (0.003 * (p[0] - 230.0)).min(0.03).tan()
        };
        let road_z = road_height(p[0]) - bank;
        lowest_clearance = lowest_clearance.min(p[2] - s.extents.z - road_z);
        highest_clearance = highest_clearance.max(p[2] - s.extents.z - road_z);
        if let Some(d) = roads.lane_deviation(p, yaw(s)) {
            worst_deviation = worst_deviation.max(d);
        }
        if (150.0..151.0).contains(&p[0]) {
            top = Some(s.clone());
        }
    }
    let end = &fleet.states[0];
    assert!(
        end.pose.position.x > 250.0,
        "the car did not get up the hill: {:?}",
        end.pose.position
    );
    assert!(
        (end.pose.position.z - end.extents.z - 10.0).abs() < 0.3,
        "not on the top of the hill: {:?}",
        end.pose.position
    );
    let top = top.expect("passed the lane section at s = 150");
    assert!(
        top.twist.linear.z > 0.3,
        "not climbing at s = 150: {:?}",
        top.twist
    );
    assert!(
        lowest_clearance > -0.05,
        "sank into the road by {lowest_clearance}"
    );
    assert!(worst_deviation < 0.5, "left the lane by {worst_deviation}");
}

/// The hill's elevation profile (hill.xodr).
fn road_height(s: f64) -> f64 {
    if s < 40.0 {
        0.0
    } else if s < 50.0 {
        0.0025 * (s - 40.0).powi(2)
    } else if s < 240.0 {
        0.25 + 0.05 * (s - 50.0)
    } else if s < 250.0 {
        let d = s - 240.0;
        9.75 + 0.05 * d - 0.0025 * d * d
    } else {
        10.0
    }
}

#[test]
fn a_car_stops_behind_a_stopped_car_in_its_lane() {
    let scenario = hill_scenario(
        "[[agents]]\nid = \"a_front\"\nstart = { road = \"1\", lane = -1, s = 60.0 }\n\
         controller = { kind = \"external\" }\n\n\
         [[agents]]\nid = \"b_back\"\nstart = { road = \"1\", lane = -1, s = 5.0 }\n\
         controller = { kind = \"lane_follow\", speed = 12.0, gap = 5.0 }\n",
    );
    let mut fleet = Fleet::new(&scenario);
    let mut closest = f64::INFINITY;
    for _ in 0..400 {
        // The front car holds its brake.
        fleet.step(&|_, _| Control {
            brake: 1.0,
            ..Control::default()
        });
        let (a, b) = (&fleet.states[0], &fleet.states[1]);
        let gap = a.pose.position.x - b.pose.position.x - a.extents.x - b.extents.x;
        closest = closest.min(gap);
    }
    let b = &fleet.states[1];
    assert!(
        closest > 2.0,
        "came within {closest:.2} m of the stopped car"
    );
    assert!(b.twist.linear.x.abs() < 0.1, "still moving: {:?}", b.twist);
    assert!(
        b.pose.position.x > 30.0,
        "stopped far back: {:?}",
        b.pose.position
    );
}

#[test]
fn town_cars_keep_their_lanes_and_apart() {
    let mut scenario = Scenario::load(&repo().join("launch/scenarios/town.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    for agent in &mut scenario.agents {
        agent.sensors.clear();
    }
    let world = World::load(&scenario).expect("world");
    let roads = world.roads.as_ref().expect("roads");
    let mut fleet = Fleet::new(&scenario);
    let frames: u64 = std::env::var("CONVOY_TOWN_FRAMES")
        .ok()
        .and_then(|f| f.parse().ok())
        .unwrap_or(2000);
    let mut worst = (0.0_f64, String::new());
    let mut closest = (f64::INFINITY, String::new());
    let mut travelled = vec![0.0; fleet.states.len()];
    for frame in 0..frames {
        let before: Vec<[f64; 2]> = fleet
            .states
            .iter()
            .map(|s| [s.pose.position.x, s.pose.position.y])
            .collect();
        fleet.step(&no_external);
        for (i, s) in fleet.states.iter().enumerate() {
            let p = [s.pose.position.x, s.pose.position.y, s.pose.position.z];
            travelled[i] += ((p[0] - before[i][0]).powi(2) + (p[1] - before[i][1]).powi(2)).sqrt();
            let d = roads.lane_deviation(p, yaw(s)).unwrap_or(f64::INFINITY);
            if d > worst.0 {
                worst = (d, format!("{} at frame {frame} {p:?}", s.agent_id));
            }
            for o in &fleet.states[i + 1..] {
                let gap = ((p[0] - o.pose.position.x).powi(2) + (p[1] - o.pose.position.y).powi(2))
                    .sqrt();
                if gap < closest.0 {
                    closest = (
                        gap,
                        format!("{} and {} at frame {frame}", s.agent_id, o.agent_id),
                    );
                }
            }
        }
    }
    let seconds = frames as f64 * scenario.scenario.dt;
    let speeds: Vec<String> = fleet
        .states
        .iter()
        .zip(&travelled)
        .map(|(s, d)| format!("{} {:.1}", s.agent_id, d / seconds))
        .collect();
    println!("worst {worst:?}, closest {closest:?}, speeds {speeds:?}");
    assert!(worst.0 < 0.5, "left a lane: {worst:?}");
    assert!(closest.0 > 2.0, "cars touched: {closest:?}");
    for (s, d) in fleet.states.iter().zip(&travelled) {
        assert!(
            d / seconds > 4.0,
            "{} averaged {:.2} m/s",
            s.agent_id,
            d / seconds
        );
    }
}

#[test]
fn a_car_follows_a_given_route_and_never_sinks_into_the_road() {
    let path = repo().join("launch/scenarios/town.toml");
    let mut scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let world = World::load(&scenario).expect("world");
    let roads = world.roads.as_ref().expect("roads");
    // A route from ego's start: at every fork the last lane on offer (the seeded stream would
    // pick others), through four junctions.
    let start = world
        .start_of(&scenario.agents[0].start)
        .expect("start")
        .lane
        .expect("a lane start");
    let mut lane = start.lane;
    let mut route: Vec<String> = Vec::new();
    let mut forks = 0;
    while forks < 4 {
        let next = roads.next_lanes(lane);
        if next.len() > 1 {
            forks += 1;
        }
        lane = *next.last().expect("Town01 has no dead ends");
        let road = roads.od_lane(lane).expect("a road").0.to_string();
        if route.last() != Some(&road) {
            route.push(road);
        }
    }
    scenario.agents.truncate(1);
    scenario.agents[0].sensors.clear();
    scenario.agents[0].controller = convoy_core::scenario::ControllerSpec::LaneFollow {
        speed: 8.0,
        route: route.clone(),
        gap: 6.0,
    };
    let mut fleet = Fleet::new(&scenario);
    let mut visited: Vec<String> = Vec::new();
    let mut candidate = (String::new(), 0);
    let mut lowest = f64::INFINITY;
    for _ in 0..3000 {
        fleet.step(&no_external);
        let s = &fleet.states[0];
        let p = [s.pose.position.x, s.pose.position.y, s.pose.position.z];
        // Town01 is flat: the body's centre stays its half height above the road.
        lowest = lowest.min(p[2] - s.extents.z);
        let Some((lane, _)) = roads.lane_along(p, yaw(s)) else {
            continue;
        };
        // Junction roads overlap; the roads between junctions say where the car went.
        if roads.junction_of(lane).is_some() {
            continue;
        }
        // Where two roads join end to end, the nearest lane flickers between them for a
        // frame or two: a road counts once the car has been on it for 10 frames.
        let road = roads.od_lane(lane).expect("road").0.to_string();
        if candidate.0 == road {
            candidate.1 += 1;
        } else {
            candidate = (road, 1);
        }
        if candidate.1 == 10 && visited.last() != Some(&candidate.0) {
            visited.push(candidate.0.clone());
        }
        if visited.len() > 4 {
            break;
        }
    }
    let planned: Vec<String> = route
        .iter()
        .filter(|r| {
            roads
                .network()
                .road_by_od_id(r)
                .is_some_and(|road| road.junction().is_none())
        })
        .cloned()
        .collect();
    let start_road = roads.od_lane(start.lane).expect("start road").0.to_string();
    let expected: Vec<String> = std::iter::once(start_road)
        .chain(planned)
        .take(visited.len())
        .collect();
    assert!(visited.len() >= 3, "the car got nowhere: {visited:?}");
    assert_eq!(visited, expected, "route {route:?}");
    assert!(lowest > -0.02, "the car sank {lowest} m into the road");
}
