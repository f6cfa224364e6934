#!/bin/bash
# git on a generated repository (init, add, commits, branch and merge, log --stat, diff, gc,
# fsck), with and without a rampart malloc library (release or debug flavour: preload_lib.sh):
# identical output, hashes included.
source "$(dirname "$0")/preload_lib.sh" "$@"
export GIT_AUTHOR_NAME=rampart GIT_AUTHOR_EMAIL=rampart@example.invalid
export GIT_COMMITTER_NAME=rampart GIT_COMMITTER_EMAIL=rampart@example.invalid
export GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
run_git() {
    set -e
    local repo="$TMP/repo"
    rm -rf "$repo"
    git -c init.defaultBranch=main init -q "$repo"
    cd "$repo"
    for i in $(seq 1 300); do
        seq "$i" $((i * 40)) >"f$i.txt"
    done
    mkdir -p sub/dir
    for i in $(seq 1 50); do printf 'line %d\n' $(seq 1 $((i * 3))) >"sub/dir/g$i.txt"; done
    git add -A
    git commit -qm "first"
    git checkout -qb feature
    for i in $(seq 1 300 | awk 'NR % 3 == 0'); do echo "feature $i" >>"f$i.txt"; done
    git rm -q sub/dir/g7.txt
    git commit -qam "feature work"
    git checkout -q main
    for i in $(seq 1 300 | awk 'NR % 5 == 0'); do sed -i '1s/^/main /' "f$i.txt"; done
    git commit -qam "main work"
    git merge -q --no-edit feature
    git log --stat --format='%H %s' | head -400
    git diff --stat HEAD~2 HEAD | tail -5
    git rev-list --all --count
    git gc -q --aggressive
    git fsck --full --strict 2>"$TMP/fsck.err" && echo "fsck ok"
    grep -v "rampart\|^  " "$TMP/fsck.err" || true
    git count-objects -v | grep -v size
    git cat-file -p HEAD | head -3
}
export -f run_git
export TMP
compare_runs git bash -c run_git
finish
