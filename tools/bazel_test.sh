#!/bin/bash
# Runs `bazel test` through tools/bazelw and ends with one plain line
# "N passed, N failed, N skipped" counting test targets (Bazel itself never prints that line;
# skipped: targets incompatible with the configuration). A Bazel run that fails without a
# failed target to show for it (a bad flag, a broken BUILD file, no test found) counts as one
# failure. Exits with bazel's own code.   Usage: tools/bazel_test.sh [bazel test args] [targets]
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
# A run that fails before its tests (or without a failed target line) prints no failure to
# count: count it as one.
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    echo "bazel exited with $rc without a failed test target: counted as one failure"
    failed=1
fi
rm -f "$log"
echo "$passed passed, $failed failed, $skipped skipped"
exit "$rc"
