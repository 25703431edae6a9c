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

/// The straight loop the read-back used to run: the first three bytes of every pixel.
fn straight_rgb(rgba: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; rgba.len() / 4 * 3];
    for (o, p) in out.chunks_exact_mut(3).zip(rgba.chunks_exact(4)) {
        o.copy_from_slice(&p[..3]);
    }
    out
}

/// Bytes from a small generator, every value and position different.
fn noise_bytes(n: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn conversion_is_the_straight_loop() {
    use std::mem::MaybeUninit;
    type Convert = fn(&[u8], &mut [MaybeUninit<u8>]);
    let mut ways: Vec<(&str, Convert)> = vec![
        ("rgba_to_rgb", super::gpu::rgba_to_rgb),
        ("words", super::gpu::rgba_to_rgb_words),
    ];
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("ssse3") {
        // SAFETY: the CPU has SSSE3.
        ways.push(("ssse3", |rgba, out| unsafe {
            super::gpu::rgba_to_rgb_ssse3(rgba, out)
        }));
    }
    let rgba = noise_bytes(1441 * 4);
    // Every row length up to 70 pixels (each tail and block boundary), and long rows.
    for pixels in (0..=70).chain([180, 1440, 1441]) {
        let row = &rgba[..pixels * 4];
        let want = straight_rgb(row);
        for (name, convert) in &ways {
            let mut out = vec![MaybeUninit::new(0xa5u8); pixels * 3 + 5];
            convert(row, &mut out[..pixels * 3]);
            // SAFETY: every byte was initialised (filled first, then converted into).
            let got: Vec<u8> = out.iter().map(|b| unsafe { b.assume_init() }).collect();
            assert_eq!(got[..pixels * 3], want[..], "{name}, {pixels} pixels");
            assert!(
                got[pixels * 3..].iter().all(|b| *b == 0xa5),
                "{name}: wrote past the row"
            );
        }
    }
    // Whole read-back buffers (rows padded to 256 bytes), on one thread and split over several.
    for (w, h) in [
        (1, 1),
        (7, 3),
        (181, 121),
        (640, 480),
        (1440, 960),
        (1000, 5),
    ] {
        let padded = (w * 4usize).div_ceil(256) * 256;
        let data = noise_bytes(padded * h);
        let want: Vec<u8> = (0..h)
            .flat_map(|r| straight_rgb(&data[r * padded..r * padded + w * 4]))
            .collect();
        for threads in [1, 2, 3, 4] {
            let got = super::gpu::rgb_image(&data, w, h, threads);
            assert!(got == want, "{w}x{h} on {threads} threads");
        }
    }
}

/// Cameras of several sizes and outputs in one submission give, each, the images it gives
/// alone: batching changes when frames go to the device, not what is drawn.
#[test]
fn frames_submitted_together_are_the_frames_rendered_alone() {
    let mut r = renderer();
    let mut scene = CameraScene::new(&scenario(), &convoy_world::World::flat());
    let ego = state("ego", 0, 0.0, 0.0);
    let car = state("car_2", 0, 12.0, 1.0);
    scene.place([ego.clone(), car.clone()].iter());
    let views: Vec<(AgentState, CameraParams)> = [
        (181, 121, false, false, 0.0),
        (160, 120, true, true, 5.0),
        (64, 48, false, true, -3.0),
        (100, 75, true, false, 10.0),
        (160, 120, false, false, 2.0),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (width, height, depth, semantic, pitch))| {
        let own = if i % 2 == 0 { ego.clone() } else { car.clone() };
        let params = CameraParams {
            width,
            height,
            depth,
            semantic,
            ..params(pitch)
        };
        (own, params)
    })
    .collect();
    let alone: Vec<CameraImages> = views
        .iter()
        .map(|(own, p)| r.render(&scene, own, p).expect("render"))
        .collect();
    // Twice: the second time from target sets that went back to the pool.
    for _ in 0..2 {
        let pending: Vec<PendingFrame> = views
            .iter()
            .map(|(own, p)| r.record(&scene, own, p).expect("record"))
            .collect();
        assert_eq!(r.recorded(), views.len());
        assert_eq!(r.flush().expect("flush"), views.len());
        for (i, (frame, want)) in pending.into_iter().zip(&alone).enumerate() {
            let (raw, times) = frame.wait_raw().expect("read back");
            assert!(times.submitted.is_some());
            assert_eq!(&raw.decode(), want, "view {i}");
        }
    }
    // A frame whose renderer was never flushed says so instead of waiting for ever.
    let unflushed = r.record(&scene, &ego, &params(0.0)).expect("record");
    let e = unflushed.wait().expect_err("never submitted");
    assert!(e.to_string().contains("flush"), "{e}");
}

#[test]
fn the_cpu_adapter_is_lavapipe_and_a_gpu_that_is_not_there_is_a_clear_error() {
    let cpu = Renderer::with_adapter(AdapterChoice::Cpu).expect("lavapipe");
    assert!(cpu.adapter.contains("Cpu"), "{}", cpu.adapter);
    let hardware = wgpu::Instance::default()
        .enumerate_adapters(wgpu::Backends::VULKAN | wgpu::Backends::METAL)
        .iter()
        .any(|a| takes(AdapterChoice::Gpu, a.get_info().device_type));
    match Renderer::with_adapter(AdapterChoice::Gpu) {
        Ok(gpu) => assert!(hardware, "no GPU here, yet {} was taken", gpu.adapter),
        Err(e) => {
            assert!(!hardware, "{e}");
            let text = e.to_string();
            assert!(
                text.starts_with("--adapter gpu: no hardware (GPU) adapter"),
                "{text}"
            );
            // What there is, by name, type and backend: lavapipe on this machine.
            assert!(text.contains("Cpu") && text.contains("Vulkan"), "{text}");
        }
    }
}
