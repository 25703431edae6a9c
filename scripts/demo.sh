#!/usr/bin/env bash
# Sets up convoy and runs the demo: the DDS latency benchmark between two convoy processes,
# with CycloneDDS's ddsperf measured beside it, and a 10,000-sample reliable burst.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export RUST_LOG="${RUST_LOG:-warn,rustdds=error}"
echo "==> convoy bench latency (two processes, reliable 'bench' profile of qos/convoy.xml)"
exec target/debug/convoy --domain "${CONVOY_DOMAIN:-42}" bench latency \
  --qos qos/convoy.xml::convoy --sizes 64,4096,65536,1048576 --duration 3 \
  --baseline ddsperf --burst 10000 "$@"
