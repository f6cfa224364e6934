/* Which memory a pointer lies in: see arena_block.h. */
#include "fuzz/arena_block.h"

#include <stdint.h>
#include <stdio.h>

#include "src/heap.h"
#include "src/malloc/malloc_slabs.h"
#include "src/malloc/zero_size.h"
#include "src/pagemap.h"
#include "src/region.h"

const char *arena_block_problem(const void *p, char *buf, size_t len)
{
    if (rp_zs_contains(p)) { /* malloc(0): a slot of the zero-size range (zero_size.h) */
        if (rp_zs_live(p))
            return NULL;
        snprintf(buf, len, "%p is a zero-size slot not marked as handed out", p);
        return buf;
    }
    rp_heap *h = rp_ms_heap_of(p); /* slab blocks included */
    if (h && (h->flags & RP_HEAP_MALLOC_ARENA))
        return NULL;
    if (h) {
        snprintf(buf, len, "%p is a block of heap '%s', which is not a malloc arena", p, rp_heap_name(h));
        return buf;
    }
    if (rp_ms_contains(p)) {
        snprintf(buf, len,
                 "%p lies in the malloc drop-in's slab space but is not a live slab block there (handed out twice, "
                 "freed behind the program's back, or not at a block's start)",
                 p);
        return buf;
    }
    rp_region *r = rp_pagemap_lookup(p);
    if (r) {
        snprintf(buf, len,
                 "%p lies in a region of heap '%s'%s but rampart finds no live block there: its header was "
                 "overwritten (an overflow of the block before it?), or the block was freed or handed out twice",
                 p, rp_heap_name(r->heap), (r->heap->flags & RP_HEAP_MALLOC_ARENA) ? " (a malloc arena)" : "");
        return buf;
    }
    snprintf(buf, len, "%p is in no rampart memory: the call did not reach rampart's malloc (is the harness linked "
                       "with //src/malloc:rampart_malloc?)",
             p);
    return buf;
}
