#!/bin/bash
# Shared by the LD_PRELOAD tests: run a command with and without a rampart malloc library and
# compare what it prints.
#
#   source preload_lib.sh LIBRARY [FLAVOUR]
#   compare_runs NAME COMMAND...    runs COMMAND plainly, then under LD_PRELOAD in the
#                                   flavour's configurations; stdout must be identical,
#                                   rampart's at-exit statistics must show that rampart did
#                                   serve the allocations, and rampart must report nothing.
# FLAVOUR is "release" (librampart_malloc.so, the default: defaults; no thread cache; a tiny
# cache, so flushes and refills happen all the time; the hardened profile; one block in 20
# guarded) or "debug" (librampart_malloc_debug.so: every check with 16-frame stacks; no
# quarantine and no stacks, so freed memory is reused at once and verified on reuse; one block
# in 20 guarded, with stacks read along frame pointers).
set -u

SO=$(readlink -f "$1")
[ -f "$SO" ] || { echo "FAIL: no library at $1"; exit 1; }
FLAVOUR=${2:-release}
case "$FLAVOUR" in
release) CONFIGS=("stats=1" "stats=1:cache_bytes=0" "stats=1:cache_bytes=2K:arenas=2" "stats=1:hardened=1"
    "stats=1:guard=sample:20") ;;
debug) CONFIGS=("stats=1" "stats=1:quarantine_bytes=0:backtrace_depth=0:arenas=2" "stats=1:guard=sample:20:fast_unwind=1") ;;
*) echo "FAIL: unknown flavour '$FLAVOUR'"; exit 1 ;;
esac
TMP=${TEST_TMPDIR:-$(mktemp -d)}
export HOME="$TMP/home"
mkdir -p "$HOME"
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# Executes "$@" with LD_PRELOAD and RAMPART_OPTIONS given as the first two arguments.
run_with() {
    local preload=$1 options=$2
    shift 2
    if [ -n "$preload" ]; then
        LD_PRELOAD="$preload" RAMPART_OPTIONS="$options" "$@"
    else
        env -u LD_PRELOAD -u RAMPART_OPTIONS "$@"
    fi
}

compare_runs() {
    local name=$1
    shift
    local expected="$TMP/$name.plain.out"
    if ! run_with "" "" "$@" >"$expected" 2>"$TMP/$name.plain.err"; then
        fail "$name: failed without rampart"
        cat "$TMP/$name.plain.err"
        return
    fi
    local config i=0
    for config in "${CONFIGS[@]}"; do
        i=$((i + 1))
        local out="$TMP/$name.rampart$i.out" err="$TMP/$name.rampart$i.err"
        if ! run_with "$SO" "$config" "$@" >"$out" 2>"$err"; then
            fail "$name: failed under rampart ($config)"
            tail -20 "$err"
            continue
        fi
        if ! cmp -s "$expected" "$out"; then
            fail "$name: output differs under rampart ($config)"
            diff "$expected" "$out" | head -20
            continue
        fi
        # The statistics printed at exit (by every process of the run): rampart served the
        # allocations. The busiest process counts.
        local allocs
        allocs=$(awk '$1 == "total" && $(NF-1) > max { max = $(NF-1) } END { print max + 0 }' "$err")
        if ! grep -q "rampart $FLAVOUR: malloc statistics" "$err" || [ -z "$allocs" ] || [ "$allocs" -lt 1000 ]; then
            fail "$name: no rampart statistics at exit ($config): allocations '$allocs'"
            tail -12 "$err"
            continue
        fi
        if grep -q "rampart: .*RAMPART_OPTIONS\|rampart: [a-z-]*: \|ERROR: rampart" "$err"; then
            fail "$name: rampart reported something ($config)"
            grep "rampart:" "$err" | head -5
            continue
        fi
        echo "ok: $name ($config): identical output, $allocs heap allocations"
    done
}

finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$failures failure(s)"
        exit 1
    fi
    echo "all checks passed"
}
