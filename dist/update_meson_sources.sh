#!/bin/sh
# Writes dist/meson_sources.txt (what meson.build compiles) from the Bazel graph. Run it from
# the source root after changing which sources or flags a library has in a BUILD file.
set -eu
tools/bazelw build //dist:meson_sources_graph
cp -f bazel-bin/dist/meson_sources_graph.txt dist/meson_sources.txt
chmod 644 dist/meson_sources.txt
echo "dist/meson_sources.txt updated"
