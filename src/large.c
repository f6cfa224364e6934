#include "large.h"

#include "hooks.h"
#include "mapped_block.h"

/* Pages in front of the user pointer: none in release. The debug flavour needs
 * RP_HOOK_PREFIX bytes before the user area, so it puts a lead page (or, for alignments
 * above a page, one alignment unit) in front. */
static inline size_t lead_bytes(size_t align)
{
    if (RP_HOOK_PREFIX == 0)
        return 0;
    return align > RP_PAGE_SIZE ? align : RP_PAGE_SIZE;
}

void *rp_large_alloc(rp_heap *h, size_t size, size_t align, size_t mapped_from, size_t *usable, int *zero)
{
    size_t lead = lead_bytes(align);
    size_t bytes = lead + size + RP_HOOK_SUFFIX;
    if (bytes < size)
        return NULL;
    size_t npages = (bytes + RP_PAGE_SIZE - 1) >> RP_PAGE_SHIFT;
    if (npages == 0)
        npages = 1;
    unsigned align_order = align > RP_PAGE_SIZE ? rp_fls(align) - RP_PAGE_SHIFT : 0;
    rp_page *d = NULL;
    if (rp_mapped_block_wanted(h, bytes, align, mapped_from)) {
        d = rp_mapped_block_map(h, npages);
        if (d) { /* a mapping of its own (mapped_block.h): fresh pages, rounded up to 2 MiB */
            npages = d->npages;
            if (zero)
                *zero = 1;
        }
    }
    if (!d) {
        uint64_t examined = h->pages.examined;
        d = rp_heap_take_pages(h, npages, align_order);
        rp_heap_count_examined(h, h->pages.examined - examined); /* whatever the block's size */
        if (!d)
            return NULL;
        if (zero)
            *zero = h->pages.zero_run == d;
    }
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
    if (rp_region_is_mapped_block(d->region))
        rp_mapped_block_unmap(h, d);
    else
        rp_heap_give_pages(h, d->region, d, npages);
}

/* Counts a change of the block headed by d from old_npages pages to its present size. */
static void count_resize(rp_heap *h, rp_page *d, size_t old_npages)
{
    size_t now = (size_t)d->npages << RP_PAGE_SHIFT, before = old_npages << RP_PAGE_SHIFT;
    d->u.large.usable = d->u.large.usable + now - before;
    h->bytes_in_use = h->bytes_in_use + now - before;
    h->bytes_usable = h->bytes_usable + now - before;
}

/* Pages a block resized to size bytes needs (0 when the size overflows). */
static size_t resize_pages(const rp_page *d, size_t size)
{
    size_t lead = (size_t)d->u.large.lead_pages << RP_PAGE_SHIFT;
    size_t bytes = lead + size + RP_HOOK_SUFFIX;
    if (bytes < size)
        return 0;
    size_t npages = (bytes + RP_PAGE_SIZE - 1) >> RP_PAGE_SHIFT;
    return npages ? npages : 1;
}

void *rp_large_move(rp_heap *h, rp_page *d, size_t size)
{
    size_t npages = resize_pages(d, size), old_npages = d->npages;
    if (!npages || !rp_region_is_mapped_block(d->region) || rp_mapped_block_pages(npages) <= old_npages)
        return NULL;
    void *old_user = rp_large_user(d);
    rp_page *nd = rp_mapped_block_grow(h, d, npages);
    if (!nd)
        return NULL;
    count_resize(h, nd, old_npages);
    void *user = rp_large_user(nd);
    if (user != old_user) { /* a move counts as one allocation and one free, as a copy does */
        h->alloc_calls++;
        h->free_calls++;
    }
    return user;
}

int rp_large_resize(rp_heap *h, rp_page *d, size_t size)
{
    size_t npages = resize_pages(d, size);
    if (!npages)
        return 0;
    if (rp_region_is_mapped_block(d->region)) {
        /* In place only within its whole chunks (G1): growing past them is a move, and so is
         * shrinking below one chunk (into the heap, a copy of less than 2 MiB, rather than
         * 2 MiB kept for a small block). */
        size_t old_npages = d->npages, want = rp_mapped_block_pages(npages);
        if (want > old_npages || size < RP_MAPPED_BLOCK_ALIGN)
            return 0;
        if (want < old_npages) {
            rp_mapped_block_shrink(h, d, npages);
            count_resize(h, d, old_npages);
        }
        return 1;
    }
    size_t old_npages = d->npages;
    if (npages > old_npages) {
        rp_region *r = d->region;
        size_t resident_before = h->pages.resident_pages;
        if (npages > ((size_t)1 << 31) ||
            rp_page_tier_claim(&h->pages, r, rp_page_index(r, d) + old_npages, npages - old_npages) != 0)
            return 0;
        d->npages = (uint32_t)npages;
        count_resize(h, d, old_npages);
        rp_heap_took_pages(h, resident_before);
    } else if (npages < old_npages) {
        d->npages = (uint32_t)npages;
        count_resize(h, d, old_npages);
        rp_heap_give_pages(h, d->region, d + npages, old_npages - npages);
    }
    return 1;
}
