//! Lane queries for cars that drive the map: where a lane start puts a car, the lane centre
//! ahead of a car in its direction of travel, and which lanes follow a lane (through lane
//! sections and junctions).
//!
//! Positions along a lane are measured in the lane's direction of travel ([`LanePos::s`] is 0
//! where traffic enters the lane), whatever the direction of its OpenDRIVE reference line: a
//! left lane in right-hand traffic runs against its road's `s`, and a controller should not
//! have to care.

use xodr::{Direction, LaneId, LanePosition, Point};

use crate::roads::RoadMap;
use crate::WorldError;

/// A place on a lane, `s` metres from where traffic enters it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LanePos {
    pub lane: LaneId,
    pub s: f64,
}

/// A point on a lane centre and the direction of travel there (radians, 0 = +x, CCW).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CentrePose {
    pub position: [f64; 3],
    pub yaw: f64,
}

/// Where a lane start (`start = { road, lane, s }`) puts a car.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaneStart {
    pub at: LanePos,
    pub pose: CentrePose,
}

fn point(p: Point) -> [f64; 3] {
    [f64::from(p.x), f64::from(p.y), f64::from(p.z)]
}

impl RoadMap {
    /// The lane `lane` of road `road` at the road's `s` (OpenDRIVE's reference-line `s`).
    pub fn lane_start(&self, road: &str, lane: i32, s: f64) -> Result<LaneStart, WorldError> {
        let bad = |message: String| WorldError::Start {
            file: self.file.clone(),
            message,
        };
        let road_ref = self
            .net
            .road_by_od_id(road)
            .ok_or_else(|| bad(format!("no road '{road}' in the map")))?;
        if !(s.is_finite() && s >= 0.0 && s <= road_ref.length()) {
            return Err(bad(format!(
                "s = {s} is off road '{road}' (its length is {:.2} m)",
                road_ref.length()
            )));
        }
        let sections = self
            .by_od_lane
            .get(&(road.to_string(), lane))
            .ok_or_else(|| {
                let mut ids: Vec<i32> = self
                    .by_od_lane
                    .keys()
                    .filter(|(r, _)| r == road)
                    .map(|(_, l)| *l)
                    .collect();
                ids.sort_unstable();
                bad(format!(
                    "road '{road}' has no lane {lane} (its lanes: {ids:?})"
                ))
            })?;
        for &id in sections {
            let Some(on_centre) = self.net.lane_point(LanePosition {
                lane: id,
                s,
                offset: 0.0,
            }) else {
                continue;
            };
            let Some(l) = self.net.lane(id) else { continue };
            if !l.kind.is_drivable() {
                return Err(bad(format!(
                    "lane {lane} of road '{road}' is a {} lane, not one a car drives on",
                    l.kind.as_str()
                )));
            }
            let at = LanePos {
                lane: id,
                s: self.travel_s(id, f64::from(l.center.project(on_centre).s)),
            };
            return Ok(LaneStart {
                at,
                pose: self.centre(at),
            });
        }
        Err(bad(format!(
            "road '{road}' has no lane {lane} at s = {s} (the lane exists in another lane section)"
        )))
    }

    /// Length of a lane's centre line, metres (0 for an unknown lane).
    pub fn lane_length(&self, lane: LaneId) -> f64 {
        self.net
            .lane(lane)
            .map_or(0.0, |l| f64::from(l.center.length()))
    }

    /// Converts `s` along a lane's stored centre line into `s` in its direction of travel, and
    /// back (the map is its own inverse).
    fn travel_s(&self, lane: LaneId, s: f64) -> f64 {
        match self.net.lane(lane) {
            Some(l) if l.direction == Direction::Backward => f64::from(l.center.length()) - s,
            _ => s,
        }
    }

    /// The lane centre at `at`, facing the direction of travel. `s` is clamped to the lane.
    pub fn centre(&self, at: LanePos) -> CentrePose {
        let Some(l) = self.net.lane(at.lane) else {
            return CentrePose {
                position: [0.0; 3],
                yaw: 0.0,
            };
        };
        let pose = l.center.pose_at(self.travel_s(at.lane, at.s) as f32);
        let (mut hx, mut hy) = (f64::from(pose.heading.x), f64::from(pose.heading.y));
        if l.direction == Direction::Backward {
            (hx, hy) = (-hx, -hy);
        }
        CentrePose {
            position: point(pose.position),
            // libm, not the host's C library: controllers steer by this on every host alike.
            yaw: libm::atan2(hy, hx),
        }
    }

    /// Where `position` projects onto a lane: `s` in the direction of travel and the signed
    /// distance to the left of the centre (negative: right of it), in the ground plane.
    pub fn project(&self, lane: LaneId, position: [f64; 3]) -> Option<(f64, f64)> {
        let l = self.net.lane(lane)?;
        let p = Point::new(position[0] as f32, position[1] as f32, position[2] as f32);
        let projection = l.center.project(p);
        if !projection.s.is_finite() {
            return None;
        }
        let offset = f64::from(projection.offset);
        let offset = if l.direction == Direction::Backward {
            -offset
        } else {
            offset
        };
        Some((self.travel_s(lane, f64::from(projection.s)), offset))
    }

    /// The drivable lanes a car can enter from the end of `lane`, sorted by id (a stable order
    /// for the seeded choice of turns).
    pub fn next_lanes(&self, lane: LaneId) -> Vec<LaneId> {
        let mut next: Vec<LaneId> = self
            .net
            .successors(lane)
            .filter(|l| l.kind.is_drivable() && l.direction != Direction::Both)
            .map(|l| l.id)
            .collect();
        next.sort_by_key(|l| l.0);
        next.dedup();
        next
    }

    /// How far a car at `position` heading `yaw` is from the centre of the nearest drivable
    /// lane that runs its way (travel direction within 60 degrees of `yaw`), in the ground
    /// plane: the measure of a car keeping its lane. `None` when no such lane is within 10 m.
    pub fn lane_deviation(&self, position: [f64; 3], yaw: f64) -> Option<f64> {
        self.lane_along(position, yaw).map(|(_, offset)| offset)
    }

    /// The drivable lane running the way of `yaw` (within 60 degrees) whose centre is nearest
    /// `position`, and the distance to that centre; `None` when none is within 10 m.
    pub fn lane_along(&self, position: [f64; 3], yaw: f64) -> Option<(LaneId, f64)> {
        const REACH: f64 = 10.0;
        let [x, y, _] = position;
        let mut best: Option<(LaneId, f64)> = None;
        for (lane, [x0, y0, x1, y1]) in &self.driving_boxes {
            if x < x0 - REACH || x > x1 + REACH || y < y0 - REACH || y > y1 + REACH {
                continue;
            }
            let Some((s, offset)) = self.project(*lane, position) else {
                continue;
            };
            let length = self.lane_length(*lane);
            // Off either end, the projection is onto an end point: another lane covers it.
            if s < -0.5 || s > length + 0.5 {
                continue;
            }
            let along = self.centre(LanePos { lane: *lane, s }).yaw;
            let turn = (yaw - along).sin().atan2((yaw - along).cos()).abs();
            if turn > std::f64::consts::FRAC_PI_3 || offset.abs() > REACH {
                continue;
            }
            if best.is_none_or(|(_, b)| offset.abs() < b) {
                best = Some((*lane, offset.abs()));
            }
        }
        best
    }

    /// The OpenDRIVE road id and lane id of a baked lane.
    pub fn od_lane(&self, lane: LaneId) -> Option<(&str, i32)> {
        let at = self.net.road_lane(lane)?;
        Some((self.net.road(at.road)?.od_id(), at.od_id))
    }

    /// Every drivable lane with its OpenDRIVE identity and centre points (the input of the
    /// independent geometry check, tests/interop/xodr_centres.py).
    pub fn driving_lane_centres(&self) -> Vec<LaneCentre> {
        self.net
            .lanes()
            .iter()
            .filter(|l| l.kind.is_drivable())
            .filter_map(|l| {
                let at = self.net.road_lane(l.id)?;
                Some(LaneCentre {
                    road: self.net.road(at.road)?.od_id().to_string(),
                    section: at.section,
                    lane: at.od_id,
                    kind: l.kind.as_str().to_string(),
                    points: l.center.points().iter().map(|p| point(*p)).collect(),
                })
            })
            .collect()
    }
}

/// One lane's centre line with its OpenDRIVE identity.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LaneCentre {
    pub road: String,
    pub section: usize,
    pub lane: i32,
    #[serde(rename = "type")]
    pub kind: String,
    pub points: Vec<[f64; 3]>,
}

/// The area a junction covers, as a circle around its lanes (what `lane_follow` cars use to
/// take turns through it).
#[derive(Debug, Clone, PartialEq)]
pub struct JunctionZone {
    pub id: String,
    pub centre: [f64; 2],
    pub radius: f64,
}

impl RoadMap {
    /// One zone per junction, sorted by id.
    pub fn junction_zones(&self) -> Vec<JunctionZone> {
        let mut points: std::collections::BTreeMap<&str, Vec<[f64; 2]>> = Default::default();
        for lane in self.net.lanes() {
            if !lane.kind.is_drivable() {
                continue;
            }
            let Some(junction) = self
                .net
                .road_lane(lane.id)
                .and_then(|at| self.net.road(at.road))
                .and_then(|r| r.junction())
            else {
                continue;
            };
            points.entry(junction).or_default().extend(
                lane.center
                    .points()
                    .iter()
                    .map(|p| [f64::from(p.x), f64::from(p.y)]),
            );
        }
        points
            .into_iter()
            .filter(|(_, p)| !p.is_empty())
            .map(|(id, p)| {
                let n = p.len() as f64;
                let centre = [
                    p.iter().map(|q| q[0]).sum::<f64>() / n,
                    p.iter().map(|q| q[1]).sum::<f64>() / n,
                ];
                let radius = p
                    .iter()
                    .map(|q| (q[0] - centre[0]).hypot(q[1] - centre[1]))
                    .fold(0.0, f64::max);
                JunctionZone {
                    id: id.to_string(),
                    centre,
                    radius,
                }
            })
            .collect()
    }

    /// The junction a lane runs through, if any.
    pub fn junction_of(&self, lane: LaneId) -> Option<&str> {
        self.net
            .road_lane(lane)
            .and_then(|at| self.net.road(at.road))
            .and_then(|r| r.junction())
    }
}
