"""A stock ROS 2 node (rclpy from PyPI) that checks the map convoy's bridge serves, and that the
poses it publishes are in that map's frame.

  ros2_map.py map [--osm lanelet2_map.osm] [--pcd pointcloud_map.pcd] [--timeout S]
      Subscribes (reliable, transient-local, depth 1: what rviz and Foxglove use for maps) to
      /map/lanes (visualization_msgs/MarkerArray) and /map/points (sensor_msgs/PointCloud2),
      started after the bridge published them, and prints what it got; given the files
      `convoy map export` wrote, compares the markers with the OSM file's line strings
      (namespace = type/subtype, every point) and the cloud with the PCD (every byte).

  ros2_map.py localise --pcd pointcloud_map.pcd --agent A --lidar S --odom O [--timeout S]
      Takes one lidar scan (/A/S/points, in the sensor's frame), the agent's pose at the scan's
      stamp from /tf (map -> A/base_link) and from odometry (/A/O/odom), and the lidar's mount
      from /tf_static (A/base_link -> A/S); puts the scan into the map frame with them and
      measures it against the exported point-cloud map: nearest-map-point distances, and a
      brute-force search over x, y and yaw offsets (+-0.5 m, +-2 degrees) for the pose that fits
      the map best. /tf and /tf_static are read with CycloneDDS (tf_reader.py's types: no
      tf2_msgs wheel exists on PyPI), the rest with rclpy.

Lines: {"ready": ...} once subscribed, {"lanes": ...} / {"points": ...} / {"localise": ...},
then {"done": ...}. The Rust test (tests/e2e/ros2_map.rs) asserts on them.
"""

import argparse
import json
import math
import os
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, DurabilityPolicy, HistoryPolicy, ReliabilityPolicy

from nav_msgs.msg import Odometry
from sensor_msgs.msg import PointCloud2
from visualization_msgs.msg import Marker, MarkerArray


def out(obj):
    print(json.dumps(obj), flush=True)


def stamp_ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def latched():
    return QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL,
                      history=HistoryPolicy.KEEP_LAST)


def read_pcd(path):
    """A binary PCD of x y z intensity float32: (header dict, raw body bytes, Nx4 array)."""
    with open(path, "rb") as f:
        blob = f.read()
    header = {}
    at = 0
    while True:
        end = blob.index(b"\n", at)
        line = blob[at:end].decode("ascii").strip()
        at = end + 1
        if line.startswith("#") or not line:
            continue
        key, _, value = line.partition(" ")
        header[key] = value
        if key == "DATA":
            break
    assert header["FIELDS"].split() == ["x", "y", "z", "intensity"], header
    assert header["DATA"] == "binary", header
    body = blob[at:]
    points = np.frombuffer(body, dtype="<f4").reshape(-1, 4)
    assert len(points) == int(header["POINTS"]), header
    return header, body, points


def osm_ways(path):
    """The OSM file's line strings in id order: (type, subtype, [(x, y, z), ...])."""
    root = ET.parse(path).getroot()
    nodes = {}
    for n in root.iter("node"):
        tags = {t.get("k"): t.get("v") for t in n.iter("tag")}
        nodes[n.get("id")] = (float(tags["local_x"]), float(tags["local_y"]),
                              float(tags.get("ele", "0")))
    ways = []
    for w in root.iter("way"):
        tags = {t.get("k"): t.get("v") for t in w.iter("tag")}
        points = [nodes[nd.get("ref")] for nd in w.iter("nd")]
        ways.append((int(w.get("id")), tags.get("type"), tags.get("subtype"), points))
    ways.sort(key=lambda w: w[0])
    return [w[1:] for w in ways]


def check_lanes(msg, osm):
    markers = msg.markers
    by_ns = {}
    for m in markers:
        by_ns[m.ns] = by_ns.get(m.ns, 0) + 1
    d = {
        "markers": len(markers),
        "namespaces": by_ns,
        "frames": sorted({m.header.frame_id for m in markers}),
        "types": sorted({m.type for m in markers}),
        "actions": sorted({m.action for m in markers}),
        "points": sum(len(m.points) for m in markers),
        "min_width": min((m.scale.x for m in markers), default=0.0),
        "min_alpha": min((m.color.a for m in markers), default=0.0),
        "unique_ids": len({(m.ns, m.id) for m in markers}) == len(markers),
        "line_strip": Marker.LINE_STRIP,
    }
    if osm:
        # Stop signs are positions, not lines: the bridge leaves them out.
        ways = [w for w in osm_ways(osm) if w[0] != "traffic_sign"]
        d["osm_ways"] = len(ways)
        mismatched_ns, worst = [], 0.0
        for m, (kind, subtype, points) in zip(sorted(markers, key=lambda m: m.id), ways):
            ns = kind if subtype is None else f"{kind}/{subtype}"
            if m.ns != ns and not (m.ns == "crosswalk" and kind == "virtual"):
                mismatched_ns.append([m.ns, ns])
            if len(m.points) != len(points):
                worst = math.inf
                continue
            for p, q in zip(m.points, points):
                worst = max(worst, abs(p.x - q[0]), abs(p.y - q[1]), abs(p.z - q[2]))
        d["mismatched_namespaces"] = mismatched_ns[:10]
        d["max_point_deviation"] = worst if math.isfinite(worst) else "point counts differ"
    return d


def check_points(msg, pcd):
    data = bytes(msg.data)
    d = {
        "frame_id": msg.header.frame_id,
        "width": msg.width,
        "height": msg.height,
        "point_step": msg.point_step,
        "row_step": msg.row_step,
        "bytes": len(data),
        "is_dense": bool(msg.is_dense),
        "fields": [[f.name, f.offset, f.datatype, f.count] for f in msg.fields],
    }
    if pcd:
        header, body, _ = read_pcd(pcd)
        d["pcd_points"] = int(header["POINTS"])
        d["same_bytes_as_pcd"] = data == body
    return d


def run_map(args):
    rclpy.init()
    node = Node("convoy_map_check")
    got = {}

    def on_lanes(msg):
        got["lanes"] = (time.monotonic(), msg)

    def on_points(msg):
        got["points"] = (time.monotonic(), msg)

    node.create_subscription(MarkerArray, args.lanes_topic, on_lanes, latched())
    node.create_subscription(PointCloud2, args.points_topic, on_points, latched())
    started = time.monotonic()
    out({"ready": True})
    deadline = started + args.timeout
    while time.monotonic() < deadline and len(got) < 2:
        rclpy.spin_once(node, timeout_sec=0.05)
    if "lanes" in got:
        t, msg = got["lanes"]
        out({"lanes": {**check_lanes(msg, args.osm), "after_s": round(t - started, 3)}})
    if "points" in got:
        t, msg = got["points"]
        out({"points": {**check_points(msg, args.pcd), "after_s": round(t - started, 3)}})
    out({"done": True, "got": sorted(got)})
    node.destroy_node()
    rclpy.shutdown()


def quat_matrix(x, y, z, w):
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def yaw_matrix(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def cloud_xyz(msg):
    """x, y, z (float32 at offsets 0, 4, 8 as the bridge lays them out) of a PointCloud2."""
    offsets = {f.name: f.offset for f in msg.fields}
    assert (offsets["x"], offsets["y"], offsets["z"]) == (0, 4, 8), offsets
    raw = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(-1, msg.point_step)
    return raw[:, :12].copy().view("<f4").reshape(-1, 3).astype(np.float64)


def run_localise(args):
    from scipy.spatial import cKDTree
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cyclonedds.core import Qos, Policy
    from cyclonedds.domain import DomainParticipant
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic
    from cyclonedds.util import duration
    from tf_reader import TFMessage

    base = f"{args.agent}/base_link"
    sensor_frame = f"{args.agent}/{args.lidar}"
    dp = DomainParticipant(int(os.environ.get("ROS_DOMAIN_ID", "0")))
    static_reader = DataReader(dp, Topic(dp, "rt/tf_static", TFMessage), qos=Qos(
        Policy.Reliability.Reliable(duration(seconds=1)), Policy.Durability.TransientLocal,
        Policy.History.KeepLast(1)))
    tf_reader = DataReader(dp, Topic(dp, "rt/tf", TFMessage), qos=Qos(
        Policy.Reliability.Reliable(duration(seconds=1)), Policy.Durability.Volatile,
        Policy.History.KeepLast(100)))

    rclpy.init()
    node = Node("convoy_localise_check")
    scans, odoms = [], {}
    node.create_subscription(PointCloud2, f"/{args.agent}/{args.lidar}/points",
                             lambda m: scans.append(m), 10)
    node.create_subscription(Odometry, f"/{args.agent}/{args.odom}/odom",
                             lambda m: odoms.__setitem__(stamp_ns(m.header.stamp), m), 100)
    _, _, map_points = read_pcd(args.pcd)
    map_xyz = map_points[:, :3].astype(np.float64)
    out({"ready": True, "map_points": len(map_xyz)})

    poses, mount, tf_parents = {}, None, set()
    chosen = None
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline and chosen is None:
        rclpy.spin_once(node, timeout_sec=0.02)
        for msg in static_reader.take(N=16):
            for t in msg.transforms:
                if t.child_frame_id == sensor_frame:
                    mount = (t.header.frame_id, t.transform)
        for msg in tf_reader.take(N=256):
            for t in msg.transforms:
                if t.child_frame_id == base:
                    tf_parents.add(t.header.frame_id)
                    poses[stamp_ns(t.header.stamp)] = t.transform
        if mount is None:
            continue
        # The first scan (after skipping `--skip`) whose stamp has both a /tf and an odometry.
        for scan in scans[args.skip:]:
            s = stamp_ns(scan.header.stamp)
            if s in poses and s in odoms:
                chosen = scan
                break
    if chosen is None:
        out({"done": True, "error": "no scan with a /tf and an odometry at its stamp",
             "scans": len(scans), "poses": len(poses), "odoms": len(odoms),
             "mount": mount is not None})
        return

    s = stamp_ns(chosen.header.stamp)
    pose, odom = poses[s], odoms[s].pose.pose
    t, q = pose.translation, pose.rotation
    position = np.array([t.x, t.y, t.z])
    rotation = quat_matrix(q.x, q.y, q.z, q.w)
    o, oq = odom.position, odom.orientation
    same_turn = abs(oq.x * q.x + oq.y * q.y + oq.z * q.z + oq.w * q.w)
    odom_gap = max(abs(o.x - t.x), abs(o.y - t.y), abs(o.z - t.z), abs(same_turn - 1.0))
    mount_parent, m = mount
    mount_t = np.array([m.translation.x, m.translation.y, m.translation.z])
    mount_r = quat_matrix(m.rotation.x, m.rotation.y, m.rotation.z, m.rotation.w)
    scan = cloud_xyz(chosen)
    in_base = scan @ mount_r.T + mount_t
    if args.dump:
        np.savez(args.dump, in_base=in_base, rotation=rotation, position=position)
    in_map = in_base @ rotation.T + position

    # The map around the car, as far as the lidar reaches.
    reach = np.linalg.norm(scan, axis=1).max() + 2.0
    near = np.linalg.norm(map_xyz[:, :2] - position[:2], axis=1) < reach
    tree = cKDTree(map_xyz[near])
    dist, _ = tree.query(in_map, workers=-1)

    # Registration: the x, y, yaw offset (about the car) that puts the scan best on the map.
    # Score: mean squared distance, each capped at `cap` (other cars are not in the map).
    rng = np.random.default_rng(1)
    sample = in_base[rng.choice(len(in_base), size=min(args.sample, len(in_base)),
                                replace=False)]
    cap = 0.5
    yaw0 = math.atan2(rotation[1, 0], rotation[0, 0])

    def cost(dx, dy, dyaw):
        r = yaw_matrix(dyaw) @ rotation
        p = sample @ r.T + position + np.array([dx, dy, 0.0])
        d, _ = tree.query(p, distance_upper_bound=cap, workers=-1)
        return float(np.mean(np.minimum(d, cap) ** 2))

    def search(cx, cy, cyaw, half, step, half_yaw, step_yaw):
        best = None
        n = int(round(half / step))
        k = int(round(half_yaw / step_yaw))
        for i in range(-n, n + 1):
            for j in range(-n, n + 1):
                for a in range(-k, k + 1):
                    dx, dy, dyaw = cx + i * step, cy + j * step, cyaw + a * step_yaw
                    c = cost(dx, dy, dyaw)
                    if best is None or c < best[0]:
                        best = (c, dx, dy, dyaw)
        return best

    started = time.monotonic()
    coarse = search(0.0, 0.0, 0.0, 0.5, 0.1, math.radians(2.0), math.radians(0.5))
    fine = search(coarse[1], coarse[2], coarse[3], 0.1, 0.025, math.radians(0.5),
                  math.radians(0.125))
    truth_cost = cost(0.0, 0.0, 0.0)
    # How much worse the map fits half a metre or 2 degrees off: the search could tell.
    off = {name: cost(*o) for name, o in {
        "x+0.5": (0.5, 0.0, 0.0), "x-0.5": (-0.5, 0.0, 0.0),
        "y+0.5": (0.0, 0.5, 0.0), "y-0.5": (0.0, -0.5, 0.0),
        "yaw+2": (0.0, 0.0, math.radians(2.0)), "yaw-2": (0.0, 0.0, math.radians(-2.0)),
    }.items()}
    out({"localise": {
        "stamp_ns": s,
        "scan_frame": chosen.header.frame_id,
        "tf_parents": sorted(tf_parents),
        "mount_parent": mount_parent,
        "mount": mount_t.tolist(),
        "odom_frame": odoms[s].header.frame_id,
        "odom_child": odoms[s].child_frame_id,
        "odom_vs_tf": odom_gap,
        "pose": [t.x, t.y, t.z, math.degrees(yaw0)],
        "scan_points": len(scan),
        "map_points_near": int(near.sum()),
        "median": float(np.median(dist)),
        "p75": float(np.percentile(dist, 75)),
        "within_10cm": float(np.mean(dist < 0.10)),
        "within_20cm": float(np.mean(dist < 0.20)),
        "truth_cost": truth_cost,
        "best": {"dx": fine[1], "dy": fine[2], "dyaw_deg": math.degrees(fine[3]),
                 "cost": fine[0]},
        "off_costs": off,
        "search_s": round(time.monotonic() - started, 2),
    }})
    out({"done": True})
    node.destroy_node()
    rclpy.shutdown()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    m = sub.add_parser("map")
    m.add_argument("--lanes-topic", default="/map/lanes")
    m.add_argument("--points-topic", default="/map/points")
    m.add_argument("--osm")
    m.add_argument("--pcd")
    m.add_argument("--timeout", type=float, default=60.0)
    loc = sub.add_parser("localise")
    loc.add_argument("--pcd", required=True)
    loc.add_argument("--agent", default="ego")
    loc.add_argument("--lidar", default="roof_lidar")
    loc.add_argument("--odom", default="odom")
    loc.add_argument("--skip", type=int, default=0, help="scans to pass over first")
    loc.add_argument("--sample", type=int, default=4000, help="scan points the search uses")
    loc.add_argument("--timeout", type=float, default=60.0)
    loc.add_argument("--dump", help="save the scan (in base_link) and the pose here (.npz)")
    args = p.parse_args()
    if args.mode == "map":
        run_map(args)
    else:
        run_localise(args)


if __name__ == "__main__":
    sys.exit(main())
