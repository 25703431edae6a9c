#!/usr/bin/env bash
# Makes .venv with stock ROS 2 (Kilted, Fast DDS) from PyPI: rclpy and the message packages
# convoy's ROS 2 tests, examples/ and `convoy bench images --reader rclpy` use, and CycloneDDS's
# Python binding (the independent reader of the bridge's /tf); Foxglove's `mcap` reader (the
# independent reader of `convoy record`'s files); and the live view's independent clients
# (tests/interop/view_*.py): websockets and protobuf for a Foxglove WebSocket client, Playwright
# to drive Debian's chromium through examples/live_view.html (Playwright's own browser download
# is not used); and pyxodr, the independent OpenDRIVE reader that tests/interop/xodr_centres.py
# checks the baked lane centre lines against (pinned: that script relies on its 0.1.3 internals);
# lanelet2 and pypcd4, the independent readers of `convoy map export`'s Lanelet2 map and point
# cloud (tests/interop/lanelet2_check.py); visualization_msgs (the bridge's /map/lanes) and scipy
# (a KD-tree: tests/interop/ros2_map.py fits a lidar scan to the exported point-cloud map).
# Needs Debian's python3 and python3-venv (scripts/setup.sh installs them). Safe to run again: it
# does nothing when the packages already import.
set -euo pipefail
cd "$(dirname "$0")/.."
python=/usr/bin/python3
venv=.venv
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import rclpy, sensor_msgs.msg, rosgraph_msgs.msg, geometry_msgs.msg, nav_msgs.msg, cyclonedds.domain, mcap.reader, websockets, google.protobuf, playwright, pyxodr.road_objects.road, lanelet2, pypcd4, visualization_msgs.msg, scipy.spatial' 2>/dev/null; then
  exit 0
fi
echo "==> making $venv with ROS 2 from PyPI (rclpy, sensor_msgs, ...) and the live view's clients"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check \
  "ros-rclpy[fastrtps]" ros-sensor-msgs ros-nav-msgs ros-geometry-msgs ros-std-msgs ros-rosgraph-msgs \
  ros-visualization-msgs scipy \
  cyclonedds mcap websockets protobuf playwright pyxodr==0.1.3 lanelet2==1.2.3 pypcd4==1.5.1
"$venv/bin/python" -c 'import rclpy, sensor_msgs.msg, visualization_msgs.msg' ||
  { echo "error: $venv has no working rclpy" >&2; exit 1; }
"$venv/bin/python" -c 'import mcap.reader, websockets, google.protobuf, playwright, pyxodr.road_objects.road, lanelet2, pypcd4, scipy.spatial' ||
  { echo "error: $venv has no mcap, websockets, protobuf, playwright, pyxodr, lanelet2, pypcd4 or scipy" >&2; exit 1; }
