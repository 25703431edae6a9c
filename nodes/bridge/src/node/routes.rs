//! Sensor routes: each bridged sensor output (the sensor catalogue's, see `config::sensor_outputs`)
//! read from its convoy topic, converted by its kind's converter and published on its ROS topic.

use super::*;
use crate::config::sensor_outputs;
use convoy_core::messages::{GnssFix, Image, Imu, Message, Odometry, PointCloud};
use convoy_core::scenario::SensorKind;
use convoy_core::topics::{Topic, TopicClass};

/// One convoy sensor topic forwarded to one ROS topic.
pub(super) trait Forward {
    /// Takes what arrived and publishes it.
    fn forward(&mut self, waitset: &WaitSet, counters: &mut Counters);
}

struct Route<I: Message, O: RosMessage, C: Fn(I) -> Result<O, String>> {
    ros_topic: String,
    sub: Subscriber<I>,
    out: ros2_client::Publisher<O>,
    convert: C,
}

impl<I: Message, O: RosMessage, C: Fn(I) -> Result<O, String>> Forward for Route<I, O, C> {
    fn forward(&mut self, waitset: &WaitSet, counters: &mut Counters) {
        for sample in self.sub.take_ready(waitset, 64) {
            let topic = &self.ros_topic;
            match (self.convert)(sample.value).map(|message| self.out.publish(message)) {
                Ok(Ok(())) => counters.forwarded += 1,
                Ok(Err(e)) => {
                    if count(&mut counters.publish_errors) {
                        let n = counters.publish_errors;
                        tracing::warn!("{topic}: cannot publish ({n} so far): {e}");
                    }
                }
                Err(e) => {
                    if count(&mut counters.convert_errors) {
                        let n = counters.convert_errors;
                        tracing::warn!("{topic}: sample not forwarded ({n} so far): {e}");
                    }
                }
            }
        }
    }
}

/// The routes of every sensor output of the bridged agents, attached to `waitset`.
pub(super) fn sensor_routes(
    node: &Node,
    ros: &mut RosSide,
    waitset: &mut WaitSet,
    settings: &Ros2Settings,
    scenario: &Scenario,
    qos: RosQos,
) -> Result<Vec<Box<dyn Forward>>> {
    let mut routes = Vec::new();
    for agent in settings.bridged_agents(scenario) {
        let Some(spec) = scenario.agent(&agent) else {
            continue;
        };
        for sensor in &spec.sensors {
            for output in sensor_outputs(&agent, sensor) {
                let mut make = RouteMaker {
                    node,
                    ros: &mut *ros,
                    waitset: &mut *waitset,
                    qos,
                    convoy_topic: &output.convoy_topic,
                    ros_topic: settings.ros_name(&output.ros_name),
                };
                let layout = settings.point_cloud;
                routes.push(match sensor.kind {
                    SensorKind::Camera => make.route(|m: Image| Ok(convert::image(m)))?,
                    SensorKind::Lidar => make.route(move |m: PointCloud| {
                        convert::point_cloud(&m, layout).map_err(|e| e.to_string())
                    })?,
                    SensorKind::Imu => make.route(|m: Imu| Ok(convert::imu(&m)))?,
                    SensorKind::Gnss => make.route(|m: GnssFix| Ok(convert::nav_sat_fix(&m)))?,
                    SensorKind::Odometry => make.route(|m: Odometry| Ok(convert::odometry(&m)))?,
                    // Not bridged (no ROS name in the catalogue): never listed as an output.
                    SensorKind::Radar => continue,
                });
            }
        }
    }
    Ok(routes)
}

/// What the route of one sensor output is made from.
struct RouteMaker<'a> {
    node: &'a Node,
    ros: &'a mut RosSide,
    waitset: &'a mut WaitSet,
    qos: RosQos,
    convoy_topic: &'a str,
    ros_topic: String,
}

impl RouteMaker<'_> {
    /// A route from the convoy topic to the ROS topic through `convert`, attached to the wait
    /// set.
    fn route<I: Message, O: RosMessage>(
        &mut self,
        convert: impl Fn(I) -> Result<O, String> + 'static,
    ) -> Result<Box<dyn Forward>> {
        let mut sub = self
            .node
            .subscriber::<I>(&Topic::new(self.convoy_topic, TopicClass::Sensor))?;
        sub.attach(self.waitset)?;
        let out = self.ros.publisher::<O>(&self.ros_topic, self.qos)?;
        Ok(Box::new(Route {
            ros_topic: self.ros_topic.clone(),
            sub,
            out,
            convert,
        }))
    }
}
