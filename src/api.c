/* The public allocation entry points: argument checks, routing between the two tiers,
 * locking, and delivery of faults after the lock is dropped. */
#include <errno.h>
#include <string.h>

#include "heap.h"
#include "hooks.h"
#include "large.h"
#include "locate.h"
#include "pagemap.h"
#include "span.h"

/* Which tier serves a request: whole pages for big sizes or alignments, and for
 * page-aligned requests of whole pages (so they carry no in-band header). */
static inline int wants_pages(const rp_heap *h, size_t size, size_t align)
{
    if (size >= h->large_threshold || align >= h->large_threshold)
        return 1;
    return align >= RP_PAGE_SIZE && size != 0 && (size & (RP_PAGE_SIZE - 1)) == 0;
}

static void *core_alloc(rp_heap *h, size_t size, size_t align, rp_fault *f)
{
    if (wants_pages(h, size, align)) {
        size_t usable;
        void *p = rp_large_alloc(h, size, align, &usable);
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

void *rp_alloc(rp_heap *h, size_t size, size_t align)
{
    align = normal_align(align);
    if (!align) {
        errno = EINVAL;
        return NULL;
    }
    h = rp_heap_resolve(h);
    if (!h || size > RP_MAX_REQUEST || align > RP_MAX_REQUEST) {
        errno = ENOMEM;
        return NULL;
    }
    rp_fault f;
    f.kind = 0;
    rp_lock_acquire(&h->lock);
    void *p = core_alloc(h, size, align, &f);
    rp_lock_release(&h->lock);
    if (RP_UNLIKELY(f.kind))
        rp_report_fault(&f);
    if (!p)
        errno = ENOMEM;
    return p;
}

void *rp_calloc(rp_heap *h, size_t n, size_t size, size_t align)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = rp_alloc(h, total, align);
    if (p)
        memset(p, 0, total);
    return p;
}

/* Frees a located block: the debug runtime may hold it back (quarantine). */
static void core_free(rp_heap *h, void *p, const rp_located *loc, rp_fault *f)
{
    int decision = rp_hook_free(h, p, loc->usable, f);
    if (decision != RP_HOOK_FREE_NOW)
        return;
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

/* The region owning p; a pointer in no rampart heap is reported (invalid-free) and NULL
 * returned. `who` names the entry point in the message. */
static rp_region *owning_region(const void *p, const char *who)
{
    rp_region *r = rp_pagemap_lookup(p);
    if (RP_LIKELY(r != NULL))
        return r;
    rp_fault f;
    f.kind = 0;
    rp_fault_set(&f, RP_ERR_INVALID_FREE, NULL, p, NULL, 0, "%s%p was not allocated by rampart (it is in no rampart heap)",
                 who, p);
    rp_report_fault(&f);
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
        int in_place;
        if (loc.tier == RP_TIER_SPAN)
            in_place = (!wants_pages(owner, size, loc.align) || size <= old_usable) &&
                       rp_span_resize(owner, loc.block, size, &f);
        else
            in_place = rp_large_resize(owner, loc.head, size);
        if (f.kind)
            goto out;
        if (in_place) {
            size_t usable = loc.tier == RP_TIER_SPAN ? rp_block_usable(loc.block) : loc.head->u.large.usable;
            rp_hook_resize(owner, p, size, usable, &f);
            q = p;
            goto out;
        }
        q = core_alloc(owner, size, loc.align, &f);
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
