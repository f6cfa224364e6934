/* The public allocation entry points: argument checks, routing between the two tiers,
 * locking, and delivery of faults after the lock is dropped. */
#include <errno.h>
#include <string.h>

#include "batch.h"
#include "heap.h"
#include "header_snapshot.h"
#include "hooks.h"
#include "large.h"
#include "locate.h"
#include "os.h"
#include "pagemap.h"
#include "span.h"
#include "tier.h"

/* *zero (when not NULL) tells whether the block reads as zeros beyond what rp_hook_alloc
 * wrote (rp_hook_alloc_written): a page-tier block made of fresh pages. A large block gets a
 * mapping of its own from mapped_from bytes (mapped_block.h). */
static void *core_alloc(rp_heap *h, size_t size, size_t align, size_t mapped_from, rp_fault *f, int *zero)
{
    if (zero)
        *zero = 0;
    if (rp_wants_pages(h, size, align)) {
        size_t usable;
        void *p = rp_large_alloc(h, size, align, mapped_from, &usable, zero);
        if (p)
            rp_hook_alloc(h, p, size, usable, align, f);
        return p;
    }
    void *p = rp_span_alloc(h, size, align, f);
    if (p)
        rp_hook_alloc(h, p, size, rp_block_usable(rp_block_of_user(p)), align, f);
    return p;
}

/* Normalises align; 0 when invalid. */
static inline size_t normal_align(size_t align)
{
    if (align == 0)
        return RP_MIN_ALIGN;
    if (!rp_is_pow2(align))
        return 0;
    return align < RP_MIN_ALIGN ? RP_MIN_ALIGN : align;
}

/* rp_alloc, and for rp_calloc whether the block already reads as zeros (*zero). */
static void *alloc_entry(rp_heap *h, size_t size, size_t align, int *zero)
{
    align = normal_align(align);
    if (!align) {
        errno = EINVAL;
        return NULL;
    }
    h = rp_heap_resolve(h);
    if (!h || size > RP_MAX_REQUEST || align > RP_MAX_ALIGN) {
        errno = ENOMEM;
        return NULL;
    }
    rp_fault f;
    f.kind = 0;
    rp_lock_acquire(&h->lock);
    void *p = core_alloc(h, size, align, h->mapped_block_bytes, &f, zero);
    rp_lock_release(&h->lock);
    if (RP_UNLIKELY(f.kind))
        rp_report_fault(&f);
    if (!p)
        errno = ENOMEM;
    return p;
}

void *rp_alloc(rp_heap *h, size_t size, size_t align) { return alloc_entry(h, size, align, NULL); }

void *rp_calloc(rp_heap *h, size_t n, size_t size, size_t align)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    /* Pages fresh from the OS are zero already: writing them would only fault them in (a
     * 1 GiB calloc would leave 1 GiB resident). */
    int zero;
    void *p = alloc_entry(h, total, align, &zero);
    if (p)
        memset(p, 0, zero ? rp_hook_alloc_written(total) : total);
    return p;
}

size_t rp_alloc_batch(rp_heap *h, size_t size, size_t align, void **out, size_t n)
{
    align = normal_align(align);
    h = rp_heap_resolve(h);
    if (!align || !h || n == 0 || rp_wants_pages(h, size, align)) {
        errno = EINVAL;
        return 0;
    }
    rp_fault f;
    f.kind = 0;
    size_t got = 0;
    rp_lock_acquire(&h->lock);
    while (got < n) {
        size_t k = rp_span_alloc_run(h, size, align, out + got, n - got, &f);
        if (!k)
            break;
        for (size_t i = got; i < got + k; i++)
            rp_hook_alloc(h, out[i], size, rp_block_usable(rp_block_of_user(out[i])), align, &f);
        got += k;
    }
    rp_lock_release(&h->lock);
    if (RP_UNLIKELY(f.kind))
        rp_report_fault(&f);
    if (got < n)
        errno = ENOMEM;
    return got;
}

/* The hardened profile's wipe of a block being freed (RP_HEAP_HARDENED): a span block is
 * zeroed, a page-tier block's pages are given back to the OS (zeros when read again; if the OS
 * refuses, they are zeroed instead). Heap locked. */
RP_NO_SANITIZE_ADDRESS
static void wipe_freed(void *p, const rp_located *loc)
{
    if (loc->tier == RP_TIER_PAGE && ((uintptr_t)p & (RP_PAGE_SIZE - 1)) == 0 &&
        rp_os_decommit(p, rp_align_up(loc->usable, RP_PAGE_SIZE)) == 0)
        return;
    memset(p, 0, loc->usable);
}

/* Frees a located block: the debug runtime may hold it back (quarantine). */
static void core_free(rp_heap *h, void *p, const rp_located *loc, rp_fault *f)
{
    int decision = rp_hook_free(h, p, loc->usable, f);
    if (decision != RP_HOOK_FREE_NOW)
        return;
    if (h->flags & RP_HEAP_HARDENED)
        wipe_freed(p, loc);
    if (loc->tier == RP_TIER_SPAN)
        rp_span_release(h, loc->block, f);
    else
        rp_large_release(h, loc->head);
}

/* Used by the debug runtime to release a block it held back (heap locked; hooks.h). */
void rp_core_release(rp_heap *h, void *p, rp_fault *f)
{
    rp_region *r = rp_pagemap_lookup(p);
    rp_located loc;
    if (!r || r->heap != h || rp_locate(h, r, p, &loc, f) != 0)
        return;
    if (loc.tier == RP_TIER_SPAN)
        rp_span_release(h, loc.block, f);
    else
        rp_large_release(h, loc.head);
}

/* The region owning p; a pointer in no rampart heap is reported (rp_report_foreign) and NULL
 * returned. `who` names the entry point in the message. */
static rp_region *owning_region(const void *p, const char *who)
{
    rp_region *r = rp_pagemap_lookup(p);
    if (RP_LIKELY(r != NULL))
        return r;
    rp_report_foreign(p, who);
    return NULL;
}

void rp_free(void *p)
{
    if (!p)
        return;
    rp_region *r = owning_region(p, "");
    if (RP_UNLIKELY(!r))
        return;
    rp_fault f;
    f.kind = 0;
    rp_heap *h = r->heap;
    rp_lock_acquire(&h->lock);
    rp_located loc;
    if (RP_LIKELY(rp_locate(h, r, p, &loc, &f) == 0))
        core_free(h, p, &loc, &f);
    rp_lock_release(&h->lock);
    if (RP_UNLIKELY(f.kind))
        rp_report_fault(&f);
}

/* Blocks of a batch that lie back to back, waiting to be released as one region. */
typedef struct pending_run {
    rp_block *lo;  /* first block, NULL when empty */
    uintptr_t hi;  /* end of the last block */
    size_t count;
} pending_run;

/* Releases the pending run; returns how many blocks it freed (0 on a fault). */
static size_t run_release(rp_heap *h, pending_run *run, rp_fault *f)
{
    if (!run->lo)
        return 0;
    rp_fault one;
    one.kind = 0;
    rp_span_release_run(h, run->lo, run->count, run->hi - (uintptr_t)run->lo, &one);
    run->lo = NULL;
    if (one.kind) {
        if (!f->kind)
            *f = one;
        return 0;
    }
    return run->count;
}

/* Adds span block b (at its address `at`, size bytes) to the pending run, first releasing
 * the run when b touches neither end of it. Returns the blocks that release freed. */
static inline size_t run_add(rp_heap *h, pending_run *run, rp_block *b, size_t size, rp_fault *f)
{
    uintptr_t at = (uintptr_t)b;
    if (run->lo && at == run->hi) {
        run->hi += size;
        run->count++;
        return 0;
    }
    if (run->lo && at + size == (uintptr_t)run->lo) {
        run->lo = b;
        run->count++;
        return 0;
    }
    size_t freed = run_release(h, run, f);
    run->lo = b;
    run->hi = at + size;
    run->count = 1;
    return freed;
}

/* 1 (and a fault in *f) if the block whose header is at `at` lies in the pending run: it
 * was freed earlier in this batch. */
static int run_holds(rp_heap *h, const pending_run *run, uintptr_t at, void *p, rp_fault *f)
{
    if (!run->lo || at < (uintptr_t)run->lo || at >= run->hi)
        return 0;
    rp_fault_set(f, RP_ERR_DOUBLE_FREE, h, p, p, 0, "%p in heap '%s' is freed twice in one batch", p, h->name);
    return 1;
}

/* One pointer of a batch, validated as rp_free validates it (the pending run released first
 * unless p joins it). Returns the blocks freed. */
RP_NO_SANITIZE_ADDRESS
static size_t batch_free_one(rp_heap *h, void *p, pending_run *run, rp_fault *f)
{
    rp_region *r = rp_pagemap_lookup(p);
    rp_block *b = rp_block_of_user(p);
    rp_located loc;
    if (!r || r->heap != h) {
        rp_fault_set(f, RP_ERR_INVALID_FREE, h, p, NULL, 0, "%p is not a block of heap '%s' (batch free)", p, h->name);
        return 0;
    }
    if (run_holds(h, run, (uintptr_t)b, p, f))
        return 0;
    /* The common case, the malloc drop-in's flushes, as free()'s fast path establishes it: a
     * pointer into h's pages whose header passes rp_user_header_live is a live span block
     * (the core marks every header it retires free, so no stale live header outlives its
     * block). Everything else takes rp_locate's full validation. */
    uint32_t size;
    if (RP_HOOK_PREFIX == 0 && rp_user_header_live(&h->key, p, &size))
        return run_add(h, run, b, size, f);
    if (rp_locate(h, r, p, &loc, f) != 0)
        return 0;
    if (loc.tier == RP_TIER_SPAN && RP_HOOK_PREFIX == 0)
        return run_add(h, run, loc.block, loc.block->size, f);
    size_t freed = run_release(h, run, f);
    rp_fault mine;
    mine.kind = 0;
    core_free(h, p, &loc, &mine);
    if (mine.kind)
        rp_fault_set(f, mine.kind, mine.heap, mine.address, mine.block, mine.block_size, "%s", mine.message);
    else
        freed++;
    return freed;
}

/* Ends a batch: releases the pending run and the lock, reports the first fault. */
static size_t batch_end(rp_heap *h, pending_run *run, rp_fault *f, size_t freed)
{
    rp_fault last;
    last.kind = 0;
    freed += run_release(h, run, &last);
    if (last.kind && !f->kind)
        *f = last;
    rp_lock_release(&h->lock);
    if (RP_UNLIKELY(f->kind))
        rp_report_fault(f);
    return freed;
}

size_t rp_free_batch(rp_heap *h, void *const *ptrs, size_t n)
{
    rp_fault f;
    f.kind = 0;
    size_t freed = 0;
    pending_run run = {NULL, 0, 0};
    rp_lock_acquire(&h->lock);
    for (size_t i = 0; i < n; i++) {
        rp_fault one;
        one.kind = 0;
        freed += batch_free_one(h, ptrs[i], &run, &one);
        if (one.kind && !f.kind)
            f = one;
    }
    return batch_end(h, &run, &f, freed);
}

size_t rp_usable_size(const void *p)
{
    if (!p)
        return 0;
    rp_region *r = owning_region(p, "rp_usable_size: ");
    if (!r)
        return 0;
    rp_fault f;
    f.kind = 0;
    rp_heap *h = r->heap;
    rp_located loc;
    size_t n = 0;
    rp_lock_acquire(&h->lock);
    if (rp_locate(h, r, p, &loc, &f) == 0 && rp_hook_access(h, (void *)p, loc.usable, 0, &f) == 0)
        n = rp_hook_usable(h, (void *)p, loc.usable);
    rp_lock_release(&h->lock);
    if (f.kind)
        rp_report_fault(&f);
    return n;
}

rp_heap *rp_heap_of(const void *p)
{
    if (!p)
        return NULL;
    rp_region *r = rp_pagemap_lookup(p);
    if (!r)
        return NULL;
    rp_heap *h = r->heap;
    rp_fault f;
    f.kind = 0;
    rp_located loc;
    rp_lock_acquire(&h->lock);
    int ok = rp_locate(h, r, p, &loc, &f) == 0;
    rp_lock_release(&h->lock);
    return ok ? h : NULL;
}

void *rp_realloc(rp_heap *h, void *p, size_t size)
{
    if (!p)
        return rp_alloc(h, size, 0);
    if (size > RP_MAX_REQUEST) {
        errno = ENOMEM;
        return NULL;
    }
    rp_region *r = owning_region(p, "rp_realloc: ");
    if (!r) {
        errno = EINVAL;
        return NULL;
    }
    rp_fault f;
    f.kind = 0;
    rp_heap *owner = r->heap;
    rp_heap *target = h ? h : owner;
    void *q = NULL;
    rp_located loc;
    rp_lock_acquire(&owner->lock);
    if (rp_locate(owner, r, p, &loc, &f) != 0 || rp_hook_access(owner, p, loc.usable, 1, &f) != 0)
        goto out;
    size_t old_usable = rp_hook_usable(owner, p, loc.usable);
    if (target == owner) {
        /* In place when the tier allows it: shrink, or grow into a free right neighbour.
         * A span block that would now belong to the page tier moves there instead of
         * growing (unless it shrinks). */
        int in_place = 0;
        if (rp_hook_realloc_moves())
            ; /* debug: the old block goes to quarantine, so stale pointers to it are caught */
        else if (loc.tier == RP_TIER_SPAN)
            in_place = (!rp_wants_pages(owner, size, loc.align) || size <= old_usable) &&
                       rp_span_resize(owner, loc.block, size, &f);
        else
            in_place = rp_large_resize(owner, loc.head, size);
        if (f.kind)
            goto out;
        if (!in_place && loc.tier != RP_TIER_SPAN) {
            /* A block with a mapping of its own moves without a copy (release flavour only:
             * rp_mapped_block_wanted, so no debug hook has to follow the move). */
            q = rp_large_move(owner, loc.head, size);
            if (q)
                goto out;
        }
        if (in_place) {
            size_t usable = loc.tier == RP_TIER_SPAN ? rp_block_usable(loc.block) : loc.head->u.large.usable;
            rp_hook_resize(owner, p, size, usable, &f);
            q = p;
            goto out;
        }
        /* A buffer that outgrew its place: the next one may be a mapping of its own, which
         * later moves take without a copy (mapped_block.h). */
        q = core_alloc(owner, size, loc.align, owner->realloc_mapped_bytes, &f, NULL);
        if (q) {
            memcpy(q, p, old_usable < size ? old_usable : size);
            core_free(owner, p, &loc, &f);
        }
        goto out;
    }
    rp_lock_release(&owner->lock);
    /* Into another heap: allocate there, copy, free here. */
    q = rp_alloc(target, size, loc.align);
    if (q) {
        memcpy(q, p, old_usable < size ? old_usable : size);
        rp_free(p);
    }
    return q;
out:
    rp_lock_release(&owner->lock);
    if (f.kind) {
        rp_report_fault(&f);
        if (!q) {
            errno = EINVAL;
            return NULL;
        }
    }
    if (!q)
        errno = ENOMEM;
    return q;
}

const char *rp_flavour(void)
{
#ifdef RAMPART_DEBUG
    return "debug";
#else
    return "release";
#endif
}
