/* Telling AddressSanitizer and Valgrind's memcheck what rampart's memory is.
 *
 * Under ASan (--config=asan) the runtime poisons, with the manual-poisoning interface,
 * everything in a heap that the program must not touch: block headers and debug metadata,
 * trailer padding after the requested size, quarantined blocks and free memory. An overflow
 * from user code into any of it is then reported by ASan at the faulting instruction. The
 * core reads and writes its metadata from functions marked RP_NO_SANITIZE_ADDRESS; the
 * runtime opens (unpoisons) the bytes it is about to touch and closes them afterwards.
 *
 * Under Valgrind (detected at run time with RUNNING_ON_VALGRIND) the runtime issues memcheck
 * client requests: MALLOCLIKE / FREELIKE / RESIZEINPLACE for user areas (so memcheck reports
 * leaks, uses after free and uninitialised reads with its own stacks), and NOACCESS for the
 * debug metadata and trailer of live blocks and for quarantined blocks. Free span memory stays
 * addressable under Valgrind, because the core writes headers into it when it splits blocks.
 *
 * Without either, every function here returns at once (one predictable branch). */
#ifndef RP_DEBUG_SANITIZER_TRACK_H
#define RP_DEBUG_SANITIZER_TRACK_H

#include <stddef.h>

#include "src/heap.h"

/* 1 when ASan is compiled in or the process runs under Valgrind. */
extern int rp_san_enabled;

/* Detects Valgrind; called once before the first heap is created. */
void rp_san_init(void);

/* 1 when the process runs under Valgrind (known after rp_san_init). */
int rp_san_on_valgrind(void);

void rp_san_open_slow(const void *p, size_t len);
void rp_san_close_meta_slow(const void *p, size_t len);
void rp_san_close_free_slow(const void *p, size_t len);

/* The runtime is about to read or write allocator-owned bytes [p, p+len). */
static inline void rp_san_open(const void *p, size_t len)
{
    if (__builtin_expect(rp_san_enabled, 0))
        rp_san_open_slow(p, len);
}
/* The runtime is done with [p, p+len), which is block metadata or trailer (forbidden to the
 * program under both tools). */
static inline void rp_san_close_meta(const void *p, size_t len)
{
    if (__builtin_expect(rp_san_enabled, 0))
        rp_san_close_meta_slow(p, len);
}
/* The runtime is done with [p, p+len), which is free memory (poisoned under ASan; stays
 * addressable under Valgrind, where the core writes into free memory). */
static inline void rp_san_close_free(const void *p, size_t len)
{
    if (__builtin_expect(rp_san_enabled, 0))
        rp_san_close_free_slow(p, len);
}

/* A block of h became live: [lo, user) is header/metadata, [user, user+requested) the
 * program's, [user+requested, hi) trailer. The runtime has finished writing all of it. */
void rp_san_block_live(rp_heap *h, void *user, size_t requested, size_t usable);
/* A live block was resized in place from old_requested to requested bytes. */
void rp_san_block_resized(rp_heap *h, void *user, size_t old_requested, size_t requested, size_t usable);
/* The program freed the block (it goes to quarantine or straight back to the core). */
void rp_san_block_freed(rp_heap *h, void *user, size_t usable);
/* The block's memory is about to be handed back to the core (after free or eviction): make
 * it addressable for the core's own writes. */
void rp_san_block_released(rp_heap *h, void *user, size_t usable);
/* Memory [lo, lo+len) leaves the heap (unmapped or returned to its caller). */
void rp_san_region_leaving(void *lo, size_t len);
/* Heap destruction: every block still live is forgotten (memcheck would call them leaks). */
void rp_san_heap_dropped(rp_heap *h);
/* Around stack capture: libunwind probes addresses with write(2) on a pipe, which memcheck
 * reports as uninitialised syscall bytes; errors are off in between (per thread). */
void rp_san_quiet_begin(void);
void rp_san_quiet_end(void);

#endif
