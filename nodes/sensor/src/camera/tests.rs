//! Rendering checks on whatever adapter this machine has (lavapipe on CPU).

use super::*;
use crate::fixtures::{state, two_cars as scenario};

/// A 160x120 camera, 90 degrees wide, 1.5 m above the ground at the car's centre.
fn params(pitch_deg: f64) -> CameraParams {
    CameraParams {
        width: 160,
        height: 120,
        hfov: 90f64.to_radians(),
        offset: [0.0, 0.0, 0.75],
        pitch: pitch_deg.to_radians(),
        depth: true,
        semantic: true,
    }
}

fn renderer() -> Renderer {
    Renderer::new().expect("a wgpu adapter (lavapipe: apt-get install mesa-vulkan-drivers)")
}

fn pixel(img: &CameraImages, x: u32, y: u32) -> ([u8; 3], f32, u8) {
    let i = (y * img.width + x) as usize;
    (
        [img.rgb[3 * i], img.rgb[3 * i + 1], img.rgb[3 * i + 2]],
        img.depth[i],
        img.class[i],
    )
}

#[test]
fn the_car_ahead_is_in_the_centre_in_its_colour_depth_and_class() {
    let mut r = renderer();
    let mut scene = CameraScene::new(&scenario(), &convoy_world::World::flat());
    let ego = state("ego", 0, 0.0, 0.0);
    scene.place([ego.clone(), state("car_2", 0, 20.0, 0.0)].iter());
    let img = r.render(&scene, &ego, &params(0.0)).expect("render");
    assert_eq!((img.width, img.height), (160, 120));
    assert_eq!(img.rgb.len(), 160 * 120 * 3);
    // Just below the centre (the camera is at the car's roof height, 1.5 m; the car's box
    // spans 0..1.5 m): the car.
    let (rgb, depth, class) = pixel(&img, 80, 62);
    assert_eq!(class, CLASS_VEHICLE, "centre pixel is not the car");
    // The rear face is 20 - 2.25 = 17.75 m ahead of the camera.
    assert!((depth - 17.75).abs() < 0.05, "depth {depth}");
    // Its colour: car_2 is agent 1, blue; lit, so darker but blue dominates.
    let colour = scene.colour_of("car_2").expect("colour");
    assert!(
        colour[2] > colour[0] && rgb[2] > rgb[0] && rgb[2] > rgb[1],
        "rgb {rgb:?}"
    );
    // Left and right edges at that row are ground, not car.
    assert_eq!(pixel(&img, 2, 62).2, CLASS_GROUND);
    assert_eq!(pixel(&img, 157, 62).2, CLASS_GROUND);
    // Without the car, the centre is ground far away.
    scene.place([ego.clone()].iter());
    let empty = r.render(&scene, &ego, &params(0.0)).expect("render");
    assert_eq!(pixel(&empty, 80, 62).2, CLASS_GROUND);
}

/// The row where the sky ends: the first row (from the top) whose centre pixel is ground.
fn horizon_row(img: &CameraImages) -> u32 {
    (0..img.height)
        .find(|&y| pixel(img, img.width / 2, y).2 == CLASS_GROUND)
        .expect("some ground")
}

#[test]
fn the_horizon_splits_sky_and_ground_where_the_field_of_view_says() {
    let mut r = renderer();
    let mut scene = CameraScene::new(&scenario(), &convoy_world::World::flat());
    let ego = state("ego", 0, 0.0, 0.0);
    scene.place([ego.clone()].iter());
    let level = r.render(&scene, &ego, &params(0.0)).expect("render");
    // Level camera: the horizon is the middle of the image (the ground's edge, 500 m away,
    // is a fraction of a pixel below it).
    let row = horizon_row(&level);
    assert!((59..=61).contains(&row), "level horizon at row {row}");
    let (sky, depth, class) = pixel(&level, 80, 30);
    assert_eq!((class, depth), (CLASS_SKY, SKY_DEPTH));
    assert!(sky[2] > sky[0], "sky is blue: {sky:?}");
    // Pitched down 10 degrees: the horizon moves up by f tan(10 deg) rows, f being the
    // focal length in pixels from the vertical field of view.
    let tilted = r.render(&scene, &ego, &params(10.0)).expect("render");
    let vfov = 2.0 * ((45f64.to_radians()).tan() / (160.0 / 120.0)).atan();
    let f = 60.0 / (vfov / 2.0).tan();
    let expected = 60.0 - f * 10f64.to_radians().tan();
    let row = f64::from(horizon_row(&tilted));
    assert!(
        (row - expected).abs() <= 1.5,
        "tilted horizon at {row}, expected {expected}"
    );
    // Ground depth below the horizon grows towards it.
    let near = pixel(&level, 80, 110).1;
    let far = pixel(&level, 80, 70).1;
    assert!(near < far, "depth {near} near vs {far} far");
    // A ground pixel's depth: camera 1.5 m up, the ray through row y meets the ground at
    // z-depth 1.5 f / (y + 0.5 - 60).
    let y = 100u32;
    let want = 1.5 * f / (f64::from(y) + 0.5 - 60.0);
    let got = f64::from(pixel(&level, 80, y).1);
    assert!(
        (got - want).abs() / want < 0.02,
        "ground depth {got}, want {want}"
    );
}

#[test]
fn a_frame_renders_the_same_every_time() {
    let mut r = renderer();
    let mut scene = CameraScene::new(&scenario(), &convoy_world::World::flat());
    let ego = state("ego", 0, 0.0, 0.0);
    scene.place([ego.clone(), state("car_2", 0, 12.0, 0.0)].iter());
    let a = r.render(&scene, &ego, &params(5.0)).expect("render");
    let b = r.render(&scene, &ego, &params(5.0)).expect("render");
    assert_eq!(a, b);
}
