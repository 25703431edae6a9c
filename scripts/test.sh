#!/usr/bin/env bash
# Sets up convoy and runs the whole test suite: formatting, unit tests, and the end-to-end
# suites (real processes, real DDS traffic, CycloneDDS as an independent peer). One dev-profile
# build in one target dir; nothing is built twice.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Stock ROS 2 (rclpy, Fast DDS) from PyPI in .venv: the rclpy peer of the large-sample tests.
bash scripts/ros-venv.sh
export RUST_LOG="${RUST_LOG:-warn,rustdds=error,wgpu_hal=error,ros2_client::distributions=error}"
echo "==> cargo fmt --check"
cargo fmt --all -- --check
echo "==> cargo test"
# Binaries first: the end-to-end suites start them as separate processes.
cargo build --workspace --bins --tests --quiet
cargo test --workspace --no-fail-fast
echo "==> the vendored rustdds's own unit tests (convoy's changes: vendor/rustdds/CHANGES.md)"
# With `security`, as convoy builds it: its DDS Security tests run too.
cargo test --manifest-path vendor/rustdds/Cargo.toml --target-dir target --lib --features security --quiet
