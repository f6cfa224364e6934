#include "large.h"

#include "hooks.h"

/* Pages in front of the user pointer: none in release. The debug flavour needs
 * RP_HOOK_PREFIX bytes before the user area, so it puts a lead page (or, for alignments
 * above a page, one alignment unit) in front. */
static inline size_t lead_bytes(size_t align)
{
    if (RP_HOOK_PREFIX == 0)
        return 0;
    return align > RP_PAGE_SIZE ? align : RP_PAGE_SIZE;
}

void *rp_large_alloc(rp_heap *h, size_t size, size_t align, size_t *usable, int *zero)
{
    size_t lead = lead_bytes(align);
    size_t bytes = lead + size + RP_HOOK_SUFFIX;
    if (bytes < size)
        return NULL;
    size_t npages = (bytes + RP_PAGE_SIZE - 1) >> RP_PAGE_SHIFT;
    if (npages == 0)
        npages = 1;
    unsigned align_order = align > RP_PAGE_SIZE ? rp_fls(align) - RP_PAGE_SHIFT : 0;
    uint64_t examined = h->pages.examined;
    rp_page *d = rp_heap_take_pages(h, npages, align_order);
    rp_heap_count_examined(h, h->pages.examined - examined); /* whatever the block's size */
    if (!d)
        return NULL;
    if (zero)
        *zero = h->pages.zero_run == d;
    d->state = RP_PAGE_LARGE;
    d->npages = (uint32_t)npages;
    d->align_log2 = (uint8_t)rp_fls(align);
    d->u.large.lead_pages = (uint32_t)(lead >> RP_PAGE_SHIFT);
    d->u.large.usable = (npages << RP_PAGE_SHIFT) - lead;
    if (lead) {
        rp_page *body = d + d->u.large.lead_pages;
        body->state = RP_PAGE_LARGE_BODY;
        body->npages = d->u.large.lead_pages;
    }
    h->blocks_in_use++;
    h->large_blocks++;
    h->bytes_in_use += npages << RP_PAGE_SHIFT;
    h->bytes_usable += d->u.large.usable;
    h->alloc_calls++;
    *usable = d->u.large.usable;
    return rp_large_user(d);
}

void rp_large_release(rp_heap *h, rp_page *d)
{
    size_t npages = d->npages;
    if (d->u.large.lead_pages) {
        rp_page *body = d + d->u.large.lead_pages;
        body->state = RP_PAGE_NONE;
        body->npages = 0;
    }
    h->blocks_in_use--;
    h->large_blocks--;
    h->bytes_in_use -= npages << RP_PAGE_SHIFT;
    h->bytes_usable -= d->u.large.usable;
    h->free_calls++;
    d->state = RP_PAGE_NONE;
    rp_heap_give_pages(h, d->region, d, npages);
}

int rp_large_resize(rp_heap *h, rp_page *d, size_t size)
{
    size_t lead = (size_t)d->u.large.lead_pages << RP_PAGE_SHIFT;
    size_t bytes = lead + size + RP_HOOK_SUFFIX;
    if (bytes < size)
        return 0;
    size_t npages = (bytes + RP_PAGE_SIZE - 1) >> RP_PAGE_SHIFT;
    if (npages == 0)
        npages = 1;
    if (npages > d->npages) {
        rp_region *r = d->region;
        size_t extra = npages - d->npages;
        if (npages > ((size_t)1 << 31) ||
            rp_page_tier_claim(&h->pages, r, rp_page_index(r, d) + d->npages, extra) != 0)
            return 0;
        d->npages = (uint32_t)npages;
        d->u.large.usable += extra << RP_PAGE_SHIFT;
        h->bytes_in_use += extra << RP_PAGE_SHIFT;
        h->bytes_usable += extra << RP_PAGE_SHIFT;
        return 1;
    }
    if (npages < d->npages) {
        size_t drop = d->npages - npages;
        d->npages = (uint32_t)npages;
        d->u.large.usable -= drop << RP_PAGE_SHIFT;
        h->bytes_in_use -= drop << RP_PAGE_SHIFT;
        h->bytes_usable -= drop << RP_PAGE_SHIFT;
        rp_heap_give_pages(h, d->region, d + npages, drop);
    }
    return 1;
}
