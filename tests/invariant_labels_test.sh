#!/bin/bash
# One name per invariant: every label defined in a header (an invariant list, " *   XX1 ...",
# or "Invariant XX1 (...)"
# in src/, src/malloc/, debug/ and tools/rpdump/) is defined in exactly one file, and every
# label a checker message starts with ("XX1: ...", "R3/H3: ...") is defined somewhere.
# Arguments: the source files.
set -u
defs=$(mktemp)
trap 'rm -f "$defs"' EXIT
status=0
for f in "$@"; do
    case "$f" in *.h) ;; *) continue ;; esac
    { grep -oE '^ \*   [A-Z]{1,3}[0-9]{1,2} ' "$f" | awk '{print $2}'
      grep -oE 'Invariant [A-Z]{1,3}[0-9]{1,2}[ (:]' "$f" | sed -E 's/Invariant ([A-Z0-9]+).*/\1/'; } |
        sort -u | awk -v f="$f" '{print $1, f}' >>"$defs"
done
n=$(awk '{print $1}' "$defs" | sort -u | wc -l)
[ "$n" -gt 50 ] || { echo "only $n labels found: is the header list complete?"; exit 1; }
dups=$(awk '{print $1}' "$defs" | sort | uniq -d)
for label in $dups; do
    echo "label $label is defined in more than one file: $(awk -v l="$label" '$1 == l {print $2}' "$defs" | tr '\n' ' ')"
    status=1
done
for f in "$@"; do
    case "$f" in *.c) ;; *) continue ;; esac
    for label in $(grep -oE '"[A-Z]{1,3}[0-9]{1,2}(/[A-Z]{1,3}[0-9]{1,2})?: ' "$f" | tr -d '" :' | tr '/' ' '); do
        grep -q "^$label " "$defs" || { echo "$f: a message names $label, which no invariant list defines"; status=1; }
    done
done
[ $status -eq 0 ] && echo "ok: $n labels, each defined once; every checker message names a defined label"
exit $status
