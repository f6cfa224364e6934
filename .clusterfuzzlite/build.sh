#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build: every fuzz target of fuzz/manifests/ becomes $OUT/<name>
# (no extension), with <name>_seed_corpus.zip (its corpus and regressions), its dictionary
# <name>.dict when it has one (named in <name>.options too) and, when the target asks for
# libFuzzer flags or has a dictionary, <name>.options. Compiles with $CC $CFLAGS and links
# $LIB_FUZZING_ENGINE (fuzz/build_manifest.sh), never assuming libFuzzer itself.
#
# The manifests are generated from the Bazel graph (//fuzz:<name>_manifest, checked by
# //fuzz:<name>_manifest_test), so this builds exactly what `bazel build --config=fuzz` does.
# Tested locally, without Docker, by `tools/fuzz.sh --oss-check` (CI runs it).
root=$PWD
[ -d "$root/fuzz/manifests" ] || root="$SRC/rampart"
cd "$root"

zip_into() { # zip_into ARCHIVE FILE... (zip, or Python's zipfile where zip is missing)
    local archive=$1
    shift
    rm -f "$archive"
    if command -v zip >/dev/null; then
        zip -j -q "$archive" "$@"
    else
        python3 -c 'import sys, zipfile, os
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for f in sys.argv[2:]: z.write(f, os.path.basename(f))' "$archive" "$@"
    fi
}

for manifest in fuzz/manifests/*.txt; do
    name=$(awk '$1 == "name" { print $2 }' "$manifest")
    corpus=$(awk '$1 == "corpus" { print $2 }' "$manifest")
    echo "building $name"
    fuzz/build_manifest.sh "$manifest" "$OUT/$name"

    seeds=()
    for dir in "$corpus" "fuzz/regressions/$name"; do
        [ -d "$dir" ] || continue
        for f in "$dir"/*; do
            case "$(basename "$f")" in README*) continue ;; esac
            [ -f "$f" ] && seeds+=("$f")
        done
    done
    [ "${#seeds[@]}" -gt 0 ] && zip_into "$OUT/${name}_seed_corpus.zip" "${seeds[@]}"

    args=$(awk '$1 == "arg" { print $2 }' "$manifest")
    dict=$(awk '$1 == "dict" { print $2 }' "$manifest")
    rm -f "$OUT/$name.options" "$OUT/$name.dict"
    if [ -n "$args" ] || [ -n "$dict" ]; then
        echo "[libfuzzer]" >"$OUT/$name.options"
        for a in $args; do
            a=${a#-}
            echo "${a%%=*} = ${a#*=}" >>"$OUT/$name.options"
        done
        if [ -n "$dict" ]; then
            cp "$dict" "$OUT/$name.dict"
            echo "dict = $name.dict" >>"$OUT/$name.options"
        fi
    fi
done
