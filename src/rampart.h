/*
 * rampart — a heap allocator with O(1) allocation for every size and alignment.
 *
 * Public API. Every function is safe to call from several threads; a heap is protected by
 * its own lock, so threads working on different heaps never contend.
 *
 * Errors: functions returning a pointer return NULL and set errno to
 *   EINVAL  alignment not a power of two, region too small, misaligned or overlapping;
 *   ENOMEM  out of memory, heap limit reached, or a size / n*size that overflows.
 * Misuse the heap detects (freeing a pointer rampart never returned, freeing twice, a
 * corrupted block header or free list) goes to the report function (rp_set_report_fn);
 * the default one prints one line naming the address to stderr and aborts. This holds in
 * the release flavour too.
 *
 * Two flavours are built from the same sources: release (//src:rampart) and debug
 * (//src:rampart_debug, compiled with RAMPART_DEBUG), which adds cookies, poisoning,
 * quarantine, backtraces and leak reports. rp_flavour() says which one is linked.
 */
#ifndef RAMPART_H
#define RAMPART_H

#include <stddef.h>
#include <stdint.h>

/* The version of this header (semantic versioning: the major number changes when the API or
 * ABI breaks; the shared libraries' soname carries it). RAMPART_VERSION orders versions in
 * #if tests: 10203 is 1.2.3. rp_version() gives the version of the library actually linked. */
#define RAMPART_VERSION_MAJOR 0
#define RAMPART_VERSION_MINOR 1
#define RAMPART_VERSION_PATCH 0
#define RAMPART_VERSION_STRING "0.1.0"
#define RAMPART_VERSION (RAMPART_VERSION_MAJOR * 10000 + RAMPART_VERSION_MINOR * 100 + RAMPART_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rp_heap rp_heap;

/* ------------------------------------------------------------------------------------------
 * Heaps
 * ---------------------------------------------------------------------------------------- */

/* Flags for rp_heap_config.flags. */
enum {
    /* Never map memory from the OS: the heap lives only in regions given to
     * rp_heap_add_region (hugepages, shared memory, a static buffer). */
    RP_HEAP_NO_OS = 1u << 0,
    /* Ask the OS for transparent huge pages (madvise MADV_HUGEPAGE) on the page area of every
     * region mapped from the OS that holds at least one 2 MiB page (and on the whole 2 MiB
     * pages of its page descriptors, which a region of 256 MiB has): the first touch of each
     * 2 MiB then costs one fault instead of 512, which dominates the cost of carving fresh
     * small blocks (their headers are written into fresh memory). The price is resident
     * memory in 2 MiB steps, and khugepaged may collapse partly decommitted ranges again;
     * leave it off for heaps that must stay small (or add RP_HEAP_HUGE_PAGES_LATE). Caller
     * regions are never advised. */
    RP_HEAP_HUGE_PAGES = 1u << 1,
    /* The hardened profile: freed memory is wiped before anything else can get it, so no
     * secret outlives its block and a stale pointer reads zeros: a freed span block is
     * zeroed, a freed page-tier block's pages are given back to the OS (they read as zeros
     * and cost no memory until written again). The malloc drop-in's option hardened=1 adds
     * a small quarantine with randomised reuse, write-after-free checks, the next header's
     * check on free and guard pages between slab chunks (README, Hardening). */
    RP_HEAP_HARDENED = 1u << 2,
    /* With RP_HEAP_HUGE_PAGES: only regions mapped once the heap already holds 4 MiB of
     * regions are advised (regions double: the first advised one takes the heap past 7 MiB
     * with the drop-in's 1 MiB first region). A heap that stays small keeps 4 KiB pages, where one huge page
     * would be most of its resident memory; one that grows gets huge pages for the bulk. The
     * malloc drop-in's arenas use both unless RAMPART_OPTIONS has huge_pages=0. */
    RP_HEAP_HUGE_PAGES_LATE = 1u << 3,
};

/* Heap settings. Every field left 0 (or NULL) takes its default, so
 * `rp_heap_config c = {0}; c.name = "net";` is a complete configuration. */
typedef struct rp_heap_config {
    const char *name;          /* shown in reports, stats and dumps; copied (31 chars kept). */
    size_t max_bytes;          /* cap on memory mapped from the OS; 0 = no cap. */
    size_t large_threshold;    /* requests of at least this many bytes are served as whole
                                  pages by the page tier; default 64 KiB, range 4 KiB..256 MiB. */
    size_t retain_bytes;       /* free page-tier memory that may stay resident (pages freed
                                  after use; fresh pages cost nothing and do not count) before
                                  the rest goes back to the OS (madvise / munmap); default
                                  32 MiB. */
    size_t region_bytes;       /* size of the first region mapped from the OS (later ones
                                  double, up to 256 MiB); default 4 MiB. */
    unsigned flags;            /* RP_HEAP_* */
    unsigned purge_delay_ms;   /* 0 (default): free memory beyond retain_bytes goes back to
                                  the OS as it is freed. Otherwise it stays until the first
                                  release of pages at least this long after the heap went
                                  beyond the limit, which then trims the heap down to it
                                  (rp_heap_trim does it at once): memory a program frees and
                                  soon allocates again is reused instead of being faulted in
                                  again as zeroed pages. At most 3600000 (one hour). */
    size_t mapped_block_bytes; /* large blocks of at least this many bytes (aligned to at most
                                  2 MiB) get a mapping of their own in the release flavour:
                                  realloc moves them with mremap instead of copying, free
                                  unmaps them. 0 = the default: 32 MiB, raised past the size of
                                  a mapped block freed when the heap would keep the pages of
                                  such a block (purge delay, or within retain_bytes), up to
                                  256 MiB, as glibc moves its mmap threshold; with the default,
                                  a block rp_realloc has to move gets a mapping from 4 MiB (a
                                  buffer that outgrew its place tends to grow again), a
                                  threshold raised the same way. SIZE_MAX = never; other
                                  values (fixed, for realloc too) of at least 2 MiB. Ignored
                                  with RP_HEAP_NO_OS. */
} rp_heap_config;

/* Creates a heap. cfg NULL = all defaults. Memory comes from the OS on demand (unless
 * RP_HEAP_NO_OS) and from regions added with rp_heap_add_region.
 * Returns NULL with errno ENOMEM when the heap's control block cannot be mapped, or EINVAL
 * for an out-of-range setting. */
rp_heap *rp_heap_create(const rp_heap_config *cfg);

/* Gives the heap caller-owned memory [base, base+len) (hugepages, shared memory, a static
 * buffer). rampart keeps its metadata for the region at the start of the region; the rest is
 * served like OS memory, but is never unmapped or madvised. base needs no alignment (it is
 * rounded up to 16 bytes, the usable pages to 4 KiB). The memory must stay valid until
 * rp_heap_destroy. Returns 0, or -1 with errno EINVAL (NULL heap or base, too small to hold
 * one page after the metadata, or overlapping memory another region already manages). */
int rp_heap_add_region(rp_heap *h, void *base, size_t len);

/* Destroys the heap: every block in it becomes invalid, every OS mapping is returned and
 * caller regions are forgotten (their contents are left as they are). NULL is a no-op.
 * The default heap cannot be destroyed (the call is ignored). */
void rp_heap_destroy(rp_heap *h);

/* The process-wide default heap, created on first use. rp_alloc(NULL, ...) uses it. */
rp_heap *rp_default_heap(void);

/* The heap owning p (a pointer returned by rampart and not yet freed), or NULL if p is not
 * inside any rampart heap's memory. Small blocks of the release malloc drop-in live in its
 * slabs, which belong to no heap: NULL for them too (malloc_usable_size answers for them).
 * Never reports; meant for tools and dispatchers. */
rp_heap *rp_heap_of(const void *p);

/* The heap's name (as given in its configuration, or "default"/"heap"). */
const char *rp_heap_name(const rp_heap *h);

/* Returns free memory to the OS now (normally this happens as blocks are freed, beyond
 * retain_bytes): gives up the heap's spare span (a wholly free one kept to absorb
 * alloc/free churn), unmaps every wholly free OS region, then gives back the pages of free
 * page-tier blocks until at most keep_bytes of free memory may be resident. Returns the
 * number of bytes released. */
size_t rp_heap_trim(rp_heap *h, size_t keep_bytes);

/* ------------------------------------------------------------------------------------------
 * Allocation
 * ---------------------------------------------------------------------------------------- */

/* Allocates size bytes aligned to align (a power of two; 0 = default 16, smaller values are
 * raised to 16). h NULL = the default heap. size 0 returns a unique, freeable minimum block.
 * The cost does not depend on the number of live or free blocks: bitmap searches
 * examine at most three free blocks (two list heads of the segregated-fit index, one of the
 * page tier). Only a heap that cannot grow (caller memory, a cap) and has no aligned free
 * block large enough reads more before it fails: it tries to assemble the run from adjacent
 * free blocks, at most 64 per order. Returns NULL with EINVAL (align not a power of two) or ENOMEM
 * (out of memory, or align above 1 GiB: a larger alignment would take a region as large as
 * itself). */
void *rp_alloc(rp_heap *h, size_t size, size_t align);

/* Like rp_alloc for n*size bytes, zero-filled. ENOMEM if n*size overflows. A block of the
 * page tier made of pages fresh from the OS (or given back to it since) is not written:
 * those read as zeros already, and stay unfaulted until used. */
void *rp_calloc(rp_heap *h, size_t n, size_t size, size_t align);

/* Resizes p to size bytes, keeping p's alignment and contents (up to the smaller size).
 * p NULL = rp_alloc(h, size, 0). Shrinks in place, and grows in place into a free right
 * neighbour when it can; otherwise moves the block. A block of 32 MiB or more, aligned to at
 * most 2 MiB, in a heap that may map memory has a mapping of its own in the release flavour
 * and moves without a copy (mremap). If p belongs to another heap than h
 * (h non-NULL), the new block is allocated in h and p is freed. size 0 shrinks p to a
 * minimum block (it does not free it). On failure returns NULL, sets errno and leaves p
 * untouched. */
void *rp_realloc(rp_heap *h, void *p, size_t size);

/* Frees p, whichever heap it came from. NULL is a no-op. release memory is not cleared.
 * A pointer rampart did not return, an interior pointer or a second free is reported. */
void rp_free(void *p);

/* Bytes usable at p (>= the size requested). 0 for NULL; a pointer rampart does not own is
 * reported like an invalid free and 0 is returned if the report function returns. */
size_t rp_usable_size(const void *p);

/* ------------------------------------------------------------------------------------------
 * Introspection
 * ---------------------------------------------------------------------------------------- */

#define RP_STATS_CLASSES 32 /* first-level classes of the free-space index */
#define RP_STATS_ORDERS 40  /* buddy orders of the page tier (4 KiB << order) */

/* Counters kept on every allocation and free (reading them never walks the heap, except
 * largest_free, which looks at the highest non-empty class of each tier).
 * The struct keeps its tag name `struct rp_heap_stats` because the function reading it is
 * called rp_heap_stats (C does not allow a typedef and a function to share a name);
 * rp_heap_stats_t is the typedef. */
typedef struct rp_heap_stats {
    size_t bytes_in_use;    /* bytes of live blocks, block headers and padding included */
    size_t bytes_usable;    /* sum of rp_usable_size() over live blocks */
    size_t blocks_in_use;   /* live blocks (allocated, not freed) */
    size_t bytes_free;      /* free bytes: free blocks in spans + free pages */
    size_t blocks_free;     /* free blocks in spans + free page-tier blocks */
    size_t largest_free;    /* bytes of the largest free block in either tier */
    size_t span_bytes;      /* bytes of page-tier memory handed to the small-block tier */
    size_t spans;           /* spans currently in use by the small-block tier */
    size_t large_blocks;    /* live blocks served directly by the page tier */
    size_t page_free_bytes; /* free bytes held by the page tier (part of bytes_free) */
    size_t page_dirty_bytes; /* part of page_free_bytes that may be resident (freed after
                                use, not yet given back); what retain_bytes bounds */
    size_t regions;         /* regions (OS and caller) */
    size_t region_bytes;    /* usable bytes of all regions (page area) */
    size_t os_bytes;        /* bytes mapped from the OS now, control block included */
    size_t os_bytes_peak;   /* high-water mark of os_bytes */
    size_t os_released;     /* bytes handed back to the OS so far (madvise and munmap calls,
                               cumulative: decommitted pages later unmapped count twice) */
    uint64_t alloc_calls;   /* successful allocations (rp_alloc, rp_calloc, moves by realloc) */
    uint64_t free_calls;    /* blocks freed */
    uint64_t blocks_examined; /* free blocks inspected by allocation searches (list heads of
                                 the segregated-fit index and of the page tier), cumulative */
    uint64_t max_examined;    /* most free blocks inspected by one allocation (at most 3) */
    size_t class_free_blocks[RP_STATS_CLASSES]; /* free span blocks per first-level class */
    size_t order_free_blocks[RP_STATS_ORDERS];  /* free page-tier blocks per buddy order */
} rp_heap_stats_t;

/* Fills *out with h's counters (h NULL = the default heap). Returns 0, or -1 with EINVAL for
 * a NULL out. */
int rp_heap_stats(rp_heap *h, struct rp_heap_stats *out);

/* Block states seen by rp_heap_walk. */
enum {
    RP_BLOCK_USED = 1,        /* allocated and live */
    RP_BLOCK_FREE = 2,        /* free */
    RP_BLOCK_QUARANTINED = 3, /* freed by the program, held back by the debug flavour */
};
/* Which tier a block belongs to. */
enum {
    RP_TIER_SPAN = 1, /* a block of the segregated-fit tier, inside a span */
    RP_TIER_PAGE = 2, /* whole pages of the page tier (large blocks and free pages) */
};

typedef struct rp_block_info {
    void *addr;            /* user pointer of a used/quarantined block; start of a free one */
    size_t size;           /* usable bytes of a used block; bytes of a free block */
    void *block;           /* first byte of the block, metadata included */
    size_t block_size;     /* bytes the block occupies */
    size_t requested;      /* size asked for (debug flavour); 0 when not recorded */
    size_t align;          /* alignment asked for (used blocks) */
    int state;             /* RP_BLOCK_* */
    int tier;              /* RP_TIER_* */
    uint32_t alloc_stack;  /* debug flavour: stack depot ids (0 = none) */
    uint32_t free_stack;
} rp_block_info;

/* Called once per block; return non-zero to stop the walk. Runs with the heap locked: the
 * callback must not allocate from or free into the same heap. */
typedef int (*rp_walk_fn)(const rp_block_info *block, void *arg);

/* Visits every block of every region in address order (spans block by block, the page tier
 * block by block). Returns 0 when the walk completed, the callback's non-zero value when it
 * stopped early, or -1 with EINVAL for a NULL heap or callback. */
int rp_heap_walk(rp_heap *h, rp_walk_fn fn, void *arg);

/* Verifies every invariant of the heap's structures (documented at their definitions): the
 * free-space index and its bitmaps, every block header and boundary tag, coalescing, the page
 * tier's descriptors and buddy lists, the address map and the counters. Returns 0 when all
 * hold; otherwise a non-zero code and, if why is non-NULL, a message naming the first
 * violation and its address (truncated to len bytes, NUL-terminated). */
int rp_heap_check(rp_heap *h, char *why, size_t len);

/* ------------------------------------------------------------------------------------------
 * Error reports
 * ---------------------------------------------------------------------------------------- */

typedef enum rp_error_kind {
    RP_ERR_INVALID_FREE = 1,     /* pointer not returned by rampart, or interior pointer */
    RP_ERR_DOUBLE_FREE,          /* block already free */
    RP_ERR_CORRUPT_BLOCK,        /* a block header failed its integrity check */
    RP_ERR_CORRUPT_FREE_LIST,    /* a free-list link or the index is inconsistent */
    RP_ERR_HEAP_BUFFER_OVERFLOW, /* debug: trailer canary after the requested size changed;
                                    hardened drop-in: seal or canary (src/malloc/seal.h), or a
                                    checked write past a block (src/malloc/guarded_memory.h) */
    RP_ERR_HEAP_BUFFER_UNDERFLOW,/* debug: canary before the user area changed; hardened
                                    drop-in: what lies below a block, or a write into it */
    RP_ERR_USE_AFTER_FREE_WRITE, /* debug: poison of a freed block changed; hardened drop-in:
                                    a freed block written (quarantine check, checked write) */
    RP_ERR_USE_AFTER_FREE,       /* guarded block (option guard): a freed block read or written,
                                    caught at the access */
    RP_ERR_KIND_COUNT
} rp_error_kind;

typedef struct rp_report {
    rp_error_kind kind;
    const void *address;   /* the pointer passed in, or the first corrupted byte */
    const void *block;     /* user pointer of the block concerned, if known */
    size_t block_size;     /* its usable or requested size, if known */
    long offset;           /* address - block, when block is known */
    const rp_heap *heap;   /* the heap concerned, if known */
    const char *message;   /* one line, without newline (valid during the call only) */
} rp_report;

/* A report handler. If it returns, the operation that detected the error is abandoned
 * (the free does nothing, the allocation returns NULL) and the heap stays consistent. */
typedef void (*rp_report_fn)(const rp_report *report, void *arg);

/* Installs fn (NULL = the default: print the one-line message to stderr, then abort).
 * Returns the previous handler; *old_arg receives its argument when old_arg is non-NULL. */
rp_report_fn rp_set_report_fn(rp_report_fn fn, void *arg, void **old_arg);

/* A stable name for a kind: "invalid-free", "double-free", "heap-buffer-overflow", ... */
const char *rp_error_kind_name(rp_error_kind kind);

/* ------------------------------------------------------------------------------------------
 * Build information
 * ---------------------------------------------------------------------------------------- */

/* "release" or "debug". */
const char *rp_flavour(void);

/* The linked library's version, "MAJOR.MINOR.PATCH" (RAMPART_VERSION_STRING when it was
 * built); a program built against another header can compare the two. */
const char *rp_version(void);

#ifdef __cplusplus
}
#endif
#endif /* RAMPART_H */
