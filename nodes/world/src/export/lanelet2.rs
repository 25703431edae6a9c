//! The road network as a Lanelet2 map in Autoware's flavour: one lanelet per driving lane and
//! lane section, bounds typed from the road marks, lanelets that follow each other sharing the
//! points where they meet (what Lanelet2's routing graph reads as "follows"), `turn_direction`
//! on lanelets inside junctions, speed limits where the file gives them, crosswalks from
//! crosswalk objects and stop lines from stop-line signals (StVO 294).
//!
//! Borders are shared: two lanes side by side in one section have one line string between
//! them, however they run (Lanelet2 turns a bound around when it loads a lanelet whose bounds
//! point different ways), so a lane change is a shared bound, as Lanelet2 expects. Every point
//! is in the world frame; [`LaneletMap::to_osm`] adds latitude and longitude from a projector.

use std::collections::{BTreeMap, HashMap};

use xodr::{Direction, Lane, LaneId, ObjectType, RoadNetwork, Shape, SpeedLimit};

use super::borders::{
    border_neighbours, border_points, bound_kind, distance, mark_kinds, point, SectionLanes,
};
use crate::roads::RoadMap;

/// Endpoints of lanelets that follow each other are merged when they lie this close (a map
/// whose linked lanes are further apart gets a warning naming them instead).
const WELD: f64 = 0.5;

/// A driving lane narrower than this (m) anywhere is left out (with a warning): Lanelet2 cannot
/// hold a lanelet whose bounds touch.
const MIN_WIDTH: f64 = 0.1;

/// Joining endpoints further apart than this (m) moves a bound visibly: worth a warning.
const MOVED: f64 = 0.05;

/// A turn inside a junction sweeps more than this (radians) to count as left or right.
const TURN: f64 = 0.5;

/// What a line string stands for, as Autoware's map format types it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundKind {
    /// A painted line: (`line_thin` or `line_thick`, `solid`, `dashed`, `solid_solid`, ...).
    Line { thick: bool, subtype: &'static str },
    /// A kerb.
    Curbstone,
    /// The edge of the road with no paint.
    RoadBorder,
    /// No paint between two driving lanes (inside junctions, say): passable.
    Virtual,
    /// A stop line.
    StopLine,
    /// The sign a stop line belongs to (a point-like line string where the signal stands).
    StopSign,
    /// A crosswalk's side.
    CrosswalkSide,
}

impl BoundKind {
    /// `(type, subtype)` tags.
    pub fn tags(self) -> (&'static str, Option<&'static str>) {
        match self {
            BoundKind::Line { thick, subtype } => (
                if thick { "line_thick" } else { "line_thin" },
                Some(subtype),
            ),
            BoundKind::Curbstone => ("curbstone", Some("high")),
            BoundKind::RoadBorder => ("road_border", None),
            BoundKind::Virtual => ("virtual", None),
            BoundKind::StopLine => ("stop_line", None),
            BoundKind::StopSign => ("traffic_sign", Some("stop_sign")),
            BoundKind::CrosswalkSide => ("virtual", None),
        }
    }
}

/// A line string: indices into [`LaneletMap::points`].
#[derive(Debug, Clone, PartialEq)]
pub struct Way {
    pub nodes: Vec<usize>,
    pub kind: BoundKind,
}

/// What a lanelet is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneletKind {
    Road,
    Crosswalk,
}

/// Where a lanelet came from, in the OpenDRIVE file's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneOrigin {
    pub road: String,
    pub section: usize,
    pub lane: i32,
    pub id: LaneId,
}

/// One lanelet: left and right bound in its direction of travel.
#[derive(Debug, Clone, PartialEq)]
pub struct Lanelet {
    pub left: usize,
    pub right: usize,
    /// Travel runs the way both bounds' points are written (else against them).
    pub along: bool,
    pub kind: LaneletKind,
    /// `straight`, `left` or `right`, for a lanelet in a junction.
    pub turn: Option<&'static str>,
    pub speed_limit_kmh: Option<f64>,
    /// Travel runs both ways (an OpenDRIVE lane with direction "both").
    pub bidirectional: bool,
    pub origin: Option<LaneOrigin>,
    /// Stop lines on this lanelet: (stop line way, sign way).
    pub stops: Vec<(usize, usize)>,
}

/// A Lanelet2 map: points, line strings and lanelets, plus what could not be expressed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaneletMap {
    pub points: Vec<[f64; 3]>,
    pub ways: Vec<Way>,
    pub lanelets: Vec<Lanelet>,
    /// Each names the road and lane (or object) it is about.
    pub warnings: Vec<String>,
}

/// Points merged by union-find (endpoints of lanelets that follow each other).
struct Welds {
    parent: Vec<usize>,
}

impl Welds {
    fn root(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }
    fn join(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.root(a), self.root(b));
        // The smaller index stays the root, so the result does not depend on the order.
        let (keep, drop) = (ra.min(rb), ra.max(rb));
        self.parent[drop] = keep;
    }
}

/// Lanelet bookkeeping while building: its lane and which ends of which ways it starts and
/// ends at.
struct Pending {
    lane: LaneId,
    /// (left way, right way), each with whether travel runs along the way (true) or against.
    left: (usize, bool),
    right: (usize, bool),
}

impl LaneletMap {
    /// The Lanelet2 map of a road network.
    pub fn build(roads: &RoadMap) -> LaneletMap {
        let net = roads.network();
        let mut map = LaneletMap::default();
        let mut sections: BTreeMap<(String, usize), SectionLanes> = BTreeMap::new();
        let mut road_of: HashMap<LaneId, (String, usize, i32)> = HashMap::new();
        for lane in net.lanes() {
            let Some(at) = net.road_lane(lane.id) else {
                continue;
            };
            let Some(road) = net.road(at.road) else {
                continue;
            };
            let road_id = road.od_id().to_string();
            road_of.insert(lane.id, (road_id.clone(), at.section, at.od_id));
            sections
                .entry((road_id, at.section))
                .or_default()
                .insert(at.od_id, lane);
        }
        let marks = mark_kinds(net);
        let mut border_ways: HashMap<(String, usize, i32), usize> = HashMap::new();
        let mut pending: Vec<Pending> = Vec::new();
        for ((road, section), lanes) in &sections {
            for (&od, lane) in lanes {
                if !lane.kind.is_drivable() {
                    continue;
                }
                if lane.center.points().len() < 2 {
                    map.warnings.push(format!(
                        "road '{road}' lane {od} (section {section}): fewer than two centre \
                         points, left out"
                    ));
                    continue;
                }
                let narrowest = lane.widths.iter().copied().fold(lane.width, f32::min);
                if f64::from(narrowest) < MIN_WIDTH {
                    map.warnings.push(format!(
                        "road '{road}' lane {od} (section {section}): narrows to {narrowest:.2} m \
                         (a lane whose bounds touch, such as a row of parking bays, is not a \
                         Lanelet2 lanelet), left out"
                    ));
                    continue;
                }
                // The borders on the lane's +t and -t sides.
                let (plus_k, minus_k) = if od < 0 { (od + 1, od) } else { (od, od - 1) };
                let mut way_of = |k: i32, map: &mut LaneletMap| -> Option<usize> {
                    if let Some(&w) = border_ways.get(&(road.clone(), *section, k)) {
                        return Some(w);
                    }
                    let points = border_points(lanes, k)?;
                    let (plus_lane, minus_lane) = border_neighbours(k);
                    let plus = lanes.get(&plus_lane).map(|l| l.id);
                    let minus = lanes.get(&minus_lane).map(|l| l.id);
                    let painted = marks
                        .get(&(plus, minus))
                        .or_else(|| marks.get(&(minus, plus)))
                        .and_then(|m| bound_kind(m));
                    let both_drive = [plus, minus].iter().all(|l| {
                        l.and_then(|id| net.lane(id))
                            .is_some_and(|l| l.kind.is_drivable())
                    });
                    let kind = painted.unwrap_or(if both_drive {
                        BoundKind::Virtual
                    } else {
                        BoundKind::RoadBorder
                    });
                    let first = map.points.len();
                    map.points.extend(points);
                    let w = map.ways.len();
                    map.ways.push(Way {
                        nodes: (first..map.points.len()).collect(),
                        kind,
                    });
                    border_ways.insert((road.clone(), *section, k), w);
                    Some(w)
                };
                let (Some(plus_way), Some(minus_way)) =
                    (way_of(plus_k, &mut map), way_of(minus_k, &mut map))
                else {
                    continue;
                };
                // Left of travel is +t for travel along the reference line.
                let along = !matches!(lane.direction, Direction::Backward);
                let (left, right) = if along {
                    (plus_way, minus_way)
                } else {
                    (minus_way, plus_way)
                };
                pending.push(Pending {
                    lane: lane.id,
                    left: (left, along),
                    right: (right, along),
                });
                let turn = net
                    .road_lane(lane.id)
                    .and_then(|at| net.road(at.road))
                    .and_then(|r| r.junction())
                    .map(|_| turn_of(lane, along));
                let length = lane.center.length();
                let speed_limit_kmh = match net.speed_limit_at(lane.id, 0.5 * length) {
                    Some(SpeedLimit::Max(v)) => Some((f64::from(v) * 3.6 * 10.0).round() / 10.0),
                    _ => None,
                };
                map.lanelets.push(Lanelet {
                    left,
                    right,
                    along,
                    kind: LaneletKind::Road,
                    turn,
                    speed_limit_kmh,
                    bidirectional: matches!(lane.direction, Direction::Both),
                    origin: Some(LaneOrigin {
                        road: road.clone(),
                        section: *section,
                        lane: od,
                        id: lane.id,
                    }),
                    stops: Vec::new(),
                });
            }
        }
        map.weld(net, &pending, &road_of);
        map.add_crosswalks(net);
        map.add_stop_lines(net);
        map
    }

    /// Merges the meeting points of lanelets that follow each other, so Lanelet2 sees them as
    /// connected.
    fn weld(
        &mut self,
        net: &RoadNetwork,
        pending: &[Pending],
        road_of: &HashMap<LaneId, (String, usize, i32)>,
    ) {
        let by_lane: HashMap<LaneId, &Pending> = pending.iter().map(|p| (p.lane, p)).collect();
        let end = |ways: &[Way], (w, along): (usize, bool), last: bool| -> usize {
            let nodes = &ways[w].nodes;
            if along == last {
                nodes[nodes.len() - 1]
            } else {
                nodes[0]
            }
        };
        let mut welds = Welds {
            parent: (0..self.points.len()).collect(),
        };
        let name = |lane: LaneId| {
            road_of
                .get(&lane)
                .map(|(r, s, l)| format!("road '{r}' lane {l} (section {s})"))
                .unwrap_or_else(|| format!("lane {}", lane.0))
        };
        for a in pending {
            let Some(lane) = net.lane(a.lane) else {
                continue;
            };
            for next in &lane.successors {
                let Some(b) = by_lane.get(next) else {
                    continue;
                };
                for (from, to) in [(a.left, b.left), (a.right, b.right)] {
                    if from.0 == to.0 {
                        continue;
                    }
                    let (p, q) = (end(&self.ways, from, true), end(&self.ways, to, false));
                    let gap = distance(self.points[p], self.points[q]);
                    if gap <= WELD {
                        welds.join(p, q);
                    }
                    if gap > MOVED && gap <= WELD {
                        self.warnings.push(format!(
                            "{} ends {gap:.2} m from where its successor {} starts (a step in \
                             the map): the successor's bound starts where this one ends",
                            name(a.lane),
                            name(*next)
                        ));
                    } else if gap > WELD {
                        self.warnings.push(format!(
                            "{} ends {:.2} m from where its successor {} starts: not linked",
                            name(a.lane),
                            distance(self.points[p], self.points[q]),
                            name(*next)
                        ));
                    }
                }
            }
        }
        for way in &mut self.ways {
            for n in way.nodes.iter_mut() {
                *n = welds.root(*n);
            }
        }
        self.warnings.sort();
        self.warnings.dedup();
    }

    /// Four-cornered crosswalk objects as crosswalk lanelets (their long sides as bounds).
    fn add_crosswalks(&mut self, net: &RoadNetwork) {
        for object in net.objects() {
            if object.kind != ObjectType::Crosswalk {
                continue;
            }
            let corners: Vec<[f64; 3]> = match &object.shape {
                Shape::Outline { corners, .. } => corners.iter().map(|c| point(c.base)).collect(),
                _ => Vec::new(),
            };
            if corners.len() != 4 {
                self.warnings.push(format!(
                    "crosswalk object '{}' ({}): only four-cornered outlines are exported, it \
                     has {} corners",
                    object.name,
                    object.id.0,
                    corners.len()
                ));
                continue;
            }
            // The two longer opposite sides are the bounds a pedestrian walks between.
            let side = |i: usize| distance(corners[i], corners[(i + 1) % 4]);
            let start = if side(0) + side(2) >= side(1) + side(3) {
                0
            } else {
                1
            };
            let a = [corners[start], corners[(start + 1) % 4]];
            let b = [corners[(start + 3) % 4], corners[(start + 2) % 4]];
            let left = self.push_way(&a, BoundKind::CrosswalkSide);
            let right = self.push_way(&b, BoundKind::CrosswalkSide);
            self.lanelets.push(Lanelet {
                left,
                right,
                along: true,
                kind: LaneletKind::Crosswalk,
                turn: None,
                speed_limit_kmh: None,
                bidirectional: true,
                origin: None,
                stops: Vec::new(),
            });
        }
    }

    /// Stop-line signals (type 294): a line across each lane they apply to, tied to the lane's
    /// lanelet by a stop-sign regulatory element.
    fn add_stop_lines(&mut self, net: &RoadNetwork) {
        for signal in net.signals() {
            if signal.kind != "294" {
                continue;
            }
            for (i, lane_id) in signal.lanes.iter().enumerate() {
                let Some(lane) = net.lane(*lane_id) else {
                    continue;
                };
                let Some(lanelet) = self
                    .lanelets
                    .iter()
                    .position(|l| l.origin.as_ref().is_some_and(|o| o.id == *lane_id))
                else {
                    continue;
                };
                let at = signal.applies_at.get(i).copied().unwrap_or(signal.position);
                let projection = lane.center.project(at);
                let pose = lane.center.pose_at(projection.s);
                let (hx, hy) = (f64::from(pose.heading.x), f64::from(pose.heading.y));
                let norm = hx.hypot(hy).max(1e-9);
                let half = 0.5 * f64::from(lane.width_at(projection.s));
                let c = point(pose.position);
                let (nx, ny) = (-hy / norm * half, hx / norm * half);
                let line = [[c[0] + nx, c[1] + ny, c[2]], [c[0] - nx, c[1] - ny, c[2]]];
                let stop = self.push_way(&line, BoundKind::StopLine);
                let p = point(signal.position);
                let sign = self.push_way(&[p, [p[0], p[1], p[2] + 1.0]], BoundKind::StopSign);
                self.lanelets[lanelet].stops.push((stop, sign));
            }
        }
    }

    fn push_way(&mut self, points: &[[f64; 3]], kind: BoundKind) -> usize {
        let first = self.points.len();
        self.points.extend_from_slice(points);
        self.ways.push(Way {
            nodes: (first..self.points.len()).collect(),
            kind,
        });
        self.ways.len() - 1
    }

    /// A lanelet's bound as points in its direction of travel.
    pub fn bound(&self, lanelet: &Lanelet, left: bool) -> Vec<[f64; 3]> {
        let way = if left { lanelet.left } else { lanelet.right };
        let mut points: Vec<[f64; 3]> = self.ways[way]
            .nodes
            .iter()
            .map(|&n| self.points[n])
            .collect();
        if !lanelet.along {
            points.reverse();
        }
        points.dedup();
        points
    }
}

/// `straight`, `left` or `right`: how far a junction lane turns from its entry to its exit.
fn turn_of(lane: &Lane, along: bool) -> &'static str {
    let tangents = lane.center.tangents();
    let (Some(first), Some(last)) = (tangents.first(), tangents.last()) else {
        return "straight";
    };
    let yaw = |t: &xodr::Vector| f64::from(t.y).atan2(f64::from(t.x));
    let mut sweep = yaw(last) - yaw(first);
    if !along {
        // Against the reference line the same curve turns the other way.
        sweep = -sweep;
    }
    let sweep =
        (sweep + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU) - std::f64::consts::PI;
    if sweep > TURN {
        "left"
    } else if sweep < -TURN {
        "right"
    } else {
        "straight"
    }
}
