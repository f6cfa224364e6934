/* The thread cache's checker: T1..T7 for the calling thread's cache (thread_cache.h,
 * hardened.h), from the bins, runs, batch and quarantine, reading no cached block's bytes. */
#include "thread_cache.h"

#include "cache_mark.h"
#include "malloc_slabs.h"
#include "src/header_snapshot.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "src/report.h"


/* The size of p if it is a live span block of an arena (16-byte aligned), else 0 (T1); for a
 * live slab block of an arena, its stride plus a header (the size of a span block of the same
 * class). */
static size_t cached_block_size(const void *p)
{
    if (rp_ms_contains(p)) {
        /* a live slab block of an arena's pool: its span-block equivalent (T1) */
        uint32_t stride;
        rp_slab *d = rp_slab_block_live(&rp_ms_space, p, &stride);
        rp_heap *h = d ? rp_ms_owner(d) : NULL;
        return h && (h->flags & RP_HEAP_MALLOC_ARENA) ? stride + RP_USER_OFFSET : 0;
    }
    rp_region *r = rp_pagemap_lookup(p);
    if (!r || !(r->heap->flags & RP_HEAP_MALLOC_ARENA))
        return 0;
    rp_page *d = rp_page_of(r, p);
    if (d->state != RP_PAGE_SPAN && d->state != RP_PAGE_SPAN_TAIL)
        return 0;
    return rp_header_live_size(&r->heap->key, rp_block_of_user(p));
}

/* T1 for one block of page bin i: a live, flagged page-tier block of an arena of i+1 pages. */
static int cached_pages_ok(const void *p, const rp_page *d, unsigned i)
{
    rp_region *r = rp_pagemap_lookup(p);
    return r && (r->heap->flags & RP_HEAP_MALLOC_ARENA) && rp_page_of(r, p) == d && d->state == RP_PAGE_LARGE &&
           (uintptr_t)p == rp_page_addr(r, d) && d->u.large.lead_pages == 0 && d->npages == i + 1 &&
           rp_tc_page_cached(d);
}

/* Records p in the table of cached blocks; 1 if it was there already (open addressing). */
static int seen_before(const void **table, size_t slots, const void *p)
{
    if (!table)
        return 0;
    size_t s = (size_t)(rp_mix64((uint64_t)(uintptr_t)p) & (slots - 1));
    while (table[s] && table[s] != p)
        s = (s + 1) & (slots - 1);
    if (table[s] == p)
        return 1;
    table[s] = p;
    return 0;
}

int rp_tc_check(rp_tcache *tc, char *why, size_t len)
{
    /* T2 and T3 first: they need only the bins, not the blocks. */
    size_t counted = 0, listed = 0;
    void **expect = tc->slot_store;
    for (unsigned c = 0; c < RP_TC_CLASSES; c++) {
        const rp_tc_bin *bin = &tc->bins[c];
        if (bin->slots != expect ||
            (size_t)(expect - tc->slot_store) + tc->bin_max[c] + RP_TC_SLOT_PAD > tc->slot_count)
            return rp_why(why, len, "T2: bin %u's slots are not its own stretch of the cache's slot array", c);
        if (bin->count > bin->limit)
            return rp_why(why, len, "T2: bin %u holds %u blocks, above its limit %u", c, bin->count, bin->limit);
        if (bin->limit > tc->bin_max[c])
            return rp_why(why, len, "T2: bin %u's limit %u is above its stretch of %u slots", c, bin->limit,
                          tc->bin_max[c]);
        size_t reserved = (size_t)bin->limit * rp_tc_class_size(c);
        for (unsigned k = 0; k < 32; k++)
            if (((tc->by_level[k][c >> 6] >> (c & 63)) & 1) != (reserved && rp_fls(reserved) == k))
                return rp_why(why, len, "T3: bin %u (reserving %zu bytes) is %slisted at level %u", c, reserved,
                              reserved && rp_fls(reserved) == k ? "not " : "", k);
        expect += tc->bin_max[c] + RP_TC_SLOT_PAD;
        counted += (size_t)bin->limit * rp_tc_class_size(c);
        listed += bin->count;
    }
    for (unsigned k = 0; k < 32; k++) {
        int listed = rp_tc_level_lists_any(tc, k);
        if (listed != (int)((tc->level_mask >> k) & 1))
            return rp_why(why, len, "T3: level %u %s bins but its mask bit is %s", k, listed ? "lists" : "lists no",
                          listed ? "clear" : "set");
    }
    for (unsigned i = 0; i < RP_TC_PAGE_BINS; i++) {
        const rp_tc_pbin *pb = &tc->pbins[i];
        if (pb->count > pb->limit || pb->limit > RP_TC_PAGE_SLOTS)
            return rp_why(why, len, "T2: page bin %u holds %u blocks, above its limit %u", i, pb->count, pb->limit);
        counted += (size_t)pb->count * rp_tc_page_bin_bytes(i);
        listed += pb->count;
    }
    for (unsigned c = 0; c < RP_SLAB_CLASSES; c++) {
        counted += (size_t)tc->runs[c].left * rp_tc_class_size(c);
        listed += tc->runs[c].left;
    }
    if (tc->freed_limit < 1 || tc->freed_limit > RP_TC_FREED_MAX || tc->freed_n >= tc->freed_limit)
        return rp_why(why, len, "T5: the free batch holds %u frees, its limit is %u (at most %u)", tc->freed_n,
                      tc->freed_limit, RP_TC_FREED_MAX);
    for (uint32_t k = 0; k < tc->freed_n; k++) {
        uintptr_t a = (uintptr_t)tc->freed[k];
        if ((a & (RP_GRANULE - 1)) != 0 || a - tc->slab_lo >= tc->slab_len)
            return rp_why(why, len, "T5: collected free %u, %p, is not 16-byte aligned or lies outside the slab space",
                          k, tc->freed[k]);
        if (a - tc->near_lo < tc->near_len)
            return rp_why(why, len, "T5: collected free %u, %p, lies in the near region (examined at the call)", k,
                          tc->freed[k]);
    }
    if (rp_hq_check(tc, why, len) != 0)
        return 1;
    if (tc->room < 0)
        return rp_why(why, len, "T3: the cache counts %zu bytes, above its cap of %zu", tc->cap - (size_t)tc->room,
                      tc->cap);
    if (counted != tc->cap - (size_t)tc->room)
        return rp_why(why, len, "T3: the cache counts %zu bytes, its bins reserve and hold %zu",
                      tc->cap - (size_t)tc->room, counted);
    /* T1: every cached block, and none twice (a table of the blocks seen). */
    size_t slots = 1024;
    while (slots < 2 * (listed + 1))
        slots <<= 1;
    size_t table_bytes = slots * sizeof(void *);
    const void **table = rp_os_scratch_map(table_bytes);
    int rc = 0;
    for (unsigned c = 0; c < RP_TC_CLASSES && !rc; c++) {
        const rp_tc_bin *bin = &tc->bins[c];
        for (uint32_t k = 0; k < bin->count; k++) {
            const void *w = bin->slots[k];
            size_t size = w && !((uintptr_t)w & (RP_GRANULE - 1)) ? cached_block_size(w) : 0;
            int slab_ok = !rp_ms_contains(w) || size == rp_tc_class_size(c); /* slab class c only */
            if (size < rp_tc_class_size(c) || size > RP_TC_MAX_CACHED_BLOCK || !slab_ok) {
                rc = rp_why(why, len, "T1: block %p in bin %u (%zu bytes) is not a live arena block of the class",
                            w, c, rp_tc_class_size(c));
                break;
            }
            const uint8_t *mark = rp_cache_mark(w);
            if (!mark || !rp_cache_marked(mark)) {
                rc = rp_why(why, len, "T4: block %p in bin %u has no cache mark", w, c);
                break;
            }
            if (seen_before(table, slots, w)) {
                rc = rp_why(why, len, "T1: block %p is cached twice", (const void *)w);
                break;
            }
        }
    }
    for (unsigned i = 0; i < RP_TC_PAGE_BINS && !rc; i++) {
        const rp_tc_pbin *pb = &tc->pbins[i];
        for (uint32_t k = 0; k < pb->count; k++) {
            if (!cached_pages_ok(pb->slot[k].p, pb->slot[k].d, i)) {
                rc = rp_why(why, len, "T1: block %p in page bin %u is not a live, flagged arena block of %u pages",
                            pb->slot[k].p, i, i + 1);
                break;
            }
            if (seen_before(table, slots, pb->slot[k].p)) {
                rc = rp_why(why, len, "T1: block %p is cached twice", pb->slot[k].p);
                break;
            }
        }
    }
    /* T6: runs of fresh blocks of the cache's arena, class c, in one slab (their memory is
     * not read: fresh blocks may never have been touched). */
    for (unsigned c = 0; c < RP_SLAB_CLASSES && !rc; c++) {
        const rp_tc_run *run = &tc->runs[c];
        size_t stride = rp_slab_stride(c);
        for (uint32_t k = 0; k < run->left; k++) {
            const char *p = run->next + k * stride;
            uint32_t st;
            rp_slab *d = rp_ms_contains(p) ? rp_slab_block_live(&rp_ms_space, p, &st) : NULL;
            if (!d || st != stride || rp_ms_owner(d) != tc->arena ||
                rp_slab_of(&rp_ms_space, p) != rp_slab_of(&rp_ms_space, run->next)) {
                rc = rp_why(why, len, "T6: block %p of run %u is not a live slab block of the cache's arena of "
                                      "stride %zu in the run's slab", (const void *)p, c, stride);
                break;
            }
            if (!rp_cache_marked(rp_cache_mark_of_slab(p))) {
                rc = rp_why(why, len, "T4: block %p of run %u has no cache mark", (const void *)p, c);
                break;
            }
            if (seen_before(table, slots, p)) {
                rc = rp_why(why, len, "T6: block %p of run %u is cached twice", (const void *)p, c);
                break;
            }
        }
    }
    if (table)
        rp_os_scratch_unmap(table, table_bytes);
    return rc;
}
