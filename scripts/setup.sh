#!/usr/bin/env bash
# Installs what convoy needs on a fresh Debian machine (run as root), then builds the workspace
# once (dev profile, one target dir: tests and demo share the build). Safe to run again: it
# skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: a C toolchain for -sys crates, CycloneDDS (idlc + ddsperf + headers) as the
# independent DDS peer and latency reference; iproute2 and nftables for network-namespace hosts
# and their link conditions; OpenSSH for ssh:// hosts (the suite runs its own sshd); Python's
# venv for stock ROS 2 from PyPI (scripts/ros-venv.sh); Mesa's Vulkan drivers (lavapipe) and
# the Vulkan loader, on which cameras render without a GPU; Chromium, the browser the live
# view's test drives through examples/live_view.html (tests/interop/view_browser.py); DejaVu
# fonts for the text of `convoy experiment`'s plots; OpenSSL's library (convoy's DDS Security
# certificates and signed documents) and its command line (the independent check of them).
packages=(build-essential pkg-config libssl-dev openssl cyclonedds-tools cyclonedds-dev iproute2 nftables openssh-server openssh-client python3 python3-venv mesa-vulkan-drivers libvulkan1 chromium fonts-dejavu-core)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: installing ${missing[*]} needs root (or install them yourself)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
  echo "error: cargo not found: install Rust >= 1.88 (rustup) and run this again" >&2
  exit 1
fi

# rustdds logs at error level unless the user asks for more.
export RUST_LOG="${RUST_LOG:-warn,rustdds=error,wgpu_hal=error}"
echo "==> building the workspace (first build takes a few minutes on 2 cores)"
cargo build --workspace --bins --quiet
