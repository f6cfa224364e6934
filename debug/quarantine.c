#include "quarantine.h"

#include <stdio.h>
#include <string.h>

#include "block_check.h"
#include "rampart_debug.h"
#include "config.h"
#include "debug_heap.h"
#include "sanitizer_track.h"
#include "sort.h"
#include "src/locate.h"
#include "src/os.h"
#include "src/pagemap.h"

#define FIRST_CAP 256

static size_t ring_bytes(size_t cap) { return rp_align_up(cap * sizeof(rp_quarantine_entry), RP_OS_PAGE); }

static int grow(rp_quarantine *q)
{
    size_t cap = q->cap ? q->cap * 2 : FIRST_CAP;
    rp_quarantine_entry *ring = rp_os_scratch_map(ring_bytes(cap));
    if (!ring)
        return -1;
    for (size_t i = 0; i < q->count; i++)
        ring[i] = q->ring[(q->head + i) & (q->cap - 1)];
    if (q->ring)
        rp_os_scratch_unmap(q->ring, ring_bytes(q->cap));
    q->ring = ring;
    q->cap = cap;
    q->head = 0;
    return 0;
}

int rp_quarantine_push(rp_quarantine *q, void *user, size_t bytes)
{
    if (q->count == q->cap && grow(q) != 0)
        return -1;
    rp_quarantine_entry *e = &q->ring[(q->head + q->count) & (q->cap - 1)];
    e->user = user;
    e->bytes = bytes;
    q->count++;
    q->bytes += bytes;
    return 0;
}

/* Verifies the oldest block and gives it back to the core. */
static void evict_oldest(rp_heap *h, rp_debug_heap *d, rp_fault *fault)
{
    rp_quarantine *q = &d->quarantine;
    rp_quarantine_entry e = q->ring[q->head];
    q->head = (q->head + 1) & (q->cap - 1);
    q->count--;
    q->bytes -= e.bytes;
    rp_debug_meta m;
    int bad = rp_block_verify(h, e.user, e.bytes, &m, fault);
    if (!bad && m.state == RP_META_QUARANTINED && rp_debug_config_get()->poison) {
        d->fill_skip_lo = e.user;
        d->fill_skip_hi = (char *)e.user + e.bytes;
    }
    rp_san_block_released(h, e.user, e.bytes);
    rp_core_release(h, e.user, fault);
    d->fill_skip_lo = d->fill_skip_hi = NULL;
    /* The next eviction (at a later free) reads the next block's header, metadata and user
     * area, last touched a whole quarantine ago: start fetching them now. */
    if (q->count) {
        const char *next = q->ring[q->head].user;
        __builtin_prefetch(next - RP_USER_OFFSET);
        __builtin_prefetch(next);
        __builtin_prefetch(next + 64);
    }
}

void rp_quarantine_trim(rp_heap *h, size_t budget, rp_fault *fault)
{
    rp_debug_heap *d = rp_debug_of(h);
    if (!d)
        return;
    while (d->quarantine.bytes > budget && d->quarantine.count)
        evict_oldest(h, d, fault);
}

void rp_quarantine_drop(rp_quarantine *q)
{
    if (q->ring)
        rp_os_scratch_unmap(q->ring, ring_bytes(q->cap));
    memset(q, 0, sizeof *q);
}

static int pointer_before(const void *a, const void *b)
{
    return *(const uintptr_t *)a < *(const uintptr_t *)b;
}

int rp_quarantine_check(rp_heap *h, size_t blocks_found, char *why, size_t len)
{
    rp_debug_heap *d = rp_debug_of(h);
    if (!d)
        return 0;
    rp_quarantine *q = &d->quarantine;
    size_t bytes = 0;
    uint64_t secret = rp_debug_secret(h);
    for (size_t i = 0; i < q->count; i++) {
        rp_quarantine_entry *e = &q->ring[(q->head + i) & (q->cap - 1)];
        bytes += e->bytes;
        rp_region *r = rp_pagemap_lookup(e->user);
        rp_located loc;
        rp_fault ignored;
        ignored.kind = 0;
        if (!r || r->heap != h || rp_locate(h, r, e->user, &loc, &ignored) != 0 || loc.usable != e->bytes) {
            snprintf(why, len, "Q3: quarantine entry %p is not a used block of %zu bytes of this heap", e->user,
                     e->bytes);
            return 1;
        }
        rp_debug_meta m;
        rp_meta_load(e->user, &m);
        if (m.seal != rp_meta_seal(secret, e->user, &m) || m.state != RP_META_QUARANTINED) {
            snprintf(why, len, "Q3: quarantine entry %p is not marked quarantined", e->user);
            return 1;
        }
    }
    if (bytes != q->bytes) {
        snprintf(why, len, "Q1: quarantine counts %zu bytes, its entries hold %zu", q->bytes, bytes);
        return 1;
    }
    if (q->bytes > rp_debug_config_get()->quarantine_bytes) {
        snprintf(why, len, "Q2: quarantine holds %zu bytes, over its budget of %zu", q->bytes,
                 rp_debug_config_get()->quarantine_bytes);
        return 1;
    }
    if (blocks_found != q->count) {
        snprintf(why, len, "Q4: the heap holds %zu quarantined blocks, the quarantine lists %zu", blocks_found,
                 q->count);
        return 1;
    }
    /* Q3, distinct entries: sort a copy of the pointers (scratch memory from the OS). */
    if (q->count > 1) {
        size_t scratch = rp_align_up(q->count * sizeof(uintptr_t), RP_OS_PAGE);
        uintptr_t *a = rp_os_scratch_map(scratch);
        if (a) {
            for (size_t i = 0; i < q->count; i++)
                a[i] = (uintptr_t)q->ring[(q->head + i) & (q->cap - 1)].user;
            rp_sort(a, q->count, sizeof *a, pointer_before);
            int dup = 0;
            for (size_t i = 1; i < q->count && !dup; i++)
                if (a[i] == a[i - 1]) {
                    snprintf(why, len, "Q3: block %p is in the quarantine twice", (void *)a[i]);
                    dup = 1;
                }
            rp_os_scratch_unmap(a, scratch);
            if (dup)
                return 1;
        }
    }
    return 0;
}

size_t rp_quarantine_flush(rp_heap *h)
{
    h = rp_heap_resolve(h);
    if (!h)
        return 0;
    rp_fault f;
    f.kind = 0;
    rp_lock_acquire(&h->lock);
    rp_debug_heap *d = rp_debug_of(h);
    size_t released = d ? d->quarantine.count : 0;
    rp_quarantine_trim(h, 0, &f);
    rp_lock_release(&h->lock);
    if (f.kind)
        rp_report_fault(&f);
    return released;
}
