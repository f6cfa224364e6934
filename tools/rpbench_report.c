/* rpbench's tables: every figure as its median with the range of the repetitions
 * [min-max], the ratios rampart / other, and the comparisons with the peers where rampart's
 * median is behind, with the paired counts that tell a steady difference from noise. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rpbench.h"
#include "rpbench_mbench.h"
#include "rpbench_programs.h"
#include "rpbench_worker.h"

#define CELL 20

/* Cost ratio x / y of two medians: both must be valid. */
static double ratio(double x, double y) { return x > 0 && y > 0 ? x / y : -1; }

/* "median [min-max]" of a figure (each scaled by scale, in fmt), or "-" when not measured. */
static void cell_fig(const rpb_fig *f, const char *fmt, double scale)
{
    char buf[64], m[20], lo_s[20], hi_s[20];
    double m_v = fig_median(f), lo, hi;
    fig_range(f, &lo, &hi);
    if (m_v < 0) {
        snprintf(buf, sizeof buf, "-");
    } else {
        snprintf(m, sizeof m, fmt, m_v * scale);
        snprintf(lo_s, sizeof lo_s, fmt, lo * scale);
        snprintf(hi_s, sizeof hi_s, fmt, hi * scale);
        if (lo == hi)
            snprintf(buf, sizeof buf, "%s", m);
        else
            snprintf(buf, sizeof buf, "%s [%s-%s]", m, lo_s, hi_s);
    }
    printf(" %*s", CELL, buf);
}

static void cell_num(double v, const char *fmt)
{
    char buf[32];
    if (v < 0)
        snprintf(buf, sizeof buf, "-");
    else
        snprintf(buf, sizeof buf, fmt, v);
    printf(" %*s", CELL, buf);
}

/* The header of a table: its first column, then every row of the API (NULL = any) from row
 * `from` on. */
static void header(const char *first, const char *api, int from)
{
    printf("%-14s", first);
    for (int a = from; a < nalloc; a++)
        if (alloc_usable(a, api))
            printf(" %*s", CELL, allocators[a].name);
    printf("\n");
}

/* ---- comparisons ------------------------------------------------------------------------------ */

/* Where rampart's median is behind a peer's: one line each, with the paired count. */
static char behind[256][160];
static int nbehind, ncompared;

static const char *const peers[] = {"glibc", "jemalloc", "mimalloc", "tcmalloc"};
#define NPEERS 4

/* Compares rampart's figure r with each peer's (NULL = not measured), higher_is_better for
 * rates, and records the comparisons where rampart's median is behind. */
static void compare_figs(const char *what, const rpb_fig *r, const rpb_fig *const *peer_figs, int higher_is_better)
{
    for (int p = 0; p < NPEERS; p++) {
        const rpb_fig *pf = peer_figs[p];
        if (!pf)
            continue;
        double rm = fig_median(r), pm = fig_median(pf);
        double x = higher_is_better ? ratio(pm, rm) : ratio(rm, pm);
        if (x < 0)
            continue;
        ncompared++;
        if (x <= 1.0 || nbehind == 256)
            continue;
        int pairs, n = r->n < pf->n ? r->n : pf->n;
        int ahead = rpb_paired_ahead(r->v, pf->v, n, higher_is_better, &pairs);
        snprintf(behind[nbehind++], sizeof behind[0], "%s vs %s: %.2f (rampart ahead in %d of %d paired repetitions)",
                 what, peers[p], x, ahead, pairs);
    }
}

/* ---- seed, churn, memory ---------------------------------------------------------------------- */

/* A table of one per-case figure: a row per selected case, a column per row measured. */
static void case_table(rpb_fig (*figs)[MAX_CASES], const char *fmt)
{
    header("case", NULL, 0);
    for (int c = 0; c < rpb_ncases; c++) {
        if (!case_selected(c))
            continue;
        printf("%-14s", rpb_cases[c].name);
        for (int a = 0; a < nalloc; a++)
            if (alloc_usable(a, NULL))
                cell_fig(&figs[a][c], fmt, 1);
        printf("\n");
    }
}

/* The ratios rampart / other of one per-case figure's medians (with a second figure's in
 * brackets when `second` is set), and the comparisons with the peers. */
static void case_ratios(const char *scenario, rpb_fig (*figs)[MAX_CASES], rpb_fig (*second)[MAX_CASES])
{
    header("case", NULL, 1);
    for (int c = 0; c < rpb_ncases; c++) {
        if (!case_selected(c))
            continue;
        printf("%-14s", rpb_cases[c].name);
        for (int a = 1; a < nalloc; a++) {
            if (!alloc_usable(a, NULL))
                continue;
            double x = ratio(fig_median(&figs[0][c]), fig_median(&figs[a][c]));
            double y = second ? ratio(fig_median(&second[0][c]), fig_median(&second[a][c])) : -1;
            char buf[32];
            if (x < 0)
                snprintf(buf, sizeof buf, "-");
            else if (second)
                snprintf(buf, sizeof buf, "%.2f [%.2f]", x, y);
            else
                snprintf(buf, sizeof buf, "%.2f", x);
            printf(" %*s", CELL, buf);
        }
        printf("\n");
        char what[96];
        snprintf(what, sizeof what, "%s %s", scenario, rpb_cases[c].name);
        const rpb_fig *pf[NPEERS];
        for (int p = 0; p < NPEERS; p++) {
            int i = peer_index(peers[p]);
            pf[p] = i >= 0 ? &figs[i][c] : NULL;
        }
        compare_figs(what, &figs[0][c], pf, 0);
    }
}

static void print_cases(void)
{
    if (scenario_on[SC_SEED]) {
        printf("\nseed: %d rounds x %d allocations, no frees -- ns/op (mean of the rounds), median [min-max] of %d "
               "repetitions\n",
               rounds, per_round, reps_for(SC_SEED));
        case_table(seed_mean_fig, "%.0f");
        printf("flatness: round %d / round 1 of each repetition (1: no slower as blocks accumulate)\n", rounds);
        case_table(seed_flat_fig, "%.2f");
        printf("comparison: rampart / other, seed ns/op medians (< 1: rampart faster)\n");
        case_ratios("seed", seed_mean_fig, NULL);
    }
    if (scenario_on[SC_CHURN]) {
        printf("\nchurn: 1000 live blocks, free one + allocate one per op -- ns/op, median [min-max] of %d "
               "repetitions\n",
               reps_for(SC_CHURN));
        case_table(churn_fig, "%.1f");
        printf("churn: p99.9 latency of one op, ns\n");
        case_table(churn_p999_fig, "%.0f");
        printf("comparison: rampart / other, churn ns/op medians [p99.9]\n");
        case_ratios("churn", churn_fig, churn_p999_fig);
    }
    if (scenario_on[SC_MEMORY]) {
        printf("\nmemory: peak RSS / bytes requested (seed allocations, every page written; lower is better), "
               "median [min-max] of %d repetitions\n",
               reps_for(SC_MEMORY));
        case_table(memory_fig, "%.3f");
    }
}

/* ---- threads, grow ---------------------------------------------------------------------------- */

static void print_threads(void)
{
    for (int sc = SC_PAIRS; sc <= SC_PRODCONS; sc++) {
        if (!scenario_on[sc])
            continue;
        int k = sc - SC_PAIRS;
        printf("\n%s: 16-256 byte objects, %s -- million ops/s (mallocs + frees), median [min-max] of %d "
               "repetitions\n",
               scenario_names[sc],
               sc == SC_PAIRS ? "each thread frees what it allocated 16 ops before"
                              : "allocated by one thread, freed by the next",
               reps_for(sc));
        header("threads", "malloc", 0);
        for (int t = 0; t < nthreads_list; t++) {
            printf("%-14d", threads_list[t]);
            for (int a = 0; a < nalloc; a++)
                if (alloc_usable(a, "malloc"))
                    cell_fig(&threads_ops_fig[k][a][t], "%.1f", 1e-6);
            printf("\n");
        }
        printf("comparison: rampart / other, cost per op (wall; < 1: rampart faster) [CPU ns per op]\n");
        header("threads", "malloc", 1);
        for (int t = 0; t < nthreads_list; t++) {
            printf("%-14d", threads_list[t]);
            for (int a = 1; a < nalloc; a++) {
                if (!alloc_usable(a, "malloc"))
                    continue;
                double x = ratio(fig_median(&threads_ops_fig[k][a][t]), fig_median(&threads_ops_fig[k][0][t]));
                double y = ratio(fig_median(&threads_cpu_fig[k][0][t]), fig_median(&threads_cpu_fig[k][a][t]));
                char buf[32];
                if (x < 0)
                    snprintf(buf, sizeof buf, "-");
                else
                    snprintf(buf, sizeof buf, "%.2f [%.2f]", x, y);
                printf(" %*s", CELL, buf);
            }
            printf("\n");
            char what[96];
            snprintf(what, sizeof what, "%s %d threads", scenario_names[sc], threads_list[t]);
            const rpb_fig *pf[NPEERS];
            for (int p = 0; p < NPEERS; p++) {
                int i = peer_index(peers[p]);
                pf[p] = i >= 0 ? &threads_ops_fig[k][i][t] : NULL;
            }
            compare_figs(what, &threads_ops_fig[k][0][t], pf, 1);
        }
    }
}

static int grow_short(int a, int g)
{
    double m = fig_median(&grow_mib_fig[a][g]);
    return m >= 0 && m < (double)grow_max_mib;
}

static void print_grow(void)
{
    if (!scenario_on[SC_GROW])
        return;
    int capped = 0;
    printf("\ngrow: one buffer grown by realloc from 1 MiB to %ld MiB, every appended byte written, then freed; "
           "again: %ld MiB allocated, written and freed 25 times -- CPU ms, median [min-max] of %d repetitions\n",
           grow_max_mib, grow_max_mib / 8, reps_for(SC_GROW));
    header("pattern", NULL, 0);
    for (int g = 0; g < NGROW; g++) {
        printf("%-14s", grow_patterns[g]);
        for (int a = 0; a < nalloc; a++) {
            if (!alloc_usable(a, NULL))
                continue;
            capped |= grow_short(a, g);
            cell_fig(&grow_ms_fig[a][g], grow_short(a, g) ? "%.0f*" : "%.0f", 1);
        }
        printf("\n");
    }
    printf("comparison: rampart / other, grow CPU ms medians\n");
    header("pattern", NULL, 1);
    for (int g = 0; g < NGROW; g++) {
        printf("%-14s", grow_patterns[g]);
        for (int a = 1; a < nalloc; a++)
            if (alloc_usable(a, NULL))
                cell_num(ratio(fig_median(&grow_ms_fig[0][g]), fig_median(&grow_ms_fig[a][g])),
                         grow_short(a, g) ? "<%.2f" : "%.2f");
        printf("\n");
        char what[64];
        snprintf(what, sizeof what, "grow %s", grow_patterns[g]);
        const rpb_fig *pf[NPEERS];
        for (int p = 0; p < NPEERS; p++) {
            int i = peer_index(peers[p]);
            pf[p] = i >= 0 && !grow_short(i, g) ? &grow_ms_fig[i][g] : NULL;
        }
        compare_figs(what, &grow_ms_fig[0][g], pf, 0);
    }
    if (capped) {
        printf("  *: stopped at the 2 s cap before %ld MiB (median MiB reached:", grow_max_mib);
        for (int a = 0; a < nalloc; a++)
            for (int g = 0; g < NGROW; g++)
                if (alloc_usable(a, NULL) && grow_short(a, g))
                    printf(" %s %s %.0f", allocators[a].name, grow_patterns[g], fig_median(&grow_mib_fig[a][g]));
        printf("); rampart's ratio to it is at most the figure shown\n");
    }
}

/* ---- programs --------------------------------------------------------------------------------- */

static void print_programs(void)
{
    if (!scenario_on[SC_PROGRAM])
        return;
    printf("\nprogram: whole programs, the allocator in LD_PRELOAD; median [min-max] of %d runs (each run's output is "
           "the system malloc's)\n",
           reps_for(SC_PROGRAM));
    for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++)
        printf("  %-14s %s%s%s\n", rpb_programs[p].name, rpb_programs[p].what, program_skipped[p][0] ? ": SKIPPED, " : "",
               program_skipped[p]);
    static const char *const titles[] = {"CPU s (user + system)", "wall s", "peak RSS of the process, MiB (lower is better)"};
    for (int k = 0; k < 3; k++) {
        printf("%s\n%-14s", titles[k], "workload");
        for (int a = 0; a < nalloc; a++)
            if (program_usable(a))
                printf(" %*s", CELL, allocators[a].name);
        printf("\n");
        for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
            printf("%-14s", rpb_programs[p].name);
            for (int a = 0; a < nalloc; a++)
                if (program_usable(a))
                    cell_fig(k == 0 ? &program_cpu_fig[a][p] : k == 1 ? &program_wall_fig[a][p] : &program_rss_fig[a][p],
                             k == 2 ? "%.1f" : "%.2f", 1);
            printf("\n");
        }
    }
    for (int a = 0; a < nalloc; a++)
        if (alloc_on[a] && allocators[a].program_preload && res_alloc[a].program_why[0])
            printf("  %s: not measured: %s\n", allocators[a].name, res_alloc[a].program_why);
    static const char *const pairs[][2] = {{"rampart", "glibc"},         {"debug", "rampart"},
                                           {"debug-nobt", "rampart"},     {"glibc-asan", "glibc"},
                                           {"debug", "glibc-asan"},       {"debug-fast", "glibc-asan"},
                                           {"debug-nobt", "glibc-asan"},  {"debug", "glibc-asan-full"}};
    int any = 0;
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        int x = program_index(pairs[k][0]), y = program_index(pairs[k][1]);
        if (x < 0 || y < 0)
            continue;
        if (!any)
            printf("comparison: cost ratios of the medians, CPU time [wall]\n");
        any = 1;
        char label[48];
        snprintf(label, sizeof label, "%s / %s", pairs[k][0], pairs[k][1]);
        printf("  %-22s", label);
        for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
            double c = ratio(fig_median(&program_cpu_fig[x][p]), fig_median(&program_cpu_fig[y][p]));
            double w = ratio(fig_median(&program_wall_fig[x][p]), fig_median(&program_wall_fig[y][p]));
            if (c >= 0)
                printf(" %s %.2fx [%.2fx]", rpb_programs[p].name, c, w);
        }
        printf("\n");
    }
    for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
        char what[64];
        snprintf(what, sizeof what, "program %s CPU", rpb_programs[p].name);
        const rpb_fig *pf[NPEERS];
        for (int q = 0; q < NPEERS; q++) {
            int i = program_index(peers[q]);
            pf[q] = i >= 0 ? &program_cpu_fig[i][p] : NULL;
        }
        if (program_index("rampart") == 0)
            compare_figs(what, &program_cpu_fig[0][p], pf, 0);
    }
}

/* ---- the grid --------------------------------------------------------------------------------- */

/* One table of the grid: rows = sizes, columns = alignments, cells = fn(size, alignment). */
static void grid_table(const char *title, double (*fn)(int s, int g, int peer), int peer, const char *fmt)
{
    printf("%s\n%-8s", title, "size");
    for (int g = 0; g < GRID_NALIGNS; g++)
        printf(" %6ld", grid_aligns[g]);
    printf("   (alignment)\n");
    for (int s = 0; s < GRID_NSIZES; s++) {
        printf("%-8ld", grid_sizes[s]);
        for (int g = 0; g < GRID_NALIGNS; g++) {
            double v = fn(s, g, peer);
            char buf[16];
            if (v < 0)
                snprintf(buf, sizeof buf, "-");
            else
                snprintf(buf, sizeof buf, fmt, v);
            printf(" %6s", buf);
        }
        printf("\n");
    }
}

static double grid_churn_ratio(int s, int g, int peer)
{
    return ratio(fig_median(&grid_churn_fig[0][s][g]), fig_median(&grid_churn_fig[peer][s][g]));
}
static double grid_churn_ns(int s, int g, int row) { return fig_median(&grid_churn_fig[row][s][g]); }
static double grid_flat(int s, int g, int row) { return fig_median(&grid_flat_fig[row][s][g]); }

static void print_grid(void)
{
    if (!scenario_on[SC_GRID])
        return;
    printf("\ngrid: every size x alignment pair (posix_memalign), 10 no-free rounds then churn over 1000 live "
           "blocks; medians of %d repetitions (ranges in the JSON)\n",
           reps_for(SC_GRID));
    grid_table("rampart churn, ns/op", grid_churn_ns, 0, "%.0f");
    for (int a = 1; a < nalloc; a++) {
        if (!grid_row(a))
            continue;
        char title[160];
        if (a < NBUILTIN) {
            snprintf(title, sizeof title, "comparison: rampart / %s, churn ns/op (< 1: rampart faster)",
                     allocators[a].name);
            grid_table(title, grid_churn_ratio, a, "%.2f");
        } else {
            snprintf(title, sizeof title, "%s churn, ns/op", allocators[a].name);
            grid_table(title, grid_churn_ns, a, "%.0f");
        }
        int over = 0, n = 0;
        double worst = 0;
        for (int s = 0; s < GRID_NSIZES; s++)
            for (int g = 0; g < GRID_NALIGNS; g++) {
                double x = grid_churn_ratio(s, g, a);
                if (x < 0)
                    continue;
                n++;
                over += x > 1.1;
                worst = x > worst ? x : worst;
            }
        if (a < NBUILTIN)
            printf("  rampart / %s above 1.1 on %d of %d pairs (highest %.2f)\n", allocators[a].name, over, n, worst);
    }
    grid_table("rampart no-free rounds: round 10 / round 1", grid_flat, 0, "%.2f");
    for (int a = 0; a < nalloc; a++) {
        if (!grid_row(a))
            continue;
        double worst = 0;
        int n = 0;
        for (int s = 0; s < GRID_NSIZES; s++)
            for (int g = 0; g < GRID_NALIGNS; g++) {
                double v = grid_flat(s, g, a);
                if (v >= 0) {
                    n++;
                    worst = v > worst ? v : worst;
                }
            }
        printf("  %s: highest round 10 / round 1 over %d pairs: %.2f\n", allocators[a].name, n, worst);
    }
}

/* ---- the debug flavour ------------------------------------------------------------------------ */

#define DEBUG_REFERENCE 3.0

static void print_debug(void)
{
    static const char *const pairs[][2] = {
        {"debug", "rp_alloc"},   {"debug-nobt", "rp_alloc"},      {"debug-fast", "rp_alloc"},
        {"debug", "glibc-asan"}, {"debug-fast", "glibc-asan"}, {"glibc-asan", "glibc"}};
    int any = 0;
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0] && (scenario_on[SC_SEED] || scenario_on[SC_CHURN]); k++) {
        int x = peer_index(pairs[k][0]), y = peer_index(pairs[k][1]);
        if (x < 0 || y < 0)
            continue;
        if (!any)
            printf("\ndebug flavour: cost ratios of the medians per case, seed ns/op ; churn ns/op\n");
        any = 1;
        char label[48];
        snprintf(label, sizeof label, "%s / %s", pairs[k][0], pairs[k][1]);
        printf("  %-22s", label);
        for (int c = 0; c < rpb_ncases; c++) {
            if (!case_selected(c))
                continue;
            double a = ratio(fig_median(&seed_mean_fig[x][c]), fig_median(&seed_mean_fig[y][c]));
            double b = ratio(fig_median(&churn_fig[x][c]), fig_median(&churn_fig[y][c]));
            if (a >= 0 || b >= 0)
                printf(" %s %.1fx;%.1fx", rpb_cases[c].name, a < 0 ? 0 : a, b < 0 ? 0 : b);
        }
        printf("\n");
    }
    double cap = fig_median(&capture_fig);
    if (cap >= 0)
        printf("debug stack capture (rp_stack_capture, 16 of 20+ frames, depot hit): %.1f ns per stack; an allocation "
               "records one stack and its free another\n",
               cap);
    double fast = fig_median(&capture_fast_fig);
    if (fast >= 0)
        printf("the same with fast_unwind=1 (frame pointers; the worker keeps them): %.1f ns per stack\n", fast);
    int pd = program_index("debug"), pr = program_index("rampart");
    if (pd >= 0 && pr >= 0 && scenario_on[SC_PROGRAM]) {
        int n = 0, over = 0;
        printf("debug / release, CPU time of whole programs:");
        for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
            double x = ratio(fig_median(&program_cpu_fig[pd][p]), fig_median(&program_cpu_fig[pr][p]));
            if (x < 0)
                continue;
            n++;
            over += x > DEBUG_REFERENCE;
            printf(" %s %.2fx", rpb_programs[p].name, x);
        }
        printf(" (above %.0fx: %d of %d)\n", DEBUG_REFERENCE, over, n);
    }
}

/* ---- all -------------------------------------------------------------------------------------- */

static void print_comparisons(void)
{
    if (ncompared == 0)
        return;
    printf("\ncomparisons with the peers (%s): rampart's median behind in %d of %d\n",
           "glibc, jemalloc, mimalloc, tcmalloc; cost ratio rampart / peer", nbehind, ncompared);
    for (int i = 0; i < nbehind; i++)
        printf("  %s\n", behind[i]);
}

void print_report(void)
{
    nbehind = ncompared = 0;
    print_cases();
    print_threads();
    print_grow();
    print_programs();
    print_grid();
    print_debug();
    rpb_mbench_print(stdout);
    rpb_security_print(stdout);
    print_comparisons();
}
