/* Cache marks: which blocks a cache holds (T4 in thread_cache.h), kept apart from the blocks.
 *
 * One byte per 16-byte granule of the memory the arenas hand small blocks out of, indexed by
 * a block's user pointer: the slab space's marks array (slab.h) for slab blocks, and each
 * arena region's own reservation (rp_region.cache_marks, region.h) for span blocks. A mark is
 * 1 while a thread cache (a class bin or a run) or a transfer cache holds the block, and 0
 * while the program has it or it is free in its heap or pool; 2 while the program has it and
 * the heap profiler sampled it (profile.h), so that free() recognises a sampled block by the
 * same test that finds a cached one. free() reads it and sets it,
 * malloc clears it: so a second free of a cached block, and a free of a block a cache took but
 * never handed out, are recognised whatever the program wrote into the block or past its end
 * (the marks are mappings of their own, far from every block), and nothing is written into a
 * freed block. Marks of different blocks are different bytes, so the threads' plain byte
 * stores never interfere; a mark changes hands with its block, through the transfer caches'
 * lock. Page-tier blocks are marked in their page descriptor instead (RP_PAGEF_CACHED).
 *
 * A span block's header granule has a mark byte no user pointer uses: the hardened profile
 * sets it to RP_CACHE_MARK_SEALED_HEAD while the block is live and sealed (seal.h), so that a
 * checked write into the middle of the block finds where it starts (guarded_memory.h). */
#ifndef RP_CACHE_MARK_H
#define RP_CACHE_MARK_H

#include <stdint.h>

#include "malloc_slabs.h"
#include "src/bits.h"
#include "src/pagemap.h"
#include "src/region.h"

/* The mark of the span block whose user pointer is p, in the region r that holds it; NULL
 * when r keeps no marks (its blocks are never cached). */
static inline uint8_t *rp_cache_mark_in(const rp_region *r, const void *p)
{
    return r->cache_marks ? r->cache_marks + (((uintptr_t)p - r->base) >> 4) : NULL;
}

/* The mark of the slab block p (in the slab space). */
static inline uint8_t *rp_cache_mark_of_slab(const void *p)
{
    return rp_ms_space.marks + (((uintptr_t)p - rp_ms_space.base) >> 4);
}

/* The mark of a block that may be cached (a live slab or span block of an arena), found from
 * its address alone; NULL when its memory keeps no marks. Not for the fast paths (the address
 * map). */
static inline uint8_t *rp_cache_mark(const void *p)
{
    if (rp_ms_contains(p))
        return rp_cache_mark_of_slab(p);
    rp_region *r = rp_pagemap_lookup(p);
    return r ? rp_cache_mark_in(r, p) : NULL;
}

/* A mark's values: 0 the program holds the block (or it is free in its heap or pool), 1 a cache
 * holds it, 2 the program holds it and the heap profiler sampled it (profile.h); in a header
 * granule, 4 the header of a live sealed block (hardened). */
enum { RP_CACHE_MARK_CACHED = 1, RP_CACHE_MARK_SAMPLED = 2, RP_CACHE_MARK_SEALED_HEAD = 4 };

/* A cache holds the block (T4 in thread_cache.h). */
static inline int rp_cache_marked(const uint8_t *m) { return __atomic_load_n(m, __ATOMIC_RELAXED) == RP_CACHE_MARK_CACHED; }
/* Cached or sampled: free()'s one test for both, the second sorted out of line. */
static inline int rp_cache_mark_busy(const uint8_t *m) { return __atomic_load_n(m, __ATOMIC_RELAXED) != 0; }
static inline void rp_cache_mark_put(uint8_t *m, uint8_t v) { __atomic_store_n(m, v, __ATOMIC_RELAXED); }
static inline void rp_cache_mark_set(uint8_t *m) { __atomic_store_n(m, RP_CACHE_MARK_CACHED, __ATOMIC_RELAXED); }
static inline void rp_cache_mark_clear(uint8_t *m) { __atomic_store_n(m, 0, __ATOMIC_RELAXED); }

#endif
