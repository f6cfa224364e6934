#include "sites.h"

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

int site_collect(rpd_dump *d, const rpd_stack_table *t, const rpd_options *o, site_stats *stats, rpd_error *err)
{
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
