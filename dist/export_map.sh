#!/bin/sh
# Prints a linker version script made from an export map (dist/exports.map) and an optional
# list of extra symbol lines (dist/exports_debug_extra.txt), inserted before "local: *;".
#   export_map.sh all MAP [EXTRA]   every symbol of MAP: the malloc libraries
#   export_map.sh api MAP [EXTRA]   only MAP's "rampart.h" section: the heap API libraries
#                                   (librampart.so, librampart_debug.so, Meson's install)
# Bazel (dist/BUILD) and Meson (meson.build) both build their maps with it.
set -eu
mode=$1
map=$2
extra=${3:-}
awk -v mode="$mode" -v extra="$extra" '
BEGIN { if (extra != "") while ((getline line < extra) > 0) add = add line "\n" }
/^ *local:/ { printf "%s", add; print; next }
/^ *\/\*/ { section = $0 }
mode == "api" && section !~ /\/\* rampart\.h \*\// && /^ *(\/\*|[A-Za-z_].*;[ \t]*$)/ && !/:/ { next }
{ print }
' "$map"
