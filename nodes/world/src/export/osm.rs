//! A [`LaneletMap`] as Autoware's Lanelet2 OSM file: points with latitude, longitude and the
//! `local_x`/`local_y`/`ele` tags, line strings with their type, lanelets with their tags, and
//! the stop lines' regulatory elements.

use std::fmt::Write as _;

use super::geo::Projector;
use super::lanelet2::{LaneletKind, LaneletMap};

impl LaneletMap {
    /// The map as Autoware's Lanelet2 OSM file; `projector` gives every point's latitude and
    /// longitude (the `local_x`/`local_y`/`ele` tags carry the map frame).
    pub fn to_osm(&self, projector: &Projector) -> String {
        let mut used = vec![false; self.points.len()];
        for way in &self.ways {
            for &n in &way.nodes {
                used[n] = true;
            }
        }
        let mut out = String::with_capacity(self.points.len() * 200);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str("<osm version=\"0.6\" generator=\"convoy map export\">\n");
        // Ids: points 1.., then ways, then lanelets and regulatory elements.
        let way_id = |w: usize| self.points.len() + 1 + w;
        let mut next_relation = self.points.len() + self.ways.len() + 1;
        for (i, p) in self.points.iter().enumerate() {
            if !used[i] {
                continue;
            }
            let (lat, lon) = projector.to_geo(p[0], p[1]);
            let _ = writeln!(
                out,
                "  <node id=\"{}\" lat=\"{lat:.11}\" lon=\"{lon:.11}\">\n    <tag k=\"local_x\" \
                 v=\"{:.4}\"/>\n    <tag k=\"local_y\" v=\"{:.4}\"/>\n    <tag k=\"ele\" \
                 v=\"{:.4}\"/>\n  </node>",
                i + 1,
                p[0],
                p[1],
                p[2]
            );
        }
        for (w, way) in self.ways.iter().enumerate() {
            let _ = writeln!(out, "  <way id=\"{}\">", way_id(w));
            let mut last = None;
            for &n in &way.nodes {
                // Welding can make two neighbours one point; a line string repeats none.
                if last != Some(n) {
                    let _ = writeln!(out, "    <nd ref=\"{}\"/>", n + 1);
                }
                last = Some(n);
            }
            let (kind, subtype) = way.kind.tags();
            let _ = writeln!(out, "    <tag k=\"type\" v=\"{kind}\"/>");
            if let Some(subtype) = subtype {
                let _ = writeln!(out, "    <tag k=\"subtype\" v=\"{subtype}\"/>");
            }
            out.push_str("  </way>\n");
        }
        for lanelet in &self.lanelets {
            let id = next_relation;
            next_relation += 1;
            let mut elements = Vec::new();
            for (stop, sign) in &lanelet.stops {
                let re = next_relation;
                next_relation += 1;
                elements.push(re);
                let _ = writeln!(
                    out,
                    "  <relation id=\"{re}\">\n    <member type=\"way\" ref=\"{}\" \
                     role=\"refers\"/>\n    <member type=\"way\" ref=\"{}\" role=\"ref_line\"/>\n    \
                     <tag k=\"type\" v=\"regulatory_element\"/>\n    <tag k=\"subtype\" \
                     v=\"traffic_sign\"/>\n  </relation>",
                    way_id(*sign),
                    way_id(*stop)
                );
            }
            let _ = writeln!(
                out,
                "  <relation id=\"{id}\">\n    <member type=\"way\" ref=\"{}\" role=\"left\"/>\n    \
                 <member type=\"way\" ref=\"{}\" role=\"right\"/>",
                way_id(lanelet.left),
                way_id(lanelet.right)
            );
            for re in elements {
                let _ = writeln!(
                    out,
                    "    <member type=\"relation\" ref=\"{re}\" role=\"regulatory_element\"/>"
                );
            }
            let tag = |out: &mut String, k: &str, v: &str| {
                let _ = writeln!(out, "    <tag k=\"{k}\" v=\"{}\"/>", escape(v));
            };
            tag(&mut out, "type", "lanelet");
            match lanelet.kind {
                LaneletKind::Road => {
                    tag(&mut out, "subtype", "road");
                    tag(&mut out, "location", "urban");
                    tag(&mut out, "participant:vehicle", "yes");
                }
                LaneletKind::Crosswalk => {
                    tag(&mut out, "subtype", "crosswalk");
                    tag(&mut out, "location", "urban");
                    tag(&mut out, "participant:pedestrian", "yes");
                }
            }
            tag(
                &mut out,
                "one_way",
                if lanelet.bidirectional { "no" } else { "yes" },
            );
            if let Some(turn) = lanelet.turn {
                tag(&mut out, "turn_direction", turn);
            }
            if let Some(limit) = lanelet.speed_limit_kmh {
                tag(&mut out, "speed_limit", &format!("{limit}"));
            }
            if let Some(origin) = &lanelet.origin {
                tag(&mut out, "convoy:road", &origin.road);
                tag(&mut out, "convoy:section", &origin.section.to_string());
                tag(&mut out, "convoy:lane", &origin.lane.to_string());
            }
            out.push_str("  </relation>\n");
        }
        out.push_str("</osm>\n");
        out
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
