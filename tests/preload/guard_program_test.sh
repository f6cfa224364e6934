#!/bin/bash
# Runs guard_program (see guard_program.c) with a drop-in library in LD_PRELOAD and guarded
# blocks on: each bug reported at the access (or the call), a clean workload with every block
# guarded and with one in ten, and the default report function ending the process after a
# report that names the bug.
set -u
. "$(dirname "$0")/run_preloaded.sh"
so=$(readlink -f "$1")
prog=$2
fail() {
    echo "FAIL: $*"
    exit 1
}
for run in "faults:guard=all" "faults-left:guard=all:guard_left=1" "clean:guard=sample:10" "clean:guard=all"; do
    run_preloaded "$so" "guard ok" "${run#*:}" "$prog" "${run%%:*}"
done
# kind -> what the report must say
for kind in overflow-read use-after-free-write double-free; do
    out=$(LD_PRELOAD=$so RAMPART_OPTIONS=guard=all "$prog" abort "$kind" 2>&1)
    status=$?
    [ $status -eq 134 ] || fail "abort $kind: status $status, not SIGABRT: $out"
    case $kind in
    overflow-read) want="READ of" ;;
    use-after-free-write) want="WRITE of" ;;
    double-free) want="already free" ;;
    esac
    printf '%s\n' "$out" | grep -q "$want" || fail "abort $kind: no '$want' in: $out"
    printf '%s\n' "$out" | grep -q "not caught" && fail "abort $kind: the program went on"
    echo "ok (abort $kind)"
done
echo "all checks passed"
