#!/bin/bash
# Runs `bazel test` through tools/bazelw and ends with one plain line
# "N passed, N failed" counting test targets (Bazel itself never prints that line).
# Exits with bazel's own code.   Usage: tools/bazel_test.sh [bazel test args] [targets]
root=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp)
args=("$@")
has_target=0
for a in "$@"; do
    case "$a" in //*|:*|-//*) has_target=1 ;; esac
done
[ "$has_target" -eq 1 ] || args+=("//...")
"$root/tools/bazelw" test --test_summary=short "${args[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
passed=$(grep -Ec '^//[^ ]+ +(\(cached\) )?(PASSED|FLAKY)' "$log")
failed=$(grep -Ec '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|REMOTE FAILURE)' "$log")
skipped=$(grep -Ec '^//[^ ]+ +SKIPPED' "$log")
# A build that fails before any test runs prints no summary lines at all: count it as a failure.
if [ "$rc" -ne 0 ] && [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then
    failed=1
fi
rm -f "$log"
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
exit "$rc"
