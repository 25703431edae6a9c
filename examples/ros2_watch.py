"""Watches convoy's sensors from stock ROS 2 (rclpy from PyPI): prints what arrives on the
demo's camera and lidar topics, then exits after --count of each (0: until Ctrl-C).

    ROS_DOMAIN_ID=42 .venv/bin/python examples/ros2_watch.py
"""

import argparse

import rclpy
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, PointCloud2


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--image", default="/sensing/camera/image_raw")
    p.add_argument("--points", default="/sensing/lidar/points")
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--timeout", type=float, default=0.0, help="seconds (0: none)")
    args = p.parse_args()
    rclpy.init()
    node = Node("convoy_watch")
    seen = {"image": 0, "points": 0}

    def stamp(m):
        return f"{m.header.stamp.sec}.{m.header.stamp.nanosec:09d}"

    def on_image(m):
        seen["image"] += 1
        if not args.count or seen["image"] <= args.count:
            print(f"ROS 2 got {args.image}: {m.width}x{m.height} {m.encoding} "
                  f"frame {m.header.frame_id} at sim time {stamp(m)}", flush=True)

    def on_points(m):
        seen["points"] += 1
        if not args.count or seen["points"] <= args.count:
            fields = ",".join(f.name for f in m.fields)
            print(f"ROS 2 got {args.points}: {m.width} points ({fields}) "
                  f"frame {m.header.frame_id} at sim time {stamp(m)}", flush=True)

    node.create_subscription(Image, args.image, on_image, qos_profile_sensor_data)
    node.create_subscription(PointCloud2, args.points, on_points, qos_profile_sensor_data)
    start = node.get_clock().now()
    try:
        while rclpy.ok():
            rclpy.spin_once(node, timeout_sec=0.1)
            if args.count and min(seen.values()) >= args.count:
                break
            elapsed = (node.get_clock().now() - start).nanoseconds / 1e9
            if args.timeout and elapsed > args.timeout:
                break
    except KeyboardInterrupt:
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
