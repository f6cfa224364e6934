/* Which tier serves a request. Shared by the allocation entry points (api.c) and the malloc
 * drop-in, which must know in advance whether a request can be served from a thread cache
 * (span-tier blocks only). */
#ifndef RP_TIER_H
#define RP_TIER_H

#include <stddef.h>

#include "heap.h"

/* 1 when the page tier serves (size, align) in heap h: big sizes or alignments, and aligned
 * requests that fill at least half of their pages and whose span-tier footprint would be at
 * least their page-rounded size. A run of blocks aligned to align in a span needs a stride of
 * align_up(header + size, align), so e.g. 3072 bytes aligned to 1024 or 64512 aligned to 4096
 * cost as much address space there as whole pages do, plus an in-band header that must be
 * written (a page fault per block on fresh memory); the page tier serves them with
 * out-of-band descriptors instead. A small block with a large alignment (100 bytes aligned to
 * 4096) stays in a span: the gap in front of it is a free block other requests reuse, where
 * whole pages would strand the rest of the page. align is normalised (a power of two >= 16). */
static inline int rp_wants_pages(const rp_heap *h, size_t size, size_t align)
{
    if (size >= h->large_threshold || align >= h->large_threshold)
        return 1;
    if (align < 1024)
        return 0;
    /* The malloc drop-in's arenas trade the rest of the page for speed: a block aligned to
     * half a page or more is whole pages there (as in allocators whose classes are naturally
     * aligned), which the thread caches' page bins serve in O(1), not carved from a span at
     * every allocation. At half a page that costs at most twice the span block it replaces
     * (a request below 2 KiB aligned to 2 KiB takes a 2 KiB block with its header there; from
     * 2 KiB on it is a page either way); smaller alignments would cost more (docs/BENCHMARKS.md,
     * "Blocks aligned to half a page"). Core heaps keep the span tier's thrift, below. */
    if (align >= RP_PAGE_SIZE / 2 && (h->flags & RP_HEAP_MALLOC_ARENA) && RP_HOOK_PREFIX == 0)
        return 1;
    if (size == 0)
        size = 1; /* a minimum block */
    if (RP_HOOK_PREFIX != 0) /* debug: large blocks carry a lead page; keep whole pages only */
        return align >= RP_PAGE_SIZE && (size & (RP_PAGE_SIZE - 1)) == 0;
    size_t pages = rp_align_up(size, RP_PAGE_SIZE);
    return 2 * size >= pages && pages <= rp_align_up(size + RP_USER_OFFSET + RP_HOOK_SUFFIX, align);
}

#endif
