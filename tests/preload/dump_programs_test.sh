#!/bin/bash
# Heap dumps of real programs read by every rpdump command.
#
#   dump_programs_test.sh DEBUG_LIBRARY RELEASE_LIBRARY RPDUMP GROW_SHRINK_PY
#
# python3 (PYTHONMALLOC=malloc) under the debug library runs grow_shrink.py, which dumps its
# heaps before, during and after growing by about 8 MiB and shrinking back (rp_dump_to_path
# through ctypes); sqlite3 under the debug library builds and drops a table, dumped on
# SIGUSR2 (dump_signal) at three points. On the largest dump of each program: summary,
# blocks, sites, sites --folded (its lines add up to sites' total), flame (rendered by
# rsvg-convert at the size it announces), pprof read back by google-pprof in both forms,
# check (no violation), map (rendered); then diff and timeline over each series. The python timeline must show the
# growth: the peak in the middle, the last dump back near the first, and the growing site
# found with its bytes rising and falling. The release library with its heap profiler
# (profile=1): python3 grow_shrink.py, and sqlite3 with dump_interval=1; their dumps go through
# the same commands with the sites from the samples, and their timelines rise and fall.
set -u
DEBUG_SO=$(readlink -f "$1")
RELEASE_SO=$(readlink -f "$2")
RPDUMP=$(readlink -f "$3")
GROW=$(readlink -f "$4")
TMP=${TEST_TMPDIR:-$(mktemp -d)}
export HOME="$TMP/home"
mkdir -p "$HOME"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
PPROF=$(command -v google-pprof || command -v pprof)
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# json FILE EXPRESSION: evaluates a Python expression over the JSON document d in FILE.
json() {
    "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# The pixel size of a PNG, "W H".
png_size() {
    "$PY" -c 'import struct, sys; b = open(sys.argv[1], "rb").read(24); print(*struct.unpack(">II", b[16:24]))' "$1"
}

# render NAME SVG JSON: rsvg-convert renders the SVG at the width and height the JSON gave.
render() {
    local name=$1 svg=$2 js=$3
    if ! rsvg-convert -o "$svg.png" "$svg" 2>"$TMP/rsvg.err"; then
        fail "$name: rsvg-convert failed: $(head -3 "$TMP/rsvg.err")"
        return
    fi
    local want have
    want="$(json "$js" 'd["width"]') $(json "$js" 'd["height"]')"
    have=$(png_size "$svg.png")
    [ "$want" = "$have" ] || fail "$name: rendered $have, announced $want"
    echo "ok: $name: $(stat -c %s "$svg") bytes of SVG, rendered $have"
}

# every_command NAME DUMP: runs every single-dump command on DUMP.
every_command() {
    local name=$1 dump=$2 out="$TMP/$1"
    "$RPDUMP" summary --json "$dump" >"$out.summary.json" || fail "$name: summary"
    "$RPDUMP" blocks --limit 5 "$dump" >"$out.blocks" || fail "$name: blocks"
    "$RPDUMP" sites --limit 3 "$dump" >"$out.sites" || fail "$name: sites"
    "$RPDUMP" sites --json --limit 1 "$dump" >"$out.sites.json" || fail "$name: sites --json"
    "$RPDUMP" sites --folded "$dump" >"$out.folded" || fail "$name: sites --folded"
    local total folded
    total=$(json "$out.sites.json" 'd["total_bytes"]')
    folded=$(awk '{ s += $NF } END { print s + 0 }' "$out.folded")
    [ "$total" = "$folded" ] || fail "$name: folded stacks add up to $folded bytes, sites says $total"
    "$RPDUMP" flame --json -o "$out.flame.svg" "$dump" >"$out.flame.json" || fail "$name: flame"
    render "$name flame" "$out.flame.svg" "$out.flame.json"
    [ "$(json "$out.flame.json" 'd["total_bytes"]')" = "$total" ] || fail "$name: flame and sites disagree"
    "$RPDUMP" pprof -o "$out.heap" "$dump" >/dev/null || fail "$name: pprof"
    "$RPDUMP" pprof --symbols -o "$out.sym.heap" "$dump" >/dev/null || fail "$name: pprof --symbols"
    local exe
    exe=$(json "$out.summary.json" 'd["executable"]')
    "$PPROF" --text "$exe" "$out.heap" >"$out.pprof" 2>"$out.pprof.err" || fail "$name: google-pprof (plain)"
    "$PPROF" --text "$out.sym.heap" >"$out.sympprof" 2>"$out.sympprof.err" || fail "$name: google-pprof (--symbols)"
    grep -q "^Total: " "$out.pprof" && grep -q "^Total: " "$out.sympprof" ||
        fail "$name: google-pprof printed no total: $(head -3 "$out.pprof.err")"
    "$RPDUMP" check "$dump" >"$out.check" || fail "$name: check: $(head -5 "$out.check")"
    "$RPDUMP" map --json -o "$out.map.svg" "$dump" >"$out.map.json" || fail "$name: map"
    render "$name map" "$out.map.svg" "$out.map.json"
    echo "ok: $name: every command; $(json "$out.sites.json" 'd["total_sites"]') sites, $total bytes;" \
        "google-pprof: $(head -1 "$out.sympprof")"
}

# ---- python3 growing and shrinking under the debug library ----------------------------------
rm -f "$TMP"/py.*.rpd
if ! PYTHONMALLOC=malloc LD_PRELOAD="$DEBUG_SO" "$PY" "$GROW" "$TMP/py.%n.rpd" >"$TMP/py.out" 2>"$TMP/py.err"; then
    fail "python3 under the debug library: $(tail -3 "$TMP/py.err")"
fi
py_dumps=()
for i in 0 1 2 3 4 5 6 7 8; do
    [ -f "$TMP/py.$i.rpd" ] && py_dumps+=("$TMP/py.$i.rpd")
done
if [ "${#py_dumps[@]}" -ne 9 ]; then
    fail "python3 wrote ${#py_dumps[@]} dumps, expected 9"
else
    every_command python-peak "${py_dumps[4]}"
    "$RPDUMP" diff --json "${py_dumps[0]}" "${py_dumps[4]}" >"$TMP/py.diff.json" || fail "python diff"
    grow=$(json "$TMP/py.diff.json" 'd["sites"][0]["delta_bytes"]')
    [ "$grow" -gt 7000000 ] || fail "python diff: the top site grew by $grow bytes"
    [ "$(json "$TMP/py.diff.json" 'd["same_program"]')" = True ] || fail "python diff: not the same program?"
    # The arguments in shell order (py.0 .. py.8 happen to sort right; reversed to be sure).
    "$RPDUMP" timeline --json -o "$TMP/py.timeline.svg" "${py_dumps[@]}" >"$TMP/py.timeline.json" ||
        fail "python timeline"
    render "python timeline" "$TMP/py.timeline.svg" "$TMP/py.timeline.json"
    T="$TMP/py.timeline.json"
    [ "$(json "$T" 'd["peak"]["dump"]')" = 4 ] || fail "python timeline: peak at dump $(json "$T" 'd["peak"]["dump"]')"
    [ "$(json "$T" 'd["by_time"]')" = True ] || fail "python timeline: no times"
    [ "$(json "$T" 'd["peak"]["live_bytes"] - d["first_bytes"] > 7000000')" = True ] ||
        fail "python timeline: grew by $(json "$T" 'd["peak"]["live_bytes"] - d["first_bytes"]') bytes"
    [ "$(json "$T" 'abs(d["last_bytes"] - d["first_bytes"]) < 1000000')" = True ] ||
        fail "python timeline: did not shrink back ($(json "$T" 'd["first_bytes"]') -> $(json "$T" 'd["last_bytes"]'))"
    [ "$(json "$T" 'd["sites"][0]["growth_bytes"] > 7000000')" = True ] || fail "python timeline: top site"
    # the top site rises to the peak and falls after it
    [ "$(json "$T" 'all(a < b for a, b in zip(d["sites"][0]["bytes"][:5], d["sites"][0]["bytes"][1:5])) and all(a > b for a, b in zip(d["sites"][0]["bytes"][4:], d["sites"][0]["bytes"][5:]))')" = True ] ||
        fail "python timeline: the top site does not rise then fall: $(json "$T" 'd["sites"][0]["bytes"]')"
    "$RPDUMP" timeline --limit 3 "${py_dumps[@]}" >"$TMP/py.timeline.txt" || fail "python timeline (text)"
    echo "ok: python timeline:"
    head -24 "$TMP/py.timeline.txt"
fi

# ---- sqlite3 under the debug library, dumped on a signal -------------------------------------
rm -f "$TMP"/sq.*.rpd
cat >"$TMP/sq.sql" <<'SQL'
PRAGMA cache_size = -8000;
.shell kill -USR2 $PPID; sleep 0.5
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
INSERT INTO t SELECT x, printf('name-%08d', x), x * 1.5 FROM c;
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(v) FROM t;
.shell kill -USR2 $PPID; sleep 0.5
DROP TABLE t;
PRAGMA shrink_memory;
.shell kill -USR2 $PPID; sleep 0.5
SQL
if ! LD_PRELOAD="$DEBUG_SO" RAMPART_OPTIONS="dump_signal=SIGUSR2:dump_path=$TMP/sq.%p.%n.rpd" \
    sqlite3 "$TMP/sq.db" <"$TMP/sq.sql" >"$TMP/sq.out" 2>"$TMP/sq.err"; then
    fail "sqlite3 under the debug library: $(tail -3 "$TMP/sq.err")"
fi
sq_dumps=()
for f in "$TMP"/sq.*.rpd; do
    [ -f "$f" ] && sq_dumps+=("$f")
done
if [ "${#sq_dumps[@]}" -ne 3 ]; then
    fail "sqlite3 wrote ${#sq_dumps[@]} dumps, expected 3: $(cat "$TMP/sq.err")"
else
    every_command sqlite-table "${sq_dumps[1]}"
    for f in "${sq_dumps[0]}" "${sq_dumps[2]}"; do
        "$RPDUMP" check "$f" >/dev/null || fail "sqlite: check $f"
    done
    "$RPDUMP" diff "${sq_dumps[0]}" "${sq_dumps[1]}" >"$TMP/sq.diff" || fail "sqlite diff"
    "$RPDUMP" timeline --json -o "$TMP/sq.timeline.svg" "${sq_dumps[@]}" >"$TMP/sq.timeline.json" ||
        fail "sqlite timeline"
    render "sqlite timeline" "$TMP/sq.timeline.svg" "$TMP/sq.timeline.json"
    [ "$(json "$TMP/sq.timeline.json" 'd["peak"]["live_bytes"] > d["first_bytes"]')" = True ] ||
        fail "sqlite timeline: no growth"
    echo "ok: sqlite timeline: $(json "$TMP/sq.timeline.json" '[p["live_bytes"] for p in d["dumps"]]') live bytes"
fi

# ---- the release library: heap profiles from its sampler ----------------------------------------
# profile=1 at the default rate; a pinned profile_seed (and PYTHONHASHSEED) make the runs, and so
# the samples, the same every time.
# python3 grow_shrink.py: the dumps through rp_dump_to_path, the sites from the samples; the
# timeline of the estimates rises to the middle and falls back.
rm -f "$TMP"/relpy.*.rpd
if ! PYTHONHASHSEED=0 PYTHONMALLOC=malloc LD_PRELOAD="$RELEASE_SO" RAMPART_OPTIONS="profile=1:profile_seed=7" \
    "$PY" "$GROW" "$TMP/relpy.%n.rpd" >"$TMP/relpy.out" 2>"$TMP/relpy.err"; then
    fail "python3 under the release library: $(tail -3 "$TMP/relpy.err")"
fi
rel_dumps=()
for i in 0 1 2 3 4 5 6 7 8; do
    [ -f "$TMP/relpy.$i.rpd" ] && rel_dumps+=("$TMP/relpy.$i.rpd")
done
if [ "${#rel_dumps[@]}" -ne 9 ]; then
    fail "python3 under the release library wrote ${#rel_dumps[@]} dumps, expected 9"
else
    every_command release-python "${rel_dumps[4]}"
    samples=$(json "$TMP/release-python.summary.json" '(d["samples"] or {}).get("count", 0)')
    [ "$samples" -gt 0 ] || fail "release python: no samples in the peak dump"
    [ "$(json "$TMP/release-python.sites.json" 'd["from"]')" = samples ] || fail "release python: sites not from the samples"
    # The stacks: libunwind is loaded by the release library at its first capture.
    [ "$(json "$TMP/release-python.sites.json" 'len(d["sites"][0]["frames"]) >= 3')" = True ] ||
        fail "release python: the top site's stack has fewer than 3 frames"
    "$RPDUMP" diff --json "${rel_dumps[0]}" "${rel_dumps[4]}" >"$TMP/relpy.diff.json" || fail "release python diff"
    "$RPDUMP" timeline --json -o "$TMP/relpy.timeline.svg" "${rel_dumps[@]}" >"$TMP/relpy.timeline.json" ||
        fail "release python timeline"
    render "release python timeline" "$TMP/relpy.timeline.svg" "$TMP/relpy.timeline.json"
    T="$TMP/relpy.timeline.json"
    [ "$(json "$T" 'd["bytes_are"]')" = estimated ] || fail "release python timeline: not from the samples"
    [ "$(json "$T" '3 <= d["peak"]["dump"] <= 5')" = True ] ||
        fail "release python timeline: peak at dump $(json "$T" 'd["peak"]["dump"]')"
    [ "$(json "$T" 'd["peak"]["live_bytes"] - d["first_bytes"] > 4000000')" = True ] ||
        fail "release python timeline: grew by $(json "$T" 'd["peak"]["live_bytes"] - d["first_bytes"]') bytes"
    [ "$(json "$T" 'abs(d["last_bytes"] - d["first_bytes"]) < 3000000')" = True ] ||
        fail "release python timeline: did not shrink back ($(json "$T" 'd["first_bytes"]') -> $(json "$T" 'd["last_bytes"]'))"
    echo "ok: release python: $samples samples at the peak; estimated live bytes $(json "$T" '[p["live_bytes"] for p in d["dumps"]]')"
    "$RPDUMP" timeline --limit 2 "${rel_dumps[@]}" | head -16
fi

# sqlite3 with dump_interval=1: a table of about 15 MB in its page cache, and pauses of a little
# over a second before, inside and after it, so that interval dumps (reason "interval",
# numbered paths) fall in each.
rm -f "$TMP"/relsq.*.rpd
cat >"$TMP/relsq.sql" <<'SQL'
PRAGMA cache_size = -64000;
.shell sleep 1.3
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
INSERT INTO t SELECT x, printf('name-%08d', x), x * 1.5 FROM c;
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(v) FROM t;
.shell sleep 1.3
DROP TABLE t;
PRAGMA shrink_memory;
.shell sleep 1.3
SQL
# (The shells and sleeps sqlite3 starts inherit the options and dump too: %p keeps them apart.)
if ! LD_PRELOAD="$RELEASE_SO" RAMPART_OPTIONS="profile=1:profile_seed=7:dump_interval=1:dump_path=$TMP/relsq.%p.%n.rpd" \
    sqlite3 "$TMP/relsq.db" <"$TMP/relsq.sql" >"$TMP/relsq.out" 2>"$TMP/relsq.err"; then
    fail "sqlite3 under the release library: $(tail -3 "$TMP/relsq.err")"
fi
relsq=()
for f in "$TMP"/relsq.*.rpd; do
    [ -f "$f" ] && [[ "$("$RPDUMP" summary --json "$f" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["executable"])')" == *sqlite3* ]] &&
        relsq+=("$f")
done
if [ "${#relsq[@]}" -lt 3 ]; then
    fail "sqlite3 under the release library wrote ${#relsq[@]} interval dumps, expected at least 3: $(cat "$TMP/relsq.err")"
else
    "$RPDUMP" timeline --json -o "$TMP/relsq.timeline.svg" "${relsq[@]}" >"$TMP/relsq.timeline.json" ||
        fail "release sqlite timeline"
    render "release sqlite timeline" "$TMP/relsq.timeline.svg" "$TMP/relsq.timeline.json"
    T="$TMP/relsq.timeline.json"
    peak=$(json "$T" 'd["peak"]["dump"]')
    every_command release-sqlite "${relsq[$peak]}"
    for f in "${relsq[@]}"; do
        [ "$(json <("$RPDUMP" summary --json "$f") 'd["reason"]')" = interval ] || fail "release sqlite: $f is no interval dump"
    done
    [ "$(json "$T" 'd["peak"]["live_bytes"] > d["first_bytes"] + 4000000 and d["peak"]["live_bytes"] > d["last_bytes"] + 4000000')" = True ] ||
        fail "release sqlite timeline: no growth then shrink: $(json "$T" '[p["live_bytes"] for p in d["dumps"]]')"
    echo "ok: release sqlite: ${#relsq[@]} interval dumps, estimated live bytes $(json "$T" '[p["live_bytes"] for p in d["dumps"]]')"
fi

if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "all checks passed"
