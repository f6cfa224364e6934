#!/bin/bash
# Runs corners (see corners.c) with librampart_malloc.so in LD_PRELOAD, with the defaults and
# with a tiny thread cache.
set -u
so=$(readlink -f "$1")
prog=$2
for options in "" "cache_bytes=2K:arenas=1"; do
    # The debug flavour prints the report of the deliberate invalid free before it calls the
    # program's report function: the verdict is the exit status and the last line.
    out=$(LD_PRELOAD=$so RAMPART_OPTIONS=$options "$prog" 2>&1)
    status=$?
    if [ $status -ne 0 ] || [ "$(printf '%s\n' "$out" | tail -1)" != "corners ok" ]; then
        echo "FAIL (RAMPART_OPTIONS='$options'):"
        echo "$out"
        exit 1
    fi
    echo "ok (RAMPART_OPTIONS='$options')"
done
echo "all checks passed"
