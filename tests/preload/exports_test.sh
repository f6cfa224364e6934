#!/bin/bash
# A malloc library (librampart_malloc.so, librampart_malloc_debug.so) exports exactly the
# symbols of its export map: the allocation functions and rampart's public API (plus, for the
# debug flavour, its debug API), nothing internal that could clash with a program; and it
# depends on no other libraries than the ones given.
#   exports_test.sh LIBRARY EXPORT_MAP 'NEEDED LIBRARIES' RAMPART_H
set -u
so=$1
map=$2
needed_libs=$3
rampart_h=$4
expected=$(sed -n '/global:/,/local:/p' "$map" | sed 's,/\*.*\*/,,' | tr ' ;' '\n\n' | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | grep -v '^global$\|^local$' | sort -u)
actual=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TWDBR]$/ { print $3 }' | sed 's/@.*//' | sort -u)
if [ "$expected" != "$actual" ]; then
    echo "FAIL: exported symbols differ from $map"
    diff <(echo "$expected") <(echo "$actual")
    exit 1
fi
for needed in malloc free calloc realloc posix_memalign aligned_alloc memalign valloc pvalloc \
    malloc_usable_size reallocarray cfree rp_malloc_stats_print; do
    echo "$actual" | grep -qx "$needed" || { echo "FAIL: $needed not exported"; exit 1; }
done
if nm -D --defined-only "$so" | awk '$2 ~ /^[TWDBR]$/ { print $3 }' | grep -q '^rp_span\|^rp_pagemap\|^rp_tc_'; then
    echo "FAIL: internal symbols exported"
    exit 1
fi
# The soname carries the major version (RAMPART_VERSION_MAJOR), as Meson's install has it.
soname=$(readelf -d "$so" | awk '/SONAME/ { print $5 }' | tr -d '[]')
major=$(sed -n 's/^#define RAMPART_VERSION_MAJOR \([0-9]*\)$/\1/p' "$rampart_h")
[ "$soname" = "$(basename "$so").$major" ] || { echo "FAIL: soname '$soname', expected $(basename "$so").$major"; exit 1; }
# (a sanitizer configuration adds its runtime)
deps=$(readelf -d "$so" | awk '/NEEDED/ { print $5 }' | tr -d '[]' | grep -v 'san\.so' | sort | tr '\n' ' ')
want=$(echo "$needed_libs" | tr ' ' '\n' | sort | tr '\n' ' ')
[ "$deps" = "$want" ] || { echo "FAIL: dependencies '$deps', expected '$want'"; exit 1; }
echo "$(echo "$actual" | wc -l) symbols exported, all listed; depends on $deps"
