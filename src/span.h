/* Spans: runs of pages the page tier gives to the segregated-fit tier, and the blocks
 * carved out of them (allocation with alignment, split, coalescing, in-place resize).
 *
 * A span's page descriptors are SPAN (head) and SPAN_TAIL (distance back to the head), so
 * rp_free finds the span of any pointer in O(1). A span that becomes wholly free goes back
 * to the page tier, except one spare per heap kept to absorb alloc/free churn at the
 * boundary (invariant H4 in heap.h). On a huge-page heap a new span comes with its pair
 * (one 2 MiB page), the second one made the spare. All functions run with the heap locked. */
#ifndef RP_SPAN_H
#define RP_SPAN_H

#include <stddef.h>

#include "heap.h"

/* Block size needed for a request of size bytes (header, debug prefix/suffix, rounding). */
static inline size_t rp_span_block_need(size_t size)
{
    size_t need = rp_align_up(RP_USER_OFFSET + size + RP_HOOK_SUFFIX, RP_GRANULE);
    return need < RP_MIN_BLOCK ? RP_MIN_BLOCK : need;
}

/* Allocates a block for size bytes whose user pointer is aligned to align (16 ..
 * below the large threshold). Examines at most two free blocks, unless the heap cannot grow.
 * NULL when out of memory (or on corruption, recorded in *f).
 *
 * Fit guarantees (checked by the heap_ops fuzz oracle, fuzz/heap_model.c, against the free
 * blocks listed before the call):
 *   FT1 good fit: a new span is taken only when no listed free block has at least
 *       rp_good_fit(want) bytes (free_index.h I6), want being the block needed
 *       (rp_span_block_need) and, for an alignment above 16, that plus the alignment and a
 *       minimum block (room for any leading gap);
 *   FT2 a heap that cannot take a new span (capped, caller memory only, the OS refusing) fails
 *       only when no listed free block can hold the block at the alignment asked: before it
 *       fails it looks through the lists the O(1) searches skip (the classes between the
 *       request's own and the one they start from), at most RP_FIT_SCAN_MAX blocks. */
void *rp_span_alloc(rp_heap *h, size_t size, size_t align, rp_fault *f);
#define RP_FIT_SCAN_MAX 4096

/* Allocates up to n blocks for size bytes aligned to align, as a run of adjacent blocks
 * carved from one free block (the malloc drop-in's refill batches: one search and one carve
 * for the run, one header write per block). Stores their user pointers in out and returns how
 * many (at least 1 unless out of memory: NULL-equivalent 0). Examines at most two free
 * blocks. Shapes whose blocks cannot tile at that alignment, and the debug flavour, get one
 * block per call. */
size_t rp_span_alloc_run(rp_heap *h, size_t size, size_t align, void **out, size_t n, rp_fault *f);

/* Returns a validated used block to free space, coalescing with both neighbours. */
void rp_span_release(rp_heap *h, rp_block *b, rp_fault *f);

/* Returns count validated used blocks that lie back to back, b first and total bytes in all,
 * to free space as one region: what count rp_span_release calls would do, with one index
 * update instead of one per block (a cache flush often returns a run carved in one piece). */
void rp_span_release_run(rp_heap *h, rp_block *b, size_t count, size_t total, rp_fault *f);

/* Resizes b in place to hold size bytes (shrink, or grow into a free right neighbour).
 * Returns 1 on success, 0 if the block must move. */
int rp_span_resize(rp_heap *h, rp_block *b, size_t size, rp_fault *f);

/* Error paths: b has a valid header, but is it a block? A block freed next to a free block
 * is merged into it and its header left behind. If b lies inside another block of its span,
 * records a double free (that block is free) or an invalid free (it is allocated again) of
 * b's user pointer and returns 1; returns 0 if b is a block (or the span is too damaged to
 * tell). Walks the span: never on the hot path. */
int rp_span_refuse_leftover(rp_heap *h, rp_block *b, rp_fault *f);

/* Gives the heap's spare span (H4), if any, back to the page tier (an explicit trim: the
 * region it lies in may then be wholly free). */
void rp_span_drop_spare(rp_heap *h);

/* The span containing block b: its head descriptor. */
rp_page *rp_span_head_of(rp_region *r, const void *p);

#endif
