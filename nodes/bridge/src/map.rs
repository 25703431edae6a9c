//! The scenario's map as ROS 2 messages, the same map `convoy map export` writes for a stack
//! (DESIGN.md, "Bridges"): the Lanelet2 map's line strings as a `visualization_msgs/MarkerArray`
//! (`/map/lanes`) and the point-cloud map as a `sensor_msgs/PointCloud2` (`/map/points`). Pure
//! functions, no DDS.
//!
//! Both are in frame `map`, which is convoy's world frame and the exported map's frame (the
//! OSM file's `local_x`/`local_y`/`ele`, the PCD's x y z): a stack that localises on the exported
//! map gets the poses the bridge publishes on `/tf`.

use convoy_world::export::lanelet2::{BoundKind, LaneletMap};
use convoy_world::export::CloudPoint;

use crate::convert::MAP_FRAME;
use crate::ros_msgs as ros;

/// How one kind of line string is drawn: line width (m) and colour.
struct Style {
    width: f64,
    color: [f32; 4],
}

/// The style of a line string of kind `kind`; None for what is not a line (a stop sign's
/// position).
fn style(kind: BoundKind) -> Option<Style> {
    let s = |width, color| Some(Style { width, color });
    let paint = [1.0, 1.0, 1.0, 1.0];
    match kind {
        BoundKind::Line { thick, subtype } => {
            let width = if thick { 0.3 } else { 0.15 };
            match subtype {
                // Broken lines thinner and greyer (a strip has no dashes).
                "dashed" => s(width * 0.7, [0.85, 0.85, 0.85, 0.8]),
                "solid_solid" => s(width * 1.5, paint),
                _ => s(width, paint),
            }
        }
        BoundKind::Curbstone => s(0.2, [0.7, 0.7, 0.7, 1.0]),
        BoundKind::RoadBorder => s(0.2, [0.55, 0.55, 0.55, 1.0]),
        BoundKind::Virtual => s(0.05, [0.5, 0.5, 0.5, 0.5]),
        BoundKind::StopLine => s(0.4, [1.0, 0.2, 0.2, 1.0]),
        BoundKind::CrosswalkSide => s(0.2, [1.0, 0.85, 0.0, 1.0]),
        BoundKind::StopSign => None,
    }
}

/// The marker namespace of line strings of `kind`: their `type` tag in lanelet2_map.osm, with
/// `/subtype` where it has one (`line_thin/solid`, `road_border`, `virtual`, `stop_line`, ...),
/// but `crosswalk` for a crosswalk's sides (tagged `virtual` there).
pub fn lane_namespace(kind: BoundKind) -> String {
    match (kind, kind.tags()) {
        (BoundKind::CrosswalkSide, _) => "crosswalk".into(),
        (_, (kind, Some(subtype))) => format!("{kind}/{subtype}"),
        (_, (kind, None)) => kind.into(),
    }
}

/// Every line string of the Lanelet2 map (each lanelet bound once, however many lanelets share
/// it; stop lines; crosswalk sides) as one LINE_STRIP marker through the line string's points,
/// in frame `map`: namespace by kind ([`lane_namespace`]), id the line string's index in the
/// map (the order of the ways in `lanelet2_map.osm`), width and colour by kind, stamped at time
/// zero, shown until replaced. Stop signs (a position, not a line) are left out.
pub fn lane_markers(map: &LaneletMap) -> ros::MarkerArray {
    let markers = map
        .ways
        .iter()
        .enumerate()
        .filter_map(|(index, way)| {
            let style = style(way.kind)?;
            let points: Vec<ros::Vector3> = way
                .nodes
                .iter()
                .filter_map(|&n| map.points.get(n))
                .map(|&[x, y, z]| ros::Vector3 { x, y, z })
                .collect();
            (points.len() >= 2).then(|| ros::Marker {
                header: ros::Header {
                    stamp: ros::Time::default(),
                    frame_id: MAP_FRAME.into(),
                },
                ns: lane_namespace(way.kind),
                id: i32::try_from(index).unwrap_or(i32::MAX),
                kind: ros::Marker::LINE_STRIP,
                action: ros::Marker::ADD,
                pose: ros::Pose::default(),
                // A line's width is scale.x.
                scale: ros::Vector3 {
                    x: style.width,
                    y: 0.0,
                    z: 0.0,
                },
                color: ros::ColorRgba {
                    r: style.color[0],
                    g: style.color[1],
                    b: style.color[2],
                    a: style.color[3],
                },
                points,
                ..ros::Marker::default()
            })
        })
        .collect();
    ros::MarkerArray { markers }
}

/// The point-cloud map as one PointCloud2 in frame `map`, stamped at time zero: fields x, y,
/// z, intensity (float32, 16 bytes a point, the PCD's layout and its bytes), unorganised
/// (height 1).
pub fn map_cloud(points: &[CloudPoint]) -> ros::PointCloud2 {
    let mut data = Vec::with_capacity(points.len() * 16);
    for p in points {
        for v in [p.xyz[0], p.xyz[1], p.xyz[2], p.intensity] {
            data.extend_from_slice(&v.to_le_bytes());
        }
    }
    let field = |name: &str, offset: u32| ros::PointField {
        name: name.into(),
        offset,
        datatype: ros::PointField::FLOAT32,
        count: 1,
    };
    let width = u32::try_from(points.len()).unwrap_or(u32::MAX);
    ros::PointCloud2 {
        header: ros::Header {
            stamp: ros::Time::default(),
            frame_id: MAP_FRAME.into(),
        },
        height: 1,
        width,
        fields: vec![
            field("x", 0),
            field("y", 4),
            field("z", 8),
            field("intensity", 12),
        ],
        is_bigendian: false,
        point_step: 16,
        row_step: width.saturating_mul(16),
        data,
        is_dense: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convoy_world::export::lanelet2::Way;

    #[test]
    fn each_line_string_is_one_strip_in_map_and_stop_signs_are_left_out() {
        let map = LaneletMap {
            points: vec![
                [0.0, 0.0, 0.0],
                [10.0, 0.0, 0.1],
                [20.0, 0.0, 0.2],
                [5.0, 2.0, 0.0],
            ],
            ways: vec![
                Way {
                    nodes: vec![0, 1, 2],
                    kind: BoundKind::Line {
                        thick: false,
                        subtype: "dashed",
                    },
                },
                Way {
                    nodes: vec![3],
                    kind: BoundKind::StopSign,
                },
                Way {
                    nodes: vec![2, 1],
                    kind: BoundKind::RoadBorder,
                },
            ],
            ..LaneletMap::default()
        };
        let array = lane_markers(&map);
        assert_eq!(array.markers.len(), 2);
        let (a, b) = (&array.markers[0], &array.markers[1]);
        assert_eq!((a.ns.as_str(), a.id), ("line_thin/dashed", 0));
        assert_eq!((b.ns.as_str(), b.id), ("road_border", 2));
        for m in [a, b] {
            assert_eq!(m.header.frame_id, "map");
            assert_eq!(m.kind, ros::Marker::LINE_STRIP);
            assert!(m.scale.x > 0.0 && m.color.a > 0.0);
            assert_eq!(m.pose.orientation.w, 1.0);
        }
        assert_eq!(a.points.len(), 3);
        assert_eq!((a.points[2].x, a.points[2].z), (20.0, 0.2));
        assert_eq!(b.points[0].x, 20.0);
        assert_eq!(lane_namespace(BoundKind::CrosswalkSide), "crosswalk");
        assert_eq!(lane_namespace(BoundKind::Curbstone), "curbstone/high");
    }

    #[test]
    fn the_cloud_has_the_pcd_s_fields_and_bytes() {
        let points = [
            CloudPoint {
                xyz: [1.0, -2.0, 0.5],
                intensity: 0.9,
            },
            CloudPoint {
                xyz: [3.0, 4.0, 0.0],
                intensity: 0.12,
            },
        ];
        let cloud = map_cloud(&points);
        assert_eq!((cloud.width, cloud.height, cloud.row_step), (2, 1, 32));
        let names: Vec<_> = cloud.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["x", "y", "z", "intensity"]);
        assert!(cloud
            .fields
            .iter()
            .all(|f| f.datatype == ros::PointField::FLOAT32));
        assert_eq!(cloud.header.frame_id, "map");
        // The PCD body is the same bytes: x y z intensity float32, little-endian.
        let pcd = convoy_world::export::cloud::to_pcd(&points);
        assert!(
            pcd.ends_with(&cloud.data),
            "cloud bytes differ from the PCD's"
        );
    }
}
