#include "sites.h"

#include <math.h>
#include <string.h>

size_t site_of_block(const rpd_stack_table *t, const rpd_block *b)
{
    if (!b->alloc_stack)
        return SITE_NO_STACK;
    long i = rpd_stack_table_find(t, b->alloc_stack);
    return i < 0 ? SITE_UNKNOWN_STACK : SITE_FIRST_STACK + (size_t)i;
}

void site_add(site_stats *s, const rpd_dump *d, const rpd_block *b)
{
    s->blocks++;
    s->bytes += rpd_is_debug(d) ? b->requested : b->size;
    s->usable += b->size;
    s->block_bytes += b->block_size;
}

unsigned site_states(const rpd_options *o)
{
    return o->states ? o->states : STATE_BIT(RPD_STATE_USED);
}

int site_from_samples(const rpd_dump *d, const rpd_options *o)
{
    if (o->from == RPD_FROM_SAMPLES)
        return 1;
    return o->from == RPD_FROM_AUTO && rpd_has_samples(d) && !rpd_is_debug(d);
}

const char *site_bytes_are(const rpd_dump *d, const rpd_options *o)
{
    return site_from_samples(d, o) ? "estimated" : rpd_is_debug(d) ? "requested" : "usable";
}

/* Whether addr lies in a region of a heap --heap selects (any address without --heap). */
static int sample_selected(const rpd_dump *d, const rpd_options *o, uint64_t addr)
{
    if (!o->heap)
        return 1;
    for (size_t i = 0; i < d->nheaps; i++)
        if (rpd_heap_selected(o, &d->heaps[i]) && rpd_region_of(&d->heaps[i], addr) >= 0)
            return 1;
    return 0;
}

typedef struct sample_sink {
    const rpd_dump *d;
    const rpd_stack_table *t;
    const rpd_options *o;
    site_stats *stats;
} sample_sink;

static int add_sample(const rpd_sample_at *sa, void *arg)
{
    const sample_sink *k = arg;
    if (!sample_selected(k->d, k->o, sa->s.addr))
        return 0;
    long i = sa->s.stack ? rpd_stack_table_find(k->t, sa->s.stack) : -1;
    site_stats *s = &k->stats[!sa->s.stack ? SITE_NO_STACK : i < 0 ? SITE_UNKNOWN_STACK : SITE_FIRST_STACK + (size_t)i];
    double blocks, bytes;
    rpd_sample_weight(&sa->s, &blocks, &bytes);
    s->samples++;
    s->est_blocks += blocks;
    s->est_bytes += bytes;
    return 0;
}

static int collect_samples(rpd_dump *d, const rpd_stack_table *t, const rpd_options *o, site_stats *stats,
                           rpd_error *err)
{
    sample_sink k = {d, t, o, stats};
    if (rpd_samples_each(d, add_sample, &k, err) != 0)
        return -1;
    for (size_t i = 0; i < SITE_FIRST_STACK + t->count; i++) {
        if (!stats[i].samples)
            continue;
        stats[i].blocks = (uint64_t)llround(stats[i].est_blocks);
        stats[i].bytes = (uint64_t)llround(stats[i].est_bytes);
    }
    return 0;
}

int site_collect(rpd_dump *d, const rpd_stack_table *t, const rpd_options *o, site_stats *stats, rpd_error *err)
{
    if (site_from_samples(d, o))
        return collect_samples(d, t, o, stats, err);
    unsigned states = site_states(o);
    rpd_block_iter *it = rpd_alloc(d, sizeof *it, d->footer.table_offset, err);
    if (!it)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < d->nheaps && rc == 0; i++) {
        if (!rpd_heap_selected(o, &d->heaps[i]))
            continue;
        rpd_blocks_begin(it, d, &d->heaps[i]);
        rpd_block_at ba;
        while ((rc = rpd_blocks_next(it, &ba, err)) == 1)
            if (states & STATE_BIT(ba.b.state) && ba.b.state != RPD_STATE_SPAN && ba.b.state != RPD_STATE_FREE)
                site_add(&stats[site_of_block(t, &ba.b)], d, &ba.b);
    }
    rpd_free(d, it, sizeof *it);
    return rc < 0 ? -1 : 0;
}

int live_sites_load(live_sites *ls, rpd_dump *d, const rpd_options *o, rpd_error *err)
{
    memset(ls, 0, sizeof *ls);
    if (rpd_stack_table_load(&ls->stacks, d, 1, err) != 0)
        return -1;
    ls->nsites = SITE_FIRST_STACK + ls->stacks.count;
    ls->stats = rpd_alloc(d, ls->nsites * sizeof *ls->stats, d->stacks->offset, err);
    if (!ls->stats || site_collect(d, &ls->stacks, o, ls->stats, err) != 0)
        return -1;
    for (size_t i = 0; i < ls->nsites; i++) {
        const site_stats *s = &ls->stats[i];
        ls->live += s->blocks != 0;
        ls->total.blocks += s->blocks;
        ls->total.bytes += s->bytes;
        ls->total.usable += s->usable;
        ls->total.block_bytes += s->block_bytes;
        ls->total.samples += s->samples;
    }
    return 0;
}

void live_sites_free(live_sites *ls)
{
    rpd_dump *d = ls->stacks.d;
    if (d && ls->stats)
        rpd_free(d, ls->stats, ls->nsites * sizeof *ls->stats);
    rpd_stack_table_free(&ls->stacks);
    memset(ls, 0, sizeof *ls);
}

const uint64_t *live_sites_frames(const live_sites *ls, size_t site, unsigned *n)
{
    *n = 0;
    if (site < SITE_FIRST_STACK || site >= ls->nsites)
        return NULL;
    return rpd_stack_frames(&ls->stacks, site - SITE_FIRST_STACK, n);
}

uint32_t live_sites_id(const live_sites *ls, size_t site)
{
    return site < SITE_FIRST_STACK || site >= ls->nsites ? 0 : ls->stacks.ids[site - SITE_FIRST_STACK];
}

const char *site_special_name(size_t site)
{
    return site == SITE_NO_STACK ? "(no stack)" : site == SITE_UNKNOWN_STACK ? "(unknown stack)" : "";
}

static unsigned shown_frames(unsigned n, const rpd_options *o) { return o->frames < n ? o->frames : n; }

void site_want_frames(symbolizer *sym, const rpd_dump *d, const uint64_t *frames, unsigned n, const rpd_options *o)
{
    for (unsigned i = 0; i < shown_frames(n, o); i++)
        sym_want(sym, d, frames[i]);
}

void site_print_frames(FILE *f, symbolizer *sym, const rpd_dump *d, const uint64_t *frames, unsigned n,
                       const rpd_options *o)
{
    for (unsigned i = 0; i < shown_frames(n, o); i++) {
        frame_text t;
        sym_get(sym, d, frames[i], &t);
        fputs("      ", f);
        sym_print_frame(f, i, frames[i], &t);
    }
    if (shown_frames(n, o) < n)
        fprintf(f, "      ... %u more frames\n", n - shown_frames(n, o));
}

void site_json_frames(json_out *j, symbolizer *sym, const rpd_dump *d, const uint64_t *frames, unsigned n,
                      const rpd_options *o)
{
    json_key(j, "frames");
    json_array_compact(j);
    for (unsigned i = 0; i < shown_frames(n, o); i++) {
        frame_text t;
        sym_get(sym, d, frames[i], &t);
        sym_json_frame(j, frames[i], &t);
    }
    json_array_end(j);
}
