/* rpbench's measurements: the worker runs of the microbenchmarks, the whole programs, the
 * grid and the mimalloc-bench suite, interleaved (who goes first rotates with the repetition)
 * and kept sample by sample (rpbench.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rpbench.h"
#include "rpbench_mbench.h"
#include "rpbench_programs.h"
#include "rpbench_progress.h"
#include "rpbench_worker.h"

rpb_fig seed_fig[MAX_ALLOC][MAX_CASES][MAX_ROUNDS], seed_mean_fig[MAX_ALLOC][MAX_CASES],
    seed_flat_fig[MAX_ALLOC][MAX_CASES];
rpb_fig churn_fig[MAX_ALLOC][MAX_CASES], churn_p999_fig[MAX_ALLOC][MAX_CASES], memory_fig[MAX_ALLOC][MAX_CASES];
rpb_fig threads_ops_fig[2][MAX_ALLOC][MAX_THREADS_LIST], threads_cpu_fig[2][MAX_ALLOC][MAX_THREADS_LIST];
rpb_fig grow_ms_fig[MAX_ALLOC][NGROW], grow_mib_fig[MAX_ALLOC][NGROW];
rpb_fig program_wall_fig[MAX_ALLOC][MAX_PROGRAMS], program_cpu_fig[MAX_ALLOC][MAX_PROGRAMS],
    program_rss_fig[MAX_ALLOC][MAX_PROGRAMS];
rpb_fig capture_fig, capture_fast_fig;
rpb_fig grid_churn_fig[MAX_ALLOC][GRID_NSIZES][GRID_NALIGNS], grid_round_fig[MAX_ALLOC][GRID_NSIZES][GRID_NALIGNS],
    grid_flat_fig[MAX_ALLOC][GRID_NSIZES][GRID_NALIGNS];
char program_skipped[MAX_PROGRAMS][280];

/* Powers of two and sizes between them that no size class list is built around. */
const long grid_sizes[GRID_NSIZES] = {16,   24,   32,   48,   64,    100,   128,   200,   256,   512,   700,  1000,
                                      1024, 2048, 3000, 4096, 5000,  8192,  12000, 16384, 32768, 40000, 65536};
const long grid_aligns[GRID_NALIGNS] = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};

double fig_median(const rpb_fig *f) { return rpb_median(f->v, f->n); }

void fig_range(const rpb_fig *f, double *lo, double *hi) { rpb_range(f->v, f->n, lo, hi); }

/* Marks n repetitions as made and not measured yet. */
static void fig_reset(rpb_fig *f, int n)
{
    f->n = n;
    for (int i = 0; i < MAX_REPS; i++)
        f->v[i] = -1;
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
        char asan[256];
        rpb_asan_options(allocators[a].asan_options, asan, sizeof asan);
        setenv("ASAN_OPTIONS", asan, 1);
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

/* The number of selected rows that use api (NULL = any). */
static int usable_count(const char *api)
{
    int n = 0;
    for (int a = 0; a < nalloc; a++)
        n += alloc_usable(a, api);
    return n;
}

/* ---- seed, churn, memory ------------------------------------------------------------------- */

static void measure_case(int c)
{
    const char *cname = rpb_cases[c].name;
    char r_s[16], n_s[16], ops_s[24], out[8192], msg[128];
    snprintf(r_s, sizeof r_s, "%d", rounds);
    snprintf(n_s, sizeof n_s, "%d", per_round);
    snprintf(ops_s, sizeof ops_s, "%ld", churn_ops);
    int seed_reps = scenario_on[SC_SEED] ? reps_for(SC_SEED) : 0;
    int churn_reps = scenario_on[SC_CHURN] ? reps_for(SC_CHURN) : 0;
    int memory_reps = scenario_on[SC_MEMORY] ? reps_for(SC_MEMORY) : 0;
    for (int a = 0; a < nalloc; a++) {
        for (int r = 0; r < rounds; r++)
            fig_reset(&seed_fig[a][c][r], seed_reps);
        fig_reset(&seed_mean_fig[a][c], seed_reps);
        fig_reset(&seed_flat_fig[a][c], seed_reps);
        fig_reset(&churn_fig[a][c], churn_reps);
        fig_reset(&churn_p999_fig[a][c], churn_reps);
        fig_reset(&memory_fig[a][c], memory_reps);
    }
    int all = seed_reps > churn_reps ? seed_reps : churn_reps;
    all = memory_reps > all ? memory_reps : all;
    for (int rep = 0; rep < all; rep++) {
        snprintf(msg, sizeof msg, "seed/churn/memory %s, repetition %d/%d", cname, rep + 1, all);
        rpb_progress_step(SC_SEED, msg);
        for (int k = 0; k < nalloc; k++) {
            int a = (rep + k) % nalloc; /* rotate who goes first */
            if (!alloc_usable(a, NULL))
                continue;
            if (rep < seed_reps) {
                const char *args[] = {"seed", cname, r_s, n_s};
                if (run_worker(a, args, 4, out, sizeof out) == 0) {
                    char *p = out;
                    double sum = 0;
                    for (int r = 0; r < rounds; r++)
                        sum += seed_fig[a][c][r].v[rep] = strtod(p, &p);
                    seed_mean_fig[a][c].v[rep] = sum / rounds;
                    double first = seed_fig[a][c][0].v[rep], last = seed_fig[a][c][rounds - 1].v[rep];
                    seed_flat_fig[a][c].v[rep] = first > 0 ? last / first : -1;
                }
            }
            if (rep < churn_reps) {
                const char *args[] = {"churn", cname, ops_s};
                if (run_worker(a, args, 3, out, sizeof out) == 0) {
                    char *p = out;
                    churn_fig[a][c].v[rep] = strtod(p, &p);
                    churn_p999_fig[a][c].v[rep] = strtod(p, &p);
                }
            }
            if (rep < memory_reps) {
                const char *args[] = {"memory", cname, r_s, n_s};
                if (run_worker(a, args, 4, out, sizeof out) == 0)
                    memory_fig[a][c].v[rep] = strtod(out, NULL);
            }
        }
    }
}

void measure_cases(void)
{
    if (!scenario_on[SC_SEED] && !scenario_on[SC_CHURN] && !scenario_on[SC_MEMORY])
        return;
    for (int c = 0; c < rpb_ncases && c < MAX_CASES; c++)
        if (case_selected(c))
            measure_case(c);
}

/* ---- threads --------------------------------------------------------------------------------- */

void measure_threads(int sc)
{
    if (!scenario_on[sc])
        return;
    char t_s[16], ops_s[24], debug_ops_s[24], out[256], msg[128];
    snprintf(ops_s, sizeof ops_s, "%ld", thread_ops);
    snprintf(debug_ops_s, sizeof debug_ops_s, "%ld", thread_ops / 10 > 0 ? thread_ops / 10 : 1);
    int k_sc = sc - SC_PAIRS, nreps = reps_for(sc);
    for (int t = 0; t < nthreads_list; t++) {
        snprintf(t_s, sizeof t_s, "%d", threads_list[t]);
        for (int a = 0; a < nalloc; a++) {
            fig_reset(&threads_ops_fig[k_sc][a][t], nreps);
            fig_reset(&threads_cpu_fig[k_sc][a][t], nreps);
        }
        for (int rep = 0; rep < nreps; rep++) {
            snprintf(msg, sizeof msg, "%s on %d threads, repetition %d/%d", scenario_names[sc], threads_list[t],
                     rep + 1, nreps);
            rpb_progress_step(sc, msg);
            for (int k = 0; k < nalloc; k++) {
                int a = (rep + k) % nalloc;
                if (!alloc_usable(a, "malloc"))
                    continue;
                const char *args[] = {scenario_names[sc], t_s, allocators[a].debug_row ? debug_ops_s : ops_s};
                if (run_worker(a, args, 3, out, sizeof out) == 0) {
                    char *p = out;
                    threads_ops_fig[k_sc][a][t].v[rep] = strtod(p, &p);
                    threads_cpu_fig[k_sc][a][t].v[rep] = strtod(p, &p);
                }
            }
        }
    }
}

/* ---- grow ------------------------------------------------------------------------------------ */

void measure_grow(void)
{
    if (!scenario_on[SC_GROW])
        return;
    char max_s[24], out[256], msg[128];
    snprintf(max_s, sizeof max_s, "%ld", grow_max_mib);
    int nreps = reps_for(SC_GROW);
    for (int g = 0; g < NGROW; g++) {
        for (int a = 0; a < nalloc; a++) {
            fig_reset(&grow_ms_fig[a][g], nreps);
            fig_reset(&grow_mib_fig[a][g], nreps);
        }
        for (int rep = 0; rep < nreps; rep++) {
            snprintf(msg, sizeof msg, "grow %s, repetition %d/%d", grow_patterns[g], rep + 1, nreps);
            rpb_progress_step(SC_GROW, msg);
            for (int k = 0; k < nalloc; k++) {
                int a = (rep + k) % nalloc;
                if (!alloc_usable(a, NULL))
                    continue;
                const char *args[] = {"grow", grow_patterns[g], max_s};
                if (run_worker(a, args, 3, out, sizeof out) == 0) {
                    char *p = out;
                    grow_ms_fig[a][g].v[rep] = strtod(p, &p);
                    grow_mib_fig[a][g].v[rep] = strtod(p, &p);
                }
            }
        }
    }
}

/* ---- whole programs -------------------------------------------------------------------------- */

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

/* Every workload under every allocator that runs programs, interleaved like the other
 * scenarios. A first run on the system malloc warms the page cache and gives the output
 * every later run must reproduce; an allocator whose run fails or differs is left out of that
 * workload (the reason is printed). */
void measure_programs(void)
{
    if (!scenario_on[SC_PROGRAM])
        return;
    char dir[PATH_MAX];
    const char *tmp = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/rpbench-programs-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir) || rpb_programs_prepare(dir) != 0) {
        fprintf(stderr, "rpbench: program scenario: cannot write its scripts in %s: %s\n", dir, strerror(errno));
        return;
    }
    static char exe[MAX_PROGRAMS][PATH_MAX];
    uint64_t expected[MAX_PROGRAMS] = {0};
    static int failed[MAX_ALLOC][MAX_PROGRAMS];
    int nreps = reps_for(SC_PROGRAM);
    for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
        for (int a = 0; a < nalloc; a++) {
            fig_reset(&program_wall_fig[a][p], nreps);
            fig_reset(&program_cpu_fig[a][p], nreps);
            fig_reset(&program_rss_fig[a][p], nreps);
        }
        rpb_run run;
        if (rpb_program_find(p, exe[p], sizeof exe[p]) != 0) {
            snprintf(program_skipped[p], sizeof program_skipped[p], "%s not found", rpb_programs[p].exe);
            exe[p][0] = 0;
            continue;
        }
        if (rpb_program_run(p, exe[p], dir, NULL, NULL, NULL, &run) != 0) {
            snprintf(program_skipped[p], sizeof program_skipped[p], "fails on the system malloc: %s", run.error);
            exe[p][0] = 0;
            continue;
        }
        expected[p] = run.output_hash;
    }
    char msg[128];
    for (int rep = 0; rep < nreps; rep++) {
        for (int k = 0; k < nalloc; k++) {
            int a = (rep + k) % nalloc;
            if (!program_usable(a))
                continue;
            for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
                if (!exe[p][0] || failed[a][p])
                    continue;
                snprintf(msg, sizeof msg, "program %s under %s, repetition %d/%d", rpb_programs[p].name,
                         allocators[a].name, rep + 1, nreps);
                rpb_progress_step(SC_PROGRAM, msg);
                rpb_run run;
                int rc = rpb_program_run(p, exe[p], dir, res_alloc[a].program_preload, allocators[a].options,
                                         allocators[a].asan_options, &run);
                if (rc == 0 && run.output_hash != expected[p])
                    snprintf(run.error, sizeof run.error, "output differs from the system malloc's");
                if (rc != 0 || run.error[0]) {
                    failed[a][p] = 1;
                    snprintf(res_alloc[a].program_why, sizeof res_alloc[a].program_why, "%s: %s",
                             rpb_programs[p].name, run.error);
                    for (int i = 0; i < MAX_REPS; i++) /* a row that failed once shows no figure */
                        program_wall_fig[a][p].v[i] = program_cpu_fig[a][p].v[i] = program_rss_fig[a][p].v[i] = -1;
                    continue;
                }
                program_wall_fig[a][p].v[rep] = run.wall_s;
                program_cpu_fig[a][p].v[rep] = run.cpu_s;
                program_rss_fig[a][p].v[rep] = run.peak_rss_mib;
            }
        }
    }
    remove_work_dir(dir);
}

/* ---- the debug flavour's stack capture ----------------------------------------------------- */

static void capture_of(const char *row, rpb_fig *fig)
{
    int dbg = peer_index(row);
    int nreps = reps_for(SC_SEED);
    fig_reset(fig, dbg >= 0 ? nreps : 0);
    if (dbg < 0)
        return;
    char out[256];
    const char *args[] = {"capture"};
    for (int rep = 0; rep < nreps; rep++) {
        rpb_progress_step(SC_COUNT, "debug flavour: the cost of a stack capture");
        if (run_worker(dbg, args, 1, out, sizeof out) == 0)
            fig->v[rep] = strtod(out, NULL);
    }
}

void measure_capture(void)
{
    capture_of("debug", &capture_fig);
    capture_of("debug-fast", &capture_fast_fig);
}

/* ---- the grid -------------------------------------------------------------------------------- */

/* Blocks per no-free round of a grid pair: about 2 MiB of blocks, 16 to 500 of them. */
static int grid_per_round(long size, long align)
{
    long big = size > align ? size : align;
    long n = (2L << 20) / big;
    return n < 16 ? 16 : n > 500 ? 500 : (int)n;
}

void measure_grid(void)
{
    if (!scenario_on[SC_GRID])
        return;
    int nreps = reps_for(SC_GRID);
    char msg[160], out[2048];
    for (int a = 0; a < nalloc; a++)
        for (int s = 0; s < GRID_NSIZES; s++)
            for (int g = 0; g < GRID_NALIGNS; g++) {
                fig_reset(&grid_churn_fig[a][s][g], nreps);
                fig_reset(&grid_round_fig[a][s][g], nreps);
                fig_reset(&grid_flat_fig[a][s][g], nreps);
            }
    for (int rep = 0; rep < nreps; rep++)
        for (int s = 0; s < GRID_NSIZES; s++) {
            snprintf(msg, sizeof msg, "grid: size %ld at every alignment, repetition %d/%d", grid_sizes[s], rep + 1,
                     nreps);
            rpb_progress_step(SC_GRID, msg);
            for (int g = 0; g < GRID_NALIGNS; g++) {
                char size_s[24], align_s[24], per_s[16], ops_s[24];
                snprintf(size_s, sizeof size_s, "%ld", grid_sizes[s]);
                snprintf(align_s, sizeof align_s, "%ld", grid_aligns[g]);
                snprintf(per_s, sizeof per_s, "%d", grid_per_round(grid_sizes[s], grid_aligns[g]));
                snprintf(ops_s, sizeof ops_s, "%ld", grid_ops);
                const char *args[] = {"grid", size_s, align_s, "10", per_s, ops_s};
                for (int k = 0; k < nalloc; k++) {
                    int a = (rep + s + g + k) % nalloc;
                    if (!grid_row(a) || run_worker(a, args, 6, out, sizeof out) != 0)
                        continue;
                    char *p = out;
                    double sum = 0, first = -1, last = -1;
                    for (int r = 0; r < 10; r++) {
                        double v = strtod(p, &p);
                        sum += v;
                        first = r == 0 ? v : first;
                        last = v;
                    }
                    grid_round_fig[a][s][g].v[rep] = sum / 10;
                    grid_flat_fig[a][s][g].v[rep] = first > 0 ? last / first : -1;
                    grid_churn_fig[a][s][g].v[rep] = strtod(p, &p);
                }
            }
        }
}

/* ---- the mimalloc-bench suite ---------------------------------------------------------------- */

static void suite_progress(long done, long total, const char *what)
{
    (void)done;
    (void)total;
    rpb_progress_step(strncmp(what, "security", 8) == 0 ? SC_SECURITY : SC_MBENCH, what);
}

int measure_suite(void)
{
    if (!scenario_on[SC_MBENCH] && !scenario_on[SC_SECURITY])
        return 0;
    char err[4096];
    rpb_progress_step(SC_COUNT + 1, "building the mimalloc-bench suite (CMake)");
    if (rpb_suite_build(&suite, err, sizeof err) != 0) {
        rpb_progress_done();
        fprintf(stderr, "rpbench: building the mimalloc-bench suite: %s\n", err);
        return -1;
    }
    rpb_target t[MAX_ALLOC];
    int n = rpb_suite_targets(t);
    if (scenario_on[SC_MBENCH] && rpb_mbench_run(&suite, t, n, suite_tests, reps_for(SC_MBENCH), suite_timeout,
                                                 suite_progress, err, sizeof err) != 0) {
        rpb_progress_done();
        fprintf(stderr, "rpbench: mimalloc-bench: %s\n", err);
        return -1;
    }
    if (scenario_on[SC_SECURITY] &&
        rpb_security_run(&suite, t, n, security_timeout, suite_progress, err, sizeof err) != 0) {
        rpb_progress_done();
        fprintf(stderr, "rpbench: security: %s\n", err);
        return -1;
    }
    return 0;
}

/* ---- the plan ------------------------------------------------------------------------------- */

void plan_progress(void)
{
    int ncases = 0, nprog = 0, nrows = usable_count(NULL), nmalloc = usable_count("malloc"), ngrid = 0, ntargets = 0;
    for (int c = 0; c < rpb_ncases; c++)
        ncases += case_selected(c);
    for (int a = 0; a < nalloc; a++) {
        nprog += program_usable(a);
        ngrid += grid_row(a);
    }
    ntargets = nprog;
    if (scenario_on[SC_SEED] || scenario_on[SC_CHURN] || scenario_on[SC_MEMORY]) {
        int all = 0;
        for (int sc = SC_SEED; sc <= SC_MEMORY; sc++)
            if (scenario_on[sc] && reps_for(sc) > all)
                all = reps_for(sc);
        rpb_progress_plan(SC_SEED, (long)ncases * all, 0.3 * nrows);
    }
    for (int sc = SC_PAIRS; sc <= SC_PRODCONS; sc++)
        if (scenario_on[sc])
            rpb_progress_plan(sc, (long)nthreads_list * reps_for(sc), 0.15 * nmalloc);
    if (scenario_on[SC_GROW])
        rpb_progress_plan(SC_GROW, (long)NGROW * reps_for(SC_GROW), 0.4 * nrows);
    if (scenario_on[SC_PROGRAM])
        rpb_progress_plan(SC_PROGRAM, (long)rpb_nprograms * nprog * reps_for(SC_PROGRAM), 2.5);
    if (scenario_on[SC_GRID])
        rpb_progress_plan(SC_GRID, (long)GRID_NSIZES * reps_for(SC_GRID), 0.08 * GRID_NALIGNS * ngrid);
    int captures = (peer_index("debug") >= 0) + (peer_index("debug-fast") >= 0);
    if (captures > 0)
        rpb_progress_plan(SC_COUNT, (long)captures * reps_for(SC_SEED), 0.1);
    if (scenario_on[SC_MBENCH] || scenario_on[SC_SECURITY])
        rpb_progress_plan(SC_COUNT + 1, 1, 60);
    if (scenario_on[SC_MBENCH]) {
        int ntests = rpb_suite_ntests;
        if (suite_tests) {
            ntests = 1;
            for (const char *p = suite_tests; *p; p++)
                ntests += *p == ',';
        }
        rpb_progress_plan(SC_MBENCH, (long)ntests * ntargets * reps_for(SC_MBENCH), 5);
    }
    if (scenario_on[SC_SECURITY])
        rpb_progress_plan(SC_SECURITY, 116, 0.05 * ntargets); /* the suite's 116 test programs */
}
