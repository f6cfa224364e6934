#!/bin/bash
# Runs hardened_program (see hardened_program.c) with a drop-in library in LD_PRELOAD: with the
# release library, its misuse cases in the hardened profile and its clean workload with the
# defaults and in the hardened profile; with the debug library (which has no hardened profile),
# the clean workload with the defaults.
set -u
so=$(readlink -f "$1")
prog=$2
runs=("clean:")
case "$(basename "$so")" in
*debug*) ;;
*) runs=("clean:" "clean:hardened=1" "misuse:hardened=1") ;;
esac
for run in "${runs[@]}"; do
    mode=${run%%:*}
    options=${run#*:}
    out=$(LD_PRELOAD=$so RAMPART_OPTIONS=$options "$prog" "$mode" 2>&1)
    status=$?
    if [ $status -ne 0 ] || [ "$(printf '%s\n' "$out" | tail -1)" != "hardened ok" ]; then
        echo "FAIL ($mode, RAMPART_OPTIONS='$options'): status $status"
        echo "$out"
        exit 1
    fi
    echo "ok ($mode, RAMPART_OPTIONS='$options')"
done
echo "all checks passed"
