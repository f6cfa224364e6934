#define _GNU_SOURCE
#include "rpbench_mbench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpbench_exec.h"
#include "rpbench_stats.h"

#define MAX_TARGETS 24
#define MAX_TESTS 32

typedef struct sample {
    double time_s, rss_mib, user_s, sys_s; /* -1: failed or not run */
} sample;

static rpb_target targets_run[MAX_TARGETS];
static int ntargets_run, reps_run, procs_run;
static int test_on[MAX_TESTS];
static sample samples[MAX_TESTS][MAX_TARGETS][RPB_MAX_REPS];
static char failure[MAX_TESTS][MAX_TARGETS][160]; /* the first failed run's description */
static int ran;

static int parse_tests(const char *tests, int *on, char *err, size_t len)
{
    for (int t = 0; t < rpb_suite_ntests; t++)
        on[t] = tests == NULL;
    if (!tests)
        return 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", tests);
    int any = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int t = 0; t < rpb_suite_ntests; t++)
            if (strcmp(rpb_suite_tests[t].name, tok) == 0)
                on[t] = found = any = 1;
        if (!found) {
            int n = snprintf(err, len, "--suite-tests: unknown test '%s' (tests:", tok);
            for (int t = 0; t < rpb_suite_ntests && n > 0 && (size_t)n < len; t++)
                n += snprintf(err + n, len - (size_t)n, " %s", rpb_suite_tests[t].name);
            if (n > 0 && (size_t)n < len)
                snprintf(err + n, len - (size_t)n, ")");
            return -1;
        }
    }
    if (!any) {
        snprintf(err, len, "--suite-tests takes a comma-separated list of test names");
        return -1;
    }
    return 0;
}

int rpb_mbench_check_tests(const char *tests, char *err, size_t len)
{
    int on[MAX_TESTS];
    return parse_tests(tests, on, err, len);
}

/* One run of test t under target a; fills *out (-1s when it failed) and failure[t][a]. */
static void run_one(const rpb_suite *s, int t, int a, double timeout_s, sample *out)
{
    const char *argv[16];
    char storage[8192], in[PATH_MAX + 64], log[PATH_MAX + 64];
    *out = (sample){-1, -1, -1, -1};
    if (rpb_suite_argv(s, t, argv, storage, sizeof storage) != 0)
        return;
    const rpb_suite_test *test = &rpb_suite_tests[t];
    if (test->stdin_file)
        snprintf(in, sizeof in, "%s/bench/%s", s->src, test->stdin_file);
    snprintf(log, sizeof log, "%s/rpbench-%s.out", s->build, test->name);
    /* bench.sh runs the system malloc with SYSMALLOC=1 (no effect on these programs). */
    const char *sys_env[] = {"SYSMALLOC=1", NULL};
    const rpb_target *tg = &targets_run[a];
    rpb_command cmd = {.argv = argv,
                       .cwd = s->build,
                       .stdin_path = test->stdin_file ? in : NULL,
                       .stdout_path = log,
                       .preload = tg->preload,
                       .options = tg->options,
                       .env = tg->preload && tg->preload[0] ? NULL : sys_env,
                       .timeout_s = timeout_s};
    rpb_exec_result r;
    char why[160] = "";
    if (rpb_exec(&cmd, &r) != 0)
        snprintf(why, sizeof why, "cannot start: %s", strerror(errno));
    else
        rpb_exec_describe(&r, timeout_s, why, sizeof why);
    double time_s = why[0] ? -1 : rpb_suite_time(t, log, r.wall_s);
    if (!why[0] && time_s < 0)
        snprintf(why, sizeof why, "its output has no time figure (see rpbench-%.40s.out in the build folder)", test->name);
    if (why[0]) {
        if (!failure[t][a][0])
            snprintf(failure[t][a], sizeof failure[t][a], "%s", why);
        return;
    }
    *out = (sample){time_s, r.peak_rss_mib, r.user_s, r.sys_s};
}

int rpb_mbench_run(const rpb_suite *s, const rpb_target *targets, int ntargets, const char *tests, int reps,
                   double timeout_s, void (*progress)(long done, long total, const char *what), char *err,
                   size_t len)
{
    if (parse_tests(tests, test_on, err, len) != 0)
        return -1;
    ntargets_run = ntargets < MAX_TARGETS ? ntargets : MAX_TARGETS;
    memcpy(targets_run, targets, sizeof *targets * (size_t)ntargets_run);
    reps_run = reps < RPB_MAX_REPS ? reps : RPB_MAX_REPS;
    procs_run = s->procs;
    for (int t = 0; t < rpb_suite_ntests; t++)
        if (rpb_suite_tests[t].needs_procs_above_1 && s->procs == 1)
            test_on[t] = 0;
    long total = 0, done = 0;
    for (int t = 0; t < rpb_suite_ntests; t++)
        total += test_on[t] ? (long)reps_run * ntargets_run : 0;
    for (int rep = 0; rep < reps_run; rep++)
        for (int t = 0; t < rpb_suite_ntests; t++) {
            if (!test_on[t])
                continue;
            for (int k = 0; k < ntargets_run; k++) {
                int a = (rep + k) % ntargets_run; /* rotate who goes first */
                if (progress) {
                    char what[160];
                    snprintf(what, sizeof what, "mimalloc-bench %s under %s, rep %d/%d", rpb_suite_tests[t].name,
                             targets_run[a].name, rep + 1, reps_run);
                    progress(done, total, what);
                }
                done++;
                run_one(s, t, a, timeout_s, &samples[t][a][rep]);
            }
        }
    ran = 1;
    return 0;
}

static double field(const sample *sm, int which)
{
    return which == 0 ? sm->time_s : which == 1 ? sm->rss_mib : which == 2 ? sm->user_s : sm->sys_s;
}

/* The median of one figure of test t under target a over the repetitions, and its range. */
static double median_of(int t, int a, int which, double *lo, double *hi)
{
    double v[RPB_MAX_REPS];
    for (int i = 0; i < reps_run; i++)
        v[i] = field(&samples[t][a][i], which);
    if (lo)
        rpb_range(v, reps_run, lo, hi);
    return rpb_median(v, reps_run);
}

static void print_figures(FILE *f, int which, const char *title, const char *fmt)
{
    fprintf(f, "\n%s\n%-16s", title, "test");
    for (int a = 0; a < ntargets_run; a++)
        fprintf(f, " %20s", targets_run[a].name);
    fprintf(f, "\n");
    for (int t = 0; t < rpb_suite_ntests; t++) {
        if (!test_on[t])
            continue;
        fprintf(f, "%-16s", rpb_suite_tests[t].name);
        for (int a = 0; a < ntargets_run; a++) {
            double lo, hi, m = median_of(t, a, which, &lo, &hi);
            char cell[64], a1[16], a2[16], a3[16];
            if (m < 0) {
                snprintf(cell, sizeof cell, "failed");
            } else {
                snprintf(a1, sizeof a1, fmt, m);
                snprintf(a2, sizeof a2, fmt, lo);
                snprintf(a3, sizeof a3, fmt, hi);
                if (reps_run > 1)
                    snprintf(cell, sizeof cell, "%s [%s-%s]", a1, a2, a3);
                else
                    snprintf(cell, sizeof cell, "%s", a1);
            }
            fprintf(f, " %20s", cell);
        }
        fprintf(f, "\n");
    }
}

/* Ratios rampart / other of one figure's medians, per test and their geometric mean (over
 * the tests both completed), and each allocator's geometric mean over the tests every
 * allocator completed. */
static void print_ratios(FILE *f, int which, const char *what)
{
    fprintf(f, "rampart / other, %s (< 1: rampart %s)\n%-16s", what, which == 0 ? "faster" : "leaner", "test");
    for (int a = 1; a < ntargets_run; a++)
        fprintf(f, " %12s", targets_run[a].name);
    fprintf(f, "\n");
    double ratios[MAX_TARGETS][MAX_TESTS];
    int nr[MAX_TARGETS] = {0};
    for (int t = 0; t < rpb_suite_ntests; t++) {
        if (!test_on[t])
            continue;
        fprintf(f, "%-16s", rpb_suite_tests[t].name);
        double r0 = median_of(t, 0, which, NULL, NULL);
        for (int a = 1; a < ntargets_run; a++) {
            double x = median_of(t, a, which, NULL, NULL);
            if (r0 > 0 && x > 0) {
                ratios[a][nr[a]++] = r0 / x;
                fprintf(f, " %12.2f", r0 / x);
            } else {
                fprintf(f, " %12s", "-");
            }
        }
        fprintf(f, "\n");
    }
    fprintf(f, "%-16s", "geomean");
    for (int a = 1; a < ntargets_run; a++) {
        double g = rpb_geomean(ratios[a], nr[a]);
        if (g > 0)
            fprintf(f, " %12.2f", g);
        else
            fprintf(f, " %12s", "-");
    }
    fprintf(f, "\n");
    /* Geometric means of the medians over the tests every allocator completed. */
    double per[MAX_TARGETS][MAX_TESTS];
    int n = 0;
    for (int t = 0; t < rpb_suite_ntests; t++) {
        if (!test_on[t])
            continue;
        int all = 1;
        for (int a = 0; a < ntargets_run; a++)
            all &= median_of(t, a, which, NULL, NULL) > 0;
        if (!all)
            continue;
        for (int a = 0; a < ntargets_run; a++)
            per[a][n] = median_of(t, a, which, NULL, NULL);
        n++;
    }
    fprintf(f, "geometric mean of the medians over the %d tests every allocator completed:", n);
    for (int a = 0; a < ntargets_run && n > 0; a++)
        fprintf(f, " %s %.3f%s", targets_run[a].name, rpb_geomean(per[a], n), which == 0 ? " s" : " MiB");
    fprintf(f, "\n");
}

void rpb_mbench_print(FILE *f)
{
    if (!ran)
        return;
    fprintf(f,
            "\nmimalloc-bench: the suite's programs and command lines (bench.sh, procs = %d), each allocator by "
            "LD_PRELOAD; median [min-max] of %d interleaved repetitions\n",
            procs_run, reps_run);
    print_figures(f,
                  0, "time, s (elapsed; for larsonN, larsonN-sized, rptestN, xmalloc-testN and glibc-thread the test's "
                     "own relative time, as bench.sh computes it)",
                  "%.2f");
    print_ratios(f, 0, "time");
    print_figures(f, 1, "peak RSS, MiB", "%.1f");
    print_ratios(f, 1, "peak RSS");
    for (int t = 0; t < rpb_suite_ntests; t++)
        for (int a = 0; a < ntargets_run; a++)
            if (test_on[t] && failure[t][a][0])
                fprintf(f, "  %s under %s: a run failed: %s\n", rpb_suite_tests[t].name, targets_run[a].name,
                        failure[t][a]);
}

static void json_samples(FILE *f, int t, int a, int which)
{
    fprintf(f, "[");
    for (int i = 0; i < reps_run; i++) {
        double v = field(&samples[t][a][i], which);
        if (v < 0)
            fprintf(f, "%snull", i ? ", " : "");
        else
            fprintf(f, "%s%.4g", i ? ", " : "", v);
    }
    fprintf(f, "]");
}

void rpb_mbench_json(FILE *f)
{
    static const char *const keys[] = {"time_s", "peak_rss_mib", "user_s", "sys_s"};
    fprintf(f, "\"mimalloc_bench\": {\"procs\": %d, \"reps\": %d, \"tests\": {", procs_run, reps_run);
    int first = 1;
    for (int t = 0; t < rpb_suite_ntests && ran; t++) {
        if (!test_on[t])
            continue;
        fprintf(f, "%s\n      \"%s\": {", first ? "" : ",", rpb_suite_tests[t].name);
        first = 0;
        for (int a = 0; a < ntargets_run; a++) {
            fprintf(f, "%s\"%s\": {", a ? ", " : "", targets_run[a].name);
            for (int k = 0; k < 4; k++) {
                fprintf(f, "%s\"%s\": ", k ? ", " : "", keys[k]);
                json_samples(f, t, a, k);
            }
            fprintf(f, ", \"failed\": ");
            if (failure[t][a][0])
                fprintf(f, "\"%s\"", failure[t][a]);
            else
                fprintf(f, "null");
            fprintf(f, "}");
        }
        fprintf(f, "}");
    }
    fprintf(f, "}}");
}

int rpb_mbench_test_ran(int t) { return ran && t >= 0 && t < rpb_suite_ntests && test_on[t]; }

int rpb_mbench_ntargets(void) { return ran ? ntargets_run : 0; }

const char *rpb_mbench_target(int a) { return targets_run[a].name; }

double rpb_mbench_median(int t, int a, int which, double *lo, double *hi) { return median_of(t, a, which, lo, hi); }
