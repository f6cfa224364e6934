#!/bin/bash
# Checks the project's commit-message rule: a subject line of at most 72 characters (the
# evidence and figures go in the body). Every commit after BASE is checked; BASE is the last
# commit made before the rule was enforced, and history that has landed is never rewritten.
#
#   tools/check_commit_subjects.sh [REV]     checks BASE..REV (default HEAD)
#   tools/check_commit_subjects.sh --message FILE   checks one message (the commit-msg hook)
#
# Prints each offending commit and "K of N commit subjects longer than 72 characters"; fails
# when K > 0. A shallow clone without BASE checks the commits it has and says so.
set -u
limit=72
base=515d88c680e4b1ee327ecb908f44e9a07928e20f

if [ "${1:-}" = "--message" ]; then
    subject=$(grep -v '^#' "$2" | head -1)
    if [ "${#subject}" -gt "$limit" ]; then
        echo "commit subject is ${#subject} characters (at most $limit): $subject" >&2
        echo "keep the subject short; put the why, the evidence and the figures in the body" >&2
        exit 1
    fi
    exit 0
fi

rev=${1:-HEAD}
cd "$(dirname "$0")/.."
if ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo "not a git checkout: commit subjects not checked"
    exit 0
fi
if git cat-file -e "$base^{commit}" 2>/dev/null; then
    range="$base..$rev"
else
    echo "base commit ${base:0:12} not in this clone (shallow?): checking every commit it has"
    range=$rev
fi
total=0
long=0
while IFS=$'\t' read -r hash subject; do
    total=$((total + 1))
    if [ "${#subject}" -gt "$limit" ]; then
        long=$((long + 1))
        echo "${hash:0:12}: ${#subject} characters: $subject"
    fi
done < <(git log --no-merges --format='%H%x09%s' "$range")
echo "$long of $total commit subjects longer than $limit characters"
[ "$long" -eq 0 ]
