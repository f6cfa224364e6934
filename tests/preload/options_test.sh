#!/bin/bash
# RAMPART_OPTIONS under LD_PRELOAD: an unknown key or a bad value gives one warning line
# each and is ignored; the program runs normally; stats=1 prints the report at exit even
# when the program closed its stderr first.
set -u
so=$(readlink -f "$1")
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

err=$(LD_PRELOAD=$so RAMPART_OPTIONS='bogus=1:cache_bytes=12Q:arenas=999:stats=0' /bin/ls / 2>&1 >/dev/null)
[ $? -eq 0 ] || fail "ls failed with bad options"
n=$(printf '%s\n' "$err" | grep -c '^rampart: RAMPART_OPTIONS: ')
[ "$n" -eq 3 ] || fail "expected 3 warnings, got $n: $err"
printf '%s\n' "$err" | grep -q "unknown key 'bogus'" || fail "no unknown-key warning: $err"
printf '%s\n' "$err" | grep -q "cache_bytes" || fail "no cache_bytes warning: $err"
printf '%s\n' "$err" | grep -q "arenas" || fail "no arenas warning: $err"

# Hostile bytes in the variable: warnings only, no crash.
err=$(LD_PRELOAD=$so RAMPART_OPTIONS=$'\x01\x02=:::=\xff:stats' /bin/true 2>&1)
[ $? -eq 0 ] || fail "true failed with hostile options"

# ls closes stderr in its own exit handler; the report still arrives (a copy of stderr).
err=$(LD_PRELOAD=$so RAMPART_OPTIONS=stats=1 /bin/ls / 2>&1 >/dev/null)
printf '%s\n' "$err" | grep -q "malloc statistics" || fail "no statistics at exit: $err"
printf '%s\n' "$err" | grep -q "^  malloc-0 " || fail "no arena line: $err"

if [ "$failures" -ne 0 ]; then
    exit 1
fi
echo "all checks passed"
