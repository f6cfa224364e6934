#define _GNU_SOURCE
#include "rpbench_suite.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rpbench_exec.h"

/* bench.sh's tests that build from the suite's own sources (shbench is not distributed;
 * redis, lua, lean, gs, rocksdb, z3, rbstress, linux and spec need programs of their own). */
const rpb_suite_test rpb_suite_tests[] = {
    {"cfrac", {"cfrac", "17545186520507317056371138836327483792789528"}, NULL, RPB_TIME_ELAPSED, 0},
    {"espresso", {"espresso", "$bench/espresso/largest.espresso"}, NULL, RPB_TIME_ELAPSED, 0},
    {"barnes", {"barnes"}, "barnes/input", RPB_TIME_ELAPSED, 0},
    {"larsonN", {"larson", "5", "8", "1000", "5000", "100", "4141", "$procs"}, NULL, RPB_TIME_LARSON, 0},
    {"larsonN-sized", {"larson-sized", "5", "8", "1000", "5000", "100", "4141", "$procs"}, NULL, RPB_TIME_LARSON, 0},
    {"mstressN", {"mstress", "$procs", "50", "25"}, NULL, RPB_TIME_ELAPSED, 0},
    {"rptestN", {"rptest", "$procs", "0", "1", "2", "500", "1000", "100", "8", "16000"}, NULL, RPB_TIME_RPTEST, 0},
    {"alloc-test1", {"alloc-test", "1"}, NULL, RPB_TIME_ELAPSED, 0},
    {"alloc-testN", {"alloc-test", "$procs16"}, NULL, RPB_TIME_ELAPSED, 1},
    {"xmalloc-testN", {"xmalloc-test", "-w", "$procs", "-t", "5", "-s", "64"}, NULL, RPB_TIME_XMALLOC, 0},
    {"cache-scratch1", {"cache-scratch", "1", "1000", "1", "2000000", "$procs"}, NULL, RPB_TIME_ELAPSED, 0},
    {"cache-scratchN", {"cache-scratch", "$procs", "1000", "1", "2000000", "$procs"}, NULL, RPB_TIME_ELAPSED, 1},
    {"glibc-simple", {"glibc-simple"}, NULL, RPB_TIME_ELAPSED, 0},
    {"glibc-thread", {"glibc-thread", "$procs"}, NULL, RPB_TIME_GLIBC_THREAD, 0},
    {"cache-thrash1", {"cache-thrash", "1", "1000", "1", "2000000", "$procs"}, NULL, RPB_TIME_ELAPSED, 0},
    {"cache-thrashN", {"cache-thrash", "$procs", "1000", "1", "2000000", "$procs"}, NULL, RPB_TIME_ELAPSED, 1},
    {"malloc-large", {"malloc-large"}, NULL, RPB_TIME_ELAPSED, 0},
    {"mleak10", {"mleak", "5"}, NULL, RPB_TIME_ELAPSED, 0},
    {"mleak100", {"mleak", "50"}, NULL, RPB_TIME_ELAPSED, 0},
};
const int rpb_suite_ntests = (int)(sizeof rpb_suite_tests / sizeof rpb_suite_tests[0]);

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_suite(const char *dir)
{
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/bench/CMakeLists.txt", dir);
    if (!is_file(p))
        return 0;
    snprintf(p, sizeof p, "%s/bench.sh", dir);
    return is_file(p);
}

/* FNV-1a, to name the build folder after the suite's path (a CMake build folder belongs to
 * one source folder). */
static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int rpb_suite_locate(const char *given, const char *build_dir, rpb_suite *s, char *err, size_t len)
{
    memset(s, 0, sizeof *s);
    const char *wd = getenv("BUILD_WORKSPACE_DIRECTORY"); /* the checkout, under `bazel run` */
    char start[PATH_MAX], tried[2 * PATH_MAX + 64] = "";
    if (wd && wd[0])
        snprintf(start, sizeof start, "%s", wd);
    else if (!getcwd(start, sizeof start))
        snprintf(start, sizeof start, ".");
    if (given) {
        char path[PATH_MAX + 16];
        const char *bwd = getenv("BUILD_WORKING_DIRECTORY");
        if (given[0] != '/' && bwd)
            snprintf(path, sizeof path, "%s/%s", bwd, given);
        else
            snprintf(path, sizeof path, "%s", given);
        if (!realpath(path, s->src) || !is_suite(s->src)) {
            snprintf(err, len,
                     "--mimalloc-bench %s: not the mimalloc-bench suite (a folder with bench/CMakeLists.txt "
                     "and bench.sh)",
                     given);
            return -1;
        }
    } else {
        static const char *const ups[] = {"..", "../.."};
        int found = 0;
        for (size_t i = 0; i < sizeof ups / sizeof ups[0] && !found; i++) {
            char cand[PATH_MAX + 64];
            snprintf(cand, sizeof cand, "%s/%s/shared/bench/mimalloc-bench", start, ups[i]);
            size_t n = strlen(tried);
            snprintf(tried + n, sizeof tried - n, "%s%s", n ? ", " : "", cand);
            found = realpath(cand, s->src) && is_suite(s->src);
        }
        if (!found) {
            snprintf(err, len,
                     "the mimalloc-bench suite was not found (looked in %s); give its folder with "
                     "--mimalloc-bench DIR (a checkout of daanx/mimalloc-bench, or the shared copy of its "
                     "bench/ and bench.sh)",
                     tried);
            return -1;
        }
    }
    if (build_dir) {
        snprintf(s->build, sizeof s->build, "%s", build_dir);
    } else {
        const char *home = getenv("HOME");
        snprintf(s->build, sizeof s->build, "%s/.cache/rampart/mimalloc-bench-%08x", home && home[0] ? home : "/tmp",
                 hash_str(s->src));
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    s->procs = n > 0 ? (int)n : 1;
    return 0;
}

/* mkdir -p */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* The last lines of a log (at most about len bytes), for an error message. */
static void log_tail(const char *path, char *out, size_t len)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char buf[65536];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0;
    fseek(f, from, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* Keep the last 8 lines that fit. */
    const char *p = buf + n;
    int lines = 0;
    while (p > buf && lines < 9 && (size_t)(buf + n - p) < len - 1)
        if (*--p == '\n')
            lines++;
    snprintf(out, len, "%s", p);
}

/* One build step, its output in log; 0, or -1 with what failed in err. */
static int build_step(const char *const *argv, const char *log, char *err, size_t len)
{
    rpb_command cmd = {.argv = argv, .stdout_path = log, .stderr_path = NULL};
    /* stderr and stdout in one log: the shell-free way is to name the log for both, which
     * truncates twice; send stderr to its own file instead. */
    char errlog[PATH_MAX + 8];
    snprintf(errlog, sizeof errlog, "%s.err", log);
    cmd.stderr_path = errlog;
    rpb_exec_result r;
    if (rpb_exec(&cmd, &r) != 0) {
        snprintf(err, len, "cannot run %s: %s", argv[0], strerror(errno));
        return -1;
    }
    char why[96];
    rpb_exec_describe(&r, 0, why, sizeof why);
    if (!why[0])
        return 0;
    char tail[1200], tail_err[1200];
    log_tail(log, tail, sizeof tail);
    log_tail(errlog, tail_err, sizeof tail_err);
    snprintf(err, len, "%s %s: %s (logs: %s, %s)\n%s%s", argv[0], argv[1], why, log, errlog, tail, tail_err);
    return -1;
}

int rpb_suite_build(const rpb_suite *s, char *err, size_t len)
{
    if (make_dirs(s->build) != 0) {
        snprintf(err, len, "cannot create the build folder %s: %s", s->build, strerror(errno));
        return -1;
    }
    char bench[PATH_MAX + 8], log[PATH_MAX + 32], jobs[16], cache[PATH_MAX + 32];
    snprintf(bench, sizeof bench, "%s/bench", s->src);
    snprintf(jobs, sizeof jobs, "%d", s->procs);
    snprintf(cache, sizeof cache, "%s/CMakeCache.txt", s->build);
    if (!is_file(cache)) {
        const char *configure[] = {"/usr/bin/env", "cmake", "-S", bench, "-B", s->build, "-DCMAKE_BUILD_TYPE=Release",
                                   NULL};
        snprintf(log, sizeof log, "%s/rpbench-cmake.log", s->build);
        if (build_step(configure, log, err, len) != 0)
            return -1;
    }
    const char *make[] = {"/usr/bin/env", "cmake", "--build", s->build, "-j", jobs, NULL};
    snprintf(log, sizeof log, "%s/rpbench-build.log", s->build);
    return build_step(make, log, err, len);
}

/* Appends str to storage at *used; returns its copy or NULL when it does not fit. */
static const char *store(char *storage, size_t len, size_t *used, const char *str)
{
    size_t n = strlen(str) + 1;
    if (*used + n > len)
        return NULL;
    memcpy(storage + *used, str, n);
    const char *copy = storage + *used;
    *used += n;
    return copy;
}

int rpb_suite_argv(const rpb_suite *s, int t, const char **argv, char *storage, size_t len)
{
    const rpb_suite_test *test = &rpb_suite_tests[t];
    size_t used = 0;
    int n = 0;
    for (int i = 0; i < 12 && test->args[i] && n < 15; i++) {
        const char *a = test->args[i];
        char buf[PATH_MAX + 64];
        if (i == 0)
            snprintf(buf, sizeof buf, "%s/%s", s->build, a);
        else if (strcmp(a, "$procs") == 0)
            snprintf(buf, sizeof buf, "%d", s->procs);
        else if (strcmp(a, "$procs16") == 0) /* alloc-test takes at most 16 */
            snprintf(buf, sizeof buf, "%d", s->procs > 16 ? 16 : s->procs);
        else if (strncmp(a, "$bench/", 7) == 0)
            snprintf(buf, sizeof buf, "%s/bench/%s", s->src, a + 7);
        else
            snprintf(buf, sizeof buf, "%s", a);
        if (!(argv[n++] = store(storage, len, &used, buf)))
            return -1;
    }
    argv[n] = NULL;
    return 0;
}

/* The first figure next to `key` in the file: the number right after it (key NULL: at the
 * start of a line), or with `before` set the whole number right before it (rptest prints
 * "....2414037 memory ops/CPU second"); -1 if no line has one. */
static double number_near(const char *path, const char *key, int before)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[4096];
    double v = -1;
    while (v < 0 && fgets(line, sizeof line, f)) {
        char *k = key ? strstr(line, key) : line;
        if (!k)
            continue;
        char *p = before ? k : k + (key ? strlen(key) : 0), *end;
        while (before && p > line && p[-1] >= '0' && p[-1] <= '9')
            p--;
        double x = strtod(p, &end);
        if (end != p && x >= 0)
            v = x;
    }
    fclose(f);
    return v;
}

double rpb_suite_time(int t, const char *output_path, double wall_s)
{
    double x;
    switch (rpb_suite_tests[t].time) {
    case RPB_TIME_LARSON:
        return number_near(output_path, "relative time: ", 0);
    case RPB_TIME_RPTEST:
        x = number_near(output_path, " memory ops", 1);
        return x > 0 ? 2000000.0 / x : -1;
    case RPB_TIME_XMALLOC:
        return number_near(output_path, "rtime: ", 0);
    case RPB_TIME_GLIBC_THREAD:
        x = number_near(output_path, NULL, 0);
        return x > 0 ? 1e9 / x : -1;
    case RPB_TIME_ELAPSED:
    default:
        return wall_s;
    }
}
