#!/usr/bin/env bash
# Makes .venv with stock ROS 2 (Kilted, Fast DDS) from PyPI: rclpy and the message packages
# convoy's ROS 2 tests, examples/ and `convoy bench images --reader rclpy` use, and CycloneDDS's
# Python binding (the independent reader of the bridge's /tf), and Foxglove's `mcap` reader (the
# independent reader of `convoy record`'s files). Needs Debian's python3 and
# python3-venv (scripts/setup.sh installs them). Safe to run again: it does nothing when the
# packages already import.
set -euo pipefail
cd "$(dirname "$0")/.."
python=/usr/bin/python3
venv=.venv
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import rclpy, sensor_msgs.msg, rosgraph_msgs.msg, geometry_msgs.msg, nav_msgs.msg, cyclonedds.domain, mcap.reader' 2>/dev/null; then
  exit 0
fi
echo "==> making $venv with ROS 2 from PyPI (rclpy, sensor_msgs, ...)"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check \
  "ros-rclpy[fastrtps]" ros-sensor-msgs ros-nav-msgs ros-geometry-msgs ros-std-msgs ros-rosgraph-msgs \
  cyclonedds mcap
"$venv/bin/python" -c 'import rclpy, sensor_msgs.msg' ||
  { echo "error: $venv has no working rclpy" >&2; exit 1; }
