#!/bin/bash
# Fuzzing rampart: campaigns, corpus merging, coverage, planted bugs, CI runs.
#
#   tools/fuzz.sh [--time N] [--jobs J] [--no-merge] [--no-coverage] [TARGET...]
#       Builds with --config=fuzz, fuzzes each target (default: all) for N seconds (60) with J
#       processes (default: the number of cores), merges the inputs that add coverage into
#       fuzz/corpus/ (-merge=1), then prints the coverage summary. A crash stops with the
#       reproducer; an input still running after 300 s is a hang (30 s in the --ci and --mutants
#       runs, 120 s in the --ci --tsan run). One-hour campaigns: tools/fuzz.sh --time 3600 heap_ops heap_ops_debug
#   tools/fuzz.sh --tsan [--time N] [--jobs J] [TARGET...]
#       The same campaign (or with --ci, the CI run) built with --config=fuzz_tsan:
#       ThreadSanitizer instead of ASan, for the threaded target (default: malloc_threads).
#   tools/fuzz.sh --coverage [--min PERCENT]
#       Line coverage of src/, debug/ and tools/rpdump/ from the corpora and regressions (clang source-based
#       coverage: -fprofile-instr-generate -fcoverage-mapping, llvm-profdata, llvm-cov);
#       with --min, fails when src/ is below PERCENT.
#   tools/fuzz.sh --mutants [--time N] [--jobs J] [--no-seeds] [MUTANT...]
#       For each fuzz/mutants/*.patch: copies the tree, plants the bug, builds the target named
#       in the patch, fuzzes at most N seconds (60) from the target's corpus (--no-seeds: from
#       nothing); prints the time to catch each, whether the corpus replay or fuzzing caught it,
#       and "caught K of N". A patch with "Sanitizer: thread" is built with ThreadSanitizer.
#       Fails unless all are caught.
#   tools/fuzz.sh --ci [--time N]
#       For CI: every target N seconds (30), corpus copies only (the checkout is not changed);
#       a crash prints the input (base64 and hex) and the sanitizer report, and fails.
#       Process i runs with -seed=i+1, so CI explores the same mutations of the same corpus
#       on every run of a commit: a finding is the commit's, not the luck of one run, and
#       running this locally for at least as long shows what CI will find.
#   tools/fuzz.sh --oss-check
#       Runs .clusterfuzzlite/build.sh locally with the OSS-Fuzz variables (CC, CFLAGS,
#       LIB_FUZZING_ENGINE, OUT) and runs every binary it produced on its seed corpus.
#   tools/fuzz.sh --reduce
#       Rewrites each corpus directory to a minimal set of inputs with the same coverage (all
#       targets sharing it contribute; the hand-written seed-* inputs are always kept).
#   tools/fuzz.sh --update-manifests
#       Rewrites fuzz/manifests/ from the Bazel graph (after a BUILD change).
#
# Needs clang, libFuzzer (libclang-rt-14-dev) and llvm (llvm-cov, llvm-profdata): tools/setup.sh.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bazel="$root/tools/bazelw"

mode=campaign
seconds=""
jobs=$(nproc 2>/dev/null || echo 2)
merge=1
coverage=1
min_cov=""
seeds=1
tsan=0
names=()
while [ $# -gt 0 ]; do
    case "$1" in
    --time) seconds=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --no-merge) merge=0 ;;
    --no-coverage) coverage=0 ;;
    --min) min_cov=$2; shift ;;
    --no-seeds) seeds=0 ;;
    --tsan) tsan=1 ;;
    --coverage) mode=coverage ;;
    --mutants) mode=mutants ;;
    --ci) mode=ci ;;
    --oss-check) mode=oss ;;
    --update-manifests) mode=manifests ;;
    --reduce) mode=reduce ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) names+=("$1") ;;
    esac
    shift
done

work=$(mktemp -d "${TMPDIR:-/tmp}/rampart-fuzz.XXXXXX")
trap '[ -n "${KEEP_WORK:-}" ] && echo "(work files kept in $work)" || rm -rf "$work"' EXIT

say() { echo "== $*"; }

# ---- manifests ------------------------------------------------------------------------------

manifest_of() { echo "fuzz/manifests/$1.txt"; }
field() { awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "$1"; }
all_targets() { for m in fuzz/manifests/*.txt; do basename "$m" .txt; done; }

if [ "${#names[@]}" -eq 0 ] && [ "$tsan" -eq 1 ]; then
    names=(malloc_threads)
elif [ "${#names[@]}" -eq 0 ] && [ "$mode" != mutants ] && [ "$mode" != manifests ]; then
    mapfile -t names < <(all_targets)
fi
if [ "$mode" != mutants ] && [ "$mode" != manifests ]; then
    for t in "${names[@]}"; do
        [ -f "$(manifest_of "$t")" ] || { echo "unknown fuzz target '$t' (have: $(all_targets | tr '\n' ' '))" >&2; exit 2; }
    done
fi

# The libFuzzer flags a target's manifest asks for (e.g. -max_len), and its dictionary.
target_args() {
    field "$(manifest_of "$1")" arg
    local d
    d=$(field "$(manifest_of "$1")" dict)
    [ -n "$d" ] && echo "-dict=$root/$d"
    return 0
}
corpus_of() { field "$(manifest_of "$1")" corpus; }

# ---- crash reports --------------------------------------------------------------------------

# Prints everything needed to reproduce a finding: the input as base64 and hex, and the report.
report_crash() {
    local target=$1 artifact=$2 log=$3
    echo "!! $target: fuzzer found a crash: $(basename "$artifact") ($(stat -c %s "$artifact") bytes)"
    echo "-- input, base64 (reproduce: base64 -d > crash <<'EOF' ... EOF; bazel-bin/fuzz/${target}_fuzzer crash):"
    base64 -w 76 "$artifact"
    echo "-- input, hex:"
    od -An -tx1 -v "$artifact" | head -64
    echo "-- report:"
    # The harness's own message, the sanitizer's report and libFuzzer's summary: the log
    # without libFuzzer's start-up and progress lines.
    grep -v -E '^(INFO:|#[0-9]+[[:space:]]|MS:|Running:|Executed|\*\*\*|[[:space:]]*$)' "$log" |
        grep -v -E '^(/.*: Running|stat::|Base64:|0x[0-9a-f]+,|artifact_prefix)' | head -80
    echo "-- end of report for $target"
}

# ---- building -------------------------------------------------------------------------------

fuzz_bin_dir=""
bazel_build_fuzzers() {
    local config=fuzz labels=(//fuzz:all) t
    if [ "$tsan" -eq 1 ]; then
        config=fuzz_tsan
        labels=()
        for t in "${names[@]}"; do labels+=("//fuzz:${t}_fuzzer"); done
    fi
    say "building fuzzers: tools/bazelw build --config=$config ${labels[*]}"
    if ! "$bazel" build --config=$config "${labels[@]}" >"$work/build.log" 2>&1; then
        grep -E "error|ERROR" "$work/build.log" | head -40
        echo "fuzzer build failed"
        return 1
    fi
    fuzz_bin_dir="$("$bazel" info --config=$config bazel-bin 2>/dev/null)/fuzz"
}

# Builds a target outside Bazel from its manifest: $1 manifest, $2 output, $3 kind
# (fuzzer | coverage), from source root $4 (default: here).
manifest_build() {
    local manifest=$1 out=$2 kind=$3 src=${4:-$root}
    local cflags engine
    case "$kind" in
    fuzzer)
        cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
        engine="-fsanitize=fuzzer" ;;
    fuzzer-thread) # ThreadSanitizer (a mutant's "Sanitizer: thread"), as --config=fuzz_tsan
        cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,thread"
        engine="-fsanitize=fuzzer" ;;
    coverage)
        cflags="-g -O0 -fprofile-instr-generate -fcoverage-mapping"
        engine="fuzz/replay_main.c" ;;
    esac
    SRC_ROOT=$src CC=clang CFLAGS="$cflags" LIB_FUZZING_ENGINE="$engine" OBJ_CACHE="${obj_cache:-}" \
        "$root/fuzz/build_manifest.sh" "$src/$manifest" "$out" >"$out.log" 2>&1 || { cat "$out.log"; return 1; }
}

# ---- running a fuzzer -----------------------------------------------------------------------

# Fuzzes $1 (binary) for target $2 for $3 seconds with $4 processes: new inputs into $5, the
# corpora $6... read as well. Returns 0, or 1 after reporting a crash.
run_fuzzer() {
    local bin=$1 target=$2 secs=$3 procs=$4 out=$5
    shift 5
    local art="${RUN_DIR:-$work}/artifacts-$target" logs="${RUN_DIR:-$work}/logs-$target"
    mkdir -p "$art" "$logs" "$out"
    local args
    mapfile -t args < <(target_args "$target")
    local pids=() i seed_args=()
    # libFuzzer replays the whole corpus before its clock starts counting, and malloc_api's
    # inputs (forks, threads, a full heap check after most operations) take minutes to
    # replay: the kill is for a fuzzer that hangs, not for a slow replay.
    # An input that runs longer than the unit timeout is reported as a hang: 30 s in CI and for
    # the planted bugs; a long campaign, which may run at a low priority next to other work
    # (nice 19 gets a few percent of a busy CPU), allows 300 s (inputs that take a second alone
    # were stopped after 40 s there).
    # ThreadSanitizer runs the threaded target's 2-4 threads many times slower, and CI runs two
    # such fuzzers on 2 CPUs: an input that runs in 0.6 s alone took over 30 s in a loaded CI
    # run, so they get 120 s (a deadlock still stops there).
    local unit_timeout=30
    [ "$tsan" -eq 1 ] && unit_timeout=120
    [ "$mode" = campaign ] && unit_timeout=300
    for ((i = 0; i < procs; i++)); do
        [ "$mode" = ci ] && seed_args=("-seed=$((i + 1))")
        timeout -k 10 $((secs + 900)) "$bin" -max_total_time="$secs" -timeout="$unit_timeout" -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$art/" "${seed_args[@]}" "${args[@]}" "$out" "$@" >"$logs/$i.log" 2>&1 &
        pids+=($!)
    done
    local rc=0
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || rc=1
    done
    local found
    found=$(find "$art" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | head -1)
    if [ -n "$found" ]; then
        local log
        log=$(grep -l -F "$(basename "$found")" "$logs"/*.log | head -1)
        report_crash "$target" "$found" "${log:-$logs/0.log}"
        return 1
    fi
    if [ "$rc" -ne 0 ]; then
        echo "!! $target: the fuzzer failed without leaving an input:"
        tail -30 "$logs/0.log"
        return 1
    fi
    summarise_run "$target" "$secs" "$procs" "$out" "$logs"
    return 0
}

# One line per run: inputs executed and their rate, the coverage at the end of the start-up
# replay (libFuzzer's INITED line) and at the end (DONE), so a run shows what it found beyond
# its corpus; a run that never got past the replay says so.
summarise_run() {
    local target=$1 secs=$2 procs=$3 out=$4 logs=$5
    cat "$logs"/*.log | awk -v t="$target" -v secs="$secs" -v procs="$procs" -v new="$(find "$out" -type f | wc -l)" '
        function field(name,   i) { for (i = 1; i < NF; i++) if ($i == name) return $(i + 1) + 0; return -1 }
        /INITED/ { inited++; if (field("cov:") > icov) icov = field("cov:"); if (field("ft:") > ift) ift = field("ft:");
                   n = substr($1, 2) + 0; if (n > replayed) replayed = n }
        /^#[0-9]+/ && !/INITED/ { if (field("cov:") > cov) cov = field("cov:"); if (field("ft:") > ft) ft = field("ft:") }
        /stat::number_of_executed_units/ { execs += $2 }
        /stat::average_exec_per_sec/ { rate += $2 }
        END {
            if (cov < icov) cov = icov; if (ft < ift) ft = ift
            printf "   %s: %d inputs in %d s x %d (%d exec/s), ", t, execs, secs, procs, rate
            if (!inited || execs <= replayed * procs)
                printf "REPLAY ONLY: the run ended in the start-up replay of the corpus (%d inputs), nothing was fuzzed; ", replayed
            else
                printf "coverage %d -> %d edges (+%d), features %d -> %d (+%d); ", icov, cov, cov - icov, ift, ft, ft - ift
            printf "no finding; %d new inputs\n", new
        }'
}

# ---- coverage -------------------------------------------------------------------------------

coverage_report() {
    command -v llvm-cov >/dev/null && command -v llvm-profdata >/dev/null ||
        { echo "llvm-cov / llvm-profdata missing (package llvm)"; return 1; }
    local dir="$work/coverage" objects=() t
    mkdir -p "$dir"
    say "coverage: building replay binaries with -fprofile-instr-generate -fcoverage-mapping"
    for t in $(all_targets); do
        manifest_build "$(manifest_of "$t")" "$dir/$t" coverage || return 1
        local inputs=("$(corpus_of "$t")")
        [ -d "fuzz/regressions/$t" ] && inputs+=("fuzz/regressions/$t")
        LLVM_PROFILE_FILE="$dir/$t-%p.profraw" "$dir/$t" "${inputs[@]}" >"$dir/$t.replay.log" 2>&1 ||
            { echo "replaying the corpus of $t failed:"; tail -20 "$dir/$t.replay.log"; return 1; }
        echo "   $t: $(tail -1 "$dir/$t.replay.log")"
        objects+=(-object "$dir/$t")
    done
    llvm-profdata merge -sparse "$dir"/*.profraw -o "$dir/all.profdata" || return 1
    local dirs=("$root/src")
    [ -d debug ] && dirs+=("$root/debug")
    [ -d tools/rpdump ] && dirs+=("$root/tools/rpdump")
    say "line coverage of src/, debug/ and tools/rpdump/ from fuzz/corpus and fuzz/regressions (llvm-cov report)"
    llvm-cov report -instr-profile="$dir/all.profdata" "${objects[@]:1}" "${dirs[@]}" |
        sed "s#$root/##"
    llvm-cov export -summary-only -instr-profile="$dir/all.profdata" "${objects[@]:1}" "${dirs[@]}" >"$dir/summary.json"
    python3 - "$dir/summary.json" "$root" "${min_cov:-0}" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
root, minimum = sys.argv[2] + "/", float(sys.argv[3])
totals = {}
for f in data["data"][0]["files"]:
    name = f["filename"].replace(root, "")
    top = name.split("/")[0] + "/"
    lines = f["summary"]["lines"]
    t = totals.setdefault(top, [0, 0])
    t[0] += lines["covered"]
    t[1] += lines["count"]
for top, (covered, count) in sorted(totals.items()):
    print("line coverage %-7s %5d of %5d lines  %5.1f%%" % (top, covered, count, 100.0 * covered / max(count, 1)))
src = totals.get("src/", [0, 1])
if minimum and 100.0 * src[0] / max(src[1], 1) < minimum:
    print("line coverage of src/ is below %.1f%%" % minimum)
    sys.exit(1)
EOF
}

# ---- modes ----------------------------------------------------------------------------------

campaign() {
    local secs=${seconds:-60}
    bazel_build_fuzzers || return 1
    local t status=0
    for t in "${names[@]}"; do
        say "fuzzing $t for $secs s with $jobs processes"
        local new="$work/new-$t"
        run_fuzzer "$fuzz_bin_dir/${t}_fuzzer" "$t" "$secs" "$jobs" "$new" "$(corpus_of "$t")" || { status=1; break; }
        if [ "$merge" -eq 1 ] && [ -n "$(ls -A "$new")" ]; then
            local before after args
            before=$(find "$(corpus_of "$t")" -type f | wc -l)
            mapfile -t args < <(target_args "$t")
            "$fuzz_bin_dir/${t}_fuzzer" -merge=1 "${args[@]}" "$(corpus_of "$t")" "$new" >"$work/merge-$t.log" 2>&1 ||
                { echo "merge failed:"; tail -20 "$work/merge-$t.log"; status=1; break; }
            after=$(find "$(corpus_of "$t")" -type f | wc -l)
            echo "   merged into $(corpus_of "$t"): $before -> $after inputs"
        fi
    done
    [ "$status" -eq 0 ] && [ "$coverage" -eq 1 ] && { coverage_report || status=1; }
    return $status
}

ci() {
    local secs=${seconds:-30} t crashed=0 total=0
    bazel_build_fuzzers || { echo "fuzz: 1 of 1 builds failed"; return 1; }
    for t in "${names[@]}"; do
        total=$((total + 1))
        say "fuzzing $t for $secs s with $jobs processes (corpus copy)"
        run_fuzzer "$fuzz_bin_dir/${t}_fuzzer" "$t" "$secs" "$jobs" "$work/new-$t" "$(corpus_of "$t")" ||
            crashed=$((crashed + 1))
    done
    echo "fuzz: $crashed of $total targets crashed"
    [ "$crashed" -eq 0 ]
}

# The build a mutant needs: fuzzer (ASan + UBSan), or fuzzer-thread for "Sanitizer: thread".
kind_of() {
    case "$(awk '/^Sanitizer:/ { print $2; exit }' "$1")" in
    thread) echo fuzzer-thread ;;
    *) echo fuzzer ;;
    esac
}

mutants() {
    local secs=${seconds:-60} patches=() p
    if [ "${#names[@]}" -gt 0 ]; then
        for p in "${names[@]}"; do patches+=("fuzz/mutants/${p%.patch}.patch"); done
    else
        patches=(fuzz/mutants/*.patch)
    fi
    # Objects shared by the baselines and the mutants: a mutant recompiles what its patch
    # changes (fuzz/build_manifest.sh OBJ_CACHE).
    obj_cache="$work/objcache"
    # A pristine copy of what the fuzz builds read.
    local base="$work/base"
    mkdir -p "$base"
    cp -r src fuzz "$base/"
    [ -d debug ] && cp -r debug "$base/"
    [ -d tools/rpdump ] && mkdir -p "$base/tools" && cp -r tools/rpdump "$base/tools/"
    say "baseline: the unmutated targets replay their corpora cleanly"
    local builds b
    builds=$(for p in "${patches[@]}"; do echo "$(awk '/^Target:/ { print $2; exit }' "$p"):$(kind_of "$p")"; done | sort -u)
    for b in $builds; do
        local t=${b%%:*} kind=${b#*:}
        manifest_build "$(manifest_of "$t")" "$work/base-$t-$kind" "$kind" "$base" || return 1
        "$work/base-$t-$kind" -runs=0 $(target_args "$t") "$(corpus_of "$t")" >"$work/base-$t-$kind.run" 2>&1 ||
            { echo "baseline $t ($kind) fails on its own corpus:"; tail -20 "$work/base-$t-$kind.run"; return 1; }
    done
    local caught=0 by_replay=0 n=0 lines=()
    for p in "${patches[@]}"; do
        local name target tree start end secs_taken
        name=$(basename "$p" .patch)
        target=$(awk '/^Target:/ { print $2; exit }' "$p")
        n=$((n + 1))
        tree="$work/mutant-$name"
        cp -r "$base" "$tree"
        if ! (cd "$tree" && patch -p1 -s) <"$p" >"$work/$name.patch.log" 2>&1; then
            lines+=("$(printf '%-32s %-16s does not apply (%s)' "$name" "$target" "$(head -1 "$work/$name.patch.log")")")
            continue
        fi
        say "mutant $name: building $target ($(kind_of "$p"))"
        manifest_build "$(manifest_of "$target")" "$tree/$target" "$(kind_of "$p")" "$tree" ||
            { lines+=("$(printf '%-32s %-16s does not build' "$name" "$target")"); continue; }
        say "mutant $name: fuzzing $target for at most $secs s"
        local corpus=()
        [ "$seeds" -eq 1 ] && corpus=("$(corpus_of "$target")")
        start=$(date +%s.%N)
        (cd "$tree" && RUN_DIR="$tree/run" run_fuzzer "$tree/$target" "$target" "$secs" "$jobs" "$tree/new" "${corpus[@]}") \
            >"$work/$name.run" 2>&1
        local rc=$?
        end=$(date +%s.%N)
        secs_taken=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
        if [ "$rc" -ne 0 ] && grep -q '^!! .*crash' "$work/$name.run"; then
            caught=$((caught + 1))
            local why how=fuzzing
            # Caught before libFuzzer finished replaying the corpus (no INITED line): the
            # corpus held the input; otherwise fuzzing made it (always, from an empty corpus).
            if [ "$seeds" -eq 1 ] && ! cat "$tree/run/logs-$target"/*.log 2>/dev/null | grep -q INITED; then
                how=replay
                by_replay=$((by_replay + 1))
            fi
            # The harness's own failure message (it starts with the target's name), else
            # rampart's own report, else the sanitizer's summary, else the report's first line
            # (libFuzzer's indented NEW_FUNC lines left out).
            local report
            report=$(sed -n '/^-- report:/,$p' "$work/$name.run" | sed 1d | grep -v -E '^[[:space:]]')
            why=$(grep -m1 -E "^${target%_debug}[ :(]" <<<"$report" ||
                grep -v 'RAMPART_OPTIONS' <<<"$report" | grep -m1 -E '^rampart: ' ||
                grep -m1 -E '^(SUMMARY|==[0-9]+==ERROR|WARNING: ThreadSanitizer)' <<<"$report" || head -1 <<<"$report")
            why=$(sed -E 's/0x[0-9a-f]+/0x.../g' <<<"$why" | cut -c1-110)
            lines+=("$(printf '%-32s %-16s caught in %5s s (%-7s): %s' "$name" "$target" "$secs_taken" "$how" "$why")")
        else
            lines+=("$(printf '%-32s %-16s NOT caught in %s s' "$name" "$target" "$secs")")
        fi
        rm -rf "$tree"
    done
    local from="from the seed corpus"
    [ "$seeds" -eq 1 ] || from="from an empty corpus"
    say "mutants (planted bugs, fuzz/mutants): time to catch $from, $jobs process(es), at most $secs s each"
    printf '%s\n' "${lines[@]}"
    echo "caught $caught of $n ($by_replay during the start-up replay of the corpus, $((caught - by_replay)) by fuzzing)"
    [ "$caught" -eq "$n" ]
}

oss_check() {
    local out="$work/oss-out"
    mkdir -p "$out"
    say "running .clusterfuzzlite/build.sh with CC=clang CFLAGS=-fsanitize=fuzzer-no-link,address LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT=$out"
    if ! SRC="$root/.." CC=clang CXX=clang++ CFLAGS="-O1 -g -fsanitize=fuzzer-no-link,address" \
        CXXFLAGS="-O1 -g -fsanitize=fuzzer-no-link,address" LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT="$out" \
        bash .clusterfuzzlite/build.sh >"$work/oss-build.log" 2>&1; then
        tail -30 "$work/oss-build.log"
        echo "oss build: FAILED"
        return 1
    fi
    local status=0 bin count=0
    for bin in "$out"/*; do
        [ -f "$bin" ] && [ -x "$bin" ] || continue
        case "$bin" in *.zip | *.options | *.dict) continue ;; esac
        count=$((count + 1))
        local name seeds="$work/oss-seeds-$count"
        name=$(basename "$bin")
        [ -f "$out/${name}_seed_corpus.zip" ] || { echo "$name: no ${name}_seed_corpus.zip"; status=1; continue; }
        mkdir -p "$seeds"
        unzip -q -o "$out/${name}_seed_corpus.zip" -d "$seeds"
        # As ClusterFuzzLite would: the .options file's flags, the unpacked seeds, a short run.
        local opts=()
        [ -f "$out/$name.options" ] && mapfile -t opts < <(awk -F' = ' -v out="$out" \
            '/=/ { print "-" $1 "=" ($1 == "dict" ? out "/" $2 : $2) }' "$out/$name.options")
        [ -f "$out/$name.dict" ] && ! grep -q '^dict = ' "$out/$name.options" 2>/dev/null &&
            { echo "   $name: $name.dict is not named in $name.options"; status=1; }
        mkdir -p "$work/oss-new-$count"
        if "$bin" "${opts[@]}" -max_total_time=5 -artifact_prefix="$work/oss-" "$work/oss-new-$count" "$seeds" \
            >"$work/oss-$name.log" 2>&1; then
            echo "   $name: $(ls "$seeds" | wc -l) seeds$([ -f "$out/$name.dict" ] && echo ", dictionary $(grep -c '^[^#]' "$out/$name.dict") entries"), $(grep -o 'Done [0-9]* runs' "$work/oss-$name.log")"
        else
            echo "   $name: FAILED"
            tail -20 "$work/oss-$name.log"
            status=1
        fi
    done
    [ "$count" -gt 0 ] || { echo "oss build produced no fuzzer"; return 1; }
    echo "oss build: $count fuzzers built and run"
    return $status
}

reduce_corpora() {
    bazel_build_fuzzers || return 1
    local corpus t args
    for corpus in $(for t in $(all_targets); do corpus_of "$t"; done | sort -u); do
        local reduced="$work/reduced-$(basename "$corpus")"
        mkdir -p "$reduced"
        cp "$corpus"/seed-* "$reduced/" 2>/dev/null
        for t in $(all_targets); do
            [ "$(corpus_of "$t")" = "$corpus" ] || continue
            mapfile -t args < <(target_args "$t")
            "$fuzz_bin_dir/${t}_fuzzer" -merge=1 "${args[@]}" "$reduced" "$corpus" >"$work/reduce-$t.log" 2>&1 ||
                { tail -20 "$work/reduce-$t.log"; return 1; }
        done
        echo "   $corpus: $(find "$corpus" -type f | wc -l) -> $(find "$reduced" -type f | wc -l) inputs"
        rm -rf "$corpus"
        cp -r "$reduced" "$corpus"
    done
}

update_manifests() {
    # Only the manifest rules: a new target's manifest test needs the file not written yet.
    local bin label name labels
    labels=$("$bazel" query 'kind("_fuzz_manifest rule", //fuzz:all)' 2>/dev/null)
    # shellcheck disable=SC2086 # one label per word
    "$bazel" build $labels >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; return 1; }
    bin="$("$bazel" info bazel-bin 2>/dev/null)/fuzz"
    rm -f fuzz/manifests/*.txt
    for label in $labels; do
        name=${label#//fuzz:}
        name=${name%_manifest}
        cp "$bin/${name}_manifest.txt" "fuzz/manifests/$name.txt"
        chmod 644 "fuzz/manifests/$name.txt"
    done
    ls fuzz/manifests
}

case "$mode" in
campaign) campaign ;;
coverage) coverage_report ;;
mutants) mutants ;;
ci) ci ;;
oss) oss_check ;;
manifests) update_manifests ;;
reduce) reduce_corpora ;;
esac
