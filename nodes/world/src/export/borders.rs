//! Lane borders of an OpenDRIVE lane section as Lanelet2 bounds: where each border runs (from
//! the lanes either side of it, banked), and what is painted on it (the road mark covering most
//! of it types the bound).

use std::collections::{BTreeMap, HashMap};

use xodr::{Lane, LaneId, RoadMarkType, RoadNetwork};

use super::lanelet2::BoundKind;

pub(super) fn point(p: xodr::Point) -> [f64; 3] {
    [f64::from(p.x), f64::from(p.y), f64::from(p.z)]
}

pub(super) fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// One side of a lane: `plus` is the side its reference line's +t points to.
fn lane_edge(lane: &Lane, plus: bool) -> Vec<[f64; 3]> {
    let sign = if plus { 1.0 } else { -1.0 };
    let points = lane.center.points();
    let tangents = lane.center.tangents();
    points
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let t = tangents.get(i).copied().unwrap_or_default();
            let (tx, ty) = (f64::from(t.x), f64::from(t.y));
            let norm = tx.hypot(ty).max(1e-9);
            let (nx, ny) = (-ty / norm, tx / norm);
            let width = f64::from(lane.widths.get(i).copied().unwrap_or(lane.width));
            let bank = f64::from(lane.bank.get(i).copied().unwrap_or(0.0));
            let half = 0.5 * width;
            let across = sign * half * bank.cos();
            [
                f64::from(c.x) + nx * across,
                f64::from(c.y) + ny * across,
                f64::from(c.z) + sign * half * bank.sin(),
            ]
        })
        .collect()
}

/// The lanes of one lane section by OpenDRIVE lane id.
pub(super) type SectionLanes<'a> = BTreeMap<i32, &'a Lane>;

/// A border of a section: 0 is the centre lane's, k < 0 the outer border of lane k, k > 0 the
/// outer border of lane k.
pub(super) fn border_points(lanes: &SectionLanes, k: i32) -> Option<Vec<[f64; 3]>> {
    match k.cmp(&0) {
        std::cmp::Ordering::Less => lanes.get(&k).map(|l| lane_edge(l, false)),
        std::cmp::Ordering::Greater => lanes.get(&k).map(|l| lane_edge(l, true)),
        std::cmp::Ordering::Equal => lanes
            .get(&-1)
            .map(|l| lane_edge(l, true))
            .or_else(|| lanes.get(&1).map(|l| lane_edge(l, false))),
    }
}

/// The lanes either side of border `k`: (+t side, -t side).
pub(super) fn border_neighbours(k: i32) -> (i32, i32) {
    match k.cmp(&0) {
        std::cmp::Ordering::Less => (k, k - 1),
        std::cmp::Ordering::Greater => (k + 1, k),
        std::cmp::Ordering::Equal => (1, -1),
    }
}

/// Road marks along a border: (kind, bold, metres of road covered).
pub(super) type BorderMarks = Vec<(RoadMarkType, bool, f64)>;

/// The road-mark kinds along each border, by the pair of lanes either side.
pub(super) fn mark_kinds(
    net: &RoadNetwork,
) -> HashMap<(Option<LaneId>, Option<LaneId>), BorderMarks> {
    let mut kinds: HashMap<_, Vec<_>> = HashMap::new();
    for mark in net.road_marks() {
        // How much road a mark covers: its painted length, stretched back over the gaps.
        let mut covered = 0.0;
        for line in &mark.lines {
            let stretch = match line.pattern {
                xodr::LinePattern::Dashed { length, space } if length > 0.0 => {
                    f64::from((length + space) / length)
                }
                _ => 1.0,
            };
            for piece in &line.pieces {
                covered += distance(point(piece[0]), point(piece[1])) * stretch;
            }
        }
        let bold = matches!(mark.weight, xodr::RoadMarkWeight::Bold);
        kinds.entry((mark.left, mark.right)).or_default().push((
            mark.kind,
            bold,
            covered.max(1e-3),
        ));
    }
    kinds
}

/// The kind of the mark covering most of a border, if any mark is painted there.
pub(super) fn bound_kind(marks: &[(RoadMarkType, bool, f64)]) -> Option<BoundKind> {
    let mut length: BTreeMap<(u8, bool), f64> = BTreeMap::new();
    for (kind, bold, covered) in marks {
        let code = match kind {
            RoadMarkType::None => continue,
            RoadMarkType::Solid => 0,
            RoadMarkType::Broken | RoadMarkType::BottsDots => 1,
            RoadMarkType::SolidSolid => 2,
            RoadMarkType::SolidBroken => 3,
            RoadMarkType::BrokenSolid => 4,
            RoadMarkType::BrokenBroken => 5,
            RoadMarkType::Curb => 6,
            RoadMarkType::Edge | RoadMarkType::Grass => 7,
            _ => 0,
        };
        *length.entry((code, *bold)).or_default() += covered;
    }
    let ((code, thick), _) = length.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let line = |subtype| BoundKind::Line { thick, subtype };
    Some(match code {
        0 => line("solid"),
        1 => line("dashed"),
        2 => line("solid_solid"),
        3 => line("solid_dashed"),
        4 => line("dashed_solid"),
        5 => line("dashed"),
        6 => BoundKind::Curbstone,
        _ => BoundKind::RoadBorder,
    })
}
