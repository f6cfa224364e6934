/* rpbench's command line: the options, --help, and the order of a run (measure every
 * scenario selected, then print the tables and write the JSON and the chart). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "rpbench.h"
#include "rpbench_exec.h"
#include "rpbench_mbench.h"
#include "rpbench_progress.h"
#include "rpbench_worker.h"

const char *const scenario_names[SC_COUNT] = {"seed",    "churn", "memory",         "pairs",   "prodcons",
                                              "grow",    "program", "grid", "mimalloc-bench", "security"};
/* mimalloc-bench and security run only when named: they need the suite's sources. */
int scenario_on[SC_COUNT] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
const char *const grow_patterns[NGROW] = {"x1.5", "+64k", "again"};

int reps_given;
int rounds = 10, per_round = 2000;
/* churn_ops: operations per churn run. At 200k a run of the fast allocators lasted a few ms
 * and its time moved by 1.6x between runs; at 2M far less. thread_ops: iterations (one malloc
 * and one free each) of a thread-scenario run over all its threads: runs of 2M hold a fixed
 * part (thread start, first touches, a vCPU waking up) that 10M dilutes. Slow allocators stop
 * at a time cap per pass either way (rpbench_worker.c); the debug rows do a tenth. */
long churn_ops = 2000000, thread_ops = 10000000, grid_ops = 100000, grow_max_mib = 256;
int nthreads_list = 4, threads_list[MAX_THREADS_LIST] = {1, 2, 4, 8};
const char *only_case;
const char *suite_dir, *suite_build, *suite_tests;
double suite_timeout = 300, security_timeout = 10;
rpb_suite suite;

int reps_for(int scenario)
{
    if (scenario == SC_SECURITY)
        return 1; /* a verdict, not a time */
    if (reps_given > 0)
        return reps_given;
    switch (scenario) {
    case SC_SEED:
    case SC_CHURN:
    case SC_PAIRS:
    case SC_PRODCONS:
        return DEFAULT_LONG_REPS; /* short runs whose times move by up to 2x on a shared machine */
    case SC_MBENCH:
    case SC_GRID:
        return DEFAULT_SUITE_REPS; /* long runs, or many of them */
    default:
        return DEFAULT_REPS;
    }
}

int case_selected(int c) { return !only_case || strcmp(only_case, rpb_cases[c].name) == 0; }

/* ---- parsing ------------------------------------------------------------------------------------ */

static int select_list(const char *opt, const char *list, const char *const *names, int n, size_t stride, int *on)
{
    for (int i = 0; i < n; i++)
        on[i] = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int i = 0; i < n; i++) {
            const char *name = *(const char *const *)((const char *)names + (size_t)i * stride);
            if (strcmp(name, tok) == 0)
                on[i] = found = 1;
        }
        if (!found) {
            fprintf(stderr, "rpbench: %s: unknown name '%s' (rpbench --help lists the names)\n", opt, tok);
            return -1;
        }
    }
    return 0;
}

/* The value of option opt as a whole number in [lo, hi]: 0, or -1 after one clear message
 * (atoi's silent 0 for "abc" or 5 for "5x" would run a benchmark nobody asked for). */
static int parse_number(const char *opt, const char *val, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno != 0 || end == val || *end != 0 || v < lo || v > hi) {
        fprintf(stderr, "rpbench: %s takes a whole number from %ld to %ld, not '%s'\n", opt, lo, hi, val);
        return -1;
    }
    *out = v;
    return 0;
}

/* parse_number for an option stored in an int. */
static int parse_int(const char *opt, const char *val, int lo, int hi, int *out)
{
    long v;
    if (parse_number(opt, val, lo, hi, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* --threads: a comma-separated list of 1 to MAX_THREADS_LIST thread counts, each 1..64 (what
 * the worker accepts). 0, or -1 after a message. */
static int parse_threads(const char *val)
{
    char buf[128];
    if (snprintf(buf, sizeof buf, "%s", val) >= (int)sizeof buf) {
        fprintf(stderr, "rpbench: --threads: list too long\n");
        return -1;
    }
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == MAX_THREADS_LIST) {
            fprintf(stderr, "rpbench: --threads takes at most %d counts\n", MAX_THREADS_LIST);
            return -1;
        }
        if (parse_int("--threads", tok, 1, 64, &threads_list[n]) != 0)
            return -1;
        n++;
    }
    if (n == 0) {
        fprintf(stderr, "rpbench: --threads takes a list of thread counts, e.g. 1,2,4,8\n");
        return -1;
    }
    nthreads_list = n;
    return 0;
}

/* Opens an output file for appending (creating it if need be, leaving what it holds) before
 * the measurements start, so that a path that cannot be written fails at once rather than
 * after a quarter of an hour of benchmarks; the results replace it at the end. */
static int output_writable(const char *path)
{
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "rpbench: cannot write %s: %s\n", path, strerror(errno));
        return 0;
    }
    fclose(f);
    return 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rpbench [OPTION]...\n"
            "Measures rampart's malloc against glibc, jemalloc, mimalloc and tcmalloc, side by side: each\n"
            "allocator in fresh processes, interleaved, repeated; tables of medians [min-max], comparisons\n"
            "rampart / other, a JSON file of every sample and an SVG chart of every scenario.\n"
            "\n"
            "  --scenarios LIST    comma-separated; default seed,churn,memory,pairs,prodcons,grow,program,grid\n"
            "                        seed      rounds of allocations of one shape, no frees (ns/op, flatness)\n"
            "                        churn     free one, allocate one over 1000 live blocks (ns/op, p99.9)\n"
            "                        memory    peak RSS over the bytes requested\n"
            "                        pairs     threads freeing their own small blocks (ops/s)\n"
            "                        prodcons  blocks allocated by one thread, freed by the next (ops/s)\n"
            "                        grow      realloc growth to --grow-mib MiB, and a big buffer again and again\n"
            "                        program   sqlite3 and python3 whole, by LD_PRELOAD (CPU s, peak RSS)\n"
            "                        grid      sizes 16 B-64 KiB x alignments 16 B-64 KiB: churn and no-free\n"
            "                                  rounds, rampart against jemalloc and mimalloc\n"
            "                        mimalloc-bench  the public mimalloc-bench suite's programs (named only)\n"
            "                        security  the suite's security tests: caught K of N (named only)\n"
            "  --allocators LIST   rows to measure (rampart is always measured):");
    for (int a = 0; a < NBUILTIN; a++)
        fprintf(f, " %s", allocators[a].name);
    fprintf(f,
            "\n"
            "  --debug             add the debug flavour's rows (debug, debug-nobt, debug-fast, glibc-asan;\n"
            "                      glibc-asan-full, ASan with full stacks, only when named)\n"
            "  --variant LIB[:OPTIONS]  add a rampart row: LIB release or debug (library), OPTIONS its\n"
            "                      RAMPART_OPTIONS, e.g. release:purge_delay_ms=0 or debug (repeatable)\n"
            "  --reps N            repetitions of every scenario (default: %d for seed, churn, pairs and\n"
            "                      prodcons, %d for grid and mimalloc-bench, %d for the rest; security runs once)\n"
            "  --quick             small runs: --reps 1, fewer operations (a check, not a measurement)\n"
            "  --case NAME         one case of seed/churn/memory:",
            DEFAULT_LONG_REPS, DEFAULT_SUITE_REPS, DEFAULT_REPS);
    for (int c = 0; c < rpb_ncases; c++)
        fprintf(f, " %s", rpb_cases[c].name);
    fprintf(f, "\n"
               "  --rounds N, --per-round N   seed and memory: rounds (default 10), allocations per round (2000)\n"
               "  --churn-ops N       operations per churn run (default 2000000)\n"
               "  --thread-ops N      iterations per thread-scenario run (default 10000000)\n"
               "  --threads LIST      thread counts (default 1,2,4,8)\n"
               "  --grid-ops N        churn operations per grid pair (default 100000)\n"
               "  --grow-mib N        grow target, MiB (default 256)\n"
               "  --mimalloc-bench DIR  the suite (default: shared/bench/mimalloc-bench in the checkout's parent\n"
               "                      or grandparent folder); never copied, built with CMake in --suite-build\n"
               "  --suite-build DIR   its build folder (default ~/.cache/rampart/mimalloc-bench-HASH)\n"
               "  --suite-tests LIST  some of its tests (bench.sh's names, e.g. cfrac,larsonN,rptestN)\n"
               "  --suite-timeout S   limit per suite run (default 300)\n"
               "  --security-timeout S  limit per security test run (default 10; bench.sh uses 1)\n"
               "  --json FILE         every figure: medians and the samples of each repetition\n"
               "  --svg FILE|none     the chart (default rpbench.svg in the current folder)\n"
               "  -h, --help          this text\n"
               "Progress goes to stderr: one line rewritten on a terminal, a line per step otherwise.\n");
}

/* The options and their values. 0, 1 when --help was asked for, 2 after a message. */
typedef struct cli {
    const char *json, *svg;
    int debug_rows, named;
} cli;

/* Options with a whole-number value: name, where it goes (int or long), bounds. */
typedef struct num_opt {
    const char *name;
    int *ival;
    long *lval;
    long lo, hi;
} num_opt;

static int parse_args(int argc, char **argv, cli *c)
{
    const num_opt nums[] = {
        {"--reps", &reps_given, NULL, 1, MAX_REPS},
        {"--rounds", &rounds, NULL, 2, MAX_ROUNDS},
        {"--per-round", &per_round, NULL, 1, 10000000},
        {"--churn-ops", NULL, &churn_ops, 1, 1000000000000L},
        {"--thread-ops", NULL, &thread_ops, 1, 1000000000000L},
        {"--grid-ops", NULL, &grid_ops, 1, 1000000000000L},
        {"--grow-mib", NULL, &grow_max_mib, 8, 65536},
    };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(arg, "--debug") == 0) {
            c->debug_rows = 1;
            continue;
        }
        if (strcmp(arg, "--quick") == 0) {
            reps_given = 1;
            churn_ops = 50000;
            thread_ops = 500000;
            grid_ops = 5000;
            grow_max_mib = 64;
            continue;
        }
        if (!val) {
            fprintf(stderr, "rpbench: %s: %s (rpbench --help lists the options)\n", arg,
                    strncmp(arg, "--", 2) == 0 ? "unknown option, or one that needs a value" : "not an option");
            return 2;
        }
        int done = 0;
        for (size_t k = 0; k < sizeof nums / sizeof nums[0] && !done; k++) {
            if (strcmp(arg, nums[k].name) != 0)
                continue;
            long v;
            if (parse_number(arg, val, nums[k].lo, nums[k].hi, &v) != 0)
                return 2;
            if (nums[k].ival)
                *nums[k].ival = (int)v;
            else
                *nums[k].lval = v;
            done = 1;
        }
        i++;
        if (done)
            continue;
        if (strcmp(arg, "--case") == 0) {
            only_case = val;
        } else if (strcmp(arg, "--json") == 0) {
            c->json = val;
        } else if (strcmp(arg, "--svg") == 0) {
            c->svg = val;
        } else if (strcmp(arg, "--scenarios") == 0) {
            if (select_list(arg, val, scenario_names, SC_COUNT, sizeof scenario_names[0], scenario_on) != 0)
                return 2;
        } else if (strcmp(arg, "--allocators") == 0) {
            if (select_list(arg, val, &allocators[0].name, NBUILTIN, sizeof allocators[0], alloc_on) != 0)
                return 2;
            alloc_on[0] = 1; /* rampart is the subject of every ratio */
            c->named = 1;
        } else if (strcmp(arg, "--threads") == 0) {
            if (parse_threads(val) != 0)
                return 2;
        } else if (strcmp(arg, "--variant") == 0) {
            if (rpb_add_variant(val) != 0)
                return 2;
        } else if (strcmp(arg, "--mimalloc-bench") == 0) {
            suite_dir = val;
        } else if (strcmp(arg, "--suite-build") == 0) {
            suite_build = val;
        } else if (strcmp(arg, "--suite-tests") == 0) {
            suite_tests = val;
        } else if (strcmp(arg, "--suite-timeout") == 0 || strcmp(arg, "--security-timeout") == 0) {
            long v;
            if (parse_number(arg, val, 1, 86400, &v) != 0)
                return 2;
            *(strcmp(arg, "--suite-timeout") == 0 ? &suite_timeout : &security_timeout) = (double)v;
        } else {
            fprintf(stderr, "rpbench: %s: unknown option (rpbench --help lists the options)\n", arg);
            return 2;
        }
    }
    return 0;
}

/* What the options imply once all are read: the rows, the case, the suite. 0, or 2 after a
 * message. */
static int settle(const cli *c)
{
    if (!c->named) {
        for (int a = 0; a < NBUILTIN; a++)
            alloc_on[a] = !allocators[a].debug_row || (c->debug_rows && allocators[a].debug_row == 1);
    } else if (c->debug_rows) {
        for (int a = 0; a < NBUILTIN; a++)
            alloc_on[a] |= allocators[a].debug_row == 1;
    }
    for (int a = NBUILTIN; a < nalloc; a++) /* a variant is measured whenever it is given */
        alloc_on[a] = 1;
    if (only_case) {
        int found = 0;
        for (int k = 0; k < rpb_ncases; k++)
            found |= strcmp(only_case, rpb_cases[k].name) == 0;
        if (!found) {
            fprintf(stderr, "rpbench: unknown case '%s' (rpbench --help lists the cases)\n", only_case);
            return 2;
        }
    }
    if (scenario_on[SC_MBENCH] || scenario_on[SC_SECURITY]) {
        char err[2048];
        if (rpb_suite_locate(suite_dir, suite_build, &suite, err, sizeof err) != 0 ||
            rpb_mbench_check_tests(suite_tests, err, sizeof err) != 0) {
            fprintf(stderr, "rpbench: %s\n", err);
            return 2;
        }
    }
    return 0;
}

/* Output paths: relative ones are the caller's under `bazel run`. */
static void output_path(const char *given, const char *fallback, char *out, size_t len)
{
    const char *wd = getenv("BUILD_WORKING_DIRECTORY");
    const char *p = given ? given : fallback;
    if (p[0] != '/' && wd)
        snprintf(out, len, "%s/%s", wd, p);
    else
        snprintf(out, len, "%s", p);
}

static void machine_line(char *buf, size_t len)
{
    struct utsname u;
    uname(&u);
    char model[128] = "?";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *colon = strchr(line, ':');
                if (colon) {
                    snprintf(model, sizeof model, "%s", colon + 2);
                    model[strcspn(model, "\n")] = 0;
                }
                break;
            }
        }
        fclose(f);
    }
    snprintf(buf, len, "%s %s, %ld CPUs, %s", u.sysname, u.release, sysconf(_SC_NPROCESSORS_ONLN), model);
}

/* Every scenario selected, in order. 0, or -1 when the suite's scenarios failed. */
static int measure_all(void)
{
    plan_progress();
    measure_cases();
    measure_threads(SC_PAIRS);
    measure_threads(SC_PRODCONS);
    measure_grow();
    measure_programs();
    measure_grid();
    measure_capture();
    int rc = measure_suite();
    rpb_progress_done();
    return rc;
}

static void print_header(const char *when, const char *machine)
{
    printf("rpbench %s -- %s\n", when, machine);
    printf("scenarios:");
    for (int sc = 0; sc < SC_COUNT; sc++)
        if (scenario_on[sc])
            printf(" %s (%d repetition%s)", scenario_names[sc], reps_for(sc), reps_for(sc) == 1 ? "" : "s");
    printf("\nallocators interleaved in every repetition; medians [min-max] (the machine may be shared: figures are "
           "indicative)\n");
    for (int a = 0; a < nalloc; a++) {
        if (res_alloc[a].active)
            printf("  %-10s %s\n", allocators[a].name, allocators[a].what);
        else if (alloc_on[a])
            printf("  %-10s SKIPPED: %s\n", allocators[a].name, res_alloc[a].why);
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--worker") == 0)
        return rpbench_worker_main(argc, argv);
    if (argc > 1 && strcmp(argv[1], "--spawn") == 0)
        return rpb_spawn_main(argc, argv);
    cli c = {0};
    int rc = parse_args(argc, argv, &c);
    if (rc == 0)
        rc = settle(&c);
    if (rc == 1)
        return 0;
    if (rc != 0)
        return rc;
    char json_path[PATH_MAX], svg_path[PATH_MAX];
    if (c.json)
        output_path(c.json, NULL, json_path, sizeof json_path);
    int want_chart = !c.svg || strcmp(c.svg, "none") != 0;
    output_path(c.svg, "rpbench.svg", svg_path, sizeof svg_path);
    /* A path that cannot be written fails now, not after a quarter of an hour of measuring. */
    if ((c.json && !output_writable(json_path)) || (want_chart && !output_writable(svg_path)))
        return 2;
    rpb_resolve_allocators();
    if (!res_alloc[0].active) {
        fprintf(stderr, "rpbench: rampart: %s\n", res_alloc[0].why);
        return 1;
    }
    /* The command line, for the JSON (and the documents generated from it). */
    static char command[2048];
    size_t used = 0;
    for (int i = 0; i < argc && used < sizeof command - 1; i++) {
        int n = snprintf(command + used, sizeof command - used, "%s%s", i ? " " : "rpbench",
                         i ? argv[i] : "");
        used += n > 0 ? (size_t)n : 0;
    }
    for (char *q = command; *q; q++) /* kept printable and free of JSON's special characters */
        if (*q == '"' || *q == '\\' || (unsigned char)*q < 32)
            *q = '?';
    char machine[320], when[64];
    machine_line(machine, sizeof machine);
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime(&now));
    print_header(when, machine);

    double t0 = (double)time(NULL);
    int status = measure_all() != 0;
    print_report();
    printf("\n(%.0f s)\n", (double)time(NULL) - t0);
    if (c.json && write_json(json_path, machine, when, command) != 0) {
        fprintf(stderr, "rpbench: cannot write %s: %s\n", json_path, strerror(errno));
        status = 1;
    }
    if (want_chart) {
        char caption[512];
        snprintf(caption, sizeof caption, "rpbench %s: medians and [min-max] of the repetitions -- %s", when,
                 machine);
        if (write_charts(svg_path, caption) == 0) {
            printf("chart: %s\n", svg_path);
        } else {
            fprintf(stderr, "rpbench: cannot write %s: %s\n", svg_path, strerror(errno));
            status = 1;
        }
    }
    return status;
}
