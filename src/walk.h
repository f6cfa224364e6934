/* Walking a heap block by block, in address order: the engine under rp_heap_walk,
 * rp_heap_check and the dump writer. Runs with the heap locked. */
#ifndef RP_WALK_H
#define RP_WALK_H

#include "heap.h"

/* Per-block callback of the internal walk; also sees the region. Non-zero stops. */
typedef int (*rp_block_visit)(rp_heap *h, rp_region *r, const rp_block_info *info, void *arg);

/* Visits every block of every region. Returns 0, the callback's non-zero value, or -1 when a
 * structure is too damaged to walk on (then *why says where, if why is non-NULL). */
int rp_walk_locked(rp_heap *h, rp_block_visit visit, void *arg, char *why, size_t len);

#endif
