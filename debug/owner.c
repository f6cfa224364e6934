#include "owner.h"

#include "debug_heap.h"
#include "src/large.h"
#include "src/pagemap.h"
#include "src/span.h"

/* Steps block by block from the span's first block (headers are validated; a damaged one
 * ends the search, and is left in *damaged when damaged is non-NULL). */
RP_NO_SANITIZE_ADDRESS
static rp_block *span_block_at(rp_heap *h, rp_region *r, const void *addr, rp_block **damaged)
{
    rp_page *head = rp_span_head_of(r, addr);
    uintptr_t lo = rp_page_addr(r, head);
    uintptr_t sentinel = lo + ((uintptr_t)head->npages << RP_PAGE_SHIFT) - RP_HEADER;
    uintptr_t a = (uintptr_t)addr;
    rp_block *b = (rp_block *)lo;
    while ((uintptr_t)b < sentinel) {
        if (!rp_block_valid(&h->key, b) || b->size < RP_MIN_BLOCK || (uintptr_t)b + b->size > sentinel) {
            if (damaged)
                *damaged = b;
            return NULL;
        }
        if (a < (uintptr_t)b + b->size)
            return (b->bits & RP_HDR_FREE) ? NULL : b;
        b = rp_block_next(b);
    }
    return NULL;
}

int rp_debug_find_owner(rp_heap *h, const void *addr, rp_debug_owner *out)
{
    rp_region *r = rp_pagemap_lookup(addr);
    if (!h || !r || r->heap != h || (uintptr_t)addr < r->base)
        return -1;
    int rc = -1;
    rp_lock_acquire(&h->lock);
    rp_page *d = rp_page_of(r, addr);
    if (d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL) {
        rp_block *b = span_block_at(h, r, addr, NULL);
        if (b) {
            out->user = rp_block_user(b);
            out->usable = rp_block_usable(b);
            rc = 0;
        }
    } else {
        /* Walk back to the head of the page-tier block. */
        size_t i = (size_t)(d - r->pages);
        for (;;) {
            rp_page *x = &r->pages[i];
            if (x->state == RP_PAGE_LARGE) {
                if (i + x->npages > (size_t)(d - r->pages)) {
                    out->user = rp_large_user(x);
                    out->usable = x->u.large.usable;
                    rc = 0;
                }
                break;
            }
            if (x->state == RP_PAGE_FREE || x->state == RP_PAGE_SPAN || i == 0)
                break;
            i--;
        }
    }
    if (rc == 0) {
        rp_meta_load(out->user, &out->meta);
        out->meta_ok = out->meta.seal == rp_meta_seal(rp_debug_secret(h), out->user, &out->meta);
    }
    rp_lock_release(&h->lock);
    return rc;
}

int rp_debug_damaged_block_at(rp_heap *h, const void *user)
{
    rp_region *r = rp_pagemap_lookup(user);
    if (!h || !r || r->heap != h || (uintptr_t)user < r->base)
        return 0;
    int hit = 0;
    rp_lock_acquire(&h->lock);
    rp_page *d = rp_page_of(r, user);
    if (d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL) {
        rp_block *damaged = NULL;
        hit = !span_block_at(h, r, user, &damaged) && damaged && (char *)damaged + RP_USER_OFFSET == (const char *)user;
    }
    rp_lock_release(&h->lock);
    return hit;
}
