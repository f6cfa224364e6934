/* The offline invariant checker (the invariants are listed in dump_check.h). One pass over
 * each heap's blocks, with a little state: the position expected next in the region and in
 * the current span, and the previous page-tier record (for buddies). After a violation the
 * expected position resynchronises on the record found, so one damaged record produces one
 * report, not a cascade. */
#include "dump_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "stack_table.h"

#define PAGE 4096u
#define MIN_SPAN_BLOCK 32u
#define SPAN_GRANULE 16u

typedef struct checker {
    rpd_dump *d;
    const rpd_heap_info *h;
    rpd_violation_fn fn;
    void *arg;
    size_t max;
    long found;
    rpd_stack_table stacks;
    uint64_t *class_blocks; /* per class of h, found by the walk */
} checker;

__attribute__((format(printf, 4, 5))) static void violation(checker *c, const char *invariant, uint64_t offset,
                                                            const char *fmt, ...)
{
    c->found++;
    if (!c->fn || (c->max && (size_t)c->found > c->max))
        return;
    rpd_violation v;
    v.invariant = invariant;
    v.heap = c->h ? c->h->rec.name : "";
    v.offset = offset;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v.message, sizeof v.message, fmt, ap);
    va_end(ap);
    c->fn(&v, c->arg);
}

/* a + b, or 0 with *ok cleared on overflow. */
static uint64_t add(uint64_t a, uint64_t b, int *ok)
{
    if (a > UINT64_MAX - b) {
        *ok = 0;
        return 0;
    }
    return a + b;
}

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

#define X(v) ((unsigned long long)(v))

/* ---- regions and classes ---------------------------------------------------------------- */

static void check_regions(checker *c)
{
    const rpd_heap_info *h = c->h;
    uint64_t bytes = 0;
    for (size_t i = 0; i < h->nregions; i++) {
        const rpd_region *r = &h->regions[i];
        uint64_t at = h->regions_sec->offset + i * h->regions_sec->record_bytes;
        uint64_t area = r->pages * PAGE; /* rpd_open checked it does not overflow */
        if ((r->base & (PAGE - 1)) || r->pages == 0 || r->base < r->mem_lo || r->base + area > r->mem_hi)
            violation(c, "FR1", at, "region %zu: page area 0x%llx + %llu pages lies outside its memory 0x%llx-0x%llx", i,
                      X(r->base), X(r->pages), X(r->mem_lo), X(r->mem_hi));
        if (i > 0) {
            const rpd_region *p = &h->regions[i - 1];
            if (r->base <= p->base || r->mem_lo < p->mem_hi)
                violation(c, "FH3", at, "region %zu at 0x%llx is not after region %zu (0x%llx-0x%llx)", i, X(r->mem_lo),
                          i - 1, X(p->mem_lo), X(p->mem_hi));
        }
        bytes += area;
    }
    if (h->nregions != h->rec.regions || bytes != h->rec.region_bytes)
        violation(c, "FH3", h->heap_sec->offset + 72 + 80,
                  "the heap counts %llu regions / %llu bytes, its regions section holds %zu / %llu", X(h->rec.regions),
                  X(h->rec.region_bytes), h->nregions, X(bytes));
}

static void check_classes(checker *c)
{
    const rpd_heap_info *h = c->h;
    for (size_t i = 1; i < h->nclasses; i++) {
        const rpd_class *a = &h->classes[i - 1], *b = &h->classes[i];
        if (a->tier == b->tier && b->min_bytes <= a->max_bytes)
            violation(c, "FC1", h->classes_sec->offset, "%s classes %u (%llu..%llu) and %u (%llu..%llu) overlap",
                      rpd_tier_name(a->tier), a->index, X(a->min_bytes), X(a->max_bytes), b->index, X(b->min_bytes),
                      X(b->max_bytes));
    }
}

/* ---- the block walk --------------------------------------------------------------------- */

typedef struct walk_state {
    long region;              /* index of the current region, -1 before the first */
    uint64_t region_end;
    uint64_t page_cursor;     /* where the next page-tier record must start */
    uint64_t free_pages;      /* in the current region */
    int prev_page_free;       /* previous page-tier record in this region was free... */
    uint64_t prev_page_block, prev_page_size;
    int in_span;
    uint64_t span_start, span_end, span_cursor; /* span_end excludes the sentinel */
    uint64_t span_record;     /* offset of the span's record */
    int prev_span_free;
    uint64_t prev_span_block;
    /* totals */
    uint64_t live_blocks, live_bytes, live_usable;
    uint64_t spans, span_bytes, large_blocks;
    uint64_t free_span_blocks, free_span_bytes, free_page_blocks, free_page_bytes, largest_free;
    uint64_t quarantined_blocks, quarantined_bytes;
    uint64_t spares;
} walk_state;

static void close_span(checker *c, walk_state *w)
{
    if (w->in_span && w->span_cursor != w->span_end)
        violation(c, "FK2", w->span_record, "the blocks of span 0x%llx end at 0x%llx, the span's sentinel is at 0x%llx",
                  X(w->span_start), X(w->span_cursor), X(w->span_end));
    w->in_span = 0;
}

static void close_region(checker *c, walk_state *w, uint64_t at)
{
    close_span(c, w);
    if (w->region < 0)
        return;
    const rpd_region *r = &c->h->regions[w->region];
    if (w->page_cursor != w->region_end)
        violation(c, "FD1", at, "region %ld: its records end at 0x%llx, its page area at 0x%llx", w->region,
                  X(w->page_cursor), X(w->region_end));
    if (w->free_pages != r->free_pages)
        violation(c, "FD4", c->h->regions_sec->offset + (uint64_t)w->region * c->h->regions_sec->record_bytes + 16,
                  "region %ld counts %llu free pages, its free page blocks hold %llu", w->region, X(r->free_pages),
                  X(w->free_pages));
}

static void open_region(checker *c, walk_state *w, long index, uint64_t at)
{
    for (long skipped = w->region + 1; skipped < index; skipped++)
        violation(c, "FD1", at, "region %ld has no block records", skipped);
    const rpd_region *r = &c->h->regions[index];
    w->region = index;
    w->page_cursor = r->base;
    w->region_end = r->base + r->pages * PAGE;
    w->free_pages = 0;
    w->prev_page_free = 0;
}

static void count_free_class(checker *c, unsigned tier, const rpd_block_at *ba)
{
    long k = rpd_class_of(c->h, tier, ba->b.block_size);
    if (k < 0) {
        violation(c, "FI3", ba->offset, "free %s block 0x%llx of %llu bytes falls in no free-space class",
                  rpd_tier_name(tier), X(ba->b.block), X(ba->b.block_size));
        return;
    }
    c->class_blocks[k]++;
}

/* U1 for any live block; U2; S1. */
static void check_live(checker *c, walk_state *w, const rpd_block_at *ba)
{
    const rpd_block *b = &ba->b;
    int ok = 1;
    uint64_t block_end = add(b->block, b->block_size, &ok);
    uint64_t user_end = add(b->addr, b->size, &ok);
    if (!ok || b->addr < b->block || user_end > block_end)
        violation(c, "FU1", ba->offset, "block 0x%llx (%llu bytes): user area 0x%llx + %llu is not inside it", X(b->block),
                  X(b->block_size), X(b->addr), X(b->size));
    if (b->addr & ((1ull << b->align_log2) - 1))
        violation(c, "FU1", ba->offset, "block 0x%llx: user pointer 0x%llx is not aligned to %llu", X(b->block), X(b->addr),
                  X(1ull << b->align_log2));
    if (rpd_is_debug(c->d) && b->requested > b->size)
        violation(c, "FU2", ba->offset, "block 0x%llx: %llu bytes requested, only %llu usable", X(b->addr), X(b->requested),
                  X(b->size));
    if (b->alloc_stack && rpd_stack_table_find(&c->stacks, b->alloc_stack) < 0)
        violation(c, "FS1", ba->offset, "block 0x%llx: allocation stack %u is not in the stack section", X(b->addr),
                  b->alloc_stack);
    if (b->free_stack && rpd_stack_table_find(&c->stacks, b->free_stack) < 0)
        violation(c, "FS1", ba->offset, "block 0x%llx: free stack %u is not in the stack section", X(b->addr),
                  b->free_stack);
    w->live_blocks++;
    w->live_bytes += b->block_size;
    w->live_usable += b->size;
    if (b->state == RPD_STATE_QUARANTINED) {
        w->quarantined_blocks++;
        w->quarantined_bytes += b->size;
    }
}

static void note_free(walk_state *w, uint64_t bytes)
{
    if (bytes > w->largest_free)
        w->largest_free = bytes;
}

static void check_page_record(checker *c, walk_state *w, const rpd_block_at *ba)
{
    const rpd_block *b = &ba->b;
    close_span(c, w);
    int ok = 1;
    uint64_t end = add(b->block, b->block_size, &ok);
    if (!ok || b->block != w->page_cursor || (b->block & (PAGE - 1)) || b->block_size == 0 ||
        (b->block_size & (PAGE - 1)) || end > w->region_end) {
        violation(c, "FD1", ba->offset, "page-tier block 0x%llx (%llu bytes) does not continue region %ld at 0x%llx",
                  X(b->block), X(b->block_size), w->region, X(w->page_cursor));
        if (!ok || end > w->region_end || end <= w->page_cursor) {
            w->prev_page_free = 0;
            return; /* unusable: skip it, keep the cursor */
        }
    }
    w->page_cursor = end; /* after a violation: resynchronise on this record */
    uint64_t pages = b->block_size / PAGE;
    int is_free = b->state == RPD_STATE_FREE;
    if (is_free || b->state == RPD_STATE_SPAN) {
        if (b->addr != b->block || b->size != b->block_size)
            violation(c, "FU1", ba->offset, "%s block 0x%llx records address 0x%llx and size %llu, not its own",
                      rpd_state_name(b->state), X(b->block), X(b->addr), X(b->size));
    }
    if (is_free) {
        if (!is_pow2(pages) || ((b->block / PAGE) & (pages - 1)))
            violation(c, "FD3", ba->offset, "free page block 0x%llx of %llu pages is not 2^k pages aligned to its size",
                      X(b->block), X(pages));
        if (w->prev_page_free && w->prev_page_size == b->block_size && is_pow2(pages) &&
            ((w->prev_page_block / PAGE) ^ pages) == b->block / PAGE)
            violation(c, "FB3", ba->offset, "free page blocks 0x%llx and 0x%llx are buddies of %llu pages and were not merged",
                      X(w->prev_page_block), X(b->block), X(pages));
        w->free_pages += pages;
        w->free_page_blocks++;
        w->free_page_bytes += b->block_size;
        note_free(w, b->block_size);
        count_free_class(c, RPD_TIER_PAGE, ba);
    } else if (b->state == RPD_STATE_SPAN) {
        w->spans++;
        w->span_bytes += b->block_size;
        w->in_span = 1;
        w->span_start = w->span_cursor = b->block;
        w->span_end = end - RPD_SPAN_SENTINEL;
        w->span_record = ba->offset;
        w->prev_span_free = 0;
    } else {
        w->large_blocks++;
        uint64_t lead = b->addr - b->block;
        if (b->addr >= b->block && ((lead & (PAGE - 1)) || b->size != b->block_size - lead) && lead < b->block_size)
            violation(c, "FD2", ba->offset, "large block 0x%llx: user area 0x%llx + %llu is not whole pages up to its end",
                      X(b->block), X(b->addr), X(b->size));
        check_live(c, w, ba);
    }
    w->prev_page_free = is_free;
    w->prev_page_block = b->block;
    w->prev_page_size = b->block_size;
}

static void check_span_record(checker *c, walk_state *w, const rpd_block_at *ba)
{
    const rpd_block *b = &ba->b;
    if (!w->in_span) {
        violation(c, "FK2", ba->offset, "span block 0x%llx is not inside a span record", X(b->block));
        return;
    }
    int ok = 1;
    uint64_t end = add(b->block, b->block_size, &ok);
    if (!ok || b->block != w->span_cursor || b->block_size < MIN_SPAN_BLOCK || (b->block_size & (SPAN_GRANULE - 1)) ||
        end > w->span_end) {
        violation(c, "FK2", ba->offset, "span block 0x%llx (%llu bytes) does not continue span 0x%llx at 0x%llx (span ends at 0x%llx)",
                  X(b->block), X(b->block_size), X(w->span_start), X(w->span_cursor), X(w->span_end));
        if (!ok || end > w->span_end || end <= w->span_cursor) {
            w->prev_span_free = 0;
            return;
        }
    }
    w->span_cursor = end; /* after a violation: resynchronise on this record */
    int is_free = b->state == RPD_STATE_FREE;
    if (is_free) {
        if (w->prev_span_free)
            violation(c, "FK5", ba->offset, "span blocks 0x%llx and 0x%llx are adjacent and both free", X(w->prev_span_block),
                      X(b->block));
        if (b->addr != b->block || b->size != b->block_size)
            violation(c, "FU1", ba->offset, "free block 0x%llx records address 0x%llx and size %llu, not its own",
                      X(b->block), X(b->addr), X(b->size));
        w->free_span_blocks++;
        w->free_span_bytes += b->block_size;
        note_free(w, b->block_size);
        count_free_class(c, RPD_TIER_SPAN, ba);
    } else {
        uint64_t off = c->h->rec.user_offset;
        if (b->addr != b->block + off || b->size + off != b->block_size)
            violation(c, "FU1", ba->offset, "span block 0x%llx (%llu bytes): user pointer 0x%llx / usable %llu, expected +%llu / %llu",
                      X(b->block), X(b->block_size), X(b->addr), X(b->size), X(off), X(b->block_size - off));
        check_live(c, w, ba);
    }
    if (b->flags & RPD_BLOCK_SPARE_SPAN) {
        w->spares++;
        if (!is_free || b->block != w->span_start || end != w->span_end || w->spares > 1)
            violation(c, "FH4", ba->offset, "block 0x%llx is marked as the spare span but is %s", X(b->block),
                      w->spares > 1 ? "the second one" : !is_free ? "not free" : "not a whole span");
    }
    w->prev_span_free = is_free;
    w->prev_span_block = b->block;
}

#define COUNTER_AT(h, index) ((h)->heap_sec->offset + 72 + 8 * (index))

static void check_totals(checker *c, const walk_state *w)
{
    const rpd_heap_info *h = c->h;
    const rpd_heap *r = &h->rec;
    if (w->live_blocks != r->blocks_in_use || w->live_bytes != r->bytes_in_use || w->live_usable != r->bytes_usable)
        violation(c, "FH1", COUNTER_AT(h, 0),
                  "counters say %llu live blocks / %llu bytes / %llu usable, the blocks are %llu / %llu / %llu",
                  X(r->blocks_in_use), X(r->bytes_in_use), X(r->bytes_usable), X(w->live_blocks), X(w->live_bytes),
                  X(w->live_usable));
    if (w->spans != r->spans || w->span_bytes != r->span_bytes || w->large_blocks != r->large_blocks)
        violation(c, "FH2", COUNTER_AT(h, 6),
                  "counters say %llu spans / %llu bytes / %llu large blocks, the blocks are %llu / %llu / %llu",
                  X(r->spans), X(r->span_bytes), X(r->large_blocks), X(w->spans), X(w->span_bytes), X(w->large_blocks));
    uint64_t free_blocks = w->free_span_blocks + w->free_page_blocks;
    uint64_t free_bytes = w->free_span_bytes + w->free_page_bytes;
    if (free_blocks != r->blocks_free || free_bytes != r->bytes_free || w->free_page_bytes != r->page_free_bytes)
        violation(c, "FF1", COUNTER_AT(h, 3),
                  "counters say %llu free blocks / %llu bytes (%llu in pages), the blocks are %llu / %llu (%llu)",
                  X(r->blocks_free), X(r->bytes_free), X(r->page_free_bytes), X(free_blocks), X(free_bytes),
                  X(w->free_page_bytes));
    if (w->largest_free != r->largest_free)
        violation(c, "FF1", COUNTER_AT(h, 5), "the largest free block is %llu bytes, the counter says %llu",
                  X(w->largest_free), X(r->largest_free));
    for (size_t i = 0; i < h->nclasses; i++) {
        const rpd_class *k = &h->classes[i];
        if (c->class_blocks[i] != k->blocks)
            violation(c, k->tier == RPD_TIER_SPAN ? "FI5" : "FB4", h->classes_sec->offset,
                      "%s class %u (%llu..%llu bytes) counts %llu free blocks, the blocks are %llu", rpd_tier_name(k->tier),
                      k->index, X(k->min_bytes), X(k->max_bytes), X(k->blocks), X(c->class_blocks[i]));
    }
    const rpd_quarantine *q = &h->quarantine;
    if (q->blocks != w->quarantined_blocks || q->bytes != w->quarantined_bytes)
        violation(c, "FQ1", h->quarantine_sec->offset,
                  "the quarantine record says %llu blocks / %llu bytes, the blocks are %llu / %llu", X(q->blocks),
                  X(q->bytes), X(w->quarantined_blocks), X(w->quarantined_bytes));
}

static int check_heap(checker *c, const rpd_heap_info *h, rpd_error *err)
{
    c->h = h;
    if (h->rec.dump_flags & RPD_HEAP_WALK_INCOMPLETE)
        violation(c, "FW1", h->heap_sec->offset, "the writer could not walk the whole heap: %s", h->rec.note);
    check_regions(c);
    check_classes(c);
    c->class_blocks = rpd_alloc(c->d, h->nclasses * sizeof *c->class_blocks, h->classes_sec->offset, err);
    if (!c->class_blocks)
        return -1;
    rpd_block_iter *it = rpd_alloc(c->d, sizeof *it, h->blocks_sec->offset, err);
    if (!it) {
        rpd_free(c->d, c->class_blocks, h->nclasses * sizeof *c->class_blocks);
        return -1;
    }
    walk_state w;
    memset(&w, 0, sizeof w);
    w.region = -1;
    rpd_blocks_begin(it, c->d, h);
    rpd_block_at ba;
    int rc;
    while ((rc = rpd_blocks_next(it, &ba, err)) == 1) {
        long region = (long)ba.b.region;
        if (region < w.region) {
            violation(c, "FD1", ba.offset, "block 0x%llx of region %ld comes after region %ld's blocks", X(ba.b.block),
                      region, w.region);
            continue;
        }
        if (region != w.region) {
            close_region(c, &w, ba.offset);
            open_region(c, &w, region, ba.offset);
        }
        if (ba.b.tier == RPD_TIER_PAGE)
            check_page_record(c, &w, &ba);
        else
            check_span_record(c, &w, &ba);
    }
    if (rc == 0) {
        /* A walk the writer had to stop ends early: only the records it wrote are checked. */
        uint64_t end = h->blocks_sec->offset + h->blocks_sec->length;
        if (!(h->rec.dump_flags & RPD_HEAP_WALK_INCOMPLETE)) {
            close_region(c, &w, end);
            for (long skipped = w.region + 1; skipped < (long)h->nregions; skipped++)
                violation(c, "FD1", end, "region %ld has no block records", skipped);
            check_totals(c, &w);
        }
    }
    rpd_free(c->d, it, sizeof *it);
    rpd_free(c->d, c->class_blocks, h->nclasses * sizeof *c->class_blocks);
    c->class_blocks = NULL;
    return rc < 0 ? -1 : 0;
}

/* P1: every sample's non-zero stack id is in the stack section. */
static int check_sample(const rpd_sample_at *sa, void *arg)
{
    checker *c = arg;
    if (sa->s.stack && rpd_stack_table_find(&c->stacks, sa->s.stack) < 0)
        violation(c, "FP1", sa->offset, "sample of block 0x%llx: allocation stack %u is not in the stack section",
                  X(sa->s.addr), sa->s.stack);
    return 0;
}

static int check_samples(checker *c, rpd_error *err)
{
    c->h = NULL; /* process-wide: the violation names no heap */
    return rpd_samples_each(c->d, check_sample, c, err);
}

long rpd_check(rpd_dump *d, const rpd_heap_info *only, rpd_violation_fn fn, void *arg, size_t max, rpd_error *err)
{
    checker c;
    memset(&c, 0, sizeof c);
    c.d = d;
    c.fn = fn;
    c.arg = arg;
    c.max = max;
    if (rpd_stack_table_load(&c.stacks, d, 0, err) != 0) {
        rpd_stack_table_free(&c.stacks);
        return -1;
    }
    if (c.stacks.duplicates)
        violation(&c, "FS2", c.stacks.duplicate_offset, "%zu stack records repeat an id already in the section",
                  c.stacks.duplicates);
    int rc = 0;
    for (size_t i = 0; i < d->nheaps && rc == 0; i++)
        if (!only || only == &d->heaps[i])
            rc = check_heap(&c, &d->heaps[i], err);
    if (rc == 0)
        rc = check_samples(&c, err);
    rpd_stack_table_free(&c.stacks);
    return rc < 0 ? -1 : c.found;
}
