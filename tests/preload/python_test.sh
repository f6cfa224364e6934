#!/bin/bash
# python3 running an allocation-heavy script (every object from malloc: PYTHONMALLOC=malloc),
# with and without a rampart malloc library (release or debug flavour: preload_lib.sh):
# identical output.
source "$(dirname "$0")/preload_lib.sh" "$@"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
export PYTHONMALLOC=malloc PYTHONHASHSEED=0
compare_runs python "$PY" "$(dirname "$0")/alloc_heavy.py"
finish
