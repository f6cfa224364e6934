/* rpbench --svg: a chart of every scenario measured, each point a median with the range of
 * its repetitions: the seed rounds per case, churn, memory, the thread scenarios, grow, the
 * programs, the grid (rampart / peer per size and alignment) and the mimalloc-bench suite. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "rpbench.h"
#include "rpbench_mbench.h"
#include "rpbench_programs.h"
#include "rpbench_svg.h"
#include "rpbench_worker.h"

#define MAX_PANELS 48
#define POOL (1 << 16)

static rpb_panel panels[MAX_PANELS];
static int npanels;
static double pool[POOL];
static int pool_used;
static char label_pool[64][24];
static const char *labels[256];
static int nlabels, nlabel_text;

/* n doubles from the pool (NULL when it is exhausted: the chart then leaves that part out). */
static double *take(int n)
{
    if (pool_used + n > POOL)
        return NULL;
    double *p = pool + pool_used;
    pool_used += n;
    return p;
}

static rpb_panel *new_panel(const char *title, const char *xlabel, const char *ylabel, const char *const *xticks,
                            int npoints, int joined, int log_y)
{
    if (npanels == MAX_PANELS)
        return NULL;
    rpb_panel *p = &panels[npanels++];
    memset(p, 0, sizeof *p);
    *p = (rpb_panel){.title = title, .xlabel = xlabel, .ylabel = ylabel, .xticks = xticks, .npoints = npoints,
                     .joined = joined, .log_y = log_y};
    return p;
}

/* Adds a series whose point i is the figure get(a, i, ctx). */
static void add_series(rpb_panel *p, int a, const rpb_fig *(*get)(int a, int i, int ctx), int ctx, double scale)
{
    if (!p || p->nseries == RPB_SVG_MAX_SERIES)
        return;
    double *mid = take(p->npoints), *lo = take(p->npoints), *hi = take(p->npoints);
    if (!mid || !lo || !hi)
        return;
    for (int i = 0; i < p->npoints; i++) {
        const rpb_fig *g = get(a, i, ctx);
        mid[i] = g ? fig_median(g) * scale : -1;
        lo[i] = hi[i] = -1;
        if (g)
            fig_range(g, &lo[i], &hi[i]);
        lo[i] *= lo[i] > 0 ? scale : 1;
        hi[i] *= hi[i] > 0 ? scale : 1;
    }
    p->series[p->nseries++] = (rpb_series){allocators[a].name, mid, lo, hi};
}

/* The selected cases' indices and names. */
static int sel_cases[MAX_CASES], nsel;
static const char *case_names[MAX_CASES];

static const rpb_fig *get_seed(int a, int i, int c) { return &seed_fig[a][c][i]; }
static const rpb_fig *get_churn(int a, int i, int ctx)
{
    (void)ctx;
    return &churn_fig[a][sel_cases[i]];
}
static const rpb_fig *get_memory(int a, int i, int ctx)
{
    (void)ctx;
    return &memory_fig[a][sel_cases[i]];
}
static const rpb_fig *get_threads(int a, int i, int k) { return &threads_ops_fig[k][a][i]; }
static const rpb_fig *get_grow(int a, int i, int ctx)
{
    (void)ctx;
    return &grow_ms_fig[a][i];
}
static const rpb_fig *get_program(int a, int i, int k)
{
    return k == 0 ? &program_cpu_fig[a][i] : &program_rss_fig[a][i];
}

/* Labels that live until the chart is written. */
static const char *keep_label(const char *s)
{
    if (nlabel_text == 64)
        return "";
    snprintf(label_pool[nlabel_text], sizeof label_pool[0], "%s", s);
    return label_pool[nlabel_text++];
}

static const char **label_list(int n)
{
    if (nlabels + n > 256)
        return NULL;
    const char **l = labels + nlabels;
    nlabels += n;
    return l;
}

static void chart_cases(void)
{
    static char titles[MAX_CASES][96];
    static const char *round_ticks[MAX_ROUNDS];
    static char round_text[MAX_ROUNDS][8];
    for (int r = 0; r < rounds; r++) {
        snprintf(round_text[r], sizeof round_text[r], "%d", r + 1);
        round_ticks[r] = round_text[r];
    }
    nsel = 0;
    for (int c = 0; c < rpb_ncases && c < MAX_CASES; c++)
        if (case_selected(c)) {
            case_names[nsel] = rpb_cases[c].name;
            sel_cases[nsel++] = c;
        }
    for (int i = 0; i < nsel && scenario_on[SC_SEED]; i++) {
        snprintf(titles[i], sizeof titles[i], "seed %s: ns per allocation in each round (no frees)", case_names[i]);
        rpb_panel *p = new_panel(titles[i], "round", "ns per allocation (log)", round_ticks, rounds, 1, 1);
        for (int a = 0; a < nalloc; a++)
            if (alloc_usable(a, NULL))
                add_series(p, a, get_seed, sel_cases[i], 1);
    }
    if (scenario_on[SC_CHURN]) {
        rpb_panel *p = new_panel("churn: ns per op (free one, allocate one; 1000 live blocks)", "case",
                                 "ns per op (log)", case_names, nsel, 0, 1);
        for (int a = 0; a < nalloc; a++)
            if (alloc_usable(a, NULL))
                add_series(p, a, get_churn, 0, 1);
    }
    if (scenario_on[SC_MEMORY]) {
        rpb_panel *p = new_panel("memory: peak RSS / bytes requested", "case", "ratio (log)", case_names, nsel, 0, 1);
        for (int a = 0; a < nalloc; a++)
            if (alloc_usable(a, NULL))
                add_series(p, a, get_memory, 0, 1);
    }
}

static void chart_threads_grow_programs(void)
{
    static char thread_text[MAX_THREADS_LIST][8];
    static const char *thread_ticks[MAX_THREADS_LIST];
    for (int t = 0; t < nthreads_list; t++) {
        snprintf(thread_text[t], sizeof thread_text[t], "%d", threads_list[t]);
        thread_ticks[t] = thread_text[t];
    }
    for (int sc = SC_PAIRS; sc <= SC_PRODCONS; sc++) {
        if (!scenario_on[sc])
            continue;
        rpb_panel *p = new_panel(sc == SC_PAIRS ? "pairs: million ops/s (each thread frees its own blocks)"
                                                : "prodcons: million ops/s (one thread allocates, the next frees)",
                                 "threads", "million ops/s", thread_ticks, nthreads_list, 1, 0);
        for (int a = 0; a < nalloc; a++)
            if (alloc_usable(a, "malloc"))
                add_series(p, a, get_threads, sc - SC_PAIRS, 1e-6);
    }
    if (scenario_on[SC_GROW]) {
        rpb_panel *p = new_panel("grow: CPU ms (realloc growth, and a big buffer allocated again and again)",
                                 "pattern", "CPU ms (log)", grow_patterns, NGROW, 0, 1);
        for (int a = 0; a < nalloc; a++)
            if (alloc_usable(a, NULL))
                add_series(p, a, get_grow, 0, 1);
    }
    if (scenario_on[SC_PROGRAM]) {
        const char **ticks = label_list(rpb_nprograms);
        for (int i = 0; ticks && i < rpb_nprograms; i++)
            ticks[i] = rpb_programs[i].name;
        for (int k = 0; k < 2 && ticks; k++) {
            rpb_panel *p = new_panel(k == 0 ? "program: CPU s of whole programs" : "program: peak RSS, MiB",
                                     "workload", k == 0 ? "CPU s" : "MiB", ticks, rpb_nprograms, 0, 0);
            for (int a = 0; a < nalloc; a++)
                if (program_usable(a))
                    add_series(p, a, get_program, k, 1);
        }
    }
}

static void chart_grid(void)
{
    if (!scenario_on[SC_GRID])
        return;
    const char **rows = label_list(GRID_NSIZES), **cols = label_list(GRID_NALIGNS);
    if (!rows || !cols)
        return;
    char buf[24];
    for (int s = 0; s < GRID_NSIZES; s++) {
        snprintf(buf, sizeof buf, "%ld", grid_sizes[s]);
        rows[s] = keep_label(buf);
    }
    for (int g = 0; g < GRID_NALIGNS; g++) {
        snprintf(buf, sizeof buf, "%ld", grid_aligns[g]);
        cols[g] = keep_label(buf);
    }
    static char titles[MAX_ALLOC][128];
    for (int a = 1; a < NBUILTIN && a < nalloc; a++) {
        if (!grid_row(a))
            continue;
        double *v = take(GRID_NSIZES * GRID_NALIGNS);
        if (!v || npanels == MAX_PANELS)
            return;
        for (int s = 0; s < GRID_NSIZES; s++)
            for (int g = 0; g < GRID_NALIGNS; g++) {
                double r = fig_median(&grid_churn_fig[0][s][g]), o = fig_median(&grid_churn_fig[a][s][g]);
                v[s * GRID_NALIGNS + g] = r > 0 && o > 0 ? r / o : -1;
            }
        snprintf(titles[a], sizeof titles[a], "grid: churn ns/op, rampart / %s (medians; green: rampart faster)",
                 allocators[a].name);
        rpb_panel *p = &panels[npanels++];
        *p = (rpb_panel){.title = titles[a], .xlabel = "alignment, bytes", .ylabel = "size, bytes",
                         .nrows = GRID_NSIZES, .ncols = GRID_NALIGNS, .values = v, .row_labels = rows,
                         .col_labels = cols};
    }
}

static void chart_mbench(void)
{
    int n = rpb_mbench_ntargets(), idx[32], nt = 0;
    if (n == 0)
        return;
    for (int t = 0; t < rpb_suite_ntests && nt < 32; t++)
        if (rpb_mbench_test_ran(t))
            idx[nt++] = t;
    const char **ticks = label_list(nt);
    if (!ticks)
        return;
    for (int i = 0; i < nt; i++)
        ticks[i] = rpb_suite_tests[idx[i]].name;
    for (int k = 0; k < 2; k++) {
        rpb_panel *p = new_panel(k == 0 ? "mimalloc-bench: time, s (elapsed or the test's relative time)"
                                        : "mimalloc-bench: peak RSS, MiB",
                                 "test", k == 0 ? "s (log)" : "MiB (log)", ticks, nt, 0, 1);
        for (int a = 0; p && a < n && p->nseries < RPB_SVG_MAX_SERIES; a++) {
            double *mid = take(nt), *lo = take(nt), *hi = take(nt);
            if (!mid || !lo || !hi)
                return;
            for (int i = 0; i < nt; i++)
                mid[i] = rpb_mbench_median(idx[i], a, k, &lo[i], &hi[i]);
            p->series[p->nseries++] = (rpb_series){rpb_mbench_target(a), mid, lo, hi};
        }
    }
}

int write_charts(const char *path, const char *caption)
{
    npanels = pool_used = nlabels = nlabel_text = 0;
    chart_cases();
    chart_threads_grow_programs();
    chart_grid();
    chart_mbench();
    return rpb_write_svg(path, caption, panels, npanels);
}
