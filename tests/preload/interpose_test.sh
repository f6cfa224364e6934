#!/bin/bash
# Runs interpose (see interpose.c: a program exporting functions named like rampart's API)
# with a malloc library in LD_PRELOAD: the library must call its own functions, not the
# program's.
#   interpose_test.sh LIBRARY PROGRAM
set -u
so=$(readlink -f "$1")
prog=$2
err=$(mktemp)
out=$(LD_PRELOAD=$so "$prog" 2>"$err")
rc=$?
if [ $rc -ne 0 ] || [ "$out" != "interpose ok" ]; then
    echo "FAIL (exit $rc): $out"
    grep -v '^  \|^rampart' "$err" | head -5
    rm -f "$err"
    exit 1
fi
rm -f "$err"
echo "interpose ok: the library's calls stayed inside it"
echo "all checks passed"
