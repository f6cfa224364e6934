/* The page tier: a buddy allocator of pages (4 KiB << order) over a heap's regions.
 *
 * It serves spans to the segregated-fit tier and large blocks directly. A block of order k
 * is naturally aligned to 4 KiB << k in absolute addresses (buddies are found by flipping
 * bit k of the absolute page number), so a 64 KiB block aligned to 64 KiB costs no padding.
 * Runs of pages that are not a power of two are served from the next order up, and the tail
 * goes straight back as the largest aligned blocks it splits into (never assembled from
 * order-0 pages). Freed runs coalesce with free buddies.
 *
 * Invariants (checked by rp_heap_check, together with the descriptor invariants of region.h):
 *   B1  bit k of `nonempty` is set iff list k is non-empty;
 *   B2  every block on list k is a FREE head of order k, and the list links are consistent
 *       (next->prev == self, the head's prev is NULL);
 *   B3  no free block's buddy is a free block of the same order (they would have merged);
 *   B4  free_pages is the sum of 2^k over all listed blocks; blocks[k] counts list k;
 *   B5  resident_pages is the number of bits set in the resident bitmaps (resident.h) of all
 *       OS regions; held_pages is the number of pages of OS regions outside FREE blocks, and
 *       each of them has its bit set. So resident_pages - held_pages is the free memory that
 *       may be resident: what the retention policy bounds (rp_page_tier_dirty).
 * Every operation costs O(number of orders): no list is ever scanned. A search reads one free
 * block (the head of the order its bitmaps point at); only the assembled-run fallback of a
 * heap that cannot grow, and growing a block in place, read more (at most RP_RUN_MAX_PIECES
 * per candidate). Handing out a run also sets its resident bits: one word per 64 pages. */
#ifndef RP_PAGE_TIER_H
#define RP_PAGE_TIER_H

#include <stddef.h>
#include <stdint.h>

#include "rampart.h"
#include "region.h"

#define RP_ORDERS RP_STATS_ORDERS /* orders 0..39: up to 2 PiB, beyond any address space */

typedef struct rp_page_tier {
    rp_page *lists[RP_ORDERS];
    uint64_t nonempty;        /* B1 */
    size_t free_pages;        /* B4 */
    size_t blocks[RP_ORDERS]; /* B4 */
    size_t resident_pages;    /* B5 */
    size_t held_pages;        /* B5 */
    uint64_t examined;        /* free blocks read by bitmap-directed searches, cumulative */
    uint64_t run_examined;    /* free blocks read while extending runs, cumulative */
    /* The head of the last run handed out if every page of it was clear in its region's
     * resident bitmap (fresh from the OS, or given back since: it reads as zeros), else
     * NULL. Lets calloc skip zeroing what the OS has just zeroed. */
    const rp_page *zero_run;
} rp_page_tier;

/* Free pages of OS regions that may be resident (B5). */
static inline size_t rp_page_tier_dirty(const rp_page_tier *t)
{
    return t->resident_pages - t->held_pages;
}

/* Takes a free block of exactly 2^order pages, splitting a larger one if needed. The head's
 * state is left for the caller to set. NULL if no block of that order or above is free.
 * Every function that takes pages marks them resident (B5). */
rp_page *rp_page_tier_take(rp_page_tier *t, unsigned order);

/* Takes a run of npages pages whose first page is aligned to 2^align_order pages: a block
 * of order max(ceil_log2(npages), align_order), whose unused tail is returned at once.
 * NULL if none. The head's npages is set; its state is left for the caller. */
rp_page *rp_page_tier_take_run(rp_page_tier *t, size_t npages, unsigned align_order);

/* Fallback when no block of the run's order is free and the heap cannot grow (caller memory,
 * a capped heap): for each lower order, the head of its list is extended forward over the
 * free blocks that follow it, until npages pages are covered (at most RP_RUN_MAX_PIECES
 * blocks). Bounded: one candidate per order. NULL if none works. */
#define RP_RUN_MAX_PIECES 64
rp_page *rp_page_tier_take_run_assembled(rp_page_tier *t, size_t npages, unsigned align_order);

/* Claims the npages pages of region r starting at page index `first` if they are all free
 * (covered by at most RP_RUN_MAX_PIECES free blocks, the first one starting at `first`):
 * they leave the free lists, an overhanging last block gives its excess back. Used to grow a
 * large block in place. Returns 0, or -1 with nothing changed. */
int rp_page_tier_claim(rp_page_tier *t, rp_region *r, size_t first, size_t npages);

/* Returns the run of npages pages starting at descriptor d (all of them in region r) to the
 * free lists: split into the largest naturally aligned blocks, each coalesced with its free
 * buddies. The run's head descriptor must already have been taken out of its former state. */
void rp_page_tier_give(rp_page_tier *t, rp_region *r, rp_page *d, size_t npages);

/* The FREE head of the free block holding page `index` of r, or NULL if that page is not
 * free. O(number of orders): free blocks are naturally aligned. */
rp_page *rp_page_tier_free_head(rp_region *r, size_t index);

/* Free pages of the FREE block d that may be resident. */
size_t rp_page_tier_block_resident(const rp_region *r, const rp_page *d);

/* The pages of the FREE block d (in OS region r) were given back to the OS: none of them is
 * resident any more. */
void rp_page_tier_decommitted(rp_page_tier *t, rp_region *r, rp_page *d);

/* Seeds the free lists with a new region's whole page area. */
void rp_page_tier_add_region(rp_page_tier *t, rp_region *r);

/* Takes every free block of region r off the lists (r must be entirely free). */
void rp_page_tier_remove_region(rp_page_tier *t, rp_region *r);

/* Largest free block in bytes (0 if none). */
size_t rp_page_tier_largest(const rp_page_tier *t);

/* Link and unlink one FREE head (exposed for the checker and the retention policy). */
void rp_page_tier_link(rp_page_tier *t, rp_page *d, unsigned order);
void rp_page_tier_unlink(rp_page_tier *t, rp_page *d);

#endif
