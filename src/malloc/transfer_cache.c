#include "transfer_cache.h"

#include <string.h>

#include "arena.h"
#include "cache_mark.h"
#include "src/batch.h"
#include "src/header_snapshot.h"
#include "malloc_slabs.h"
#include "src/os.h"
#include "src/pagemap.h"
#include "src/report.h"
#include "thread_cache.h"

void rp_xfer_init(rp_xfer *x, size_t cap, size_t own_cap)
{
    memset(x, 0, sizeof *x);
    rp_lock_init(&x->lock);
    /* One store for every class, and the batches' givers after it, mapped once: only the
     * pages of the classes in use become resident. */
    size_t store_bytes = RP_TC_CLASSES * sizeof(rp_xfer_class_store);
    x->store = cap ? rp_os_map(store_bytes + RP_TC_CLASSES * sizeof(rp_xfer_class_givers)) : NULL;
    x->giver = x->store ? (rp_xfer_class_givers *)(void *)((char *)x->store + store_bytes) : NULL;
    x->cap = x->store ? cap : 0;
    x->own_cap = own_cap < x->cap ? own_cap : x->cap;
}

size_t rp_xfer_put(rp_xfer *x, unsigned c, void *const *ptrs, size_t n, const void *giver, int own)
{
    if (!x->store)
        return 0;
    size_t cs = rp_tc_class_size(c), done = 0;
    int sole = own && __atomic_load_n(&x->threads, __ATOMIC_RELAXED) <= 1;
    rp_lock_acquire(&x->lock);
    while (done < n && x->n[c] < RP_XFER_SLOTS) {
        size_t k = n - done < RP_XFER_BATCH ? n - done : RP_XFER_BATCH;
        if (x->bytes + k * cs > x->cap || (sole && x->own_bytes + k * cs > x->own_cap))
            break;
        unsigned slot = x->n[c];
        memcpy(x->store[c][slot], ptrs + done, k * sizeof(void *));
        x->count[c][slot] = (uint8_t)k;
        x->own[c][slot] = (uint8_t)(own != 0);
        x->own_bytes += own ? k * cs : 0;
        x->giver[c][slot] = giver;
        __atomic_store_n(&x->n[c], (uint8_t)(slot + 1), __ATOMIC_RELAXED); /* peeked unlocked */
        x->bytes += k * cs;
        x->puts++;
        done += k;
    }
    rp_lock_release(&x->lock);
    return done;
}

size_t rp_xfer_take(rp_xfer *x, unsigned c, size_t want, size_t max_count, void **out, const void *taker,
                    int *from_others)
{
    size_t got = 0;
    int others = 0;
    /* An unlocked peek: an empty class (the common case when nothing crosses threads) costs
     * no lock. A stale answer only means one refill more or one lock taken for nothing. */
    if (__atomic_load_n(&x->n[c], __ATOMIC_RELAXED) != 0) {
        size_t cs = rp_tc_class_size(c);
        rp_lock_acquire(&x->lock);
        while (got < want && x->n[c] > 0) {
            unsigned slot = x->n[c] - 1u;
            size_t k = x->count[c][slot];
            if (got + k > max_count)
                break;
            memcpy(out + got, x->store[c][slot], k * sizeof(void *));
            __atomic_store_n(&x->n[c], (uint8_t)slot, __ATOMIC_RELAXED);
            x->bytes -= k * cs;
            x->own_bytes -= x->own[c][slot] ? k * cs : 0;
            x->takes++;
            others |= x->giver[c][slot] != taker;
            got += k;
        }
        rp_lock_release(&x->lock);
    }
    if (from_others)
        *from_others = others;
    return got;
}

size_t rp_xfer_drain(rp_xfer *x, rp_heap *h)
{
    size_t total = 0;
    void *ptrs[RP_XFER_BATCH];
    for (unsigned c = 0; c < RP_TC_CLASSES; c++) {
        size_t n;
        while ((n = rp_xfer_take(x, c, 1, RP_XFER_BATCH, ptrs, NULL, NULL)) != 0) {
            /* Slab blocks (malloc_slabs.h) to the front, back to the arena's pool; the span
             * blocks after them to its heap. */
            size_t slabs = 0;
            for (size_t i = 0; i < n; i++) {
                rp_cache_mark_clear(rp_cache_mark(ptrs[i])); /* no longer cached (T4 of thread_cache.h) */
                if (rp_ms_contains(ptrs[i])) {
                    void *t = ptrs[i];
                    ptrs[i] = ptrs[slabs];
                    ptrs[slabs++] = t;
                }
            }
            if (slabs)
                rp_ms_give_back(h, ptrs, slabs);
            if (slabs < n)
                rp_free_batch(h, ptrs + slabs, n - slabs);
            total += n;
        }
    }
    return total;
}

/* The size of p if it is a live span block of h (X1), else 0; for a live slab block of h's
 * pool, its stride plus a header (a span block of the same class). */
static size_t batch_block_size(const rp_heap *h, const void *p)
{
    if (!p || ((uintptr_t)p & (RP_GRANULE - 1)))
        return 0;
    if (rp_ms_contains(p)) {
        uint32_t stride;
        rp_slab *d = rp_slab_block_live(&rp_ms_space, p, &stride);
        return d && rp_ms_owner(d) == h ? stride + RP_USER_OFFSET : 0;
    }
    rp_region *r = rp_pagemap_lookup(p);
    if (!r || r->heap != h)
        return 0;
    rp_page *d = rp_page_of(r, p);
    if (d->state != RP_PAGE_SPAN && d->state != RP_PAGE_SPAN_TAIL)
        return 0;
    return rp_header_live_size(&h->key, rp_block_of_user(p));
}

int rp_xfer_check(rp_xfer *x, rp_heap *h, char *why, size_t len)
{
    int rc = 0;
    size_t total = 0, own_total = 0;
    rp_lock_acquire(&x->lock);
    /* X2 and X3 first: they need only the counts, not the blocks. */
    for (unsigned c = 0; c < RP_TC_CLASSES && !rc; c++) {
        if (x->n[c] > (x->store ? RP_XFER_SLOTS : 0)) {
            rc = rp_why(why, len, "X2: transfer cache of '%s' holds %u batches of class %u, more than %u", h->name,
                        x->n[c], c, x->store ? RP_XFER_SLOTS : 0);
            break;
        }
        for (unsigned k = 0; k < x->n[c]; k++) {
            if (x->count[c][k] == 0 || x->count[c][k] > RP_XFER_BATCH) {
                rc = rp_why(why, len, "X2: batch %u of class %u in '%s' holds %u blocks, not 1 .. %u", k, c, h->name,
                            x->count[c][k], RP_XFER_BATCH);
                break;
            }
            total += (size_t)x->count[c][k] * rp_tc_class_size(c);
            own_total += x->own[c][k] ? (size_t)x->count[c][k] * rp_tc_class_size(c) : 0;
        }
    }
    if (!rc && total != x->bytes)
        rc = rp_why(why, len, "X3: transfer cache of '%s' counts %zu bytes, its batches hold %zu", h->name, x->bytes,
                    total);
    if (!rc && x->bytes > x->cap)
        rc = rp_why(why, len, "X3: transfer cache of '%s' holds %zu bytes, above its cap %zu", h->name, x->bytes, x->cap);
    if (!rc && own_total != x->own_bytes)
        rc = rp_why(why, len, "X3: transfer cache of '%s' counts %zu bytes of own batches, they hold %zu", h->name,
                    x->own_bytes, own_total);
    for (unsigned c = 0; c < RP_TC_CLASSES && !rc; c++) {
        for (unsigned k = 0; k < x->n[c] && !rc; k++) {
            for (unsigned i = 0; i < x->count[c][k]; i++) {
                const void *w = x->store[c][k][i];
                size_t size = batch_block_size(h, w);
                int slab_ok = !rp_ms_contains(w) || size == rp_tc_class_size(c); /* slab class c only */
                const uint8_t *mark = size ? rp_cache_mark(w) : NULL;
                if (size < rp_tc_class_size(c) || size > RP_TC_MAX_CACHED_BLOCK || !slab_ok || !mark ||
                    !rp_cache_marked(mark)) {
                    rc = rp_why(why, len, "X1: block %p in a batch of class %u is not a live block of '%s' of the "
                                          "class with its cache mark set", w, c, h->name);
                    break;
                }
            }
        }
    }
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
