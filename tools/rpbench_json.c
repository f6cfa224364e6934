/* rpbench --json: every figure as its median (key K) and its samples, one per repetition in
 * the order they ran (key K_samples; null for a failed run), so that a reader can compute any
 * other statistic and pair the allocators' repetitions. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rpbench.h"
#include "rpbench_mbench.h"
#include "rpbench_programs.h"
#include "rpbench_worker.h"

static void num(FILE *f, double v)
{
    if (v < 0 || !isfinite(v))
        fprintf(f, "null");
    else
        fprintf(f, "%.4g", v);
}

static void samples(FILE *f, const rpb_fig *g)
{
    fprintf(f, "[");
    for (int i = 0; i < g->n; i++) {
        fprintf(f, "%s", i ? ", " : "");
        num(f, g->v[i]);
    }
    fprintf(f, "]");
}

/* "key": median, "key_samples": [...] (a comma before it unless *first). */
static void fig(FILE *f, int *first, const char *key, const rpb_fig *g)
{
    fprintf(f, "%s\"%s\": ", *first ? "" : ", ", key);
    *first = 0;
    num(f, fig_median(g));
    fprintf(f, ", \"%s_samples\": ", key);
    samples(f, g);
}

static void write_cases(FILE *f)
{
    fprintf(f, "  \"cases\": [\n");
    int first_case = 1;
    for (int c = 0; c < rpb_ncases; c++) {
        if (!case_selected(c))
            continue;
        fprintf(f, "%s    {\"case\": \"%s\", \"results\": {", first_case ? "" : ",\n", rpb_cases[c].name);
        first_case = 0;
        int fa = 1;
        for (int a = 0; a < nalloc; a++) {
            if (!res_alloc[a].active)
                continue;
            fprintf(f, "%s\n      \"%s\": {\"seed_round_ns\": [", fa ? "" : ",", allocators[a].name);
            fa = 0;
            for (int r = 0; r < rounds; r++) {
                fprintf(f, "%s", r ? ", " : "");
                num(f, fig_median(&seed_fig[a][c][r]));
            }
            fprintf(f, "], \"seed_round_ns_samples\": [");
            for (int r = 0; r < rounds; r++) {
                fprintf(f, "%s", r ? ", " : "");
                samples(f, &seed_fig[a][c][r]);
            }
            fprintf(f, "]");
            int first = 0;
            fig(f, &first, "seed_mean_ns", &seed_mean_fig[a][c]);
            fig(f, &first, "seed_last_over_first", &seed_flat_fig[a][c]);
            fig(f, &first, "churn_ns", &churn_fig[a][c]);
            fig(f, &first, "churn_p999_ns", &churn_p999_fig[a][c]);
            fig(f, &first, "memory_ratio", &memory_fig[a][c]);
            fprintf(f, "}");
        }
        fprintf(f, "}}");
    }
    fprintf(f, "\n  ],\n");
}

static void write_threads(FILE *f)
{
    for (int sc = SC_PAIRS; sc <= SC_PRODCONS; sc++) {
        int k = sc - SC_PAIRS;
        for (int which = 0; which < 2; which++) {
            fprintf(f, "  \"%s_%s\": {", scenario_names[sc], which == 0 ? "ops_per_s" : "cpu_ns_per_op");
            int fa = 1;
            for (int a = 0; a < nalloc; a++) {
                if (!alloc_usable(a, "malloc") || !scenario_on[sc])
                    continue;
                fprintf(f, "%s\"%s\": {", fa ? "" : ", ", allocators[a].name);
                fa = 0;
                int first = 1;
                for (int t = 0; t < nthreads_list; t++) {
                    char key[16];
                    snprintf(key, sizeof key, "%d", threads_list[t]);
                    fig(f, &first, key, which == 0 ? &threads_ops_fig[k][a][t] : &threads_cpu_fig[k][a][t]);
                }
                fprintf(f, "}");
            }
            fprintf(f, "},\n");
        }
    }
}

static void write_grow_programs(FILE *f)
{
    fprintf(f, "  \"grow_max_mib\": %ld,\n  \"grow\": {", grow_max_mib);
    for (int g = 0; g < NGROW; g++) {
        fprintf(f, "%s\"%s\": {", g ? ", " : "", grow_patterns[g]);
        int fa = 1;
        for (int a = 0; a < nalloc && scenario_on[SC_GROW]; a++) {
            if (!alloc_usable(a, NULL))
                continue;
            fprintf(f, "%s\"%s\": {", fa ? "" : ", ", allocators[a].name);
            fa = 0;
            int first = 1;
            fig(f, &first, "cpu_ms", &grow_ms_fig[a][g]);
            fig(f, &first, "reached_mib", &grow_mib_fig[a][g]);
            fprintf(f, "}");
        }
        fprintf(f, "}");
    }
    fprintf(f, "},\n  \"program\": {");
    for (int p = 0; p < rpb_nprograms && p < MAX_PROGRAMS; p++) {
        fprintf(f, "%s\n    \"%s\": {", p ? "," : "", rpb_programs[p].name);
        int fa = 1;
        for (int a = 0; a < nalloc && scenario_on[SC_PROGRAM]; a++) {
            if (!program_usable(a))
                continue;
            fprintf(f, "%s\"%s\": {", fa ? "" : ", ", allocators[a].name);
            fa = 0;
            int first = 1;
            fig(f, &first, "wall_s", &program_wall_fig[a][p]);
            fig(f, &first, "cpu_s", &program_cpu_fig[a][p]);
            fig(f, &first, "peak_rss_mib", &program_rss_fig[a][p]);
            fprintf(f, "}");
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n  }");
}

/* A grid figure of one row: medians [size][alignment], then the samples likewise. */
static void grid_fig(FILE *f, const char *key, rpb_fig (*g)[GRID_NALIGNS])
{
    for (int pass = 0; pass < 2; pass++) {
        fprintf(f, "%s\"%s%s\": [", pass ? ", " : "", key, pass ? "_samples" : "");
        for (int s = 0; s < GRID_NSIZES; s++) {
            fprintf(f, "%s[", s ? ", " : "");
            for (int a = 0; a < GRID_NALIGNS; a++) {
                fprintf(f, "%s", a ? ", " : "");
                if (pass)
                    samples(f, &g[s][a]);
                else
                    num(f, fig_median(&g[s][a]));
            }
            fprintf(f, "]");
        }
        fprintf(f, "]");
    }
}

static void write_grid(FILE *f)
{
    fprintf(f, "\"grid\": {\"sizes\": [");
    for (int s = 0; s < GRID_NSIZES; s++)
        fprintf(f, "%s%ld", s ? ", " : "", grid_sizes[s]);
    fprintf(f, "], \"alignments\": [");
    for (int g = 0; g < GRID_NALIGNS; g++)
        fprintf(f, "%s%ld", g ? ", " : "", grid_aligns[g]);
    fprintf(f, "], \"rows\": {");
    int fa = 1;
    for (int a = 0; a < nalloc; a++) {
        if (!grid_row(a))
            continue;
        fprintf(f, "%s\n    \"%s\": {", fa ? "" : ",", allocators[a].name);
        fa = 0;
        grid_fig(f, "churn_ns", grid_churn_fig[a]);
        fprintf(f, ", ");
        grid_fig(f, "round_ns", grid_round_fig[a]);
        fprintf(f, ", ");
        grid_fig(f, "last_over_first", grid_flat_fig[a]);
        fprintf(f, "}");
    }
    fprintf(f, "}}");
}

int write_json(const char *path, const char *machine, const char *when, const char *command)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"date\": \"%s\",\n  \"machine\": \"%s\",\n  \"command\": \"%s\",\n  \"scenarios\": [", when,
            machine, command);
    for (int sc = 0, first = 1; sc < SC_COUNT; sc++)
        if (scenario_on[sc]) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", scenario_names[sc]);
            first = 0;
        }
    fprintf(f, "],\n  \"reps\": {");
    for (int sc = 0; sc < SC_COUNT; sc++)
        fprintf(f, "%s\"%s\": %d", sc ? ", " : "", scenario_names[sc], reps_for(sc));
    fprintf(f, "},\n  \"rounds\": %d, \"per_round\": %d, \"churn_ops\": %ld, \"thread_ops\": %ld,\n", rounds,
            per_round, churn_ops, thread_ops);
    int first = 1;
    fprintf(f, "  ");
    fig(f, &first, "capture_ns", &capture_fig);
    fig(f, &first, "capture_fast_ns", &capture_fast_fig);
    fprintf(f, ",\n  \"allocators\": [");
    for (int a = 0; a < nalloc; a++)
        fprintf(f, "%s{\"name\": \"%s\", \"api\": \"%s\", \"options\": %s%s%s, \"active\": %s}", a ? ", " : "",
                allocators[a].name, allocators[a].api, allocators[a].options ? "\"" : "",
                allocators[a].options ? allocators[a].options : "null", allocators[a].options ? "\"" : "",
                res_alloc[a].active ? "true" : "false");
    fprintf(f, "],\n");
    write_cases(f);
    write_threads(f);
    write_grow_programs(f);
    if (scenario_on[SC_GRID]) {
        fprintf(f, ",\n  ");
        write_grid(f);
    }
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
