/* rpdump summary: totals, per-region use, free-space classes, fragmentation, quarantine, and
 * the heap profiler's samples.
 * One streaming pass over each heap's blocks; memory is per region and per class, never per
 * block. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rpdump.h"
#include "text_out.h"

typedef struct usage {
    uint64_t live_blocks, live_bytes, live_usable, live_requested; /* state used */
    uint64_t quarantined_blocks, quarantined_bytes;                /* usable bytes */
    uint64_t free_blocks, free_bytes, largest_free;
    uint64_t span_free_blocks, span_free_bytes, page_free_blocks, page_free_bytes;
    uint64_t decommitted_bytes;
    uint64_t spans, span_bytes, large_blocks;
} usage;

typedef struct class_use {
    uint64_t blocks, bytes;
} class_use;

static void add_block(usage *u, const rpd_block *b)
{
    switch (b->state) {
    case RPD_STATE_USED:
        u->live_blocks++;
        u->live_bytes += b->block_size;
        u->live_usable += b->size;
        u->live_requested += b->requested;
        if (b->tier == RPD_TIER_PAGE)
            u->large_blocks++;
        break;
    case RPD_STATE_QUARANTINED:
        u->quarantined_blocks++;
        u->quarantined_bytes += b->size;
        if (b->tier == RPD_TIER_PAGE)
            u->large_blocks++;
        break;
    case RPD_STATE_FREE:
        u->free_blocks++;
        u->free_bytes += b->block_size;
        if (b->block_size > u->largest_free)
            u->largest_free = b->block_size;
        if (b->tier == RPD_TIER_SPAN) {
            u->span_free_blocks++;
            u->span_free_bytes += b->block_size;
        } else {
            u->page_free_blocks++;
            u->page_free_bytes += b->block_size;
            if (b->flags & RPD_BLOCK_DECOMMITTED)
                u->decommitted_bytes += b->block_size;
        }
        break;
    case RPD_STATE_SPAN:
        u->spans++;
        u->span_bytes += b->block_size;
        break;
    }
}

typedef struct heap_summary {
    usage total;
    usage *regions;   /* per region */
    class_use *classes; /* per class of the heap (sorted as in rpd_heap_info) */
} heap_summary;

static int scan_heap(rpd_input *in, const rpd_heap_info *h, heap_summary *s, rpd_error *err)
{
    rpd_dump *d = &in->dump;
    s->regions = rpd_alloc(d, h->nregions * sizeof *s->regions, h->regions_sec->offset, err);
    s->classes = rpd_alloc(d, h->nclasses * sizeof *s->classes, h->classes_sec->offset, err);
    rpd_block_iter *it = rpd_alloc(d, sizeof *it, h->blocks_sec->offset, err);
    if (!s->regions || !s->classes || !it) {
        rpd_free(d, it, sizeof *it);
        return -1;
    }
    rpd_blocks_begin(it, d, h);
    rpd_block_at ba;
    int rc;
    while ((rc = rpd_blocks_next(it, &ba, err)) == 1) {
        add_block(&s->total, &ba.b);
        add_block(&s->regions[ba.b.region], &ba.b);
        if (ba.b.state == RPD_STATE_FREE) {
            long k = rpd_class_of(h, ba.b.tier, ba.b.block_size);
            if (k >= 0) {
                s->classes[k].blocks++;
                s->classes[k].bytes += ba.b.block_size;
            }
        }
    }
    rpd_free(d, it, sizeof *it);
    return rc;
}

static void free_summary(rpd_dump *d, const rpd_heap_info *h, heap_summary *s)
{
    rpd_free(d, s->regions, h->nregions * sizeof *s->regions);
    rpd_free(d, s->classes, h->nclasses * sizeof *s->classes);
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_usage_free(json_out *j, const usage *u)
{
    json_kv_u64(j, "blocks", u->free_blocks);
    json_kv_u64(j, "bytes", u->free_bytes);
    json_kv_u64(j, "largest", u->largest_free);
    json_kv_double(j, "fragmentation", text_fragmentation(u->largest_free, u->free_bytes));
}

static void json_heap(json_out *j, const rpd_dump *d, const rpd_heap_info *h, const heap_summary *s)
{
    const rpd_heap *r = &h->rec;
    const usage *u = &s->total;
    json_object(j);
    json_kv_string(j, "name", r->name);
    json_kv_hex(j, "address", r->address);
    json_kv_bool(j, "complete", !(r->dump_flags & RPD_HEAP_WALK_INCOMPLETE));
    if (r->dump_flags & RPD_HEAP_WALK_INCOMPLETE)
        json_kv_string(j, "incomplete_reason", r->note);
    json_key(j, "live");
    json_object_compact(j);
    json_kv_u64(j, "blocks", u->live_blocks);
    json_kv_u64(j, "bytes", u->live_bytes);
    json_kv_u64(j, "usable_bytes", u->live_usable);
    if (rpd_is_debug(d))
        json_kv_u64(j, "requested_bytes", u->live_requested);
    json_object_end(j);
    json_key(j, "free");
    json_object_compact(j);
    json_usage_free(j, u);
    json_kv_u64(j, "span_blocks", u->span_free_blocks);
    json_kv_u64(j, "span_bytes", u->span_free_bytes);
    json_kv_u64(j, "page_blocks", u->page_free_blocks);
    json_kv_u64(j, "page_bytes", u->page_free_bytes);
    json_kv_u64(j, "decommitted_bytes", u->decommitted_bytes);
    json_object_end(j);
    json_key(j, "quarantine");
    json_object_compact(j);
    json_kv_bool(j, "enabled", h->quarantine.enabled != 0);
    json_kv_u64(j, "blocks", u->quarantined_blocks);
    json_kv_u64(j, "bytes", u->quarantined_bytes);
    json_kv_u64(j, "limit_bytes", h->quarantine.limit_bytes);
    json_object_end(j);
    json_key(j, "spans");
    json_object_compact(j);
    json_kv_u64(j, "count", u->spans);
    json_kv_u64(j, "bytes", u->span_bytes);
    json_object_end(j);
    json_kv_u64(j, "large_blocks", u->large_blocks);
    json_key(j, "counters");
    json_object_compact(j);
    json_kv_u64(j, "blocks_in_use", r->blocks_in_use);
    json_kv_u64(j, "bytes_in_use", r->bytes_in_use);
    json_kv_u64(j, "bytes_usable", r->bytes_usable);
    json_kv_u64(j, "blocks_free", r->blocks_free);
    json_kv_u64(j, "bytes_free", r->bytes_free);
    json_kv_u64(j, "largest_free", r->largest_free);
    json_kv_u64(j, "os_bytes", r->os_bytes);
    json_kv_u64(j, "os_bytes_peak", r->os_bytes_peak);
    json_kv_u64(j, "os_released", r->os_released);
    json_kv_u64(j, "alloc_calls", r->alloc_calls);
    json_kv_u64(j, "free_calls", r->free_calls);
    json_kv_u64(j, "blocks_examined", r->blocks_examined);
    json_kv_u64(j, "max_examined", r->max_examined);
    json_object_end(j);
    json_key(j, "config");
    json_object_compact(j);
    json_kv_u64(j, "large_threshold", r->large_threshold);
    json_kv_u64(j, "retain_bytes", r->retain_bytes);
    if (r->purge_delay_ms != RPD_UNRECORDED)
        json_kv_u64(j, "purge_delay_ms", r->purge_delay_ms); /* absent from 1.0 dumps */
    else
        json_key(j, "purge_delay_ms"), json_null(j);
    json_kv_u64(j, "max_bytes", r->max_bytes);
    json_kv_u64(j, "flags", r->config_flags);
    json_object_end(j);
    json_key(j, "regions");
    json_array(j);
    for (size_t i = 0; i < h->nregions; i++) {
        const rpd_region *g = &h->regions[i];
        const usage *ru = &s->regions[i];
        json_object_compact(j);
        json_kv_u64(j, "index", i);
        json_kv_string(j, "kind", rpd_region_kind_name(g->kind));
        json_kv_hex(j, "base", g->base);
        json_kv_u64(j, "pages", g->pages);
        json_kv_u64(j, "bytes", g->pages * 4096);
        json_kv_u64(j, "live_blocks", ru->live_blocks);
        json_kv_u64(j, "live_bytes", ru->live_bytes);
        json_kv_u64(j, "quarantined_bytes", ru->quarantined_bytes);
        json_kv_u64(j, "free_blocks", ru->free_blocks);
        json_kv_u64(j, "free_bytes", ru->free_bytes);
        json_kv_u64(j, "largest_free", ru->largest_free);
        json_kv_double(j, "fragmentation", text_fragmentation(ru->largest_free, ru->free_bytes));
        json_object_end(j);
    }
    json_array_end(j);
    json_key(j, "free_classes");
    json_array(j);
    for (size_t i = 0; i < h->nclasses; i++) {
        const rpd_class *c = &h->classes[i];
        if (!s->classes[i].blocks && !c->blocks)
            continue;
        json_object_compact(j);
        json_kv_string(j, "tier", rpd_tier_name(c->tier));
        json_kv_u64(j, "class", c->index);
        json_kv_u64(j, "min_bytes", c->min_bytes);
        json_kv_u64(j, "max_bytes", c->max_bytes);
        json_kv_u64(j, "blocks", s->classes[i].blocks);
        json_kv_u64(j, "bytes", s->classes[i].bytes);
        json_kv_u64(j, "counted_blocks", c->blocks);
        json_object_end(j);
    }
    json_array_end(j);
    json_object_end(j);
}

/* ---- text ------------------------------------------------------------------------------- */

static void text_heap(FILE *f, const rpd_dump *d, const rpd_heap_info *h, const heap_summary *s)
{
    const rpd_heap *r = &h->rec;
    const usage *u = &s->total;
    char name[RPD_NAME_BYTES], a[32], b[32], c[32], e[32];
    fprintf(f, "\nheap '%s' at 0x%llx\n", text_clean(name, sizeof name, r->name), (unsigned long long)r->address);
    if (r->dump_flags & RPD_HEAP_WALK_INCOMPLETE) {
        char note[RPD_NOTE_BYTES];
        fprintf(f, "  INCOMPLETE: the writer stopped walking the heap: %s\n", text_clean(note, sizeof note, r->note));
    }
    fprintf(f, "  live         %llu blocks, %s in use (%s usable", (unsigned long long)u->live_blocks,
            text_size(a, sizeof a, u->live_bytes), text_size(b, sizeof b, u->live_usable));
    if (rpd_is_debug(d))
        fprintf(f, ", %s requested", text_size(c, sizeof c, u->live_requested));
    fprintf(f, ")\n");
    fprintf(f, "  free         %llu blocks, %s (spans: %llu blocks %s; pages: %llu blocks %s, %s returned to the OS)\n",
            (unsigned long long)u->free_blocks, text_size(a, sizeof a, u->free_bytes),
            (unsigned long long)u->span_free_blocks, text_size(b, sizeof b, u->span_free_bytes),
            (unsigned long long)u->page_free_blocks, text_size(c, sizeof c, u->page_free_bytes),
            text_size(e, sizeof e, u->decommitted_bytes));
    fprintf(f, "  largest free %s; fragmentation %.3f (1 - largest free / total free)\n",
            text_size(a, sizeof a, u->largest_free), text_fragmentation(u->largest_free, u->free_bytes));
    if (h->quarantine.enabled)
        fprintf(f, "  quarantine   %llu blocks, %s (limit %s)\n", (unsigned long long)u->quarantined_blocks,
                text_size(a, sizeof a, u->quarantined_bytes), text_size(b, sizeof b, h->quarantine.limit_bytes));
    else
        fprintf(f, "  quarantine   none (release flavour)\n");
    fprintf(f, "  spans        %llu (%s); large blocks %llu\n", (unsigned long long)u->spans,
            text_size(a, sizeof a, u->span_bytes), (unsigned long long)u->large_blocks);
    fprintf(f, "  OS           %s mapped (peak %s), %s released; %llu allocations, %llu frees\n",
            text_size(a, sizeof a, r->os_bytes), text_size(b, sizeof b, r->os_bytes_peak),
            text_size(c, sizeof c, r->os_released), (unsigned long long)r->alloc_calls,
            (unsigned long long)r->free_calls);
    fprintf(f, "  regions\n    %-4s %-6s %-18s %10s %10s %10s %10s %6s\n", "#", "kind", "base", "size", "live", "free",
            "largest", "frag");
    for (size_t i = 0; i < h->nregions; i++) {
        const rpd_region *g = &h->regions[i];
        const usage *ru = &s->regions[i];
        fprintf(f, "    %-4zu %-6s 0x%-16llx %10s %10s %10s %10s %6.3f\n", i, rpd_region_kind_name(g->kind),
                (unsigned long long)g->base, text_size(a, sizeof a, g->pages * 4096),
                text_size(b, sizeof b, ru->live_bytes + ru->quarantined_bytes), text_size(c, sizeof c, ru->free_bytes),
                text_size(e, sizeof e, ru->largest_free), text_fragmentation(ru->largest_free, ru->free_bytes));
    }
    fprintf(f, "  free-space classes\n    %-5s %-6s %-24s %10s %10s\n", "tier", "class", "block sizes", "blocks", "bytes");
    for (size_t i = 0; i < h->nclasses; i++) {
        const rpd_class *k = &h->classes[i];
        if (!s->classes[i].blocks)
            continue;
        char range[64];
        if (k->min_bytes == k->max_bytes)
            snprintf(range, sizeof range, "%s", text_size(a, sizeof a, k->min_bytes));
        else
            snprintf(range, sizeof range, "%s .. %s", text_size(a, sizeof a, k->min_bytes),
                     text_size(b, sizeof b, k->max_bytes));
        fprintf(f, "    %-5s %-6u %-24s %10llu %10s\n", rpd_tier_name(k->tier), k->index, range,
                (unsigned long long)s->classes[i].blocks, text_size(c, sizeof c, s->classes[i].bytes));
    }
}

/* The heap profiler's samples in the dump: how many, what they stand for, their rates. */
typedef struct sample_summary {
    uint64_t count, outside; /* outside: in no region of the dumped heaps, nor in slabs */
    uint64_t slabs;          /* in the malloc drop-in's slabs (RPD_SAMPLE_SLAB) */
    double blocks, bytes;
    uint64_t min_rate, max_rate;
} sample_summary;

typedef struct sample_scan {
    const rpd_dump *d;
    sample_summary *ss;
} sample_scan;

static int add_sample(const rpd_sample_at *sa, void *arg)
{
    const sample_scan *c = arg;
    sample_summary *ss = c->ss;
    double blocks, bytes;
    rpd_sample_weight(&sa->s, &blocks, &bytes);
    ss->blocks += blocks;
    ss->bytes += bytes;
    if (!ss->count++ || sa->s.rate < ss->min_rate)
        ss->min_rate = sa->s.rate;
    if (sa->s.rate > ss->max_rate)
        ss->max_rate = sa->s.rate;
    if (sa->s.flags & RPD_SAMPLE_SLAB) {
        ss->slabs++;
        return 0;
    }
    int inside = 0;
    for (size_t h = 0; h < c->d->nheaps && !inside; h++)
        inside = rpd_region_of(&c->d->heaps[h], sa->s.addr) >= 0;
    ss->outside += !inside;
    return 0;
}

static int scan_samples(rpd_dump *d, sample_summary *ss, rpd_error *err)
{
    memset(ss, 0, sizeof *ss);
    sample_scan c = {d, ss};
    return rpd_samples_each(d, add_sample, &c, err);
}

static void json_samples(json_out *j, const rpd_dump *d, const sample_summary *ss)
{
    json_key(j, "samples");
    if (!d->samples) {
        json_null(j); /* before 1.3: no samples section */
        return;
    }
    json_object_compact(j);
    json_kv_u64(j, "count", ss->count);
    json_kv_u64(j, "estimated_blocks", (uint64_t)llround(ss->blocks));
    json_kv_u64(j, "estimated_bytes", (uint64_t)llround(ss->bytes));
    json_kv_u64(j, "min_rate", ss->min_rate);
    json_kv_u64(j, "max_rate", ss->max_rate);
    json_kv_u64(j, "outside_heaps", ss->outside);
    json_kv_u64(j, "in_slabs", ss->slabs);
    json_object_end(j);
}

static void text_samples(FILE *f, const sample_summary *ss)
{
    if (!ss->count)
        return;
    char a[32], b[32], c[32];
    fprintf(f, "\nheap profile: %llu sampled live blocks (sampling every %s", (unsigned long long)ss->count,
            text_size(a, sizeof a, ss->min_rate));
    if (ss->max_rate != ss->min_rate)
        fprintf(f, " to %s", text_size(c, sizeof c, ss->max_rate));
    fprintf(f, " on average), standing for ~%llu blocks, ~%s requested", (unsigned long long)llround(ss->blocks),
            text_size(b, sizeof b, (uint64_t)llround(ss->bytes)));
    if (ss->slabs)
        fprintf(f, "; %llu in the malloc drop-in's slabs (small blocks; not among the heaps' blocks)",
                (unsigned long long)ss->slabs);
    if (ss->outside)
        fprintf(f, "; %llu in no dumped region (freed while the dump was written?)", (unsigned long long)ss->outside);
    fputc('\n', f);
}

int cmd_summary(rpd_input *in, const rpd_options *o)
{
    /* Every heap is scanned before anything is printed, so a malformed dump produces an
     * error and no partial report. */
    rpd_dump *d = &in->dump;
    rpd_error err = {0, ""};
    heap_summary *all = rpd_alloc(d, d->nheaps * sizeof *all, d->footer.table_offset, &err);
    int rc = all ? 0 : -1;
    for (size_t i = 0; i < d->nheaps && rc == 0; i++)
        if (rpd_heap_selected(o, &d->heaps[i]))
            rc = scan_heap(in, &d->heaps[i], &all[i], &err);
    sample_summary ss;
    if (rc == 0)
        rc = scan_samples(d, &ss, &err);
    if (rc == 0 && o->json) {
        json_out j;
        json_init(&j, stdout);
        json_object(&j);
        rpd_json_dump_info(&j, d, in->path);
        json_key(&j, "heaps");
        json_array(&j);
        for (size_t i = 0; i < d->nheaps; i++)
            if (rpd_heap_selected(o, &d->heaps[i]))
                json_heap(&j, d, &d->heaps[i], &all[i]);
        json_array_end(&j);
        json_samples(&j, d, &ss);
        json_object_end(&j);
        json_finish(&j);
    } else if (rc == 0) {
        rpd_text_dump_info(stdout, d, in->path);
        for (size_t i = 0; i < d->nheaps; i++)
            if (rpd_heap_selected(o, &d->heaps[i]))
                text_heap(stdout, d, &d->heaps[i], &all[i]);
        text_samples(stdout, &ss);
    }
    for (size_t i = 0; all && i < d->nheaps; i++)
        free_summary(d, &d->heaps[i], &all[i]);
    rpd_free(d, all, d->nheaps * sizeof *all);
    return rc == 0 ? RPDUMP_OK : rpd_report_error(o, in->path, &err);
}
