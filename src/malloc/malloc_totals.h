/* The drop-in's process-wide totals (rp_malloc_totals, rampart_malloc.h): allocations and frees,
 * thread-cache hits, requested bytes, live bytes and their peak, and the heap profiler's
 * estimates (freed bytes, temporaries).
 *
 * Kept cheaply: nothing on the fast paths but the thread cache's own counters (its allocation
 * clock, profile.h, and a count of allocations and frees, plain stores by the owner), read and
 * summed when the totals are asked for, and folded into retired totals when a thread exits.
 * Live bytes come from the arenas' and slab pools' counters (kept on their slow paths under
 * their locks): usable bytes of live blocks, blocks in thread and transfer caches included, as
 * heap dumps count them. The peak is the highest live figure seen at a clock event (each
 * thread's every RP_PROF_FOLD_BYTES requested, or every sample), so it misses at most what the
 * threads allocate between two of their events; the same look drives dump_on_peak. */
#ifndef RP_MALLOC_TOTALS_H
#define RP_MALLOC_TOTALS_H

#include <stddef.h>
#include <stdint.h>

#include "rampart_malloc.h"

/* Usable bytes of the live blocks of every arena and slab pool (each locked in turn). */
size_t rp_malloc_live_bytes(void);

/* A clock event: looks at the live bytes, raises the peak, and with dump_on_peak asks for a dump
 * when the live bytes passed the last peak dump's by dump_peak_step. No heap lock held. */
void rp_malloc_totals_observe(void);

/* Reads the options (dump_on_peak); once, from rp_malloc_init. */
void rp_malloc_totals_setup(void);

/* Per-thread counts summed over the live thread caches and those retired (thread_cache.c). */
typedef struct rp_tc_counts {
    uint64_t allocs;     /* allocations made through a thread cache */
    uint64_t misses;     /* of which took a lock (refills and direct allocations) */
    uint64_t frees;      /* frees of blocks by threads with a cache */
    uint64_t bytes;      /* requested bytes (the allocation clocks) */
} rp_tc_counts;

void rp_tc_counts_sum(rp_tc_counts *out);

#endif
