#!/bin/sh
# Compares what the Meson build compiles, generated from the Bazel graph, with the checked-in
# dist/meson_sources.txt that meson.build reads (Meson runs without Bazel).
generated=$1
checked_in=$2
if ! diff -u "$checked_in" "$generated"; then
    echo "dist/meson_sources.txt is out of date with the BUILD files: run dist/update_meson_sources.sh" >&2
    exit 1
fi
