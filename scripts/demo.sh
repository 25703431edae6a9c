#!/usr/bin/env bash
# Sets up convoy and runs the demo: launch/demo.toml (sixteen cars driving CARLA's Town01 as
# separate processes: coordinator + agent processes, lockstep over DDS, a sensor node and the ROS 2
# bridge, watched by a stock rclpy node, recorded to an MCAP file, served to a live view) with a
# state log, then the DDS latency benchmark between two convoy processes with CycloneDDS's
# ddsperf beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export RUST_LOG="${RUST_LOG:-warn,rustdds=error,wgpu_hal=error,ros2_client::distributions=error}"
domain="${CONVOY_DOMAIN:-42}"
mkdir -p target/demo
bash scripts/ros-venv.sh
echo "==> convoy launch launch/demo.toml: 30 s of simulated time, state log in target/demo/;"
echo "    a stock ROS 2 node (examples/ros2_watch.py) prints what the bridge serves; while it runs,"
echo "    the live view is on ws://127.0.0.1:8765: open it in Foxglove, or open"
echo "    file://$PWD/examples/live_view.html?ws=ws://127.0.0.1:8765 in a browser"
ROS_DOMAIN_ID=42 .venv/bin/python examples/ros2_watch.py --count 3 --timeout 120 &
watcher=$!
target/debug/convoy launch launch/demo.toml --state-log target/demo/town.jsonl
wait "$watcher" || true
echo "==> $(wc -l < target/demo/town.jsonl) agent states logged (one JSON line per agent per frame)"
echo "==> the run is recorded in target/demo/demo.mcap ($(du -h target/demo/demo.mcap | cut -f1));"
echo "    play it again with: target/debug/convoy --domain 42 replay target/demo/demo.mcap"
echo "==> convoy bench latency (two processes, reliable 'bench' profile of qos/convoy.xml)"
exec target/debug/convoy --domain "$domain" bench latency \
  --qos qos/convoy.xml::convoy --sizes 64,4096,65536,1048576 --duration 3 \
  --baseline ddsperf --burst 10000 "$@"
