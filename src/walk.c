#include "walk.h"

#include <errno.h>
#include <stdio.h>

#include "hooks.h"
#include "large.h"

RP_NO_SANITIZE_ADDRESS
static int walk_span(rp_heap *h, rp_region *r, rp_page *head, rp_block_visit visit, void *arg, char *why,
                     size_t len)
{
    uintptr_t lo = rp_page_addr(r, head);
    uintptr_t sentinel = lo + ((uintptr_t)head->npages << RP_PAGE_SHIFT) - RP_HEADER;
    rp_block *b = (rp_block *)lo;
    while ((uintptr_t)b < sentinel) {
        /* Never step on a size that leaves the span or cannot be a block. */
        if (b->size < RP_MIN_BLOCK || (b->size & (RP_GRANULE - 1)) || (uintptr_t)b + b->size > sentinel) {
            if (why)
                snprintf(why, len, "span %p: block %p has impossible size %u", (void *)lo, (void *)b, b->size);
            return -1;
        }
        rp_block_info info = {0};
        info.block = b;
        info.block_size = b->size;
        info.tier = RP_TIER_SPAN;
        if (b->bits & RP_HDR_FREE) {
            info.state = RP_BLOCK_FREE;
            info.addr = b;
            info.size = b->size;
        } else {
            info.state = RP_BLOCK_USED;
            info.addr = rp_block_user(b);
            info.size = rp_block_usable(b);
            info.align = (size_t)1 << rp_block_align_log2(b);
            rp_hook_block_info(h, &info);
        }
        int rc = visit(h, r, &info, arg);
        if (rc)
            return rc;
        b = rp_block_next(b);
    }
    return 0;
}

int rp_walk_locked(rp_heap *h, rp_block_visit visit, void *arg, char *why, size_t len)
{
    for (rp_region *r = h->regions; r; r = r->next) {
        /* R1, R2 first: a damaged region header would send the walk outside the heap. */
        if (r->magic != RP_REGION_MAGIC || r->heap != h || r->base < r->mem_lo ||
            r->base >= r->mem_hi || r->npages > ((r->mem_hi - r->base) >> RP_PAGE_SHIFT)) {
            if (why)
                snprintf(why, len, "region %p: damaged header (magic, heap or page area)", (void *)r);
            return -1;
        }
        for (size_t i = 0; i < r->npages;) {
            rp_page *d = &r->pages[i];
            size_t n = d->npages;
            /* Before anything is derived from a head (a large block's user pointer goes to the
             * debug runtime, which reads the memory before it): D1, D5 and the large-block
             * layout of D2. */
            if ((d->state != RP_PAGE_FREE && d->state != RP_PAGE_LARGE && d->state != RP_PAGE_SPAN) || n == 0 ||
                n > r->npages - i || d->region != r || (d->state == RP_PAGE_LARGE && !rp_large_lead_valid(d, n))) {
                if (why)
                    snprintf(why, len, "region %p: page %zu (%p) is not a valid block head (state %u, npages %u)",
                             (void *)r, i, (void *)rp_page_addr(r, d), d->state, d->npages);
                return -1;
            }
            int rc = 0;
            if (d->state == RP_PAGE_SPAN) {
                rc = walk_span(h, r, d, visit, arg, why, len);
            } else {
                rp_block_info info = {0};
                info.block = (void *)rp_page_addr(r, d);
                info.block_size = n << RP_PAGE_SHIFT;
                info.tier = RP_TIER_PAGE;
                if (d->state == RP_PAGE_FREE) {
                    info.state = RP_BLOCK_FREE;
                    info.addr = info.block;
                    info.size = info.block_size;
                } else {
                    info.state = RP_BLOCK_USED;
                    info.addr = rp_large_user(d);
                    info.size = d->u.large.usable;
                    info.align = (size_t)1 << d->align_log2;
                    rp_hook_block_info(h, &info);
                }
                rc = visit(h, r, &info, arg);
            }
            if (rc)
                return rc;
            i += n;
        }
    }
    return 0;
}

/* ---- public walk ---- */

struct public_walk {
    rp_walk_fn fn;
    void *arg;
};

static int public_visit(rp_heap *h, rp_region *r, const rp_block_info *info, void *arg)
{
    (void)h, (void)r;
    struct public_walk *w = arg;
    return w->fn(info, w->arg);
}

int rp_heap_walk(rp_heap *h, rp_walk_fn fn, void *arg)
{
    h = rp_heap_resolve(h);
    if (!h || !fn) {
        errno = EINVAL;
        return -1;
    }
    struct public_walk w = {fn, arg};
    rp_lock_acquire(&h->lock);
    int rc = rp_walk_locked(h, public_visit, &w, NULL, 0);
    rp_lock_release(&h->lock);
    if (rc == -1)
        errno = EFAULT;
    return rc;
}
