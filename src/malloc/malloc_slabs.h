/* The malloc drop-in's slab tier (slab.h): one slab space for the process and a slab pool
 * per arena, from which the thread caches refill their small classes.
 *
 * Class bin c of a thread cache (size_class.h: span blocks of 16 * (c + 2) bytes, 16 * (c + 1)
 * of them usable) takes slab blocks of class c (stride 16 * (c + 1)), for c < RP_SLAB_CLASSES:
 * the same usable size without a header. A bin may hold both kinds (when the space is used
 * up, refills carve span blocks as before): whatever free() is given, a range test
 * (rp_ms_contains) says which kind it is before anything else is read, since the 16 bytes
 * in front of a slab block are another block's data, not a header.
 *
 * Each arena's pool is used under that arena's heap lock; the pool's owner is the arena's
 * heap. The space exists only in the release flavour with thread caches on (a cache cap of
 * 0, the debug flavour and a reservation the OS refuses leave it empty: len 0, so that
 * rp_ms_contains is false for every pointer and the drop-in works exactly as without it). */
#ifndef RP_MALLOC_SLABS_H
#define RP_MALLOC_SLABS_H

#include <stddef.h>
#include <stdint.h>

#include "src/heap.h"
#include "src/slab.h"

/* Address space reserved for slabs: 16 GiB of small blocks (a program that needs more gets
 * span blocks for the rest), with 144 MiB of descriptors, both taking memory only as slabs
 * are used. */
#define RP_MS_SPACE_BYTES ((size_t)16 << 30)
/* Empty slabs each arena keeps for reuse before it gives slabs' memory back to the OS. */
#define RP_MS_KEEP_EMPTY 8

extern rp_slab_space rp_ms_space;

/* Reserves the space (once, from rp_malloc_init before the first arena is created; nothing in
 * the debug flavour or with option cache_bytes=0). 0, or -1 when off or the OS refused: the
 * drop-in then works without slabs. */
int rp_ms_setup(void);

/* The space's length, 0 while slabs are off. Stored last (release) when the space is set up,
 * so that a reader who sees it non-zero sees the rest of the space's fields. */
static inline size_t rp_ms_len(void) { return __atomic_load_n(&rp_ms_space.len, __ATOMIC_ACQUIRE); }

/* 1 when slabs are in use (the space was reserved). */
static inline int rp_ms_on(void) { return rp_ms_len() != 0; }

/* 1 if p lies in the slab space (then it is a slab block or no block at all). */
static inline int rp_ms_contains(const void *p)
{
    size_t len = rp_ms_len();
    return (uintptr_t)p - rp_ms_space.base < len;
}

/* The arena p belongs to if it is a live slab block, else rp_heap_of(p) (for tests and
 * harnesses: whether a pointer came from the drop-in). */
rp_heap *rp_ms_heap_of(const void *p);

/* Sets up arena h's pool (before the arena is published). */
void rp_ms_arena_init(rp_heap *h, rp_slab_pool *pool);

/* The pool of arena h, or NULL when slabs are off. */
rp_slab_pool *rp_ms_pool_of(const rp_heap *h);

/* The arena whose pool holds slab d. */
static inline rp_heap *rp_ms_owner(const rp_slab *d)
{
    rp_slab_pool *pool = __atomic_load_n(&d->pool, __ATOMIC_RELAXED);
    return pool ? (rp_heap *)pool->owner : NULL;
}

/* A refill of class cls from arena h's pool, under one lock: up to n blocks handed out
 * before, stored in out (returns how many); when there are none, a run of up to run_max fresh
 * blocks of one slab instead (*run_first, stride apart; *run_n of them, 0 when the space is
 * used up), and returns 0. *chunk_lo receives the pool's chunk (slab.h SP2; 0 when it has
 * none), the thread's near region. Reads no block. */
size_t rp_ms_refill(rp_heap *h, unsigned cls, void **out, size_t n, size_t run_max, void **run_first,
                    size_t *run_n, uintptr_t *chunk_lo);

/* Gives back n live slab blocks of arena h (not cached: no cache mark) under its lock. */
void rp_ms_give_back(rp_heap *h, void *const *blocks, size_t n);

/* Releases every empty slab every arena keeps (malloc_trim). Returns how many. */
size_t rp_ms_trim(void);

/* Verifies the space and every arena's pool (slab.h SS1..SS3, SL1..SL5, SP1). 0, or non-zero
 * with a message in why. */
int rp_ms_check(char *why, size_t len);

/* Totals over the arenas' pools. */
typedef struct rp_ms_totals_t {
    size_t slabs, slab_bytes; /* slabs held and their bytes */
    size_t live_blocks, live_bytes; /* live blocks (handed out or cached) and their bytes */
    size_t empty_slabs;       /* slabs kept empty */
    uint64_t released_bytes;  /* slabs' bytes given back to the OS, cumulative */
} rp_ms_totals_t;
void rp_ms_totals(rp_ms_totals_t *t);

/* Blocks arena h's pool handed out and took back since it was set up (0 when slabs are off). */
void rp_ms_counts(rp_heap *h, uint64_t *taken, uint64_t *given);

/* Across fork: the space's lock (the pools are under the arenas' heap locks). */
void rp_ms_fork_prepare(void);
void rp_ms_fork_parent(void);
void rp_ms_fork_child(void);

#endif
