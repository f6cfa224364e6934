#include "locate.h"

#include "large.h"
#include "span.h"

/* Error path only: the head of the block containing page index i (walks back). */
static rp_page *find_head(rp_region *r, size_t i)
{
    for (;;) {
        rp_page *d = &r->pages[i];
        if (d->state == RP_PAGE_FREE || d->state == RP_PAGE_LARGE || d->state == RP_PAGE_SPAN)
            return d;
        if (i == 0)
            return NULL;
        i--;
    }
}

RP_NO_SANITIZE_ADDRESS
static int locate_span(rp_heap *h, rp_region *r, rp_page *d, const void *p, rp_located *loc, rp_fault *f)
{
    rp_page *head = d->state == RP_PAGE_SPAN_TAIL ? d - d->npages : d;
    uintptr_t span_lo = rp_page_addr(r, head);
    uintptr_t sentinel = span_lo + ((uintptr_t)head->npages << RP_PAGE_SHIFT) - RP_HEADER;
    uintptr_t up = (uintptr_t)p;
    if ((up & (RP_GRANULE - 1)) || up < span_lo + RP_USER_OFFSET || up + RP_MIN_BLOCK - RP_USER_OFFSET > sentinel) {
        rp_fault_set(f, RP_ERR_INVALID_FREE, h, p, NULL, 0,
                     "%p is not the start of a block in heap '%s' (misaligned or at a span edge)", p, h->name);
        return -1;
    }
    rp_block *b = rp_block_of_user(p);
    if (!rp_block_valid(&h->key, b) || (b->bits & RP_HDR_SENTINEL) || (uintptr_t)b + b->size > sentinel ||
        b->size < RP_MIN_BLOCK) {
        rp_fault_set(f, RP_ERR_INVALID_FREE, h, p, NULL, 0,
                     "%p is not a block of heap '%s' (no valid header: interior pointer, foreign pointer "
                     "or header overwritten)", p, h->name);
        return -1;
    }
    if (b->bits & RP_HDR_FREE) {
        /* A merged block's old header is marked free (rp_span_release_run); the walk tells
         * whether its memory has been handed out again since. */
        if (!rp_span_refuse_leftover(h, b, f))
            rp_fault_set(f, RP_ERR_DOUBLE_FREE, h, p, p, b->size - RP_USER_OFFSET,
                         "%p in heap '%s' is already free", p, h->name);
        return -1;
    }
    /* A block freed next to a free block is merged into it and its header is left as it
     * was: still valid, not FREE. By K3 a live block's free predecessor has exactly
     * prev_size bytes; if it has not, the header may be such a leftover (or the memory was
     * reused since). One compare on the path (the free reads that header anyway); the walk
     * that tells which only on error. */
    if ((b->bits & RP_HDR_PREV_FREE) && rp_block_prev(b)->size != b->prev_size && rp_span_refuse_leftover(h, b, f))
        return -1;
    loc->tier = RP_TIER_SPAN;
    loc->block = b;
    loc->head = NULL;
    loc->usable = rp_block_usable(b);
    loc->align = (size_t)1 << rp_block_align_log2(b);
    return 0;
}

int rp_locate(rp_heap *h, rp_region *r, const void *p, rp_located *loc, rp_fault *f)
{
    uintptr_t up = (uintptr_t)p;
    if (up < r->base || up >= r->base + (r->npages << RP_PAGE_SHIFT)) {
        rp_fault_set(f, RP_ERR_INVALID_FREE, h, p, NULL, 0,
                     "%p points into the metadata of a region of heap '%s'", p, h->name);
        return -1;
    }
    rp_page *d = rp_page_of(r, p);
    uintptr_t page = rp_page_addr(r, d);
    switch (d->state) {
    case RP_PAGE_SPAN:
    case RP_PAGE_SPAN_TAIL:
        return locate_span(h, r, d, p, loc, f);
    case RP_PAGE_LARGE:
        if (up == page && d->u.large.lead_pages == 0 && RP_HOOK_PREFIX == 0)
            goto large;
        break;
    case RP_PAGE_LARGE_BODY: {
        rp_page *head = d - d->npages;
        if (up == page && head->state == RP_PAGE_LARGE && head->u.large.lead_pages == d->npages) {
            d = head;
            goto large;
        }
        break;
    }
    case RP_PAGE_FREE:
        if (up == page) {
            rp_fault_set(f, RP_ERR_DOUBLE_FREE, h, p, p, (size_t)d->npages << RP_PAGE_SHIFT,
                         "%p in heap '%s' is already free (free pages)", p, h->name);
            return -1;
        }
        break;
    default: {
        rp_page *head = find_head(r, (size_t)(d - r->pages));
        if (head && head->state == RP_PAGE_FREE && (up & (RP_PAGE_SIZE - 1)) == 0) {
            rp_fault_set(f, RP_ERR_DOUBLE_FREE, h, p, NULL, 0,
                         "%p in heap '%s' lies in free pages: freed already?", p, h->name);
            return -1;
        }
        if (head && head->state == RP_PAGE_LARGE) {
            void *user = rp_large_user(head);
            rp_fault_set(f, RP_ERR_INVALID_FREE, h, p, user, head->u.large.usable,
                         "%p is inside the large block %p of heap '%s' (offset %ld), not its start", p, user,
                         h->name, (long)(up - (uintptr_t)user));
            return -1;
        }
        break;
    }
    }
    rp_fault_set(f, RP_ERR_INVALID_FREE, h, p, NULL, 0, "%p is not the start of a block of heap '%s'", p, h->name);
    return -1;
large:
    loc->tier = RP_TIER_PAGE;
    loc->block = NULL;
    loc->head = d;
    loc->usable = d->u.large.usable;
    loc->align = (size_t)1 << d->align_log2;
    return 0;
}
