#!/bin/bash
# The one-bug corpus (tests/bugs/bug_corpus.c) under rampart's debug library, its guard mode,
# the release library's guard mode, and AddressSanitizer, side by side.
#
#   tools/bug_corpus.sh [--quiet] [CASE...]
#   tools/bug_corpus.sh --check --plain BIN --debug-so SO [--release-so SO] [CASE...]
#       (tests/bugs:bug_corpus_test) the given builds, no ASan; fails unless every case is caught
#       by the debug library's modes the corpus lists for it (bug_corpus list, third column),
#       naming the allocating and freeing lines where there are any.
#
# Builds the corpus twice with the system compilers (gcc for the preloaded runs, clang
# -fsanitize=address for ASan's), the libraries with tools/bazelw, and runs every case (or the
# ones named) in each mode, 60 s at most:
#   debug         librampart_malloc_debug.so preloaded, RAMPART_OPTIONS=leak_report=1
#   debug-guard   the same with guard=all (blocks end against a guard page)
#   debug-left    the same with guard=all:guard_left=1 (blocks start after one)
#   release-guard librampart_malloc.so preloaded, guard=all
#   asan          the -fsanitize=address build (LeakSanitizer on)
# A case is caught when the run prints a report of the right class ("ERROR: rampart: ..." or
# "ERROR: AddressSanitizer: ..." / LeakSanitizer's); "named" when rampart's report also names the
# allocating function with file:line (and the freeing one for frees and uses after free).
# Prints a table and "caught K of N" per mode. Needs gcc, clang with compiler-rt (tools/setup.sh).
set -u
quiet=0 check=0 plain="" debug_so="" release_so=""
while [ $# -gt 0 ]; do
    case $1 in
    --quiet) quiet=1 ;;
    --check) check=1 ;;
    --plain) plain=$(readlink -f "$2"); shift ;;
    --debug-so) debug_so=$(readlink -f "$2"); shift ;;
    --release-so) release_so=$(readlink -f "$2"); shift ;;
    *) break ;;
    esac
    shift
done
work=$(mktemp -d "${TMPDIR:-/tmp}/rampart-bugs.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -z "$plain" ]; then
    cd "$(dirname "$0")/.."
    src=tests/bugs/bug_corpus.c
    gcc -O1 -g -fno-omit-frame-pointer -pthread -o "$work/plain" "$src" || exit 1
    clang -O1 -g -fno-omit-frame-pointer -fsanitize=address -pthread -o "$work/asan" "$src" || exit 1
    tools/bazelw build -c opt //dist:librampart_malloc.so //dist:librampart_malloc_debug.so >"$work/build.log" 2>&1 || {
        cat "$work/build.log"
        exit 1
    }
    bin=$(tools/bazelw info -c opt bazel-bin 2>/dev/null)
    release_so=$bin/dist/librampart_malloc.so
    debug_so=$bin/dist/librampart_malloc_debug.so
    plain=$work/plain
fi

cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
    mapfile -t cases < <("$plain" list | cut -d' ' -f1)
fi
modes=(debug debug-guard debug-left)
[ -n "$release_so" ] && modes+=(release-guard)
[ -x "$work/asan" ] && modes+=(asan)
bad=0
declare -A caught named
for m in "${modes[@]}"; do
    caught[$m]=0
    named[$m]=0
done

# Does output $2 of mode $1 hold a report of class $3?
report_of() {
    local mode=$1 out=$2 kind=$3 pattern
    if [ "$mode" = asan ]; then
        case $kind in
        heap-buffer-overflow | heap-buffer-underflow) pattern="AddressSanitizer: heap-buffer-overflow" ;;
        use-after-free) pattern="AddressSanitizer: heap-use-after-free" ;;
        double-free) pattern="AddressSanitizer: attempting double-free" ;;
        invalid-free) pattern="AddressSanitizer: attempting free on address which was not malloc" ;;
        leak) pattern="LeakSanitizer: detected memory leaks" ;;
        esac
    else
        case $kind in
        use-after-free) pattern="(ERROR: rampart: |^rampart: )(heap-)?use-after-free" ;;
        leak) pattern="ERROR: rampart: detected memory leaks" ;;
        *) pattern="(ERROR: rampart: |^rampart: )$kind" ;;
        esac
    fi
    printf '%s\n' "$out" | grep -Eq "$pattern"
}

# Does rampart's report name the allocating (and, for frees, the freeing) function by file:line?
names_sites() {
    local out=$1 kind=$2
    printf '%s\n' "$out" | grep -Eq "(make_block|make_zeroed_block|make_aligned_block|grow_block).*bug_corpus\.c:[0-9]+" || return 1
    case $kind in
    use-after-free | double-free)
        printf '%s\n' "$out" | grep -Eq "release_block.*bug_corpus\.c:[0-9]+|grow_block.*bug_corpus\.c:[0-9]+" || return 1 ;;
    esac
    return 0
}

declare -A either
printf '%-20s %-22s' case class
for m in "${modes[@]}"; do printf ' %-14s' "$m"; done
echo
for c in "${cases[@]}"; do
    kind=$("$plain" list | awk -v c="$c" '$1 == c { print $2 }')
    expected=$("$plain" list | awk -v c="$c" '$1 == c { print $3 }')
    printf '%-20s %-22s' "$c" "$kind"
    for m in "${modes[@]}"; do
        case $m in
        debug) out=$(LD_PRELOAD=$debug_so RAMPART_OPTIONS=leak_report=1 timeout 60 "$plain" "$c" 2>&1) ;;
        debug-guard) out=$(LD_PRELOAD=$debug_so RAMPART_OPTIONS=leak_report=1:guard=all timeout 60 "$plain" "$c" 2>&1) ;;
        debug-left) out=$(LD_PRELOAD=$debug_so RAMPART_OPTIONS=leak_report=1:guard=all:guard_left=1 timeout 60 "$plain" "$c" 2>&1) ;;
        release-guard) out=$(LD_PRELOAD=$release_so RAMPART_OPTIONS=guard=all timeout 60 "$plain" "$c" 2>&1) ;;
        asan) out=$(ASAN_OPTIONS=detect_leaks=1 timeout 60 "$work/asan" "$c" 2>&1) ;;
        esac
        verdict=-
        if report_of "$m" "$out" "$kind"; then
            verdict=caught
            caught[$m]=$((caught[$m] + 1))
            if [[ $m == debug* ]] && names_sites "$out" "$kind"; then
                verdict=caught+named
                named[$m]=$((named[$m] + 1))
            fi
        fi
        printf ' %-14s' "$verdict"
        [ "$verdict" != - ] && [[ $m == debug-* ]] && either[$c]=1
        short=${m#debug-}
        [ "$m" = debug ] && short=debug
        if [[ $m == debug* ]] && [[ ",$expected," == *",$short,"* ]]; then
            # expected here: caught, and named unless nothing was allocated (bad frees of
            # stack, global and mapped memory)
            if [ "$verdict" = - ] || { [ "$verdict" = caught ] && [[ $c != free_stack && $c != free_global && $c != free_mmap ]]; }; then
                bad=$((bad + 1))
                echo
                echo "  EXPECTED in $m: $c ($kind); got: $verdict"
                printf '%s\n' "$out" | head -20 | sed 's/^/      | /'
            fi
        fi
        if [ $quiet = 0 ] && [ "$verdict" = - ]; then
            printf '%s\n' "$out" | head -3 | sed 's/^/      | /' >"$work/why.$m"
        fi
    done
    echo
done
n=${#cases[@]}
for m in "${modes[@]}"; do
    if [[ $m == debug* ]]; then
        echo "$m: caught ${caught[$m]} of $n (${named[$m]} naming the allocating and freeing lines)"
    else
        echo "$m: caught ${caught[$m]} of $n"
    fi
done
echo "debug guard mode, either placement: caught ${#either[@]} of $n"
if [ $check = 1 ]; then
    echo "$bad expected catches missed"
    [ $bad -eq 0 ]
fi
