//! Lidar and camera on the town (launch/scenarios/town.toml: CARLA's Town01 and Kenney
//! buildings): rays hit the road, its paint and the buildings with intensities by material, and
//! the camera draws the lanes, marks and buildings in their colours and semantic classes.

use std::path::Path;

use convoy_core::messages::{AgentState, Pose, Quat, SensorHeader, Vec3};
use convoy_core::scenario::Scenario;
use convoy_sensor::camera::{
    CameraParams, CameraScene, Renderer, CLASS_BUILDING, CLASS_LANE_MARKING, CLASS_ROAD,
    CLASS_SIDEWALK,
};
use convoy_sensor::lidar::{points, LidarParams, LidarScene};
use convoy_world::{Material, World};

fn town() -> (Scenario, World) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../launch/scenarios/town.toml");
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let world = World::load(&scenario).unwrap_or_else(|e| panic!("{e}"));
    (scenario, world)
}

/// ego at its start on the town, at rest.
fn ego(scenario: &Scenario, world: &World) -> AgentState {
    let spec = scenario.agent("ego").expect("ego");
    let place = world.start_of(&spec.start).expect("ego's start");
    let half = place.yaw / 2.0;
    AgentState {
        agent_id: "ego".into(),
        pose: Pose {
            position: Vec3::new(place.x, place.y, place.z + spec.vehicle.half_extents[2]),
            orientation: Quat::new(0.0, 0.0, half.sin(), half.cos()),
        },
        extents: Vec3::new(2.25, 1.0, 0.75),
        ..AgentState::default()
    }
}

#[test]
fn lidar_rays_hit_road_paint_and_buildings_with_their_intensities() {
    let (scenario, world) = town();
    let own = ego(&scenario, &world);
    let mut scene = LidarScene::new(&scenario, &world);
    let spec = scenario
        .agent("ego")
        .and_then(|a| a.sensors.iter().find(|s| s.id == "roof_lidar"))
        .expect("ego's lidar");
    let params = LidarParams::from_spec(spec, 0.75);
    let cloud = scene.scan(&own, &[], &params, 7, "roof", SensorHeader::default());
    let pts = points(&cloud);
    assert!(pts.len() > 10_000, "{} points", pts.len());
    // Points on the road: below the sensor by its mount height (the road is flat at z = 0).
    let mount = 0.75 + params.offset[2];
    let ground: Vec<f32> = pts
        .iter()
        .filter(|p| (f64::from(p.z) + mount).abs() < 0.1 && p.x.hypot(p.y) < 30.0)
        .map(|p| p.intensity)
        .collect();
    assert!(ground.len() > 1000, "{} road points", ground.len());
    // Asphalt is dark and paint bright: both show, far apart.
    let asphalt = Material::Asphalt.reflectivity();
    let paint = Material::LaneMarking.reflectivity();
    let dark = ground.iter().filter(|i| **i < asphalt * 1.05).count();
    let bright = ground.iter().filter(|i| **i > paint * 0.5).count();
    assert!(dark > 200, "{dark} asphalt returns of {}", ground.len());
    assert!(
        bright > 10,
        "{bright} lane-marking returns of {}",
        ground.len()
    );
    // The houses beside the road: returns well above the road, at their distance.
    let walls = pts
        .iter()
        .filter(|p| f64::from(p.z) + mount > 2.0 && p.x.hypot(p.y) < 60.0)
        .count();
    assert!(walls > 100, "{walls} building returns");
}

#[test]
fn the_camera_draws_lanes_marks_and_buildings_in_their_classes() {
    let (scenario, world) = town();
    let own = ego(&scenario, &world);
    let mut scene = CameraScene::new(&scenario, &world);
    scene.place([own.clone()].iter());
    let mut renderer =
        Renderer::new().expect("a wgpu adapter (lavapipe: apt-get install mesa-vulkan-drivers)");
    let params = CameraParams {
        width: 320,
        height: 240,
        hfov: 90f64.to_radians(),
        offset: [0.0, 0.0, 0.75],
        pitch: 5f64.to_radians(),
        depth: true,
        semantic: true,
    };
    let img = renderer.render(&scene, &own, &params).expect("render");
    let count = |class: u8| img.class.iter().filter(|c| **c == class).count();
    let (road, marks, sidewalk, buildings) = (
        count(CLASS_ROAD),
        count(CLASS_LANE_MARKING),
        count(CLASS_SIDEWALK),
        count(CLASS_BUILDING),
    );
    let total = img.class.len();
    assert!(road > total / 20, "road pixels {road} of {total}");
    // Town01 paints a broken centre line: a few dashes ahead.
    assert!(marks > 10, "lane-marking pixels {marks}");
    assert!(sidewalk > 50, "sidewalk pixels {sidewalk}");
    assert!(buildings > 200, "building pixels {buildings}");
    // Straight ahead and down, the lane: asphalt-dark grey, not the lighter ground.
    let (x, y) = (img.width / 2, img.height - 10);
    let i = (y * img.width + x) as usize;
    assert_eq!(img.class[i], CLASS_ROAD);
    let rgb = &img.rgb[3 * i..3 * i + 3];
    assert!(rgb.iter().all(|c| *c < 90), "road colour {rgb:?}");
}
