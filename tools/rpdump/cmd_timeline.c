/* rpdump timeline DUMP...: live memory across a series of dumps (from dump_signal,
 * dump_at_exit, periodic or peak dumps, or calls), like massif's snapshots read with
 * ms_print: a table of the live bytes and blocks of each dump with a bar, the peak, and the
 * sites that grew most from the first dump to the peak, with their bytes in every dump;
 * with -o FILE.svg, the chart (timeline_chart.c).
 *
 * Dumps are ordered by the time they record (seconds, and nanoseconds since format 1.2),
 * then by pid and sequence number, whatever the order of the arguments (a shell sorts
 * app.10.rpd before app.2.rpd). Sites are matched across dumps by their normalised frames
 * (site_groups.h), so dumps of several runs of one program line up too; dumps of different
 * programs get a warning. Each dump is read once; memory holds one entry per live site per
 * dump and one group per distinct stack, never per block. */
#include <stdlib.h>
#include <string.h>

#include "frame_label.h"
#include "site_groups.h"
#include "text_out.h"
#include "timeline.h"

#define BAR_CHARS 40

typedef struct tl_entry {
    size_t group;
    uint64_t bytes, blocks;
} tl_entry;

typedef struct tl_series {
    tl_entry *entries; /* the dump's live sites */
    size_t n;
} tl_series;

static double seconds_of(const rpd_dump *d)
{
    return (double)d->process.time +
           (d->process.time_ns == RPD_UNRECORDED_NS ? 0 : (double)d->process.time_ns / 1e9);
}

static int by_time(const void *a, const void *b)
{
    const rpd_input *x = *(rpd_input *const *)a, *y = *(rpd_input *const *)b;
    const rpd_process *p = &x->dump.process, *q = &y->dump.process;
    uint32_t pn = p->time_ns == RPD_UNRECORDED_NS ? 0 : p->time_ns;
    uint32_t qn = q->time_ns == RPD_UNRECORDED_NS ? 0 : q->time_ns;
    if (p->time != q->time)
        return p->time < q->time ? -1 : 1;
    if (pn != qn)
        return pn < qn ? -1 : 1;
    if (p->pid != q->pid)
        return p->pid < q->pid ? -1 : 1;
    if (p->sequence != q->sequence)
        return p->sequence < q->sequence ? -1 : 1;
    return x < y ? -1 : x > y; /* argument order */
}

/* Reads dump `index`: its sites into groups and series, its totals into point. */
static int read_dump(site_groups *g, size_t index, rpd_input *in, const rpd_options *o, tl_series *series,
                     timeline_point *point, rpd_error *err)
{
    rpd_dump *d = &in->dump;
    rpd_stack_table t;
    size_t *group_of_stack = NULL;
    site_stats *per_site = NULL;
    int rc = rpd_stack_table_load(&t, d, 1, err);
    size_t nsites = SITE_FIRST_STACK + t.count;
    if (rc == 0 && site_groups_add(g, index, d, &t, &group_of_stack) != 0)
        rc = rpd_fail(err, 0, "out of memory grouping the stacks");
    if (rc == 0) {
        per_site = rpd_alloc(d, nsites * sizeof *per_site, d->stacks->offset, err);
        rc = per_site ? site_collect(d, &t, o, per_site, err) : -1;
    }
    if (rc == 0) {
        size_t live = 0;
        for (size_t s = 0; s < nsites; s++)
            live += per_site[s].blocks != 0;
        series->entries = malloc((live ? live : 1) * sizeof *series->entries);
        if (!series->entries)
            rc = rpd_fail(err, 0, "out of memory");
    }
    if (rc == 0) {
        for (size_t s = 0; s < nsites; s++) {
            if (!per_site[s].blocks)
                continue;
            series->entries[series->n++] =
                (tl_entry){site_group_of(group_of_stack, s), per_site[s].bytes, per_site[s].blocks};
            point->bytes += per_site[s].bytes;
            point->blocks += per_site[s].blocks;
        }
        for (size_t h = 0; h < d->nheaps; h++)
            if (rpd_heap_selected(o, &d->heaps[h]))
                point->os_bytes += d->heaps[h].rec.os_bytes;
    }
    if (per_site)
        rpd_free(d, per_site, nsites * sizeof *per_site);
    free(group_of_stack);
    rpd_stack_table_free(&t);
    return rc;
}

/* Bytes of every group in one dump (groups repeated in a dump add up). */
static void dense_bytes(const tl_series *s, uint64_t *out, size_t ngroups)
{
    memset(out, 0, ngroups * sizeof *out);
    for (size_t i = 0; i < s->n; i++)
        out[s->entries[i].group] += s->entries[i].bytes;
}

typedef struct candidate {
    size_t group;
    int64_t growth;
    uint64_t at_peak;
} candidate;

static int by_growth(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->growth != y->growth)
        return x->growth > y->growth ? -1 : 1;
    if (x->at_peak != y->at_peak)
        return x->at_peak > y->at_peak ? -1 : 1;
    return x->group < y->group ? -1 : 1;
}

#define LABEL_FRAMES 24 /* frames compared to tell the top sites apart */
#define LABEL_POOL 32   /* the top sites that are told apart from each other */

/* The frame names of a group, innermost first (at most LABEL_FRAMES); returns how many. */
static unsigned frame_names(char names[][128], const site_groups *g, size_t group, rpd_input *const *sorted,
                            symbolizer *sym)
{
    unsigned n;
    const uint64_t *pcs = site_group_pcs(g, group, &n);
    const rpd_dump *d = group < SITE_FIRST_STACK ? NULL : &sorted[g->groups[group].dump]->dump;
    if (n > LABEL_FRAMES)
        n = LABEL_FRAMES;
    for (unsigned i = 0; i < n; i++) {
        frame_text t;
        sym_get(sym, d, pcs[i], &t);
        frame_label(names[i], sizeof names[i], &t, pcs[i]);
    }
    return n;
}

/* Names each shown site by two frames: its innermost ones, or, when other top sites share
 * its innermost frames (allocation wrappers: xmalloc, sqlite3Malloc...), the first two
 * past what they share, after "... < ". */
static void label_sites(timeline *tl, const site_groups *g, rpd_input *const *sorted, symbolizer *sym)
{
    size_t pool = tl->nsites < LABEL_POOL ? tl->nsites : LABEL_POOL;
    static char names[LABEL_POOL][LABEL_FRAMES][128];
    unsigned counts[LABEL_POOL];
    for (size_t k = 0; k < pool; k++)
        counts[k] = frame_names(names[k], g, tl->sites[k].group, sorted, sym);
    for (size_t k = 0; k < tl->nsites; k++) {
        timeline_site *s = &tl->sites[k];
        if (s->group < SITE_FIRST_STACK) {
            snprintf(s->label, sizeof s->label, "%s", site_special_name(s->group));
            continue;
        }
        char own[LABEL_FRAMES][128];
        unsigned n = k < pool ? counts[k] : frame_names(own, g, s->group, sorted, sym);
        char (*mine)[128] = k < pool ? names[k] : own;
        unsigned shared = 0;
        for (size_t j = 0; k < pool && j < pool; j++) {
            unsigned c = 0;
            while (j != k && c < n && c < counts[j] && !strcmp(mine[c], names[j][c]))
                c++;
            if (c > shared)
                shared = c;
        }
        unsigned start = shared + 2 > n ? (n > 2 ? n - 2 : 0) : shared;
        if (!n) {
            snprintf(s->label, sizeof s->label, "(empty stack)");
            continue;
        }
        snprintf(s->label, sizeof s->label, "%s%.90s%s%.90s", start ? "... < " : "", mine[start], start + 1 < n ? " < " : "",
                 start + 1 < n ? mine[start + 1] : "");
    }
}

static void timeline_free(timeline *tl)
{
    for (size_t k = 0; k < tl->nsites; k++) {
        free(tl->sites[k].bytes);
        free(tl->sites[k].blocks);
    }
    free(tl->sites);
    free(tl->points);
}

static const char *signed_size(char *buf, size_t len, int64_t v)
{
    char size[32];
    snprintf(buf, len, "%c%s", v < 0 ? '-' : '+', text_size(size, sizeof size, v < 0 ? 0 - (uint64_t)v : (uint64_t)v));
    return buf;
}

static void print_text(const timeline *tl, const site_groups *g, rpd_input *const *sorted, symbolizer *sym,
                       const rpd_options *o, const char *warning, const char *chart, double chart_height)
{
    size_t n = tl->npoints;
    const rpd_dump *first = &tl->points[0].in->dump;
    char a[32], b[32], c[32], clean[512];
    printf("timeline of %zu dump%s: %s (pid %llu", n, n == 1 ? "" : "s",
           text_clean(clean, sizeof clean, first->process.exe), (unsigned long long)first->process.pid);
    if (tl->points[n - 1].in->dump.process.pid != first->process.pid)
        printf(" to %llu", (unsigned long long)tl->points[n - 1].in->dump.process.pid);
    printf("), %s bytes\n", tl->bytes_are);
    if (warning[0])
        printf("warning: %s\n", warning);
    printf("\n%5s %10s %12s %10s %12s  %s\n", "dump", tl->by_time ? "seconds" : "", "live bytes", "blocks",
           "from the OS", "file");
    uint64_t top = tl->points[tl->peak].bytes;
    for (size_t i = 0; i < n; i++) {
        const timeline_point *p = &tl->points[i];
        char bar[BAR_CHARS + 1];
        size_t len = top ? (size_t)((double)p->bytes / (double)top * BAR_CHARS + 0.5) : 0;
        memset(bar, i == tl->peak ? '#' : '=', len);
        bar[len] = 0;
        char when[32] = "";
        if (tl->by_time)
            snprintf(when, sizeof when, "%.3f", p->elapsed);
        printf("%4zu%c %10s %12s %10llu %12s  %s\n      %s\n", i, i == tl->peak ? '*' : ' ', when,
               text_size(a, sizeof a, p->bytes), (unsigned long long)p->blocks, text_size(b, sizeof b, p->os_bytes),
               text_clean(clean, sizeof clean, p->in->path), bar);
    }
    const timeline_point *pk = &tl->points[tl->peak];
    printf("\npeak: %s live in %llu blocks at dump %zu", text_size(a, sizeof a, pk->bytes),
           (unsigned long long)pk->blocks, tl->peak);
    if (tl->by_time)
        printf(" (%.3f s)", pk->elapsed);
    printf("; first %s, last %s\n", text_size(b, sizeof b, tl->points[0].bytes),
           text_size(c, sizeof c, tl->points[n - 1].bytes));
    printf("\n%zu site%s grew most from the first dump to the peak:\n", tl->nsites, tl->nsites == 1 ? "" : "s");
    for (size_t k = 0; k < tl->nsites; k++) {
        const timeline_site *s = &tl->sites[k];
        if (s->group < SITE_FIRST_STACK)
            printf("\n#%zu %s: ", k + 1, site_special_name(s->group));
        else
            printf("\n#%zu stack %u (of dump %zu): ", k + 1, g->groups[s->group].stack_id, g->groups[s->group].dump);
        printf("%s to the peak (%s -> %s, %s at the end)\n", signed_size(a, sizeof a, s->growth),
               text_size(b, sizeof b, s->bytes[0]), text_size(c, sizeof c, s->bytes[tl->peak]),
               text_size((char[32]){0}, 32, s->bytes[n - 1]));
        printf("    bytes by dump:");
        for (size_t i = 0; i < n; i++)
            printf(" %s", text_size(a, sizeof a, s->bytes[i]));
        putchar('\n');
        unsigned nf;
        const uint64_t *pcs = site_group_pcs(g, s->group, &nf);
        site_print_frames(stdout, sym, &sorted[g->groups[s->group].dump]->dump, pcs, nf, o);
    }
    if (chart)
        printf("\nwrote %s: %u x %.0f pixels\n", text_clean(clean, sizeof clean, chart), o->width, chart_height);
}

static void print_json(const timeline *tl, const site_groups *g, rpd_input *const *sorted, symbolizer *sym,
                       const rpd_options *o, int same_program, const char *warning, double chart_height)
{
    size_t n = tl->npoints;
    json_out j;
    json_init(&j, stdout);
    json_object(&j);
    json_kv_string(&j, "bytes_are", tl->bytes_are);
    json_kv_bool(&j, "by_time", tl->by_time);
    rpd_json_program_check(&j, same_program, warning);
    json_key(&j, "dumps");
    json_array(&j);
    for (size_t i = 0; i < n; i++) {
        const timeline_point *p = &tl->points[i];
        json_object_compact(&j);
        rpd_json_dump_info(&j, &p->in->dump, p->in->path);
        json_kv_double(&j, "elapsed", p->elapsed);
        json_kv_u64(&j, "live_bytes", p->bytes);
        json_kv_u64(&j, "live_blocks", p->blocks);
        json_kv_u64(&j, "os_bytes", p->os_bytes);
        json_object_end(&j);
    }
    json_array_end(&j);
    json_key(&j, "peak");
    json_object_compact(&j);
    json_kv_u64(&j, "dump", tl->peak);
    json_kv_string(&j, "file", tl->points[tl->peak].in->path);
    json_kv_double(&j, "elapsed", tl->points[tl->peak].elapsed);
    json_kv_u64(&j, "live_bytes", tl->points[tl->peak].bytes);
    json_kv_u64(&j, "live_blocks", tl->points[tl->peak].blocks);
    json_object_end(&j);
    json_kv_u64(&j, "first_bytes", tl->points[0].bytes);
    json_kv_u64(&j, "last_bytes", tl->points[n - 1].bytes);
    json_key(&j, "sites");
    json_array(&j);
    for (size_t k = 0; k < tl->nsites; k++) {
        const timeline_site *s = &tl->sites[k];
        json_object_compact(&j);
        if (s->group < SITE_FIRST_STACK) {
            json_kv_string(&j, "site", s->group == SITE_NO_STACK ? "none" : "unknown");
        } else {
            json_kv_string(&j, "site", "stack");
            json_kv_u64(&j, "stack", g->groups[s->group].stack_id);
            json_kv_u64(&j, "stack_from", g->groups[s->group].dump);
        }
        json_kv_string(&j, "label", s->label);
        json_kv_i64(&j, "growth_bytes", s->growth);
        json_kv_u64(&j, "peak_bytes", s->bytes[tl->peak]);
        json_key(&j, "bytes");
        json_array_compact(&j);
        for (size_t i = 0; i < n; i++)
            json_u64(&j, s->bytes[i]);
        json_array_end(&j);
        json_key(&j, "blocks");
        json_array_compact(&j);
        for (size_t i = 0; i < n; i++)
            json_u64(&j, s->blocks[i]);
        json_array_end(&j);
        unsigned nf;
        const uint64_t *pcs = site_group_pcs(g, s->group, &nf);
        if (s->group >= SITE_FIRST_STACK)
            site_json_frames(&j, sym, &sorted[g->groups[s->group].dump]->dump, pcs, nf, o);
        json_object_end(&j);
    }
    json_array_end(&j);
    if (o->output) {
        json_kv_string(&j, "output", o->output);
        json_kv_u64(&j, "width", o->width);
        json_kv_u64(&j, "height", (uint64_t)chart_height);
    } else {
        json_key(&j, "output");
        json_null(&j);
    }
    json_object_end(&j);
    json_finish(&j);
}

int cmd_timeline(rpd_input *inputs, size_t n, const rpd_options *given)
{
    /* One measure for the whole series: when any release dump carries samples, every dump is
     * counted from its samples (none is then an estimate of nothing live), never blocks in some
     * and estimates in others. */
    rpd_options series_options = *given;
    const rpd_options *o = &series_options;
    for (size_t i = 0; i < n && series_options.from == RPD_FROM_AUTO; i++)
        if (site_from_samples(&inputs[i].dump, given))
            series_options.from = RPD_FROM_SAMPLES;
    rpd_input **sorted = malloc(n * sizeof *sorted);
    tl_series *series = calloc(n, sizeof *series);
    timeline tl;
    memset(&tl, 0, sizeof tl);
    tl.points = calloc(n, sizeof *tl.points);
    site_groups g;
    int rc = site_groups_init(&g);
    rpd_error err = {0, ""};
    const char *failed = inputs[0].path;
    if (!sorted || !series || !tl.points || rc != 0) {
        rc = rpd_fail(&err, 0, "out of memory");
    } else {
        for (size_t i = 0; i < n; i++)
            sorted[i] = &inputs[i];
        qsort(sorted, n, sizeof *sorted, by_time);
    }
    tl.npoints = n;
    tl.bytes_are = rc == 0 ? site_bytes_are(&sorted[0]->dump, o) : "usable";
    for (size_t i = 0; i < n && rc == 0; i++) {
        tl.points[i].in = sorted[i];
        tl.points[i].elapsed = seconds_of(&sorted[i]->dump) - seconds_of(&sorted[0]->dump);
        if (tl.points[i].elapsed > 0)
            tl.by_time = 1;
        failed = sorted[i]->path;
        rc = read_dump(&g, i, sorted[i], o, &series[i], &tl.points[i], &err);
        if (tl.points[i].bytes > tl.points[tl.peak].bytes)
            tl.peak = i;
    }

    /* The ranking: growth from the first dump to the peak, among the sites live at the peak
     * or in the first dump. */
    uint64_t *first = NULL, *at_peak = NULL;
    candidate *cand = NULL;
    size_t ncand = 0;
    if (rc == 0) {
        first = malloc(g.ngroups * sizeof *first);
        at_peak = malloc(g.ngroups * sizeof *at_peak);
        cand = malloc(g.ngroups * sizeof *cand);
        if (!first || !at_peak || !cand)
            rc = rpd_fail(&err, 0, "out of memory");
    }
    if (rc == 0) {
        dense_bytes(&series[0], first, g.ngroups);
        dense_bytes(&series[tl.peak], at_peak, g.ngroups);
        for (size_t k = 0; k < g.ngroups; k++)
            if (first[k] || at_peak[k])
                cand[ncand++] = (candidate){k, (int64_t)(at_peak[k] - first[k]), at_peak[k]};
        qsort(cand, ncand, sizeof *cand, by_growth);
        tl.nsites = o->limit && o->limit < ncand ? (size_t)o->limit : ncand;
        tl.sites = calloc(tl.nsites ? tl.nsites : 1, sizeof *tl.sites);
        rc = tl.sites ? 0 : rpd_fail(&err, 0, "out of memory");
    }
    for (size_t k = 0; k < tl.nsites && rc == 0; k++) {
        timeline_site *s = &tl.sites[k];
        s->group = cand[k].group;
        s->growth = cand[k].growth;
        s->bytes = calloc(n, sizeof *s->bytes);
        s->blocks = calloc(n, sizeof *s->blocks);
        if (!s->bytes || !s->blocks)
            rc = rpd_fail(&err, 0, "out of memory");
    }
    if (rc == 0 && tl.nsites) {
        /* each dump's entries into the shown sites' series: group -> shown index + 1 */
        size_t *slot = calloc(g.ngroups, sizeof *slot);
        if (!slot)
            rc = rpd_fail(&err, 0, "out of memory");
        for (size_t k = 0; slot && k < tl.nsites; k++)
            slot[tl.sites[k].group] = k + 1;
        for (size_t i = 0; slot && i < n; i++)
            for (size_t e = 0; e < series[i].n; e++) {
                size_t k = slot[series[i].entries[e].group];
                if (k) {
                    tl.sites[k - 1].bytes[i] += series[i].entries[e].bytes;
                    tl.sites[k - 1].blocks[i] += series[i].entries[e].blocks;
                }
            }
        free(slot);
    }
    free(first);
    free(at_peak);
    free(cand);
    for (size_t i = 0; series && i < n; i++)
        free(series[i].entries);
    free(series);

    if (rc != 0) {
        timeline_free(&tl);
        free(sorted);
        site_groups_free(&g);
        return rpd_report_error(o, failed, &err);
    }

    /* One program? Each dump against the first. */
    char warning[700] = "";
    int same_program = 1;
    for (size_t i = 1; i < n && same_program; i++)
        same_program = site_groups_same_program(&sorted[0]->dump, &sorted[i]->dump, warning, sizeof warning);
    if (!same_program)
        fprintf(stderr, "rpdump: warning: %s\n", warning);

    symbolizer *sym = sym_new(o->symbolizer);
    for (size_t k = 0; k < tl.nsites; k++) {
        unsigned nf;
        const uint64_t *pcs = site_group_pcs(&g, tl.sites[k].group, &nf);
        const rpd_dump *d = &sorted[g.groups[tl.sites[k].group].dump]->dump;
        for (unsigned i = 0; i < nf && i < (o->frames > LABEL_FRAMES ? o->frames : LABEL_FRAMES); i++)
            sym_want(sym, d, pcs[i]);
    }
    sym_run(sym);
    label_sites(&tl, &g, sorted, sym);

    double chart_height = 0;
    rc = RPDUMP_OK;
    if (o->output && timeline_chart_write(&tl, o, &chart_height) != 0)
        rc = RPDUMP_BAD_DUMP;
    if (rc == RPDUMP_OK) {
        if (o->json)
            print_json(&tl, &g, sorted, sym, o, same_program, warning, chart_height);
        else
            print_text(&tl, &g, sorted, sym, o, warning, o->output, chart_height);
    }
    sym_free(sym);
    timeline_free(&tl);
    free(sorted);
    site_groups_free(&g);
    return rc;
}
