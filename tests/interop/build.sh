#!/usr/bin/env bash
# Builds the CycloneDDS programs: C types generated from idl/convoy.idl by Cyclone's idlc, plus
# tests/interop/cyclone_peer.c (the interop peer) and cyclone_sink.c (`convoy bench images
# --reader cyclone`), into OUTDIR/cyclone_peer and OUTDIR/cyclone_sink; and
# rogue_access_control.c (an access control plugin that skips its own writer check, for the
# secured tests) into OUTDIR/rogue_access_control.so.
#
# Usage: tests/interop/build.sh OUTDIR
# Exit status: 0 built or up to date, 2 when the CycloneDDS tools or headers are missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
idl="$(cd "$here/../../idl" && pwd)/convoy.idl"
src="$here/cyclone_peer.c"
cc="${CC:-gcc}"

if [ "$#" -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 1
fi
mkdir -p "$1"
out="$(cd "$1" && pwd)"
bin="$out/cyclone_peer"
sink_src="$here/cyclone_sink.c"
sink="$out/cyclone_sink"
rogue_src="$here/rogue_access_control.c"
rogue="$out/rogue_access_control.so"

up_to_date() {
  [ -x "$1" ] && [ "$1" -nt "$idl" ] && [ "$1" -nt "$2" ] && [ "$1" -nt "$here/build.sh" ]
}
if up_to_date "$bin" "$src" && up_to_date "$sink" "$sink_src" && up_to_date "$rogue" "$rogue_src"; then
  exit 0
fi

need_packages() {
  echo "tests/interop/build.sh: $1" >&2
  echo "tests/interop/build.sh: install CycloneDDS with: apt-get install cyclonedds-tools cyclonedds-dev" >&2
  exit 2
}
command -v "$cc" >/dev/null 2>&1 || { echo "tests/interop/build.sh: C compiler '$cc' not found (apt-get install gcc)" >&2; exit 2; }
command -v idlc >/dev/null 2>&1 || need_packages "idlc not found (package cyclonedds-tools)"
# Headers and libddsc together: a one-line program must compile and link.
printf '#include <dds/dds.h>\nint main (void) { return dds_delete (0) == 0; }\n' |
  "$cc" -x c - -o /dev/null -lddsc >/dev/null 2>&1 ||
  need_packages "<dds/dds.h> or libddsc not usable (package cyclonedds-dev)"

# Build in a private directory and rename into place, so test processes that run this script
# concurrently never see (or execute) a half-written binary.
tmp="$(mktemp -d "$out/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
idlc -o "$tmp" "$idl"
"$cc" -O1 -Wall -Werror -I"$tmp" -o "$tmp/cyclone_peer" "$src" "$tmp/convoy.c" -lddsc
"$cc" -O2 -Wall -Werror -I"$tmp" -o "$tmp/cyclone_sink" "$sink_src" "$tmp/convoy.c" -lddsc
mv -f "$tmp/convoy.h" "$tmp/convoy.c" "$out/"
mv -f "$tmp/cyclone_peer" "$bin"
mv -f "$tmp/cyclone_sink" "$sink"
# The DDS Security plugin API's headers come with cyclonedds-dev; the plugin wraps Debian's.
"$cc" -O1 -Wall -Werror -shared -fPIC -o "$tmp/rogue_access_control.so" "$rogue_src" -ldl
mv -f "$tmp/rogue_access_control.so" "$rogue"
