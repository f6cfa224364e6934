#!/bin/bash
# Runs hardened_program (see hardened_program.c) with a drop-in library in LD_PRELOAD: with the
# release library, its misuse cases in the hardened profile and its clean workload with the
# defaults and in the hardened profile; with the debug library (which has no hardened profile),
# the clean workload with the defaults.
set -u
. "$(dirname "$0")/run_preloaded.sh"
so=$(readlink -f "$1")
prog=$2
runs=("clean:")
case "$(basename "$so")" in
*debug*) ;;
*) runs=("clean:" "clean:hardened=1" "misuse:hardened=1") ;;
esac
for run in "${runs[@]}"; do
    run_preloaded "$so" "hardened ok" "${run#*:}" "$prog" "${run%%:*}"
done
echo "all checks passed"
