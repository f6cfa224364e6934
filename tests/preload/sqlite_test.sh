#!/bin/bash
# sqlite3 building and querying a 100k-row table (file database, indexes, updates, vacuum,
# PRAGMA integrity_check), with and without a rampart malloc library (release or debug flavour:
# preload_lib.sh): identical output.
source "$(dirname "$0")/preload_lib.sh" "$@"
SQL="$(dirname "$0")/sqlite_100k.sql"
run_sqlite() {
    rm -f "$TMP/test.db"
    sqlite3 "$TMP/test.db" <"$SQL"
}
export -f run_sqlite
export TMP SQL
compare_runs sqlite bash -c run_sqlite
grep -qx ok "$TMP/sqlite.plain.out" || fail "sqlite: integrity_check did not print ok"
finish
