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
 * Heap dumps (rampart_dump.h) come with the drop-in in both flavours: dump_signal, dump_interval,
 * dump_on_peak, dump_at_exit, rp_dump_to_path. In the release flavour RAMPART_OPTIONS=profile=1
 * turns on the sampled heap profiler (a block every profile_rate bytes allocated on average,
 * 512K by default, Poisson-sampled; docs/PROFILING.md): the dumps then carry the sampled
 * blocks' stacks, which rpdump's sites, flame, pprof, diff and timeline read as estimates of
 * the live blocks and bytes by call site.
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

/* Prints the statistics of rp_malloc_stats_print as one JSON object (RAMPART_OPTIONS=stats_json=1
 * prints it at exit instead of the text): "flavour", "pid", "heaps" (array: "name", "arena" and
 * the fields of rp_heap_stats_t with the names they have there, but the per-class arrays;
 * "quarantined_blocks" and "quarantined_bytes" in the debug flavour), "caches", "transfer",
 * "slabs" (the fields of rp_malloc_stats_t with their names), "totals" (the fields of
 * rp_malloc_totals_t) and "retention" ("dirty_bytes", "released_bytes", "retain_bytes",
 * "purge_delay_ms"). Sizes and counts are integers; names are stable (later versions add
 * fields, never rename or remove one). write NULL prints to stderr. Never allocates from the
 * heaps it reports on. */
void rp_malloc_stats_json(rp_malloc_write_fn write, void *arg);

/* Totals of the process's use of the malloc family, kept without a lock or an atomic operation
 * on the fast paths (per-thread counts summed when asked for) and the heap profiler's estimates.
 * Allocations and frees are counted when the calling thread has a thread cache (every thread
 * but during the drop-in's set-up and a thread's teardown). */
typedef struct rp_malloc_totals {
    uint64_t allocs;             /* allocation calls (failed ones included): malloc, calloc, the
                                    aligned functions, realloc of NULL or moving a block (realloc
                                    counts one allocation and one free unless it keeps a small
                                    block where it is) */
    uint64_t cache_hits;         /* of which served by a thread cache without taking a lock */
    uint64_t frees;              /* blocks freed (free(NULL) and realloc(NULL) do not count) */
    uint64_t bytes_allocated;    /* bytes requested by those calls, cumulative */
    size_t live_bytes;           /* usable bytes of live blocks now (blocks held in thread and
                                    transfer caches included, as heap dumps count them) */
    size_t peak_live_bytes;      /* the highest live_bytes seen: looked at every few MiB each
                                    thread allocates (and at every sample), so a peak that lasts
                                    less than that may be missed */
    uint64_t peak_ms;            /* when it was seen, in ms since the drop-in was set up */
    uint64_t peak_dumps;         /* dumps asked for by dump_on_peak */
    /* The heap profiler (RAMPART_OPTIONS=profile=1, release flavour). The estimates weigh each
     * sample by the blocks and bytes it stands for (rampart_dump.h); 0 without profiling. */
    int profiling;               /* 1 when the profiler samples */
    size_t profile_rate;         /* mean bytes between samples (0: every allocation) */
    uint64_t samples;            /* blocks sampled so far */
    uint64_t samples_live;       /* of which still live */
    uint64_t samples_dropped;    /* samples lost (the profiler's memory could not grow) */
    uint64_t freed_bytes_estimate;     /* requested bytes of the blocks freed */
    uint64_t temporaries_estimate;     /* blocks freed within temporary_ms of their allocation */
    uint64_t temporary_bytes_estimate; /* their requested bytes */
    unsigned temporary_ms;       /* option temporary_ms */
} rp_malloc_totals_t;

/* Fills the first size bytes of *out (pass sizeof *out: a program built against an older,
 * shorter struct gets the fields it knows). Returns 0, or -1 with errno EINVAL for NULL or 0. */
int rp_malloc_totals(rp_malloc_totals_t *out, size_t size);

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
