#!/bin/bash
# Runs PROGRAM with a drop-in library in LD_PRELOAD once per RAMPART_OPTIONS string given
# (the first one normally empty: the defaults); each run must exit 0 and print OK_LINE last.
# (The debug flavour warns about release-only options and runs with its defaults.)
#   expect_ok_test.sh LIBRARY PROGRAM OK_LINE OPTIONS...
set -u
so=$(readlink -f "$1")
prog=$2
ok_line=$3
shift 3
for options in "$@"; do
    out=$(LD_PRELOAD=$so RAMPART_OPTIONS=$options "$prog" 2>&1)
    status=$?
    if [ $status -ne 0 ] || [ "$(printf '%s\n' "$out" | tail -1)" != "$ok_line" ]; then
        echo "FAIL (RAMPART_OPTIONS='$options'): status $status"
        echo "$out"
        exit 1
    fi
    echo "ok (RAMPART_OPTIONS='$options')"
done
echo "all checks passed"
