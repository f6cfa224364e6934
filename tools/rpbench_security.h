/* rpbench's security scenario: the mimalloc-bench suite's security tests (bench/security/:
 * overflows, underflows, double and invalid frees, use after free, zeroing, reuse, an
 * executable heap) run under each allocator, with the suite's own verdict.
 *
 * Each test program performs one misuse and prints NOT_CAUGHT if it was allowed to carry on
 * past it (for the zeroing tests: if the memory it reads was not zero). As in the suite's
 * bench.sh, a run is "caught" when NOT_CAUGHT is not in its output and it did not time out:
 * the allocator stopped it (an error report and abort, a crash), or, for the zeroing tests,
 * the memory was zero. NOT_CAUGHT followed by a crash or a time-out is bench.sh's "late crash"
 * or "late timeout": not caught. A time-out without NOT_CAUGHT is its own verdict. */
#ifndef RPBENCH_SECURITY_H
#define RPBENCH_SECURITY_H

#include <stdio.h>

#include "rpbench_suite.h"

/* One allocator to run the tests under. */
typedef struct rpb_target {
    const char *name;
    const char *preload; /* LD_PRELOAD, NULL or "" = the system malloc */
    const char *options; /* RAMPART_OPTIONS, NULL = unset */
} rpb_target;

typedef enum {
    RPB_SEC_NOT_RUN = 0,
    RPB_SEC_CAUGHT,       /* bench.sh "[+]" */
    RPB_SEC_NOT_CAUGHT,   /* "[-]" */
    RPB_SEC_LATE_CRASH,   /* "[late crash]": NOT_CAUGHT, then the program crashed */
    RPB_SEC_LATE_TIMEOUT, /* "[late timeout]" */
    RPB_SEC_TIMEOUT,      /* "[timeout]" */
} rpb_sec_verdict;

/* Runs every security test of the built suite under every target, each run limited to
 * timeout_s seconds (bench.sh: 1). progress(done, total, what) is called before each test
 * (may be NULL). Results stay for rpb_security_print and rpb_security_json. 0, or -1 with a
 * message in err (no test binaries found). */
int rpb_security_run(const rpb_suite *s, const rpb_target *targets, int ntargets, double timeout_s,
                     void (*progress)(long done, long total, const char *what), char *err, size_t len);

/* The table (one row per test program, a column per target, sizes small/medium/large side by
 * side) and "caught K of N" per target. */
void rpb_security_print(FILE *f);

/* "security": {"timeout_s": T, "tests": [...], "targets": {"name": {"caught": K, "total": N,
 * "verdicts": {"test": "caught"|...}}}} without a trailing comma. */
void rpb_security_json(FILE *f);

/* The verdict's name in the JSON and the legend ("caught", "not caught", ...). */
const char *rpb_sec_verdict_name(rpb_sec_verdict v);

#endif
