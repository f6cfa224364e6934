/* Quarantine: blocks the program freed, held back FIFO up to a byte budget before the core
 * may reuse their memory, so a write through a dangling pointer lands in memory that still
 * holds the free pattern and the block's history.
 *
 * The queue is a ring of (user pointer, bytes) entries in memory mapped from the OS — never in
 * the freed blocks themselves, so a use-after-free write cannot corrupt the queue. The ring
 * doubles when full; if that mapping fails the block is freed at once instead.
 *
 * Invariants (checked by rp_heap_check through rp_hook_check_heap):
 *   Q1  bytes == the sum of the entries' bytes; count entries live in the ring from head;
 *   Q2  after every free, bytes <= the budget (quarantine_bytes); blocks larger than the
 *       budget are never queued;
 *   Q3  every entry names a block of this heap whose metadata says RP_META_QUARANTINED, and
 *       entries are distinct;
 *   Q4  the heap holds exactly count blocks in state RP_META_QUARANTINED.
 * All functions run with the heap locked. */
#ifndef RP_DEBUG_QUARANTINE_H
#define RP_DEBUG_QUARANTINE_H

#include <stddef.h>

#include "src/heap.h"

typedef struct rp_quarantine_entry {
    void *user;   /* user pointer of the quarantined block */
    size_t bytes; /* bytes charged against the budget (the core's usable size) */
} rp_quarantine_entry;

typedef struct rp_quarantine {
    rp_quarantine_entry *ring; /* cap entries, mapped from the OS */
    size_t cap;                /* a power of two (0 before the first push) */
    size_t head;               /* index of the oldest entry */
    size_t count;
    size_t bytes;
} rp_quarantine;

struct rp_debug_heap;

/* Appends a block; 0, or -1 when the ring cannot grow (the caller frees the block now). */
int rp_quarantine_push(rp_quarantine *q, void *user, size_t bytes);

/* Releases the oldest blocks until at most budget bytes remain, verifying each one first
 * (a use-after-free write is recorded in fault with the block's history). */
void rp_quarantine_trim(rp_heap *h, size_t budget, rp_fault *fault);

/* Forgets every entry and unmaps the ring (heap destruction: the memory goes away too). */
void rp_quarantine_drop(rp_quarantine *q);

/* Q1..Q4 (Q4 with the count of quarantined blocks a walk found). 0, or 1 and why. */
int rp_quarantine_check(rp_heap *h, size_t blocks_found, char *why, size_t len);

#endif
