/* rpdump sites: allocation sites by live bytes and block count. Memory: one row per stack of
 * the dump's stack section (plus two special rows), never per block. */
#include <stdlib.h>

#include "sites.h"
#include "text_out.h"

typedef struct ranked {
    size_t site;
    const site_stats *s;
} ranked;

static int compare_ranked(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->s->bytes != y->s->bytes)
        return x->s->bytes > y->s->bytes ? -1 : 1;
    if (x->s->blocks != y->s->blocks)
        return x->s->blocks > y->s->blocks ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

int cmd_sites(rpd_input *in, const rpd_options *o)
{
    rpd_dump *d = &in->dump;
    rpd_error err = {0, ""};
    rpd_stack_table t;
    site_stats *stats = NULL;
    ranked *order = NULL;
    size_t nsites = 0, nranked = 0;
    int rc = rpd_stack_table_load(&t, d, 1, &err);
    if (rc == 0) {
        nsites = SITE_FIRST_STACK + t.count;
        stats = rpd_alloc(d, nsites * sizeof *stats, d->stacks->offset, &err);
        order = rpd_alloc(d, nsites * sizeof *order, d->stacks->offset, &err);
        rc = stats && order ? site_collect(d, &t, o, stats, &err) : -1;
    }
    if (rc != 0) {
        rpd_free(d, stats, nsites * sizeof *stats);
        rpd_free(d, order, nsites * sizeof *order);
        rpd_stack_table_free(&t);
        return rpd_report_error(o, in->path, &err);
    }
    site_stats total = {0, 0, 0, 0};
    for (size_t i = 0; i < nsites; i++) {
        if (!stats[i].blocks)
            continue;
        order[nranked].site = i;
        order[nranked++].s = &stats[i];
        total.blocks += stats[i].blocks;
        total.bytes += stats[i].bytes;
        total.usable += stats[i].usable;
        total.block_bytes += stats[i].block_bytes;
    }
    qsort(order, nranked, sizeof *order, compare_ranked);
    size_t shown = o->limit && o->limit < nranked ? (size_t)o->limit : nranked;

    symbolizer *sym = sym_new(o->symbolizer);
    for (size_t r = 0; r < shown; r++) {
        if (order[r].site < SITE_FIRST_STACK)
            continue;
        unsigned n;
        const uint64_t *frames = rpd_stack_frames(&t, order[r].site - SITE_FIRST_STACK, &n);
        site_want_frames(sym, d, frames, n, o);
    }
    sym_run(sym);

    if (o->json) {
        json_out j;
        json_init(&j, stdout);
        json_object(&j);
        rpd_json_dump_info(&j, d, in->path);
        json_kv_string(&j, "bytes_are", rpd_is_debug(d) ? "requested" : "usable");
        json_kv_u64(&j, "total_sites", nranked);
        json_kv_u64(&j, "total_blocks", total.blocks);
        json_kv_u64(&j, "total_bytes", total.bytes);
        json_key(&j, "sites");
        json_array(&j);
        for (size_t r = 0; r < shown; r++) {
            size_t site = order[r].site;
            const site_stats *s = order[r].s;
            json_object_compact(&j);
            if (site >= SITE_FIRST_STACK)
                json_kv_u64(&j, "stack", t.ids[site - SITE_FIRST_STACK]);
            else
                json_kv_string(&j, "stack", site == SITE_NO_STACK ? "none" : "unknown");
            json_kv_u64(&j, "blocks", s->blocks);
            json_kv_u64(&j, "bytes", s->bytes);
            json_kv_u64(&j, "usable_bytes", s->usable);
            json_kv_u64(&j, "block_bytes", s->block_bytes);
            if (site >= SITE_FIRST_STACK) {
                unsigned n;
                const uint64_t *frames = rpd_stack_frames(&t, site - SITE_FIRST_STACK, &n);
                site_json_frames(&j, sym, d, frames, n, o);
            }
            json_object_end(&j);
        }
        json_array_end(&j);
        json_object_end(&j);
        json_finish(&j);
    } else {
        char a[32], b[32];
        rpd_text_dump_info(stdout, d, in->path);
        printf("%zu sites, %llu blocks, %s %s (by %s bytes)\n", nranked, (unsigned long long)total.blocks,
               text_size(a, sizeof a, total.bytes), rpd_is_debug(d) ? "requested" : "usable",
               rpd_is_debug(d) ? "requested" : "usable");
        for (size_t r = 0; r < shown; r++) {
            size_t site = order[r].site;
            const site_stats *s = order[r].s;
            if (site >= SITE_FIRST_STACK)
                printf("\nstack %u: %llu blocks, %s (%s usable, %s with metadata)\n", t.ids[site - SITE_FIRST_STACK],
                       (unsigned long long)s->blocks, text_size(a, sizeof a, s->bytes),
                       text_size(b, sizeof b, s->usable), text_size((char[32]){0}, 32, s->block_bytes));
            else
                printf("\n%s: %llu blocks, %s (%s usable)\n", site_special_name(site), (unsigned long long)s->blocks,
                       text_size(a, sizeof a, s->bytes), text_size(b, sizeof b, s->usable));
            if (site >= SITE_FIRST_STACK) {
                unsigned n;
                const uint64_t *frames = rpd_stack_frames(&t, site - SITE_FIRST_STACK, &n);
                site_print_frames(stdout, sym, d, frames, n, o);
            }
        }
        if (shown < nranked)
            printf("\n... %zu more sites (--limit 0 shows all)\n", nranked - shown);
    }
    sym_free(sym);
    rpd_free(d, stats, nsites * sizeof *stats);
    rpd_free(d, order, nsites * sizeof *order);
    rpd_stack_table_free(&t);
    return RPDUMP_OK;
}
