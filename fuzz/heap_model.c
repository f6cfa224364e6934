/* The shadow model of the heap_ops harness: see heap_model.h. */
#define _GNU_SOURCE
#include "fuzz/heap_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/tier.h"

struct heap_state model;
_Alignas(4096) unsigned char arena[ARENA_BYTES];

/* ---- failure and reports ------------------------------------------------------------- */

void heap_ops_where(FILE *out)
{
    fprintf(out, "heap_ops (%s flavour): operation %lu (%s): ", rp_flavour(), model.op,
            model.op_name ? model.op_name : "-");
}


static struct {
    int count;
    rp_error_kind kind;
    const void *address;
    char message[200];
} reported;

void capture_report(const rp_report *r, void *arg)
{
    (void)arg;
    if (reported.count++ == 0) {
        reported.kind = r->kind;
        reported.address = r->address;
        snprintf(reported.message, sizeof reported.message, "%s", r->message);
    }
}

void expect_no_report(void)
{
    EXPECT(reported.count == 0, "unexpected report %s: %s", rp_error_kind_name(reported.kind), reported.message);
}

/* Exactly one report, of one of the kinds in `kinds` (bit per kind), naming address p (the
 * pointer passed, or the header found corrupted) or, when alt is not NULL, alt. */
void expect_report_either(unsigned kinds, const void *p, const void *alt)
{
    EXPECT(reported.count == 1, "expected one report about %p, got %d", p, reported.count);
    EXPECT(kinds & (1u << reported.kind), "report about %p has kind %s: %s", p, rp_error_kind_name(reported.kind),
           reported.message);
    EXPECT(reported.address == p || (alt && reported.address == alt), "report names %p, not the pointer passed (%p%s): %s",
           reported.address, p, alt ? " or its list neighbour" : "", reported.message);
    reported.count = 0;
}

void expect_report(unsigned kinds, const void *p) { expect_report_either(kinds, p, NULL); }

void reset_reports(void) { reported.count = 0; }

/* ---- the pattern (block_pattern.h) ------------------------------------------------------ */

void fill_block(block *b) { pattern_fill(b->p, b->usable, b->id); }

void verify_block(const block *b, size_t limit, const char *when)
{
    size_t bad = pattern_find_bad(b->p, b->usable, limit, b->id);
    if (bad != PATTERN_OK)
        expect_fail("block %p (%zu bytes, id %llu): byte %zu changed %s", (void *)b->p, b->size,
                  (unsigned long long)b->id, bad, when);
}

void verify_zeroed(unsigned char *p, size_t len)
{
    size_t bad = pattern_find_nonzero(p, len);
    if (bad != PATTERN_OK)
        expect_fail("calloc block %p: byte %zu of %zu is not zero", (void *)p, bad, len);
}

/* ---- model queries ---------------------------------------------------------------------- */

NO_FEEDBACK int ranges_overlap(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
    return a < b + blen && b < a + alen;
}

NO_FEEDBACK size_t extent(const block *b) { return b->usable ? b->usable : 1; }

/* The live block containing p (or starting at it), or NULL. */
NO_FEEDBACK block *live_block_at(const void *p)
{
    for (int i = 0; i < NSLOTS; i++) {
        block *b = &model.slots[i];
        if (b->p && (const unsigned char *)p >= b->p && (const unsigned char *)p < b->p + extent(b))
            return b;
    }
    return NULL;
}

int injection_armed(uint64_t calls_before) { return model.os_fail_target && calls_before < model.os_fail_target; }

/* Pages (a power of two) of a fresh region able to serve (size, align) in either tier: size
 * plus alignment, the debug flavour's lead page, span headers and slack. An upper bound. */
static size_t fresh_area_pages(size_t size, size_t align)
{
    size_t a = align < 4096 ? 4096 : align;
    size_t pages = (size + a + 4096 + 256 + 4095) / 4096, p2 = 1;
    while (p2 < pages)
        p2 <<= 1;
    return p2;
}

/* After a failed allocation: was the heap really out of memory? It was not if a free block of
 * the page tier is as large as a fresh region's page area, or if such a region (its pages and
 * descriptors) fits under the cap and the OS was not told to fail. */
void expect_real_oom(heap_model *m, size_t size, size_t align, uint64_t calls_before)
{
    if (injection_armed(calls_before) || size > ((size_t)1 << 30) || align > ((size_t)1 << 30))
        return;
    size_t pages = fresh_area_pages(size, align);
    rp_heap_stats_t st;
    rp_heap_stats(m->h, &st);
    for (unsigned k = 0; k < RP_STATS_ORDERS; k++)
        EXPECT(!st.order_free_blocks[k] || ((size_t)1 << k) < pages,
               "rp_alloc(%zu, align %zu) failed although a free page block of order %u exists", size, align, k);
    if (m->cfg.flags & RP_HEAP_NO_OS)
        return;
    size_t cost = pages * 4096 + ((rp_region_os_meta_bytes(pages) + 4095) & ~(size_t)4095);
    EXPECT(st.os_bytes + cost > m->cfg.max_bytes,
           "rp_alloc(%zu, align %zu) failed with %zu bytes mapped, cap %zu, a fresh region costs %zu", size, align,
           st.os_bytes, m->cfg.max_bytes, cost);
}


/* ---- the fit oracle (span.h FT1, FT2) -------------------------------------------------------- */

/* The size every block of the classes a search for n looks at has: n below 512 (one size per
 * class), else n rounded up to a multiple of the width of its power of two's 32 classes.
 * Written from free_index.h's description, not with its functions. */
static size_t model_good_fit(size_t n)
{
    if (n < 512)
        return n;
    unsigned top = 63u - (unsigned)__builtin_clzll(n);
    size_t width = (size_t)1 << (top - 5);
    return (n + width - 1) / width * width;
}

/* Bytes in front of the aligned user pointer when a block is carved at b: 0, or a leading free
 * block of at least a minimum block. */
static size_t model_lead(uintptr_t b, size_t align)
{
    uintptr_t user = (b + RP_USER_OFFSET + align - 1) / align * align;
    size_t lead = user - RP_USER_OFFSET - b;
    return lead && lead < RP_MIN_BLOCK ? lead + align : lead;
}

/* Free blocks are poisoned for ASan: read their headers and links as the core does. */
RP_NO_SANITIZE_ADDRESS
void fit_before(heap_model *m, size_t size, size_t align, fit_probe *p)
{
    memset(p, 0, sizeof *p);
    rp_heap *h = m->h;
    if ((align & (align - 1)) != 0 || rp_wants_pages(h, size, align < 16 ? 16 : align))
        return;
    align = align < 16 ? 16 : align;
    p->span_tier = 1;
    p->need = rp_span_block_need(size);
    p->want = align <= 16 ? p->need : p->need + align + RP_MIN_BLOCK;
    p->spans = h->spans;
    size_t good = model_good_fit(p->want), steps = 0;
    for (unsigned fl = 0; fl < RP_FL_COUNT; fl++) {
        for (unsigned sl = 0; sl < RP_SL_COUNT; sl++) {
            for (rp_block *b = h->index.heads[fl][sl]; b; b = rp_links(b)->next) {
                /* Within one operation (a run of allocations) a bug may already have damaged the
                 * lists the checker has not seen yet: read only blocks of this heap with valid
                 * headers, and leave the judgement to rp_heap_check after the operation. */
                rp_region *r = rp_pagemap_lookup(b);
                if (steps++ > 100000 || !r || r->heap != h || !rp_block_valid(&h->key, b)) {
                    p->span_tier = 0;
                    return;
                }
                if (b->size >= good && b->size > p->good_size) {
                    p->good = b;
                    p->good_size = b->size;
                }
                size_t lead = align <= 16 ? 0 : model_lead((uintptr_t)b, align);
                if (!p->host && lead + p->need <= b->size) {
                    p->host = b;
                    p->host_size = b->size;
                }
            }
        }
    }
}

void fit_after(heap_model *m, const fit_probe *p, const void *result, size_t size, size_t align)
{
    if (!p->span_tier)
        return;
    if (result)
        EXPECT(m->h->spans <= p->spans || !p->good,
               "FT1: rp_alloc(%zu, align %zu) took a new span (%zu -> %zu) although free block %p of %zu bytes was "
               "listed, at least the good fit %zu of the %zu bytes needed",
               size, align, p->spans, m->h->spans, p->good, p->good_size, model_good_fit(p->want), p->want);
    else
        EXPECT(!p->host,
               "FT2: rp_alloc(%zu, align %zu) failed with ENOMEM although free block %p of %zu bytes could hold the "
               "%zu bytes needed at that alignment",
               size, align, p->host, p->host_size, p->need);
}

/* ---- the retention oracle (heap.h RT1-RT5) ----------------------------------------------------- */

void retention_before(heap_model *m, const void *p, retention_probe *r)
{
    rp_heap_stats_t st;
    rp_heap_stats(m->h, &st);
    r->m = m;
    r->dirty = st.page_dirty_bytes;
    r->released = st.os_released;
    r->os_bytes = st.os_bytes;
    r->resident_pages = m->h->pages.resident_pages;
    rp_region *reg = p ? rp_pagemap_lookup(p) : NULL;
    r->mapped = reg && rp_region_is_mapped_block(reg);
    r->os_calls = rp_os_calls();
}

void retention_after(const retention_probe *r, int plain_free, const char *what)
{
    heap_model *m = r->m;
    if (injection_armed(r->os_calls))
        return;
    rp_heap_stats_t st;
    rp_heap_stats(m->h, &st);
    size_t retain = m->h->retain_bytes, released = st.os_released - r->released;
    if (m->h->purge_delay_ms == 0) {
        EXPECT(st.page_dirty_bytes <= retain || st.page_dirty_bytes <= r->dirty,
               "RT1: %s left %zu bytes of dirty free pages, above retain_bytes %zu and the %zu before it", what,
               st.page_dirty_bytes, retain, r->dirty);
        EXPECT(released == 0 || r->mapped || st.page_dirty_bytes + released > retain,
               "RT2: %s gave %zu bytes back to the OS although %zu dirty bytes would have been within retain_bytes "
               "%zu without it",
               what, released, st.page_dirty_bytes + released, retain);
    } else if (plain_free) {
        /* The delay (an hour in this harness) never passes within an input. */
        EXPECT(released == 0 || r->mapped,
               "RT3: %s gave %zu bytes back to the OS within the purge delay (dirty %zu -> %zu, retain_bytes %zu)",
               what, released, r->dirty, st.page_dirty_bytes, retain);
        EXPECT(st.page_dirty_bytes >= r->dirty, "RT3: %s shrank the dirty free pages from %zu to %zu within the purge delay",
               what, r->dirty, st.page_dirty_bytes);
    }
}

void retention_after_take(const retention_probe *r, const char *what)
{
    heap_model *m = r->m;
    if (injection_armed(r->os_calls) || m->h->pages.resident_pages <= r->resident_pages)
        return;
    rp_heap_stats_t st;
    rp_heap_stats(m->h, &st);
    EXPECT(st.page_dirty_bytes <= m->h->retain_bytes,
           "RT5: %s made %zu more pages resident and left %zu bytes of dirty free pages, above retain_bytes %zu", what,
           m->h->pages.resident_pages - r->resident_pages, st.page_dirty_bytes, m->h->retain_bytes);
}

void retention_after_trim(const retention_probe *r, size_t keep)
{
    heap_model *m = r->m;
    if (injection_armed(r->os_calls))
        return;
    rp_heap_stats_t st;
    rp_heap_stats(m->h, &st);
    EXPECT(st.page_dirty_bytes <= keep, "RT4: rp_heap_trim(%zu) left %zu bytes of dirty free pages", keep,
           st.page_dirty_bytes);
    for (rp_region *reg = m->h->regions; reg; reg = reg->next)
        EXPECT(!reg->map_base || rp_region_is_mapped_block(reg) || reg->free_pages != reg->npages,
               "RT4: rp_heap_trim(%zu) left the wholly free OS region %p (%zu pages) mapped", keep, (void *)reg->map_base,
               (size_t)reg->npages);
}

/* ---- checks after every operation -------------------------------------------------------- */

void check_heap(heap_model *m)
{
    char why[256];
    if (rp_heap_check(m->h, why, sizeof why) != 0)
        expect_fail("rp_heap_check(%s): %s", rp_heap_name(m->h), why);
    rp_heap_stats_t st;
    EXPECT(rp_heap_stats(m->h, &st) == 0, "rp_heap_stats failed");
    EXPECT(st.alloc_calls == m->allocs, "%s: alloc_calls %llu, the model made %llu", rp_heap_name(m->h),
           (unsigned long long)st.alloc_calls, (unsigned long long)m->allocs);
    EXPECT(st.blocks_in_use == st.alloc_calls - st.free_calls, "blocks_in_use %zu != alloc_calls - free_calls",
           st.blocks_in_use);
    if (DEBUG_FLAVOUR) {
        /* Quarantined blocks are still in use for the core. */
        EXPECT(st.blocks_in_use >= m->live && st.free_calls <= m->frees, "%s: %zu blocks in use, model holds %zu",
               rp_heap_name(m->h), st.blocks_in_use, m->live);
    } else {
        EXPECT(st.blocks_in_use == m->live && st.free_calls == m->frees,
               "%s: %zu blocks in use / %llu frees, model holds %zu / %llu", rp_heap_name(m->h), st.blocks_in_use,
               (unsigned long long)st.free_calls, m->live, (unsigned long long)m->frees);
        EXPECT(st.bytes_usable == m->usable_sum, "%s: bytes_usable %zu, model %zu", rp_heap_name(m->h),
               st.bytes_usable, m->usable_sum);
    }
    EXPECT(st.largest_free <= st.bytes_free && (st.bytes_free == 0) == (st.blocks_free == 0),
           "free counters disagree: largest %zu, bytes %zu, blocks %zu", st.largest_free, st.bytes_free,
           st.blocks_free);
    EXPECT(st.os_released >= m->os_released, "os_released went down");
    m->os_released = st.os_released;
    size_t cap = m->cfg.max_bytes > m->os_bytes_start ? m->cfg.max_bytes : m->os_bytes_start;
    EXPECT(st.os_bytes_peak <= cap, "%s: os_bytes_peak %zu over the cap %zu", rp_heap_name(m->h), st.os_bytes_peak,
           cap);
    EXPECT(st.regions >= (size_t)m->nregions, "%zu regions, %d added by the caller", st.regions, m->nregions);
    if (m->cfg.flags & RP_HEAP_NO_OS)
        EXPECT(st.os_bytes == m->os_bytes_start && st.regions == (size_t)m->nregions,
               "a heap without OS memory mapped %zu bytes / has %zu regions", st.os_bytes - m->os_bytes_start,
               st.regions);
}

void check_all(void)
{
    expect_no_report();
    for (int i = 0; i < NHEAPS; i++)
        if (model.heaps[i].h)
            check_heap(&model.heaps[i]);
}


/* ---- allocation bookkeeping -------------------------------------------------------------- */

/* Checks a block just returned by the heap and files it in slot s. */
void adopt(int s, int heap, unsigned char *p, size_t size, size_t align, uint64_t id)
{
    heap_model *m = &model.heaps[heap];
    EXPECT(((uintptr_t)p & (align - 1)) == 0 && ((uintptr_t)p & 15) == 0, "%p is not aligned to %zu", (void *)p,
           align);
    EXPECT(rp_heap_of(p) == m->h, "rp_heap_of(%p) is not the heap it came from", (void *)p);
    size_t usable = rp_usable_size(p);
    expect_no_report();
    if (DEBUG_FLAVOUR) {
        EXPECT(usable == size, "debug rp_usable_size(%p) = %zu, requested %zu", (void *)p, usable, size);
    } else {
        size_t slack = usable - size;
        EXPECT(usable >= size, "rp_usable_size(%p) = %zu < %zu requested", (void *)p, usable, size);
        /* A block with a mapping of its own has whole 2 MiB chunks (mapped_block.h G1). */
        rp_region *r = rp_pagemap_lookup(p);
        size_t page_slack = r && rp_region_is_mapped_block(r) ? RP_MAPPED_BLOCK_ALIGN - 1 : 4096;
        EXPECT(slack <= 32 || slack <= model.kept_slack ||
                   (usable % 4096 == 0 && ((uintptr_t)p & 4095) == 0 && slack <= page_slack),
               "rp_usable_size(%p) = %zu wastes %zu bytes on a request of %zu", (void *)p, usable, slack, size);
    }
    block nb = {p, size, usable, align, id, heap};
    for (int i = 0; i < NSLOTS; i++) {
        block *o = &model.slots[i];
        if (o->p && ranges_overlap(o->p, extent(o), p, extent(&nb)))
            expect_fail("new block %p (+%zu) overlaps live block %p (+%zu)", (void *)p, usable, (void *)o->p, o->usable);
    }
    for (int k = 0; k < NHEAPS; k++) {
        heap_model *hm = &model.heaps[k];
        int inside = 0;
        for (int r = 0; r < hm->nregions; r++) {
            caller_region *cr = &hm->regions[r];
            if (!ranges_overlap(cr->base, cr->len, p, extent(&nb)))
                continue;
            EXPECT(k == heap && p >= cr->base + sizeof(rp_region) && p + extent(&nb) <= cr->base + cr->len,
                   "block %p (+%zu) straddles the metadata or edge of caller region %p (+%zu)", (void *)p, usable,
                   (void *)cr->base, cr->len);
            inside = 1;
        }
        if (k == heap && (hm->cfg.flags & RP_HEAP_NO_OS))
            EXPECT(inside, "block %p of a heap without OS memory is outside every caller region", (void *)p);
    }
    model.slots[s] = nb;
    m->live++;
    m->usable_sum += usable;
    fill_block(&model.slots[s]);
}

void remember_stale(void *p)
{
    model.stale[model.stale_next++ % STALE_RING] = p;
}

void drop(int s)
{
    block *b = &model.slots[s];
    heap_model *m = &model.heaps[b->heap];
    m->live--;
    m->usable_sum -= b->usable;
    b->p = NULL;
}

void free_slot(int s)
{
    block *b = &model.slots[s];
    if (!b->p) {
        rp_free(NULL);
        return;
    }
    verify_block(b, b->usable, "before free");
    void *p = b->p;
    heap_model *m = &model.heaps[b->heap];
    TRACE("  slot %d: rp_free(%p)\n", s, p);
    retention_probe ret;
    retention_before(m, p, &ret);
    rp_free(p);
    expect_no_report();
    retention_after(&ret, 1, "rp_free");
    m->frees++;
    drop(s);
    remember_stale(p);
}

heap_model *second_heap(void)
{
    heap_model *m = &model.heaps[1];
    if (!m->h) {
        /* Created on first use; an injected OS failure is held off meanwhile, so the
         * operation under test, not the set-up, meets it. */
        uint64_t remaining = model.os_fail_target > rp_os_calls() ? model.os_fail_target - rp_os_calls() : 0;
        rp_os_fail_at(0);
        m->cfg.name = "second";
        m->cfg.max_bytes = (size_t)2 << 20;
        m->cfg.region_bytes = (size_t)64 << 10;
        m->h = rp_heap_create(&m->cfg);
        EXPECT(m->h, "rp_heap_create(second) failed");
        rp_heap_stats_t st;
        rp_heap_stats(m->h, &st);
        m->os_bytes_start = st.os_bytes;
        if (remaining) {
            rp_os_fail_at(remaining);
            model.os_fail_target = rp_os_calls() + remaining;
        }
    }
    return m;
}


/* ---- the walk against the model ---------------------------------------------------------- */

typedef struct walk_state {
    int heap;
    size_t used, quarantined;
    unsigned char seen[NSLOTS];
    block *by_addr[NSLOTS]; /* live blocks sorted by address */
    size_t nlive;
} walk_state;

static int by_address(const void *a, const void *b)
{
    const block *x = *(block *const *)a, *y = *(block *const *)b;
    return x->p < y->p ? -1 : x->p > y->p;
}

/* Index of the first live block ending after p (blocks do not overlap, so ends are sorted
 * too), or nlive. */
NO_FEEDBACK static size_t first_ending_after(const walk_state *w, const unsigned char *p)
{
    size_t lo = 0, hi = w->nlive;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->by_addr[mid]->p + extent(w->by_addr[mid]) <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int walk_visit(const rp_block_info *info, void *arg)
{
    walk_state *w = arg;
    unsigned char *a = info->addr;
    size_t i = first_ending_after(w, a);
    if (info->state == RP_BLOCK_USED) {
        w->used++;
        block *b = i < w->nlive ? w->by_addr[i] : NULL;
        if (!b || b->p != a || b->heap != w->heap)
            expect_fail("the walk shows a used block %p (+%zu) the program does not hold", info->addr, info->size);
        int s = (int)(b - model.slots);
        EXPECT(!w->seen[s], "the walk shows block %p twice", info->addr);
        w->seen[s] = 1;
        EXPECT(info->align == b->align, "the walk gives block %p alignment %zu, asked %zu", info->addr, info->align,
               b->align);
        if (DEBUG_FLAVOUR)
            EXPECT(info->requested == b->size && info->size >= b->size,
                   "the walk gives block %p requested %zu / size %zu, asked %zu", info->addr, info->requested,
                   info->size, b->size);
        else
            EXPECT(info->size == b->usable, "the walk gives block %p size %zu, usable is %zu", info->addr, info->size,
                   b->usable);
        EXPECT((unsigned char *)info->block <= a && a + info->size <= (unsigned char *)info->block + info->block_size,
               "block %p lies outside its extent %p (+%zu)", info->addr, info->block, info->block_size);
        return 0;
    }
    if (info->state == RP_BLOCK_QUARANTINED) {
        EXPECT(DEBUG_FLAVOUR, "release shows a quarantined block");
        w->quarantined++;
    }
    /* Free (or quarantined) memory must not overlap anything the program holds. */
    unsigned char *lo = info->block;
    i = first_ending_after(w, lo);
    if (i < w->nlive && ranges_overlap(lo, info->block_size, w->by_addr[i]->p, extent(w->by_addr[i])))
        expect_fail("%s block %p (+%zu) overlaps live block %p (+%zu)",
                  info->state == RP_BLOCK_FREE ? "free" : "quarantined", info->block, info->block_size,
                  (void *)w->by_addr[i]->p, w->by_addr[i]->usable);
    return 0;
}

void do_check(void)
{
    for (int i = 0; i < NSLOTS; i++) {
        block *b = &model.slots[i];
        if (!b->p)
            continue;
        verify_block(b, b->usable, "while live");
        EXPECT(rp_usable_size(b->p) == b->usable, "rp_usable_size(%p) changed", (void *)b->p);
        EXPECT(rp_heap_of(b->p) == model.heaps[b->heap].h, "rp_heap_of(%p) changed", (void *)b->p);
    }
    for (int k = 0; k < NHEAPS; k++) {
        heap_model *m = &model.heaps[k];
        if (!m->h)
            continue;
        walk_state w;
        memset(&w, 0, sizeof w);
        w.heap = k;
        for (int i = 0; i < NSLOTS; i++)
            if (model.slots[i].p)
                w.by_addr[w.nlive++] = &model.slots[i];
        qsort(w.by_addr, w.nlive, sizeof w.by_addr[0], by_address);
        EXPECT(rp_heap_walk(m->h, walk_visit, &w) == 0, "rp_heap_walk failed");
        EXPECT(w.used == m->live, "the walk shows %zu used blocks, the model holds %zu", w.used, m->live);
        rp_heap_stats_t st;
        rp_heap_stats(m->h, &st);
        EXPECT(st.blocks_in_use == w.used + w.quarantined, "blocks_in_use %zu, the walk shows %zu used + %zu held",
               st.blocks_in_use, w.used, w.quarantined);
    }
}


/* A live span block of heap k (from slot `from` on), or NULL. */
block *live_span_slot(int k, unsigned from)
{
    for (unsigned i = 0; i < NSLOTS; i++) {
        block *b = &model.slots[(from + i) % NSLOTS];
        if (!b->p || b->heap != k)
            continue;
        rp_region *r = rp_pagemap_lookup(b->p);
        if (!r || (uintptr_t)b->p < r->base)
            continue;
        rp_page *d = rp_page_of(r, b->p);
        if (d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL)
            return b;
    }
    return NULL;
}

/* The header of a live span block of heap k (from slot `from` on), or NULL. */
rp_block *live_span_header(int k, unsigned from)
{
    block *b = live_span_slot(k, from);
    return b ? rp_block_of_user(b->p) : NULL;
}


/* Bytes changed on purpose (misuse, damage) and put back afterwards. */
typedef struct saved_bytes {
    volatile unsigned char *at;
    size_t len;
    unsigned char bytes[32];
} saved_bytes;

static saved_bytes saved[2];
static int nsaved;

/* Remembers len bytes at p before they are changed (the debug runtime may poison them). */
RP_NO_SANITIZE_ADDRESS void save_bytes(void *p, size_t len)
{
    saved_bytes *b = &saved[nsaved++];
    b->at = p;
    b->len = len;
    for (size_t i = 0; i < len; i++)
        b->bytes[i] = b->at[i];
}

RP_NO_SANITIZE_ADDRESS void restore_bytes(void)
{
    while (nsaved > 0) {
        saved_bytes *b = &saved[--nsaved];
        for (size_t i = 0; i < b->len; i++)
            b->at[i] = b->bytes[i];
    }
}

RP_NO_SANITIZE_ADDRESS void xor_u32(uint32_t *p, uint32_t x)
{
    save_bytes(p, sizeof *p);
    *(volatile uint32_t *)p ^= x;
}

RP_NO_SANITIZE_ADDRESS void set_ptr(void *slot, void *value)
{
    save_bytes(slot, sizeof value);
    *(void *volatile *)slot = value;
}

void add_size(size_t *p, size_t delta)
{
    save_bytes(p, sizeof *p);
    *p += delta;
}

