#!/usr/bin/env bash
# Transport at scale, side by side in one run (issue 41): the 64 B reliable round trip against
# CycloneDDS's ddsperf at full rate and at 1 kHz, with convoy's receive threads on and off; the
# 1 MiB and 4 MiB round trips; lockstep in peer and relay exchange at 16, 64 and 128 agents.
# The same script runs here (2 cores) and on a bigger machine without a package registry, from
# a tarball made here.
#
# usage:
#   scripts/scale_check.sh run    # measure; CSV files and logs go to $OUT (default scale-out/)
#   scripts/scale_check.sh pack   # here: stripped release binaries, and ddsperf with the
#                                 # libraries it loads, into scale-carry/convoy-scale.tar.xz
#
# On a machine with the tarball (scale-carry/ carried along), `run` unpacks it and uses its
# binaries and ddsperf; without one it uses CONVOY_BIN_DIR (default target/debug, the test
# build) and the ddsperf on PATH (Debian cyclonedds-tools).
#
# Environment:
#   CONVOY_BIN_DIR     the convoy binaries (run without a tarball; pack: instead of building)
#   OUT                where results go (default scale-out/ in the repository, ignored by git)
#   SCALE_AGENTS       lockstep agent counts (default 16,64,128; above 64 two agents share a
#                      process: RTPS gives one host at most 120 participant ids)
#   SCALE_FRAMES       lockstep frames per run (default 300)
#   SCALE_DURATION     seconds per round-trip size (default 5)
#   SCALE_TIMEOUT      seconds any one bench may take (default 900)

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARRY="$ROOT/scale-carry"
TARBALL="$CARRY/convoy-scale.tar.xz"
# shellcheck source=scripts/carry.sh
source "$ROOT/scripts/carry.sh"

die() {
    echo "scale_check: $*" >&2
    exit 1
}

pack() {
    local bin_dir
    bin_dir="$(carry_bin_dir)" || die "no binaries to carry"
    local stage
    stage="$(mktemp -d)"
    # shellcheck disable=SC2064 # expand now: the trap outlives the local
    trap "rm -rf '$stage'" EXIT
    mkdir -p "$stage/bin" "$stage/lib" "$CARRY"
    carry_stripped "$stage/bin" "$bin_dir" || die "cannot stage the binaries"
    # ddsperf and the CycloneDDS libraries it loads (not the C library's own).
    local ddsperf
    ddsperf="$(command -v ddsperf)" || die "no ddsperf here (apt-get install cyclonedds-tools)"
    cp "$ddsperf" "$stage/bin/"
    ldd "$ddsperf" | awk '/=> \// {print $3}' | grep -E 'ddsc|cdr|iceoryx' |
        xargs -r -I{} cp -L {} "$stage/lib/"
    git -C "$ROOT" rev-parse HEAD >"$stage/COMMIT" 2>/dev/null || echo unknown >"$stage/COMMIT"
    XZ_OPT="${XZ_OPT:--6 -T0}" tar -C "$stage" -cJf "$TARBALL" .
    echo "wrote $TARBALL ($(($(stat -c %s "$TARBALL") / 1048576)) MiB)"
}

run_check() {
    local out="${OUT:-$ROOT/scale-out}"
    local agents="${SCALE_AGENTS:-16,64,128}"
    local frames="${SCALE_FRAMES:-300}"
    local duration="${SCALE_DURATION:-5}"
    local limit="${SCALE_TIMEOUT:-900}"
    local bin_dir="${CONVOY_BIN_DIR:-$ROOT/target/debug}"
    mkdir -p "$out"
    if [[ -f "$TARBALL" ]]; then
        local work
        work="$(mktemp -d)"
        tar -C "$work" -xJf "$TARBALL"
        bin_dir="$work/bin"
        export PATH="$work/bin:$PATH" LD_LIBRARY_PATH="$work/lib:${LD_LIBRARY_PATH:-}"
    fi
    local convoy="$bin_dir/convoy"
    [[ -x "$convoy" ]] || die "no $convoy (cargo build --workspace --bins, or CONVOY_BIN_DIR)"
    command -v ddsperf >/dev/null || die "no ddsperf (apt-get install cyclonedds-tools)"
    cd "$ROOT"
    {
        echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(hostname), $(nproc) CPUs"
        grep -m1 'model name' /proc/cpuinfo || true
        echo "convoy $convoy"
    } | tee "$out/scale_check.log"

    local domain=180
    bench() { # NAME ARGS...: one bench, its output in the log, its CSV in $out/NAME.csv
        local name="$1"
        shift
        echo "==> $name: convoy -d $domain bench $*" | tee -a "$out/scale_check.log"
        timeout "$limit" "$convoy" -d "$domain" bench "$@" --out "$out/$name.csv" 2>&1 |
            tee -a "$out/scale_check.log" || echo "$name: failed or timed out" | tee -a "$out/scale_check.log"
        domain=$((domain + 1))
    }
    for threads in on off; do
        export CONVOY_RECEIVE_THREADS="$threads"
        bench "rtt_full_receive_threads_$threads" latency --sizes 64 --duration "$duration" --baseline ddsperf
        bench "rtt_1khz_receive_threads_$threads" latency --sizes 64 --duration "$duration" --rate 1000 --baseline ddsperf
    done
    unset CONVOY_RECEIVE_THREADS
    bench rtt_large latency --sizes 1048576,4194304 --duration "$duration"
    local n
    for n in ${agents//,/ }; do
        local per=1
        ((n > 64)) && per=2
        bench "lockstep_${n}_agents" lockstep --agents "$n" --exchange peer,relay --frames "$frames" --agents-per-process "$per"
    done
    echo "results in $out"
}

case "${1:-}" in
pack) pack ;;
run) run_check ;;
*) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' && exit 2 ;;
esac
