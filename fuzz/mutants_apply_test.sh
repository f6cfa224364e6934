#!/bin/sh
# Every planted-bug patch in fuzz/mutants must still apply to the sources it mutates, or
# `tools/fuzz.sh --mutants` would silently test nothing. Run from the runfiles root, whose
# sources are symlinks: patch a real copy.
copy=${TEST_TMPDIR:-$(mktemp -d)}/tree
mkdir -p "$copy"
for d in src debug tools/rpdump; do
    [ -d "$d" ] && mkdir -p "$copy/$(dirname "$d")" && cp -RL "$d" "$copy/$(dirname "$d")/"
done
status=0
n=0
for p in fuzz/mutants/*.patch; do
    n=$((n + 1))
    if ! (cd "$copy" && patch -p1 --dry-run --force -s) <"$p" >/dev/null 2>&1; then
        echo "$p no longer applies: update it to the current sources (see fuzz/README.md)"
        (cd "$copy" && patch -p1 --dry-run --force) <"$p" 2>&1 | sed 's/^/    /'
        status=1
    fi
done
[ "$n" -gt 0 ] || { echo "no mutants found"; exit 1; }
[ "$status" -eq 0 ] && echo "$n mutant patches apply"
exit $status
