//! From one frame's agent states to one sensor sample: which model a sensor kind runs, with
//! what noise, stamped how. Pure functions, so a test can check that a sample is made from the
//! states of its own frame.

use std::cell::RefCell;

use convoy_core::messages::{
    AgentState, GnssFix, Image, Imu, Odometry, PointCloud, RadarScan, SensorHeader, Tick,
};
use convoy_core::scenario::{Scenario, SensorKind, SensorSpec};

use crate::camera::{CameraError, CameraImages, CameraParams, CameraScene, PendingFrame, Renderer};
use crate::lidar::{LidarParams, LidarScene};

use crate::models::{self, GnssSigma, ImuSigma, RadarSigma};
use crate::noise::Noise;

/// Default noise of each model (scaled by the sensor's `noise`): a consumer-grade MEMS IMU,
/// a standard (non-RTK) GNSS receiver, an automotive radar.
pub const IMU_SIGMA: ImuSigma = ImuSigma {
    gyro: 0.002,
    accel: 0.02,
};
pub const GNSS_SIGMA: GnssSigma = GnssSigma {
    horizontal: 0.5,
    vertical: 1.0,
};
pub const RADAR_SIGMA: RadarSigma = RadarSigma {
    range: 0.1,
    angle: 0.002,
    radial_velocity: 0.05,
};

/// One sample of any kind this module makes.
#[derive(Debug)]
pub enum Sample {
    Imu(Imu),
    Gnss(GnssFix),
    Odometry(Odometry),
    Radar(RadarScan),
    Lidar(PointCloud),
    /// Colour, and depth / semantic classes when the sensor asks for them: rendered, and
    /// being read back until [`CameraSample::finish`] (the publishing job calls it).
    Camera(Box<CameraSample>),
}

/// Samples compare by content; a camera frame still being read back equals nothing.
impl PartialEq for Sample {
    fn eq(&self, other: &Sample) -> bool {
        match (self, other) {
            (Sample::Imu(a), Sample::Imu(b)) => a == b,
            (Sample::Gnss(a), Sample::Gnss(b)) => a == b,
            (Sample::Odometry(a), Sample::Odometry(b)) => a == b,
            (Sample::Radar(a), Sample::Radar(b)) => a == b,
            (Sample::Lidar(a), Sample::Lidar(b)) => a == b,
            _ => false,
        }
    }
}

/// A camera frame on its way back from the renderer.
#[derive(Debug)]
pub struct CameraSample {
    pending: PendingFrame,
    header: SensorHeader,
    depth: bool,
    semantic: bool,
}

impl CameraSample {
    /// Waits for the read-back and makes the frame's messages.
    pub fn finish(self) -> Result<CameraFrame, CameraError> {
        let images = self.pending.wait()?;
        Ok(camera_frame(images, self.depth, self.semantic, self.header))
    }
}

/// One camera frame as messages: rgb8 always, 32FC1 depth and mono8 classes on request.
#[derive(Debug, Clone, PartialEq)]
pub struct CameraFrame {
    pub rgb: Image,
    pub depth: Option<Image>,
    pub semantic: Option<Image>,
}

/// The renderer and what it draws, one per sensor node.
pub struct CameraRig {
    pub renderer: Renderer,
    pub scene: CameraScene,
}

impl Sample {
    pub fn header(&self) -> &SensorHeader {
        match self {
            Sample::Imu(m) => &m.header,
            Sample::Gnss(m) => &m.header,
            Sample::Odometry(m) => &m.header,
            Sample::Radar(m) => &m.header,
            Sample::Lidar(m) => &m.header,
            Sample::Camera(m) => &m.header,
        }
    }
}

/// The agents a sensor of `kind` needs the frame's states of, besides its own.
pub fn needs_others(kind: SensorKind) -> bool {
    kind.spec().sees_others
}

/// What one sample is made from: the tick, the own agent's state of that frame, its previous
/// state (IMU acceleration), the other agents' states of the same frame (radar, lidar), and the
/// scene lidar rays are cast into (the node's one, built from the scenario).
pub struct FrameInput<'a> {
    pub tick: &'a Tick,
    pub own: &'a AgentState,
    pub previous: Option<&'a AgentState>,
    pub others: &'a [AgentState],
    pub scene: Option<&'a RefCell<LidarScene>>,
    pub camera: Option<&'a RefCell<CameraRig>>,
}

fn scaled_imu(s: ImuSigma, k: f64) -> ImuSigma {
    ImuSigma {
        gyro: s.gyro * k,
        accel: s.accel * k,
    }
}

fn scaled_gnss(s: GnssSigma, k: f64) -> GnssSigma {
    GnssSigma {
        horizontal: s.horizontal * k,
        vertical: s.vertical * k,
    }
}

fn scaled_radar(s: RadarSigma, k: f64) -> RadarSigma {
    RadarSigma {
        range: s.range * k,
        angle: s.angle * k,
        radial_velocity: s.radial_velocity * k,
    }
}

/// The sample of sensor `spec` on agent `agent` for the input's frame, or None for a kind
/// this runtime does not make. The noise stream is derived from the scenario seed, the sensor
/// and the frame, so a sample is the same whichever node makes it (failover included).
pub fn make_sample(
    scenario: &Scenario,
    agent: &str,
    spec: &SensorSpec,
    input: &FrameInput<'_>,
    seq: u64,
) -> Option<Sample> {
    let header = SensorHeader {
        agent: agent.to_string(),
        sensor: spec.id.clone(),
        frame: input.tick.frame,
        stamp_ns: input.tick.sim_time_ns,
        seq,
    };
    let mut noise = Noise::new(
        scenario.scenario.seed,
        &format!("{agent}/{}#{}", spec.id, input.tick.frame),
    );
    let k = spec.noise;
    Some(match spec.kind {
        SensorKind::Imu => {
            let (previous, dt) = match input.previous {
                Some(p) if p.frame + 1 == input.own.frame => (p, input.tick.dt_ns as f64 * 1e-9),
                // No previous frame (the first sample): the state's own acceleration.
                _ => (input.own, 0.0),
            };
            Sample::Imu(models::imu(
                input.own,
                previous,
                dt,
                header,
                &mut noise,
                scaled_imu(IMU_SIGMA, k),
            ))
        }
        SensorKind::Gnss => Sample::Gnss(models::gnss(
            input.own,
            &scenario.origin,
            header,
            &mut noise,
            scaled_gnss(GNSS_SIGMA, k),
        )),
        SensorKind::Odometry => Sample::Odometry(models::odometry(input.own, header)),
        SensorKind::Radar => Sample::Radar(models::radar(
            input.own,
            input.others,
            spec.fov_rad(),
            spec.max_range(),
            header,
            &mut noise,
            scaled_radar(RADAR_SIGMA, k),
        )),
        SensorKind::Lidar => {
            let scene = input.scene?;
            let params = LidarParams::from_spec(spec, half_extents_of(scenario, agent)[2]);
            let stream = format!("{agent}/{}#{}", spec.id, input.tick.frame);
            Sample::Lidar(scene.borrow_mut().scan(
                input.own,
                input.others,
                &params,
                scenario.scenario.seed,
                &stream,
                header,
            ))
        }
        SensorKind::Camera => {
            let rig = input.camera?;
            let params = CameraParams::from_spec(spec, half_extents_of(scenario, agent));
            let mut rig = rig.borrow_mut();
            rig.scene
                .place(std::iter::once(input.own).chain(input.others.iter()));
            let CameraRig { renderer, scene } = &mut *rig;
            match renderer.submit(scene, input.own, &params) {
                Ok(pending) => Sample::Camera(Box::new(CameraSample {
                    pending,
                    header,
                    depth: spec.depth,
                    semantic: spec.semantic,
                })),
                Err(e) => {
                    tracing::warn!("{agent}/{}: frame {}: {e}", spec.id, input.tick.frame);
                    return None;
                }
            }
        }
    })
}

/// The half extents of `agent`'s box (the default vehicle's for an agent not in the scenario).
fn half_extents_of(scenario: &Scenario, agent: &str) -> [f64; 3] {
    scenario.agent(agent).map_or_else(
        || convoy_core::scenario::VehicleParams::default().half_extents,
        |a| a.vehicle.half_extents,
    )
}

/// A rendered view as convoy Image messages.
fn camera_frame(
    images: CameraImages,
    want_depth: bool,
    want_semantic: bool,
    header: SensorHeader,
) -> CameraFrame {
    let CameraImages {
        width,
        height,
        rgb,
        depth,
        class,
    } = images;
    let image = |encoding: &str, step: u32, data: Vec<u8>| Image {
        header: header.clone(),
        width,
        height,
        encoding: encoding.into(),
        step,
        data,
    };
    CameraFrame {
        depth: want_depth.then(|| {
            let bytes = depth.iter().flat_map(|d| d.to_le_bytes()).collect();
            image("32FC1", width * 4, bytes)
        }),
        semantic: want_semantic.then(|| image("mono8", width, class)),
        rgb: image("rgb8", width * 3, rgb),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convoy_core::messages::{Pose, Quat, Twist, Vec3};

    fn scenario() -> Scenario {
        let text = r#"
[scenario]
name = "rt"
dt = 0.05
[[agents]]
id = "ego"
start = { x = 0.0, y = 0.0 }
[agents.controller]
kind = "external"
[[agents.sensors]]
id = "radar"
kind = "radar"
rate = 20.0
noise = 0.0
[[agents.sensors]]
id = "odom"
kind = "odometry"
rate = 20.0
[[agents]]
id = "other"
start = { x = 20.0, y = 0.0 }
[agents.controller]
kind = "external"
"#;
        Scenario::from_str(text, "rt.toml").expect("test scenario")
    }

    fn state(agent: &str, frame: u64, x: f64) -> AgentState {
        AgentState {
            agent_id: agent.into(),
            frame,
            stamp_ns: frame as i64 * 50_000_000,
            pose: Pose {
                position: Vec3::new(x, 0.0, 0.5),
                orientation: Quat::IDENTITY,
            },
            twist: Twist::default(),
            accel: Vec3::default(),
            extents: Vec3::new(2.0, 1.0, 0.75),
        }
    }

    fn tick(frame: u64) -> Tick {
        Tick {
            frame,
            sim_time_ns: frame as i64 * 50_000_000,
            dt_ns: 50_000_000,
            paused: false,
            agents: vec!["ego".into(), "other".into()],
            states: Vec::new(),
        }
    }

    #[test]
    fn samples_carry_their_frame_and_use_that_frames_states() {
        let sc = scenario();
        let spec = &sc.agents[0].sensors[1];
        let t = tick(7);
        let own = state("ego", 7, 3.25);
        let s = make_sample(
            &sc,
            "ego",
            spec,
            &FrameInput {
                tick: &t,
                own: &own,
                previous: None,
                others: &[],
                scene: None,
                camera: None,
            },
            4,
        )
        .expect("odometry is supported");
        assert_eq!(s.header().frame, 7);
        assert_eq!(s.header().stamp_ns, 350_000_000);
        assert_eq!(s.header().seq, 4);
        let Sample::Odometry(o) = s else {
            panic!("not odometry")
        };
        assert_eq!(o.pose.position.x, 3.25);
    }

    #[test]
    fn radar_sees_the_other_agent_of_the_same_frame() {
        let sc = scenario();
        let spec = &sc.agents[0].sensors[0];
        let t = tick(3);
        let own = state("ego", 3, 0.0);
        let others = [state("other", 3, 20.0)];
        let Some(Sample::Radar(scan)) = make_sample(
            &sc,
            "ego",
            spec,
            &FrameInput {
                tick: &t,
                own: &own,
                previous: None,
                others: &others,
                scene: None,
                camera: None,
            },
            0,
        ) else {
            panic!("no radar scan")
        };
        assert_eq!(scan.detections.len(), 1);
        assert!((scan.detections[0].range - 20.0).abs() < 1e-9);
    }

    #[test]
    fn the_same_frame_gives_the_same_noise_anywhere() {
        let sc = scenario();
        let mut spec = sc.agents[0].sensors[0].clone();
        spec.noise = 1.0;
        let t = tick(5);
        let own = state("ego", 5, 0.0);
        let others = [state("other", 5, 20.0)];
        let input = FrameInput {
            tick: &t,
            own: &own,
            previous: None,
            others: &others,
            scene: None,
            camera: None,
        };
        let a = make_sample(&sc, "ego", &spec, &input, 0);
        let b = make_sample(&sc, "ego", &spec, &input, 0);
        assert_eq!(a, b);
        let t6 = tick(6);
        let c = make_sample(&sc, "ego", &spec, &FrameInput { tick: &t6, ..input }, 0);
        let range = |s: Option<Sample>| match s {
            Some(Sample::Radar(r)) => r.detections[0].range,
            _ => f64::NAN,
        };
        assert_ne!(range(a), range(c), "another frame draws other noise");
    }
}
