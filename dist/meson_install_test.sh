#!/bin/bash
# The Meson build as a consumer uses it: configure, compile and install the runfiles' copy of
# the tree into a temporary prefix, then check what was installed (files, sonames, exports,
# pkg-config version) and build programs against it with pkg-config and with Meson's
# dependency('rampart'), each run to show it works.
#   meson_install_test.sh EXPORTS_TEST EXPORTS_MAP EXPORTS_DEBUG_MAP
set -euo pipefail
exports_test=$(realpath "$1")
exports_map=$(realpath "$2")
exports_debug_map=$(realpath "$3")
root=$(pwd)
tmp=${TEST_TMPDIR:-$(mktemp -d)}
src=$tmp/src
build=$tmp/build
prefix=$tmp/prefix
lib=$prefix/lib
fail() { echo "FAIL: $*" >&2; exit 1; }
# Runs a command quietly; on failure prints its output and fails the test.
quiet() {
    local log=$tmp/step.log
    "$@" >"$log" 2>&1 || { cat "$log"; fail "$*"; }
}

start=$SECONDS
rm -rf "$src" "$build" "$prefix"
mkdir -p "$src"
cp -rL "$root/." "$src"
quiet meson setup "$build" "$src" --prefix="$prefix" --libdir=lib -Dwerror=true
quiet meson compile -C "$build"
quiet meson install -C "$build"
echo "meson setup, compile, install: $((SECONDS - start)) s"

version=$(cat "$src/VERSION")
major=${version%%.*}
for f in include/rampart/rampart.h include/rampart/rampart_malloc.h include/rampart/rampart_debug.h \
    include/rampart/stack_depot.h include/rampart/rampart_dump.h lib/librampart.a lib/librampart_debug.a \
    lib/librampart.so lib/librampart_debug.so lib/librampart_malloc.so lib/librampart_malloc_debug.so \
    lib/librampart_malloc.a lib/librampart_malloc_debug.a \
    lib/pkgconfig/rampart.pc lib/pkgconfig/rampart-debug.pc bin/rpdump; do
    [ -e "$prefix/$f" ] || fail "$f not installed"
done
for l in librampart librampart_debug librampart_malloc librampart_malloc_debug; do
    soname=$(readelf -d "$lib/$l.so" | awk '/SONAME/ { print $5 }' | tr -d '[]')
    [ "$soname" = "$l.so.$major" ] || fail "$l.so: soname '$soname', expected $l.so.$major"
    [ -e "$lib/$l.so.$major" ] || fail "$l.so.$major not installed"
done
# The LD_PRELOAD libraries export what Bazel's do (their export maps), nothing internal.
quiet "$exports_test" "$lib/librampart_malloc.so" "$exports_map" "libc.so.6" \
    "$prefix/include/rampart/rampart.h"
quiet "$exports_test" "$lib/librampart_malloc_debug.so" "$exports_debug_map" "libc.so.6 libunwind.so.8" \
    "$prefix/include/rampart/rampart.h"
# The heap API library exports exactly the rampart.h section of the export map.
want=$("$src/dist/export_map.sh" api "$exports_map" | tr ' ;' '\n\n' | grep -E '^rp_[a-z_]+$' | sort)
have=$(nm -D --defined-only "$lib/librampart.so" | awk '$2 == "T" { print $3 }' | sort)
[ "$want" = "$have" ] || { diff <(echo "$want") <(echo "$have"); fail "librampart.so exports"; }

export PKG_CONFIG_PATH=$lib/pkgconfig
modversion=$(pkg-config --modversion rampart)
echo "pkg-config --modversion rampart: $modversion"
[ "$modversion" = "$version" ] || fail "pkg-config --modversion rampart says '$modversion', VERSION $version"
[ "$(pkg-config --modversion rampart-debug)" = "$version" ] || fail "rampart-debug.pc version"
[[ " $(pkg-config --libs --static rampart) " == *" -pthread "* ]] || fail "rampart.pc: no -pthread for static links"
[[ " $(pkg-config --libs --static rampart-debug) " == *" -lunwind "* ]] || fail "rampart-debug.pc: no -lunwind"

consumer=$src/dist/install_test/consumer.c
expect() { # expect OUTPUT FLAVOUR: the consumer's line
    [ "$1" = "$version $version $2" ] || fail "consumer printed '$1', expected '$version $version $2'"
}
# shellcheck disable=SC2046 # pkg-config prints lists of flags
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/c_shared" "$consumer" $(pkg-config --cflags --libs rampart)
expect "$(LD_LIBRARY_PATH=$lib "$tmp/c_shared")" release
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/c_static" "$consumer" $(pkg-config --cflags rampart) \
    "$lib/librampart.a" $(pkg-config --libs-only-other --static rampart)
expect "$("$tmp/c_static")" release
[[ "$(ldd "$tmp/c_static")" != *librampart* ]] || fail "c_static links librampart.so"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -DWITH_DUMP -rdynamic -o "$tmp/c_debug" "$consumer" \
    $(pkg-config --cflags --libs rampart-debug)
expect "$(LD_LIBRARY_PATH=$lib "$tmp/c_debug" "$tmp/consumer.%n.rpd")" debug
[[ "$("$prefix/bin/rpdump" summary "$tmp/consumer.0.rpd")" == *consumer* ]] ||
    fail "rpdump summary does not show heap 'consumer'"

quiet meson setup "$tmp/consumer_build" "$src/dist/install_test"
quiet meson compile -C "$tmp/consumer_build"
expect "$(LD_LIBRARY_PATH=$lib "$tmp/consumer_build/consumer")" release

# The preload library runs a program.
out=$(LD_PRELOAD=$lib/librampart_malloc.so.$major RAMPART_OPTIONS=stats=1 "$tmp/c_static" 2>&1 >/dev/null)
[[ "$out" == *"thread caches"* ]] || fail "LD_PRELOAD librampart_malloc.so.$major printed no statistics: $out"
# The drop-in's archive, linked into a program, is its malloc (stats at exit say so).
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/c_malloc_static" "$consumer" $(pkg-config --cflags rampart) \
    -Wl,--whole-archive "$lib/librampart_malloc.a" -Wl,--no-whole-archive -pthread
out=$(RAMPART_OPTIONS=stats=1 "$tmp/c_malloc_static" 2>&1 >/dev/null)
[[ "$out" == *"thread caches"* ]] || fail "a program linked with librampart_malloc.a printed no statistics: $out"
echo "all checks passed in $((SECONDS - start)) s"
