/* The heap: its control block, lifecycle, growth from the OS and the retention policy.
 * Internal; the public view is rp_heap in rampart.h. */
#ifndef RP_HEAP_H
#define RP_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "block.h"
#include "free_index.h"
#include "lock.h"
#include "page_tier.h"
#include "rampart.h"
#include "region.h"
#include "report.h"
#include "header_mac.h"

#define RP_DEFAULT_LARGE_THRESHOLD ((size_t)64 << 10)
#define RP_DEFAULT_RETAIN ((size_t)32 << 20)
#define RP_DEFAULT_MAPPED_BLOCK ((size_t)32 << 20) /* rp_heap_config.mapped_block_bytes */
#define RP_DEFAULT_REALLOC_MAPPED ((size_t)4 << 20) /* its counterpart for blocks realloc moves */
#define RP_MAX_PURGE_DELAY_MS 3600000u /* rp_heap_config.purge_delay_ms */
#define RP_DEFAULT_REGION ((size_t)4 << 20)
#define RP_MAX_REGION ((size_t)256 << 20)  /* regions grow geometrically up to this */
#define RP_HUGE_PAGE_BYTES ((size_t)2 << 20) /* a transparent huge page on x86-64 and arm64 (4 KiB base pages) */
#define RP_SPAN_BYTES ((size_t)1 << 20)    /* preferred span size */
#define RP_MAX_SPAN_BYTES ((size_t)1 << 30)
#define RP_MAX_REQUEST ((size_t)1 << 43)   /* larger requests fail with ENOMEM */
/* Larger alignments fail with ENOMEM. An aligned request the page tier serves from a fresh
 * region takes a region as large as its alignment, and the address map holds 8 bytes for
 * each of its pages: 2^40 asked for 1 byte would write 2 GiB of map that stays resident.
 * 1 GiB (the largest x86-64 page) costs at most 2 MiB of map. */
#define RP_MAX_ALIGN ((size_t)1 << 30)
#define RP_MIN_ALIGN ((size_t)RP_GRANULE)
#define RP_UNMAP_LATER 4 /* mappings whose unmapping the heap retries (struct rp_heap) */

/* Internal heap flag (never accepted from rp_heap_config): the heap is one of the malloc
 * drop-in's arenas, so free() may keep its blocks in a thread cache. Set before the heap is
 * published to other threads and never cleared; such heaps are never destroyed. */
#define RP_HEAP_MALLOC_ARENA (1u << 31)

/* The control block, mapped on its own. Invariants beyond those of its parts (checked by
 * rp_heap_check against a full walk):
 *   H1  blocks_in_use / bytes_in_use / bytes_usable count exactly the live blocks (span
 *       blocks and large blocks; quarantined blocks are live for the core);
 *   H2  spans / span_bytes count the SPAN heads; large_blocks the LARGE heads;
 *   H3  nregions / region_bytes match the region list, which is sorted by address;
 *   H4  spare_span, when set, is a free block covering a whole span, on the index;
 *   H5  every region's heap pointer is this heap. */
struct rp_heap {
    /* Read-mostly fields first: free() in the malloc drop-in reads key and flags without
     * the lock, so they must not share a cache line with the lock other threads write. */
    rp_mac_key key;            /* the key of this heap's block check words (block.h K1); here
                                  only, in a control block mapped on its own, never in a region */
    unsigned flags;            /* RP_HEAP_* (public) | RP_HEAP_MALLOC_ARENA */
    int is_default;
    size_t large_threshold;
    size_t retain_bytes;
    uint32_t purge_delay_ms;   /* 0: free pages above retain_bytes go back at once */
    size_t max_bytes;
    size_t mapped_block_bytes; /* large blocks from this size get a mapping (mapped_block.h) */
    size_t realloc_mapped_bytes; /* ... and blocks realloc moves, from this size (mapped_block.h) */
    int mapped_block_adapts;   /* the default threshold: raised by frees (mapped_block.h) */
    size_t span_pages;         /* preferred span size in pages */
    char name[32];

    _Alignas(64) rp_lock lock;
    size_t next_region_pages;  /* page-area size of the next OS region */

    rp_free_index index;       /* segregated-fit tier: free blocks in spans */
    rp_page_tier pages;        /* page tier: free pages of every region */
    rp_region *regions;        /* sorted by base */
    rp_block *spare_span;      /* one wholly free span kept instead of returned (H4) */
    uint64_t purge_due_ms;     /* delayed policy: when the heap above its retention limit is
                                  trimmed (rp_clock_ms), 0 = no delay running */

    /* counters (rp_heap_stats) */
    size_t bytes_in_use, bytes_usable, blocks_in_use;
    size_t spans, span_bytes, large_blocks;
    size_t nregions, region_bytes;
    size_t os_bytes, os_bytes_peak, os_released;
    uint64_t alloc_calls, free_calls, blocks_examined, max_examined;

    /* Mappings the OS refused to unmap (rp_heap_unmap), no longer part of the heap but still
     * counted in os_bytes; rp_heap_trim and destroy try again. */
    struct {
        void *p;
        size_t len;
    } unmap_later[RP_UNMAP_LATER];
    unsigned unmap_later_n;

    void *debug;               /* the debug runtime's per-heap state (debug flavour) */
    void *malloc_state;        /* the malloc drop-in's per-arena state (transfer_cache.h), set
                                  before the arena is published; NULL for other heaps */
    void *malloc_slabs;        /* ... and its slab pool (malloc_slabs.h), likewise; NULL also
                                  when slabs are off */
    size_t control_len;        /* bytes mapped for this control block */
    struct rp_heap *all_next, *all_prev; /* list of all heaps */
};

/* Records that one allocation inspected n free blocks (list heads of either tier). */
static inline void rp_heap_count_examined(rp_heap *h, uint64_t n)
{
    h->blocks_examined += n;
    if (n > h->max_examined)
        h->max_examined = n;
}

/* h, or the default heap for NULL (NULL only if it cannot be created). */
rp_heap *rp_heap_resolve(rp_heap *h);

/* Takes a run of npages pages aligned to 2^align_order pages from the page tier, mapping a
 * new OS region when none is free and the heap may grow; if that made pages resident, free
 * resident pages above retain_bytes go back (RT5, below). NULL when out of memory. */
rp_page *rp_heap_take_pages(rp_heap *h, size_t npages, unsigned align_order);

/* For a take straight from the page tier (span.c, large.c; heap locked): applies RT5 (below)
 * given the page tier's resident_pages before the take. */
void rp_heap_took_pages(rp_heap *h, size_t resident_before);

/* Returns npages pages at d to the page tier and applies the retention policy: above
 * retain_bytes of free pages, a wholly free OS region is unmapped, otherwise the pages just
 * freed are decommitted; with a purge delay, the heap is instead trimmed to retain_bytes at
 * the first release above the limit once the delay has passed.
 *
 * Retention guarantees (dirty = free pages of OS regions that may be resident, the stats'
 * page_dirty_bytes; checked by the heap_ops fuzz oracle, fuzz/heap_model.c, unless the OS
 * refused a call):
 *   RT1 without a purge delay, a release never leaves dirty above retain_bytes and above what
 *       it was before the release (so a heap that starts within the limit stays within it);
 *   RT2 without a purge delay, a release gives memory back only when the heap would otherwise
 *       be above the limit: dirty afterwards plus the bytes given back exceeds retain_bytes;
 *   RT3 with a purge delay that has not passed, a release gives nothing back (a block with a
 *       mapping of its own is unmapped, whatever the policy) and dirty does not shrink;
 *   RT4 rp_heap_trim(keep) leaves dirty at most keep and no wholly free OS region mapped;
 *   RT5 a take of pages (rp_heap_take_pages) that leaves more of the page tier resident than
 *       before leaves dirty at most retain_bytes: resident memory grows past what the heap
 *       holds plus retain_bytes only as far as the free pages fit the requests. */
void rp_heap_give_pages(rp_heap *h, rp_region *r, rp_page *d, size_t npages);

/* For mapped_block.c, which maps and unmaps regions of its own (heap locked): link r into
 * h's sorted region list / take it out (H3 counts follow), and count OS bytes mapped and
 * unmapped (os_bytes and its peak). */
void rp_heap_link_region(rp_heap *h, rp_region *r);
void rp_heap_unlink_region(rp_heap *h, rp_region *r);
void rp_heap_account_os(rp_heap *h, size_t mapped, size_t unmapped);

/* Unmaps [p, p+len), a mapping counted in h's os_bytes that h gives up (heap locked). If the
 * OS refuses, the mapping is kept for rp_heap_trim and rp_heap_destroy to try again (beyond
 * RP_UNMAP_LATER of them, leaked and no longer counted). */
void rp_heap_unmap(rp_heap *h, void *p, size_t len);

/* rp_heap_stats with h already locked (h non-NULL): the counters consistent with a walk made
 * under the same lock hold. */
void rp_heap_stats_locked(rp_heap *h, struct rp_heap_stats *out);

/* Calls fn on every heap with the global heap list locked (fork handling, tools). */
void rp_heaps_foreach(void (*fn)(rp_heap *h, void *arg), void *arg);

/* fork() support: prepare takes the heap list lock, then every heap's lock in list order, then
 * the address map's lock; parent releases them; child re-initialises them (the child has one
 * thread, which holds them all). The core registers handlers that call them at load time
 * (heap.c), so every program that uses heaps is fork-safe. */
void rp_heaps_fork_prepare(void);
void rp_heaps_fork_parent(void);
void rp_heaps_fork_child(void);

/* Called by a layer whose own fork handlers call the three functions above, around locks of
 * its own (the malloc drop-in): the core's handlers then do nothing. */
void rp_heaps_fork_by_caller(void);

#endif
