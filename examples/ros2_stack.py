"""A minimal autonomy stack on stock ROS 2 (rclpy from PyPI), driving convoy's ego car.

It reads the camera and the lidar convoy's bridge serves, keeps a gap to whatever is ahead in
the lidar cloud (a toy adaptive cruise control) and sends geometry_msgs/Twist on
/ego/cmd_vel after every /clock tick; with the bridge's `hold_for_stack`, convoy's lockstep
waits for that command each frame, so the closed loop repeats exactly.

    convoy launch launch/stack_in_loop.toml &
    ROS_DOMAIN_ID=44 .venv/bin/python examples/ros2_stack.py

Nothing from convoy is installed: only `pip install "ros-rclpy[fastrtps]" ros-sensor-msgs
ros-geometry-msgs ros-rosgraph-msgs` (scripts/ros-venv.sh does it).
"""

import struct

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from geometry_msgs.msg import Twist
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image, PointCloud2

CRUISE = 10.0  # m/s on a free road
GAP = 15.0  # m kept to the obstacle ahead
LANE = 1.5  # m either side of the car's axis counts as "ahead"


class Stack(Node):
    def __init__(self):
        super().__init__("toy_stack")
        self.ahead = float("inf")
        self.images = 0
        self.cmd = self.create_publisher(Twist, "/ego/cmd_vel", 10)
        self.create_subscription(PointCloud2, "/ego/roof_lidar/points", self.on_cloud,
                                 qos_profile_sensor_data)
        self.create_subscription(Image, "/ego/front_camera/image", self.on_image,
                                 qos_profile_sensor_data)
        self.create_subscription(Clock, "/clock", self.on_clock, 10)

    def on_cloud(self, msg):
        # PointXYZIRC: x, y, z float32 at offsets 0, 4, 8 of each 16-byte point.
        nearest = float("inf")
        data = bytes(msg.data)
        for i in range(0, len(data), msg.point_step):
            x, y, z = struct.unpack_from("<fff", data, i)
            if x > 2.5 and abs(y) < LANE and z > -1.2:
                nearest = min(nearest, x)
        self.ahead = nearest

    def on_image(self, msg):
        self.images += 1
        if self.images % 50 == 1:
            self.get_logger().info(
                f"camera {msg.width}x{msg.height} {msg.encoding}, obstacle ahead at "
                f"{self.ahead:.1f} m")

    def on_clock(self, msg):
        if msg.clock.sec == 0 and msg.clock.nanosec == 0:
            return  # frame 0: the coordinator's handshake
        t = Twist()
        # Slow down in proportion to how much of the gap is used up.
        t.linear.x = max(0.0, min(CRUISE, CRUISE * (self.ahead - GAP) / GAP))
        self.cmd.publish(t)


def main():
    rclpy.init()
    node = Stack()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
