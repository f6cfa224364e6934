/* The hardened profile's look at a block's neighbours when it is freed (hardened.h): a linear
 * underflow out of the block, or an overflow out of the block below it, ends in the memory just
 * below; an overflow out of a slab block that jumps its own canary ends in the next slot. The
 * block's own seal (seal.h) is checked first; then:
 *   - below a span block: the block before it in its span (a live one's seal), or, for the first
 *     block of a span, what lies below the span as below a page-tier block;
 *   - below a page-tier block: the region's metadata padding when the block starts the page area
 *     (zero), the sentinel header of a span that ends there, or a live page-tier block's seal;
 *   - after a slab block: the next slot, when it is free or held by a cache (zeroed by every
 *     hardened free, or never written): its first RP_SEAL_CHECKED bytes must be zero.
 * Anything else (a free neighbour, another heap's memory) is not looked at. */
#ifndef RP_NEIGHBOUR_CHECK_H
#define RP_NEIGHBOUR_CHECK_H

#include <stdint.h>

struct rp_region;

/* Each returns 0 when the neighbour is intact (or not looked at), -1 after reporting it. */

/* The live span block p of region r (an arena's): what lies below it. */
int rp_check_below_span(struct rp_region *r, const void *p);

/* The live page-tier block p of region r (an arena's): what lies below it. */
int rp_check_below_pages(struct rp_region *r, const void *p);

/* The live slab block p of stride bytes: the slot after it. */
int rp_check_after_slab(const void *p, uint32_t stride);

#endif
