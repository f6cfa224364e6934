#!/bin/bash
# Runs PROGRAM with a drop-in library in LD_PRELOAD once per RAMPART_OPTIONS string given
# (the first one normally empty: the defaults); each run must exit 0 and print OK_LINE last.
# (The debug flavour warns about release-only options and runs with its defaults.)
#   expect_ok_test.sh LIBRARY PROGRAM OK_LINE OPTIONS...
set -u
. "$(dirname "$0")/run_preloaded.sh"
so=$(readlink -f "$1")
prog=$2
ok_line=$3
shift 3
for options in "$@"; do
    run_preloaded "$so" "$ok_line" "$options" "$prog"
done
echo "all checks passed"
