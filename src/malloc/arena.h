/* The malloc drop-in's heaps ("arenas"): their registry and creation.
 *
 * malloc never uses the default heap (rp_alloc(NULL, ...)): it creates its own heaps, named
 * "malloc-0", "malloc-1", ..., flagged RP_HEAP_MALLOC_ARENA so that free() knows their blocks
 * may go into a thread cache, and never destroyed (a cached block's heap must outlive it).
 * Each new thread cache is given the arena fewest thread caches use; arenas are created on
 * first use, up to the `arenas` option (default one per CPU the process may run on, at least 2, at most RP_MAX_ARENAS).
 *
 * Invariants:
 *   A1  arenas[i] is NULL or a heap with RP_HEAP_MALLOC_ARENA, published (release) after the
 *       flag was set; arenas[i] is never changed once set; i < narenas;
 *   A2  arena 0 exists once rp_arenas_setup() has returned it (which rp_malloc_init, in
 *       malloc_init.h, does before it returns 1);
 *   A3  every arena's key (the key of its block check words) is *rp_arena_key(). */
#ifndef RP_ARENA_H
#define RP_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "src/heap.h"

#define RP_MAX_ARENAS 64
/* The first OS region of every arena: below one huge page (see arena_create_locked). */
#define RP_ARENA_FIRST_REGION ((size_t)1 << 20)
_Static_assert(RP_ARENA_FIRST_REGION < RP_HUGE_PAGE_BYTES, "an arena's first region is not advised");

/* The arenas' one-time part of the drop-in's set-up (malloc_init.h): reads the options (how
 * many arenas), makes the arenas' block-check key (A3) and the slab space, and creates arena 0
 * (A2). Returns arena 0, or NULL (out of memory: a later call tries again). */
rp_heap *rp_arenas_setup(void);

/* The heap for allocations made without a thread cache (during set-up, after a thread's
 * cache was torn down): arena 0, or the default heap before arena 0 exists. */
rp_heap *rp_arena_fallback(void);

/* The arena a new thread cache allocates from: the one fewest thread caches use (see
 * arena.c), counted as used by one more. NULL when no arena can be created (out of memory). */
rp_heap *rp_arena_for_thread(void);

/* Gives back the count rp_arena_for_thread took for h: a thread cache's teardown, a failed
 * creation, or a forked child's cache of a thread the child does not have. */
void rp_arena_thread_left(rp_heap *h);

/* Arena i (0 <= i < RP_MAX_ARENAS), or NULL if not created. */
rp_heap *rp_arena_get(unsigned i);

/* The block-check key all arenas share (A3); valid once an arena exists. */
const rp_mac_key *rp_arena_key(void);

/* Number of arenas threads are spread over (the `arenas` option or its default). */
unsigned rp_arena_count(void);

/* The arena registry's lock across fork (see malloc_fork.c). */
void rp_arena_fork_prepare(void);
void rp_arena_fork_parent(void);
void rp_arena_fork_child(void);

#endif
