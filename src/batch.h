/* Batch entry points: many blocks under one acquisition of the heap lock. The malloc
 * drop-in's thread caches refill and flush through them, so the lock is taken once per
 * batch instead of once per block. Each block is an ordinary live block for the core
 * (walks, checks and counters see it as allocated until it is freed here or by rp_free). */
#ifndef RP_BATCH_H
#define RP_BATCH_H

#include <stddef.h>

#include "rampart.h"

/* Allocates up to n blocks of size bytes whose user pointers are aligned to align (as
 * rp_alloc), all from the span tier of h (NULL = the default heap), and stores them in out.
 * Returns how many it allocated; fewer than n only when memory ran out (errno ENOMEM).
 * Requests the page tier would serve (see rp_alloc) are refused: 0 with errno EINVAL.
 * Each block costs what one rp_alloc costs without the lock: O(1), at most two free blocks
 * examined. */
size_t rp_alloc_batch(rp_heap *h, size_t size, size_t align, void **out, size_t n);

/* Frees n blocks, all belonging to heap h, under one lock acquisition. Each pointer is
 * validated as rp_free does; a bad one is skipped and the first such fault is reported (after
 * the lock is released). Returns the number of blocks freed. */
size_t rp_free_batch(rp_heap *h, void *const *ptrs, size_t n);

#endif
