#include "block_check.h"

#include "config.h"
#include "cookie.h"
#include "debug_heap.h"
#include "debug_report.h"
#include "poison.h"
#include "stack_depot.h"
#include "src/pagemap.h"

const char *rp_verify_name(int code)
{
    static const char *const names[] = {"OK", "P1", "P2", "P3", "P4", "P5", "P6", "P7"};
    return code >= 0 && code <= RP_VERIFY_P7 ? names[code] : "P?";
}

int rp_block_verify(rp_heap *h, void *user, size_t usable, rp_debug_meta *m, rp_fault *fault)
{
    uint64_t secret = rp_debug_secret(h);
    rp_meta_load(user, m);
    char *u = user;
    /* The canary first: an underflow running backwards reaches it before the other fields,
     * and it is not covered by the seal, so the history stays trustworthy. */
    unsigned back = rp_cookie_check_lead(secret, user, m);
    int sealed = m->seal == rp_meta_seal(secret, user, m);
    if (back) {
        const unsigned char *bad = (const unsigned char *)u - back;
        rp_debug_fault(fault, RP_ERR_HEAP_BUFFER_UNDERFLOW, h, bad, user, sealed ? (size_t)m->requested : 0,
                       sealed ? m : NULL, "canary before %p changed at %p (%u byte%s before the block)", user,
                       (const void *)bad, back, back == 1 ? "" : "s");
        return RP_VERIFY_P4;
    }
    if (!sealed) {
        rp_debug_meta *at = rp_meta_of(user); /* m is a copy */
        rp_debug_fault(fault, RP_ERR_HEAP_BUFFER_UNDERFLOW, h, at, user, 0, NULL,
                       "debug metadata of %p (at %p) was overwritten: a write before the block", user, (void *)at);
        return RP_VERIFY_P1;
    }
    if ((m->state != RP_META_LIVE && m->state != RP_META_QUARANTINED) ||
        (m->state == RP_META_LIVE && m->free_stack != 0)) {
        rp_debug_fault(fault, RP_ERR_CORRUPT_BLOCK, h, m, user, 0, NULL,
                       "debug metadata of %p has state 0x%x and free stack %u", user, m->state, m->free_stack);
        return RP_VERIFY_P2;
    }
    if (m->requested > usable) {
        rp_debug_fault(fault, RP_ERR_CORRUPT_BLOCK, h, m, user, 0, NULL,
                       "debug metadata of %p records %llu bytes, more than the %zu usable", user,
                       (unsigned long long)m->requested, usable);
        return RP_VERIFY_P3;
    }
    size_t requested = (size_t)m->requested;
    size_t stacks = rp_depot_count();
    if (m->alloc_stack > stacks || m->free_stack > stacks) {
        rp_debug_fault(fault, RP_ERR_CORRUPT_BLOCK, h, m, user, requested, NULL,
                       "debug metadata of %p names stacks %u / %u, the depot holds %zu", user, m->alloc_stack,
                       m->free_stack, stacks);
        return RP_VERIFY_P6;
    }
    const rp_debug_config *cfg = rp_debug_config_get();
    if (m->state == RP_META_QUARANTINED && cfg->poison) {
        /* P7: the free pattern covers the whole usable area, trailer included. */
        rp_san_open(u, usable);
        const unsigned char *bad = rp_poison_find_mismatch(u, usable, cfg->free_fill);
        unsigned found = bad ? *bad : 0;
        rp_san_close_meta(u, usable);
        if (bad) {
            rp_debug_fault(fault, RP_ERR_USE_AFTER_FREE_WRITE, h, bad, user, requested, m,
                           "freed block %p was written at %p (found 0x%02x, free pattern 0x%02x)", user,
                           (const void *)bad, found, cfg->free_fill);
            return RP_VERIFY_P7;
        }
        return RP_VERIFY_OK;
    }
    rp_san_open(u + requested, usable - requested);
    const unsigned char *bad = rp_cookie_check_trailer(secret, user, requested, u + usable);
    unsigned found = bad ? *bad : 0;
    rp_san_close_meta(u + requested, usable - requested);
    if (bad) {
        size_t past = (size_t)(bad - (const unsigned char *)(u + requested));
        rp_debug_fault(fault, RP_ERR_HEAP_BUFFER_OVERFLOW, h, bad, user, requested, m,
                       "trailer cookie of %p changed at %p (found 0x%02x, %zu byte%s after the end)", user,
                       (const void *)bad, found, past, past == 1 ? "" : "s");
        return RP_VERIFY_P5;
    }
    return RP_VERIFY_OK;
}

/* Could p be a free block of h's spans? (Checked before following a free-list link.) */
static int in_heap_span(rp_heap *h, const void *p)
{
    rp_region *r = rp_pagemap_lookup(p);
    if (!r || r->heap != h || (uintptr_t)p < r->base || ((uintptr_t)p & (RP_GRANULE - 1)))
        return 0;
    rp_page *d = rp_page_of(r, p);
    return d->state == RP_PAGE_SPAN || d->state == RP_PAGE_SPAN_TAIL;
}

/* I4 for the free block x: its neighbours on the list point back at it (what the core checks
 * when it takes x off its list to merge it). */
RP_NO_SANITIZE_ADDRESS
static int links_consistent(rp_heap *h, rp_block *x)
{
    rp_block *next = rp_links(x)->next, *prev = rp_links(x)->prev;
    if (next && (!in_heap_span(h, next) || rp_links(next)->prev != x))
        return 0;
    if (prev)
        return in_heap_span(h, prev) && rp_links(prev)->next == x;
    unsigned fl, sl;
    rp_class_of(x->size, &fl, &sl);
    return h->index.heads[fl][sl] == x;
}

RP_NO_SANITIZE_ADDRESS
int rp_block_check_neighbours(rp_heap *h, void *user, size_t usable, const rp_debug_meta *m, rp_fault *fault)
{
    rp_region *r = rp_pagemap_lookup(user);
    rp_page *d = rp_page_of(r, user);
    if (d->state != RP_PAGE_SPAN && d->state != RP_PAGE_SPAN_TAIL)
        return 0;
    size_t requested = (size_t)m->requested;
    rp_block *b = rp_block_of_user(user);
    rp_block *next = (rp_block *)((char *)user + usable);
    if (RP_UNLIKELY(!rp_block_valid(&h->key, next))) {
        rp_debug_fault(fault, RP_ERR_CORRUPT_BLOCK, h, next, user, requested, m,
                       "header of the block after %p (at %p) is corrupted: an overflow past the end of %p?", user,
                       (void *)next, user);
        return 1;
    }
    if ((next->bits & RP_HDR_FREE) && RP_UNLIKELY(!links_consistent(h, next))) {
        rp_debug_fault(fault, RP_ERR_CORRUPT_FREE_LIST, h, next, user, requested, m,
                       "free-list links of free block %p after %p are inconsistent (written after free?)",
                       (void *)next, user);
        return 1;
    }
    if (b->bits & RP_HDR_PREV_FREE) {
        rp_block *prev = rp_block_prev(b);
        if (RP_UNLIKELY(!in_heap_span(h, prev) || !rp_block_valid(&h->key, prev) || !(prev->bits & RP_HDR_FREE) ||
                        prev->size != b->prev_size)) {
            rp_debug_fault(fault, RP_ERR_CORRUPT_BLOCK, h, prev, user, requested, m,
                           "free block before %p (at %p) is corrupted", user, (void *)prev);
            return 1;
        }
        if (RP_UNLIKELY(!links_consistent(h, prev))) {
            rp_debug_fault(fault, RP_ERR_CORRUPT_FREE_LIST, h, prev, user, requested, m,
                           "free-list links of free block %p before %p are inconsistent (written after free?)",
                           (void *)prev, user);
            return 1;
        }
    }
    return 0;
}
