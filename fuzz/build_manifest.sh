#!/bin/bash
# Builds one fuzz target from its manifest (fuzz/manifests/<name>.txt) without Bazel, the way
# OSS-Fuzz / ClusterFuzzLite do: every source compiled with $CC $CFLAGS, linked with
# $LIB_FUZZING_ENGINE. Used by .clusterfuzzlite/build.sh and by tools/fuzz.sh (coverage
# binaries, mutants), so all three build from the same source lists as Bazel.
#
#   CC=clang CFLAGS="-fsanitize=fuzzer-no-link,address" LIB_FUZZING_ENGINE=-fsanitize=fuzzer \
#       fuzz/build_manifest.sh fuzz/manifests/heap_ops.txt OUT/heap_ops
#
# Run from the source root (or set SRC_ROOT). LIB_FUZZING_ENGINE may also name a .c file
# (fuzz/replay_main.c) to build a plain replay binary. JOBS parallel compiles (default: cores).
# OBJ_CACHE=DIR reuses objects whose flags and preprocessed source are unchanged (the planted
# bugs of tools/fuzz.sh --mutants change a file or two of a target: the rest is not compiled
# again). Sources are compiled from the source root by relative path, so the same file in
# another copy of the tree is the same object.
set -euo pipefail

manifest=$1
out=$2
root=${SRC_ROOT:-.}
: "${CC:=clang}"
: "${CFLAGS:=}"
: "${LIB_FUZZING_ENGINE:=-fsanitize=fuzzer}"
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

# "src <path> [flags]": flags (copts, local defines) apply to that source only.
srcs=() srcflags=() defines=() linkopts=()
while read -r key value; do
    case "$key" in
    harness | src)
        srcs+=("${value%% *}")
        [ "$value" = "${value%% *}" ] && srcflags+=("") || srcflags+=("${value#* }") ;;
    define) defines+=("-D$value") ;;
    linkopt) linkopts+=("$value") ;;
    esac
done <"$manifest"
[ "${#srcs[@]}" -gt 0 ] || { echo "$manifest: no sources" >&2; exit 1; }

objdir=$(mktemp -d "${TMPDIR:-/tmp}/rampart-fuzz-obj.XXXXXX")
trap 'rm -rf "$objdir"' EXIT

# The checker runs after every fuzz operation; comparison tracing inside it would cost most of
# the run time and guides nothing (as in .bazelrc's --config=fuzz).
checker_flags=""
case "$CFLAGS" in *fuzzer* | *sanitize-coverage*) checker_flags="-fno-sanitize-coverage=trace-cmp" ;; esac

# The malloc drop-in (its sources carry -fno-builtin-malloc) under a sanitizer with its own
# allocator: hidden visibility, as src/BUILD's MALLOC_SANITIZER_COPTS does under --config=asan,
# so the runtime and libc keep the sanitizer's malloc while the harness calls rampart's.
malloc_flags=""
case "$CFLAGS" in *-fsanitize=*address* | *-fsanitize=*memory* | *-fsanitize=*thread*) malloc_flags="-fvisibility=hidden" ;; esac

compile() {
    local src=$1 obj=$2 extra=$3
    [ "$src" = "src/check.c" ] && extra="$extra $checker_flags"
    case " $extra " in *" -fno-builtin-malloc "*) extra="$extra $malloc_flags" ;; esac
    # The include paths Bazel gives: the root, and src/ and debug/ (strip_include_prefix).
    local flags=(-std=c11 -I. -Isrc -Isrc/malloc -Idebug "${defines[@]}")
    local key="" map=()
    if [ -n "${OBJ_CACHE:-}" ]; then
        # shellcheck disable=SC2086 # CFLAGS and extra are lists of flags
        key=$({ echo "$CC $CFLAGS $extra ${flags[*]}"; (cd "$root" && $CC $CFLAGS $extra "${flags[@]}" -E -P "$src"); } |
            sha1sum | cut -c1-40)
        if [ -f "$OBJ_CACHE/$key.o" ]; then
            cp "$OBJ_CACHE/$key.o" "$obj"
            return
        fi
        map=("-fdebug-prefix-map=$root=.") # the same object whichever copy of the tree built it
    fi
    # shellcheck disable=SC2086
    (cd "$root" && $CC $CFLAGS $extra "${flags[@]}" "${map[@]}" -c "$src" -o "$obj")
    if [ -n "$key" ]; then
        mkdir -p "$OBJ_CACHE"
        cp "$obj" "$OBJ_CACHE/$key.o.$$" && mv "$OBJ_CACHE/$key.o.$$" "$OBJ_CACHE/$key.o"
    fi
}
objs=()
pids=()
for i in "${!srcs[@]}"; do
    src=${srcs[$i]}
    obj="$objdir/$(echo "$src" | tr '/' '_').o"
    objs+=("$obj")
    compile "$src" "$obj" "${srcflags[$i]}" &
    pids+=($!)
    if [ "${#pids[@]}" -ge "$jobs" ]; then
        wait "${pids[0]}"
        pids=("${pids[@]:1}")
    fi
done
for p in "${pids[@]}"; do wait "$p"; done

engine=()
case "$LIB_FUZZING_ENGINE" in
*.c) engine=("$root/$LIB_FUZZING_ENGINE") ;;
*) read -r -a engine <<<"$LIB_FUZZING_ENGINE" ;;
esac
# C objects, but the fuzzing engine may be C++ (libFuzzer): link with the C++ driver when the
# engine is a library, as OSS-Fuzz expects ($CXX), else with $CC.
linker=$CC
case "$LIB_FUZZING_ENGINE" in *.a | *.o) linker=${CXX:-clang++} ;; esac
mkdir -p "$(dirname "$out")"
# shellcheck disable=SC2086
$linker $CFLAGS "${objs[@]}" "${engine[@]}" "${linkopts[@]}" -o "$out"
