/* Writes checked against the heap's blocks (the hardened profile, hardened.h): memcpy, memmove
 * and memset of the LD_PRELOAD library look at the block their destination lies in before they
 * write, as snmalloc's guarded memcpy does, so an overflow by a copy is stopped at the copy,
 * before any byte is written, even when the block is never freed:
 *   - a destination inside a live block must end at its request (seal.h) at the latest: past it
 *     is a heap-buffer-overflow;
 *   - a destination inside a freed block (in a cache or the quarantine, or free in its slab),
 *     or in free heap memory, is a use-after-free write;
 *   - a destination in a block's header, or one that starts before a block and runs into it,
 *     is a heap-buffer-underflow.
 * Checked where the block is found from rampart's metadata in bounded time: slab blocks,
 * page-tier blocks (their head within RP_GUARD_SCAN_PAGES descriptors), span blocks (their
 * header's mark within RP_GUARD_SCAN_GRANULES marks: cache_mark.h), a write into a block's
 * header or one that runs into it from just below. Destinations outside the arenas' memory are
 * never checked. Without the hardened profile the three functions only
 * forward to the C library's (one test of rp_guard_writes on the way).
 *
 * The functions are defined only in the LD_PRELOAD libraries (RP_GUARDED_MEMORY): a static
 * link keeps the C library's, and the sanitizer builds keep their runtime's. */
#ifndef RP_GUARDED_MEMORY_H
#define RP_GUARDED_MEMORY_H

#include <stddef.h>

/* Page descriptors looked back at most for the head of a page-tier block. */
#define RP_GUARD_SCAN_PAGES 64u
/* Cache marks looked back at most for the header of a span block (64 KiB). */
#define RP_GUARD_SCAN_GRANULES 4096u

/* 1 when writes are checked (set once by the caches' set-up: option hardened, or guarded blocks
 * on); rp_guard_heap_writes: the arenas' blocks are checked too (hardened: their seals), else
 * only the guarded blocks (guard_pool.h). */
extern int rp_guard_writes, rp_guard_heap_writes;

/* Checks a write of n bytes at d (what: the function, for the report). Returns 0 when the
 * write may go ahead; otherwise reports it and returns -1 (when the report function returns). */
int rp_guard_write(void *d, size_t n, const char *what);

/* memset without the check: for the allocator's own writes into blocks it holds (the hardened
 * profile's wipes of freed blocks, which a check would take for writes after free). */
void *rp_memset_unchecked(void *p, int c, size_t n);

#endif
