#include "page_tier.h"

#include "bits.h"
#include "resident.h"

/* Pages [d, d + npages) of r leave the free lists for use: they become resident (B5). */
static void hand_out(rp_page_tier *t, rp_region *r, rp_page *d, size_t npages)
{
    t->zero_run = NULL;
    if (!r->resident) /* caller memory: its contents are unknown */
        return;
    size_t fresh = rp_resident_set(r->resident, rp_page_index(r, d), npages);
    t->resident_pages += fresh;
    t->held_pages += npages;
    if (fresh == npages)
        t->zero_run = d;
}

static void give_free(rp_page_tier *t, rp_region *r, rp_page *d, size_t npages);

static inline uintptr_t abs_page(const rp_region *r, const rp_page *d)
{
    return (r->base >> RP_PAGE_SHIFT) + (uintptr_t)(d - r->pages);
}

void rp_page_tier_link(rp_page_tier *t, rp_page *d, unsigned order)
{
    d->state = RP_PAGE_FREE;
    d->flags = 0;
    d->order = (uint8_t)order;
    d->npages = (uint32_t)((size_t)1 << order);
    d->u.free.prev = NULL;
    d->u.free.next = t->lists[order];
    if (d->u.free.next)
        d->u.free.next->u.free.prev = d;
    t->lists[order] = d;
    t->nonempty |= (uint64_t)1 << order;
    t->free_pages += (size_t)1 << order;
    t->blocks[order]++;
    d->region->free_pages += (size_t)1 << order;
}

void rp_page_tier_unlink(rp_page_tier *t, rp_page *d)
{
    unsigned order = d->order;
    if (d->u.free.prev)
        d->u.free.prev->u.free.next = d->u.free.next;
    else
        t->lists[order] = d->u.free.next;
    if (d->u.free.next)
        d->u.free.next->u.free.prev = d->u.free.prev;
    if (!t->lists[order])
        t->nonempty &= ~((uint64_t)1 << order);
    t->free_pages -= (size_t)1 << order;
    t->blocks[order]--;
    d->region->free_pages -= (size_t)1 << order;
    d->state = RP_PAGE_NONE;
    d->u.free.next = d->u.free.prev = NULL;
}

static rp_page *take_block(rp_page_tier *t, unsigned order)
{
    if (order >= RP_ORDERS)
        return NULL;
    uint64_t candidates = t->nonempty & (~(uint64_t)0 << order);
    if (!candidates)
        return NULL;
    unsigned k = rp_ctz(candidates);
    rp_page *d = t->lists[k];
    t->examined++;
    rp_page_tier_unlink(t, d);
    /* Split down: the upper halves go back as free blocks of decreasing order. */
    while (k > order) {
        k--;
        rp_page *upper = d + ((size_t)1 << k);
        upper->region = d->region;
        rp_page_tier_link(t, upper, k);
    }
    d->npages = (uint32_t)((size_t)1 << order);
    return d;
}

rp_page *rp_page_tier_take(rp_page_tier *t, unsigned order)
{
    rp_page *d = take_block(t, order);
    if (d)
        hand_out(t, d->region, d, (size_t)1 << order);
    return d;
}

rp_page *rp_page_tier_take_run(rp_page_tier *t, size_t npages, unsigned align_order)
{
    if (npages == 0 || npages > ((size_t)1 << 31))
        return NULL;
    unsigned order = rp_ceil_log2(npages);
    if (order < align_order)
        order = align_order;
    rp_page *d = take_block(t, order);
    if (!d)
        return NULL;
    size_t block = (size_t)1 << order;
    d->npages = (uint32_t)npages;
    if (block > npages) {
        /* The head must not look free while its tail coalesces. */
        d->state = RP_PAGE_LARGE;
        give_free(t, d->region, d + npages, block - npages);
        d->state = RP_PAGE_NONE;
    }
    hand_out(t, d->region, d, npages);
    return d;
}

/* Can the free block d (already known free) be extended forward to cover npages pages using
 * only free blocks? Returns the number of pages of the last block used, 0 if not. */
static size_t run_extends(rp_page_tier *t, const rp_region *r, const rp_page *d, size_t npages)
{
    size_t pos = rp_page_index(r, d), end = pos + npages;
    for (int pieces = 0; pieces < RP_RUN_MAX_PIECES; pieces++) {
        if (pos >= r->npages)
            return 0;
        const rp_page *e = &r->pages[pos];
        t->run_examined++;
        if (e->state != RP_PAGE_FREE)
            return 0;
        if (pos + e->npages >= end)
            return e->npages;
        pos += e->npages;
    }
    return 0;
}

/* Takes the free blocks covering [first, first + npages) of r off the lists (run_extends
 * said they exist) and hands the run out; the last block's overhang goes back. */
static void unlink_run(rp_page_tier *t, rp_region *r, size_t first, size_t npages)
{
    size_t pos = first, end = first + npages;
    while (pos < end) {
        rp_page *e = &r->pages[pos];
        size_t n = e->npages;
        rp_page_tier_unlink(t, e);
        if (pos + n > end)
            give_free(t, r, &r->pages[end], pos + n - end);
        pos += n;
    }
    hand_out(t, r, &r->pages[first], npages);
}

int rp_page_tier_claim(rp_page_tier *t, rp_region *r, size_t first, size_t npages)
{
    if (npages == 0 || first >= r->npages || npages > r->npages - first)
        return -1;
    rp_page *d = &r->pages[first];
    if (d->state != RP_PAGE_FREE || !run_extends(t, r, d, npages))
        return -1;
    unlink_run(t, r, first, npages);
    return 0;
}

rp_page *rp_page_tier_take_run_assembled(rp_page_tier *t, size_t npages, unsigned align_order)
{
    if (npages < 2 || npages > ((size_t)1 << 31))
        return NULL;
    unsigned top = rp_ceil_log2(npages);
    for (unsigned j = top; j-- > align_order;) {
        rp_page *d = t->lists[j];
        if (!d || !run_extends(t, d->region, d, npages))
            continue;
        unlink_run(t, d->region, rp_page_index(d->region, d), npages);
        d->npages = (uint32_t)npages;
        return d;
    }
    return NULL;
}

/* Frees one naturally aligned block of 2^order pages at d, merging with free buddies. */
static void give_block(rp_page_tier *t, rp_region *r, rp_page *d, unsigned order)
{
    uintptr_t first = r->base >> RP_PAGE_SHIFT;
    uintptr_t page = abs_page(r, d);
    while (order + 1 < RP_ORDERS) {
        uintptr_t buddy_page = page ^ ((uintptr_t)1 << order);
        if (buddy_page < first || buddy_page + ((uintptr_t)1 << order) > first + r->npages)
            break;
        rp_page *b = &r->pages[buddy_page - first];
        if (b->state != RP_PAGE_FREE || b->order != order)
            break;
        rp_page_tier_unlink(t, b);
        if (buddy_page < page) {
            page = buddy_page;
            d = b;
        }
        order++;
    }
    d->region = r;
    rp_page_tier_link(t, d, order);
}

/* Links the free run [d, d + npages) into the lists (no change to what is held). */
static void give_free(rp_page_tier *t, rp_region *r, rp_page *d, size_t npages)
{
    while (npages > 0) {
        uintptr_t page = abs_page(r, d);
        /* Largest block that is aligned at `page` and fits in what is left. */
        unsigned order = rp_fls(npages);
        if (page != 0 && rp_ctz(page) < order)
            order = rp_ctz(page);
        if (order >= RP_ORDERS)
            order = RP_ORDERS - 1;
        rp_page *next = d + ((size_t)1 << order);
        npages -= (size_t)1 << order;
        d->state = RP_PAGE_NONE;
        give_block(t, r, d, order);
        d = next;
    }
}

void rp_page_tier_give(rp_page_tier *t, rp_region *r, rp_page *d, size_t npages)
{
    /* Its pages stay resident (their bits stay set): they are the heap's dirty memory now. */
    if (r->resident)
        t->held_pages -= npages;
    give_free(t, r, d, npages);
}

void rp_page_tier_add_region(rp_page_tier *t, rp_region *r)
{
    if (r->resident)
        t->resident_pages += rp_resident_count(r->resident, 0, r->npages);
    if (r->npages)
        give_free(t, r, &r->pages[0], r->npages);
}

void rp_page_tier_remove_region(rp_page_tier *t, rp_region *r)
{
    if (r->resident)
        t->resident_pages -= rp_resident_count(r->resident, 0, r->npages);
    for (size_t i = 0; i < r->npages;) {
        rp_page *d = &r->pages[i];
        size_t n = d->state == RP_PAGE_FREE ? d->npages : 1;
        if (d->state == RP_PAGE_FREE)
            rp_page_tier_unlink(t, d);
        i += n;
    }
}

size_t rp_page_tier_largest(const rp_page_tier *t)
{
    if (!t->nonempty)
        return 0;
    return RP_PAGE_SIZE << rp_fls(t->nonempty);
}

rp_page *rp_page_tier_free_head(rp_region *r, size_t index)
{
    uintptr_t first = r->base >> RP_PAGE_SHIFT, page = first + index;
    /* A free block of order k holding the page starts at the page rounded down to 2^k pages;
     * only heads of free blocks have state FREE. */
    for (unsigned k = 0; k < RP_ORDERS; k++) {
        uintptr_t head = page & ~(((uintptr_t)1 << k) - 1);
        if (head < first)
            break;
        rp_page *d = &r->pages[head - first];
        if (d->state == RP_PAGE_FREE && d->order >= k && head + ((uintptr_t)1 << d->order) > page)
            return d;
    }
    return NULL;
}

size_t rp_page_tier_block_resident(const rp_region *r, const rp_page *d)
{
    if (!r->resident)
        return 0;
    return rp_resident_count(r->resident, rp_page_index(r, d), (size_t)1 << d->order);
}

void rp_page_tier_decommitted(rp_page_tier *t, rp_region *r, rp_page *d)
{
    if (r->resident)
        t->resident_pages -= rp_resident_clear(r->resident, rp_page_index(r, d), (size_t)1 << d->order);
}
