/* rpdump diff A B: what grew between two dumps, by allocation site.
 *
 * Sites are matched by their frames normalised to (module, offset in the module)
 * (site_groups.h), so two dumps of the same program, from one run or two, agree on every
 * site whatever ASLR did. Dumps of two different programs (their main executables' build-ids,
 * else paths, differ) are still compared, with a warning: their sites cannot match.
 * Memory: one group per distinct normalised stack of A and B, never per block. */
#define _GNU_SOURCE /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "site_groups.h"
#include "sites.h"
#include "text_out.h"

typedef struct differ {
    rpd_input *in[2];
    rpd_stack_table stacks[2];
    site_groups groups;
    site_stats *stats[2]; /* per group */
    size_t *group_of_stack[2];
} differ;

/* Adds the blocks of dump x into stats[x] by group. */
static int collect(differ *df, int x, const rpd_options *o, rpd_error *err)
{
    rpd_dump *d = &df->in[x]->dump;
    const rpd_stack_table *t = &df->stacks[x];
    site_stats *per_site = rpd_alloc(d, (t->count + SITE_FIRST_STACK) * sizeof *per_site, d->stacks->offset, err);
    if (!per_site || site_collect(d, t, o, per_site, err) != 0) {
        rpd_free(d, per_site, (t->count + SITE_FIRST_STACK) * sizeof *per_site);
        return -1;
    }
    for (size_t s = 0; s < t->count + SITE_FIRST_STACK; s++) {
        site_stats *into = &df->stats[x][site_group_of(df->group_of_stack[x], s)];
        into->blocks += per_site[s].blocks;
        into->bytes += per_site[s].bytes;
        into->usable += per_site[s].usable;
        into->block_bytes += per_site[s].block_bytes;
        into->samples += per_site[s].samples;
    }
    rpd_free(d, per_site, (t->count + SITE_FIRST_STACK) * sizeof *per_site);
    return 0;
}

static int64_t delta(uint64_t a, uint64_t b) { return b >= a ? (int64_t)(b - a) : -(int64_t)(a - b); }

static int compare_growth(const void *pa, const void *pb, void *arg)
{
    site_stats *const *stats = arg;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    int64_t dx = delta(stats[0][a].bytes, stats[1][a].bytes), dy = delta(stats[0][b].bytes, stats[1][b].bytes);
    if (dx != dy)
        return dx > dy ? -1 : 1;
    int64_t bx = delta(stats[0][a].blocks, stats[1][a].blocks), by = delta(stats[0][b].blocks, stats[1][b].blocks);
    if (bx != by)
        return bx > by ? -1 : 1;
    return a < b ? -1 : 1;
}

static void differ_free(differ *df)
{
    for (int x = 0; x < 2; x++) {
        free(df->group_of_stack[x]);
        free(df->stats[x]);
        rpd_stack_table_free(&df->stacks[x]);
    }
    site_groups_free(&df->groups);
}

/* Frames of group g as recorded in the dump it came from. */
static const uint64_t *group_frames(const differ *df, size_t g, unsigned *n, const rpd_dump **d)
{
    *d = &df->in[df->groups.groups[g].dump]->dump;
    return site_group_pcs(&df->groups, g, n);
}

static void json_group(json_out *j, const differ *df, size_t g, symbolizer *sym, const rpd_options *o)
{
    const site_group *sg = &df->groups.groups[g];
    const site_stats *a = &df->stats[0][g], *b = &df->stats[1][g];
    json_object_compact(j);
    if (g < SITE_FIRST_STACK) {
        json_kv_string(j, "site", g == SITE_NO_STACK ? "none" : "unknown");
    } else {
        json_kv_string(j, "site", "stack");
        json_kv_u64(j, "stack", sg->stack_id);
        json_kv_string(j, "stack_from", sg->dump ? "b" : "a");
    }
    json_kv_u64(j, "blocks_a", a->blocks);
    json_kv_u64(j, "blocks_b", b->blocks);
    json_kv_u64(j, "bytes_a", a->bytes);
    json_kv_u64(j, "bytes_b", b->bytes);
    json_kv_i64(j, "delta_blocks", delta(a->blocks, b->blocks));
    json_kv_i64(j, "delta_bytes", delta(a->bytes, b->bytes));
    if (g >= SITE_FIRST_STACK) {
        const rpd_dump *d;
        unsigned n;
        const uint64_t *frames = group_frames(df, g, &n, &d);
        site_json_frames(j, sym, d, frames, n, o);
    }
    json_object_end(j);
}

int cmd_diff(rpd_input *a, rpd_input *b, const rpd_options *o)
{
    differ df;
    memset(&df, 0, sizeof df);
    df.in[0] = a;
    df.in[1] = b;
    rpd_error err = {0, ""};
    const char *failed_path = a->path;
    int rc = rpd_stack_table_load(&df.stacks[0], &a->dump, 1, &err);
    if (rc == 0) {
        failed_path = b->path;
        rc = rpd_stack_table_load(&df.stacks[1], &b->dump, 1, &err);
    }
    if (rc == 0 && (site_groups_init(&df.groups) != 0 ||
                    site_groups_add(&df.groups, 0, &a->dump, &df.stacks[0], &df.group_of_stack[0]) != 0 ||
                    site_groups_add(&df.groups, 1, &b->dump, &df.stacks[1], &df.group_of_stack[1]) != 0 ||
                    !(df.stats[0] = calloc(df.groups.ngroups, sizeof(site_stats))) ||
                    !(df.stats[1] = calloc(df.groups.ngroups, sizeof(site_stats)))))
        rc = rpd_fail(&err, 0, "out of memory grouping the stacks");
    if (rc == 0) {
        failed_path = a->path;
        rc = collect(&df, 0, o, &err);
    }
    if (rc == 0) {
        failed_path = b->path;
        rc = collect(&df, 1, o, &err);
    }
    if (rc != 0) {
        differ_free(&df);
        return rpd_report_error(o, failed_path, &err);
    }

    char warning[700];
    int same_program = site_groups_same_program(&a->dump, &b->dump, warning, sizeof warning);
    if (!same_program)
        fprintf(stderr, "rpdump: warning: %s\n", warning);

    size_t ngroups = df.groups.ngroups;
    size_t *order = malloc((ngroups ? ngroups : 1) * sizeof *order);
    if (!order) {
        differ_free(&df);
        rpd_fail(&err, 0, "out of memory");
        return rpd_report_error(o, a->path, &err);
    }
    size_t n = 0;
    site_stats total[2];
    memset(total, 0, sizeof total);
    for (size_t i = 0; i < ngroups; i++) {
        for (int x = 0; x < 2; x++) {
            total[x].blocks += df.stats[x][i].blocks;
            total[x].bytes += df.stats[x][i].bytes;
        }
        int64_t db = delta(df.stats[0][i].bytes, df.stats[1][i].bytes);
        int64_t dn = delta(df.stats[0][i].blocks, df.stats[1][i].blocks);
        if (db > 0 || dn > 0 || (o->all && (db || dn)))
            order[n++] = i;
    }
    qsort_r(order, n, sizeof *order, compare_growth, df.stats);
    size_t shown = o->limit && o->limit < n ? (size_t)o->limit : n;

    symbolizer *sym = sym_new(o->symbolizer);
    for (size_t r = 0; r < shown; r++) {
        const rpd_dump *d;
        unsigned nf;
        const uint64_t *frames = group_frames(&df, order[r], &nf, &d);
        site_want_frames(sym, d, frames, nf, o);
    }
    sym_run(sym);

    if (o->json) {
        json_out j;
        json_init(&j, stdout);
        json_object(&j);
        json_key(&j, "a");
        json_object_compact(&j);
        rpd_json_dump_info(&j, &a->dump, a->path);
        json_object_end(&j);
        json_key(&j, "b");
        json_object_compact(&j);
        rpd_json_dump_info(&j, &b->dump, b->path);
        json_object_end(&j);
        rpd_json_program_check(&j, same_program, warning);
        json_kv_string(&j, "bytes_are", site_bytes_are(&b->dump, o));
        json_kv_u64(&j, "blocks_a", total[0].blocks);
        json_kv_u64(&j, "blocks_b", total[1].blocks);
        json_kv_u64(&j, "bytes_a", total[0].bytes);
        json_kv_u64(&j, "bytes_b", total[1].bytes);
        json_kv_i64(&j, "delta_bytes", delta(total[0].bytes, total[1].bytes));
        json_kv_u64(&j, "changed_sites", n);
        json_key(&j, "sites");
        json_array(&j);
        for (size_t r = 0; r < shown; r++)
            json_group(&j, &df, order[r], sym, o);
        json_array_end(&j);
        json_object_end(&j);
        json_finish(&j);
    } else {
        char x[32], y[32];
        rpd_text_dump_info(stdout, &a->dump, a->path);
        rpd_text_dump_info(stdout, &b->dump, b->path);
        if (warning[0])
            printf("warning: %s\n", warning);
        printf("live: %llu blocks, %s -> %llu blocks, %s (%+lld bytes)\n", (unsigned long long)total[0].blocks,
               text_size(x, sizeof x, total[0].bytes), (unsigned long long)total[1].blocks,
               text_size(y, sizeof y, total[1].bytes), (long long)delta(total[0].bytes, total[1].bytes));
        printf("%zu site%s %s\n", n, n == 1 ? "" : "s", o->all ? "changed" : "grew");
        for (size_t r = 0; r < shown; r++) {
            size_t g = order[r];
            const site_stats *sa = &df.stats[0][g], *sb = &df.stats[1][g];
            if (g < SITE_FIRST_STACK)
                printf("\n%s:", site_special_name(g));
            else
                printf("\nstack %u (of %s):", df.groups.groups[g].stack_id, df.groups.groups[g].dump ? "B" : "A");
            printf(" %+lld bytes, %+lld blocks (%llu blocks %s -> %llu blocks %s)\n",
                   (long long)delta(sa->bytes, sb->bytes), (long long)delta(sa->blocks, sb->blocks),
                   (unsigned long long)sa->blocks, text_size(x, sizeof x, sa->bytes), (unsigned long long)sb->blocks,
                   text_size(y, sizeof y, sb->bytes));
            const rpd_dump *d;
            unsigned nf;
            const uint64_t *frames = group_frames(&df, g, &nf, &d);
            site_print_frames(stdout, sym, d, frames, nf, o);
        }
        if (shown < n)
            printf("\n... %zu more sites (--limit 0 shows all)\n", n - shown);
    }
    sym_free(sym);
    free(order);
    differ_free(&df);
    return RPDUMP_OK;
}
