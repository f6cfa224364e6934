#include "span.h"

#include "hooks.h"
#include "pagemap.h"

rp_page *rp_span_head_of(rp_region *r, const void *p)
{
    rp_page *d = rp_page_of(r, p);
    return d->state == RP_PAGE_SPAN_TAIL ? d - d->npages : d;
}

/* Error paths only: the block of h's spans that holds address p, found by walking its span
 * from the first block, every header validated, never past the sentinel. NULL when p is in
 * no span of h or a header on the way is damaged. */
RP_NO_SANITIZE_ADDRESS
static rp_block *block_holding(rp_heap *h, const void *p)
{
    rp_region *r = rp_pagemap_lookup(p);
    if (!r || r->heap != h || (uintptr_t)p < r->base || (uintptr_t)p >= r->base + (r->npages << RP_PAGE_SHIFT))
        return NULL;
    rp_page *head = rp_span_head_of(r, p);
    if (head->state != RP_PAGE_SPAN)
        return NULL;
    uintptr_t lo = rp_page_addr(r, head);
    uintptr_t sentinel = lo + ((uintptr_t)head->npages << RP_PAGE_SHIFT) - RP_HEADER;
    for (rp_block *x = (rp_block *)lo; (uintptr_t)x < sentinel; x = rp_block_next(x)) {
        if (!rp_block_valid(&h->key, x) || x->size < RP_MIN_BLOCK || (x->size & (RP_GRANULE - 1)) ||
            (uintptr_t)x + x->size > sentinel)
            return NULL;
        if ((uintptr_t)p < (uintptr_t)x + x->size)
            return x;
    }
    return NULL;
}

RP_NO_SANITIZE_ADDRESS
int rp_span_refuse_leftover(rp_heap *h, rp_block *b, rp_fault *f)
{
    rp_block *x = block_holding(h, b);
    if (!x || x == b)
        return 0;
    void *p = rp_block_user(b);
    if (x->bits & RP_HDR_FREE)
        rp_fault_set(f, RP_ERR_DOUBLE_FREE, h, p, p, rp_block_usable(b),
                     "%p in heap '%s' is already free (merged into the free block at %p)", p, h->name, (void *)x);
    else
        rp_fault_set(f, RP_ERR_INVALID_FREE, h, p, rp_block_user(x), rp_block_usable(x),
                     "%p is inside block %p of heap '%s' (freed earlier, its memory since reused)", p,
                     rp_block_user(x), h->name);
    return 1;
}

/* Makes the pages [d, d + pages) one span holding one free block (not on the index) and
 * returns that block. */
RP_NO_SANITIZE_ADDRESS
static rp_block *span_init(rp_heap *h, rp_page *d, size_t pages)
{
    d->state = RP_PAGE_SPAN;
    d->npages = (uint32_t)pages;
    for (size_t i = 1; i < pages; i++) {
        d[i].state = RP_PAGE_SPAN_TAIL;
        d[i].npages = (uint32_t)i;
    }
    size_t bytes = pages << RP_PAGE_SHIFT;
    h->spans++;
    h->span_bytes += bytes;
    rp_block *b = (rp_block *)rp_page_addr(d->region, d);
    uint32_t size = (uint32_t)(bytes - RP_HEADER);
    rp_block_write(&h->key, b, 0, size, RP_HDR_FREE);
    rp_block_write(&h->key, rp_block_next(b), size, 0, RP_HDR_SENTINEL | RP_HDR_PREV_FREE);
    rp_hook_span_freed(h, (char *)b + RP_MIN_BLOCK, size - RP_MIN_BLOCK);
    return b;
}

/* Does a new span of pages pages come with a second one, the pair filling one huge page?
 *
 * With transparent huge pages the first header written in a fresh 2 MiB page faults in all of
 * it (zeroing 2 MiB at once, and more when the hypervisor backs it for the first time).
 * Preferred-size spans therefore come in pairs from one huge page: the second becomes
 * the spare (H4), so the next span the heap needs is memory that page fault already paid for,
 * rather than a fresh huge page while the first one's other half went to large blocks that
 * may never be touched. */
static int span_pairs(const rp_heap *h, size_t pages)
{
    return (h->flags & RP_HEAP_HUGE_PAGES) && !h->spare_span && pages == h->span_pages &&
           ((2 * pages) << RP_PAGE_SHIFT) == RP_HUGE_PAGE_BYTES;
}

/* Takes a pair of spans of pages pages each as one aligned block, from free pages (grow 0) or
 * from the page tier or a new region (grow 1); the second is set up as the spare. Returns the
 * first one's pages, or NULL (nothing taken). */
static rp_page *take_span_pair(rp_heap *h, size_t pages, int grow)
{
    size_t pair = 2 * pages;
    unsigned order = rp_ceil_log2(pair);
    rp_page *d = grow ? rp_heap_take_pages(h, pair, order) : rp_page_tier_take_run(&h->pages, pair, order);
    if (!d)
        return NULL;
    d[pages].region = d->region; /* a head from here on (region is valid on heads only) */
    rp_block *second = span_init(h, d + pages, pages);
    rp_free_index_insert(&h->index, second);
    h->spare_span = second;
    return d;
}

/* Takes the pages of a new span of at least min_pages pages; *pages is set to its size.
 *
 * The preferred size (or the request's power of two, if larger) comes from free pages first,
 * in pairs when huge pages are on. A heap that maps its own memory then settles for the
 * largest free block if it is at least 1/16 of the preferred size (a thread arena's small
 * first region holds little more than the thread cache: what is left of it serves the
 * thread's first blocks), and otherwise grows: a span of a few pages carved out of leftovers
 * fills after a few dozen blocks, and every refill then pays for another. Caller memory, or a
 * heap the OS refused to grow, settles for what the request needs. */
static rp_page *take_span_pages_from(rp_heap *h, size_t min_pages, size_t *pages)
{
    size_t want = (size_t)1 << rp_ceil_log2(min_pages);
    if (want < h->span_pages)
        want = h->span_pages;
    *pages = want;
    int pair = span_pairs(h, want);
    rp_page *d = pair ? take_span_pair(h, want, 0) : NULL;
    if (!d)
        d = rp_page_tier_take_run(&h->pages, want, 0);
    if (d)
        return d;
    if (!(h->flags & RP_HEAP_NO_OS)) {
        size_t largest = rp_page_tier_largest(&h->pages) >> RP_PAGE_SHIFT;
        /* Below want: a free block of want pages or more would have been taken above. */
        if (largest >= min_pages && largest >= h->span_pages / 16) {
            d = rp_page_tier_take_run(&h->pages, largest, 0);
            if (d) {
                *pages = largest;
                return d;
            }
        }
        /* Growing by a pair only where the next region is a huge page or more anyway: a
         * heap whose first region is kept small (a thread arena's) is not made to map 2 MiB. */
        d = pair && h->next_region_pages >= 2 * want ? take_span_pair(h, want, 1) : NULL;
        if (!d)
            d = rp_heap_take_pages(h, want, 0);
        if (d)
            return d;
    }
    if (want > min_pages) {
        d = rp_page_tier_take_run(&h->pages, min_pages, 0);
        if (d) {
            *pages = min_pages;
            return d;
        }
    }
    if (h->flags & RP_HEAP_NO_OS) {
        d = rp_heap_take_pages(h, want, 0); /* free pages not in one aligned block */
        if (d)
            return d;
    }
    if (want == min_pages)
        return NULL;
    *pages = min_pages;
    return rp_heap_take_pages(h, min_pages, 0);
}

static rp_page *take_span_pages(rp_heap *h, size_t min_pages, size_t *pages)
{
    size_t resident_before = h->pages.resident_pages;
    rp_page *d = take_span_pages_from(h, min_pages, pages);
    if (d)
        rp_heap_took_pages(h, resident_before);
    return d;
}

/* Takes pages for a new span able to hold a free block of at least min_block bytes and
 * returns that block (not yet on the index), or NULL. */
static rp_block *span_create(rp_heap *h, size_t min_block)
{
    size_t min_pages = (min_block + RP_HEADER + RP_PAGE_SIZE - 1) >> RP_PAGE_SHIFT;
    if (min_pages > (RP_MAX_SPAN_BYTES >> RP_PAGE_SHIFT))
        return NULL;
    size_t pages;
    rp_page *d = take_span_pages(h, min_pages, &pages);
    return d ? span_init(h, d, pages) : NULL;
}

/* Gives a wholly free span (b covers all of it, not on the index) back to the page tier. */
static void span_destroy(rp_heap *h, rp_block *b)
{
    rp_region *r = rp_pagemap_lookup(b);
    rp_page *d = rp_page_of(r, b);
    size_t pages = d->npages;
    for (size_t i = 1; i < pages; i++) {
        d[i].state = RP_PAGE_NONE;
        d[i].npages = 0;
    }
    d->state = RP_PAGE_NONE;
    h->spans--;
    h->span_bytes -= pages << RP_PAGE_SHIFT;
    rp_heap_give_pages(h, r, d, pages);
}

/* Leading gap in front of the aligned user pointer when carving from b (0, or a free block of
 * at least RP_MIN_BLOCK bytes). */
static inline size_t aligned_lead(const rp_block *b, size_t align)
{
    uintptr_t user = rp_ptr_align_up((uintptr_t)b + RP_USER_OFFSET, align);
    size_t lead = user - RP_USER_OFFSET - (uintptr_t)b;
    if (lead != 0 && lead < RP_MIN_BLOCK)
        lead += align;
    return lead;
}

/* Carves [b + lead, b + lead + need) out of the free block b (already off the index):
 * the leading gap and the tail, if big enough, become free blocks on their own classes. */
RP_NO_SANITIZE_ADDRESS
static rp_block *carve(rp_heap *h, rp_block *b, size_t lead, size_t need, unsigned align_log2)
{
    const rp_mac_key *key = &h->key;
    size_t total = b->size;
    uint32_t prev_size = b->prev_size;
    uint32_t prev_bits = 0; /* b is free, so its previous block is used (K5) */
    rp_block *a = b;
    if (lead) {
        rp_block_write(key, b, prev_size, (uint32_t)lead, RP_HDR_FREE);
        rp_free_index_insert(&h->index, b);
        a = (rp_block *)((char *)b + lead);
        prev_size = (uint32_t)lead;
        prev_bits = RP_HDR_PREV_FREE;
    }
    size_t rest = total - lead - need;
    size_t a_size = need;
    rp_block *next;
    if (rest >= RP_MIN_BLOCK) {
        rp_block *tail = (rp_block *)((char *)a + need);
        rp_block_write(key, tail, (uint32_t)need, (uint32_t)rest, RP_HDR_FREE);
        rp_free_index_insert(&h->index, tail);
        next = rp_block_next(tail);
        rp_block_store(&next->prev_size, (uint32_t)rest);
    } else {
        a_size = need + rest;
        next = (rp_block *)((char *)a + a_size);
        rp_block_store(&next->prev_size, (uint32_t)a_size);
        rp_block_store(&next->bits, next->bits & ~(uint32_t)RP_HDR_PREV_FREE);
    }
    rp_block_reseal(key, next);
    rp_block_write(key, a, prev_size, (uint32_t)a_size, prev_bits | (align_log2 << RP_HDR_ALIGN_SHIFT));
    return a;
}

/* Validates a block taken from the index before using it. */
RP_NO_SANITIZE_ADDRESS
static int index_block_ok(rp_heap *h, rp_block *b, rp_fault *f)
{
    if (RP_LIKELY(rp_block_valid(&h->key, b) && (b->bits & RP_HDR_FREE)))
        return 1;
    rp_fault_set(f, RP_ERR_CORRUPT_FREE_LIST, h, b, NULL, 0,
                 "free list of heap '%s' leads to %p, which is not a valid free block "
                 "(free-list link or block header overwritten)", h->name, (void *)b);
    return 0;
}

/* Takes b off the index before it is carved. 0, or -1 with a fault when its links do not
 * point back at it (written after free): handing it out would leave it listed as free. */
static int take_from_index(rp_heap *h, rp_block *b, rp_fault *f)
{
    if (RP_UNLIKELY(rp_free_index_remove(&h->index, b) != 0)) {
        rp_fault_set(f, RP_ERR_CORRUPT_FREE_LIST, h, b, NULL, 0,
                     "free-list links of free block %p are inconsistent (written after free?)", (void *)b);
        return -1;
    }
    if (b == h->spare_span)
        h->spare_span = NULL;
    return 0;
}

/* FT2 (span.h): the heap could not take a new span. The lists the O(1) searches skipped, from
 * the class of need up (the classes above the searches' start are empty, or they would have
 * found a block), for one that holds need at the alignment; at most RP_FIT_SCAN_MAX blocks
 * read. NULL if none (or on corruption, recorded in *f). */
RP_NO_SANITIZE_ADDRESS
static rp_block *fit_scan(rp_heap *h, size_t need, size_t align, size_t *lead, rp_fault *f)
{
    unsigned fl, sl;
    rp_class_of(need, &fl, &sl);
    size_t budget = RP_FIT_SCAN_MAX;
    for (; fl < RP_FL_COUNT; fl++, sl = 0) {
        for (uint32_t map = h->index.sl_bitmap[fl] & (~0u << sl); map; map &= map - 1) {
            for (rp_block *b = h->index.heads[fl][rp_ctz(map)]; b && budget; b = rp_links(b)->next, budget--) {
                if (!index_block_ok(h, b, f))
                    return NULL;
                size_t l = align <= RP_MIN_ALIGN ? 0 : aligned_lead(b, align);
                if (l + need <= b->size) {
                    *lead = l;
                    return b;
                }
            }
        }
    }
    return NULL;
}

RP_NO_SANITIZE_ADDRESS
void *rp_span_alloc(rp_heap *h, size_t size, size_t align, rp_fault *f)
{
    size_t need = rp_span_block_need(size);
    size_t lead = 0;
    uint64_t examined = 0;
    rp_block *b = NULL;
    if (align <= RP_MIN_ALIGN) {
        b = rp_free_index_find(&h->index, need);
        if (b) {
            examined = 1;
            if (!index_block_ok(h, b, f))
                return NULL;
        }
    } else {
        /* First the class the request itself falls in: a block freed by an earlier request of
         * the same shape often fits exactly. Then the class that guarantees room for any
         * leading gap: need + align + a minimum block. Never more than these two. */
        b = rp_free_index_exact_head(&h->index, need);
        if (b) {
            examined = 1;
            if (!index_block_ok(h, b, f))
                return NULL;
            lead = aligned_lead(b, align);
            if (lead + need > b->size)
                b = NULL;
        }
        if (!b) {
            b = rp_free_index_find(&h->index, need + align + RP_MIN_BLOCK);
            if (b) {
                examined++;
                if (!index_block_ok(h, b, f))
                    return NULL;
                lead = aligned_lead(b, align);
            }
        }
    }
    if (!b) {
        size_t want = align <= RP_MIN_ALIGN ? need : need + align + RP_MIN_BLOCK;
        uint64_t before = h->pages.examined;
        b = span_create(h, want);
        examined += h->pages.examined - before; /* the page tier's free blocks read */
        if (b) {
            rp_free_index_insert(&h->index, b);
            lead = align <= RP_MIN_ALIGN ? 0 : aligned_lead(b, align);
        } else {
            /* The heap cannot grow: FT2. Its reads are not the O(1) path's (max_examined). */
            b = fit_scan(h, need, align, &lead, f);
            if (!b) {
                rp_heap_count_examined(h, examined);
                return NULL;
            }
        }
    }
    rp_heap_count_examined(h, examined);
    if (take_from_index(h, b, f) != 0)
        return NULL;
    rp_block *a = carve(h, b, lead, need, rp_fls(align));
    h->blocks_in_use++;
    h->bytes_in_use += a->size;
    h->bytes_usable += rp_block_usable(a);
    h->alloc_calls++;
    void *user = rp_block_user(a);
    rp_hook_span_reused(h, user, rp_block_usable(a), f);
    return user;
}

/* Splits the used block a (just carved, size a->size >= k * stride) into k blocks of stride
 * bytes, the last one taking the remainder: k-1 headers written inside a, the next block's
 * boundary tag moved to the last one. */
RP_NO_SANITIZE_ADDRESS
static void split_run(rp_heap *h, rp_block *a, size_t stride, size_t k)
{
    const rp_mac_key *key = &h->key;
    uint32_t bits = a->bits & RP_HDR_ALIGN_MASK;
    uint32_t total = a->size;
    rp_block *next = rp_block_next(a);
    rp_block_store(&a->size, k > 1 ? (uint32_t)stride : total);
    rp_block_reseal(key, a);
    rp_block *b = a;
    for (size_t i = 1; i < k; i++) {
        b = (rp_block *)((char *)b + stride);
        uint32_t size = i + 1 < k ? (uint32_t)stride : total - (uint32_t)(stride * (k - 1));
        rp_block_write(key, b, (uint32_t)stride, size, bits);
    }
    rp_block_store(&next->prev_size, b->size);
    rp_block_reseal(key, next);
}

RP_NO_SANITIZE_ADDRESS
size_t rp_span_alloc_run(rp_heap *h, size_t size, size_t align, void **out, size_t n, rp_fault *f)
{
    size_t stride = rp_align_up(rp_span_block_need(size), align);
    if (RP_HOOK_PREFIX != 0 || n < 2 || stride != rp_span_block_need(size)) {
        /* The debug flavour watches every block's reuse: one at a time. So are shapes whose
         * blocks would not tile (the stride must be a multiple of the alignment). */
        void *p = rp_span_alloc(h, size, align, f);
        if (!p)
            return 0;
        out[0] = p;
        return 1;
    }
    /* One free block for the whole run if the index has one; else the largest run the
     * search for a single block finds room for. At most two free blocks examined. */
    size_t extra = align > RP_MIN_ALIGN ? align + RP_MIN_BLOCK : 0;
    rp_block *b = NULL;
    if (stride * n + extra <= RP_MAX_SPAN_BLOCK)
        b = rp_free_index_find(&h->index, stride * n + extra);
    uint64_t examined = b ? 1 : 0;
    if (b && !index_block_ok(h, b, f))
        return 0;
    if (!b) {
        b = rp_free_index_find(&h->index, stride + extra);
        if (b) {
            examined++;
            if (!index_block_ok(h, b, f))
                return 0;
        }
    }
    if (!b) {
        uint64_t before = h->pages.examined;
        b = span_create(h, stride * n + extra);
        if (!b)
            b = span_create(h, stride + extra);
        examined += h->pages.examined - before; /* the page tier's free blocks read */
        if (!b) {
            /* The heap cannot grow: one block, through rp_span_alloc's scan (FT2). */
            rp_heap_count_examined(h, examined);
            void *p = rp_span_alloc(h, size, align, f);
            if (!p)
                return 0;
            out[0] = p;
            return 1;
        }
        rp_free_index_insert(&h->index, b);
    }
    rp_heap_count_examined(h, examined);
    size_t lead = align > RP_MIN_ALIGN ? aligned_lead(b, align) : 0;
    size_t k = 0, room = b->size - lead;
    while (k < n && (k + 1) * stride <= room)
        k++;
    if (take_from_index(h, b, f) != 0)
        return 0;
    rp_block *a = carve(h, b, lead, k * stride, rp_fls(align));
    size_t total = a->size;
    split_run(h, a, stride, k);
    h->blocks_in_use += k;
    h->bytes_in_use += total;
    h->bytes_usable += total - k * RP_USER_OFFSET;
    h->alloc_calls += k;
    char *user = rp_block_user(a);
    for (size_t i = 0; i < k; i++)
        out[i] = user + i * stride;
    return k;
}

void rp_span_drop_spare(rp_heap *h)
{
    rp_block *b = h->spare_span;
    if (!b)
        return;
    rp_free_index_unlink(&h->index, b);
    h->spare_span = NULL;
    span_destroy(h, b);
}

/* A whole span became free: keep it as the spare, or give it back to the page tier. */
static void span_emptied(rp_heap *h, rp_block *b)
{
    if (!h->spare_span) {
        h->spare_span = b;
        rp_free_index_insert(&h->index, b);
        return;
    }
    span_destroy(h, b);
}

/* Can the free neighbour n of b be taken off the index for a merge? 1, or 0 with a fault
 * (nothing changed). */
static int neighbour_listed(rp_heap *h, rp_block *b, rp_block *n, rp_fault *f)
{
    if (RP_LIKELY(rp_free_index_listed(&h->index, n)))
        return 1;
    if (!rp_span_refuse_leftover(h, b, f))
        rp_fault_set(f, RP_ERR_CORRUPT_FREE_LIST, h, n, NULL, 0,
                     "free-list links of free block %p are inconsistent (written after free?)", (void *)n);
    return 0;
}

/* Takes the free neighbour n, found listed (neighbour_listed), off the index for a merge. */
static void take_neighbour(rp_heap *h, rp_block *n)
{
    rp_free_index_unlink(&h->index, n);
    if (n == h->spare_span)
        h->spare_span = NULL;
}

/* Takes the free neighbour n of b off the index before a merge. 0, or -1 with a fault. */
static int unfile_neighbour(rp_heap *h, rp_block *b, rp_block *n, rp_fault *f)
{
    if (!neighbour_listed(h, b, n, f))
        return -1;
    take_neighbour(h, n);
    return 0;
}

RP_NO_SANITIZE_ADDRESS
void rp_span_release_run(rp_heap *h, rp_block *b, size_t count, size_t total, rp_fault *f)
{
    const rp_mac_key *key = &h->key;
    size_t size = total;
    rp_block *next = (rp_block *)((char *)b + total);
    rp_block *prev = (b->bits & RP_HDR_PREV_FREE) ? rp_block_prev(b) : NULL;
    /* Validate both neighbours before changing anything: freeing into a corrupted
     * neighbourhood would spread the damage, so the block then stays allocated. */
    if (!rp_block_valid(key, next)) {
        if (rp_span_refuse_leftover(h, b, f))
            return;
        rp_fault_set(f, RP_ERR_CORRUPT_BLOCK, h, next, rp_block_user(b), rp_block_usable(b),
                     "header of the block after %p (at %p) is corrupted: overflow past the end of %p?",
                     rp_block_user(b), (void *)next, rp_block_user(b));
        return;
    }
    if (prev && (!rp_block_valid(key, prev) || !(prev->bits & RP_HDR_FREE) || prev->size != b->prev_size)) {
        if (rp_span_refuse_leftover(h, b, f))
            return;
        rp_fault_set(f, RP_ERR_CORRUPT_BLOCK, h, prev, rp_block_user(b), rp_block_usable(b),
                     "free block before %p (at %p) is corrupted", rp_block_user(b), (void *)prev);
        return;
    }
    int merge_next = (next->bits & RP_HDR_FREE) != 0;
    /* Both neighbours' links are checked before either is unlinked: a refused free changes
     * nothing (unlinking one and filing it again would move it in its list, which a
     * corrupted neighbour may still point into). */
    if ((merge_next && !neighbour_listed(h, b, next, f)) || (prev && !neighbour_listed(h, b, prev, f)))
        return;
    if (merge_next)
        take_neighbour(h, next);
    if (prev)
        take_neighbour(h, prev);

    h->blocks_in_use -= count;
    h->bytes_in_use -= size;
    h->bytes_usable -= size - count * RP_USER_OFFSET;
    h->free_calls += count;

    rp_block *start = prev ? prev : b;
    size_t len = size + (merge_next ? next->size : 0) + (prev ? prev->size : 0);
    /* The headers of the run's later blocks, and b's when it joins prev's block, become
     * payload. Left as they were they would still validate as live blocks, so a second free
     * of one would be taken for a first one (by the core, which then trips over the
     * neighbour checks, and by the malloc drop-in's lock-free free path, which trusts a valid
     * live header). Mark them free: a second free is a double free. */
    for (rp_block *x = rp_block_next(b); x != next; x = rp_block_next(x))
        rp_block_write(key, x, x->prev_size, x->size, RP_HDR_FREE);
    if (prev)
        rp_block_write(key, b, b->prev_size, b->size, RP_HDR_FREE);
    /* Debug poison: exactly the bytes that become free payload. */
    if (prev)
        rp_hook_span_freed(h, b, size);
    else
        rp_hook_span_freed(h, (char *)b + RP_MIN_BLOCK, size - RP_MIN_BLOCK);
    if (merge_next)
        rp_hook_span_freed(h, next, RP_MIN_BLOCK);

    rp_block *after = (rp_block *)((char *)start + len);
    rp_block_write(key, start, start->prev_size, (uint32_t)len, RP_HDR_FREE);
    rp_block_store(&after->prev_size, (uint32_t)len);
    rp_block_store(&after->bits, after->bits | RP_HDR_PREV_FREE);
    rp_block_reseal(key, after);
    if (start->prev_size == 0 && (after->bits & RP_HDR_SENTINEL))
        span_emptied(h, start);
    else
        rp_free_index_insert(&h->index, start);
}

RP_NO_SANITIZE_ADDRESS
void rp_span_release(rp_heap *h, rp_block *b, rp_fault *f) { rp_span_release_run(h, b, 1, b->size, f); }

RP_NO_SANITIZE_ADDRESS
int rp_span_resize(rp_heap *h, rp_block *b, size_t size, rp_fault *f)
{
    const rp_mac_key *key = &h->key;
    size_t need = rp_span_block_need(size);
    size_t old = b->size;
    rp_block *next = rp_block_next(b);
    if (!rp_block_valid(key, next)) {
        if (rp_span_refuse_leftover(h, b, f))
            return 0;
        rp_fault_set(f, RP_ERR_CORRUPT_BLOCK, h, next, rp_block_user(b), rp_block_usable(b),
                     "header of the block after %p (at %p) is corrupted: overflow past the end of %p?",
                     rp_block_user(b), (void *)next, rp_block_user(b));
        return 0;
    }
    if (need <= old) {
        size_t rest = old - need;
        if (rest < RP_MIN_BLOCK)
            return 1; /* too little to give back: keep the block as it is */
        rp_block *tail = (rp_block *)((char *)b + need);
        size_t tail_len = rest;
        if (next->bits & RP_HDR_FREE) {
            if (unfile_neighbour(h, b, next, f) != 0)
                return 0;
            tail_len += next->size;
            rp_hook_span_freed(h, next, RP_MIN_BLOCK);
        }
        rp_hook_span_freed(h, (char *)tail + RP_MIN_BLOCK, rest - RP_MIN_BLOCK);
        rp_block_store(&b->size, (uint32_t)need);
        rp_block_reseal(key, b);
        rp_block_write(key, tail, (uint32_t)need, (uint32_t)tail_len, RP_HDR_FREE);
        rp_block *after = rp_block_next(tail);
        rp_block_store(&after->prev_size, (uint32_t)tail_len);
        rp_block_store(&after->bits, after->bits | RP_HDR_PREV_FREE);
        rp_block_reseal(key, after);
        rp_free_index_insert(&h->index, tail);
        h->bytes_in_use -= rest;
        h->bytes_usable -= rest;
        return 1;
    }
    if (!(next->bits & RP_HDR_FREE) || old + next->size < need)
        return 0;
    size_t total = old + next->size;
    if (unfile_neighbour(h, b, next, f) != 0)
        return 0;
    size_t rest = total - need;
    size_t new_size = need;
    rp_block *after = rp_block_next(next);
    if (rest >= RP_MIN_BLOCK) {
        rp_block *tail = (rp_block *)((char *)b + need);
        rp_block_write(key, tail, (uint32_t)need, (uint32_t)rest, RP_HDR_FREE);
        rp_free_index_insert(&h->index, tail);
        rp_block_store(&after->prev_size, (uint32_t)rest);
    } else {
        new_size = total;
        rp_block_store(&after->prev_size, (uint32_t)total);
        rp_block_store(&after->bits, after->bits & ~(uint32_t)RP_HDR_PREV_FREE);
    }
    rp_block_reseal(key, after);
    /* The debug flavour verifies the free payload being taken over (not next's header and
     * links, which were metadata). */
    char *reuse_from = (char *)next + RP_MIN_BLOCK;
    char *reuse_to = (char *)b + new_size;
    if (reuse_to > reuse_from)
        rp_hook_span_reused(h, reuse_from, (size_t)(reuse_to - reuse_from), f);
    rp_block_store(&b->size, (uint32_t)new_size);
    rp_block_reseal(key, b);
    h->bytes_in_use += new_size - old;
    h->bytes_usable += new_size - old;
    return 1;
}
