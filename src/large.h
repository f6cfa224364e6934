/* Large blocks: requests served directly as whole pages by the page tier (sizes at or above
 * the heap's large threshold, alignments at or above it, and page-aligned requests of whole
 * pages). Their metadata lives in the page descriptors only, so a 4096-byte block aligned
 * to 4096 costs exactly one page. All functions run with the heap locked. */
#ifndef RP_LARGE_H
#define RP_LARGE_H

#include <stddef.h>

#include "heap.h"
#include "hooks.h"

/* Allocates a large block, with a mapping of its own (mapped_block.h) from mapped_from
 * bytes; NULL when out of memory. *usable receives its usable bytes, and *zero (when not
 * NULL) 1 if every page of the block reads as zeros (none was resident since the OS gave or
 * took it back: fresh memory), else 0. */
void *rp_large_alloc(rp_heap *h, size_t size, size_t align, size_t mapped_from, size_t *usable, int *zero);

/* Frees the large block whose head descriptor is d. */
void rp_large_release(rp_heap *h, rp_page *d);

/* Resizes in place: shrinking returns whole pages; growing uses the pages already held, then
 * the free pages right after the block (a block with a mapping of its own: its mapping's
 * 2 MiB steps, down to one, and rp_large_move grows it further). Returns 1 on success, 0 if the block must move. */
int rp_large_resize(rp_heap *h, rp_page *d, size_t size);

/* Moves a large block with a mapping of its own (mapped_block.h) that must grow past it to a
 * bigger mapping, by mremap: its contents move without a copy. Returns the new user pointer,
 * or NULL when the block has no mapping of its own or the move failed (the block is then
 * unchanged: the caller copies it, as for any block). */
void *rp_large_move(rp_heap *h, rp_page *d, size_t size);

/* D2's layout of a LARGE head covering n pages: its lead lies inside the block, and in the
 * debug flavour it is at least a page, where the runtime's prefix sits. A damaged head that
 * fails this must not reach the debug runtime, which would read and seal the bytes before its
 * user pointer: another block's, or the region's descriptors. */
static inline int rp_large_lead_valid(const rp_page *d, size_t n)
{
    return d->u.large.lead_pages < n && (RP_HOOK_PREFIX == 0 || d->u.large.lead_pages > 0);
}

/* User pointer of the large block headed by d. */
static inline void *rp_large_user(const rp_page *d)
{
    return (void *)(rp_page_addr(d->region, d) + ((uintptr_t)d->u.large.lead_pages << RP_PAGE_SHIFT));
}

#endif
