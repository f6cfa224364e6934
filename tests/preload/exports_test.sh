#!/bin/bash
# librampart_malloc.so exports exactly the symbols of dist/exports.map: the allocation
# functions and rampart's public API, nothing internal that could clash with a program.
set -u
so=$1
map=$2
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
# (a sanitizer configuration adds its runtime)
deps=$(readelf -d "$so" | awk '/NEEDED/ { print $5 }' | tr -d '[]' | grep -v 'san\.so' | sort | tr '\n' ' ')
[ "$deps" = "libc.so.6 libm.so.6 " ] || { echo "FAIL: unexpected dependencies: $deps"; exit 1; }
echo "$(echo "$actual" | wc -l) symbols exported, all listed; depends on $deps"
