/* rpbench: rampart against the allocators people use, side by side in one run.
 *
 * Every measurement runs in a fresh worker process (rpbench_worker.h), with the allocator
 * chosen by LD_PRELOAD (malloc API) or linked in (rp_alloc API). Allocators are interleaved
 * within each repetition (who goes first rotates) and each figure is the median over the
 * repetitions, which keeps the noise of a shared machine out of the ratios.
 *
 * Scenarios:
 *   seed     10 rounds x 2000 allocations of one (size, alignment) shape, no frees: ns/op of
 *            each round and round 10 / round 1 (DPDK's rte_malloc grows 15 -> 168 us);
 *   churn    a live set of 1000 blocks of the case's shapes; each op frees a random one and
 *            allocates a random shape: ns/op, and the p99.9 latency of one op;
 *   memory   the seed allocations with every page written: peak RSS / bytes requested;
 *   pairs    16-256 byte objects, each thread freeing what it allocated 16 ops earlier:
 *            ops/s (mallocs + frees) on 1, 2, 4, 8 threads, 10M iterations per run;
 *   prodcons 16-256 byte objects allocated by one thread and freed by the next (a ring of
 *            threads): ops/s on 1, 2, 4, 8 threads;
 *   grow     one buffer grown by realloc from 1 MiB to 256 MiB, by factors of 1.5 and in
 *            64 KiB steps, every appended byte written: CPU ms (an allocator that copies the
 *            buffer at every step is stopped at a 2 s cap); and ("again") a 32 MiB buffer
 *            allocated, written and freed 25 times;
 *   program  whole programs (sqlite3, python3: the table in rpbench_programs.c) run under each
 *            allocator by LD_PRELOAD: wall and CPU seconds and peak RSS, output checked
 *            against the system malloc's;
 *   mimalloc-bench (only when named) the public mimalloc-bench suite's programs, built with CMake
 *            from --mimalloc-bench DIR, run with bench.sh's command lines (rpbench_mbench.h);
 *   security (only when named) the suite's security tests: "caught K of N" per allocator
 *            (rpbench_security.h).
 * --variant release:OPTIONS or debug[:OPTIONS] adds a rampart row with those RAMPART_OPTIONS.
 * Allocators: the table below (data-driven: a row names a worker binary, the API it uses,
 * the library to preload and its RAMPART_OPTIONS, and what programs get in LD_PRELOAD).
 * Missing libraries are reported and skipped. --debug adds the debug flavour's rows (debug,
 * debug-nobt: rp_alloc linked against //src:rampart_debug in the microbenchmarks,
 * librampart_malloc_debug.so for programs; glibc-asan: glibc's malloc under AddressSanitizer,
 * ASan's runtime preloaded for programs) and the cost of one stack capture, and checks the
 * debug flavour's target (<= 3x release with backtraces on) for both kinds of measurement.
 * Results: a table with rampart's cost ratio to every other allocator, --json FILE, and an SVG
 * chart of the seed rounds (rpbench.svg in the directory rpbench was started from). Bad
 * options, and output files that cannot be written, fail before any measurement (status 2).
 *
 *   rpbench [--reps N] [--quick] [--debug] [--scenarios LIST] [--allocators LIST]
 *           [--case NAME] [--threads LIST] [--rounds N] [--per-round N] [--json FILE]
 *           [--svg FILE|none]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rampart.h"
#include "rpbench_mbench.h"
#include "rpbench_programs.h"
#include "rpbench_security.h"
#include "rpbench_stats.h"
#include "rpbench_suite.h"
#include "rpbench_svg.h"
#include "rpbench_worker.h"

/* ---- the allocators -------------------------------------------------------------------- */

typedef struct bench_allocator {
    const char *name;    /* row label */
    const char *api;     /* "malloc" or "rp" (rpbench_worker.h) */
    const char *worker;  /* worker binary, runfiles-relative; NULL = rpbench itself */
    const char *preload; /* library for LD_PRELOAD: absolute or runfiles-relative; NULL = none */
    const char *options; /* RAMPART_OPTIONS for the worker and for programs; NULL = unset */
    int debug_row;       /* measured only with --debug (or when named in --allocators) */
    const char *what;    /* one line for the header */
    /* The program scenario: the library programs get in LD_PRELOAD (absolute or
     * runfiles-relative), "" = none (the system malloc), NULL = the row runs no programs. */
    const char *program_preload;
} bench_allocator;

/* Row 0 is the subject: every ratio is rampart / other row. To add an allocator, add a row:
 *   - another malloc by LD_PRELOAD: api "malloc", preload = its library (a missing one is
 *     reported and skipped);
 *   - a worker binary of its own (linked against //src:rampart_debug, api "rp"; built with
 *     -fsanitize=address, api "malloc"): a cc_binary whose main calls rpbench_worker_main
 *     (tools/rpbench_worker.h), listed in rpbench's `data` so that it is built and found
 *     through the runfiles; worker = its runfiles path ("tools/<name>").
 * The thread scenarios run for "malloc" rows only. */
/* The built-in rows, then the rampart variants of --variant. */
#define NBUILTIN 9
#define MAX_VARIANTS 6
#define MAX_ALLOC (NBUILTIN + MAX_VARIANTS)
static bench_allocator allocators[MAX_ALLOC] = {
    {"rampart", "malloc", NULL, "dist/librampart_malloc.so", NULL, 0,
     "librampart_malloc.so by LD_PRELOAD (thread caches + arenas)", "dist/librampart_malloc.so"},
    {"glibc", "malloc", NULL, NULL, NULL, 0, "the system malloc (glibc ptmalloc2)", ""},
    {"jemalloc", "malloc", NULL, "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", NULL, 0, "libjemalloc2 by LD_PRELOAD",
     "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
    {"mimalloc", "malloc", NULL, "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", NULL, 0,
     "libmimalloc2.0 by LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"},
    {"tcmalloc", "malloc", NULL, "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", NULL, 0,
     "libtcmalloc-minimal4 by LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"},
    {"rp_alloc", "rp", NULL, NULL, NULL, 0, "rampart's own API: rp_alloc/rp_free on one heap, no caches", NULL},
    {"debug", "rp", "tools/rpbench_debug_worker", NULL, "", 1,
     "debug flavour, every check on (cookies, poisoning, 4 MiB quarantine, 16-frame stacks): rp_alloc/rp_free; "
     "programs: librampart_malloc_debug.so by LD_PRELOAD",
     "dist/librampart_malloc_debug.so"},
    {"debug-nobt", "rp", "tools/rpbench_debug_worker", NULL, "backtrace_depth=0", 1,
     "debug flavour as above without stacks", "dist/librampart_malloc_debug.so"},
    {"glibc-asan", "malloc", "tools/rpbench_asan_worker", NULL, NULL, 1,
     "glibc's malloc API in a worker built with -fsanitize=address (ASan's allocator); programs: gcc's "
     "libasan.so.8 by LD_PRELOAD",
     "/usr/lib/x86_64-linux-gnu/libasan.so.8"},
};
static int nalloc = NBUILTIN;

#define MAX_ROUNDS 64
#define MAX_REPS RPB_MAX_REPS
#define MAX_CASES 16
#define MAX_THREADS_LIST 8

#define MAX_PROGRAMS 8

static const char *scenario_names[] = {"seed", "churn",   "memory",         "pairs",   "prodcons",
                                       "grow", "program", "mimalloc-bench", "security"};
enum { SC_SEED, SC_CHURN, SC_MEMORY, SC_PAIRS, SC_PRODCONS, SC_GROW, SC_PROGRAM, SC_MBENCH, SC_SECURITY, SC_COUNT };

/* The grow scenario's patterns (rpbench_worker.c worker_grow). */
static const char *grow_patterns[] = {"x1.5", "+64k", "again"};
#define NGROW 3

typedef struct resolved {
    int active;
    char worker[PATH_MAX];
    char preload[PATH_MAX];
    char why[160]; /* why it is skipped */
    int programs;  /* runs the program scenario */
    char program_preload[PATH_MAX];
    char program_why[320]; /* why it runs no programs (or the first program run that failed) */
} resolved;

static resolved res_alloc[MAX_ALLOC];

/* Results: medians; < 0 = not measured / failed. */
static double seed_ns[MAX_ALLOC][MAX_CASES][MAX_ROUNDS];
static double churn_ns[MAX_ALLOC][MAX_CASES], churn_p999[MAX_ALLOC][MAX_CASES];
static double memory_ratio[MAX_ALLOC][MAX_CASES];
static double threads_ops[2][MAX_ALLOC][MAX_THREADS_LIST];     /* wall-clock ops/s */
static double threads_cpu_ns[2][MAX_ALLOC][MAX_THREADS_LIST];  /* process CPU ns per op */
static double grow_ms[MAX_ALLOC][NGROW], grow_reached[MAX_ALLOC][NGROW]; /* CPU ms; MiB reached */
static double program_wall[MAX_ALLOC][MAX_PROGRAMS], program_cpu[MAX_ALLOC][MAX_PROGRAMS]; /* seconds */
static double program_rss[MAX_ALLOC][MAX_PROGRAMS];                                       /* peak, MiB */
/* Single repetitions, kept for the missed-target lines: repetition i of every allocator ran in
 * the same round of the interleaving, so comparing them pair by pair tells a difference that
 * holds in every round from one that a few slow rounds made; < 0 = not measured. Seed: the
 * mean of its rounds. */
static double seed_rep_mean[MAX_ALLOC][MAX_CASES][MAX_REPS], churn_rep[MAX_ALLOC][MAX_CASES][MAX_REPS];
static double threads_rep[2][MAX_ALLOC][MAX_THREADS_LIST][MAX_REPS], grow_rep[MAX_ALLOC][NGROW][MAX_REPS];

static int reps = 5, rounds = 10, per_round = 2000;

/* The scenarios whose single runs are short or noisiest get 2 * reps + 1 repetitions: seed
 * (its flatness is the ratio of two single rounds), churn and the thread scenarios (runs of
 * tens of milliseconds whose times, on a shared machine, move by up to 2x between runs). */
static int long_reps(void) { return 2 * reps + 1 < MAX_REPS ? 2 * reps + 1 : MAX_REPS; }
/* thread_ops: the iterations (one malloc and one free each) a thread-scenario run does over
 * all its threads. Runs of 2M last 10-20 ms and hold a fixed part (thread start, first
 * touches, a vCPU waking up): pairs on one thread, 7 interleaved runs each, CPU ns per op
 * (median, max) 3.37, 4.79 for rampart and 3.37, 4.23 for jemalloc at 2M against 3.09,
 * 3.48 and 3.09, 3.44 at 10M, and no lower at 20M. The debug rows (glibc-asan runs the
 * thread scenarios at a few M ops/s) do a tenth of it. */
/* churn_ops: operations per churn run. At 200k a run of the fast allocators lasted 4-6 ms and
 * moved by 1.6x between runs (churn 3072/1024, 5 interleaved runs each: rampart 20-29 ns/op,
 * jemalloc 20-32); at 2M, 24-32 and 29-31. Slow allocators stop at CHURN_TIME_CAP_NS per
 * pass (rpbench_worker.c) either way. */
static long churn_ops = 2000000, thread_ops = 10000000;
static int nthreads_list = 4, threads_list[MAX_THREADS_LIST] = {1, 2, 4, 8};
/* mimalloc-bench and security run only when named: they need the suite's sources. */
static int scenario_on[SC_COUNT] = {1, 1, 1, 1, 1, 1, 1, 0, 0};
static long grow_max_mib = 256;
static int alloc_on[MAX_ALLOC];
static const char *only_case;

/* ---- locating workers and libraries ---------------------------------------------------- */

static char exe_path[PATH_MAX];

/* rel (runfiles-relative) as an existing path: next to the runfiles tree of this binary,
 * under RUNFILES_DIR, in the current directory, or relative to bazel-bin. */
static int find_data(const char *rel, char *out, size_t len)
{
    if (rel[0] == '/') {
        snprintf(out, len, "%s", rel);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", exe_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    const char *rf = getenv("RUNFILES_DIR");
    char cand[5][PATH_MAX + 64];
    int n = 0;
    snprintf(cand[n++], sizeof cand[0], "%s.runfiles/rampart/%s", exe_path, rel);
    if (rf)
        snprintf(cand[n++], sizeof cand[0], "%s/rampart/%s", rf, rel);
    snprintf(cand[n++], sizeof cand[0], "%s", rel);
    snprintf(cand[n++], sizeof cand[0], "%s/../%s", dir, rel);
    for (int i = 0; i < n; i++) {
        if (access(cand[i], R_OK) == 0 && len >= PATH_MAX && realpath(cand[i], out))
            return 0;
    }
    return -1;
}

static void resolve_allocators(void)
{
    ssize_t k = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[k > 0 ? k : 0] = 0;
    for (int a = 0; a < nalloc; a++) {
        resolved *r = &res_alloc[a];
        const bench_allocator *al = &allocators[a];
        r->active = alloc_on[a];
        if (!r->active) {
            snprintf(r->why, sizeof r->why, "not selected");
            continue;
        }
        if (al->worker) {
            if (find_data(al->worker, r->worker, sizeof r->worker) != 0) {
                r->active = 0;
                snprintf(r->why, sizeof r->why, "worker %s not found", al->worker);
                continue;
            }
        } else {
            snprintf(r->worker, sizeof r->worker, "%s", exe_path);
        }
        if (al->preload && find_data(al->preload, r->preload, sizeof r->preload) != 0) {
            r->active = 0;
            snprintf(r->why, sizeof r->why, "%s not found (install it: tools/setup.sh)", al->preload);
        }
    }
    for (int a = 0; a < nalloc; a++) {
        resolved *r = &res_alloc[a];
        const char *lib = allocators[a].program_preload;
        r->programs = alloc_on[a] && lib != NULL;
        if (!r->programs)
            snprintf(r->program_why, sizeof r->program_why, "%s", lib ? "not selected" : "runs no programs");
        else if (lib[0] && find_data(lib, r->program_preload, sizeof r->program_preload) != 0) {
            r->programs = 0;
            snprintf(r->program_why, sizeof r->program_why, "%s not found", lib);
        }
    }
}

/* ---- running workers --------------------------------------------------------------------- */

/* Runs a worker of allocator a with args; its numbers line goes into out. 0 on success. */
static int run_worker(int a, const char *const *args, int nargs, char *out, size_t outlen)
{
    const resolved *r = &res_alloc[a];
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        if (r->preload[0])
            setenv("LD_PRELOAD", r->preload, 1);
        else
            unsetenv("LD_PRELOAD");
        if (allocators[a].options)
            setenv("RAMPART_OPTIONS", allocators[a].options, 1);
        else
            unsetenv("RAMPART_OPTIONS");
        const char *argv[16];
        int n = 0;
        argv[n++] = r->worker;
        argv[n++] = "--worker";
        argv[n++] = allocators[a].api;
        for (int i = 0; i < nargs && n < 15; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(r->worker, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    char buf[8192];
    size_t got = 0;
    ssize_t k;
    while (got + 1 < sizeof buf && (k = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)k;
    buf[got] = 0;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    /* Line 1: "lib PATH" — check the preload took effect. */
    char *nl = strchr(buf, '\n');
    if (strncmp(buf, "lib ", 4) != 0 || !nl)
        return -1;
    *nl = 0;
    if (r->preload[0]) {
        const char *base = strrchr(r->preload, '/');
        base = base ? base + 1 : r->preload;
        if (!strstr(buf + 4, base)) {
            fprintf(stderr, "rpbench: %s: malloc came from %s, not %s (LD_PRELOAD failed?)\n", allocators[a].name,
                    buf + 4, r->preload);
            return -1;
        }
    }
    snprintf(out, outlen, "%s", nl + 1);
    return 0;
}

static int case_selected(int c) { return !only_case || strcmp(only_case, rpb_cases[c].name) == 0; }

/* The allocators of one API ("malloc" for the thread scenarios, NULL = any). */
static int alloc_usable(int a, const char *api)
{
    return res_alloc[a].active && (!api || strcmp(allocators[a].api, api) == 0);
}

/* A progress line on a terminal (overwritten in place); nothing when stderr is a file. */
static void progress(const char *what)
{
    if (!isatty(STDERR_FILENO))
        return;
    fprintf(stderr, "\rrpbench: %-60s", what);
    fflush(stderr);
}

static void measure_case(int c)
{
    const char *cname = rpb_cases[c].name;
    char r_s[16], n_s[16], ops_s[24], out[8192], msg[128];
    snprintf(r_s, sizeof r_s, "%d", rounds);
    snprintf(n_s, sizeof n_s, "%d", per_round);
    snprintf(ops_s, sizeof ops_s, "%ld", churn_ops);
    static double seed_s[MAX_ALLOC][MAX_ROUNDS][MAX_REPS], churn_s[MAX_ALLOC][MAX_REPS], p999_s[MAX_ALLOC][MAX_REPS];
    for (int a = 0; a < nalloc; a++)
        for (int i = 0; i < MAX_REPS; i++) {
            churn_s[a][i] = p999_s[a][i] = -1;
            for (int r = 0; r < MAX_ROUNDS; r++)
                seed_s[a][r][i] = -1;
        }
    int seed_reps = long_reps();
    for (int rep = 0; rep < seed_reps; rep++) {
        snprintf(msg, sizeof msg, "%s rep %d/%d", cname, rep + 1, seed_reps);
        progress(msg);
        for (int k = 0; k < nalloc; k++) {
            int a = (rep + k) % nalloc; /* rotate who goes first */
            if (!alloc_usable(a, NULL))
                continue;
            if (scenario_on[SC_SEED]) {
                const char *args[] = {"seed", cname, r_s, n_s};
                if (run_worker(a, args, 4, out, sizeof out) == 0) {
                    char *p = out;
                    for (int r = 0; r < rounds; r++)
                        seed_s[a][r][rep] = strtod(p, &p);
                }
            }
            if (scenario_on[SC_CHURN]) {
                const char *args[] = {"churn", cname, ops_s};
                if (run_worker(a, args, 3, out, sizeof out) == 0) {
                    char *p = out;
                    churn_s[a][rep] = strtod(p, &p);
                    p999_s[a][rep] = strtod(p, &p);
                }
            }
        }
    }
    for (int a = 0; a < nalloc; a++) {
        for (int i = 0; i < MAX_REPS; i++) {
            double sum = 0;
            for (int r = 0; r < rounds && sum >= 0; r++)
                sum = seed_s[a][r][i] < 0 ? -1 : sum + seed_s[a][r][i];
            seed_rep_mean[a][c][i] = i < seed_reps && sum >= 0 ? sum / rounds : -1;
            churn_rep[a][c][i] = churn_s[a][i];
        }
        for (int r = 0; r < rounds; r++)
            seed_ns[a][c][r] = rpb_median(seed_s[a][r], seed_reps);
        churn_ns[a][c] = rpb_median(churn_s[a], seed_reps);
        churn_p999[a][c] = rpb_median(p999_s[a], seed_reps);
        memory_ratio[a][c] = -1;
        if (scenario_on[SC_MEMORY] && alloc_usable(a, NULL)) {
            /* Peak RSS is deterministic enough for one run. */
            const char *args[] = {"memory", cname, r_s, n_s};
            if (run_worker(a, args, 4, out, sizeof out) == 0)
                memory_ratio[a][c] = strtod(out, NULL);
        }
    }
}

static void measure_threads(int sc)
{
    char t_s[16], ops_s[24], debug_ops_s[24], out[256], msg[128];
    snprintf(ops_s, sizeof ops_s, "%ld", thread_ops);
    snprintf(debug_ops_s, sizeof debug_ops_s, "%ld", thread_ops / 10 > 0 ? thread_ops / 10 : 1);
    for (int t = 0; t < nthreads_list; t++) {
        double samples[MAX_ALLOC][MAX_REPS], cpu[MAX_ALLOC][MAX_REPS];
        snprintf(t_s, sizeof t_s, "%d", threads_list[t]);
        for (int a = 0; a < nalloc; a++)
            for (int i = 0; i < MAX_REPS; i++)
                samples[a][i] = cpu[a][i] = -1;
        int thread_reps = long_reps();
        for (int rep = 0; rep < thread_reps; rep++) {
            snprintf(msg, sizeof msg, "%s %d threads rep %d/%d", scenario_names[sc], threads_list[t], rep + 1,
                     thread_reps);
            progress(msg);
            for (int k = 0; k < nalloc; k++) {
                int a = (rep + k) % nalloc;
                if (!alloc_usable(a, "malloc"))
                    continue;
                const char *args[] = {scenario_names[sc], t_s, allocators[a].debug_row ? debug_ops_s : ops_s};
                if (run_worker(a, args, 3, out, sizeof out) == 0) {
                    char *p = out;
                    samples[a][rep] = strtod(p, &p);
                    cpu[a][rep] = strtod(p, &p);
                }
            }
        }
        for (int a = 0; a < nalloc; a++) {
            memcpy(threads_rep[sc - SC_PAIRS][a][t], samples[a], sizeof samples[a]);
            threads_ops[sc - SC_PAIRS][a][t] = rpb_median(samples[a], thread_reps);
            threads_cpu_ns[sc - SC_PAIRS][a][t] = rpb_median(cpu[a], thread_reps);
        }
    }
}

static void measure_grow(void)
{
    char max_s[24], out[256], msg[128];
    snprintf(max_s, sizeof max_s, "%ld", grow_max_mib);
    for (int g = 0; g < NGROW; g++) {
        double ms[MAX_ALLOC][MAX_REPS], mib[MAX_ALLOC][MAX_REPS];
        for (int a = 0; a < nalloc; a++)
            for (int i = 0; i < MAX_REPS; i++)
                ms[a][i] = mib[a][i] = -1;
        for (int rep = 0; rep < reps; rep++) {
            snprintf(msg, sizeof msg, "grow %s rep %d/%d", grow_patterns[g], rep + 1, reps);
            progress(msg);
            for (int k = 0; k < nalloc; k++) {
                int a = (rep + k) % nalloc;
                if (!alloc_usable(a, NULL))
                    continue;
                const char *args[] = {"grow", grow_patterns[g], max_s};
                if (run_worker(a, args, 3, out, sizeof out) == 0) {
                    char *p = out;
                    ms[a][rep] = strtod(p, &p);
                    mib[a][rep] = strtod(p, &p);
                }
            }
        }
        for (int a = 0; a < nalloc; a++) {
            memcpy(grow_rep[a][g], ms[a], sizeof ms[a]);
            grow_ms[a][g] = rpb_median(ms[a], reps);
            grow_reached[a][g] = rpb_median(mib[a], reps);
        }
    }
}

/* The workloads of the program scenario found on this machine (exe[p][0] = 0: not found). */
static char program_exe[MAX_PROGRAMS][PATH_MAX];
static char program_skipped[MAX_PROGRAMS][280]; /* why a workload was not measured */

static int program_usable(int a) { return res_alloc[a].programs; }

/* Removes the work directory's files and the directory. */
static void remove_work_dir(const char *dir)
{
    static const char *const suffixes[] = {".out", ".err", ".db", ".db-journal"};
    char path[PATH_MAX + 64];
    for (int p = 0; p < rpb_nprograms; p++) {
        snprintf(path, sizeof path, "%s/%s", dir, rpb_programs[p].script);
        unlink(path);
        for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++) {
            snprintf(path, sizeof path, "%s/%s%s", dir, rpb_programs[p].name, suffixes[k]);
            unlink(path);
        }
    }
    rmdir(dir);
}

/* Every workload under every allocator that runs programs, reps times, interleaved like the
 * other scenarios. A first run on the system malloc warms the page cache and gives the output
 * every later run must reproduce; an allocator whose run fails or differs is left out of that
 * workload (the reason is printed). */
static void measure_programs(void)
{
    char dir[PATH_MAX];
    const char *tmp = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/rpbench-programs-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir) || rpb_programs_prepare(dir) != 0) {
        fprintf(stderr, "rpbench: program scenario: cannot write its scripts in %s: %s\n", dir, strerror(errno));
        return;
    }
    uint64_t expected[MAX_PROGRAMS] = {0};
    static double wall[MAX_ALLOC][MAX_PROGRAMS][MAX_REPS], cpu[MAX_ALLOC][MAX_PROGRAMS][MAX_REPS],
        rss[MAX_ALLOC][MAX_PROGRAMS][MAX_REPS];
    static int failed[MAX_ALLOC][MAX_PROGRAMS];
    for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
        rpb_run run;
        if (rpb_program_find(p, program_exe[p], sizeof program_exe[p]) != 0) {
            snprintf(program_skipped[p], sizeof program_skipped[p], "%s not found", rpb_programs[p].exe);
            program_exe[p][0] = 0;
            continue;
        }
        if (rpb_program_run(p, program_exe[p], dir, NULL, NULL, &run) != 0) {
            snprintf(program_skipped[p], sizeof program_skipped[p], "fails on the system malloc: %s", run.error);
            program_exe[p][0] = 0;
            continue;
        }
        expected[p] = run.output_hash;
    }
    char msg[128];
    for (int rep = 0; rep < reps; rep++) {
        for (int k = 0; k < nalloc; k++) {
            int a = (rep + k) % nalloc;
            if (!program_usable(a))
                continue;
            for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
                wall[a][p][rep] = cpu[a][p][rep] = rss[a][p][rep] = -1;
                if (!program_exe[p][0] || failed[a][p])
                    continue;
                snprintf(msg, sizeof msg, "program %s %s rep %d/%d", rpb_programs[p].name, allocators[a].name,
                         rep + 1, reps);
                progress(msg);
                rpb_run run;
                int rc = rpb_program_run(p, program_exe[p], dir, res_alloc[a].program_preload, allocators[a].options,
                                         &run);
                if (rc == 0 && run.output_hash != expected[p])
                    snprintf(run.error, sizeof run.error, "output differs from the system malloc's");
                if (rc != 0 || run.error[0]) {
                    failed[a][p] = 1;
                    snprintf(res_alloc[a].program_why, sizeof res_alloc[a].program_why, "%s: %s",
                             rpb_programs[p].name, run.error);
                    continue;
                }
                wall[a][p][rep] = run.wall_s;
                cpu[a][p][rep] = run.cpu_s;
                rss[a][p][rep] = run.peak_rss_mib;
            }
        }
    }
    for (int a = 0; a < nalloc; a++)
        for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
            int measured = program_usable(a) && program_exe[p][0] && !failed[a][p];
            program_wall[a][p] = measured ? rpb_median(wall[a][p], reps) : -1;
            program_cpu[a][p] = measured ? rpb_median(cpu[a][p], reps) : -1;
            program_rss[a][p] = measured ? rpb_median(rss[a][p], reps) : -1;
        }
    remove_work_dir(dir);
}

/* ---- reporting ------------------------------------------------------------------------- */

static double seed_mean(int a, int c)
{
    double sum = 0;
    for (int r = 0; r < rounds; r++) {
        if (seed_ns[a][c][r] < 0)
            return -1;
        sum += seed_ns[a][c][r];
    }
    return sum / rounds;
}

static double seed_flat(int a, int c)
{
    double first = seed_ns[a][c][0], last = seed_ns[a][c][rounds - 1];
    return first > 0 && last > 0 ? last / first : -1;
}

/* Cost ratio rampart / other: both must be valid. */
static double ratio(double rampart, double other) { return rampart > 0 && other > 0 ? rampart / other : -1; }

static void cell(double v, const char *fmt)
{
    char buf[32];
    if (v < 0)
        snprintf(buf, sizeof buf, "-");
    else
        snprintf(buf, sizeof buf, fmt, v);
    printf(" %12s", buf);
}

/* One cell of two figures (fmt takes both: "%.0f/%.0f", "%.2f [%.2f]"), "-" when x is not
 * measured. */
static void cell2(double x, double y, const char *fmt)
{
    char buf[32];
    if (x < 0)
        snprintf(buf, sizeof buf, "-");
    else
        snprintf(buf, sizeof buf, fmt, x, y);
    printf(" %12s", buf);
}

static void header_row(const char *first, const char *api)
{
    printf("%-14s", first);
    for (int a = 0; a < nalloc; a++)
        if (alloc_usable(a, api))
            printf(" %12s", allocators[a].name);
    printf("\n");
}

static void ratio_header(const char *first, const char *api)
{
    printf("%-14s", first);
    for (int a = 1; a < nalloc; a++)
        if (alloc_usable(a, api))
            printf(" %12s", allocators[a].name);
    printf("\n");
}

/* Targets of the issue, checked on the medians. A missed one also says in how many paired
 * repetitions rampart was ahead all the same (paired_ahead), when that is known: a median
 * ratio of 1.02 with rampart ahead in 5 of 11 pairs is a tie the machine's noise decided, one
 * of 1.02 with rampart behind in all 11 is not. */
static int target_fail;
static char target_pairs[64];
static void target(int ok, const char *fmt, const char *what, double v)
{
    if (!ok) {
        if (!target_fail)
            printf("\nmissed targets:\n");
        target_fail++;
        printf("  ");
        printf(fmt, what, v);
        printf("%s\n", target_pairs);
    }
    target_pairs[0] = 0;
}

/* Sets the next target line's note: in how many of the repetitions both rampart (r) and the
 * peer (p) completed rampart's figure was the better one (lower, or higher for rates). */
static void paired_ahead(const double *r, const double *p, int higher_is_better)
{
    int pairs;
    int ahead = rpb_paired_ahead(r, p, MAX_REPS, higher_is_better, &pairs);
    if (pairs > 1)
        snprintf(target_pairs, sizeof target_pairs, " (rampart ahead in %d of %d paired repetitions)", ahead, pairs);
    else
        target_pairs[0] = 0;
}

static int peer_index(const char *name)
{
    for (int a = 0; a < nalloc; a++)
        if (strcmp(allocators[a].name, name) == 0 && res_alloc[a].active)
            return a;
    return -1;
}

static void check_debug_target(int record);

static void print_targets(void)
{
    int gl = peer_index("glibc"), je = peer_index("jemalloc"), mi = peer_index("mimalloc");
    char what[96];
    for (int c = 0; c < rpb_ncases; c++) {
        if (!case_selected(c))
            continue;
        const char *n = rpb_cases[c].name;
        int aligned = rpb_cases[c].nshapes == 1;
        double f = seed_flat(0, c);
        if (scenario_on[SC_SEED] && f >= 0)
            target(f <= 1.2, "seed %s: rampart round 10 / round 1 = %.2f (target <= 1.2)", n, f);
        struct {
            int on;
            const char *label;
            double r;
        } m[] = {{scenario_on[SC_SEED], "seed", 0}, {scenario_on[SC_CHURN], "churn", 0}};
        for (int k = 0; k < 2; k++) {
            if (!m[k].on)
                continue;
            double rv = k == 0 ? seed_mean(0, c) : churn_ns[0][c];
            int peers[3] = {gl, je, mi};
            const char *pn[3] = {"glibc", "jemalloc", "mimalloc"};
            for (int p = 0; p < 3; p++) {
                if (peers[p] < 0)
                    continue;
                double pv = k == 0 ? seed_mean(peers[p], c) : churn_ns[peers[p]][c];
                double x = ratio(rv, pv);
                if (x < 0)
                    continue;
                double limit = p < 2 ? 1.0 : (aligned && k == 0 ? 1.0 : 1.2);
                snprintf(what, sizeof what, "%s %s vs %s", m[k].label, n, pn[p]);
                if (limit == 1.0) /* a scaled comparison (1.2x) has no pairwise count */
                    paired_ahead(k == 0 ? seed_rep_mean[0][c] : churn_rep[0][c],
                                 k == 0 ? seed_rep_mean[peers[p]][c] : churn_rep[peers[p]][c], 0);
                target(x <= limit, "%s: rampart/peer = %.2f", what, x);
            }
        }
    }
    for (int sc = SC_PAIRS; sc <= SC_PRODCONS; sc++) {
        if (!scenario_on[sc])
            continue;
        int peers[3] = {gl, je, mi};
        const char *pn[3] = {"glibc", "jemalloc", "mimalloc"};
        for (int t = 0; t < nthreads_list; t++)
            for (int p = 0; p < 3; p++) {
                if (peers[p] < 0)
                    continue;
                double x = ratio(threads_ops[sc - SC_PAIRS][peers[p]][t], threads_ops[sc - SC_PAIRS][0][t]);
                if (x < 0)
                    continue;
                snprintf(what, sizeof what, "%s %d threads vs %s", scenario_names[sc], threads_list[t], pn[p]);
                if (p < 2)
                    paired_ahead(threads_rep[sc - SC_PAIRS][0][t], threads_rep[sc - SC_PAIRS][peers[p]][t], 1);
                target(x <= (p < 2 ? 1.0 : 1.2), "%s: rampart/peer cost = %.2f", what, x);
            }
    }
    if (scenario_on[SC_GROW]) {
        int peers[3] = {gl, je, mi};
        const char *pn[3] = {"glibc", "jemalloc", "mimalloc"};
        for (int g = 0; g < NGROW; g++)
            for (int p = 0; p < 3; p++) {
                double x = peers[p] < 0 ? -1 : ratio(grow_ms[0][g], grow_ms[peers[p]][g]);
                if (x < 0)
                    continue;
                snprintf(what, sizeof what, "grow %s vs %s", grow_patterns[g], pn[p]);
                if (p < 2)
                    paired_ahead(grow_rep[0][g], grow_rep[peers[p]][g], 0);
                target(x <= (p < 2 ? 1.0 : 1.2), "%s: rampart/peer = %.2f", what, x);
            }
    }
    check_debug_target(1);
    if (!target_fail)
        printf("\nall targets met (seed flat <= 1.2; <= glibc and jemalloc; <= 1.2x mimalloc, < 1x on aligned seeds; "
               "debug <= 3x release where measured)\n");
}

static void print_tables(void)
{
    if (scenario_on[SC_SEED]) {
        printf("\nseed: %d rounds x %d allocations, no frees -- ns/op (mean of rounds), [round %d / round 1]; "
               "%d repetitions\n",
               rounds, per_round, rounds, long_reps());
        header_row("case", NULL);
        for (int c = 0; c < rpb_ncases; c++) {
            if (!case_selected(c))
                continue;
            printf("%-14s", rpb_cases[c].name);
            for (int a = 0; a < nalloc; a++) {
                if (!alloc_usable(a, NULL))
                    continue;
                char buf[32];
                double m = seed_mean(a, c), f = seed_flat(a, c);
                if (m < 0)
                    snprintf(buf, sizeof buf, "-");
                else
                    snprintf(buf, sizeof buf, "%.0f [%.2f]", m, f);
                printf(" %12s", buf);
            }
            printf("\n");
        }
        printf("rampart / other, seed ns/op (< 1: rampart faster)\n");
        ratio_header("case", NULL);
        for (int c = 0; c < rpb_ncases; c++) {
            if (!case_selected(c))
                continue;
            printf("%-14s", rpb_cases[c].name);
            for (int a = 1; a < nalloc; a++)
                if (alloc_usable(a, NULL))
                    cell(ratio(seed_mean(0, c), seed_mean(a, c)), "%.2f");
            printf("\n");
        }
    }
    if (scenario_on[SC_CHURN]) {
        printf("\nchurn: %d live blocks, free one + allocate one per op -- ns/op / p99.9 ns\n", 1000);
        header_row("case", NULL);
        for (int c = 0; c < rpb_ncases; c++) {
            if (!case_selected(c))
                continue;
            printf("%-14s", rpb_cases[c].name);
            for (int a = 0; a < nalloc; a++)
                if (alloc_usable(a, NULL))
                    cell2(churn_ns[a][c], churn_p999[a][c], "%.0f/%.0f");
            printf("\n");
        }
        printf("rampart / other, churn ns/op [p99.9]\n");
        ratio_header("case", NULL);
        for (int c = 0; c < rpb_ncases; c++) {
            if (!case_selected(c))
                continue;
            printf("%-14s", rpb_cases[c].name);
            for (int a = 1; a < nalloc; a++)
                if (alloc_usable(a, NULL))
                    cell2(ratio(churn_ns[0][c], churn_ns[a][c]), ratio(churn_p999[0][c], churn_p999[a][c]),
                          "%.2f [%.2f]");
            printf("\n");
        }
    }
    if (scenario_on[SC_MEMORY]) {
        printf("\nmemory: peak RSS / bytes requested (seed allocations, every page written; lower is better)\n");
        header_row("case", NULL);
        for (int c = 0; c < rpb_ncases; c++) {
            if (!case_selected(c))
                continue;
            printf("%-14s", rpb_cases[c].name);
            for (int a = 0; a < nalloc; a++)
                if (alloc_usable(a, NULL))
                    cell(memory_ratio[a][c], "%.3f");
            printf("\n");
        }
    }
    for (int sc = SC_PAIRS; sc <= SC_PRODCONS; sc++) {
        if (!scenario_on[sc])
            continue;
        printf("\n%s: 16-256 byte objects, %s -- million ops/s (mallocs + frees); %d repetitions\n",
               scenario_names[sc],
               sc == SC_PAIRS ? "each thread frees what it allocated 16 ops before"
                              : "allocated by one thread, freed by the next",
               long_reps());
        header_row("threads", "malloc");
        for (int t = 0; t < nthreads_list; t++) {
            printf("%-14d", threads_list[t]);
            for (int a = 0; a < nalloc; a++) {
                if (!alloc_usable(a, "malloc"))
                    continue;
                double v = threads_ops[sc - SC_PAIRS][a][t];
                cell(v < 0 ? -1 : v / 1e6, "%.1f");
            }
            printf("\n");
        }
        printf("rampart / other, cost per op (wall; < 1: rampart faster) [CPU ns per op]\n");
        ratio_header("threads", "malloc");
        for (int t = 0; t < nthreads_list; t++) {
            printf("%-14d", threads_list[t]);
            for (int a = 1; a < nalloc; a++) {
                if (!alloc_usable(a, "malloc"))
                    continue;
                double x = ratio(threads_ops[sc - SC_PAIRS][a][t], threads_ops[sc - SC_PAIRS][0][t]);
                double y = ratio(threads_cpu_ns[sc - SC_PAIRS][0][t], threads_cpu_ns[sc - SC_PAIRS][a][t]);
                cell2(x, y, "%.2f [%.2f]");
            }
            printf("\n");
        }
    }
}

/* The grow scenario's table: CPU ms, '*' where the cap stopped the run short of the target. */
static void print_grow(void)
{
    if (!scenario_on[SC_GROW])
        return;
    int capped = 0;
    printf("\ngrow: one buffer grown by realloc from 1 MiB to %ld MiB, every appended byte written, then freed; "
           "again: %ld MiB allocated, written and freed 25 times -- CPU ms; %d repetitions\n",
           grow_max_mib, grow_max_mib / 8, reps);
    header_row("pattern", NULL);
    for (int g = 0; g < NGROW; g++) {
        printf("%-14s", grow_patterns[g]);
        for (int a = 0; a < nalloc; a++) {
            if (!alloc_usable(a, NULL))
                continue;
            int short_run = grow_reached[a][g] >= 0 && grow_reached[a][g] < (double)grow_max_mib;
            capped |= short_run;
            cell(grow_ms[a][g], short_run ? "%.0f*" : "%.0f");
        }
        printf("\n");
    }
    printf("rampart / other, grow CPU ms\n");
    ratio_header("pattern", NULL);
    for (int g = 0; g < NGROW; g++) {
        printf("%-14s", grow_patterns[g]);
        for (int a = 1; a < nalloc; a++)
            if (alloc_usable(a, NULL))
                cell(ratio(grow_ms[0][g], grow_ms[a][g]),
                     grow_reached[a][g] >= 0 && grow_reached[a][g] < (double)grow_max_mib ? "<%.2f" : "%.2f");
        printf("\n");
    }
    if (capped)
        printf("  *: stopped at the 2 s cap before %ld MiB (median MiB reached:", grow_max_mib);
    for (int a = 0; capped && a < nalloc; a++)
        for (int g = 0; g < NGROW; g++)
            if (alloc_usable(a, NULL) && grow_reached[a][g] >= 0 && grow_reached[a][g] < (double)grow_max_mib)
                printf(" %s %s %.0f", allocators[a].name, grow_patterns[g], grow_reached[a][g]);
    if (capped)
        printf("); rampart's ratio to it is at most the figure shown\n");
}

/* Starts the row "x / y" of a block of ratios; the block's title goes before its first row. */
static void ratio_row_label(int *any, const char *title, const char *x, const char *y)
{
    if (!*any)
        printf("%s\n", title);
    *any = 1;
    char label[48];
    snprintf(label, sizeof label, "%s / %s", x, y);
    printf("  %-22s", label);
}

static int program_index(const char *name)
{
    for (int a = 0; a < nalloc; a++)
        if (strcmp(allocators[a].name, name) == 0 && program_usable(a))
            return a;
    return -1;
}

/* Cost ratio x / y of two rows' program medians (CPU or wall), or -1. */
static double program_ratio(const double t[MAX_ALLOC][MAX_PROGRAMS], int x, int y, int p)
{
    return x < 0 || y < 0 ? -1 : ratio(t[x][p], t[y][p]);
}

/* The program scenario: medians per workload and row, then the ratios that matter. */
static void print_programs(void)
{
    if (!scenario_on[SC_PROGRAM])
        return;
    printf("\nprogram: whole programs, the allocator in LD_PRELOAD -- wall s / CPU s (median of %d runs; each run's "
           "output is the system malloc's)\n",
           reps);
    for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++)
        printf("  %-14s %s%s%s\n", rpb_programs[p].name, rpb_programs[p].what, program_skipped[p][0] ? ": SKIPPED, " : "",
               program_skipped[p]);
    printf("%-14s", "workload");
    for (int a = 0; a < nalloc; a++)
        if (program_usable(a))
            printf(" %12s", allocators[a].name);
    printf("\n");
    for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
        printf("%-14s", rpb_programs[p].name);
        for (int a = 0; a < nalloc; a++)
            if (program_usable(a))
                cell2(program_wall[a][p], program_cpu[a][p], "%.2f/%.2f");
        printf("\n");
    }
    printf("peak RSS of the process, MiB (median; lower is better)\n");
    for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
        printf("%-14s", rpb_programs[p].name);
        for (int a = 0; a < nalloc; a++)
            if (program_usable(a))
                cell(program_rss[a][p], "%.1f");
        printf("\n");
    }
    for (int a = 0; a < nalloc; a++)
        if (alloc_on[a] && allocators[a].program_preload && res_alloc[a].program_why[0])
            printf("  %s: not measured: %s\n", allocators[a].name, res_alloc[a].program_why);
    static const char *const pairs[][2] = {{"rampart", "glibc"},    {"debug", "rampart"},   {"debug-nobt", "rampart"},
                                           {"glibc-asan", "glibc"}, {"debug", "glibc-asan"}};
    int any = 0;
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        int x = program_index(pairs[k][0]), y = program_index(pairs[k][1]);
        if (x < 0 || y < 0)
            continue;
        ratio_row_label(&any, "cost ratios, CPU time [wall]", pairs[k][0], pairs[k][1]);
        for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
            double c = program_ratio(program_cpu, x, y, p), w = program_ratio(program_wall, x, y, p);
            if (c >= 0)
                printf(" %s %.2fx [%.2fx]", rpb_programs[p].name, c, w);
        }
        printf("\n");
    }
}

/* The debug flavour's target, <= 3x release with backtraces on, on both kinds of measurement:
 * the microbenchmarks (debug / rp_alloc: the same rp_alloc loops on the release heap) and the
 * programs (debug / rampart: librampart_malloc_debug.so against librampart_malloc.so, CPU
 * time). Prints the verdict of each kind; with record set, also lists every miss among the
 * missed targets. */
#define DEBUG_TARGET 3.0

static void check_debug_target(int record)
{
    char what[96];
    int dbg = peer_index("debug"), rel = peer_index("rp_alloc");
    if (dbg >= 0 && rel >= 0 && (scenario_on[SC_SEED] || scenario_on[SC_CHURN])) {
        int n = 0, over = 0;
        if (!record)
            printf("  microbenchmarks, debug / rp_alloc (ns/op of rp_alloc loops that never touch the memory):\n   ");
        for (int c = 0; c < rpb_ncases; c++) {
            if (!case_selected(c))
                continue;
            for (int k = 0; k < 2; k++) {
                double x = k == 0 ? ratio(seed_mean(dbg, c), seed_mean(rel, c)) : ratio(churn_ns[dbg][c], churn_ns[rel][c]);
                if (x < 0)
                    continue;
                n++;
                over += x > DEBUG_TARGET;
                snprintf(what, sizeof what, "debug %s %s vs rp_alloc", k == 0 ? "seed" : "churn", rpb_cases[c].name);
                if (record)
                    target(x <= DEBUG_TARGET, "%s: debug/release = %.2f (target <= 3)", what, x);
                else
                    printf(" %s %s %.1fx", k == 0 ? "seed" : "churn", rpb_cases[c].name, x);
            }
        }
        if (!record)
            printf("\n   -> %s (%d of %d over 3x)\n", over ? "MISSED" : "met", over, n);
    }
    int pd = program_index("debug"), pr = program_index("rampart");
    if (pd >= 0 && pr >= 0 && scenario_on[SC_PROGRAM]) {
        int n = 0, over = 0;
        if (!record)
            printf("  programs, debug / rampart (CPU time of whole programs by LD_PRELOAD):\n   ");
        for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
            double x = program_ratio(program_cpu, pd, pr, p);
            if (x < 0)
                continue;
            n++;
            over += x > DEBUG_TARGET;
            snprintf(what, sizeof what, "debug program %s vs rampart", rpb_programs[p].name);
            if (record)
                target(x <= DEBUG_TARGET, "%s: debug/release CPU = %.2f (target <= 3)", what, x);
            else
                printf(" %s %.2fx", rpb_programs[p].name, x);
        }
        if (!record)
            printf("\n   -> %s (%d of %d over 3x)\n", n == 0 ? "not measured" : over ? "MISSED" : "met", over, n);
    }
}

/* The debug flavour's rows against their references: "x/y: seed (mean ns/op) and churn" for
 * every case, then the cost of one stack capture and the verdict on the debug target. */
static double capture_ns = -1;

static void print_debug_block(void)
{
    static const char *const pairs[][2] = {
        {"debug", "rp_alloc"}, {"debug-nobt", "rp_alloc"}, {"debug", "glibc-asan"}, {"glibc-asan", "glibc"}};
    int any = 0;
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0] && (scenario_on[SC_SEED] || scenario_on[SC_CHURN]); k++) {
        int x = peer_index(pairs[k][0]), y = peer_index(pairs[k][1]);
        if (x < 0 || y < 0)
            continue;
        ratio_row_label(&any, "\ndebug flavour: cost ratios per case, seed ns/op ; churn ns/op", pairs[k][0],
                        pairs[k][1]);
        for (int c = 0; c < rpb_ncases; c++) {
            if (!case_selected(c))
                continue;
            double a = ratio(seed_mean(x, c), seed_mean(y, c)), b = ratio(churn_ns[x][c], churn_ns[y][c]);
            char buf[64];
            if (a < 0 && b < 0)
                continue;
            snprintf(buf, sizeof buf, "%.1fx;%.1fx", a < 0 ? 0 : a, b < 0 ? 0 : b);
            printf(" %s %s", rpb_cases[c].name, buf);
        }
        printf("\n");
    }
    if (capture_ns >= 0)
        printf("debug stack capture (rp_stack_capture, 16 of 20+ frames, depot hit): %.1f ns per stack; an allocation "
               "records one stack and its free another\n",
               capture_ns);
    if ((peer_index("debug") >= 0 && peer_index("rp_alloc") >= 0) ||
        (program_index("debug") >= 0 && program_index("rampart") >= 0)) {
        printf("\ndebug flavour target: <= %.0fx release with backtraces on\n", DEBUG_TARGET);
        check_debug_target(0);
    }
}

static void json_num(FILE *f, double v)
{
    if (v < 0 || !isfinite(v))
        fprintf(f, "null");
    else
        fprintf(f, "%.4g", v);
}

/* One allocator's entry, "name": {"k0": v0, "k1": v1, ...} (n figures), a comma before it
 * unless *first. */
static void json_entry(FILE *f, int *first, const char *name, int n, const char *const *keys, const double *vals)
{
    fprintf(f, "%s\"%s\": {", *first ? "" : ", ", name);
    *first = 0;
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s\"%s\": ", i ? ", " : "", keys[i]);
        json_num(f, vals[i]);
    }
    fprintf(f, "}");
}

static int write_json(const char *path, const char *machine)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"machine\": \"%s\",\n  \"reps\": %d, \"long_reps\": %d, \"rounds\": %d, \"per_round\": %d,\n",
            machine, reps, long_reps(), rounds, per_round);
    fprintf(f, "  \"capture_ns\": ");
    json_num(f, capture_ns);
    fprintf(f, ",\n");
    fprintf(f, "  \"allocators\": [");
    for (int a = 0; a < nalloc; a++)
        fprintf(f, "%s{\"name\": \"%s\", \"api\": \"%s\", \"active\": %s}", a ? ", " : "", allocators[a].name,
                allocators[a].api, res_alloc[a].active ? "true" : "false");
    fprintf(f, "],\n  \"cases\": [\n");
    int first = 1;
    for (int c = 0; c < rpb_ncases; c++) {
        if (!case_selected(c))
            continue;
        fprintf(f, "%s    {\"case\": \"%s\", \"results\": {", first ? "" : ",\n", rpb_cases[c].name);
        first = 0;
        int fa = 1;
        for (int a = 0; a < nalloc; a++) {
            if (!res_alloc[a].active)
                continue;
            fprintf(f, "%s\n      \"%s\": {\"seed_round_ns\": [", fa ? "" : ",", allocators[a].name);
            fa = 0;
            for (int r = 0; r < rounds; r++) {
                if (r)
                    fprintf(f, ", ");
                json_num(f, seed_ns[a][c][r]);
            }
            fprintf(f, "], \"seed_mean_ns\": ");
            json_num(f, seed_mean(a, c));
            fprintf(f, ", \"seed_last_over_first\": ");
            json_num(f, seed_flat(a, c));
            fprintf(f, ", \"churn_ns\": ");
            json_num(f, churn_ns[a][c]);
            fprintf(f, ", \"churn_p999_ns\": ");
            json_num(f, churn_p999[a][c]);
            fprintf(f, ", \"memory_ratio\": ");
            json_num(f, memory_ratio[a][c]);
            fprintf(f, "}");
        }
        fprintf(f, "}}");
    }
    fprintf(f, "\n  ],\n");
    for (int sc = SC_PAIRS; sc <= SC_PRODCONS; sc++) {
        fprintf(f, "  \"%s_ops_per_s\": {", scenario_names[sc]);
        int fa = 1;
        for (int a = 0; a < nalloc; a++) {
            if (!alloc_usable(a, "malloc"))
                continue;
            fprintf(f, "%s\"%s\": {", fa ? "" : ", ", allocators[a].name);
            fa = 0;
            for (int t = 0; t < nthreads_list; t++) {
                fprintf(f, "%s\"%d\": ", t ? ", " : "", threads_list[t]);
                json_num(f, scenario_on[sc] ? threads_ops[sc - SC_PAIRS][a][t] : -1);
            }
            fprintf(f, "}");
        }
        fprintf(f, "},\n  \"%s_cpu_ns_per_op\": {", scenario_names[sc]);
        fa = 1;
        for (int a = 0; a < nalloc; a++) {
            if (!alloc_usable(a, "malloc"))
                continue;
            fprintf(f, "%s\"%s\": {", fa ? "" : ", ", allocators[a].name);
            fa = 0;
            for (int t = 0; t < nthreads_list; t++) {
                fprintf(f, "%s\"%d\": ", t ? ", " : "", threads_list[t]);
                json_num(f, scenario_on[sc] ? threads_cpu_ns[sc - SC_PAIRS][a][t] : -1);
            }
            fprintf(f, "}");
        }
        fprintf(f, "},\n");
    }
    fprintf(f, "  \"grow_max_mib\": %ld,\n  \"grow\": {", grow_max_mib);
    for (int g = 0; g < NGROW; g++) {
        fprintf(f, "%s\"%s\": {", g ? ", " : "", grow_patterns[g]);
        int fa = 1;
        for (int a = 0; a < nalloc; a++)
            if (alloc_usable(a, NULL)) {
                static const char *const keys[] = {"cpu_ms", "reached_mib"};
                int on = scenario_on[SC_GROW];
                double vals[] = {on ? grow_ms[a][g] : -1, on ? grow_reached[a][g] : -1};
                json_entry(f, &fa, allocators[a].name, 2, keys, vals);
            }
        fprintf(f, "}");
    }
    fprintf(f, "},\n");
    fprintf(f, "  \"program\": {");
    for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
        fprintf(f, "%s\n    \"%s\": {", p ? "," : "", rpb_programs[p].name);
        int fa = 1;
        for (int a = 0; a < nalloc; a++)
            if (program_usable(a)) {
                static const char *const keys[] = {"wall_s", "cpu_s", "peak_rss_mib"};
                int on = scenario_on[SC_PROGRAM];
                double vals[] = {on ? program_wall[a][p] : -1, on ? program_cpu[a][p] : -1,
                                 on ? program_rss[a][p] : -1};
                json_entry(f, &fa, allocators[a].name, 3, keys, vals);
            }
        fprintf(f, "}");
    }
    fprintf(f, "\n  }");
    if (scenario_on[SC_MBENCH]) {
        fprintf(f, ",\n  ");
        rpb_mbench_json(f);
    }
    if (scenario_on[SC_SECURITY]) {
        fprintf(f, ",\n  ");
        rpb_security_json(f);
    }
    fprintf(f, "\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

static int write_chart(const char *path, const char *caption)
{
    static rpb_panel panels[MAX_CASES];
    int np = 0;
    for (int c = 0; c < rpb_ncases; c++) {
        if (!case_selected(c))
            continue;
        rpb_panel *p = &panels[np++];
        p->title = rpb_cases[c].name;
        p->nseries = 0;
        for (int a = 0; a < nalloc && p->nseries < 16; a++) {
            if (!res_alloc[a].active)
                continue;
            p->series[p->nseries].name = allocators[a].name;
            p->series[p->nseries].values = seed_ns[a][c];
            p->nseries++;
        }
    }
    return rpb_write_svg(path, caption, panels, np, rounds);
}

/* ---- the rampart variants and the suite -------------------------------------------------- */

/* --variant LIB[:OPTIONS]: one more rampart row, LIB "release" (librampart_malloc.so) or
 * "debug" (librampart_malloc_debug.so), RAMPART_OPTIONS = OPTIONS (the rest after the first
 * colon, itself colon-separated). Row names: "rampart:OPTIONS", "rampart-debug",
 * "rampart-debug:OPTIONS". 0, or -1 after a message. */
static char variant_names[MAX_VARIANTS][160], variant_options[MAX_VARIANTS][160];
static int add_variant(const char *spec)
{
    if (nalloc == MAX_ALLOC) {
        fprintf(stderr, "rpbench: --variant: at most %d variants\n", MAX_VARIANTS);
        return -1;
    }
    const char *colon = strchr(spec, ':');
    size_t lib_len = colon ? (size_t)(colon - spec) : strlen(spec);
    int debug = lib_len == 5 && strncmp(spec, "debug", 5) == 0;
    if (!debug && !(lib_len == 7 && strncmp(spec, "release", 7) == 0)) {
        fprintf(stderr, "rpbench: --variant takes release[:OPTIONS] or debug[:OPTIONS], not '%s'\n", spec);
        return -1;
    }
    const char *opts = colon ? colon + 1 : NULL;
    if ((opts && (strlen(opts) >= sizeof variant_options[0] || strpbrk(opts, "\"\\ "))) || (!debug && !opts)) {
        fprintf(stderr, "rpbench: --variant '%s': %s\n", spec,
                !debug && !opts ? "the release library with its defaults is the rampart row already"
                                : "OPTIONS must be key=value pairs without quotes, backslashes or spaces");
        return -1;
    }
    int v = nalloc - NBUILTIN;
    snprintf(variant_options[v], sizeof variant_options[v], "%s", opts ? opts : "");
    snprintf(variant_names[v], sizeof variant_names[v], "rampart%s%s%s", debug ? "-debug" : "", opts ? ":" : "",
             opts ? opts : "");
    for (int a = 0; a < nalloc; a++)
        if (strcmp(allocators[a].name, variant_names[v]) == 0) {
            fprintf(stderr, "rpbench: --variant '%s' given twice\n", spec);
            return -1;
        }
    const char *lib = debug ? "dist/librampart_malloc_debug.so" : "dist/librampart_malloc.so";
    allocators[nalloc] = (bench_allocator){variant_names[v], "malloc", NULL, lib, opts ? variant_options[v] : NULL, 0,
                                           debug ? "librampart_malloc_debug.so by LD_PRELOAD with RAMPART_OPTIONS as named"
                                                 : "librampart_malloc.so by LD_PRELOAD with RAMPART_OPTIONS as named",
                                           lib};
    alloc_on[nalloc++] = 1;
    return 0;
}

/* The suite's scenarios (mimalloc-bench, security): where it is, what to build and run. */
static const char *suite_dir, *suite_build, *suite_tests;
static double suite_timeout = 300, security_timeout = 10;
static rpb_suite suite;

/* The progress line of the suite's scenarios. */
static void suite_progress(long done, long total, const char *what)
{
    char msg[200];
    snprintf(msg, sizeof msg, "%s (%ld/%ld)", what, done + 1, total);
    progress(msg);
}

/* The allocator rows that run whole programs, as the suite's targets (row 0 first). */
static int suite_targets(rpb_target *t)
{
    int n = 0;
    for (int a = 0; a < nalloc; a++)
        if (res_alloc[a].programs)
            t[n++] = (rpb_target){allocators[a].name, res_alloc[a].program_preload, allocators[a].options};
    return n;
}

/* Builds the suite and runs its scenarios. 0, or -1 after a message. */
static int measure_suite(void)
{
    char err[4096];
    progress("building the mimalloc-bench suite (CMake)");
    if (rpb_suite_build(&suite, err, sizeof err) != 0) {
        fprintf(stderr, "\nrpbench: building the mimalloc-bench suite: %s\n", err);
        return -1;
    }
    rpb_target t[MAX_ALLOC];
    int n = suite_targets(t);
    if (scenario_on[SC_MBENCH] &&
        rpb_mbench_run(&suite, t, n, suite_tests, reps, suite_timeout, suite_progress, err, sizeof err) != 0) {
        fprintf(stderr, "\nrpbench: mimalloc-bench: %s\n", err);
        return -1;
    }
    if (scenario_on[SC_SECURITY] &&
        rpb_security_run(&suite, t, n, security_timeout, suite_progress, err, sizeof err) != 0) {
        fprintf(stderr, "\nrpbench: security: %s\n", err);
        return -1;
    }
    return 0;
}

/* ---- command line ------------------------------------------------------------------------ */

static void usage(void);

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
            fprintf(stderr, "rpbench: %s: unknown name '%s' (see the lists below)\n", opt, tok);
            usage();
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

static void usage(void)
{
    fprintf(stderr, "usage: rpbench [--reps N] [--quick] [--debug] [--scenarios LIST] [--allocators LIST]\n"
                    "               [--case NAME] [--threads LIST] [--rounds N] [--per-round N] [--churn-ops N]\n"
                    "               [--thread-ops N] [--json FILE] [--svg FILE|none] [--variant LIB[:OPTIONS]]...\n"
                    "               [--mimalloc-bench DIR] [--suite-build DIR] [--suite-tests LIST]\n"
                    "               [--suite-timeout S] [--security-timeout S]\n"
                    "--debug adds the debug flavour rows (debug, debug-nobt, glibc-asan), the stack capture cost and\n"
                    "the debug target (<= 3x release) on microbenchmarks and programs\n"
                    "scenarios: seed,churn,memory,pairs,prodcons,grow,program (the default), mimalloc-bench, security\nallocators:");
    for (int a = 0; a < nalloc; a++)
        fprintf(stderr, " %s", allocators[a].name);
    fprintf(stderr, "\ncases:");
    for (int c = 0; c < rpb_ncases; c++)
        fprintf(stderr, " %s", rpb_cases[c].name);
    fprintf(stderr, "\n");
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

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--worker") == 0)
        return rpbench_worker_main(argc, argv);

    const char *json = NULL, *svg = "";
    int debug_rows = 0, named = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--debug") == 0) {
            debug_rows = 1;
        } else if (strcmp(arg, "--quick") == 0) {
            reps = 1;
            churn_ops = 50000;
            thread_ops = 500000;
            grow_max_mib = 64;
        } else if (!val) {
            fprintf(stderr, "rpbench: %s: %s\n", arg,
                    strncmp(arg, "--", 2) == 0 ? "unknown option, or one that needs a value" : "not an option");
            usage();
            return 2;
        } else if (strcmp(arg, "--reps") == 0) {
            if (parse_int(arg, argv[++i], 1, MAX_REPS, &reps) != 0)
                return 2;
        } else if (strcmp(arg, "--rounds") == 0) {
            if (parse_int(arg, argv[++i], 2, MAX_ROUNDS, &rounds) != 0)
                return 2;
        } else if (strcmp(arg, "--per-round") == 0) {
            if (parse_int(arg, argv[++i], 1, 10000000, &per_round) != 0)
                return 2;
        } else if (strcmp(arg, "--churn-ops") == 0) {
            if (parse_number(arg, argv[++i], 1, 1000000000000L, &churn_ops) != 0)
                return 2;
        } else if (strcmp(arg, "--thread-ops") == 0) {
            if (parse_number(arg, argv[++i], 1, 1000000000000L, &thread_ops) != 0)
                return 2;
        } else if (strcmp(arg, "--case") == 0) {
            only_case = argv[++i];
        } else if (strcmp(arg, "--json") == 0) {
            json = argv[++i];
        } else if (strcmp(arg, "--svg") == 0) {
            svg = argv[++i];
        } else if (strcmp(arg, "--scenarios") == 0) {
            if (select_list(arg, argv[++i], scenario_names, SC_COUNT, sizeof scenario_names[0], scenario_on) != 0)
                return 2;
        } else if (strcmp(arg, "--allocators") == 0) {
            if (select_list(arg, argv[++i], &allocators[0].name, nalloc, sizeof allocators[0], alloc_on) != 0)
                return 2;
            alloc_on[0] = 1; /* rampart is the subject of every ratio */
            named = 1;
        } else if (strcmp(arg, "--threads") == 0) {
            if (parse_threads(argv[++i]) != 0)
                return 2;
        } else if (strcmp(arg, "--variant") == 0) {
            if (add_variant(argv[++i]) != 0)
                return 2;
        } else if (strcmp(arg, "--mimalloc-bench") == 0) {
            suite_dir = argv[++i];
        } else if (strcmp(arg, "--suite-build") == 0) {
            suite_build = argv[++i];
        } else if (strcmp(arg, "--suite-tests") == 0) {
            suite_tests = argv[++i];
        } else if (strcmp(arg, "--suite-timeout") == 0 || strcmp(arg, "--security-timeout") == 0) {
            long v;
            if (parse_number(arg, argv[++i], 1, 86400, &v) != 0)
                return 2;
            *(arg[2] == 's' && arg[3] == 'u' ? &suite_timeout : &security_timeout) = (double)v;
        } else {
            fprintf(stderr, "rpbench: %s: unknown option\n", arg);
            usage();
            return 2;
        }
    }
    if (!named)
        for (int a = 0; a < NBUILTIN; a++)
            alloc_on[a] = debug_rows || !allocators[a].debug_row;
    for (int a = NBUILTIN; a < nalloc; a++) /* a variant is measured whenever it is given */
        alloc_on[a] = 1;
    if (scenario_on[SC_MBENCH] || scenario_on[SC_SECURITY]) {
        char err[2048];
        if (rpb_suite_locate(suite_dir, suite_build, &suite, err, sizeof err) != 0 ||
            rpb_mbench_check_tests(suite_tests, err, sizeof err) != 0) {
            fprintf(stderr, "rpbench: %s\n", err);
            return 2;
        }
    }
    if (only_case) {
        int found = 0;
        for (int c = 0; c < rpb_ncases; c++)
            found |= strcmp(only_case, rpb_cases[c].name) == 0;
        if (!found) {
            fprintf(stderr, "rpbench: unknown case '%s'\n", only_case);
            usage();
            return 2;
        }
    }
    /* Output paths: relative ones are the caller's under `bazel run`; both are checked now. */
    char json_path[PATH_MAX], svg_path[PATH_MAX];
    const char *wd = getenv("BUILD_WORKING_DIRECTORY");
    if (json && json[0] != '/' && wd)
        snprintf(json_path, sizeof json_path, "%s/%s", wd, json);
    else if (json)
        snprintf(json_path, sizeof json_path, "%s", json);
    json = json ? json_path : NULL;
    if (svg[0] == '/' || (svg[0] && !wd))
        snprintf(svg_path, sizeof svg_path, "%s", svg);
    else if (svg[0])
        snprintf(svg_path, sizeof svg_path, "%s/%s", wd, svg);
    else
        snprintf(svg_path, sizeof svg_path, "%s%srpbench.svg", wd ? wd : "", wd ? "/" : "");
    int want_chart = scenario_on[SC_SEED] && strcmp(svg, "none") != 0;
    if ((json && !output_writable(json)) || (want_chart && !output_writable(svg_path)))
        return 2;
    resolve_allocators();
    if (!res_alloc[0].active) {
        fprintf(stderr, "rpbench: rampart: %s\n", res_alloc[0].why);
        return 1;
    }

    char machine[320];
    machine_line(machine, sizeof machine);
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime(&now));
    printf("rpbench %s -- %s\nmedians of %d interleaved repetitions, %d for seed, churn and the thread scenarios (the "
           "machine may be shared: figures are indicative)\n",
           when, machine, reps, long_reps());
    for (int a = 0; a < nalloc; a++) {
        if (res_alloc[a].active)
            printf("  %-10s %s\n", allocators[a].name, allocators[a].what);
        else if (alloc_on[a])
            printf("  %-10s SKIPPED: %s\n", allocators[a].name, res_alloc[a].why);
    }
    fflush(stdout);

    double t0 = (double)time(NULL);
    for (int c = 0; c < rpb_ncases && c < MAX_CASES; c++)
        if (case_selected(c) && (scenario_on[SC_SEED] || scenario_on[SC_CHURN] || scenario_on[SC_MEMORY]))
            measure_case(c);
    if (scenario_on[SC_PAIRS])
        measure_threads(SC_PAIRS);
    if (scenario_on[SC_PRODCONS])
        measure_threads(SC_PRODCONS);
    if (scenario_on[SC_GROW])
        measure_grow();
    if (scenario_on[SC_PROGRAM])
        measure_programs();
    int suite_failed = (scenario_on[SC_MBENCH] || scenario_on[SC_SECURITY]) && measure_suite() != 0;
    int dbg = peer_index("debug");
    if (dbg >= 0) {
        double v[MAX_REPS];
        int got = 0;
        char out[256];
        const char *args[] = {"capture"};
        for (int rep = 0; rep < reps; rep++)
            if (run_worker(dbg, args, 1, out, sizeof out) == 0)
                v[got++] = strtod(out, NULL);
        capture_ns = rpb_median(v, got);
    }
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r%-70s\r", "");

    print_tables();
    print_grow();
    print_programs();
    print_debug_block();
    rpb_mbench_print(stdout);
    rpb_security_print(stdout);
    print_targets();
    printf("\n(%.0f s)\n", (double)time(NULL) - t0);

    int status = suite_failed;
    if (json && write_json(json, machine) != 0) {
        fprintf(stderr, "rpbench: cannot write %s: %s\n", json, strerror(errno));
        status = 1;
    }
    if (want_chart) {
        char caption[512];
        snprintf(caption, sizeof caption, "rpbench seed scenario: ns per allocation per round (%d x %d, median of %d) -- %s",
                 rounds, per_round, long_reps(), machine);
        if (write_chart(svg_path, caption) == 0) {
            printf("chart: %s\n", svg_path);
        } else {
            fprintf(stderr, "rpbench: cannot write %s: %s\n", svg_path, strerror(errno));
            status = 1;
        }
    }
    return status;
}
