//! From one frame's agent states to one sensor sample: which model a sensor kind runs, with
//! what noise, stamped how. Pure functions, so a test can check that a sample is made from the
//! states of its own frame.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use convoy_core::messages::{
    AgentState, GnssFix, Image, Imu, Odometry, PointCloud, RadarScan, SensorHeader, Tick,
};
use convoy_core::scenario::{Scenario, SensorKind, SensorSpec};

use crate::camera::{CameraError, CameraParams, CameraScene, PendingFrame, RawImages, Renderer};
use crate::lidar::{LidarParams, LidarScene};

use crate::models::{self, GnssSigma, ImuSigma, RadarSigma};
use crate::noise::Noise;
use crate::stages::{ImageStage, StageTimes};

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

/// A message of a sensor topic, of the type the sensor catalogue names for it.
pub type AnyMessage = Box<dyn Any + Send>;

/// One sample of any kind this module makes.
#[derive(Debug)]
pub enum Sample {
    Imu(Imu),
    Gnss(GnssFix),
    Odometry(Odometry),
    Radar(RadarScan),
    Lidar(PointCloud),
    /// Colour, and depth / semantic classes when the sensor asks for them: recorded, rendered
    /// once the rig is flushed, and read back until [`Sample::into_messages`] (the publishing
    /// job calls it).
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
    /// Width and height, and where the stage times go.
    size: (u32, u32),
    stages: Arc<StageTimes>,
}

impl CameraSample {
    /// Waits for the read-back and makes the frame's images, in catalogue order: rgb8, then
    /// 32FC1 depth and mono8 classes when the sensor asks for them.
    fn finish(self) -> Result<Vec<Option<AnyMessage>>, CameraError> {
        let started = Instant::now();
        let (
            RawImages {
                width,
                height,
                rgb,
                depth,
                class,
            },
            times,
        ) = self.pending.wait_raw()?;
        let image = |encoding: &str, step: u32, data: Vec<u8>| -> AnyMessage {
            Box::new(Image {
                header: self.header.clone(),
                width,
                height,
                encoding: encoding.into(),
                step,
                data,
            })
        };
        let depth = self.depth.then(|| image("32FC1", width * 4, depth));
        let semantic = self.semantic.then(|| image("mono8", width, class));
        let messages = vec![Some(image("rgb8", width * 3, rgb)), depth, semantic];
        let stage = |stage, d| self.stages.image(self.size, stage, d);
        // The job waited for a publishing thread from the submission on (0: it was there first).
        let queued = times
            .submitted
            .map_or(Duration::ZERO, |at| started.saturating_duration_since(at));
        stage(ImageStage::Submit, times.submit);
        stage(ImageStage::Queue, queued);
        stage(ImageStage::Gpu, times.gpu);
        stage(ImageStage::Map, times.map);
        stage(ImageStage::Convert, times.convert);
        Ok(messages)
    }
}

/// The renderer and what it draws, one per sensor node, and where its stage times go.
pub struct CameraRig {
    pub renderer: Renderer,
    pub scene: CameraScene,
    pub stages: Arc<StageTimes>,
}

impl CameraRig {
    pub fn new(renderer: Renderer, scene: CameraScene) -> CameraRig {
        CameraRig {
            renderer,
            scene,
            stages: Arc::default(),
        }
    }

    /// Sends the camera frames [`make_sample`] recorded to the device, all in one submission:
    /// their samples' images come once this ran (call it before waiting for them).
    pub fn flush(&mut self) -> Result<usize, CameraError> {
        self.renderer.flush()
    }
}

impl Sample {
    /// The sample's messages, one per output of its kind in the sensor catalogue (main topic
    /// first), None for an output it does not carry. A camera's first wait for the read-back.
    pub fn into_messages(self) -> Result<Vec<Option<AnyMessage>>, CameraError> {
        fn one(message: impl Any + Send) -> Vec<Option<AnyMessage>> {
            vec![Some(Box::new(message))]
        }
        Ok(match self {
            Sample::Imu(m) => one(m),
            Sample::Gnss(m) => one(m),
            Sample::Odometry(m) => one(m),
            Sample::Radar(m) => one(m),
            Sample::Lidar(m) => one(m),
            Sample::Camera(pending) => pending.finish()?,
        })
    }

    /// A camera sample's stage times and image size (the publish job adds its writes).
    pub fn camera_stages(&self) -> Option<(Arc<StageTimes>, (u32, u32))> {
        match self {
            Sample::Camera(c) => Some((Arc::clone(&c.stages), c.size)),
            _ => None,
        }
    }

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
/// and the frame, so a sample is the same whichever node makes it (failover included). A
/// camera's frame is only recorded: [`CameraRig::flush`] sends it (with the other cameras made
/// since) to the device, before its messages are taken.
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
            let CameraRig {
                renderer,
                scene,
                stages,
            } = &mut *rig;
            // Recorded only: the node flushes once every sample of the frame is made, so the
            // frame's cameras go to the device in one submission (CameraRig::flush).
            match renderer.record(scene, input.own, &params) {
                Ok(pending) => Sample::Camera(Box::new(CameraSample {
                    size: pending.size(),
                    pending,
                    header,
                    depth: spec.depth,
                    semantic: spec.semantic,
                    stages: Arc::clone(stages),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{state, two_cars as scenario};
    use convoy_core::messages::{visit_type, Message, MessageVisitor};

    fn tick(frame: u64) -> Tick {
        Tick {
            frame,
            sim_time_ns: frame as i64 * 50_000_000,
            dt_ns: 50_000_000,
            paused: false,
            agents: vec!["ego".into(), "car_2".into()],
            states: Vec::new(),
        }
    }

    /// The input of a frame without a previous state, a lidar scene or a camera.
    fn input<'a>(tick: &'a Tick, own: &'a AgentState, others: &'a [AgentState]) -> FrameInput<'a> {
        FrameInput {
            tick,
            own,
            previous: None,
            others,
            scene: None,
            camera: None,
        }
    }

    #[test]
    fn samples_carry_their_frame_and_use_that_frames_states() {
        let sc = scenario();
        let spec = &sc.agents[0].sensors[1];
        let t = tick(7);
        let own = state("ego", 7, 3.25, 0.0);
        let s =
            make_sample(&sc, "ego", spec, &input(&t, &own, &[]), 4).expect("odometry is supported");
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
        let own = state("ego", 3, 0.0, 0.0);
        let others = [state("car_2", 3, 20.0, 0.0)];
        let Some(Sample::Radar(scan)) = make_sample(&sc, "ego", spec, &input(&t, &own, &others), 0)
        else {
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
        let own = state("ego", 5, 0.0, 0.0);
        let others = [state("car_2", 5, 20.0, 0.0)];
        let a = make_sample(&sc, "ego", &spec, &input(&t, &own, &others), 0);
        let b = make_sample(&sc, "ego", &spec, &input(&t, &own, &others), 0);
        assert_eq!(a, b);
        let t6 = tick(6);
        let c = make_sample(&sc, "ego", &spec, &input(&t6, &own, &others), 0);
        let range = |s: Option<Sample>| match s {
            Some(Sample::Radar(r)) => r.detections[0].range,
            _ => f64::NAN,
        };
        assert_ne!(range(a), range(c), "another frame draws other noise");
    }

    /// The node writes a sample's messages on the topics the catalogue lists, by position.
    #[test]
    fn messages_follow_the_catalogue_outputs() {
        struct Is<'a>(&'a AnyMessage);
        impl MessageVisitor for Is<'_> {
            type Output = bool;
            fn visit<M: Message>(self) -> bool {
                self.0.is::<M>()
            }
        }
        let sc = scenario();
        let t = tick(3);
        let own = state("ego", 3, 0.0, 0.0);
        let others = [state("car_2", 3, 20.0, 0.0)];
        for spec in &sc.agents[0].sensors {
            let sample = make_sample(&sc, "ego", spec, &input(&t, &own, &others), 0);
            let messages = sample.expect("made").into_messages().expect("no read-back");
            let outputs = spec.kind.spec().outputs;
            assert_eq!(messages.len(), outputs.len(), "{:?}", spec.kind);
            for (output, message) in outputs.iter().zip(&messages) {
                let message = message.as_ref().expect("every output of the kind");
                assert_eq!(visit_type(output.message, Is(message)), Some(true));
            }
        }
    }
}
