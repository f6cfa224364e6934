#!/bin/sh
# Compares a fuzz target's manifest, generated from the Bazel graph, with the checked-in copy
# that tools/fuzz.sh and .clusterfuzzlite/build.sh build from (they run without Bazel).
generated=$1
checked_in=$2
if ! diff -u "$checked_in" "$generated"; then
    echo "fuzz/manifests is out of date with the BUILD files: run tools/fuzz.sh --update-manifests" >&2
    exit 1
fi
