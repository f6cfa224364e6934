/* rpbench: rampart against the allocators people use, side by side in one run.
 *
 * Every measurement runs in a fresh worker process (rpbench_worker.h), with the allocator
 * chosen by LD_PRELOAD (malloc API) or linked in (rp_alloc API), or is a whole program run
 * with the allocator in LD_PRELOAD. Allocators are interleaved within each repetition (who goes
 * first rotates); tables show the median over the repetitions with its range [min-max], and
 * the JSON keeps every sample.
 *
 * The driver is split by what it does:
 *   rpbench_main.c      the command line (options, --help) and the order of the run;
 *   rpbench_alloc.c     the allocator rows (table, --variant rows, finding the libraries);
 *   rpbench_measure.c   the scenarios' measurements (workers, programs, the suite, the grid);
 *   rpbench_report.c    the tables and the comparisons with the peers;
 *   rpbench_json.c      the JSON file; rpbench_chart.c the SVG charts;
 *   rpbench_progress.c  the progress line with the time left.
 * This header holds what they share: the rows, the settings and the samples. */
#ifndef RPBENCH_H
#define RPBENCH_H

#include <limits.h>
#include <stdio.h>

#include "rpbench_security.h"
#include "rpbench_stats.h"
#include "rpbench_suite.h"

/* ---- the allocators ------------------------------------------------------------------------ */

typedef struct bench_allocator {
    const char *name;    /* row label */
    const char *api;     /* "malloc" or "rp" (rpbench_worker.h) */
    const char *worker;  /* worker binary, runfiles-relative; NULL = rpbench itself */
    const char *preload; /* library for LD_PRELOAD: absolute or runfiles-relative; NULL = none */
    const char *options; /* RAMPART_OPTIONS for the worker and for programs; NULL = unset */
    int debug_row;       /* 1: measured only with --debug (or when named in --allocators); 2: only
                            when named in --allocators (too slow for every --debug run) */
    const char *what;    /* one line for the header */
    /* Whole programs (program scenario, the suite): the library they get in LD_PRELOAD
     * (absolute or runfiles-relative), "" = none (the system malloc), NULL = runs no programs. */
    const char *program_preload;
    /* ASAN_OPTIONS for the row's worker and programs, after detect_leaks=0 (NULL = that
     * alone): an ASan row with other settings. */
    const char *asan_options;
} bench_allocator;

/* The built-in rows (rpbench_alloc.c), then the rampart rows of --variant. */
#define NBUILTIN 11
#define MAX_VARIANTS 6
#define MAX_ALLOC (NBUILTIN + MAX_VARIANTS)

extern bench_allocator allocators[MAX_ALLOC];
extern int nalloc;

typedef struct resolved {
    int active;
    char worker[PATH_MAX];
    char preload[PATH_MAX];
    char why[160]; /* why it is skipped */
    int programs;  /* runs whole programs */
    char program_preload[PATH_MAX];
    char program_why[320]; /* why it runs no programs (or the first program run that failed) */
} resolved;

extern resolved res_alloc[MAX_ALLOC];
extern int alloc_on[MAX_ALLOC]; /* selected (--allocators, --debug, --variant) */

/* Adds a --variant row (LIB[:OPTIONS]); 0, or -1 after a message. */
int rpb_add_variant(const char *spec);
/* Finds every selected row's worker and libraries (rows not found are reported, skipped). */
void rpb_resolve_allocators(void);
/* Row a is measured, and (api not NULL) uses that API. */
int alloc_usable(int a, const char *api);
/* Row a runs whole programs. */
int program_usable(int a);
/* The measured row of that name, or -1. */
int peer_index(const char *name);
/* The row of that name that runs programs, or -1. */
int program_index(const char *name);
/* The rows that run whole programs as targets of the suite's scenarios (row 0 first). */
int rpb_suite_targets(rpb_target *t);

/* ---- scenarios and settings ------------------------------------------------------------------ */

enum {
    SC_SEED,
    SC_CHURN,
    SC_MEMORY,
    SC_PAIRS,
    SC_PRODCONS,
    SC_GROW,
    SC_PROGRAM,
    SC_GRID,
    SC_MBENCH,
    SC_SECURITY,
    SC_COUNT
};
extern const char *const scenario_names[SC_COUNT];
extern int scenario_on[SC_COUNT];

#define MAX_ROUNDS 64
#define MAX_REPS RPB_MAX_REPS
#define MAX_CASES 16
#define MAX_THREADS_LIST 8
#define MAX_PROGRAMS 8
#define NGROW 3
extern const char *const grow_patterns[NGROW];

/* Repetitions: reps_given > 0 (--reps) applies to every scenario; otherwise the short, noisy
 * runs (seed, churn, the thread scenarios) get DEFAULT_LONG_REPS, the mimalloc-bench suite
 * DEFAULT_SUITE_REPS and the rest DEFAULT_REPS. */
#define DEFAULT_REPS 5
#define DEFAULT_LONG_REPS 11
#define DEFAULT_SUITE_REPS 3
extern int reps_given;
int reps_for(int scenario);

extern int rounds, per_round;
extern long churn_ops, thread_ops, grid_ops, grow_max_mib;
extern int nthreads_list, threads_list[MAX_THREADS_LIST];
extern const char *only_case;
int case_selected(int c);

/* The suite's scenarios. */
extern const char *suite_dir, *suite_build, *suite_tests;
extern double suite_timeout, security_timeout;
extern rpb_suite suite;

/* ---- the samples ------------------------------------------------------------------------------ */

/* One figure over the repetitions: v[i] is repetition i's value (every allocator's repetition
 * i ran in the same round of the interleaving), < 0 = failed or not run. */
typedef struct rpb_fig {
    double v[MAX_REPS];
    int n; /* repetitions made */
} rpb_fig;

double fig_median(const rpb_fig *f);
/* The range of the samples; -1s if there is none. */
void fig_range(const rpb_fig *f, double *lo, double *hi);

extern rpb_fig seed_fig[MAX_ALLOC][MAX_CASES][MAX_ROUNDS]; /* ns/op of each round */
extern rpb_fig seed_mean_fig[MAX_ALLOC][MAX_CASES];        /* the mean of a repetition's rounds */
extern rpb_fig seed_flat_fig[MAX_ALLOC][MAX_CASES];        /* its last round / its first */
extern rpb_fig churn_fig[MAX_ALLOC][MAX_CASES], churn_p999_fig[MAX_ALLOC][MAX_CASES];
extern rpb_fig memory_fig[MAX_ALLOC][MAX_CASES];                /* peak RSS / bytes requested */
extern rpb_fig threads_ops_fig[2][MAX_ALLOC][MAX_THREADS_LIST]; /* wall-clock ops/s */
extern rpb_fig threads_cpu_fig[2][MAX_ALLOC][MAX_THREADS_LIST]; /* process CPU ns per op */
extern rpb_fig grow_ms_fig[MAX_ALLOC][NGROW], grow_mib_fig[MAX_ALLOC][NGROW];
extern rpb_fig program_wall_fig[MAX_ALLOC][MAX_PROGRAMS], program_cpu_fig[MAX_ALLOC][MAX_PROGRAMS];
extern rpb_fig program_rss_fig[MAX_ALLOC][MAX_PROGRAMS];
extern rpb_fig capture_fig;      /* ns per stack capture of the debug flavour */
extern rpb_fig capture_fast_fig; /* the same with fast_unwind=1 (the debug-fast row) */
extern char program_skipped[MAX_PROGRAMS][280]; /* why a workload was not measured */

/* The grid: every (size, alignment) pair. */
#define GRID_NSIZES 23
#define GRID_NALIGNS 13
extern const long grid_sizes[GRID_NSIZES], grid_aligns[GRID_NALIGNS];
extern rpb_fig grid_churn_fig[MAX_ALLOC][GRID_NSIZES][GRID_NALIGNS]; /* ns/op */
extern rpb_fig grid_round_fig[MAX_ALLOC][GRID_NSIZES][GRID_NALIGNS]; /* no-free rounds: mean ns/op */
extern rpb_fig grid_flat_fig[MAX_ALLOC][GRID_NSIZES][GRID_NALIGNS];  /* last round / first */
/* The rows the grid compares: rampart, its variants, jemalloc, mimalloc. */
int grid_row(int a);

/* ---- the stages --------------------------------------------------------------------------------- */

/* Measurements (rpbench_measure.c). */
void measure_cases(void);
void measure_threads(int sc);
void measure_grow(void);
void measure_programs(void);
void measure_capture(void);
void measure_grid(void);
int measure_suite(void); /* 0, or -1 after a message */
/* Progress steps each measurement will make, for the estimate of the time left. */
void plan_progress(void);

/* Reports (rpbench_report.c): the tables and the comparisons, on stdout. */
void print_report(void);

/* JSON (rpbench_json.c): the run (date, machine, command line) and every figure's median and
 * samples. 0, or -1 with errno. */
int write_json(const char *path, const char *machine, const char *when, const char *command);

/* Charts (rpbench_chart.c): every scenario measured, median and range. 0, or -1 with errno. */
int write_charts(const char *path, const char *caption);

#endif
