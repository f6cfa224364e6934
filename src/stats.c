/* rp_heap_stats: a copy of the counters kept on every operation. The locked variant serves
 * the dump writer, which reads the counters and walks the blocks under one lock hold. */
#include <errno.h>
#include <string.h>

#include "heap.h"

void rp_heap_stats_locked(rp_heap *h, struct rp_heap_stats *out)
{
    memset(out, 0, sizeof *out);
    out->bytes_in_use = h->bytes_in_use;
    out->bytes_usable = h->bytes_usable;
    out->blocks_in_use = h->blocks_in_use;
    out->page_free_bytes = h->pages.free_pages << RP_PAGE_SHIFT;
    out->page_dirty_bytes = rp_page_tier_dirty(&h->pages) << RP_PAGE_SHIFT;
    out->bytes_free = h->index.free_bytes + out->page_free_bytes;
    size_t page_blocks = 0;
    for (unsigned k = 0; k < RP_ORDERS; k++) {
        out->order_free_blocks[k] = h->pages.blocks[k];
        page_blocks += h->pages.blocks[k];
    }
    out->blocks_free = h->index.free_blocks + page_blocks;
    size_t a = rp_free_index_largest(&h->index), b = rp_page_tier_largest(&h->pages);
    out->largest_free = a > b ? a : b;
    out->span_bytes = h->span_bytes;
    out->spans = h->spans;
    out->large_blocks = h->large_blocks;
    out->regions = h->nregions;
    out->region_bytes = h->region_bytes;
    out->os_bytes = h->os_bytes;
    out->os_bytes_peak = h->os_bytes_peak;
    out->os_released = h->os_released;
    out->alloc_calls = h->alloc_calls;
    out->free_calls = h->free_calls;
    out->blocks_examined = h->blocks_examined;
    out->max_examined = h->max_examined;
    for (unsigned fl = 0; fl < RP_FL_COUNT && fl < RP_STATS_CLASSES; fl++)
        out->class_free_blocks[fl] = h->index.class_blocks[fl];
}

int rp_heap_stats(rp_heap *h, struct rp_heap_stats *out)
{
    h = rp_heap_resolve(h);
    if (!h || !out) {
        errno = EINVAL;
        return -1;
    }
    rp_lock_acquire(&h->lock);
    rp_heap_stats_locked(h, out);
    rp_lock_release(&h->lock);
    return 0;
}
