# Shared by the scripts that carry convoy to a machine without a package registry
# (gpu_check.sh, scale_check.sh): sourced, not run.
#
#   carry_bin_dir            prints the directory of the binaries to carry: CONVOY_BIN_DIR, or
#                            target/release after `cargo build --release --workspace --bins`
#   carry_stripped STAGE DIR strips each of CARRY_BINARIES from DIR into STAGE (the build's own
#                            binaries stay as they are: symbols and debug info out, so the
#                            tarball fits what a run carries)

# What the benches start (beside the convoy executable: graph.rs, sibling_binary), and the
# bridge, which `convoy run --bridge` starts.
CARRY_BINARIES=(convoy convoy-agent convoy-coordinator convoy-sensor convoy-bridge)

carry_bin_dir() {
    local root bin_dir="${CONVOY_BIN_DIR:-}"
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    if [[ -z "$bin_dir" ]]; then
        (cd "$root" && cargo build --release --workspace --bins) >&2
        bin_dir="$root/target/release"
    fi
    (cd "$bin_dir" && pwd) || {
        echo "no directory $bin_dir" >&2
        return 1
    }
}

carry_stripped() {
    local stage="$1" bin_dir="$2" name
    mkdir -p "$stage"
    for name in "${CARRY_BINARIES[@]}"; do
        if [[ ! -x "$bin_dir/$name" ]]; then
            echo "$bin_dir/$name is missing: cargo build --release --workspace --bins" >&2
            return 1
        fi
        strip --strip-all -o "$stage/$name" "$bin_dir/$name"
    done
}
