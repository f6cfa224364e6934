/* rpbench's mimalloc-bench scenario: the suite's benchmark programs (rpbench_suite.h) run
 * under each allocator by LD_PRELOAD, interleaved (who goes first rotates) and repeated: per
 * test the time (elapsed, or the test's own relative time) and the peak resident set, their
 * ratios rampart / other, and the geometric means over the tests every allocator completed. */
#ifndef RPBENCH_MBENCH_H
#define RPBENCH_MBENCH_H

#include <stdio.h>

#include "rpbench_security.h"
#include "rpbench_suite.h"

/* Runs the tests named in `tests` (comma-separated bench.sh labels, NULL = all) reps times
 * under every target (targets[0] is the subject of the ratios), each run limited to timeout_s
 * seconds. progress as in rpb_security_run. 0, or -1 with a message in err (an unknown test
 * name). */
int rpb_mbench_run(const rpb_suite *s, const rpb_target *targets, int ntargets, const char *tests, int reps,
                   double timeout_s, void (*progress)(long done, long total, const char *what), char *err,
                   size_t len);

/* Checks a --suite-tests list without running anything: 0, or -1 with a message. */
int rpb_mbench_check_tests(const char *tests, char *err, size_t len);

/* The tables: time and peak RSS (median [min-max]), ratios rampart / other, geometric means. */
void rpb_mbench_print(FILE *f);

/* "mimalloc_bench": {"procs": P, "reps": R, "tests": {"cfrac": {"rampart": {"time_s": [...],
 * "peak_rss_mib": [...], "user_s": [...], "sys_s": [...], "failed": "..."}}}} (raw samples,
 * null for a failed run), without a trailing comma. */
void rpb_mbench_json(FILE *f);

/* The last run's figures, for the charts: whether test t (of rpb_suite_tests) ran, the
 * targets' count and names, and the median of test t under target a (which: 0 time, 1 peak
 * RSS) with its range in *lo, *hi (-1s when it failed). */
int rpb_mbench_test_ran(int t);
int rpb_mbench_ntargets(void);
const char *rpb_mbench_target(int a);
double rpb_mbench_median(int t, int a, int which, double *lo, double *hi);

#endif
