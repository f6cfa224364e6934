#!/bin/sh
# Installs the Debian 12 packages rampart's build, tests and benchmarks need, when any is
# missing. Idempotent and silent when everything is already there; needs root (or sudo)
# only when something must be installed.
#
#   bazel-bootstrap bazel-rules-java   Bazel 4.2.3 and the rules_java it needs offline
#   clang lld llvm libclang-rt-14-dev  --config=clang/asan/fuzz, libFuzzer, llvm-symbolizer, llvm-cov
#   libunwind-dev                      unw_backtrace for the debug flavour (replaces LLVM's libunwind-14-dev)
#   valgrind                           the Valgrind integration test
#   python3 sqlite3 git                real programs run under LD_PRELOAD by the tests
#   libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4   peers compared by rpbench
#   cmake ninja-build                  building the mimalloc-bench suite for rpbench
#   libdw-dev                          file:line symbolisation (DWARF) in the debug flavour
#   google-perftools                   google-pprof, which reads rpdump's heap profiles (tests)
#   librsvg2-bin                       rsvg-convert, which renders rpdump's and rpbench's SVGs (tests)
#   meson                              the Meson build for consumers (install test)
set -eu

PACKAGES="bazel-bootstrap bazel-rules-java clang lld llvm libclang-rt-14-dev libunwind-dev
pkg-config valgrind python3 sqlite3 git libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4
cmake ninja-build libdw-dev google-perftools librsvg2-bin meson"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

echo "setup: installing:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends $missing; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "setup: apt-get failed" >&2
    exit 1
fi
rm -f "$log"
