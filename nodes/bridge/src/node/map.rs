//! `/map/lanes` and `/map/points`: the scenario's map as `convoy map export` writes it for a
//! stack (`crate::map`), published once, latched (reliable, transient-local, KEEP_LAST 1), so a
//! ROS node that starts later (rviz, Foxglove, a stack) still gets both.
//!
//! The world is loaded at start (a bad map file fails the bridge, and the bridge announces the
//! world's digests like every node that loads it); the messages are built on a thread of their
//! own, since sampling a town's surfaces takes a second or more, and the loop publishes them
//! when they are ready.

use std::sync::mpsc::{self, Receiver, TryRecvError};

use convoy_world::export::{self, cloud};
use convoy_world::World;

use super::*;
use crate::config::{publishes_map, MAP_LANES_TOPIC, MAP_POINTS_TOPIC};
use crate::map::{lane_markers, map_cloud};

/// The map messages, built.
struct Built {
    lanes: ros::MarkerArray,
    lanelets: usize,
    cloud: ros::PointCloud2,
    took: Duration,
}

/// The map's publishers and, until they are published, the messages being built.
pub(super) struct MapOut {
    lanes: ros2_client::Publisher<ros::MarkerArray>,
    points: ros2_client::Publisher<ros::PointCloud2>,
    /// The two ROS names (after renames).
    names: [String; 2],
    spacing: f64,
    pending: Option<Receiver<Built>>,
}

impl MapOut {
    /// For a scenario with an OpenDRIVE map: its world loaded (digests announced in
    /// `beacon`), the two latched publishers, and the messages on their way. None otherwise.
    pub(super) fn start(
        scenario: &Scenario,
        settings: &Ros2Settings,
        ros: &mut RosSide,
        beacon: &mut StatusBeacon,
    ) -> Result<Option<MapOut>> {
        if !publishes_map(scenario) {
            return Ok(None);
        }
        let started = Instant::now();
        let world = World::load(scenario).with_context(|| {
            format!(
                "the bridge cannot load the world of {}",
                scenario.file.display()
            )
        })?;
        // The bridge publishes this world: the coordinator checks it is the run's.
        convoy_core::status::announce_world_digests(beacon, &world.digests());
        let names = [MAP_LANES_TOPIC, MAP_POINTS_TOPIC].map(|t| settings.ros_name(t));
        let lanes = ros.publisher::<ros::MarkerArray>(&names[0], RosQos::Latched)?;
        let points = ros.publisher::<ros::PointCloud2>(&names[1], RosQos::Latched)?;
        let spacing = settings.map_points_spacing;
        let (send, pending) = mpsc::sync_channel(1);
        let scenario = scenario.clone();
        std::thread::Builder::new()
            .name("map".into())
            .spawn(move || {
                let (lanes, lanelets) = match export::lanelets(&world) {
                    Some((map, _, _)) => (lane_markers(&map), map.lanelets.len()),
                    None => (ros::MarkerArray::default(), 0),
                };
                let cloud = map_cloud(&cloud::sample(&world, &scenario, spacing));
                let _ = send.send(Built {
                    lanes,
                    lanelets,
                    cloud,
                    took: started.elapsed(),
                });
            })
            .context("cannot start the map thread")?;
        Ok(Some(MapOut {
            lanes,
            points,
            names,
            spacing,
            pending: Some(pending),
        }))
    }

    /// Publishes the map once it is built (at most once).
    pub(super) fn publish_when_built(&mut self, counters: &mut Counters) {
        let Some(pending) = &self.pending else {
            return;
        };
        let built = match pending.try_recv() {
            Ok(built) => built,
            Err(TryRecvError::Empty) => return,
            Err(TryRecvError::Disconnected) => {
                tracing::warn!("the map thread ended without a map: /map topics not published");
                self.pending = None;
                return;
            }
        };
        self.pending = None;
        let (markers, lanelets) = (built.lanes.markers.len(), built.lanelets);
        let (width, bytes) = (built.cloud.width, built.cloud.data.len());
        let [lanes_topic, points_topic] = &self.names;
        for (topic, result) in [
            (
                lanes_topic,
                self.lanes.publish(built.lanes).map_err(|e| e.to_string()),
            ),
            (
                points_topic,
                self.points.publish(built.cloud).map_err(|e| e.to_string()),
            ),
        ] {
            if let Err(e) = result {
                counters.publish_errors += 1;
                tracing::warn!("{topic}: cannot publish: {e}");
            }
        }
        println!(
            "map published: {lanes_topic} {markers} line strips ({lanelets} lanelets), \
             {points_topic} {width} points at {} m ({:.1} MB), built in {:.0} ms",
            self.spacing,
            bytes as f64 / 1e6,
            built.took.as_secs_f64() * 1e3
        );
    }
}
