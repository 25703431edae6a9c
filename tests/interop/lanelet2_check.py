#!/usr/bin/env python3
"""Checks what `convoy map export` wrote with readers convoy did not write.

Why: an autonomy stack (Autoware) plans on the Lanelet2 map and localises on
the point-cloud map. The `lanelet2` package (PyPI, the reference
implementation from FZI) and `pypcd4` read the files here exactly as a stack's
loaders would; where they load them cleanly and the geometry lands where
convoy's cars drive, the export is usable.

    lanelet2_check.py EXPORT_DIR CENTRES.json [--route-across] [--tolerance M]

EXPORT_DIR holds lanelet2_map.osm, map_projector_info.yaml and the point
cloud (pointcloud_map.pcd, or pointcloud_map/*.pcd with
pointcloud_map_metadata.yaml). CENTRES.json is `convoy map info FILE.xodr
--lane-centres CENTRES.json`: every driving lane's centre line as convoy bakes
it (road, section, lane, points).

Checks, each printed; exit status 1 when one fails:

  * load: lanelet2.io.loadRobust with a LocalCartesianProjector about the
    projector's origin reports no errors; every point's projected x, y agrees
    with its local_x, local_y tags within 1 cm (so the latitudes and
    longitudes are right), and the lanelet count is the number of driving
    lanes in CENTRES.json.
  * centres: every road lanelet (tagged convoy:road/section/lane) has a centre
    line (Lanelet2's own, from its bounds) within --tolerance (5 cm) of
    convoy's centre line of that lane, both ways (each of Lanelet2's points to
    convoy's polyline, each of convoy's points to Lanelet2's polyline).
  * route (--route-across): Lanelet2's routing graph for vehicles has a route
    between the two lanelets furthest apart on the map.
  * cloud: pypcd4 reads every PCD file; fields x y z intensity; the metadata
    (when tiled) names every tile and each tile's points lie in it; every
    point lies within the lanes' bounds (+ 40 m: the ground near the roads);
    every convoy lane centre point has a cloud point within 1.5 x the spacing (--spacing) at the road
    surface's height (the road is covered, at the right height); and every
    (sampled) cloud point over a driving lane (within 1 m of its centre line in
    plan) lies within 10 cm of the lane's height (the points are on the road).

Prints one JSON summary line last.
"""

import argparse
import glob
import json
import math
import os
import sys

import numpy as np


def fail(message):
    print(f"FAIL {message}", flush=True)
    return 1


def read_projector(path):
    origin = (0.0, 0.0)
    kind = None
    lat = lon = None
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().partition(":")
            value = value.strip()
            if key == "projector_type":
                kind = value
            elif key == "latitude":
                lat = float(value)
            elif key == "longitude":
                lon = float(value)
    if kind == "TransverseMercator" and lat is not None and lon is not None:
        origin = (lat, lon)
    elif kind != "Local":
        raise SystemExit(f"{path}: unexpected projector_type {kind!r}")
    return kind, origin


def segment_distances(points, line):
    """Distance from each of `points` (N,3) to the polyline `line` (M,3)."""
    a = line[:-1]
    b = line[1:]
    ab = b - a
    length2 = np.maximum((ab * ab).sum(axis=1), 1e-12)
    best = np.full(len(points), np.inf)
    for i, p in enumerate(points):
        t = np.clip(((p - a) * ab).sum(axis=1) / length2, 0.0, 1.0)
        closest = a + ab * t[:, None]
        best[i] = np.sqrt(((closest - p) ** 2).sum(axis=1)).min()
    return best


def read_pcd_files(export_dir):
    import pypcd4

    single = os.path.join(export_dir, "pointcloud_map.pcd")
    if os.path.isfile(single):
        return {single: pypcd4.PointCloud.from_path(single)}, None
    metadata = {}
    with open(os.path.join(export_dir, "pointcloud_map_metadata.yaml")) as f:
        for line in f:
            key, _, value = line.strip().partition(":")
            if key.endswith(".pcd"):
                metadata[key] = [float(v) for v in value.strip(" []").split(",")]
            elif key in ("x_resolution", "y_resolution"):
                metadata[key] = float(value)
    clouds = {}
    for path in sorted(glob.glob(os.path.join(export_dir, "pointcloud_map", "*.pcd"))):
        clouds[path] = pypcd4.PointCloud.from_path(path)
    return clouds, metadata


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export_dir")
    parser.add_argument("centres")
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--spacing", type=float, default=0.2)
    parser.add_argument("--route-across", action="store_true")
    parser.add_argument(
        "--left-out",
        action="append",
        default=[],
        metavar="ROAD:SECTION:LANE",
        help="a driving lane the exporter left out with a warning (not expected as a lanelet)",
    )
    args = parser.parse_args()

    import lanelet2
    from lanelet2.io import Origin

    failures = 0
    summary = {}
    kind, origin = read_projector(os.path.join(args.export_dir, "map_projector_info.yaml"))
    projector = lanelet2.projection.LocalCartesianProjector(Origin(origin[0], origin[1]))
    osm = os.path.join(args.export_dir, "lanelet2_map.osm")
    lmap, errors = lanelet2.io.loadRobust(osm, projector)
    summary["load_errors"] = len(errors)
    if errors:
        failures += fail(f"load: {len(errors)} errors, first: {errors[:3]}")
    worst_geo = 0.0
    for p in lmap.pointLayer:
        lx = float(p.attributes["local_x"])
        ly = float(p.attributes["local_y"])
        worst_geo = max(worst_geo, math.hypot(p.x - lx, p.y - ly))
    summary["geo_max_m"] = worst_geo
    if worst_geo > 0.01:
        failures += fail(f"load: latitude/longitude off local_x/local_y by {worst_geo:.4f} m")

    with open(args.centres) as f:
        centres = json.load(f)["lanes"]
    left_out = {(r, int(s), int(l)) for r, s, l in (x.split(":") for x in args.left_out)}
    by_lane = {
        (c["road"], int(c["section"]), int(c["lane"])): np.array(c["points"])
        for c in centres
        if (c["road"], int(c["section"]), int(c["lane"])) not in left_out
    }
    road_lanelets = [
        ll for ll in lmap.laneletLayer if ll.attributes["subtype"] == "road"
    ]
    summary["lanelets"] = len(road_lanelets)
    summary["driving_lanes"] = len(by_lane)
    if len(road_lanelets) != len(by_lane):
        failures += fail(
            f"load: {len(road_lanelets)} road lanelets for {len(by_lane)} driving lanes"
        )

    worst = (0.0, None)
    for ll in road_lanelets:
        key = (
            ll.attributes["convoy:road"],
            int(ll.attributes["convoy:section"]),
            int(ll.attributes["convoy:lane"]),
        )
        ours = by_lane.get(key)
        if ours is None:
            failures += fail(f"centres: lanelet {ll.id} names lane {key}, not a driving lane")
            continue
        theirs = np.array([[p.x, p.y, p.z] for p in ll.centerline])
        if len(theirs) < 2 or len(ours) < 2:
            continue
        d = max(segment_distances(theirs, ours).max(), segment_distances(ours, theirs).max())
        if d > worst[0]:
            worst = (d, key)
    summary["centre_max_m"] = worst[0]
    print(f"centres: worst {worst[0] * 100:.2f} cm (road {worst[1]})", flush=True)
    if worst[0] > args.tolerance:
        failures += fail(f"centres: lane {worst[1]} is {worst[0]:.3f} m from Lanelet2's centre line")

    if args.route_across:
        rules = lanelet2.traffic_rules.create(
            lanelet2.traffic_rules.Locations.Germany,
            lanelet2.traffic_rules.Participants.Vehicle,
        )
        graph = lanelet2.routing.RoutingGraph(lmap, rules)
        def centroid(ll):
            pts = [(p.x, p.y) for p in ll.centerline]
            return (sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts))
        ends = sorted(road_lanelets, key=lambda ll: sum(centroid(ll)))
        start, goal = ends[0], ends[-1]
        route = graph.getRoute(start, goal)
        if route is None:
            route_back = graph.getRoute(goal, start)
            failures += fail(
                f"route: none from lanelet {start.id} {centroid(start)} to {goal.id} "
                f"{centroid(goal)} (back: {route_back is not None})"
            )
        else:
            path = route.shortestPath()
            summary["route_lanelets"] = len(path)
            summary["route_m"] = sum(lanelet2.geometry.length2d(ll) for ll in path)
            print(
                f"route: {len(path)} lanelets, {summary['route_m']:.0f} m from "
                f"{centroid(start)} to {centroid(goal)}",
                flush=True,
            )

    clouds, metadata = read_pcd_files(args.export_dir)
    if not clouds:
        failures += fail("cloud: no PCD file")
    all_points = []
    for path, cloud in clouds.items():
        fields = list(cloud.fields)
        if fields != ["x", "y", "z", "intensity"]:
            failures += fail(f"cloud: {path} has fields {fields}")
            continue
        pts = cloud.numpy()
        all_points.append(pts)
        if metadata is not None:
            name = os.path.basename(path)
            corner = metadata.get(name)
            if corner is None:
                failures += fail(f"cloud: metadata does not name {name}")
                continue
            res = metadata["x_resolution"]
            inside = (
                (pts[:, 0] >= corner[0] - 1e-3)
                & (pts[:, 0] < corner[0] + res + 1e-3)
                & (pts[:, 1] >= corner[1] - 1e-3)
                & (pts[:, 1] < corner[1] + metadata["y_resolution"] + 1e-3)
            )
            if not inside.all():
                failures += fail(f"cloud: {name} has {int((~inside).sum())} points outside its tile")
    if all_points:
        cloud = np.concatenate(all_points)
        summary["points"] = int(len(cloud))
        summary["files"] = len(clouds)
        lanes = np.concatenate(list(by_lane.values()))
        lo = lanes.min(axis=0) - 40.0
        hi = lanes.max(axis=0) + 40.0
        outside = ~((cloud[:, :2] >= lo[:2]) & (cloud[:, :2] <= hi[:2])).all(axis=1)
        if outside.any():
            failures += fail(f"cloud: {int(outside.sum())} points outside the map's bounds")
        # Every lane centre point has a cloud point close by at the road's height: bin the
        # cloud in a grid of the spacing and look in the neighbouring cells.
        cell = args.spacing
        grid = {}
        keys = np.floor(cloud[:, :2] / cell).astype(np.int64)
        for i, (kx, ky) in enumerate(map(tuple, keys)):
            grid.setdefault((kx, ky), []).append(i)
        reach = 1.5 * args.spacing
        missing = 0
        worst_gap = 0.0
        sample = lanes[:: max(1, len(lanes) // 4000)]
        for p in sample:
            kx, ky = int(math.floor(p[0] / cell)), int(math.floor(p[1] / cell))
            best = math.inf
            for dx in (-2, -1, 0, 1, 2):
                for dy in (-2, -1, 0, 1, 2):
                    for i in grid.get((kx + dx, ky + dy), ()):
                        q = cloud[i]
                        best = min(best, math.sqrt((q[0] - p[0]) ** 2 + (q[1] - p[1]) ** 2 + (q[2] - p[2]) ** 2))
            worst_gap = max(worst_gap, best)
            if best > reach:
                missing += 1
        summary["centre_points_checked"] = int(len(sample))
        summary["cloud_gap_max_m"] = worst_gap
        print(
            f"cloud: {len(cloud)} points in {len(clouds)} file(s); lane centre to nearest point "
            f"at most {worst_gap * 100:.1f} cm over {len(sample)} centre points",
            flush=True,
        )
        if missing:
            failures += fail(f"cloud: {missing} lane centre points have no cloud point within {reach:.2f} m")
        # And the other way: cloud points over a driving lane (within 1 m of one of its
        # centre points, in plan) lie on the road, at the centre line's height (+ paint, - a
        # bank).
        # A lane's first and last metre are left out: past a dead end the ground is rightly
        # there.
        centre_grid = {}
        for line in by_lane.values():
            steps = np.sqrt((np.diff(line[:, :2], axis=0) ** 2).sum(axis=1))
            s_at = np.concatenate([[0.0], np.cumsum(steps)])
            for p, s_p in zip(line, s_at):
                if 1.0 <= s_p <= s_at[-1] - 1.0:
                    centre_grid.setdefault((int(math.floor(p[0])), int(math.floor(p[1]))), []).append(p)
        on_road = 0
        worst_dz = 0.0
        for q in cloud[:: max(1, len(cloud) // 200000)]:
            kx, ky = int(math.floor(q[0])), int(math.floor(q[1]))
            near = None
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    for p in centre_grid.get((kx + dx, ky + dy), ()):
                        d = math.hypot(p[0] - q[0], p[1] - q[1])
                        if d <= 1.0 and (near is None or d < near[0]):
                            near = (d, p)
            if near is not None:
                on_road += 1
                worst_dz = max(worst_dz, abs(q[2] - near[1][2]))
        summary["points_over_lanes"] = on_road
        summary["over_lane_dz_max_m"] = worst_dz
        print(f"cloud: {on_road} sampled points over driving lanes, height off the lane by at most {worst_dz * 100:.1f} cm", flush=True)
        if on_road == 0 or worst_dz > 0.1:
            failures += fail(f"cloud: points over driving lanes are up to {worst_dz:.3f} m off the road's height")
    summary["ok"] = failures == 0
    print(json.dumps(summary), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
