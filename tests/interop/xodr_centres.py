#!/usr/bin/env python3
"""Checks convoy's OpenDRIVE lane centre lines against an independent evaluator.

Why: convoy bakes every OpenDRIVE lane into a centre polyline with the Rust
`xodr` crate, and vehicles, routes and sensors all sit on those lines. A
mistake in how a map's geometry is evaluated (a spiral, a paramPoly3, a
laneOffset, a width polynomial, a section boundary, elevation) would move
lanes quietly. pyxodr (PyPI; Python with numpy/scipy, written apart from the
`xodr` crate) reads the same file a second time; where the two put the lanes
in the same place to within 2 cm, both are very likely right.

convoy writes CENTRES.json:

    {"file": "Town01.xodr",
     "lanes": [{"road": "5", "section": 0, "lane": -1, "type": "driving",
                "points": [[x, y, z], ...]}, ...]}

`road` is the <road id>; `section` the zero-based index of the lane section in
that road as xodr counts them: the permanent layer's <laneSection>s sorted by
s (stably), those under 1 mm long (which bake no lanes) still counted, then a
temporary layer's; `lane` the <lane id>; `points` the baked centre-line
vertices in world metres.

For every lane of --types this checks:

  * xy: the horizontal distance from each convoy vertex to pyxodr's centre
    line (sampled every --resolution, 1 cm). Must be <= --tolerance.
  * z: the height difference to pyxodr's line at that nearest point. pyxodr
    gives the reference line's <elevation> only, so z is not checked for a
    lane with a <height>, a lane outside a level one, or on a road with a
    lateral <shape>. Must be <= --tolerance.
  * reverse: pyxodr's line every ~10 cm, distance to convoy's polyline. This
    catches a lane cut short, and measures convoy's chords between vertices:
    their sag on curves (xodr spaces vertices up to 2 m and 0.05 rad apart:
    up to ~12.5 mm) and corners cut where a width or laneOffset polynomial
    changes slope between two vertices. Must be <= --tolerance.
  * lane sets: every JSON lane of --types has a pyxodr counterpart, and every
    map lane of --types in a section at least 1 mm long is in the JSON (one
    that pyxodr cannot evaluate either is only noted).

Not checked, and listed as such: lanes on a road with non-zero
<superelevation> (xodr pulls banked lanes in, in plan, by t(1 - cos phi);
pyxodr ignores banking) and on a road with more than one <lanes> layer
(pyxodr reads all layers' sections as one list). With no lane left to check
the run fails.

How pyxodr (0.1.3) is used: Road(road_xml, resolution) samples the reference
line every `resolution` metres and measures s along those samples;
Road.lane_sections is every <lanes>/<laneSection> in document order, none
dropped (one shorter than the resolution gets no samples and pyxodr raises on
its lanes, so a road with short sections gets a finer resolution: a fifth of
its shortest); LaneSection.get_lane_from_id takes the <lane id>;
Lane.centre_line is the mean of the lane's inner and outer borders, laneOffset
applied, as (x, y, z) rows, z the reference line's elevation. A JSON section
index is turned into the <laneSection> element by xodr's rule above, and that
into pyxodr's position for it. A section's samples stop one short of the next
section's start, so each pyxodr section line is carried on straight for two
samples at each end. pyxodr divides by zero on an <arc> of curvature 0 and a
<spiral> with curvStart == curvEnd, so it is given those as a <line> and an
<arc>, the same curves. Its own error at 1 cm is under a millimetre on the
maps tried (it evaluates a width at up to one sample from its true s).

Exit status: 0 all agree; 1 a distance over --tolerance, the lane sets differ,
or nothing could be checked; 2 the input could not be read (missing file, bad
XML or JSON, pyxodr not installed).

Needs pyxodr (scripts/ros-venv.sh installs it into .venv):
    .venv/bin/python tests/interop/xodr_centres.py MAP.xodr CENTRES.json
"""

import argparse
import json
import math
import os
import sys
import time

# pyxodr drops section samples past the next section's start, so its section
# polylines end up to one sample short at each end; vertices there are measured
# against the end segment extended by this many samples.
END_EXTENSION_SAMPLES = 2
# xodr drops lane sections shorter than this (m); they bake no lanes.
MIN_SECTION = 1e-3
# Spacing (m) of the pyxodr points used for the reverse check.
REVERSE_STEP = 0.1


def fail_input(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def norm_type(kind):
    """A lane type name comparable across spellings (onRamp, on-ramp, ON_RAMP)."""
    if kind is None:
        return "none"
    return kind.lower().replace("-", "").replace("_", "")


def load_centres(path):
    try:
        with open(path, "rb") as f:
            doc = json.load(f)
    except OSError as e:
        fail_input(f"cannot read {path}: {e.strerror or e}")
    except (ValueError, UnicodeDecodeError) as e:
        fail_input(f"{path} is not valid JSON: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("lanes"), list):
        fail_input(f'{path}: expected an object with a "lanes" list')
    lanes = []
    for i, lane in enumerate(doc["lanes"]):
        where = f"{path}: lanes[{i}]"
        if not isinstance(lane, dict):
            fail_input(f"{where} is not an object")
        road, section, lane_id = lane.get("road"), lane.get("section"), lane.get("lane")
        kind, points = lane.get("type"), lane.get("points")
        if not isinstance(road, str):
            fail_input(f'{where}: "road" must be a string (the <road id>)')
        if not isinstance(section, int) or isinstance(section, bool) or section < 0:
            fail_input(f'{where}: "section" must be an integer >= 0')
        if not isinstance(lane_id, int) or isinstance(lane_id, bool):
            fail_input(f'{where}: "lane" must be an integer (the <lane id>)')
        if not isinstance(kind, str):
            fail_input(f'{where}: "type" must be a string')
        if not isinstance(points, list) or len(points) < 2:
            fail_input(f'{where}: "points" must be a list of at least 2 [x, y, z]')
        for p in points:
            if (
                not isinstance(p, list)
                or len(p) != 3
                or not all(
                    isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c)
                    for c in p
                )
            ):
                fail_input(f"{where} (road {road} section {section} lane {lane_id}): "
                           f"bad point {p!r}, want [x, y, z] finite numbers")
        lanes.append(
            {"road": road, "section": section, "lane": lane_id, "type": kind, "points": points}
        )
    return doc.get("file"), lanes


def attr_float(elem, name, default=None):
    value = elem.get(name)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        return default


def poly_nonzero(elem):
    return any(attr_float(elem, k, 0.0) != 0.0 for k in "abcd")


class RoadInfo:
    """What this script reads from one <road> itself, beside pyxodr."""

    def __init__(self, road_xml):
        self.xml = road_xml
        self.id = road_xml.get("id")
        self.length = attr_float(road_xml, "length", 0.0)
        lanes_nodes = road_xml.findall("lanes")
        self.layered = len(lanes_nodes) > 1
        # pyxodr's Road.lane_sections: every lanes/laneSection, in document order.
        self.pyxodr_order = road_xml.findall("lanes/laneSection")
        # xodr's section index for each of those (position in pyxodr_order ->
        # (xodr index, start s, end s)), as xodr numbers them: the permanent
        # layer's sections sorted by s (stably; missing or negative s is 0),
        # then the temporary layer's.
        self.sections = {}
        start = lambda i: max(attr_float(self.pyxodr_order[i], "s", 0.0), 0.0)
        parent = [ls.getparent() for ls in self.pyxodr_order]
        is_temp = lambda n: n.get("layer") == "temporary"
        permanent = next((n for n in lanes_nodes if not is_temp(n)), None)
        if permanent is None and lanes_nodes:
            permanent = lanes_nodes[0]
        temporary = next((n for n in lanes_nodes if is_temp(n) and n is not permanent), None)
        base = 0
        for layer in (permanent, temporary):
            if layer is None:
                continue
            members = [i for i, p in enumerate(parent) if p is layer]
            members.sort(key=start)
            for k, i in enumerate(members):
                s0 = start(i)
                s1 = start(members[k + 1]) if k + 1 < len(members) else self.length
                if layer is temporary:
                    own = attr_float(self.pyxodr_order[i], "length")
                    if own is not None and own > 0:
                        s1 = min(s1, s0 + own)
                s1 = min(s1, self.length)
                self.sections[i] = (base + k, s0, s1)
            base += len(members)
        self.by_xodr_index = {v[0]: i for i, v in self.sections.items()}
        self.banked = any(poly_nonzero(e) for e in road_xml.findall("lateralProfile/superelevation"))
        self.shaped = road_xml.find("lateralProfile/shape") is not None

    def z_modelled(self, pos, lane_id):
        """Whether pyxodr's z (the reference line's elevation) is the lane's:
        no bank or lateral shape on the road, no <height> on the lane, and no
        level lane from the centre out to it (xodr stacks a level lane on its
        inner neighbour's height)."""
        if self.banked or self.shaped:
            return False
        side = "left" if lane_id > 0 else "right"
        for lane_xml in self.pyxodr_order[pos].findall(f"{side}/lane"):
            try:
                other = abs(int(lane_xml.get("id")))
            except (TypeError, ValueError):
                continue
            if other > abs(lane_id):
                continue
            if lane_xml.get("level") in ("true", "1"):
                return False
            if other == abs(lane_id) and lane_xml.find("height") is not None:
                return False
        return True

    def shortest_section(self):
        lengths = [s1 - s0 for _, s0, s1 in self.sections.values() if s1 - s0 >= MIN_SECTION]
        return min(lengths) if lengths else None


def pyxodr_safe(road_xml):
    """A copy of <road> that pyxodr 0.1.3 can evaluate, the same curve.

    pyxodr divides by zero on an <arc> of curvature 0 (it takes 1/curvature as
    the radius) and on a <spiral> whose curvStart equals its curvEnd (it takes
    curvStart / (dk/ds) as the start of the unit clothoid); near those values
    it loses precision the same way. Such an arc is a line and such a spiral an
    arc, so they are handed over as what they are. The thresholds keep the
    change under a millimetre on a geometry a kilometre long.
    """
    import copy

    from lxml import etree

    road_xml = copy.deepcopy(road_xml)
    for geometry in road_xml.iterfind("planView/geometry"):
        for child in list(geometry):
            if child.tag == "spiral":
                k0 = attr_float(child, "curvStart", 0.0)
                k1 = attr_float(child, "curvEnd", 0.0)
                if abs(k1 - k0) <= 1e-9:
                    new = etree.Element("arc", curvature=repr((k0 + k1) / 2))
                    new.tail = child.tail
                    geometry.replace(child, new)
                    child = new
            if child.tag == "arc" and abs(attr_float(child, "curvature", 0.0)) <= 1e-10:
                new = etree.Element("line")
                new.tail = child.tail
                geometry.replace(child, new)
    return road_xml


def nearest_on_polyline(poly, points, tree):
    """For each point (xy), the distance to the polyline and the index and
    parameter of the nearest spot on it. `poly` is (M, 3); `tree` a KD-tree
    over poly[:, :2]."""
    import numpy as np

    m = len(poly)
    k = min(8, m)
    _, idx = tree.query(points, k=k)
    idx = np.asarray(idx).reshape(len(points), k)
    # Segments touching each candidate vertex: (i-1, i) and (i, i+1).
    starts = np.concatenate([idx - 1, idx], axis=1).clip(0, m - 2)
    a = poly[starts, :2]
    b = poly[starts + 1, :2]
    ab = b - a
    ap = points[:, None, :] - a
    denom = (ab * ab).sum(axis=2)
    u = np.where(denom > 0, (ap * ab).sum(axis=2) / np.where(denom > 0, denom, 1.0), 0.0)
    u = u.clip(0.0, 1.0)
    closest = a + ab * u[..., None]
    d = np.linalg.norm(points[:, None, :] - closest, axis=2)
    best = d.argmin(axis=1)
    rows = np.arange(len(points))
    return d[rows, best], starts[rows, best], u[rows, best]


def extend_ends(poly, length):
    """The polyline with each end segment carried on straight by `length`."""
    import numpy as np

    def beyond(p, q):  # a point `length` past p, away from q
        v = p - q
        n = np.linalg.norm(v[:2])
        return p + v * (length / n) if n > 0 else p

    if len(poly) < 2:
        return poly
    return np.vstack([beyond(poly[0], poly[1]), poly, beyond(poly[-1], poly[-2])])


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("map", metavar="MAP.xodr", help="the OpenDRIVE file convoy baked")
    parser.add_argument("centres", metavar="CENTRES.json", help="convoy's baked lane centres")
    parser.add_argument("--tolerance", type=float, default=0.02,
                        help="largest allowed distance in metres (default 0.02)")
    parser.add_argument("--types", default="driving",
                        help="comma-separated lane types to check, or 'all' (default driving)")
    parser.add_argument("--resolution", type=float, default=0.01,
                        help="pyxodr's sampling step in metres (default 0.01; its error "
                             "grows about as lane-width slope x resolution)")
    args = parser.parse_args()
    if not (args.tolerance > 0):
        parser.error("--tolerance must be > 0")
    if not (args.resolution > 0):
        parser.error("--resolution must be > 0")
    wanted = None if args.types.strip() == "all" else {
        norm_type(t.strip()) for t in args.types.split(",") if t.strip()
    }
    if wanted is not None and not wanted:
        parser.error("--types is empty")

    def want(kind):
        return wanted is None or norm_type(kind) in wanted

    t0 = time.monotonic()
    try:
        import numpy as np
        from lxml import etree
        from scipy.spatial import cKDTree
        from pyxodr.road_objects.road import Road
    except ImportError as e:
        fail_input(f"{e}; install pyxodr (scripts/ros-venv.sh puts it in .venv)")
    try:
        import importlib.metadata as md
        pyxodr_version = md.version("pyxodr")
    except Exception:
        pyxodr_version = "?"

    file_field, json_lanes = load_centres(args.centres)
    try:
        root = etree.parse(args.map).getroot()
    except OSError as e:
        fail_input(f"cannot read {args.map}: {e}")
    except etree.XMLSyntaxError as e:
        fail_input(f"{args.map} is not well-formed XML: {e}")
    if etree.QName(root).localname != "OpenDRIVE":
        fail_input(f"{args.map}: root element is <{root.tag}>, not <OpenDRIVE>")

    if isinstance(file_field, str) and os.path.basename(file_field) != os.path.basename(args.map):
        print(f"warning: {args.centres} says it was baked from {file_field!r}, "
              f"and this is {os.path.basename(args.map)!r}")

    roads = {}
    for road_xml in root.findall("road"):
        info = RoadInfo(road_xml)
        roads.setdefault(info.id, info)

    problems = []  # lane-set problems, each a line
    notes = []  # worth saying, but not a failure: each a line
    seen = {}
    for lane in json_lanes:
        key = (lane["road"], lane["section"], lane["lane"])
        if key in seen:
            problems.append(f"road {key[0]} section {key[1]} lane {key[2]}: twice in the JSON")
        seen[key] = lane

    pyxodr_roads = {}  # road id -> pyxodr Road or exception
    pyxodr_res = {}

    def pyxodr_road(info):
        if info.id not in pyxodr_roads:
            res = args.resolution
            short = info.shortest_section()
            if short is not None:
                # At least ~5 samples in every section pyxodr must evaluate.
                res = max(min(res, short / 5.0), 1e-4)
            pyxodr_res[info.id] = res
            try:
                road = Road(pyxodr_safe(info.xml), resolution=res)
                road.lane_sections  # noqa: B018 -- evaluate now, to catch errors here
                pyxodr_roads[info.id] = road
            except Exception as e:  # pyxodr raises many kinds on what it cannot read
                pyxodr_roads[info.id] = e
        return pyxodr_roads[info.id]

    def pyxodr_lane(info, xodr_section, lane_id):
        """pyxodr's Lane for (section, lane), or a string saying why none."""
        if info.layered:
            return "road has several <lanes> layers, which pyxodr reads as one"
        pos = info.by_xodr_index.get(xodr_section)
        if pos is None:
            return f"road has no lane section {xodr_section}"
        road = pyxodr_road(info)
        if isinstance(road, Exception):
            return f"pyxodr cannot read the road: {type(road).__name__}: {road}"
        section = road.lane_sections[pos]
        try:
            lane = section.get_lane_from_id(lane_id)
        except KeyError:
            return f"section has no lane {lane_id}"
        try:
            centre = np.asarray(lane.centre_line, dtype=float)
        except Exception as e:
            return f"pyxodr cannot evaluate it: {type(e).__name__}: {e}"
        if len(centre) < 2:
            return f"pyxodr gives {len(centre)} centre point(s)"
        return lane, centre

    def name(key):
        return f"road {key[0]} section {key[1]} lane {key[2]}"

    # Every pyxodr lane of the wanted types, in a section xodr bakes, must be in the JSON.
    for info in roads.values():
        if info.layered:
            continue
        for pos, (xodr_index, s0, s1) in info.sections.items():
            if s1 - s0 < MIN_SECTION:
                continue
            for side in ("left", "right"):
                for lane_xml in info.pyxodr_order[pos].findall(f"{side}/lane"):
                    try:
                        lane_id = int(lane_xml.get("id"))
                    except (TypeError, ValueError):
                        continue
                    kind = lane_xml.get("type")
                    key = (info.id, xodr_index, lane_id)
                    if want(kind) and key not in seen:
                        got = pyxodr_lane(info, xodr_index, lane_id)
                        if isinstance(got, str):  # neither reader makes anything of it
                            notes.append(f"{name(key)} ({kind}): in neither the JSON nor "
                                         f"pyxodr's reading ({got})")
                        else:
                            problems.append(f"{name(key)} ({kind}): in the map, not in the JSON")

    all_d = []  # every vertex's xy distance, per lane
    records = []  # (distance, key, vertex index, xyz): each lane's worst 10
    per_lane = []  # (max distance, key)
    z_diffs = []  # (max |dz|, key, vertex index), one per lane
    reverse = []  # (max distance, key, pyxodr xy), one per lane
    unchecked_xy, unchecked_z, unchecked_layer = set(), set(), set()
    lanes_checked = 0
    for key, lane in seen.items():
        if not want(lane["type"]):
            continue
        info = roads.get(key[0])
        if info is None:
            problems.append(f"{name(key)} ({lane['type']}): the map has no road {key[0]}")
            continue
        if info.layered:
            unchecked_layer.add(key)
            continue
        got = pyxodr_lane(info, key[1], key[2])
        if isinstance(got, str):
            problems.append(f"{name(key)} ({lane['type']}): no pyxodr counterpart: {got}")
            continue
        px_lane, centre = got
        if norm_type(px_lane.type) != norm_type(lane["type"]):
            notes.append(f"{name(key)}: JSON type {lane['type']!r}, map type {px_lane.type!r}")
        if info.banked:
            unchecked_xy.add(key)
            continue
        pts = np.asarray(lane["points"], dtype=float)
        res = pyxodr_res[info.id]
        poly = extend_ends(centre, END_EXTENSION_SAMPLES * res)
        d, seg, u = nearest_on_polyline(poly, pts[:, :2], cKDTree(poly[:, :2]))
        lanes_checked += 1
        all_d.append(d)
        per_lane.append((float(d.max()), key))
        for i in np.argsort(-d)[:10]:
            records.append((float(d[i]), key, int(i), pts[i]))
        if not info.z_modelled(info.by_xodr_index[key[1]], key[2]):
            unchecked_z.add(key)
        else:
            z = poly[seg, 2] + (poly[seg + 1, 2] - poly[seg, 2]) * u
            dz = np.abs(pts[:, 2] - z)
            j = int(dz.argmax())
            z_diffs.append((float(dz[j]), key, j))
        # Reverse: pyxodr's line, every ~REVERSE_STEP, to convoy's polyline.
        step = max(1, int(round(REVERSE_STEP / res)))
        probe = centre[::step, :2]
        if (len(centre) - 1) % step:
            probe = np.vstack([probe, centre[-1:, :2]])
        ours = extend_ends(pts, END_EXTENSION_SAMPLES * res)
        rd, _, _ = nearest_on_polyline(ours, probe, cKDTree(ours[:, :2]))
        j = int(rd.argmax())
        reverse.append((float(rd[j]), key, probe[j]))

    elapsed = time.monotonic() - t0
    tol = args.tolerance
    print(f"pyxodr {pyxodr_version}, resolution {args.resolution} m (finer on roads with "
          f"short sections), types {args.types}, tolerance {tol} m")
    for note in notes[:20]:
        print(f"note: {note}")
    if len(notes) > 20:
        print(f"note: ... and {len(notes) - 20} more")
    if unchecked_layer:
        print(f"not checked: {len(unchecked_layer)} lane(s) on roads with more than one "
              "<lanes> layer, which pyxodr reads as one: "
              + ", ".join(name(k) for k in sorted(unchecked_layer)[:10])
              + (" ..." if len(unchecked_layer) > 10 else ""))
    if unchecked_xy:
        listed = ", ".join(name(k) for k in sorted(unchecked_xy)[:10])
        more = " ..." if len(unchecked_xy) > 10 else ""
        print(f"not checked: {len(unchecked_xy)} lane(s) on roads with <superelevation>, "
              f"which pyxodr ignores: {listed}{more}")
    if unchecked_z:
        print(f"z not checked: {len(unchecked_z)} lane(s) with a lane <height>, a level lane "
              "inside them, or on roads with a lateral <shape>: pyxodr gives the reference "
              "line's elevation only")

    failed = bool(problems)
    if lanes_checked:
        d = np.concatenate(all_d)
        worst_max, worst_key = max(per_lane)
        p99 = float(np.percentile(d, 99))
        z_part = "z not checked"
        if z_diffs:
            z_max, z_key, _ = max(z_diffs)
            z_part = f"z max {z_max:.5f} m ({name(z_key)})"
        r_max, r_key, _ = max(reverse, key=lambda r: r[0])
        print(
            f"{lanes_checked} lanes checked, {len(d)} points checked: xy max {worst_max:.5f} m, "
            f"p99 {p99:.5f} m, worst {name(worst_key)}; {z_part}; reverse max {r_max:.5f} m "
            f"({name(r_key)}); {elapsed:.1f} s"
        )
        bad = sorted((r for r in records if r[0] > tol), key=lambda r: -r[0])
        if bad:
            failed = True
            print(f"FAIL: {sum(int((x > tol).sum()) for x in all_d)} point(s) further than "
                  f"{tol} m from pyxodr's centre line; worst 10:")
            for dist, key, i, p in bad[:10]:
                print(f"  {dist:.4f} m  {name(key)} vertex {i} at "
                      f"({p[0]:.3f}, {p[1]:.3f}, {p[2]:.3f})")
        zbad = sorted((z for z in z_diffs if z[0] > tol), key=lambda z: -z[0])
        if zbad:
            failed = True
            print(f"FAIL: {len(zbad)} lane(s) with z more than {tol} m from pyxodr's; worst 10:")
            for dz, key, i in zbad[:10]:
                print(f"  {dz:.4f} m  {name(key)} vertex {i}")
        rbad = sorted((r for r in reverse if r[0] > tol), key=lambda r: -r[0])
        if rbad:
            failed = True
            print(f"FAIL: {len(rbad)} lane(s) where pyxodr's centre line strays more than {tol} m "
                  "from convoy's polyline (a lane cut short, or a chord too long); worst 10:")
            for dist, key, p in rbad[:10]:
                print(f"  {dist:.4f} m  {name(key)} near pyxodr point ({p[0]:.3f}, {p[1]:.3f})")
    else:
        print(f"0 lanes checked, 0 points checked; {elapsed:.1f} s")
        if not problems:
            failed = True
            print(f"FAIL: the JSON has no lane of types {args.types} that could be checked")
    if problems:
        print(f"FAIL: {len(problems)} lane(s) differ between the JSON and the map:")
        for line in problems[:50]:
            print(f"  {line}")
        if len(problems) > 50:
            print(f"  ... and {len(problems) - 50} more")
    if not failed:
        print("OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
