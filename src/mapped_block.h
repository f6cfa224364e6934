/* Mapped blocks: a large block of at least the heap's mapped_block_bytes (32 MiB by default)
 * gets an OS mapping of its own, so that realloc moves it with mremap (the page tables move; no byte is copied and
 * no page is faulted in) and free gives it straight back to the OS.
 *
 * Why: a block in a shared region that cannot grow in place must be copied, under the heap
 * lock. A buffer grown by realloc to hundreds of MiB is copied at every move and its new
 * pages faulted in, where glibc moves its mmapped chunks with mremap (figures:
 * docs/BENCHMARKS.md, "Mapped blocks"). 32 MiB is glibc's largest mmap threshold and
 * rampart's default retention limit: a freed block that large was mostly given back to the
 * OS anyway, so mapping it apart changes little for programs that free and reallocate it.
 *
 * Such a block lives in a mapped-block region (region.h): a region whose page area is
 * exactly the block (a LARGE head at page 0 covering every page) and whose header and
 * descriptors are a mapping apart (block_meta_len bytes at the header, room for a number
 * of descriptors, "capacity", fixed when it is mapped). Moving the area leaves the header
 * where lock-free readers of the address map find it; a block that outgrows the capacity
 * gets a new header (twice what it needs, so a buffer that keeps growing replaces it rarely).
 * A block realloc has to move gets a mapping from a lower size, 4 MiB by default
 * (realloc_mapped_bytes): a buffer that outgrew its place is likely to grow again, and each
 * copy in the heap faults in pages the next move leaves behind (1 MiB to 256 MiB by steps of
 * 64 KiB: copies at 4, 8, 16 and 32 MiB, 60 MiB of pages faulted and then kept for nothing).
 * glibc's mmap threshold starts lower still (128 KiB). A program that frees such a block
 * raises this threshold past its size as it raises mapped_block_bytes (below), so a buffer
 * grown and freed again and again settles in the heap's regions.
 * The release flavour only: the debug flavour keeps every large block in shared regions
 * (its lead pages, quarantine and reports stay as they are).
 *
 * Invariants (checked by rp_heap_check, besides R*, D*, M* of region.h and pagemap.h):
 *   G1  base is aligned to 2 MiB and npages is a multiple of 512 (so the address map holds
 *       whole-chunk entries for it, never a page table: registering it again needs no
 *       table once registered, and alignments up to 2 MiB survive every move);
 *   G2  pages[0] is a LARGE head covering all npages pages, with no lead pages;
 *   G3  resident is NULL and free_pages 0: the page tier never sees the region;
 *   G4  [map_base, map_base + map_len) and [mem_lo, mem_hi) are exactly the page area, and
 *       npages fits in the descriptors block_meta_len holds.
 * All functions run with the heap locked. */
#ifndef RP_MAPPED_BLOCK_H
#define RP_MAPPED_BLOCK_H

#include <stddef.h>

#include "heap.h"
#include "hooks.h"

#define RP_MAPPED_BLOCK_ALIGN RP_HUGE_PAGE_BYTES /* G1 */
/* The default threshold adapts: freeing a mapped block raises it above that block's size
 * (if the heap would keep such a block's pages when freed: a purge delay, or within
 * retain_bytes), up to this; an explicit rp_heap_config.mapped_block_bytes stays. */
#define RP_MAPPED_BLOCK_ADAPT_MAX RP_MAX_REGION

/* 1 if a large request of bytes (lead pages and suffix included) aligned to align gets a
 * mapping of its own in h: the release flavour, a heap that may map memory, at least
 * threshold bytes (mapped_block_bytes, or realloc_mapped_bytes for a block realloc moves),
 * an alignment a mapping keeps (G1). */
static inline int rp_mapped_block_wanted(const rp_heap *h, size_t bytes, size_t align, size_t threshold)
{
    return RP_HOOK_PREFIX == 0 && bytes >= threshold && align <= RP_MAPPED_BLOCK_ALIGN &&
           !(h->flags & RP_HEAP_NO_OS);
}

/* Pages a mapped block of at least npages pages takes (G1). */
static inline size_t rp_mapped_block_pages(size_t npages)
{
    size_t chunk = RP_MAPPED_BLOCK_ALIGN >> RP_PAGE_SHIFT;
    return (npages + chunk - 1) & ~(chunk - 1);
}

/* Descriptors r's header mapping holds (G4). */
static inline size_t rp_mapped_block_capacity(const rp_region *r)
{
    return (r->block_meta_len - sizeof(rp_region)) / sizeof(rp_page);
}

/* Maps a region for one block of rp_mapped_block_pages(npages) pages and returns its head
 * descriptor (page 0, still to be made LARGE by the caller, which sets npages), or NULL if
 * the OS, the heap's max_bytes or the address map refuses. The pages are fresh (zero). */
rp_page *rp_mapped_block_map(rp_heap *h, size_t npages);

/* Gives the mapped block headed by d (released by the caller's counters) back to the OS:
 * its area and its region. Raises adapting thresholds past its size. */
void rp_mapped_block_unmap(rp_heap *h, rp_page *d);

/* 1 if p was the user pointer of one of the last mapped blocks unmapped (process-wide; error
 * paths only): a pointer in no heap that a report can then call a second free. */
int rp_mapped_block_freed_recently(const void *p);

/* Shrinks the mapped block headed by d in place to rp_mapped_block_pages(npages) pages
 * (npages at least 1, below d->npages), unmapping the pages after it. */
void rp_mapped_block_shrink(rp_heap *h, rp_page *d, size_t npages);

/* Moves the mapped block headed by d to a new area of rp_mapped_block_pages(npages) pages
 * (more than it has), contents kept, by mremap. Returns the block's head descriptor (its
 * region's header may have moved too), or NULL with the block unchanged when the OS, the
 * heap's max_bytes or the address map refuses. */
rp_page *rp_mapped_block_grow(rp_heap *h, rp_page *d, size_t npages);

#endif
