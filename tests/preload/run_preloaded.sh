# Sourced by the preload tests' scripts: one run of a program with a drop-in library in
# LD_PRELOAD.
#   run_preloaded LIBRARY OK_LINE OPTIONS PROGRAM [ARGS...]
# runs PROGRAM ARGS with RAMPART_OPTIONS=OPTIONS; it must exit 0 and print OK_LINE last. Prints
# "ok (...)", or "FAIL (...)" with the output and exits the script with 1.
run_preloaded() {
    local so=$1 ok_line=$2 options=$3
    shift 3
    local what="RAMPART_OPTIONS='$options'"
    [ $# -gt 1 ] && what="${*:2}, $what"
    local out status
    out=$(LD_PRELOAD=$so RAMPART_OPTIONS=$options "$@" 2>&1)
    status=$?
    if [ $status -ne 0 ] || [ "$(printf '%s\n' "$out" | tail -1)" != "$ok_line" ]; then
        printf '%s\n' "$out" | tail -40
        echo "FAIL ($what): status $status"
        exit 1
    fi
    echo "ok ($what)"
}
