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
 * A batch is a list threaded through its blocks exactly like a thread cache's bin (word 0:
 * next XOR key, word 1: the block's tag, thread_cache.h), so its blocks still count as
 * cached: a free() of one of them is a double free, reported as for any cached block.
 *
 * Invariants (rp_xfer_check verifies them under the lock):
 *   X1  every block on a batch of class c is a live span block of this arena of at least
 *       rp_tc_class_size(c) bytes carrying its tag; batch.count and batch.bytes are its
 *       length and the sum of its blocks' sizes; the last link is NULL;
 *   X2  n[c] <= RP_XFER_SLOTS and slot[c][0 .. n[c]-1] are the batches of class c;
 *   X3  bytes is the sum of all batches' bytes and bytes <= cap.
 * Bounded: at most cap bytes per arena (four thread caches' worth). malloc_trim() and
 * rp_xfer_drain give everything back to the heap. */
#ifndef RP_TRANSFER_CACHE_H
#define RP_TRANSFER_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "heap.h"
#include "lock.h"
#include "size_class.h"

#define RP_XFER_SLOTS 8 /* batches per class */

typedef struct rp_xfer_batch {
    void *head;     /* first block (user pointer); its word 0 links on */
    uint32_t count; /* blocks */
    uint32_t bytes; /* sum of the blocks' sizes (a batch is at most one bin's worth) */
} rp_xfer_batch;

typedef struct rp_xfer {
    rp_lock lock;
    size_t bytes; /* X3 */
    size_t cap;
    uint64_t puts, takes; /* batches moved in and out, cumulative (stats) */
    uint8_t n[RP_TC_CLASSES];                          /* X2 */
    rp_xfer_batch slot[RP_TC_CLASSES][RP_XFER_SLOTS];  /* X1 */
} rp_xfer;

/* Sets up a transfer cache with a cap of cap bytes (0: it keeps nothing). The arena module
 * keeps one per arena outside the heaps (so they never count as heap memory in use). */
void rp_xfer_init(rp_xfer *x, size_t cap);

/* The transfer cache of h, or NULL (not an arena, or it has none). */
static inline rp_xfer *rp_xfer_of(const rp_heap *h) { return (rp_xfer *)h->malloc_state; }

/* Offers the batch b of class c (blocks of x's arena, tagged and linked as X1 says). Returns
 * 1 if x took it, 0 if it is full: the caller keeps the blocks. */
int rp_xfer_put(rp_xfer *x, unsigned c, const rp_xfer_batch *b);

/* Takes the most recently offered batch of class c if it has at most max_count blocks and
 * max_bytes bytes. Returns 1 and fills *b, or 0. */
int rp_xfer_take(rp_xfer *x, unsigned c, uint32_t max_count, size_t max_bytes, rp_xfer_batch *b);

/* Returns every batch's blocks to heap h (x's arena): their tags are cleared and they are
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
