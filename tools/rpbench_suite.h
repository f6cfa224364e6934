/* rpbench and the public mimalloc-bench suite (daanx/mimalloc-bench): where its sources are,
 * building them with CMake as the suite does, and the commands its bench.sh runs.
 *
 * The suite is never copied into the project: rpbench reads it from a path (--mimalloc-bench
 * DIR; by default shared/bench/mimalloc-bench in the checkout's parent or grandparent folder)
 * and builds it in a folder of its own outside the checkout (--suite-build DIR; by default
 * under ~/.cache/rampart). The same binaries then run under every allocator by LD_PRELOAD.
 *
 * The tests and their command lines are bench.sh's, with the machine's process count for
 * its `procs`. For the tests that run for a fixed time (larson, rptest, xmalloc-test,
 * glibc-thread) the time reported is the relative time bench.sh derives from their output; for
 * the others it is the elapsed time, as bench.sh's `time -f %E` measures it. */
#ifndef RPBENCH_SUITE_H
#define RPBENCH_SUITE_H

#include <limits.h>
#include <stddef.h>

typedef struct rpb_suite {
    char src[PATH_MAX];   /* the suite: holds bench/CMakeLists.txt and bench.sh */
    char build[PATH_MAX]; /* the CMake build folder */
    int procs;            /* bench.sh's procs: the machine's online CPUs */
} rpb_suite;

/* Finds the suite: `given` if not NULL, else the default places. 0, or -1 with a message in
 * err that says what was looked for and how to give the path. build_dir NULL = the default
 * build folder for this suite path. */
int rpb_suite_locate(const char *given, const char *build_dir, rpb_suite *s, char *err, size_t len);

/* Configures (once) and builds the suite with CMake and make -j procs; the tools' output goes
 * to logs in the build folder. 0, or -1 with the failing step and the log's last lines in
 * err. */
int rpb_suite_build(const rpb_suite *s, char *err, size_t len);

/* How a test's time is read. */
typedef enum {
    RPB_TIME_ELAPSED,      /* wall time of the run */
    RPB_TIME_LARSON,       /* "... relative time: X s" */
    RPB_TIME_RPTEST,       /* 2,000,000 / the "...N memory ops" figure */
    RPB_TIME_XMALLOC,      /* "rtime: X" */
    RPB_TIME_GLIBC_THREAD, /* 1,000,000,000 / the iterations printed */
} rpb_time_kind;

typedef struct rpb_suite_test {
    const char *name;       /* bench.sh's label, e.g. "larsonN", "alloc-test1" */
    const char *args[12];   /* argv; "$procs" is replaced by the process count, "$bench/" by the
                               suite's bench folder; argv[0] is a binary of the build folder */
    const char *stdin_file; /* under the suite's bench folder, or NULL */
    rpb_time_kind time;
    int needs_procs_above_1; /* bench.sh runs it only when procs != 1 */
} rpb_suite_test;

extern const rpb_suite_test rpb_suite_tests[];
extern const int rpb_suite_ntests;

/* Test t's argv for suite s in argv (at most 16 entries, NULL-terminated), its strings in
 * storage (len bytes). 0, or -1 if it does not fit. */
int rpb_suite_argv(const rpb_suite *s, int t, const char **argv, char *storage, size_t len);

/* The test's time from its output file (RPB_TIME_ELAPSED: wall_s itself); -1 when the output
 * does not hold the figure. */
double rpb_suite_time(int t, const char *output_path, double wall_s);

#endif
