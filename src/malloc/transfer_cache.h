/* Transfer caches of the malloc drop-in: per arena and size class, a small stack of whole
 * batches of cached blocks, between the thread caches and the arena's heap.
 *
 * When a thread cache's bin overflows, the blocks it flushes are grouped by the arena they
 * belong to and each group goes, as one batch, to that arena's transfer cache; when a bin is
 * empty, the thread takes a batch from its own arena's transfer cache before asking the
 * heap. Moving a batch is O(1) under the transfer cache's own lock, and no block is split or
 * merged on the way. That is what producer/consumer programs need: blocks allocated on one
 * thread and freed on another come back to the allocating thread's arena and are handed out
 * again at once, instead of being freed into the heap (coalescing) and carved out of it
 * again (splitting) by refills, under the heap lock the allocating thread also takes.
 *
 * A batch is an array of at most RP_XFER_BATCH pointers in the transfer cache's own store
 * (mapped apart from the heaps): moving blocks in and out copies pointers and reads no
 * block's memory, which matters most here, where the blocks were last written by another
 * CPU. Its blocks keep their cache marks (cache_mark.h), so they still count as
 * cached: a free() of one of them is a double free, reported as for any cached block. Each
 * block counts rp_tc_class_size(c) bytes, as in a thread cache.
 *
 * Invariants (rp_xfer_check verifies them under the lock):
 *   X1  every block on a batch of class c is a live span block of this arena of at least
 *       rp_tc_class_size(c) bytes, or a live slab block of slab class c of this arena's pool
 *       (malloc_slabs.h), its cache mark set (cache_mark.h);
 *   X2  n[c] <= RP_XFER_SLOTS; batch k < n[c] of class c holds count[c][k] blocks, 1 ..
 *       RP_XFER_BATCH, in store[c][k][0 .. count-1]; with no store, n[c] == 0;
 *   X3  bytes is the sum over the batches of count * rp_tc_class_size(c), and bytes <= cap;
 *       own_bytes is the same sum over the batches marked own.
 * Bounded: at most cap bytes per arena (four thread caches' worth). While one thread at most
 * has the arena as its own, the batches that thread puts ("own" batches) may bring own_bytes
 * to own_cap only: they just extend its cache (a single-threaded program bounces its flushes
 * through its arena's transfer cache and back), and a large cap would hold its blocks, and
 * their pages, out of the heap for no other thread (docs/BENCHMARKS.md, "Own batches").
 * Batches from threads of other arenas (cross-thread frees coming home), and every batch of
 * an arena several threads share, get the whole cap. malloc_trim() and rp_xfer_drain give
 * everything back to the heap. */
#ifndef RP_TRANSFER_CACHE_H
#define RP_TRANSFER_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "src/heap.h"
#include "src/lock.h"
#include "size_class.h"

#define RP_XFER_SLOTS 16 /* batches per class */
#define RP_XFER_BATCH 64 /* blocks per batch */

typedef void *rp_xfer_class_store[RP_XFER_SLOTS][RP_XFER_BATCH];
typedef const void *rp_xfer_class_givers[RP_XFER_SLOTS];

typedef struct rp_xfer {
    rp_lock lock;
    size_t bytes, own_bytes; /* X3 */
    size_t cap, own_cap;
    unsigned threads; /* live thread caches whose arena this is (atomic; rp_xfer_thread) */
    uint64_t puts, takes; /* batches moved in and out, cumulative (stats) */
    uint8_t n[RP_TC_CLASSES];                       /* X2 */
    uint8_t count[RP_TC_CLASSES][RP_XFER_SLOTS];    /* X2 */
    uint8_t own[RP_TC_CLASSES][RP_XFER_SLOTS];      /* X3: 1 for an own batch */
    rp_xfer_class_store *store;                     /* [RP_TC_CLASSES], X1 */
    rp_xfer_class_givers *giver; /* [RP_TC_CLASSES], after the store in its mapping: the
                                    thread cache that put each batch, an identity never
                                    dereferenced (a hint for the taker's near region) */
} rp_xfer;

/* Sets up a transfer cache with a cap of cap bytes, own_cap of them for own batches (0: it
 * keeps nothing; so does one whose store cannot be mapped). The arena module keeps one per
 * arena outside the heaps (so they never count as heap memory in use). */
void rp_xfer_init(rp_xfer *x, size_t cap, size_t own_cap);

/* Counts a thread cache taking (delta 1) or leaving (-1) x's arena as its own. */
static inline void rp_xfer_thread(rp_xfer *x, int delta)
{
    __atomic_add_fetch(&x->threads, (unsigned)delta, __ATOMIC_RELAXED);
}

/* The transfer cache of h, or NULL (not an arena, or it has none). */
static inline rp_xfer *rp_xfer_of(const rp_heap *h) { return (rp_xfer *)h->malloc_state; }

/* Offers n blocks of class c (blocks of x's arena, marked as X1 says), as batches of at most
 * RP_XFER_BATCH, from thread cache `giver` (recorded with each batch), whose arena is x's
 * when own is 1. Returns how many x took, ptrs[0 .. taken-1]; the caller keeps the rest. */
size_t rp_xfer_put(rp_xfer *x, unsigned c, void *const *ptrs, size_t n, const void *giver, int own);

/* Takes whole batches of class c, the most recently offered first, under one lock, until at
 * least `want` blocks (want >= 1) were taken or the next batch would bring the total past
 * max_count blocks: copies their pointers to out (room for max_count) and returns how many,
 * or 0. Sets *from_others (if non-NULL) to 1 when a batch taken was put by a thread cache
 * other than `taker`, else 0. */
size_t rp_xfer_take(rp_xfer *x, unsigned c, size_t want, size_t max_count, void **out, const void *taker,
                    int *from_others);

/* Returns every batch's blocks to heap h (x's arena): their cache marks are cleared and they are
 * freed. Returns the number of blocks. */
size_t rp_xfer_drain(rp_xfer *x, rp_heap *h);

/* Verifies X1..X3. 0, or non-zero with a message in why. */
int rp_xfer_check(rp_xfer *x, rp_heap *h, char *why, size_t len);

/* Totals over every arena's transfer cache: bytes held, batches moved in and out. */
void rp_xfer_totals(size_t *bytes, uint64_t *puts, uint64_t *takes);

/* Across fork: every transfer cache's lock (prepare takes them, parent releases them, the
 * child re-initialises them; the batches stay valid in the child). */
void rp_xfer_fork_prepare(void);
void rp_xfer_fork_parent(void);
void rp_xfer_fork_child(void);

#endif
