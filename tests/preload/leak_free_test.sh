#!/bin/bash
# Real programs that free what they no longer reach, under librampart_malloc_debug.so with
# leak_report=1 and leak_exit_code=23: no leak reported and their own exit status (0). Every
# block they still hold at exit is reachable from a global, a stack, TLS or the loader, which
# the leak scan follows as LeakSanitizer does (valgrind --leak-check=full: 0 bytes definitely
# lost for each).
set -u
SO=$(readlink -f "$1")
[ -f "$SO" ] || { echo "FAIL: no library at $1"; exit 1; }
TMP=${TEST_TMPDIR:-$(mktemp -d)}
export HOME="$TMP/home"
mkdir -p "$HOME"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
failures=0

check() {
    local name=$1
    shift
    local err="$TMP/$name.err"
    LD_PRELOAD="$SO" RAMPART_OPTIONS=leak_report=1:leak_exit_code=23 "$@" >/dev/null 2>"$err"
    local status=$?
    if [ "$status" -ne 0 ] || grep -q "rampart" "$err"; then
        echo "FAIL: $name: exit status $status"
        head -40 "$err"
        failures=$((failures + 1))
    else
        echo "ok: $name: no leak reported, exit status 0"
    fi
}

check python "$PY" -c pass
check git git --version
check sqlite sqlite3 :memory: 'select 1'
[ "$failures" -eq 0 ] || exit 1
echo "all checks passed"
