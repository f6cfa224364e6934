/* rpdump sites: allocation sites by live bytes and block count; with --folded, the live
 * bytes by stack as folded stacks (flame_tree.h). Memory: one row per stack of the dump's
 * stack section (plus two special rows), never per block. */
#include <stdlib.h>

#include "flame_tree.h"
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
    live_sites ls;
    ranked *order = NULL;
    size_t nranked = 0;
    int rc = live_sites_load(&ls, d, o, &err);
    if (rc == 0 && o->folded) {
        rc = folded_write(stdout, d, &ls, o, &err);
        live_sites_free(&ls);
        return rc == 0 ? RPDUMP_OK : rpd_report_error(o, in->path, &err);
    }
    if (rc == 0) {
        order = rpd_alloc(d, ls.nsites * sizeof *order, d->stacks->offset, &err);
        rc = order ? 0 : -1;
    }
    if (rc != 0) {
        live_sites_free(&ls);
        return rpd_report_error(o, in->path, &err);
    }
    const site_stats *stats = ls.stats;
    const site_stats total = ls.total;
    for (size_t i = 0; i < ls.nsites; i++) {
        if (!stats[i].blocks)
            continue;
        order[nranked].site = i;
        order[nranked++].s = &stats[i];
    }
    qsort(order, nranked, sizeof *order, compare_ranked);
    size_t shown = o->limit && o->limit < nranked ? (size_t)o->limit : nranked;

    symbolizer *sym = sym_new(o->symbolizer);
    for (size_t r = 0; r < shown; r++) {
        unsigned n;
        const uint64_t *frames = live_sites_frames(&ls, order[r].site, &n);
        site_want_frames(sym, d, frames, n, o);
    }
    sym_run(sym);

    if (o->json) {
        json_out j;
        json_init(&j, stdout);
        json_object(&j);
        rpd_json_dump_info(&j, d, in->path);
        json_kv_string(&j, "bytes_are", site_bytes_are(d, o));
        json_kv_string(&j, "from", site_from_samples(d, o) ? "samples" : "blocks");
        json_kv_u64(&j, "total_samples", total.samples);
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
                json_kv_u64(&j, "stack", live_sites_id(&ls, site));
            else
                json_kv_string(&j, "stack", site == SITE_NO_STACK ? "none" : "unknown");
            json_kv_u64(&j, "blocks", s->blocks);
            json_kv_u64(&j, "bytes", s->bytes);
            json_kv_u64(&j, "usable_bytes", s->usable);
            json_kv_u64(&j, "block_bytes", s->block_bytes);
            json_kv_u64(&j, "samples", s->samples);
            if (site >= SITE_FIRST_STACK) {
                unsigned n;
                const uint64_t *frames = live_sites_frames(&ls, site, &n);
                site_json_frames(&j, sym, d, frames, n, o);
            }
            json_object_end(&j);
        }
        json_array_end(&j);
        json_object_end(&j);
        json_finish(&j);
    } else {
        char a[32], b[32];
        int sampled = site_from_samples(d, o);
        rpd_text_dump_info(stdout, d, in->path);
        if (sampled)
            printf("%zu sites, ~%llu blocks, ~%s (estimated from %llu samples)\n", nranked,
                   (unsigned long long)total.blocks, text_size(a, sizeof a, total.bytes),
                   (unsigned long long)total.samples);
        else
            printf("%zu sites, %llu blocks, %s %s (by %s bytes)\n", nranked, (unsigned long long)total.blocks,
                   text_size(a, sizeof a, total.bytes), site_bytes_are(d, o), site_bytes_are(d, o));
        for (size_t r = 0; r < shown; r++) {
            size_t site = order[r].site;
            const site_stats *s = order[r].s;
            if (site >= SITE_FIRST_STACK)
                printf("\nstack %u: ", live_sites_id(&ls, site));
            else
                printf("\n%s: ", site_special_name(site));
            if (sampled)
                printf("~%llu blocks, ~%s (from %llu sample%s)\n", (unsigned long long)s->blocks,
                       text_size(a, sizeof a, s->bytes), (unsigned long long)s->samples, s->samples == 1 ? "" : "s");
            else if (site >= SITE_FIRST_STACK)
                printf("%llu blocks, %s (%s usable, %s with metadata)\n", (unsigned long long)s->blocks,
                       text_size(a, sizeof a, s->bytes), text_size(b, sizeof b, s->usable),
                       text_size((char[32]){0}, 32, s->block_bytes));
            else
                printf("%llu blocks, %s (%s usable)\n", (unsigned long long)s->blocks, text_size(a, sizeof a, s->bytes),
                       text_size(b, sizeof b, s->usable));
            unsigned n;
            const uint64_t *frames = live_sites_frames(&ls, site, &n);
            site_print_frames(stdout, sym, d, frames, n, o);
        }
        if (shown < nranked)
            printf("\n... %zu more sites (--limit 0 shows all)\n", nranked - shown);
    }
    sym_free(sym);
    rpd_free(d, order, ls.nsites * sizeof *order);
    live_sites_free(&ls);
    return RPDUMP_OK;
}
