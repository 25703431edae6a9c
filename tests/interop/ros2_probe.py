"""A stock ROS 2 node (rclpy from PyPI) that checks what convoy's bridge serves.

It subscribes to the topics it is given, with ROS's default QoS (reliable) or the sensor-data
QoS (best-effort), decodes each message with the real ROS message classes and prints what it
found as one JSON line per message; optionally it plays an autonomy stack (publishes cmd_vel
after every /clock message) and reports the ROS graph (node names, topic types and the type
hashes the publishers announce). The Rust test asserts on its output.

Lines: {"ready": ...} once subscribed, {"msg": ...} per message, {"graph": ...}, {"done": ...}.
"""

import argparse
import json
import sys
import time

import rclpy
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_profile_sensor_data, ReliabilityPolicy, HistoryPolicy

from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image, Imu, NavSatFix, PointCloud2

KINDS = {
    "image": Image,
    "cloud": PointCloud2,
    "imu": Imu,
    "fix": NavSatFix,
    "odom": Odometry,
    "clock": Clock,
}


def out(obj):
    print(json.dumps(obj), flush=True)


def stamp_ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def describe(kind, msg):
    if kind == "clock":
        return {"stamp_ns": stamp_ns(msg.clock)}
    d = {"stamp_ns": stamp_ns(msg.header.stamp), "frame_id": msg.header.frame_id}
    if kind == "image":
        centre = (msg.height // 2) * msg.step + (msg.width // 2) * (msg.step // msg.width)
        d.update(width=msg.width, height=msg.height, encoding=msg.encoding, step=msg.step,
                 bytes=len(msg.data), centre=list(bytes(msg.data[centre:centre + 4])),
                 top=list(bytes(msg.data[0:4])))
    elif kind == "cloud":
        d.update(width=msg.width, height=msg.height, point_step=msg.point_step,
                 row_step=msg.row_step, bytes=len(msg.data),
                 fields=[[f.name, f.offset, f.datatype, f.count] for f in msg.fields])
    elif kind == "imu":
        d.update(orientation=[msg.orientation.x, msg.orientation.y, msg.orientation.z,
                              msg.orientation.w],
                 accel_z=msg.linear_acceleration.z)
    elif kind == "fix":
        d.update(latitude=msg.latitude, longitude=msg.longitude, altitude=msg.altitude,
                 status=msg.status.status)
    elif kind == "odom":
        d.update(child_frame_id=msg.child_frame_id, x=msg.pose.pose.position.x,
                 y=msg.pose.pose.position.y, speed=msg.twist.twist.linear.x)
    return d


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--topic", action="append", default=[], help="NAME:KIND")
    p.add_argument("--qos", choices=["reliable", "sensor"], default="reliable")
    p.add_argument("--count", type=int, default=3, help="messages per topic, then done")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--until-clock", type=int, default=None, metavar="NS",
                   help="done once a /clock message stamped NS or later arrived")
    p.add_argument("--stack", help="agent to drive: cmd_vel after every /clock")
    p.add_argument("--speed", type=float, default=0.0, help="linear.x the stack sends")
    p.add_argument("--pattern", action="store_true",
                   help="with --stack: linear.x = speed + 0.5 * (frame % 7), frame = stamp / dt")
    p.add_argument("--dt", type=float, default=0.05)
    p.add_argument("--yaw-rate", type=float, default=0.0)
    p.add_argument("--stack-frames", type=int, default=0,
                   help="with --stack: answer this many /clock messages (frame 0 not counted)")
    p.add_argument("--graph", action="store_true")
    p.add_argument("--name", default="convoy_probe")
    args = p.parse_args()

    rclpy.init()
    node = Node(args.name)
    if args.qos == "sensor":
        qos = qos_profile_sensor_data
    else:
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         history=HistoryPolicy.KEEP_LAST)
    got = {}
    subs = []
    clock_seen = [0]
    newest_clock = [-1]
    any_clock_topic = any(spec.endswith(":clock") for spec in args.topic)
    for spec in args.topic:
        name, kind = spec.rsplit(":", 1)
        got[name] = 0

        def callback(msg, name=name, kind=kind):
            # Sensor messages count once /clock runs, so their times can be checked against it.
            if kind != "clock" and clock_seen[0] == 0 and any_clock_topic:
                return
            if kind == "clock":
                clock_seen[0] += 1
                newest_clock[0] = max(newest_clock[0], stamp_ns(msg.clock))
            got[name] += 1
            # Every /clock is printed: the test matches sensor stamps against them.
            if got[name] <= args.count or kind == "clock":
                out({"msg": name, "kind": kind, **describe(kind, msg)})

        subs.append(node.create_subscription(KINDS[kind], name, callback, qos))

    # The distinct /clock stamps seen: a tick the coordinator sends again (a barrier that
    # waited) reaches the stack twice, and must not count as a frame of its own.
    clocks = set()
    unanswered = []
    if args.stack:
        cmd = node.create_publisher(Twist, f"/{args.stack}/cmd_vel", 10)

        def answer(stamp):
            t = Twist()
            frame = round(stamp / 1e9 / args.dt)
            t.linear.x = args.speed + (0.5 * (frame % 7) if args.pattern else 0.0)
            t.angular.z = args.yaw_rate
            cmd.publish(t)

        def on_clock(msg):
            stamp = stamp_ns(msg.clock)
            # Frame 0 is the coordinator's handshake: nothing to answer.
            if stamp == 0:
                return
            clocks.add(stamp)
            # A command written before the bridge's reader matched would be lost.
            if cmd.get_subscription_count() == 0:
                unanswered.append(stamp)
                return
            answer(stamp)

        subs.append(node.create_subscription(Clock, "/clock", on_clock, 10))
    out({"ready": True})

    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
        if unanswered and cmd.get_subscription_count() > 0:
            answer(unanswered[-1])
            unanswered.clear()
        if args.stack:
            # A stack runs for its frames; the topics it reads are printed meanwhile.
            if len(clocks) >= args.stack_frames:
                # The last command must reach the bridge before this node goes: a reliable
                # writer repairs a lost sample only while it exists.
                cmd.wait_for_all_acked(Duration(seconds=10))
                break
        elif args.until_clock is not None:
            if newest_clock[0] >= args.until_clock:
                break
        elif all(n >= args.count for n in got.values()):
            break
    if args.graph:
        # Graph information arrives by discovery; a moment more lets it settle.
        settle = time.monotonic() + 1.0
        while time.monotonic() < settle:
            rclpy.spin_once(node, timeout_sec=0.05)
        topics = {}
        for name, types in node.get_topic_names_and_types():
            infos = node.get_publishers_info_by_topic(name)
            topics[name] = {
                "types": types,
                "publishers": [
                    {"node": i.node_name, "namespace": i.node_namespace,
                     "type": i.topic_type, "hash": str(i.topic_type_hash)}
                    for i in infos
                ],
            }
        nodes = [f"{ns.rstrip('/')}/{n}" for n, ns in node.get_node_names_and_namespaces()]
        out({"graph": {"nodes": nodes, "topics": topics}})
    out({"done": True, "counts": got, "clocks": len(clocks)})
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    sys.exit(main())
