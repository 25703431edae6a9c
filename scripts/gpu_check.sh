#!/usr/bin/env bash
# The camera bench on a machine with an NVIDIA GPU and no package registry (issue 39): convoy's
# stripped release binaries and the Vulkan loader they need travel in one tarball, made here;
# there it is unpacked and `convoy bench sensors --adapter gpu` runs from it.
#
# usage:
#   scripts/gpu_check.sh pack   # here: cargo build --release --workspace --bins, strip the
#                               # binaries, apt-get download libvulkan1 (Debian bookworm), and
#                               # write gpu-carry/convoy-gpu.tar.xz (ignored by git)
#   scripts/gpu_check.sh run    # there (from the repository root, gpu-carry/ carried along):
#                               # unpack into a temporary directory, put the carried loader on
#                               # LD_LIBRARY_PATH and the NVIDIA ICD in VK_DRIVER_FILES, name the
#                               # card and the camera adapter, run the bench; CSV and logs go to
#                               # $OUT (or gpu-out/ in the repository, ignored by git)
#
# On the device machine, e.g.: run(command="scripts/gpu_check.sh run", carry=["gpu-carry"]).
# The tarball must fit what a run carries (64 MiB); `pack` says how large it is.
#
# Environment:
#   CONVOY_BIN_DIR     pack: take the binaries from this directory (e.g. target/debug) instead
#                      of building release ones
#   GPU_CHECK_DEBS     pack: a directory of .deb files to carry instead of downloading
#                      libvulkan1 (for a machine without a registry either)
#   GPU_CHECK_TARBALL  run: the tarball (default gpu-carry/convoy-gpu.tar.xz)
#   OUT                run: where the results go (default gpu-out/ in the repository)
#   GPU_CHECK_ADAPTER  run: the camera adapter, gpu (default), auto or cpu: auto lets a
#                      machine without a GPU run the whole check on the CPU (lavapipe)
#   GPU_CHECK_FRAMES   run: frames per bench run (default 600)
#   GPU_CHECK_TIMEOUT  run: seconds the bench may take (default 420)
#   GPU_CHECK_ICD      run: the Vulkan ICD file (default the NVIDIA one, if present:
#                      /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json)
#
# Results (run): $OUT/gpu_sensors.csv (and gpu_sensors_stages.csv), gpu_sensors.log (the
# bench's output), adapter_probe.log (a 30-frame `convoy run` of the 1440x960 camera
# scenario, whose sensor node names its adapter: `bench sensors` does not show its nodes'
# lines), gpu_check.log (card, loader, adapter, environment).

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARRY="$ROOT/gpu-carry"
TARBALL_NAME="convoy-gpu.tar.xz"
# shellcheck source=scripts/carry.sh
source "$ROOT/scripts/carry.sh"
# What a run may carry in all; the tarball should leave room for the working tree.
CARRY_LIMIT_MIB=60
NVIDIA_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json

die() {
    echo "gpu_check: $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}

pack() {
    local bin_dir
    bin_dir="$(carry_bin_dir)" || die "no binaries to carry"
    local stage
    stage="$(mktemp -d)"
    # shellcheck disable=SC2064 # expand now: the trap outlives the local
    trap "rm -rf '$stage'" EXIT
    mkdir -p "$stage/bin" "$stage/debs" "$stage/scenarios" "$CARRY"

    carry_stripped "$stage/bin" "$bin_dir" || die "cannot stage the binaries"

    # The Vulkan loader (libvulkan.so.1) as Debian bookworm packages it; the driver (the ICD)
    # is the GPU machine's own.
    if [[ -n "${GPU_CHECK_DEBS:-}" ]]; then
        cp "$GPU_CHECK_DEBS"/*.deb "$stage/debs/" || die "no .deb files in $GPU_CHECK_DEBS"
    else
        (cd "$stage/debs" && apt-get download libvulkan1) ||
            die "apt-get download libvulkan1 failed (GPU_CHECK_DEBS=DIR carries .debs of your own)"
    fi
    ls "$stage"/debs/libvulkan1_*.deb >/dev/null 2>&1 || die "no libvulkan1 .deb to carry"

    # The scenario whose sensor node names its camera adapter (the probe in `run`).
    cp "$ROOT/launch/scenarios/camera_1440.toml" "$stage/scenarios/"

    {
        echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
        echo "commit $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(
            git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)'
        )"
        echo "binaries from $bin_dir"
        (cd "$stage" && sha256sum bin/* debs/* scenarios/*)
    } >"$stage/MANIFEST"

    local tarball="$CARRY/$TARBALL_NAME"
    XZ_OPT="${XZ_OPT:--6 -T0}" tar -C "$stage" -cJf "$tarball.part" .
    mv "$tarball.part" "$tarball"
    local mib=$(($(stat -c %s "$tarball") / 1048576))
    echo "wrote $tarball (${mib} MiB):"
    sed 's/^/  /' "$stage/MANIFEST"
    if ((mib > CARRY_LIMIT_MIB)); then
        echo "gpu_check: warning: ${mib} MiB is more than a device run carries (${CARRY_LIMIT_MIB} MiB with the tree)" >&2
    fi
}

# Unpacks the .deb files of $1/debs into $1/vulkan; prints the directory of libvulkan.so.1.
unpack_loader() {
    local work="$1" deb
    mkdir -p "$work/vulkan"
    for deb in "$work"/debs/*.deb; do
        if command -v dpkg-deb >/dev/null; then
            dpkg-deb -x "$deb" "$work/vulkan"
        else
            # A .deb is an ar archive with the files in data.tar.*.
            local tmp
            tmp="$(mktemp -d)"
            (cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$work/vulkan")
            rm -rf "$tmp"
        fi
    done
    local lib
    lib="$(find "$work/vulkan" -name 'libvulkan.so.1' -print -quit)"
    [[ -n "$lib" ]] || die "no libvulkan.so.1 in the carried packages"
    dirname "$lib"
}

run_check() {
    local tarball="${GPU_CHECK_TARBALL:-$CARRY/$TARBALL_NAME}"
    local out="${OUT:-$ROOT/gpu-out}"
    local adapter="${GPU_CHECK_ADAPTER:-gpu}"
    local frames="${GPU_CHECK_FRAMES:-600}"
    local limit="${GPU_CHECK_TIMEOUT:-420}"
    local icd="${GPU_CHECK_ICD:-$NVIDIA_ICD}"
    [[ -f "$tarball" ]] || die "$tarball is missing: scripts/gpu_check.sh pack (here), then carry gpu-carry"
    mkdir -p "$out"
    out="$(cd "$out" && pwd)"
    local work
    work="$(mktemp -d)"
    # shellcheck disable=SC2064 # expand now: the trap outlives the local
    trap "rm -rf '$work'" EXIT
    tar -xJf "$tarball" -C "$work"
    local bin="$work/bin"
    for name in "${CARRY_BINARIES[@]}"; do
        [[ -x "$bin/$name" ]] || die "$name is not in $tarball"
    done

    # The carried loader first; the NVIDIA driver's libraries (which its ICD names by file
    # name only) where the container runtime mounts them.
    local loader_dir nvidia_libs=""
    loader_dir="$(unpack_loader "$work")"
    for dir in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
        [[ -d "$dir" ]] && nvidia_libs+=":$dir"
    done
    export LD_LIBRARY_PATH="$loader_dir$nvidia_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [[ -f "$icd" ]]; then
        # VK_DRIVER_FILES: loader 1.3.207 and later; VK_ICD_FILENAMES: older ones.
        export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
    fi

    local log="$out/gpu_check.log"
    : >"$log"
    say() { echo "$*" | tee -a "$log"; }
    say "== gpu_check run: adapter $adapter, $frames frames, results in $out"
    sed 's/^/  /' "$work/MANIFEST" >>"$log"
    local card
    if command -v nvidia-smi >/dev/null; then
        card="$(nvidia-smi -L 2>&1 || true)"
    else
        card="(no nvidia-smi)"
    fi
    say "card: $card"
    say "loader: $loader_dir/libvulkan.so.1 ($(basename "$(readlink -f "$loader_dir/libvulkan.so.1")"))"
    if [[ -n "${VK_DRIVER_FILES:-}" ]]; then
        say "ICD: $VK_DRIVER_FILES"
    else
        say "ICD: the loader's own search ($icd not found)"
    fi
    say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

    # The adapter, as a sensor node names it, and the loader it loaded (the dynamic linker's
    # log of this short run).
    local probe="$out/adapter_probe.log" ld_debug="$work/ld_debug"
    mkdir -p "$ld_debug"
    local probe_ok=0
    LD_DEBUG=libs LD_DEBUG_OUTPUT="$ld_debug/ld" timeout 120 \
        "$bin/convoy" --domain auto run "$work/scenarios/camera_1440.toml" \
        --frames 30 --adapter "$adapter" >"$probe" 2>&1 &
    local pid=$!
    # A sensor node that finds no such adapter stops at once, and the run would wait a minute
    # for it: stopped (Ctrl-C) as soon as the node says so.
    while kill -0 "$pid" 2>/dev/null; do
        if grep -q '^\[sensor/[^]]*\] error:' "$probe"; then
            kill -INT "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.2
    done
    wait "$pid" || probe_ok=$?
    local adapter_line loaded
    adapter_line="$(grep -m1 'camera adapter:' "$probe" | sed 's/^.*camera adapter: //' || true)"
    loaded="$(grep -h 'calling init: .*libvulkan\.so' "$ld_debug"/ld.* 2>/dev/null |
        sed 's/^.*calling init: //' | sort -u | paste -sd ' ' || true)"
    say "camera adapter: ${adapter_line:-(none named)}"
    say "libvulkan loaded: ${loaded:-(not seen)}"
    if ((probe_ok != 0)) || [[ -z "$adapter_line" ]]; then
        grep '^\[sensor/[^]]*\] error:' "$probe" | tee -a "$log" >&2 || tail -n 30 "$probe" >&2
        die "the adapter probe failed (exit $probe_ok): $probe"
    fi

    local csv="$out/gpu_sensors.csv"
    say "== convoy bench sensors --camera 180x120,1440x960 --sensor-nodes 1,2 --adapter $adapter"
    local bench_ok=0
    timeout "$limit" "$bin/convoy" --domain auto bench sensors --agents 4 --sensors none \
        --camera 180x120,1440x960 --sensor-nodes 1,2 --frames "$frames" \
        --adapter "$adapter" --out "$csv" 2>&1 | tee "$out/gpu_sensors.log" || bench_ok=$?
    ((bench_ok == 0)) || die "the bench failed (exit $bench_ok): $out/gpu_sensors.log"
    [[ -s "$csv" ]] || die "the bench wrote no $csv"
    say "== $csv"
    tee -a "$log" <"$csv"
    say "== card: $card"
    say "== camera adapter: $adapter_line"
}

case "${1:-}" in
pack) pack ;;
run) run_check ;;
-h | --help | help) usage 0 ;;
*) usage 2 >&2 ;;
esac
