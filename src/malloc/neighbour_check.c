#include "neighbour_check.h"

#include <stddef.h>

#include "arena.h"
#include "cache_mark.h"
#include "guarded_memory.h"
#include "malloc_slabs.h"
#include "seal.h"
#include "src/header_snapshot.h"
#include "src/heap.h"
#include "src/report.h"
#include "thread_cache.h"

static int report_below(const void *p, const void *at, const char *why)
{
    rp_region *r = rp_ms_contains(p) ? NULL : rp_pagemap_lookup(p);
    rp_heap *h = rp_ms_contains(p) ? rp_ms_owner(rp_slab_of(&rp_ms_space, p)) : r ? r->heap : NULL;
    rp_fault f;
    f.kind = 0;
    rp_fault_set(&f, RP_ERR_HEAP_BUFFER_UNDERFLOW, h, at, p, 0, "free(%p): %s (byte at %p)", p, why, at);
    rp_report_fault(&f);
    return -1;
}

/* The first non-zero byte of [p, p + n), or NULL. */
static const unsigned char *nonzero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return p + i;
    return NULL;
}


/* The block below, as first read: its user pointer and usable bytes, and what says it is still
 * that block (its header for a span block, its descriptor for a page-tier block). */
typedef struct neighbour {
    rp_region *r;
    const rp_block *header; /* a span block's, or NULL */
    const rp_page *page;    /* a page-tier block's head, or NULL */
    const void *user;
    size_t usable;
} neighbour;

/* 1 while the neighbour is the live, uncached block first read: same place, same size. */
static int neighbour_same(const neighbour *n)
{
    if (n->header) {
        if (rp_header_live_size(rp_arena_key(), n->header) != n->usable + RP_USER_OFFSET)
            return 0;
        const uint8_t *mark = rp_cache_mark_in(n->r, n->user);
        return !(mark && rp_cache_marked(mark));
    }
    const rp_page *d = n->page;
    return __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == RP_PAGE_LARGE && d->u.large.lead_pages == 0 &&
           !rp_tc_page_cached(d) && rp_large_usable(d) == n->usable;
}

/* The neighbour belongs to other threads, which may free, reuse and seal it again while it is
 * read: a seal word of 0 is a block being sealed or freed (rp_seal_clear) and is skipped; a
 * neighbour that is no longer the same block (freed, or its memory handed out as blocks of
 * other sizes, whose data then lies where its seal was) is skipped; a seal that does not hold
 * is read again, and reported only when it failed NEIGHBOUR_READS times in a row with the same
 * word, the neighbour unchanged throughout (a real overwrite stays; another thread's work in
 * progress does not). */
#define NEIGHBOUR_READS 3
static int check_sealed_below(const void *p, const neighbour *n)
{
    const unsigned char *bad = NULL;
    uint64_t word = rp_seal_word(n->user, n->usable);
    int same = 0;
    for (int reads = 0; same < NEIGHBOUR_READS; reads++) {
        if (word == 0 || !(bad = rp_seal_tail_damage(rp_arena_key(), n->user, n->usable)) ||
            reads == 4 * NEIGHBOUR_READS || !neighbour_same(n))
            return 0; /* intact, or changing: another thread's block in use */
        uint64_t again = rp_seal_word(n->user, n->usable);
        same = again == word ? same + 1 : 0;
        word = again;
    }
    if (!neighbour_same(n))
        return 0;
    return report_below(p, bad, "the end of the block below it was overwritten (its canary or seal): an underflow "
                             "of this block or an overflow of that one");
}

/* 1 if the span that ends at q has a broken sentinel header, read under its heap's lock. The
 * first read was made without it, while another thread may have been making or giving back
 * the span below (both under the lock): its pages then read as a span whose end holds anything.
 * Under the lock the span below is whole, or not a span; p's own block, live, cannot change. */
static int span_end_broken(rp_region *r, uintptr_t q)
{
    rp_heap *h = r->heap;
    rp_lock_acquire(&h->lock);
    rp_page *d = rp_page_of(r, (void *)(q - 1));
    int broken = (d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL) &&
                 !rp_header_sound(rp_arena_key(), (const rp_block *)(q - sizeof(rp_block)));
    rp_lock_release(&h->lock);
    return broken;
}

/* What lies below q, the first byte of p's memory (its header, or its first page), q at the start
 * of a page. */
static int check_below_page(rp_region *r, uintptr_t q, const void *p)
{
    const rp_mac_key *key = rp_arena_key();
    if (q == r->base) {
        if (rp_region_is_mapped_block(r))
            return 0; /* its metadata is a mapping apart */
        uintptr_t meta_end = (uintptr_t)r + (r->resident ? rp_region_os_meta_bytes(r->npages)
                                                         : rp_region_meta_bytes(r->npages));
        const unsigned char *at;
        if (q >= meta_end + RP_SEAL_CHECKED && (at = nonzero((const unsigned char *)q - RP_SEAL_CHECKED, RP_SEAL_CHECKED)))
            return report_below(p, at, "the memory below it (the padding after the region's metadata) was written");
        return 0;
    }
    rp_page *d = rp_page_of(r, (void *)(q - 1));
    if (d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL) {
        const rp_block *sentinel = (const rp_block *)(q - sizeof(rp_block));
        uint32_t last;
        if (!rp_header_sound_prev(key, sentinel, &last))
            return span_end_broken(r, q) ? report_below(p, sentinel, "the header below it (the end of a span) was "
                                                                     "overwritten")
                                         : 0;
        /* A checked prev_size of a span that ended at q: its last block lies in this region. */
        const rp_block *b = (const rp_block *)((uintptr_t)sentinel - last);
        if (!last || (uintptr_t)b < r->base)
            return 0;
        neighbour n = {r, b, NULL, (const char *)b + RP_USER_OFFSET, last - RP_USER_OFFSET};
        return neighbour_same(&n) ? check_sealed_below(p, &n) : 0;
    }
    rp_page *first = rp_page_of(r, (void *)r->base);
    for (unsigned i = 0; i <= RP_GUARD_SCAN_PAGES && d >= first; i++, d--) {
        if (d->state == RP_PAGE_NONE)
            continue;
        if (d->state == RP_PAGE_LARGE && d->u.large.lead_pages == 0 && !rp_tc_page_cached(d)) {
            /* Read without the lock: another thread may have freed the block since, and its
             * descriptor now says anything. Only a block that ends at or below q is read. */
            uintptr_t user = rp_page_addr(r, d);
            size_t usable = rp_large_usable(d);
            if (usable < 8 || usable > q - user)
                return 0;
            neighbour n = {r, NULL, d, (const void *)user, usable};
            return check_sealed_below(p, &n);
        }
        return 0;
    }
    return 0;
}

int rp_check_below_span(rp_region *r, const void *p)
{
    const rp_block *b = rp_block_of_user(p);
    uint32_t prev = b->prev_size;
    if (prev == 0)
        return ((uintptr_t)b & (RP_PAGE_SIZE - 1)) == 0 ? check_below_page(r, (uintptr_t)b, p) : 0;
    const rp_block *below = (const rp_block *)((uintptr_t)b - prev);
    if ((uintptr_t)below < r->base)
        return 0;
    neighbour n = {r, below, NULL, (const char *)below + RP_USER_OFFSET, prev - RP_USER_OFFSET};
    /* A free neighbour (or one the heap's own checks report) is not looked at. */
    return neighbour_same(&n) ? check_sealed_below(p, &n) : 0;
}

int rp_check_below_pages(rp_region *r, const void *p) { return check_below_page(r, (uintptr_t)p, p); }

/* Bytes of the next slot read: where a linear overflow out of the block lands first. */
#define NEXT_SLOT_CHECKED 16u

/* 1 if a block starts at offset off of the slab space (its allocated bit, SL in slab.h). */
static int slot_allocated(uintptr_t off)
{
    size_t slab = off >> RP_SLAB_SHIFT;
    uint32_t g = (uint32_t)(off & (RP_SLAB_BYTES - 1)) >> 4;
    uint64_t w = __atomic_load_n(&rp_ms_space.bits[slab * RP_SLAB_WORDS + (g >> 6)], __ATOMIC_ACQUIRE);
    return (int)((w >> (g & 63)) & 1);
}

int rp_check_after_slab(const void *p, uint32_t stride)
{
    /* The next slot of p's slab (the same stride, the slab's blocks back to back): none when
     * it would end past the slab. */
    uintptr_t off = (uintptr_t)p - rp_ms_space.base + stride;
    if ((off & (RP_SLAB_BYTES - 1)) + stride > RP_SLAB_BYTES || (off & (RP_SLAB_BYTES - 1)) < stride)
        return 0;
    const unsigned char *next = (const unsigned char *)p + stride;
    const uint8_t *mark = rp_cache_mark_of_slab(next);
    if (slot_allocated(off) && !rp_cache_marked(mark))
        return 0; /* the program's: its own seal is checked at its free */
    const unsigned char *bad = nonzero(next, stride < NEXT_SLOT_CHECKED ? stride : NEXT_SLOT_CHECKED);
    if (!bad)
        return 0;
    /* Another thread may have taken the slot since its state was read, and written it. */
    if (slot_allocated(off) && !rp_cache_marked(mark))
        return 0;
    rp_heap *h = rp_ms_owner(rp_slab_of(&rp_ms_space, p));
    rp_fault f;
    f.kind = 0;
    rp_fault_set(&f, RP_ERR_HEAP_BUFFER_OVERFLOW, h, bad, p, stride,
                 "free(%p): the free slot after it was written (byte %zu of it): an overflow of this block", p,
                 (size_t)(bad - next));
    rp_report_fault(&f);
    return -1;
}
