#include "transfer_cache.h"

#include <string.h>

#include "arena.h"
#include "batch.h"
#include "header_snapshot.h"
#include "pagemap.h"
#include "report.h"
#include "thread_cache.h"

void rp_xfer_init(rp_xfer *x, size_t cap)
{
    memset(x, 0, sizeof *x);
    rp_lock_init(&x->lock);
    x->cap = cap;
}

int rp_xfer_put(rp_xfer *x, unsigned c, const rp_xfer_batch *b)
{
    int taken = 0;
    rp_lock_acquire(&x->lock);
    if (x->n[c] < RP_XFER_SLOTS && x->bytes + b->bytes <= x->cap) {
        x->slot[c][x->n[c]] = *b;
        __atomic_store_n(&x->n[c], (uint8_t)(x->n[c] + 1), __ATOMIC_RELAXED); /* peeked unlocked */
        x->bytes += b->bytes;
        x->puts++;
        taken = 1;
    }
    rp_lock_release(&x->lock);
    return taken;
}

int rp_xfer_take(rp_xfer *x, unsigned c, uint32_t max_count, size_t max_bytes, rp_xfer_batch *b)
{
    /* An unlocked peek: an empty class (the common case when nothing crosses threads) costs
     * no lock. A stale answer only means one refill more or one lock taken for nothing. */
    if (__atomic_load_n(&x->n[c], __ATOMIC_RELAXED) == 0)
        return 0;
    int taken = 0;
    rp_lock_acquire(&x->lock);
    if (x->n[c] > 0) {
        const rp_xfer_batch *top = &x->slot[c][x->n[c] - 1];
        if (top->count <= max_count && top->bytes <= max_bytes) {
            *b = *top;
            __atomic_store_n(&x->n[c], (uint8_t)(x->n[c] - 1), __ATOMIC_RELAXED);
            x->bytes -= b->bytes;
            x->takes++;
            taken = 1;
        }
    }
    rp_lock_release(&x->lock);
    return taken;
}

size_t rp_xfer_drain(rp_xfer *x, rp_heap *h)
{
    uint64_t key = rp_tc_key();
    size_t total = 0;
    for (unsigned c = 0; c < RP_TC_CLASSES; c++) {
        rp_xfer_batch b;
        while (rp_xfer_take(x, c, UINT32_MAX, SIZE_MAX, &b)) {
            void *ptrs[64];
            size_t n = 0;
            uint64_t *w = b.head;
            for (uint32_t i = 0; i < b.count && w; i++) {
                uint64_t *next = (uint64_t *)(uintptr_t)(w[0] ^ key);
                w[1] = 0; /* no longer cached (T4 of thread_cache.h) */
                ptrs[n++] = w;
                if (n == sizeof ptrs / sizeof ptrs[0]) {
                    rp_free_batch(h, ptrs, n);
                    n = 0;
                }
                w = next;
            }
            if (n)
                rp_free_batch(h, ptrs, n);
            total += b.count;
        }
    }
    return total;
}

/* X1 for one block of class c. */
static int batch_block_ok(const rp_heap *h, const void *p, size_t size, unsigned c)
{
    if (((uintptr_t)p & (RP_GRANULE - 1)) || size < rp_tc_class_size(c) || size > RP_TC_MAX_CACHED_BLOCK)
        return 0;
    rp_region *r = rp_pagemap_lookup(p);
    if (!r || r->heap != h)
        return 0;
    rp_page *d = rp_page_of(r, p);
    if (d->state != RP_PAGE_SPAN && d->state != RP_PAGE_SPAN_TAIL)
        return 0;
    return rp_header_live_size(h->secret, rp_block_of_user(p)) == size;
}

int rp_xfer_check(rp_xfer *x, rp_heap *h, char *why, size_t len)
{
    uint64_t key = rp_tc_key();
    int rc = 0;
    size_t total = 0;
    rp_lock_acquire(&x->lock);
    for (unsigned c = 0; c < RP_TC_CLASSES && !rc; c++) {
        if (x->n[c] > RP_XFER_SLOTS) {
            rc = rp_why(why, len, "X2: transfer cache of '%s' holds %u batches of class %u, more than %u", h->name,
                        x->n[c], c, RP_XFER_SLOTS);
            break;
        }
        for (unsigned k = 0; k < x->n[c] && !rc; k++) {
            const rp_xfer_batch *b = &x->slot[c][k];
            const uint64_t *w = b->head;
            size_t bytes = 0;
            uint32_t i = 0;
            for (; i < b->count; i++) {
                if (!w) {
                    rc = rp_why(why, len, "X1: batch of class %u in '%s' ends after %u of its %u blocks", c, h->name, i,
                                b->count);
                    break;
                }
                size_t size = (size_t)(w[1] ^ key ^ (uint64_t)(uintptr_t)w);
                if (!batch_block_ok(h, w, size, c)) {
                    rc = rp_why(why, len, "X1: block %p in a batch of class %u is not a live block of '%s' of its tag's size",
                                (const void *)w, c, h->name);
                    break;
                }
                bytes += size;
                w = (const uint64_t *)(uintptr_t)(w[0] ^ key);
            }
            if (!rc && w)
                rc = rp_why(why, len, "X1: batch of class %u in '%s' lists more than its %u blocks", c, h->name, b->count);
            if (!rc && bytes != b->bytes)
                rc = rp_why(why, len, "X1: batch of class %u in '%s' counts %zu bytes, its blocks hold %zu", c, h->name,
                            (size_t)b->bytes, bytes);
            total += bytes;
        }
    }
    if (!rc && total != x->bytes)
        rc = rp_why(why, len, "X3: transfer cache of '%s' counts %zu bytes, its batches hold %zu", h->name, x->bytes,
                    total);
    if (!rc && x->bytes > x->cap)
        rc = rp_why(why, len, "X3: transfer cache of '%s' holds %zu bytes, above its cap %zu", h->name, x->bytes, x->cap);
    rp_lock_release(&x->lock);
    return rc;
}

void rp_xfer_totals(size_t *bytes, uint64_t *puts, uint64_t *takes)
{
    size_t by = 0;
    uint64_t in = 0, out = 0;
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap *h = rp_arena_get(i);
        rp_xfer *x = h ? rp_xfer_of(h) : NULL;
        if (!x)
            continue;
        rp_lock_acquire(&x->lock);
        by += x->bytes;
        in += x->puts;
        out += x->takes;
        rp_lock_release(&x->lock);
    }
    *bytes = by;
    *puts = in;
    *takes = out;
}

void rp_xfer_fork_prepare(void)
{
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap *h = rp_arena_get(i);
        if (h && rp_xfer_of(h))
            rp_lock_acquire(&rp_xfer_of(h)->lock);
    }
}

void rp_xfer_fork_parent(void)
{
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap *h = rp_arena_get(i);
        if (h && rp_xfer_of(h))
            rp_lock_release(&rp_xfer_of(h)->lock);
    }
}

void rp_xfer_fork_child(void)
{
    for (unsigned i = 0; i < RP_MAX_ARENAS; i++) {
        rp_heap *h = rp_arena_get(i);
        if (h && rp_xfer_of(h))
            rp_lock_init(&rp_xfer_of(h)->lock);
    }
}
