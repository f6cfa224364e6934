/*
 * rampart as the process's malloc.
 *
 * Two ways to use it:
 *   LD_PRELOAD=librampart_malloc.so program      (//dist:librampart_malloc.so)
 *   link librampart_malloc.a into the program    (//src/malloc:rampart_malloc)
 * Either replaces malloc, free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc, malloc_usable_size, cfree, the __libc_* aliases, malloc_trim,
 * malloc_stats, mallopt and mallinfo/mallinfo2, with glibc's semantics (16-byte alignment,
 * errno values, malloc(0) returns a unique pointer, realloc(p, 0) frees p and returns NULL).
 *
 * Memory comes from a few rampart heaps ("arenas", see the `arenas` option); each thread
 * keeps a bounded cache of small free blocks (`cache_bytes`) in front of them, so the common
 * malloc/free pair takes no lock. free() of a small block only records the pointer (and
 * prefetches its header): a thread examines its recorded frees in batches (`free_batch`,
 * default 32), so a double or invalid free is reported up to 31 frees after the call that
 * made it, or at the thread's next cache miss, realloc, flush, stats call or exit;
 * RAMPART_OPTIONS=free_batch=1 reports every one at its call. Options come from RAMPART_OPTIONS (src/options.h; e.g.
 * RAMPART_OPTIONS=stats=1:cache_bytes=1M).
 *
 * Small blocks (requests of up to 1008 bytes, and aligned ones whose size rounded up to the
 * alignment is at most 1008) come from slabs: blocks without headers in an address range
 * reserved for them (option slabs=0 turns them off). They belong to no rp_heap: rp_heap_of
 * returns NULL for them and rp_free, rp_realloc and rp_usable_size refuse them as blocks
 * rampart's heaps never handed out. free, realloc and malloc_usable_size handle every block
 * malloc returns; use those.
 *
 * This header declares what the drop-in adds to the rampart API (rampart.h).
 */
#ifndef RAMPART_MALLOC_H
#define RAMPART_MALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Receives a chunk of stats text (NUL-terminated, may hold several lines). */
typedef void (*rp_malloc_write_fn)(void *arg, const char *text);

/* Prints human-readable statistics (the calling thread's recorded frees examined first, as
 * rp_malloc_stats does): one block per heap (arenas, the default heap and any
 * heap the program created: bytes in use, free, mapped from the OS and its peak, calls),
 * the thread caches (how many, bytes cached, refills, flushes), the transfer caches and
 * totals.
 * write NULL prints to stderr. Never allocates from the heaps it reports on. */
void rp_malloc_stats_print(rp_malloc_write_fn write, void *arg);

/* Totals of the drop-in (all arenas and thread caches). */
typedef struct rp_malloc_stats {
    size_t arenas;            /* heaps created for malloc so far */
    size_t thread_caches;     /* live thread caches */
    size_t cached_bytes;      /* bytes of blocks held in thread caches (live for the heaps) */
    size_t cache_bytes_limit; /* per-thread cap (option cache_bytes) */
    size_t bytes_in_use;      /* sum over arenas of rp_heap_stats.bytes_in_use (cached included),
                                 plus slab_live_bytes */
    size_t os_bytes;          /* sum over arenas of memory mapped from the OS now, plus slab_bytes */
    uint64_t refills;         /* cache refills from the arenas (one lock each) */
    uint64_t flushes;         /* cache flushes to the arenas (one lock per heap touched) */
    uint64_t foreign_frees;   /* free() of pointers rampart never returned, ignored */
    size_t transfer_bytes;    /* bytes of blocks in the arenas' transfer caches (batches
                                 flushed by one thread, waiting for their arena's threads) */
    uint64_t transfer_puts;   /* batches flushed into transfer caches */
    uint64_t transfer_takes;  /* batches refilled from them (no heap lock) */
    size_t slabs;             /* slabs the arenas hold: small blocks (up to 1008 bytes) without
                                 headers, 64 KiB each, from one reserved address range */
    size_t slab_bytes;        /* their bytes (address space the arenas use; pages no block was
                                 written to take no memory) */
    size_t slab_live_bytes;   /* bytes of live slab blocks (handed out or cached) */
    size_t slabs_empty;       /* slabs kept empty for reuse (malloc_trim gives them back) */
} rp_malloc_stats_t;

/* Fills *out. The calling thread's recorded frees are examined first (so its frees are all
 * counted); cache counters of other threads are read without stopping them, so they are a
 * snapshot. Returns 0, or -1 with errno EINVAL for NULL. */
int rp_malloc_stats(rp_malloc_stats_t *out);

/* Examines the calling thread's recorded frees, then returns every block in its cache to
 * its heap. */
void rp_malloc_thread_flush(void);

/* Checks every arena with rp_heap_check and its transfer cache, and the calling thread's
 * cache (each cached block is a live block of an arena with an intact cache link and key;
 * counts and bytes add up).
 * Returns 0, or non-zero with a message in why (truncated to len bytes). */
int rp_malloc_check(char *why, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* RAMPART_MALLOC_H */
